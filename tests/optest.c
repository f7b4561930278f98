/* optest.c — helpers of the op tests (optest.h). */
#include "optest.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

Rng optest_rng;

float *fnew(size_t n) { return test_calloc(n, sizeof(float)); }
float *frand(size_t n, float lo, float hi) {
    float *p = fnew(n);
    for (size_t i = 0; i < n; i++) p[i] = lo + (hi - lo) * rng_uniform(&optest_rng);
    return p;
}
float *fdup(const float *x, size_t n) {
    float *p = fnew(n);
    memcpy(p, x, sizeof(float) * n);
    return p;
}
double dot_rd(const float *r, const float *x, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++) s += (double)r[i] * (double)x[i];
    return s;
}


void stat_begin(Stat *s, const char *fmt, ...) {
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
void stat_add(Stat *s, double got, double ref, double atol, double rtol, const char *what,
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
void stat_true(Stat *s, int ok, const char *fmt, ...) {
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

void stat_end(Stat *s) {
    printf("%-46s %7ld values  max abs %.2e  max rel %.2e  %s\n", s->name, s->n, s->max_abs,
           s->max_rel, s->bad ? "FAIL" : "ok");
    EXPECT(s->bad == 0, "%s: %d of %ld values out of tolerance", s->name, s->bad, s->n);
}

/* Central finite differences of f with respect to every element of x (which f reads), compared
 * with analytic[] (fd_compare with ε = FD_EPS, FD_ATOL, FD_RTOL), recorded in st. x is restored
 * afterwards. */
void fd_check(Stat *st, const char *what, float *x, size_t n, const float *analytic, FdLoss f,
              void *ctx) {
    const FdOptions opt = {FD_EPS, FD_ATOL, FD_RTOL, 1e-3, {0, 0}};
    FdResult r = fd_compare(what, x, n, 1, analytic, f, ctx, &opt);
    st->n += r.n;
    st->bad += (int)r.bad;
    if (r.max_abs > st->max_abs) st->max_abs = r.max_abs;
    if (r.max_rel > st->max_rel) st->max_rel = r.max_rel;
}

/* A boolean value in st: got[n] equals ref[n] bit for bit. */
void stat_same(Stat *st, const char *what, const float *got, const float *ref, size_t n) {
    stat_true(st, memcmp(got, ref, sizeof(float) * n) == 0, "%s differs in some bit", what);
}

/* after must equal pre + g (the gradient computed into a zeroed buffer), within tol. */
void accum_check_tol(Stat *st, const char *what, const float *after, const float *pre,
                     const float *g, size_t n, double tol) {
    for (size_t i = 0; i < n; i++) {
        double ref = (double)pre[i] + (double)g[i];
        stat_add(st, after[i], ref, tol * (1 + fabs(pre[i]) + fabs(g[i])), 0, what, (long)i);
    }
}
void accum_check(Stat *st, const char *what, const float *after, const float *pre,
                 const float *g, size_t n) {
    accum_check_tol(st, what, after, pre, g, n, ACC_TOL);
}
