/* cublas_v2.h — HOST STAND-IN (emulated build only, -DTRAINER_SIMT=ON; never on a real build's
 * include path). The subset of the cuBLAS v2 API that src/ops/cuda/ calls, with cuBLAS's names,
 * types and enum values; implemented in ../host_cublas.cc on OpenBLAS (cblas_sgemm). Usable from
 * C and C++. Source: cuBLAS Library User Guide (CUDA 13.0): §2.4 (context), cublas<t>gemm,
 * cublas<t>gemmStridedBatched, cublasGemmEx, cublasGemmStridedBatchedEx.
 *
 * Semantics (exactly cuBLAS's): column-major; C[m,n] = alpha op(A)[m,k] op(B)[k,n] + beta C, op =
 * identity (CUBLAS_OP_N) or transpose (CUBLAS_OP_T; CUBLAS_OP_C is the same for real data); A is
 * stored lda x (transa ? m : k) with lda >= max(1, transa ? k : m), likewise B (ldb >= max(1,
 * transb ? n : k)) and C (ldc >= max(1, m)); beta = 0 does not read C; k = 0 or alpha = 0 gives
 * C = beta C. m, n or k < 0 or a leading dimension too small: CUBLAS_STATUS_INVALID_VALUE.
 *
 * Tensor-core input rounding (what the emulation models of the GPU's numerics): compute type
 * CUBLAS_COMPUTE_32F_FAST_TF32 (and cublasSgemm under CUBLAS_TF32_TENSOR_OP_MATH) rounds every
 * element of A and B to TF32 (10 explicit mantissa bits), CUBLAS_COMPUTE_32F_FAST_16BF to bfloat16
 * (7 bits), both round-to-nearest-even, then multiplies in fp32 with fp32 accumulation;
 * CUBLAS_COMPUTE_32F (and _PEDANTIC) use the inputs as they are. (A real cuBLAS is only allowed to
 * round so: on an H100 _FAST_16BF gave TF32's result, which is why the trainer rounds to bf16
 * itself.) Matrices: CUDA_R_32F; A and B may both be CUDA_R_16BF under CUBLAS_COMPUTE_32F or
 * _PEDANTIC, C CUDA_R_32F (CUBLAS_STATUS_NOT_SUPPORTED otherwise). The summation order is OpenBLAS's, not the
 * GPU's: results agree with a real GPU to rounding, not bit for bit.
 */
#ifndef TRAINER_SIMT_CUBLAS_V2_H
#define TRAINER_SIMT_CUBLAS_V2_H

#include <stdint.h>

#include "cuda_runtime_api.h"
#include "library_types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    CUBLAS_STATUS_SUCCESS = 0,
    CUBLAS_STATUS_NOT_INITIALIZED = 1,
    CUBLAS_STATUS_ALLOC_FAILED = 3,
    CUBLAS_STATUS_INVALID_VALUE = 7,
    CUBLAS_STATUS_ARCH_MISMATCH = 8,
    CUBLAS_STATUS_MAPPING_ERROR = 11,
    CUBLAS_STATUS_EXECUTION_FAILED = 13,
    CUBLAS_STATUS_INTERNAL_ERROR = 14,
    CUBLAS_STATUS_NOT_SUPPORTED = 15,
    CUBLAS_STATUS_LICENSE_ERROR = 16
} cublasStatus_t;

typedef enum { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1, CUBLAS_OP_C = 2 } cublasOperation_t;

typedef enum { CUBLAS_POINTER_MODE_HOST = 0, CUBLAS_POINTER_MODE_DEVICE = 1 } cublasPointerMode_t;

typedef enum {
    CUBLAS_DEFAULT_MATH = 0,
    CUBLAS_TENSOR_OP_MATH = 1, /* deprecated in cuBLAS; accepted, treated as default */
    CUBLAS_PEDANTIC_MATH = 2,
    CUBLAS_TF32_TENSOR_OP_MATH = 3
} cublasMath_t;

typedef enum {
    CUBLAS_COMPUTE_32F = 68,
    CUBLAS_COMPUTE_32F_PEDANTIC = 69,
    CUBLAS_COMPUTE_32F_FAST_16F = 74, /* not supported by the stand-in */
    CUBLAS_COMPUTE_32F_FAST_16BF = 75,
    CUBLAS_COMPUTE_32F_FAST_TF32 = 77
} cublasComputeType_t;

typedef enum { CUBLAS_GEMM_DEFAULT = -1, CUBLAS_GEMM_DEFAULT_TENSOR_OP = 99 } cublasGemmAlgo_t;

typedef struct cublasContext *cublasHandle_t;

cublasStatus_t cublasCreate(cublasHandle_t *handle);
cublasStatus_t cublasDestroy(cublasHandle_t handle);
cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode);
cublasStatus_t cublasGetMathMode(cublasHandle_t handle, cublasMath_t *mode);
cublasStatus_t cublasSetPointerMode(cublasHandle_t handle, cublasPointerMode_t mode);
cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t stream);
const char *cublasGetStatusString(cublasStatus_t status);

cublasStatus_t cublasSgemm(cublasHandle_t handle, cublasOperation_t transa,
                           cublasOperation_t transb, int m, int n, int k, const float *alpha,
                           const float *A, int lda, const float *B, int ldb, const float *beta,
                           float *C, int ldc);

/* batchCount products; matrix i of A starts at A + i * strideA (likewise B, C). */
cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa,
                                         cublasOperation_t transb, int m, int n, int k,
                                         const float *alpha, const float *A, int lda,
                                         long long int strideA, const float *B, int ldb,
                                         long long int strideB, const float *beta, float *C,
                                         int ldc, long long int strideC, int batchCount);

/* alpha and beta point to floats (the compute types here are all 32F). */
cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa,
                            cublasOperation_t transb, int m, int n, int k, const void *alpha,
                            const void *A, cudaDataType Atype, int lda, const void *B,
                            cudaDataType Btype, int ldb, const void *beta, void *C,
                            cudaDataType Ctype, int ldc, cublasComputeType_t computeType,
                            cublasGemmAlgo_t algo);

cublasStatus_t cublasGemmStridedBatchedEx(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
    int k, const void *alpha, const void *A, cudaDataType Atype, int lda, long long int strideA,
    const void *B, cudaDataType Btype, int ldb, long long int strideB, const void *beta, void *C,
    cudaDataType Ctype, int ldc, long long int strideC, int batchCount,
    cublasComputeType_t computeType, cublasGemmAlgo_t algo);

/* Emulation-only: x rounded to nearest-even with `bits` explicit mantissa bits (10 = TF32,
 * 7 = bfloat16, 23 = unchanged); NaN and Inf unchanged, overflow rounds to Inf. */
float cublas_host_round_mantissa(float x, int bits);

#ifdef __cplusplus
}
#endif

#endif
