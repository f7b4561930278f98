/* test_cuda_host.c — the emulated build's host stand-ins of the CUDA runtime, cuBLAS and cuBLASLt
 * (src/ops/cuda/simt/host_cuda.cc, host_cublas.cc, host_cublaslt.cc) against what they specify:
 * memory, errors and device queries; every GEMM entry point, all transposes, padded leading
 * dimensions, alpha/beta (beta = 0 must not read a NaN in C), k = 0, batches, against a naive
 * column-major loop in double; TF32/bf16 round-to-nearest-even on values whose rounding is known;
 * argument validation; cublasLtMatmul's epilogues (none, bias per row of D, ReLU, both), with C
 * apart from D, against the same loop. Label simt (only in -DTRAINER_SIMT=ON builds). */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "testutil.h"

static unsigned long long lcg = 12345;
static float urand(void) { /* uniform in [-1, 1) */
    lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(lcg >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

/* Naive column-major C = alpha op(A) op(B) + beta C in double (beta = 0: C not read). */
static void naive(int ta, int tb, int m, int n, int k, float alpha, const float *A, int lda,
                  const float *B, int ldb, float beta, float *C, int ldc) {
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            double s = 0.0;
            for (int p = 0; p < k; p++) {
                double a = ta ? A[(size_t)i * lda + p] : A[(size_t)p * lda + i];
                double b = tb ? B[(size_t)p * ldb + j] : B[(size_t)j * ldb + p];
                s += a * b;
            }
            double c = beta == 0.0f ? 0.0 : (double)beta * C[(size_t)j * ldc + i];
            C[(size_t)j * ldc + i] = (float)(alpha * s + c);
        }
}

static float *frand(size_t n) {
    float *p = malloc(n * sizeof *p + 1);
    for (size_t i = 0; i < n; i++) p[i] = urand();
    return p;
}

/* max |x - y| over the m x n corner of two ldc-strided matrices, relative to max |y|; the
 * padding rows (m..ldc) must be untouched (equal bits). */
static double max_rel(const float *x, const float *y, int m, int n, int ldc, int *pad_changed) {
    double d = 0, r = 0;
    *pad_changed = 0;
    for (int j = 0; j < n; j++)
        for (int i = 0; i < ldc; i++) {
            size_t o = (size_t)j * ldc + i;
            if (i >= m) {
                *pad_changed |= memcmp(&x[o], &y[o], sizeof(float)) != 0;
                continue;
            }
            double e = fabs((double)x[o] - y[o]);
            d = test_max_nan(d, e);
            if (fabs(y[o]) > r) r = fabs(y[o]);
        }
    return r > 0 ? d / r : d;
}

static void test_runtime(void) {
    int count = -1;
    EXPECT(cudaGetDeviceCount(&count) == cudaSuccess && count == 1, "device count %d", count);
    struct cudaDeviceProp p;
    EXPECT(cudaGetDeviceProperties(&p, 0) == cudaSuccess, "properties");
    EXPECT(strcmp(p.name, "SIMT emulation (host)") == 0, "device name '%s'", p.name);
    EXPECT(p.major == 9 && p.warpSize == 32 && p.sharedMemPerBlockOptin == 227 * 1024,
           "H100-like limits: cc %d.%d warp %d optin %zu", p.major, p.minor, p.warpSize,
           p.sharedMemPerBlockOptin);
    int v = 0;
    EXPECT(cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, 0) == cudaSuccess &&
               v == 132, "SM count %d", v);
    EXPECT(cudaSetDevice(1) == cudaErrorInvalidDevice, "device 1 must not exist");
    EXPECT(cudaPeekAtLastError() == cudaErrorInvalidDevice, "peek keeps the last error");
    EXPECT(cudaGetLastError() == cudaErrorInvalidDevice, "last error is the failed call's");
    EXPECT(cudaGetLastError() == cudaSuccess, "cudaGetLastError clears the last error");

    void *d = NULL;
    EXPECT(cudaMalloc(&d, 1000) == cudaSuccess && d, "cudaMalloc");
    EXPECT(((uintptr_t)d & 255) == 0, "cudaMalloc alignment: %p", d);
    unsigned char h[1000], back[1000];
    for (int i = 0; i < 1000; i++) h[i] = (unsigned char)(i * 7);
    EXPECT(cudaMemcpy(d, h, 1000, cudaMemcpyHostToDevice) == cudaSuccess, "upload");
    EXPECT(cudaMemset((char *)d + 10, 0xAB, 20) == cudaSuccess, "memset");
    EXPECT(cudaMemcpy(back, d, 1000, cudaMemcpyDeviceToHost) == cudaSuccess, "download");
    int bad = 0;
    for (int i = 0; i < 1000; i++)
        bad += back[i] != ((i >= 10 && i < 30) ? 0xAB : h[i]);
    EXPECT(bad == 0, "memcpy/memset: %d bytes wrong", bad);
    EXPECT(cudaMemcpy(back, (char *)d + 900, 200, cudaMemcpyDeviceToHost) ==
               cudaErrorInvalidValue, "a copy past the end of an allocation is refused");
    EXPECT(cudaMemset(h, 0, 10) == cudaErrorInvalidValue, "memset of host memory is refused");
    (void)cudaGetLastError();
    EXPECT(cudaFree(d) == cudaSuccess, "free");
    EXPECT(cudaFree(h) == cudaErrorInvalidValue, "free of a pointer not from cudaMalloc");
    EXPECT(cudaFree(NULL) == cudaSuccess, "free(NULL)");
    EXPECT(strcmp(cudaGetErrorName(cudaErrorMemoryAllocation), "cudaErrorMemoryAllocation") == 0,
           "error names");
    (void)cudaGetLastError();
    static int kernel_token;
    EXPECT(cuda_host_max_dynamic_smem(&kernel_token) == 48 * 1024, "default dynamic smem");
    EXPECT(cudaFuncSetAttribute(&kernel_token, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                100000) == cudaSuccess, "opt-in to 100000 bytes");
    EXPECT(cuda_host_max_dynamic_smem(&kernel_token) == 100000, "opt-in recorded");
    EXPECT(cudaFuncSetAttribute(&kernel_token, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                228 * 1024) == cudaErrorInvalidValue, "over 227 KiB refused");
    (void)cudaGetLastError();
    /* the launch check LAUNCH makes: within the attribute fine, beyond it a launch error */
    static int other_kernel;
    EXPECT(cuda_host_check_launch_smem(&kernel_token, 100000) == 1, "100000 B after opt-in");
    EXPECT(cuda_host_check_launch_smem(&other_kernel, 48 * 1024) == 1, "48 KiB without opt-in");
    EXPECT(cudaPeekAtLastError() == cudaSuccess, "no error for launches that fit");
    EXPECT(cuda_host_check_launch_smem(&other_kernel, 48 * 1024 + 4) == 0 &&
               cudaGetLastError() == cudaErrorInvalidValue,
           "48 KiB + 4 without opt-in must be a launch error");
    EXPECT(cuda_host_check_launch_smem(&kernel_token, 100004) == 0 &&
               cudaGetLastError() == cudaErrorInvalidValue, "beyond the opt-in: a launch error");
}

