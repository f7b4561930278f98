/* ops/cuda/attn_sdp.cuh — scaled dot-product attention with the weights materialised (Vaswani et
 * al. 2017 eq. 1; Luong et al. 2015 eq. 7–8; semantics: ops/ops.h "attention core"; CPU
 * reference: ops/cpu/attn_sdp.c). Written against ops/cuda/kernel_api.h. Host side: attn_sdp.cu.
 * Shapes: R = B·NH rows (b, h); q [R,Tq,D], k [R,Tk,D], v [R,Tk,Dv], out [R,Tq,Dv],
 * weights [R,Tq,Tk], key_len [B] (NULL: all visible). With merged = 1, q, k, v, out and their
 * gradients are in the heads' merged layout instead ([B,Tq,NH,D] and so on: attn_common.cuh's
 * attn_row0), the one the projections write, and the backward overwrites dq, dk, dv rather than
 * adding to them (ops/ops.h attn_forward_merged); weights and dS keep [R,Tq,Tk]. Both layouts run
 * the same sums in the same order. merged is each kernel's template argument, so that the split
 * layout's instances index as they did before the merged one existed.
 *
 * Forward: one block per query row (r, t): scores (sdp_row_dots), the masked softmax by
 * block_reduce.cuh's fixed trees, out (one thread per value column, s ascending).
 * Backward: per query row, dP = dout vᵀ (sdp_row_dots, as the scores) and
 * dS = P ⊙ (dP − P·dP) · scale into the workspace [R,Tq,Tk]; then blocks (r, slice) write dq, dk,
 * dv, each float summed by its owning thread in a fixed order (over s or t ascending). No
 * atomics: deterministic under every schedule.
 */
#ifndef TRAINER_CUDA_ATTN_SDP_CUH
#define TRAINER_CUDA_ATTN_SDP_CUH

#include <stddef.h>

#include "ops/cuda/attn_common.cuh"
#include "ops/cuda/block_reduce.cuh"
#include "ops/cuda/kernel_api.h"

constexpr int SDP_THREADS = 128;              /* threads per block (a power of two) */
constexpr int SDP_WARPS = SDP_THREADS / 32;    /* warps per block: keys scored at once */
constexpr int SDP_SLICES = 16;                 /* backward inputs: blocks per row r at most */
constexpr int SDP_THREAD_DOT = 32;             /* sdp_row_dots: widths a thread sums alone */

/* The dot products of one query row with n keys: emit(s, Σ_d a[d]·b[s·ld + d]) once for each
 * s < n, by one thread. a [D], b [n rows ld floats apart]; D and n the same in every thread of
 * the block, which must all call (the shuffles below need whole warps). D <= SDP_THREAD_DOT: one
 * thread per key, d ascending (a warp would leave lanes idle and add five shuffles a key). Wider
 * heads: one warp per key, lane x sums d = x, x + 32, ... ascending, then warp_sum's fixed
 * butterfly, and lane 0 emits, which keeps every thread busy when a row has few keys and a wide
 * head (Luong attention: one query per decoder step, D = 512). Either way the sums are fixed by
 * D alone: the same bits under every schedule. No barrier: the caller publishes what emit
 * wrote. No errors. */
template <class Emit>
__device__ inline void sdp_row_dots(const float *a, const float *b, int ld, int n, int D,
                                    Emit emit) {
    if (D <= SDP_THREAD_DOT) {
        for (int s = threadIdx.x; s < n; s += SDP_THREADS) {
            const float *bs = b + (size_t)s * ld;
            float acc = 0.0f;
            for (int d = 0; d < D; d++) acc += a[d] * bs[d];
            emit(s, acc);
        }
        return;
    }
    const int lane = threadIdx.x % 32;
    for (int s = threadIdx.x / 32; s < n; s += SDP_WARPS) { /* n is the block's: whole warps */
        float acc = 0.0f;
        for (int d = lane; d < D; d += 32) acc += a[d] * b[(size_t)s * ld + d];
        acc = warp_sum(acc);
        if (lane == 0) emit(s, acc);
    }
}

/* Blocks per row r for k_attn_backward_inputs: about 8 outputs per thread for the largest of
 * dq [Tq,D], dk [Tk,D], dv [Tk,Dv], at most SDP_SLICES (host code; sdp's and pointwise
 * attention's backward). */
static inline unsigned sdp_slices(int Tq, int Tk, int D, int Dv) {
    long most = (long)Tk * (D > Dv ? D : Dv);
    if ((long)Tq * D > most) most = (long)Tq * D;
    long y = (most + 8L * SDP_THREADS - 1) / (8L * SDP_THREADS);
    return (unsigned)(y < 1 ? 1 : y > SDP_SLICES ? SDP_SLICES : y);
}

