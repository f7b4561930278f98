/* ops/cuda/adam.cuh — the Adam update kernel (Kingma & Ba 2015, Algorithm 1, bias-corrected;
 * semantics: ops/ops.h adam_update) over one flat parameter buffer. Written against
 * ops/cuda/kernel_api.h. Host side: adam.cu.
 *
 * One element-wise kernel (one thread per parameter, grid-stride loop; launch:
 * cuda_ew_blocks(n) blocks of CUDA_EW_THREADS), no shared memory, no barriers: each parameter
 * and its moments have one reader-writer, so the result does not depend on the thread order.
 * The bias corrections c1 = 1/(1-b1^t), c2 = 1/(1-b2^t) come from the host (computed there as
 * the CPU backend does). Against the CPU the result may differ by the rounding of a fused
 * multiply-add (nvcc and the host compiler contract a·b + c differently): a few ulps.
 */
#ifndef TRAINER_CUDA_ADAM_CUH
#define TRAINER_CUDA_ADAM_CUH

#include <stddef.h>

#include "ops/cuda/kernel_api.h"

constexpr int ADAM_THREADS = 256; /* = CUDA_EW_THREADS; the kernel's __launch_bounds__ */

/* For i < n: m = b1 m + (1-b1) g; v = b2 v + (1-b2) g²; param -= lr (m c1) / (sqrt(v c2) + eps)
 * (Algorithm 1's update with m̂ = m c1, v̂ = v c2). param, grad, m, v [n]. */
__global__ void __launch_bounds__(ADAM_THREADS)
    k_adam_update(float *param, const float *grad, float *m, float *v, size_t n, float lr,
                  float b1, float b2, float eps, float c1, float c2) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float g = grad[i];
        float mi = b1 * m[i] + (1.0f - b1) * g;
        float vi = b2 * v[i] + (1.0f - b2) * g * g;
        m[i] = mi;
        v[i] = vi;
        param[i] -= lr * (mi * c1) / (sqrtf(vi * c2) + eps);
    }
}

#endif
