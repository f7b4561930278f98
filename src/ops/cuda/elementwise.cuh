/* ops/cuda/elementwise.cuh — kernels of the element-wise family: axpy, scale, tanh forward and
 * backward, and the two deterministic reductions sumsq and all_finite (written against
 * kernel_api.h). Host side: elementwise.cu. Shapes: flat vectors of n floats (ops.h).
 *
 * Reductions (docs/design.md §9): two passes with a fixed shape — pass 1 runs exactly RED_BLOCKS
 * blocks of RED_THREADS threads, each thread a fixed grid-stride share in order, each block a
 * fixed shared-memory tree, one partial per block; pass 2 is one block reducing the RED_BLOCKS
 * partials with the same tree. No atomics, no flags written by several threads, so the result
 * is the same bits on every run and under every thread schedule. Source: — (plain algebra;
 * tanh' = 1 - tanh², Abramowitz & Stegun 4.5.17).
 */
#ifndef TRAINER_CUDA_ELEMENTWISE_CUH
#define TRAINER_CUDA_ELEMENTWISE_CUH

#include <math.h>
#include <stddef.h>

#include "ops/cuda/cuda_internal.h"
#include "ops/cuda/kernel_api.h"

constexpr int RED_THREADS = 256;  /* threads per reduction block (a power of two) */
constexpr int RED_BLOCKS = 1024;  /* pass-1 blocks: the fixed count of partials */

/* y[i] += a * x[i], i < n. */
__global__ void __launch_bounds__(CUDA_EW_THREADS)
k_axpy(float *__restrict__ y, float a, const float *__restrict__ x, size_t n) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        y[i] += a * x[i];
}

/* x[i] *= a, i < n. */
__global__ void __launch_bounds__(CUDA_EW_THREADS) k_scale(float *x, float a, size_t n) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) x[i] *= a;
}

/* y[i] = tanh(x[i]), i < n (y may alias x). */
__global__ void __launch_bounds__(CUDA_EW_THREADS)
k_tanh_forward(float *y, const float *x, size_t n) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        y[i] = tanhf(x[i]);
}

/* dx[i] += dy[i] * (1 - y[i]^2), i < n; y = tanh(x) from the forward pass. */
__global__ void __launch_bounds__(CUDA_EW_THREADS)
k_tanh_backward(float *__restrict__ dx, const float *__restrict__ dy,
                const float *__restrict__ y, size_t n) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        dx[i] += dy[i] * (1.0f - y[i] * y[i]);
}

/* buf[0] = sum of buf[0..RED_THREADS) (shared), in a fixed tree; every thread of the block must
 * call it; the caller has written buf and passed a barrier. T: double or int. */
template <class T> __device__ __forceinline__ void block_tree_sum(T *buf) {
    for (int h = RED_THREADS / 2; h > 0; h >>= 1) {
        if ((int)threadIdx.x < h) buf[threadIdx.x] += buf[threadIdx.x + h];
        __syncthreads();
    }
}

/* partials[blockIdx.x] = sum of x[i]^2 (in double) over this block's grid-stride share of
 * i < n. Exactly RED_BLOCKS blocks of RED_THREADS threads. */
__global__ void __launch_bounds__(RED_THREADS)
k_sumsq_partial(double *__restrict__ partials, const float *__restrict__ x, size_t n) {
    __shared__ double buf[RED_THREADS];
    size_t stride = (size_t)gridDim.x * blockDim.x;
    double s = 0.0;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        double v = (double)x[i];
        s += v * v;
    }
    buf[threadIdx.x] = s;
    __syncthreads();
    block_tree_sum(buf);
    if (threadIdx.x == 0) partials[blockIdx.x] = buf[0];
}

/* *out = sum of partials[0..count) in a fixed order; one block of RED_THREADS threads. */
__global__ void __launch_bounds__(RED_THREADS)
k_sum_partials(double *__restrict__ out, const double *__restrict__ partials, int count) {
    __shared__ double buf[RED_THREADS];
    double s = 0.0;
    for (int i = (int)threadIdx.x; i < count; i += RED_THREADS) s += partials[i];
    buf[threadIdx.x] = s;
    __syncthreads();
    block_tree_sum(buf);
    if (threadIdx.x == 0) *out = buf[0];
}

/* bad[blockIdx.x] = number of non-finite x[i] (NaN, ±Inf) in this block's grid-stride share of
 * i < n, each thread counting its own elements, the block adding the counts in a fixed tree:
 * one writer per output word (no shared flag). Exactly RED_BLOCKS blocks of RED_THREADS. */
__global__ void __launch_bounds__(RED_THREADS)
k_nonfinite_partial(int *__restrict__ bad, const float *__restrict__ x, size_t n) {
    __shared__ int buf[RED_THREADS];
    size_t stride = (size_t)gridDim.x * blockDim.x;
    int c = 0;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        c += !isfinite(x[i]);
    buf[threadIdx.x] = c > 0; /* 0/1 per thread: the block sum cannot overflow */
    __syncthreads();
    block_tree_sum(buf);
    if (threadIdx.x == 0) bad[blockIdx.x] = buf[0] > 0;
}

/* *out = 1 if every bad[0..count) is 0, else 0; one block of RED_THREADS threads. */
__global__ void __launch_bounds__(RED_THREADS)
k_all_zero(int *__restrict__ out, const int *__restrict__ bad, int count) {
    __shared__ int buf[RED_THREADS];
    int c = 0;
    for (int i = (int)threadIdx.x; i < count; i += RED_THREADS) c |= bad[i] != 0;
    buf[threadIdx.x] = c;
    __syncthreads();
    block_tree_sum(buf);
    if (threadIdx.x == 0) *out = buf[0] == 0;
}

#endif
