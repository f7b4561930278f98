/* ops/cuda/attn_local.cuh — local attention (Luong et al. 2015 §3.2; semantics: ops/ops.h
 * local_attn_*; CPU reference: ops/cpu/attn_local.c). Written against ops/cuda/kernel_api.h.
 * Host side: attn_local.cu.
 * Shapes: R = B·NH rows, row r = b·NH + h; q [R,Tq,D], k [R,Tk,D], va [NH,D] or NULL (dot),
 * v [R,Tk,Dv], z [B,Tq] or NULL (local-m), out [R,Tq,Dv], key_len [B], weights [R,Tq,LW]
 * (LW = 2W + 2: per query row its window's first key lo, then a_{lo + j} for j < NW = 2W + 1;
 * ops.h).
 *
 * Forward: one block per query row (t, r): the window [lo, hi] from p_t (local_window, the same
 * float arithmetic as the CPU's cpu_local_window), the scores of the window's keys (one thread
 * per key), the softmax by fixed trees, × the Gaussian (local-p), zeros past hi, then out (one
 * thread per value column, s ascending).
 * Backward: per query row dE = a dA − α Σ_s a dA into the caller's workspace [R,Tq,NW] (α = a/g;
 * dE[t, j] belongs to key lo_t + j, lo_t read from the saved row),
 * dp = Σ_s dA a (s − p)/σ² into dpart [R,Tq], and dq (one thread per column, s ascending); per
 * row r the gradients of k and v (each float summed by one thread over t ascending) and the
 * row's share of dva [R,D]; then dz[b,t] += (Σ_h dpart) p (1 − p/len), h ascending, and
 * dva[h] += Σ_b its shares, b ascending. No atomics: deterministic under every schedule.
 */
#ifndef TRAINER_CUDA_ATTN_LOCAL_CUH
#define TRAINER_CUDA_ATTN_LOCAL_CUH

#include <stddef.h>

#include "ops/cuda/attn_common.cuh"
#include "ops/cuda/block_reduce.cuh"
#include "ops/cuda/kernel_api.h"

constexpr int LOC_THREADS = 128; /* threads per block (a power of two) */

/* The window [*lo, *hi] of query t of batch row b and its position *p (local-p: len·σ(z)). */
__device__ inline void local_window(int *lo, int *hi, float *p, const float *z, int len,
                                    int window, int pos0, int b, int t, int Tq) {
    float pt = z ? (float)len / (1.0f + expf(-z[(size_t)b * Tq + t])) : (float)(pos0 + t);
    int l = (int)ceilf(pt - (float)window), h = (int)floorf(pt + (float)window);
    *lo = l < 0 ? 0 : l;
    *hi = h > len - 1 ? len - 1 : h;
    *p = pt;
}

/* e = scale q·k (va NULL) or vaᵀ tanh(q + k) */
__device__ inline float local_score(const float *q, const float *k, const float *va, float scale,
                                    int D) {
    float acc = 0.0f;
    if (va) {
        for (int d = 0; d < D; d++) acc += va[d] * tanhf(q[d] + k[d]);
    } else {
        for (int d = 0; d < D; d++) acc += q[d] * k[d];
        acc *= scale;
    }
    return acc;
}

