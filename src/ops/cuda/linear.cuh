/* ops/cuda/linear.cuh — kernels of linear attention (Katharopoulos et al. 2020 eq. 6–9, §3.3.1,
 * §3.4; semantics: ops/ops.h; the CPU reference and the derivation of the gradients:
 * ops/cpu/linear.c). Written against ops/cuda/kernel_api.h. Host side: linear.cu.
 *
 * Shapes: B batch, NH heads, Tq queries, Tk keys, D query/key width, Dv value width;
 * q [B,NH,Tq,D], k [B,NH,Tk,D], v [B,NH,Tk,Dv], out [B,NH,Tq,Dv], key_len [B] (NULL: all).
 *
 * One block per (b, h) pair walks time in order, as the CPU's one thread per pair does: the
 * running state S [D,Dv] (then R in the backward's second pass), z [D] (then r) and the rows'
 * vectors φ(q_t), φ(k_s), out_t live in the pair's slice of the workspace (lin_work floats per
 * pair; in linear_attn_step the state is the caller's and the row vectors are in shared memory),
 * each float owned by one thread between barriers. Every sum that crosses threads (the
 * normaliser den_t = φ(q_t)·z_t + 1e-6, g_t·out_t) is taken by thread 0 in the CPU's order, and
 * every per-element sum (over d or over e) by the owning thread in the CPU's order, so the result
 * is the same bits under every thread and block schedule and equals the CPU's up to FMA
 * contraction. The loop bounds (visible keys, the suffix of rows) are the same in every thread:
 * every thread reaches every barrier. Causal decoding (linear_attn_step) runs the same
 * add-key and row code, so a step equals the causal forward's row.
 */
#ifndef TRAINER_CUDA_LINEAR_CUH
#define TRAINER_CUDA_LINEAR_CUH

#include <stddef.h>

#include "ops/cuda/block_reduce.cuh"
#include "ops/cuda/kernel_api.h"

constexpr int LIN_THREADS = 128;     /* threads per (b, h) block */
constexpr float LIN_EPS = 1e-6f;     /* the normaliser's guard, as the CPU's */

/* Floats of workspace per (b, h) pair: S [D,Dv], z [D], K [D], Q [D], o [Dv], den [Tq], cc [Tq]. */
__host__ __device__ inline size_t lin_work(int Tq, int D, int Dv) {
    return (size_t)D * Dv + 3 * (size_t)D + (size_t)Dv + 2 * (size_t)Tq;
}

/* The feature map m: LIN_PHI_ELU1 elu(x) + 1, LIN_PHI_IDENTITY x (ops.h's LINEAR_PHI_*; the
 * values are checked against them in linear.cu). */
constexpr int LIN_PHI_ELU1 = 0, LIN_PHI_IDENTITY = 1;
__device__ inline float lin_phi(float x, int m) {
    return m == LIN_PHI_IDENTITY ? x : x > 0.0f ? x + 1.0f : expf(x);
}
__device__ inline float lin_dphi(float x, int m) {
    return m == LIN_PHI_IDENTITY ? 1.0f : x > 0.0f ? 1.0f : expf(x);
}

/* Keys visible to query row t (0 .. vis−1): key_len, and s <= t + (Tk − Tq) when causal. */
__device__ inline int lin_visible(int t, int len, int causal, int Tq, int Tk) {
    if (!causal) return len;
    long lim = (long)t + (Tk - Tq) + 1;
    if (lim < 0) lim = 0;
    return lim < len ? (int)lim : len;
}

/* S += φ(k_s) v_sᵀ, z += φ(k_s) for one key (K: scratch [D]). Called by every thread of the
 * block; a barrier before it first reads S or z (a caller's writes to them need none of their
 * own), and one at the end. */
__device__ inline void lin_add_key(float *S, float *z, float *K, const float *kr, const float *vr,
                                   int m, int D, int Dv) {
    for (int d = threadIdx.x; d < D; d += blockDim.x) K[d] = lin_phi(kr[d], m);
    __syncthreads();
    for (int i = threadIdx.x; i < D * Dv; i += blockDim.x) S[i] += K[i / Dv] * vr[i % Dv];
    for (int d = threadIdx.x; d < D; d += blockDim.x) z[d] += K[d];
    __syncthreads();
}

