/* ops/cuda/attn_additive.cuh — additive attention scores (Bahdanau et al. 2015 eq. 6; Luong et
 * al. 2015 eq. 8 "concat"; semantics: ops/ops.h; CPU reference: ops/cpu/attn_additive.c).
 * Written against ops/cuda/kernel_api.h. Host side: attn_additive.cu.
 * Shapes: R = B·NH rows, row r = b·NH + h; qp [R,Tq,A], kp [R,Tk,A], v [NH,A],
 * values [R,Tk,Dv], out [R,Tq,Dv], weights [R,Tq,Tk], key_len [B] (NULL: all visible).
 *
 * Forward: one block per query row (t, r): e_s = vᵀ tanh(qp_t + kp_s) (one thread per key, a
 * ascending), the masked softmax by fixed trees, out (one thread per value column, s ascending).
 * Backward: per query row dE = a ⊙ (dA − a·dA) into the caller's workspace [R,Tq,Tk]; per row
 * pair r the gradients of qp, kp and values (each float summed by one thread in a fixed order)
 * and each query's share of dv, dvpart [R,Tq,A] (workspace too, from the same tanh as dqp's);
 * then dv[h] summed over b and t in order. tanh is recomputed, twice in the backward (the qp
 * pass and the kp pass): nothing of size R·Tq·Tk·A is stored. No atomics: deterministic under
 * every schedule.
 */
#ifndef TRAINER_CUDA_ATTN_ADDITIVE_CUH
#define TRAINER_CUDA_ATTN_ADDITIVE_CUH

#include <stddef.h>

#include "ops/cuda/attn_common.cuh"
#include "ops/cuda/block_reduce.cuh"
#include "ops/cuda/kernel_api.h"

constexpr int ADD_THREADS = 128; /* threads per block (a power of two) */

/* Launch: grid (Tq, R) of ADD_THREADS. */
__global__ void __launch_bounds__(ADD_THREADS)
    k_additive_forward(float *out, float *weights, const float *qp, const float *kp,
                       const float *v, const float *values, const int *key_len, int causal,
                       int NH, int Tq, int Tk, int A, int Dv) {
    __shared__ float fbuf[ADD_THREADS];
    __shared__ double dbuf[ADD_THREADS];
    const int t = blockIdx.x, r = blockIdx.y;
    const int lim = attn_key_limit(key_len, r / NH, causal, t, Tq, Tk);
    const float *vh = v + (size_t)(r % NH) * A, *qr = qp + ((size_t)r * Tq + t) * A;
    float *w = weights + ((size_t)r * Tq + t) * Tk, *o = out + ((size_t)r * Tq + t) * Dv;
    float mx = -INFINITY;
    for (int s = threadIdx.x; s < lim; s += ADD_THREADS) {
        const float *kr = kp + ((size_t)r * Tk + s) * A;
        float acc = 0.0f;
        for (int a = 0; a < A; a++) acc += vh[a] * tanhf(qr[a] + kr[a]);
        w[s] = acc;
        mx = acc > mx ? acc : mx;
    }
    mx = block_max<ADD_THREADS>(mx, fbuf);
    double z = 0.0;
    for (int s = threadIdx.x; s < lim; s += ADD_THREADS) z += (w[s] = expf(w[s] - mx));
    z = block_sum<ADD_THREADS>(z, dbuf);
    for (int s = threadIdx.x; s < Tk; s += ADD_THREADS) w[s] = s < lim ? (float)(w[s] / z) : 0.0f;
    __syncthreads();
    for (int e = threadIdx.x; e < Dv; e += ADD_THREADS) {
        float acc = 0.0f;
        for (int s = 0; s < lim; s++) acc += w[s] * values[((size_t)r * Tk + s) * Dv + e];
        o[e] = acc;
    }
}

/* dE[r,t,s] = a_s (dA_s − Σ a dA) with dA_s = dout_t · values_s (0 where a_s = 0).
 * Launch: grid (Tq, R) of ADD_THREADS. */
