/* tests/simt/planted.cuh — kernels with one planted bug each (test-only): test_simt.cc shows that
 * the emulation catches every one. Never copy these.
 */
#ifndef TRAINER_TESTS_SIMT_PLANTED_CUH
#define TRAINER_TESTS_SIMT_PLANTED_CUH

#include "ops/cuda/simt/simt.h"

/* BUG: missing barrier. The tree sum of kernels.cuh without the __syncthreads inside the loop:
 * a thread reads s[t + h] before its writer has added into it (order-dependent result). */
__global__ void p_missing_barrier(const float *x, float *out) {
    __shared__ float s[256];
    int t = (int)threadIdx.x;
    s[t] = x[blockIdx.x * 256 + t];
    __syncthreads();
    for (int h = 128; h > 0; h >>= 1) {
        if (t < h) s[t] += s[t + h];
        /* __syncthreads() missing here */
    }
    __syncthreads();
    if (t == 0) out[blockIdx.x] = s[0];
}

/* BUG: uninitialised shared read. Only threads 0..blockDim-2 write s; every thread reads its
 * right neighbour, so the last thread reads s[blockDim-1], never written. */
__global__ void p_uninit_shared(float *out) {
    __shared__ float s[64];
    int t = (int)threadIdx.x;
    if (t < (int)blockDim.x - 1) s[t] = (float)t;
    __syncthreads();
    out[t] = t + 1 < (int)blockDim.x ? s[t + 1] : s[t];
}

/* BUG: divergent barrier: the two halves of the block wait at different __syncthreads. */
__global__ void p_divergent_barrier(int *out) {
    int t = (int)threadIdx.x;
    if (t < 16) {
        out[t] = 1;
        __syncthreads();
    } else {
        out[t] = 2;
        __syncthreads();
    }
}

/* BUG: barrier not reached: threads 0..3 return before the block's __syncthreads. */
__global__ void p_early_return(int *out) {
    int t = (int)threadIdx.x;
    if (t < 4) return;
    out[t] = t;
    __syncthreads();
}

/* BUG: partial shuffle mask: every lane calls with mask 0x0000ffff, which does not name lanes
 * 16..31 (they must not take part). */
__global__ void p_partial_mask(float *out) {
    float v = (float)threadIdx.x;
    out[threadIdx.x] = __shfl_sync(0x0000ffffu, v, 0);
}

/* BUG: full mask after lanes 16..31 exited. */
__global__ void p_mask_exited(float *out) {
    if (threadIdx.x >= 16) return;
    float v = (float)threadIdx.x;
    out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, v, 1);
}

/* BUG: full mask in a 40-thread block: warp 1 has lanes 0..7 only. */
__global__ void p_mask_absent(float *out) {
    float v = (float)threadIdx.x;
    out[threadIdx.x] = __shfl_down_sync(0xffffffffu, v, 1);
}

/* BUG: mismatched masks: lane 0 says 0x3, lane 1 says 0xffffffff. */
__global__ void p_mask_mismatch(int *out) {
    int lane = (int)threadIdx.x;
    if (lane == 0) out[0] = __shfl_sync(0x3u, lane, 1);
    else out[lane] = __shfl_sync(0xffffffffu, lane, 0);
}

/* BUG: a lane waits at a shuffle while a lane of its mask waits at __syncthreads (deadlock). */
__global__ void p_shfl_vs_barrier(int *out) {
    int lane = (int)threadIdx.x;
    if (lane == 3) __syncthreads();
    else out[lane] = __shfl_sync(0xffffffffu, lane, 0);
}

/* BUG: a shuffle width that is not a power of two. */
__global__ void p_bad_width(int *out) {
    out[threadIdx.x] = __shfl_sync(0xffffffffu, (int)threadIdx.x, 0, 12);
}

/* BUG: warp-synchronous shared memory without __syncwarp (reads a neighbour's slot that the
 * neighbour writes in the same step): the result depends on the thread order. */
__global__ void p_no_syncwarp(const float *x, float *out) {
    __shared__ float s[32];
    int t = (int)threadIdx.x;
    s[t] = x[t];
    __syncwarp();
    for (int h = 16; h > 0; h >>= 1) {
        if (t < h) s[t] += s[t + h]; /* no __syncwarp between the steps */
    }
    __syncwarp();
    if (t == 0) out[0] = s[0];
}

/* BUG: dynamic shared memory smaller than used: writes blockDim.x floats into a buffer launched
 * with fewer bytes (ASan build: asan_overrun.cc). */
__global__ void p_dyn_overrun(float *out) {
    float *buf = (float *)simt::dynamic_shared();
    buf[threadIdx.x] = (float)threadIdx.x;
    __syncthreads();
    out[threadIdx.x] = buf[blockDim.x - 1 - threadIdx.x];
}

/* BUG: static shared memory overrun next to dynamic shared memory: s holds 32 floats, but each
 * of the block's 33 threads writes s[threadIdx.x]. On a GPU the 33rd float lands in the dynamic
 * buffer placed after the static arrays, silently; the emulation must report it (ASan+UBSan
 * build: asan_static_overrun.cc). */
__global__ void p_static_overrun(float *out) {
    __shared__ float s[32];
    float *dyn = (float *)simt::dynamic_shared();
    dyn[threadIdx.x] = -1.0f;
    s[threadIdx.x] = (float)threadIdx.x;
    __syncthreads();
    out[threadIdx.x] = s[threadIdx.x % 32] + dyn[threadIdx.x];
}

/* BUG: racy flag: every thread that sees a non-finite value sets *found = 1 with a plain store,
 * unsynchronised across threads and blocks (TSan build: tsan_race.cc). */
__global__ void p_racy_flag(const float *x, int *found, int n) {
    int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    if (i < n && !std::isfinite(x[i])) *found = 1;
}

/* BUG: a race between blocks only: thread 0 of every block adds 1 to *count with a plain
 * read-modify-write; the block's threads first sum in shared memory (barriers), so that each
 * block takes long enough for the TSan build's workers to share the grid (tsan_race.cc). */
__global__ void p_racy_blocks(int *count) {
    __shared__ int s[64];
    s[threadIdx.x] = (int)threadIdx.x;
    __syncthreads();
    for (int h = 32; h > 0; h >>= 1) {
        if ((int)threadIdx.x < h) s[threadIdx.x] += s[threadIdx.x + h];
        __syncthreads();
    }
    if (threadIdx.x == 0 && s[0] == 63 * 64 / 2) *count += 1;
}

#endif
