// host_cublaslt.cc — the host implementation of the cuBLASLt stand-in (include/cublasLt.h) for the
// emulated build: the product through the cuBLAS stand-in's cublasGemmEx (OpenBLAS, with the
// compute type's input rounding), then the epilogue (bias on each row of D, ReLU) in fp32, as
// cuBLASLt applies it to the fp32 accumulator. Validation as documented in cublasLt.h. Source:
// cuBLAS Library User Guide (CUDA 13.0), cublasLtMatmul and cublasLtEpilogue_t.
#include <stdlib.h>
#include <string.h>

#include <cublasLt.h>

struct cublasLtContext {
    cublasHandle_t blas; /* the GEMM underneath */
};

struct cublasLtMatmulDescHost {
    cublasComputeType_t compute;
    int32_t transa, transb;
    uint32_t epilogue;
    const float *bias;
    int32_t bias_type;
};

struct cublasLtMatrixLayoutHost {
    cudaDataType type; /* CUDA_R_32F, or CUDA_R_16BF for A and B */
    uint64_t rows, cols;
    int64_t ld;
};

struct cublasLtMatmulPreferenceHost {
    uint64_t max_workspace;
    uint32_t min_alignment[4]; /* A, B, C, D */
};

namespace {

template <typename T> cublasStatus_t make(T **out) {
    if (!out) return CUBLAS_STATUS_INVALID_VALUE;
    *out = static_cast<T *>(calloc(1, sizeof(T)));
    return *out ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_ALLOC_FAILED;
}

bool valid_op(int32_t op) { return op == CUBLAS_OP_N || op == CUBLAS_OP_T || op == CUBLAS_OP_C; }

}  // namespace

extern "C" {

cublasStatus_t cublasLtCreate(cublasLtHandle_t *handle) {
    cublasStatus_t s = make(handle);
    if (s != CUBLAS_STATUS_SUCCESS) return s;
    s = cublasCreate(&(*handle)->blas);
    if (s != CUBLAS_STATUS_SUCCESS) free(*handle), *handle = nullptr;
    return s;
}

cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle) {
    if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
    cublasDestroy(handle->blas);
    free(handle);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *desc, cublasComputeType_t compute,
                                        cudaDataType_t scaleType) {
    if (scaleType != CUDA_R_32F) return CUBLAS_STATUS_NOT_SUPPORTED;
    cublasStatus_t s = make(desc);
    if (s != CUBLAS_STATUS_SUCCESS) return s;
    (*desc)->compute = compute;
    (*desc)->transa = (*desc)->transb = CUBLAS_OP_N;
    (*desc)->epilogue = CUBLASLT_EPILOGUE_DEFAULT;
    (*desc)->bias_type = CUDA_R_32F;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc) {
    free(desc);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc,
                                              cublasLtMatmulDescAttributes_t attr, const void *buf,
                                              size_t size) {
    if (!desc || !buf) return CUBLAS_STATUS_INVALID_VALUE;
    switch (attr) {
    case CUBLASLT_MATMUL_DESC_POINTER_MODE: {
        int32_t mode;
        if (size != sizeof mode) return CUBLAS_STATUS_INVALID_VALUE;
        memcpy(&mode, buf, sizeof mode);
        return mode == 0 ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_NOT_SUPPORTED; /* host only */
    }
    case CUBLASLT_MATMUL_DESC_TRANSA:
    case CUBLASLT_MATMUL_DESC_TRANSB: {
        int32_t op;
        if (size != sizeof op) return CUBLAS_STATUS_INVALID_VALUE;
        memcpy(&op, buf, sizeof op);
        if (!valid_op(op)) return CUBLAS_STATUS_INVALID_VALUE;
        (attr == CUBLASLT_MATMUL_DESC_TRANSA ? desc->transa : desc->transb) = op;
        return CUBLAS_STATUS_SUCCESS;
    }
    case CUBLASLT_MATMUL_DESC_EPILOGUE: {
        uint32_t e;
        if (size != sizeof e) return CUBLAS_STATUS_INVALID_VALUE;
        memcpy(&e, buf, sizeof e);
        if (e != CUBLASLT_EPILOGUE_DEFAULT && e != CUBLASLT_EPILOGUE_RELU &&
            e != CUBLASLT_EPILOGUE_BIAS && e != CUBLASLT_EPILOGUE_RELU_BIAS)
            return CUBLAS_STATUS_NOT_SUPPORTED;
        desc->epilogue = e;
        return CUBLAS_STATUS_SUCCESS;
    }
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER:
        if (size != sizeof(void *)) return CUBLAS_STATUS_INVALID_VALUE;
        memcpy(&desc->bias, buf, sizeof(void *));
        return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE:
        if (size != sizeof desc->bias_type) return CUBLAS_STATUS_INVALID_VALUE;
        memcpy(&desc->bias_type, buf, sizeof desc->bias_type);
        return desc->bias_type == CUDA_R_32F ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_NOT_SUPPORTED;
    }
    return CUBLAS_STATUS_INVALID_VALUE;
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *layout, cudaDataType type,
                                          uint64_t rows, uint64_t cols, int64_t ld) {
    if (type != CUDA_R_32F && type != CUDA_R_16BF) return CUBLAS_STATUS_NOT_SUPPORTED;
    if (ld < (int64_t)(rows > 1 ? rows : 1)) return CUBLAS_STATUS_INVALID_VALUE;
    cublasStatus_t s = make(layout);
    if (s != CUBLAS_STATUS_SUCCESS) return s;
    (*layout)->type = type, (*layout)->rows = rows, (*layout)->cols = cols, (*layout)->ld = ld;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout) {
    free(layout);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *pref) {
    return make(pref);
}

cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
    free(pref);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                    cublasLtMatmulPreferenceAttributes_t attr,
                                                    const void *buf, size_t size) {
    if (!pref || !buf) return CUBLAS_STATUS_INVALID_VALUE;
    switch (attr) {
    case CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES:
        if (size != sizeof pref->max_workspace) return CUBLAS_STATUS_INVALID_VALUE;
        memcpy(&pref->max_workspace, buf, size);
        return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES: {
        uint32_t *slot = &pref->min_alignment[attr - CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES];
        if (size != sizeof *slot) return CUBLAS_STATUS_INVALID_VALUE;
        memcpy(slot, buf, size);
        return CUBLAS_STATUS_SUCCESS;
    }
    }
    return CUBLAS_STATUS_INVALID_VALUE;
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                                              cublasLtMatrixLayout_t Adesc,
                                              cublasLtMatrixLayout_t Bdesc,
                                              cublasLtMatrixLayout_t Cdesc,
                                              cublasLtMatrixLayout_t Ddesc,
                                              cublasLtMatmulPreference_t pref, int requested,
                                              cublasLtMatmulHeuristicResult_t results[],
                                              int *returned) {
    if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (!desc || !Adesc || !Bdesc || !Cdesc || !Ddesc || !pref || requested < 1 || !results ||
        !returned)
        return CUBLAS_STATUS_INVALID_VALUE;
    memset(&results[0], 0, sizeof results[0]);
    results[0].state = CUBLAS_STATUS_SUCCESS;
    results[0].wavesCount = 1.0f;
    *returned = 1;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                              const void *alpha, const void *A, cublasLtMatrixLayout_t Adesc,
                              const void *B, cublasLtMatrixLayout_t Bdesc, const void *beta,
                              const void *C, cublasLtMatrixLayout_t Cdesc, void *D,
                              cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t *,
                              void *, size_t, cudaStream_t) {
    if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (!desc || !Adesc || !Bdesc || !Cdesc || !Ddesc || !D) return CUBLAS_STATUS_INVALID_VALUE;
    if (Cdesc->type != CUDA_R_32F || Ddesc->type != CUDA_R_32F || Adesc->type != Bdesc->type)
        return CUBLAS_STATUS_NOT_SUPPORTED;
    bool ta = desc->transa != CUBLAS_OP_N, tb = desc->transb != CUBLAS_OP_N;
    uint64_t m = Ddesc->rows, n = Ddesc->cols, k = ta ? Adesc->rows : Adesc->cols;
    if ((ta ? Adesc->cols : Adesc->rows) != m || (tb ? Bdesc->rows : Bdesc->cols) != n ||
        (tb ? Bdesc->cols : Bdesc->rows) != k || Cdesc->rows != m || Cdesc->cols != n ||
        Cdesc->ld != Ddesc->ld)
        return CUBLAS_STATUS_INVALID_VALUE;
    bool bias = desc->epilogue & CUBLASLT_EPILOGUE_BIAS, relu = desc->epilogue & CUBLASLT_EPILOGUE_RELU;
    if (bias && !desc->bias) return CUBLAS_STATUS_INVALID_VALUE;
    float *d = static_cast<float *>(D);
    if (C != D && n > 0) /* D = alpha AB + beta C: bring C into D, then accumulate there */
        for (uint64_t j = 0; j < n; j++)
            memcpy(d + j * Ddesc->ld, static_cast<const float *>(C) + j * Cdesc->ld,
                   m * sizeof(float));
    cublasStatus_t s = cublasGemmEx(handle->blas, (cublasOperation_t)desc->transa,
                                    (cublasOperation_t)desc->transb, (int)m, (int)n, (int)k, alpha,
                                    A, Adesc->type, (int)Adesc->ld, B, Bdesc->type, (int)Bdesc->ld,
                                    beta, D, CUDA_R_32F, (int)Ddesc->ld, desc->compute,
                                    CUBLAS_GEMM_DEFAULT);
    if (s != CUBLAS_STATUS_SUCCESS) return s;
    if (bias || relu)
        for (uint64_t j = 0; j < n; j++)
            for (uint64_t i = 0; i < m; i++) {
                float *x = &d[j * Ddesc->ld + i];
                float v = bias ? *x + desc->bias[i] : *x;
                *x = relu ? (v > 0.0f ? v : 0.0f) : v;
            }
    return CUBLAS_STATUS_SUCCESS;
}

}  // extern "C"