/* Known roundings: ties to even, carries, overflow to Inf, NaN/Inf kept. */
static void test_rounding(void) {
    const float one = 1.0f;
    struct { float x; int bits; float want; } c[] = {
        {1.0f + 0x1p-11f, 10, 1.0f},                       /* tie, even below */
        {1.0f + 0x1p-10f + 0x1p-11f, 10, 1.0f + 0x1p-9f},  /* tie, odd below: up */
        {1.0f + 0x1p-11f + 0x1p-20f, 10, 1.0f + 0x1p-10f}, /* above the tie */
        {1.0f + 0x1p-11f - 0x1p-23f, 10, 1.0f},            /* below the tie */
        {-(1.0f + 0x1p-10f + 0x1p-11f), 10, -(1.0f + 0x1p-9f)},
        {1.0f + 0x1p-8f, 7, 1.0f},
        {1.0f + 0x1p-7f + 0x1p-8f, 7, 1.0f + 0x1p-6f},
        {2.0f - 0x1p-9f, 7, 2.0f},                          /* carry into the exponent */
        {3.14159265f, 7, 3.140625f},
        {3.14159265f, 10, 3.140625f},
        {FLT_MAX, 7, INFINITY},
        {INFINITY, 10, INFINITY},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        float r = cublas_host_round_mantissa(c[i].x, c[i].bits);
        EXPECT(r == c[i].want, "round(%a, %d bits) = %a, want %a", (double)c[i].x, c[i].bits,
               (double)r, (double)c[i].want);
    }
    float r = cublas_host_round_mantissa(NAN, 10);
    EXPECT(isnan(r), "NaN must stay NaN");
    EXPECT(cublas_host_round_mantissa(one, 23) == one, "23 bits: unchanged");
    /* every bf16 result has its low 16 bits clear; every TF32 one its low 13 */
    int low = 0;
    for (int i = 0; i < 10000; i++) {
        float x = urand() * 1000.0f;
        uint32_t u, t;
        float b = cublas_host_round_mantissa(x, 7), f = cublas_host_round_mantissa(x, 10);
        memcpy(&u, &b, 4), memcpy(&t, &f, 4);
        low += (u & 0xFFFFu) != 0 || (t & 0x1FFFu) != 0;
        low += fabsf(b - x) > fabsf(x) * 0x1p-8f || fabsf(f - x) > fabsf(x) * 0x1p-11f;
    }
    EXPECT(low == 0, "%d random values rounded wrongly (bits left or error above half an ulp)",
           low);
}

