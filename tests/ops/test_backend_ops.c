/* test_backend_ops.c — every op of the backend table (src/ops/ops.h), one case per OpKind
 * (docs/design.md §3, §11):
 *
 *   test_backend_ops                   every op of the CPU backend (backend_cpu()) against a plain
 *                                      reference written here in double precision, every backward
 *                                      against central finite differences, and the accumulate
 *                                      convention of ops.h; then OpKind/supports_op/
 *                                      backend_require_ops.
 *   test_backend_ops --backend cuda    every op the CUDA backend implements against the CPU on
 *                                      the same random inputs; exit 77 (skipped) when
 *                                      backend_cuda() returns NULL (no CUDA build or no device),
 *                                      but in the emulated build, where the backend always
 *                                      exists, a backend that does not start is a failure.
 *   ... --ops NAME[,NAME...]           only the cases of the named OpKinds (op_name's names; a
 *                                      case that serves several OpKinds runs when any of them is
 *                                      named), without the memory and table-wide checks: for
 *                                      running one op family quickly (scripts/mutate.sh). An
 *                                      unknown name is a usage error (exit 2).
 *
 * An op family is a row of the harness (op_harness.h: its buffers with their roles, value ranges
 * and tolerances, its calls, and the checks the harness makes of it on every backend: inputs
 * unchanged, every written buffer against the CPU's, the CPU's reference, gradients against
 * finite differences and the accumulate convention, and its hooks' checks). The rows of the basic
 * ops are here, in three tables run in order (a row's index seeds its inputs): ROWS (products,
 * element-wise, shape, dropout, normalisation, embedding, cells), ROWS_ATTENTION (the attention
 * ops and head_rmsnorm: rows_attention.c) and ROWS_LOSS (adam, xent, log_softmax, argmax, the
 * reductions). Checks a row does not express stay special functions of the case table (CASES):
 * the memory entries (on each backend; op_harness.c), matmul next to held ranges,
 * train.precision, and the attention ops' CPU cases (attention_*.c; their rows check another
 * backend against the CPU, and the hooks' checks on both). The program fails when an OpKind has
 * no case. An op the CUDA backend leaves NULL is listed and skipped; an op it has but whose case
 * has no cross-backend check fails. Tolerances of the CPU's own checks are in tests/optest.h.
 */

#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention_cases.h"
#include "op_harness.h"
#include "ops/cpu/cpu.h"
#include "ops/cuda/cuda.h"
#include "ops/ops.h"
#include "optest.h"
#include "core/rng.h"
#include "testutil.h"

/* ========================================================================================== */
/* the special checks (CASES' functions)                                                       */

/* matmul's output may lie right next to a range held by matmul_hold (ops.h forbids only an
 * overlap): C = buf[10..25) between held buf[0..10) and buf[25..35) is accepted and computed. */
static void test_matmul_next_to_held(void) {
    Stat st;
    stat_begin(&st, "matmul next to held ranges");
    float *buf = frand(35, -1, 1), *A = frand(3 * 4, -1, 1), *B = frand(4 * 5, -1, 1);
    cpu->matmul_hold(buf, 10);
    cpu->matmul_keep(buf + 25, 10);
    cpu->matmul(buf + 10, A, B, 3, 5, 4, 0, 0, 1.0f, 0.0f);
    cpu->matmul_hold(NULL, 0);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 5; j++) {
            double s = 0;
            for (int k = 0; k < 4; k++) s += (double)A[i * 4 + k] * B[k * 5 + j];
            stat_add(&st, buf[10 + i * 5 + j], s, FWD_ATOL, FWD_RTOL, "C", i * 5 + j);
        }
    stat_end(&st);
    free(buf), free(A), free(B);
}

/* x rounded to bfloat16 as the backends round it (backend_cpu_round_bf16), widened back. */
static double bf16_value(float x) {
    uint16_t h;
    backend_cpu_round_bf16(&h, &x, 1);
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Precision bf16 against the double-precision product of the bf16-rounded inputs, which it must
 * equal to within fp32 accumulation (1e-5 relative at K = 71): TF32's rounding (what cuBLAS's
 * CUBLAS_COMPUTE_32F_FAST_16BF gave on an H100, about 2e-3 away here) or none fails. bias = 0:
 * matmul, C[M,Nc] = op(A) op(B) + beta C for each transA, transB and beta 0 and 1; bias = 1:
 * matmul_bias_forward, out[M,Nc] = inp[M,K] w[Nc,K]ᵀ + b (+ ReLU). Each twice: with the default
 * staging buffer, and with one of 500 elements a half (blocks of 7 rows and 7 columns at K = 71:
 * ops/cuda/cuda.h backend_cuda_set_bf16_stage), which must give the same. Its inputs come from a
 * stream of their own, so the checks after it draw what they drew before it existed. */
static void bf16_against_reference(int bias) {
    Rng outer = optest_rng;
    rng_seed(&optest_rng, 20261127, 16 + bias);
    int M = 37, Nc = 53, K = 71;
    size_t na = (size_t)M * K, nb = (size_t)K * Nc, nc = (size_t)M * Nc;
    float *ha = frand_pm1(na), *hb = frand_pm1(nb), *hc = frand_pm1(nc), *hbias = frand_pm1(Nc);
    float *ref = malloc(nc * sizeof *ref);
    float *ga = to_backend(gpu, ha, na), *gb = to_backend(gpu, hb, nb);
    float *gbias = to_backend(gpu, hbias, (size_t)Nc), *gc = gpu->alloc(nc * sizeof(float));
    for (int stage = 0; stage < 2; stage++) {
        size_t before = stage ? backend_cuda_set_bf16_stage(500) : 0;
        for (int v = 0; v < 8; v++) { /* matmul: transA, transB, beta; bias: relu */
            int ta = bias ? 0 : v & 1, tb = bias ? 1 : (v >> 1) & 1, relu = bias && (v & 1);
            float beta = bias ? 0.0f : (float)(v >> 2);
            if (bias && v > 1) break;
            for (int i = 0; i < M; i++)
                for (int j = 0; j < Nc; j++) {
                    double sum = bias ? hbias[j] : beta * (double)hc[(size_t)i * Nc + j];
                    for (int k = 0; k < K; k++)
                        sum += bf16_value(ha[ta ? (size_t)k * M + i : (size_t)i * K + k]) *
                               bf16_value(hb[tb ? (size_t)j * K + k : (size_t)k * Nc + j]);
                    ref[(size_t)i * Nc + j] = (float)(relu && sum < 0.0 ? 0.0 : sum);
                }
            gpu->upload(gc, hc, nc * sizeof(float));
            backend_cuda_set_precision(BACKEND_PRECISION_BF16);
            if (bias)
                gpu->matmul_bias_forward(gc, ga, gb, gbias, M, Nc, K, relu);
            else
                gpu->matmul(gc, ga, gb, M, Nc, K, ta, tb, 1.0f, beta);
            backend_cuda_set_precision(BACKEND_PRECISION_FP32);
            float *g = from_backend(gpu, gc, nc);
            char what[128];
            if (bias)
                snprintf(what, sizeof what, "matmul_bias_forward at bf16 relu=%d%s", relu,
                         stage ? " (500-element staging)" : "");
            else
                snprintf(what, sizeof what, "matmul at bf16 transA=%d transB=%d beta=%g%s", ta,
                         tb, (double)beta, stage ? " (500-element staging)" : "");
            double e = test_rel_err(g, ref, nc, NULL);
            EXPECT(e < 1e-5, "%s: relative error %.3g against the product of the bf16-rounded "
                   "inputs, want < 1e-05", what, e);
            if (v == 0)
                printf("  %s: relative error %.2e against the bf16-rounded inputs' product\n",
                       what, e);
            free(g);
        }
        if (stage) backend_cuda_set_bf16_stage(before);
    }
    gpu->free(ga), gpu->free(gb), gpu->free(gbias), gpu->free(gc);
    free(ha), free(hb), free(hc), free(hbias), free(ref);
    optest_rng = outer;
}

/* train.precision: tf32 and bf16 round the inputs (10 and 7 mantissa bits), so the product
 * moves away from the cpu's fp32 one by about 2^-11 and 2^-8 relative, and no further (matmul at
 * both; matmul_bias_forward, a dense layer's shape with ReLU, at tf32); and at bf16 the product
 * of the bf16-rounded inputs (bf16_against_reference). */
static void vs_cpu_precision(void) {
    if (!HAVE(matmul) || !HAVE(matmul_bias_forward)) return;
    static const struct { int prec, bias; double lo, hi; const char *name; } runs[3] = {
        {BACKEND_PRECISION_TF32, 0, 1e-6, 3e-3, "matmul at precision tf32"},
        {BACKEND_PRECISION_BF16, 0, 1e-5, 2e-2, "matmul at precision bf16"},
        {BACKEND_PRECISION_TF32, 1, 1e-6, 3e-3, "matmul_bias_forward at precision tf32"}};
    int M = 37, Nc = 53, K = 71;
    size_t n[3] = {(size_t)M * K, (size_t)K * Nc, (size_t)Nc}, nc = (size_t)M * Nc;
    float *h[3], *g[3], *c[3], *gc = gpu->alloc(nc * sizeof(float)), *cc = cpu->alloc(nc * sizeof(float));
    for (int i = 0; i < 3; i++) h[i] = frand_pm1(n[i]), g[i] = to_backend(gpu, h[i], n[i]), c[i] = to_backend(cpu, h[i], n[i]);
    for (int k = 0; k < 3; k++) { /* matmul_bias_forward: w[Nc, K] */
        backend_cuda_set_precision(runs[k].prec);
        if (runs[k].bias)
            cpu->matmul_bias_forward(cc, c[0], c[1], c[2], M, Nc, K, 1), gpu->matmul_bias_forward(gc, g[0], g[1], g[2], M, Nc, K, 1);
        else
            cpu->matmul(cc, c[0], c[1], M, Nc, K, 0, 0, 1.0f, 0.0f), gpu->matmul(gc, g[0], g[1], M, Nc, K, 0, 0, 1.0f, 0.0f);
        backend_cuda_set_precision(BACKEND_PRECISION_FP32);
        float *gh = from_backend(gpu, gc, nc), *ch = from_backend(cpu, cc, nc);
        relabel_last_output(runs[k].name);
        double e = test_rel_err(gh, ch, nc, NULL);
        EXPECT(e > runs[k].lo && e < runs[k].hi, "%s: relative error %.3g against the cpu's fp32, want "
               "(%.0e, %.0e)", runs[k].name, e, runs[k].lo, runs[k].hi);
        printf("  %s: relative error %.2e against the cpu's fp32\n", runs[k].name, e);
        free(gh), free(ch);
    }
    for (int i = 0; i < 3; i++) free(h[i]), gpu->free(g[i]), cpu->free(c[i]);
    gpu->free(gc), cpu->free(cc);
    bf16_against_reference(0);
    bf16_against_reference(1);
}

