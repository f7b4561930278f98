/* test_ops.c — every op of the CPU backend table (backend_cpu(), src/ops/ops.h) against a plain
 * reference written here in double precision, every backward against central finite
 * differences, and the accumulate convention (DESIGN.md §3, §9).
 *
 * Forward: each op's output is compared with an obviously-correct double-precision loop.
 * Backward: for an op out = f(x) we take L = Σ r ⊙ out with a fixed random r (so dout = r) and
 *   compare the analytic gradient with (L(x + ε e_i) − L(x − ε e_i)) / (2ε), L accumulated in
 *   double, ε = 1e-3 on float32 inputs. Tolerances are stated next to the constants below.
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
 * Attention: key_len full / partial / 0, causal with Tq < Tk and Tq > Tk (rows that see no key
 *   get zero weights, output and gradients); masked weights are exactly 0. Additive attention
 *   also with heads (B = batch × NH rows, row r uses v[r mod NH], dv [NH, A]).
 * Shapes above an op's OpenMP threshold (axpy/scale, bias_relu_dropout, permute0213, layernorm, attn,
 *   additive attention) run the parallel code, against the double reference where finite
 *   differences would be slow; layernorm is bit-identical for 1 and 2 threads (ops.h: fixed
 *   summation order) and additive attention's backward run twice is bit-identical.
 *
 * Shapes are small but non-square (e.g. B 3, Tq 4, Tk 5, D 6, Dv 7) so that a swapped index
 * shows. Inputs come from the repository's PCG32 (src/rng.h) with a fixed seed. One line per
 * check group is printed (max abs / rel error); the exit code is the verdict. */
#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"
#include "rng.h"
#include "testutil.h"

/* Tolerances.
 * Forward against the double reference (float32 arithmetic inside the op):
 *   |got − ref| ≤ FWD_ATOL + FWD_RTOL·|ref|.
 * Backward against central finite differences (ε = 1e-3, loss in double from float32 outputs,
 *   so the numeric derivative carries ~1e-4 of rounding noise):
 *   |analytic − numeric| ≤ FD_ATOL + FD_RTOL·|numeric|.
 * Accumulate (one float add per element, possibly fused/reordered):
 *   |after − (prefill + grad)| ≤ ACC_TOL·(1 + |prefill| + |grad|). */
#define FWD_ATOL 1e-5
#define FWD_RTOL 1e-5
#define FD_EPS 1e-3f
#define FD_ATOL 1e-3
#define FD_RTOL 1e-2
#define ACC_TOL 1e-6

static const Backend *be;
static Rng rng;

/* ------------------------------------------------------------------------------------------ */
/* helpers                                                                                     */

static float *fnew(size_t n) {
    float *p = calloc(n ? n : 1, sizeof(float));
    if (!p) {
        perror("calloc");
        exit(2);
    }
    return p;
}
static float *frand(size_t n, float lo, float hi) {
    float *p = fnew(n);
    for (size_t i = 0; i < n; i++) p[i] = lo + (hi - lo) * rng_uniform(&rng);
    return p;
}
static float *fdup(const float *x, size_t n) {
    float *p = fnew(n);
    memcpy(p, x, sizeof(float) * n);
    return p;
}
static double dot_rd(const float *r, const float *x, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++) s += (double)r[i] * (double)x[i];
    return s;
}

/* One group of comparisons, reported in one line. */
typedef struct {
    char name[128];
    long n;
    int bad;
    double max_abs, max_rel;
} Stat;

static void stat_begin(Stat *s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->name, sizeof s->name, fmt, ap);
    va_end(ap);
    s->n = 0;
    s->bad = 0;
    s->max_abs = 0;
    s->max_rel = 0;
}

/* Records got vs ref; fails when |got − ref| > atol + rtol·|ref| (NaN always fails). */
static void stat_add(Stat *s, double got, double ref, double atol, double rtol, const char *what,
                     long idx) {
    double d = fabs(got - ref);
    s->n++;
    if (!(d <= atol + rtol * fabs(ref))) {
        if (s->bad < 6)
            fprintf(stderr, "  %s: %s[%ld]: got %.9g, expected %.9g (diff %.3g)\n", s->name, what,
                    idx, got, ref, d);
        s->bad++;
    }
    if (isnan(d)) d = INFINITY;
    if (d > s->max_abs) s->max_abs = d;
    if (fabs(ref) >= 1e-3 && d / fabs(ref) > s->max_rel) s->max_rel = d / fabs(ref);
}

/* A boolean property inside a group (counted as one value, error 0 or 1). */
static void stat_true(Stat *s, int ok, const char *fmt, ...) {
    s->n++;
    if (!ok) {
        if (s->bad < 6) {
            va_list ap;
            va_start(ap, fmt);
            fprintf(stderr, "  %s: ", s->name);
            vfprintf(stderr, fmt, ap);
            fprintf(stderr, "\n");
            va_end(ap);
        }
        s->bad++;
        if (s->max_abs < 1) s->max_abs = 1;
    }
}

