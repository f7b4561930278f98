/* test_flash.c — the CPU flash attention ops (backend_cpu()->flash_attn_forward/backward,
 * src/ops/cpu/flash.c; semantics in src/ops/ops.h) against the materialised attention of the
 * same table (attn_forward/attn_backward), which DESIGN.md §9 says flash must equal exactly in
 * mathematics, and against double-precision references (DESIGN.md §3, §8, §9).
 *
 * Both take the same layout [B, NH, T, ·] and the same key_len[B].
 *
 * Groups:
 *  - forward vs attn_forward (out), and lse vs a log-sum-exp in double; rows with no visible key
 *    must have out exactly 0 and lse exactly −∞;
 *  - backward vs attn_backward (dq, dk, dv) with L = Σ r ⊙ out (dout = r), all finite;
 *  - the accumulate convention (gradients pre-filled) and NULL gradient pointers (each gradient
 *    alone must be bit-identical to the one computed with all three, all NULL is a no-op);
 *  - backward vs central finite differences of the flash forward on small cases (one crossing a
 *    key tile boundary);
 *  - bit-identical results with 1, 2 and 3 OpenMP threads (DESIGN.md §8).
 * Shapes cover padding (key_len full, partial and 0), causal on and off, Tq ≠ Tk (both signs of
 * Tk − Tq, also causal, where early queries see no key), lengths 1, 63, 64, 65, 130, 200 (not
 * multiples of the 64-key tile) and D ≠ Dv. Inputs come from PCG32 (src/rng.h) with a fixed seed.
 * One line per check group is printed; the exit code is the verdict. */
#include <math.h>
#include <omp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"
#include "core/rng.h"
#include "testutil.h"

/* Tolerances.
 * Flash vs materialised (both float32, summed in different orders), and lse vs double:
 *   |flash − ref| ≤ CMP_TOL·(1 + |ref|).
 * Accumulate: the op adds tile by tile into the pre-filled buffer, so up to one rounding per
 *   visited tile row: |after − (prefill + grad)| ≤ ACC_TOL·(1 + |prefill| + |grad|).
 * Backward vs central finite differences of the float32 forward (ε = 1e-3, loss in double):
 *   |analytic − numeric| ≤ FD_ATOL + FD_RTOL·|numeric|. */
#define CMP_TOL 1e-5
#define ACC_TOL 1e-5
#define FD_EPS 1e-3f
#define FD_ATOL 1e-3
#define FD_RTOL 1e-2

static const Backend *be;
static Rng rng;

/* ------------------------------------------------------------------------------------------ */
/* helpers (as in test_ops.c)                                                                  */

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
static float *ffill(size_t n, float val) {
    float *p = fnew(n);
    for (size_t i = 0; i < n; i++) p[i] = val;
    return p;
}
static double dot_rd(const float *r, const float *x, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++) s += (double)r[i] * (double)x[i];
    return s;
}

typedef struct {
    char name[120];
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
    printf("%-72s %7ld values  max abs %.2e  max rel %.2e  %s\n", s->name, s->n, s->max_abs,
           s->max_rel, s->bad ? "FAIL" : "ok");
    EXPECT(s->bad == 0, "%s: %d of %ld values out of tolerance", s->name, s->bad, s->n);
}

/* got vs ref elementwise with |got − ref| ≤ CMP_TOL·(1 + |ref|). */
static void cmp_arrays(Stat *st, const char *what, const float *got, const float *ref, size_t n) {
    for (size_t i = 0; i < n; i++) stat_add(st, got[i], ref[i], CMP_TOL, CMP_TOL, what, (long)i);
}
/* got must equal ref bit for bit (memcmp). */
static void same_bits(Stat *st, const char *what, const float *got, const float *ref, size_t n) {
    stat_true(st, memcmp(got, ref, sizeof(float) * n) == 0, "%s differs in some bit", what);
}
static int all_finite(const float *x, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i])) return 0;
    return 1;
}

