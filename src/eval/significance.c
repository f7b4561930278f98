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

PairedBootstrap paired_bootstrap(const BleuStats *base, const BleuStats *sys, long n,
                                 int resamples, const long *idx, uint64_t seed) {
    CHECK(n >= 1 && resamples >= 1 && base && sys,
          "paired_bootstrap: needs at least one segment and one resample");
    CHECK(n <= (long)UINT32_MAX, "paired_bootstrap: more segments than the sampler draws from");
    int R = resamples;
    PairedBootstrap out;
    memset(&out, 0, sizeof out);
    out.resamples = R;
    BleuStats sb, ss;
    memset(&sb, 0, sizeof sb), memset(&ss, 0, sizeof ss);
    for (long j = 0; j < n; j++) stats_add(&sb, &base[j]), stats_add(&ss, &sys[j]);
    out.base_bleu = bleu_from_sum(&sb).score;
    out.sys_bleu = bleu_from_sum(&ss).score;
    out.delta = out.sys_bleu - out.base_bleu;

    double *b = xmalloc(sizeof *b * (size_t)R), *s = xmalloc(sizeof *s * (size_t)R);
    double *d = xmalloc(sizeof *d * (size_t)R);
    Rng rng;
    rng_seed(&rng, seed, 0x5bd1e995u);
    for (int r = 0; r < R; r++) {
        memset(&sb, 0, sizeof sb), memset(&ss, 0, sizeof ss);
        for (long i = 0; i < n; i++) {
            long j = idx ? idx[(size_t)r * (size_t)n + (size_t)i]
                         : (long)rng_below(&rng, (uint32_t)n);
            CHECK(j >= 0 && j < n, "paired_bootstrap: a resample index outside the test set");
            stats_add(&sb, &base[j]), stats_add(&ss, &sys[j]);
        }
        b[r] = bleu_from_sum(&sb).score;
        s[r] = bleu_from_sum(&ss).score;
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
    free(b), free(s), free(d);
    return out;
}

/* ---- Student's t ---- */

/* The continued fraction of the regularised incomplete beta function I_x(a, b), evaluated by
 * the modified Lentz method; converges fast for x < (a + 1) / (a + b + 2). */
static double beta_cf(double a, double b, double x) {
    const double tiny = 1e-300;
    double c = 1, d = 1 - (a + b) * x / (a + 1);
    if (fabs(d) < tiny) d = tiny;
    d = 1 / d;
    double f = d;
    for (int m = 1; m <= 500; m++) {
        for (int half = 0; half < 2; half++) {
            double num = half == 0 ? m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m))
                                   : -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1));
            d = 1 + num * d;
            if (fabs(d) < tiny) d = tiny;
            c = 1 + num / c;
            if (fabs(c) < tiny) c = tiny;
            d = 1 / d;
            f *= c * d;
            if (half == 1 && fabs(c * d - 1) < 1e-15) return f;
        }
    }
    return f;
}

/* I_x(a, b) for 0 <= x <= 1, a, b > 0. */
static double beta_inc(double a, double b, double x) {
    if (x <= 0) return 0;
    if (x >= 1) return 1;
    double lead = exp(lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x));
    if (x < (a + 1) / (a + b + 2)) return lead * beta_cf(a, b, x) / a;
    return 1 - lead * beta_cf(b, a, 1 - x) / b;
}

double student_t_p2(double t, double df) {
    if (isnan(t) || !(df > 0)) return NAN;
    if (isinf(t)) return 0;
    return beta_inc(df / 2, 0.5, df / (df + t * t));
}

double student_t_quantile(double q, double df) {
    if (!(q > 0 && q < 1) || !(df > 0)) return NAN;
    if (q == 0.5) return 0;
    double target = 2 * (q > 0.5 ? 1 - q : q), lo = 0, hi = 1;
    while (student_t_p2(hi, df) > target && hi < 1e12) lo = hi, hi *= 2;
    for (int i = 0; i < 200 && hi - lo > 1e-13 * hi; i++) {
        double mid = 0.5 * (lo + hi);
        if (student_t_p2(mid, df) > target) lo = mid;
        else hi = mid;
    }
    double t = 0.5 * (lo + hi);
    return q > 0.5 ? t : -t;
}

/* ---- configs over runs ---- */

