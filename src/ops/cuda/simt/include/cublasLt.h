/* cublasLt.h — HOST STAND-IN (emulated build only, -DTRAINER_SIMT=ON; never on a real build's
 * include path). The subset of the cuBLASLt API that src/ops/cuda/ calls, with cuBLASLt's names,
 * types and enum values; implemented in ../host_cublaslt.cc on the cuBLAS stand-in's GEMM
 * (cublas_v2.h: OpenBLAS with the tensor cores' input rounding). Usable from C and C++. Source:
 * cuBLAS Library User Guide (CUDA 13.0), §3 "Using the cuBLASLt API": cublasLtMatmul,
 * cublasLtMatmulDescAttributes_t, cublasLtEpilogue_t, cublasLtMatrixLayoutCreate,
 * cublasLtMatmulAlgoGetHeuristic.
 *
 * Semantics (cuBLASLt's, for what the stand-in supports): column-major;
 * D[m,n] = epilogue(alpha op(A) op(B) + beta C), op(A) [m,k], op(B) [k,n], op set by the
 * descriptor's TRANSA/TRANSB (int32 cublasOperation_t); A's layout is rows x cols = (transa ? k x m
 * : m x k) with its leading dimension, likewise B; C and D are m x n and must have the same layout
 * (C may equal D). Epilogues: CUBLASLT_EPILOGUE_DEFAULT (none), _RELU (max(x, 0)), _BIAS (+ bias[i]
 * on row i: the bias has m elements, one per row of D, broadcast over the n columns) and
 * _RELU_BIAS (bias, then ReLU), in fp32. The compute type (descriptor) rounds A and B as
 * cublasGemmEx does. Matrices CUDA_R_32F, or A and B both CUDA_R_16BF as cublasGemmEx allows;
 * scale type and bias CUDA_R_32F (CUBLAS_STATUS_NOT_SUPPORTED otherwise); a layout that does not match the sizes, or a bias epilogue without a bias pointer:
 * CUBLAS_STATUS_INVALID_VALUE. The heuristic returns one algorithm needing no workspace;
 * cublasLtMatmul ignores the algorithm and the workspace.
 */
#ifndef TRAINER_SIMT_CUBLASLT_H
#define TRAINER_SIMT_CUBLASLT_H

#include <stddef.h>
#include <stdint.h>

#include "cublas_v2.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cublasLtContext *cublasLtHandle_t;
typedef struct cublasLtMatmulDescHost *cublasLtMatmulDesc_t;
typedef struct cublasLtMatrixLayoutHost *cublasLtMatrixLayout_t;
typedef struct cublasLtMatmulPreferenceHost *cublasLtMatmulPreference_t;

typedef struct {
    uint64_t data[8];
} cublasLtMatmulAlgo_t;

typedef struct {
    cublasLtMatmulAlgo_t algo;
    size_t workspaceSize;
    cublasStatus_t state;
    float wavesCount;
    int reserved[4];
} cublasLtMatmulHeuristicResult_t;

typedef enum {
    CUBLASLT_MATMUL_DESC_POINTER_MODE = 2,
    CUBLASLT_MATMUL_DESC_TRANSA = 3,
    CUBLASLT_MATMUL_DESC_TRANSB = 4,
    CUBLASLT_MATMUL_DESC_EPILOGUE = 7,
    CUBLASLT_MATMUL_DESC_BIAS_POINTER = 8,
    CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE = 26
} cublasLtMatmulDescAttributes_t;

typedef enum {
    CUBLASLT_EPILOGUE_DEFAULT = 1,
    CUBLASLT_EPILOGUE_RELU = 2,
    CUBLASLT_EPILOGUE_BIAS = 4,
    CUBLASLT_EPILOGUE_RELU_BIAS = 6
} cublasLtEpilogue_t;

/* MAX_WORKSPACE_BYTES: uint64_t; MIN_ALIGNMENT_*_BYTES: uint32_t (accepted, not used: the
 * stand-in has one algorithm, which needs no alignment beyond a float's). */
typedef enum {
    CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES = 1,
    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES = 5,
    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES = 6,
    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES = 7,
    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES = 8
} cublasLtMatmulPreferenceAttributes_t;

cublasStatus_t cublasLtCreate(cublasLtHandle_t *handle);
cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle);

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *desc, cublasComputeType_t computeType,
                                        cudaDataType_t scaleType);
cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc);
/* Attributes: TRANSA, TRANSB (int32_t), EPILOGUE (uint32_t), BIAS_POINTER (const void *),
 * BIAS_DATA_TYPE (int32_t cudaDataType), POINTER_MODE (int32_t; host only). sizeInBytes must be
 * the attribute's size (CUBLAS_STATUS_INVALID_VALUE otherwise). */
cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc,
                                              cublasLtMatmulDescAttributes_t attr, const void *buf,
                                              size_t sizeInBytes);

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *layout, cudaDataType type,
                                          uint64_t rows, uint64_t cols, int64_t ld);
cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout);

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *pref);
cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref);
cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                    cublasLtMatmulPreferenceAttributes_t attr,
                                                    const void *buf, size_t sizeInBytes);

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t handle,
                                              cublasLtMatmulDesc_t operationDesc,
                                              cublasLtMatrixLayout_t Adesc,
                                              cublasLtMatrixLayout_t Bdesc,
                                              cublasLtMatrixLayout_t Cdesc,
                                              cublasLtMatrixLayout_t Ddesc,
                                              cublasLtMatmulPreference_t preference,
                                              int requestedAlgoCount,
                                              cublasLtMatmulHeuristicResult_t heuristicResultsArray[],
                                              int *returnAlgoCount);

/* alpha and beta point to floats (host memory: the pointer mode is host). */
cublasStatus_t cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t computeDesc,
                              const void *alpha, const void *A, cublasLtMatrixLayout_t Adesc,
                              const void *B, cublasLtMatrixLayout_t Bdesc, const void *beta,
                              const void *C, cublasLtMatrixLayout_t Cdesc, void *D,
                              cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t *algo,
                              void *workspace, size_t workspaceSizeInBytes, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