/* after must equal pre + g (the gradient computed into a zeroed buffer). */
static void accum_check(Stat *st, const char *what, const float *after, const float *pre,
                        const float *g, size_t n) {
    for (size_t i = 0; i < n; i++) {
        double ref = (double)pre[i] + (double)g[i];
        stat_add(st, after[i], ref, ACC_TOL * (1 + fabs(pre[i]) + fabs(g[i])), 0, what, (long)i);
    }
}

static int visible(int t, int s, int len, int causal, int Tq, int Tk) {
    if (s >= len || s >= Tk) return 0;
    if (causal && s > t + (Tk - Tq)) return 0;
    return 1;
}

/* ------------------------------------------------------------------------------------------ */
/* one problem: inputs, flash results and materialised results                                */

typedef struct {
    int B, NH, Tq, Tk, D, Dv, causal;
    float scale;
    const int *key_len; /* [B] */
    float *q, *k, *v, *r; /* r: dout [B,NH,Tq,Dv] */
    float *work;          /* the ops' workspace: flash_attn_workspace, attn_workspace floats */
    size_t nq, nk, nv, no, nl, nw;
} Prob;

/* (Re)allocates the ops' workspace for the current OpenMP thread count. */
static void prob_work(Prob *p) {
    size_t wf = be->flash_attn_workspace(p->B, p->NH, p->Tq, p->Tk, p->D, p->Dv);
    size_t wa = be->attn_workspace(p->B, p->NH, p->Tq, p->Tk, p->D, p->Dv);
    free(p->work);
    p->work = malloc(sizeof(float) * ((wf > wa ? wf : wa) + 1));
}

static void prob_init(Prob *p, int B, int NH, int Tq, int Tk, int D, int Dv, const int *key_len,
                      int causal, float scale) {
    p->B = B, p->NH = NH, p->Tq = Tq, p->Tk = Tk, p->D = D, p->Dv = Dv, p->causal = causal;
    p->scale = scale;
    p->key_len = key_len;
    p->work = NULL;
    prob_work(p);
    size_t bh = (size_t)B * NH;
    p->nq = bh * Tq * D, p->nk = bh * Tk * D, p->nv = bh * Tk * Dv, p->no = bh * Tq * Dv;
    p->nl = bh * Tq, p->nw = bh * Tq * Tk;
    p->q = frand(p->nq, -1.5f, 1.5f);
    p->k = frand(p->nk, -1.5f, 1.5f);
    p->v = frand(p->nv, -1, 1);
    p->r = frand(p->no, -1, 1);
}
static void prob_free(Prob *p) {
    free(p->work), free(p->q), free(p->k), free(p->v), free(p->r);
}
static void flash_fwd(const Prob *p, float *out, float *lse) {
    be->flash_attn_forward(out, lse, p->q, p->k, p->v, p->key_len, p->scale, p->causal, p->B,
                           p->NH, p->Tq, p->Tk, p->D, p->Dv, p->work);
}
static void flash_bwd(const Prob *p, float *dq, float *dk, float *dv, const float *out,
                      const float *lse) {
    be->flash_attn_backward(dq, dk, dv, p->r, p->q, p->k, p->v, out, lse, p->key_len, p->scale,
                            p->causal, p->B, p->NH, p->Tq, p->Tk, p->D, p->Dv, p->work);
}

/* ------------------------------------------------------------------------------------------ */
/* flash vs materialised attention, lse vs double, accumulate and NULL                        */

