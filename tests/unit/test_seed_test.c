/* test_seed_test.c — the test of configs over training runs (seed_test, significance.h):
 *  1. Student's t tail and quantile against scipy.stats.t (1.17.0), to 1e-9;
 *  2. Holm's adjustment on a worked example, NAN p's left out;
 *  3. edge cases: identical runs give Δ 0 and p 1; one run a config gives no p (no seed
 *     variance) but the sentences' p;
 *  4. calibration on simulated studies with known variance components. A run's sentence j
 *     scores its n-grams right with probability σ(c + β_j + u_cj + g + ε_j − 0.8 (order − 1)):
 *     β_j the sentence's difficulty, u_cj the config's own strength on it (τ), g the run's
 *     seed (σ_g: a whole model better or worse) and ε_j the run's noise on the sentence (σ_ε);
 *     n-gram counts are binomial draws. A table has 5 configs of m seeds; each of 4 is tested
 *     against the first.
 *     - Null, the same config everywhere: over 2,000 comparisons the false positive rate at
 *       0.05 lies in [3%, 7%], while the bootstrap over sentences alone (what a report that
 *       averages seeds inside each resample tests) calls far more than 7%.
 *     - Null on the population, not on the test set (τ > 0: each config is better on some
 *       sentences and worse on others, by nothing on average): again in [3%, 7%], while a
 *       t-test over seeds alone, blind to the test set's sampling, calls more than 7%.
 *     - Null with one config four times as unstable across seeds as the rest (5 seeds): one
 *       variance pooled over the table calls that config's comparisons more than 10% and the
 *       others' under 3%; with the F test's step-down the others' lie in [3%, 7%] and the
 *       unstable config's at most 9% and 3 points under the pool's (the test misses it in
 *       about a third of the tables).
 *     - A planted difference: the power is reported and rises with the seeds (2, 3, 5, 8).
 * Every random draw is seeded: the same answer on every run. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "eval/significance.h"
#include "testutil.h"

static void t_values(void) {
    /* scipy.stats.t: ppf(0.975, df), ppf(0.8, df), 2 sf(2.5, df), 2 sf(0.3, df) */
    static const double ref[][5] = {
        {1, 12.706204736174694, 1.3763819204711738, 0.24223788318168682, 0.8144528418445154},
        {2, 4.302652729749462, 1.0606601717798214, 0.12961172022151082, 0.7924856608401776},
        {3, 3.1824463052837078, 0.9784723123633042, 0.08770664700806556, 0.783763292039919},
        {5, 2.5705818356363146, 0.9195437802408271, 0.05449009934237626, 0.7762490422632745},
        {10, 2.228138851986274, 0.8790578285505889, 0.03144684423660882, 0.7703206075657986},
        {26, 2.0555294386428735, 0.8556652333281678, 0.019057472753248116, 0.7665626315641029},
        {1000, 1.9623390808264083, 0.8419808221624288, 0.012578567801090807,
         0.7642395041672441},
    };
    for (size_t i = 0; i < sizeof ref / sizeof ref[0]; i++) {
        double df = ref[i][0];
        double got[4] = {student_t_quantile(0.975, df), student_t_quantile(0.8, df),
                         student_t_p2(2.5, df), student_t_p2(-0.3, df)};
        for (int k = 0; k < 4; k++)
            EXPECT(fabs(got[k] - ref[i][k + 1]) <= 1e-9 * fmax(1, fabs(ref[i][k + 1])),
                   "Student's t, df %g, value %d: %.15g, scipy %.15g", df, k, got[k],
                   ref[i][k + 1]);
    }
    EXPECT(fabs(student_t_quantile(0.025, 7) + student_t_quantile(0.975, 7)) < 1e-12,
           "the quantile is not odd about 0.5");
    EXPECT(student_t_p2(0, 4) == 1, "p of t = 0 is %.17g, not 1", student_t_p2(0, 4));
    /* scipy.stats.f (1.17.1): 2 min(sf(f, d1, d2), cdf(f, d1, d2)), at most 1 */
    static const double fref[][4] = {
        {3.0, 4, 40, 0.05909387338908334},   {0.2, 4, 40, 0.12623668036579994},
        {16.0, 4, 48, 4.3383674527903248e-08}, {1.0, 4, 4, 1},
        {0.05, 2, 10, 0.097068624786502467}, {2.5, 1, 1000, 0.22832503101795565},
    };
    for (size_t i = 0; i < sizeof fref / sizeof fref[0]; i++) {
        double got = f_test_p2(fref[i][0], fref[i][1], fref[i][2]);
        EXPECT(fabs(got - fref[i][3]) <= 1e-9 * fref[i][3] + 1e-15,
               "F test p of %g with (%g, %g) df: %.15g, scipy %.15g", fref[i][0], fref[i][1],
               fref[i][2], got, fref[i][3]);
    }
}