/* Launch: grid (Tq, R) of SDP_THREADS; block (t, r). */
template <int merged>
__global__ void __launch_bounds__(SDP_THREADS)
    k_attn_forward(float *out, float *weights, const float *q, const float *k, const float *v,
                   const int *key_len, float scale, int causal, int NH, int Tq, int Tk, int D,
                   int Dv) {
    __shared__ float fbuf[SDP_THREADS];
    __shared__ double dbuf[SDP_THREADS];
    const int t = blockIdx.x, r = blockIdx.y;
    const int lim = attn_key_limit(key_len, r / NH, causal, t, Tq, Tk);
    const int ld = attn_row_stride(merged, NH, D), ldv = attn_row_stride(merged, NH, Dv);
    const float *qr = q + attn_row0(merged, r, NH, Tq, D) + (size_t)t * ld,
                *kb = k + attn_row0(merged, r, NH, Tk, D), *vb = v + attn_row0(merged, r, NH, Tk, Dv);
    float *w = weights + ((size_t)r * Tq + t) * Tk,
          *o = out + attn_row0(merged, r, NH, Tq, Dv) + (size_t)t * ldv;
    sdp_row_dots(qr, kb, ld, lim, D, [&](int s, float acc) { w[s] = scale * acc; });
    __syncthreads(); /* w[s] was written by another thread */
    float mx = -INFINITY;
    for (int s = threadIdx.x; s < lim; s += SDP_THREADS) mx = w[s] > mx ? w[s] : mx;
    mx = block_max<SDP_THREADS>(mx, fbuf);
    double z = 0.0;
    for (int s = threadIdx.x; s < lim; s += SDP_THREADS) z += (w[s] = expf(w[s] - mx));
    z = block_sum<SDP_THREADS>(z, dbuf);
    float inv = lim > 0 ? (float)(1.0 / z) : 0.0f;
    for (int s = threadIdx.x; s < Tk; s += SDP_THREADS) w[s] = s < lim ? w[s] * inv : 0.0f;
    __syncthreads();
    for (int e = threadIdx.x; e < Dv; e += SDP_THREADS) {
        float acc = 0.0f;
        for (int s = 0; s < lim; s++) acc += w[s] * vb[(size_t)s * ldv + e];
        o[e] = acc;
    }
}

/* dS[r,t,:] = P ⊙ (dP − P·dP) · scale with dP = dout_t vᵀ (0 where P = 0). Launch: grid (Tq, R)
 * of SDP_THREADS. */
template <int merged>
__global__ void __launch_bounds__(SDP_THREADS)
    k_attn_backward_scores(float *dS, const float *dout, const float *v, const float *weights,
                           float scale, int NH, int Tq, int Tk, int Dv) {
    __shared__ float fbuf[SDP_THREADS];
    const int t = blockIdx.x, r = blockIdx.y;
    const int ldv = attn_row_stride(merged, NH, Dv);
    const float *p = weights + ((size_t)r * Tq + t) * Tk,
                *g = dout + attn_row0(merged, r, NH, Tq, Dv) + (size_t)t * ldv,
                *vb = v + attn_row0(merged, r, NH, Tk, Dv);
    float *ds = dS + ((size_t)r * Tq + t) * Tk;
    sdp_row_dots(g, vb, ldv, Tk, Dv, [&](int s, float acc) { ds[s] = acc; });
    __syncthreads(); /* ds[s] was written by another thread */
    float dot = 0.0f;
    for (int s = threadIdx.x; s < Tk; s += SDP_THREADS) dot += p[s] * ds[s];
    dot = block_sum<SDP_THREADS>(dot, fbuf);
    for (int s = threadIdx.x; s < Tk; s += SDP_THREADS)
        ds[s] = p[s] == 0.0f ? 0.0f : p[s] * (ds[s] - dot) * scale;
}

/* dq += dS k, dk += dSᵀ q, dv += Pᵀ dout for row r (each may be NULL; = in place of += when
 * merged). Launch: grid (R, slices) of SDP_THREADS (attn_sdp.cu's sdp_slices): block (r, y) owns
 * the elements i = y·SDP_THREADS + x, i + slices·SDP_THREADS, ... of each of row r's three
 * outputs; no barrier. */
template <int merged>
__global__ void __launch_bounds__(SDP_THREADS)
    k_attn_backward_inputs(float *dq, float *dk, float *dv, const float *dS, const float *dout,
                           const float *q, const float *k, const float *weights, int NH, int Tq,
                           int Tk, int D, int Dv) {
    const int r = blockIdx.x, i0 = blockIdx.y * SDP_THREADS + threadIdx.x,
              stride = gridDim.y * SDP_THREADS;
    const int ld = attn_row_stride(merged, NH, D), ldv = attn_row_stride(merged, NH, Dv);
    const size_t oq = attn_row0(merged, r, NH, Tq, D), ok = attn_row0(merged, r, NH, Tk, D),
                 ov = attn_row0(merged, r, NH, Tk, Dv), og = attn_row0(merged, r, NH, Tq, Dv);
    const float *ds = dS + (size_t)r * Tq * Tk, *P = weights + (size_t)r * Tq * Tk;
    const float *qb = q + oq, *kb = k + ok, *g = dout + og;
    if (dq)
        for (int i = i0; i < Tq * D; i += stride) {
            int t = i / D, d = i % D;
            float acc = 0.0f;
            for (int s = 0; s < Tk; s++) acc += ds[(size_t)t * Tk + s] * kb[(size_t)s * ld + d];
            float *dst = dq + oq + (size_t)t * ld + d;
            *dst = merged ? acc : *dst + acc;
        }
    if (dk)
        for (int i = i0; i < Tk * D; i += stride) {
            int s = i / D, d = i % D;
            float acc = 0.0f;
            for (int t = 0; t < Tq; t++) acc += ds[(size_t)t * Tk + s] * qb[(size_t)t * ld + d];
            float *dst = dk + ok + (size_t)s * ld + d;
            *dst = merged ? acc : *dst + acc;
        }
    if (dv)
        for (int i = i0; i < Tk * Dv; i += stride) {
            int s = i / Dv, e = i % Dv;
            float acc = 0.0f;
            for (int t = 0; t < Tq; t++) acc += P[(size_t)t * Tk + s] * g[(size_t)t * ldv + e];
            float *dst = dv + ov + (size_t)s * ldv + e;
            *dst = merged ? acc : *dst + acc;
        }
}

#endif
