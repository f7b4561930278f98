/* test_backend_ops.c — every op of the backend table (src/ops/ops.h), one case table over
 * OpKind (docs/design.md §3, §11):
 *
 *   test_backend_ops                   every op of the CPU backend (backend_cpu()) against a plain
 *                                      reference written here in double precision, every backward
 *                                      against central finite differences (fd_compare,
 *                                      tests/testutil.h), and the accumulate convention of ops.h;
 *                                      then OpKind/supports_op/backend_require_ops.
 *   test_backend_ops --backend cuda    every op the CUDA backend implements against the CPU on
 *                                      the same random inputs; exit 77 (skipped) when
 *                                      backend_cuda() returns NULL (no CUDA build or no device),
 *                                      but in the emulated build, where the backend always
 *                                      exists, a backend that does not start is a failure.
 *   ... --ops NAME[,NAME...]           only the cases of the named OpKinds (op_name's names; a
 *                                      case that serves several rows runs when any of them is
 *                                      named), without the memory and table-wide checks: for
 *                                      running one op family quickly (scripts/mutate.sh). An
 *                                      unknown name is a usage error (exit 2).
 *
 * The program fails when an OpKind has no case. The attention cases live in attention_softmax.c
 * (attn_* = sdp, additive_attn_*, flash_attn_*), attention_linear.c (linear_attn_*,
 * efficient_attn_*), attention_taylor.c (l2feature_* and the taylor kind built on them) and
 * attention_linformer.c (linformer_proj_* and the linformer kind), attention_local.c (local_attn_*
 * and the luong_local kind),
 * declared in attention_cases.h; their own comments list what they check
 * (among it docs/design.md §11's exact equivalences: flash = sdp, causal linear = its quadratic masked
 * form, linear_attn_step = the causal forward bit for bit). An op the CUDA backend leaves NULL
 * (not yet ported) is listed and skipped; an op it has but whose case has no cross-backend check
 * fails.
 *
 * CPU:
 * Forward: each op's output is compared with an obviously-correct double-precision loop.
 * Backward: for an op out = f(x) we take L = Σ r ⊙ out with a fixed random r (so dout = r) and
 *   compare the analytic gradient with (L(x + ε e_i) − L(x − ε e_i)) / (2ε), L accumulated in
 *   double, ε = 1e-3 on float32 inputs. Tolerances are stated in tests/optest.h.
 * Accumulate: every backward is run a second time into buffers pre-filled with random nonzero
 *   values; the result must be prefill + gradient (lstm's dgates, gru's dgx, dgh and
 *   relu_dropout_backward's dinp are documented as overwritten, and are checked to be exactly
 *   that).
 * Exact ops (copies and selects: concat2, transpose01, permute0213, write_step, gather_rows,
 *   gather_rows_strided, bias_relu_dropout) are compared with tolerance 0, their backward (and its
 *   accumulation: one float add) too; what they must not write (a row beyond n, the floats
 *   beyond D of a strided row, the other steps of a cache) is checked to be untouched.
 *   permute0213 swapped back is the identity. bias_relu_dropout's mask is dropout_forward's, bit
 *   for bit; its finite differences use pre-activations at least 0.05 away from the kink.
 * Layernorm: mean and rstd outputs too; a constant row (σ² = 0) and a row with |μ| ≫ σ; C > 16
 *   so dweight, dbias span two column blocks.
 * Shapes above an op's OpenMP threshold (axpy/scale, bias_backward, bias_relu_dropout,
 *   permute0213, layernorm) run the parallel code, against the double reference where finite
 *   differences would be slow; layernorm and bias_backward are bit-identical for 1 and 2 threads
 *   (fixed summation order).
 * Shapes are small but non-square so that a swapped index shows. Inputs come from the
 * repository's PCG32 (src/core/rng.h) with a fixed seed. One line per check group is printed (max
 * abs / rel error); the exit code is the verdict.
 *
 * CUDA against CPU (as tests/gpu/test_cuda_backend.c was), normwise relative error
 * max|gpu − cpu| / max|cpu|: memory ops exact; matmul < 1e-4 (FP32, different summation order);
 * bias/axpy/scale < 1e-6 (bias_backward 1e-5; FMA contraction may differ; axpy and
 * tanh_backward onto a prefill relative to the size of their two terms, which may cancel); sumsq < 1e-9 (both
 * accumulate in double); all_finite: the same verdict. Shape ops (concat2, transpose01,
 * permute0213, write_step, gather_rows, gather_rows_strided), dropout masks and outputs,
 * bias_relu_dropout_forward, relu_dropout_backward and embedding_forward/backward: bit-identical
 * (tolerance 0, whole destination buffers, so what must stay untouched is checked too);
 * dropout_backward onto a nonzero prefill (relative to the size of the two terms, which may
 * cancel) and adam_update < 1e-6 (FMA contraction). Softmax
 * attention (sdp, flash) with spiked keys: q and k on a grid where the scores are exact, and dq,
 * dk relative to the size of the terms the backward adds (a saturated row cancels them).
 * Workspaces: an op with a size function (xent_workspace, additive_attn_workspace, …; ops.h) is
 * given exactly that many floats (work_new: at an odd float offset, NaN-filled, followed by a
 * guard that must stay untouched, so an op that writes past its declared size, counts on zeros
 * or on 8-byte alignment fails); linear_attn_step and linear_attn_summary, _read,
 * _read_backward and _summary_backward take none (their scratch is shared memory).
 */
#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention_cases.h"
#include "ops/cpu/cpu.h"
#include "ops/cuda/cuda.h"
#include "ops/ops.h"
#include "optest.h"
#include "core/rng.h"
#include "testutil.h"
#ifdef TRAINER_SIMT
#include "ops/cuda/simt/simt_c.h" /* the emulated build: thread schedules */
#endif

static const Backend *be; /* the CPU backend (the CPU cases) */

/* --ops: the OpKinds whose cases run (all when no --ops was given) */
static int op_selected[OP_COUNT];
static int ops_filtered;

/* ========================================================================================== */
/* the CPU against double-precision references                                               */

/* ------------------------------------------------------------------------------------------ */
/* memory                                                                                      */

static void test_memory(void) {
    Stat st;
    stat_begin(&st, "memory alloc/upload/download/copy/zero");
    size_t n = 37;
    float *d = be->alloc(sizeof(float) * n);
    float *d2 = be->alloc(sizeof(float) * n);
    stat_true(&st, d != NULL && d2 != NULL, "alloc returned NULL");
    int zero = 1;
    for (size_t i = 0; i < n; i++) zero &= d[i] == 0.0f;
    stat_true(&st, zero, "alloc is not zero-filled");
    float *h = frand(n, -1, 1), *back = fnew(n);
    be->upload(d, h, sizeof(float) * n);
    be->copy(d2, d, sizeof(float) * n);
    be->synchronize();
    be->download(back, d2, sizeof(float) * n);
    stat_true(&st, memcmp(back, h, sizeof(float) * n) == 0, "upload/copy/download round trip");
    be->zero(d2 + 3, sizeof(float) * 5);
    be->download(back, d2, sizeof(float) * n);
    int ok = 1;
    for (size_t i = 0; i < n; i++) ok &= back[i] == ((i >= 3 && i < 8) ? 0.0f : h[i]);
    stat_true(&st, ok, "zero touched the wrong range");
    {   /* a block of 4 MiB and more goes in 1 MiB pieces over the threads (the CPU): 4.5 MiB
         * and 3 floats, at an offset, between untouched floats */
        size_t nb = (size_t)9 << 17, big = nb + 3 + 2 * 5;
        float *hb = malloc(sizeof(float) * big), *db = be->alloc(sizeof(float) * big);
        for (size_t i = 0; i < big; i++) hb[i] = 1.0f + (float)(i % 7);
        be->upload(db, hb, sizeof(float) * big);
        be->zero(db + 5, sizeof(float) * (nb + 3));
        be->download(hb, db, sizeof(float) * big);
        int okb = 1;
        for (size_t i = 0; i < big; i++)
            okb &= hb[i] == ((i >= 5 && i < 5 + nb + 3) ? 0.0f : 1.0f + (float)(i % 7));
        stat_true(&st, okb, "zero of a large block touched the wrong range");
        be->free(db);
        free(hb);
    }
    be->free(d);
    be->free(d2);
    free(h);
    free(back);
    stat_end(&st);
}

/* ------------------------------------------------------------------------------------------ */
/* dense algebra                                                                               */

/* matmul's output may lie right next to a range held by matmul_hold (ops.h forbids only an
 * overlap): C = buf[10..25) between held buf[0..10) and buf[25..35) is accepted and computed. */
static void test_matmul_next_to_held(void) {
    Stat st;
    stat_begin(&st, "matmul next to held ranges");
    float *buf = frand(35, -1, 1), *A = frand(3 * 4, -1, 1), *B = frand(4 * 5, -1, 1);
    be->matmul_hold(buf, 10);
    be->matmul_keep(buf + 25, 10);
    be->matmul(buf + 10, A, B, 3, 5, 4, 0, 0, 1.0f, 0.0f);
    be->matmul_hold(NULL, 0);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 5; j++) {
            double s = 0;
            for (int k = 0; k < 4; k++) s += (double)A[i * 4 + k] * B[k * 5 + j];
            stat_add(&st, buf[10 + i * 5 + j], s, FWD_ATOL, FWD_RTOL, "C", i * 5 + j);
        }
    stat_end(&st);
    free(buf), free(A), free(B);
}

static void test_matmul(void) {
    test_matmul_next_to_held();
    static const int shapes[][3] = {{3, 5, 4}, {3, 1, 4}}; /* the second: a matrix · a vector */
    for (int sh = 0; sh < 2; sh++) {
        const int M = shapes[sh][0], Nc = shapes[sh][1], K = shapes[sh][2];
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++)
                for (int betacase = 0; betacase < 2; betacase++) {
                    float alpha = 0.7f, beta = betacase ? 0.0f : -0.3f;
                    Stat st;
                    stat_begin(&st, "matmul %dx%dx%d transA=%d transB=%d alpha=%.1f beta=%.1f",
                               M, Nc, K, ta, tb, alpha, beta);
                    float *A = frand((size_t)M * K, -1, 1), *Bm = frand((size_t)K * Nc, -1, 1);
                    float *C0 = frand((size_t)M * Nc, -2, 2), *C = fdup(C0, (size_t)M * Nc);
                    be->matmul(C, A, Bm, M, Nc, K, ta, tb, alpha, beta);
                    for (int i = 0; i < M; i++)
                        for (int j = 0; j < Nc; j++) {
                            double s = 0;
                            for (int k = 0; k < K; k++) {
                                double a = ta ? A[k * M + i] : A[i * K + k];
                                double b = tb ? Bm[j * K + k] : Bm[k * Nc + j];
                                s += a * b;
                            }
                            double ref = alpha * s + beta * (double)C0[i * Nc + j];
                            stat_add(&st, C[i * Nc + j], ref, FWD_ATOL, FWD_RTOL, "C",
                                     i * Nc + j);
                        }
                    stat_end(&st);
                    free(A), free(Bm), free(C0), free(C);
                }
    }
}

/* matmul_bias_forward against the double-precision product + bias (+ ReLU), and bit for bit
 * against the unfused ops it replaces (matmul + bias_forward / bias_relu_dropout_forward p = 0). */
static void test_matmul_bias_forward(void) {
    const int N = 6, C = 5, K = 7;
    for (int relu = 0; relu < 2; relu++) {
        Stat st;
        stat_begin(&st, "matmul_bias_forward relu=%d", relu);
        float *X = frand((size_t)N * K, -1, 1), *W = frand((size_t)C * K, -1, 1);
        float *b = frand(C, -1, 1), *out = frand((size_t)N * C, -9, 9);
        float *ref = fnew((size_t)N * C);
        be->matmul_bias_forward(out, X, W, b, N, C, K, relu);
        int negatives = 0;
        for (int n = 0; n < N; n++)
            for (int c = 0; c < C; c++) {
                double s = b[c];
                for (int k = 0; k < K; k++) s += (double)X[n * K + k] * W[c * K + k];
                negatives += s < 0;
                if (relu && s < 0) s = 0;
                stat_add(&st, out[n * C + c], s, FWD_ATOL, FWD_RTOL, "out", n * C + c);
            }
        stat_true(&st, negatives > 0, "no negative pre-activation: ReLU untested");
        be->matmul(ref, X, W, N, C, K, 0, 1, 1.0f, 0.0f);
        if (relu)
            be->bias_relu_dropout_forward(ref, ref, b, 0.0f, 0, N, C);
        else
            be->bias_forward(ref, b, N, C);
        stat_true(&st, memcmp(ref, out, sizeof(float) * N * C) == 0,
                  "differs from the unfused ops it replaces");
        stat_end(&st);
        free(X), free(W), free(b), free(out), free(ref);
    }
}

typedef struct {
    const float *X0, *r;
    float *bias, *out;
    int N, C;
} BiasCtx;
static double bias_loss(void *p) {
    BiasCtx *c = p;
    memcpy(c->out, c->X0, sizeof(float) * c->N * c->C);
    be->bias_forward(c->out, c->bias, c->N, c->C);
    return dot_rd(c->r, c->out, (size_t)c->N * c->C);
}

static void test_bias(void) {
    const int N = 7, C = 6;
    size_t nc = (size_t)N * C;
    float *X0 = frand(nc, -1, 1), *bias = frand(C, -1, 1), *out = fdup(X0, nc);
    Stat st;
    stat_begin(&st, "bias_forward");
    be->bias_forward(out, bias, N, C);
    for (int n = 0; n < N; n++)
        for (int c = 0; c < C; c++)
            stat_add(&st, out[n * C + c], (double)X0[n * C + c] + bias[c], FWD_ATOL, FWD_RTOL,
                     "out", n * C + c);
    stat_end(&st);

    float *r = frand(nc, -1, 1), *g0 = fnew(C);
    be->bias_backward(g0, r, N, C);
    BiasCtx ctx = {X0, r, bias, out, N, C};
    stat_begin(&st, "bias_backward vs FD");
    fd_check(&st, "dbias", bias, C, g0, bias_loss, &ctx);
    stat_end(&st);
    float *pre = frand(C, -2, 2), *acc = fdup(pre, C);
    be->bias_backward(acc, r, N, C);
    stat_begin(&st, "bias_backward accumulates");
    accum_check(&st, "dbias", acc, pre, g0, C);
    stat_end(&st);
    free(X0), free(bias), free(out), free(r), free(g0), free(pre), free(acc);

    /* one row; and more rows than the 65536 ones of bias.c: two sgemv calls, the second of one
     * row (65537) or several (70001); against the double sums, within 1e-6 of Σ|dout| (float
     * rounding over up to 70001 terms) */
    static const int NLS[] = {1, 65537, 70001};
    for (int k = 0; k < 3; k++) {
        const int NL = NLS[k], CL = 3;
        float *rl = frand((size_t)NL * CL, -1, 1), *gl = fnew(CL);
        be->bias_backward(gl, rl, NL, CL);
        stat_begin(&st, "bias_backward N=%d C=%d vs ref", NL, CL);
        for (int c = 0; c < CL; c++) {
            double ref = 0, mag = 0;
            for (int n = 0; n < NL; n++)
                ref += rl[(size_t)n * CL + c], mag += fabs(rl[(size_t)n * CL + c]);
            stat_add(&st, gl[c], ref, 1e-6 * mag, 0, "dbias", c);
        }
        stat_end(&st);
        free(rl), free(gl);
    }
}

static void test_axpy_scale(void) {
    size_t sizes[2] = {1001, 300001}; /* the second takes the OpenMP path */
    for (int k = 0; k < 2; k++) {
        size_t n = sizes[k];
        float *x = frand(n, -3, 3), *y0 = frand(n, -3, 3), *y = fdup(y0, n);
        float a = -1.37f;
        Stat st;
        stat_begin(&st, "axpy n=%zu", n);
        be->axpy(y, a, x, n);
        for (size_t i = 0; i < n; i++)
            stat_add(&st, y[i], (double)y0[i] + (double)a * x[i], FWD_ATOL, FWD_RTOL, "y",
                     (long)i);
        stat_end(&st);
        stat_begin(&st, "scale n=%zu", n);
        memcpy(y, y0, sizeof(float) * n);
        be->scale(y, a, n);
        for (size_t i = 0; i < n; i++)
            stat_add(&st, y[i], (double)a * y0[i], FWD_ATOL, FWD_RTOL, "x", (long)i);
        stat_end(&st);
        free(x), free(y0), free(y);
    }
}

static void test_sumsq_all_finite(void) {
    size_t sizes[3] = {0, 1003, 300001};
    Stat st;
    stat_begin(&st, "sumsq");
    for (int k = 0; k < 3; k++) {
        size_t n = sizes[k];
        float *x = frand(n, -2, 2);
        double ref = 0;
        for (size_t i = 0; i < n; i++) ref += (double)x[i] * (double)x[i];
        /* double accumulation of exact float products: only summation order may differ */
        stat_add(&st, be->sumsq(x, n), ref, 1e-12, 1e-10, "sumsq", (long)n);
        free(x);
    }
    stat_end(&st);

    stat_begin(&st, "all_finite");
    for (int k = 0; k < 3; k++) {
        size_t n = sizes[k];
        float *x = frand(n, -1e30f, 1e30f);
        stat_true(&st, be->all_finite(x, n) == 1, "n=%zu finite data reported non-finite", n);
        if (n) { /* the largest finite floats are finite */
            x[0] = FLT_MAX, x[n - 1] = -FLT_MAX, x[n / 2] = FLT_MIN / 4; /* a subnormal */
            stat_true(&st, be->all_finite(x, n) == 1, "n=%zu: FLT_MAX/subnormal reported", n);
        }
        free(x);
    }
    const float bads[3] = {NAN, INFINITY, -INFINITY};
    for (int k = 1; k < 3; k++) {
        size_t n = sizes[k];
        size_t pos[3] = {0, n / 2, n - 1};
        for (int b = 0; b < 3; b++)
            for (int j = 0; j < 3; j++) {
                float *x = frand(n, -1, 1);
                x[pos[j]] = bads[b];
                stat_true(&st, be->all_finite(x, n) == 0, "n=%zu: %g at %zu not detected", n,
                          (double)bads[b], pos[j]);
                free(x);
            }
    }
    stat_end(&st);
}

/* ------------------------------------------------------------------------------------------ */
/* shape ops                                                                                   */

typedef struct {
    float *a, *b, *out;
    const float *r;
    int N, Ca, Cb;
} ConcatCtx;
static double concat_loss(void *p) {
    ConcatCtx *c = p;
    be->concat2_forward(c->out, c->a, c->b, c->N, c->Ca, c->Cb);
    return dot_rd(c->r, c->out, (size_t)c->N * (c->Ca + c->Cb));
}

static void test_concat2(void) {
    const int N = 3, Ca = 4, Cb = 5, C = Ca + Cb;
    float *a = frand((size_t)N * Ca, -1, 1), *b = frand((size_t)N * Cb, -1, 1);
    float *out = fnew((size_t)N * C);
    Stat st;
    stat_begin(&st, "concat2_forward");
    be->concat2_forward(out, a, b, N, Ca, Cb);
    for (int n = 0; n < N; n++)
        for (int c = 0; c < C; c++)
            stat_add(&st, out[n * C + c], c < Ca ? a[n * Ca + c] : b[n * Cb + c - Ca], 0, 0,
                     "out", n * C + c);
    stat_end(&st);

    float *r = frand((size_t)N * C, -1, 1);
    float *ga = fnew((size_t)N * Ca), *gb = fnew((size_t)N * Cb);
    be->concat2_backward(ga, gb, r, N, Ca, Cb);
    ConcatCtx ctx = {a, b, out, r, N, Ca, Cb};
    stat_begin(&st, "concat2_backward vs FD");
    fd_check(&st, "da", a, (size_t)N * Ca, ga, concat_loss, &ctx);
    fd_check(&st, "db", b, (size_t)N * Cb, gb, concat_loss, &ctx);
    stat_end(&st);

    stat_begin(&st, "concat2_backward accumulates (and NULL)");
    float *pa = frand((size_t)N * Ca, -2, 2), *pb = frand((size_t)N * Cb, -2, 2);
    float *aa = fdup(pa, (size_t)N * Ca), *ab = fdup(pb, (size_t)N * Cb);
    be->concat2_backward(aa, ab, r, N, Ca, Cb);
    accum_check(&st, "da", aa, pa, ga, (size_t)N * Ca);
    accum_check(&st, "db", ab, pb, gb, (size_t)N * Cb);
    memcpy(aa, pa, sizeof(float) * N * Ca);
    be->concat2_backward(aa, NULL, r, N, Ca, Cb);
    accum_check(&st, "da(db NULL)", aa, pa, ga, (size_t)N * Ca);
    memcpy(ab, pb, sizeof(float) * N * Cb);
    be->concat2_backward(NULL, ab, r, N, Ca, Cb);
    accum_check(&st, "db(da NULL)", ab, pb, gb, (size_t)N * Cb);
    stat_end(&st);
    free(a), free(b), free(out), free(r), free(ga), free(gb), free(pa), free(pb), free(aa),
        free(ab);
}

typedef struct {
    float *inp, *out;
    const float *r;
    int D0, D1, C;
} TransCtx;
static double trans_loss(void *p) {
    TransCtx *c = p;
    be->transpose01_forward(c->out, c->inp, c->D0, c->D1, c->C);
    return dot_rd(c->r, c->out, (size_t)c->D0 * c->D1 * c->C);
}

static void test_transpose01(void) {
    const int D0 = 3, D1 = 4, C = 5;
    size_t n = (size_t)D0 * D1 * C;
    float *inp = frand(n, -1, 1), *out = fnew(n);
    Stat st;
    stat_begin(&st, "transpose01_forward");
    be->transpose01_forward(out, inp, D0, D1, C);
    for (int j = 0; j < D1; j++)
        for (int i = 0; i < D0; i++)
            for (int c = 0; c < C; c++)
                stat_add(&st, out[(j * D0 + i) * C + c], inp[(i * D1 + j) * C + c], 0, 0, "out",
                         (j * D0 + i) * C + c);
    stat_end(&st);

    float *r = frand(n, -1, 1), *g0 = fnew(n);
    be->transpose01_backward(g0, r, D0, D1, C);
    TransCtx ctx = {inp, out, r, D0, D1, C};
    stat_begin(&st, "transpose01_backward vs FD");
    fd_check(&st, "dinp", inp, n, g0, trans_loss, &ctx);
    stat_end(&st);
    float *pre = frand(n, -2, 2), *acc = fdup(pre, n);
    be->transpose01_backward(acc, r, D0, D1, C);
    stat_begin(&st, "transpose01_backward accumulates");
    accum_check(&st, "dinp", acc, pre, g0, n);
    stat_end(&st);
    /* C = 1 (a matrix: ids, W2ᵀ) goes through 32 x 32 tiles: 37 x 70 spans two tile rows and
     * three tile columns, the last of each partial (5 rows, 6 columns) */
    {
        const int M0 = 37, M1 = 70;
        float *a = frand((size_t)M0 * M1, -1, 1), *at = fnew((size_t)M0 * M1);
        stat_begin(&st, "transpose01_forward C=1 (tiles)");
        be->transpose01_forward(at, a, M0, M1, 1);
        for (int j = 0; j < M1; j++)
            for (int i = 0; i < M0; i++)
                stat_add(&st, at[j * M0 + i], a[i * M1 + j], 0, 0, "out", j * M0 + i);
        stat_end(&st);
        free(a), free(at);
    }
    free(inp), free(out), free(r), free(g0), free(pre), free(acc);
}

/* ------------------------------------------------------------------------------------------ */
/* element-wise                                                                                */

typedef struct {
    float *inp, *out;
    const float *r;
    size_t n;
} TanhCtx;
static double tanh_loss(void *p) {
    TanhCtx *c = p;
    be->tanh_forward(c->out, c->inp, c->n);
    return dot_rd(c->r, c->out, c->n);
}

static void test_tanh(void) {
    const size_t n = 53;
    float *inp = frand(n, -3, 3), *out = fnew(n);
    inp[0] = 0.0f, inp[1] = 20.0f, inp[2] = -20.0f;
    Stat st;
    stat_begin(&st, "tanh_forward");
    be->tanh_forward(out, inp, n);
    for (size_t i = 0; i < n; i++)
        stat_add(&st, out[i], tanh((double)inp[i]), FWD_ATOL, FWD_RTOL, "out", (long)i);
    stat_end(&st);

    float *r = frand(n, -1, 1), *g0 = fnew(n);
    be->tanh_forward(out, inp, n);
    be->tanh_backward(g0, r, out, n);
    TanhCtx ctx = {inp, out, r, n};
    stat_begin(&st, "tanh_backward vs FD");
    fd_check(&st, "dinp", inp, n, g0, tanh_loss, &ctx);
    stat_end(&st);
    be->tanh_forward(out, inp, n);
    float *pre = frand(n, -2, 2), *acc = fdup(pre, n);
    be->tanh_backward(acc, r, out, n);
    stat_begin(&st, "tanh_backward accumulates");
    accum_check(&st, "dinp", acc, pre, g0, n);
    stat_end(&st);
    free(inp), free(out), free(r), free(g0), free(pre), free(acc);
}

typedef struct {
    float *inp, *out, *mask;
    const float *r;
    float p;
    uint64_t key;
    size_t n;
} DropCtx;
static double drop_loss(void *pp) {
    DropCtx *c = pp;
    be->dropout_forward(c->out, c->mask, c->inp, c->p, c->key, c->n);
    return dot_rd(c->r, c->out, c->n);
}

