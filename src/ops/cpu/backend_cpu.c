/* backend_cpu.c — the CPU backend table: memory, dense algebra (OpenBLAS cblas_sgemm) and the
 * small element-wise ops. The reference backend (DESIGN.md §2). */
#include <cblas.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "ops/cpu/cpu_internal.h"

static void *cpu_alloc(size_t bytes) {
    void *p = NULL;
    size_t n = (bytes + 63) / 64 * 64;
    CHECK(posix_memalign(&p, 64, n ? n : 64) == 0, "out of host memory");
    memset(p, 0, n);
    return p;
}
static void cpu_free(void *p) { free(p); }
static void cpu_copy(void *dst, const void *src, size_t bytes) {
    if (bytes) memmove(dst, src, bytes);
}
static void cpu_zero(void *p, size_t bytes) {
    if (bytes) memset(p, 0, bytes);
}
static void cpu_sync(void) {}

void cpu_matmul(float *C, const float *A, const float *B, int M, int Nc, int K, int transA,
                int transB, float alpha, float beta) {
    if (M == 0 || Nc == 0) return;
    int lda = transA ? M : K, ldb = transB ? K : Nc;
    cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
                transB ? CblasTrans : CblasNoTrans, M, Nc, K, alpha, A, lda, B, ldb, beta, C, Nc);
}

void cpu_bias_forward(float *out, const float *bias, int N, int C) {
#pragma omp parallel for if ((long)N * C > 65536)
    for (int n = 0; n < N; n++) {
        float *o = out + (size_t)n * C;
#pragma omp simd
        for (int c = 0; c < C; c++) o[c] += bias[c];
    }
}

void cpu_bias_backward(float *dbias, const float *dout, int N, int C) {
    /* out = inp + bias (broadcast over N rows)  →  dbias += doutᵀ · 1 */
    /* a vector of ones, grown on demand and kept (no allocation once the largest N was seen) */
    static float *ones = NULL;
    static int nones = 0;
    if (N <= 0) return;
    if (N > nones) {
        free(ones);
        ones = xmalloc(sizeof(float) * N);
        for (int n = 0; n < N; n++) ones[n] = 1.0f;
        nones = N;
    }
    cblas_sgemv(CblasRowMajor, CblasTrans, N, C, 1.0f, dout, C, ones, 1, 1.0f, dbias, 1);
}

void cpu_axpy(float *y, float a, const float *x, size_t n) {
#pragma omp parallel for simd if (n > 262144)
    for (size_t i = 0; i < n; i++) y[i] += a * x[i];
}

void cpu_scale(float *x, float a, size_t n) {
#pragma omp parallel for simd if (n > 262144)
    for (size_t i = 0; i < n; i++) x[i] *= a;
}

double cpu_sumsq(const float *x, size_t n) {
    double s = 0;
#pragma omp parallel for simd reduction(+ : s) if (n > 262144)
    for (size_t i = 0; i < n; i++) s += (double)x[i] * x[i];
    return s;
}

int cpu_all_finite(const float *x, size_t n) {
    int ok = 1;
#pragma omp parallel for simd reduction(& : ok) if (n > 262144)
    for (size_t i = 0; i < n; i++) ok &= isfinite(x[i]) ? 1 : 0;
    return ok;
}

void cpu_concat2_forward(float *out, const float *a, const float *b, int N, int Ca, int Cb) {
    for (int n = 0; n < N; n++) {
        memcpy(out + (size_t)n * (Ca + Cb), a + (size_t)n * Ca, sizeof(float) * Ca);
        memcpy(out + (size_t)n * (Ca + Cb) + Ca, b + (size_t)n * Cb, sizeof(float) * Cb);
    }
}

void cpu_concat2_backward(float *da, float *db, const float *dout, int N, int Ca, int Cb) {
    for (int n = 0; n < N; n++) {
        const float *row = dout + (size_t)n * (Ca + Cb);
        if (da)
            for (int c = 0; c < Ca; c++) da[(size_t)n * Ca + c] += row[c];
        if (db)
            for (int c = 0; c < Cb; c++) db[(size_t)n * Cb + c] += row[Ca + c];
    }
}