static void holm(void) {
    double p[5] = {0.01, 0.04, NAN, 0.03, 0.005}, adj[5];
    const double want[5] = {0.03, 0.06, NAN, 0.06, 0.02};
    holm_adjust(p, 5, adj);
    for (int i = 0; i < 5; i++)
        EXPECT(isnan(want[i]) ? isnan(adj[i]) : fabs(adj[i] - want[i]) < 1e-15,
               "Holm: p[%d] %.3f adjusted to %.17g, want %.3f", i, p[i], adj[i], want[i]);
    holm_adjust(p, 5, p); /* in place */
    EXPECT(fabs(p[1] - 0.06) < 1e-15 && fabs(p[4] - 0.02) < 1e-15, "Holm in place differs");
}

/* ---- simulated studies ---- */

enum { N = 200, G = 5, MAXM = 8, R = 200 };

typedef struct {
    double sigma_g, sigma_e, tau; /* seed, run-sentence noise, config-sentence strength */
    double wide;                  /* the last config's σ_g is wide·σ_g (0 or 1: the same) */
} Sim;

static double sigmoid(double x) { return 1 / (1 + exp(-x)); }

/* One run's per-sentence statistics: config effect c, its per-sentence strengths u[N], the
 * sentences' difficulty beta[N] and lengths len[N]. */
static void sim_run(BleuStats *s, const Sim *sim, double c, const double *u, const double *beta,
                    const int *len, int last, Rng *rng) {
    double g = sim->sigma_g * (last && sim->wide > 0 ? sim->wide : 1) * rng_normal(rng);
    for (int j = 0; j < N; j++) {
        double th = 0.9 + c + beta[j] + u[j] + g + sim->sigma_e * rng_normal(rng);
        memset(&s[j], 0, sizeof s[j]);
        s[j].hyp_len = s[j].ref_len = len[j];
        for (int o = 0; o < 4; o++) {
            long long tot = len[j] - o > 0 ? len[j] - o : 0, ok = 0;
            double q = sigmoid(th - 0.8 * o);
            for (long long k = 0; k < tot; k++) ok += rng_uniform(rng) < q;
            s[j].total[o] = tot, s[j].correct[o] = ok;
        }
    }
}

typedef struct {
    int n, ours, sentences, seeds_only;  /* comparisons, and those called at 0.05 by each */
    int n_last, ours_last, pooled_last;  /* the last config's comparisons: by ours, and by one
                                          * variance pooled over the table */
    int pooled;                          /* all comparisons called with the pooled variance */
    int apart, apart_last;               /* configs set apart; the last config set apart */
    double seed_sd, noise_sd, bleu;      /* sums over tables: pooled sd, w's sd, baseline BLEU */
    int tables;
} Tally;

/* tables tables of G configs × m seeds; config 0 the baseline, configs 1.. get effect delta. */
static Tally simulate(const Sim *sim, int m, double delta, int tables, uint64_t seed) {
    Tally t;
    memset(&t, 0, sizeof t);
    Rng rng;
    rng_seed(&rng, 1000, 77); /* one test set for every simulation */
    BleuStats *runs = malloc(sizeof *runs * (size_t)G * MAXM * N);
    const BleuStats *ptr[G * MAXM];
    double beta[N], u[N];
    int len[N];
    for (int j = 0; j < N; j++) len[j] = 6 + (int)rng_below(&rng, 15), beta[j] = rng_normal(&rng);
    rng_seed(&rng, seed, 78);
    for (int tb = 0; tb < tables; tb++) {
        for (int c = 0; c < G; c++) {
            for (int j = 0; j < N; j++) u[j] = sim->tau * rng_normal(&rng);
            for (int i = 0; i < m; i++) {
                BleuStats *s = runs + (size_t)(c * m + i) * N;
                sim_run(s, sim, c ? delta : 0, u, beta, len, c == G - 1, &rng);
                ptr[c * m + i] = s;
            }
        }
        SeedBoot b;
        seed_boot_init(&b, ptr, G * m, N, R, seed + (uint64_t)tb);
        int ix[G * MAXM], first[G], size[G];
        for (int i = 0; i < G * m; i++) ix[i] = i;
        for (int c = 0; c < G; c++) first[c] = c * m, size[c] = m;
        SeedPool pool = seed_pool(&b, ix, first, size, G);
        t.seed_sd += sqrt(pool.seed_var), t.noise_sd += sqrt(pool.noise_var), t.tables++;
        double anova = 0; /* the one-way ANOVA's within-group mean square */
        for (int c = 0; c < G; c++) {
            double xm = 0;
            for (int i = 0; i < m; i++) xm += b.full[c * m + i] / m;
            for (int i = 0; i < m; i++)
                anova += (b.full[c * m + i] - xm) * (b.full[c * m + i] - xm) / pool.seed_df;
        }
        for (int c = 0; c < G; c++) t.apart += pool.group_p[c] < SEED_VAR_ALPHA;
        t.apart_last += pool.group_p[G - 1] < SEED_VAR_ALPHA;
        for (int c = 1; c < G; c++) {
            SeedTest s = seed_test(&b, &pool, ix, m, ix + c * m, m);
            double p_seeds = student_t_p2(s.delta / sqrt(s.var_seed), pool.seed_df);
            double vp = anova * 2.0 / m, p_pooled = student_t_p2(
                s.delta / sqrt(vp + s.var_test), pool.seed_df * (vp + s.var_test) *
                                                     (vp + s.var_test) / (vp * vp));
            t.n++;
            t.ours += s.p < 0.05, t.sentences += s.p_sentences < 0.05, t.seeds_only += p_seeds < 0.05;
            t.pooled += p_pooled < 0.05;
            if (c == G - 1) t.n_last++, t.ours_last += s.p < 0.05, t.pooled_last += p_pooled < 0.05;
            if (c == 1) t.bleu += s.base_bleu;
        }
        seed_pool_free(&pool);
        seed_boot_free(&b);
    }
    free(runs);
    return t;
}

