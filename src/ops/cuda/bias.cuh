/* ops/cuda/bias.cuh — kernels of the bias family (written against kernel_api.h; compiled by nvcc
 * or, in the emulated build, by the host compiler). Host side: bias.cu. Shapes as ops.h:
 * out/dout [N,C] row-major, bias/dbias [C]. Source: — (plain algebra).
 */
#ifndef TRAINER_CUDA_BIAS_CUH
#define TRAINER_CUDA_BIAS_CUH

#include <stddef.h>

#include "ops/cuda/kernel_api.h"

constexpr int BIAS_THREADS = 256; /* k_bias_forward: threads per block */
constexpr int BIAS_TX = 32;       /* k_bias_backward: columns per block (one warp) */
constexpr int BIAS_TY = 8;        /* k_bias_backward: row lanes per block (a power of two) */

/* out[i] += bias[i % C], i < total = N*C; grid-stride. */
__global__ void __launch_bounds__(BIAS_THREADS)
k_bias_forward(float *__restrict__ out, const float *__restrict__ bias, size_t total, int C) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride)
        out[i] += bias[i % (size_t)C];
}

/* dbias[c] += sum_n dout[n,c]. Block (BIAS_TX, BIAS_TY) owns BIAS_TX consecutive columns; row
 * lane y sums rows y, y + BIAS_TY, ... in order, then the BIAS_TY lane sums meet in a fixed tree
 * in shared memory (deterministic; reads coalesced along a row; no atomics). */
__global__ void __launch_bounds__(BIAS_TX * BIAS_TY)
k_bias_backward(float *__restrict__ dbias, const float *__restrict__ dout, int N, int C) {
    __shared__ float part[BIAS_TY][BIAS_TX];
    int c = (int)(blockIdx.x * BIAS_TX + threadIdx.x);
    float s = 0.0f;
    if (c < C)
        for (int n = (int)threadIdx.y; n < N; n += BIAS_TY) s += dout[(size_t)n * C + c];
    part[threadIdx.y][threadIdx.x] = s;
    __syncthreads();
    for (int h = BIAS_TY / 2; h > 0; h >>= 1) {
        if ((int)threadIdx.y < h) part[threadIdx.y][threadIdx.x] += part[threadIdx.y + h][threadIdx.x];
        __syncthreads();
    }
    if (threadIdx.y == 0 && c < C) dbias[c] += part[0][threadIdx.x];
}

#endif