/* cublasSgemm and the Ex forms against the naive loop: all transposes, padded leading
 * dimensions, beta 0 (C full of NaN) and 0.5. */
static void test_gemm(cublasHandle_t h) {
    const int shapes[][3] = {{7, 5, 3}, {33, 17, 65}, {1, 40, 9}, {16, 1, 1}};
    for (int s = 0; s < 4; s++)
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++)
                for (int bz = 0; bz < 2; bz++)
                    for (int ex = 0; ex < 2; ex++) {
                        int m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
                        int lda = (ta ? k : m) + 3, ldb = (tb ? n : k) + 1, ldc = m + 2;
                        size_t na = (size_t)lda * (ta ? m : k), nb = (size_t)ldb * (tb ? k : n);
                        size_t nc = (size_t)ldc * n;
                        float *A = frand(na), *B = frand(nb), *C = frand(nc), *R = malloc(nc * 4);
                        float alpha = -1.25f, beta = bz ? 0.0f : 0.5f;
                        if (bz)
                            for (int j = 0; j < n; j++)
                                for (int i = 0; i < m; i++) C[(size_t)j * ldc + i] = NAN;
                        memcpy(R, C, nc * 4);
                        naive(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, R, ldc);
                        cublasStatus_t st;
                        if (ex)
                            st = cublasGemmEx(h, ta ? CUBLAS_OP_T : CUBLAS_OP_N,
                                              tb ? CUBLAS_OP_T : CUBLAS_OP_N, m, n, k, &alpha, A,
                                              CUDA_R_32F, lda, B, CUDA_R_32F, ldb, &beta, C,
                                              CUDA_R_32F, ldc, CUBLAS_COMPUTE_32F,
                                              CUBLAS_GEMM_DEFAULT);
                        else
                            st = cublasSgemm(h, ta ? CUBLAS_OP_T : CUBLAS_OP_N,
                                             tb ? CUBLAS_OP_T : CUBLAS_OP_N, m, n, k, &alpha, A,
                                             lda, B, ldb, &beta, C, ldc);
                        int pad = 0;
                        double e = max_rel(C, R, m, n, ldc, &pad);
                        EXPECT(st == CUBLAS_STATUS_SUCCESS && e < 1e-6 && !pad,
                               "%s m=%d n=%d k=%d ta=%d tb=%d beta=%g: status %d, rel err %.3g, "
                               "padding changed %d",
                               ex ? "GemmEx" : "Sgemm", m, n, k, ta, tb, (double)beta, (int)st, e,
                               pad);
                        free(A), free(B), free(C), free(R);
                    }
    /* k = 0: C = beta C */
    float c2[4] = {1, 2, 3, 4}, a1 = 1, b0 = 0.5f, dummy = 0;
    EXPECT(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 0, &a1, &dummy, 2, &dummy, 1, &b0, c2,
                       2) == CUBLAS_STATUS_SUCCESS && c2[0] == 0.5f && c2[3] == 2.0f,
           "k = 0 must scale C by beta: %g %g", (double)c2[0], (double)c2[3]);
    /* validation */
    EXPECT(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 2, 3, &a1, &dummy, 3, &dummy, 3, &b0, c2,
                       4) == CUBLAS_STATUS_INVALID_VALUE, "lda < m must be INVALID_VALUE");
    EXPECT(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, -1, 2, 3, &a1, &dummy, 3, &dummy, 3, &b0, c2,
                       4) == CUBLAS_STATUS_INVALID_VALUE, "m < 0 must be INVALID_VALUE");
    EXPECT(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &a1, &dummy, CUDA_R_16BF, 1, &dummy,
                        CUDA_R_32F, 1, &b0, c2, CUDA_R_32F, 1, CUBLAS_COMPUTE_32F,
                        CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_NOT_SUPPORTED,
           "bf16 storage is not supported by the stand-in and must say so");
    EXPECT(strcmp(cublasGetStatusString(CUBLAS_STATUS_INVALID_VALUE),
                  "CUBLAS_STATUS_INVALID_VALUE") == 0, "status string");
}

