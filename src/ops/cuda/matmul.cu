/* ops/cuda/matmul.cu — the dense matrix product on the GPU through cuBLAS (and the dense layer's
 * product + bias (+ ReLU) through one cuBLASLt call with an epilogue), at the precision the
 * trainer chose (backend_cuda_set_precision, ops.h): fp32 (CUBLAS_COMPUTE_32F: no tensor-core
 * rounding), tf32 (CUBLAS_COMPUTE_32F_FAST_TF32: A and B rounded to 10 mantissa bits) or bf16
 * (CUBLAS_COMPUTE_32F_FAST_16BF: 7 bits); always fp32 storage and fp32 accumulation. Semantics and
 * shapes: ops.h (matmul); the CPU twin: ops/cpu/matmul.c. Errors: a failing cuBLAS call aborts
 * (CUBLAS_CHECK); an unknown precision is a programmer error (abort). Source: cuBLAS Library User
 * Guide, cublasGemmEx and cublasComputeType_t.
 */
#include <stdint.h>
#include <string.h>

#include <cublasLt.h>

#include "ops/cuda/cuda_internal.h"
#include "ops/cuda/kernel_api.h"

static int g_precision = BACKEND_PRECISION_FP32;

extern "C" void backend_cuda_set_precision(int precision) {
    CHECK(precision == BACKEND_PRECISION_FP32 || precision == BACKEND_PRECISION_TF32 ||
              precision == BACKEND_PRECISION_BF16,
          "backend_cuda_set_precision: unknown precision");
    g_precision = precision;
}

/* The cuBLAS compute type of the chosen precision. */
static cublasComputeType_t compute_type(void) {
    return g_precision == BACKEND_PRECISION_TF32   ? CUBLAS_COMPUTE_32F_FAST_TF32
           : g_precision == BACKEND_PRECISION_BF16 ? CUBLAS_COMPUTE_32F_FAST_16BF
                                                   : CUBLAS_COMPUTE_32F;
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
    cublasComputeType_t ct = compute_type();
    CUBLAS_CHECK(cublasGemmEx(g_cuda_blas, transB ? CUBLAS_OP_T : CUBLAS_OP_N,
                              transA ? CUBLAS_OP_T : CUBLAS_OP_N, Nc, M, K, &alpha, B, CUDA_R_32F,
                              ldb, A, CUDA_R_32F, lda, &beta, C, CUDA_R_32F, Nc, ct,
                              CUBLAS_GEMM_DEFAULT));
}

/* ---- matmul_bias_forward on cuBLASLt ----
 * Row-major out[N,C] = inp[N,K] weight[C,K]ᵀ + bias[C] is, column-major, outᵀ[C,N] =
 * op(W)[C,K] · inpᵀ[K,N] with W read as a K x C matrix (ld K) and TRANSA = T, inp read as K x N
 * (ld K) untransposed, D = outᵀ as C x N (ld C). cuBLASLt's bias has one element per row of D:
 * bias[C], broadcast over the N columns, as wanted. The descriptor, the three layouts and the
 * algorithm of cublasLtMatmulAlgoGetHeuristic are kept per shape (N, C, K, relu, precision) in
 * a small table (LT_PLANS entries, replaced round-robin when full), so a training step, which
 * repeats a handful of shapes, asks the heuristic once per shape; only the bias pointer is set
 * per call. The heuristic assumes 256-byte aligned matrices unless told otherwise, and reads the
 * bias pointer's alignment, while callers pass pointers into arenas at any float offset (a
 * decoding step's row block, one parameter of the flat buffer): so the plan's key holds the
 * alignment of each pointer (its largest power-of-two divisor, at most 256), passed to the
 * heuristic as MIN_ALIGNMENT preferences, with the bias pointer set before it is asked. The
 * workspace (LT_WORK_BYTES, NVIDIA's suggestion for Hopper) is allocated once, at start-up: the
 * op itself never allocates. */
enum { LT_PLANS = 64 };
static const size_t LT_WORK_BYTES = (size_t)32 << 20;

typedef struct {
    int used, N, C, K, relu, precision;
    uint32_t align[4]; /* of weight (A), inp (B), out (C = D), bias */
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t a, b, d;
    cublasLtMatmulAlgo_t algo;
} LtPlan;

static cublasLtHandle_t g_lt;
static void *g_lt_work;
static LtPlan g_plans[LT_PLANS];
static int g_plan_next;