static void test_dropout(void) {
    const size_t n = 100000;
    const float ps[2] = {0.3f, 0.5f};
    for (int k = 0; k < 2; k++) {
        float p = ps[k];
        Stat st;
        stat_begin(&st, "dropout_forward p=%.1f n=%zu", p, n);
        float *inp = frand(n, -1, 1), *out = fnew(n), *mask = fnew(n);
        float *out2 = fnew(n), *mask2 = fnew(n);
        uint64_t key = 0x1234567ull + (uint64_t)k;
        be->dropout_forward(out, mask, inp, p, key, n);
        double keep_val = 1.0 / (1.0 - (double)p);
        size_t kept = 0, badval = 0, badout = 0;
        for (size_t i = 0; i < n; i++) {
            if (mask[i] == 0.0f) {
                if (out[i] != 0.0f) badout++;
            } else {
                kept++;
                if (fabs(mask[i] - keep_val) > 1e-6 * keep_val) badval++;
                if (fabs(out[i] - (double)inp[i] * keep_val) > 1e-6 * (1 + fabs(out[i])))
                    badout++;
            }
        }
        stat_true(&st, badval == 0, "%zu mask values are neither 0 nor 1/(1-p)", badval);
        stat_true(&st, badout == 0, "%zu outputs differ from inp * mask", badout);
        double frac = (double)kept / n;
        stat_add(&st, frac, 1.0 - p, 0.01, 0, "fraction kept", 0);
        /* same key: bit-identical; a prefix is the same stream (mask[i] depends on (key, i)) */
        be->dropout_forward(out2, mask2, inp, p, key, n);
        stat_true(&st, memcmp(mask, mask2, sizeof(float) * n) == 0, "same key, different mask");
        stat_true(&st, memcmp(out, out2, sizeof(float) * n) == 0, "same key, different out");
        be->dropout_forward(out2, mask2, inp, p, key, 1000);
        stat_true(&st, memcmp(mask, mask2, sizeof(float) * 1000) == 0,
                  "mask of a prefix differs from the prefix of the mask");
        /* another key: a different mask (expected disagreement 2p(1-p) ≥ 0.42) */
        be->dropout_forward(out2, mask2, inp, p, key + 1, n);
        size_t differ = 0;
        for (size_t i = 0; i < n; i++) differ += (mask[i] == 0.0f) != (mask2[i] == 0.0f);
        stat_true(&st, differ > n * 0.3, "key+1 gives a mask that differs in only %zu places",
                  differ);
        /* no structure along i: agreement of mask[i] and mask[i+lag] ≈ p² + (1−p)² */
        const size_t lags[6] = {1, 2, 255, 1024, 4096, 65536};
        for (int l = 0; l < 6; l++) {
            size_t agree = 0, m = n - lags[l];
            for (size_t i = 0; i < m; i++) agree += (mask[i] == 0.0f) == (mask[i + lags[l]] == 0.0f);
            stat_add(&st, (double)agree / m, (double)p * p + (1.0 - p) * (1.0 - p), 0.02, 0,
                     "lag agreement", (long)lags[l]);
        }
        be->dropout_forward(out2, mask2, inp, p, key ^ 0x8000000000000000ull, n);
        differ = 0;
        for (size_t i = 0; i < n; i++) differ += (mask[i] == 0.0f) != (mask2[i] == 0.0f);
        stat_true(&st, differ > n * 0.3, "high-bit key gives a mask differing in only %zu places",
                  differ);
        stat_end(&st);
        free(inp), free(out), free(mask), free(out2), free(mask2);
    }
    {
        /* u == p exactly is kept (u >= p): keys whose element draws u = p, found by search */
        static const struct { float p; uint64_t key; size_t i; } edge[2] = {
            {0.3f, 2391, 2954}, {0.5f, 19341, 640}};
        for (int k = 0; k < 2; k++) {
            Stat st;
            stat_begin(&st, "dropout_forward keeps u == p (p=%.1f)", edge[k].p);
            size_t m = edge[k].i + 1;
            float u = (float)(rng_hash(edge[k].key, edge[k].i) >> 8) * (1.0f / 16777216.0f);
            stat_true(&st, u == edge[k].p, "the case's draw %.9g is not p %.9g", u, edge[k].p);
            float *inp = frand(m, 1, 2), *out = fnew(m), *mask = fnew(m);
            be->dropout_forward(out, mask, inp, edge[k].p, edge[k].key, m);
            stat_true(&st, mask[edge[k].i] == 1.0f / (1.0f - edge[k].p),
                      "element %zu, u == p, dropped (mask %g)", edge[k].i, mask[edge[k].i]);
            stat_end(&st);
            free(inp), free(out), free(mask);
        }
    }
    {
        Stat st;
        stat_begin(&st, "dropout_forward p=0 is the identity");
        float *inp = frand(1000, -1, 1), *out = fnew(1000), *mask = fnew(1000);
        be->dropout_forward(out, mask, inp, 0.0f, 99, 1000);
        for (int i = 0; i < 1000; i++) {
            stat_add(&st, out[i], inp[i], 0, 0, "out", i);
            stat_add(&st, mask[i], 1.0, 0, 0, "mask", i);
        }
        stat_end(&st);
        free(inp), free(out), free(mask);
    }
    {
        const size_t m = 41;
        float *inp = frand(m, -1, 1), *out = fnew(m), *mask = fnew(m), *r = frand(m, -1, 1);
        float *g0 = fnew(m);
        DropCtx ctx = {inp, out, mask, r, 0.4f, 777, m};
        be->dropout_forward(out, mask, inp, ctx.p, ctx.key, m);
        be->dropout_backward(g0, r, mask, m);
        Stat st;
        stat_begin(&st, "dropout_backward vs FD");
        fd_check(&st, "dinp", inp, m, g0, drop_loss, &ctx);
        stat_end(&st);
        be->dropout_forward(out, mask, inp, ctx.p, ctx.key, m);
        float *pre = frand(m, -2, 2), *acc = fdup(pre, m);
        be->dropout_backward(acc, r, mask, m);
        stat_begin(&st, "dropout_backward accumulates");
        accum_check(&st, "dinp", acc, pre, g0, m);
        stat_end(&st);
        free(inp), free(out), free(mask), free(r), free(g0), free(pre), free(acc);
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Transformer pieces: layernorm, bias_relu_dropout, permute0213, write_step (gather_rows_strided */
/* is with the rows below)                                                                    */

/* Double-precision layer normalisation of one row of C (ops.h: biased variance, ε = 1e-5);
 * when dout is given, also the gradients of L = Σ dout ⊙ out with respect to the row (dx,
 * written) and to weight and bias (dw, db, added), by the chain rule written out plainly:
 * x̂ = (x − μ)·rstd, out = x̂ w + b, with g = dout ⊙ w:
 * dx_c = rstd·(g_c − mean(g) − x̂_c·mean(g ⊙ x̂)), dw_c += dout_c x̂_c, db_c += dout_c. */
static void layernorm_ref(double *out, double *mean, double *rstd, double *dx, double *dw,
                          double *db, const float *x, const float *w, const float *b,
                          const float *dout, int C) {
    double mu = 0, var = 0;
    for (int c = 0; c < C; c++) mu += x[c];
    mu /= C;
    for (int c = 0; c < C; c++) var += ((double)x[c] - mu) * ((double)x[c] - mu);
    var /= C;
    double rs = 1.0 / sqrt(var + 1e-5);
    *mean = mu, *rstd = rs;
    for (int c = 0; c < C; c++) out[c] = ((double)x[c] - mu) * rs * w[c] + b[c];
    if (!dout) return;
    double mg = 0, mgx = 0;
    for (int c = 0; c < C; c++) {
        double xh = ((double)x[c] - mu) * rs, g = (double)dout[c] * w[c];
        mg += g, mgx += g * xh;
        dw[c] += (double)dout[c] * xh;
        db[c] += dout[c];
    }
    mg /= C, mgx /= C;
    for (int c = 0; c < C; c++) {
        double xh = ((double)x[c] - mu) * rs;
        dx[c] = rs * ((double)dout[c] * w[c] - mg - xh * mgx);
    }
}

typedef struct {
    float *inp, *weight, *bias, *out, *mean, *rstd;
    const float *r;
    int N, C;
} LnCtx;
static double ln_loss(void *p) {
    LnCtx *c = p;
    be->layernorm_forward(c->out, c->mean, c->rstd, c->inp, c->weight, c->bias, c->N, c->C);
    return dot_rd(c->r, c->out, (size_t)c->N * c->C);
}

static void test_layernorm(void) {
    /* C > 16: dweight and dbias are summed in blocks of 16 columns; 19 gives a full block and a
     * partial one */
    const int N = 5, C = 19;
    size_t nc = (size_t)N * C;
    float *inp = frand(nc, -2, 2), *weight = frand(C, -1.5f, 1.5f), *bias = frand(C, -1, 1);
    for (int c = 0; c < C; c++) {
        inp[1 * C + c] = 0.7f;    /* a constant row: σ² = 0, rstd = 1/√ε, out = bias */
        inp[3 * C + c] += 100.0f; /* |μ| ≫ σ: μ rounded to float32 costs ≤ 4e-6 in out */
    }
    float *out = fnew(nc), *mean = fnew(N), *rstd = fnew(N);
    /* garbage in the outputs: the op must write every element */
    for (size_t i = 0; i < nc; i++) out[i] = 123.0f;
    for (int n = 0; n < N; n++) mean[n] = rstd[n] = 123.0f;
    Stat st;
    stat_begin(&st, "layernorm_forward N%d C%d (constant row, offset row)", N, C);
    be->layernorm_forward(out, mean, rstd, inp, weight, bias, N, C);
    for (int n = 0; n < N; n++) {
        double ro[64], rm, rr;
        layernorm_ref(ro, &rm, &rr, NULL, NULL, NULL, inp + (size_t)n * C, weight, bias, NULL, C);
        stat_add(&st, mean[n], rm, FWD_ATOL, FWD_RTOL, "mean", n);
        stat_add(&st, rstd[n], rr, FWD_ATOL, FWD_RTOL, "rstd", n);
        for (int c = 0; c < C; c++)
            stat_add(&st, out[n * C + c], ro[c], FWD_ATOL, FWD_RTOL, "out", n * C + c);
    }
    stat_end(&st);

    /* backward: L = Σ r ⊙ out, on plain random rows (the constant row's 1/√ε scale would swamp
     * the finite differences) */
    float *x = frand(nc, -2, 2), *r = frand(nc, -1, 1);
    float *gx = fnew(nc), *gw = fnew(C), *gb = fnew(C);
    be->layernorm_forward(out, mean, rstd, x, weight, bias, N, C);
    be->layernorm_backward(gx, gw, gb, r, x, weight, mean, rstd, N, C);
    LnCtx ctx = {x, weight, bias, fnew(nc), fnew(N), fnew(N), r, N, C};
    stat_begin(&st, "layernorm_backward vs FD N%d C%d", N, C);
    fd_check(&st, "dinp", x, nc, gx, ln_loss, &ctx);
    fd_check(&st, "dweight", weight, C, gw, ln_loss, &ctx);
    fd_check(&st, "dbias", bias, C, gb, ln_loss, &ctx);
    stat_end(&st);

    stat_begin(&st, "layernorm_backward accumulates N%d C%d", N, C);
    float *px = frand(nc, -2, 2), *pw = frand(C, -2, 2), *pb = frand(C, -2, 2);
    float *ax = fdup(px, nc), *aw = fdup(pw, C), *ab = fdup(pb, C);
    be->layernorm_backward(ax, aw, ab, r, x, weight, mean, rstd, N, C);
    accum_check(&st, "dinp", ax, px, gx, nc);
    accum_check(&st, "dweight", aw, pw, gw, C);
    accum_check(&st, "dbias", ab, pb, gb, C);
    stat_end(&st);
    free(inp), free(weight), free(bias), free(out), free(mean), free(rstd), free(x), free(r);
    free(gx), free(gw), free(gb), free(ctx.out), free(ctx.mean), free(ctx.rstd), free(px);
    free(pw), free(pb), free(ax), free(aw), free(ab);
}

/* A shape above layernorm's OpenMP threshold (N·C > 32768): forward and backward against the
 * double-precision reference (finite differences would be slow here; tolerance for sums over
 * N rows and C columns in float32: |got − ref| ≤ 1e-4 + 1e-4·|ref|), and the results
 * bit-identical for 1 and 2 OpenMP threads (ops.h: dweight, dbias summed in a fixed order). */
static void test_layernorm_parallel(void) {
    enum { N = 40, C = 901 };
    size_t nc = (size_t)N * C;
    float *x = frand(nc, -2, 2), *w = frand(C, -1.5f, 1.5f), *b = frand(C, -1, 1);
    float *r = frand(nc, -1, 1);
    for (int c = 0; c < C; c++) x[7 * C + c] = 3.0f * x[7 * C + c] - 20.0f; /* other μ, σ */
    double *ro = malloc(sizeof(double) * nc), *rx = malloc(sizeof(double) * nc);
    double *rm = malloc(sizeof(double) * N), *rr = malloc(sizeof(double) * N);
    double *rw = calloc(C, sizeof(double)), *rb = calloc(C, sizeof(double));
    for (int n = 0; n < N; n++)
        layernorm_ref(ro + (size_t)n * C, rm + n, rr + n, rx + (size_t)n * C, rw, rb,
                      x + (size_t)n * C, w, b, r + (size_t)n * C, C);
    int threads0 = omp_get_max_threads();
    float *out[2], *mean[2], *rstd[2], *gx[2], *gw[2], *gb[2];
    for (int i = 0; i < 2; i++) {
        omp_set_num_threads(i + 1);
        out[i] = fnew(nc), mean[i] = fnew(N), rstd[i] = fnew(N);
        gx[i] = fnew(nc), gw[i] = fnew(C), gb[i] = fnew(C);
        be->layernorm_forward(out[i], mean[i], rstd[i], x, w, b, N, C);
        be->layernorm_backward(gx[i], gw[i], gb[i], r, x, w, mean[i], rstd[i], N, C);
    }
    omp_set_num_threads(threads0);
    Stat st;
    stat_begin(&st, "layernorm N%d C%d (OpenMP) vs ref", N, C);
    for (int n = 0; n < N; n++) {
        stat_add(&st, mean[1][n], rm[n], FWD_ATOL, FWD_RTOL, "mean", n);
        stat_add(&st, rstd[1][n], rr[n], FWD_ATOL, FWD_RTOL, "rstd", n);
    }
    for (size_t i = 0; i < nc; i++) {
        stat_add(&st, out[1][i], ro[i], FWD_ATOL, FWD_RTOL, "out", (long)i);
        stat_add(&st, gx[1][i], rx[i], 1e-4, 1e-4, "dinp", (long)i);
    }
    for (int c = 0; c < C; c++) {
        stat_add(&st, gw[1][c], rw[c], 1e-4, 1e-4, "dweight", c);
        stat_add(&st, gb[1][c], rb[c], 1e-4, 1e-4, "dbias", c);
    }
    stat_end(&st);
    stat_begin(&st, "layernorm N%d C%d bit-identical for 1 and 2 threads", N, C);
    stat_true(&st, memcmp(out[0], out[1], sizeof(float) * nc) == 0, "out differs");
    stat_true(&st, memcmp(mean[0], mean[1], sizeof(float) * N) == 0, "mean differs");
    stat_true(&st, memcmp(rstd[0], rstd[1], sizeof(float) * N) == 0, "rstd differs");
    stat_true(&st, memcmp(gx[0], gx[1], sizeof(float) * nc) == 0, "dinp differs");
    stat_true(&st, memcmp(gw[0], gw[1], sizeof(float) * C) == 0, "dweight differs");
    stat_true(&st, memcmp(gb[0], gb[1], sizeof(float) * C) == 0, "dbias differs");
    stat_end(&st);
    for (int i = 0; i < 2; i++)
        free(out[i]), free(mean[i]), free(rstd[i]), free(gx[i]), free(gw[i]), free(gb[i]);
    free(x), free(w), free(b), free(r), free(ro), free(rx), free(rm), free(rr), free(rw);
    free(rb);
}

typedef struct {
    float *inp, *out;
    const float *bias, *r;
    float p;
    uint64_t key;
    int N, C;
} ReluCtx;
static double relu_loss(void *p) {
    ReluCtx *c = p;
    be->bias_relu_dropout_forward(c->out, c->inp, c->bias, c->p, c->key, c->N, c->C);
    return dot_rd(c->r, c->out, (size_t)c->N * c->C);
}

static void test_relu(void) {
    /* bias_relu_dropout_forward: out = max(inp + bias, 0) · mask with the mask of dropout_forward
     * (same key, same flattened index: compared bit for bit); relu_dropout_backward (from out
     * and p alone): dinp = dout · mask · [inp + bias > 0], overwritten — exact (tolerance 0). The
     * second shape takes the OpenMP path; p = 0 gives mask 1 and a plain bias + relu. */
    const int shapes[2][2] = {{7, 9}, {70, 1001}};
    for (int k = 0; k < 2; k++)
        for (int pi = 0; pi < 2; pi++) {
            int N = shapes[k][0], C = shapes[k][1];
            size_t n = (size_t)N * C;
            float p = pi ? 0.3f : 0.0f;
            uint64_t key = 0x5eed + k;
            float *inp = frand(n, -3, 3), *bias = frand(C, -1, 1), *out = fnew(n);
            float *dout = frand(n, -1, 1), *g = frand(n, -5, 5), *dm = fnew(n), *tmp = fnew(n);
            float *pre = fnew(n);
            inp[0] = -bias[0], inp[1] = 1e-30f - bias[1], inp[2] = -1e-30f - bias[2];
            for (int i = 0; i < N; i++)
                for (int c = 0; c < C; c++) pre[(size_t)i * C + c] = inp[(size_t)i * C + c] + bias[c];
            be->dropout_forward(tmp, dm, pre, p, key, n); /* the reference mask */
            be->bias_relu_dropout_forward(out, inp, bias, p, key, N, C);
            Stat st;
            stat_begin(&st, "bias_relu_dropout_forward %dx%d p=%.1f", N, C, (double)p);
            long dropped = 0;
            for (size_t i = 0; i < n; i++) {
                float x = inp[i] + bias[i % C];
                stat_add(&st, out[i], (x > 0 ? x : 0.0f) * dm[i], 0, 0, "out", (long)i);
                dropped += dm[i] == 0.0f;
            }
            stat_true(&st, p > 0 ? dropped > 0 && dropped < (long)n : dropped == 0,
                      "%ld of %zu elements dropped at p = %g", dropped, n, (double)p);
            stat_end(&st);
            be->relu_dropout_backward(g, dout, out, p, n);
            stat_begin(&st, "relu_dropout_backward %dx%d p=%.1f (overwrites)", N, C, (double)p);
            for (size_t i = 0; i < n; i++) {
                float x = inp[i] + bias[i % C];
                stat_add(&st, g[i], x > 0 ? dout[i] * dm[i] : 0.0f, 0, 0, "dinp", (long)i);
            }
            stat_end(&st);
            /* in place (out == inp) gives the same */
            memcpy(tmp, inp, sizeof(float) * n);
            be->bias_relu_dropout_forward(tmp, tmp, bias, p, key, N, C);
            stat_begin(&st, "bias_relu_dropout_forward in place %dx%d p=%.1f", N, C, (double)p);
            for (size_t i = 0; i < n; i++) stat_add(&st, tmp[i], out[i], 0, 0, "out", (long)i);
            stat_end(&st);
            free(inp), free(bias), free(out), free(dout), free(g), free(dm), free(tmp);
            free(pre);
        }
    /* finite differences w.r.t. inp and (through bias_backward) bias: pre-activations at least
     * 0.05 away from the kink at 0 (ε = 1e-3) */
    const int N = 5, C = 8;
    const size_t n = (size_t)N * C;
    float *inp = frand(n, 0.05f, 3), *bias = fnew(C), *out = fnew(n);
    float *r = frand(n, -1, 1), *g = fnew(n), *gb = fnew(C);
    for (size_t i = 0; i < n; i += 2) inp[i] = -inp[i];
    ReluCtx ctx = {inp, out, bias, r, 0.25f, 77, N, C};
    be->bias_relu_dropout_forward(out, inp, bias, 0.25f, 77, N, C);
    be->relu_dropout_backward(g, r, out, 0.25f, n);
    be->bias_backward(gb, g, N, C);
    Stat st;
    stat_begin(&st, "relu_dropout_backward vs FD (inp, bias)");
    fd_check(&st, "dinp", inp, n, g, relu_loss, &ctx);
    fd_check(&st, "dbias", bias, C, gb, relu_loss, &ctx);
    stat_end(&st);
    free(inp), free(bias), free(out), free(r), free(g), free(gb);
}

typedef struct {
    float *inp, *out;
    const float *r;
    int A, D0, D1, C;
} PermCtx;
static double perm_loss(void *p) {
    PermCtx *c = p;
    be->permute0213_forward(c->out, c->inp, c->A, c->D0, c->D1, c->C);
    return dot_rd(c->r, c->out, (size_t)c->A * c->D0 * c->D1 * c->C);
}

/* out[a,j,i,c] = inp[a,i,j,c]: a copy, so forward and backward are exact (tolerance 0). */
static void test_permute0213(int A, int D0, int D1, int C) {
    size_t n = (size_t)A * D0 * D1 * C;
    float *inp = frand(n, -1, 1), *out = fnew(n), *back = fnew(n);
    for (size_t i = 0; i < n; i++) out[i] = back[i] = 123.0f;
    Stat st;
    stat_begin(&st, "permute0213_forward A%d D0 %d D1 %d C%d", A, D0, D1, C);
    be->permute0213_forward(out, inp, A, D0, D1, C);
    for (int a = 0; a < A; a++)
        for (int i = 0; i < D0; i++)
            for (int j = 0; j < D1; j++)
                for (int c = 0; c < C; c++) {
                    size_t o = (((size_t)a * D1 + j) * D0 + i) * C + c;
                    stat_add(&st, out[o], inp[(((size_t)a * D0 + i) * D1 + j) * C + c], 0, 0,
                             "out", (long)o);
                }
    /* swapping back (D0 and D1 exchanged: merging heads after splitting them) is the identity */
    be->permute0213_forward(back, out, A, D1, D0, C);
    stat_true(&st, memcmp(back, inp, sizeof(float) * n) == 0, "permuting back is not the identity");
    stat_end(&st);

    /* dinp[a,i,j,c] += dout[a,j,i,c]: from zero, and onto a prefill (exactly one float add) */
    float *dout = frand(n, -1, 1), *g = fnew(n), *pre = frand(n, -2, 2), *acc = fdup(pre, n);
    be->permute0213_backward(g, dout, A, D0, D1, C);
    be->permute0213_backward(acc, dout, A, D0, D1, C);
    stat_begin(&st, "permute0213_backward A%d D0 %d D1 %d C%d exact, accumulates", A, D0, D1, C);
    for (int a = 0; a < A; a++)
        for (int i = 0; i < D0; i++)
            for (int j = 0; j < D1; j++)
                for (int c = 0; c < C; c++) {
                    size_t di = (((size_t)a * D0 + i) * D1 + j) * C + c;
                    float go = dout[(((size_t)a * D1 + j) * D0 + i) * C + c];
                    stat_add(&st, g[di], go, 0, 0, "dinp", (long)di);
                    stat_add(&st, acc[di], pre[di] + go, 0, 0, "dinp (prefilled)", (long)di);
                }
    stat_end(&st);
    if (n <= 1000) { /* and the adjoint of the forward, by finite differences */
        PermCtx ctx = {inp, fnew(n), dout, A, D0, D1, C};
        stat_begin(&st, "permute0213_backward vs FD A%d D0 %d D1 %d C%d", A, D0, D1, C);
        fd_check(&st, "dinp", inp, n, g, perm_loss, &ctx);
        stat_end(&st);
        free(ctx.out);
    }
    free(inp), free(out), free(back), free(dout), free(g), free(pre), free(acc);
}

/* cache[n,t,:] = x[n,:] for n < N; everything else in the cache (other steps, a row n = N
 * beyond the ones written) stays exactly as it was. */
static void test_write_step(void) {
    enum { N = 3, Tcap = 6, C = 5 };
    const int steps[3] = {0, 2, Tcap - 1};
    size_t ncache = (size_t)(N + 1) * Tcap * C;
    float *cache = frand(ncache, -1, 1), *before = fnew(ncache);
    Stat st;
    stat_begin(&st, "write_step N%d Tcap%d C%d (t = 0, 2, Tcap-1)", N, Tcap, C);
    for (int k = 0; k < 3; k++) {
        int t = steps[k];
        float *x = frand((size_t)N * C, -1, 1), *x0 = fdup(x, (size_t)N * C);
        memcpy(before, cache, sizeof(float) * ncache);
        be->write_step(cache, x, N, Tcap, t, C);
        for (int n = 0; n <= N; n++)
            for (int tt = 0; tt < Tcap; tt++)
                for (int c = 0; c < C; c++) {
                    size_t i = ((size_t)n * Tcap + tt) * C + c;
                    if (n < N && tt == t)
                        stat_add(&st, cache[i], x[n * C + c], 0, 0, "written", (long)i);
                    else
                        stat_add(&st, cache[i], before[i], 0, 0, "untouched", (long)i);
                }
        stat_true(&st, memcmp(x, x0, sizeof(float) * N * C) == 0, "x modified");
        free(x), free(x0);
    }
    stat_end(&st);
    free(cache), free(before);
}

/* ------------------------------------------------------------------------------------------ */
/* embedding                                                                                   */

typedef struct {
    const int *ids;
    float *table, *out;
    const float *r;
    int N, E;
} EmbCtx;
static double emb_loss(void *p) {
    EmbCtx *c = p;
    be->embedding_forward(c->out, c->ids, c->table, c->N, c->E);
    return dot_rd(c->r, c->out, (size_t)c->N * c->E);
}

static void test_embedding(void) {
    const int V = 7, E = 5, N = 9;
    const int ids[9] = {3, 1, 3, 0, 6, 3, 1, 2, 3}; /* repeats; row 4 and 5 unused */
    size_t vt = (size_t)V * E, ne = (size_t)N * E;
    float *table = frand(vt, -1, 1), *out = fnew(ne);
    Stat st;
    stat_begin(&st, "embedding_forward");
    be->embedding_forward(out, ids, table, N, E);
    for (int n = 0; n < N; n++)
        for (int e = 0; e < E; e++)
            stat_add(&st, out[n * E + e], table[ids[n] * E + e], 0, 0, "out", n * E + e);
    stat_end(&st);

    float *r = frand(ne, -1, 1), *g0 = fnew(vt);
    be->embedding_backward(g0, r, ids, N, E);
    EmbCtx ctx = {ids, table, out, r, N, E};
    stat_begin(&st, "embedding_backward vs FD");
    fd_check(&st, "dtable", table, vt, g0, emb_loss, &ctx);
    stat_end(&st);

    float *pre = frand(vt, -2, 2), *acc = fdup(pre, vt), *acc2 = fdup(pre, vt);
    be->embedding_backward(acc, r, ids, N, E);
    stat_begin(&st, "embedding_backward accumulates");
    accum_check(&st, "dtable", acc, pre, g0, vt);
    stat_end(&st);
    /* Deterministic: rows summed in order, i.e. bit-identical to a sequential float loop, and
     * to a second run. */
    stat_begin(&st, "embedding_backward deterministic (repeated ids)");
    float *seq = fdup(pre, vt);
    for (int n = 0; n < N; n++)
        for (int e = 0; e < E; e++) seq[ids[n] * E + e] += r[n * E + e];
    be->embedding_backward(acc2, r, ids, N, E);
    for (size_t i = 0; i < vt; i++) {
        stat_add(&st, acc[i], seq[i], 0, 0, "vs in-order sum", (long)i);
        stat_add(&st, acc2[i], acc[i], 0, 0, "run twice", (long)i);
    }
    stat_end(&st);
    free(table), free(out), free(r), free(g0), free(pre), free(acc), free(acc2), free(seq);
}

/* ------------------------------------------------------------------------------------------ */
/* LSTM cell                                                                                   */

static double sigm(double x) { return 1.0 / (1.0 + exp(-x)); }

typedef struct {
    float *pre;   /* [B,4H] saved pre-activations (perturbed by the FD) */
    float *gates; /* [B,4H] scratch: overwritten by the forward */
    float *h, *c, *h_prev, *c_prev;
    const float *mask, *rh, *rc;
    int B, H;
} LstmCtx;
static double lstm_loss(void *p) {
    LstmCtx *x = p;
    size_t g = (size_t)x->B * 4 * x->H, bh = (size_t)x->B * x->H;
    memcpy(x->gates, x->pre, sizeof(float) * g); /* the forward writes activations in place */
    be->lstm_cell_forward(x->h, x->c, x->gates, x->h_prev, x->c_prev, x->mask, x->B, x->H);
    return dot_rd(x->rh, x->h, bh) + dot_rd(x->rc, x->c, bh);
}

static void test_lstm(int with_mask) {
    const int B = 4, H = 5;
    const float maskv[4] = {1, 0, 1, 0};
    const float *mask = with_mask ? maskv : NULL;
    size_t g = (size_t)B * 4 * H, bh = (size_t)B * H;
    float *pre = frand(g, -2, 2), *gates = fdup(pre, g);
    float *h_prev = frand(bh, -1, 1), *c_prev = frand(bh, -1.5f, 1.5f);
    float *h = fnew(bh), *c = fnew(bh);
    Stat st;
    stat_begin(&st, "lstm_cell_forward (%s)", with_mask ? "mask 1,0,1,0" : "mask NULL");
    be->lstm_cell_forward(h, c, gates, h_prev, c_prev, mask, B, H);
    for (int b = 0; b < B; b++)
        for (int j = 0; j < H; j++) {
            const float *pr = pre + (size_t)b * 4 * H;
            double i = sigm(pr[j]), f = sigm(pr[H + j]), gg = tanh(pr[2 * H + j]),
                   o = sigm(pr[3 * H + j]);
            double cp = c_prev[b * H + j];
            double cn = f * cp + i * gg, hn = o * tanh(cn);
            const float *ga = gates + (size_t)b * 4 * H;
            stat_add(&st, ga[j], i, FWD_ATOL, FWD_RTOL, "act i", b * 4 * H + j);
            stat_add(&st, ga[H + j], f, FWD_ATOL, FWD_RTOL, "act f", b * 4 * H + H + j);
            stat_add(&st, ga[2 * H + j], gg, FWD_ATOL, FWD_RTOL, "act g", b * 4 * H + 2 * H + j);
            stat_add(&st, ga[3 * H + j], o, FWD_ATOL, FWD_RTOL, "act o", b * 4 * H + 3 * H + j);
            if (mask && mask[b] == 0.0f) { /* masked row keeps its state, exactly */
                stat_add(&st, c[b * H + j], c_prev[b * H + j], 0, 0, "c (masked)", b * H + j);
                stat_add(&st, h[b * H + j], h_prev[b * H + j], 0, 0, "h (masked)", b * H + j);
            } else {
                stat_add(&st, c[b * H + j], cn, FWD_ATOL, FWD_RTOL, "c", b * H + j);
                stat_add(&st, h[b * H + j], hn, FWD_ATOL, FWD_RTOL, "h", b * H + j);
            }
        }
    stat_end(&st);

    /* L = Σ rh ⊙ h + Σ rc ⊙ c, so dh = rh, dc = rc. */
    float *rh = frand(bh, -1, 1), *rc = frand(bh, -1, 1);
    float *dg = fnew(g), *dhp = fnew(bh), *dcp = fnew(bh);
    memcpy(gates, pre, sizeof(float) * g);
    be->lstm_cell_forward(h, c, gates, h_prev, c_prev, mask, B, H);
    be->lstm_cell_backward(dg, dhp, dcp, rh, rc, gates, c, c_prev, mask, B, H);
    LstmCtx ctx = {pre, fnew(g), fnew(bh), fnew(bh), h_prev, c_prev, mask, rh, rc, B, H};
    stat_begin(&st, "lstm_cell_backward vs FD (%s)", with_mask ? "mask 1,0,1,0" : "mask NULL");
    fd_check(&st, "dgates", pre, g, dg, lstm_loss, &ctx);
    fd_check(&st, "dc_prev", c_prev, bh, dcp, lstm_loss, &ctx);
    fd_check(&st, "dh_prev", h_prev, bh, dhp, lstm_loss, &ctx);
    stat_end(&st);

    /* dh_prev, dc_prev accumulate; dgates is documented as overwritten (a temporary). */
    stat_begin(&st, "lstm_cell_backward accumulates (%s)", with_mask ? "mask" : "no mask");
    float *pg = frand(g, -3, 3), *ph = frand(bh, -2, 2), *pc = frand(bh, -2, 2);
    float *ag = fdup(pg, g), *ah = fdup(ph, bh), *ac = fdup(pc, bh);
    be->lstm_cell_backward(ag, ah, ac, rh, rc, gates, c, c_prev, mask, B, H);
    for (size_t i = 0; i < g; i++)
        stat_add(&st, ag[i], dg[i], 0, 0, "dgates overwritten", (long)i);
    accum_check(&st, "dh_prev", ah, ph, dhp, bh);
    accum_check(&st, "dc_prev", ac, pc, dcp, bh);
    stat_end(&st);
    free(pre), free(gates), free(h_prev), free(c_prev), free(h), free(c), free(rh), free(rc);
    free(dg), free(dhp), free(dcp), free(ctx.gates), free(ctx.h), free(ctx.c);
    free(pg), free(ph), free(pc), free(ag), free(ah), free(ac);
}

/* ------------------------------------------------------------------------------------------ */
/* GRU cell                                                                                    */

typedef struct {
    float *pre; /* [B,3H] saved x-side pre-activations (perturbed by the FD) */
    float *gx;  /* [B,3H] scratch: overwritten by the forward */
    float *gh, *h, *h_prev;
    const float *mask, *rh;
    int B, H;
} GruCtx;
static double gru_loss(void *p) {
    GruCtx *x = p;
    memcpy(x->gx, x->pre, sizeof(float) * x->B * 3 * x->H); /* activations are written in place */
    be->gru_cell_forward(x->h, x->gx, x->gh, x->h_prev, x->mask, x->B, x->H);
    return dot_rd(x->rh, x->h, (size_t)x->B * x->H);
}

static void test_gru(int with_mask) {
    const int B = 3, H = 5;
    const float maskv[3] = {1, 0, 1};
    const float *mask = with_mask ? maskv : NULL;
    const char *mtag = with_mask ? "mask 1,0,1" : "mask NULL";
    size_t g = (size_t)B * 3 * H, bh = (size_t)B * H;
    float *pre = frand(g, -2, 2), *gx = fdup(pre, g), *gh = frand(g, -2, 2);
    float *h_prev = frand(bh, -1, 1), *h = fnew(bh);
    for (size_t i = 0; i < bh; i++) h[i] = 123.0f; /* the op must write every element */
    Stat st;
    stat_begin(&st, "gru_cell_forward (%s)", mtag);
    be->gru_cell_forward(h, gx, gh, h_prev, mask, B, H);
    for (int b = 0; b < B; b++)
        for (int j = 0; j < H; j++) {
            const float *px = pre + (size_t)b * 3 * H, *ph = gh + (size_t)b * 3 * H;
            double r = sigm((double)px[j] + ph[j]), z = sigm((double)px[H + j] + ph[H + j]);
            double n = tanh((double)px[2 * H + j] + r * ph[2 * H + j]);
            double hp = h_prev[b * H + j], hn = (1 - z) * n + z * hp;
            const float *ga = gx + (size_t)b * 3 * H;
            stat_add(&st, ga[j], r, FWD_ATOL, FWD_RTOL, "act r", b * 3 * H + j);
            stat_add(&st, ga[H + j], z, FWD_ATOL, FWD_RTOL, "act z", b * 3 * H + H + j);
            stat_add(&st, ga[2 * H + j], n, FWD_ATOL, FWD_RTOL, "act n", b * 3 * H + 2 * H + j);
            if (mask && mask[b] == 0.0f) /* masked row keeps its state, exactly */
                stat_add(&st, h[b * H + j], hp, 0, 0, "h (masked)", b * H + j);
            else
                stat_add(&st, h[b * H + j], hn, FWD_ATOL, FWD_RTOL, "h", b * H + j);
        }
    stat_end(&st);

    /* L = Σ rh ⊙ h, so dh = rh. gh is an input of the op like gx, so FD on gh gives dgh, and
     * FD on h_prev (gh held fixed) gives the direct z ⊙ h_prev path that dh_prev holds. */
    float *rh = frand(bh, -1, 1);
    float *dgx = fnew(g), *dgh = fnew(g), *dhp = fnew(bh);
    memcpy(gx, pre, sizeof(float) * g);
    be->gru_cell_forward(h, gx, gh, h_prev, mask, B, H);
    be->gru_cell_backward(dgx, dgh, dhp, rh, gx, gh, h_prev, mask, B, H);
    GruCtx ctx = {pre, fnew(g), gh, fnew(bh), h_prev, mask, rh, B, H};
    stat_begin(&st, "gru_cell_backward vs FD (%s)", mtag);
    fd_check(&st, "dgx", pre, g, dgx, gru_loss, &ctx);
    fd_check(&st, "dgh", gh, g, dgh, gru_loss, &ctx);
    fd_check(&st, "dh_prev", h_prev, bh, dhp, gru_loss, &ctx);
    if (mask) /* a masked row: exactly zero pre-activation gradients, dh passed through */
        for (int b = 0; b < B; b++) {
            if (mask[b] != 0.0f) continue;
            for (int j = 0; j < 3 * H; j++) {
                stat_add(&st, dgx[b * 3 * H + j], 0.0, 0, 0, "dgx (masked row)", b * 3 * H + j);
                stat_add(&st, dgh[b * 3 * H + j], 0.0, 0, 0, "dgh (masked row)", b * 3 * H + j);
            }
            for (int j = 0; j < H; j++)
                stat_add(&st, dhp[b * H + j], rh[b * H + j], 0, 0, "dh_prev (masked row)",
                         b * H + j);
        }
    stat_end(&st);

    /* dh_prev accumulates; dgx and dgh are documented as overwritten (temporaries). */
    stat_begin(&st, "gru_cell_backward accumulates (%s)", mtag);
    float *px = frand(g, -3, 3), *pg = frand(g, -3, 3), *ph = frand(bh, -2, 2);
    float *ax = fdup(px, g), *ag = fdup(pg, g), *ah = fdup(ph, bh);
    be->gru_cell_backward(ax, ag, ah, rh, gx, gh, h_prev, mask, B, H);
    for (size_t i = 0; i < g; i++) {
        stat_add(&st, ax[i], dgx[i], 0, 0, "dgx overwritten", (long)i);
        stat_add(&st, ag[i], dgh[i], 0, 0, "dgh overwritten", (long)i);
    }
    accum_check(&st, "dh_prev", ah, ph, dhp, bh);
    stat_end(&st);
    free(pre), free(gx), free(gh), free(h_prev), free(h), free(rh), free(dgx), free(dgh);
    free(dhp), free(ctx.gx), free(ctx.h), free(px), free(pg), free(ph), free(ax), free(ag);
    free(ah);
}

/* ------------------------------------------------------------------------------------------ */
/* rows                                                                                        */

static void test_gather_rows(void) {
    enum { R = 4, D = 5, N = 7 };
    const int idx[N] = {2, 0, 2, 3, 3, 1, 2}; /* repeats, out of order, every row used */
    float *src = frand((size_t)R * D, -1, 1), *src0 = fdup(src, (size_t)R * D);
    float *dst = fnew((size_t)(N + 1) * D); /* one row more than written: must stay untouched */
    for (int i = 0; i < (N + 1) * D; i++) dst[i] = 123.0f;
    Stat st;
    stat_begin(&st, "gather_rows (repeated indices)");
    be->gather_rows(dst, src, idx, N, D);
    for (int i = 0; i < N; i++)
        for (int d = 0; d < D; d++)
            stat_add(&st, dst[i * D + d], src[idx[i] * D + d], 0, 0, "dst", i * D + d);
    for (int d = 0; d < D; d++) stat_add(&st, dst[N * D + d], 123.0, 0, 0, "row n untouched", d);
    stat_true(&st, memcmp(src, src0, sizeof(float) * R * D) == 0, "src modified");
    be->gather_rows(dst, src, idx, 0, D); /* n = 0: nothing written */
    for (int d = 0; d < D; d++) stat_add(&st, dst[d], src[idx[0] * D + d], 0, 0, "n=0", d);
    stat_end(&st);
    free(src), free(src0), free(dst);
}

/* dst[i·stride + c] = src[idx[i]·stride + c] for c < D: the first D floats of each row are
 * gathered, the rest of each dst row (c ≥ D) and a row n beyond the ones written stay exactly
 * as they were; D = stride is gather_rows. */
static void test_gather_rows_strided(void) {
    enum { R = 4, S = 7, N = 6 };
    const int idx[N] = {3, 0, 3, 1, 2, 2}; /* repeats, out of order, every row used */
    const int Ds[3] = {5, S, 1};
    float *src = frand((size_t)R * S, -1, 1), *src0 = fdup(src, (size_t)R * S);
    float *dst = fnew((size_t)(N + 1) * S);
    Stat st;
    stat_begin(&st, "gather_rows_strided stride %d (D = 5, 7, 1)", S);
    for (int k = 0; k < 3; k++) {
        int D = Ds[k];
        for (int i = 0; i < (N + 1) * S; i++) dst[i] = 123.0f;
        be->gather_rows_strided(dst, src, idx, N, D, S);
        for (int i = 0; i <= N; i++)
            for (int c = 0; c < S; c++) {
                if (i < N && c < D)
                    stat_add(&st, dst[i * S + c], src[idx[i] * S + c], 0, 0, "dst", i * S + c);
                else
                    stat_add(&st, dst[i * S + c], 123.0, 0, 0, "untouched", i * S + c);
            }
    }
    stat_true(&st, memcmp(src, src0, sizeof(float) * R * S) == 0, "src modified");
    for (int i = 0; i < (N + 1) * S; i++) dst[i] = 123.0f;
    be->gather_rows_strided(dst, src, idx, 0, 5, S); /* n = 0: nothing written */
    int same = 1;
    for (int i = 0; i < (N + 1) * S; i++) same &= dst[i] == 123.0f;
    stat_true(&st, same, "n = 0 wrote something");
    stat_end(&st);
    free(src), free(src0), free(dst);
}

/* ------------------------------------------------------------------------------------------ */
/* output layer                                                                                */

typedef struct {
    float *logits;
    const int *targets;
    int N, V, ignore_id;
    float smoothing, grad_scale;
} XentCtx;
static double xent_loss(void *p) {
    XentCtx *x = p;
    float *work = fnew(be->xent_workspace(x->N, x->V) + 1);
    double l = be->xent_forward_backward(NULL, x->logits, x->targets, x->N, x->V, x->smoothing,
                                         x->ignore_id, 0.0f, work);
    free(work);
    return x->grad_scale * l;
}

static double xent_ref(const float *logits, const int *targets, int N, int V, double eps,
                       int ignore_id) {
    double total = 0;
    for (int n = 0; n < N; n++) {
        if (targets[n] == ignore_id) continue;
        const float *x = logits + (size_t)n * V;
        double mx = -INFINITY, z = 0;
        for (int v = 0; v < V; v++) mx = x[v] > mx ? x[v] : mx;
        for (int v = 0; v < V; v++) z += exp(x[v] - mx);
        double lse = mx + log(z);
        /* target distribution q = (1-ε) one-hot + ε/V; loss = −Σ_v q_v log p_v */
        for (int v = 0; v < V; v++) {
            double qv = eps / V + (v == targets[n] ? 1.0 - eps : 0.0);
            total -= qv * (x[v] - lse);
        }
    }
    return total;
}

static void test_xent(float smoothing, float grad_scale) {
    const int N = 6, V = 11, IGN = 1;
    const int targets[6] = {3, IGN, 0, 10, 5, IGN};
    size_t nv = (size_t)N * V;
    float *logits = frand(nv, -3, 3);
    logits[2 * V + 0] = 8.0f; /* a confident correct row */
    Stat st;
    stat_begin(&st, "xent_forward_backward loss (eps=%.2f)", smoothing);
    double ref = xent_ref(logits, targets, N, V, smoothing, IGN);
    float *g0 = fnew(nv), *work = fnew(be->xent_workspace(N, V) + 1);
    double got =
        be->xent_forward_backward(g0, logits, targets, N, V, smoothing, IGN, grad_scale, work);
    stat_add(&st, got, ref, 1e-5, 1e-6, "loss (with dlogits)", 0);
    double got2 =
        be->xent_forward_backward(NULL, logits, targets, N, V, smoothing, IGN, 1.0f, work);
    stat_add(&st, got2, ref, 1e-5, 1e-6, "loss (dlogits NULL)", 0);
    /* ignored rows contribute nothing: loss of the counted rows alone is the same */
    int only[6];
    for (int n = 0; n < N; n++) only[n] = targets[n];
    double part = 0;
    for (int n = 0; n < N; n++)
        if (targets[n] != IGN)
            part += xent_ref(logits + (size_t)n * V, targets + n, 1, V, smoothing, IGN);
    stat_add(&st, got, part, 1e-5, 1e-6, "loss = sum of counted rows", 0);
    for (int n = 0; n < N; n++) only[n] = IGN;
    stat_add(&st, be->xent_forward_backward(NULL, logits, only, N, V, smoothing, IGN, 1.0f, work),
             0.0, 0, 0, "loss, all rows ignored", 0);
    stat_end(&st);

    XentCtx ctx = {logits, targets, N, V, IGN, smoothing, grad_scale};
    stat_begin(&st, "xent dlogits vs FD (eps=%.2f, grad_scale=%.2f)", smoothing, grad_scale);
    fd_check(&st, "dlogits", logits, nv, g0, xent_loss, &ctx);
    stat_end(&st);

    stat_begin(&st, "xent dlogits overwrites (eps=%.2f)", smoothing);
    float *pre = frand(nv, -2, 2), *acc = fdup(pre, nv);
    be->xent_forward_backward(acc, logits, targets, N, V, smoothing, IGN, grad_scale, work);
    for (size_t i = 0; i < nv; i++) stat_add(&st, acc[i], g0[i], 0, 0, "dlogits", (long)i);
    for (int n = 0; n < N; n++)
        if (targets[n] == IGN)
            for (int v = 0; v < V; v++)
                stat_add(&st, acc[n * V + v], 0.0, 0, 0, "ignored row zero", n * V + v);
    stat_end(&st);
    free(logits), free(g0), free(pre), free(acc), free(work);
}

static void test_log_softmax(void) {
    const int N = 4, V = 9;
    size_t nv = (size_t)N * V;
    float *x = frand(nv, -4, 4), *out = fnew(nv);
    for (int v = 0; v < V; v++) {
        x[2 * V + v] += 1000.0f; /* large logits: must not overflow */
        x[3 * V + v] -= 1000.0f;
    }
    Stat st;
    stat_begin(&st, "log_softmax");
    be->log_softmax(out, x, N, V);
    for (int n = 0; n < N; n++) {
        const float *r = x + (size_t)n * V;
        double mx = -INFINITY, z = 0;
        for (int v = 0; v < V; v++) mx = r[v] > mx ? r[v] : mx;
        for (int v = 0; v < V; v++) z += exp(r[v] - mx);
        double lse = mx + log(z), psum = 0;
        for (int v = 0; v < V; v++) {
            /* around ±1000 one float ulp is 6e-5: allow for it */
            double tol = fabs(r[v]) > 100 ? 2e-4 : FWD_ATOL;
            stat_add(&st, out[n * V + v], r[v] - lse, tol, FWD_RTOL, "out", n * V + v);
            psum += exp((double)out[n * V + v]);
        }
        stat_add(&st, psum, 1.0, 1e-3, 0, "Σ exp", n);
    }
    stat_end(&st);
    free(x), free(out);
}

static void test_argmax(void) {
    enum { N = 8, V = 5 };
    const float x[N][V] = {
        {0.1f, 3.0f, 3.0f, 2.0f, -1.0f},          /* tie: first (1) */
        {-5.0f, -1.0f, -1.0f, -3.0f, -2.0f},      /* negative tie: 1 */
        {-INFINITY, -INFINITY, 2.0f, 2.0f, 1.0f}, /* 2 */
        {7.0f, 7.0f, 7.0f, 7.0f, 7.0f},           /* all equal: 0 */
        {0.0f, 1.0f, 2.0f, 3.0f, 4.0f},           /* last: 4 */
        {9.0f, 1.0f, 2.0f, 8.99f, 4.0f},          /* first: 0 */
        {NAN, 1.0f, 2.0f, 3.0f, 4.0f},            /* NaN in column 0: 0, as k_argmax */
        {NAN, NAN, NAN, NAN, NAN},                /* a row of NaN: 0, an index in the row */
    };
    const int want[N] = {1, 1, 2, 0, 4, 0, 0, 0};
    int ids[N];
    Stat st;
    stat_begin(&st, "argmax (first on ties)");
    be->argmax(ids, &x[0][0], N, V);
    for (int n = 0; n < N; n++) stat_add(&st, ids[n], want[n], 0, 0, "id", n);
    /* random rows against a plain loop */
    const int N2 = 10, V2 = 13;
    float *y = frand((size_t)N2 * V2, -1, 1);
    int ids2[10];
    be->argmax(ids2, y, N2, V2);
    for (int n = 0; n < N2; n++) {
        int best = 0;
        for (int v = 1; v < V2; v++)
            if (y[n * V2 + v] > y[n * V2 + best]) best = v;
        stat_add(&st, ids2[n], best, 0, 0, "id (random)", n);
    }
    stat_end(&st);
    free(y);
}

/* ------------------------------------------------------------------------------------------ */
/* optimiser                                                                                   */

static void test_adam(void) {
    const size_t n = 57;
    const float lr = 3e-3f, b1 = 0.9f, b2 = 0.98f, eps = 1e-6f;
    float *p = frand(n, -1, 1), *m = fnew(n), *v = fnew(n);
    double *pr = malloc(sizeof(double) * n), *mr = calloc(n, sizeof(double)),
           *vr = calloc(n, sizeof(double));
    for (size_t i = 0; i < n; i++) pr[i] = p[i];
    Stat st;
    stat_begin(&st, "adam_update (t = 1..4)");
    for (int t = 1; t <= 4; t++) {
        float *g = frand(n, -2, 2);
        g[0] = 0.0f;           /* zero gradient */
        g[1] = 1e-4f * t;      /* tiny gradient */
        if (t == 2) g[2] = 50; /* a spike */
        be->adam_update(p, g, m, v, n, lr, b1, b2, eps, t);
        double c1 = 1.0 - pow((double)b1, t), c2 = 1.0 - pow((double)b2, t);
        for (size_t i = 0; i < n; i++) {
            mr[i] = (double)b1 * mr[i] + (1.0 - (double)b1) * g[i];
            vr[i] = (double)b2 * vr[i] + (1.0 - (double)b2) * (double)g[i] * g[i];
            pr[i] -= (double)lr * (mr[i] / c1) / (sqrt(vr[i] / c2) + (double)eps);
            /* the update is ~lr per step: compare p to 1e-3·lr, m and v relatively */
            stat_add(&st, p[i], pr[i], 1e-3 * lr * t, 0, "param", (long)i);
            stat_add(&st, m[i], mr[i], 1e-7, 1e-5, "m", (long)i);
            stat_add(&st, v[i], vr[i], 1e-9, 1e-5, "v", (long)i);
        }
        free(g);
    }
    stat_end(&st);
    free(p), free(m), free(v), free(pr), free(mr), free(vr);
}


/* ========================================================================================== */
/* another backend against the CPU                                                            */

static const Backend *cpu, *gpu; /* reference and backend under test (--backend) */

/* The backend under test runs with guarded memory: its alloc places every buffer between two
 * guards of GUARD_BYTES (256: cudaMalloc's alignment is kept) filled with GUARD_BYTE, and its free
 * checks them, so that an op writing before the start or past the end of any buffer it is given
 * fails ("wrote outside a buffer") although the memory it hits belongs to no other buffer (a loop
 * bound one too far, a grid-stride loop that runs one element over). Not in the sanitizer build:
 * there ASan sees every access outside a buffer, reads too, which the guards would hide. The
 * buffers of one test are few at a time: a plain list. */
enum { GUARD_BYTES = 256, GUARD_BYTE = 0xA5, GUARD_MAX = 4096 };
static Backend guarded;
static const Backend *unguarded; /* backend_cuda()'s own table */
static struct {
    char *base;
    size_t bytes;
} g_live[GUARD_MAX];
static int g_nlive;

static void *guarded_alloc(size_t bytes) {
    char *base = unguarded->alloc(bytes + 2 * GUARD_BYTES);
    if (!base) return NULL;
    unsigned char pat[GUARD_BYTES];
    memset(pat, GUARD_BYTE, sizeof pat);
    unguarded->upload(base, pat, GUARD_BYTES);
    unguarded->upload(base + GUARD_BYTES + bytes, pat, GUARD_BYTES);
    if (g_nlive == GUARD_MAX) {
        fprintf(stderr, "test_backend_ops: more than %d buffers at once\n", GUARD_MAX);
        exit(2);
    }
    g_live[g_nlive].base = base, g_live[g_nlive].bytes = bytes, g_nlive++;
    return base + GUARD_BYTES;
}

static void guarded_free(void *p) {
    if (!p) return;
    char *base = (char *)p - GUARD_BYTES;
    int i = 0;
    while (i < g_nlive && g_live[i].base != base) i++;
    EXPECT(i < g_nlive, "free of %p, which the backend's alloc did not return", p);
    if (i == g_nlive) return;
    size_t bytes = g_live[i].bytes;
    unsigned char lo[GUARD_BYTES], hi[GUARD_BYTES];
    unguarded->download(lo, base, GUARD_BYTES);
    unguarded->download(hi, base + GUARD_BYTES + bytes, GUARD_BYTES);
    int before = 0, after = 0;
    for (int k = 0; k < GUARD_BYTES; k++) before += lo[k] != GUARD_BYTE, after += hi[k] != GUARD_BYTE;
    EXPECT(before == 0 && after == 0, "an op wrote outside a buffer of %zu bytes: %d of the %d "
           "bytes before it and %d of the %d after it changed", bytes, before, GUARD_BYTES, after,
           GUARD_BYTES);
    unguarded->free(base);
    g_live[i] = g_live[--g_nlive];
}

/* n floats uniform in [-1, 1). */
static float *frand_pm1(size_t n) { return frand(n, -1, 1); }

/* A buffer of be's memory holding a copy of host[n] floats. */
static float *to_backend(const Backend *be, const float *host, size_t n) {
    float *p = be->alloc(n * sizeof(float));
    be->upload(p, host, n * sizeof(float));
    return p;
}

static void record_output(const char *what, const float *g, size_t n);

/* The schedule pass of run_vs_cpu (0: the first, and the only one outside the emulated build), and
 * whether the downloads from the backend under test are left out of the schedule check (the
 * cases past the element-wise grid below run in the first pass only). */
static int g_pass, g_quiet;

/* Element-wise kernels launch at most CUDA_EW_MAX_BLOCKS × CUDA_EW_THREADS = 4096 × 256 threads
 * (src/ops/cuda/cuda_internal.h); their grid-stride loops take a second turn only past EW_GRID
 * elements, so each such family has one case past it, where a wrong stride or bound of that loop
 * shows. No thread of those kernels reads what another wrote, so the thread order cannot change
 * their result: they run in the first schedule pass only, unrecorded for the schedule check, and
 * not under the sanitizers (ASan, TSan: each of a million emulated threads costs there). */
#define EW_GRID ((size_t)4096 * 256)
#ifdef __SANITIZE_THREAD__
#define TSAN_BUILD 1
#else
#define TSAN_BUILD 0
#endif
/* 1 when a case over n elements runs in this pass (always when n <= EW_GRID); sets g_quiet for
 * it. The inputs a case past the grid draws are drawn again by the next case (optest_rng is
 * put back to where it was, at the next call or the end of the case function), so that every
 * other case draws the same inputs in every pass. */
static Rng g_rng_before;
static int g_rng_saved;
static int size_runs(size_t n) {
    if (g_rng_saved) optest_rng = g_rng_before, g_rng_saved = 0;
    g_quiet = n > EW_GRID;
    int runs = !g_quiet || (g_pass == 0 && !test_sanitized() && !TSAN_BUILD);
    if (runs && g_quiet) g_rng_before = optest_rng, g_rng_saved = 1;
    return runs;
}

/* Downloads n floats from be's memory into a fresh host buffer; every download from the backend
 * under test is recorded (hashed) for the schedule check of run_vs_cpu, unless g_quiet. */
static float *from_backend(const Backend *be, const float *p, size_t n) {
    float *h = malloc(n * sizeof *h + 1);
    if (!h) {
        fprintf(stderr, "out of host memory\n");
        exit(2);
    }
    be->download(h, p, n * sizeof(float));
    if (be == gpu && !g_quiet) record_output("download", h, n);
    return h;
}

/* Every output downloaded from the backend under test (from_backend), in order: a 64-bit FNV-1a hash
 * of each one's bytes and its label (the schedule check of run_vs_cpu). */
static struct { uint64_t hash; char what[120]; } *out_seen;
static size_t n_seen, cap_seen;

static void record_output(const char *what, const float *g, size_t n) {
    uint64_t h = 1469598103934665603ull;
    const unsigned char *b = (const unsigned char *)g;
    for (size_t i = 0; i < n * sizeof(float); i++) h = (h ^ b[i]) * 1099511628211ull;
    if (n_seen == cap_seen) {
        cap_seen = cap_seen ? 2 * cap_seen : 256;
        out_seen = realloc(out_seen, cap_seen * sizeof *out_seen);
        if (!out_seen) {
            fprintf(stderr, "out of host memory\n");
            exit(2);
        }
    }
    out_seen[n_seen].hash = h;
    snprintf(out_seen[n_seen].what, sizeof out_seen[n_seen].what, "%s", what);
    n_seen++;
}

/* Downloads a float tensor from both backends and compares them; returns the normwise relative
 * error max|g − c| / max(max|c|, floor), printed with its tolerance when TEST_PRINT_ERRORS is
 * set. floor: the size of the terms the op adds where they may cancel (0: none). */
static double compare_floor(const char *what, const float *g_dev, const float *c_dev, size_t n,
                            double tol, double floor) {
    size_t seen = n_seen;
    float *g = from_backend(gpu, g_dev, n);
    float *c = from_backend(cpu, c_dev, n);
    /* from_backend recorded g for the schedule check: label it */
    if (n_seen > seen) snprintf(out_seen[n_seen - 1].what, sizeof out_seen[n_seen - 1].what, "%s", what);
    double cmax, e = test_rel_err(g, c, n, &cmax);
    if (floor > cmax) e = (cmax > 0 ? e * cmax : e) / floor; /* max|g − c| / floor */
    EXPECT(e < tol, "%s: relative error %.3g >= %.1g (n = %zu)", what, e, tol, n);
    if (getenv("TEST_PRINT_ERRORS")) printf("    error %.3g (tolerance %.0e): %s\n", e, tol, what);
    free(g);
    free(c);
    return e;
}

static double compare(const char *what, const float *g_dev, const float *c_dev, size_t n,
                      double tol) {
    return compare_floor(what, g_dev, c_dev, n, tol, 0.0);
}

/* An op's workspace in one backend, exactly its size function's value n (floats), placed to catch
 * three mistakes: it starts at an odd float (4 mod 8 bytes), so the op cannot count on more than
 * float alignment; it is filled with NaN, so the op cannot count on zeros (an arena's scratch is
 * reused); and WORK_GUARD floats of a sentinel follow it, which the op must leave alone (it stays
 * within what its size function declared; work_done checks them). n = 0 passes NULL. */
enum { WORK_GUARD = 64 };
static const float WORK_SENTINEL = 4242.0f;
typedef struct {
    const Backend *b;
    float *base, *p; /* p = base + 1, or NULL when n = 0 */
    size_t n;
} Work;
static Work work_new(const Backend *b, size_t n) {
    size_t tot = 1 + n + WORK_GUARD;
    float *h = malloc(sizeof(float) * tot);
    if (!h) {
        fprintf(stderr, "out of host memory\n");
        exit(2);
    }
    for (size_t i = 0; i < 1 + n; i++) h[i] = NAN;
    for (size_t i = 1 + n; i < tot; i++) h[i] = WORK_SENTINEL;
    Work w = {b, b->alloc(sizeof(float) * tot), NULL, n};
    b->upload(w.base, h, sizeof(float) * tot);
    w.p = n ? w.base + 1 : NULL;
    free(h);
    return w;
}
/* EXPECTs the guard after w's n floats untouched, then frees w. */
static void work_done(Work w, const char *what) {
    float *h = malloc(sizeof(float) * WORK_GUARD);
    if (!h) {
        fprintf(stderr, "out of host memory\n");
        exit(2);
    }
    w.b->download(h, w.base + 1 + w.n, sizeof(float) * WORK_GUARD);
    int bad = 0;
    for (int i = 0; i < WORK_GUARD; i++) bad += h[i] != WORK_SENTINEL;
    EXPECT(bad == 0, "%s (%s): %d of the %d floats after its declared workspace (%zu floats) "
           "were overwritten", what, w.b->name, bad, WORK_GUARD, w.n);
    free(h);
    w.b->free(w.base);
}

/* 1 if both backends have the entry (a missing cuda entry is reported by run_vs_cpu). */
static int both_have(const char *op, const void *cpu_fn, const void *gpu_fn) {
    EXPECT(cpu_fn != NULL, "cpu backend lacks %s (the reference must have every op)", op);
    return cpu_fn && gpu_fn;
}
#define HAVE(op) both_have(#op, (const void *)cpu->op, (const void *)gpu->op)

/* alloc zero-fills; upload/download round-trips; copy and zero do what they say. */
static void vs_cpu_memory(void) {
    size_t n = 10007;
    float *h = frand_pm1(n);
    float *d = gpu->alloc(n * sizeof(float));
    float *back = from_backend(gpu, d, n);
    size_t nonzero = 0;
    for (size_t i = 0; i < n; i++) nonzero += back[i] != 0.0f;
    EXPECT(nonzero == 0, "alloc: %zu of %zu floats not zero", nonzero, n);
    free(back);

    gpu->upload(d, h, n * sizeof(float));
    back = from_backend(gpu, d, n);
    EXPECT(memcmp(back, h, n * sizeof(float)) == 0, "upload/download: bytes differ");
    free(back);

    float *d2 = gpu->alloc(n * sizeof(float));
    gpu->copy(d2, d, n * sizeof(float));
    back = from_backend(gpu, d2, n);
    EXPECT(memcmp(back, h, n * sizeof(float)) == 0, "copy: bytes differ");
    free(back);

    /* zero a middle range only: the bytes around it must survive */
    size_t lo = 100, len = 5000;
    gpu->zero(d2 + lo, len * sizeof(float));
    gpu->synchronize();
    back = from_backend(gpu, d2, n);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        float want = (i >= lo && i < lo + len) ? 0.0f : h[i];
        bad += memcmp(&back[i], &want, sizeof want) != 0;
    }
    EXPECT(bad == 0, "zero: %zu floats wrong", bad);
    free(back);

    gpu->free(d);
    gpu->free(d2);
    gpu->free(NULL);
    free(h);
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

/* matmul: all four transpose combinations, non-square M, Nc, K, beta 0 and 1. */
static void vs_cpu_matmul(void) {
    if (!HAVE(matmul)) return;
    static const int shapes[][3] = {{37, 53, 71}, {1, 29, 130}, {64, 1, 17}, {5, 300, 1}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int M = shapes[s][0], Nc = shapes[s][1], K = shapes[s][2];
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++)
                for (int bi = 0; bi < 2; bi++) {
                    float beta = (float)bi, alpha = 0.75f;
                    size_t na = (size_t)M * K, nb = (size_t)K * Nc, nc = (size_t)M * Nc;
                    float *ha = frand_pm1(na), *hb = frand_pm1(nb), *hc = frand_pm1(nc);
                    float *ga = to_backend(gpu, ha, na), *gb = to_backend(gpu, hb, nb);
                    float *gc = to_backend(gpu, hc, nc);
                    float *ca = to_backend(cpu, ha, na), *cb = to_backend(cpu, hb, nb);
                    float *cc = to_backend(cpu, hc, nc);
                    gpu->matmul(gc, ga, gb, M, Nc, K, ta, tb, alpha, beta);
                    cpu->matmul(cc, ca, cb, M, Nc, K, ta, tb, alpha, beta);
                    char what[128];
                    snprintf(what, sizeof what,
                             "matmul M=%d Nc=%d K=%d transA=%d transB=%d beta=%g", M, Nc, K, ta,
                             tb, (double)beta);
                    compare(what, gc, cc, nc, 1e-4);
                    gpu->free(ga), gpu->free(gb), gpu->free(gc);
                    cpu->free(ca), cpu->free(cb), cpu->free(cc);
                    free(ha), free(hb), free(hc);
                }
    }
    /* train.precision: tf32 and bf16 round the inputs (10 and 7 mantissa bits), so the product
     * moves away from the fp32 one by about 2^-11 and 2^-8 relative, and no further */
    static const struct { int prec; double lo, hi; const char *name; } precs[] = {
        {BACKEND_PRECISION_TF32, 1e-6, 3e-3, "tf32"}, {BACKEND_PRECISION_BF16, 1e-5, 2e-2, "bf16"}};
    int M = 37, Nc = 53, K = 71;
    size_t na = (size_t)M * K, nb = (size_t)K * Nc, nc = (size_t)M * Nc;
    float *ha = frand_pm1(na), *hb = frand_pm1(nb);
    float *ga = to_backend(gpu, ha, na), *gb = to_backend(gpu, hb, nb);
    float *ca = to_backend(cpu, ha, na), *cb = to_backend(cpu, hb, nb);
    float *gc = gpu->alloc(nc * sizeof(float)), *cc = cpu->alloc(nc * sizeof(float));
    cpu->matmul(cc, ca, cb, M, Nc, K, 0, 0, 1.0f, 0.0f);
    float *c = from_backend(cpu, cc, nc);
    for (int p = 0; p < 2; p++) {
        backend_cuda_set_precision(precs[p].prec);
        gpu->matmul(gc, ga, gb, M, Nc, K, 0, 0, 1.0f, 0.0f);
        backend_cuda_set_precision(BACKEND_PRECISION_FP32);
        float *g = from_backend(gpu, gc, nc);
        char what[64];
        snprintf(what, sizeof what, "matmul at precision %s", precs[p].name);
        record_output(what, g, nc);
        double e = test_rel_err(g, c, nc, NULL);
        EXPECT(e > precs[p].lo && e < precs[p].hi,
               "matmul at precision %s: relative error %.3g against fp32, want (%.0e, %.0e)",
               precs[p].name, e, precs[p].lo, precs[p].hi);
        printf("  matmul at precision %s: relative error %.2e against the cpu's fp32\n",
               precs[p].name, e);
        free(g);
    }
    free(c), free(ha), free(hb);
    gpu->free(ga), gpu->free(gb), gpu->free(gc), cpu->free(ca), cpu->free(cb), cpu->free(cc);
    bf16_against_reference(0);
}

/* matmul_bias_forward at tf32 against the CPU's fp32 (inputs in backend memory, the CPU's result
 * in cpu memory): the rounding of the inputs must show (error above 1e-6) and stay small. */
static void precision_shows(const float *gx, const float *gw, const float *gb, const float *co,
                           int N, int C, int K) {
    size_t no = (size_t)N * C;
    float *go = gpu->alloc(no * sizeof(float));
    backend_cuda_set_precision(BACKEND_PRECISION_TF32);
    gpu->matmul_bias_forward(go, gx, gw, gb, N, C, K, 1);
    backend_cuda_set_precision(BACKEND_PRECISION_FP32);
    float *g = from_backend(gpu, go, no), *c = from_backend(cpu, co, no);
    snprintf(out_seen[n_seen - 1].what, sizeof out_seen[n_seen - 1].what,
             "matmul_bias_forward at precision tf32");
    double e = test_rel_err(g, c, no, NULL);
    EXPECT(e > 1e-6 && e < 3e-3,
           "matmul_bias_forward at precision tf32: relative error %.3g, want (1e-06, 3e-03)", e);
    printf("  matmul_bias_forward at precision tf32: relative error %.2e against the cpu's fp32\n",
           e);
    free(g), free(c);
    gpu->free(go);
}

/* matmul_bias_forward (cuBLASLt with the BIAS / RELU_BIAS epilogue) against the CPU, on the
 * shapes of a dense layer, with and without ReLU, the second shape with every pointer one float
 * past an allocation (as callers pass rows of an arena: cuBLASLt must not assume 256-byte
 * alignment); and at tf32, whose input rounding must show. */
static float *to_backend_at(const Backend *b, const float *host, size_t n, int off) {
    float *p = b->alloc((n + (size_t)off) * sizeof(float));
    b->upload(p + off, host, n * sizeof(float));
    return p + off;
}

static void vs_cpu_matmul_bias_forward(void) {
    if (!HAVE(matmul_bias_forward)) return;
    static const int shapes[][3] = {{37, 53, 71}, {1, 29, 130}, {64, 1, 17}, {5, 300, 1}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int relu = 0; relu < 2; relu++) {
            int N = shapes[s][0], C = shapes[s][1], K = shapes[s][2];
            size_t nx = (size_t)N * K, nw = (size_t)C * K, no = (size_t)N * C;
            float *hx = frand_pm1(nx), *hw = frand_pm1(nw), *hb = frand_pm1(C);
            float *hg = frand_pm1(no); /* garbage: the op overwrites out */
            int off = s == 1;
            float *gx = to_backend_at(gpu, hx, nx, off), *gw = to_backend_at(gpu, hw, nw, off);
            float *gb = to_backend_at(gpu, hb, C, off), *go = to_backend_at(gpu, hg, no, off);
            float *cx = to_backend(cpu, hx, nx), *cw = to_backend(cpu, hw, nw);
            float *cb = to_backend(cpu, hb, C), *co = to_backend(cpu, hg, no);
            gpu->matmul_bias_forward(go, gx, gw, gb, N, C, K, relu);
            cpu->matmul_bias_forward(co, cx, cw, cb, N, C, K, relu);
            char what[128];
            snprintf(what, sizeof what, "matmul_bias_forward N=%d C=%d K=%d relu=%d%s", N, C, K,
                     relu, off ? " (pointers 4 bytes past alignment)" : "");
            compare(what, go, co, no, 1e-4);
            if (relu && s == 0) precision_shows(gx, gw, gb, co, N, C, K);
            gpu->free(gx - off), gpu->free(gw - off), gpu->free(gb - off), gpu->free(go - off);
            cpu->free(cx), cpu->free(cw), cpu->free(cb), cpu->free(co);
            free(hx), free(hw), free(hb), free(hg);
        }
    bf16_against_reference(1);
}

/* bias_forward adds a row vector; bias_backward accumulates column sums into dbias. */
static void vs_cpu_bias(void) {
    static const int shapes[][2] = {{129, 67}, {1, 5}, {1000, 1}, {3, 1031}, {4099, 257}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int N = shapes[s][0], C = shapes[s][1];
        size_t n = (size_t)N * C;
        char what[96];
        if (!size_runs(n)) continue; /* the last: past the element-wise grid */
        if (HAVE(bias_forward)) {
            float *hout = frand_pm1(n), *hb = frand_pm1((size_t)C);
            float *go = to_backend(gpu, hout, n), *gbias = to_backend(gpu, hb, (size_t)C);
            float *co = to_backend(cpu, hout, n), *cbias = to_backend(cpu, hb, (size_t)C);
            gpu->bias_forward(go, gbias, N, C);
            cpu->bias_forward(co, cbias, N, C);
            snprintf(what, sizeof what, "bias_forward N=%d C=%d", N, C);
            compare(what, go, co, n, 1e-6);
            gpu->free(go), gpu->free(gbias), cpu->free(co), cpu->free(cbias);
            free(hout), free(hb);
        }
        if (HAVE(bias_backward)) {
            float *hd = frand_pm1(n), *hdb = frand_pm1((size_t)C); /* dbias: accumulates */
            float *gd = to_backend(gpu, hd, n), *gdb = to_backend(gpu, hdb, (size_t)C);
            float *cd = to_backend(cpu, hd, n), *cdb = to_backend(cpu, hdb, (size_t)C);
            gpu->bias_backward(gdb, gd, N, C);
            cpu->bias_backward(cdb, cd, N, C);
            snprintf(what, sizeof what, "bias_backward N=%d C=%d", N, C);
            compare(what, gdb, cdb, (size_t)C, 1e-5);
            gpu->free(gd), gpu->free(gdb), cpu->free(cd), cpu->free(cdb);
            free(hd), free(hdb);
        }
    }
    g_quiet = 0;
}

/* axpy and scale over sizes that are not multiples of any block size; the largest is past the
 * element-wise grid (EW_GRID, size_runs). */
static void vs_cpu_axpy_scale(void) {
    static const size_t sizes[] = {1, 255, 100003, 3000017};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        size_t n = sizes[s];
        char what[64];
        if (!size_runs(n)) continue;
        if (HAVE(axpy)) {
            float *hy = frand_pm1(n), *hx = frand_pm1(n);
            float *gy = to_backend(gpu, hy, n), *gx = to_backend(gpu, hx, n);
            float *cy = to_backend(cpu, hy, n), *cx = to_backend(cpu, hx, n);
            gpu->axpy(gy, -0.37f, gx, n);
            cpu->axpy(cy, -0.37f, cx, n);
            double terms = 0; /* the size of y + a·x, whose sum may cancel */
            for (size_t i = 0; i < n; i++)
                terms = fmax(terms, fabs((double)hy[i]) + 0.37 * fabs((double)hx[i]));
            snprintf(what, sizeof what, "axpy n=%zu", n);
            compare_floor(what, gy, cy, n, 1e-6, terms);
            gpu->free(gy), gpu->free(gx), cpu->free(cy), cpu->free(cx);
            free(hy), free(hx);
        }
        if (HAVE(scale)) {
            float *hx = frand_pm1(n);
            float *gx = to_backend(gpu, hx, n), *cx = to_backend(cpu, hx, n);
            gpu->scale(gx, 1.7f, n);
            cpu->scale(cx, 1.7f, n);
            snprintf(what, sizeof what, "scale n=%zu", n);
            compare(what, gx, cx, n, 1e-6);
            gpu->free(gx), cpu->free(cx);
            free(hx);
        }
    }
    g_quiet = 0;
}

/* tanh_forward and, from its output, tanh_backward (accumulating into dinp), over sizes that are
 * not multiples of any block size, the last past the element-wise grid (size_runs); inputs in
 * [-4, 4) cover the saturating range. */
static void vs_cpu_tanh(void) {
    static const size_t sizes[] = {1, 257, 100003, EW_GRID + 7};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        size_t n = sizes[s];
        char what[64];
        if (!HAVE(tanh_forward)) return;
        if (!size_runs(n)) continue;
        float *hx = frand(n, -4, 4), *hdy = frand_pm1(n), *hdx = frand_pm1(n);
        float *gx = to_backend(gpu, hx, n), *cx = to_backend(cpu, hx, n);
        float *gy = gpu->alloc(n * sizeof(float)), *cy = cpu->alloc(n * sizeof(float));
        gpu->tanh_forward(gy, gx, n);
        cpu->tanh_forward(cy, cx, n);
        snprintf(what, sizeof what, "tanh_forward n=%zu", n);
        compare(what, gy, cy, n, 1e-6);
        if (HAVE(tanh_backward)) {
            float *gdy = to_backend(gpu, hdy, n), *cdy = to_backend(cpu, hdy, n);
            float *gdx = to_backend(gpu, hdx, n), *cdx = to_backend(cpu, hdx, n);
            gpu->tanh_backward(gdx, gdy, gy, n);
            cpu->tanh_backward(cdx, cdy, cy, n);
            double terms = 0; /* dx + dy (1 − y²): the size of the terms, which may cancel */
            for (size_t i = 0; i < n; i++)
                terms = fmax(terms, fabs((double)hdx[i]) + fabs((double)hdy[i]));
            snprintf(what, sizeof what, "tanh_backward n=%zu", n);
            compare_floor(what, gdx, cdx, n, 1e-6, terms);
            gpu->free(gdy), gpu->free(gdx), cpu->free(cdy), cpu->free(cdx);
        }
        gpu->free(gx), gpu->free(gy), cpu->free(cx), cpu->free(cy);
        free(hx), free(hdy), free(hdx);
    }
    g_quiet = 0;
}

