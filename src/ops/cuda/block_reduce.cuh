/* ops/cuda/block_reduce.cuh — deterministic block-wide reductions for the row kernels
 * (layernorm.cuh, softmax_xent.cuh, attn_*.cuh), a warp's sum (attn_sdp.cuh's dot products)
 * and the column sums (bias.cuh, layernorm.cuh; below). Each thread first reduces its strided
 * share of a row in ascending order, then the NT partials are combined in a fixed binary tree in
 * shared memory, so the result is the same bits under every schedule. Written against
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

/* Sum of v over the 32 lanes of a warp by the xor butterfly; every lane returns the same bits
 * (at each level a lane and its partner add the same two partials, and IEEE addition is
 * commutative), so the result is fixed under every schedule. All 32 lanes must call. */
__device__ inline float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

/* Column sums of an [N, C] row-major matrix, the pattern of every parameter gradient that sums
 * over rows (bias, layer-norm gain and bias). Block (COL_TX, ty): COL_TX consecutive columns
 * (one 32-byte sector of a row per warp row) and ty = col_lanes(N) row lanes; lane y of column x
 * sums rows y, y + ty, ... in ascending order, then col_tree_sum combines the lane sums of each
 * column in a fixed tree: the same bits under every schedule, no atomics. Against one thread per
 * column down all N rows, each thread's chain of dependent loads is ty times shorter and
 * C / COL_TX blocks share the work. Launch: grid ceil(C / COL_TX), block dim3(COL_TX,
 * col_lanes(N)). */
constexpr int COL_TX = 8;  /* columns per block */
constexpr int COL_TY = 64; /* row lanes per block at most (a power of two) */

/* Row lanes for N rows: the smallest power of two >= N, at most COL_TY (host side). */
static inline int col_lanes(int N) {
    int ty = 1;
    while (ty < N && ty < COL_TY) ty <<= 1;
    return ty;
}

/* part[y][x] = v, then part[0][x] = Σ_y part[y][x] over the blockDim.y lanes (a power of two
 * <= COL_TY), in a fixed tree. Every thread of the block must call; ends with a barrier. */
__device__ inline void col_tree_sum(float v, float (*part)[COL_TX]) {
    part[threadIdx.y][threadIdx.x] = v;
    __syncthreads();
    for (int h = (int)blockDim.y / 2; h > 0; h >>= 1) {
        if ((int)threadIdx.y < h)
            part[threadIdx.y][threadIdx.x] += part[threadIdx.y + h][threadIdx.x];
        __syncthreads();
    }
}

#endif