static void lt_plan_release(LtPlan *p) {
    if (!p->used) return;
    CUBLAS_CHECK(cublasLtMatmulDescDestroy(p->desc));
    CUBLAS_CHECK(cublasLtMatrixLayoutDestroy(p->a));
    CUBLAS_CHECK(cublasLtMatrixLayoutDestroy(p->b));
    CUBLAS_CHECK(cublasLtMatrixLayoutDestroy(p->d));
    p->used = 0;
}

/* The largest power of two, at most 256, that divides the address. */
static uint32_t alignment(const void *p) {
    uintptr_t a = (uintptr_t)p | 256u;
    return (uint32_t)(a & (~a + 1));
}

static LtPlan *lt_plan(int N, int C, int K, int relu, const float *weight, const float *inp,
                       const float *out, const float *bias) {
    uint32_t al[4] = {alignment(weight), alignment(inp), alignment(out), alignment(bias)};
    for (int i = 0; i < LT_PLANS; i++) {
        LtPlan *p = &g_plans[i];
        if (p->used && p->N == N && p->C == C && p->K == K && p->relu == relu &&
            p->precision == g_precision && memcmp(p->align, al, sizeof al) == 0)
            return p;
    }
    LtPlan *p = &g_plans[g_plan_next];
    g_plan_next = (g_plan_next + 1) % LT_PLANS;
    lt_plan_release(p);
    int32_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    uint32_t epi = relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
    CUBLAS_CHECK(cublasLtMatmulDescCreate(&p->desc, compute_type(), CUDA_R_32F));
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta,
                                                sizeof ta));
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb,
                                                sizeof tb));
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi,
                                                sizeof epi));
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p->a, CUDA_R_32F, (uint64_t)K, (uint64_t)C, K));
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p->b, CUDA_R_32F, (uint64_t)K, (uint64_t)N, K));
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p->d, CUDA_R_32F, (uint64_t)C, (uint64_t)N, C));
    cublasLtMatmulPreference_t pref;
    uint64_t work = LT_WORK_BYTES;
    CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &work, sizeof work));
    static const struct { cublasLtMatmulPreferenceAttributes_t attr; int i; } aligns[4] = {
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, 0},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, 1},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, 2},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, 2}};
    for (int i = 0; i < 4; i++)
        CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, aligns[i].attr, &al[aligns[i].i],
                                                          sizeof(uint32_t)));
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                                sizeof bias));
    cublasLtMatmulHeuristicResult_t res;
    int found = 0;
    CUBLAS_CHECK(cublasLtMatmulAlgoGetHeuristic(g_lt, p->desc, p->a, p->b, p->d, p->d, pref, 1,
                                                &res, &found));
    CUBLAS_CHECK(cublasLtMatmulPreferenceDestroy(pref));
    CHECK(found == 1 && res.state == CUBLAS_STATUS_SUCCESS,
          "matmul_bias_forward: cuBLASLt has no algorithm for this shape and epilogue");
    p->algo = res.algo;
    p->N = N, p->C = C, p->K = K, p->relu = relu, p->precision = g_precision, p->used = 1;
    memcpy(p->align, al, sizeof al);
    return p;
}

/* out[N,C] = inp[N,K] weight[C,K]ᵀ + bias[C] (+ ReLU): one cublasLtMatmul (ops.h). */
static void cu_matmul_bias_forward(float *out, const float *inp, const float *weight,
                                   const float *bias, int N, int C, int K, int relu) {
    if (N <= 0 || C <= 0) return;
    CHECK(K > 0, "matmul_bias_forward: K must be > 0");
    LtPlan *p = lt_plan(N, C, K, relu, weight, inp, out, bias);
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                                sizeof bias));
    float one = 1.0f, zero = 0.0f;
    CUBLAS_CHECK(cublasLtMatmul(g_lt, p->desc, &one, weight, p->a, inp, p->b, &zero, out, p->d, out,
                                p->d, &p->algo, g_lt_work, LT_WORK_BYTES, 0));
}

void cuda_register_matmul(Backend *be) {
    if (!g_lt) {
        CUBLAS_CHECK(cublasLtCreate(&g_lt));
        CUDA_CHECK(cudaMalloc(&g_lt_work, LT_WORK_BYTES));
    }
    be->matmul = cu_matmul;
    be->matmul_bias_forward = cu_matmul_bias_forward;
}
