/* ops/cuda/matmul.cu — the dense matrix product on the GPU through cuBLAS, at the precision the
 * trainer chose (backend_cuda_set_precision, ops.h): fp32 (CUBLAS_COMPUTE_32F: no tensor-core
 * rounding), tf32 (CUBLAS_COMPUTE_32F_FAST_TF32: A and B rounded to 10 mantissa bits) or bf16
 * (CUBLAS_COMPUTE_32F_FAST_16BF: 7 bits); always fp32 storage and fp32 accumulation. Semantics and
 * shapes: ops.h (matmul); the CPU twin: ops/cpu/matmul.c. Errors: a failing cuBLAS call aborts
 * (CUBLAS_CHECK); an unknown precision is a programmer error (abort). Source: cuBLAS Library User
 * Guide, cublasGemmEx and cublasComputeType_t.
 */
#include "ops/cuda/cuda_internal.h"
#include "ops/cuda/kernel_api.h"

static int g_precision = BACKEND_PRECISION_FP32;

extern "C" void backend_cuda_set_precision(int precision) {
    CHECK(precision == BACKEND_PRECISION_FP32 || precision == BACKEND_PRECISION_TF32 ||
              precision == BACKEND_PRECISION_BF16,
          "backend_cuda_set_precision: unknown precision");
    g_precision = precision;
}

int cuda_precision(void) { return g_precision; }

constexpr int MM_SCALE_THREADS = CUDA_EW_THREADS;

/* c[i] *= beta, i < n (the K = 0 product: C = beta C, which cuBLAS cannot be asked for with the
 * leading dimensions of an empty A). */
__global__ void __launch_bounds__(MM_SCALE_THREADS)
k_matmul_scale(float *c, float beta, size_t n) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) c[i] *= beta;
}

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
        size_t n = (size_t)M * Nc;
        if (beta == 0.0f)
            CUDA_CHECK(cudaMemset(C, 0, n * sizeof(float)));
        else if (beta != 1.0f)
            LAUNCH(k_matmul_scale, cuda_ew_blocks(n), MM_SCALE_THREADS, 0, C, beta, n);
        return;
    }
    int ldb = transB ? K : Nc;
    int lda = transA ? M : K;
    cublasComputeType_t ct = g_precision == BACKEND_PRECISION_TF32   ? CUBLAS_COMPUTE_32F_FAST_TF32
                             : g_precision == BACKEND_PRECISION_BF16 ? CUBLAS_COMPUTE_32F_FAST_16BF
                                                                     : CUBLAS_COMPUTE_32F;
    CUBLAS_CHECK(cublasGemmEx(g_cuda_blas, transB ? CUBLAS_OP_T : CUBLAS_OP_N,
                              transA ? CUBLAS_OP_T : CUBLAS_OP_N, Nc, M, K, &alpha, B, CUDA_R_32F,
                              ldb, A, CUDA_R_32F, lda, &beta, C, CUDA_R_32F, Nc, ct,
                              CUBLAS_GEMM_DEFAULT));
}

void cuda_register_matmul(Backend *be) { be->matmul = cu_matmul; }