static void stat_end(Stat *s) {
    printf("%-46s %7ld values  max abs %.2e  max rel %.2e  %s\n", s->name, s->n, s->max_abs,
           s->max_rel, s->bad ? "FAIL" : "ok");
    EXPECT(s->bad == 0, "%s: %d of %ld values out of tolerance", s->name, s->bad, s->n);
}

typedef double (*LossFn)(void *ctx);

/* Central finite differences of f with respect to every element of x (which f reads), compared
 * with analytic[]. x is restored afterwards. */
static void fd_check(Stat *st, const char *what, float *x, size_t n, const float *analytic,
                     LossFn f, void *ctx) {
    for (size_t i = 0; i < n; i++) {
        float x0 = x[i], xp = x0 + FD_EPS, xm = x0 - FD_EPS;
        x[i] = xp;
        double lp = f(ctx);
        x[i] = xm;
        double lm = f(ctx);
        x[i] = x0;
        double num = (lp - lm) / ((double)xp - (double)xm);
        stat_add(st, analytic[i], num, FD_ATOL, FD_RTOL, what, (long)i);
    }
}

/* after must equal pre + g (the gradient computed into a zeroed buffer). */
static void accum_check(Stat *st, const char *what, const float *after, const float *pre,
                        const float *g, size_t n) {
    for (size_t i = 0; i < n; i++) {
        double ref = (double)pre[i] + (double)g[i];
        stat_add(st, after[i], ref, ACC_TOL * (1 + fabs(pre[i]) + fabs(g[i])), 0, what, (long)i);
    }
}

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
    be->free(d);
    be->free(d2);
    free(h);
    free(back);
    stat_end(&st);
}

/* ------------------------------------------------------------------------------------------ */
/* dense algebra                                                                               */

static void test_matmul(void) {
    const int M = 3, Nc = 5, K = 4;
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++)
            for (int betacase = 0; betacase < 2; betacase++) {
                float alpha = 0.7f, beta = betacase ? 0.0f : -0.3f;
                Stat st;
                stat_begin(&st, "matmul transA=%d transB=%d alpha=%.1f beta=%.1f", ta, tb,
                           alpha, beta);
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
                        stat_add(&st, C[i * Nc + j], ref, FWD_ATOL, FWD_RTOL, "C", i * Nc + j);
                    }
                stat_end(&st);
                free(A), free(Bm), free(C0), free(C);
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
     * and p alone): dinp = dout · mask · [inp + bias > 0], overwritten — exact (tolerance 0). The second shape takes the
     * OpenMP path; p = 0 gives mask 1 and a plain bias + relu. */
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
/* attention core                                                                              */

typedef struct {
    float *q, *k, *v, *out, *w;
    const int *key_len;
    const float *r;
    float scale;
    int causal, B, Tq, Tk, D, Dv;
} AttnCtx;
static double attn_loss(void *p) {
    AttnCtx *a = p;
    be->attn_forward(a->out, a->w, a->q, a->k, a->v, a->key_len, a->scale, a->causal, a->B, 1,
                     a->Tq, a->Tk, a->D, a->Dv);
    return dot_rd(a->r, a->out, (size_t)a->B * a->Tq * a->Dv);
}

static int attn_allowed(int b, int t, int s, const int *key_len, int causal, int Tq, int Tk) {
    if (s >= key_len[b]) return 0;
    if (causal && s > t + (Tk - Tq)) return 0;
    return 1;
}

