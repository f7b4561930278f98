/* ops/cuda/efficient.cuh — kernels of efficient attention (Shen et al. 2021 eq. 2; semantics:
 * ops/ops.h; the CPU reference and the gradients: ops/cpu/efficient.c). Written against
 * ops/cuda/kernel_api.h. Host side: efficient.cu.
 *
 * Shapes: B batch, NH heads, Tq queries, Tk keys, D query/key width, Dv value width;
 * q [B,NH,Tq,D], k [B,NH,Tk,D], v [B,NH,Tk,Dv], out [B,NH,Tq,Dv], key_len [B] (NULL: all).
 *
 * One block per (b, h) pair. Its workspace slice (EFF_WORK floats) holds the column-softmax
 * statistics mx, inv [D], the context C [D,Dv], the query rows' softmax P [Tq,D] and, in the
 * backward, dC [D,Dv], gP [Tq,D] and the column sums cs [D]. Each float is computed by one thread
 * with its sum in the CPU's order (over s, t, d or e ascending), and phases are separated by
 * barriers that every thread reaches, so the result is the same bits under every schedule and
 * equals the CPU's up to FMA contraction. No Tq×Tk matrix is formed.
 */
#ifndef TRAINER_CUDA_EFFICIENT_CUH
#define TRAINER_CUDA_EFFICIENT_CUH

#include <stddef.h>

#include "ops/cuda/attn_common.cuh"
#include "ops/cuda/kernel_api.h"

constexpr int EFF_THREADS = 128; /* threads per (b, h) block */

/* Floats of workspace per (b, h) pair: mx, inv, cs [D]; C, dC [D,Dv]; P, gP [Tq,D]. */
__host__ __device__ inline size_t eff_work(int Tq, int D, int Dv) {
    return 3 * (size_t)D + 2 * (size_t)D * Dv + 2 * (size_t)Tq * D;
}

/* The column softmax of k over the len visible keys: mx[d] = max_s k_sd and
 * inv[d] = 1 / Σ_s exp(k_sd − mx[d]), one thread per column d, s ascending. No barrier. */
__device__ inline void eff_colstats(float *mx, float *inv, const float *kb, int len, int D) {
    for (int d = threadIdx.x; d < D; d += blockDim.x) {
        float m = -INFINITY;
        for (int s = 0; s < len; s++) {
            float x = kb[(size_t)s * D + d];
            if (x > m) m = x;
        }
        float sum = 0.0f;
        for (int s = 0; s < len; s++) sum += expf(kb[(size_t)s * D + d] - m);
        mx[d] = m;
        inv[d] = 1.0f / sum;
    }
}

/* P = softmax_d(q_t) of one row, by the calling thread alone, d ascending. */
__device__ inline void eff_row_softmax(float *Pr, const float *qr, int D) {
    float m = -INFINITY;
    for (int d = 0; d < D; d++)
        if (qr[d] > m) m = qr[d];
    float sum = 0.0f;
    for (int d = 0; d < D; d++) sum += (Pr[d] = expf(qr[d] - m));
    float is = 1.0f / sum;
    for (int d = 0; d < D; d++) Pr[d] *= is;
}

/* The context C = ρ_k(k)ᵀ v [D,Dv] from eff_colstats' mx, inv: one thread per (d, e), s
 * ascending. No barrier. */
__device__ inline void eff_context(float *C, const float *mx, const float *inv, const float *kb,
                                   const float *vb, int len, int D, int Dv) {
    for (int i = threadIdx.x; i < D * Dv; i += blockDim.x) {
        int d = i / Dv, e = i % Dv;
        float acc = 0.0f;
        for (int s = 0; s < len; s++)
            acc += expf(kb[(size_t)s * D + d] - mx[d]) * inv[d] * vb[(size_t)s * Dv + e];
        C[i] = acc;
    }
}

/* Shared phases of forward and backward: the column softmax of k (eff_colstats), the rows'
 * P_t = softmax_d(q_t) (one thread per row t), then the context C (eff_context). Every thread of
 * the block calls it; ends with a barrier. */
__device__ inline void eff_prepare(float *mx, float *inv, float *C, float *P, const float *qb,
                                   const float *kb, const float *vb, int len, int Tq, int D,
                                   int Dv) {
    eff_colstats(mx, inv, kb, len, D);
    for (int t = threadIdx.x; t < Tq; t += blockDim.x)
        eff_row_softmax(P + (size_t)t * D, qb + (size_t)t * D, D);
    __syncthreads();
    eff_context(C, mx, inv, kb, vb, len, D, Dv);
    __syncthreads();
}

