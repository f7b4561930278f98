/* eval/significance.h — significance of BLEU differences: the paired bootstrap over test
 * sentences of two trained models (Koehn 2004, "Statistical Significance Tests for Machine
 * Translation Evaluation"), with the statistics sacreBLEU 2.x's `--paired-bs` reports; and the
 * test of two configs over their training runs (seeds) and the test sentences together, with
 * Holm's correction and the minimum detectable effect (below).
 *
 * Legend: n segments (test sentences), R resamples (sacreBLEU's default 1000).
 *
 * Resample r draws n segment indices with replacement, the SAME indices for both systems
 * (paired); each system's BLEU on it is computed from the summed per-segment statistics
 * (metrics.h, bleu_from_sum). From the R pairs (b_r, s_r) of baseline and system BLEU:
 *  - sys_mean, sys_ci (and base_mean, base_ci): the mean of the R scores and half the width of
 *    the interval between the sorted scores at ranks ⌊R/40⌋ and R − ⌊R/40⌋ − 1 (0-based):
 *    sacreBLEU's estimate_ci, "μ ± 95% CI";
 *  - delta = BLEU(system) − BLEU(baseline) on the whole test set, and [delta_lo, delta_hi] the
 *    same two ranks of the sorted differences s_r − b_r: a 95% percentile interval of the
 *    difference;
 *  - p: sacreBLEU's paired-bs p-value — with d = |delta| and x_r = |s_r − b_r| − mean_r |s_r −
 *    b_r| (the resampled differences shifted to the null hypothesis of no difference),
 *    p = (#{r : x_r > d} + 1) / (R + 1).
 * Units: BLEU in percent (0..100), like bleu_corpus.
 */
#ifndef TRAINER_EVAL_SIGNIFICANCE_H
#define TRAINER_EVAL_SIGNIFICANCE_H

#include <stdint.h>

#include "eval/metrics.h"

typedef struct {
    double base_bleu, sys_bleu;   /* on the whole test set */
    double delta;                 /* sys_bleu − base_bleu */
    double delta_lo, delta_hi;    /* 95% percentile interval of the resampled difference */
    double p;                     /* sacreBLEU's paired-bs p-value */
    double base_mean, base_ci;    /* bootstrap mean ± 95% half-width (sacreBLEU's estimate_ci) */
    double sys_mean, sys_ci;
    int resamples;
} PairedBootstrap;

/* The paired bootstrap of system against baseline over n segments (per-segment statistics
 * base[n], sys[n] of the same test set: bleu_segment_stats). idx: R·n segment indices, resample r
 * at idx[r·n .. r·n+n), or NULL to draw them from a PCG32 stream seeded with seed (rng.h: one
 * seed, one answer). CHECKs n >= 1, R >= 1 and every idx in [0, n). Allocates R doubles per
 * score series (host memory; aborts when out of memory). It answers whether these two models
 * differ on these sentences, not whether their configs do (seed_test). */
PairedBootstrap paired_bootstrap(const BleuStats *base, const BleuStats *sys, long n,
                                 int resamples, const long *idx, uint64_t seed);

/* ---- Configs compared over training runs (the unit of replication is the run) ----
 *
 * Legend: n test segments; R resamples; a config's seeds (runs) m (baseline) and k (system);
 * x_i the corpus BLEU of run i on the whole test set (percent); G the configs of a table.
 *
 * Config A (k runs) against baseline B (m runs) on one test set: Δ = mean_A x − mean_B x. Its
 * variance has two parts.
 *  - Seeds: each run's score varies with its seed around its config's mean, with a variance s²
 *    pooled over the table's configs (a one-way ANOVA's within-group mean square, df = Σ_g (m_g −
 *    1)): V_seed = s² (1/k + 1/m). Pooling gives a config with few seeds the table's degrees of
 *    freedom, and assumes one seed variance for every config. A config that is much more (or
 *    less) stable across seeds than the rest breaks that: pooled, it would widen every other
 *    config's test and narrow its own. So, while three configs or more with two runs remain
 *    pooled, each one's sample variance s_g² (d_g = m_g − 1 df) is tested against the pool of
 *    the others' by a two-sided F test, Holm-adjusted over them, and the config with the
 *    smallest adjusted p, where that is below SEED_VAR_ALPHA, is set apart before the rest are
 *    tested again. A config set apart takes s_g² with d_g df on its side of a comparison; s²
 *    and its df are pooled over the rest. Then V_seed = v_A/k + v_B/m with each side's variance v,
 *    and its df is the shared df where both sides take the same estimate, else
 *    Welch–Satterthwaite's (Welch 1947). (Dror et al. 2018 §4 on the choice of test;
 *    Bouthillier et al. 2021 on seed variance in ML benchmarks.)
 *  - Test sentences: the expected difference of the two configs on this test set is itself a
 *    draw from the population of sentences (Koehn 2004). The paired bootstrap over sentences
 *    (the same indices for every run) gives the variance V_boot of the resampled
 *    seed-averaged difference; it also holds each run's own sentence noise, which s² already
 *    counts (a run's score on a fixed test set is its model plus that noise). So
 *    V_test = max(0, V_boot − w (1/k + 1/m)), where w is the bootstrap variance of a run's
 *    deviation from its config's seed mean, pooled over the table (Σ_g Σ_i Var_r(x_ir − x̄_gr) /
 *    Σ_g (m_g − 1)).
 * Then se = √(V_seed + V_test), t = Δ/se, df by Welch–Satterthwaite with V_test taken as known
 * (df = df_seed (V_seed + V_test)² / V_seed²), p two-sided from Student's t, and Δ's 95%
 * interval Δ ± t_{0.975,df} se. The only Monte Carlo part is V_boot: its standard error from the
 * resampled differences' fourth moment, √((μ₄ − V_boot²)/R), carried into p as p_mc, half the
 * spread of p over V_test ± that error. With no seed variance in the table (one run per
 * config) the test has no df: p is NAN, and p_sentences, the normal test of Δ against V_boot
 * alone, says only whether these trained models differ on these sentences (Koehn 2004), not
 * their configs.
 * Clark et al. 2011 (optimizer instability: replicate and report the variance over runs),
 * Dror et al. 2018 (the hitchhiker's guide to significance testing in NLP), Bouthillier et al.
 * 2021 (accounting for variance in machine learning benchmarks), Holm 1979. */

