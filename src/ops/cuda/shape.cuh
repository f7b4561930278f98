/* ops/cuda/shape.cuh — kernels of the shape ops (ops/ops.h "shape ops", "rows", write_step):
 * copies that move floats without arithmetic, and the single float add of their backward.
 * Written against ops/cuda/kernel_api.h (nvcc, or the SIMT emulation). Host side: shape.cu.
 *
 * Every kernel is element-wise over the OUTPUT it writes: one thread per written float, a
 * grid-stride loop (launch: cuda_ew_blocks(total) blocks of CUDA_EW_THREADS threads), no shared
 * memory, no barriers. Each written float has exactly one writer, so the result is the same bits
 * under every thread/block order (docs/design.md §9); the backward kernels read-modify-write their own
 * element only (dinp[i] += dout[j]: one float add, exactly the CPU's). Indices are size_t
 * (tensors may exceed 2^31 floats). Shapes as ops.h: N rows, C columns, A/D0/D1 the axes of a
 * permutation, Tcap cache capacity, n/D/stride gathered rows.
 */
#ifndef TRAINER_CUDA_SHAPE_CUH
#define TRAINER_CUDA_SHAPE_CUH

#include <stddef.h>

#include "ops/cuda/kernel_api.h"

constexpr int SHAPE_THREADS = 256; /* = CUDA_EW_THREADS; the kernels' __launch_bounds__ */

/* out[N, Ca+Cb] = [a[N,Ca] | b[N,Cb]]; total = N·(Ca+Cb) (—). */
__global__ void __launch_bounds__(SHAPE_THREADS)
    k_concat2_forward(float *out, const float *a, const float *b, size_t total, int Ca, int Cb) {
    size_t C = (size_t)Ca + (size_t)Cb;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
        size_t n = i / C, c = i % C;
        out[i] = c < (size_t)Ca ? a[n * Ca + c] : b[n * Cb + (c - Ca)];
    }
}

/* da[N,Ca] += dout[:, :Ca], db[N,Cb] += dout[:, Ca:] (either may be NULL; the forward line
 * out = [a | b] differentiated); total = N·(Ca+Cb). */
__global__ void __launch_bounds__(SHAPE_THREADS)
    k_concat2_backward(float *da, float *db, const float *dout, size_t total, int Ca, int Cb) {
    size_t C = (size_t)Ca + (size_t)Cb;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
        size_t n = i / C, c = i % C;
        if (c < (size_t)Ca) {
            if (da) da[n * Ca + c] += dout[i];
        } else if (db) {
            db[n * Cb + (c - Ca)] += dout[i];
        }
    }
}

/* out[A,D1,D0,C] = inp[A,D0,D1,C] with axes 1 and 2 swapped (transpose01 is A = 1);
 * total = A·D0·D1·C; one thread per out element (—). */
__global__ void __launch_bounds__(SHAPE_THREADS)
    k_permute0213_forward(float *out, const float *inp, size_t total, int D0, int D1, int C) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t o = (size_t)blockIdx.x * blockDim.x + threadIdx.x; o < total; o += stride) {
        size_t c = o % (size_t)C, r = o / (size_t)C; /* o = ((a·D1 + j)·D0 + i)·C + c */
        size_t i = r % (size_t)D0;
        r /= (size_t)D0;
        size_t j = r % (size_t)D1, a = r / (size_t)D1;
        out[o] = inp[((a * D0 + i) * D1 + j) * C + c];
    }
}

/* dinp[A,D0,D1,C] += dout[A,D1,D0,C] permuted back (the forward line out[a,j,i,:] =
 * inp[a,i,j,:] differentiated); total = A·D0·D1·C; one thread per dinp element. */
__global__ void __launch_bounds__(SHAPE_THREADS)
    k_permute0213_backward(float *dinp, const float *dout, size_t total, int D0, int D1, int C) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t d = (size_t)blockIdx.x * blockDim.x + threadIdx.x; d < total; d += stride) {
        size_t c = d % (size_t)C, r = d / (size_t)C; /* d = ((a·D0 + i)·D1 + j)·C + c */
        size_t j = r % (size_t)D1;
        r /= (size_t)D1;
        size_t i = r % (size_t)D0, a = r / (size_t)D0;
        dinp[d] += dout[((a * D1 + j) * D0 + i) * C + c];
    }
}

/* cache[n, t, :] = x[n, :] for n < N; cache [N, Tcap, C]; total = N·C (—). Nothing else of the
 * cache is written. */
__global__ void __launch_bounds__(SHAPE_THREADS)
    k_write_step(float *cache, const float *x, size_t total, int Tcap, int t, int C) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t k = (size_t)blockIdx.x * blockDim.x + threadIdx.x; k < total; k += stride) {
        size_t n = k / (size_t)C, c = k % (size_t)C;
        cache[(n * Tcap + t) * C + c] = x[k];
    }
}

/* dst[i·stride + c] = src[idx[i]·stride + c] for i < n, c < D <= stride; total = n·D (—).
 * gather_rows is stride = D. The floats c >= D of each dst row are not written. */
__global__ void __launch_bounds__(SHAPE_THREADS)
    k_gather_rows_strided(float *dst, const float *src, const int *idx, size_t total, int D,
                          int stride_f) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t k = (size_t)blockIdx.x * blockDim.x + threadIdx.x; k < total; k += stride) {
        size_t i = k / (size_t)D, c = k % (size_t)D;
        dst[i * stride_f + c] = src[(size_t)idx[i] * stride_f + c];
    }
}

#endif