/* ========================================================================================== */
/* the rows of the basic ops                                                                  */

static const float BETAS[3] = {0.0f, -0.3f, 1.0f};
static void mm_fwd(const Backend *be, void **p, const int *d) {
    be->matmul(F(2), F(0), F(1), d[0], d[1], d[2], d[3], d[4], 0.75f, BETAS[d[5]]);
}
static unsigned mm_ref(double **r, void **h, const int *d) {
    int M = d[0], N = d[1], K = d[2], ta = d[3], tb = d[4];
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = 0;
            for (int k = 0; k < K; k++)
                s += (double)HF(0)[ta ? k * M + i : i * K + k] * HF(1)[tb ? j * K + k : k * N + j];
            r[2][i * N + j] = 0.75 * s + BETAS[d[5]] * r[2][i * N + j];
        }
    return 1u << 2;
}
static const int mm_sh[][MAXD] = {{3, 5, 4, -2, -2, -3}, {3, 1, 4, -2, -2, -3},
                                  {37, 53, 71, -2, -2, -3}, {1, 29, 130, -2, -2, -3},
                                  {64, 1, 17, -2, -2, -3},  {5, 300, 1, -2, -2, -3}};

/* matmul_bias_forward: out = inp wᵀ + b (+ ReLU), every pointer one float past an allocation;
 * on the cpu bit for bit the unfused ops it replaces. */
static void mbf_fwd(const Backend *be, void **p, const int *d) {
    be->matmul_bias_forward(F(3) + 1, F(0) + 1, F(1) + 1, F(2) + 1, d[0], d[1], d[2], d[3]);
}
static unsigned mbf_ref(double **r, void **h, const int *d) {
    int N = d[0], C = d[1], K = d[2];
    for (int n = 0; n < N; n++)
        for (int c = 0; c < C; c++) {
            double s = HF(2)[1 + c];
            for (int k = 0; k < K; k++) s += (double)HF(0)[1 + n * K + k] * HF(1)[1 + c * K + k];
            r[3][1 + n * C + c] = d[3] && s < 0 ? 0 : s;
        }
    return 1u << 3;
}
static void mbf_extra(const Backend *be, void **p, void **h, const int *d, Stat *st) {
    if (be != cpu) return;
    int N = d[0], C = d[1], K = d[2];
    float *ref = fnew((size_t)N * C), *out = from_backend(be, F(3) + 1, (size_t)N * C);
    be->matmul(ref, F(0) + 1, F(1) + 1, N, C, K, 0, 1, 1.0f, 0.0f);
    if (d[3])
        be->bias_relu_dropout_forward(ref, ref, F(2) + 1, 0.0f, 0, N, C);
    else
        be->bias_forward(ref, F(2) + 1, N, C);
    stat_same(st, "the unfused ops", out, ref, (size_t)N * C);
    free(ref), free(out);
    (void)h;
}
static const int mbf_sh[][MAXD] = {/* N, C, K, relu, then N·K+1, C·K+1, C+1, N·C+1 */
    {6, 5, 7, -2, 43, 36, 6, 31},         {37, 53, 71, -2, 2628, 3764, 54, 1962},
    {1, 29, 130, -2, 131, 3771, 30, 30},  {64, 1, 17, -2, 1089, 18, 2, 65},
    {5, 300, 1, -2, 6, 301, 301, 1501}};

/* bias: out += bias (in place), dbias += column sums of dout; rows past bias.c's 65536 (two
 * sgemv calls), within 1e-6 of Σ|dout| on the cpu */
static void bias_fwd(const Backend *be, void **p, const int *d) { be->bias_forward(F(1), F(0), d[0], d[1]); }
static void bias_bwd(const Backend *be, void **p, const int *d) { be->bias_backward(F(3), F(2), d[0], d[1]); }
static unsigned bias_ref(double **r, void **h, const int *d) {
    for (int n = 0; n < d[0]; n++)
        for (int c = 0; c < d[1]; c++) {
            r[1][(size_t)n * d[1] + c] += HF(0)[c];
            r[3][c] += HF(2)[(size_t)n * d[1] + c];
        }
    return 1u << 1 | 1u << 3;
}
static double bias_floor(int i, void **h, const int *d) {
    if ((i & 0xff) != 3 || !(i & 0x100)) return 0;
    double m = 0;
    for (int c = 0; c < d[1]; c++) {
        double s = 0;
        for (int n = 0; n < d[0]; n++) s += fabs(HF(2)[(size_t)n * d[1] + c]);
        m = fmax(m, s * 1e-6 / 1e-5);
    }
    return m;
}
static const int bias_sh[][MAXD] = {{7, 6}, {129, 67}, {1, 5}, {1000, 1}, {3, 1031},
                                    {1, 3}, {65537, 3}, {70001, 3}, {4099, 257}};

/* axpy (y += a x; against the size of its two terms, which may cancel) and scale */
static void axpy_fwd(const Backend *be, void **p, const int *d) { be->axpy(F(1), -1.37f, F(0), (size_t)d[0]); }
static unsigned axpy_ref(double **r, void **h, const int *d) {
    for (int i = 0; i < d[0]; i++) r[1][i] += -1.37 * HF(0)[i];
    return 2;
}
static double axpy_floor(int i, void **h, const int *d) {
    double m = 0;
    for (int k = 0; k < d[0] && (i & 0xff) == 1; k++) m = fmax(m, fabs(HF(1)[k]) + 1.37 * fabs(HF(0)[k]));
    return m;
}
static void scale_fwd(const Backend *be, void **p, const int *d) { be->scale(F(0), 1.7f, (size_t)d[0]); }
static unsigned scale_ref(double **r, void **h, const int *d) {
    (void)h;
    for (int i = 0; i < d[0]; i++) r[0][i] *= 1.7f;
    return 1;
}
static const int n_sh[][MAXD] = {{1}, {255}, {1001}, {100003}, {300001}, {3000017}};

/* tanh, with 0 and ±20 planted; tanh_backward onto a prefill (against its terms' size) */
static void tanh_fwd(const Backend *be, void **p, const int *d) { be->tanh_forward(F(1), F(0), (size_t)d[0]); }
static void tanh_bwd(const Backend *be, void **p, const int *d) { be->tanh_backward(F(3), F(2), F(1), (size_t)d[0]); }
static void tanh_prep(void **h, const int *d) {
    for (int i = 0; i < 3 && i < d[0]; i++) HF(0)[i] = i == 0 ? 0.0f : i == 1 ? 20.0f : -20.0f;
}
static unsigned tanh_ref(double **r, void **h, const int *d) {
    for (int i = 0; i < d[0]; i++) r[1][i] = tanh((double)HF(0)[i]);
    return 2;
}
static double tanh_floor(int i, void **h, const int *d) {
    double m = 0;
    for (int k = 0; k < d[0] && i == 3; k++) m = fmax(m, fabs(HF(3)[k]) + fabs(HF(2)[k]));
    return m;
}
static const int tanh_sh[][MAXD] = {{53}, {1}, {257}, {100003}, {EW_GRID + 7}};

/* concat2, the backward into both halves, or one with the other NULL (w = 1: db NULL, 2: da) */
static void cat_fwd(const Backend *be, void **p, const int *d) {
    be->concat2_forward(F(2), F(0), F(1), d[0], d[1], d[2]);
}
static void cat_bwd(const Backend *be, void **p, const int *d) {
    be->concat2_backward(d[4] == 2 ? NULL : F(4), d[4] == 1 ? NULL : F(5), F(3), d[0], d[1], d[2]);
}
static unsigned cat_ref(double **r, void **h, const int *d) {
    int N = d[0], A = d[1], B = d[2], C = A + B;
    for (int n = 0; n < N; n++)
        for (int c = 0; c < C; c++) {
            double g = HF(3)[n * C + c];
            r[2][n * C + c] = c < A ? HF(0)[n * A + c] : HF(1)[n * B + c - A];
            if (c < A && d[4] != 2) r[4][n * A + c] = (float)(HF(4)[n * A + c] + g);
            if (c >= A && d[4] != 1) r[5][n * B + c - A] = (float)(HF(5)[n * B + c - A] + g);
        }
    return 1u << 2 | 1u << 4 | 1u << 5;
}
static int cat_fd(const int *d) { return d[4] == 0 && (size_t)d[0] * d[3] <= 100; }
static const int cat_sh[][MAXD] = {{3, 4, 5, 9, -3}, {1, 1, 1, 2, -3}, {37, 130, 3, 133, -3},
                                   {2, 1, 257, 258, -3}, {1021, 500, 531, 1031, 0}};

/* transpose01 (C = 1: 32 x 32 tiles, 37 x 70 two tile rows and three columns, partial) */
static void tr_fwd(const Backend *be, void **p, const int *d) { be->transpose01_forward(F(1), F(0), d[0], d[1], d[2]); }
static void tr_bwd(const Backend *be, void **p, const int *d) { be->transpose01_backward(F(3), F(2), d[0], d[1], d[2]); }
static unsigned tr_ref(double **r, void **h, const int *d) {
    int D0 = d[0], D1 = d[1], C = d[2];
    for (int i = 0; i < D0; i++)
        for (int j = 0; j < D1; j++)
            for (int c = 0; c < C; c++) {
                r[1][(j * D0 + i) * C + c] = HF(0)[(i * D1 + j) * C + c];
                r[3][(i * D1 + j) * C + c] = (float)(HF(3)[(i * D1 + j) * C + c] + HF(2)[(j * D0 + i) * C + c]);
            }
    return 2 | 8;
}
static const int tr_sh[][MAXD] = {{3, 4, 5}, {1, 7, 1}, {13, 9, 33}, {37, 70, 1}, {1021, 33, 32}};