static void test_vs_materialised(int B, int NH, int Tq, int Tk, int D, int Dv, const int *key_len,
                                 int causal, float scale) {
    Prob p;
    prob_init(&p, B, NH, Tq, Tk, D, Dv, key_len, causal, scale);
    char tag[96], lens[40] = "";
    for (int b = 0; b < B; b++)
        snprintf(lens + strlen(lens), sizeof lens - strlen(lens), "%s%d", b ? "," : "",
                 key_len[b]);
    snprintf(tag, sizeof tag, "B%d NH%d Tq%d Tk%d D%d Dv%d causal=%d len=%s", B, NH, Tq, Tk, D,
             Dv, causal, lens);

    /* forward; garbage in the outputs: the op must write every element */
    float *out = ffill(p.no, 123.0f), *lse = ffill(p.nl, 123.0f);
    float *mout = fnew(p.no), *mw = fnew(p.nw);
    flash_fwd(&p, out, lse);
    be->attn_forward(mout, mw, p.q, p.k, p.v, p.key_len, scale, causal, B, NH, Tq, Tk, D, Dv);
    Stat st;
    stat_begin(&st, "forward vs attn_forward, lse vs double  %s", tag);
    int empty_rows = 0;
    for (int bh = 0; bh < B * NH; bh++) {
        int len = key_len[bh / NH];
        for (int t = 0; t < Tq; t++) {
            size_t row = (size_t)bh * Tq + t;
            double mx = -INFINITY, z = 0;
            for (int s = 0; s < Tk; s++) {
                if (!visible(t, s, len, causal, Tq, Tk)) continue;
                double e = 0;
                for (int d = 0; d < D; d++)
                    e += (double)p.q[row * D + d] * (double)p.k[((size_t)bh * Tk + s) * D + d];
                e *= scale;
                if (e > mx) {
                    z = z * exp(mx - e) + 1.0;
                    mx = e;
                } else {
                    z += exp(e - mx);
                }
            }
            if (mx == -INFINITY) { /* no visible key: out exactly 0, lse exactly −∞ */
                empty_rows++;
                stat_true(&st, lse[row] == -INFINITY, "lse[%zu] = %g for a row with no key", row,
                          lse[row]);
                int zero = 1;
                for (int d = 0; d < Dv; d++) zero &= out[row * Dv + d] == 0.0f;
                stat_true(&st, zero, "out row %zu not 0 for a row with no key", row);
            } else {
                stat_add(&st, lse[row], mx + log(z), CMP_TOL, CMP_TOL, "lse", (long)row);
                for (int d = 0; d < Dv; d++)
                    stat_add(&st, out[row * Dv + d], mout[row * Dv + d], CMP_TOL, CMP_TOL, "out",
                             (long)(row * Dv + d));
            }
        }
    }
    stat_end(&st);

    /* backward vs materialised */
    float *gq = fnew(p.nq), *gk = fnew(p.nk), *gv = fnew(p.nv);
    float *mq = fnew(p.nq), *mk = fnew(p.nk), *mv = fnew(p.nv);
    flash_bwd(&p, gq, gk, gv, out, lse);
    be->attn_backward(mq, mk, mv, p.r, p.q, p.k, p.v, mw, scale, B, NH, Tq, Tk, D, Dv, p.work);
    stat_begin(&st, "backward vs attn_backward  %s", tag);
    stat_true(&st, all_finite(gq, p.nq) && all_finite(gk, p.nk) && all_finite(gv, p.nv),
              "non-finite gradient");
    cmp_arrays(&st, "dq", gq, mq, p.nq);
    cmp_arrays(&st, "dk", gk, mk, p.nk);
    cmp_arrays(&st, "dv", gv, mv, p.nv);
    stat_end(&st);

    /* accumulate into pre-filled gradients; NULL pointers */
    stat_begin(&st, "backward accumulates, NULL gradients  %s", tag);
    float *pq = frand(p.nq, -2, 2), *pk = frand(p.nk, -2, 2), *pv = frand(p.nv, -2, 2);
    float *aq = fdup(pq, p.nq), *ak = fdup(pk, p.nk), *av = fdup(pv, p.nv);
    flash_bwd(&p, aq, ak, av, out, lse);
    accum_check(&st, "dq", aq, pq, gq, p.nq);
    accum_check(&st, "dk", ak, pk, gk, p.nk);
    accum_check(&st, "dv", av, pv, gv, p.nv);
    float *zq = fnew(p.nq), *zk = fnew(p.nk), *zv = fnew(p.nv);
    flash_bwd(&p, zq, NULL, NULL, out, lse);
    same_bits(&st, "dq (dk, dv NULL)", zq, gq, p.nq);
    flash_bwd(&p, NULL, zk, NULL, out, lse);
    same_bits(&st, "dk (dq, dv NULL)", zk, gk, p.nk);
    flash_bwd(&p, NULL, NULL, zv, out, lse);
    same_bits(&st, "dv (dq, dk NULL)", zv, gv, p.nv);
    flash_bwd(&p, NULL, NULL, NULL, out, lse); /* nothing to do; must not crash */
    stat_end(&st);
    (void)empty_rows;

    free(out), free(lse), free(mout), free(mw), free(gq), free(gk), free(gv), free(mq);
    free(mk), free(mv), free(pq), free(pk), free(pv), free(aq), free(ak), free(av), free(zq);
    free(zk), free(zv);
    prob_free(&p);
}