/* Strided batches: each matrix as its own GEMM. */
static void test_batched(cublasHandle_t h) {
    int m = 9, n = 6, k = 5, batch = 3;
    long long sa = m * k + 4, sb = k * n + 2, sc = m * n + 1;
    float *A = frand((size_t)sa * batch), *B = frand((size_t)sb * batch);
    float *C = frand((size_t)sc * batch), *R = malloc((size_t)sc * batch * 4);
    memcpy(R, C, (size_t)sc * batch * 4);
    float alpha = 0.5f, beta = 1.0f;
    for (int i = 0; i < batch; i++)
        naive(1, 0, m, n, k, alpha, A + i * sa, k, B + i * sb, k, beta, R + i * sc, m);
    cublasStatus_t st = cublasSgemmStridedBatched(h, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &alpha,
                                                  A, k, sa, B, k, sb, &beta, C, m, sc, batch);
    int pad = 0;
    double e = 0;
    for (int i = 0; i < batch; i++) {
        double ei = max_rel(C + i * sc, R + i * sc, m, n, m, &pad);
        if (ei > e) e = ei;
    }
    int gaps = 0; /* the element between batches must be untouched */
    for (int i = 0; i < batch; i++) gaps += memcmp(&C[i * sc + m * n], &R[i * sc + m * n], 4);
    EXPECT(st == CUBLAS_STATUS_SUCCESS && e < 1e-6 && gaps == 0,
           "SgemmStridedBatched: status %d rel err %.3g gaps changed %d", (int)st, e, gaps);
    memcpy(C, R, (size_t)sc * batch * 4); /* Ex form from the same start: */
    for (int i = 0; i < batch; i++)
        naive(1, 0, m, n, k, alpha, A + i * sa, k, B + i * sb, k, beta, R + i * sc, m);
    st = cublasGemmStridedBatchedEx(h, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &alpha, A, CUDA_R_32F,
                                    k, sa, B, CUDA_R_32F, k, sb, &beta, C, CUDA_R_32F, m, sc,
                                    batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    e = 0;
    for (int i = 0; i < batch; i++) {
        double ei = max_rel(C + i * sc, R + i * sc, m, n, m, &pad);
        if (ei > e) e = ei;
    }
    EXPECT(st == CUBLAS_STATUS_SUCCESS && e < 1e-6, "GemmStridedBatchedEx: rel err %.3g", e);
    free(A), free(B), free(C), free(R);
}

/* The tensor-core compute types round A and B: a 1x1x2 product whose inputs lose known bits,
 * and a random product equal to the naive loop on rounded inputs (and not the unrounded one). */
static void test_fast_compute(cublasHandle_t h) {
    float a[2] = {1.0f + 0x1p-11f + 0x1p-20f, 1.0f + 0x1p-8f}, b[2] = {1.0f, 1.0f};
    float one = 1.0f, zero = 0.0f, c;
    struct { cublasComputeType_t ct; float want; const char *name; } cases[] = {
        {CUBLAS_COMPUTE_32F, (1.0f + 0x1p-11f + 0x1p-20f) + (1.0f + 0x1p-8f), "32F"},
        {CUBLAS_COMPUTE_32F_FAST_TF32, (1.0f + 0x1p-10f) + (1.0f + 0x1p-8f), "FAST_TF32"},
        {CUBLAS_COMPUTE_32F_FAST_16BF, 1.0f + 1.0f, "FAST_16BF"},
    };
    for (int i = 0; i < 3; i++) {
        c = -7;
        cublasStatus_t st = cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 2, &one, a,
                                         CUDA_R_32F, 1, b, CUDA_R_32F, 2, &zero, &c, CUDA_R_32F,
                                         1, cases[i].ct, CUBLAS_GEMM_DEFAULT);
        EXPECT(st == CUBLAS_STATUS_SUCCESS && c == cases[i].want, "%s: %a, want %a",
               cases[i].name, (double)c, (double)cases[i].want);
    }
    /* the math mode TF32 makes plain cublasSgemm round as well */
    EXPECT(cublasSetMathMode(h, CUBLAS_TF32_TENSOR_OP_MATH) == CUBLAS_STATUS_SUCCESS, "math");
    c = -7;
    cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 2, &one, a, 1, b, 2, &zero, &c, 1);
    EXPECT(c == cases[1].want, "Sgemm under TF32 math: %a", (double)c);
    cublasSetMathMode(h, CUBLAS_DEFAULT_MATH);

    int m = 20, n = 30, k = 50;
    for (int bits = 7; bits <= 10; bits += 3) {
        float *A = frand((size_t)m * k), *B = frand((size_t)k * n), *C = malloc((size_t)m * n * 4);
        float *RA = malloc((size_t)m * k * 4), *RB = malloc((size_t)k * n * 4);
        float *R = malloc((size_t)m * n * 4), *U = malloc((size_t)m * n * 4);
        for (int i = 0; i < m * k; i++) RA[i] = cublas_host_round_mantissa(A[i], bits);
        for (int i = 0; i < k * n; i++) RB[i] = cublas_host_round_mantissa(B[i], bits);
        naive(0, 0, m, n, k, 1.0f, RA, m, RB, k, 0.0f, R, m);
        naive(0, 0, m, n, k, 1.0f, A, m, B, k, 0.0f, U, m);
        cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, A, CUDA_R_32F, m, B, CUDA_R_32F,
                     k, &zero, C, CUDA_R_32F, m,
                     bits == 7 ? CUBLAS_COMPUTE_32F_FAST_16BF : CUBLAS_COMPUTE_32F_FAST_TF32,
                     CUBLAS_GEMM_DEFAULT);
        int pad;
        double er = max_rel(C, R, m, n, m, &pad), eu = max_rel(C, U, m, n, m, &pad);
        EXPECT(er < 1e-6, "%d-bit GEMM vs the loop on rounded inputs: %.3g", bits, er);
        EXPECT(eu > 1e-5, "%d-bit GEMM equals the unrounded product (%.3g): no rounding done",
               bits, eu);
        printf("  %2d-bit inputs: rel err vs rounded-input loop %.2e, vs fp32 loop %.2e\n", bits,
               er, eu);
        free(A), free(B), free(C), free(RA), free(RB), free(R), free(U);
    }
}