/* One output row: Q = φ(q_t), den = Q·z + eps (thread 0, in order d = 0..D−1), o = Sᵀ Q / den
 * (thread per e, in order of d). Returns den to every thread (read from *den_sh after the last
 * barrier). Every thread of the block calls it; a barrier before it first reads S or z, and one
 * at the end. */
__device__ inline float lin_row(float *o, float *Q, float *den_sh, const float *qr, const float *S,
                                const float *z, int m, int D, int Dv) {
    for (int d = threadIdx.x; d < D; d += blockDim.x) Q[d] = lin_phi(qr[d], m);
    __syncthreads();
    if (threadIdx.x == 0) {
        float den = 0.0f;
        for (int d = 0; d < D; d++) den += Q[d] * z[d];
        *den_sh = den + LIN_EPS;
    }
    __syncthreads();
    float den = *den_sh, inv = 1.0f / den;
    for (int e = threadIdx.x; e < Dv; e += blockDim.x) {
        float acc = 0.0f;
        for (int d = 0; d < D; d++) acc += Q[d] * S[(size_t)d * Dv + e];
        o[e] = acc * inv;
    }
    __syncthreads();
    return den;
}

/* Forward (eq. 6; causal: prefix sums, eq. 8–9). Launch: B·NH blocks of LIN_THREADS; work:
 * lin_work floats per block. out overwritten. */
__global__ void __launch_bounds__(LIN_THREADS)
    k_linear_forward(float *out, const float *q, const float *k, const float *v,
                     const int *key_len, int causal, int m, int NH, int Tq, int Tk, int D, int Dv,
                     float *work) {
    __shared__ float den_sh;
    const int bh = blockIdx.x;
    int len = key_len ? key_len[bh / NH] : Tk;
    len = len > Tk ? Tk : (len < 0 ? 0 : len);
    float *S = work + (size_t)bh * lin_work(Tq, D, Dv), *z = S + (size_t)D * Dv, *K = z + D,
          *Q = K + D, *o = Q + D;
    const float *qb = q + (size_t)bh * Tq * D, *kb = k + (size_t)bh * Tk * D,
                *vb = v + (size_t)bh * Tk * Dv;
    float *ob = out + (size_t)bh * Tq * Dv;
    /* S and z; no barrier: lin_add_key and lin_row have one before they read them */
    for (int i = threadIdx.x; i < D * Dv + D; i += blockDim.x) S[i] = 0.0f;
    int sp = 0;
    for (int t = 0; t < Tq; t++) {
        int vis = lin_visible(t, len, causal, Tq, Tk);
        for (; sp < vis; sp++)
            lin_add_key(S, z, K, kb + (size_t)sp * D, vb + (size_t)sp * Dv, m, D, Dv);
        float *orow = ob + (size_t)t * Dv;
        if (vis == 0) {
            for (int e = threadIdx.x; e < Dv; e += blockDim.x) orow[e] = 0.0f;
            continue; /* uniform in the block: vis is the same in every thread */
        }
        lin_row(o, Q, &den_sh, qb + (size_t)t * D, S, z, m, D, Dv);
        for (int e = threadIdx.x; e < Dv; e += blockDim.x) orow[e] = o[e];
    }
}

/* One decoding step (§3.4): per (b, h) block, the key joins the state, the query reads it.
 * state [B·NH, D, Dv], zsum [B·NH, D] (the caller's); the block's scratch K, Q [D], o [Dv] and
 * the normaliser den [1] is dynamic shared memory, lin_step_smem(D, Dv) bytes (no workspace; the
 * kernel has no static shared memory, so up to 48 KiB needs no opt-in). Launch: B·NH blocks of
 * LIN_THREADS. */
