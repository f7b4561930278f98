/* ops/cuda/linformer.cu — Linformer's projection over the key axis on the GPU:
 * linformer_proj_forward / _backward (Wang et al. 2020 eq. 7; semantics and shapes: ops/ops.h;
 * kernels and the determinism argument: linformer.cuh). Each host function launches element-wise
 * kernels on the default stream (cuda_ew_blocks blocks of CUDA_EW_THREADS); an empty tensor
 * launches nothing. No workspace. Errors: a failed launch aborts (LAUNCH).
 */
#include "ops/cuda/cuda_internal.h"
#include "ops/cuda/linformer.cuh"

static_assert(LF_THREADS == CUDA_EW_THREADS, "linformer kernels are element-wise kernels");

static void cu_linformer_proj_forward(float *out, const float *P, const float *x,
                                      const int *key_len, int B, int NH, int R, int Tk, int D,
                                      int n, int shared) {
    size_t total = (size_t)B * NH * R * D;
    if (B <= 0 || NH <= 0 || R <= 0 || D <= 0) return;
    LAUNCH(k_linformer_proj_forward, cuda_ew_blocks(total), CUDA_EW_THREADS, 0, out, P, x,
           key_len, total, NH, R, Tk, D, n, shared);
}

static void cu_linformer_proj_backward(float *dx, float *dP, const float *dout, const float *P,
                                       const float *x, const int *key_len, int B, int NH, int R,
                                       int Tk, int D, int n, int shared) {
    if (B <= 0 || NH <= 0 || R <= 0 || Tk <= 0 || D <= 0) return;
    if (dx) {
        size_t total = (size_t)B * NH * Tk * D;
        LAUNCH(k_linformer_proj_backward_x, cuda_ew_blocks(total), CUDA_EW_THREADS, 0, dx, dout,
               P, key_len, total, NH, R, Tk, D, n, shared);
    }
    if (dP) {
        size_t total = (size_t)(shared ? 1 : NH) * R * Tk;
        LAUNCH(k_linformer_proj_backward_p, cuda_ew_blocks(total), CUDA_EW_THREADS, 0, dP, dout,
               x, key_len, total, B, NH, R, Tk, D, n, shared);
    }
}

void cuda_register_linformer(Backend *be) {
    be->linformer_proj_forward = cu_linformer_proj_forward;
    be->linformer_proj_backward = cu_linformer_proj_backward;
}
