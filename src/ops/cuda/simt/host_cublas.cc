// host_cublas.cc — the host implementation of the cuBLAS stand-in (include/cublas_v2.h) for the
// emulated build: GEMMs on OpenBLAS's cblas_sgemm (column-major, the same argument order as
// cuBLAS), with the tensor cores' input rounding (TF32 or bfloat16, round-to-nearest-even)
// applied to copies of A and B when the compute type or math mode asks for it. Validation as
// cuBLAS (INVALID_VALUE for negative sizes or too-small leading dimensions). Source: cuBLAS
// Library User Guide (CUDA 13.0), cublas<t>gemm and cublasGemmEx; NVIDIA A100 whitepaper (TF32:
// 8-bit exponent, 10-bit mantissa); bfloat16: 8-bit exponent, 7-bit mantissa.
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

#include <cblas.h>

#include <cublas_v2.h>

struct cublasContext {
    cublasMath_t math;
    cublasPointerMode_t pointer_mode;
    cudaStream_t stream;
};

namespace {

// Mantissa bits the inputs keep under a compute type; -1 for one the stand-in does not support.
int mantissa_bits(cublasComputeType_t ct) {
    switch (ct) {
    case CUBLAS_COMPUTE_32F:
    case CUBLAS_COMPUTE_32F_PEDANTIC: return 23;
    case CUBLAS_COMPUTE_32F_FAST_TF32: return 10;
    case CUBLAS_COMPUTE_32F_FAST_16BF: return 7;
    default: return -1;
    }
}

// A column-major rows x cols matrix with leading dimension ld, copied compactly (ld = rows) with
// every element rounded to `bits` mantissa bits.
std::vector<float> rounded_copy(const float *a, int rows, int cols, int ld, int bits) {
    std::vector<float> out((size_t)rows * cols);
    for (int j = 0; j < cols; j++)
        for (int i = 0; i < rows; i++)
            out[(size_t)j * rows + i] = cublas_host_round_mantissa(a[(size_t)j * ld + i], bits);
    return out;
}

// One GEMM with cuBLAS's semantics (see cublas_v2.h); bits = input mantissa bits (23: as is).
cublasStatus_t gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                    int k, const float *alpha_p, const float *A, int lda, const float *B, int ldb,
                    const float *beta_p, float *C, int ldc, int bits) {
    if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
    bool tA = ta != CUBLAS_OP_N, tB = tb != CUBLAS_OP_N;
    if ((ta != CUBLAS_OP_N && ta != CUBLAS_OP_T && ta != CUBLAS_OP_C) ||
        (tb != CUBLAS_OP_N && tb != CUBLAS_OP_T && tb != CUBLAS_OP_C))
        return CUBLAS_STATUS_INVALID_VALUE;
    if (m < 0 || n < 0 || k < 0) return CUBLAS_STATUS_INVALID_VALUE;
    int a_rows = tA ? k : m, a_cols = tA ? m : k;
    int b_rows = tB ? n : k, b_cols = tB ? k : n;
    if (lda < (a_rows > 1 ? a_rows : 1) || ldb < (b_rows > 1 ? b_rows : 1) ||
        ldc < (m > 1 ? m : 1))
        return CUBLAS_STATUS_INVALID_VALUE;
    if (m == 0 || n == 0) return CUBLAS_STATUS_SUCCESS;
    if (!alpha_p || !beta_p || !C) return CUBLAS_STATUS_INVALID_VALUE;
    float alpha = *alpha_p, beta = *beta_p; /* host and "device" pointers are both host memory */

    if (k == 0 || alpha == 0.0f) { /* C = beta C; beta = 0 writes zeros without reading C */
        for (int j = 0; j < n; j++)
            for (int i = 0; i < m; i++) {
                float *c = &C[(size_t)j * ldc + i];
                *c = beta == 0.0f ? 0.0f : beta * *c;
            }
        return CUBLAS_STATUS_SUCCESS;
    }
    if (!A || !B) return CUBLAS_STATUS_INVALID_VALUE;
    if (beta == 0.0f) /* cuBLAS does not read C then (NaN in C must not propagate) */
        for (int j = 0; j < n; j++) memset(&C[(size_t)j * ldc], 0, (size_t)m * sizeof(float));

    std::vector<float> ra, rb;
    if (bits < 23) {
        ra = rounded_copy(A, a_rows, a_cols, lda, bits);
        rb = rounded_copy(B, b_rows, b_cols, ldb, bits);
        A = ra.data(), lda = a_rows;
        B = rb.data(), ldb = b_rows;
    }
    cblas_sgemm(CblasColMajor, tA ? CblasTrans : CblasNoTrans, tB ? CblasTrans : CblasNoTrans, m,
                n, k, alpha, A, lda, B, ldb, beta, C, ldc);
    return CUBLAS_STATUS_SUCCESS;
}