__host__ __device__ inline size_t lin_step_smem(int D, int Dv) {
    return (2 * (size_t)D + (size_t)Dv + 1) * sizeof(float);
}
constexpr size_t LIN_STEP_SMEM_MAX = 49152; /* bytes: the default limit, no opt-in needed */
// smem-max: 49152
__global__ void __launch_bounds__(LIN_THREADS)
    k_linear_step(float *out, float *state, float *zsum, const float *q, const float *k,
                  const float *v, int m, int D, int Dv) {
    DYN_SHARED(float, sm);
    const int bh = blockIdx.x;
    float *S = state + (size_t)bh * D * Dv, *z = zsum + (size_t)bh * D;
    float *K = sm, *Q = K + D, *o = Q + D, *den_sh = o + Dv;
    lin_add_key(S, z, K, k + (size_t)bh * D, v + (size_t)bh * Dv, m, D, Dv);
    lin_row(o, Q, den_sh, q + (size_t)bh * D, S, z, m, D, Dv);
    for (int e = threadIdx.x; e < Dv; e += blockDim.x) out[(size_t)bh * Dv + e] = o[e];
}

/* Backward (§3.3.1 with the normaliser; the CPU's two passes): pass 1 forward in time rebuilds
 * S_t, z_t and gives dq and the rows' den_t, c_t; pass 2 backward in time accumulates R_s, r_s
 * over the suffix of rows that see key s and gives dk, dv. Accumulates into dq, dk, dv (each
 * may be NULL). Launch: B·NH blocks of LIN_THREADS; work: lin_work floats per block. */
__global__ void __launch_bounds__(LIN_THREADS)
    k_linear_backward(float *dq, float *dk, float *dv, const float *dout, const float *q,
                      const float *k, const float *v, const int *key_len, int causal, int m,
                      int NH, int Tq, int Tk, int D, int Dv, float *work) {
    __shared__ float den_sh, gdo_sh;
    const int bh = blockIdx.x;
    int len = key_len ? key_len[bh / NH] : Tk;
    len = len > Tk ? Tk : (len < 0 ? 0 : len);
    if (len == 0) return; /* uniform in the block, before any barrier: no row sees a key */
    float *S = work + (size_t)bh * lin_work(Tq, D, Dv), *z = S + (size_t)D * Dv, *K = z + D,
          *Q = K + D, *o = Q + D, *den = o + Dv, *cc = den + Tq;
    const float *qb = q + (size_t)bh * Tq * D, *kb = k + (size_t)bh * Tk * D,
                *vb = v + (size_t)bh * Tk * Dv, *gb = dout + (size_t)bh * Tq * Dv;

    /* pass 1 (no barrier after the zeroing: lin_add_key and lin_row have one before they read
     * S or z) */
    for (int i = threadIdx.x; i < D * Dv + D; i += blockDim.x) S[i] = 0.0f;
    int sp = 0;
    for (int t = 0; t < Tq; t++) {
        int vis = lin_visible(t, len, causal, Tq, Tk);
        for (; sp < vis; sp++)
            lin_add_key(S, z, K, kb + (size_t)sp * D, vb + (size_t)sp * Dv, m, D, Dv);
        if (vis == 0) {
            if (threadIdx.x == 0) den[t] = 0.0f, cc[t] = 0.0f;
            continue;
        }
        const float *qr = qb + (size_t)t * D, *g = gb + (size_t)t * Dv;
        float dn = lin_row(o, Q, &den_sh, qr, S, z, m, D, Dv);
        if (threadIdx.x == 0) {
            float gdo = 0.0f;
            for (int e = 0; e < Dv; e++) gdo += g[e] * o[e]; /* g_t · out_t */
            gdo_sh = gdo;
            den[t] = dn;
            cc[t] = gdo / dn;
        }
        __syncthreads();
        float gdo = gdo_sh;
        if (dq)
            for (int d = threadIdx.x; d < D; d += blockDim.x) {
                float sg = 0.0f;
                for (int e = 0; e < Dv; e++) sg += S[(size_t)d * Dv + e] * g[e];
                dq[((size_t)bh * Tq + t) * D + d] += (sg - z[d] * gdo) / dn * lin_dphi(qr[d], m);
            }
        __syncthreads(); /* gdo_sh and o are rewritten by the next row */
    }
    if (!dk && !dv) return; /* uniform */

    /* pass 2: R (in S), r (in z) over the rows tp .. Tq−1 that see key s */
    for (int i = threadIdx.x; i < D * Dv + D; i += blockDim.x) S[i] = 0.0f;
    __syncthreads();
    int tp = Tq;
    for (int s = len - 1; s >= 0; s--) {
        while (tp > 0 && lin_visible(tp - 1, len, causal, Tq, Tk) > s) {
            tp--;
            const float *qr = qb + (size_t)tp * D, *g = gb + (size_t)tp * Dv;
            float w = 1.0f / den[tp], c = cc[tp];
            for (int i = threadIdx.x; i < D * Dv; i += blockDim.x) {
                float qw = lin_phi(qr[i / Dv], m) * w;
                S[i] += qw * g[i % Dv];
            }
            for (int d = threadIdx.x; d < D; d += blockDim.x) z[d] += lin_phi(qr[d], m) * c;
            __syncthreads();
        }
        const float *kr = kb + (size_t)s * D, *vr = vb + (size_t)s * Dv;
        if (dk)
            for (int d = threadIdx.x; d < D; d += blockDim.x) {
                float rv = 0.0f;
                for (int e = 0; e < Dv; e++) rv += S[(size_t)d * Dv + e] * vr[e];
                dk[((size_t)bh * Tk + s) * D + d] += (rv - z[d]) * lin_dphi(kr[d], m);
            }
        if (dv)
            for (int e = threadIdx.x; e < Dv; e += blockDim.x) {
                float acc = 0.0f;
                for (int d = 0; d < D; d++) acc += lin_phi(kr[d], m) * S[(size_t)d * Dv + e];
                dv[((size_t)bh * Tk + s) * Dv + e] += acc;
            }
        __syncthreads(); /* R, r change for the next key */
    }
}