void seed_boot_init(SeedBoot *b, const BleuStats *const *stats, int nruns, long n,
                    int resamples, uint64_t seed) {
    CHECK(stats && nruns >= 1 && n >= 1 && resamples >= 1,
          "seed_boot_init: needs a run, a segment and a resample");
    CHECK(n <= (long)UINT32_MAX, "seed_boot_init: more segments than the sampler draws from");
    int R = resamples;
    memset(b, 0, sizeof *b);
    b->nruns = nruns, b->resamples = R, b->n = n;
    b->full = xcalloc((size_t)nruns, sizeof *b->full);
    b->boot = xcalloc((size_t)nruns * (size_t)R, sizeof *b->boot);
    for (int i = 0; i < nruns; i++) {
        BleuStats sum;
        memset(&sum, 0, sizeof sum);
        for (long j = 0; j < n; j++) stats_add(&sum, &stats[i][j]);
        b->full[i] = bleu_from_sum(&sum).score;
    }
    /* a resample as counts: segment j drawn cnt[j] times; the drawn ones listed in seg */
    long *cnt = xcalloc((size_t)n, sizeof *cnt), *seg = xmalloc(sizeof *seg * (size_t)n);
    Rng rng;
    rng_seed(&rng, seed, 0x5bd1e995u);
    for (int r = 0; r < R; r++) {
        long ns = 0;
        for (long i = 0; i < n; i++) {
            long j = (long)rng_below(&rng, (uint32_t)n);
            if (!cnt[j]++) seg[ns++] = j;
        }
        for (int i = 0; i < nruns; i++) {
            BleuStats sum;
            memset(&sum, 0, sizeof sum);
            for (long q = 0; q < ns; q++) {
                const BleuStats *x = &stats[i][seg[q]];
                long long c = cnt[seg[q]];
                for (int o = 0; o < 4; o++)
                    sum.correct[o] += c * x->correct[o], sum.total[o] += c * x->total[o];
                sum.hyp_len += c * x->hyp_len, sum.ref_len += c * x->ref_len;
            }
            b->boot[(size_t)i * (size_t)R + (size_t)r] = bleu_from_sum(&sum).score;
        }
        for (long q = 0; q < ns; q++) cnt[seg[q]] = 0;
    }
    free(cnt), free(seg);
}

void seed_boot_free(SeedBoot *b) {
    if (!b) return;
    free(b->full), free(b->boot);
    memset(b, 0, sizeof *b);
}

double f_test_p2(double f, double d1, double d2) {
    if (isnan(f) || f < 0 || !(d1 > 0) || !(d2 > 0)) return NAN;
    if (isinf(f)) return 0;
    double upper = beta_inc(d2 / 2, d1 / 2, d2 / (d2 + d1 * f)); /* P(F >= f) */
    return fmin(1, 2 * fmin(upper, 1 - upper));
}

/* The sample variance of runs ix[0..m) on the whole test set (m >= 2). */
static double runs_var(const SeedBoot *b, const int *ix, int m) {
    double xm = 0, ss = 0;
    for (int i = 0; i < m; i++) {
        CHECK(ix[i] >= 0 && ix[i] < b->nruns, "seed_pool: a run outside the bootstrap");
        xm += b->full[ix[i]];
    }
    xm /= m;
    for (int i = 0; i < m; i++) ss += (b->full[ix[i]] - xm) * (b->full[ix[i]] - xm);
    return ss / (m - 1);
}