/* sumsq (double accumulation on both sides) and all_finite (same verdicts, incl. NaN/Inf at the
 * first, a middle and the last position; past the first pass's 1024 blocks of 256 threads
 * (n = 262145), also a NaN in the share of the partials 255, 256, 511, 512, 767, 768 and 1023,
 * at each turn of the second pass's strided loop, and in the first pass's second turn). */
static void vs_cpu_reductions(void) {
    static const size_t sizes[] = {1, 1000, 262145, 5000011};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        size_t n = sizes[s];
        float *hx = frand_pm1(n);
        float *gx = to_backend(gpu, hx, n), *cx = to_backend(cpu, hx, n);
        if (HAVE(sumsq)) {
            double g = gpu->sumsq(gx, n), c = cpu->sumsq(cx, n);
            double e = fabs(g - c) / (c > 0 ? c : 1.0);
            EXPECT(e < 1e-9, "sumsq n=%zu: gpu %.17g cpu %.17g (relative error %.3g)", n, g, c,
                   e);
        }
        if (HAVE(all_finite)) {
            int g = gpu->all_finite(gx, n), c = cpu->all_finite(cx, n);
            EXPECT(g == 1 && c == 1, "all_finite n=%zu on finite data: gpu %d cpu %d", n, g, c);
            g = gpu->all_finite(gx, n); /* again: a verdict must not depend on the one before */
            EXPECT(g == 1, "all_finite n=%zu on finite data, the second time in a row: gpu %d", n,
                   g);
            const float bad_values[] = {NAN, INFINITY, -INFINITY};
            const size_t where[] = {0, n / 2, n - 1};
            for (int v = 0; v < 3; v++)
                for (int w = 0; w < 3; w++) {
                    size_t i = where[w];
                    gpu->upload(gx + i, &bad_values[v], sizeof(float));
                    cpu->upload(cx + i, &bad_values[v], sizeof(float));
                    g = gpu->all_finite(gx, n);
                    c = cpu->all_finite(cx, n);
                    EXPECT(g == 0 && c == 0, "all_finite n=%zu with %g at %zu: gpu %d cpu %d", n,
                           (double)bad_values[v], i, g, c);
                    gpu->upload(gx + i, &hx[i], sizeof(float));
                    cpu->upload(cx + i, &hx[i], sizeof(float));
                }
            if (n == 262145) {
                static const size_t part[] = {255, 256, 511, 512, 767, 768, 1023};
                const float nan = NAN;
                for (size_t w = 0; w <= sizeof part / sizeof part[0]; w++) {
                    size_t i = w < sizeof part / sizeof part[0] ? part[w] * 256 + 3 : 262144;
                    gpu->upload(gx + i, &nan, sizeof(float));
                    cpu->upload(cx + i, &nan, sizeof(float));
                    g = gpu->all_finite(gx, n);
                    c = cpu->all_finite(cx, n);
                    EXPECT(g == 0 && c == 0, "all_finite n=%zu with NaN at %zu: gpu %d cpu %d", n,
                           i, g, c);
                    gpu->upload(gx + i, &hx[i], sizeof(float));
                    cpu->upload(cx + i, &hx[i], sizeof(float));
                }
            }
        }
        gpu->free(gx), cpu->free(cx);
        free(hx);
    }
}