/* ---- the taylor kind's features (l2feature_*; ops/cpu/linear.c has the derivation) ----
 * One block of L2F_THREADS per row n of inp [N,D]: r = 1/√(‖x‖² + 1e-12) with ‖x‖² summed in
 * double by block_sum's fixed tree (each thread's strided share in ascending order), so every
 * schedule gives the same bits; each output float has one writer. */
constexpr int L2F_THREADS = 64; /* a power of two (block_sum); rows are head sizes, ~32..128 */

/* r of row x (every thread of the block calls; returns r to all) */
__device__ inline float l2f_rnorm(const float *x, int D, double *buf) {
    double ss = 0.0;
    for (int d = threadIdx.x; d < D; d += L2F_THREADS) ss += (double)x[d] * x[d];
    return (float)(1.0 / sqrt(block_sum<L2F_THREADS>(ss, buf) + 1e-12));
}

/* out[n] = [1; x r]. Launch: N blocks of L2F_THREADS. */
__global__ void __launch_bounds__(L2F_THREADS)
    k_l2feature_forward(float *out, const float *inp, int D) {
    __shared__ double buf[L2F_THREADS];
    const float *x = inp + (size_t)blockIdx.x * D;
    float *o = out + (size_t)blockIdx.x * (D + 1);
    float r = l2f_rnorm(x, D, buf);
    if (threadIdx.x == 0) o[0] = 1.0f;
    for (int d = threadIdx.x; d < D; d += L2F_THREADS) o[1 + d] = x[d] * r;
}

/* dinp[n] += r (g − x̂ (x̂·g)), g = dout[n, 1..D]. Launch: N blocks of L2F_THREADS. */
__global__ void __launch_bounds__(L2F_THREADS)
    k_l2feature_backward(float *dinp, const float *dout, const float *inp, int D) {
    __shared__ double buf[L2F_THREADS];
    const float *x = inp + (size_t)blockIdx.x * D, *g = dout + (size_t)blockIdx.x * (D + 1) + 1;
    float *dx = dinp + (size_t)blockIdx.x * D;
    float r = l2f_rnorm(x, D, buf);
    double xg = 0.0;
    for (int d = threadIdx.x; d < D; d += L2F_THREADS) xg += (double)(x[d] * r) * g[d];
    float c = (float)block_sum<L2F_THREADS>(xg, buf); /* x̂·g */
    for (int d = threadIdx.x; d < D; d += L2F_THREADS) dx[d] += r * (g[d] - x[d] * r * c);
}

#endif
