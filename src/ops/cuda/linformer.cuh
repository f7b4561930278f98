/* ops/cuda/linformer.cuh — kernels of Linformer's projection over the key axis (Wang et al. 2020
 * eq. 7: E_i K, F_i V with padding zeroed; semantics: ops/ops.h linformer_proj_*; the CPU
 * reference and the gradients: ops/cpu/linformer.c). Written against ops/cuda/kernel_api.h
 * (nvcc, or the SIMT emulation). Host side: linformer.cu.
 *
 * Shapes: B batch, NH heads, R projected length, Tk keys, D width per head, n the projection's
 * width (Tk <= n); x [B,NH,Tk,D], out [B,NH,R,D], P [NP,R,n] (NP = NH, or 1 when shared),
 * key_len [B] (NULL: all Tk visible), L_b = min(key_len[b], Tk).
 *
 * Every kernel is element-wise over the floats it writes: one thread per written float, a
 * grid-stride loop (cuda_ew_blocks(total) blocks of LF_THREADS), no shared memory, no barriers,
 * no atomics. Each thread sums in the CPU's order (s, j, or h then b then d ascending), so the
 * result is the same bits under every schedule and equals the CPU's up to FMA contraction
 * (docs/design.md §9). Indices are size_t.
 */
#ifndef TRAINER_CUDA_LINFORMER_CUH
#define TRAINER_CUDA_LINFORMER_CUH

#include <stddef.h>

#include "ops/cuda/kernel_api.h"

constexpr int LF_THREADS = 256; /* = CUDA_EW_THREADS; the kernels' __launch_bounds__ */

__device__ inline int lf_len(const int *key_len, int b, int Tk) {
    int L = key_len ? key_len[b] : Tk;
    return L > Tk ? Tk : (L < 0 ? 0 : L);
}

/* out[b,h,j,d] = Σ_{s<L_b} P_h[j,s] x[b,h,s,d]; total = B·NH·R·D, one thread per out float. */
__global__ void __launch_bounds__(LF_THREADS)
    k_linformer_proj_forward(float *out, const float *P, const float *x, const int *key_len,
                             size_t total, int NH, int R, int Tk, int D, int n, int shared) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
        size_t d = i % (size_t)D, r = i / (size_t)D;
        size_t j = r % (size_t)R, bh = r / (size_t)R;
        int b = (int)(bh / (size_t)NH), h = (int)(bh % (size_t)NH), L = lf_len(key_len, b, Tk);
        const float *Pj = P + (shared ? 0 : (size_t)h * R * n) + j * (size_t)n;
        const float *xb = x + bh * (size_t)Tk * D + d;
        float acc = 0.0f;
        for (int s = 0; s < L; s++) acc += Pj[s] * xb[(size_t)s * D];
        out[i] = acc;
    }
}

/* dx[b,h,s,d] += Σ_j P_h[j,s] dout[b,h,j,d] for s < L_b (the forward line differentiated for x);
 * total = B·NH·Tk·D, one thread per dx float (padded ones untouched). */
__global__ void __launch_bounds__(LF_THREADS)
    k_linformer_proj_backward_x(float *dx, const float *dout, const float *P, const int *key_len,
                                size_t total, int NH, int R, int Tk, int D, int n, int shared) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
        size_t d = i % (size_t)D, r = i / (size_t)D;
        size_t s = r % (size_t)Tk, bh = r / (size_t)Tk;
        int b = (int)(bh / (size_t)NH), h = (int)(bh % (size_t)NH);
        if ((int)s >= lf_len(key_len, b, Tk)) continue;
        const float *Ph = P + (shared ? 0 : (size_t)h * R * n) + s;
        const float *gb = dout + bh * (size_t)R * D + d;
        float acc = 0.0f;
        for (int j = 0; j < R; j++) acc += Ph[(size_t)j * n] * gb[(size_t)j * D];
        dx[i] += acc;
    }
}

/* dP_p[j,s] += Σ_h Σ_b [s < L_b] Σ_d dout[b,h,j,d] x[b,h,s,d] (h = p alone unless shared) for
 * s < Tk (the forward line differentiated for P); total = NP·R·Tk, one thread per written dP
 * float, the sum over h, b, d ascending. */
__global__ void __launch_bounds__(LF_THREADS)
    k_linformer_proj_backward_p(float *dP, const float *dout, const float *x, const int *key_len,
                                size_t total, int B, int NH, int R, int Tk, int D, int n,
                                int shared) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
        size_t s = i % (size_t)Tk, r = i / (size_t)Tk;
        size_t j = r % (size_t)R, p = r / (size_t)R;
        int h0 = shared ? 0 : (int)p, h1 = shared ? NH : (int)p + 1;
        float acc = 0.0f;
        for (int h = h0; h < h1; h++)
            for (int b = 0; b < B; b++) {
                if ((int)s >= lf_len(key_len, b, Tk)) continue;
                size_t bh = (size_t)b * NH + h;
                const float *gj = dout + (bh * R + j) * D, *xs = x + (bh * Tk + s) * D;
                for (int d = 0; d < D; d++) acc += gj[d] * xs[d];
            }
        dP[(p * R + j) * (size_t)n + s] += acc;
    }
}

#endif
