/* ops/cuda/matmul.cu — the dense matrix product on the GPU through cuBLAS (and the dense layer's
 * product + bias (+ ReLU) through one cuBLASLt call with an epilogue), at the precision the
 * trainer chose (backend_cuda_set_precision, cuda.h): fp32 (CUBLAS_COMPUTE_32F: no tensor-core
 * rounding), tf32 (CUBLAS_COMPUTE_32F_FAST_TF32: A and B rounded to 10 mantissa bits) or bf16 (A
 * and B rounded to 7 mantissa bits here, then multiplied as CUDA_R_16BF with CUBLAS_COMPUTE_32F:
 * see "bf16" below); always fp32 output and fp32 accumulation. Semantics and shapes: ops.h
 * (matmul); the CPU twin: ops/cpu/matmul.c. Errors: a failing cuBLAS call aborts (CUBLAS_CHECK);
 * an unknown precision is a programmer error (abort). Source: cuBLAS Library User Guide,
 * cublasGemmEx, cublasComputeType_t and cublasLtMatmul.
 */
#include <stdint.h>
#include <string.h>

#include <cublasLt.h>

#include "ops/cuda/cuda_internal.h"
#include "ops/cuda/kernel_api.h"

static int g_precision = BACKEND_PRECISION_FP32;

/* ---- bf16 ----
 * CUBLAS_COMPUTE_32F_FAST_16BF only allows cuBLAS to round fp32 inputs to bfloat16, and cuBLAS
 * may run TF32 kernels for it (it does on an H100: docs/gpu.md). So at bf16 each operand
 * is rounded here (k_round_bf16: nearest even, NaN stays NaN, as backend_cpu_round_bf16) into a
 * staging buffer of two halves, A's and B's, and cuBLAS multiplies the CUDA_R_16BF operands with
 * CUBLAS_COMPUTE_32F into the fp32 output (what PyTorch's autocast asks of it too). The buffer is
 * allocated when bf16 is chosen (backend_cuda_set_precision), never by a product; a product
 * whose operands do not fit runs in blocks of its output (rows of op(A), columns of op(B)), each
 * with the whole K, so no element's sum is split. */
static uint16_t *g_stage;                      /* 2 × g_stage_half elements, or NULL */
static size_t g_stage_half = (size_t)16 << 20; /* elements per half: 32 MiB each by default */

static void stage_release(void) {
    if (g_stage) CUDA_CHECK(cudaFree(g_stage));
    g_stage = NULL;
}

static void stage_reserve(void) {
    if (!g_stage) CUDA_CHECK(cudaMalloc(&g_stage, 2 * g_stage_half * sizeof(uint16_t)));
}

extern "C" void backend_cuda_set_precision(int precision) {
    CHECK(precision == BACKEND_PRECISION_FP32 || precision == BACKEND_PRECISION_TF32 ||
              precision == BACKEND_PRECISION_BF16,
          "backend_cuda_set_precision: unknown precision");
    g_precision = precision;
    if (precision == BACKEND_PRECISION_BF16) stage_reserve();
}

extern "C" size_t backend_cuda_set_bf16_stage(size_t elems) {
    CHECK(elems >= 1, "backend_cuda_set_bf16_stage: the staging half needs >= 1 element");
    size_t before = g_stage_half;
    int had = g_stage != NULL;
    stage_release();
    g_stage_half = elems;
    if (had) stage_reserve();
    return before;
}

/* The cuBLAS compute type of the chosen precision (bf16's operands are bf16 already). */
static cublasComputeType_t compute_type(void) {
    return g_precision == BACKEND_PRECISION_TF32 ? CUBLAS_COMPUTE_32F_FAST_TF32
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

/* dst[r·cols + c] = src[r·ld + c] rounded to bfloat16 (the high 16 bits after rounding to
 * nearest, ties to even; NaN stays NaN, quiet), r < rows, c < cols: a row-major block packed. */
__global__ void __launch_bounds__(MM_SCALE_THREADS)
k_round_bf16(uint16_t *dst, const float *src, int rows, int cols, size_t ld) {
    size_t n = (size_t)rows * cols, stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        size_t r = i / (size_t)cols, c = i - r * (size_t)cols;
        uint32_t u = __float_as_uint(src[r * ld + c]);
        uint32_t v = (u & 0x7fffffffu) > 0x7f800000u ? (u | 0x00400000u)
                                                       : u + 0x7fffu + ((u >> 16) & 1u);
        dst[i] = (uint16_t)(v >> 16);
    }
}

