/* backend_cuda.cu — the CUDA backend (DESIGN.md §2): src/ops/ops.h's Backend table on the GPU.
 *
 * Memory returned by this backend is device memory; upload/download move bytes between it and
 * the host. Everything runs on the legacy default stream, so ops are ordered with respect to each
 * other and to cudaMemcpy; functions that return a scalar (sumsq, all_finite) synchronise.
 * Dense matrix products go through cuBLAS (FP32, no TF32: the default math mode); the other ops
 * are small kernels written here. Reductions use a fixed launch shape and a fixed summation tree,
 * and no floating-point atomics, so they are deterministic run to run (DESIGN.md §8).
 *
 * Status: skeleton. Implemented: memory, synchronize, matmul, bias_forward/backward, axpy, scale,
 * sumsq, all_finite. Every other entry of the table is NULL; model_declare refuses such a
 * backend before training through backend_require_ops (ops.h), naming every op the model needs
 * and this file lacks. To be split one file per op family, mirroring ops/cpu/; checked against
 * the CPU by tests/ops/test_backend_ops.c --backend cuda.
 *
 * Errors: a failing CUDA/cuBLAS call or kernel launch aborts through CUDA_CHECK / CUBLAS_CHECK
 * (device failure or programmer error). Only backend_cuda() itself reports "no usable device" as a
 * recoverable error (NULL + message), so that the program can tell the user to pick device = cpu.
 *
 * Shape letters: N rows, C columns, M/K/Nc matrix dims, n element count.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "ops/cuda/cuda_check.h"
#include "ops/cuda/cuda_internal.h"

extern "C" {
#include "core/common.h"
#include "ops/ops.h"
}

/* ------------------------------------------------------------------------------------------ */
/* Launch shapes and module state                                                              */
/* ------------------------------------------------------------------------------------------ */

static constexpr int EW_THREADS = 256;     /* threads per block for element-wise kernels */
static constexpr int EW_MAX_BLOCKS = 4096; /* grid-stride loops cover the rest */
static constexpr int RED_THREADS = 256;    /* threads per block for reductions (power of two) */
static constexpr int RED_BLOCKS = 1024;    /* fixed count of partial sums: deterministic order */
static constexpr int BIAS_TX = 32;         /* bias_backward: columns per block */
static constexpr int BIAS_TY = 8;          /* bias_backward: row lanes per block (power of two) */

static cublasHandle_t g_cublas;        /* created once by backend_cuda() */
static double *g_partials;             /* device [RED_BLOCKS + 1]: sumsq partials and result */
static int *g_flag;                    /* device [1]: all_finite result */
static int g_ready;                    /* 1 once the above exist */

/* Number of blocks for an element-wise kernel over n items (n > 0). */
static unsigned ew_blocks(size_t n) {
    size_t b = (n + EW_THREADS - 1) / EW_THREADS;
    return (unsigned)(b < (size_t)EW_MAX_BLOCKS ? b : (size_t)EW_MAX_BLOCKS);
}

/* ------------------------------------------------------------------------------------------ */
/* Kernels                                                                                     */
/* ------------------------------------------------------------------------------------------ */

/* y[i] += a * x[i], i < n. */
__global__ void k_axpy(float *y, float a, const float *x, size_t n) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        y[i] += a * x[i];
}

/* x[i] *= a, i < n. */
__global__ void k_scale(float *x, float a, size_t n) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) x[i] *= a;
}

/* out[N,C] += bias[C]; total = N*C. */
__global__ void k_bias_forward(float *out, const float *bias, size_t total, int C) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride)
        out[i] += bias[i % (size_t)C];
}

/* dbias[C] += sum_n dout[n,C]. Block (BIAS_TX, BIAS_TY) owns BIAS_TX consecutive columns; lane y
 * sums rows y, y+BIAS_TY, ... in order, then the BIAS_TY lane sums are added in a fixed tree.
 * Reads are coalesced along a row; no atomics. */