static void print_tally(const char *what, const Tally *t) {
    printf("  %-34s %4d comparisons: ours %5.1f%%, sentences alone %5.1f%%, seeds alone %5.1f%% "
           "(BLEU %.1f, pooled seed sd %.2f, run noise sd %.2f)\n", what, t->n,
           100.0 * t->ours / t->n, 100.0 * t->sentences / t->n, 100.0 * t->seeds_only / t->n,
           t->bleu / t->tables, t->seed_sd / t->tables, t->noise_sd / t->tables);
}

static void calibration(void) {
    printf("calibration (%d sentences, %d configs a table, %d resamples):\n", N, G, R);
    const Sim same = {0.04, 0.25, 0, 0};
    Tally a = simulate(&same, 3, 0, 500, 1);
    print_tally("null, one config, 3 seeds:", &a);
    printf("  %-34s %d configs set apart in %d tables\n", "", a.apart, a.tables);
    double fa = (double)a.ours / a.n;
    EXPECT(a.n >= 1000 && fa >= 0.03 && fa <= 0.07,
           "same config: the false positive rate %.3f over %d comparisons is outside [0.03, 0.07]",
           fa, a.n);
    EXPECT((double)a.sentences / a.n > 0.10, "the sentences-only bootstrap should call more "
           "than 10%% of same-config comparisons here (%.3f): the simulation's seed variance is "
           "too small to show anything", (double)a.sentences / a.n);

    const Sim pop = {0.04, 0.25, 0.4, 0};
    Tally b = simulate(&pop, 3, 0, 500, 2);
    print_tally("null on the population, 3 seeds:", &b);
    double fb = (double)b.ours / b.n;
    EXPECT(b.n >= 1000 && fb >= 0.03 && fb <= 0.07,
           "population null: the false positive rate %.3f over %d comparisons is outside "
           "[0.03, 0.07]", fb, b.n);
    EXPECT((double)b.seeds_only / b.n > 0.07, "a t-test over seeds alone should be too liberal "
           "when the configs differ sentence by sentence (%.3f)", (double)b.seeds_only / b.n);

    /* One config four times as unstable as the rest (a kind that diverges on some seeds): a
     * pooled variance calls that config's null differences far too often and the others' too
     * rarely; setting it apart keeps both near 5%. */
    const Sim wide = {0.04, 0.25, 0, 4};
    Tally w = simulate(&wide, 5, 0, 500, 3);
    print_tally("null, last config 4x the seed sd:", &w);
    double f_last = (double)w.ours_last / w.n_last, p_last = (double)w.pooled_last / w.n_last;
    double f_rest = (double)(w.ours - w.ours_last) / (w.n - w.n_last);
    double p_rest = (double)(w.pooled - w.pooled_last) / (w.n - w.n_last);
    printf("  %-34s the wide config %5.1f%% (pooled %5.1f%%), the others %5.1f%% (pooled %5.1f%%); "
           "the wide config set apart in %d of %d tables, another config in %d\n",
           "  false positives at 0.05:", 100 * f_last, 100 * p_last, 100 * f_rest, 100 * p_rest,
           w.apart_last, w.tables, w.apart - w.apart_last);
    EXPECT(p_last > 0.10 && p_rest < 0.03, "the pooled variance should misjudge this table (wide "
           "%.3f, others %.3f): the simulation's configs are not unequal enough", p_last, p_rest);
    /* with 5 seeds the F test misses the wide config in about a third of the tables, where it
     * is pooled: its rate falls well below the pool's, not to 5% */
    EXPECT(f_last <= p_last - 0.03 && f_last <= 0.09 && f_rest >= 0.03 && f_rest <= 0.07,
           "unequal seed variances: false positive rates %.3f (the wide config, %d comparisons; "
           "pooled %.3f) and %.3f (the others): want at most 0.09 and 0.03 under the pool's, and "
           "[0.03, 0.07]", f_last, w.n_last, p_last, f_rest);
    EXPECT(a.apart <= 0.05 * a.tables, "equal seed variances: %d configs set apart in %d "
           "tables (the F test's level is %.2f over the table)", a.apart, a.tables, SEED_VAR_ALPHA);

    static const int seeds[4] = {2, 3, 5, 8};
    double power[4];
    for (int i = 0; i < 4; i++) {
        Tally p = simulate(&same, seeds[i], -0.05, 150, 10 + (uint64_t)i);
        power[i] = (double)p.ours / p.n;
        char what[64];
        snprintf(what, sizeof what, "planted -0.05 logit, %d seeds:", seeds[i]);
        print_tally(what, &p);
    }
    printf("  power at 0.05 with 2, 3, 5, 8 seeds: %.2f %.2f %.2f %.2f\n", power[0], power[1],
           power[2], power[3]);
    for (int i = 1; i < 4; i++)
        EXPECT(power[i] >= power[i - 1], "the power fell from %d to %d seeds: %.2f to %.2f",
               seeds[i - 1], seeds[i], power[i - 1], power[i]);
    EXPECT(power[3] - power[0] >= 0.2, "the power rose only from %.2f to %.2f with 2 to 8 seeds",
           power[0], power[3]);
}

