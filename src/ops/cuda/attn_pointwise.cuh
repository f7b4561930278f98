/* ops/cuda/attn_pointwise.cuh — pointwise attention and the per-head RMS normalisation on the GPU
 * (the sigmoid and rela kinds; semantics: ops/ops.h pointwise_attn_*, head_rmsnorm_*; CPU
 * reference: ops/cpu/attn_pointwise.c). Written against ops/cuda/kernel_api.h. Host side:
 * attn_pointwise.cu.
 * Shapes: R = B·NH rows (b, h); q [R,Tq,D], k [R,Tk,D], v [R,Tk,Dv], out [R,Tq,Dv],
 * weights [R,Tq,Tk], key_len [B] (NULL: all visible); head_rmsnorm: rows n = (b·NH + h)·T + t of
 * [B,NH,T,C], gain [NH,C], rstd [B,NH,T].
 *
 * Forward: one block per query row (r, t), as attn_sdp.cuh's k_attn_forward: scores by
 * attn_sdp.cuh's sdp_row_dots, each weight f(scale·score + bias) written by the thread that summed
 * it, masked ones 0; then out, one thread per value column, s ascending.
 * Backward: per query row, dP = dout vᵀ (sdp_row_dots) and dS = f'(w) ⊙ dP · scale into the
 * workspace [R,Tq,Tk]; then attn_sdp.cuh's k_attn_backward_inputs writes dq, dk, dv (each float
 * summed by its owning thread in a fixed order).
 * head_rmsnorm: one block per row (the sums of squares by block_reduce.cuh's fixed tree, in
 * double); dgain one thread per (h, c), over b then t in order. No atomics anywhere:
 * deterministic under every schedule.
 */
#ifndef TRAINER_CUDA_ATTN_POINTWISE_CUH
#define TRAINER_CUDA_ATTN_POINTWISE_CUH

#include <stddef.h>

#include "ops/cuda/attn_common.cuh"
#include "ops/cuda/attn_sdp.cuh"
#include "ops/cuda/block_reduce.cuh"
#include "ops/cuda/kernel_api.h"

constexpr int PW_SIGMOID = 0, PW_RELU = 1; /* ops.h's POINTWISE_* */
constexpr int RMS_THREADS = 64;             /* head_rmsnorm: threads per row (a power of two) */
constexpr float RMS_EPS = 1e-8f;
constexpr int RMS_GAIN_THREADS = 128;       /* head_rmsnorm dgain: threads per block */

/* f(e + bias): σ or max(·, 0) */
__device__ inline float pw_weight(float e, float bias, int fn) {
    return fn == PW_SIGMOID ? 1.0f / (1.0f + expf(-(e + bias))) : (e > 0.0f ? e : 0.0f);
}

/* Launch: grid (Tq, R) of SDP_THREADS; block (t, r). */
__global__ void __launch_bounds__(SDP_THREADS)
    k_pointwise_attn_forward(float *out, float *weights, const float *q, const float *k,
                             const float *v, const int *key_len, float scale, int causal, int fn,
                             int NH, int Tq, int Tk, int D, int Dv) {
    const int t = blockIdx.x, r = blockIdx.y;
    const int lim = attn_key_limit(key_len, r / NH, causal, t, Tq, Tk);
    const float bias = fn == PW_SIGMOID && lim > 0 ? -logf((float)lim) : 0.0f;
    const float *qr = q + ((size_t)r * Tq + t) * D, *kb = k + (size_t)r * Tk * D,
                *vb = v + (size_t)r * Tk * Dv;
    float *w = weights + ((size_t)r * Tq + t) * Tk, *o = out + ((size_t)r * Tq + t) * Dv;
    sdp_row_dots(qr, kb, D, lim, D,
                 [&](int s, float acc) { w[s] = pw_weight(scale * acc, bias, fn); });
    for (int s = lim + threadIdx.x; s < Tk; s += SDP_THREADS) w[s] = 0.0f;
    __syncthreads(); /* w[s] was written by another thread */
    for (int e = threadIdx.x; e < Dv; e += SDP_THREADS) {
        float acc = 0.0f;
        for (int s = 0; s < lim; s++) acc += w[s] * vb[(size_t)s * Dv + e];
        o[e] = acc;
    }
}

