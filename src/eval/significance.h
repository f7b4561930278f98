/* eval/significance.h — paired bootstrap resampling for corpus BLEU (Koehn 2004, "Statistical
 * Significance Tests for Machine Translation Evaluation"), with the statistics sacreBLEU 2.x's
 * `--paired-bs` reports, so that our figures read like sacreBLEU's.
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
 * score series (host memory; aborts when out of memory). paired_bootstrap_seeds with one seed
 * a side. */
PairedBootstrap paired_bootstrap(const BleuStats *base, const BleuStats *sys, long n,
                                 int resamples, const long *idx, uint64_t seed);

/* The paired bootstrap of two configurations trained with several seeds each (Clark et al.
 * 2011, "Better Hypothesis Testing for Statistical Machine Translation: Controlling for
 * Optimizer Instability", §4, on Koehn 2004's resampling): base[i] (i < nb) and sys[j] (j < ns)
 * are the per-segment statistics of each seed's translations of the same n segments. Every
 * score above is then the mean over the seeds of each seed's corpus BLEU: base_bleu and sys_bleu
 * on the whole test set, and in resample r, drawn once for all seeds (the same indices for both
 * configurations), b_r = mean_i BLEU(base[i] on r) and s_r = mean_j BLEU(sys[j] on r); delta,
 * its interval, the means and half-widths and p follow from them as above. With nb = ns = 1 it
 * is paired_bootstrap, bit for bit. CHECKs nb, ns >= 1 and what paired_bootstrap CHECKs.
 * Allocates R doubles per series and a resample's statistics per seed (host memory). */
PairedBootstrap paired_bootstrap_seeds(const BleuStats *const *base, int nb,
                                       const BleuStats *const *sys, int ns, long n,
                                       int resamples, const long *idx, uint64_t seed);

#endif