static void test_attn(int B, int Tq, int Tk, int D, int Dv, const int *key_len, int causal,
                      float scale) {
    size_t nq = (size_t)B * Tq * D, nk = (size_t)B * Tk * D, nv = (size_t)B * Tk * Dv;
    size_t no = (size_t)B * Tq * Dv, nw = (size_t)B * Tq * Tk;
    float *q = frand(nq, -1.5f, 1.5f), *k = frand(nk, -1.5f, 1.5f), *v = frand(nv, -1, 1);
    float *out = fnew(no), *w = fnew(nw);
    /* garbage in the outputs: the op must write every element */
    for (size_t i = 0; i < no; i++) out[i] = 123.0f;
    for (size_t i = 0; i < nw; i++) w[i] = 123.0f;
    char tag[96];
    int tl = snprintf(tag, sizeof tag, "B%d Tq%d Tk%d D%d Dv%d causal=%d len=", B, Tq, Tk, D, Dv,
                      causal);
    for (int b = 0; b < B && tl < (int)sizeof tag; b++)
        tl += snprintf(tag + tl, sizeof tag - tl, b ? ",%d" : "%d", key_len[b]);
    Stat st;
    stat_begin(&st, "attn_forward %s", tag);
    be->attn_forward(out, w, q, k, v, key_len, scale, causal, B, 1, Tq, Tk, D, Dv);
    int fully_masked_rows = 0;
    for (int b = 0; b < B; b++)
        for (int t = 0; t < Tq; t++) {
            double e[64], a[64], mx = -INFINITY, z = 0;
            int any = 0;
            for (int s = 0; s < Tk; s++) {
                if (!attn_allowed(b, t, s, key_len, causal, Tq, Tk)) continue;
                double d = 0;
                for (int j = 0; j < D; j++)
                    d += (double)q[((size_t)b * Tq + t) * D + j] *
                         (double)k[((size_t)b * Tk + s) * D + j];
                e[s] = scale * d;
                if (e[s] > mx) mx = e[s];
                any = 1;
            }
            for (int s = 0; s < Tk; s++) {
                a[s] = 0;
                if (attn_allowed(b, t, s, key_len, causal, Tq, Tk)) z += (a[s] = exp(e[s] - mx));
            }
            if (any)
                for (int s = 0; s < Tk; s++) a[s] /= z;
            else
                fully_masked_rows++;
            const float *wr = w + ((size_t)b * Tq + t) * Tk;
            double wsum = 0;
            for (int s = 0; s < Tk; s++) {
                long idx = (long)((b * Tq + t) * Tk + s);
                if (attn_allowed(b, t, s, key_len, causal, Tq, Tk))
                    stat_add(&st, wr[s], a[s], FWD_ATOL, FWD_RTOL, "weights", idx);
                else /* a masked key gets exactly zero weight */
                    stat_add(&st, wr[s], 0.0, 0, 0, "masked weight", idx);
                wsum += wr[s];
            }
            stat_add(&st, wsum, any ? 1.0 : 0.0, FWD_ATOL, 0, "row sum of weights", b * Tq + t);
            for (int d = 0; d < Dv; d++) {
                double o = 0;
                for (int s = 0; s < Tk; s++) o += a[s] * (double)v[((size_t)b * Tk + s) * Dv + d];
                long idx = (long)((b * Tq + t) * Dv + d);
                stat_add(&st, out[idx], o, any ? FWD_ATOL : 0, any ? FWD_RTOL : 0,
                         any ? "out" : "out (fully masked row)", idx);
            }
        }
    stat_end(&st);
    (void)fully_masked_rows;

    /* backward: L = Σ r ⊙ out */
    float *r = frand(no, -1, 1);
    float *gq = fnew(nq), *gk = fnew(nk), *gv = fnew(nv);
    float *work = fnew(be->attn_workspace(B, 1, Tq, Tk, D, Dv)); /* B rows as B·1 heads */
    be->attn_forward(out, w, q, k, v, key_len, scale, causal, B, 1, Tq, Tk, D, Dv);
    be->attn_backward(gq, gk, gv, r, q, k, v, w, scale, B, 1, Tq, Tk, D, Dv, work);
    AttnCtx ctx = {q, k, v, fnew(no), fnew(nw), key_len, r, scale, causal, B, Tq, Tk, D, Dv};
    stat_begin(&st, "attn_backward vs FD %s", tag);
    /* The loss is evaluated twice per input element: on one thread, so that a shape above the
     * OpenMP threshold does not pay a thread wake-up per evaluation on a loaded machine (the
     * forward and backward checked here ran with the default thread count). */
    int threads0 = omp_get_max_threads();
    omp_set_num_threads(1);
    fd_check(&st, "dq", q, nq, gq, attn_loss, &ctx);
    fd_check(&st, "dk", k, nk, gk, attn_loss, &ctx);
    fd_check(&st, "dv", v, nv, gv, attn_loss, &ctx);
    omp_set_num_threads(threads0);
    stat_end(&st);

    stat_begin(&st, "attn_backward accumulates (and NULL) %s", tag);
    float *pq = frand(nq, -2, 2), *pk = frand(nk, -2, 2), *pv = frand(nv, -2, 2);
    float *aq = fdup(pq, nq), *ak = fdup(pk, nk), *av = fdup(pv, nv);
    be->attn_backward(aq, ak, av, r, q, k, v, w, scale, B, 1, Tq, Tk, D, Dv, work);
    accum_check(&st, "dq", aq, pq, gq, nq);
    accum_check(&st, "dk", ak, pk, gk, nk);
    accum_check(&st, "dv", av, pv, gv, nv);
    /* each gradient may be NULL; the others are unchanged by that */
    memcpy(aq, pq, sizeof(float) * nq);
    be->attn_backward(aq, NULL, NULL, r, q, k, v, w, scale, B, 1, Tq, Tk, D, Dv, work);
    accum_check(&st, "dq (dk,dv NULL)", aq, pq, gq, nq);
    memcpy(ak, pk, sizeof(float) * nk);
    be->attn_backward(NULL, ak, NULL, r, q, k, v, w, scale, B, 1, Tq, Tk, D, Dv, work);
    accum_check(&st, "dk (dq,dv NULL)", ak, pk, gk, nk);
    memcpy(av, pv, sizeof(float) * nv);
    be->attn_backward(NULL, NULL, av, r, q, k, v, w, scale, B, 1, Tq, Tk, D, Dv, work);
    accum_check(&st, "dv (dq,dk NULL)", av, pv, gv, nv);
    stat_end(&st);

    free(q), free(k), free(v), free(out), free(w), free(r), free(gq), free(gk), free(gv);
    free(ctx.out), free(ctx.w), free(pq), free(pk), free(pv), free(aq), free(ak), free(av);
    free(work);
}