/* ------------------------------------------------------------------------------------------ */
/* shape ops, dropout, embedding, adam against the CPU                                         */
/* Exact ops (copies, selects, masks, one float add) are compared bit for bit over the WHOLE   */
/* destination buffer, which both backends receive with the same random prefill: what an op    */
/* must not write (a row beyond n, floats beyond D of a strided row, the other steps of a      */
/* cache, the rows of dtable no id names) must therefore stay exactly the CPU's, i.e. untouched */
/* (the CPU cases check that the CPU leaves it untouched).                                     */

static long kp_checks, kp_fails; /* comparisons by the four vs_cpu functions below, failed ones */

/* n ints of host[] copied into be's memory. */
static int *ints_to_backend(const Backend *be, const int *host, size_t n) {
    int *p = be->alloc(n * sizeof(int));
    be->upload(p, host, n * sizeof(int));
    return p;
}

/* Downloads n floats from both backends; EXPECTs them bit-identical (memcmp per float, so
 * -0/+0 and NaN payloads count), naming the first difference. */
static void compare_exact(const char *what, const float *g_dev, const float *c_dev, size_t n) {
    size_t seen = n_seen;
    float *g = from_backend(gpu, g_dev, n);
    float *c = from_backend(cpu, c_dev, n);
    /* from_backend recorded g for the schedule check: label it */
    if (n_seen > seen) snprintf(out_seen[n_seen - 1].what, sizeof out_seen[n_seen - 1].what, "%s", what);
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < n; i++)
        if (memcmp(&g[i], &c[i], sizeof(float)) != 0 && !bad++) first = i;
    EXPECT(bad == 0, "%s: %zu of %zu floats differ from the cpu (first at %zu: gpu %.9g cpu %.9g)",
           what, bad, n, first, bad ? (double)g[first] : 0.0, bad ? (double)c[first] : 0.0);
    kp_checks++;
    kp_fails += bad != 0;
    free(g);
    free(c);
}

/* compare_floor(), counted in the summary line of the functions that print one. */
static double compare_tol_floor(const char *what, const float *g_dev, const float *c_dev,
                                size_t n, double tol, double floor) {
    double e = compare_floor(what, g_dev, c_dev, n, tol, floor);
    kp_checks++;
    kp_fails += !(e < tol);
    return e;
}
static double compare_tol(const char *what, const float *g_dev, const float *c_dev, size_t n,
                          double tol) {
    return compare_tol_floor(what, g_dev, c_dev, n, tol, 0.0);
}

/* The same host buffer in both backends. */
typedef struct {
    float *g, *c;
} Pair;
static Pair pair_of(const float *host, size_t n) {
    Pair p = {to_backend(gpu, host, n), to_backend(cpu, host, n)};
    return p;
}
static void pair_free(Pair p) {
    gpu->free(p.g);
    cpu->free(p.c);
}

/* concat2, transpose01, permute0213, write_step, gather_rows, gather_rows_strided: tolerance 0
 * (copies; backward one float add onto a random prefill, the CPU's add). Shapes include 1s,
 * sizes that are not multiples of the 256-thread block, more than one block, and (the last of
 * each) more elements than the element-wise grid (size_runs). */
static void vs_cpu_shape(void) {
    char what[128];
    long checks0 = kp_checks, fails0 = kp_fails;
    static const int cshapes[][3] = {{3, 4, 5}, {1, 1, 1}, {37, 130, 3}, {2, 1, 257},
                                     {1021, 500, 531}};
    for (size_t s = 0; s < sizeof cshapes / sizeof cshapes[0]; s++) {
        int N = cshapes[s][0], Ca = cshapes[s][1], Cb = cshapes[s][2], C = Ca + Cb;
        size_t na = (size_t)N * Ca, nb = (size_t)N * Cb, no = (size_t)N * C;
        if (!size_runs(no)) continue;
        float *ha = frand_pm1(na), *hb = frand_pm1(nb), *ho = frand_pm1(no);
        Pair a = pair_of(ha, na), b = pair_of(hb, nb), o = pair_of(ho, no);
        if (HAVE(concat2_forward)) {
            gpu->concat2_forward(o.g, a.g, b.g, N, Ca, Cb);
            cpu->concat2_forward(o.c, a.c, b.c, N, Ca, Cb);
            snprintf(what, sizeof what, "concat2_forward N=%d Ca=%d Cb=%d", N, Ca, Cb);
            compare_exact(what, o.g, o.c, no);
        }
        if (HAVE(concat2_backward)) { /* da, db prefilled (accumulate); then each NULL */
            float *hd = frand_pm1(no);
            Pair d = pair_of(hd, no);
            for (int k = 0; k < 3; k++) {
                gpu->concat2_backward(k == 2 ? NULL : a.g, k == 1 ? NULL : b.g, d.g, N, Ca, Cb);
                cpu->concat2_backward(k == 2 ? NULL : a.c, k == 1 ? NULL : b.c, d.c, N, Ca, Cb);
                snprintf(what, sizeof what, "concat2_backward N=%d Ca=%d Cb=%d (%s) da", N, Ca,
                         Cb, k == 0 ? "both" : k == 1 ? "db NULL" : "da NULL");
                compare_exact(what, a.g, a.c, na);
                snprintf(what, sizeof what, "concat2_backward N=%d Ca=%d Cb=%d (%s) db", N, Ca,
                         Cb, k == 0 ? "both" : k == 1 ? "db NULL" : "da NULL");
                compare_exact(what, b.g, b.c, nb);
            }
            pair_free(d);
            free(hd);
        }
        pair_free(a), pair_free(b), pair_free(o);
        free(ha), free(hb), free(ho);
    }

    static const int tshapes[][3] = {{3, 4, 5}, {1, 7, 1}, {13, 9, 33}, {1021, 33, 32}};
    for (size_t s = 0; s < sizeof tshapes / sizeof tshapes[0]; s++) {
        int D0 = tshapes[s][0], D1 = tshapes[s][1], C = tshapes[s][2];
        size_t n = (size_t)D0 * D1 * C;
        if (!size_runs(n)) continue;
        float *hi = frand_pm1(n), *ho = frand_pm1(n), *hd = frand_pm1(n), *hg = frand_pm1(n);
        Pair in = pair_of(hi, n), o = pair_of(ho, n), d = pair_of(hd, n), g = pair_of(hg, n);
        if (HAVE(transpose01_forward)) {
            gpu->transpose01_forward(o.g, in.g, D0, D1, C);
            cpu->transpose01_forward(o.c, in.c, D0, D1, C);
            snprintf(what, sizeof what, "transpose01_forward D0=%d D1=%d C=%d", D0, D1, C);
            compare_exact(what, o.g, o.c, n);
        }
        if (HAVE(transpose01_backward)) {
            gpu->transpose01_backward(g.g, d.g, D0, D1, C);
            cpu->transpose01_backward(g.c, d.c, D0, D1, C);
            snprintf(what, sizeof what, "transpose01_backward D0=%d D1=%d C=%d", D0, D1, C);
            compare_exact(what, g.g, g.c, n);
        }
        pair_free(in), pair_free(o), pair_free(d), pair_free(g);
        free(hi), free(ho), free(hd), free(hg);
    }

    static const int pshapes[][4] = {{2, 3, 4, 5}, {3, 4, 1, 6}, {1, 1, 1, 1}, {3, 33, 8, 16},
                                     {2, 33, 16, 1000}};
    for (size_t s = 0; s < sizeof pshapes / sizeof pshapes[0]; s++) {
        int A = pshapes[s][0], D0 = pshapes[s][1], D1 = pshapes[s][2], C = pshapes[s][3];
        size_t n = (size_t)A * D0 * D1 * C;
        if (!size_runs(n)) continue;
        float *hi = frand_pm1(n), *ho = frand_pm1(n), *hd = frand_pm1(n), *hg = frand_pm1(n);
        Pair in = pair_of(hi, n), o = pair_of(ho, n), d = pair_of(hd, n), g = pair_of(hg, n);
        if (HAVE(permute0213_forward)) {
            gpu->permute0213_forward(o.g, in.g, A, D0, D1, C);
            cpu->permute0213_forward(o.c, in.c, A, D0, D1, C);
            snprintf(what, sizeof what, "permute0213_forward A=%d D0=%d D1=%d C=%d", A, D0, D1,
                     C);
            compare_exact(what, o.g, o.c, n);
        }
        if (HAVE(permute0213_backward)) {
            gpu->permute0213_backward(g.g, d.g, A, D0, D1, C);
            cpu->permute0213_backward(g.c, d.c, A, D0, D1, C);
            snprintf(what, sizeof what, "permute0213_backward A=%d D0=%d D1=%d C=%d", A, D0, D1,
                     C);
            compare_exact(what, g.g, g.c, n);
        }
        pair_free(in), pair_free(o), pair_free(d), pair_free(g);
        free(hi), free(ho), free(hd), free(hg);
    }

    if (HAVE(write_step)) { /* the cache has one row more than written (must stay untouched) */
        static const int wshapes[][3] = {{3, 6, 5}, {1, 1, 1}, {7, 4, 65}, {1031, 2, 1021}};
        for (size_t s = 0; s < sizeof wshapes / sizeof wshapes[0]; s++) {
            int N = wshapes[s][0], Tcap = wshapes[s][1], C = wshapes[s][2];
            size_t nc = (size_t)(N + 1) * Tcap * C, nx = (size_t)N * C;
            if (!size_runs(nx)) continue;
            float *hc = frand_pm1(nc);
            Pair cache = pair_of(hc, nc);
            const int ts[3] = {0, Tcap / 2, Tcap - 1};
            for (int k = 0; k < 3; k++) {
                float *hx = frand_pm1(nx);
                Pair x = pair_of(hx, nx);
                gpu->write_step(cache.g, x.g, N, Tcap, ts[k], C);
                cpu->write_step(cache.c, x.c, N, Tcap, ts[k], C);
                snprintf(what, sizeof what, "write_step N=%d Tcap=%d t=%d C=%d (whole cache)", N,
                         Tcap, ts[k], C);
                compare_exact(what, cache.g, cache.c, nc);
                snprintf(what, sizeof what, "write_step N=%d C=%d: x unchanged", N, C);
                compare_exact(what, x.g, x.c, nx);
                pair_free(x);
                free(hx);
            }
            pair_free(cache);
            free(hc);
        }
    }

    /* gather_rows (stride = D) and gather_rows_strided (D < stride: the tail of each row is
     * kept); dst has one row more than written; repeated and out-of-order indices; n = 0. */
    static const int gshapes[][4] = {/* R, n, D, stride */
                                     {4, 7, 5, 5},   {4, 6, 5, 7},    {4, 6, 7, 7},
                                     {4, 6, 1, 7},   {1, 1, 1, 1},    {50, 100, 37, 37},
                                     {50, 100, 60, 64}, {9, 3, 300, 301},
                                     {1100, 1025, 1025, 1030}};
    for (size_t s = 0; s < sizeof gshapes / sizeof gshapes[0]; s++) {
        int R = gshapes[s][0], n = gshapes[s][1], D = gshapes[s][2], S = gshapes[s][3];
        if (!size_runs((size_t)n * D)) continue;
        int *hidx = malloc(sizeof(int) * (size_t)n);
        for (int i = 0; i < n; i++) hidx[i] = (int)rng_below(&optest_rng, (uint32_t)R);
        size_t nsrc = (size_t)R * S, ndst = (size_t)(n + 1) * S;
        float *hs = frand_pm1(nsrc), *hd = frand_pm1(ndst);
        Pair src = pair_of(hs, nsrc), dst = pair_of(hd, ndst);
        int *gi = ints_to_backend(gpu, hidx, (size_t)n), *ci = ints_to_backend(cpu, hidx, (size_t)n);
        for (int zero_n = 0; zero_n < 2; zero_n++) {
            int nn = zero_n ? 0 : n;
            if (D == S && HAVE(gather_rows)) {
                gpu->gather_rows(dst.g, src.g, gi, nn, D);
                cpu->gather_rows(dst.c, src.c, ci, nn, D);
                snprintf(what, sizeof what, "gather_rows R=%d n=%d D=%d (whole dst)", R, nn, D);
                compare_exact(what, dst.g, dst.c, ndst);
            }
            if (HAVE(gather_rows_strided)) {
                gpu->gather_rows_strided(dst.g, src.g, gi, nn, D, S);
                cpu->gather_rows_strided(dst.c, src.c, ci, nn, D, S);
                snprintf(what, sizeof what,
                         "gather_rows_strided R=%d n=%d D=%d stride=%d (whole dst)", R, nn, D, S);
                compare_exact(what, dst.g, dst.c, ndst);
            }
        }
        snprintf(what, sizeof what, "gather_rows R=%d: src unchanged", R);
        compare_exact(what, src.g, src.c, nsrc);
        pair_free(src), pair_free(dst);
        gpu->free(gi), cpu->free(ci);
        free(hidx), free(hs), free(hd);
    }
    g_quiet = 0;
    printf("  vs_cpu_shape: %ld exact comparisons, %ld differ from the cpu\n", kp_checks - checks0,
           kp_fails - fails0);
}

/* dropout_forward: mask and out bit-identical to the CPU's (the same rng_hash, the same keep
 * value), p = 0, 0.3, 0.5, keys with the high bit set, n = 1, 255 (under one block), 70001
 * (several blocks, not a multiple of 256), and p = 0.3 past the element-wise grid (size_runs;
 * also bias_relu_dropout, N·C = 1031·1021). dropout_backward: onto zeros bit-identical; onto a
 * random prefill < 1e-6 normwise (dinp + dout·mask may be one fused multiply-add on one side and
 * two roundings on the other: 1 ulp). bias_relu_dropout_forward (also in place, out == inp, and
 * with pre-activations planted at exactly 0 and ±1e-30) and relu_dropout_backward (overwrites a
 * random prefill): tolerance 0. */
