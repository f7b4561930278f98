/* optest.h — what the op test shares (tests/ops/test_backend_ops.c and its attention cases):
 * tolerances, random float buffers from one seeded PCG32, and groups of comparisons reported one
 * line each (a group fails through EXPECT when any value is out of tolerance). Finite
 * differences come from fd_compare (testutil.h). */
#ifndef TRAINER_OPTEST_H
#define TRAINER_OPTEST_H
#include <stddef.h>

#include "core/rng.h"
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

/* The generator behind frand; each test program seeds it once in main. */
extern Rng optest_rng;

/* n floats: zeroed (fnew, test_calloc), uniform in [lo, hi) (frand), a copy of x (fdup); exit 2
 * when out of memory. */
float *fnew(size_t n);
float *frand(size_t n, float lo, float hi);
float *fdup(const float *x, size_t n);
/* Σ r[i]·x[i] in double: the loss L = Σ r ⊙ out whose gradient dout is r. */
double dot_rd(const float *r, const float *x, size_t n);

/* One group of comparisons, reported in one line. */
typedef struct {
    char name[128];
    long n;
    int bad;
    double max_abs, max_rel;
} Stat;

void stat_begin(Stat *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Records got vs ref; fails when |got − ref| > atol + rtol·|ref| (NaN always fails). */
void stat_add(Stat *s, double got, double ref, double atol, double rtol, const char *what,
              long idx);
/* A boolean property inside a group (counted as one value, error 0 or 1). */
void stat_true(Stat *s, int ok, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Prints the group's line and EXPECTs that nothing in it failed. */
void stat_end(Stat *s);
/* Central finite differences of f with respect to every element of x (which f reads), compared
 * with analytic[] (fd_compare with ε = FD_EPS, FD_ATOL, FD_RTOL), recorded in st. */
void fd_check(Stat *st, const char *what, float *x, size_t n, const float *analytic, FdLoss f,
              void *ctx);
/* A boolean value in st: got[n] equals ref[n] bit for bit (memcmp). */
void stat_same(Stat *st, const char *what, const float *got, const float *ref, size_t n);
/* after must equal pre + g (the gradient computed into a zeroed buffer):
 * |after − (pre + g)| ≤ tol·(1 + |pre| + |g|); accum_check uses tol = ACC_TOL. */
void accum_check_tol(Stat *st, const char *what, const float *after, const float *pre,
                     const float *g, size_t n, double tol);
void accum_check(Stat *st, const char *what, const float *after, const float *pre,
                 const float *g, size_t n);

#endif