void cpu_transpose01_forward(float *out, const float *inp, int D0, int D1, int C) {
    for (int i = 0; i < D0; i++)
        for (int j = 0; j < D1; j++)
            memcpy(out + ((size_t)j * D0 + i) * C, inp + ((size_t)i * D1 + j) * C,
                   sizeof(float) * C);
}

void cpu_transpose01_backward(float *dinp, const float *dout, int D0, int D1, int C) {
    for (int i = 0; i < D0; i++)
        for (int j = 0; j < D1; j++) {
            float *d = dinp + ((size_t)i * D1 + j) * C;
            const float *s = dout + ((size_t)j * D0 + i) * C;
            for (int c = 0; c < C; c++) d[c] += s[c];
        }
}

static const Backend CPU_BACKEND = {
    .name = "cpu",
    .alloc = cpu_alloc,
    .free = cpu_free,
    .upload = cpu_copy,
    .download = cpu_copy,
    .copy = cpu_copy,
    .zero = cpu_zero,
    .synchronize = cpu_sync,
    .matmul = cpu_matmul,
    .bias_forward = cpu_bias_forward,
    .bias_backward = cpu_bias_backward,
    .axpy = cpu_axpy,
    .scale = cpu_scale,
    .sumsq = cpu_sumsq,
    .all_finite = cpu_all_finite,
    .concat2_forward = cpu_concat2_forward,
    .concat2_backward = cpu_concat2_backward,
    .transpose01_forward = cpu_transpose01_forward,
    .transpose01_backward = cpu_transpose01_backward,
    .tanh_forward = cpu_tanh_forward,
    .tanh_backward = cpu_tanh_backward,
    .dropout_forward = cpu_dropout_forward,
    .dropout_backward = cpu_dropout_backward,
    .embedding_forward = cpu_embedding_forward,
    .embedding_backward = cpu_embedding_backward,
    .lstm_cell_forward = cpu_lstm_cell_forward,
    .lstm_cell_backward = cpu_lstm_cell_backward,
    .gru_cell_forward = cpu_gru_cell_forward,
    .gru_cell_backward = cpu_gru_cell_backward,
    .additive_attn_forward = cpu_additive_attn_forward,
    .additive_attn_backward = cpu_additive_attn_backward,
    .gather_rows = cpu_gather_rows,
    .gather_rows_strided = cpu_gather_rows_strided,
    .layernorm_forward = cpu_layernorm_forward,
    .layernorm_backward = cpu_layernorm_backward,
    .bias_relu_dropout_forward = cpu_bias_relu_dropout_forward,
    .relu_dropout_backward = cpu_relu_dropout_backward,
    .permute0213_forward = cpu_permute0213_forward,
    .permute0213_backward = cpu_permute0213_backward,
    .write_step = cpu_write_step,
    .linear_attn_step = cpu_linear_attn_step,
    .flash_attn_forward = cpu_flash_attn_forward,
    .flash_attn_backward = cpu_flash_attn_backward,
    .flash_attn_workspace = cpu_flash_attn_workspace,
    .linear_attn_forward = cpu_linear_attn_forward,
    .linear_attn_backward = cpu_linear_attn_backward,
    .linear_attn_workspace = cpu_linear_attn_workspace,
    .efficient_attn_forward = cpu_efficient_attn_forward,
    .efficient_attn_backward = cpu_efficient_attn_backward,
    .efficient_attn_workspace = cpu_efficient_attn_workspace,
    .attn_forward = cpu_attn_forward,
    .attn_backward = cpu_attn_backward,
    .attn_workspace = cpu_attn_workspace,
    .xent_forward_backward = cpu_xent_forward_backward,
    .log_softmax = cpu_log_softmax,
    .argmax = cpu_argmax,
    .adam_update = cpu_adam_update,
};

const Backend *backend_cpu(void) { return &CPU_BACKEND; }

void backend_cpu_prefer_fast_blas(char **argv) {
    if (getenv("OPENBLAS_CORETYPE") || getenv("TRAINER_NO_REEXEC")) return;
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx512f")) return;
    setenv("OPENBLAS_CORETYPE", "SkylakeX", 1);
    setenv("TRAINER_NO_REEXEC", "1", 1);
    execv("/proc/self/exe", argv);
    /* exec failed: go on with the default kernels */
}