/* The keys' gradients from dC (the backward's, or the caller's dctx) and the context C, after
 * eff_colstats' mx, inv (the barrier here makes them visible): cs[d] = Σ_e dC_de C_de (a thread
 * per d, e ascending), a barrier, then for the len visible keys
 *   dk_sd += K_sd ((dC v_s)_d − cs_d)   (a thread per (s, d), e ascending)
 *   dv_se += Σ_d K_sd dC_de            (a thread per (s, e), d ascending)
 * with K_sd = exp(k_sd − mx_d) inv_d; dkb, dvb the pair's [Tk, D] and [Tk, Dv] (either NULL).
 * dkb may be dvb (k is v, D = Dv): flat index i = s·D + d of the first loop and s·Dv + e of the
 * second name the same float, and both loops give index i to the same thread (stride blockDim.x
 * from threadIdx.x), dk's term first, so the adds never race. Every thread of the block calls. */
__device__ inline void eff_key_grads(float *dkb, float *dvb, float *cs, const float *C,
                                     const float *dC, const float *mx, const float *inv,
                                     const float *kb, const float *vb, int len, int D, int Dv) {
    for (int d = threadIdx.x; d < D; d += blockDim.x) {
        float acc = 0.0f;
        for (int e = 0; e < Dv; e++) acc += dC[(size_t)d * Dv + e] * C[(size_t)d * Dv + e];
        cs[d] = acc;
    }
    __syncthreads();
    if (dkb)
        for (int i = threadIdx.x; i < len * D; i += blockDim.x) {
            int s = i / D, d = i % D;
            float Ksd = expf(kb[i] - mx[d]) * inv[d];
            float acc = 0.0f;
            for (int e = 0; e < Dv; e++) acc += dC[(size_t)d * Dv + e] * vb[(size_t)s * Dv + e];
            dkb[i] += Ksd * (acc - cs[d]);
        }
    if (dvb)
        for (int i = threadIdx.x; i < len * Dv; i += blockDim.x) {
            int s = i / Dv, e = i % Dv;
            float acc = 0.0f;
            for (int d = 0; d < D; d++)
                acc += expf(kb[(size_t)s * D + d] - mx[d]) * inv[d] * dC[(size_t)d * Dv + e];
            dvb[i] += acc;
        }
}

/* Forward: out_t = Cᵀ P_t (one thread per (t, e), d ascending); a pair with no visible key gets
 * out = 0. Launch: B·NH blocks of EFF_THREADS; work: eff_work floats per block. */
__global__ void __launch_bounds__(EFF_THREADS)
    k_efficient_forward(float *out, const float *q, const float *k, const float *v,
                        const int *key_len, int NH, int Tq, int Tk, int D, int Dv, float *work) {
    const int bh = blockIdx.x;
    const int len = attn_key_limit(key_len, bh / NH, 0, 0, 0, Tk); /* L = min(key_len[b], Tk) */
    float *ob = out + (size_t)bh * Tq * Dv;
    if (len == 0) { /* uniform in the block, before any barrier */
        for (int i = threadIdx.x; i < Tq * Dv; i += blockDim.x) ob[i] = 0.0f;
        return;
    }
    float *mx = work + (size_t)bh * eff_work(Tq, D, Dv), *inv = mx + D, *cs = inv + D;
    float *C = cs + D, *dC = C + (size_t)D * Dv, *P = dC + (size_t)D * Dv;
    (void)cs, (void)dC;
    eff_prepare(mx, inv, C, P, q + (size_t)bh * Tq * D, k + (size_t)bh * Tk * D,
                v + (size_t)bh * Tk * Dv, len, Tq, D, Dv);
    for (int i = threadIdx.x; i < Tq * Dv; i += blockDim.x) {
        int t = i / Dv, e = i % Dv;
        float acc = 0.0f;
        for (int d = 0; d < D; d++) acc += P[(size_t)t * D + d] * C[(size_t)d * Dv + e];
        ob[i] = acc;
    }
}

/* Backward: dq_t = P_t ⊙ (dP_t − P_t·dP_t) with dP_t = C g_t; dC = Σ_t P_t g_tᵀ;
 * dk_sd = K_sd (dK_sd − cs_d) with dK_s = dC v_s and cs_d = Σ_e dC_de C_de; dv_s = dCᵀ K_s.
 * Accumulates into dq, dk, dv (each may be NULL); padded keys get nothing. Launch: B·NH blocks
 * of EFF_THREADS; work: eff_work floats per block. */
