/* ops/cuda/bias.cuh — kernels of the bias family (written against kernel_api.h; compiled by nvcc
 * or, in the emulated build, by the host compiler). Host side: bias.cu. Shapes as ops.h:
 * out/dout [N,C] row-major, bias/dbias [C]. Source: — (plain algebra).
 */
#ifndef TRAINER_CUDA_BIAS_CUH
#define TRAINER_CUDA_BIAS_CUH

#include <stddef.h>

#include "ops/cuda/block_reduce.cuh"
#include "ops/cuda/kernel_api.h"

constexpr int BIAS_THREADS = 256; /* k_bias_forward: threads per block */
/* out[i] += bias[i % C], i < total = N*C; grid-stride. */
__global__ void __launch_bounds__(BIAS_THREADS)
k_bias_forward(float *__restrict__ out, const float *__restrict__ bias, size_t total, int C) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride)
        out[i] += bias[i % (size_t)C];
}

/* dbias[c] += sum_n dout[n,c]: block_reduce.cuh's column sums (grid ceil(C / COL_TX), block
 * dim3(COL_TX, col_lanes(N))); deterministic, reads coalesced along a row, no atomics. */
__global__ void __launch_bounds__(COL_TX * COL_TY)
k_bias_backward(float *__restrict__ dbias, const float *__restrict__ dout, int N, int C) {
    __shared__ float part[COL_TY][COL_TX];
    int c = (int)(blockIdx.x * COL_TX + threadIdx.x);
    float s = 0.0f;
    if (c < C)
        for (int n = (int)threadIdx.y; n < N; n += (int)blockDim.y) s += dout[(size_t)n * C + c];
    col_tree_sum(s, part);
    if (threadIdx.y == 0 && c < C) dbias[c] += part[0][threadIdx.x];
}

#endif