/* ------------------------------------------------------------------------------------------ */
/* backward vs central finite differences of the flash forward                                */

typedef struct {
    const Prob *p;
    float *out, *lse;
} FdCtx;
static double flash_loss(const FdCtx *c) {
    flash_fwd(c->p, c->out, c->lse);
    return dot_rd(c->p->r, c->out, c->p->no);
}
static void fd_check(Stat *st, const char *what, float *x, size_t n, const float *analytic,
                     const FdCtx *c) {
    for (size_t i = 0; i < n; i++) {
        float x0 = x[i], xp = x0 + FD_EPS, xm = x0 - FD_EPS;
        x[i] = xp;
        double lp = flash_loss(c);
        x[i] = xm;
        double lm = flash_loss(c);
        x[i] = x0;
        double num = (lp - lm) / ((double)xp - (double)xm);
        stat_add(st, analytic[i], num, FD_ATOL, FD_RTOL, what, (long)i);
    }
}

static void test_fd(int B, int NH, int Tq, int Tk, int D, int Dv, const int *key_len, int causal,
                    float scale) {
    Prob p;
    prob_init(&p, B, NH, Tq, Tk, D, Dv, key_len, causal, scale);
    float *out = fnew(p.no), *lse = fnew(p.nl);
    float *gq = fnew(p.nq), *gk = fnew(p.nk), *gv = fnew(p.nv);
    flash_fwd(&p, out, lse);
    flash_bwd(&p, gq, gk, gv, out, lse);
    FdCtx c = {&p, fnew(p.no), fnew(p.nl)};
    Stat st;
    stat_begin(&st, "backward vs FD  B%d NH%d Tq%d Tk%d D%d Dv%d causal=%d", B, NH, Tq, Tk, D, Dv,
               causal);
    fd_check(&st, "dq", p.q, p.nq, gq, &c);
    fd_check(&st, "dk", p.k, p.nk, gk, &c);
    fd_check(&st, "dv", p.v, p.nv, gv, &c);
    stat_end(&st);
    free(out), free(lse), free(gq), free(gk), free(gv), free(c.out), free(c.lse);
    prob_free(&p);
}

/* ------------------------------------------------------------------------------------------ */
/* determinism across thread counts                                                            */