/* permute0213: out[a,j,i,c] = inp[a,i,j,c]; swapped back, the identity */
static void pm_fwd(const Backend *be, void **p, const int *d) { be->permute0213_forward(F(1), F(0), d[0], d[1], d[2], d[3]); }
static void pm_bwd(const Backend *be, void **p, const int *d) { be->permute0213_backward(F(3), F(2), d[0], d[1], d[2], d[3]); }
static unsigned pm_ref(double **r, void **h, const int *d) {
    int A = d[0], D0 = d[1], D1 = d[2], C = d[3];
    for (int a = 0; a < A; a++)
        for (int i = 0; i < D0; i++)
            for (int j = 0; j < D1; j++)
                for (int c = 0; c < C; c++) {
                    size_t o = (((size_t)a * D1 + j) * D0 + i) * C + c, x = (((size_t)a * D0 + i) * D1 + j) * C + c;
                    r[1][o] = HF(0)[x];
                    r[3][x] = (float)(HF(3)[x] + HF(2)[o]);
                }
    return 2 | 8;
}
static void pm_extra(const Backend *be, void **p, void **h, const int *d, Stat *st) {
    size_t n = (size_t)d[0] * d[1] * d[2] * d[3];
    float *back = be->alloc(n * 4);
    be->permute0213_forward(back, F(1), d[0], d[2], d[1], d[3]);
    float *b = from_backend(be, back, n);
    stat_same(st, "permuted back", b, HF(0), n);
    free(b), be->free(back);
}
static const int pm_sh[][MAXD] = {{2, 3, 4, 5}, {3, 4, 1, 6}, {1, 1, 1, 1}, {3, 33, 8, 16},
                                  {3, 33, 8, 96}, {2, 33, 16, 1000}};

/* write_step: cache[n,t,:] = x[n,:] for n < N; the rest of the cache (a row N more) untouched */
static void ws_fwd(const Backend *be, void **p, const int *d) {
    be->write_step(F(0), F(1), d[0], d[1], d[3] == 0 ? 0 : d[3] == 1 ? d[1] / 2 : d[1] - 1, d[2]);
}
static unsigned ws_ref(double **r, void **h, const int *d) {
    int N = d[0], T = d[1], C = d[2], t = d[3] == 0 ? 0 : d[3] == 1 ? T / 2 : T - 1;
    for (int n = 0; n < N; n++)
        for (int c = 0; c < C; c++) r[0][((size_t)n * T + t) * C + c] = HF(1)[n * C + c];
    return 1;
}
static const int ws_sh[][MAXD] = {{3, 6, 5, -3, 4}, {1, 1, 1, -3, 2}, {7, 4, 65, -3, 8}, {1031, 2, 1021, -3, 1032}};

/* gather_rows (D = stride) and gather_rows_strided: repeated, out-of-order indices; dst has a
 * row more than written and the tail of each row past D: untouched; n = 0 (m = 1) writes nothing */
static void ga_fwd(const Backend *be, void **p, const int *d) {
    int n = d[4] ? 0 : d[1];
    if (d[5])
        be->gather_rows(F(2), F(0), I(1), n, d[2]);
    else
        be->gather_rows_strided(F(2), F(0), I(1), n, d[2], d[3]);
}
static unsigned ga_ref(double **r, void **h, const int *d) {
    int n = d[4] ? 0 : d[1], D = d[2], S = d[3];
    for (int i = 0; i < n; i++)
        for (int c = 0; c < D; c++) r[2][i * S + c] = HF(0)[HI(1)[i] * S + c];
    return 4;
}
static const int ga_sh[][MAXD] = {{4, 7, 5, 5, -2, -2, 8},   {4, 6, 5, 7, -2, 0, 7},      {4, 6, 7, 7, -2, -2, 7},
                                  {4, 6, 1, 7, -2, 0, 7},    {1, 1, 1, 1, -2, -2, 2},     {50, 100, 37, 37, -2, -2, 101},
                                  {50, 100, 60, 64, -2, 0, 101}, {9, 3, 300, 301, -2, 0, 4}, {1100, 1025, 1025, 1030, 0, 0, 1026}};

/* dropout: mask and out bit for bit the cpu's, p = 0 (out = inp and mask 1, exactly), 0.3, 0.5,
 * keys with the high bit set; e = 1, 2: keys whose element i draws u == p exactly (kept: u >= p),
 * found by search; dropout_backward onto a prefill (against the size of its terms) and onto zeros
 * (exactly). At n = 100000 the stream (dr_stream): the fraction kept 1 − p within 0.01; the
 * same key the same mask and out, bit for bit, and a prefix of n the prefix of the mask (mask[i]
 * depends on (key, i) alone); key + 1 and the key with its high bit flipped another mask (they
 * disagree on more than 30 %: 2p(1 − p) ≥ 0.42 expected); no structure along i (mask[i] and
 * mask[i + lag] agree as p² + (1 − p)² within 0.02). */
static const float PS[3] = {0.0f, 0.3f, 0.5f};
static const uint64_t KEYS[3] = {0x1234567ull, 0x8000000000000abcull, 0xffffffffffffffffull};
static const struct { uint64_t key; size_t i; } DR_EDGE[3] = {{0, 0}, {2391, 2954}, {19341, 640}}; /* p = PS[e] */
static uint64_t dr_key(const int *d) { return d[2] ? DR_EDGE[d[2]].key : KEYS[(d[0] + d[1]) % 3]; }
static void dr_fwd(const Backend *be, void **p, const int *d) {
    be->dropout_forward(F(1), F(2), F(0), PS[d[1]], dr_key(d), (size_t)d[0]);
}
static void dr_bwd(const Backend *be, void **p, const int *d) { be->dropout_backward(F(4), F(3), F(2), (size_t)d[0]); }
static void dr_stream(const Backend *be, void **p, const float *m, const float *o, float pr, uint64_t key,
                      size_t n, Stat *st) {
    static const size_t lags[6] = {1, 2, 255, 1024, 4096, 65536};
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) kept += m[i] != 0.0f;
    stat_add(st, (double)kept / n, 1.0 - pr, 0.01, 0, "fraction kept", 0);
    for (int l = 0; l < 6; l++) {
        size_t agree = 0, len = n - lags[l];
        for (size_t i = 0; i < len; i++) agree += (m[i] == 0.0f) == (m[i + lags[l]] == 0.0f);
        stat_add(st, (double)agree / len, (double)pr * pr + (1.0 - pr) * (1.0 - pr), 0.02, 0, "lag agreement", (long)lags[l]);
    }
    const uint64_t keys[4] = {key, key, key + 1, key ^ 0x8000000000000000ull};
    const size_t len[4] = {n, 1000, n, n};
    float *o2 = be->alloc(n * 4), *m2 = be->alloc(n * 4);
    for (int k = 0; k < 4; k++) {
        be->dropout_forward(o2, m2, F(0), pr, keys[k], len[k]);
        float *a = from_backend(be, m2, len[k]), *b = from_backend(be, o2, len[k]);
        size_t differ = 0;
        for (size_t i = 0; i < len[k]; i++) differ += (a[i] == 0.0f) != (m[i] == 0.0f);
        if (k < 2)
            stat_true(st, memcmp(a, m, len[k] * 4) == 0 && memcmp(b, o, len[k] * 4) == 0, "the same key%s: "
                      "another mask or out", k ? ", a prefix" : "");
        else
            stat_true(st, differ > n * 0.3, "key %s: a mask that differs in only %zu places",
                      k == 2 ? "+ 1" : "with its high bit flipped", differ);
        free(a), free(b);
    }
    be->free(o2), be->free(m2);
}
static void dr_extra(const Backend *be, void **p, void **h, const int *d, Stat *st) {
    size_t n = (size_t)d[0], e = DR_EDGE[d[2]].i;
    float *m = from_backend(be, F(2), n), *o = from_backend(be, F(1), n), pr = PS[d[1]];
    double keep = 1.0 / (1.0 - pr);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += m[i] == 0.0f ? o[i] != 0.0f
                            : fabs(m[i] - keep) > 1e-6 * keep || fabs(o[i] - HF(0)[i] * keep) > 1e-6 * (1 + fabs(o[i]));
    for (size_t i = 0; i < n && pr == 0; i++) bad += o[i] != HF(0)[i] || m[i] != 1.0f;
    stat_true(st, bad == 0, "%zu mask values neither 0 nor 1/(1-p), or out not inp * mask (p = 0: exactly inp)", bad);
    if (d[2]) { /* u == p at element e: the case's draw, and the element kept */
        float u = (float)(rng_hash(dr_key(d), e) >> 8) * (1.0f / 16777216.0f);
        stat_true(st, u == pr, "the case's draw %.9g is not p %.9g", u, pr);
        stat_true(st, m[e] == 1.0f / (1.0f - pr), "element %zu, u == p, dropped (mask %g)", e, m[e]);
    }
    if (n >= 100000 && pr > 0) dr_stream(be, p, m, o, pr, dr_key(d), n, st);
    float *z = be->alloc(n * 4); /* the backward onto zeros: exactly dout · mask */
    be->dropout_backward(z, F(3), F(2), n);
    emit("dropout_backward onto zeros", z, n, 0, 0);
    free(m), free(o), be->free(z);
}
static double dr_floor(int i, void **h, const int *d) {
    double m = 0;
    for (int k = 0; k < d[0] && i == 4; k++) m = fmax(m, fabs(HF(4)[k]) + fabs(HF(3)[k]) / (1.0 - PS[d[1]]));
    return m;
}
static const int dr_sh[][MAXD] = {{41, -3, 0}, {1, -3, 0}, {255, -3, 0}, {70001, -3, 0}, {100000, -3, 0},
                                  {2955, 1, 1}, {641, 2, 2}, {EW_GRID + 9, 1, 0}};

