/* cuda_check.h — abort-on-failure checks for CUDA runtime and cuBLAS calls (docs/design.md §7).
 *
 * A failing CUDA or cuBLAS call is a device failure or a programmer error, never an input error:
 * the macros print the expression, file:line, the library's error string and a hint, then abort.
 * Every kernel launch is followed by CUDA_CHECK(cudaGetLastError()) (or CUDA_CHECK_LAUNCH()), so
 * that a bad launch configuration is reported at the launch that caused it.
 *
 *   CUDA_CHECK(expr)              expr is a cudaError_t expression
 *   CUDA_CHECK_HINT(expr, hint)   the same with a caller-supplied hint (a C string)
 *   CUDA_CHECK_LAUNCH()           CUDA_CHECK(cudaGetLastError()) after a kernel launch
 *   CUBLAS_CHECK(expr)            expr is a cublasStatus_t expression
 *   CUDNN_CHECK(expr)             expr is a cudnnStatus_t expression (only where TRAINER_CUDNN is
 *                                 defined: a build that found cuDNN)
 *
 * Usable from .cu (C++) and C translation units.
 */
#ifndef TRAINER_CUDA_CHECK_H
#define TRAINER_CUDA_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#define TRAINER_CUDA_DEFAULT_HINT                                                              \
    "a CUDA call failed: out of memory means the batch or model is too large for this GPU "  \
    "(reduce the batch size); an illegal address or launch failure is a bug in a kernel (run " \
    "under compute-sanitizer); a driver error means the GPU is unusable (set train.device = cpu)"

#define CUDA_CHECK_HINT(expr, hint)                                                            \
    do {                                                                                       \
        cudaError_t cuda_check_err_ = (expr);                                                  \
        if (cuda_check_err_ != cudaSuccess) {                                                  \
            fprintf(stderr, "CUDA_CHECK failed: %s at %s:%d: %s (%s)\n  hint: %s\n", #expr,    \
                    __FILE__, __LINE__, cudaGetErrorString(cuda_check_err_),                   \
                    cudaGetErrorName(cuda_check_err_), (hint));                                \
            abort();                                                                           \
        }                                                                                      \
    } while (0)

#define CUDA_CHECK(expr) CUDA_CHECK_HINT(expr, TRAINER_CUDA_DEFAULT_HINT)

#define CUDA_CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())

#define CUBLAS_CHECK(expr)                                                                     \
    do {                                                                                       \
        cublasStatus_t cublas_check_st_ = (expr);                                              \
        if (cublas_check_st_ != CUBLAS_STATUS_SUCCESS) {                                       \
            fprintf(stderr, "CUBLAS_CHECK failed: %s at %s:%d: %s (status %d)\n  hint: %s\n",  \
                    #expr, __FILE__, __LINE__, cublasGetStatusString(cublas_check_st_),        \
                    (int)cublas_check_st_,                                                     \
                    "a cuBLAS call failed: INVALID_VALUE means bad dimensions or leading "     \
                    "dimensions (a bug in the caller); ALLOC_FAILED means the GPU is out of "  \
                    "memory; EXECUTION_FAILED means the GPU is unusable (set train.device = "  \
                    "cpu)");                                                                   \
            abort();                                                                           \
        }                                                                                      \
    } while (0)

#ifdef TRAINER_CUDNN
#include <cudnn.h>

#define CUDNN_CHECK(expr)                                                                      \
    do {                                                                                       \
        cudnnStatus_t cudnn_check_st_ = (expr);                                                \
        if (cudnn_check_st_ != CUDNN_STATUS_SUCCESS) {                                         \
            fprintf(stderr, "CUDNN_CHECK failed: %s at %s:%d: %s (status %d)\n  hint: %s\n",   \
                    #expr, __FILE__, __LINE__, cudnnGetErrorString(cudnn_check_st_),           \
                    (int)cudnn_check_st_,                                                      \
                    "a cuDNN call failed: BAD_PARAM or NOT_SUPPORTED means shapes or a mode "  \
                    "cuDNN refuses (a bug in the caller, or this cuDNN version); ALLOC_FAILED " \
                    "means the GPU is out of memory; EXECUTION_FAILED means the GPU is "      \
                    "unusable. Set model.rnn_impl = own to run our own kernels instead");      \
            abort();                                                                           \
        }                                                                                      \
    } while (0)
#endif

#endif