static void vs_cpu_dropout(void) {
    char what[128];
    long checks0 = kp_checks, fails0 = kp_fails;
    double worst_acc = 0.0;
    static const size_t sizes[] = {1, 255, 70001, EW_GRID + 9};
    static const float ps[] = {0.0f, 0.3f, 0.5f};
    static const uint64_t keys[] = {0x1234567ull, 0x8000000000000abcull, 0xffffffffffffffffull};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (int k = 0; k < 3; k++) {
            size_t n = sizes[s];
            float p = ps[k];
            if ((n > EW_GRID && k != 1) || !size_runs(n)) continue;
            uint64_t key = keys[(s + k) % 3];
            float *hi = frand_pm1(n), *hm = frand_pm1(n), *ho = frand_pm1(n);
            Pair in = pair_of(hi, n), mask = pair_of(hm, n), out = pair_of(ho, n);
            if (HAVE(dropout_forward)) {
                gpu->dropout_forward(out.g, mask.g, in.g, p, key, n);
                cpu->dropout_forward(out.c, mask.c, in.c, p, key, n);
                snprintf(what, sizeof what, "dropout_forward n=%zu p=%.1f key=%#llx mask", n,
                         (double)p, (unsigned long long)key);
                compare_exact(what, mask.g, mask.c, n);
                snprintf(what, sizeof what, "dropout_forward n=%zu p=%.1f out", n, (double)p);
                compare_exact(what, out.g, out.c, n);
            }
            if (HAVE(dropout_backward)) { /* the mask of the forward above (same on both) */
                float *hz = fnew(n), *hd = frand_pm1(n), *hp = frand(n, -2, 2);
                Pair z = pair_of(hz, n), d = pair_of(hd, n), pre = pair_of(hp, n);
                gpu->dropout_backward(z.g, d.g, mask.g, n);
                cpu->dropout_backward(z.c, d.c, mask.c, n);
                snprintf(what, sizeof what, "dropout_backward n=%zu p=%.1f onto zeros", n,
                         (double)p);
                compare_exact(what, z.g, z.c, n);
                gpu->dropout_backward(pre.g, d.g, mask.g, n);
                cpu->dropout_backward(pre.c, d.c, mask.c, n);
                snprintf(what, sizeof what, "dropout_backward n=%zu p=%.1f onto a prefill", n,
                         (double)p);
                double terms = 0; /* the size of prefill + dout·mask, whose sum may cancel */
                for (size_t i = 0; i < n; i++)
                    terms = fmax(terms, fabs((double)hp[i]) + fabs((double)hd[i]) / (1.0 - p));
                double e = compare_tol_floor(what, pre.g, pre.c, n, 1e-6, terms);
                if (e > worst_acc) worst_acc = e;
                pair_free(z), pair_free(d), pair_free(pre);
                free(hz), free(hd), free(hp);
            }
            pair_free(in), pair_free(mask), pair_free(out);
            free(hi), free(hm), free(ho);
        }

    /* keys whose element i draws u == p exactly (test_dropout's): kept on both backends */
    static const struct { float p; uint64_t key; size_t i; } edge[2] = {
        {0.3f, 2391, 2954}, {0.5f, 19341, 640}};
    for (int k = 0; k < 2 && HAVE(dropout_forward); k++) {
        size_t n = edge[k].i + 1;
        if (!size_runs(n)) continue; /* always runs (n is small); puts optest_rng back */
        float *hi = frand_pm1(n), *hm = frand_pm1(n), *ho = frand_pm1(n);
        Pair in = pair_of(hi, n), mask = pair_of(hm, n), out = pair_of(ho, n);
        gpu->dropout_forward(out.g, mask.g, in.g, edge[k].p, edge[k].key, n);
        cpu->dropout_forward(out.c, mask.c, in.c, edge[k].p, edge[k].key, n);
        snprintf(what, sizeof what, "dropout_forward u == p at %zu (p=%.1f) mask", edge[k].i,
                 (double)edge[k].p);
        compare_exact(what, mask.g, mask.c, n);
        pair_free(in), pair_free(mask), pair_free(out);
        free(hi), free(hm), free(ho);
    }

    static const int rshapes[][2] = {{7, 9}, {1, 1}, {70, 101}, {1031, 1021}};
    for (size_t s = 0; s < sizeof rshapes / sizeof rshapes[0]; s++)
        for (int k = 0; k < 3; k++) {
            int N = rshapes[s][0], C = rshapes[s][1];
            size_t n = (size_t)N * C;
            float p = ps[k];
            if ((n > EW_GRID && k != 1) || !size_runs(n)) continue;
            uint64_t key = keys[(s + 1 + k) % 3];
            float *hi = frand(n, -3, 3), *hb = frand_pm1((size_t)C), *ho = frand_pm1(n);
            hi[0] = -hb[0]; /* pre-activation exactly 0 */
            if (C > 2) hi[1] = 1e-30f - hb[1], hi[2] = -1e-30f - hb[2];
            Pair in = pair_of(hi, n), bias = pair_of(hb, (size_t)C), out = pair_of(ho, n);
            if (HAVE(bias_relu_dropout_forward)) {
                gpu->bias_relu_dropout_forward(out.g, in.g, bias.g, p, key, N, C);
                cpu->bias_relu_dropout_forward(out.c, in.c, bias.c, p, key, N, C);
                snprintf(what, sizeof what, "bias_relu_dropout_forward N=%d C=%d p=%.1f", N, C,
                         (double)p);
                compare_exact(what, out.g, out.c, n);
                Pair ip = pair_of(hi, n); /* in place: out == inp */
                gpu->bias_relu_dropout_forward(ip.g, ip.g, bias.g, p, key, N, C);
                cpu->bias_relu_dropout_forward(ip.c, ip.c, bias.c, p, key, N, C);
                snprintf(what, sizeof what, "bias_relu_dropout_forward in place N=%d C=%d p=%.1f",
                         N, C, (double)p);
                compare_exact(what, ip.g, ip.c, n);
                compare_exact("bias_relu_dropout_forward in place = out of place", ip.g, out.c, n);
                pair_free(ip);
            }
            if (HAVE(relu_dropout_backward)) { /* from out above; dinp prefilled: overwritten */
                float *hd = frand_pm1(n), *hg = frand(n, -5, 5);
                Pair d = pair_of(hd, n), g = pair_of(hg, n);
                gpu->relu_dropout_backward(g.g, d.g, out.g, p, n);
                cpu->relu_dropout_backward(g.c, d.c, out.c, p, n);
                snprintf(what, sizeof what, "relu_dropout_backward N=%d C=%d p=%.1f (overwrites)",
                         N, C, (double)p);
                compare_exact(what, g.g, g.c, n);
                pair_free(d), pair_free(g);
                free(hd), free(hg);
            }
            pair_free(in), pair_free(bias), pair_free(out);
            free(hi), free(hb), free(ho);
        }
    g_quiet = 0;
    printf("  vs_cpu_dropout: %ld comparisons (masks bit for bit), %ld fail; dropout_backward "
           "onto a prefill: max relative error %.3g (tolerance 1e-6)\n",
           kp_checks - checks0, kp_fails - fails0, worst_acc);
}

/* embedding_forward and embedding_backward, tolerance 0: the backward adds each id's rows in
 * token order on both backends (the GPU without atomics: one writer per table float), so
 * dtable (random prefill: accumulate) is bit-identical, including rows no id names. Ids repeat
 * heavily (a padding-like id 0 on a third of the tokens); the CUDA kernel's id groups (8 to 512,
 * about N / 8) are fewer than the rows V, so ids share a warp (V = 1100 over N = 700's 128
 * groups: 8 or 9 each); N = 300 and 700 span two and three 256-token rounds, 700 ending inside
 * a 32-token ballot; E = 70 spans three 32-column tiles, E = 1 one column; N·E = 1021·1031 is
 * past the forward's element-wise grid (size_runs). */
static void vs_cpu_embedding(void) {
    char what[128];
    long checks0 = kp_checks, fails0 = kp_fails;
    static const int shapes[][3] = {/* V, E, N */ {7, 5, 9},      {1, 1, 1},      {150, 70, 300},
                                    {200, 1, 600}, {1100, 40, 700}, {50, 1031, 1021}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int V = shapes[s][0], E = shapes[s][1], N = shapes[s][2];
        if (!size_runs((size_t)N * E)) continue;
        int *hids = malloc(sizeof(int) * (size_t)N);
        for (int i = 0; i < N; i++)
            hids[i] = rng_below(&optest_rng, 3) == 0 ? 0 : (int)rng_below(&optest_rng, (uint32_t)V);
        size_t vt = (size_t)V * E, ne = (size_t)N * E;
        float *ht = frand_pm1(vt), *ho = frand_pm1(ne), *hd = frand_pm1(ne), *hg = frand(vt, -2, 2);
        Pair table = pair_of(ht, vt), out = pair_of(ho, ne), d = pair_of(hd, ne);
        Pair g = pair_of(hg, vt);
        int *gi = ints_to_backend(gpu, hids, (size_t)N), *ci = ints_to_backend(cpu, hids, (size_t)N);
        if (HAVE(embedding_forward)) {
            gpu->embedding_forward(out.g, gi, table.g, N, E);
            cpu->embedding_forward(out.c, ci, table.c, N, E);
            snprintf(what, sizeof what, "embedding_forward V=%d E=%d N=%d", V, E, N);
            compare_exact(what, out.g, out.c, ne);
        }
        if (HAVE(embedding_backward)) {
            for (int rep = 0; rep < 2; rep++) { /* twice: accumulates, and again the same bits */
                gpu->embedding_backward(g.g, d.g, gi, N, E);
                cpu->embedding_backward(g.c, d.c, ci, N, E);
                snprintf(what, sizeof what, "embedding_backward V=%d E=%d N=%d (pass %d)", V, E,
                         N, rep + 1);
                compare_exact(what, g.g, g.c, vt);
            }
        }
        pair_free(table), pair_free(out), pair_free(d), pair_free(g);
        gpu->free(gi), cpu->free(ci);
        free(hids), free(ht), free(ho), free(hd), free(hg);
    }
    g_quiet = 0;
    printf("  vs_cpu_embedding: %ld exact comparisons, %ld differ from the cpu\n",
           kp_checks - checks0, kp_fails - fails0);
}

/* adam_update, t = 1..4 (a zero gradient, a tiny one, a spike at t = 2), n = 1, 257, 10007 and
 * one past the element-wise grid (size_runs):
 * param, m and v normwise relative error < 1e-6. Not exact: the host compiler and nvcc may
 * contract b·m + (1-b)·g into fused multiply-adds differently (a few ulps per step); the bias
 * corrections themselves are computed the same way (powf on the host) on both. */
static void vs_cpu_adam(void) {
    if (!HAVE(adam_update)) return;
    char what[128];
    long checks0 = kp_checks, fails0 = kp_fails;
    double worst = 0.0;
    const float lr = 3e-3f, b1 = 0.9f, b2 = 0.98f, eps = 1e-6f;
    static const size_t sizes[] = {1, 257, 10007, EW_GRID + 3};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        size_t n = sizes[s];
        if (!size_runs(n)) continue;
        float *hp = frand_pm1(n), *hm = fnew(n), *hv = fnew(n);
        Pair p = pair_of(hp, n), m = pair_of(hm, n), v = pair_of(hv, n);
        for (int t = 1; t <= 4; t++) {
            float *hg = frand(n, -2, 2);
            hg[0] = t == 2 ? 50.0f : 0.0f;
            if (n > 1) hg[1] = 1e-4f * t;
            Pair g = pair_of(hg, n);
            gpu->adam_update(p.g, g.g, m.g, v.g, n, lr, b1, b2, eps, t);
            cpu->adam_update(p.c, g.c, m.c, v.c, n, lr, b1, b2, eps, t);
            double e;
            snprintf(what, sizeof what, "adam_update n=%zu t=%d param", n, t);
            e = compare_tol(what, p.g, p.c, n, 1e-6), worst = e > worst ? e : worst;
            snprintf(what, sizeof what, "adam_update n=%zu t=%d m", n, t);
            e = compare_tol(what, m.g, m.c, n, 1e-6), worst = e > worst ? e : worst;
            snprintf(what, sizeof what, "adam_update n=%zu t=%d v", n, t);
            e = compare_tol(what, v.g, v.c, n, 1e-6), worst = e > worst ? e : worst;
            snprintf(what, sizeof what, "adam_update n=%zu t=%d grad unchanged", n, t);
            compare_exact(what, g.g, g.c, n);
            pair_free(g);
            free(hg);
        }
        pair_free(p), pair_free(m), pair_free(v);
        free(hp), free(hm), free(hv);
    }
    g_quiet = 0;
    printf("  vs_cpu_adam: %ld comparisons, %ld fail; max relative error %.3g (tolerance 1e-6)\n",
           kp_checks - checks0, kp_fails - fails0, worst);
}


/* ========================================================================================== */
/* OpKind, supports_op, backend_require_ops                                                   */

/* A copy of the CPU table with one op removed is refused before training, by name. */
static void test_require_ops(void) {
    Backend crippled = *backend_cpu();
    crippled.name = "cuda";
    crippled.lstm_cell_forward = NULL;
    crippled.flash_attn_backward = NULL;
    EXPECT(!supports_op(&crippled, OP_LSTM_CELL_FORWARD), "lstm_cell_forward still supported");
    EXPECT(supports_op(&crippled, OP_LSTM_CELL_BACKWARD), "lstm_cell_backward lost");
    const OpKind ops[] = {OP_MATMUL, OP_LSTM_CELL_FORWARD, OP_FLASH_ATTN_BACKWARD,
                          OP_LSTM_CELL_FORWARD};
    Err err = {0};
    EXPECT(backend_require_ops(&crippled, ops, 4, &err) != STATUS_OK, "missing ops accepted");
    EXPECT(strcmp(err.msg, "cuda backend: no lstm_cell_forward, flash_attn_backward; use "
                           "train.device = cpu") == 0,
           "message: %s", err.msg);
    EXPECT(backend_require_ops(backend_cpu(), ops, 4, &err) == STATUS_OK, "cpu refused");
    for (int op = 0; op < OP_COUNT; op++)
        EXPECT(supports_op(backend_cpu(), (OpKind)op), "cpu lacks %s", op_name((OpKind)op));
    EXPECT(strcmp(op_name(OP_FLASH_ATTN_BACKWARD), "flash_attn_backward") == 0, "op_name");
}

/* ========================================================================================== */
/* the case table                                                                             */

/* Cases that run one function with several shapes. */
static void case_layernorm(void) {
    test_layernorm();
    test_layernorm_parallel();
}
static void case_permute0213(void) {
    test_permute0213(2, 3, 4, 5);
    test_permute0213(3, 4, 1, 6);   /* D1 = 1 */
    test_permute0213(3, 33, 8, 96); /* above the OpenMP threshold (A·D0·D1·C > 65536) */
}
static void case_lstm(void) {
    test_lstm(1);
    test_lstm(0);
}
static void case_gru(void) {
    test_gru(1);
    test_gru(0);
}
static void case_xent(void) {
    test_xent(0.1f, 0.5f);
    test_xent(0.0f, 1.0f);
}

/* ---- linear and efficient attention, the CUDA backend against the CPU ---- */

/* key_len[B] in both backends (int32). */
typedef struct {
    int *g, *c;
} IPair;
static IPair ipair_of(const int *host, int n) {
    IPair p = {gpu->alloc(sizeof(int) * (size_t)n), cpu->alloc(sizeof(int) * (size_t)n)};
    gpu->upload(p.g, host, sizeof(int) * (size_t)n);
    cpu->upload(p.c, host, sizeof(int) * (size_t)n);
    return p;
}

/* Shapes of the linear-time kinds: Tq != Tk, D != Dv, padded keys (key_len below Tk, one batch
 * row with key_len 0 where the kind allows it), a shape wider than one block of threads. */
static const int LIN_SHAPES[][6] = {/* B, NH, Tq, Tk, D, Dv */
                                    {2, 2, 5, 7, 4, 3},
                                    {3, 1, 6, 6, 8, 8},
                                    {1, 3, 1, 9, 5, 6},
                                    {2, 2, 9, 4, 16, 150},
                                    {1, 1, 3, 4, 130, 131}}; /* D, Dv past the 128-thread block */

/* linear_attn_*: forward (causal and not), backward onto random prefills (accumulate), and a
 * decoding run of linear_attn_step over Tk steps, for both feature maps (elu + 1 on inputs in
 * [−1, 1]; the identity on inputs in [0, 1], so that every φ(q)·φ(k) ≥ 0, as the taylor kind's
 * features give). Tolerance 1e-5 normwise: the same float operations in the same order
 * (linear.cuh); 1e-5 leaves room for FMA contraction on a GPU. */
static void vs_cpu_linear_attn(void) {
    if (!HAVE(linear_attn_forward)) return;
    for (int phi = LINEAR_PHI_ELU1; phi <= LINEAR_PHI_IDENTITY; phi++)
    for (size_t si = 0; si < sizeof LIN_SHAPES / sizeof LIN_SHAPES[0]; si++) {
        int B = LIN_SHAPES[si][0], NH = LIN_SHAPES[si][1], Tq = LIN_SHAPES[si][2],
            Tk = LIN_SHAPES[si][3], D = LIN_SHAPES[si][4], Dv = LIN_SHAPES[si][5];
        float lo = phi == LINEAR_PHI_IDENTITY ? 0.0f : -1.0f; /* q, k in [lo, 1) */
        for (int causal = 0; causal < 2; causal++) {
            size_t nq = (size_t)B * NH * Tq * D, nk = (size_t)B * NH * Tk * D,
                   nv = (size_t)B * NH * Tk * Dv, no = (size_t)B * NH * Tq * Dv;
            int hl[4];
            for (int b = 0; b < B; b++) hl[b] = b == 1 ? 0 : Tk - (b % 3); /* row 1: no key */
            float *hq = frand(nq, lo, 1), *hk = frand(nk, lo, 1), *hv = frand_pm1(nv),
                  *hg = frand_pm1(no), *hdq = frand_pm1(nq), *hdk = frand_pm1(nk),
                  *hdv = frand_pm1(nv), *ho = frand_pm1(no);
            Pair q = pair_of(hq, nq), k = pair_of(hk, nk), v = pair_of(hv, nv), g = pair_of(hg, no),
                 o = pair_of(ho, no), dq = pair_of(hdq, nq), dk = pair_of(hdk, nk),
                 dv = pair_of(hdv, nv);
            IPair len = ipair_of(hl, B);
            size_t wg = gpu->linear_attn_workspace(B, NH, Tq, Tk, D, Dv),
                   wc = cpu->linear_attn_workspace(B, NH, Tq, Tk, D, Dv);
            float *workg = gpu->alloc(sizeof(float) * (wg + 1)),
                  *workc = cpu->alloc(sizeof(float) * (wc + 1));
            char what[160];
            gpu->linear_attn_forward(o.g, q.g, k.g, v.g, len.g, causal, phi, B, NH, Tq, Tk, D, Dv,
                                     workg);
            cpu->linear_attn_forward(o.c, q.c, k.c, v.c, len.c, causal, phi, B, NH, Tq, Tk, D, Dv,
                                     workc);
            snprintf(what, sizeof what, "linear_attn_forward B=%d NH=%d Tq=%d Tk=%d D=%d Dv=%d "
                     "causal=%d phi=%d", B, NH, Tq, Tk, D, Dv, causal, phi);
            compare_tol(what, o.g, o.c, no, 1e-5);
            if (HAVE(linear_attn_backward)) {
                gpu->linear_attn_backward(dq.g, dk.g, dv.g, g.g, q.g, k.g, v.g, len.g, causal, phi,
                                          B, NH, Tq, Tk, D, Dv, workg);
                cpu->linear_attn_backward(dq.c, dk.c, dv.c, g.c, q.c, k.c, v.c, len.c, causal, phi,
                                          B, NH, Tq, Tk, D, Dv, workc);
                snprintf(what, sizeof what, "linear_attn_backward dq (accumulated) shape %zu "
                         "causal=%d phi=%d", si, causal, phi);
                compare_tol(what, dq.g, dq.c, nq, 1e-5);
                snprintf(what, sizeof what, "linear_attn_backward dk (accumulated) shape %zu "
                         "causal=%d phi=%d", si, causal, phi);
                compare_tol(what, dk.g, dk.c, nk, 1e-5);
                snprintf(what, sizeof what, "linear_attn_backward dv (accumulated) shape %zu "
                         "causal=%d phi=%d", si, causal, phi);
                compare_tol(what, dv.g, dv.c, nv, 1e-5);
            }
            gpu->free(workg), cpu->free(workc);
            gpu->free(len.g), cpu->free(len.c);
            pair_free(q), pair_free(k), pair_free(v), pair_free(g), pair_free(o);
            pair_free(dq), pair_free(dk), pair_free(dv);
            free(hq), free(hk), free(hv), free(hg), free(hdq), free(hdk), free(hdv), free(ho);
        }
        if (HAVE(linear_attn_step)) { /* Tk decoding steps, one new key and query each */
            size_t nst = (size_t)B * NH * D * Dv, nz = (size_t)B * NH * D;
            float *zero = calloc(nst + 1, sizeof(float));
            Pair st = pair_of(zero, nst), zs = pair_of(zero, nz), o = pair_of(zero, (size_t)B * NH * Dv);
            for (int t = 0; t < Tk; t++) {
                float *hq = frand(nz, lo, 1), *hk = frand(nz, lo, 1),
                      *hv = frand_pm1((size_t)B * NH * Dv);
                Pair q = pair_of(hq, nz), k = pair_of(hk, nz), v = pair_of(hv, (size_t)B * NH * Dv);
                gpu->linear_attn_step(o.g, st.g, zs.g, q.g, k.g, v.g, phi, B, NH, D, Dv);
                cpu->linear_attn_step(o.c, st.c, zs.c, q.c, k.c, v.c, phi, B, NH, D, Dv);
                char what[120];
                snprintf(what, sizeof what, "linear_attn_step shape %zu phi=%d step %d: out", si,
                         phi, t);
                compare_tol(what, o.g, o.c, (size_t)B * NH * Dv, 1e-5);
                pair_free(q), pair_free(k), pair_free(v);
                free(hq), free(hk), free(hv);
            }
            compare_tol("linear_attn_step: state after the last step", st.g, st.c, nst, 1e-5);
            compare_tol("linear_attn_step: zsum after the last step", zs.g, zs.c, nz, 1e-5);
            pair_free(st), pair_free(zs), pair_free(o);
            free(zero);
        }
    }
}

/* EXPECTs the n floats at a and b (both the backend under test's) identical bit for bit. */
static void expect_same_bits(const char *what, const float *a_dev, const float *b_dev, size_t n) {
    float *a = from_backend(gpu, a_dev, n), *b = from_backend(gpu, b_dev, n);
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < n; i++)
        if (memcmp(&a[i], &b[i], sizeof(float)) != 0 && !bad++) first = i;
    EXPECT(bad == 0, "%s: %zu of %zu floats differ (first at %zu: %.9g against %.9g)", what, bad,
           n, first, bad ? (double)a[first] : 0.0, bad ? (double)b[first] : 0.0);
    free(a), free(b);
}

/* linear_attn_summary, _read, _read_backward, _summary_backward (the non-causal form split at its
 * key summary), for both feature maps over LIN_SHAPES (Tq > 1, D != Dv, D and Dv past one block):
 *   summary with key_len (a full row, short rows, row 1 with no key) and with NULL, onto random
 *     prefills (it overwrites); the read of each onto a random prefill; on the backend under
 *     test, summary then read equals its linear_attn_forward with causal = 0, bit for bit;
 *   read_backward onto random prefills of dq, dstate, dzsum (accumulate), then again with
 *     dq NULL (dq must stay as it was), over the summary of all keys (a pair with no key has
 *     den = 1e-6 and a dstate a million times larger, which would hide the other pairs' errors
 *     in the normwise measure; that pair's dq and dzsum are 0 and are checked with key_len);
 *   summary_backward of random dstate, dzsum with key_len onto random prefills of dk, dv (padded
 *     keys must keep theirs: whole buffers compared), then with dv NULL, then with dk NULL; and
 *     where D = Dv, with k = v and dk = dv the same buffers (the RNN's one-head case), and on a
 *     one-head shape with D = Dv = 130, past one block of threads.
 * Tolerance 1e-5 normwise: the same float operations in the same order (linear.cuh); 1e-5 leaves
 * room for FMA contraction and the CPU's vectorised dot products. */
static void vs_cpu_linear_attn_split(void) {
    if (!HAVE(linear_attn_summary) || !HAVE(linear_attn_read) ||
        !HAVE(linear_attn_read_backward) || !HAVE(linear_attn_summary_backward))
        return;
    static const int alias_shape[6] = {3, 1, 3, 5, 130, 130}; /* B, NH, Tq, Tk, D = Dv */
    size_t nshapes = sizeof LIN_SHAPES / sizeof LIN_SHAPES[0];
    char what[200];
    for (int phi = LINEAR_PHI_ELU1; phi <= LINEAR_PHI_IDENTITY; phi++)
    for (size_t si = 0; si <= nshapes; si++) {
        const int *sh = si < nshapes ? LIN_SHAPES[si] : alias_shape;
        int B = sh[0], NH = sh[1], Tq = sh[2], Tk = sh[3], D = sh[4], Dv = sh[5];
        float lo = phi == LINEAR_PHI_IDENTITY ? 0.0f : -1.0f; /* q, k in [lo, 1) */
        size_t nq = (size_t)B * NH * Tq * D, nk = (size_t)B * NH * Tk * D,
               nv = (size_t)B * NH * Tk * Dv, no = (size_t)B * NH * Tq * Dv,
               nst = (size_t)B * NH * D * Dv, nz = (size_t)B * NH * D;
        int hl[4];
        for (int b = 0; b < B; b++) hl[b] = b == 1 ? 0 : Tk - (b % 3); /* row 1: no key */
        float *hq = frand(nq, lo, 1), *hk = frand(nk, lo, 1), *hv = frand_pm1(nv),
              *hg = frand_pm1(no), *hst = frand_pm1(nst), *hz = frand_pm1(nz),
              *hdq = frand_pm1(nq), *hdk = frand_pm1(nk), *hdv = frand_pm1(nv),
              *ho = frand_pm1(no), *hds = frand_pm1(nst), *hdz = frand_pm1(nz);
        Pair q = pair_of(hq, nq), k = pair_of(hk, nk), v = pair_of(hv, nv), g = pair_of(hg, no),
             st = pair_of(hst, nst), zs = pair_of(hz, nz), stf = pair_of(hst, nst),
             zsf = pair_of(hz, nz), o = pair_of(ho, no), of = pair_of(ho, no),
             dq = pair_of(hdq, nq), dk = pair_of(hdk, nk), dv = pair_of(hdv, nv),
             ds = pair_of(hds, nst), dz = pair_of(hdz, nz);
        IPair len = ipair_of(hl, B);

        if (si < nshapes) {
            /* the summaries: with key_len into st, zs; of every key into stf, zsf */
            gpu->linear_attn_summary(st.g, zs.g, k.g, v.g, len.g, phi, B, NH, Tk, D, Dv);
            cpu->linear_attn_summary(st.c, zs.c, k.c, v.c, len.c, phi, B, NH, Tk, D, Dv);
            gpu->linear_attn_summary(stf.g, zsf.g, k.g, v.g, NULL, phi, B, NH, Tk, D, Dv);
            cpu->linear_attn_summary(stf.c, zsf.c, k.c, v.c, NULL, phi, B, NH, Tk, D, Dv);
            snprintf(what, sizeof what, "linear_attn_summary B=%d NH=%d Tk=%d D=%d Dv=%d phi=%d: "
                     "state", B, NH, Tk, D, Dv, phi);
            compare_tol(what, st.g, st.c, nst, 1e-5);
            snprintf(what, sizeof what, "linear_attn_summary shape %zu phi=%d: zsum", si, phi);
            compare_tol(what, zs.g, zs.c, nz, 1e-5);
            snprintf(what, sizeof what, "linear_attn_summary shape %zu phi=%d key_len NULL: "
                     "state", si, phi);
            compare_tol(what, stf.g, stf.c, nst, 1e-5);
            snprintf(what, sizeof what, "linear_attn_summary shape %zu phi=%d key_len NULL: "
                     "zsum", si, phi);
            compare_tol(what, zsf.g, zsf.c, nz, 1e-5);

            /* the reads, and summary + read = the non-causal forward on the backend under test */
            gpu->linear_attn_read(o.g, q.g, st.g, zs.g, phi, B, NH, Tq, D, Dv);
            cpu->linear_attn_read(o.c, q.c, st.c, zs.c, phi, B, NH, Tq, D, Dv);
            gpu->linear_attn_read(of.g, q.g, stf.g, zsf.g, phi, B, NH, Tq, D, Dv);
            cpu->linear_attn_read(of.c, q.c, stf.c, zsf.c, phi, B, NH, Tq, D, Dv);
            snprintf(what, sizeof what, "linear_attn_read shape %zu phi=%d: out", si, phi);
            compare_tol(what, o.g, o.c, no, 1e-5);
            snprintf(what, sizeof what, "linear_attn_read shape %zu phi=%d key_len NULL: out", si,
                     phi);
            compare_tol(what, of.g, of.c, no, 1e-5);
            if (HAVE(linear_attn_forward)) {
                size_t nw = gpu->linear_attn_workspace(B, NH, Tq, Tk, D, Dv);
                float *work = gpu->alloc(sizeof(float) * (nw + 1));
                float *fwd = gpu->alloc(sizeof(float) * no);
                gpu->linear_attn_forward(fwd, q.g, k.g, v.g, len.g, 0, phi, B, NH, Tq, Tk, D, Dv,
                                         work);
                snprintf(what, sizeof what, "linear_attn_summary + _read shape %zu phi=%d against "
                         "linear_attn_forward causal=0 (cuda)", si, phi);
                expect_same_bits(what, o.g, fwd, no);
                gpu->linear_attn_forward(fwd, q.g, k.g, v.g, NULL, 0, phi, B, NH, Tq, Tk, D, Dv,
                                         work);
                snprintf(what, sizeof what, "linear_attn_summary + _read shape %zu phi=%d key_len "
                         "NULL against linear_attn_forward causal=0 (cuda)", si, phi);
                expect_same_bits(what, of.g, fwd, no);
                gpu->free(fwd), gpu->free(work);
            }

            /* read_backward over the summary of every key, onto the prefills; then dq NULL */
            gpu->linear_attn_read_backward(dq.g, ds.g, dz.g, g.g, q.g, stf.g, zsf.g, phi, B, NH,
                                           Tq, D, Dv);
            cpu->linear_attn_read_backward(dq.c, ds.c, dz.c, g.c, q.c, stf.c, zsf.c, phi, B, NH,
                                           Tq, D, Dv);
            gpu->linear_attn_read_backward(NULL, ds.g, dz.g, g.g, q.g, stf.g, zsf.g, phi, B, NH,
                                           Tq, D, Dv);
            cpu->linear_attn_read_backward(NULL, ds.c, dz.c, g.c, q.c, stf.c, zsf.c, phi, B, NH,
                                           Tq, D, Dv);
            snprintf(what, sizeof what, "linear_attn_read_backward shape %zu phi=%d: dq "
                     "(accumulated, then dq NULL)", si, phi);
            compare_tol(what, dq.g, dq.c, nq, 1e-5);
            snprintf(what, sizeof what, "linear_attn_read_backward shape %zu phi=%d: dstate "
                     "(accumulated twice)", si, phi);
            compare_tol(what, ds.g, ds.c, nst, 1e-5);
            snprintf(what, sizeof what, "linear_attn_read_backward shape %zu phi=%d: dzsum "
                     "(accumulated twice)", si, phi);
            compare_tol(what, dz.g, dz.c, nz, 1e-5);
            /* over the summary with key_len (a pair with no key): dq and dzsum only */
            gpu->linear_attn_read_backward(dq.g, ds.g, dz.g, g.g, q.g, st.g, zs.g, phi, B, NH,
                                           Tq, D, Dv);
            cpu->linear_attn_read_backward(dq.c, ds.c, dz.c, g.c, q.c, st.c, zs.c, phi, B, NH,
                                           Tq, D, Dv);
            snprintf(what, sizeof what, "linear_attn_read_backward shape %zu phi=%d key_len: dq",
                     si, phi);
            compare_tol(what, dq.g, dq.c, nq, 1e-5);
            snprintf(what, sizeof what, "linear_attn_read_backward shape %zu phi=%d key_len: "
                     "dzsum", si, phi);
            compare_tol(what, dz.g, dz.c, nz, 1e-5);

            /* summary_backward of random dstate, dzsum (hds, hdz in st, zs) with key_len:
             * both, then dv NULL, then dk NULL */
            gpu->upload(st.g, hds, sizeof(float) * nst);
            cpu->upload(st.c, hds, sizeof(float) * nst);
            gpu->upload(zs.g, hdz, sizeof(float) * nz);
            cpu->upload(zs.c, hdz, sizeof(float) * nz);
            gpu->linear_attn_summary_backward(dk.g, dv.g, st.g, zs.g, k.g, v.g, len.g, phi, B, NH,
                                              Tk, D, Dv);
            cpu->linear_attn_summary_backward(dk.c, dv.c, st.c, zs.c, k.c, v.c, len.c, phi, B, NH,
                                              Tk, D, Dv);
            snprintf(what, sizeof what, "linear_attn_summary_backward shape %zu phi=%d: dk "
                     "(accumulated)", si, phi);
            compare_tol(what, dk.g, dk.c, nk, 1e-5);
            snprintf(what, sizeof what, "linear_attn_summary_backward shape %zu phi=%d: dv "
                     "(accumulated)", si, phi);
            compare_tol(what, dv.g, dv.c, nv, 1e-5);
            gpu->linear_attn_summary_backward(dk.g, NULL, st.g, zs.g, k.g, v.g, len.g, phi, B, NH,
                                              Tk, D, Dv);
            cpu->linear_attn_summary_backward(dk.c, NULL, st.c, zs.c, k.c, v.c, len.c, phi, B, NH,
                                              Tk, D, Dv);
            gpu->linear_attn_summary_backward(NULL, dv.g, st.g, zs.g, k.g, v.g, len.g, phi, B, NH,
                                              Tk, D, Dv);
            cpu->linear_attn_summary_backward(NULL, dv.c, st.c, zs.c, k.c, v.c, len.c, phi, B, NH,
                                              Tk, D, Dv);
            snprintf(what, sizeof what, "linear_attn_summary_backward shape %zu phi=%d: dk "
                     "(then dv NULL)", si, phi);
            compare_tol(what, dk.g, dk.c, nk, 1e-5);
            snprintf(what, sizeof what, "linear_attn_summary_backward shape %zu phi=%d: dv "
                     "(then dk NULL)", si, phi);
            compare_tol(what, dv.g, dv.c, nv, 1e-5);
        }
        if (D == Dv) { /* k = v, dk = dv: one buffer each, as the RNN with one head passes */
            gpu->upload(st.g, hds, sizeof(float) * nst);
            cpu->upload(st.c, hds, sizeof(float) * nst);
            gpu->upload(zs.g, hdz, sizeof(float) * nz);
            cpu->upload(zs.c, hdz, sizeof(float) * nz);
            gpu->linear_attn_summary_backward(dk.g, dk.g, st.g, zs.g, k.g, k.g, len.g, phi, B, NH,
                                              Tk, D, Dv);
            cpu->linear_attn_summary_backward(dk.c, dk.c, st.c, zs.c, k.c, k.c, len.c, phi, B, NH,
                                              Tk, D, Dv);
            snprintf(what, sizeof what, "linear_attn_summary_backward B=%d NH=%d Tk=%d D=Dv=%d "
                     "phi=%d: dk = dv, k = v (accumulated)", B, NH, Tk, D, phi);
            compare_tol(what, dk.g, dk.c, nk, 1e-5);
        }
        gpu->free(len.g), cpu->free(len.c);
        pair_free(q), pair_free(k), pair_free(v), pair_free(g), pair_free(st), pair_free(zs);
        pair_free(stf), pair_free(zsf), pair_free(o), pair_free(of), pair_free(dq);
        pair_free(dk), pair_free(dv), pair_free(ds), pair_free(dz);
        free(hq), free(hk), free(hv), free(hg), free(hst), free(hz), free(hdq), free(hdk);
        free(hdv), free(ho), free(hds), free(hdz);
    }
}

