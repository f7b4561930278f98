/* backend_cuda.cu — the CUDA backend (docs/design.md §2): src/ops/ops.h's Backend table on the GPU.
 *
 * Memory returned by this backend is device memory; upload/download move bytes between it and
 * the host. Everything runs on the legacy default stream, so ops are ordered with respect to each
 * other and to cudaMemcpy; functions that return a scalar (sumsq, all_finite) synchronise.
 * This file holds the memory functions, start-up (device check, the cuBLAS handle g_cuda_blas)
 * and the table; each op family lives in its own <family>.cu (kernels in <family>.cuh), mirroring
 * ops/cpu/, and fills its entries through cuda_register_<family> (cuda_internal.h). Dense matrix
 * products go through cuBLAS at the precision of backend_cuda_set_precision (matmul.cu); the other
 * ops are our own kernels. Reductions use a fixed launch shape and a fixed summation tree, and no
 * floating-point atomics, so they are deterministic run to run (docs/design.md §9).
 *
 * An entry no family has filled stays NULL; model_declare refuses such a backend before training
 * through backend_require_ops (ops.h), naming every op the model needs and the table lacks. Checked
 * against the CPU by tests/ops/test_backend_ops.c --backend cuda (on a GPU: label gpu; in the
 * emulated build, -DTRAINER_SIMT=ON, under five thread schedules: label simt).
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
#include <string.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "ops/cuda/cuda_internal.h"

cublasHandle_t g_cuda_blas;          /* created once by backend_cuda() */
static char g_device_name[256] = ""; /* cudaDeviceProp.name of the device, set by backend_cuda() */
static Backend g_backend;            /* filled by backend_cuda() */
static int g_ready;                  /* 1 once the above exist */
static int g_device_wish = 0;        /* backend_cuda_use_device's index (before modulo) */
static int g_device = -1;            /* the ordinal backend_cuda() started on */

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
/* The table                                                                                   */
/* ------------------------------------------------------------------------------------------ */

static Backend make_table(void) {
    Backend b = {}; /* every op no family registers stays NULL (not yet on the GPU) */
    b.name = "cuda";
    b.host_memory = 0; /* device memory, also under the SIMT emulation */
    b.alloc = cu_alloc;
    b.free = cu_free;
    b.upload = cu_upload;
    b.download = cu_download;
    b.copy = cu_copy;
    b.zero = cu_zero;
    b.synchronize = cu_synchronize;
    cuda_register_matmul(&b);
    cuda_register_bias(&b);
    cuda_register_elementwise(&b);
    /* ---- the kernel families: one `cuda_register_<family>(&b);` each (cuda_internal.h), added
     * here by the helper that writes <family>.cu; one call per line, in any order ---- */
    cuda_register_shape(&b);
    cuda_register_dropout(&b);
    cuda_register_embedding(&b);
    cuda_register_adam(&b);
    cuda_register_linear(&b);
    cuda_register_efficient(&b);
    cuda_register_linformer(&b);
    cuda_register_lstm(&b);
    cuda_register_gru(&b);
    cuda_register_layernorm(&b);
    cuda_register_softmax_xent(&b);
    cuda_register_attn_sdp(&b);
    cuda_register_attn_additive(&b);
    cuda_register_attn_local(&b);
    cuda_register_attn_pointwise(&b);
    cuda_register_flash(&b);
    /* ---- end of the kernel families ---- */
#ifdef TRAINER_CUDNN
    cuda_register_rnn_cudnn(&b); /* optional: leaves rnn_seq_* NULL if cuDNN cannot start */
#endif
    return b;
}

extern "C" int backend_cuda_has_cudnn(void) {
#ifdef TRAINER_CUDNN
    return 1;
#else
    return 0;
#endif
}

extern "C" int backend_cuda_emulated(void) {
#ifdef TRAINER_SIMT
    return 1;
#else
    return 0;
#endif
}

extern "C" const char *backend_cuda_device_name(void) { return g_ready ? g_device_name : ""; }

extern "C" void backend_cuda_use_device(int index) {
    if (!g_ready) g_device_wish = index < 0 ? 0 : index;
}

extern "C" int backend_cuda_device_index(void) { return g_ready ? g_device : -1; }

/* Returns the CUDA backend, initialising it (device backend_cuda_use_device's index modulo the
 * device count, 0 by default; the cuBLAS handle, the table) on the
 * first call; later calls return the same table. With no CUDA device, or a driver/runtime error,
 * returns NULL and writes a message into err_msg[err_len] (if err_msg != NULL) telling the user
 * to set train.device = cpu. Not thread-safe: call it from the main thread before training. */
extern "C" const Backend *backend_cuda(char *err_msg, size_t err_len) {
    if (g_ready) return &g_backend;

    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e == cudaSuccess && count == 0) e = cudaErrorNoDevice;
    int dev = count > 0 ? g_device_wish % count : 0;
    if (e == cudaSuccess) e = cudaSetDevice(dev);
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

    cublasStatus_t st = cublasCreate(&g_cuda_blas);
    if (st != CUBLAS_STATUS_SUCCESS) {
        if (err_msg && err_len)
            snprintf(err_msg, err_len,
                     "device = cuda was requested but cuBLAS could not start: %s; "
                     "set train.device = cpu",
                     cublasGetStatusString(st));
        return NULL;
    }
    /* Default math: no TF32 unless asked for per call (matmul.cu's compute type). */
    CUBLAS_CHECK(cublasSetMathMode(g_cuda_blas, CUBLAS_DEFAULT_MATH));
    CUBLAS_CHECK(cublasSetPointerMode(g_cuda_blas, CUBLAS_POINTER_MODE_HOST));

    cudaDeviceProp prop;
    CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
    snprintf(g_device_name, sizeof g_device_name, "%s", prop.name);
    g_device = dev;
    g_backend = make_table();
    g_ready = 1;
    return &g_backend;
}