/* Every run's BLEU on R resamples of one test set, all runs on the same indices. */
typedef struct {
    int nruns, resamples;
    long n;
    double *full;     /* [nruns]: run i's BLEU on the whole test set */
    double *boot;     /* [nruns * resamples]: run i's BLEU on resample r at boot[i·R + r] */
} SeedBoot;

/* Fills b from the per-segment statistics stats[i][0..n) of each run i < nruns (the same n
 * segments in every run): R resamples of n segments drawn with replacement from a PCG32 stream
 * seeded with seed (one seed, one answer). CHECKs nruns, n, R >= 1. Host memory, freed by
 * seed_boot_free. */
void seed_boot_init(SeedBoot *b, const BleuStats *const *stats, int nruns, long n,
                    int resamples, uint64_t seed);
void seed_boot_free(SeedBoot *b);

/* The level of the F test that sets a config's seed variance apart from the pool (above). */
#define SEED_VAR_ALPHA 0.05

/* The table's seed variances (above), from its configs: group g's runs are the indices
 * runs[first[g] .. first[g] + size[g]) into b. Host memory, freed by seed_pool_free. */
typedef struct {
    double seed_var;  /* s², BLEU², pooled over the configs not set apart; NAN when seed_df is 0 */
    int seed_df;      /* Σ_g (m_g − 1) over the same configs */
    double noise_var; /* w, BLEU², over every config; NAN without two runs in a config */
    int ngroups;
    int *apart;       /* [b->nruns]: the group whose own variance run i's comparisons take, or −1 */
    double *group_var;/* [ngroups]: s_g² (NAN under two runs) */
    int *group_df;    /* [ngroups]: d_g */
    double *group_p;  /* [ngroups]: the F test's Holm-adjusted p at the last step that tested
                       * it (NAN where none did); below SEED_VAR_ALPHA: set apart */
} SeedPool;

SeedPool seed_pool(const SeedBoot *b, const int *runs, const int *first, const int *size,
                   int ngroups);
void seed_pool_free(SeedPool *p);

/* The two-sided p of a variance ratio f = s₁²/s₂² with d1 and d2 degrees of freedom under equal
 * variances: 2 min(P(F >= f), P(F <= f)), at most 1, from Snedecor's F(d1, d2) through the
 * regularised incomplete beta function. NAN for f < 0 or df <= 0. */
double f_test_p2(double f, double d1, double d2);

typedef struct {
    int nb, ns;                  /* runs of the baseline and of the system */
    double base_bleu, sys_bleu;  /* the seeds' means on the whole test set */
    double delta;                /* sys_bleu − base_bleu */
    double var_seed, var_test;   /* BLEU² (above) */
    double var_boot, var_boot_mc;/* V_boot and its Monte Carlo standard error */
    double se, df, t;
    double p;                    /* two-sided; NAN without seed variance */
    double p_mc;                 /* p's Monte Carlo standard error */
    double lo, hi;               /* Δ's 95% interval; NAN without seed variance */
    double p_sentences;          /* the sentences alone (two-sided normal test on V_boot) */
} SeedTest;

/* System runs sys[0..ns) against baseline runs base[0..nb) (indices into b), each a config's
 * runs (or part of one), with the table's pool. CHECKs ns, nb >= 1 and the indices. No other errors. */
SeedTest seed_test(const SeedBoot *b, const SeedPool *pool, const int *base, int nb,
                   const int *sys, int ns);

/* Holm's step-down adjustment (Holm 1979) of m p-values: adj[i] = max over the p's no larger
 * than p[i] in ascending order j = 1.. of min(1, (m − j + 1) p_(j)). NAN p's are left out (their
 * adj is NAN) and do not count in m. adj may alias p. */
void holm_adjust(const double *p, int m, double *adj);

/* The minimum detectable effect: the |Δ| a two-sided test at level alpha detects with
 * probability power between configs of k and m runs, given the pool and a test-set variance
 * var_test (BLEU²): (t_{1−α/2,df} + t_{power,df}) √(s² (1/k + 1/m) + var_test), the
 * normal-approximation to the noncentral t (Cohen 1988). NAN without seed variance. */
double seed_test_mde(const SeedPool *pool, int k, int m, double var_test, double alpha,
                     double power);

/* Student's t: the two-sided tail probability P(|T| >= |t|) with df > 0 degrees of freedom
 * (real df allowed), through the regularised incomplete beta function I_{df/(df+t²)}(df/2, 1/2);
 * and its quantile (0 < q < 1). Accurate to about 1e-10. */
double student_t_p2(double t, double df);
double student_t_quantile(double q, double df);

#endif