/* Packs the row-major block [rows, cols] at src (leading dimension ld floats) into dst as bf16. */
static void round_block(uint16_t *dst, const float *src, int rows, int cols, size_t ld) {
    size_t n = (size_t)rows * cols;
    if (n) LAUNCH(k_round_bf16, cuda_ew_blocks(n), MM_SCALE_THREADS, 0, dst, src, rows, cols, ld);
}

/* Rows of a block of op(A) [M,K] and columns of a block of op(B) [K,Nc] that fit the staging
 * halves: *mb rows of op(A) (K each) and *nb columns of op(B) (all of them when op(B) fits).
 * Aborts when not even one row of K fits (backend_cuda_set_bf16_stage). */
static void stage_blocks(int M, int Nc, int K, int *mb, int *nb) {
    size_t per = g_stage_half / (size_t)K;
    CHECK(per >= 1, "matmul at bf16: K exceeds the staging buffer (backend_cuda_set_bf16_stage)");
    *mb = per < (size_t)M ? (int)per : M;
    *nb = per < (size_t)Nc ? (int)per : Nc;
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
    if (g_precision == BACKEND_PRECISION_BF16) { /* rounded blocks, then bf16 × bf16 → fp32 */
        uint16_t *sa = g_stage, *sb = g_stage + g_stage_half;
        int mb, nb;
        stage_blocks(M, Nc, K, &mb, &nb);
        for (int j = 0; j < Nc; j += nb) {
            int n = Nc - j < nb ? Nc - j : nb;
            if (transB) /* op(B)'s columns j.. are B's rows j..: [n, K] */
                round_block(sb, B + (size_t)j * K, n, K, (size_t)K);
            else /* B's columns j..: [K, n] */
                round_block(sb, B + j, K, n, (size_t)Nc);
            for (int i = 0; i < M; i += mb) {
                int m = M - i < mb ? M - i : mb;
                if (transA) /* op(A)'s rows i.. are A's columns i..: [K, m] */
                    round_block(sa, A + i, K, m, (size_t)M);
                else /* A's rows i..: [m, K] */
                    round_block(sa, A + (size_t)i * K, m, K, (size_t)K);
                CUBLAS_CHECK(cublasGemmEx(g_cuda_blas, transB ? CUBLAS_OP_T : CUBLAS_OP_N,
                                          transA ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, K, &alpha, sb,
                                          CUDA_R_16BF, transB ? K : n, sa, CUDA_R_16BF,
                                          transA ? m : K, &beta, C + (size_t)i * Nc + j,
                                          CUDA_R_32F, Nc, CUBLAS_COMPUTE_32F,
                                          CUBLAS_GEMM_DEFAULT));
            }
        }
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
 * algorithm of cublasLtMatmulAlgoGetHeuristic are kept per shape (N, C, K, out's leading
 * dimension, relu, precision) in a small table (LT_PLANS entries, replaced round-robin when
 * full), so a training step, which repeats a handful of shapes, asks the heuristic once per
 * shape; only the bias pointer is set per call. The heuristic assumes 256-byte aligned matrices
 * unless told otherwise, and reads the bias pointer's alignment, while callers pass pointers
 * into arenas at any float offset (a decoding step's row block, one parameter of the flat
 * buffer): so the plan's key holds the alignment of each pointer (its largest power-of-two
 * divisor, at most 256), passed to the heuristic as MIN_ALIGNMENT preferences, with the bias
 * pointer set before it is asked. The workspace (LT_WORK_BYTES, NVIDIA's suggestion for Hopper)
 * is allocated once, at start-up: the op itself never allocates. */
enum { LT_PLANS = 64 };
static const size_t LT_WORK_BYTES = (size_t)32 << 20;

typedef struct {
    int used, N, C, K, ldd, relu, precision;
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

/* The plan of out[N,C] (leading dimension ldd) = inp[N,K] weight[C,K]ᵀ + bias, whose inp and
 * weight are fp32, or at bf16 the staged bf16 blocks (const void *: either). */
static LtPlan *lt_plan(int N, int C, int K, int ldd, int relu, const void *weight,
                       const void *inp, const float *out, const float *bias) {
    uint32_t al[4] = {alignment(weight), alignment(inp), alignment(out), alignment(bias)};
    for (int i = 0; i < LT_PLANS; i++) {
        LtPlan *p = &g_plans[i];
        if (p->used && p->N == N && p->C == C && p->K == K && p->ldd == ldd && p->relu == relu &&
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
    cudaDataType_t in = g_precision == BACKEND_PRECISION_BF16 ? CUDA_R_16BF : CUDA_R_32F;
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p->a, in, (uint64_t)K, (uint64_t)C, K));
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p->b, in, (uint64_t)K, (uint64_t)N, K));
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p->d, CUDA_R_32F, (uint64_t)C, (uint64_t)N, ldd));
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
    p->N = N, p->C = C, p->K = K, p->ldd = ldd, p->relu = relu, p->precision = g_precision;
    p->used = 1;
    memcpy(p->align, al, sizeof al);
    return p;
}

