/* ops/cuda/dropout.cuh — kernels of inverted dropout (Srivastava et al. 2014) and of the
 * feed-forward network's fused bias + ReLU + dropout (Vaswani et al. 2017 eq. 2), with their
 * backward (semantics: ops/ops.h). Written against ops/cuda/kernel_api.h. Host side: dropout.cu.
 *
 * Masks: element i is kept iff u_i >= p, u_i = (rng_hash(key, i) >> 8) · 2^-24 (24 random bits,
 * exact in float), the kept value 1/(1-p) computed once on the host as the CPU does. rng_hash is
 * the one definition in core/rng.h (a __host__ __device__ inline function under nvcc), so the
 * masks equal the CPU backend's bit for bit; p <= 0 keeps everything with mask 1.
 *
 * Every kernel is element-wise (one thread per element, grid-stride loop; launch:
 * cuda_ew_blocks(n) blocks of CUDA_EW_THREADS threads), no shared memory, no barriers; each
 * element has one writer, so results do not depend on the thread order (docs/design.md §9).
 */
#ifndef TRAINER_CUDA_DROPOUT_CUH
#define TRAINER_CUDA_DROPOUT_CUH

#include <stddef.h>
#include <stdint.h>

#include "ops/cuda/kernel_api.h"

extern "C" {
#include "core/rng.h"
}

constexpr int DROPOUT_THREADS = 256; /* = CUDA_EW_THREADS; the kernels' __launch_bounds__ */

/* The mask value of element i: keep_scale (= 1/(1-p), or 1 when p <= 0) or 0; the CPU's
 * keep_mask (ops/cpu/dropout.c) to the bit. */
__device__ inline float dropout_mask_value(uint64_t key, size_t i, float p, float keep_scale) {
    float u = (float)(rng_hash(key, (uint64_t)i) >> 8) * (1.0f / 16777216.0f);
    return (p <= 0.0f || u >= p) ? keep_scale : 0.0f;
}

/* mask[i] = dropout_mask_value(key, i, p, keep_scale); out[i] = inp[i] · mask[i]; i < n. */
__global__ void __launch_bounds__(DROPOUT_THREADS)
    k_dropout_forward(float *out, float *mask, const float *inp, float p, float keep_scale,
                      uint64_t key, size_t n) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float m = dropout_mask_value(key, i, p, keep_scale);
        mask[i] = m;
        out[i] = inp[i] * m;
    }
}

/* dinp[i] += dout[i] · mask[i] (the forward line out = inp · mask differentiated); i < n. */
__global__ void __launch_bounds__(DROPOUT_THREADS)
    k_dropout_backward(float *dinp, const float *dout, const float *mask, size_t n) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        dinp[i] += dout[i] * mask[i];
}

/* out[N,C] = max(inp + bias[C], 0) · mask, mask over the flattened index i = n·C + c; total =
 * N·C. out may equal inp (each thread reads its element before writing it). p <= 0: mask 1,
 * out = fmaxf(inp + bias, 0) as the CPU. */
__global__ void __launch_bounds__(DROPOUT_THREADS)
    k_bias_relu_dropout_forward(float *out, const float *inp, const float *bias, float p,
                                float keep_scale, uint64_t key, size_t total, int C) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
        float x = inp[i] + bias[i % (size_t)C];
        if (p <= 0.0f)
            out[i] = fmaxf(x, 0.0f);
        else
            out[i] = (x > 0.0f ? x : 0.0f) * dropout_mask_value(key, i, p, keep_scale);
    }
}

/* dinp[i] = [out[i] > 0] · dout[i] · keep_scale (OVERWRITTEN; the forward line
 * out = max(x, 0) · mask differentiated: mask · [x > 0] = [out > 0] / (1-p)); i < n. */
__global__ void __launch_bounds__(DROPOUT_THREADS)
    k_relu_dropout_backward(float *dinp, const float *dout, const float *out, float keep_scale,
                            size_t n) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        dinp[i] = out[i] > 0.0f ? dout[i] * keep_scale : 0.0f;
}

#endif