SeedPool seed_pool(const SeedBoot *b, const int *runs, const int *first, const int *size,
                   int ngroups) {
    int R = b->resamples, ng = ngroups > 0 ? ngroups : 1;
    double ss = 0, ww = 0;
    int df = 0, nvar = 0;
    double *mean_r = xmalloc(sizeof *mean_r * (size_t)R);
    double *v = xcalloc((size_t)ng, sizeof *v), *fp = xcalloc((size_t)ng, sizeof *fp);
    SeedPool p = {NAN, 0, NAN, ngroups, NULL, NULL, NULL, NULL};
    p.apart = xmalloc(sizeof *p.apart * (size_t)(b->nruns > 0 ? b->nruns : 1));
    for (int i = 0; i < b->nruns; i++) p.apart[i] = -1;
    p.group_var = v, p.group_p = fp;
    p.group_df = xcalloc((size_t)ng, sizeof *p.group_df);
    for (int g = 0; g < ngroups; g++) v[g] = NAN, p.group_df[g] = size[g] > 1 ? size[g] - 1 : 0;
    for (int g = 0; g < ngroups; g++) {
        int m = size[g];
        if (m < 2) continue;
        const int *ix = runs + first[g];
        v[g] = runs_var(b, ix, m);
        ss += v[g] * (m - 1), df += m - 1, nvar++;
        for (int r = 0; r < R; r++) {
            double x = 0;
            for (int i = 0; i < m; i++) x += b->boot[(size_t)ix[i] * (size_t)R + (size_t)r];
            mean_r[r] = x / m;
        }
        if (R >= 2)
            for (int i = 0; i < m; i++) { /* Var_r of run i's deviation from the seeds' mean */
                const double *x = b->boot + (size_t)ix[i] * (size_t)R;
                double e = 0, q = 0;
                for (int r = 0; r < R; r++) e += x[r] - mean_r[r];
                e /= R;
                for (int r = 0; r < R; r++) q += (x[r] - mean_r[r] - e) * (x[r] - mean_r[r] - e);
                ww += q / (R - 1);
            }
    }
    free(mean_r);
    if (df) p.noise_var = ww / df;
    /* Step by step: each config still pooled against the pool of the others still pooled (F,
     * two-sided), Holm-adjusted over them; the one with the smallest p is set apart when that is
     * below SEED_VAR_ALPHA, and the rest are tested again without it, while three remain. A
     * config's group_p is its adjusted p at the last step that tested it. */
    for (int g = 0; g < ngroups; g++) fp[g] = NAN;
    double *q = xmalloc(sizeof *q * (size_t)ng);
    int *out = xcalloc((size_t)ng, sizeof *out);
    for (int left = nvar; left >= 3; left--) {
        for (int g = 0; g < ngroups; g++) {
            int d = size[g] - 1;
            q[g] = NAN;
            if (d < 1 || out[g]) continue;
            double rest = (ss - v[g] * d) / (df - d);
            q[g] = rest > 0 ? f_test_p2(v[g] / rest, d, df - d) : (v[g] > 0 ? 0 : 1);
        }
        holm_adjust(q, ngroups, q);
        int worst = -1;
        for (int g = 0; g < ngroups; g++) {
            if (isnan(q[g])) continue;
            fp[g] = q[g];
            if (worst < 0 || q[g] < q[worst]) worst = g;
        }
        if (worst < 0 || !(q[worst] < SEED_VAR_ALPHA)) break;
        out[worst] = 1;
        ss -= v[worst] * (size[worst] - 1), df -= size[worst] - 1;
        for (int i = 0; i < size[worst]; i++) p.apart[runs[first[worst] + i]] = worst;
    }
    free(q), free(out);
    p.seed_df = df;
    if (df) p.seed_var = ss / df;
    return p;
}

void seed_pool_free(SeedPool *p) {
    if (!p) return;
    free(p->apart), free(p->group_var), free(p->group_df), free(p->group_p);
    p->apart = p->group_df = NULL, p->group_var = p->group_p = NULL;
}

/* A side's seed variance and its df: its config's own where seed_pool set it apart, else the
 * pool's; *src that config, or −1 for the pool (two sides of one source share one estimate). */
static double side_var(const SeedPool *pool, const int *ix, double *df, int *src) {
    int g = pool->apart ? pool->apart[ix[0]] : -1;
    *src = g;
    *df = g >= 0 ? pool->group_df[g] : pool->seed_df;
    return g >= 0 ? pool->group_var[g] : pool->seed_var;
}

/* p of Δ with the seeds' variance vs (df df_seed) and a test-set variance vt, and its df */
static double t_p(double delta, double vs, double vt, double df_seed, double *df) {
    double v = vs + vt;
    *df = vs > 0 ? df_seed * v * v / (vs * vs) : 1e12;
    if (!(v > 0)) return delta == 0 ? 1 : 0;
    return student_t_p2(delta / sqrt(v), *df);
}