/* linformer_proj_forward / _backward (the linformer kind's projections over the key axis): per-head
 * and shared P, n > Tk and n = Tk, key_len with a full, an empty and a partial row, and NULL; a
 * shape wider than one block of threads; the backward onto random prefills (padded rows of dx and
 * the columns s >= Tk of dP must stay as prefilled: whole buffers compared). Tolerance 1e-5
 * normwise (the same float sums in the same order; FMA contraction on a GPU). */
static void vs_cpu_linformer_proj(void) {
    if (!HAVE(linformer_proj_forward)) return;
    /* the last two past the element-wise grid (size_runs): B·NH·R·D and B·NH·Tk·D (the forward,
     * dx), NP·R·Tk (dP) */
    static const int shapes[][6] = {/* B, NH, R, Tk, D, n */
                                    {3, 2, 4, 5, 3, 7},
                                    {2, 3, 3, 6, 4, 6},
                                    {4, 4, 32, 37, 16, 128},
                                    {1025, 1, 2, 2, 513, 2},
                                    {1, 1, 1025, 1025, 1, 1025}};
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
        for (int shared = 0; shared < 2; shared++) {
            int B = shapes[si][0], NH = shapes[si][1], R = shapes[si][2], Tk = shapes[si][3],
                D = shapes[si][4], n = shapes[si][5];
            if (si >= 3 && (shared || !size_runs(EW_GRID + 1))) continue;
            size_t np = (size_t)(shared ? 1 : NH) * R * n, nx = (size_t)B * NH * Tk * D,
                   no = (size_t)B * NH * R * D;
            int *hl = malloc(sizeof(int) * (size_t)B);
            if (!hl) exit(2);
            for (int b = 0; b < B; b++) hl[b] = b == 1 ? 0 : Tk - (b % 3); /* row 1: no key */
            float *hP = frand_pm1(np), *hx = frand_pm1(nx), *hg = frand_pm1(no),
                  *ho = frand_pm1(no), *hdx = frand_pm1(nx), *hdP = frand_pm1(np);
            Pair P = pair_of(hP, np), x = pair_of(hx, nx), g = pair_of(hg, no),
                 o = pair_of(ho, no), dx = pair_of(hdx, nx), dP = pair_of(hdP, np);
            IPair len = ipair_of(hl, B);
            const int *lg = si == 1 ? NULL : len.g, *lc = si == 1 ? NULL : len.c;
            char what[160];
            gpu->linformer_proj_forward(o.g, P.g, x.g, lg, B, NH, R, Tk, D, n, shared);
            cpu->linformer_proj_forward(o.c, P.c, x.c, lc, B, NH, R, Tk, D, n, shared);
            snprintf(what, sizeof what, "linformer_proj_forward B=%d NH=%d R=%d Tk=%d D=%d n=%d "
                     "shared=%d", B, NH, R, Tk, D, n, shared);
            compare_tol(what, o.g, o.c, no, 1e-5);
            if (HAVE(linformer_proj_backward)) {
                gpu->linformer_proj_backward(dx.g, dP.g, g.g, P.g, x.g, lg, B, NH, R, Tk, D, n,
                                             shared);
                cpu->linformer_proj_backward(dx.c, dP.c, g.c, P.c, x.c, lc, B, NH, R, Tk, D, n,
                                             shared);
                snprintf(what, sizeof what, "linformer_proj_backward dx (accumulated) shape %zu "
                         "shared=%d", si, shared);
                compare_tol(what, dx.g, dx.c, nx, 1e-5);
                snprintf(what, sizeof what, "linformer_proj_backward dP (accumulated) shape %zu "
                         "shared=%d", si, shared);
                compare_tol(what, dP.g, dP.c, np, 1e-5);
            }
            gpu->free(len.g), cpu->free(len.c);
            pair_free(P), pair_free(x), pair_free(g), pair_free(o), pair_free(dx), pair_free(dP);
            free(hP), free(hx), free(hg), free(ho), free(hdx), free(hdP), free(hl);
            g_quiet = 0;
        }
}

/* l2feature_forward / _backward (the taylor kind's features [1; x/‖x‖₂]): rows of widths 1, a
 * head size, one wider than the 64-thread block (and not a multiple of it), a zero row (r =
 * 1e6, x̂ = 0) and a row of large values; the backward onto a random prefill. Tolerance 1e-5
 * normwise (the norm and x̂·g are summed in double in another order: a tree). */
static void vs_cpu_l2feature(void) {
    if (!HAVE(l2feature_forward)) return;
    static const int shapes[][2] = {{5, 8}, {1, 1}, {37, 64}, {3, 150}};
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        int N = shapes[si][0], D = shapes[si][1];
        size_t ni = (size_t)N * D, no = (size_t)N * (D + 1);
        float *hx = frand_pm1(ni), *ho = frand_pm1(no), *hg = frand_pm1(no), *hd = frand_pm1(ni);
        if (N > 2)
            for (int d = 0; d < D; d++) hx[D + d] = 0.0f, hx[2 * D + d] *= 1000.0f;
        Pair x = pair_of(hx, ni), o = pair_of(ho, no), g = pair_of(hg, no), dx = pair_of(hd, ni);
        char what[120];
        gpu->l2feature_forward(o.g, x.g, N, D);
        cpu->l2feature_forward(o.c, x.c, N, D);
        snprintf(what, sizeof what, "l2feature_forward N=%d D=%d", N, D);
        compare_tol(what, o.g, o.c, no, 1e-5);
        if (HAVE(l2feature_backward)) {
            gpu->l2feature_backward(dx.g, g.g, x.g, N, D);
            cpu->l2feature_backward(dx.c, g.c, x.c, N, D);
            snprintf(what, sizeof what, "l2feature_backward (accumulated) N=%d D=%d", N, D);
            compare_tol(what, dx.g, dx.c, ni, 1e-5);
        }
        pair_free(x), pair_free(o), pair_free(g), pair_free(dx);
        free(hx), free(ho), free(hg), free(hd);
    }
}

/* efficient_attn_*: forward and backward onto random prefills over LIN_SHAPES (padded keys, a
 * batch row with no key). Tolerance 1e-5 normwise: the CPU's operations per output element in
 * its order (efficient.cuh), except that dv sums over d before adding (the CPU adds each term
 * into dv), and FMA contraction on a GPU. */
static void vs_cpu_efficient_attn(void) {
    if (!HAVE(efficient_attn_forward)) return;
    for (size_t si = 0; si < sizeof LIN_SHAPES / sizeof LIN_SHAPES[0]; si++) {
        int B = LIN_SHAPES[si][0], NH = LIN_SHAPES[si][1], Tq = LIN_SHAPES[si][2],
            Tk = LIN_SHAPES[si][3], D = LIN_SHAPES[si][4], Dv = LIN_SHAPES[si][5];
        size_t nq = (size_t)B * NH * Tq * D, nk = (size_t)B * NH * Tk * D,
               nv = (size_t)B * NH * Tk * Dv, no = (size_t)B * NH * Tq * Dv;
        int hl[4];
        for (int b = 0; b < B; b++) hl[b] = b == 1 ? 0 : Tk - (b % 3);
        float *hq = frand_pm1(nq), *hk = frand_pm1(nk), *hv = frand_pm1(nv), *hg = frand_pm1(no),
              *hdq = frand_pm1(nq), *hdk = frand_pm1(nk), *hdv = frand_pm1(nv), *ho = frand_pm1(no);
        for (size_t i = 0; i < nk; i++) hk[i] *= 3.0f; /* sharper column softmax */
        Pair q = pair_of(hq, nq), k = pair_of(hk, nk), v = pair_of(hv, nv), g = pair_of(hg, no),
             o = pair_of(ho, no), dq = pair_of(hdq, nq), dk = pair_of(hdk, nk), dv = pair_of(hdv, nv);
        IPair len = ipair_of(hl, B);
        size_t wg = gpu->efficient_attn_workspace(B, NH, Tq, Tk, D, Dv),
               wc = cpu->efficient_attn_workspace(B, NH, Tq, Tk, D, Dv);
        float *workg = gpu->alloc(sizeof(float) * (wg + 1)), *workc = cpu->alloc(sizeof(float) * (wc + 1));
        char what[160];
        gpu->efficient_attn_forward(o.g, q.g, k.g, v.g, len.g, B, NH, Tq, Tk, D, Dv, workg);
        cpu->efficient_attn_forward(o.c, q.c, k.c, v.c, len.c, B, NH, Tq, Tk, D, Dv, workc);
        snprintf(what, sizeof what, "efficient_attn_forward B=%d NH=%d Tq=%d Tk=%d D=%d Dv=%d", B,
                 NH, Tq, Tk, D, Dv);
        compare_tol(what, o.g, o.c, no, 1e-5);
        if (HAVE(efficient_attn_backward)) {
            gpu->efficient_attn_backward(dq.g, dk.g, dv.g, g.g, q.g, k.g, v.g, len.g, B, NH, Tq, Tk, D,
                                         Dv, workg);
            cpu->efficient_attn_backward(dq.c, dk.c, dv.c, g.c, q.c, k.c, v.c, len.c, B, NH, Tq, Tk, D,
                                         Dv, workc);
            snprintf(what, sizeof what, "efficient_attn_backward dq (accumulated) shape %zu", si);
            compare_tol(what, dq.g, dq.c, nq, 1e-5);
            snprintf(what, sizeof what, "efficient_attn_backward dk (accumulated) shape %zu", si);
            compare_tol(what, dk.g, dk.c, nk, 1e-5);
            snprintf(what, sizeof what, "efficient_attn_backward dv (accumulated) shape %zu", si);
            compare_tol(what, dv.g, dv.c, nv, 1e-5);
        }
        gpu->free(workg), cpu->free(workc);
        gpu->free(len.g), cpu->free(len.c);
        pair_free(q), pair_free(k), pair_free(v), pair_free(g), pair_free(o);
        pair_free(dq), pair_free(dk), pair_free(dv);
        free(hq), free(hk), free(hv), free(hg), free(hdq), free(hdk), free(hdv), free(ho);
    }
}

/* efficient_attn_summary, _read, _read_backward, _summary_backward (the context split) over
 * LIN_SHAPES and, with k = v and dk = dv one buffer, a one-head shape with D = Dv = 130 (past one
 * block of threads):
 *   summary with key_len (row 1 with no key: ctx = 0) and with NULL onto random prefills (it
 *     overwrites); the read onto a random prefill; on the backend under test, summary then read
 *     equals its efficient_attn_forward bit for bit;
 *   read_backward onto random prefills of dq, dctx (accumulate), then with dq NULL;
 *   summary_backward of a random dctx with key_len onto random prefills of dk, dv (padded keys
 *     keep theirs: whole buffers compared), then with dv NULL, then with dk NULL; where D = Dv,
 *     with k = v and dk = dv.
 * Tolerance 1e-5 normwise, as vs_cpu_efficient_attn. */
static void vs_cpu_efficient_attn_split(void) {
    if (!HAVE(efficient_attn_summary) || !HAVE(efficient_attn_read) ||
        !HAVE(efficient_attn_read_backward) || !HAVE(efficient_attn_summary_backward))
        return;
    static const int alias_shape[6] = {3, 1, 3, 5, 130, 130}; /* B, NH, Tq, Tk, D = Dv */
    size_t nshapes = sizeof LIN_SHAPES / sizeof LIN_SHAPES[0];
    char what[200];
    for (size_t si = 0; si <= nshapes; si++) {
        const int *sh = si < nshapes ? LIN_SHAPES[si] : alias_shape;
        int B = sh[0], NH = sh[1], Tq = sh[2], Tk = sh[3], D = sh[4], Dv = sh[5];
        size_t nq = (size_t)B * NH * Tq * D, nk = (size_t)B * NH * Tk * D,
               nv = (size_t)B * NH * Tk * Dv, no = (size_t)B * NH * Tq * Dv,
               nc = (size_t)B * NH * D * Dv;
        int hl[4];
        for (int b = 0; b < B; b++) hl[b] = b == 1 ? 0 : Tk - (b % 3); /* row 1: no key */
        float *hq = frand_pm1(nq), *hk = frand_pm1(nk), *hv = frand_pm1(nv), *hg = frand_pm1(no),
              *hc = frand_pm1(nc), *hdq = frand_pm1(nq), *hdk = frand_pm1(nk),
              *hdv = frand_pm1(nv), *ho = frand_pm1(no), *hdc = frand_pm1(nc);
        for (size_t i = 0; i < nk; i++) hk[i] *= 3.0f; /* sharper column softmax */
        Pair q = pair_of(hq, nq), k = pair_of(hk, nk), v = pair_of(hv, nv), g = pair_of(hg, no),
             c = pair_of(hc, nc), cf = pair_of(hc, nc), o = pair_of(ho, no),
             dq = pair_of(hdq, nq), dk = pair_of(hdk, nk), dv = pair_of(hdv, nv),
             dc = pair_of(hdc, nc);
        IPair len = ipair_of(hl, B);
        if (si < nshapes) {
            gpu->efficient_attn_summary(c.g, k.g, v.g, len.g, B, NH, Tk, D, Dv);
            cpu->efficient_attn_summary(c.c, k.c, v.c, len.c, B, NH, Tk, D, Dv);
            gpu->efficient_attn_summary(cf.g, k.g, v.g, NULL, B, NH, Tk, D, Dv);
            cpu->efficient_attn_summary(cf.c, k.c, v.c, NULL, B, NH, Tk, D, Dv);
            snprintf(what, sizeof what, "efficient_attn_summary B=%d NH=%d Tk=%d D=%d Dv=%d: ctx",
                     B, NH, Tk, D, Dv);
            compare_tol(what, c.g, c.c, nc, 1e-5);
            snprintf(what, sizeof what, "efficient_attn_summary shape %zu key_len NULL: ctx", si);
            compare_tol(what, cf.g, cf.c, nc, 1e-5);

            gpu->efficient_attn_read(o.g, q.g, c.g, B, NH, Tq, D, Dv);
            cpu->efficient_attn_read(o.c, q.c, c.c, B, NH, Tq, D, Dv);
            snprintf(what, sizeof what, "efficient_attn_read shape %zu: out", si);
            compare_tol(what, o.g, o.c, no, 1e-5);
            if (HAVE(efficient_attn_forward)) {
                size_t nw = gpu->efficient_attn_workspace(B, NH, Tq, Tk, D, Dv);
                float *work = gpu->alloc(sizeof(float) * (nw + 1));
                float *fwd = gpu->alloc(sizeof(float) * no);
                gpu->efficient_attn_forward(fwd, q.g, k.g, v.g, len.g, B, NH, Tq, Tk, D, Dv, work);
                snprintf(what, sizeof what, "efficient_attn_summary + _read shape %zu against "
                         "efficient_attn_forward (cuda)", si);
                expect_same_bits(what, o.g, fwd, no);
                gpu->free(fwd), gpu->free(work);
            }

            gpu->efficient_attn_read_backward(dq.g, dc.g, g.g, q.g, c.g, B, NH, Tq, D, Dv);
            cpu->efficient_attn_read_backward(dq.c, dc.c, g.c, q.c, c.c, B, NH, Tq, D, Dv);
            gpu->efficient_attn_read_backward(NULL, dc.g, g.g, q.g, c.g, B, NH, Tq, D, Dv);
            cpu->efficient_attn_read_backward(NULL, dc.c, g.c, q.c, c.c, B, NH, Tq, D, Dv);
            snprintf(what, sizeof what, "efficient_attn_read_backward shape %zu: dq "
                     "(accumulated, then dq NULL)", si);
            compare_tol(what, dq.g, dq.c, nq, 1e-5);
            snprintf(what, sizeof what, "efficient_attn_read_backward shape %zu: dctx "
                     "(accumulated twice)", si);
            compare_tol(what, dc.g, dc.c, nc, 1e-5);

            /* summary_backward of a random dctx (hdc) against the context with key_len */
            gpu->upload(dc.g, hdc, sizeof(float) * nc);
            cpu->upload(dc.c, hdc, sizeof(float) * nc);
            gpu->efficient_attn_summary_backward(dk.g, dv.g, dc.g, c.g, k.g, v.g, len.g, B, NH, Tk,
                                                 D, Dv);
            cpu->efficient_attn_summary_backward(dk.c, dv.c, dc.c, c.c, k.c, v.c, len.c, B, NH, Tk,
                                                 D, Dv);
            snprintf(what, sizeof what, "efficient_attn_summary_backward shape %zu: dk "
                     "(accumulated)", si);
            compare_tol(what, dk.g, dk.c, nk, 1e-5);
            snprintf(what, sizeof what, "efficient_attn_summary_backward shape %zu: dv "
                     "(accumulated)", si);
            compare_tol(what, dv.g, dv.c, nv, 1e-5);
            gpu->efficient_attn_summary_backward(dk.g, NULL, dc.g, c.g, k.g, v.g, len.g, B, NH,
                                                 Tk, D, Dv);
            cpu->efficient_attn_summary_backward(dk.c, NULL, dc.c, c.c, k.c, v.c, len.c, B, NH,
                                                 Tk, D, Dv);
            gpu->efficient_attn_summary_backward(NULL, dv.g, dc.g, c.g, k.g, v.g, len.g, B, NH,
                                                 Tk, D, Dv);
            cpu->efficient_attn_summary_backward(NULL, dv.c, dc.c, c.c, k.c, v.c, len.c, B, NH,
                                                 Tk, D, Dv);
            snprintf(what, sizeof what, "efficient_attn_summary_backward shape %zu: dk (then dv "
                     "NULL)", si);
            compare_tol(what, dk.g, dk.c, nk, 1e-5);
            snprintf(what, sizeof what, "efficient_attn_summary_backward shape %zu: dv (then dk "
                     "NULL)", si);
            compare_tol(what, dv.g, dv.c, nv, 1e-5);
        }
        if (D == Dv) { /* k = v, dk = dv: one buffer each, as the RNN with one head passes */
            gpu->efficient_attn_summary(c.g, k.g, k.g, len.g, B, NH, Tk, D, Dv);
            cpu->efficient_attn_summary(c.c, k.c, k.c, len.c, B, NH, Tk, D, Dv);
            gpu->upload(dc.g, hdc, sizeof(float) * nc);
            cpu->upload(dc.c, hdc, sizeof(float) * nc);
            gpu->efficient_attn_summary_backward(dk.g, dk.g, dc.g, c.g, k.g, k.g, len.g, B, NH,
                                                 Tk, D, Dv);
            cpu->efficient_attn_summary_backward(dk.c, dk.c, dc.c, c.c, k.c, k.c, len.c, B, NH,
                                                 Tk, D, Dv);
            snprintf(what, sizeof what, "efficient_attn_summary_backward B=%d NH=%d Tk=%d "
                     "D=Dv=%d: dk = dv, k = v (accumulated)", B, NH, Tk, D);
            compare_tol(what, dk.g, dk.c, nk, 1e-5);
        }
        gpu->free(len.g), cpu->free(len.c);
        pair_free(q), pair_free(k), pair_free(v), pair_free(g), pair_free(c), pair_free(cf);
        pair_free(o), pair_free(dq), pair_free(dk), pair_free(dv), pair_free(dc);
        free(hq), free(hk), free(hv), free(hg), free(hc), free(hdq), free(hdk), free(hdv);
        free(ho), free(hdc);
    }
}

/* ---- recurrent cells, the CUDA backend against the CPU ---- */

/* A mask[B] of 1s with row 1 (when B > 1) a padding step (0). */
static float *cell_mask(int B) {
    float *m = malloc(sizeof(float) * (size_t)B);
    for (int b = 0; b < B; b++) m[b] = (B > 1 && b == 1) ? 0.0f : 1.0f;
    return m;
}

/* lstm_cell_*: forward (h, c, the activations written into gates) and backward (dgates
 * overwritten, dh_prev and dc_prev accumulated onto random prefills), with and without a mask.
 * Tolerance 1e-5 normwise: the CPU's formulas in its order, per element, but the CPU build
 * vectorises expf/tanhf and contracts multiply-adds (a single cell c = f c_prev + i g with
 * cancellation measured 1.05e-6), and libm on a GPU differs by a few ulps. */
static void vs_cpu_lstm(void) {
    if (!HAVE(lstm_cell_forward)) return;
    static const int shapes[][2] = {{3, 5}, {1, 1}, {4, 300}, {2, 524291}}; /* the last: B·H */
    for (size_t si = 0; si < 4; si++)                       /* past the element-wise grid */
        for (int masked = 0; masked < 2; masked++) {
            int B = shapes[si][0], H = shapes[si][1];
            size_t n = (size_t)B * H, n4 = 4 * n;
            if ((n > EW_GRID && !masked) || !size_runs(n)) continue;
            float *hg = frand(n4, -3, 3), *hhp = frand_pm1(n), *hcp = frand_pm1(n),
                  *hh = frand_pm1(n), *hc = frand_pm1(n), *hm = cell_mask(B);
            Pair gates = pair_of(hg, n4), hp = pair_of(hhp, n), cp = pair_of(hcp, n),
                 h = pair_of(hh, n), c = pair_of(hc, n), m = pair_of(hm, (size_t)B);
            char what[120];
            gpu->lstm_cell_forward(h.g, c.g, gates.g, hp.g, cp.g, masked ? m.g : NULL, B, H);
            cpu->lstm_cell_forward(h.c, c.c, gates.c, hp.c, cp.c, masked ? m.c : NULL, B, H);
            snprintf(what, sizeof what, "lstm_cell_forward B=%d H=%d masked=%d: h", B, H, masked);
            compare_tol(what, h.g, h.c, n, 1e-5);
            snprintf(what, sizeof what, "lstm_cell_forward B=%d H=%d masked=%d: c", B, H, masked);
            compare_tol(what, c.g, c.c, n, 1e-5);
            snprintf(what, sizeof what, "lstm_cell_forward B=%d H=%d masked=%d: gates", B, H, masked);
            compare_tol(what, gates.g, gates.c, n4, 1e-5);
            if (HAVE(lstm_cell_backward)) {
                float *hdh = frand_pm1(n), *hdc = frand_pm1(n), *hdhp = frand_pm1(n),
                      *hdcp = frand_pm1(n), *hdg = frand_pm1(n4);
                Pair dh = pair_of(hdh, n), dc = pair_of(hdc, n), dhp = pair_of(hdhp, n),
                     dcp = pair_of(hdcp, n), dg = pair_of(hdg, n4);
                gpu->lstm_cell_backward(dg.g, dhp.g, dcp.g, dh.g, dc.g, gates.g, c.g, cp.g,
                                        masked ? m.g : NULL, B, H);
                cpu->lstm_cell_backward(dg.c, dhp.c, dcp.c, dh.c, dc.c, gates.c, c.c, cp.c,
                                        masked ? m.c : NULL, B, H);
                snprintf(what, sizeof what, "lstm_cell_backward B=%d H=%d masked=%d: dgates", B, H, masked);
                compare_tol(what, dg.g, dg.c, n4, 1e-5);
                snprintf(what, sizeof what, "lstm_cell_backward B=%d H=%d masked=%d: dh_prev", B, H, masked);
                compare_tol(what, dhp.g, dhp.c, n, 1e-5);
                snprintf(what, sizeof what, "lstm_cell_backward B=%d H=%d masked=%d: dc_prev", B, H, masked);
                compare_tol(what, dcp.g, dcp.c, n, 1e-5);
                pair_free(dh), pair_free(dc), pair_free(dhp), pair_free(dcp), pair_free(dg);
                free(hdh), free(hdc), free(hdhp), free(hdcp), free(hdg);
            }
            pair_free(gates), pair_free(hp), pair_free(cp), pair_free(h), pair_free(c), pair_free(m);
            free(hg), free(hhp), free(hcp), free(hh), free(hc), free(hm);
        }
    g_quiet = 0;
}

/* gru_cell_*: forward (h and the activations written into gx) and backward (dgx, dgh
 * overwritten, dh_prev accumulated onto a random prefill), with and without a mask; tolerance
 * as vs_cpu_lstm. */
static void vs_cpu_gru(void) {
    if (!HAVE(gru_cell_forward)) return;
    static const int shapes[][2] = {{3, 5}, {1, 1}, {4, 300}, {2, 524291}}; /* as lstm's */
    for (size_t si = 0; si < 4; si++)
        for (int masked = 0; masked < 2; masked++) {
            int B = shapes[si][0], H = shapes[si][1];
            size_t n = (size_t)B * H, n3 = 3 * n;
            if ((n > EW_GRID && !masked) || !size_runs(n)) continue;
            float *hx = frand(n3, -2, 2), *hhg = frand(n3, -2, 2), *hhp = frand_pm1(n),
                  *hh = frand_pm1(n), *hm = cell_mask(B);
            Pair gx = pair_of(hx, n3), gh = pair_of(hhg, n3), hp = pair_of(hhp, n),
                 h = pair_of(hh, n), m = pair_of(hm, (size_t)B);
            char what[120];
            gpu->gru_cell_forward(h.g, gx.g, gh.g, hp.g, masked ? m.g : NULL, B, H);
            cpu->gru_cell_forward(h.c, gx.c, gh.c, hp.c, masked ? m.c : NULL, B, H);
            snprintf(what, sizeof what, "gru_cell_forward B=%d H=%d masked=%d: h", B, H, masked);
            compare_tol(what, h.g, h.c, n, 1e-5);
            snprintf(what, sizeof what, "gru_cell_forward B=%d H=%d masked=%d: gx", B, H, masked);
            compare_tol(what, gx.g, gx.c, n3, 1e-5);
            if (HAVE(gru_cell_backward)) {
                float *hdh = frand_pm1(n), *hdhp = frand_pm1(n), *hdx = frand_pm1(n3),
                      *hdgh = frand_pm1(n3);
                Pair dh = pair_of(hdh, n), dhp = pair_of(hdhp, n), dx = pair_of(hdx, n3),
                     dgh = pair_of(hdgh, n3);
                gpu->gru_cell_backward(dx.g, dgh.g, dhp.g, dh.g, gx.g, gh.g, hp.g,
                                       masked ? m.g : NULL, B, H);
                cpu->gru_cell_backward(dx.c, dgh.c, dhp.c, dh.c, gx.c, gh.c, hp.c,
                                       masked ? m.c : NULL, B, H);
                snprintf(what, sizeof what, "gru_cell_backward B=%d H=%d masked=%d: dgx", B, H, masked);
                compare_tol(what, dx.g, dx.c, n3, 1e-5);
                snprintf(what, sizeof what, "gru_cell_backward B=%d H=%d masked=%d: dgh", B, H, masked);
                compare_tol(what, dgh.g, dgh.c, n3, 1e-5);
                snprintf(what, sizeof what, "gru_cell_backward B=%d H=%d masked=%d: dh_prev", B, H, masked);
                compare_tol(what, dhp.g, dhp.c, n, 1e-5);
                pair_free(dh), pair_free(dhp), pair_free(dx), pair_free(dgh);
                free(hdh), free(hdhp), free(hdx), free(hdgh);
            }
            pair_free(gx), pair_free(gh), pair_free(hp), pair_free(h), pair_free(m);
            free(hx), free(hhg), free(hhp), free(hh), free(hm);
        }
    g_quiet = 0;
}

/* ---- layer norm and the output layer, the CUDA backend against the CPU ---- */

