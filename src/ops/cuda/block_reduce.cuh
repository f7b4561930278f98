/* ops/cuda/block_reduce.cuh — deterministic block-wide reductions for the row kernels
 * (layernorm.cuh, softmax_xent.cuh, attn_*.cuh). Each thread first reduces its strided share of
 * a row in ascending order, then the NT partials are combined in a fixed binary tree in shared
 * memory, so the result is the same bits under every schedule. Written against
 * ops/cuda/kernel_api.h. The caller owns the shared buffer buf[NT] (declared in the kernel: see
 * simt.h's rule for __shared__) and every thread of the block must call; the functions begin and
 * end with a barrier, so buf may be reused at once. NT: the block size, a power of two.
 */
#ifndef TRAINER_CUDA_BLOCK_REDUCE_CUH
#define TRAINER_CUDA_BLOCK_REDUCE_CUH

#include "ops/cuda/kernel_api.h"

/* Sum of v over the block's threads (fixed tree); the total is returned to every thread. */
template <int NT, class T> __device__ inline T block_sum(T v, T *buf) {
    __syncthreads(); /* buf may still be read by a previous call */
    buf[threadIdx.x] = v;
    __syncthreads();
    for (int h = NT / 2; h > 0; h >>= 1) {
        if ((int)threadIdx.x < h) buf[threadIdx.x] += buf[threadIdx.x + h];
        __syncthreads();
    }
    return buf[0];
}

/* Maximum of v over the block's threads (NaN-free inputs); returned to every thread. */
template <int NT> __device__ inline float block_max(float v, float *buf) {
    __syncthreads();
    buf[threadIdx.x] = v;
    __syncthreads();
    for (int h = NT / 2; h > 0; h >>= 1) {
        if ((int)threadIdx.x < h) {
            float o = buf[threadIdx.x + h];
            if (o > buf[threadIdx.x]) buf[threadIdx.x] = o;
        }
        __syncthreads();
    }
    return buf[0];
}

#endif