// A column-major rows x cols bfloat16 matrix with leading dimension ld, widened to fp32 compactly
// (ld = rows): each element is the high half of its float.
std::vector<float> widened(const uint16_t *a, int rows, int cols, int ld) {
    std::vector<float> out((size_t)rows * cols);
    for (int j = 0; j < cols; j++)
        for (int i = 0; i < rows; i++) {
            uint32_t u = (uint32_t)a[(size_t)j * ld + i] << 16;
            memcpy(&out[(size_t)j * rows + i], &u, sizeof u);
        }
    return out;
}

}  // namespace

extern "C" {

float cublas_host_round_mantissa(float x, int bits) {
    if (bits >= 23 || !isfinite(x)) return x;
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    int drop = 23 - bits;
    uint32_t half = (1u << (drop - 1)) - 1u;  /* just below half an ulp of the result */
    uint32_t lsb = (u >> drop) & 1u;          /* ties go to the even neighbour */
    u += half + lsb;                          /* may carry into the exponent (to Inf at most) */
    u &= ~((1u << drop) - 1u);
    float y;
    memcpy(&y, &u, sizeof y);
    return y;
}

cublasStatus_t cublasCreate(cublasHandle_t *handle) {
    if (!handle) return CUBLAS_STATUS_INVALID_VALUE;
    cublasContext *c = static_cast<cublasContext *>(calloc(1, sizeof *c));
    if (!c) return CUBLAS_STATUS_ALLOC_FAILED;
    c->math = CUBLAS_DEFAULT_MATH;
    c->pointer_mode = CUBLAS_POINTER_MODE_HOST;
    *handle = c;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy(cublasHandle_t handle) {
    if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
    free(handle);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetMathMode(cublasHandle_t h, cublasMath_t mode) {
    if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
    switch (mode) {
    case CUBLAS_DEFAULT_MATH:
    case CUBLAS_TENSOR_OP_MATH:
    case CUBLAS_PEDANTIC_MATH:
    case CUBLAS_TF32_TENSOR_OP_MATH: h->math = mode; return CUBLAS_STATUS_SUCCESS;
    }
    return CUBLAS_STATUS_INVALID_VALUE;
}

cublasStatus_t cublasGetMathMode(cublasHandle_t h, cublasMath_t *mode) {
    if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (!mode) return CUBLAS_STATUS_INVALID_VALUE;
    *mode = h->math;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetPointerMode(cublasHandle_t h, cublasPointerMode_t mode) {
    if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (mode != CUBLAS_POINTER_MODE_HOST && mode != CUBLAS_POINTER_MODE_DEVICE)
        return CUBLAS_STATUS_INVALID_VALUE;
    h->pointer_mode = mode;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream(cublasHandle_t h, cudaStream_t stream) {
    if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
    h->stream = stream;
    return CUBLAS_STATUS_SUCCESS;
}

const char *cublasGetStatusString(cublasStatus_t s) {
    switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
    }
    return "CUBLAS_STATUS_UNKNOWN";
}

cublasStatus_t cublasSgemm(cublasHandle_t h, cublasOperation_t transa, cublasOperation_t transb,
                           int m, int n, int k, const float *alpha, const float *A, int lda,
                           const float *B, int ldb, const float *beta, float *C, int ldc) {
    int bits = (h && h->math == CUBLAS_TF32_TENSOR_OP_MATH) ? 10 : 23;
    return gemm(h, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, bits);
}

cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t h, cublasOperation_t transa,
                                         cublasOperation_t transb, int m, int n, int k,
                                         const float *alpha, const float *A, int lda,
                                         long long int strideA, const float *B, int ldb,
                                         long long int strideB, const float *beta, float *C,
                                         int ldc, long long int strideC, int batchCount) {
    if (batchCount < 0) return CUBLAS_STATUS_INVALID_VALUE;
    int bits = (h && h->math == CUBLAS_TF32_TENSOR_OP_MATH) ? 10 : 23;
    for (int i = 0; i < batchCount; i++) {
        cublasStatus_t s = gemm(h, transa, transb, m, n, k, alpha, A + i * strideA, lda,
                                B + i * strideB, ldb, beta, C + i * strideC, ldc, bits);
        if (s != CUBLAS_STATUS_SUCCESS) return s;
    }
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t transa, cublasOperation_t transb,
                            int m, int n, int k, const void *alpha, const void *A,
                            cudaDataType Atype, int lda, const void *B, cudaDataType Btype,
                            int ldb, const void *beta, void *C, cudaDataType Ctype, int ldc,
                            cublasComputeType_t computeType, cublasGemmAlgo_t) {
    return cublasGemmStridedBatchedEx(h, transa, transb, m, n, k, alpha, A, Atype, lda, 0, B,
                                      Btype, ldb, 0, beta, C, Ctype, ldc, 0, 1, computeType,
                                      CUBLAS_GEMM_DEFAULT);
}

cublasStatus_t cublasGemmStridedBatchedEx(
    cublasHandle_t h, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
    const void *alpha, const void *A, cudaDataType Atype, int lda, long long int strideA,
    const void *B, cudaDataType Btype, int ldb, long long int strideB, const void *beta, void *C,
    cudaDataType Ctype, int ldc, long long int strideC, int batchCount,
    cublasComputeType_t computeType, cublasGemmAlgo_t) {
    if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
    int bits = mantissa_bits(computeType);
    bool bf16 = Atype == CUDA_R_16BF && Btype == CUDA_R_16BF; /* bf16 inputs: 32F compute only */
    if (bits < 0 || Ctype != CUDA_R_32F ||
        !((Atype == CUDA_R_32F && Btype == CUDA_R_32F) || (bf16 && bits == 23)))
        return CUBLAS_STATUS_NOT_SUPPORTED;
    if (batchCount < 0) return CUBLAS_STATUS_INVALID_VALUE;
    if (bf16) { /* widened to fp32 (exactly), then the fp32 product */
        bool tA = transa != CUBLAS_OP_N, tB = transb != CUBLAS_OP_N;
        int a_rows = tA ? k : m, a_cols = tA ? m : k, b_rows = tB ? n : k, b_cols = tB ? k : n;
        if (m < 0 || n < 0 || k < 0 || lda < (a_rows > 1 ? a_rows : 1) ||
            ldb < (b_rows > 1 ? b_rows : 1))
            return CUBLAS_STATUS_INVALID_VALUE;
        const uint16_t *a = static_cast<const uint16_t *>(A), *b = static_cast<const uint16_t *>(B);
        float *c = static_cast<float *>(C);
        for (int i = 0; i < batchCount; i++) {
            std::vector<float> wa, wb;
            if (a && a_rows > 0 && a_cols > 0) wa = widened(a + i * strideA, a_rows, a_cols, lda);
            if (b && b_rows > 0 && b_cols > 0) wb = widened(b + i * strideB, b_rows, b_cols, ldb);
            cublasStatus_t s = gemm(h, transa, transb, m, n, k, static_cast<const float *>(alpha),
                                    wa.empty() ? nullptr : wa.data(), a_rows > 1 ? a_rows : 1,
                                    wb.empty() ? nullptr : wb.data(), b_rows > 1 ? b_rows : 1,
                                    static_cast<const float *>(beta), c ? c + i * strideC : c,
                                    ldc, 23);
            if (s != CUBLAS_STATUS_SUCCESS) return s;
        }
        return CUBLAS_STATUS_SUCCESS;
    }
    const float *a = static_cast<const float *>(A), *b = static_cast<const float *>(B);
    float *c = static_cast<float *>(C);
    for (int i = 0; i < batchCount; i++) {
        cublasStatus_t s = gemm(h, transa, transb, m, n, k, static_cast<const float *>(alpha),
                                a ? a + i * strideA : a, lda, b ? b + i * strideB : b, ldb,
                                static_cast<const float *>(beta), c ? c + i * strideC : c, ldc,
                                bits);
        if (s != CUBLAS_STATUS_SUCCESS) return s;
    }
    return CUBLAS_STATUS_SUCCESS;
}

}  // extern "C"
