/* tests/simt/kernels.cuh — correct kernels for the SIMT emulation's tests (test_simt.cc): each is
 * race-free, so it must give the same bits under every schedule. Written as CUDA source against
 * simt.h (the tests launch with TLAUNCH, kernel_api.h's LAUNCH without the CUDA runtime check).
 */
#ifndef TRAINER_TESTS_SIMT_KERNELS_CUH
#define TRAINER_TESTS_SIMT_KERNELS_CUH

#include "ops/cuda/simt/simt.h"

#define TLAUNCH(kernel, grid, block, smem, ...)                                                \
    simt::launch(#kernel, __FILE__, __LINE__, dim3(grid), dim3(block), (size_t)(smem),         \
                 [=]() { kernel(__VA_ARGS__); })

/* out[blockIdx.x] = sum of x[blockIdx.x*256 .. +256) (zeros past n): tree sum in shared memory,
 * blockDim.x = 256. */
__global__ void __launch_bounds__(256) k_block_sum(const float *x, float *out, int n) {
    __shared__ float s[256];
    int t = (int)threadIdx.x, i = (int)(blockIdx.x * blockDim.x) + t;
    s[t] = i < n ? x[i] : 0.0f;
    __syncthreads();
    for (int h = 128; h > 0; h >>= 1) {
        if (t < h) s[t] += s[t + h];
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = s[0];
}

/* Per warp: xo[w] = butterfly (xor) sum of the warp's 32 values, seen by lane 31; dn[w] = the
 * down-shuffle sum at lane 0; ok[gid] = 1 if every lane's butterfly sum equals lane 0's. */
__global__ void __launch_bounds__(128) k_warp_sums(const float *x, float *xo, float *dn, int *ok) {
    int gid = (int)(blockIdx.x * blockDim.x + threadIdx.x), lane = (int)(threadIdx.x & 31);
    float v = x[gid], a = v, b = v;
    for (int o = 16; o > 0; o >>= 1) a += __shfl_xor_sync(0xffffffffu, a, o);
    for (int o = 16; o > 0; o >>= 1) b += __shfl_down_sync(0xffffffffu, b, o);
    float a0 = __shfl_sync(0xffffffffu, a, 0);
    ok[gid] = (a == a0);
    if (lane == 31) xo[gid / 32] = a;
    if (lane == 0) dn[gid / 32] = b;
}

/* out (cols x rows) = transpose of in (rows x cols): 32x32 tiles through a padded shared tile,
 * block (32, 8). */
__global__ void __launch_bounds__(256) k_transpose(const float *in, float *out, int rows,
                                                   int cols) {
    __shared__ float tile[32][33];
    int bx = (int)blockIdx.x * 32, by = (int)blockIdx.y * 32;
    for (int j = (int)threadIdx.y; j < 32; j += 8) {
        int r = by + j, c = bx + (int)threadIdx.x;
        if (r < rows && c < cols) tile[j][threadIdx.x] = in[(size_t)r * cols + c];
    }
    __syncthreads();
    for (int j = (int)threadIdx.y; j < 32; j += 8) {
        int r = bx + j, c = by + (int)threadIdx.x; /* out row = in column */
        if (r < cols && c < rows) out[(size_t)r * rows + c] = tile[threadIdx.x][j];
    }
}

/* Reverses each block's chunk of x through dynamic shared memory (blockDim.x floats). */
__global__ void k_reverse_dyn(const float *x, float *y) {
    float *buf = (float *)simt::dynamic_shared();
    int t = (int)threadIdx.x, n = (int)blockDim.x;
    buf[t] = x[blockIdx.x * n + t];
    __syncthreads();
    y[blockIdx.x * n + t] = buf[n - 1 - t];
}

/* Writes every thread's coordinates (3-D grid, 2-D block): out[global linear id] =
 * tid.x + 100 tid.y + 10000 (bid.x + 7 bid.y + 49 bid.z); dims[0..5] = blockDim, gridDim. */
__global__ void k_coords(int *out, int *dims) {
    unsigned b = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    unsigned t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    out[b * blockDim.x * blockDim.y * blockDim.z + t] =
        (int)(threadIdx.x + 100 * threadIdx.y + 10000 * (blockIdx.x + 7 * blockIdx.y + 49 * blockIdx.z));
    if (b == 0 && t == 0) {
        dims[0] = (int)blockDim.x, dims[1] = (int)blockDim.y, dims[2] = (int)blockDim.z;
        dims[3] = (int)gridDim.x, dims[4] = (int)gridDim.y, dims[5] = (int)gridDim.z;
    }
}

/* Votes on p[gid] != 0: res[gid*4 + 0..3] = ballot, any, all over the full warp, and (lanes
 * 0..15 only, under a partial mask) the half-warp ballot; others get -1. */
__global__ void k_votes(const int *p, unsigned *res) {
    int gid = (int)(blockIdx.x * blockDim.x + threadIdx.x), lane = (int)(threadIdx.x & 31);
    int pr = p[gid] != 0;
    res[gid * 4 + 0] = __ballot_sync(0xffffffffu, pr);
    res[gid * 4 + 1] = (unsigned)__any_sync(0xffffffffu, pr);
    res[gid * 4 + 2] = (unsigned)__all_sync(0xffffffffu, pr);
    res[gid * 4 + 3] = 0xffffffffu;
    if (lane < 16) res[gid * 4 + 3] = __ballot_sync(0x0000ffffu, pr);
}

/* Inclusive prefix sums within segments of 16 lanes (__shfl_up_sync, width 16); ints. Also the
 * segment's first value through __shfl_sync(..., 0, 16) in first[gid]. */
__global__ void k_scan16(const int *x, int *y, int *first) {
    int gid = (int)(blockIdx.x * blockDim.x + threadIdx.x), lane = (int)(threadIdx.x & 15);
    int v = x[gid];
    for (int d = 1; d < 16; d <<= 1) {
        int u = __shfl_up_sync(0xffffffffu, v, (unsigned)d, 16);
        if (lane >= d) v += u;
    }
    y[gid] = v;
    first[gid] = __shfl_sync(0xffffffffu, x[gid], 0, 16);
}

/* Warp-synchronous shared-memory reduction made correct by __syncwarp; double shuffles.
 * out[w] = sum of the warp's values (as double through a double shuffle). */
__global__ void k_warp_sync(const float *x, double *out) {
    __shared__ float s[64];
    int t = (int)threadIdx.x, lane = t & 31, w = t >> 5;
    s[t] = x[blockIdx.x * 64 + t];
    __syncwarp();
    for (int h = 16; h > 0; h >>= 1) {
        float v = lane < h ? s[t + h] : 0.0f;
        __syncwarp();
        if (lane < h) s[t] += v;
        __syncwarp();
    }
    double d = lane == 0 ? (double)s[t] : 0.0;
    d = __shfl_sync(0xffffffffu, d, 0);
    if (lane == 5) out[blockIdx.x * 2 + w] = d;
}

/* Integer atomics: counts[0] += 1 per thread, counts[1] = max of gid, counts[2] = min of gid. */
__global__ void k_atomics(unsigned *counts) {
    unsigned gid = blockIdx.x * blockDim.x + threadIdx.x;
    atomicAdd(&counts[0], 1u);
    atomicMax(&counts[1], gid);
    atomicMin(&counts[2], gid);
}

/* y[i] = 2 x[i] + 1, grid-stride (the element-wise benchmark). */
__global__ void k_axpb(const float *x, float *y, int n) {
    for (int i = (int)(blockIdx.x * blockDim.x + threadIdx.x); i < n; i += (int)(gridDim.x * blockDim.x))
        y[i] = 2.0f * x[i] + 1.0f;
}

#endif