/* bias_relu_dropout_forward: out = max(inp + bias, 0) · dropout_forward's mask of the
 * pre-activations, bit for bit, pre-activations planted at 0 and ±1e-30; in place the same;
 * relu_dropout_backward overwrites; f = 1: pre-activations at least 0.05 from the kink, for the
 * finite differences (of inp, and of bias through bias_backward) */
static void rd_fwd(const Backend *be, void **p, const int *d) {
    be->bias_relu_dropout_forward(F(2), F(0), F(1), PS[d[2]], KEYS[(d[0] + d[2]) % 3], d[0], d[1]);
}
static void rd_bwd(const Backend *be, void **p, const int *d) {
    be->relu_dropout_backward(F(4), F(3), F(2), PS[d[2]], (size_t)d[0] * d[1]);
    be->bias_backward(F(5), F(4), d[0], d[1]);
}
static void rd_prep(void **h, const int *d) {
    int C = d[1];
    size_t n = (size_t)d[0] * C;
    if (d[3]) { /* |inp| in [0.05, 3), bias 0 */
        for (size_t i = 0; i < n; i++) HF(0)[i] = (i % 2 ? 1 : -1) * (0.05f + 1.5f * (1 + HF(0)[i] / 3));
        for (int c = 0; c < C; c++) HF(1)[c] = 0;
        return;
    }
    HF(0)[0] = -HF(1)[0];
    if (C > 2) HF(0)[1] = 1e-30f - HF(1)[1], HF(0)[2] = -1e-30f - HF(1)[2];
}
static unsigned rd_ref(double **r, void **h, const int *d) {
    int N = d[0], C = d[1];
    size_t n = (size_t)N * C;
    float *pre = fnew(n), *m = fnew(n), *t = fnew(n);
    for (size_t i = 0; i < n; i++) pre[i] = HF(0)[i] + HF(1)[i % C];
    backend_cpu()->dropout_forward(t, m, pre, PS[d[2]], KEYS[(d[0] + d[2]) % 3], n);
    for (size_t i = 0; i < n; i++) {
        r[2][i] = (pre[i] > 0 ? pre[i] : 0.0f) * m[i];
        r[4][i] = pre[i] > 0 ? HF(3)[i] * m[i] : 0.0f;
    }
    free(pre), free(m), free(t);
    return 4 | 16;
}
static void rd_extra(const Backend *be, void **p, void **h, const int *d, Stat *st) {
    size_t n = (size_t)d[0] * d[1];
    float *ip = be->alloc(n * 4);
    be->upload(ip, h[0], n * 4);
    be->bias_relu_dropout_forward(ip, ip, F(1), PS[d[2]], KEYS[(d[0] + d[2]) % 3], d[0], d[1]);
    float *a = from_backend(be, ip, n), *b = from_backend(be, F(2), n);
    stat_same(st, "in place", a, b, n);
    long dropped = 0;
    for (size_t i = 0; i < n; i++) dropped += b[i] == 0.0f && HF(0)[i] + HF(1)[i % d[1]] > 0;
    stat_true(st, PS[d[2]] > 0 ? n < 50 || dropped > 0 : dropped == 0, "%ld dropped at p = %g",
              dropped, PS[d[2]]);
    free(a), free(b), be->free(ip);
}
static int rd_fd(const int *d) { return d[3] == 1; }
static const int rd_sh[][MAXD] = {{7, 9, -3, 0}, {1, 1, -3, 0}, {70, 101, -3, 0}, {70, 1001, -3, 0},
                                  {5, 8, 1, 1}, {1031, 1021, 1, 0}};

/* layernorm: out, mean, rstd (written over 123s), a constant row (σ² = 0) and a row with |μ| ≫ σ
 * where s = 1; the gradients accumulate (each also alone, the others NULL: u = 1, 2, 3) */
static void ln_fwd(const Backend *be, void **p, const int *d) {
    be->layernorm_forward(F(3), F(4), F(5), F(0), F(1), F(2), d[0], d[1]);
}
static void ln_bwd(const Backend *be, void **p, const int *d) {
    int u = d[3];
    be->layernorm_backward(u < 2 ? F(7) : NULL, u == 0 || u == 2 ? F(8) : NULL,
                           u == 0 || u == 3 ? F(9) : NULL, F(6), F(0), F(1), F(4), F(5), d[0], d[1]);
}
static void ln_prep(void **h, const int *d) {
    int N = d[0], C = d[1];
    for (int c = 0; c < C && N >= 3 && d[2]; c++) { /* s = 2: σ ≈ 0.006 at μ = 100 (no reference) */
        HF(0)[C + c] = d[2] == 1 ? 0.7f : 0.25f;
        HF(0)[2 * C + c] = d[2] == 1 ? HF(0)[2 * C + c] + 100.0f : 100.0f + 0.01f * HF(0)[2 * C + c];
    }
}
static unsigned ln_ref(double **r, void **h, const int *d) {
    int N = d[0], C = d[1], u = d[3];
    for (int n = 0; n < N && d[2] == 2; n++) return 0;
    for (int n = 0; n < N; n++) {
        const float *x = HF(0) + (size_t)n * C, *w = HF(1), *dout = HF(6) + (size_t)n * C;
        double mu = 0, var = 0, mg = 0, mgx = 0;
        for (int c = 0; c < C; c++) mu += x[c];
        mu /= C;
        for (int c = 0; c < C; c++) var += (x[c] - mu) * (x[c] - mu);
        double rs = 1.0 / sqrt(var / C + 1e-5);
        r[4][n] = mu, r[5][n] = rs;
        for (int c = 0; c < C; c++) {
            double xh = (x[c] - mu) * rs, g = (double)dout[c] * w[c];
            r[3][(size_t)n * C + c] = xh * w[c] + HF(2)[c];
            mg += g / C, mgx += g * xh / C;
            if (u == 0 || u == 2) r[8][c] += dout[c] * xh;
            if (u == 0 || u == 3) r[9][c] += dout[c];
        }
        for (int c = 0; c < C && u < 2; c++)
            r[7][(size_t)n * C + c] += rs * ((double)dout[c] * w[c] - mg - (x[c] - mu) * rs * mgx);
    }
    return 0x3b8;
}
/* dinp cancels where a row is constant: 4 ε rstd |g| on the terms, in the cross comparison */
static double ln_floor(int i, void **h, const int *d) {
    if (i & 0x100) return (i & 0xff) >= 7 ? 1e-4 / 1e-5 * 1.0 : 0; /* sums over N rows, C columns */
    if (i != 7 || !d[2]) return 0;
    double m = 0;
    for (size_t k = 0; k < (size_t)d[0] * d[1]; k++) m = fmax(m, fabs(HF(6)[k] * HF(1)[k % d[1]]));
    return 4 * FLT_EPSILON * 316.3 * m / 1e-5;
}
static int ln_fd(const int *d) { return !d[2] && d[3] == 0 && d[0] * d[1] < 200; }
static void ln_extra(const Backend *be, void **p, void **h, const int *d, Stat *st) {
    /* bit for bit at 1 and 2 threads: a property of the CPU backend, checked in the CPU run
     * alone (not beside a backend under test, where TSan cannot see OpenMP's barriers) */
    if (be != cpu || gpu || (size_t)d[0] * d[1] <= 32768 || d[3]) return;
    int N = d[0], C = d[1], t0 = omp_get_max_threads();
    size_t n = (size_t)N * C;
    float *o[2], *m[2], *r[2], *gx[2], *gw[2], *gb[2];
    for (int i = 0; i < 2; i++) {
        omp_set_num_threads(i + 1);
        o[i] = fnew(n), m[i] = fnew(N), r[i] = fnew(N), gx[i] = fnew(n), gw[i] = fnew(C), gb[i] = fnew(C);
        be->layernorm_forward(o[i], m[i], r[i], HF(0), HF(1), HF(2), N, C);
        be->layernorm_backward(gx[i], gw[i], gb[i], HF(6), HF(0), HF(1), m[i], r[i], N, C);
    }
    omp_set_num_threads(t0);
    stat_same(st, "out, 1 and 2 threads", o[0], o[1], n);
    stat_same(st, "mean, 1 and 2 threads", m[0], m[1], N);
    stat_same(st, "rstd, 1 and 2 threads", r[0], r[1], N);
    stat_same(st, "dinp, 1 and 2 threads", gx[0], gx[1], n);
    stat_same(st, "dweight, 1 and 2 threads", gw[0], gw[1], C);
    stat_same(st, "dbias, 1 and 2 threads", gb[0], gb[1], C);
    for (int i = 0; i < 2; i++) free(o[i]), free(m[i]), free(r[i]), free(gx[i]), free(gw[i]), free(gb[i]);
    (void)p;
}
static const int ln_sh[][MAXD] = {{5, 19, -2, 0}, {5, 7, -3, -4}, {1, 1, 0, -4}, {9, 300, -3, 0},
                                  {3, 1031, -3, -4}, {150, 37, -3, -4}, {40, 901, -2, 0}};

/* embedding: ids repeat (id 0 on about a third), rows no id names stay as they were; the backward
 * adds in token order (bit for bit a float loop in order), twice: accumulates, the same bits */
static void em_fwd(const Backend *be, void **p, const int *d) { be->embedding_forward(F(2), I(0), F(1), d[2], d[1]); }
static void em_bwd(const Backend *be, void **p, const int *d) {
    be->embedding_backward(F(4), F(3), I(0), d[2], d[1]);
}
static void em_prep(void **h, const int *d) {
    for (int i = 0; i < d[2]; i++) HI(0)[i] = rng_below(&optest_rng, 3) == 0 ? 0 : HI(0)[i];
}
static unsigned em_ref(double **r, void **h, const int *d) {
    int E = d[1], N = d[2];
    float *seq = fdup(h[4], (size_t)d[0] * E);
    for (int n = 0; n < N; n++)
        for (int e = 0; e < E; e++) {
            r[2][n * E + e] = HF(1)[HI(0)[n] * E + e];
            seq[HI(0)[n] * E + e] += HF(3)[n * E + e];
        }
    for (size_t i = 0; i < (size_t)d[0] * E; i++) r[4][i] = seq[i];
    free(seq);
    return 4 | 16;
}
static void em_extra(const Backend *be, void **p, void **h, const int *d, Stat *st) {
    (void)be;
    be->embedding_backward(F(4), F(3), I(0), d[2], d[1]); /* a second pass */
    emit("embedding_backward, the second pass", F(4), (size_t)d[0] * d[1], 0, 0);
    (void)h, (void)st;
}
static const int em_sh[][MAXD] = {{7, 5, 9}, {1, 1, 1}, {150, 70, 300}, {200, 1, 600}, {1100, 40, 700}, {50, 1031, 1021}};