__global__ void k_bias_backward(float *dbias, const float *dout, int N, int C) {
    __shared__ float part[BIAS_TY][BIAS_TX];
    int c = blockIdx.x * BIAS_TX + threadIdx.x;
    float s = 0.0f;
    if (c < C)
        for (int n = threadIdx.y; n < N; n += BIAS_TY) s += dout[(size_t)n * C + c];
    part[threadIdx.y][threadIdx.x] = s;
    __syncthreads();
    for (int h = BIAS_TY / 2; h > 0; h >>= 1) {
        if ((int)threadIdx.y < h)
            part[threadIdx.y][threadIdx.x] += part[threadIdx.y + h][threadIdx.x];
        __syncthreads();
    }
    if (threadIdx.y == 0 && c < C) dbias[c] += part[0][threadIdx.x];
}

/* Block-level tree sum of buf[RED_THREADS] (shared); result in buf[0]. */
__device__ void block_sum_double(double *buf) {
    for (int h = RED_THREADS / 2; h > 0; h >>= 1) {
        if ((int)threadIdx.x < h) buf[threadIdx.x] += buf[threadIdx.x + h];
        __syncthreads();
    }
}

/* partials[blockIdx.x] = sum of x[i]^2 over this block's grid-stride share, in double.
 * Launched with exactly RED_BLOCKS blocks of RED_THREADS threads. */
__global__ void k_sumsq_partial(double *partials, const float *x, size_t n) {
    __shared__ double buf[RED_THREADS];
    size_t stride = (size_t)gridDim.x * blockDim.x;
    double s = 0.0;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        double v = (double)x[i];
        s += v * v;
    }
    buf[threadIdx.x] = s;
    __syncthreads();
    block_sum_double(buf);
    if (threadIdx.x == 0) partials[blockIdx.x] = buf[0];
}

/* *out = sum of partials[0..count), one block of RED_THREADS threads, fixed order. */
__global__ void k_sum_partials(double *out, const double *partials, int count) {
    __shared__ double buf[RED_THREADS];
    double s = 0.0;
    for (int i = threadIdx.x; i < count; i += RED_THREADS) s += partials[i];
    buf[threadIdx.x] = s;
    __syncthreads();
    block_sum_double(buf);
    if (threadIdx.x == 0) *out = buf[0];
}

/* *flag = 0 if some x[i] (i < n) is NaN or ±Inf; *flag must be 1 on entry. Every writer stores
 * the same value, so the race is benign. */
__global__ void k_all_finite(int *flag, const float *x, size_t n) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        if (!isfinite(x[i])) *flag = 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Memory                                                                                      */
/* ------------------------------------------------------------------------------------------ */

/* Device allocation of `bytes` (0 allowed: one byte is allocated so the pointer is non-NULL),
 * zero-filled. Aborts on failure (out of device memory). */
static void *cu_alloc(size_t bytes) {
    void *p = NULL;
    size_t n = bytes ? bytes : 1;
    char hint[256];
    snprintf(hint, sizeof hint,
             "cudaMalloc of %zu bytes failed: the GPU is out of memory; reduce the batch size or "
             "the model size",
             n);
    CUDA_CHECK_HINT(cudaMalloc(&p, n), hint);
    CUDA_CHECK(cudaMemset(p, 0, n));
    return p;
}

/* Frees memory from cu_alloc (NULL is a no-op). */
static void cu_free(void *p) {
    if (p) CUDA_CHECK(cudaFree(p));
}

/* dst (device) <- src_host (host), `bytes` bytes; returns when the copy is done. */
static void cu_upload(void *dst, const void *src_host, size_t bytes) {
    if (bytes) CUDA_CHECK(cudaMemcpy(dst, src_host, bytes, cudaMemcpyHostToDevice));
}

/* dst_host (host) <- src (device), `bytes` bytes; waits for earlier work on the stream. */
static void cu_download(void *dst_host, const void *src, size_t bytes) {
    if (bytes) CUDA_CHECK(cudaMemcpy(dst_host, src, bytes, cudaMemcpyDeviceToHost));
}

/* dst <- src, both device, `bytes` bytes (ordered on the default stream). */
static void cu_copy(void *dst, const void *src, size_t bytes) {
    if (bytes) CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice));
}