__global__ void __launch_bounds__(EFF_THREADS)
    k_efficient_backward(float *dq, float *dk, float *dv, const float *dout, const float *q,
                         const float *k, const float *v, const int *key_len, int NH, int Tq,
                         int Tk, int D, int Dv, float *work) {
    const int bh = blockIdx.x;
    const int len = attn_key_limit(key_len, bh / NH, 0, 0, 0, Tk); /* L = min(key_len[b], Tk) */
    if (len == 0) return; /* uniform: out = 0 whatever q, k, v */
    float *mx = work + (size_t)bh * eff_work(Tq, D, Dv), *inv = mx + D, *cs = inv + D;
    float *C = cs + D, *dC = C + (size_t)D * Dv, *P = dC + (size_t)D * Dv, *gP = P + (size_t)Tq * D;
    const float *qb = q + (size_t)bh * Tq * D, *kb = k + (size_t)bh * Tk * D,
                *vb = v + (size_t)bh * Tk * Dv, *gb = dout + (size_t)bh * Tq * Dv;
    eff_prepare(mx, inv, C, P, qb, kb, vb, len, Tq, D, Dv);
    /* dP_t = C g_t (thread per (t, d), e ascending); dC = Σ_t P_t g_tᵀ (thread per (d, e)) */
    for (int i = threadIdx.x; i < Tq * D; i += blockDim.x) {
        int t = i / D, d = i % D;
        float acc = 0.0f;
        for (int e = 0; e < Dv; e++) acc += C[(size_t)d * Dv + e] * gb[(size_t)t * Dv + e];
        gP[i] = acc;
    }
    for (int i = threadIdx.x; i < D * Dv; i += blockDim.x) {
        int d = i / Dv, e = i % Dv;
        float acc = 0.0f;
        for (int t = 0; t < Tq; t++) acc += P[(size_t)t * D + d] * gb[(size_t)t * Dv + e];
        dC[i] = acc;
    }
    __syncthreads();
    if (dq)
        for (int i = threadIdx.x; i < Tq * D; i += blockDim.x) {
            int t = i / D;
            float pdp = 0.0f;
            for (int d = 0; d < D; d++) pdp += P[(size_t)t * D + d] * gP[(size_t)t * D + d];
            dq[(size_t)bh * Tq * D + i] += P[i] * (gP[i] - pdp);
        }
    eff_key_grads(dk ? dk + (size_t)bh * Tk * D : NULL, dv ? dv + (size_t)bh * Tk * Dv : NULL,
                  cs, C, dC, mx, inv, kb, vb, len, D, Dv);
}

/* ---- the context split (ops.h efficient_attn_summary, _read, _read_backward,
 * _summary_backward): the phases above, with the context kept by the caller between calls.
 * summary then read give k_efficient_forward's out bit for bit (the same helpers, the same
 * per-thread order). The most dynamic shared memory of these kernels, in bytes: the default
 * limit, no opt-in (they have no static shared memory); the host CHECKs each launch. ---- */
constexpr size_t EFF_SMEM_MAX = 49152;

/* Bytes of dynamic shared memory: k_efficient_summary's mx, inv [D]; k_efficient_read's P [D];
 * k_efficient_read_backward's P, gP [D]; k_efficient_summary_backward's mx, inv, cs [D]. */
__host__ __device__ inline size_t eff_smem(int nvec, int D) {
    return (size_t)nvec * D * sizeof(float);
}

/* ctx [B·NH, D, Dv] = ρ_k(k)ᵀ v over the L = min(key_len[b], Tk) visible keys (all Tk when
 * key_len is NULL), overwritten; 0 for a pair with L = 0. mx, inv in dynamic shared memory,
 * eff_smem(2, D) bytes. Launch: B·NH blocks of EFF_THREADS. */
// smem-max: 49152
__global__ void __launch_bounds__(EFF_THREADS)
    k_efficient_summary(float *ctx, const float *k, const float *v, const int *key_len, int NH,
                        int Tk, int D, int Dv) {
    DYN_SHARED(float, sm);
    const int bh = blockIdx.x;
    const int len = attn_key_limit(key_len, bh / NH, 0, 0, 0, Tk); /* L = min(key_len[b], Tk) */
    float *C = ctx + (size_t)bh * D * Dv;
    if (len == 0) { /* uniform in the block, before any barrier */
        for (int i = threadIdx.x; i < D * Dv; i += blockDim.x) C[i] = 0.0f;
        return;
    }
    float *mx = sm, *inv = sm + D;
    const float *kb = k + (size_t)bh * Tk * D, *vb = v + (size_t)bh * Tk * Dv;
    eff_colstats(mx, inv, kb, len, D);
    __syncthreads();
    eff_context(C, mx, inv, kb, vb, len, D, Dv);
}