/* lstm_cell: gates [B,4H] (i f g o) pre-activations in, activations out; gru_cell: gx [B,3H]
 * (r z n) likewise, gh an input. Where m = 1 the odd rows are padding steps (mask 0): their h (and
 * c) stay h_prev (c_prev) exactly, and the GRU's their dgx, dgh are exactly 0 and their dh_prev
 * exactly prefill + dh (cell_extra, on every backend). The gate gradients are overwritten, the
 * state's accumulate. The last shape past the element-wise grid. */
static double sigm(double x) { return 1.0 / (1.0 + exp(-x)); }
static void cell_prep(void **h, const int *d) {
    for (int b = 0; b < d[0]; b++) HF(3)[b] = b % 2 ? 0.0f : 1.0f;
}
static void lstm_fwd(const Backend *be, void **p, const int *d) {
    be->lstm_cell_forward(F(4), F(5), F(0), F(1), F(2), d[3] ? F(3) : NULL, d[0], d[1]);
}
static void lstm_bwd(const Backend *be, void **p, const int *d) {
    be->lstm_cell_backward(F(8), F(9), F(10), F(6), F(7), F(0), F(5), F(2), d[3] ? F(3) : NULL, d[0], d[1]);
}
static unsigned lstm_ref(double **r, void **h, const int *d) {
    int H = d[1];
    for (int b = 0; b < d[0]; b++)
        for (int j = 0; j < H; j++) {
            const float *x = HF(0) + (size_t)b * 4 * H;
            double a[4] = {sigm(x[j]), sigm(x[H + j]), tanh(x[2 * H + j]), sigm(x[3 * H + j])};
            for (int k = 0; k < 4; k++) r[0][(size_t)b * 4 * H + k * H + j] = a[k];
            size_t o = (size_t)b * H + j;
            double cn = a[1] * HF(2)[o] + a[0] * a[2];
            r[5][o] = d[3] && b % 2 ? HF(2)[o] : cn;
            r[4][o] = d[3] && b % 2 ? HF(1)[o] : a[3] * tanh(cn);
        }
    return 1 | 1u << 4 | 1u << 5;
}
static void gru_fwd(const Backend *be, void **p, const int *d) {
    be->gru_cell_forward(F(4), F(0), F(1), F(2), d[3] ? F(3) : NULL, d[0], d[1]);
}
static void gru_bwd(const Backend *be, void **p, const int *d) {
    be->gru_cell_backward(F(6), F(7), F(8), F(5), F(0), F(1), F(2), d[3] ? F(3) : NULL, d[0], d[1]);
}
static unsigned gru_ref(double **r, void **h, const int *d) {
    int H = d[1];
    for (int b = 0; b < d[0]; b++)
        for (int j = 0; j < H; j++) {
            const float *x = HF(0) + (size_t)b * 3 * H, *g = HF(1) + (size_t)b * 3 * H;
            double rr = sigm((double)x[j] + g[j]), z = sigm((double)x[H + j] + g[H + j]);
            double n = tanh((double)x[2 * H + j] + rr * g[2 * H + j]), hp = HF(2)[(size_t)b * H + j];
            r[0][(size_t)b * 3 * H + j] = rr, r[0][(size_t)b * 3 * H + H + j] = z;
            r[0][(size_t)b * 3 * H + 2 * H + j] = n;
            r[4][(size_t)b * H + j] = d[3] && b % 2 ? hp : (1 - z) * n + z * hp;
        }
    return 1 | 1u << 4;
}
static void cell_extra(const Backend *be, void **p, void **h, const int *d, Stat *st) {
    int B = d[0], H = d[1], G = d[2], lstm = G == 4;
    size_t n = (size_t)B * H, bad = 0;
    float *o[4] = {from_backend(be, F(4), n), from_backend(be, lstm ? F(5) : F(6), lstm ? n : n * G),
                   lstm ? NULL : from_backend(be, F(7), n * G), lstm ? NULL : from_backend(be, F(8), n)};
    for (int b = 1; b < B && d[3]; b += 2)
        for (int j = 0; j < H; j++) {
            size_t k = (size_t)b * H + j;
            bad += o[0][k] != HF(lstm ? 1 : 2)[k];
            if (lstm) {
                bad += o[1][k] != HF(2)[k];
                continue;
            }
            for (int g = 0; g < G; g++)
                bad += o[1][(size_t)b * G * H + g * H + j] != 0 || o[2][(size_t)b * G * H + g * H + j] != 0;
            bad += o[3][k] != (float)(HF(8)[k] + HF(5)[k]);
        }
    stat_true(st, bad == 0, "%zu values of the padding rows not exactly their state (or 0)", bad);
    for (int i = 0; i < 4; i++) free(o[i]);
}
static const int lstm_sh[][MAXD] = {{4, 5, 4, -2}, {3, 5, 4, -2}, {1, 1, 4, -2}, {4, 300, 4, -2}, {2, 524291, 4, 1}};
static const int gru_sh[][MAXD] = {{3, 5, 3, -2}, {1, 1, 3, -2}, {4, 300, 3, -2}, {2, 524291, 3, 1}};

/* adam_update, t = 1..T (gradients g[t-1]: element 0 zero but a spike at t = 2, element 1
 * tiny), from zero moments; param, m and v compared after every step (normwise 1e-6: the host
 * compiler and nvcc may contract b·m + (1−b)·g into fused multiply-adds differently); the last
 * shape past the element-wise grid */
static const float ADAM[4] = {3e-3f, 0.9f, 0.98f, 1e-6f}; /* lr, b1, b2, eps */
static void adam_prep(void **h, const int *d) {
    for (int t = 0; t < d[1]; t++) {
        HF(0)[(size_t)t * d[0]] = t == 1 ? 50.0f : 0.0f;
        if (d[0] > 1) HF(0)[(size_t)t * d[0] + 1] = 1e-4f * (t + 1);
    }
}
static void adam_fwd(const Backend *be, void **p, const int *d) {
    for (int t = 1; t <= d[1]; t++) {
        be->adam_update(F(1), F(0) + (size_t)(t - 1) * d[0], F(2), F(3), (size_t)d[0], ADAM[0], ADAM[1], ADAM[2],
                        ADAM[3], t);
        for (int i = 1; i < 4 && t < d[1]; i++) emit_mid(row_named("adam"), d, p, i, "a step");
    }
}
static unsigned adam_ref(double **r, void **h, const int *d) {
    for (int t = 1; t <= d[1]; t++) {
        double c1 = 1.0 - pow((double)ADAM[1], t), c2 = 1.0 - pow((double)ADAM[2], t);
        for (int i = 0; i < d[0]; i++) {
            double g = HF(0)[(size_t)(t - 1) * d[0] + i];
            r[2][i] = ADAM[1] * r[2][i] + (1.0 - ADAM[1]) * g;
            r[3][i] = ADAM[2] * r[3][i] + (1.0 - ADAM[2]) * g * g;
            r[1][i] -= ADAM[0] * (r[2][i] / c1) / (sqrt(r[3][i] / c2) + ADAM[3]);
        }
    }
    return 14;
}
static const int adam_sh[][MAXD] = {{57, 4}, {1, 4}, {257, 4}, {10007, 4}, {EW_GRID + 3, 4}};

/* ---- the output layer, sumsq and all_finite ---- */

/* xent_forward_backward: fwd the loss alone (dlogits NULL: what the finite differences see), bwd
 * the loss with dlogits = grad_scale (p − q) (q = (1 − ε) one-hot + ε/V; loss −Σ_v q_v log p_v
 * over the counted rows), both losses and dlogits against the reference, dlogits (overwritten;
 * ignored rows 0) against finite differences of grad_scale · loss (dloss = grad_scale); the two
 * losses bit for bit the same, and every row ignored (a = 1) a loss of exactly 0 (xent_extra, on
 * every backend). ε 0 and 0.1; ignore ids −1 and 1 (a class id); rows 1, 5, 9, ... ignored, row
 * 2's target logit 8 (confident), row 0's logit 1 (an odd lane) and the last counted row's last
 * logit 100, far above the others in [−4, 4] (a maximum that misses them overflows exp); V wider
 * than a block, N = 257: one past the rows' sum's 256 threads. Tolerance 1e-5 between backends:
 * the CPU's exp is a polynomial approximation (cpu_expf, relative error ~1e-7) and the sums run
 * in another order. */