/* ------------------------------------------------------------------------------------------ */
/* additive attention                                                                          */

/* B rows (B / NH batch entries × NH heads flattened); row r uses v[r mod NH]; key s is visible
 * to query t of row r as for attn_forward (attn_allowed: s < key_len[r] and, causal,
 * s ≤ t + Tk − Tq). The op takes key_len per batch entry: batch_lens gives it (the rows of one
 * entry share their length). */
static const int *batch_lens(const int *row_len, int B, int NH) {
    static int lens[64];
    for (int r = 0; r < B; r++) {
        if (row_len[r] != row_len[r - r % NH]) {
            fprintf(stderr, "test error: rows of one batch entry differ in key_len\n");
            exit(1);
        }
        if (r % NH == 0) lens[r / NH] = row_len[r];
    }
    return lens;
}
typedef struct {
    float *qp, *kp, *v, *values, *out, *w;
    const int *key_len;
    const float *r;
    int causal, B, NH, Tq, Tk, A, Dv;
} AddAttnCtx;
static double add_attn_loss(void *p) {
    AddAttnCtx *a = p;
    be->additive_attn_forward(a->out, a->w, a->qp, a->kp, a->v, a->values, batch_lens(a->key_len, a->B, a->NH),
                              a->causal, a->B / a->NH, a->NH, a->Tq, a->Tk, a->A, a->Dv);
    return dot_rd(a->r, a->out, (size_t)a->B * a->Tq * a->Dv);
}

/* The double-precision reference: weights a[B,Tq,Tk] and out[B,Tq,Dv] (forward), and, when r
 * (= dout) is given, the gradients of L = Σ r ⊙ out written (not added) into gqp, gkp,
 * gv[NH,A], gvalues, by the chain rule written out plainly. */
static void add_attn_ref(double *a, double *out, double *gqp, double *gkp, double *gv,
                         double *gvalues, const float *qp, const float *kp, const float *v,
                         const float *values, const int *key_len, int causal, const float *r,
                         int B, int NH, int Tq, int Tk, int A, int Dv) {
    if (r) {
        memset(gqp, 0, sizeof(double) * B * Tq * A);
        memset(gkp, 0, sizeof(double) * B * Tk * A);
        memset(gv, 0, sizeof(double) * NH * A);
        memset(gvalues, 0, sizeof(double) * B * Tk * Dv);
    }
    for (int b = 0; b < B; b++)
        for (int t = 0; t < Tq; t++) {
            const float *q = qp + ((size_t)b * Tq + t) * A;
            const float *vh = v + (size_t)(b % NH) * A; /* row b uses head b mod NH */
            double e[64], mx = -INFINITY, z = 0;
            double *ar = a + ((size_t)b * Tq + t) * Tk;
            int vis[64], any = 0;
            for (int s = 0; s < Tk; s++) {
                vis[s] = attn_allowed(b, t, s, key_len, causal, Tq, Tk);
                if (!vis[s]) continue;
                const float *k = kp + ((size_t)b * Tk + s) * A;
                e[s] = 0;
                for (int j = 0; j < A; j++) e[s] += (double)vh[j] * tanh((double)q[j] + k[j]);
                if (e[s] > mx) mx = e[s];
                any = 1;
            }
            for (int s = 0; s < Tk; s++) ar[s] = vis[s] ? exp(e[s] - mx) : 0.0;
            for (int s = 0; s < Tk; s++) z += ar[s];
            if (any)
                for (int s = 0; s < Tk; s++) ar[s] /= z;
            double *o = out + ((size_t)b * Tq + t) * Dv;
            for (int d = 0; d < Dv; d++) {
                o[d] = 0;
                for (int s = 0; s < Tk; s++)
                    o[d] += ar[s] * (double)values[((size_t)b * Tk + s) * Dv + d];
            }
            if (!r) continue;
            const float *go = r + ((size_t)b * Tq + t) * Dv;
            double da[64], dot = 0;
            for (int s = 0; s < Tk; s++) {
                if (!vis[s]) continue;
                da[s] = 0;
                for (int d = 0; d < Dv; d++) {
                    da[s] += (double)go[d] * values[((size_t)b * Tk + s) * Dv + d];
                    gvalues[((size_t)b * Tk + s) * Dv + d] += ar[s] * go[d];
                }
                dot += ar[s] * da[s];
            }
            for (int s = 0; s < Tk; s++) {
                if (!vis[s]) continue;
                double de = ar[s] * (da[s] - dot);
                const float *k = kp + ((size_t)b * Tk + s) * A;
                for (int j = 0; j < A; j++) {
                    double u = tanh((double)q[j] + k[j]), du = de * vh[j] * (1 - u * u);
                    gqp[((size_t)b * Tq + t) * A + j] += du;
                    gkp[((size_t)b * Tk + s) * A + j] += du;
                    gv[(size_t)(b % NH) * A + j] += de * u;
                }
            }
        }
}