/* out[bh, t] = ctxᵀ P_t for one row t per block: thread 0 forms P_t in dynamic shared memory
 * (eff_smem(1, D) bytes), then a thread per e sums over d ascending, as k_efficient_forward.
 * Launch: grid (Tq, B·NH) of EFF_THREADS. */
// smem-max: 49152
__global__ void __launch_bounds__(EFF_THREADS)
    k_efficient_read(float *out, const float *q, const float *ctx, int Tq, int D, int Dv) {
    DYN_SHARED(float, P);
    const int t = blockIdx.x, bh = blockIdx.y;
    const size_t row = (size_t)bh * Tq + t;
    if (threadIdx.x == 0) eff_row_softmax(P, q + row * D, D);
    __syncthreads();
    const float *C = ctx + (size_t)bh * D * Dv;
    for (int e = threadIdx.x; e < Dv; e += blockDim.x) {
        float acc = 0.0f;
        for (int d = 0; d < D; d++) acc += P[d] * C[(size_t)d * Dv + e];
        out[row * Dv + e] = acc;
    }
}

/* The read's backward, per (b, h) block over the rows t = 0 .. Tq−1 in order: thread 0 forms
 * P_t; a thread per d, dP_t[d] = Σ_e ctx[d,e] g_t[e]; then dq_t[d] += P_t[d] (dP_t[d] − P_t·dP_t)
 * (each thread sums P_t·dP_t over d ascending; dq may be NULL) and
 * dctx[d,e] += P_t[d] g_t[e] (a thread per (d, e), the same thread for every row, so each
 * float's sum runs over t in order). P, dP in dynamic shared memory, eff_smem(2, D) bytes.
 * Launch: B·NH blocks of EFF_THREADS. */
// smem-max: 49152
__global__ void __launch_bounds__(EFF_THREADS)
    k_efficient_read_backward(float *dq, float *dctx, const float *dout, const float *q,
                              const float *ctx, int Tq, int D, int Dv) {
    DYN_SHARED(float, sm);
    const int bh = blockIdx.x;
    float *P = sm, *gP = sm + D;
    const float *C = ctx + (size_t)bh * D * Dv;
    float *dC = dctx + (size_t)bh * D * Dv;
    for (int t = 0; t < Tq; t++) {
        const size_t row = (size_t)bh * Tq + t;
        const float *g = dout + row * Dv;
        if (threadIdx.x == 0) eff_row_softmax(P, q + row * D, D);
        for (int d = threadIdx.x; d < D; d += blockDim.x) {
            float acc = 0.0f;
            for (int e = 0; e < Dv; e++) acc += C[(size_t)d * Dv + e] * g[e];
            gP[d] = acc;
        }
        __syncthreads();
        if (dq)
            for (int d = threadIdx.x; d < D; d += blockDim.x) {
                float pdp = 0.0f;
                for (int j = 0; j < D; j++) pdp += P[j] * gP[j];
                dq[row * D + d] += P[d] * (gP[d] - pdp);
            }
        for (int i = threadIdx.x; i < D * Dv; i += blockDim.x) dC[i] += P[i / Dv] * g[i % Dv];
        __syncthreads(); /* P and dP are rewritten by the next row */
    }
}

/* The context's backward, per (b, h) block (pairs with L = 0 return before any barrier):
 * eff_colstats, then eff_key_grads from dctx and ctx, with mx, inv and cs in dynamic shared
 * memory (eff_smem(3, D) bytes). dk may be dv (eff_key_grads); either may be NULL. Launch: B·NH
 * blocks of EFF_THREADS. */
// smem-max: 49152
__global__ void __launch_bounds__(EFF_THREADS)
    k_efficient_summary_backward(float *dk, float *dv, const float *dctx, const float *ctx,
                                 const float *k, const float *v, const int *key_len, int NH,
                                 int Tk, int D, int Dv) {
    DYN_SHARED(float, sm);
    const int bh = blockIdx.x;
    const int len = attn_key_limit(key_len, bh / NH, 0, 0, 0, Tk); /* L = min(key_len[b], Tk) */
    if (len == 0) return; /* uniform, before any barrier */
    float *mx = sm, *inv = sm + D, *cs = sm + 2 * D;
    const float *kb = k + (size_t)bh * Tk * D, *vb = v + (size_t)bh * Tk * Dv;
    const float *C = ctx + (size_t)bh * D * Dv, *dC = dctx + (size_t)bh * D * Dv;
    eff_colstats(mx, inv, kb, len, D);
    eff_key_grads(dk ? dk + (size_t)bh * Tk * D : NULL, dv ? dv + (size_t)bh * Tk * Dv : NULL,
                  cs, C, dC, mx, inv, kb, vb, len, D, Dv);
}

#endif