/* out[N,C] (leading dimension ldd) = inp[N,K] weight[C,K]ᵀ + bias[C] (+ ReLU): one
 * cublasLtMatmul. */
static void lt_matmul(float *out, int ldd, const void *inp, const void *weight, const float *bias,
                      int N, int C, int K, int relu) {
    LtPlan *p = lt_plan(N, C, K, ldd, relu, weight, inp, out, bias);
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                                sizeof bias));
    float one = 1.0f, zero = 0.0f;
    CUBLAS_CHECK(cublasLtMatmul(g_lt, p->desc, &one, weight, p->a, inp, p->b, &zero, out, p->d, out,
                                p->d, &p->algo, g_lt_work, LT_WORK_BYTES, 0));
}

/* out[N,C] = inp[N,K] weight[C,K]ᵀ + bias[C] (+ ReLU) (ops.h): one cublasLtMatmul, or at bf16
 * one per block of rounded operands (the bias and ReLU of each block's columns in its epilogue). */
static void cu_matmul_bias_forward(float *out, const float *inp, const float *weight,
                                   const float *bias, int N, int C, int K, int relu) {
    if (N <= 0 || C <= 0) return;
    CHECK(K > 0, "matmul_bias_forward: K must be > 0");
    if (g_precision != BACKEND_PRECISION_BF16) {
        lt_matmul(out, C, inp, weight, bias, N, C, K, relu);
        return;
    }
    uint16_t *sa = g_stage, *sb = g_stage + g_stage_half;
    int mb, nb;
    stage_blocks(N, C, K, &mb, &nb);
    for (int j = 0; j < C; j += nb) {
        int n = C - j < nb ? C - j : nb;
        round_block(sb, weight + (size_t)j * K, n, K, (size_t)K);
        for (int i = 0; i < N; i += mb) {
            int m = N - i < mb ? N - i : mb;
            round_block(sa, inp + (size_t)i * K, m, K, (size_t)K);
            lt_matmul(out + (size_t)i * C + j, C, sa, sb, bias + j, m, n, K, relu);
        }
    }
}

void cuda_register_matmul(Backend *be) {
    if (!g_lt) {
        CUBLAS_CHECK(cublasLtCreate(&g_lt));
        CUDA_CHECK(cudaMalloc(&g_lt_work, LT_WORK_BYTES));
    }
    be->matmul = cu_matmul;
    be->matmul_bias_forward = cu_matmul_bias_forward;
}