SeedTest seed_test(const SeedBoot *b, const SeedPool *pool, const int *base, int nb,
                   const int *sys, int ns) {
    CHECK(b && pool && base && sys && nb >= 1 && ns >= 1, "seed_test: needs a run a side");
    int R = b->resamples;
    SeedTest t;
    memset(&t, 0, sizeof t);
    t.nb = nb, t.ns = ns;
    for (int i = 0; i < nb; i++) {
        CHECK(base[i] >= 0 && base[i] < b->nruns, "seed_test: a run outside the bootstrap");
        t.base_bleu += b->full[base[i]] / nb;
    }
    for (int i = 0; i < ns; i++) {
        CHECK(sys[i] >= 0 && sys[i] < b->nruns, "seed_test: a run outside the bootstrap");
        t.sys_bleu += b->full[sys[i]] / ns;
    }
    t.delta = t.sys_bleu - t.base_bleu;
    /* the resampled seed-averaged differences: their variance and its Monte Carlo error */
    double *d = xmalloc(sizeof *d * (size_t)R), dm = 0;
    for (int r = 0; r < R; r++) {
        double x = 0, y = 0;
        for (int i = 0; i < ns; i++) x += b->boot[(size_t)sys[i] * (size_t)R + (size_t)r];
        for (int i = 0; i < nb; i++) y += b->boot[(size_t)base[i] * (size_t)R + (size_t)r];
        d[r] = x / ns - y / nb;
        dm += d[r];
    }
    dm /= R;
    double m2 = 0, m4 = 0;
    for (int r = 0; r < R; r++) {
        double e = (d[r] - dm) * (d[r] - dm);
        m2 += e, m4 += e * e;
    }
    free(d);
    t.var_boot = R > 1 ? m2 / (R - 1) : 0;
    t.var_boot_mc = sqrt(fmax(0, m4 / R - (m2 / R) * (m2 / R)) / R);
    t.p_sentences = t.var_boot > 0 ? erfc(fabs(t.delta) / sqrt(2 * t.var_boot))
                                   : (t.delta == 0 ? 1 : 0);
    double db, ds, df_seed;
    int sb, sS;
    double vb = side_var(pool, base, &db, &sb), vs = side_var(pool, sys, &ds, &sS);
    if (!(db > 0 && ds > 0)) {
        t.var_seed = t.var_test = t.se = t.df = t.t = t.p = t.p_mc = t.lo = t.hi = NAN;
        return t;
    }
    double a = vb / nb, c2 = vs / ns;
    t.var_seed = a + c2;
    if (sb == sS) df_seed = db; /* one estimate on both sides */
    else df_seed = t.var_seed * t.var_seed / (a * a / db + c2 * c2 / ds); /* Welch–Satterthwaite */
    if (!(df_seed > 0)) df_seed = db < ds ? db : ds;
    double c = 1.0 / ns + 1.0 / nb;
    t.var_test = fmax(0, t.var_boot - pool->noise_var * c);
    t.se = sqrt(t.var_seed + t.var_test);
    t.p = t_p(t.delta, t.var_seed, t.var_test, df_seed, &t.df);
    t.t = t.se > 0 ? t.delta / t.se : (t.delta == 0 ? 0 : copysign(INFINITY, t.delta));
    double df1, df2;
    double p_hi = t_p(t.delta, t.var_seed,
                      fmax(0, t.var_boot + t.var_boot_mc - pool->noise_var * c), df_seed, &df1);
    double p_lo = t_p(t.delta, t.var_seed,
                      fmax(0, t.var_boot - t.var_boot_mc - pool->noise_var * c), df_seed, &df2);
    t.p_mc = 0.5 * fabs(p_hi - p_lo);
    double q = t.se > 0 ? student_t_quantile(0.975, t.df) * t.se : 0;
    t.lo = t.delta - q, t.hi = t.delta + q;
    return t;
}

void holm_adjust(const double *p, int m, double *adj) {
    int *ord = xmalloc(sizeof *ord * (size_t)(m > 0 ? m : 1)), k = 0;
    double *raw = xmalloc(sizeof *raw * (size_t)(m > 0 ? m : 1));
    memcpy(raw, p, sizeof *raw * (size_t)(m > 0 ? m : 0));
    for (int i = 0; i < m; i++)
        if (!isnan(raw[i])) ord[k++] = i;
    for (int i = 1; i < k; i++) /* insertion sort by p, stable */
        for (int j = i; j > 0 && raw[ord[j]] < raw[ord[j - 1]]; j--) {
            int x = ord[j];
            ord[j] = ord[j - 1], ord[j - 1] = x;
        }
    for (int i = 0; i < m; i++) adj[i] = NAN;
    double run = 0;
    for (int j = 0; j < k; j++) {
        double v = fmin(1, (k - j) * raw[ord[j]]);
        if (v > run) run = v;
        adj[ord[j]] = run;
    }
    free(ord), free(raw);
}

double seed_test_mde(const SeedPool *pool, int k, int m, double var_test, double alpha,
                     double power) {
    if (!pool->seed_df || k < 1 || m < 1) return NAN;
    double vs = pool->seed_var * (1.0 / k + 1.0 / m), v = vs + fmax(0, var_test);
    double df = vs > 0 ? pool->seed_df * v * v / (vs * vs) : 1e12;
    return (student_t_quantile(1 - alpha / 2, df) + student_t_quantile(power, df)) * sqrt(v);
}