/* identical runs, and one run a config */
static void edges(void) {
    Rng rng;
    rng_seed(&rng, 3, 3);
    static BleuStats s[4][N];
    double beta[N], u[N] = {0};
    int len[N];
    for (int j = 0; j < N; j++) len[j] = 10, beta[j] = rng_normal(&rng);
    const Sim sim = {0.1, 0.3, 0, 0};
    for (int i = 0; i < 4; i++) sim_run(s[i], &sim, 0, u, beta, len, 0, &rng);
    const BleuStats *same[4] = {s[0], s[1], s[0], s[1]};
    SeedBoot b;
    seed_boot_init(&b, same, 4, N, 100, 5);
    int ix[4] = {0, 1, 2, 3}, first[2] = {0, 2}, size[2] = {2, 2};
    SeedPool pool = seed_pool(&b, ix, first, size, 2);
    SeedTest t = seed_test(&b, &pool, ix, 2, ix + 2, 2);
    seed_pool_free(&pool);
    EXPECT(t.delta == 0 && t.p == 1 && t.var_boot == 0,
           "identical runs: Δ %.17g, p %.17g, bootstrap variance %.3g", t.delta, t.p, t.var_boot);
    EXPECT(pool.seed_df == 2 && pool.seed_var > 0, "two configs of two seeds: df %d, s² %.3g",
           pool.seed_df, pool.seed_var);
    seed_boot_free(&b);

    const BleuStats *one[2] = {s[2], s[3]};
    seed_boot_init(&b, one, 2, N, 100, 5);
    int f1[2] = {0, 1}, z1[2] = {1, 1};
    pool = seed_pool(&b, ix, f1, z1, 2);
    t = seed_test(&b, &pool, ix, 1, ix + 1, 1);
    seed_pool_free(&pool);
    EXPECT(pool.seed_df == 0 && isnan(t.p) && isnan(t.lo) && t.p_sentences >= 0 &&
               t.p_sentences <= 1 && t.delta != 0,
           "one run a config: df %d, p %.3g, interval low %.3g, sentences' p %.3g, Δ %.3g",
           pool.seed_df, t.p, t.lo, t.p_sentences, t.delta);
    EXPECT(isnan(seed_test_mde(&pool, 1, 1, 0.1, 0.05, 0.8)), "an MDE without seed variance");
    seed_boot_free(&b);

    SeedPool known = {0.09, 40, 0.01, 0, NULL, NULL, NULL, NULL};
    double mde = seed_test_mde(&known, 5, 5, 0, 0.05, 0.8);
    double want = (student_t_quantile(0.975, 40) + student_t_quantile(0.8, 40)) * sqrt(0.036);
    EXPECT(fabs(mde - want) < 1e-12 && mde > 0.5 && mde < 0.6, "MDE %.6f, want %.6f", mde, want);
}

int main(void) {
    t_values();
    holm();
    edges();
    calibration();
    return test_report("test_seed_test");
}
