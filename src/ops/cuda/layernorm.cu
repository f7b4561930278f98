/* ops/cuda/layernorm.cu — layernorm_forward and layernorm_backward on the GPU (Ba et al. 2016
 * eq. 4; semantics: ops/ops.h; kernels and determinism: layernorm.cuh). Errors: a failed launch
 * aborts (LAUNCH). No workspace.
 */
#include "ops/cuda/cuda_internal.h"
#include "ops/cuda/layernorm.cuh"

static void cu_layernorm_forward(float *out, float *mean, float *rstd, const float *inp,
                                 const float *weight, const float *bias, int N, int C) {
    if (N <= 0 || C <= 0) return;
    LAUNCH(k_layernorm_forward, N, LN_THREADS, 0, out, mean, rstd, inp, weight, bias, C);
}

static void cu_layernorm_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                                  const float *inp, const float *weight, const float *mean,
                                  const float *rstd, int N, int C) {
    if (N <= 0 || C <= 0) return;
    if (dinp)
        LAUNCH(k_layernorm_backward_rows, N, LN_THREADS, 0, dinp, dout, inp, weight, mean, rstd, C);
    if (dweight || dbias)
        LAUNCH(k_layernorm_backward_cols, (C + COL_TX - 1) / COL_TX,
               dim3(COL_TX, col_lanes(N)), 0, dweight, dbias, dout, inp, mean, rstd, N, C);
}

void cuda_register_layernorm(Backend *be) {
    be->layernorm_forward = cu_layernorm_forward;
    be->layernorm_backward = cu_layernorm_backward;
}