/* dS[r,t,:] = f'(w) ⊙ dP · scale with dP = dout_t vᵀ; f' = w (1 − w) (σ) or [w > 0] (relu).
 * Launch: grid (Tq, R) of SDP_THREADS. */
__global__ void __launch_bounds__(SDP_THREADS)
    k_pointwise_attn_backward_scores(float *dS, const float *dout, const float *v,
                                     const float *weights, float scale, int fn, int Tq, int Tk,
                                     int Dv) {
    const int t = blockIdx.x, r = blockIdx.y;
    const float *p = weights + ((size_t)r * Tq + t) * Tk, *g = dout + ((size_t)r * Tq + t) * Dv,
                *vb = v + (size_t)r * Tk * Dv;
    float *ds = dS + ((size_t)r * Tq + t) * Tk;
    sdp_row_dots(g, vb, Dv, Tk, Dv, [&](int s, float acc) {
        float w = p[s];
        ds[s] = fn == PW_SIGMOID ? w * (1.0f - w) * acc * scale : (w > 0.0f ? acc * scale : 0.0f);
    });
}

/* out = inp · rstd ⊙ gain[h] per row. Launch: grid N rows of RMS_THREADS. */
__global__ void __launch_bounds__(RMS_THREADS)
    k_head_rmsnorm_forward(float *out, float *rstd, const float *inp, const float *gain, int NH,
                           int T, int C) {
    __shared__ double dbuf[RMS_THREADS];
    const size_t n = blockIdx.x;
    const float *x = inp + n * C, *g = gain + (size_t)((n / T) % NH) * C;
    float *o = out + n * C;
    double ss = 0.0;
    for (int c = threadIdx.x; c < C; c += RMS_THREADS) ss += (double)x[c] * x[c];
    ss = block_sum<RMS_THREADS>(ss, dbuf);
    const float r = (float)(1.0 / sqrt(ss / C + (double)RMS_EPS));
    if (threadIdx.x == 0) rstd[n] = r;
    for (int c = threadIdx.x; c < C; c += RMS_THREADS) o[c] = x[c] * r * g[c];
}

/* dinp += rstd (dout ⊙ gain − x̂ mean(x̂ ⊙ dout ⊙ gain)) per row. Launch: grid N of
 * RMS_THREADS. */
__global__ void __launch_bounds__(RMS_THREADS)
    k_head_rmsnorm_backward_rows(float *dinp, const float *dout, const float *inp,
                                 const float *gain, const float *rstd, int NH, int T, int C) {
    __shared__ double dbuf[RMS_THREADS];
    const size_t n = blockIdx.x;
    const float *x = inp + n * C, *go = dout + n * C, *g = gain + (size_t)((n / T) % NH) * C;
    float *dx = dinp + n * C;
    const float r = rstd[n];
    double sgx = 0.0;
    for (int c = threadIdx.x; c < C; c += RMS_THREADS) sgx += (double)go[c] * g[c] * (x[c] * r);
    sgx = block_sum<RMS_THREADS>(sgx, dbuf);
    const float m = (float)(sgx / C);
    for (int c = threadIdx.x; c < C; c += RMS_THREADS)
        dx[c] += r * (go[c] * g[c] - x[c] * r * m);
}

/* dgain[h,c] += Σ_b Σ_t dout x̂, one thread per j = h·C + c. Launch: ⌈NH·C / RMS_GAIN_THREADS⌉
 * blocks of RMS_GAIN_THREADS. */
__global__ void __launch_bounds__(RMS_GAIN_THREADS)
    k_head_rmsnorm_backward_gain(float *dgain, const float *dout, const float *inp,
                                 const float *rstd, int B, int NH, int T, int C) {
    const int j = blockIdx.x * RMS_GAIN_THREADS + threadIdx.x;
    if (j >= NH * C) return;
    const int h = j / C, c = j % C;
    float acc = 0.0f;
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            size_t n = ((size_t)b * NH + h) * T + t;
            acc += dout[n * C + c] * (inp[n * C + c] * rstd[n]);
        }
    dgain[j] += acc;
}

#endif