/* layernorm_*: out, mean, rstd; dinp, dweight, dbias accumulated onto random prefills (each
 * gradient also alone, the others NULL); rows include a constant row (σ² = 0) and a row with
 * |μ| ≫ σ; C wider than one block; N above the column sums' 64 row lanes, C not a multiple of
 * their 8 columns (block_reduce.cuh). Tolerance 1e-5 normwise: the same double sums in another
 * order (a tree instead of the CPU's SIMD lanes). dinp = rstd (g − mean(g) − x̂ mean(g x̂)) is
 * compared per element, with 4 ε rstd |g| (ε = FLT_EPSILON) added to that bound: g − mean(g)
 * cancels where the row is constant (C = 1, or σ² = 0), and what is left is the rounding of
 * g = dout·w (0 without FMA contraction, up to half an ulp with it) times rstd = 1/√(0 + 1e-5)
 * ≈ 316. */
static void vs_cpu_layernorm(void) {
    if (!HAVE(layernorm_forward)) return;
    static const int shapes[][2] = {{5, 7}, {1, 1}, {9, 300}, {3, 1031}, {150, 37}};
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        int N = shapes[si][0], C = shapes[si][1];
        size_t n = (size_t)N * C;
        float *hx = frand_pm1(n), *hw = frand(C, 0.5, 1.5), *hb = frand_pm1(C), *ho = frand_pm1(n);
        if (N > 2)
            for (int c = 0; c < C; c++) hx[C + c] = 0.25f, hx[2 * C + c] = 100.0f + 0.01f * hx[2 * C + c];
        float *hm = frand_pm1(N), *hr = frand_pm1(N);
        Pair x = pair_of(hx, n), w = pair_of(hw, C), b = pair_of(hb, C), o = pair_of(ho, n),
             m = pair_of(hm, N), r = pair_of(hr, N);
        char what[120];
        gpu->layernorm_forward(o.g, m.g, r.g, x.g, w.g, b.g, N, C);
        cpu->layernorm_forward(o.c, m.c, r.c, x.c, w.c, b.c, N, C);
        snprintf(what, sizeof what, "layernorm_forward N=%d C=%d: out", N, C);
        compare_tol(what, o.g, o.c, n, 1e-5);
        snprintf(what, sizeof what, "layernorm_forward N=%d C=%d: mean", N, C);
        compare_tol(what, m.g, m.c, N, 1e-5);
        snprintf(what, sizeof what, "layernorm_forward N=%d C=%d: rstd", N, C);
        compare_tol(what, r.g, r.c, N, 1e-5);
        if (HAVE(layernorm_backward))
            for (int which = 0; which < 4; which++) { /* all three, then each alone */
                float *hd = frand_pm1(n), *hdx = frand_pm1(n), *hdw = frand_pm1(C), *hdb = frand_pm1(C);
                Pair d = pair_of(hd, n), dx = pair_of(hdx, n), dw = pair_of(hdw, C), db = pair_of(hdb, C);
                int ux = which == 0 || which == 1, uw = which == 0 || which == 2, ub = which == 0 || which == 3;
                gpu->layernorm_backward(ux ? dx.g : NULL, uw ? dw.g : NULL, ub ? db.g : NULL, d.g, x.g,
                                        w.g, m.g, r.g, N, C);
                cpu->layernorm_backward(ux ? dx.c : NULL, uw ? dw.c : NULL, ub ? db.c : NULL, d.c, x.c,
                                        w.c, m.c, r.c, N, C);
                snprintf(what, sizeof what, "layernorm_backward N=%d C=%d set %d: dinp", N, C, which);
                {   /* per element: 1e-5 of the largest |dinp|, plus 4 ε rstd |g| (above) */
                    float *rc = from_backend(cpu, r.c, N), *dxc = from_backend(cpu, dx.c, n);
                    float *dxg = from_backend(gpu, dx.g, n);
                    snprintf(out_seen[n_seen - 1].what, sizeof out_seen[n_seen - 1].what, "%s",
                             what);
                    double mx = 0.0;
                    for (size_t i = 0; i < n; i++)
                        if (fabs((double)dxc[i]) > mx) mx = fabs((double)dxc[i]);
                    size_t bad = 0;
                    for (int row = 0; row < N; row++)
                        for (int c = 0; c < C; c++) {
                            size_t i = (size_t)row * C + c;
                            double g = (double)hd[i] * hw[c];
                            double tol = 1e-5 * mx + 4.0 * FLT_EPSILON * fabs((double)rc[row] * g);
                            bad += !(fabs((double)dxg[i] - (double)dxc[i]) <= tol);
                        }
                    EXPECT(bad == 0, "%s: %zu of %zu values differ by more than 1e-5 of the "
                           "largest plus 4 eps rstd |g|", what, bad, n);
                    free(rc), free(dxc), free(dxg);
                }
                snprintf(what, sizeof what, "layernorm_backward N=%d C=%d set %d: dweight", N, C, which);
                compare_tol(what, dw.g, dw.c, C, 1e-5);
                snprintf(what, sizeof what, "layernorm_backward N=%d C=%d set %d: dbias", N, C, which);
                compare_tol(what, db.g, db.c, C, 1e-5);
                pair_free(d), pair_free(dx), pair_free(dw), pair_free(db);
                free(hd), free(hdx), free(hdw), free(hdb);
            }
        pair_free(x), pair_free(w), pair_free(b), pair_free(o), pair_free(m), pair_free(r);
        free(hx), free(hw), free(hb), free(ho), free(hm), free(hr);
    }
}

/* xent_forward_backward (loss and dlogits, with and without dlogits, smoothing 0 and 0.1, an
 * ignored row, V wider than a block, N = 257 rows: one past the rows' sum's 256 threads),
 * log_softmax and argmax (ties: a row of equal values and a row with its maximum twice: the
 * first index). Adversarial rows: the first row's logit 1 (an odd lane) and the last row's last
 * logit are 100, far above the others in [−4, 4] (a maximum that misses them overflows exp);
 * then log_softmax and argmax over rows with −inf logits (a masked vocabulary: −inf stays −inf,
 * compared exactly). Tolerance 1e-5: the CPU's exp is a polynomial approximation (cpu_expf,
 * relative error ~1e-7) and its sums run in another order; argmax exactly. */
static void vs_cpu_xent(void) {
    static const int shapes[][2] = {{4, 7}, {1, 1}, {6, 1000}, {3, 8003}, {257, 5}};
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        int N = shapes[si][0], V = shapes[si][1];
        size_t n = (size_t)N * V;
        float *hx = frand(n, -4, 4);
        int *ht = malloc(sizeof(int) * (size_t)N);
        for (int i = 0; i < N; i++) ht[i] = (i * 7 + 3) % V;
        if (N > 1) ht[1] = -1; /* ignored row (ignore_id = -1) */
        if (N > 3) { /* ties for argmax */
            for (int v = 0; v < V; v++) hx[(size_t)2 * V + v] = 0.5f;
            hx[(size_t)3 * V + V / 3] = 9.0f, hx[(size_t)3 * V + V - 1] = 9.0f;
        }
        if (V > 1) hx[1] = 100.0f;                         /* row 0, odd lane 1 */
        if (N > 1 && (N <= 3 || N - 1 > 3)) hx[n - 1] = 100.0f; /* the last row's last lane */
        Pair x = pair_of(hx, n);
        IPair t = ipair_of(ht, N);
        char what[120];
        if (HAVE(xent_forward_backward) && HAVE(xent_workspace))
            for (int sm = 0; sm < 2; sm++) {
                float eps = sm ? 0.1f : 0.0f;
                float *hz = frand_pm1(n);
                Pair d = pair_of(hz, n);
                Work wg = work_new(gpu, gpu->xent_workspace(N, V)),
                     wc = work_new(cpu, cpu->xent_workspace(N, V));
                double lg = gpu->xent_forward_backward(d.g, x.g, t.g, N, V, eps, -1, 0.25f, wg.p);
                double lc = cpu->xent_forward_backward(d.c, x.c, t.c, N, V, eps, -1, 0.25f, wc.p);
                double lg2 = gpu->xent_forward_backward(NULL, x.g, t.g, N, V, eps, -1, 0.25f, wg.p);
                work_done(wg, "xent_forward_backward"), work_done(wc, "xent_forward_backward");
                double e = fabs(lg - lc) / (fabs(lc) > 0 ? fabs(lc) : 1.0);
                EXPECT(e < 1e-5 && lg2 == lg, "xent N=%d V=%d eps=%g: loss %.9g on cuda (%.9g "
                       "without dlogits), %.9g on cpu", N, V, (double)eps, lg, lg2, lc);
                record_output("xent loss", (const float *)&lg, 2); /* the double's bits */
                snprintf(what, sizeof what, "xent_forward_backward N=%d V=%d eps=%g: dlogits", N, V, (double)eps);
                compare_tol(what, d.g, d.c, n, 1e-5);
                pair_free(d);
                free(hz);
            }
        if (HAVE(log_softmax)) {
            float *hz = frand_pm1(n);
            Pair o = pair_of(hz, n);
            gpu->log_softmax(o.g, x.g, N, V);
            cpu->log_softmax(o.c, x.c, N, V);
            snprintf(what, sizeof what, "log_softmax N=%d V=%d", N, V);
            compare_tol(what, o.g, o.c, n, 1e-5);
            pair_free(o);
            free(hz);
        }
        if (HAVE(argmax)) {
            IPair ids = ipair_of(ht, N);
            gpu->argmax(ids.g, x.g, N, V);
            cpu->argmax(ids.c, x.c, N, V);
            int *a = malloc(sizeof(int) * (size_t)N), *b = malloc(sizeof(int) * (size_t)N);
            gpu->download(a, ids.g, sizeof(int) * (size_t)N);
            cpu->download(b, ids.c, sizeof(int) * (size_t)N);
            record_output("argmax", (const float *)a, (size_t)N);
            for (int i = 0; i < N; i++)
                EXPECT(a[i] == b[i], "argmax N=%d V=%d row %d: %d on cuda, %d on cpu", N, V, i, a[i], b[i]);
            free(a), free(b);
            gpu->free(ids.g), cpu->free(ids.c);
        }
        pair_free(x);
        gpu->free(t.g), cpu->free(t.c);
        free(hx), free(ht);
    }
    if (HAVE(log_softmax) && HAVE(argmax)) { /* −inf logits: every even column but row 2's 151 */
        const int N = 3, V = 300;
        size_t n = (size_t)N * V;
        float *hx = frand(n, -4, 4), *hz = frand_pm1(n);
        for (int r = 0; r < N; r++)
            for (int v = 0; v < V; v += 2) hx[(size_t)r * V + v] = -INFINITY;
        for (int v = 0; v < V; v++) hx[(size_t)2 * V + v] = v == 151 ? 1.0f : -INFINITY;
        hx[V - 1] = 50.0f; /* row 0's maximum in its last lane */
        Pair x = pair_of(hx, n), o = pair_of(hz, n);
        gpu->log_softmax(o.g, x.g, N, V);
        cpu->log_softmax(o.c, x.c, N, V);
        float *og = from_backend(gpu, o.g, n), *oc = from_backend(cpu, o.c, n);
        size_t bad = 0;
        for (size_t i = 0; i < n; i++)
            bad += isinf(oc[i]) ? og[i] != oc[i]
                                : !(fabs((double)og[i] - oc[i]) <= 1e-5 * (1.0 + fabs((double)oc[i])));
        EXPECT(bad == 0, "log_softmax N=%d V=%d with -inf logits: %zu of %zu values differ", N, V,
               bad, n);
        IPair ids = ipair_of((int[3]){-1, -1, -1}, N);
        gpu->argmax(ids.g, x.g, N, V);
        cpu->argmax(ids.c, x.c, N, V);
        int a[3], b[3];
        gpu->download(a, ids.g, sizeof a);
        cpu->download(b, ids.c, sizeof b);
        record_output("argmax -inf", (const float *)a, (size_t)N);
        EXPECT(a[0] == b[0] && a[1] == b[1] && a[2] == b[2] && b[0] == V - 1 && b[2] == 151,
               "argmax with -inf logits: %d %d %d on cuda, %d %d %d on cpu (want %d, ., 151)",
               a[0], a[1], a[2], b[0], b[1], b[2], V - 1);
        free(og), free(oc);
        gpu->free(ids.g), cpu->free(ids.c);
        pair_free(x), pair_free(o);
        free(hx), free(hz);
    }
}

/* ---- softmax attention kinds, the CUDA backend against the CPU ---- */

/* Shapes of the softmax kinds: Tq != Tk, D != Dv, a batch row with key_len 0 and others padded,
 * Tq > Tk with causal (rows that see no key), Tk wider than one block; D and Dv above a warp's
 * 32 lanes and not multiples of it, with one query (Luong attention's decoder step), and Tk·D
 * large enough that attn_backward's inputs kernel splits a row over 2 and 4 blocks; the last one
 * past each block and tile: Tq 70 and Tk 150 over flash's 64-row tiles, Tk over the 128-thread
 * blocks of the softmax kinds, D (A = D + 3) over the 128- and 64-thread blocks of local,
 * additive and flash (and local's window, Tk > 128 with a half-width of 70, over 128 keys). */
static const int SDP_SHAPES[][6] = {/* B, NH, Tq, Tk, D, Dv */
                                    {2, 2, 5, 7, 4, 3},
                                    {3, 1, 6, 4, 8, 8},
                                    {1, 3, 1, 9, 5, 6},
                                    {2, 1, 3, 140, 16, 24},
                                    {3, 1, 1, 13, 100, 70},
                                    {2, 2, 2, 40, 96, 33},
                                    {2, 4, 14, 12, 64, 64}, /* transformer.ini's heads */
                                    {1, 1, 70, 150, 130, 5}};

/* The keys of every (b, h) row at s = 1 (an odd lane) and s = Tk − 1 (the last) times 30, so
 * that their scores lie far from the others' (a maximum taken over the even lanes only, or
 * without the last key, then overflows exp). k [B, NH, Tk, D], or [B, Tk, NH, D] when merged. */
static void spike_keys(float *k, int B, int NH, int Tk, int D, int merged) {
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++)
            for (int s = 1; s < Tk; s += Tk - 2 > 0 ? Tk - 2 : Tk) /* s = 1, then Tk − 1 */
                for (int d = 0; d < D; d++)
                    k[(merged ? ((size_t)b * Tk + s) * NH + h : ((size_t)b * NH + h) * Tk + s) * D +
                      d] *= 30.0f;
}

/* x rounded to multiples of 1/16, in place: with |x| <= 2 (and keys spiked x30), every product
 * q_d k_d and every partial sum of a score over D <= 130 terms is exact in float, so both
 * backends compute the same scores whatever their order of summation. */
static void round_to_sixteenths(float *x, size_t n) {
    for (size_t i = 0; i < n; i++) x[i] = roundf(x[i] * 16.0f) / 16.0f;
}

/* The size of the terms attn_backward adds, the floor of its tolerance. With P the weights
 * [B,NH,Tq,Tk], dP = dout vᵀ and δ_t = Σ_s P_ts dP_ts, dS = P ∘ (dP − δ) is a difference of
 * terms of size a = P (|dP| + |δ|), which a saturated row (one weight near 1, as the spiked keys
 * make) cancels down to far below a: its rounding is then of the size of a, not of dS. Writes
 * *mq = max over (b, h, t, d) of scale Σ_s a_ts |k_sd| and *mk = max over (b, h, s, d) of
 * scale Σ_t a_ts |q_td|. q, k, v, dout: host arrays [B,NH,T,·], or [B,T,NH,·] when merged. */
static void sdp_backward_terms(double *mq, double *mk, const float *q, const float *k,
                               const float *v, const float *dout, const float *w, float scale,
                               int merged, int B, int NH, int Tq, int Tk, int D, int Dv) {
#define SDP_AT(b, h, t, T, d, W) \
    (merged ? (((size_t)(b) * (T) + (t)) * NH + (h)) * (W) + (d) \
            : (((size_t)(b) * NH + (h)) * (T) + (t)) * (W) + (d))
    double *a = malloc(sizeof(double) * (size_t)Tq * Tk + 1);
    if (!a) exit(2);
    *mq = *mk = 0.0;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) {
            const float *P = w + ((size_t)b * NH + h) * Tq * Tk;
            for (int t = 0; t < Tq; t++) {
                double delta = 0.0;
                for (int s = 0; s < Tk; s++) {
                    double dp = 0.0;
                    for (int e = 0; e < Dv; e++)
                        dp += (double)dout[SDP_AT(b, h, t, Tq, e, Dv)] * v[SDP_AT(b, h, s, Tk, e, Dv)];
                    a[(size_t)t * Tk + s] = fabs(dp);
                    delta += P[(size_t)t * Tk + s] * dp;
                }
                for (int s = 0; s < Tk; s++)
                    a[(size_t)t * Tk + s] = P[(size_t)t * Tk + s] * (a[(size_t)t * Tk + s] + fabs(delta));
            }
            for (int d = 0; d < D; d++) {
                for (int t = 0; t < Tq; t++) {
                    double m = 0.0;
                    for (int s = 0; s < Tk; s++)
                        m += a[(size_t)t * Tk + s] * fabs((double)k[SDP_AT(b, h, s, Tk, d, D)]);
                    *mq = fmax(*mq, scale * m);
                }
                for (int s = 0; s < Tk; s++) {
                    double m = 0.0;
                    for (int t = 0; t < Tq; t++)
                        m += a[(size_t)t * Tk + s] * fabs((double)q[SDP_AT(b, h, t, Tq, d, D)]);
                    *mk = fmax(*mk, scale * m);
                }
            }
        }
    free(a);
#undef SDP_AT
}

/* sdp_backward_terms with the weights of the CPU's attn_forward on q, k, v, key_len (backend
 * memory of the CPU; hq, hk, hv, hdout their host copies [B,NH,T,·]), for the kinds that keep
 * no weights (flash). */
static void sdp_backward_terms_cpu(double *mq, double *mk, const float *hq, const float *hk,
                                   const float *hv, const float *hdout, const float *q,
                                   const float *k, const float *v, const int *key_len,
                                   float scale, int causal, int B, int NH, int Tq, int Tk, int D,
                                   int Dv) {
    size_t nw = (size_t)B * NH * Tq * Tk, no = (size_t)B * NH * Tq * Dv;
    float *w = cpu->alloc(sizeof(float) * (nw + 1)), *o = cpu->alloc(sizeof(float) * (no + 1));
    float *hw = malloc(sizeof(float) * nw + 1);
    if (!hw) exit(2);
    cpu->attn_forward(o, w, q, k, v, key_len, scale, causal, B, NH, Tq, Tk, D, Dv);
    cpu->download(hw, w, sizeof(float) * nw);
    sdp_backward_terms(mq, mk, hq, hk, hv, hdout, hw, scale, 0, B, NH, Tq, Tk, D, Dv);
    free(hw);
    cpu->free(w), cpu->free(o);
}

/* attn_* (weights materialised): out and weights, causal and not, with key_len; backward onto
 * random prefills (and dv alone). q and k on a grid of 1/16 and a power-of-two scale (near
 * 1/√D), so that the scores are exact on both sides and the spiked keys' steep softmax does not
 * turn their rounding into the weights'. Tolerance 1e-5 normwise: the same sums in another order
 * (OpenBLAS sgemm against per-thread loops); for dq and dk relative to the larger of the result
 * and the terms it adds (sdp_backward_terms), since a saturated row cancels them. merged:
 * attn_*_merged, the same shapes read in the heads' merged layout; their backward overwrites the
 * prefills on both sides. */
static void attn_sdp_vs_cpu(int merged) {
    const char *op = merged ? "attn_*_merged" : "attn";
    void (*fwd_g)(float *, float *, const float *, const float *, const float *, const int *,
                  float, int, int, int, int, int, int, int) =
        merged ? gpu->attn_forward_merged : gpu->attn_forward;
    void (*fwd_c)(float *, float *, const float *, const float *, const float *, const int *,
                  float, int, int, int, int, int, int, int) =
        merged ? cpu->attn_forward_merged : cpu->attn_forward;
    void (*bwd_g)(float *, float *, float *, const float *, const float *, const float *,
                  const float *, const float *, float, int, int, int, int, int, int, float *) =
        merged ? gpu->attn_backward_merged : gpu->attn_backward;
    void (*bwd_c)(float *, float *, float *, const float *, const float *, const float *,
                  const float *, const float *, float, int, int, int, int, int, int, float *) =
        merged ? cpu->attn_backward_merged : cpu->attn_backward;
    for (size_t si = 0; si < sizeof SDP_SHAPES / sizeof SDP_SHAPES[0]; si++)
        for (int causal = 0; causal < 2; causal++) {
            int B = SDP_SHAPES[si][0], NH = SDP_SHAPES[si][1], Tq = SDP_SHAPES[si][2],
                Tk = SDP_SHAPES[si][3], D = SDP_SHAPES[si][4], Dv = SDP_SHAPES[si][5];
            size_t nq = (size_t)B * NH * Tq * D, nk = (size_t)B * NH * Tk * D,
                   nv = (size_t)B * NH * Tk * Dv, no = (size_t)B * NH * Tq * Dv,
                   nw = (size_t)B * NH * Tq * Tk;
            int hl[4];
            for (int b = 0; b < B; b++) hl[b] = b == 1 ? 0 : Tk - (b % 3);
            float *hq = frand(nq, -2, 2), *hk = frand(nk, -2, 2), *hv = frand_pm1(nv),
                  *hg = frand_pm1(no), *ho = frand_pm1(no), *hw = frand_pm1(nw),
                  *hdq = frand_pm1(nq), *hdk = frand_pm1(nk), *hdv = frand_pm1(nv);
            round_to_sixteenths(hq, nq), round_to_sixteenths(hk, nk);
            spike_keys(hk, B, NH, Tk, D, merged);
            Pair q = pair_of(hq, nq), k = pair_of(hk, nk), v = pair_of(hv, nv), g = pair_of(hg, no),
                 o = pair_of(ho, no), w = pair_of(hw, nw), dq = pair_of(hdq, nq),
                 dk = pair_of(hdk, nk), dv = pair_of(hdv, nv);
            IPair len = ipair_of(hl, B);
            float scale = ldexpf(1.0f, -(int)lrint(0.5 * log2((double)D)));
            char what[160];
            fwd_g(o.g, w.g, q.g, k.g, v.g, len.g, scale, causal, B, NH, Tq, Tk, D, Dv);
            fwd_c(o.c, w.c, q.c, k.c, v.c, len.c, scale, causal, B, NH, Tq, Tk, D, Dv);
            snprintf(what, sizeof what, "%s_forward shape %zu causal=%d: out", op, si, causal);
            compare_tol(what, o.g, o.c, no, 1e-5);
            snprintf(what, sizeof what, "%s_forward shape %zu causal=%d: weights", op, si,
                     causal);
            compare_tol(what, w.g, w.c, nw, 1e-5);
            if (HAVE(attn_backward)) {
                size_t wg = gpu->attn_workspace(B, NH, Tq, Tk, D, Dv),
                       wc = cpu->attn_workspace(B, NH, Tq, Tk, D, Dv);
                float *workg = gpu->alloc(sizeof(float) * (wg + 1)),
                      *workc = cpu->alloc(sizeof(float) * (wc + 1));
                bwd_g(dq.g, dk.g, dv.g, g.g, q.g, k.g, v.g, w.g, scale, B, NH, Tq, Tk, D, Dv, workg);
                bwd_c(dq.c, dk.c, dv.c, g.c, q.c, k.c, v.c, w.c, scale, B, NH, Tq, Tk, D, Dv, workc);
                bwd_g(NULL, NULL, dv.g, g.g, q.g, k.g, v.g, w.g, scale, B, NH, Tq, Tk, D, Dv, workg);
                bwd_c(NULL, NULL, dv.c, g.c, q.c, k.c, v.c, w.c, scale, B, NH, Tq, Tk, D, Dv, workc);
                float *hwc = malloc(sizeof(float) * nw + 1);
                if (!hwc) exit(2);
                cpu->download(hwc, w.c, sizeof(float) * nw);
                double mq, mk;
                sdp_backward_terms(&mq, &mk, hq, hk, hv, hg, hwc, scale, merged, B, NH, Tq, Tk,
                                   D, Dv);
                free(hwc);
                snprintf(what, sizeof what, "%s_backward shape %zu causal=%d: dq", op, si, causal);
                compare_tol_floor(what, dq.g, dq.c, nq, 1e-5, mq);
                snprintf(what, sizeof what, "%s_backward shape %zu causal=%d: dk", op, si, causal);
                compare_tol_floor(what, dk.g, dk.c, nk, 1e-5, mk);
                snprintf(what, sizeof what, "%s_backward shape %zu causal=%d: dv (twice)", op, si,
                         causal);
                compare_tol(what, dv.g, dv.c, nv, 1e-5);
                gpu->free(workg), cpu->free(workc);
            }
            gpu->free(len.g), cpu->free(len.c);
            pair_free(q), pair_free(k), pair_free(v), pair_free(g), pair_free(o), pair_free(w);
            pair_free(dq), pair_free(dk), pair_free(dv);
            free(hq), free(hk), free(hv), free(hg), free(ho), free(hw), free(hdq), free(hdk), free(hdv);
        }
}

static void vs_cpu_attn_sdp(void) {
    if (HAVE(attn_forward)) attn_sdp_vs_cpu(0);
}

static void vs_cpu_attn_sdp_merged(void) {
    if (HAVE(attn_forward_merged) && HAVE(attn_backward_merged)) attn_sdp_vs_cpu(1);
}

/* additive_attn_*: out and weights (causal and not, padding, empty rows), backward of qp, kp,
 * v and values onto random prefills, then values alone. Tolerance 1e-5 normwise: per-element
 * sums in another order (the CPU accumulates dqp/dkp term by term into the destination). */
static void vs_cpu_additive_attn(void) {
    if (!HAVE(additive_attn_forward)) return;
    for (size_t si = 0; si < sizeof SDP_SHAPES / sizeof SDP_SHAPES[0]; si++)
        for (int causal = 0; causal < 2; causal++) {
            int B = SDP_SHAPES[si][0], NH = SDP_SHAPES[si][1], Tq = SDP_SHAPES[si][2],
                Tk = SDP_SHAPES[si][3], A = SDP_SHAPES[si][4] + 3, Dv = SDP_SHAPES[si][5];
            size_t nq = (size_t)B * NH * Tq * A, nk = (size_t)B * NH * Tk * A, na = (size_t)NH * A,
                   nv = (size_t)B * NH * Tk * Dv, no = (size_t)B * NH * Tq * Dv,
                   nw = (size_t)B * NH * Tq * Tk;
            int hl[4];
            for (int b = 0; b < B; b++) hl[b] = b == 1 ? 0 : Tk - (b % 3);
            float *hq = frand_pm1(nq), *hk = frand_pm1(nk), *hva = frand_pm1(na),
                  *hv = frand_pm1(nv), *hg = frand_pm1(no), *ho = frand_pm1(no), *hw = frand_pm1(nw),
                  *hdq = frand_pm1(nq), *hdk = frand_pm1(nk), *hdva = frand_pm1(na),
                  *hdv = frand_pm1(nv);
            Pair q = pair_of(hq, nq), k = pair_of(hk, nk), va = pair_of(hva, na), v = pair_of(hv, nv),
                 g = pair_of(hg, no), o = pair_of(ho, no), w = pair_of(hw, nw), dq = pair_of(hdq, nq),
                 dk = pair_of(hdk, nk), dva = pair_of(hdva, na), dv = pair_of(hdv, nv);
            IPair len = ipair_of(hl, B);
            char what[160];
            gpu->additive_attn_forward(o.g, w.g, q.g, k.g, va.g, v.g, len.g, causal, B, NH, Tq, Tk, A, Dv);
            cpu->additive_attn_forward(o.c, w.c, q.c, k.c, va.c, v.c, len.c, causal, B, NH, Tq, Tk, A, Dv);
            snprintf(what, sizeof what, "additive_attn_forward shape %zu causal=%d: out", si, causal);
            compare_tol(what, o.g, o.c, no, 1e-5);
            snprintf(what, sizeof what, "additive_attn_forward shape %zu causal=%d: weights", si, causal);
            compare_tol(what, w.g, w.c, nw, 1e-5);
            if (HAVE(additive_attn_backward) && HAVE(additive_attn_workspace)) {
                Work wg = work_new(gpu, gpu->additive_attn_workspace(B, NH, Tq, Tk, A, Dv)),
                     wc = work_new(cpu, cpu->additive_attn_workspace(B, NH, Tq, Tk, A, Dv));
                gpu->additive_attn_backward(dq.g, dk.g, dva.g, dv.g, g.g, q.g, k.g, va.g, v.g, w.g, B, NH, Tq, Tk, A, Dv, wg.p);
                cpu->additive_attn_backward(dq.c, dk.c, dva.c, dv.c, g.c, q.c, k.c, va.c, v.c, w.c, B, NH, Tq, Tk, A, Dv, wc.p);
                gpu->additive_attn_backward(NULL, NULL, NULL, dv.g, g.g, q.g, k.g, va.g, v.g, w.g, B, NH, Tq, Tk, A, Dv, wg.p);
                cpu->additive_attn_backward(NULL, NULL, NULL, dv.c, g.c, q.c, k.c, va.c, v.c, w.c, B, NH, Tq, Tk, A, Dv, wc.p);
                work_done(wg, "additive_attn_backward"), work_done(wc, "additive_attn_backward");
                snprintf(what, sizeof what, "additive_attn_backward shape %zu causal=%d: dqp", si, causal);
                compare_tol(what, dq.g, dq.c, nq, 1e-5);
                snprintf(what, sizeof what, "additive_attn_backward shape %zu causal=%d: dkp", si, causal);
                compare_tol(what, dk.g, dk.c, nk, 1e-5);
                snprintf(what, sizeof what, "additive_attn_backward shape %zu causal=%d: dv", si, causal);
                compare_tol(what, dva.g, dva.c, na, 1e-5);
                snprintf(what, sizeof what, "additive_attn_backward shape %zu causal=%d: dvalues (twice)", si, causal);
                compare_tol(what, dv.g, dv.c, nv, 1e-5);
            }
            gpu->free(len.g), cpu->free(len.c);
            pair_free(q), pair_free(k), pair_free(va), pair_free(v), pair_free(g), pair_free(o);
            pair_free(w), pair_free(dq), pair_free(dk), pair_free(dva), pair_free(dv);
            free(hq), free(hk), free(hva), free(hv), free(hg), free(ho), free(hw), free(hdq);
            free(hdk), free(hdva), free(hdv);
        }
}