/* Launch: grid (Tq, R) of LOC_THREADS. */
__global__ void __launch_bounds__(LOC_THREADS)
    k_local_forward(float *out, float *weights, const float *q, const float *k, const float *va,
                    const float *v, const float *z, const int *key_len, float scale, int window,
                    int pos0, int NH, int Tq, int Tk, int D, int Dv) {
    __shared__ float fbuf[LOC_THREADS];
    __shared__ double dbuf[LOC_THREADS];
    const int t = blockIdx.x, r = blockIdx.y, b = r / NH;
    const int len = attn_key_limit(key_len, b, 0, t, Tq, Tk);
    int lo, hi;
    float p;
    local_window(&lo, &hi, &p, z, len, window, pos0, b, t, Tq);
    const float *vh = va ? va + (size_t)(r % NH) * D : NULL, *qr = q + ((size_t)r * Tq + t) * D;
    const int NW = 2 * window + 1;
    float *row = weights + ((size_t)r * Tq + t) * (NW + 1), *o = out + ((size_t)r * Tq + t) * Dv;
    float *w = row + 1; /* w[s − lo] = a_s */
    float mx = -INFINITY;
    for (int s = lo + (int)threadIdx.x; s <= hi; s += LOC_THREADS) {
        float e = local_score(qr, k + ((size_t)r * Tk + s) * D, vh, scale, D);
        w[s - lo] = e;
        mx = e > mx ? e : mx;
    }
    mx = block_max<LOC_THREADS>(mx, fbuf);
    double sum = 0.0;
    for (int s = lo + (int)threadIdx.x; s <= hi; s += LOC_THREADS)
        sum += (w[s - lo] = expf(w[s - lo] - mx));
    sum = block_sum<LOC_THREADS>(sum, dbuf);
    const float sig = 0.5f * (float)window;
    for (int j = threadIdx.x; j < NW; j += LOC_THREADS) {
        const int s = lo + j;
        float a = 0.0f;
        if (s <= hi) {
            a = (float)(w[j] / sum); /* eq. 7 over the window */
            if (z) {                 /* eq. 10 */
                float u = ((float)s - p) / sig;
                a *= expf(-0.5f * u * u);
            }
        }
        w[j] = a;
    }
    if (threadIdx.x == 0) row[0] = (float)lo;
    __syncthreads();
    for (int e = threadIdx.x; e < Dv; e += LOC_THREADS) {
        float acc = 0.0f;
        for (int s = lo; s <= hi; s++) acc += w[s - lo] * v[((size_t)r * Tk + s) * Dv + e];
        o[e] = acc;
    }
}

/* Per query row: dE, dpart and dq (above). Launch: grid (Tq, R) of LOC_THREADS. */
__global__ void __launch_bounds__(LOC_THREADS)
    k_local_backward_rows(float *dE, float *dpart, float *dq, const float *dout, const float *q,
                          const float *k, const float *va, const float *v, const float *z,
                          const float *weights, const int *key_len, float scale, int window,
                          int pos0, int NH, int Tq, int Tk, int D, int Dv) {
    __shared__ double dbuf[LOC_THREADS];
    const int t = blockIdx.x, r = blockIdx.y, b = r / NH;
    const int len = attn_key_limit(key_len, b, 0, t, Tq, Tk);
    int lo, hi;
    float p;
    local_window(&lo, &hi, &p, z, len, window, pos0, b, t, Tq);
    const float sig = 0.5f * (float)window;
    const int NW = 2 * window + 1;
    /* w[j] = a_{lo + j}, de[j] its score gradient */
    const float *w = weights + ((size_t)r * Tq + t) * (NW + 1) + 1;
    const float *g = dout + ((size_t)r * Tq + t) * Dv;
    const float *qr = q + ((size_t)r * Tq + t) * D, *vh = va ? va + (size_t)(r % NH) * D : NULL;
    float *de = dE + ((size_t)r * Tq + t) * NW;
    double sum = 0.0, dp = 0.0;
    for (int j = threadIdx.x; j < NW; j += LOC_THREADS) {
        const int s = lo + j;
        float acc = 0.0f;
        if (s <= hi) {
            for (int e = 0; e < Dv; e++) acc += g[e] * v[((size_t)r * Tk + s) * Dv + e];
            sum += (double)w[j] * acc;
            if (z) dp += (double)acc * w[j] * ((float)s - p) / (sig * sig);
        }
        de[j] = acc; /* dA for now */
    }
    sum = block_sum<LOC_THREADS>(sum, dbuf);
    dp = block_sum<LOC_THREADS>(dp, dbuf);
    for (int j = threadIdx.x; j < NW; j += LOC_THREADS) {
        const int s = lo + j;
        float d = 0.0f;
        if (s <= hi) {
            float gs = 1.0f;
            if (z) {
                float u = ((float)s - p) / sig;
                gs = expf(-0.5f * u * u);
            }
            d = w[j] * de[j] - (w[j] / gs) * (float)sum;
        }
        de[j] = d;
    }
    if (threadIdx.x == 0) dpart[(size_t)r * Tq + t] = lo <= hi ? (float)dp : 0.0f;
    __syncthreads();
    if (!dq) return;
    float *dqr = dq + ((size_t)r * Tq + t) * D;
    for (int d = threadIdx.x; d < D; d += LOC_THREADS) {
        float acc = 0.0f;
        for (int s = lo; s <= hi; s++) {
            float kd = k[((size_t)r * Tk + s) * D + d];
            if (vh) {
                float u = tanhf(qr[d] + kd);
                acc += de[s - lo] * vh[d] * (1.0f - u * u);
            } else {
                acc += scale * de[s - lo] * kd;
            }
        }
        dqr[d] += acc;
    }
}

