/* ops/cuda/gru.cu — gru_cell_forward and gru_cell_backward on the GPU (semantics: ops/ops.h;
 * kernels: gru.cuh). Errors: a failed launch aborts (LAUNCH). No workspace. Source: Cho et al.
 * 2014, in cuDNN's and PyTorch's form.
 */
#include "ops/cuda/cuda_internal.h"
#include "ops/cuda/gru.cuh"

static_assert(CUDA_EW_THREADS == 256, "gru kernels declare __launch_bounds__(256)");

static void cu_gru_cell_forward(float *h, float *gx, const float *gh, const float *h_prev,
                                const float *mask, int B, int H) {
    if (B <= 0 || H <= 0) return;
    LAUNCH(k_gru_forward, cuda_ew_blocks((size_t)B * H), CUDA_EW_THREADS, 0, h, gx, gh, h_prev,
           mask, B, H);
}

static void cu_gru_cell_backward(float *dgx, float *dgh, float *dh_prev, const float *dh,
                                 const float *gx, const float *gh, const float *h_prev,
                                 const float *mask, int B, int H) {
    if (B <= 0 || H <= 0) return;
    LAUNCH(k_gru_backward, cuda_ew_blocks((size_t)B * H), CUDA_EW_THREADS, 0, dgx, dgh, dh_prev,
           dh, gx, gh, h_prev, mask, B, H);
}

void cuda_register_gru(Backend *be) {
    be->gru_cell_forward = cu_gru_cell_forward;
    be->gru_cell_backward = cu_gru_cell_backward;
}
