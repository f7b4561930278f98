/* testutil.h — minimal test harness: a test's exit code is its verdict (docs/design.md §11).
 * EXPECT records a failure and goes on; test_main_end() returns 1 if anything failed.
 * With TEST_FAIL_FAST=1 in the environment the first failed EXPECT exits 1 at once (for a caller
 * that needs only the verdict: scripts/mutate.sh).
 * Exit 77 means "skipped" (CTest SKIP_RETURN_CODE). */
#ifndef TRAINER_TESTUTIL_H
#define TRAINER_TESTUTIL_H
#include <math.h>
#include <stddef.h>
#include <stdio.h>

#include "core/rng.h"
#include "core/tokens.h"
#include "data/batch.h"
#include "data/encoded.h"
#include "ops/params.h"

extern int test_failures;
extern int test_checks;

#define EXPECT(cond, ...)                                                      \
    do {                                                                       \
        test_checks++;                                                         \
        if (!(cond)) {                                                         \
            test_failures++;                                                   \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);    \
            fprintf(stderr, __VA_ARGS__);                                      \
            fprintf(stderr, "\n");                                             \
            test_failed_now();                                                 \
        }                                                                      \
    } while (0)

/* Called by EXPECT after a failure: exits 1 when TEST_FAIL_FAST is set to 1, else returns. */
void test_failed_now(void);

/* Prints "<name>: N checks, M failed" and returns the exit code (0 or 1). */
int test_report(const char *name);
/* A fresh empty temporary directory (mkdtemp under $TMPDIR or /tmp), in a static buffer that the
 * next call overwrites. The process that made it removes it, with everything in it, when it
 * exits, unless a check failed: then it prints "kept DIR for inspection". */
const char *test_tmpdir(void);
/* Writes bytes to path; returns 0 on success. */
int test_write_file(const char *path, const void *data, size_t n);
/* Reads a whole file (malloc'd, NUL-terminated); returns NULL on failure. */
char *test_read_file(const char *path, size_t *n);
/* Writes the string text (without its NUL) to path; when that fails it prints "FAIL: cannot
 * write PATH" and exits 1 (a test cannot go on without its input file). */
void test_write_text(const char *path, const char *text);
/* 1 when files a and b both read and hold the same bytes, else 0. */
int test_files_equal(const char *a, const char *b);
/* The entries of folder dir whose name holds ".tmp." (what an interrupted atomic write leaves:
 * NAME.tmp.PID); with unlink_them != 0 each one is also removed. Returns how many there were
 * (0 when dir cannot be opened). */
int test_count_temp_files(const char *dir, int unlink_them);
/* A copy of s that lives until the program exits: for paths a test keeps all along. The copies
 * stay reachable from a global list, so LeakSanitizer (sanitizer build) does not report them. */
const char *test_strdup(const char *s);
/* n zeroed elements of size bytes each (room for at least one), exit(2) when out of memory; the
 * caller frees. */
void *test_calloc(size_t n, size_t size);
/* n zeroed doubles (test_calloc). */
double *test_dnew(size_t n);
/* 1 in the sanitizer build (CTest sets TRAINER_SANITIZE=1; docs/robustness.md), else 0: for a
 * test that must allow for the slower program there, or that cannot run under ASan at all (it
 * then prints why and exits 77). */
int test_sanitized(void);
/* How many elements of a tensor a finite-difference check samples: n, or 8 in the sanitizer build
 * (test_sanitized), whose program is several times slower and which looks for memory errors, not
 * gradient errors: every tensor is still perturbed, so every code path still runs. */
int test_fd_samples(int n);
/* tb = the batch of B sentences the tests write time-major: src [S,B] with lengths src_len [B];
 * tgt_in, tgt_out [T,B] with PAD after each sentence's end, or both NULL for a batch without
 * targets (decoding: T = 1, BOS in, PAD out). Every TokenBatch field is laid out batch-major in
 * buffers of its own (batch_alloc, exactly this size; host memory, which the CPU backend also
 * reads as backend memory): src_mask from src_len, tgt_len = the non-PAD positions of tgt_in,
 * the rows where tgt_out is not PAD, and the counts. Free with batch_free. */
void test_token_batch(TokenBatch *tb, int B, int S, int T, const int *src, const int *src_len,
                      const int *tgt_in, const int *tgt_out);

/* ---- backend memory ---- */
/* A host copy of n floats of be's memory at p (a fresh buffer of at least one float; the caller
 * frees it). Exits as xmalloc does when out of memory. */
float *test_to_host(const Backend *be, const float *p, size_t n);
/* A host copy of ps's whole gradient buffer (ps->total floats; the caller frees it). */
float *test_grad_copy(const ParamSet *ps);
/* The normwise relative error of a against b, n floats each: max|a − b| / max|b| (the absolute
 * max|a − b| when b is all zero); a NaN in a − b gives NaN. *bmax_out, unless NULL, gets max|b|. */
double test_rel_err(const float *a, const float *b, size_t n, double *bmax_out);
/* The larger of m and x, NaN once either is NaN: a running maximum of errors that keeps a NaN
 * met anywhere (`if (!(x <= m)) m = x` loses it at the next finite x). */