/* B rows = B / NH batch entries × NH heads flattened (key_len per row, equal within an entry:
 * batch_lens), v[NH,A]. */
static void test_additive_attn(int B, int NH, int Tq, int Tk, int A, int Dv, const int *key_len,
                               int causal) {
    size_t nq = (size_t)B * Tq * A, nk = (size_t)B * Tk * A, nval = (size_t)B * Tk * Dv;
    size_t no = (size_t)B * Tq * Dv, nw = (size_t)B * Tq * Tk, nvh = (size_t)NH * A;
    float *qp = frand(nq, -1.5f, 1.5f), *kp = frand(nk, -1.5f, 1.5f);
    float *v = frand(nvh, -1.5f, 1.5f);
    float *values = frand(nval, -1, 1), *out = fnew(no), *w = fnew(nw);
    /* garbage in the outputs: the op must write every element */
    for (size_t i = 0; i < no; i++) out[i] = 123.0f;
    for (size_t i = 0; i < nw; i++) w[i] = 123.0f;
    char tag[96];
    int tl = snprintf(tag, sizeof tag, "B%d NH%d Tq%d Tk%d A%d Dv%d%s len=", B, NH, Tq, Tk, A, Dv,
                      causal ? " causal" : "");
    for (int b = 0; b < B && tl < (int)sizeof tag; b++)
        tl += snprintf(tag + tl, sizeof tag - tl, b ? ",%d" : "%d", key_len[b]);
    double *ra = malloc(sizeof(double) * nw), *ro = malloc(sizeof(double) * no);
    add_attn_ref(ra, ro, NULL, NULL, NULL, NULL, qp, kp, v, values, key_len, causal, NULL, B, NH,
                 Tq, Tk, A, Dv);
    Stat st;
    stat_begin(&st, "additive_attn_forward %s", tag);
    be->additive_attn_forward(out, w, qp, kp, v, values, batch_lens(key_len, B, NH), causal, B / NH, NH, Tq, Tk, A, Dv);
    int *row_any = calloc((size_t)B * Tq, sizeof(int));  /* query (b,t) sees some key */
    int *key_seen = calloc((size_t)B * Tk, sizeof(int)); /* key (b,s) seen by some query */
    for (int b = 0; b < B; b++)
        for (int t = 0; t < Tq; t++) {
            double wsum = 0;
            for (int s = 0; s < Tk; s++) {
                long idx = (long)((b * Tq + t) * Tk + s);
                if (attn_allowed(b, t, s, key_len, causal, Tq, Tk)) {
                    row_any[b * Tq + t] = key_seen[b * Tk + s] = 1;
                    stat_add(&st, w[idx], ra[idx], FWD_ATOL, FWD_RTOL, "weights", idx);
                } else { /* a padded or future key gets exactly zero weight */
                    stat_add(&st, w[idx], 0.0, 0, 0, "masked weight", idx);
                }
                wsum += w[idx];
            }
            int any = row_any[b * Tq + t];
            stat_add(&st, wsum, any ? 1.0 : 0.0, FWD_ATOL, 0, "row sum of weights", b * Tq + t);
            for (int d = 0; d < Dv; d++) {
                long idx = (long)((b * Tq + t) * Dv + d);
                stat_add(&st, out[idx], ro[idx], any ? FWD_ATOL : 0, any ? FWD_RTOL : 0,
                         any ? "out" : "out (no visible key)", idx);
            }
        }
    stat_end(&st);

    /* backward: L = Σ r ⊙ out */
    float *r = frand(no, -1, 1);
    float *gq = fnew(nq), *gk = fnew(nk), *gv = fnew(nvh), *gval = fnew(nval);
    be->additive_attn_forward(out, w, qp, kp, v, values, batch_lens(key_len, B, NH), causal, B / NH, NH, Tq, Tk, A, Dv);
    be->additive_attn_backward(gq, gk, gv, gval, r, qp, kp, v, values, w, B / NH, NH, Tq, Tk, A, Dv);
    AddAttnCtx ctx = {qp, kp, v, values, fnew(no), fnew(nw), key_len, r, causal, B, NH, Tq, Tk,
                      A, Dv};
    stat_begin(&st, "additive_attn_backward vs FD %s", tag);
    fd_check(&st, "dqp", qp, nq, gq, add_attn_loss, &ctx);
    fd_check(&st, "dkp", kp, nk, gk, add_attn_loss, &ctx);
    fd_check(&st, "dv", v, nvh, gv, add_attn_loss, &ctx);
    fd_check(&st, "dvalues", values, nval, gval, add_attn_loss, &ctx);
    /* keys no query sees (padding) receive exactly nothing; nor do queries that see no key */
    for (int b = 0; b < B; b++)
        for (int s = 0; s < Tk; s++) {
            if (key_seen[b * Tk + s]) continue;
            for (int j = 0; j < A; j++)
                stat_add(&st, gk[((size_t)b * Tk + s) * A + j], 0.0, 0, 0, "dkp (unseen key)",
                         (long)(((size_t)b * Tk + s) * A + j));
            for (int d = 0; d < Dv; d++)
                stat_add(&st, gval[((size_t)b * Tk + s) * Dv + d], 0.0, 0, 0,
                         "dvalues (unseen key)", (long)(((size_t)b * Tk + s) * Dv + d));
        }
    for (int bt = 0; bt < B * Tq; bt++)
        if (!row_any[bt])
            for (int j = 0; j < A; j++)
                stat_add(&st, gq[(size_t)bt * A + j], 0.0, 0, 0, "dqp (no visible key)",
                         (long)bt * A + j);
    stat_end(&st);

    stat_begin(&st, "additive_attn_backward accumulates (and NULL) %s", tag);
    float *pq = frand(nq, -2, 2), *pk = frand(nk, -2, 2), *pv = frand(nvh, -2, 2);
    float *pval = frand(nval, -2, 2);
    float *aq = fdup(pq, nq), *ak = fdup(pk, nk), *av = fdup(pv, nvh), *aval = fdup(pval, nval);
    be->additive_attn_backward(aq, ak, av, aval, r, qp, kp, v, values, w, B / NH, NH, Tq, Tk, A, Dv);
    accum_check(&st, "dqp", aq, pq, gq, nq);
    accum_check(&st, "dkp", ak, pk, gk, nk);
    accum_check(&st, "dv", av, pv, gv, nvh);
    accum_check(&st, "dvalues", aval, pval, gval, nval);
    /* each gradient may be NULL; the others are unchanged by that */
    memcpy(aq, pq, sizeof(float) * nq);
    be->additive_attn_backward(aq, NULL, NULL, NULL, r, qp, kp, v, values, w, B / NH, NH, Tq, Tk, A,
                               Dv);
    accum_check(&st, "dqp (others NULL)", aq, pq, gq, nq);
    memcpy(ak, pk, sizeof(float) * nk);
    be->additive_attn_backward(NULL, ak, NULL, NULL, r, qp, kp, v, values, w, B / NH, NH, Tq, Tk, A,
                               Dv);
    accum_check(&st, "dkp (others NULL)", ak, pk, gk, nk);
    memcpy(av, pv, sizeof(float) * nvh);
    be->additive_attn_backward(NULL, NULL, av, NULL, r, qp, kp, v, values, w, B / NH, NH, Tq, Tk, A,
                               Dv);
    accum_check(&st, "dv (others NULL)", av, pv, gv, nvh);
    memcpy(aval, pval, sizeof(float) * nval);
    be->additive_attn_backward(NULL, NULL, NULL, aval, r, qp, kp, v, values, w, B / NH, NH, Tq, Tk, A,
                               Dv);
    accum_check(&st, "dvalues (others NULL)", aval, pval, gval, nval);
    be->additive_attn_backward(NULL, NULL, NULL, NULL, r, qp, kp, v, values, w, B / NH, NH, Tq, Tk, A,
                               Dv); /* all NULL: a no-op that must not crash */
    stat_end(&st);

    free(qp), free(kp), free(v), free(values), free(out), free(w), free(ra), free(ro), free(r);
    free(gq), free(gk), free(gv), free(gval), free(ctx.out), free(ctx.w), free(pq), free(pk);
    free(pv), free(pval), free(aq), free(ak), free(av), free(aval), free(row_any);
    free(key_seen);
}