/* Per row r: dv += aᵀ dout, dk += the score's backward of dE, dvapart[r] = Σ_t Σ_s dE u
 * (additive); each key s sums over the queries t whose window holds it (lo_t ≤ s < lo_t + NW),
 * t ascending. Launch: R blocks of LOC_THREADS. */
__global__ void __launch_bounds__(LOC_THREADS)
    k_local_backward_keys(float *dk, float *dvapart, float *dv, const float *dE, const float *dout,
                          const float *q, const float *k, const float *va, const float *weights,
                          float scale, int window, int NH, int Tq, int Tk, int D, int Dv) {
    const int r = blockIdx.x, NW = 2 * window + 1;
    const float *vh = va ? va + (size_t)(r % NH) * D : NULL, *de = dE + (size_t)r * Tq * NW,
                *w = weights + (size_t)r * Tq * (NW + 1), *g = dout + (size_t)r * Tq * Dv,
                *qb = q + (size_t)r * Tq * D, *kb = k + (size_t)r * Tk * D;
    if (dv)
        for (int i = threadIdx.x; i < Tk * Dv; i += LOC_THREADS) {
            int s = i / Dv, e = i % Dv;
            float acc = 0.0f;
            for (int t = 0; t < Tq; t++) {
                const float *wt = w + (size_t)t * (NW + 1);
                int j = s - (int)wt[0];
                if (j >= 0 && j < NW) acc += wt[1 + j] * g[(size_t)t * Dv + e];
            }
            dv[(size_t)r * Tk * Dv + i] += acc;
        }
    if (dk)
        for (int i = threadIdx.x; i < Tk * D; i += LOC_THREADS) {
            int s = i / D, d = i % D;
            float acc = 0.0f;
            for (int t = 0; t < Tq; t++) {
                int j = s - (int)w[(size_t)t * (NW + 1)];
                if (j < 0 || j >= NW) continue;
                float x = de[(size_t)t * NW + j];
                if (x == 0.0f) continue;
                if (vh) {
                    float u = tanhf(qb[(size_t)t * D + d] + kb[i]);
                    acc += x * vh[d] * (1.0f - u * u);
                } else {
                    acc += scale * x * qb[(size_t)t * D + d];
                }
            }
            dk[(size_t)r * Tk * D + i] += acc;
        }
    if (dvapart)
        for (int d = threadIdx.x; d < D; d += LOC_THREADS) {
            float acc = 0.0f;
            for (int t = 0; t < Tq; t++) {
                int lo = (int)w[(size_t)t * (NW + 1)];
                for (int j = 0; j < NW && lo + j < Tk; j++) {
                    float x = de[(size_t)t * NW + j];
                    if (x != 0.0f)
                        acc += x * tanhf(qb[(size_t)t * D + d] + kb[(size_t)(lo + j) * D + d]);
                }
            }
            dvapart[(size_t)r * D + d] = acc;
        }
}

/* dz[b,t] += (Σ_h dpart[b·NH + h, t]) · p (1 − p/len), h ascending. Launch: ceil(B·Tq /
 * LOC_THREADS) blocks of LOC_THREADS. */
__global__ void __launch_bounds__(LOC_THREADS)
    k_local_backward_z(float *dz, const float *dpart, const float *z, const int *key_len,
                       int window, int B, int NH, int Tq, int Tk) {
    const int i = blockIdx.x * LOC_THREADS + threadIdx.x;
    if (i >= B * Tq) return;
    const int b = i / Tq, t = i % Tq;
    const int len = attn_key_limit(key_len, b, 0, t, Tq, Tk);
    int lo, hi;
    float p;
    local_window(&lo, &hi, &p, z, len, window, 0, b, t, Tq);
    if (lo > hi) return;
    double acc = 0.0;
    for (int h = 0; h < NH; h++) acc += dpart[((size_t)b * NH + h) * Tq + t];
    dz[i] += (float)(acc * p * (1.0 - (double)p / len));
}

/* dva[h, d] += Σ_b dvapart[b·NH + h, d], b ascending. Launch: NH blocks of LOC_THREADS. */
__global__ void __launch_bounds__(LOC_THREADS)
    k_local_backward_va(float *dva, const float *dvapart, int B, int NH, int D) {
    const int h = blockIdx.x;
    for (int d = threadIdx.x; d < D; d += LOC_THREADS) {
        float acc = 0.0f;
        for (int b = 0; b < B; b++) acc += dvapart[((size_t)b * NH + h) * D + d];
        dva[(size_t)h * D + d] += acc;
    }
}

#endif
