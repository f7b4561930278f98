/* ops/cuda/lstm.cu — lstm_cell_forward and lstm_cell_backward on the GPU (semantics: ops/ops.h;
 * kernels: lstm.cuh). Errors: a failed launch aborts (LAUNCH). No workspace. Source:
 * Hochreiter & Schmidhuber 1997, in cuDNN's gate order.
 */
#include "ops/cuda/cuda_internal.h"
#include "ops/cuda/lstm.cuh"

static_assert(CUDA_EW_THREADS == 256, "lstm kernels declare __launch_bounds__(256)");

static void cu_lstm_cell_forward(float *h, float *c, float *gates, const float *h_prev,
                                 const float *c_prev, const float *mask, int B, int H) {
    if (B <= 0 || H <= 0) return;
    LAUNCH(k_lstm_forward, cuda_ew_blocks((size_t)B * H), CUDA_EW_THREADS, 0, h, c, gates, h_prev,
           c_prev, mask, B, H);
}

static void cu_lstm_cell_backward(float *dgates, float *dh_prev, float *dc_prev, const float *dh,
                                  const float *dc, const float *gates, const float *c,
                                  const float *c_prev, const float *mask, int B, int H) {
    if (B <= 0 || H <= 0) return;
    LAUNCH(k_lstm_backward, cuda_ew_blocks((size_t)B * H), CUDA_EW_THREADS, 0, dgates, dh_prev,
           dc_prev, dh, dc, gates, c, c_prev, mask, B, H);
}

void cuda_register_lstm(Backend *be) {
    be->lstm_cell_forward = cu_lstm_cell_forward;
    be->lstm_cell_backward = cu_lstm_cell_backward;
}
