/* ops/cuda/bias.cu — the bias family on the GPU: bias_forward, bias_backward (kernels in
 * bias.cuh). Semantics and shapes: ops.h; the CPU twin: ops/cpu/bias.c. Errors: a failed launch
 * aborts (CUDA_CHECK_LAUNCH). Deterministic: bias_backward sums in a fixed order, no atomics.
 */
#include "ops/cuda/bias.cuh"
#include "ops/cuda/cuda_internal.h"

/* out[N,C] += bias[C]. N or C <= 0: nothing. */
static void cu_bias_forward(float *out, const float *bias, int N, int C) {
    if (N <= 0 || C <= 0) return;
    size_t total = (size_t)N * C;
    LAUNCH(k_bias_forward, cuda_ew_blocks(total), BIAS_THREADS, 0, out, bias, total, C);
}

/* dbias[C] += sum_n dout[n,C]. N or C <= 0: nothing. */
static void cu_bias_backward(float *dbias, const float *dout, int N, int C) {
    if (N <= 0 || C <= 0) return;
    dim3 block(COL_TX, col_lanes(N));
    dim3 grid((unsigned)((C + COL_TX - 1) / COL_TX));
    LAUNCH(k_bias_backward, grid, block, 0, dbias, dout, N, C);
}

void cuda_register_bias(Backend *be) {
    be->bias_forward = cu_bias_forward;
    be->bias_backward = cu_bias_backward;
}