/* p[0..bytes) = 0 (device). */
static void cu_zero(void *p, size_t bytes) {
    if (bytes) CUDA_CHECK(cudaMemset(p, 0, bytes));
}

/* Waits for all queued device work; reports any asynchronous kernel fault here. */
static void cu_synchronize(void) {
    CUDA_CHECK_HINT(cudaDeviceSynchronize(),
                    "a kernel failed asynchronously (the failing op is some earlier launch): run "
                    "under compute-sanitizer, or set train.device = cpu to compare");
}

/* ------------------------------------------------------------------------------------------ */
/* Dense algebra                                                                               */
/* ------------------------------------------------------------------------------------------ */

/* Row-major C[M,Nc] = alpha * op(A) op(B) + beta * C, op(A) [M,K] (A stored [K,M] if transA),
 * op(B) [K,Nc] (B stored [Nc,K] if transB). beta = 0 does not read C.
 *
 * cuBLAS is column-major: a row-major [R,Cc] matrix is, read column-major, its transpose [Cc,R]
 * with leading dimension Cc. So we ask cuBLAS for Cᵀ[Nc,M] = op(B)ᵀ op(A)ᵀ: B comes first,
 * transposed iff transB, with ldb = transB ? K : Nc; A second, transposed iff transA, with
 * lda = transA ? M : K; ldc = Nc. M or Nc <= 0: nothing to do. K = 0 gives C = beta C. */
static void cu_matmul(float *C, const float *A, const float *B, int M, int Nc, int K, int transA,
                      int transB, float alpha, float beta) {
    if (M <= 0 || Nc <= 0) return;
    CHECK(K >= 0, "matmul: K must be >= 0");
    if (K == 0) {
        if (beta == 0.0f)
            CUDA_CHECK(cudaMemset(C, 0, (size_t)M * Nc * sizeof(float)));
        else if (beta != 1.0f) {
            size_t n = (size_t)M * Nc;
            k_scale<<<ew_blocks(n), EW_THREADS>>>(C, beta, n);
            CUDA_CHECK_LAUNCH();
        }
        return;
    }
    int ldb = transB ? K : Nc;
    int lda = transA ? M : K;
    CUBLAS_CHECK(cublasSgemm(g_cublas, transB ? CUBLAS_OP_T : CUBLAS_OP_N,
                             transA ? CUBLAS_OP_T : CUBLAS_OP_N, Nc, M, K, &alpha, B, ldb, A, lda,
                             &beta, C, Nc));
}

/* out[N,C] += bias[C]. */
static void cu_bias_forward(float *out, const float *bias, int N, int C) {
    if (N <= 0 || C <= 0) return;
    size_t total = (size_t)N * C;
    k_bias_forward<<<ew_blocks(total), EW_THREADS>>>(out, bias, total, C);
    CUDA_CHECK_LAUNCH();
}

/* dbias[C] += sum_n dout[n,C] (deterministic). */
static void cu_bias_backward(float *dbias, const float *dout, int N, int C) {
    if (N <= 0 || C <= 0) return;
    dim3 block(BIAS_TX, BIAS_TY);
    dim3 grid((unsigned)((C + BIAS_TX - 1) / BIAS_TX));
    k_bias_backward<<<grid, block>>>(dbias, dout, N, C);
    CUDA_CHECK_LAUNCH();
}

/* y[n] += a * x[n]. */
static void cu_axpy(float *y, float a, const float *x, size_t n) {
    if (!n) return;
    k_axpy<<<ew_blocks(n), EW_THREADS>>>(y, a, x, n);
    CUDA_CHECK_LAUNCH();
}

/* x[n] *= a. */
static void cu_scale(float *x, float a, size_t n) {
    if (!n) return;
    k_scale<<<ew_blocks(n), EW_THREADS>>>(x, a, n);
    CUDA_CHECK_LAUNCH();
}