/* cublasLtMatmul: D = epilogue(alpha op(A) op(B) + beta C) for every transpose pair, padded
 * leading dimensions, C apart from D (beta != 0) and in place (beta = 0), each epilogue; then
 * the stand-in's refusals (sizes that disagree, a bias epilogue without its pointer). */
static void test_lt(void) {
    cublasLtHandle_t lt = NULL;
    EXPECT(cublasLtCreate(&lt) == CUBLAS_STATUS_SUCCESS && lt, "cublasLtCreate");
    const int m = 9, n = 7, k = 5, ld_pad = 3;
    static const uint32_t epis[] = {CUBLASLT_EPILOGUE_DEFAULT, CUBLASLT_EPILOGUE_RELU,
                                    CUBLASLT_EPILOGUE_BIAS, CUBLASLT_EPILOGUE_RELU_BIAS};
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++)
            for (int e = 0; e < 4; e++)
                for (int inplace = 0; inplace < 2; inplace++) {
                    int ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
                    int lda = ar + ld_pad, ldb = br + ld_pad, ldc = m + ld_pad;
                    float *A = frand((size_t)lda * ac), *B = frand((size_t)ldb * bc);
                    float *C = frand((size_t)ldc * n), *bias = frand(m);
                    float *D = inplace ? C : frand((size_t)ldc * n);
                    float *R = malloc(sizeof(float) * ldc * n);
                    memcpy(R, C, sizeof(float) * ldc * n);
                    float alpha = 0.75f, beta = inplace ? 0.0f : -0.5f;
                    naive(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, R, ldc);
                    int relu = epis[e] & CUBLASLT_EPILOGUE_RELU, hasb = epis[e] & CUBLASLT_EPILOGUE_BIAS;
                    for (int j = 0; j < n; j++)
                        for (int i = 0; i < m; i++) {
                            float *r = &R[(size_t)j * ldc + i];
                            if (hasb) *r += bias[i];
                            if (relu && *r < 0) *r = 0;
                        }
                    if (!inplace) /* D's padding rows are not written: give R D's */
                        for (int j = 0; j < n; j++)
                            memcpy(&R[(size_t)j * ldc + m], &D[(size_t)j * ldc + m],
                                   sizeof(float) * ld_pad);
                    cublasLtMatmulDesc_t d;
                    cublasLtMatrixLayout_t la, lb, lc;
                    int32_t opa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, opb = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
                    const float *bp = bias;
                    int ok = cublasLtMatmulDescCreate(&d, CUBLAS_COMPUTE_32F, CUDA_R_32F) == 0 &&
                             cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSA, &opa, sizeof opa) == 0 &&
                             cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof opb) == 0 &&
                             cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_EPILOGUE, &epis[e], sizeof epis[e]) == 0 &&
                             cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bp, sizeof bp) == 0 &&
                             cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, ar, ac, lda) == 0 &&
                             cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, br, bc, ldb) == 0 &&
                             cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, m, n, ldc) == 0;
                    EXPECT(ok, "cuBLASLt descriptors (ta=%d tb=%d epilogue %u)", ta, tb, epis[e]);
                    EXPECT(cublasLtMatmul(lt, d, &alpha, A, la, B, lb, &beta, C, lc, D, lc, NULL,
                                          NULL, 0, 0) == CUBLAS_STATUS_SUCCESS,
                           "cublasLtMatmul ta=%d tb=%d epilogue %u", ta, tb, epis[e]);
                    int pad = 0;
                    double err = max_rel(D, R, m, n, ldc, &pad);
                    EXPECT(err < 1e-6 && !pad,
                           "cublasLtMatmul ta=%d tb=%d epilogue %u inplace=%d: rel err %.3g, "
                           "padding changed %d", ta, tb, epis[e], inplace, err, pad);
                    if (ta == 1 && tb == 0 && e == 3 && !inplace) {
                        /* refusals: k disagreeing between A and B; a bias epilogue, no bias */
                        cublasLtMatrixLayout_t lbad;
                        cublasLtMatrixLayoutCreate(&lbad, CUDA_R_32F, k + 1, n, ldb);
                        EXPECT(cublasLtMatmul(lt, d, &alpha, A, la, B, lbad, &beta, C, lc, D, lc,
                                              NULL, NULL, 0, 0) == CUBLAS_STATUS_INVALID_VALUE,
                               "cublasLtMatmul accepted op(B) with the wrong k");
                        cublasLtMatrixLayoutDestroy(lbad);
                        const float *nob = NULL;
                        cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &nob,
                                                       sizeof nob);
                        EXPECT(cublasLtMatmul(lt, d, &alpha, A, la, B, lb, &beta, C, lc, D, lc,
                                              NULL, NULL, 0, 0) == CUBLAS_STATUS_INVALID_VALUE,
                               "cublasLtMatmul accepted a bias epilogue without a bias");
                        EXPECT(cublasLtMatrixLayoutCreate(&lbad, CUDA_R_32F, 4, 2, 3) ==
                                   CUBLAS_STATUS_INVALID_VALUE,
                               "cublasLtMatrixLayoutCreate accepted ld < rows");
                    }
                    cublasLtMatmulDescDestroy(d);
                    cublasLtMatrixLayoutDestroy(la), cublasLtMatrixLayoutDestroy(lb);
                    cublasLtMatrixLayoutDestroy(lc);
                    free(A), free(B), free(C), free(bias), free(R);
                    if (!inplace) free(D);
                }
    EXPECT(cublasLtDestroy(lt) == CUBLAS_STATUS_SUCCESS, "cublasLtDestroy");
}

int main(void) {
    test_runtime();
    test_rounding();
    cublasHandle_t h = NULL;
    EXPECT(cublasCreate(&h) == CUBLAS_STATUS_SUCCESS && h, "cublasCreate");
    EXPECT(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_HOST) == CUBLAS_STATUS_SUCCESS, "ptr");
    test_gemm(h);
    test_batched(h);
    test_fast_compute(h);
    test_lt();
    EXPECT(cublasDestroy(h) == CUBLAS_STATUS_SUCCESS, "cublasDestroy");
    return test_report("test_cuda_host");
}
