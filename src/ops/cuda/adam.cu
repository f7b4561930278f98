/* ops/cuda/adam.cu — adam_update on the GPU over the flat parameter buffer in one kernel
 * (semantics: ops/ops.h; kernel: adam.cuh). Shapes: param, grad, m, v [n] (device memory);
 * t >= 1 the step number. The bias corrections are computed here with powf, as the CPU backend
 * computes them. Errors: a failed launch aborts (LAUNCH). No workspace.
 * Source: Kingma & Ba 2015, Algorithm 1.
 */
#include <math.h>

#include "ops/cuda/adam.cuh"
#include "ops/cuda/cuda_internal.h"

static_assert(ADAM_THREADS == CUDA_EW_THREADS, "adam_update is an element-wise kernel");

/* One Adam step (t >= 1) over n parameters. */
static void cu_adam_update(float *param, const float *grad, float *m, float *v, size_t n,
                           float lr, float b1, float b2, float eps, int t) {
    if (!n) return;
    float c1 = 1.0f / (1.0f - powf(b1, (float)t));
    float c2 = 1.0f / (1.0f - powf(b2, (float)t));
    LAUNCH(k_adam_update, cuda_ew_blocks(n), CUDA_EW_THREADS, 0, param, grad, m, v, n, lr, b1, b2,
           eps, c1, c2);
}

void cuda_register_adam(Backend *be) { be->adam_update = cu_adam_update; }