static const float SMOOTH[2] = {0.0f, 0.1f}, GSCALE[3] = {1.0f, 0.5f, 0.25f};
static const int IGNORE[2] = {-1, 1};
#define XENT_ARGS F(0), I(1), d[0], d[1], SMOOTH[d[2]], IGNORE[d[3]]
static void xent_fwd(const Backend *be, void **p, const int *d) {
    *(double *)p[3] = be->xent_forward_backward(NULL, XENT_ARGS, 1.0f, F(6));
}
static void xent_bwd(const Backend *be, void **p, const int *d) {
    *(double *)p[4] = be->xent_forward_backward(F(5), XENT_ARGS, GSCALE[d[4]], F(6));
}
static size_t xent_work(const Backend *be, const int *d) { return be->xent_workspace(d[0], d[1]); }
static void xent_prep(void **h, const int *d) {
    int N = d[0], V = d[1], ign = IGNORE[d[3]], last = 0;
    for (int n = 0; n < N; n++) {
        HI(1)[n] = d[5] || n % 4 == 1 ? ign : (n * 7 + 3) % V;
        if (HI(1)[n] != ign) last = n;
    }
    if (N > 2 && HI(1)[2] != ign) HF(0)[2 * V + HI(1)[2]] = 8.0f;
    if (V > 1) HF(0)[1] = 100.0f;
    if (last > 0) HF(0)[(size_t)last * V + V - 1] = 100.0f;
    HF(2)[0] = GSCALE[d[4]];
}
static unsigned xent_ref(double **r, void **h, const int *d) {
    int N = d[0], V = d[1];
    double eps = SMOOTH[d[2]], loss = 0;
    for (int n = 0; n < N; n++) {
        const float *x = HF(0) + (size_t)n * V;
        double mx = -INFINITY, z = 0;
        for (int v = 0; v < V; v++) mx = x[v] > mx ? x[v] : mx;
        for (int v = 0; v < V; v++) z += exp(x[v] - mx);
        for (int v = 0; v < V; v++) {
            double q = eps / V + (v == HI(1)[n] ? 1.0 - eps : 0.0), lp = x[v] - mx - log(z);
            int counted = HI(1)[n] != IGNORE[d[3]];
            loss -= counted ? q * lp : 0;
            r[5][(size_t)n * V + v] = counted ? GSCALE[d[4]] * (exp(lp) - q) : 0;
        }
    }
    r[3][0] = r[4][0] = loss;
    return 1u << 3 | 1u << 4 | 1u << 5;
}
static void xent_extra(const Backend *be, void **p, void **h, const int *d, Stat *st) {
    double l = *(double *)p[3], l2 = *(double *)p[4];
    stat_true(st, l == l2, "loss %.17g without dlogits, %.17g with", l, l2);
    stat_true(st, !d[5] || l == 0, "every row ignored: loss %.17g, not 0", l);
    float *g = from_backend(be, F(5), (size_t)d[0] * d[1]);
    size_t bad = 0;
    for (size_t k = 0; k < (size_t)d[0] * d[1]; k++) bad += HI(1)[k / d[1]] == IGNORE[d[3]] && g[k] != 0.0f;
    stat_true(st, bad == 0, "%zu dlogits of ignored rows not 0", bad);
    free(g);
}
static const int xent_sh[][MAXD] = {/* N, V, ε, ignore id, grad_scale, all ignored */
    {6, 11, -2, 1, -2, -2}, {4, 7, -2, 0, 2, 0}, {1, 1, -2, 0, 2, 0}, {6, 1000, -2, 0, 2, 0},
    {3, 8003, -2, 0, 2, 0}, {257, 5, -2, 0, 2, 0}};

/* log_softmax and argmax (first on ties) over rows of k: 0, logits in [−4, 4), row 0's logit 1
 * and the last row's last logit 100 (but on row 3), ties for argmax (row 2 all 0.5, row 3 its
 * maximum 9 twice); 1, rows 2 and 3 shifted by +1000 and −1000 (log_softmax must not overflow);
 * 2, −inf logits (a masked vocabulary: every even column, row 2's all but 151; row 0's maximum 50
 * in its last lane); 3, argmax's table (ARGMAX_TAB: ties, −inf, NaN). log_softmax element-wise
 * within 1e-5 (1 + |out|), −inf exactly, each row's Σ exp 1 within 1e-3 (sm_extra); between
 * backends no closer than an ulp of the largest logit (sm_floor: a GPU's log-sum-exp in float);
 * argmax exactly. */
enum { AN = 8, AV = 5 };
static const float ARGMAX_TAB[AN][AV] = {
    {0.1f, 3.0f, 3.0f, 2.0f, -1.0f},          /* tie: first (1) */
    {-5.0f, -1.0f, -1.0f, -3.0f, -2.0f},      /* negative tie: 1 */
    {-INFINITY, -INFINITY, 2.0f, 2.0f, 1.0f}, /* 2 */
    {7.0f, 7.0f, 7.0f, 7.0f, 7.0f},           /* all equal: 0 */
    {0.0f, 1.0f, 2.0f, 3.0f, 4.0f},           /* last: 4 */
    {9.0f, 1.0f, 2.0f, 8.99f, 4.0f},          /* first: 0 */
    {NAN, 1.0f, 2.0f, 3.0f, 4.0f},            /* NaN in column 0: 0, as k_argmax */
    {NAN, NAN, NAN, NAN, NAN},                /* a row of NaN: 0, an index in the row */
};
static const int ARGMAX_WANT[AN] = {1, 1, 2, 0, 4, 0, 0, 0};
static void sm_prep(void **h, const int *d) {
    int N = d[0], V = d[1];
    float *x = HF(0);
    if (d[2] == 0) {
        if (N > 3) {
            for (int v = 0; v < V; v++) x[(size_t)2 * V + v] = 0.5f;
            x[(size_t)3 * V + V / 3] = 9.0f, x[(size_t)3 * V + V - 1] = 9.0f;
        }
        if (V > 1) x[1] = 100.0f;
        if (N > 1 && (N <= 3 || N - 1 > 3)) x[(size_t)N * V - 1] = 100.0f;
    }
    for (int v = 0; v < V && d[2] == 1 && N > 3; v++) x[2 * V + v] += 1000.0f, x[3 * V + v] -= 1000.0f;
    for (int n = 0; n < N && d[2] == 2; n++)
        for (int v = 0; v < V; v++)
            if (v % 2 == 0 || (n == 2 && v != 151)) x[(size_t)n * V + v] = -INFINITY;
    if (d[2] == 2) x[V - 1] = 50.0f;
    if (d[2] == 3) memcpy(x, ARGMAX_TAB, sizeof ARGMAX_TAB);
}
static void ls_fwd(const Backend *be, void **p, const int *d) { be->log_softmax(F(1), F(0), d[0], d[1]); }
static unsigned ls_ref(double **r, void **h, const int *d) {
    for (int n = 0; n < d[0]; n++) {
        const float *x = HF(0) + (size_t)n * d[1];
        double mx = -INFINITY, z = 0;
        for (int v = 0; v < d[1]; v++) mx = x[v] > mx ? x[v] : mx;
        for (int v = 0; v < d[1]; v++) z += exp(x[v] - mx);
        for (int v = 0; v < d[1]; v++) r[1][(size_t)n * d[1] + v] = x[v] - mx - log(z);
    }
    return 2;
}
static double sm_floor(int i, void **h, const int *d) {
    double m = 0;
    for (size_t k = 0; k < (size_t)d[0] * d[1] && i == 1; k++)
        if (isfinite(HF(0)[k])) m = fmax(m, fabs(HF(0)[k]));
    return m * FLT_EPSILON / 1e-5;
}
static void sm_extra(const Backend *be, void **p, void **h, const int *d, Stat *st) {
    float *o = from_backend(be, F(1), (size_t)d[0] * d[1]);
    for (int n = 0; n < d[0]; n++) {
        double s = 0;
        for (int v = 0; v < d[1]; v++) s += exp((double)o[(size_t)n * d[1] + v]);
        stat_add(st, s, 1.0, 1e-3, 0, "Σ exp", n);
    }
    free(o), (void)h;
}
static void am_fwd(const Backend *be, void **p, const int *d) { be->argmax(I(1), F(0), d[0], d[1]); }
static unsigned am_ref(double **r, void **h, const int *d) {
    for (int n = 0; n < d[0]; n++) {
        const float *x = HF(0) + (size_t)n * d[1];
        int best = 0;
        for (int v = 1; v < d[1]; v++) best = x[v] > x[best] ? v : best;
        r[1][n] = d[2] == 3 ? ARGMAX_WANT[n] : best;
    }
    return 2;
}
static const int ls_sh[][MAXD] = {{4, 9, 1}, {4, 7, 0}, {1, 1, 0}, {6, 1000, 0}, {3, 8003, 0}, {257, 5, 0}, {3, 300, 2}};
static const int am_sh[][MAXD] = {{AN, AV, 3}, {10, 13, 0}, {4, 7, 0}, {1, 1, 0}, {6, 1000, 0}, {3, 8003, 0},
                                  {257, 5, 0}, {3, 300, 2}};

/* all_finite over x in ±1e30 with case c: 0, finite, FLT_MAX, −FLT_MAX and a subnormal planted;
 * 1–9, NaN, +Inf or −Inf at the first, the middle or the last element; 10–17 (n = 262145, past
 * the first pass's 1024 blocks of 256 threads), NaN in the share of the partials 255, 256, 511,
 * 512, 767, 768 and 1023 and at 262144 (the first pass's second turn); n = 0 too. On finite data
 * also sumsq (double accumulation: only the order of the sum may differ, 1e-10 from the
 * reference, 1e-9 between backends; 0 where not called) and all_finite a second time (a verdict
 * must not depend on the one before; else the first verdict again). */
static const size_t PARTIALS[7] = {255, 256, 511, 512, 767, 768, 1023};
static void red_fwd(const Backend *be, void **p, const int *d) {
    *(double *)p[1] = d[1] ? 0.0 : be->sumsq(F(0), (size_t)d[0]);
    *(double *)p[2] = be->all_finite(F(0), (size_t)d[0]);
    *(double *)p[3] = d[1] ? *(double *)p[2] : be->all_finite(F(0), (size_t)d[0]);
}
static void red_prep(void **h, const int *d) {
    size_t n = (size_t)d[0], c = (size_t)d[1], at[3] = {0, n / 2, n - 1};
    const float bad[3] = {NAN, INFINITY, -INFINITY};
    if (n && c == 0) HF(0)[0] = FLT_MAX, HF(0)[n - 1] = -FLT_MAX, HF(0)[n / 2] = FLT_MIN / 4;
    if (n && c >= 1 && c <= 9) HF(0)[at[(c - 1) % 3]] = bad[(c - 1) / 3];
    if (c >= 10) HF(0)[c < 17 ? PARTIALS[c - 10] * 256 + 3 : 262144] = NAN;
}
static unsigned red_ref(double **r, void **h, const int *d) {
    double s = 0;
    int ok = 1;
    for (int i = 0; i < d[0]; i++) s += (double)HF(0)[i] * HF(0)[i], ok &= isfinite(HF(0)[i]) != 0;
    r[1][0] = d[1] ? 0.0 : s, r[2][0] = r[3][0] = ok;
    return 14;
}
static const int red_sh[][MAXD] = {{0, 0}, {1, 0}, {1, 1}, {1, 4}, {1, 7}, {1003, -10}, {262145, -18},
                                   {300001, -10}, {5000011, -10}};