/* local_attn_* (Luong et al. 2015 §3.2): out and weights for local-m and local-p, the dot
 * (scale 1/√D) and the additive score, windows clipped by padding and by the ends, a row of
 * length 0; backward of q, k, va, v, z onto random prefills, then v alone. z puts p_t at a
 * fractional part in [0.25, 0.75] so both backends find the same windows. Tolerance 1e-5
 * normwise: the same sums in another order. */
static void vs_cpu_local_attn(void) {
    if (!HAVE(local_attn_forward)) return;
    for (size_t si = 0; si < sizeof SDP_SHAPES / sizeof SDP_SHAPES[0]; si++)
        for (int mode = 0; mode < 4; mode++) {
            int pred = mode & 1, add = mode >> 1;
            int B = SDP_SHAPES[si][0], NH = SDP_SHAPES[si][1], Tq = SDP_SHAPES[si][2],
                Tk = SDP_SHAPES[si][3], D = SDP_SHAPES[si][4], Dv = SDP_SHAPES[si][5];
            int W = Tk > 128 ? 70 : 2 + (int)si, pos0 = si == 2 ? 4 : 0;
            size_t nq = (size_t)B * NH * Tq * D, nk = (size_t)B * NH * Tk * D, na = (size_t)NH * D,
                   nv = (size_t)B * NH * Tk * Dv, no = (size_t)B * NH * Tq * Dv,
                   nw = (size_t)B * NH * Tq * Tk, nz = (size_t)B * Tq;
            int hl[4];
            for (int b = 0; b < B; b++) hl[b] = b == 1 ? 0 : Tk - (b % 3);
            float *hq = frand_pm1(nq), *hk = frand_pm1(nk), *hva = frand_pm1(na),
                  *hv = frand_pm1(nv), *hg = frand_pm1(no), *ho = frand_pm1(no), *hw = frand_pm1(nw),
                  *hdq = frand_pm1(nq), *hdk = frand_pm1(nk), *hdva = frand_pm1(na),
                  *hdv = frand_pm1(nv), *hz = frand_pm1(nz), *hdz = frand_pm1(nz);
            spike_keys(hk, B, NH, Tk, D, 0);
            for (int b = 0; b < B; b++) /* p_t = len σ(z) = an integer + [0.25, 0.75] */
                for (int t = 0; t < Tq; t++) {
                    float *z = &hz[(size_t)b * Tq + t];
                    int len = hl[b];
                    double pt = (int)((*z + 1) * 0.5f * (len > 1 ? len - 1 : 0)) + 0.5 + 0.25 * *z;
                    double f = len > 0 ? pt / len : 0.5;
                    f = f > 0.99 ? 0.99 : f;
                    *z = (float)log(f / (1 - f));
                }
            Pair q = pair_of(hq, nq), k = pair_of(hk, nk), va = pair_of(hva, na), v = pair_of(hv, nv),
                 g = pair_of(hg, no), o = pair_of(ho, no), w = pair_of(hw, nw), dq = pair_of(hdq, nq),
                 dk = pair_of(hdk, nk), dva = pair_of(hdva, na), dv = pair_of(hdv, nv),
                 z = pair_of(hz, nz), dz = pair_of(hdz, nz);
            IPair len = ipair_of(hl, B);
            float scale = 1.0f / sqrtf((float)D);
            const float *vag = add ? va.g : NULL, *vac = add ? va.c : NULL;
            const float *zg = pred ? z.g : NULL, *zc = pred ? z.c : NULL;
            char what[160], tag[64];
            snprintf(tag, sizeof tag, "shape %zu %s %s", si, pred ? "predictive" : "monotonic",
                     add ? "additive" : "dot");
            gpu->local_attn_forward(o.g, w.g, q.g, k.g, vag, v.g, zg, len.g, scale, W, pos0, B, NH, Tq, Tk, D, Dv);
            cpu->local_attn_forward(o.c, w.c, q.c, k.c, vac, v.c, zc, len.c, scale, W, pos0, B, NH, Tq, Tk, D, Dv);
            snprintf(what, sizeof what, "local_attn_forward %s: out", tag);
            compare_tol(what, o.g, o.c, no, 1e-5);
            snprintf(what, sizeof what, "local_attn_forward %s: weights", tag);
            compare_tol(what, w.g, w.c, nw, 1e-5);
            if (HAVE(local_attn_backward) && HAVE(local_attn_workspace)) {
                Work wg = work_new(gpu, gpu->local_attn_workspace(B, NH, Tq, Tk, D, Dv)),
                     wc = work_new(cpu, cpu->local_attn_workspace(B, NH, Tq, Tk, D, Dv));
                gpu->local_attn_backward(dq.g, dk.g, add ? dva.g : NULL, dv.g, pred ? dz.g : NULL, g.g, q.g, k.g, vag, v.g, zg, w.g, len.g, scale, W, pos0, B, NH, Tq, Tk, D, Dv, wg.p);
                cpu->local_attn_backward(dq.c, dk.c, add ? dva.c : NULL, dv.c, pred ? dz.c : NULL, g.c, q.c, k.c, vac, v.c, zc, w.c, len.c, scale, W, pos0, B, NH, Tq, Tk, D, Dv, wc.p);
                gpu->local_attn_backward(NULL, NULL, NULL, dv.g, NULL, g.g, q.g, k.g, vag, v.g, zg, w.g, len.g, scale, W, pos0, B, NH, Tq, Tk, D, Dv, wg.p);
                cpu->local_attn_backward(NULL, NULL, NULL, dv.c, NULL, g.c, q.c, k.c, vac, v.c, zc, w.c, len.c, scale, W, pos0, B, NH, Tq, Tk, D, Dv, wc.p);
                work_done(wg, "local_attn_backward"), work_done(wc, "local_attn_backward");
                snprintf(what, sizeof what, "local_attn_backward %s: dq", tag);
                compare_tol(what, dq.g, dq.c, nq, 1e-5);
                snprintf(what, sizeof what, "local_attn_backward %s: dk", tag);
                compare_tol(what, dk.g, dk.c, nk, 1e-5);
                snprintf(what, sizeof what, "local_attn_backward %s: dva", tag);
                compare_tol(what, dva.g, dva.c, na, 1e-5);
                snprintf(what, sizeof what, "local_attn_backward %s: dv (twice)", tag);
                compare_tol(what, dv.g, dv.c, nv, 1e-5);
                snprintf(what, sizeof what, "local_attn_backward %s: dz", tag);
                compare_tol(what, dz.g, dz.c, nz, 1e-5);
            }
            gpu->free(len.g), cpu->free(len.c);
            pair_free(q), pair_free(k), pair_free(va), pair_free(v), pair_free(g), pair_free(o);
            pair_free(w), pair_free(dq), pair_free(dk), pair_free(dva), pair_free(dv);
            pair_free(z), pair_free(dz);
            free(hq), free(hk), free(hva), free(hv), free(hg), free(ho), free(hw), free(hdq);
            free(hdk), free(hdva), free(hdv), free(hz), free(hdz);
        }
}

/* flash_attn_*: out and lse (−∞ exactly where the CPU has it: rows with no visible key), causal
 * and not, with padding; backward onto random prefills, then dk, dv alone. q and k on the grid of
 * round_to_sixteenths with a power-of-two scale (exact scores, as attn_sdp_vs_cpu). Tolerance
 * 1e-5 normwise: the same exact softmax in other tile orders; dq and dk relative to the larger
 * of the result and the terms they add (sdp_backward_terms; dk's twice). */
static void vs_cpu_flash_attn(void) {
    if (!HAVE(flash_attn_forward)) return;
    for (size_t si = 0; si < sizeof SDP_SHAPES / sizeof SDP_SHAPES[0]; si++)
        for (int causal = 0; causal < 2; causal++) {
            int B = SDP_SHAPES[si][0], NH = SDP_SHAPES[si][1], Tq = SDP_SHAPES[si][2],
                Tk = SDP_SHAPES[si][3], D = SDP_SHAPES[si][4], Dv = SDP_SHAPES[si][5];
            size_t nq = (size_t)B * NH * Tq * D, nk = (size_t)B * NH * Tk * D,
                   nv = (size_t)B * NH * Tk * Dv, no = (size_t)B * NH * Tq * Dv,
                   nl = (size_t)B * NH * Tq;
            int hl[4];
            for (int b = 0; b < B; b++) hl[b] = b == 1 ? 0 : Tk - (b % 3);
            float *hq = frand(nq, -2, 2), *hk = frand(nk, -2, 2), *hv = frand_pm1(nv),
                  *hg = frand_pm1(no), *ho = frand_pm1(no), *hlse = frand_pm1(nl),
                  *hdq = frand_pm1(nq), *hdk = frand_pm1(nk), *hdv = frand_pm1(nv);
            round_to_sixteenths(hq, nq), round_to_sixteenths(hk, nk);
            spike_keys(hk, B, NH, Tk, D, 0);
            Pair q = pair_of(hq, nq), k = pair_of(hk, nk), v = pair_of(hv, nv), g = pair_of(hg, no),
                 o = pair_of(ho, no), lse = pair_of(hlse, nl), dq = pair_of(hdq, nq),
                 dk = pair_of(hdk, nk), dv = pair_of(hdv, nv);
            IPair len = ipair_of(hl, B);
            size_t wg = gpu->flash_attn_workspace(B, NH, Tq, Tk, D, Dv),
                   wc = cpu->flash_attn_workspace(B, NH, Tq, Tk, D, Dv);
            float *workg = gpu->alloc(sizeof(float) * (wg + 1)), *workc = cpu->alloc(sizeof(float) * (wc + 1));
            float scale = ldexpf(1.0f, -(int)lrint(0.5 * log2((double)D)));
            char what[160];
            gpu->flash_attn_forward(o.g, lse.g, q.g, k.g, v.g, len.g, scale, causal, B, NH, Tq, Tk, D, Dv, workg);
            cpu->flash_attn_forward(o.c, lse.c, q.c, k.c, v.c, len.c, scale, causal, B, NH, Tq, Tk, D, Dv, workc);
            snprintf(what, sizeof what, "flash_attn_forward shape %zu causal=%d: out", si, causal);
            compare_tol(what, o.g, o.c, no, 1e-5);
            float *lg = from_backend(gpu, lse.g, nl), *lc = from_backend(cpu, lse.c, nl);
            size_t bad = 0, ninf = 0;
            for (size_t i = 0; i < nl; i++) {
                if (isinf(lc[i]) || isinf(lg[i])) {
                    bad += !(lg[i] == lc[i]), ninf++;
                    continue;
                }
                bad += !(fabs((double)lg[i] - (double)lc[i]) <= 1e-5 * (1.0 + fabs((double)lc[i])));
            }
            EXPECT(bad == 0, "flash_attn_forward shape %zu causal=%d: %zu of %zu lse values differ "
                   "(%zu rows with no key)", si, causal, bad, nl, ninf);
            free(lg), free(lc);
            if (HAVE(flash_attn_backward)) {
                gpu->flash_attn_backward(dq.g, dk.g, dv.g, g.g, q.g, k.g, v.g, o.g, lse.g, len.g, scale, causal, B, NH, Tq, Tk, D, Dv, workg);
                cpu->flash_attn_backward(dq.c, dk.c, dv.c, g.c, q.c, k.c, v.c, o.c, lse.c, len.c, scale, causal, B, NH, Tq, Tk, D, Dv, workc);
                gpu->flash_attn_backward(NULL, dk.g, dv.g, g.g, q.g, k.g, v.g, o.g, lse.g, len.g, scale, causal, B, NH, Tq, Tk, D, Dv, workg);
                cpu->flash_attn_backward(NULL, dk.c, dv.c, g.c, q.c, k.c, v.c, o.c, lse.c, len.c, scale, causal, B, NH, Tq, Tk, D, Dv, workc);
                double mq, mk;
                sdp_backward_terms_cpu(&mq, &mk, hq, hk, hv, hg, q.c, k.c, v.c, len.c, scale,
                                       causal, B, NH, Tq, Tk, D, Dv);
                snprintf(what, sizeof what, "flash_attn_backward shape %zu causal=%d: dq", si, causal);
                compare_tol_floor(what, dq.g, dq.c, nq, 1e-5, mq);
                snprintf(what, sizeof what, "flash_attn_backward shape %zu causal=%d: dk (twice)", si, causal);
                compare_tol_floor(what, dk.g, dk.c, nk, 1e-5, 2 * mk);
                snprintf(what, sizeof what, "flash_attn_backward shape %zu causal=%d: dv (twice)", si, causal);
                compare_tol(what, dv.g, dv.c, nv, 1e-5);
            }
            gpu->free(workg), cpu->free(workc);
            gpu->free(len.g), cpu->free(len.c);
            pair_free(q), pair_free(k), pair_free(v), pair_free(g), pair_free(o), pair_free(lse);
            pair_free(dq), pair_free(dk), pair_free(dv);
            free(hq), free(hk), free(hv), free(hg), free(ho), free(hlse), free(hdq), free(hdk), free(hdv);
        }
}

/* One row per OpKind: the CPU check and the check of another backend against the CPU (NULL: not
 * written yet). A function that covers a forward/backward pair serves both rows and runs once. */
typedef struct {
    const char *name;
    void (*cpu)(void);
    void (*vs_cpu)(void);
} OpCase;

static const OpCase CASES[OP_COUNT] = {
    [OP_MATMUL] = {"matmul", test_matmul, vs_cpu_matmul},
    [OP_MATMUL_BIAS_FORWARD] = {"matmul_bias_forward", test_matmul_bias_forward,
                                vs_cpu_matmul_bias_forward},
    [OP_BIAS_FORWARD] = {"bias_forward", test_bias, vs_cpu_bias},
    [OP_BIAS_BACKWARD] = {"bias_backward", test_bias, vs_cpu_bias},
    [OP_AXPY] = {"axpy", test_axpy_scale, vs_cpu_axpy_scale},
    [OP_SCALE] = {"scale", test_axpy_scale, vs_cpu_axpy_scale},
    [OP_SUMSQ] = {"sumsq", test_sumsq_all_finite, vs_cpu_reductions},
    [OP_ALL_FINITE] = {"all_finite", test_sumsq_all_finite, vs_cpu_reductions},
    [OP_CONCAT2_FORWARD] = {"concat2_forward", test_concat2, vs_cpu_shape},
    [OP_CONCAT2_BACKWARD] = {"concat2_backward", test_concat2, vs_cpu_shape},
    [OP_TRANSPOSE01_FORWARD] = {"transpose01_forward", test_transpose01, vs_cpu_shape},
    [OP_TRANSPOSE01_BACKWARD] = {"transpose01_backward", test_transpose01, vs_cpu_shape},
    [OP_TANH_FORWARD] = {"tanh_forward", test_tanh, vs_cpu_tanh},
    [OP_TANH_BACKWARD] = {"tanh_backward", test_tanh, vs_cpu_tanh},
    [OP_DROPOUT_FORWARD] = {"dropout_forward", test_dropout, vs_cpu_dropout},
    [OP_DROPOUT_BACKWARD] = {"dropout_backward", test_dropout, vs_cpu_dropout},
    [OP_LAYERNORM_FORWARD] = {"layernorm_forward", case_layernorm, vs_cpu_layernorm},
    [OP_LAYERNORM_BACKWARD] = {"layernorm_backward", case_layernorm, vs_cpu_layernorm},
    [OP_BIAS_RELU_DROPOUT_FORWARD] = {"bias_relu_dropout_forward", test_relu, vs_cpu_dropout},
    [OP_RELU_DROPOUT_BACKWARD] = {"relu_dropout_backward", test_relu, vs_cpu_dropout},
    [OP_PERMUTE0213_FORWARD] = {"permute0213_forward", case_permute0213, vs_cpu_shape},
    [OP_PERMUTE0213_BACKWARD] = {"permute0213_backward", case_permute0213, vs_cpu_shape},
    [OP_WRITE_STEP] = {"write_step", test_write_step, vs_cpu_shape},
    [OP_GATHER_ROWS_STRIDED] = {"gather_rows_strided", test_gather_rows_strided, vs_cpu_shape},
    [OP_EMBEDDING_FORWARD] = {"embedding_forward", test_embedding, vs_cpu_embedding},
    [OP_EMBEDDING_BACKWARD] = {"embedding_backward", test_embedding, vs_cpu_embedding},
    [OP_LSTM_CELL_FORWARD] = {"lstm_cell_forward", case_lstm, vs_cpu_lstm},
    [OP_LSTM_CELL_BACKWARD] = {"lstm_cell_backward", case_lstm, vs_cpu_lstm},
    [OP_GRU_CELL_FORWARD] = {"gru_cell_forward", case_gru, vs_cpu_gru},
    [OP_GRU_CELL_BACKWARD] = {"gru_cell_backward", case_gru, vs_cpu_gru},
    [OP_GATHER_ROWS] = {"gather_rows", test_gather_rows, vs_cpu_shape},
    [OP_XENT_FORWARD_BACKWARD] = {"xent_forward_backward", case_xent, vs_cpu_xent},
    [OP_XENT_WORKSPACE] = {"xent_workspace", case_xent, vs_cpu_xent},
    [OP_LOG_SOFTMAX] = {"log_softmax", test_log_softmax, vs_cpu_xent},
    [OP_ARGMAX] = {"argmax", test_argmax, vs_cpu_xent},
    [OP_ADAM_UPDATE] = {"adam_update", test_adam, vs_cpu_adam},
    [OP_ATTN_FORWARD] = {"attn_forward", case_attn_sdp, vs_cpu_attn_sdp},
    [OP_ATTN_BACKWARD] = {"attn_backward", case_attn_sdp, vs_cpu_attn_sdp},
    [OP_ATTN_WORKSPACE] = {"attn_workspace", case_attn_sdp, vs_cpu_attn_sdp},
    [OP_ATTN_FORWARD_MERGED] = {"attn_forward_merged", case_attn_sdp_merged,
                                 vs_cpu_attn_sdp_merged},
    [OP_ATTN_BACKWARD_MERGED] = {"attn_backward_merged", case_attn_sdp_merged,
                                  vs_cpu_attn_sdp_merged},
    [OP_ADDITIVE_ATTN_FORWARD] = {"additive_attn_forward", case_additive_attn, vs_cpu_additive_attn},
    [OP_ADDITIVE_ATTN_BACKWARD] = {"additive_attn_backward", case_additive_attn, vs_cpu_additive_attn},
    [OP_ADDITIVE_ATTN_WORKSPACE] = {"additive_attn_workspace", case_additive_attn, vs_cpu_additive_attn},
    [OP_LOCAL_ATTN_FORWARD] = {"local_attn_forward", case_local_attn, vs_cpu_local_attn},
    [OP_LOCAL_ATTN_BACKWARD] = {"local_attn_backward", case_local_attn, vs_cpu_local_attn},
    [OP_LOCAL_ATTN_WORKSPACE] = {"local_attn_workspace", case_local_attn, vs_cpu_local_attn},
    [OP_FLASH_ATTN_FORWARD] = {"flash_attn_forward", case_flash_attn, vs_cpu_flash_attn},
    [OP_FLASH_ATTN_BACKWARD] = {"flash_attn_backward", case_flash_attn, vs_cpu_flash_attn},
    [OP_FLASH_ATTN_WORKSPACE] = {"flash_attn_workspace", case_flash_attn, vs_cpu_flash_attn},
    [OP_LINEAR_ATTN_FORWARD] = {"linear_attn_forward", case_linear_attn, vs_cpu_linear_attn},
    [OP_LINEAR_ATTN_BACKWARD] = {"linear_attn_backward", case_linear_attn, vs_cpu_linear_attn},
    [OP_LINEAR_ATTN_STEP] = {"linear_attn_step", case_linear_attn, vs_cpu_linear_attn},
    [OP_LINEAR_ATTN_SUMMARY] = {"linear_attn_summary", case_linear_attn, vs_cpu_linear_attn_split},
    [OP_LINEAR_ATTN_READ] = {"linear_attn_read", case_linear_attn, vs_cpu_linear_attn_split},
    [OP_LINEAR_ATTN_READ_BACKWARD] = {"linear_attn_read_backward", case_linear_attn,
                                      vs_cpu_linear_attn_split},
    [OP_LINEAR_ATTN_SUMMARY_BACKWARD] = {"linear_attn_summary_backward", case_linear_attn,
                                         vs_cpu_linear_attn_split},
    [OP_LINEAR_ATTN_WORKSPACE] = {"linear_attn_workspace", case_linear_attn, vs_cpu_linear_attn},
    [OP_L2FEATURE_FORWARD] = {"l2feature_forward", case_taylor_attn, vs_cpu_l2feature},
    [OP_L2FEATURE_BACKWARD] = {"l2feature_backward", case_taylor_attn, vs_cpu_l2feature},
    [OP_LINFORMER_PROJ_FORWARD] = {"linformer_proj_forward", case_linformer_attn,
                                   vs_cpu_linformer_proj},
    [OP_LINFORMER_PROJ_BACKWARD] = {"linformer_proj_backward", case_linformer_attn,
                                    vs_cpu_linformer_proj},
    [OP_EFFICIENT_ATTN_FORWARD] = {"efficient_attn_forward", case_efficient_attn, vs_cpu_efficient_attn},
    [OP_EFFICIENT_ATTN_BACKWARD] = {"efficient_attn_backward", case_efficient_attn, vs_cpu_efficient_attn},
    [OP_EFFICIENT_ATTN_WORKSPACE] = {"efficient_attn_workspace", case_efficient_attn, vs_cpu_efficient_attn},
    [OP_EFFICIENT_ATTN_SUMMARY] = {"efficient_attn_summary", case_efficient_attn,
                                   vs_cpu_efficient_attn_split},
    [OP_EFFICIENT_ATTN_READ] = {"efficient_attn_read", case_efficient_attn,
                                vs_cpu_efficient_attn_split},
    [OP_EFFICIENT_ATTN_READ_BACKWARD] = {"efficient_attn_read_backward", case_efficient_attn,
                                         vs_cpu_efficient_attn_split},
    [OP_EFFICIENT_ATTN_SUMMARY_BACKWARD] = {"efficient_attn_summary_backward",
                                            case_efficient_attn, vs_cpu_efficient_attn_split},
};

/* 1 if fn already ran for an earlier selected row (a pair's second row). */
static int ran_before(int op, void (*fn)(void), int cross) {
    for (int j = 0; j < op; j++)
        if (op_selected[j] && (cross ? CASES[j].vs_cpu : CASES[j].cpu) == fn) return 1;
    return 0;
}

/* Every OpKind has a case, named as op_name says. */
static void check_table(void) {
    for (int op = 0; op < OP_COUNT; op++) {
        EXPECT(strcmp(op_name((OpKind)op), "?") != 0, "OpKind %d has no name", op);
        EXPECT(CASES[op].cpu != NULL, "no test case for op %s", op_name((OpKind)op));
        EXPECT(!CASES[op].name || strcmp(CASES[op].name, op_name((OpKind)op)) == 0,
               "case %d is named %s, the op %s", op, CASES[op].name, op_name((OpKind)op));
    }
}

static int run_cpu(void) {
    be = backend_cpu();
    rng_seed(&optest_rng, 20240611, 3);
    check_table();
    if (!ops_filtered) test_memory();
    int ncases = 0;
    for (int op = 0; op < OP_COUNT; op++) {
        if (!CASES[op].cpu || !op_selected[op]) continue;
        ncases++;
        /* each case's inputs are its own: the same whether or not --ops left others out */
        rng_seed(&optest_rng, 20240611, 100 + (uint64_t)op);
        if (!ran_before(op, CASES[op].cpu, 0)) CASES[op].cpu();
    }
    if (!ops_filtered) test_require_ops();
    printf("%d op cases (%d OpKinds)\n", ncases, OP_COUNT);
    return test_report("test_backend_ops");
}

/* One pass of every vs-cpu case the backend under test supports, the input generator seeded
 * afresh (so that every pass draws the same inputs); verbose: name the ops it lacks. */
static void vs_cpu_suite(int verbose) {
    rng_seed(&optest_rng, 20240601u, 7u);
    check_table();
    if (!ops_filtered) vs_cpu_memory();
    for (int op = 0; op < OP_COUNT; op++) {
        if (!op_selected[op]) continue;
        if (!supports_op(gpu, (OpKind)op)) {
            if (verbose) printf("  cuda backend has no %s yet: skipped\n", op_name((OpKind)op));
            continue;
        }
        EXPECT(CASES[op].vs_cpu != NULL, "cuda implements %s but its case has no check against "
               "the cpu", op_name((OpKind)op));
        rng_seed(&optest_rng, 20240601u, 100 + (uint64_t)op); /* as in run_cpu */
        g_quiet = 0, g_rng_saved = 0;
        if (CASES[op].vs_cpu && !ran_before(op, CASES[op].vs_cpu, 1)) CASES[op].vs_cpu();
        g_quiet = 0, g_rng_saved = 0;
    }
    gpu->synchronize();
}

static int run_vs_cpu(const char *backend) {
    char msg[1024] = "";
    if (strcmp(backend, "cuda") != 0) {
        fprintf(stderr, "test_backend_ops: unknown backend '%s' (cuda)\n", backend);
        return 2;
    }
    gpu = backend_cuda(msg, sizeof msg);
    if (!gpu) {
#ifdef TRAINER_SIMT
        fprintf(stderr, "test_backend_ops --backend cuda: FAIL: the emulated CUDA backend did not "
                        "start: %s\n", msg);
        return 1;
#else
        printf("test_backend_ops --backend cuda: skipped: %s\n", msg);
        return 77;
#endif
    }
    cpu = backend_cpu();
    if (gpu->alloc && gpu->free && gpu->upload && gpu->download && !test_sanitized()) {
        /* guarded memory (above) */
        unguarded = gpu;
        guarded = *gpu;
        guarded.alloc = guarded_alloc, guarded.free = guarded_free;
        gpu = &guarded;
    }
    EXPECT(strcmp(gpu->name, "cuda") == 0, "backend name is \"%s\", not \"cuda\"", gpu->name);
    /* the memory entries are not optional: without them nothing else can run */
    int mem_ok = gpu->alloc && gpu->free && gpu->upload && gpu->download && gpu->copy &&
                 gpu->zero && gpu->synchronize;
    EXPECT(mem_ok, "the cuda backend lacks a memory entry (alloc/free/upload/download/copy/zero/"
                   "synchronize)");
    if (!mem_ok) return test_report("test_backend_ops --backend cuda");
#ifndef TRAINER_SIMT
    vs_cpu_suite(1);
#else
    /* The emulated build: the whole suite under five thread/block schedules, the inputs drawn
     * identically each time; a race-free kernel gives the same bits under every schedule, so
     * every output must hash as under the first (docs/design.md §11). Under ASan (fibers switch by
     * swapcontext, about 10x slower) the first two (forward, random:1): that build looks for memory errors, the plain
     * one for races. TEST_SIMT_SCHEDULES=N runs the first N only (the TSan build: one schedule,
     * its blocks on several OS threads, TSan watching every emulated thread). */
    static const struct { int kind; unsigned long long seed; const char *name; } sched[] = {
        {SIMT_FORWARD, 0, "forward"}, {SIMT_RANDOM, 1, "random:1"}, {SIMT_REVERSE, 0, "reverse"},
        {SIMT_RANDOM, 2, "random:2"}, {SIMT_RANDOM, 3, "random:3"}};
    size_t n_ref = 0;
    uint64_t *ref = NULL;
    int nsched = test_sanitized() ? 2 : 5;
    const char *lim = getenv("TEST_SIMT_SCHEDULES"); /* fewer, e.g. 1 for the TSan run */
    if (lim && atoi(lim) >= 1 && atoi(lim) < nsched) nsched = atoi(lim);
    for (int s = 0; s < nsched; s++) {
        g_pass = s;
        simt_set_schedule(sched[s].kind, sched[s].seed);
        n_seen = 0;
        int failed_before = test_failures;
        double t0 = omp_get_wtime();
        vs_cpu_suite(s == 0);
        size_t differ = 0, first = 0;
        if (s == 0) {
            n_ref = n_seen;
            ref = malloc(n_ref * sizeof *ref + 1);
            if (!ref) exit(2);
            for (size_t i = 0; i < n_ref; i++) ref[i] = out_seen[i].hash;
        } else {
            for (size_t i = 0; i < n_seen && i < n_ref; i++)
                if (out_seen[i].hash != ref[i] && differ++ == 0) first = i;
            EXPECT(n_seen == n_ref, "schedule %s: %zu outputs, the forward schedule had %zu",
                   sched[s].name, n_seen, n_ref);
            EXPECT(differ == 0, "schedule %s: %zu of %zu outputs differ in bits from the forward "
                   "schedule's (a race or an uninitialised read), the first: %s", sched[s].name,
                   differ, n_seen, differ ? out_seen[first].what : "");
        }
        printf("schedule %-8s: %zu outputs, %s, %d failed checks, %.1f s\n", sched[s].name,
               n_seen, s == 0 ? "reference" : differ ? "BITS DIFFER" : "bit-identical",
               test_failures - failed_before, omp_get_wtime() - t0);
    }
    free(ref);
#endif
    free(out_seen);
    return test_report("test_backend_ops --backend cuda");
}

/* Marks the OpKinds named in list (comma-separated op_name names); 0, or -1 naming the first
 * unknown name on stderr. */
static int select_ops(const char *list) {
    ops_filtered = 1;
    const char *p = list;
    while (*p) {
        size_t n = strcspn(p, ",");
        int found = 0;
        for (int op = 0; op < OP_COUNT; op++)
            if (strlen(op_name((OpKind)op)) == n && strncmp(op_name((OpKind)op), p, n) == 0)
                op_selected[op] = found = 1;
        if (!found) {
            fprintf(stderr, "test_backend_ops: --ops: no op named '%.*s'\n", (int)n, p);
            return -1;
        }
        p += n + (p[n] == ',');
    }
    return 0;
}

int main(int argc, char **argv) {
    const char *backend = NULL;
    for (int op = 0; op < OP_COUNT; op++) op_selected[op] = 1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--backend") == 0 && i + 1 < argc && !backend) {
            backend = argv[++i];
        } else if (strcmp(argv[i], "--ops") == 0 && i + 1 < argc && !ops_filtered) {
            memset(op_selected, 0, sizeof op_selected);
            if (select_ops(argv[++i])) return 2;
        } else {
            fprintf(stderr, "usage: test_backend_ops [--backend cuda] [--ops NAME[,NAME...]]\n");
            return 2;
        }
    }
    return backend ? run_vs_cpu(backend) : run_cpu();
}