static inline double test_max_nan(double m, double x) { return m != m || x != x ? NAN : (x > m ? x : m); }
/* A copy of backend be whose alloc first calls hook(caller), caller being the return address of
 * that alloc call (inside the code that allocates), and then be's own alloc. The copy and the
 * hook are kept in statics of testutil.c: one such backend per program (a second call replaces
 * the first's). No errors. */
const Backend *test_alloc_hooked(const Backend *be, void (*hook)(void *caller));
/* The contract that a training pass accumulates its gradients scaled by grad_scale (model.h,
 * rnn.h, transformer.h): before, a copy of ps's gradients after one pass from zero with
 * grad_scale 1, and ps now after a second, identical pass without zeroing with grad_scale =
 * scale, must hold (1 + scale)·before (a backward that overwrote a gradient instead of adding to
 * it leaves scale·before, one that ignored grad_scale 2·before). EXPECT per tensor:
 * max |g − (1 + scale)·before| <= 1e-5 · max(max |(1 + scale)·before|, 1e-3 · the same over the
 * whole model) (the second pass adds each term again, so the sums round in another order; a
 * tensor whose exact gradient is 0 holds only rounding residue), naming the tensor. */
void test_check_accumulated(const float *before, const ParamSet *ps, const char *path,
                            double scale);

/* ---- central finite differences (the one harness; docs/design.md §11) ----
 * For i = 0, stride, 2·stride, … < n: num_i = (L(x + ε e_i) − L(x − ε e_i)) / ((x_i + ε) −
 * (x_i − ε)), the denominator taken in float as the perturbed inputs are, L computed by loss(ctx)
 * (which reads x); x is restored. The analytic gradient analytic[i] agrees when
 * |analytic − num| <= atol + rtol·|num| (NaN never agrees). An element that disagrees is measured
 * again with each nonzero retry_eps[] and agrees if any of those does (a kink or a near-tie
 * within ±ε spoils one step size; a wrong gradient spoils all). The first 6 elements that
 * disagree are printed to stderr as "<what>[i]: analytic …, numeric …". */
typedef double (*FdLoss)(void *ctx);
typedef struct {
    float eps;          /* step ε */
    double atol, rtol;  /* tolerance, as above */
    double rel_floor;   /* max_rel counts elements with |num| >= rel_floor only */
    float retry_eps[2]; /* other step sizes for a disagreeing element (0 = none) */
} FdOptions;
typedef struct {
    long n;                  /* elements compared */
    long bad;                /* elements that disagree (after the retries) */
    long retried;            /* elements measured again */
    double max_abs, max_rel; /* worst |analytic − num| and |analytic − num| / |num| at ε */
    double diff2, num2;      /* Σ (analytic − num)² and Σ num² at ε: a normwise error
                              * √diff2 / √num2 sees a tensor-wide error that a floor hides */
} FdResult;
FdResult fd_compare(const char *what, float *x, size_t n, size_t stride, const float *analytic,
                    FdLoss loss, void *ctx, const FdOptions *opt);
/* Two gradients of one model computed two ways (the same mathematics, sums in another order):
 * the number of i < n with |a[i] − ref[i]| > atol + rtol·|ref[i]| (NaN counts), and the largest
 * |a[i] − ref[i]| in *worst. */
long test_grad_mismatches(const float *a, const float *ref, size_t n, double atol, double rtol,
                          double *worst);
/* A random corpus for model tests: n pairs of 1..maxlen token ids a side (each length uniform),
 * ids uniform in 4..V-1 (above the special tokens), drawn from rng in pair order (source length,
 * target length, source ids, target ids). Fills e's n, offsets and ids (xmalloc'ed; free with
 * encoded_free). No errors. */
void test_random_encoded(Encoded *e, Rng *rng, long n, int maxlen, int V);
/* A random corpus and one epoch of batches over it: c->e from test_random_encoded(n, maxlen, V),
 * c->keep[0..c->nkeep) the pairs batch_filter keeps at maxlen, c->plan batch_plan's batches of at
 * most budget tokens, rng drawn for the corpus first and then the plan's shuffle. Returns 0, or 1
 * after a failed EXPECT naming batch_plan's error. Free with test_random_corpus_free. */
typedef struct {
    Encoded e;
    long *keep, nkeep;
    BatchPlan plan;
} TestCorpus;
int test_random_corpus(TestCorpus *c, Rng *rng, long n, int maxlen, int V, int budget);
void test_random_corpus_free(TestCorpus *c);
/* Time-major token ids of B sentences, T positions: for sentence b, ids[t·B + b] is drawn from
 * rng (uniform in 4..V-1, above the special tokens) for t < len[b] and TOKEN_PAD after; draws in
 * (t, b) order. No errors. */
void test_random_src(int *ids, int T, int B, const int *len, int V, Rng *rng);
/* Decoder input and output of B targets, time-major, T positions, target b being len[b]
 * positions long: tin[0] = TOKEN_BOS, tin[t] for 0 < t < len[b] drawn as in test_random_src,
 * TOKEN_PAD after; tout[t] = tin[t + 1] for t + 1 < len[b], TOKEN_EOS at t = len[b] − 1,
 * TOKEN_PAD after. No errors. */
void test_random_tgt(int *tin, int *tout, int T, int B, const int *len, int V, Rng *rng);
#endif