/* (a row names the fields it sets; the rest are zero: no tolerance, no gradient, no hook) */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
static const Row ROWS[] = {
#define R(...) {__VA_ARGS__}
    R("matmul", "matmul", "MNKabt", SHAPES(mm_sh),
      {{"A", IN, "MK", -1, 1}, {"B", IN, "KN", -1, 1}, {"C", ACC, "MN", -2, 2, 1e-4}},
      mm_fwd, NULL, mm_ref, 1e-5),
    R("matmul_bias_forward", "matmul_bias_forward", "NCKrXWBO", SHAPES(mbf_sh),
      {{"inp", IN, "X", -1, 1}, {"w", IN, "W", -1, 1}, {"b", IN, "B", -1, 1}, {"out", OUT, "O", -9, 9, 1e-4}},
      mbf_fwd, NULL, mbf_ref, 1e-5, .extra = mbf_extra),
    R("bias", "bias_forward,bias_backward", "NC", SHAPES(bias_sh),
      {{"bias", IN, "C", -1, 1}, {"out", ACC, "NC", -1, 1, 1e-6}, {"dout", IN, "NC", -1, 1, 0, 2},
       {"dbias", ACC, "C", -2, 2, 1e-5, 1}},
      bias_fwd, bias_bwd, bias_ref, 1e-5, .floor = bias_floor),
    R("axpy", "axpy", "n", SHAPES(n_sh), {{"x", IN, "n", -1, 1}, {"y", ACC, "n", -1, 1, 1e-6}},
      axpy_fwd, NULL, axpy_ref, 1e-5, .floor = axpy_floor),
    R("scale", "scale", "n", SHAPES(n_sh), {{"x", ACC, "n", -1, 1, 1e-6}}, scale_fwd, NULL, scale_ref, 1e-5),
    R("tanh", "tanh_forward,tanh_backward", "n", SHAPES(tanh_sh),
      {{"inp", IN, "n", -4, 4}, {"out", OUT, "n", -1, 1, 1e-6}, {"dout", IN, "n", -1, 1, 0, 2},
       {"dinp", ACC, "n", -2, 2, 1e-6, 1}},
      tanh_fwd, tanh_bwd, tanh_ref, 1e-5, tanh_prep, tanh_floor),
    R("concat2", "concat2_forward,concat2_backward", "NabCw", SHAPES(cat_sh),
      {{"a", IN, "Na", -1, 1}, {"b", IN, "Nb", -1, 1}, {"out", OUT, "NC", -1, 1}, {"dout", IN, "NC", -1, 1, 0, 3},
       {"da", ACC, "Na", -2, 2, 0, 1}, {"db", ACC, "Nb", -2, 2, 0, 2}},
      cat_fwd, cat_bwd, cat_ref, 0, .fd = cat_fd),
    R("transpose01", "transpose01_forward,transpose01_backward", "ABC", SHAPES(tr_sh),
      {{"inp", IN, "ABC", -1, 1}, {"out", OUT, "ABC", -1, 1}, {"dout", IN, "ABC", -1, 1, 0, 2},
       {"dinp", ACC, "ABC", -2, 2, 0, 1}},
      tr_fwd, tr_bwd, tr_ref, 0),
    R("permute0213", "permute0213_forward,permute0213_backward", "AIJC", SHAPES(pm_sh),
      {{"inp", IN, "AIJC", -1, 1}, {"out", OUT, "AIJC", -1, 1}, {"dout", IN, "AIJC", -1, 1, 0, 2},
       {"dinp", ACC, "AIJC", -2, 2, 0, 1}},
      pm_fwd, pm_bwd, pm_ref, 0, .extra = pm_extra),
    R("write_step", "write_step", "NTCtP", SHAPES(ws_sh), {{"cache", ACC, "PTC", -1, 1}, {"x", IN, "NC", -1, 1}},
      ws_fwd, NULL, ws_ref, 0),
    R("gather_rows", "gather_rows,gather_rows_strided", "RnDSzgP", SHAPES(ga_sh),
      {{"src", IN, "RS", -1, 1}, {"idx", INT, "n", 0, 0, 0, 0, 'R'}, {"dst", OUT, "PS", -1, 1}},
      ga_fwd, NULL, ga_ref, 0),
    R("dropout", "dropout_forward,dropout_backward", "npe", SHAPES(dr_sh),
      {{"inp", IN, "n", -1, 1}, {"out", OUT, "n", -1, 1, 0}, {"mask", OUT, "n", -1, 1, 0},
       {"dout", IN, "n", -1, 1, 0, 2}, {"dinp", ACC, "n", -2, 2, 1e-6, 1}},
      dr_fwd, dr_bwd, NULL, 0, .floor = dr_floor, .extra = dr_extra),
    R("bias_relu_dropout", "bias_relu_dropout_forward,relu_dropout_backward", "NCpf", SHAPES(rd_sh),
      {{"inp", IN, "NC", -3, 3}, {"bias", IN, "C", -1, 1}, {"out", OUT, "NC", -1, 1, 0},
       {"dout", IN, "NC", -1, 1, 0, 3}, {"dinp", OVW, "NC", -5, 5, 0, 1}, {"dbias", ACC, "C", -1, 1, 1e-5, 2}},
      rd_fwd, rd_bwd, rd_ref, 0, rd_prep, .extra = rd_extra, .fd = rd_fd),
    R("layernorm", "layernorm_forward,layernorm_backward", "NCsu", SHAPES(ln_sh),
      {{"inp", IN, "NC", -1, 1}, {"weight", IN, "C", 0.5f, 1.5f}, {"bias", IN, "C", -1, 1},
       {"out", OUT, "NC", -1, 1, 1e-5}, {"mean", OUT, "N", -1, 1, 1e-5}, {"rstd", OUT, "N", -1, 1, 1e-5},
       {"dout", IN, "NC", -1, 1, 0, 4}, {"dinp", ACC, "NC", -1, 1, 1e-5, 1}, {"dweight", ACC, "C", -1, 1, 1e-5, 2},
       {"dbias", ACC, "C", -1, 1, 1e-5, 3}},
      ln_fwd, ln_bwd, ln_ref, 1e-5, ln_prep, ln_floor, ln_extra, ln_fd),
    R("embedding", "embedding_forward,embedding_backward", "VEN", SHAPES(em_sh),
      {{"ids", INT, "N", 0, 0, 0, 0, 'V'}, {"table", IN, "VE", -1, 1}, {"out", OUT, "NE", -1, 1},
       {"dout", IN, "NE", -1, 1, 0, 3}, {"dtable", ACC, "VE", -2, 2, 0, 2}},
      em_fwd, em_bwd, em_ref, 0, em_prep, .extra = em_extra),
    R("lstm", "lstm_cell_forward,lstm_cell_backward", "BHGm", SHAPES(lstm_sh),
      {{"gates", ACC, "BGH", -3, 3, 1e-5}, {"h_prev", IN, "BH", -1, 1}, {"c_prev", IN, "BH", -1.5f, 1.5f},
       {"mask", IN, "B", 1, 1}, {"h", OUT, "BH", -1, 1, 1e-5}, {"c", OUT, "BH", -1, 1, 1e-5},
       {"dh", IN, "BH", -1, 1, 0, 5}, {"dc", IN, "BH", -1, 1, 0, 6}, {"dgates", OVW, "BGH", -3, 3, 1e-5, 1},
       {"dh_prev", ACC, "BH", -2, 2, 1e-5, 2}, {"dc_prev", ACC, "BH", -2, 2, 1e-5, 3}},
      lstm_fwd, lstm_bwd, lstm_ref, 1e-5, cell_prep, .extra = cell_extra),
    R("gru", "gru_cell_forward,gru_cell_backward", "BHGm", SHAPES(gru_sh),
      {{"gx", ACC, "BGH", -2, 2, 1e-5}, {"gh", IN, "BGH", -2, 2}, {"h_prev", IN, "BH", -1, 1}, {"mask", IN, "B", 1, 1},
       {"h", OUT, "BH", -1, 1, 1e-5}, {"dh", IN, "BH", -1, 1, 0, 5}, {"dgx", OVW, "BGH", -3, 3, 1e-5, 1},
       {"dgh", OVW, "BGH", -3, 3, 1e-5, 2}, {"dh_prev", ACC, "BH", -2, 2, 1e-5, 3}},
      gru_fwd, gru_bwd, gru_ref, 1e-5, cell_prep, .extra = cell_extra),
#undef R
};
/* the loss, optimiser and reduction rows, which run after the attention rows */
static const Row ROWS_LOSS[] = {
#define R(...) {__VA_ARGS__}
    R("adam", "adam_update", "nT", SHAPES(adam_sh),
      {{"grad", IN, "Tn", -2, 2}, {"param", ACC, "n", -1, 1, 1e-6}, {"m", ACC, "n", 0, 0, 1e-6}, {"v", ACC, "n", 0, 0, 1e-6}},
      adam_fwd, NULL, adam_ref, 1e-6, adam_prep),
    R("xent", "xent_forward_backward,xent_workspace", "NVeiga", SHAPES(xent_sh),
      {{"logits", IN, "NV", -4, 4}, {"targets", INT, "N", 0, 0, 0, 0, 'V'}, {"dloss", IN, "", 1, 1, 0, 4},
       {"loss", RET, "", 0, 0, 1e-5}, {"loss (with dlogits)", RET, "", 0, 0, 1e-5},
       {"dlogits", OVW, "NV", -2, 2, 1e-5, 1}, {"work", WORK, ""}},
      xent_fwd, xent_bwd, xent_ref, 2e-6, xent_prep, .extra = xent_extra, .work = xent_work),
    R("log_softmax", "log_softmax", "NVk", SHAPES(ls_sh), {{"x", IN, "NV", -4, 4}, {"out", OUT, "NV", -1, 1, -1e-5}},
      ls_fwd, NULL, ls_ref, -1e-5, sm_prep, sm_floor, sm_extra),
    R("argmax", "argmax", "NVk", SHAPES(am_sh), {{"x", IN, "NV", -4, 4}, {"ids", IOUT, "N", -7, -7}},
      am_fwd, NULL, am_ref, 0, sm_prep),
    R("sumsq_all_finite", "sumsq,all_finite", "nc", SHAPES(red_sh),
      {{"x", IN, "n", -1e30f, 1e30f}, {"sumsq", RET, "", 0, 0, 1e-9}, {"all_finite", RET, "", 0, 0, 0},
       {"all_finite again", RET, "", 0, 0, 0}},
      red_fwd, NULL, red_ref, 1e-10, red_prep),
#undef R
};
#pragma GCC diagnostic pop