__global__ void __launch_bounds__(ADD_THREADS)
    k_additive_backward_scores(float *dE, const float *dout, const float *values,
                               const float *weights, int Tq, int Tk, int Dv) {
    __shared__ float fbuf[ADD_THREADS];
    const int t = blockIdx.x, r = blockIdx.y;
    const float *w = weights + ((size_t)r * Tq + t) * Tk, *g = dout + ((size_t)r * Tq + t) * Dv;
    float *de = dE + ((size_t)r * Tq + t) * Tk;
    float dot = 0.0f;
    for (int s = threadIdx.x; s < Tk; s += ADD_THREADS) {
        float acc = 0.0f;
        if (w[s] != 0.0f)
            for (int e = 0; e < Dv; e++) acc += g[e] * values[((size_t)r * Tk + s) * Dv + e];
        de[s] = acc;
        dot += w[s] * acc;
    }
    dot = block_sum<ADD_THREADS>(dot, fbuf);
    for (int s = threadIdx.x; s < Tk; s += ADD_THREADS)
        de[s] = w[s] == 0.0f ? 0.0f : w[s] * (de[s] - dot);
}

/* For row pair r: dvalues += aᵀ dout, dqp and dkp += the tanh backward of dE, and
 * dvpart[r, t, a] = Σ_s dE[t,s] u[t,s,a] (query t's share of dv), summed in the qp pass.
 * Launch: R blocks of ADD_THREADS. */
__global__ void __launch_bounds__(ADD_THREADS)
    k_additive_backward_inputs(float *dqp, float *dkp, float *dvpart, float *dvalues,
                               const float *dE, const float *dout, const float *qp,
                               const float *kp, const float *v, const float *weights, int NH,
                               int Tq, int Tk, int A, int Dv) {
    const int r = blockIdx.x;
    const float *vh = v + (size_t)(r % NH) * A, *de = dE + (size_t)r * Tq * Tk,
                *w = weights + (size_t)r * Tq * Tk, *g = dout + (size_t)r * Tq * Dv,
                *qb = qp + (size_t)r * Tq * A, *kb = kp + (size_t)r * Tk * A;
    if (dvalues)
        for (int i = threadIdx.x; i < Tk * Dv; i += ADD_THREADS) {
            int s = i / Dv, e = i % Dv;
            float acc = 0.0f;
            for (int t = 0; t < Tq; t++) acc += w[(size_t)t * Tk + s] * g[(size_t)t * Dv + e];
            dvalues[(size_t)r * Tk * Dv + i] += acc;
        }
    if (dqp || dvpart)
        for (int i = threadIdx.x; i < Tq * A; i += ADD_THREADS) {
            int t = i / A, a = i % A;
            float acc = 0.0f, accv = 0.0f;
            for (int s = 0; s < Tk; s++) {
                float d = de[(size_t)t * Tk + s];
                if (d == 0.0f) continue;
                float u = tanhf(qb[i] + kb[(size_t)s * A + a]);
                acc += d * vh[a] * (1.0f - u * u);
                accv += d * u;
            }
            if (dqp) dqp[(size_t)r * Tq * A + i] += acc;
            if (dvpart) dvpart[(size_t)r * Tq * A + i] = accv;
        }
    if (dkp)
        for (int i = threadIdx.x; i < Tk * A; i += ADD_THREADS) {
            int s = i / A, a = i % A;
            float acc = 0.0f;
            for (int t = 0; t < Tq; t++) {
                float d = de[(size_t)t * Tk + s];
                if (d == 0.0f) continue;
                float u = tanhf(qb[(size_t)t * A + a] + kb[i]);
                acc += d * vh[a] * (1.0f - u * u);
            }
            dkp[(size_t)r * Tk * A + i] += acc;
        }
}

/* dv[h, a] += Σ_b Σ_t dvpart[b·NH + h, t, a], b then t ascending. Launch: NH blocks of
 * ADD_THREADS. */
__global__ void __launch_bounds__(ADD_THREADS)
    k_additive_backward_v(float *dv, const float *dvpart, int B, int NH, int Tq, int A) {
    const int h = blockIdx.x;
    for (int a = threadIdx.x; a < A; a += ADD_THREADS) {
        float acc = 0.0f;
        for (int b = 0; b < B; b++)
            for (int t = 0; t < Tq; t++) acc += dvpart[(((size_t)b * NH + h) * Tq + t) * A + a];
        dv[(size_t)h * A + a] += acc;
    }
}

#endif
