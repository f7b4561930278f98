/* significance.c — paired bootstrap resampling for corpus BLEU. Definitions and sources:
 * significance.h. */
#include "eval/significance.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "core/rng.h"

static void stats_add(BleuStats *sum, const BleuStats *s) {
    for (int o = 0; o < 4; o++) sum->correct[o] += s->correct[o], sum->total[o] += s->total[o];
    sum->hyp_len += s->hyp_len, sum->ref_len += s->ref_len;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* sorted copy's values at ranks ⌊R/40⌋ and R − ⌊R/40⌋ − 1 (sacreBLEU's estimate_ci) */
static void ci_ranks(const double *v, int R, double *lo, double *hi) {
    double *s = xmalloc(sizeof *s * (size_t)R);
    memcpy(s, v, sizeof *s * (size_t)R);
    qsort(s, (size_t)R, sizeof *s, cmp_double);
    int l = R / 40;
    *lo = s[l];
    *hi = s[R - l - 1];
    free(s);
}

static void mean_ci(const double *v, int R, double *mean, double *ci) {
    double m = 0, lo, hi;
    for (int r = 0; r < R; r++) m += v[r];
    ci_ranks(v, R, &lo, &hi);
    *mean = m / R;
    *ci = 0.5 * (hi - lo);
}

/* The mean over k seeds of each seed's corpus BLEU from its summed statistics sum[0..k). */
static double mean_bleu(const BleuStats *sum, int k) {
    double m = 0;
    for (int i = 0; i < k; i++) m += bleu_from_sum(&sum[i]).score;
    return m / k;
}

PairedBootstrap paired_bootstrap_seeds(const BleuStats *const *base, int nb,
                                       const BleuStats *const *sys, int ns, long n,
                                       int resamples, const long *idx, uint64_t seed) {
    CHECK(n >= 1 && resamples >= 1 && base && sys && nb >= 1 && ns >= 1,
          "paired_bootstrap: needs at least one segment, one resample and one seed a side");
    CHECK(n <= (long)UINT32_MAX, "paired_bootstrap: more segments than the sampler draws from");
    int R = resamples, k = nb + ns;
    PairedBootstrap out;
    memset(&out, 0, sizeof out);
    out.resamples = R;
    /* sums[0..nb) the baseline's seeds, sums[nb..k) the system's */
    BleuStats *sums = xcalloc((size_t)k, sizeof *sums);
    for (int i = 0; i < k; i++) {
        const BleuStats *seg = i < nb ? base[i] : sys[i - nb];
        for (long j = 0; j < n; j++) stats_add(&sums[i], &seg[j]);
    }
    out.base_bleu = mean_bleu(sums, nb);
    out.sys_bleu = mean_bleu(sums + nb, ns);
    out.delta = out.sys_bleu - out.base_bleu;

    double *b = xmalloc(sizeof *b * (size_t)R), *s = xmalloc(sizeof *s * (size_t)R);
    double *d = xmalloc(sizeof *d * (size_t)R);
    Rng rng;
    rng_seed(&rng, seed, 0x5bd1e995u);
    for (int r = 0; r < R; r++) {
        memset(sums, 0, sizeof *sums * (size_t)k);
        for (long i = 0; i < n; i++) {
            long j = idx ? idx[(size_t)r * (size_t)n + (size_t)i]
                         : (long)rng_below(&rng, (uint32_t)n);
            CHECK(j >= 0 && j < n, "paired_bootstrap: a resample index outside the test set");
            for (int q = 0; q < k; q++) stats_add(&sums[q], &(q < nb ? base[q] : sys[q - nb])[j]);
        }
        b[r] = mean_bleu(sums, nb);
        s[r] = mean_bleu(sums + nb, ns);
        d[r] = s[r] - b[r];
    }
    mean_ci(b, R, &out.base_mean, &out.base_ci);
    mean_ci(s, R, &out.sys_mean, &out.sys_ci);
    ci_ranks(d, R, &out.delta_lo, &out.delta_hi);

    /* p: the resampled |differences| shifted to mean 0 (no difference), against the observed */
    double mabs = 0, obs = fabs(out.delta);
    for (int r = 0; r < R; r++) mabs += fabs(d[r]);
    mabs /= R;
    long above = 0;
    for (int r = 0; r < R; r++) above += fabs(d[r]) - mabs > obs;
    out.p = (double)(above + 1) / (double)(R + 1);
    free(b), free(s), free(d), free(sums);
    return out;
}

PairedBootstrap paired_bootstrap(const BleuStats *base, const BleuStats *sys, long n,
                                 int resamples, const long *idx, uint64_t seed) {
    return paired_bootstrap_seeds(&base, 1, &sys, 1, n, resamples, idx, seed);
}