/* One entry per OpKind (op_harness.h). */
static const OpCase CASES[OP_COUNT] = {
    [OP_MATMUL] = {"matmul", "matmul", test_matmul_next_to_held, vs_cpu_precision},
    [OP_MATMUL_BIAS_FORWARD] = {"matmul_bias_forward", "matmul_bias_forward", NULL, vs_cpu_precision},
    [OP_BIAS_FORWARD] = {"bias_forward", "bias", NULL, NULL},
    [OP_BIAS_BACKWARD] = {"bias_backward", "bias", NULL, NULL},
    [OP_AXPY] = {"axpy", "axpy", NULL, NULL},
    [OP_SCALE] = {"scale", "scale", NULL, NULL},
    [OP_SUMSQ] = {"sumsq", "sumsq_all_finite", NULL, NULL},
    [OP_ALL_FINITE] = {"all_finite", "sumsq_all_finite", NULL, NULL},
    [OP_CONCAT2_FORWARD] = {"concat2_forward", "concat2", NULL, NULL},
    [OP_CONCAT2_BACKWARD] = {"concat2_backward", "concat2", NULL, NULL},
    [OP_TRANSPOSE01_FORWARD] = {"transpose01_forward", "transpose01", NULL, NULL},
    [OP_TRANSPOSE01_BACKWARD] = {"transpose01_backward", "transpose01", NULL, NULL},
    [OP_TANH_FORWARD] = {"tanh_forward", "tanh", NULL, NULL},
    [OP_TANH_BACKWARD] = {"tanh_backward", "tanh", NULL, NULL},
    [OP_DROPOUT_FORWARD] = {"dropout_forward", "dropout", NULL, NULL},
    [OP_DROPOUT_BACKWARD] = {"dropout_backward", "dropout", NULL, NULL},
    [OP_LAYERNORM_FORWARD] = {"layernorm_forward", "layernorm", NULL, NULL},
    [OP_LAYERNORM_BACKWARD] = {"layernorm_backward", "layernorm", NULL, NULL},
    [OP_BIAS_RELU_DROPOUT_FORWARD] = {"bias_relu_dropout_forward", "bias_relu_dropout", NULL, NULL},
    [OP_RELU_DROPOUT_BACKWARD] = {"relu_dropout_backward", "bias_relu_dropout", NULL, NULL},
    [OP_PERMUTE0213_FORWARD] = {"permute0213_forward", "permute0213", NULL, NULL},
    [OP_PERMUTE0213_BACKWARD] = {"permute0213_backward", "permute0213", NULL, NULL},
    [OP_WRITE_STEP] = {"write_step", "write_step", NULL, NULL},
    [OP_GATHER_ROWS_STRIDED] = {"gather_rows_strided", "gather_rows", NULL, NULL},
    [OP_EMBEDDING_FORWARD] = {"embedding_forward", "embedding", NULL, NULL},
    [OP_EMBEDDING_BACKWARD] = {"embedding_backward", "embedding", NULL, NULL},
    [OP_LSTM_CELL_FORWARD] = {"lstm_cell_forward", "lstm", NULL, NULL},
    [OP_LSTM_CELL_BACKWARD] = {"lstm_cell_backward", "lstm", NULL, NULL},
    [OP_GRU_CELL_FORWARD] = {"gru_cell_forward", "gru", NULL, NULL},
    [OP_GRU_CELL_BACKWARD] = {"gru_cell_backward", "gru", NULL, NULL},
    [OP_GATHER_ROWS] = {"gather_rows", "gather_rows", NULL, NULL},
    [OP_XENT_FORWARD_BACKWARD] = {"xent_forward_backward", "xent", NULL, NULL},
    [OP_XENT_WORKSPACE] = {"xent_workspace", "xent", NULL, NULL},
    [OP_LOG_SOFTMAX] = {"log_softmax", "log_softmax", NULL, NULL},
    [OP_ARGMAX] = {"argmax", "argmax", NULL, NULL},
    [OP_ADAM_UPDATE] = {"adam_update", "adam", NULL, NULL},
    [OP_ATTN_FORWARD] = {"attn_forward", "attn", case_attn_sdp, NULL},
    [OP_ATTN_BACKWARD] = {"attn_backward", "attn", case_attn_sdp, NULL},
    [OP_ATTN_WORKSPACE] = {"attn_workspace", "attn", case_attn_sdp, NULL},
    [OP_ATTN_FORWARD_MERGED] = {"attn_forward_merged", "attn", case_attn_sdp_merged, NULL},
    [OP_ATTN_BACKWARD_MERGED] = {"attn_backward_merged", "attn", case_attn_sdp_merged, NULL},
    [OP_ADDITIVE_ATTN_FORWARD] = {"additive_attn_forward", "additive_attn", case_additive_attn, NULL},
    [OP_ADDITIVE_ATTN_BACKWARD] = {"additive_attn_backward", "additive_attn", case_additive_attn, NULL},
    [OP_ADDITIVE_ATTN_WORKSPACE] = {"additive_attn_workspace", "additive_attn", case_additive_attn, NULL},
    [OP_LOCAL_ATTN_FORWARD] = {"local_attn_forward", "local_attn", case_local_attn, NULL},
    [OP_LOCAL_ATTN_BACKWARD] = {"local_attn_backward", "local_attn", case_local_attn, NULL},
    [OP_LOCAL_ATTN_WORKSPACE] = {"local_attn_workspace", "local_attn", case_local_attn, NULL},
    [OP_FLASH_ATTN_FORWARD] = {"flash_attn_forward", "flash_attn", case_flash_attn, NULL},
    [OP_FLASH_ATTN_BACKWARD] = {"flash_attn_backward", "flash_attn", case_flash_attn, NULL},
    [OP_FLASH_ATTN_WORKSPACE] = {"flash_attn_workspace", "flash_attn", case_flash_attn, NULL},
    [OP_LINEAR_ATTN_FORWARD] = {"linear_attn_forward", "linear_attn", case_linear_attn, NULL},
    [OP_LINEAR_ATTN_BACKWARD] = {"linear_attn_backward", "linear_attn", case_linear_attn, NULL},
    [OP_LINEAR_ATTN_STEP] = {"linear_attn_step", "linear_attn_step", case_linear_attn, NULL},
    [OP_LINEAR_ATTN_SUMMARY] = {"linear_attn_summary", "linear_attn_split", case_linear_attn, NULL},
    [OP_LINEAR_ATTN_READ] = {"linear_attn_read", "linear_attn_split", case_linear_attn, NULL},
    [OP_LINEAR_ATTN_READ_BACKWARD] = {"linear_attn_read_backward", "linear_attn_split", case_linear_attn, NULL},
    [OP_LINEAR_ATTN_SUMMARY_BACKWARD] = {"linear_attn_summary_backward", "linear_attn_split", case_linear_attn, NULL},
    [OP_LINEAR_ATTN_WORKSPACE] = {"linear_attn_workspace", "linear_attn", case_linear_attn, NULL},
    [OP_L2FEATURE_FORWARD] = {"l2feature_forward", "l2feature", case_taylor_attn, NULL},
    [OP_L2FEATURE_BACKWARD] = {"l2feature_backward", "l2feature", case_taylor_attn, NULL},
    [OP_LINFORMER_PROJ_FORWARD] = {"linformer_proj_forward", "linformer_proj", case_linformer_attn, NULL},
    [OP_LINFORMER_PROJ_BACKWARD] = {"linformer_proj_backward", "linformer_proj", case_linformer_attn, NULL},
    [OP_EFFICIENT_ATTN_FORWARD] = {"efficient_attn_forward", "efficient_attn", case_efficient_attn, NULL},
    [OP_EFFICIENT_ATTN_BACKWARD] = {"efficient_attn_backward", "efficient_attn", case_efficient_attn, NULL},
    [OP_EFFICIENT_ATTN_WORKSPACE] = {"efficient_attn_workspace", "efficient_attn", case_efficient_attn, NULL},
    [OP_EFFICIENT_ATTN_SUMMARY] = {"efficient_attn_summary", "efficient_attn_split", case_efficient_attn, NULL},
    [OP_EFFICIENT_ATTN_READ] = {"efficient_attn_read", "efficient_attn_split", case_efficient_attn, NULL},
    [OP_EFFICIENT_ATTN_READ_BACKWARD] = {"efficient_attn_read_backward", "efficient_attn_split", case_efficient_attn, NULL},
    [OP_EFFICIENT_ATTN_SUMMARY_BACKWARD] = {"efficient_attn_summary_backward", "efficient_attn_split", case_efficient_attn, NULL},
    [OP_POINTWISE_ATTN_FORWARD] = {"pointwise_attn_forward", "pointwise_attn", NULL, NULL},
    [OP_POINTWISE_ATTN_BACKWARD] = {"pointwise_attn_backward", "pointwise_attn", NULL, NULL},
    [OP_POINTWISE_ATTN_WORKSPACE] = {"pointwise_attn_workspace", "pointwise_attn", NULL, NULL},
    [OP_HEAD_RMSNORM_FORWARD] = {"head_rmsnorm_forward", "head_rmsnorm", NULL, NULL},
    [OP_HEAD_RMSNORM_BACKWARD] = {"head_rmsnorm_backward", "head_rmsnorm", NULL, NULL},
};

int main(int argc, char **argv) {
    const RowTable tables[] = {{ROWS, (int)(sizeof ROWS / sizeof ROWS[0])}, ROWS_ATTENTION,
                               {ROWS_LOSS, (int)(sizeof ROWS_LOSS / sizeof ROWS_LOSS[0])}};
    return op_harness_main(argc, argv, CASES, tables, 3);
}