static void test_threads(int B, int NH, int Tq, int Tk, int D, int Dv, const int *key_len,
                         int causal) {
    Prob p;
    prob_init(&p, B, NH, Tq, Tk, D, Dv, key_len, causal, 1.0f / sqrtf((float)D));
    const int nthr[3] = {1, 2, 3};
    float *out[3], *lse[3], *gq[3], *gk[3], *gv[3];
    int saved = omp_get_max_threads();
    for (int i = 0; i < 3; i++) {
        omp_set_num_threads(nthr[i]);
        prob_work(&p);
        out[i] = fnew(p.no), lse[i] = fnew(p.nl);
        gq[i] = fnew(p.nq), gk[i] = fnew(p.nk), gv[i] = fnew(p.nv);
        flash_fwd(&p, out[i], lse[i]);
        flash_bwd(&p, gq[i], gk[i], gv[i], out[i], lse[i]);
    }
    omp_set_num_threads(saved);
    Stat st;
    stat_begin(&st, "bit-identical with 1, 2, 3 threads  B%d NH%d Tq%d Tk%d causal=%d", B, NH, Tq,
               Tk, causal);
    for (int i = 1; i < 3; i++) {
        same_bits(&st, "out", out[i], out[0], p.no);
        same_bits(&st, "lse", lse[i], lse[0], p.nl);
        same_bits(&st, "dq", gq[i], gq[0], p.nq);
        same_bits(&st, "dk", gk[i], gk[0], p.nk);
        same_bits(&st, "dv", gv[i], gv[0], p.nv);
    }
    stat_end(&st);
    for (int i = 0; i < 3; i++) free(out[i]), free(lse[i]), free(gq[i]), free(gk[i]), free(gv[i]);
    prob_free(&p);
}

int main(void) {
    be = backend_cpu();
    rng_seed(&rng, 20240611, 7);
    {
        /* square, key_len full / partial / 0, causal off and on; D ≠ Dv */
        const int len[3] = {130, 77, 0};
        test_vs_materialised(3, 2, 130, 130, 16, 24, len, 0, 0.25f);
        test_vs_materialised(3, 2, 130, 130, 16, 24, len, 1, 0.25f);
    }
    {
        /* Tq ≠ Tk, non-causal; partial length 65 just past one tile */
        const int len[3] = {200, 65, 0};
        test_vs_materialised(3, 2, 63, 200, 8, 5, len, 0, 1.0f / sqrtf(8.0f));
        /* causal with Tk > Tq (offset 137: every query sees ≥ 1 key when len > 0) */
        test_vs_materialised(3, 2, 63, 200, 8, 5, len, 1, 1.0f / sqrtf(8.0f));
    }
    {
        /* causal with Tq > Tk: queries t < Tq − Tk see no key (lse = −∞) */
        const int len[2] = {130, 64};
        test_vs_materialised(2, 3, 200, 130, 12, 7, len, 1, 0.3f);
        /* a large scale: the running maximum keeps changing across tiles (rescaling) */
        test_vs_materialised(2, 3, 65, 130, 12, 7, len, 0, 2.0f);
    }
    {
        /* one query (a decoding step), causal sees every key; lengths 65, 1, 0 */
        const int len[3] = {65, 1, 0};
        test_vs_materialised(3, 2, 1, 65, 16, 8, len, 1, 0.25f);
        test_vs_materialised(3, 2, 1, 65, 16, 8, len, 0, 0.25f);
        /* one key */
        const int len1[3] = {1, 1, 0};
        test_vs_materialised(3, 1, 65, 1, 4, 3, len1, 0, 0.5f);
    }
    {
        /* finite differences: small, and one crossing the 64-key tile */
        const int len[2] = {7, 4};
        test_fd(2, 2, 5, 7, 4, 3, len, 0, 0.5f);
        test_fd(2, 2, 5, 7, 4, 3, len, 1, 0.5f);
        test_fd(2, 2, 9, 7, 4, 3, len, 1, 0.5f); /* Tq > Tk: two queries see no key */
        const int len2[1] = {70};
        test_fd(1, 2, 3, 70, 3, 2, len2, 0, 0.7f);
    }
    {
        const int len[3] = {200, 130, 0};
        test_threads(3, 2, 130, 200, 64, 40, len, 0); /* D 64: the usual head size */
        test_threads(3, 2, 200, 200, 16, 24, len, 1);
    }
    return test_report("test_flash");
}