/* Returns sum x[n]^2, squares and sums in double, fixed reduction order. Synchronises. */
static double cu_sumsq(const float *x, size_t n) {
    if (!n) return 0.0;
    k_sumsq_partial<<<RED_BLOCKS, RED_THREADS>>>(g_partials, x, n);
    CUDA_CHECK_LAUNCH();
    k_sum_partials<<<1, RED_THREADS>>>(g_partials + RED_BLOCKS, g_partials, RED_BLOCKS);
    CUDA_CHECK_LAUNCH();
    double r = 0.0;
    CUDA_CHECK(cudaMemcpy(&r, g_partials + RED_BLOCKS, sizeof r, cudaMemcpyDeviceToHost));
    return r;
}

/* Returns 1 if every x[i], i < n, is finite (n = 0: 1). Synchronises. */
static int cu_all_finite(const float *x, size_t n) {
    if (!n) return 1;
    int one = 1, r = 0;
    CUDA_CHECK(cudaMemcpy(g_flag, &one, sizeof one, cudaMemcpyHostToDevice));
    k_all_finite<<<ew_blocks(n), EW_THREADS>>>(g_flag, x, n);
    CUDA_CHECK_LAUNCH();
    CUDA_CHECK(cudaMemcpy(&r, g_flag, sizeof r, cudaMemcpyDeviceToHost));
    return r;
}

/* ------------------------------------------------------------------------------------------ */
/* The table                                                                                   */
/* ------------------------------------------------------------------------------------------ */

static Backend make_table(void) {
    Backend b = {};  /* every op not listed below stays NULL (not yet on the GPU) */
    b.name = "cuda";
    b.alloc = cu_alloc;
    b.free = cu_free;
    b.upload = cu_upload;
    b.download = cu_download;
    b.copy = cu_copy;
    b.zero = cu_zero;
    b.synchronize = cu_synchronize;
    b.matmul = cu_matmul;
    b.bias_forward = cu_bias_forward;
    b.bias_backward = cu_bias_backward;
    b.axpy = cu_axpy;
    b.scale = cu_scale;
    b.sumsq = cu_sumsq;
    b.all_finite = cu_all_finite;
    cuda_register_shape(&b);
    cuda_register_dropout(&b);
    cuda_register_embedding(&b);
    cuda_register_adam(&b);
    return b;
}

static const Backend g_backend = make_table();

/* Returns the CUDA backend, initialising it (device 0, cuBLAS handle, reduction scratch) on the
 * first call; later calls return the same table. With no CUDA device, or a driver/runtime error,
 * returns NULL and writes a message into err_msg[err_len] (if err_msg != NULL) telling the user
 * to set train.device = cpu. Not thread-safe: call it from the main thread before training. */
extern "C" const Backend *backend_cuda(char *err_msg, size_t err_len) {
    if (g_ready) return &g_backend;

    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e == cudaSuccess && count == 0) e = cudaErrorNoDevice;
    if (e == cudaSuccess) e = cudaSetDevice(0);
    if (e == cudaSuccess) e = cudaFree(0); /* creates the context now, so failures surface here */
    if (e != cudaSuccess) {
        if (err_msg && err_len)
            snprintf(err_msg, err_len,
                     "device = cuda was requested but no CUDA device is usable: %s; "
                     "set train.device = cpu",
                     cudaGetErrorString(e));
        (void)cudaGetLastError(); /* reset the runtime's last-error slot for later callers */
        return NULL;
    }

    cublasStatus_t st = cublasCreate(&g_cublas);
    if (st != CUBLAS_STATUS_SUCCESS) {
        if (err_msg && err_len)
            snprintf(err_msg, err_len,
                     "device = cuda was requested but cuBLAS could not start: %s; "
                     "set train.device = cpu",
                     cublasGetStatusString(st));
        return NULL;
    }
    /* FP32 math: no TF32 tensor-core rounding, so results match the CPU backend to ~1e-6. */
    CUBLAS_CHECK(cublasSetMathMode(g_cublas, CUBLAS_DEFAULT_MATH));
    CUBLAS_CHECK(cublasSetPointerMode(g_cublas, CUBLAS_POINTER_MODE_HOST));

    CUDA_CHECK(cudaMalloc(&g_partials, (RED_BLOCKS + 1) * sizeof(double)));
    CUDA_CHECK(cudaMalloc(&g_flag, sizeof(int)));
    g_ready = 1;
    return &g_backend;
}