/* A shape above the ops' OpenMP threshold (B·Tq·Tk·A > 16384), so the parallel code runs:
 * forward and backward against the double-precision reference (finite differences would be
 * slow here), and the backward run twice must be bit-identical (dv[NH,A] is reduced in the
 * order of the rows, not by atomics). Backward tolerance: float32 sums of up to B·Tq·Tk terms,
 *   |got − ref| ≤ 1e-4 + 1e-4·|ref|. */
static void test_additive_attn_parallel(int NH, int causal) {
    enum { B = 16, Tq = 8, Tk = 9, A = 32, Dv = 12 };
    int key_len[B];
    for (int b = 0; b < B; b++) key_len[b] = (b / NH * 5) % (Tk + 1); /* 0 .. Tk, per entry */
    size_t nq = (size_t)B * Tq * A, nk = (size_t)B * Tk * A, nval = (size_t)B * Tk * Dv;
    size_t no = (size_t)B * Tq * Dv, nw = (size_t)B * Tq * Tk, nvh = (size_t)NH * A;
    float *qp = frand(nq, -1.5f, 1.5f), *kp = frand(nk, -1.5f, 1.5f), *v = frand(nvh, -1, 1);
    float *values = frand(nval, -1, 1), *out = fnew(no), *w = fnew(nw), *r = frand(no, -1, 1);
    double *ra = malloc(sizeof(double) * nw), *ro = malloc(sizeof(double) * no);
    double *rq = malloc(sizeof(double) * nq), *rk = malloc(sizeof(double) * nk);
    double *rv = malloc(sizeof(double) * nvh), *rval = malloc(sizeof(double) * nval);
    add_attn_ref(ra, ro, rq, rk, rv, rval, qp, kp, v, values, key_len, causal, r, B, NH, Tq, Tk,
                 A, Dv);
    Stat st;
    stat_begin(&st, "additive_attn B%d NH%d Tq%d Tk%d A%d Dv%d%s (OpenMP) vs ref", B, NH, Tq, Tk,
               A, Dv, causal ? " causal" : "");
    be->additive_attn_forward(out, w, qp, kp, v, values, batch_lens(key_len, B, NH), causal, B / NH, NH, Tq, Tk, A, Dv);
    for (size_t i = 0; i < nw; i++) stat_add(&st, w[i], ra[i], FWD_ATOL, FWD_RTOL, "w", (long)i);
    for (size_t i = 0; i < no; i++)
        stat_add(&st, out[i], ro[i], FWD_ATOL, FWD_RTOL, "out", (long)i);
    float *gq = fnew(nq), *gk = fnew(nk), *gv = fnew(nvh), *gval = fnew(nval);
    be->additive_attn_backward(gq, gk, gv, gval, r, qp, kp, v, values, w, B / NH, NH, Tq, Tk, A, Dv);
    for (size_t i = 0; i < nq; i++) stat_add(&st, gq[i], rq[i], 1e-4, 1e-4, "dqp", (long)i);
    for (size_t i = 0; i < nk; i++) stat_add(&st, gk[i], rk[i], 1e-4, 1e-4, "dkp", (long)i);
    for (size_t i = 0; i < nvh; i++) stat_add(&st, gv[i], rv[i], 1e-4, 1e-4, "dv", (long)i);
    for (size_t i = 0; i < nval; i++)
        stat_add(&st, gval[i], rval[i], 1e-4, 1e-4, "dvalues", (long)i);
    float *gq2 = fnew(nq), *gk2 = fnew(nk), *gv2 = fnew(nvh), *gval2 = fnew(nval);
    be->additive_attn_backward(gq2, gk2, gv2, gval2, r, qp, kp, v, values, w, B / NH, NH, Tq, Tk, A,
                               Dv);
    stat_true(&st, memcmp(gq, gq2, sizeof(float) * nq) == 0, "dqp differs between two runs");
    stat_true(&st, memcmp(gk, gk2, sizeof(float) * nk) == 0, "dkp differs between two runs");
    stat_true(&st, memcmp(gv, gv2, sizeof(float) * nvh) == 0, "dv differs between two runs");
    stat_true(&st, memcmp(gval, gval2, sizeof(float) * nval) == 0,
              "dvalues differs between two runs");
    stat_end(&st);
    free(qp), free(kp), free(v), free(values), free(out), free(w), free(r), free(ra), free(ro);
    free(rq), free(rk), free(rv), free(rval), free(gq), free(gk), free(gv), free(gval);
    free(gq2), free(gk2), free(gv2), free(gval2);
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
    return x->grad_scale * be->xent_forward_backward(NULL, x->logits, x->targets, x->N, x->V,
                                                     x->smoothing, x->ignore_id, 0.0f);
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
    float *g0 = fnew(nv);
    double got = be->xent_forward_backward(g0, logits, targets, N, V, smoothing, IGN, grad_scale);
    stat_add(&st, got, ref, 1e-5, 1e-6, "loss (with dlogits)", 0);
    double got2 = be->xent_forward_backward(NULL, logits, targets, N, V, smoothing, IGN, 1.0f);
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
    stat_add(&st, be->xent_forward_backward(NULL, logits, only, N, V, smoothing, IGN, 1.0f), 0.0,
             0, 0, "loss, all rows ignored", 0);
    stat_end(&st);

    XentCtx ctx = {logits, targets, N, V, IGN, smoothing, grad_scale};
    stat_begin(&st, "xent dlogits vs FD (eps=%.2f, grad_scale=%.2f)", smoothing, grad_scale);
    fd_check(&st, "dlogits", logits, nv, g0, xent_loss, &ctx);
    stat_end(&st);

    stat_begin(&st, "xent dlogits overwrites (eps=%.2f)", smoothing);
    float *pre = frand(nv, -2, 2), *acc = fdup(pre, nv);
    be->xent_forward_backward(acc, logits, targets, N, V, smoothing, IGN, grad_scale);
    for (size_t i = 0; i < nv; i++) stat_add(&st, acc[i], g0[i], 0, 0, "dlogits", (long)i);
    for (int n = 0; n < N; n++)
        if (targets[n] == IGN)
            for (int v = 0; v < V; v++)
                stat_add(&st, acc[n * V + v], 0.0, 0, 0, "ignored row zero", n * V + v);
    stat_end(&st);
    free(logits), free(g0), free(pre), free(acc);
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
    enum { N = 6, V = 5 };
    const float x[N][V] = {
        {0.1f, 3.0f, 3.0f, 2.0f, -1.0f},          /* tie: first (1) */
        {-5.0f, -1.0f, -1.0f, -3.0f, -2.0f},      /* negative tie: 1 */
        {-INFINITY, -INFINITY, 2.0f, 2.0f, 1.0f}, /* 2 */
        {7.0f, 7.0f, 7.0f, 7.0f, 7.0f},           /* all equal: 0 */
        {0.0f, 1.0f, 2.0f, 3.0f, 4.0f},           /* last: 4 */
        {9.0f, 1.0f, 2.0f, 8.99f, 4.0f},          /* first: 0 */
    };
    const int want[N] = {1, 1, 2, 0, 4, 0};
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

int main(void) {
    be = backend_cpu();
    rng_seed(&rng, 20240611, 3);
    test_memory();
    test_matmul();
    test_bias();
    test_axpy_scale();
    test_sumsq_all_finite();
    test_concat2();
    test_transpose01();
    test_tanh();
    test_dropout();
    test_layernorm();
    test_layernorm_parallel();
    test_relu();
    test_permute0213(2, 3, 4, 5);
    test_permute0213(3, 4, 1, 6); /* D1 = 1 */
    test_permute0213(3, 33, 8, 96); /* above the OpenMP threshold (A·D0·D1·C > 65536) */
    test_write_step();
    test_embedding();
    test_lstm(1);
    test_lstm(0);
    test_gru(1);
    test_gru(0);
    {
        /* padding (b=2 fully masked by key_len 0), non-causal, scale 1/√D */
        const int len[3] = {5, 3, 0};
        test_attn(3, 4, 5, 6, 7, len, 0, 1.0f / sqrtf(6.0f));
        /* padding + causal (key s > t + Tk − Tq masked) */
        test_attn(3, 4, 5, 6, 7, len, 1, 1.0f / sqrtf(6.0f));
        /* Tq > Tk causal: query t = 0 sees no key (fully masked by causality); other scale */
        const int len2[3] = {4, 2, 3};
        test_attn(3, 5, 4, 6, 7, len2, 1, 0.8f);
    }
    {
        /* Tq ≠ Tk, causal (key s > t + Tk − Tq masked), a padded row and a row with key_len 0,
         * above the OpenMP threshold (B·Tq·Tk·(D+Dv) > 65536): the parallel per-row gemm path */
        const int len[5] = {25, 11, 0, 4, 18};
        test_attn(5, 20, 25, 14, 13, len, 1, 1.0f / sqrtf(14.0f));
    }
    {
        /* key_len: full, partial, 0 (zero weights and output) */
        const int len[3] = {5, 3, 0};
        test_additive_attn(3, 1, 4, 5, 6, 7, len, 0);
        /* Tq = 1 (one decoder step, as the RNN calls it), other lengths */
        const int len2[3] = {2, 5, 1};
        test_additive_attn(3, 1, 1, 5, 6, 7, len2, 0);
        /* heads: 3 batch entries × NH 3 rows, row r uses v[r mod NH]; causal with Tq < Tk
         * (key s visible iff s ≤ t + 1), full, partial and key_len 0 rows */
        const int len3[9] = {5, 5, 5, 2, 2, 2, 0, 0, 0};
        test_additive_attn(9, 3, 4, 5, 6, 7, len3, 1);
        /* causal with Tq > Tk: query t = 0 sees no key; NH 2 */
        const int len4[4] = {4, 4, 1, 1};
        test_additive_attn(4, 2, 5, 4, 3, 5, len4, 1);
        /* heads, not causal */
        const int len5[6] = {4, 4, 1, 1, 0, 0};
        test_additive_attn(6, 2, 3, 4, 5, 2, len5, 0);
        test_additive_attn_parallel(1, 0);
        test_additive_attn_parallel(4, 1);
    }
    test_gather_rows();
    test_gather_rows_strided();
    test_xent(0.1f, 0.5f);
    test_xent(0.0f, 1.0f);
    test_log_softmax();
    test_argmax();
    test_adam();
    return test_report("test_ops");
}
