/* report.c — the report of runs from their archives (report.h). */
#include "study/report.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/machine.h"
#include "core/revision.h"
#include "eval/metrics.h"
#include "eval/plot.h"
#include "eval/significance.h"

#define DASH "\xe2\x80\x94" /* — */
#define RESAMPLES 2000      /* the bootstrap's first size; ×4 while a verdict could flip */
#define MAX_RESAMPLES 32000
#define BOOT_SEED 12345
#define ALPHA 0.05
#define GALLERY "attention.md" /* the heatmaps' page, beside the report */

/* A config: the runs of one group, in the order given. */
typedef struct {
    char name[256];
    const Archive **runs;
    int n;
} Group;

/* A config against the baseline on one test set (eval/significance.h, seed_test). */
typedef struct {
    SeedTest st;
    double p_adj;             /* Holm-adjusted over the table's comparisons */
    int identical;            /* the same translations, seed for seed */
    int unstable;             /* p's Monte Carlo error could flip the adjusted verdict */
} Sig;

/* A table's facts on one test set: the pooled seed variance, the seed control (each config's
 * first ⌊m/2⌋ seeds against the others), the minimum detectable effect. */
typedef struct {
    SeedPool pool;
    SeedTest *ctl;            /* [ng]; ctl[g].nb == 0 for a config of one seed */
    int nctl, nctl_sig;       /* control comparisons, and those with p < ALPHA */
    int mde_k;                /* the seeds of a typical config (the most common count) */
    double mde, mde_strict;   /* at ALPHA, and at ALPHA over the table's comparisons */
    double var_test;          /* the mean test-set variance of the table's comparisons */
} TestFacts;

typedef struct {
    const ReportTable *t;
    Group *g;
    int ng, base;             /* base: the baseline's group, or -1 */
    Sig *sig;                 /* [ng * ntests] */
    TestFacts *facts;         /* [ntests] */
    int resamples, ncmp;      /* the bootstrap's size; comparisons Holm's correction counts */
    char ref[1024];           /* the machine whose runs give the times the figures compare */
    int ref_split;            /* 1: the runs trained on more than one machine */
} Table;

void report_stem(const char *name, char *buf, size_t n) {
    snprintf(buf, n, "%s", name);
    size_t len = strlen(buf), k = len;
    while (k > 0 && isdigit((unsigned char)buf[k - 1])) k--;
    if (k < len && k >= 3 && buf[k - 1] == 's' && buf[k - 2] == '_') buf[k - 2] = 0;
}

static double mean_of(const double *v, int n) {
    double m = 0;
    for (int i = 0; i < n; i++) m += v[i];
    return n ? m / n : NAN;
}

/* sample standard deviation; NAN for fewer than two values (not measured) */
static double sd_of(const double *v, int n) {
    if (n < 2) return NAN;
    double m = mean_of(v, n), q = 0;
    for (int i = 0; i < n; i++) q += (v[i] - m) * (v[i] - m);
    return sqrt(q / (n - 1));
}

/* "41.23" for one value, "41.23 ± 0.45" for several; "—" for none */
static void fmt_ms(char *buf, size_t n, const double *v, int k) {
    double m = mean_of(v, k);
    if (k == 0 || !isfinite(m)) snprintf(buf, n, DASH);
    else if (k == 1) snprintf(buf, n, "%.2f", m);
    else snprintf(buf, n, "%.2f ± %.2f", m, sd_of(v, k));
}

static void fmt_duration(char *buf, size_t n, double s) {
    if (!isfinite(s)) {
        snprintf(buf, n, DASH);
        return;
    }
    long t = (long)llround(s);
    if (t >= 3600) snprintf(buf, n, "%ld h %02ld min", t / 3600, (t / 60) % 60);
    else if (t >= 60) snprintf(buf, n, "%ld min %02ld s", t / 60, t % 60);
    else snprintf(buf, n, "%.1f s", s);
}

/* v with commas between thousands ("7,586,624"), into buf */
static const char *fmt_count(char *buf, size_t n, long v) {
    char digits[32];
    int k = snprintf(digits, sizeof digits, "%ld", v < 0 ? -v : v), o = 0;
    if (v < 0 && o + 1 < (int)n) buf[o++] = '-';
    for (int i = 0; i < k && o + 4 < (int)n; i++) {
        if (i && (k - i) % 3 == 0) buf[o++] = ',';
        buf[o++] = digits[i];
    }
    buf[o] = 0;
    return buf;
}

/* ---- per-run facts ---- */

static double run_secs(const Archive *a) {
    return a->log.nval ? a->log.val[a->log.nval - 1].elapsed : NAN;
}

static int run_epochs(const Archive *a) {
    int e = 0;
    for (int i = 0; i < a->log.nval; i++)
        if (a->log.val[i].epoch > e) e = a->log.val[i].epoch;
    return e;
}

static double run_peak(const Archive *a) {
    double p = NAN;
    for (int i = 0; i < a->log.nval; i++)
        if (isfinite(a->log.val[i].peak_mib) && !(a->log.val[i].peak_mib <= p))
            p = a->log.val[i].peak_mib;
    return p;
}

static double run_best_ppl(const Archive *a) {
    double p = NAN;
    for (int i = 0; i < a->log.nval; i++)
        if (!(a->log.val[i].val_ppl >= p)) p = a->log.val[i].val_ppl;
    return p;
}

/* Where the run trained, in words: its start lines' CPUs or GPUs and threads, each once. */
static void trained_on(const Archive *a, char *buf, size_t n) {
    buf[0] = 0;
    for (int i = 0; i < a->log.nstarts; i++) {
        const RunStart *s = &a->log.starts[i];
        char one[400];
        if (s->gpu[0]) snprintf(one, sizeof one, "%s", s->gpu);
        else snprintf(one, sizeof one, "%s, %d thread%s", s->cpu, s->threads,
                      s->threads == 1 ? "" : "s");
        if (s->ranks > 1) str_appendf(one, sizeof one, ", %d ranks", s->ranks);
        if (!strstr(buf, one)) str_appendf(buf, n, "%s%s", buf[0] ? " + " : "", one);
    }
    if (!buf[0]) snprintf(buf, n, DASH);
}

static void revisions(const Archive *a, char *buf, size_t n) {
    buf[0] = 0;
    for (int i = 0; i < a->log.nstarts; i++)
        if (!strstr(buf, a->log.starts[i].revision))
            str_appendf(buf, n, "%s%s", buf[0] ? ", " : "", a->log.starts[i].revision);
    if (!buf[0]) snprintf(buf, n, DASH);
}

static const char *seed_text(const Archive *a, char *buf, size_t n) {
    snprintf(buf, n, "%llu", (unsigned long long)a->cfg.seed);
    return buf;
}

/* ---- groups and checks ---- */

/* The machine whose runs the times of a table's figures come from, so that they compare: the
 * one on which the most configs have a run (ties: the most runs, then the first seen). Times
 * taken on different machines (a CPU thread and a GPU, say) are never averaged together. */
static void reference_machine(Table *t) {
    enum { MAXM = 32 };
    char keys[MAXM][1024];
    int nk = 0, nconf[MAXM] = {0}, nrun[MAXM] = {0};
    for (int gi = 0; gi < t->ng; gi++) {
        int seen[MAXM] = {0};
        for (int i = 0; i < t->g[gi].n; i++) {
            char key[1024];
            trained_on(t->g[gi].runs[i], key, sizeof key);
            int k = 0;
            while (k < nk && strcmp(keys[k], key)) k++;
            if (k == nk) {
                if (nk == MAXM) continue;
                snprintf(keys[nk++], sizeof keys[0], "%s", key);
            }
            nrun[k]++;
            if (!seen[k]) seen[k] = 1, nconf[k]++;
        }
    }
    int best = 0;
    for (int k = 1; k < nk; k++)
        if (nconf[k] > nconf[best] || (nconf[k] == nconf[best] && nrun[k] > nrun[best])) best = k;
    snprintf(t->ref, sizeof t->ref, "%s", nk ? keys[best] : "");
    t->ref_split = nk > 1;
}

/* 1 if run a trained on the table's reference machine. */
static int on_ref(const Table *t, const Archive *a) {
    char key[1024];
    trained_on(a, key, sizeof key);
    return !strcmp(key, t->ref);
}

static Status build_table(const ReportOpts *o, const ReportTable *rt, Table *t, Err *err) {
    memset(t, 0, sizeof *t);
    t->t = rt;
    t->base = -1;
    t->g = xcalloc((size_t)(rt->nruns > 0 ? rt->nruns : 1), sizeof *t->g);
    char *names = xcalloc((size_t)(rt->nruns > 0 ? rt->nruns : 1), 256);
    for (int i = 0; i < rt->nruns; i++) {
        char *nm = names + (size_t)i * 256;
        if (rt->groups) snprintf(nm, 256, "%s", rt->groups[i]);
        else report_stem(rt->runs[i]->name, nm, 256);
    }
    if (!rt->groups) /* a stem whose runs differ in config: each run is its own */
        for (int i = 0; i < rt->nruns; i++)
            for (int j = 0; j < rt->nruns; j++)
                if (i != j && !strcmp(names + (size_t)i * 256, names + (size_t)j * 256) &&
                    config_diff_trained(&rt->runs[i]->cfg, &rt->runs[j]->cfg, NULL, 0))
                    snprintf(names + (size_t)i * 256, 256, "%s", rt->runs[i]->name);
    for (int i = 0; i < rt->nruns; i++) {
        const char *nm = names + (size_t)i * 256;
        int g = 0;
        while (g < t->ng && strcmp(t->g[g].name, nm)) g++;
        if (g == t->ng) {
            snprintf(t->g[g].name, sizeof t->g[g].name, "%s", nm);
            t->g[g].runs = xcalloc((size_t)rt->nruns, sizeof *t->g[g].runs);
            t->ng++;
        }
        t->g[g].runs[t->g[g].n++] = rt->runs[i];
    }
    free(names);
    /* every run has the report's test sets, with the first run's references */
    for (int k = 0; k < o->ntests; k++) {
        const ArchiveTest *ref = NULL;
        const Archive *ra = NULL;
        for (int i = 0; i < rt->nruns; i++) {
            const ArchiveTest *x = archive_test(rt->runs[i], o->tests[k]);
            if (!x)
                return err_set(err, "run %s (%s) has no translations of test set %s; archive it "
                               "again with that test set", rt->runs[i]->name, rt->runs[i]->dir,
                               o->tests[k]);
            if (!ref) {
                ref = x, ra = rt->runs[i];
                continue;
            }
            int same = x->n == ref->n;
            for (long j = 0; same && j < x->n; j++) same = !strcmp(x->ref[j], ref->ref[j]);
            if (!same)
                return err_set(err, "test set %s: runs %s and %s have different references "
                               "(%s, %ld sentences, and %s, %ld); a comparison needs one test set",
                               o->tests[k], ra->name, rt->runs[i]->name, ref->tgt, ref->n, x->tgt,
                               x->n);
        }
    }
    reference_machine(t);
    if (rt->baseline) {
        for (int g = 0; g < t->ng; g++)
            if (!strcmp(t->g[g].name, rt->baseline)) t->base = g;
        if (t->base < 0) {
            char list[2048] = "";
            for (int g = 0; g < t->ng; g++)
                str_appendf(list, sizeof list, "%s%s", g ? ", " : "", t->g[g].name);
            return err_set(err, "baseline %s is not a config of %s (%s); name one of them",
                           rt->baseline, rt->title, list);
        }
    }
    return STATUS_OK;
}

/* The beam BLEU of each run of g on test set name into v (g->n values). */
static void group_scores(const Group *g, const char *test, int which, double *v) {
    for (int i = 0; i < g->n; i++) {
        const ArchiveTest *x = archive_test(g->runs[i], test);
        v[i] = which == 0 ? x->bleu_g : which == 1 ? x->chrf_g : which == 2 ? x->bleu_b : x->chrf_b;
    }
}

static int same_lines(char *const *a, char *const *b, long n) {
    for (long i = 0; i < n; i++)
        if (strcmp(a[i], b[i])) return 0;
    return 1;
}

/* The per-sentence statistics of each run's beam translations of test set name. */
static BleuStats **group_stats(const Group *g, const char *test) {
    BleuStats **s = xcalloc((size_t)g->n, sizeof *s);
    for (int i = 0; i < g->n; i++) {
        const ArchiveTest *x = archive_test(g->runs[i], test);
        s[i] = xcalloc((size_t)(x->n > 0 ? x->n : 1), sizeof **s);
        bleu_segment_stats(s[i], (const char *const *)x->beam, (const char *const *)x->ref, x->n);
    }
    return s;
}

/* Holm's verdicts of the table with every p moved by shift standard errors of its Monte Carlo
 * error: 1 where the adjusted p is below ALPHA, into v[ng * ntests]. */
static void holm_verdicts(const Table *t, int ntests, double shift, int *v) {
    int m = t->ng * ntests;
    double *p = xcalloc((size_t)m, sizeof *p);
    for (int i = 0; i < m; i++) {
        int gi = i / ntests;
        const Sig *s = &t->sig[i];
        p[i] = gi == t->base ? NAN : fmin(1, fmax(0, s->st.p + shift * s->st.p_mc));
    }
    holm_adjust(p, m, p);
    for (int i = 0; i < m; i++) v[i] = p[i] < ALPHA;
    free(p);
}

/* Every config against the baseline on every test set, with R resamples; the seed controls;
 * the MDE. */
static void significance_at(const ReportOpts *o, Table *t, int R) {
    int nr = 0;
    for (int gi = 0; gi < t->ng; gi++) nr += t->g[gi].n;
    int *ix = xcalloc((size_t)nr, sizeof *ix), *first = xcalloc((size_t)t->ng, sizeof *first);
    int *size = xcalloc((size_t)t->ng, sizeof *size);
    for (int i = 0; i < nr; i++) ix[i] = i;
    for (int gi = 0, k = 0; gi < t->ng; k += t->g[gi].n, gi++)
        first[gi] = k, size[gi] = t->g[gi].n;
    const Group *b = &t->g[t->base];
    t->resamples = R;
    for (int k = 0; k < o->ntests; k++) {
        long n = archive_test(b->runs[0], o->tests[k])->n;
        TestFacts *f = &t->facts[k];
        free(f->ctl);
        seed_pool_free(&f->pool);
        memset(f, 0, sizeof *f);
        f->ctl = xcalloc((size_t)t->ng, sizeof *f->ctl);
        if (n < 1) continue;
        const BleuStats **all = xcalloc((size_t)nr, sizeof *all);
        BleuStats ***per = xcalloc((size_t)t->ng, sizeof *per);
        for (int gi = 0; gi < t->ng; gi++) {
            per[gi] = group_stats(&t->g[gi], o->tests[k]);
            for (int i = 0; i < t->g[gi].n; i++) all[first[gi] + i] = per[gi][i];
        }
        SeedBoot bo;
        seed_boot_init(&bo, all, nr, n, R, BOOT_SEED);
        f->pool = seed_pool(&bo, ix, first, size, t->ng);
        int nvt = 0;
        for (int gi = 0; gi < t->ng; gi++) {
            const Group *g = &t->g[gi];
            if (g->n >= 2) { /* the seed control: the first half of its seeds against the rest */
                int h = g->n / 2;
                f->ctl[gi] = seed_test(&bo, &f->pool, ix + first[gi], h, ix + first[gi] + h,
                                       g->n - h);
                f->nctl++;
                f->nctl_sig += f->ctl[gi].p < ALPHA;
            }
            if (gi == t->base) continue;
            Sig *s = &t->sig[(size_t)gi * o->ntests + k];
            s->st = seed_test(&bo, &f->pool, ix + first[t->base], b->n, ix + first[gi], g->n);
            s->identical = g->n == b->n;
            for (int i = 0; i < g->n && s->identical; i++)
                s->identical = same_lines(archive_test(g->runs[i], o->tests[k])->beam,
                                          archive_test(b->runs[i], o->tests[k])->beam, n);
            if (!s->identical && isfinite(s->st.var_test)) f->var_test += s->st.var_test, nvt++;
        }
        if (nvt) f->var_test /= nvt;
        /* the MDE for a typical config (the most common number of seeds) against the baseline */
        int best = 0, cnt_best = 0;
        for (int gi = 0; gi < t->ng; gi++) {
            int c = 0;
            for (int gj = 0; gj < t->ng; gj++) c += t->g[gj].n == t->g[gi].n;
            if (c > cnt_best || (c == cnt_best && t->g[gi].n > best)) best = t->g[gi].n, cnt_best = c;
        }
        f->mde_k = best;
        f->mde = seed_test_mde(&f->pool, best, b->n, f->var_test, ALPHA, 0.8);
        f->mde_strict = seed_test_mde(&f->pool, best, b->n, f->var_test,
                                      ALPHA / (t->ncmp > 0 ? t->ncmp : 1), 0.8);
        seed_boot_free(&bo);
        for (int gi = 0; gi < t->ng; gi++) {
            for (int i = 0; i < t->g[gi].n; i++) free(per[gi][i]);
            free(per[gi]);
        }
        free(per), free(all);
    }
    free(ix), free(first), free(size);
}

/* The significance of every config against the baseline (report.h): the bootstrap grows ×4,
 * up to MAX_RESAMPLES, while a verdict would change with p moved by 3 Monte Carlo standard
 * errors; one that still would is marked. */
static void significance(const ReportOpts *o, Table *t) {
    if (t->base < 0) return;
    int m = t->ng * o->ntests;
    t->sig = xcalloc((size_t)m, sizeof *t->sig);
    t->facts = xcalloc((size_t)o->ntests, sizeof *t->facts);
    t->ncmp = (t->ng - 1) * o->ntests;
    int *lo = xcalloc((size_t)m, sizeof *lo), *hi = xcalloc((size_t)m, sizeof *hi);
    for (int R = RESAMPLES;; R *= 4) {
        significance_at(o, t, R);
        holm_verdicts(t, o->ntests, -3, lo);
        holm_verdicts(t, o->ntests, 3, hi);
        int flips = 0;
        for (int i = 0; i < m; i++) flips += lo[i] != hi[i];
        if (!flips || R * 4 > MAX_RESAMPLES) break;
    }
    double *p = xcalloc((size_t)m, sizeof *p);
    for (int i = 0; i < m; i++) p[i] = i / o->ntests == t->base ? NAN : t->sig[i].st.p;
    holm_adjust(p, m, p);
    for (int i = 0; i < m; i++) t->sig[i].p_adj = p[i], t->sig[i].unstable = lo[i] != hi[i];
    free(p), free(lo), free(hi);
}

/* ---- Markdown ---- */

static void write_scores(FILE *f, const ReportOpts *o, const Table *t, int K) {
    fprintf(f, "| config | attention | parameters | seeds | best val BLEU |");
    for (int k = 0; k < o->ntests; k++)
        fprintf(f, " %s BLEU greedy | %s BLEU beam %d | %s chrF beam %d |", o->tests[k],
                o->tests[k], K, o->tests[k], K);
    fprintf(f, "\n|---|---|--:|--:|--:|");
    for (int k = 0; k < o->ntests; k++) fprintf(f, "--:|--:|--:|");
    fprintf(f, "\n");
    for (int gi = 0; gi < t->ng; gi++) {
        const Group *g = &t->g[gi];
        const Archive *a = g->runs[0];
        char attn[64], cell[64];
        double *v = xcalloc((size_t)g->n, sizeof *v);
        int nv = 0;
        for (int i = 0; i < g->n; i++)
            if (g->runs[i]->log.nval) v[nv++] = runlog_best_bleu(&g->runs[i]->log, NULL);
        fmt_ms(cell, sizeof cell, v, nv);
        char params[40];
        fprintf(f, "| %s%s | %s | %s | %d | %s |", g->name, gi == t->base ? " (baseline)" : "",
                config_attention_text(&a->cfg, attn, sizeof attn),
                fmt_count(params, sizeof params, a->params), g->n, cell);
        for (int k = 0; k < o->ntests; k++) {
            static const int cols[3] = {0, 2, 3};
            for (int c = 0; c < 3; c++) {
                group_scores(g, o->tests[k], cols[c], v);
                fmt_ms(cell, sizeof cell, v, g->n);
                fprintf(f, " %s |", cell);
            }
        }
        fprintf(f, "\n");
        free(v);
    }
}

/* The table's largest data.concat over its runs' test sets (1: no joined documents). */
static int table_concat(const ReportOpts *o, const Table *t) {
    int k = 1;
    for (int gi = 0; gi < t->ng; gi++)
        for (int i = 0; i < t->g[gi].n; i++)
            for (int j = 0; j < o->ntests; j++) {
                const ArchiveTest *x = archive_test(t->g[gi].runs[i], o->tests[j]);
                if (x->concat > k) k = x->concat;
            }
    return k;
}

/* Joined documents split at <sep> (the cards' split scores, archive.h): per config and test
 * set, the documents whose beam translation has another number of sentences than its source,
 * and the sentence BLEU of those that split right; mean ± sd over the seeds that record them. */
static void write_split(FILE *f, const ReportOpts *o, const Table *t, int K) {
    fprintf(f, "### Documents split into sentences\n\nEach document's beam-%d translation split "
               "at the separator: how many documents come out with another number of "
               "sentences than their source (of the test set's documents), and the sentence "
               "BLEU over the sentences of the documents that split right. Each run scores its "
               "own such documents, so this BLEU compares configs only roughly; a run that "
               "drops or merges sentences shows in the first figure. Both are read from each "
               "run's card (run.json), scored as the run was archived; mean ± sd over seeds.\n\n"
               "| config |", K);
    for (int k = 0; k < o->ntests; k++)
        fprintf(f, " %s: split wrong | %s: sentence BLEU |", o->tests[k], o->tests[k]);
    fprintf(f, "\n|---|");
    for (int k = 0; k < o->ntests; k++) fprintf(f, "--:|--:|");
    fprintf(f, "\n");
    for (int gi = 0; gi < t->ng; gi++) {
        const Group *g = &t->g[gi];
        double *mis = xcalloc((size_t)g->n, sizeof *mis), *bl = xcalloc((size_t)g->n, sizeof *bl);
        fprintf(f, "| %s |", g->name);
        for (int k = 0; k < o->ntests; k++) {
            int nm = 0, nb = 0;
            long docs = 0;
            for (int i = 0; i < g->n; i++) {
                const ArchiveTest *x = archive_test(g->runs[i], o->tests[k]);
                docs = x->n;
                if (x->split_mismatch_b >= 0) mis[nm++] = (double)x->split_mismatch_b;
                if (isfinite(x->split_bleu_b)) bl[nb++] = x->split_bleu_b;
            }
            char cm[64], cb[64];
            double m = mean_of(mis, nm);
            if (!nm) snprintf(cm, sizeof cm, DASH);
            else if (nm == 1) snprintf(cm, sizeof cm, "%.0f of %ld", m, docs);
            else snprintf(cm, sizeof cm, "%.1f ± %.1f of %ld", m, sd_of(mis, nm), docs);
            fmt_ms(cb, sizeof cb, bl, nb);
            fprintf(f, " %s | %s |", cm, cb);
        }
        fprintf(f, "\n");
        free(mis), free(bl);
    }
    fprintf(f, "\n");
}

static void write_cost(FILE *f, const Table *t) {
    fprintf(f, "| config | model | epochs | runs | training time | tokens/s | peak memory (MiB) | "
               "precision | trained on |\n|---|---|--:|--:|--:|--:|--:|---|---|\n");
    for (int gi = 0; gi < t->ng; gi++) {
        const Group *g = &t->g[gi];
        int *done = xcalloc((size_t)g->n, sizeof *done);
        for (int i0 = 0; i0 < g->n; i0++) { /* one row per machine, in the order first seen */
            if (done[i0]) continue;
            char where[1024], one[1024], dur[64], ep[32];
            trained_on(g->runs[i0], where, sizeof where);
            double *secs = xcalloc((size_t)g->n, sizeof *secs), tok = 0, peak = NAN;
            int n = 0, ntok = 0, emin = 1 << 30, emax = 0;
            for (int i = i0; i < g->n; i++) {
                const Archive *a = g->runs[i];
                trained_on(a, one, sizeof one);
                if (done[i] || strcmp(one, where)) continue;
                done[i] = 1;
                secs[n++] = run_secs(a);
                if (isfinite(a->log.tok_s)) tok += a->log.tok_s, ntok++;
                if (isfinite(run_peak(a)) && !(run_peak(a) <= peak)) peak = run_peak(a);
                int e = run_epochs(a);
                if (e < emin) emin = e;
                if (e > emax) emax = e;
            }
            fmt_duration(dur, sizeof dur, mean_of(secs, n));
            if (emin == emax) snprintf(ep, sizeof ep, "%d", emax);
            else snprintf(ep, sizeof ep, "%d–%d", emin, emax);
            fprintf(f, "| %s | %s | %s | %d | %s%s | ", g->name,
                    model_type_names[g->runs[0]->cfg.model.type], ep, n, dur,
                    n > 1 ? " (mean)" : "");
            if (ntok) fprintf(f, "%.0f", tok / ntok);
            else fprintf(f, DASH);
            fprintf(f, " | ");
            if (isfinite(peak)) fprintf(f, "%.0f", peak);
            else fprintf(f, DASH);
            fprintf(f, " | %s | %s |\n", precision_names[g->runs[0]->cfg.precision], where);
            free(secs);
        }
        free(done);
    }
    if (t->ref_split)
        fprintf(f, "\nThe runs trained on more than one machine: each row is one config's runs on "
                   "one machine (a run resumed on another is its own), and a time, a speed or a "
                   "peak memory is never averaged across machines. The figures' times are those "
                   "of the runs on %s.\n", t->ref);
}

/* ---- verdicts ---- */

enum { V_SAME, V_BETTER, V_WORSE, V_NONE }; /* indistinguishable, better, worse, no verdict */

static int verdict_kind(const Sig *s) {
    if (s->identical || fabs(s->st.delta) < 0.005) return V_SAME;
    if (isnan(s->st.p)) return V_NONE;
    if (s->p_adj < ALPHA) return s->st.delta > 0 ? V_BETTER : V_WORSE;
    return V_SAME;
}

/* The verdict of sig s in words into buf. */
static const char *verdict(const Sig *s, char *buf, size_t n) {
    const char *mc = s->unstable ? " (Monte Carlo error could flip this)" : "";
    int k = verdict_kind(s);
    if (s->identical) snprintf(buf, n, "identical translations");
    else if (fabs(s->st.delta) < 0.005) snprintf(buf, n, "no difference");
    else if (k == V_NONE) snprintf(buf, n, "no verdict: one seed a config");
    else if (k == V_SAME) snprintf(buf, n, "not significant%s", mc);
    else snprintf(buf, n, "%s%s%s", k == V_BETTER ? "better" : "worse",
                  s->st.nb == 1 && s->st.ns == 1 ? " (tentative: one seed each)" : "", mc);
    return buf;
}

/* "0.0123 ± 0.0004" (p and its Monte Carlo error), or "—" */
static const char *fmt_p(char *buf, size_t n, double p, double mc) {
    if (isnan(p)) snprintf(buf, n, DASH);
    else if (p < 0.0001) snprintf(buf, n, "< 0.0001");
    else if (mc >= 0.00005) snprintf(buf, n, "%.4f ± %.4f", p, mc);
    else snprintf(buf, n, "%.4f", p);
    return buf;
}

/* The seeds of runs[first .. first + k) as "s1–s2" or "s1, s3" */
static const char *seed_list(char *buf, size_t n, const Group *g, int first, int k) {
    buf[0] = 0;
    int run = 1;
    for (int i = first + 1; i < first + k; i++)
        run &= g->runs[i]->cfg.seed == g->runs[i - 1]->cfg.seed + 1;
    if (k > 2 && run)
        snprintf(buf, n, "s%llu–s%llu", (unsigned long long)g->runs[first]->cfg.seed,
                 (unsigned long long)g->runs[first + k - 1]->cfg.seed);
    else
        for (int i = first; i < first + k; i++)
            str_appendf(buf, n, "%ss%llu", i > first ? ", " : "",
                        (unsigned long long)g->runs[i]->cfg.seed);
    return buf;
}

/* The configs seed_pool set apart on one test set: "- TEST: A (sd x BLEU, F test p = y after
 * Holm), B (…) …", nothing when none. */
static void write_apart(FILE *f, const char *test, const Table *t, const SeedPool *pool) {
    int n = 0;
    for (int gi = 0; gi < t->ng; gi++) {
        if (!(pool->group_p && pool->group_p[gi] < SEED_VAR_ALPHA)) continue;
        fprintf(f, "%s%s (seed standard deviation %.2f BLEU, F test p = %.2g after Holm)",
                n++ ? ", " : "- ", t->g[gi].name, sqrt(pool->group_var[gi]), pool->group_p[gi]);
    }
    if (n)
        fprintf(f, ": on %s, %s spread across seeds differs from the other configs', so %s "
                   "comparisons take %s own seed variance and the table's pooled variance "
                   "leaves %s out.\n",
                test, n == 1 ? "its" : "their", n == 1 ? "its" : "their", n == 1 ? "its" : "their",
                n == 1 ? "it" : "them");
}

static void write_significance(FILE *f, const ReportOpts *o, const Table *t, int K) {
    const Group *b = &t->g[t->base];
    if (t->ng == 1) {
        fprintf(f, "No config but %s is in this table yet.\n\n", b->name);
        return;
    }
    fprintf(f, "Each config against %s on the beam-%d translations, over its training runs "
               "(docs/study.md): Δ is the difference of the seeds' mean BLEU. Its standard error "
               "adds the seeds' variance, pooled over the table's configs (but for a config whose "
               "spread across seeds an F test sets apart, which keeps its own), and the test set's "
               "sampling variance, from a paired bootstrap over the sentences (%d resamples, "
               "seed %d) less the runs' own sentence noise that the seed variance already "
               "holds. p is two-sided, from Student's t with Welch–Satterthwaite's degrees of "
               "freedom, ± its Monte Carlo error; the verdict follows p adjusted by Holm's "
               "method over the table's %d comparisons, at %.2f.\n\n",
            b->name, K, t->resamples, BOOT_SEED, t->ncmp, ALPHA);
    fprintf(f, "| test set | config | seeds | BLEU | Δ vs %s | 95%% interval of Δ | p | "
               "adjusted p | verdict |\n|---|---|--:|--:|--:|---|--:|--:|---|\n", b->name);
    int one_side = 0, no_var = 0, pooled = 0;
    for (int k = 0; k < o->ntests; k++) pooled |= t->facts[k].pool.seed_df > 0;
    for (int k = 0; k < o->ntests; k++)
        for (int gi = 0; gi < t->ng; gi++) {
            if (gi == t->base) continue;
            const Sig *s = &t->sig[(size_t)gi * o->ntests + k];
            char v[96], iv[64], pc[48], pa[24];
            verdict(s, v, sizeof v);
            if (isnan(s->st.lo)) snprintf(iv, sizeof iv, DASH);
            else snprintf(iv, sizeof iv, "[%+.2f, %+.2f]", s->st.lo, s->st.hi);
            if (isnan(s->st.p)) {
                no_var = 1;
                char ps[24];
                snprintf(pc, sizeof pc, "(%s ‡)", fmt_p(ps, sizeof ps, s->st.p_sentences, 0));
            } else fmt_p(pc, sizeof pc, s->st.p, s->st.p_mc);
            fmt_p(pa, sizeof pa, s->p_adj, 0);
            one_side |= t->g[gi].n == 1 || b->n == 1;
            fprintf(f, "| %s | %s | %d%s | %.2f | %+.2f | %s | %s | %s | %s |\n", o->tests[k],
                    t->g[gi].name, t->g[gi].n,
                    pooled && (t->g[gi].n == 1 || b->n == 1) ? " †" : "",
                    s->st.sys_bleu, s->st.delta, iv, pc, pa, v);
        }
    fprintf(f, "\n");
    if (one_side && pooled)
        fprintf(f, "† One seed on a side: that config's own spread across seeds is not measured; "
                   "the test takes the table's pooled seed variance. With one seed each, a "
                   "verdict is marked tentative.\n\n");
    if (no_var)
        fprintf(f, "‡ No config of this table has two seeds, so the spread across training runs "
                   "is unknown and no verdict is given. The figure is the paired bootstrap over "
                   "the sentences alone: whether these trained models differ on these sentences, "
                   "not whether their configs do.\n\n");
    for (int k = 0; k < o->ntests; k++) write_apart(f, o->tests[k], t, &t->facts[k].pool);
    for (int k = 0; k < o->ntests; k++) {
        const TestFacts *x = &t->facts[k];
        if (!x->pool.seed_df) continue;
        fprintf(f, "- %s: the seeds' pooled standard deviation is %.2f BLEU (df %d), a run's "
                   "sentence noise %.2f, the test set's share of a difference's standard error "
                   "%.2f on average. With %d seed%s a config and %d for %s, a difference of "
                   "**%.2f BLEU** is found with 80%% power at α = %.2f (the minimum detectable "
                   "effect), %.2f at α = %.2f/%d, Holm's strictest step.\n", o->tests[k],
                sqrt(x->pool.seed_var), x->pool.seed_df, sqrt(x->pool.noise_var),
                sqrt(x->var_test), x->mde_k, x->mde_k == 1 ? "" : "s", b->n, b->name, x->mde,
                ALPHA, x->mde_strict, ALPHA, t->ncmp);
    }
    int nctl = 0, nsig = 0;
    for (int k = 0; k < o->ntests; k++) nctl += t->facts[k].nctl, nsig += t->facts[k].nctl_sig;
    if (nctl) {
        fprintf(f, "- Seed control: each config's seeds split in two (the first ⌊m/2⌋ against "
                   "the rest) and tested against each other as two configs, uncorrected: **%d of "
                   "%d** comparisons significant at %.2f, where a calibrated test calls about "
                   "%.0f%%", nsig, nctl, ALPHA, 100 * ALPHA);
        int listed = 0;
        for (int k = 0; k < o->ntests; k++)
            for (int gi = 0; gi < t->ng; gi++) {
                const SeedTest *c = &t->facts[k].ctl[gi];
                if (!c->nb || !(c->p < ALPHA)) continue;
                char s1[64], s2[64];
                const Group *g = &t->g[gi];
                fprintf(f, "%s%s on %s, %s against %s (%+.2f, p = %.4f)", listed++ ? "; " : " (",
                        g->name, o->tests[k], seed_list(s1, sizeof s1, g, 0, c->nb),
                        seed_list(s2, sizeof s2, g, c->nb, c->ns), c->delta, c->p);
            }
        fprintf(f, "%s.\n", listed ? ")" : "");
    }
    fprintf(f, "\n");
}

/* The mean tokens/s (memory 0) or peak memory (memory 1) of g's runs on the table's reference
 * machine; NAN without one. */
static double ref_mean(const Table *t, const Group *g, int memory) {
    double s = 0;
    int n = 0;
    for (int i = 0; i < g->n; i++) {
        double v = memory ? run_peak(g->runs[i]) : g->runs[i]->log.tok_s;
        if (on_ref(t, g->runs[i]) && isfinite(v)) s += v, n++;
    }
    return n ? s / n : NAN;
}

/* The page's opening: for each table with a baseline, each config's Δ and verdict per test
 * set and its speed and peak memory relative to the baseline, then the configs by verdict. */
static void write_summary(FILE *f, const ReportOpts *o, const Table *tables, int nt) {
    int any = 0;
    for (int ti = 0; ti < nt; ti++) any |= tables[ti].base >= 0 && tables[ti].ng > 1;
    if (!any) return;
    fprintf(f, "## Summary\n\n");
    for (int ti = 0; ti < nt; ti++) {
        const Table *t = &tables[ti];
        if (t->base < 0 || t->ng < 2) continue;
        const Group *b = &t->g[t->base];
        double base_tok = ref_mean(t, b, 0), base_mem = ref_mean(t, b, 1);
        fprintf(f, "**%s**, against %s: Δ BLEU (beam) of the seeds' means, with the verdict "
                   "after Holm's correction, and the training runs' own tokens/s and peak "
                   "memory relative to %s's on %s (runs trained at other times, loads and "
                   "revisions: a benchmark of one sitting, bench/study_speed.sh, compares speed "
                   "better).\n\n"
                   "| config |", t->t->title, b->name, b->name, t->ref);
        for (int k = 0; k < o->ntests; k++) fprintf(f, " %s |", o->tests[k]);
        fprintf(f, " speed | memory |\n|---|");
        for (int k = 0; k < o->ntests; k++) fprintf(f, "---|");
        fprintf(f, "--:|--:|\n");
        /* cls: 0 the same on every test set, 1 better on all, 2 worse on all, 3 mixed, 4 none */
        int *cls = xcalloc((size_t)t->ng, sizeof *cls);
        for (int gi = 0; gi < t->ng; gi++) {
            if (gi == t->base) continue;
            int seen[4] = {0};
            fprintf(f, "| %s |", t->g[gi].name);
            for (int k = 0; k < o->ntests; k++) {
                const Sig *s = &t->sig[(size_t)gi * o->ntests + k];
                int v = verdict_kind(s);
                seen[v] = 1;
                if (v == V_BETTER || v == V_WORSE)
                    fprintf(f, " **%+.2f %s** (adjusted p %s%.3f) |", s->st.delta,
                            v == V_BETTER ? "better" : "worse", s->p_adj < 0.001 ? "< " : "",
                            fmax(s->p_adj, 0.001));
                else if (v == V_NONE) fprintf(f, " %+.2f (no verdict) |", s->st.delta);
                else fprintf(f, " %+.2f |", s->st.delta);
            }
            double tok = ref_mean(t, &t->g[gi], 0), mem = ref_mean(t, &t->g[gi], 1);
            if (isfinite(tok) && isfinite(base_tok) && base_tok > 0)
                fprintf(f, " %.2f× |", tok / base_tok);
            else fprintf(f, " " DASH " |");
            if (isfinite(mem) && isfinite(base_mem) && base_mem > 0)
                fprintf(f, " %.2f× |\n", mem / base_mem);
            else fprintf(f, " " DASH " |\n");
            cls[gi] = seen[V_NONE] ? 4
                      : seen[V_BETTER] && !seen[V_WORSE] && !seen[V_SAME] ? 1
                      : seen[V_WORSE] && !seen[V_BETTER] && !seen[V_SAME] ? 2
                      : seen[V_BETTER] || seen[V_WORSE]                   ? 3
                                                                          : 0;
        }
        fprintf(f, "\n");
        static const char *const heads[5] = {
            "Indistinguishable from %s on every test set", "Better than %s on every test set",
            "Worse than %s on every test set", "Different from %s on some test sets only",
            "No verdict against %s (one seed a config)"};
        for (int c = 0; c < 5; c++) {
            int n = 0;
            for (int gi = 0; gi < t->ng; gi++) n += gi != t->base && cls[gi] == c;
            if (!n) continue;
            fprintf(f, "- ");
            fprintf(f, heads[c], b->name);
            fprintf(f, ":");
            for (int gi = 0, i = 0; gi < t->ng; gi++) {
                if (gi != t->base && cls[gi] == c)
                    fprintf(f, "%s %s", i++ ? "," : "", t->g[gi].name);
                if (gi == t->base || cls[gi] != c || c != 3) continue;
                for (int k = 0, j = 0; k < o->ntests; k++) { /* where it differs */
                    int v = verdict_kind(&t->sig[(size_t)gi * o->ntests + k]);
                    if (v == V_BETTER || v == V_WORSE)
                        fprintf(f, "%s%s on %s", j++ ? ", " : " (", v == V_BETTER ? "better" : "worse",
                                o->tests[k]);
                    if (k == o->ntests - 1 && j) fprintf(f, ")");
                }
            }
            fprintf(f, ".\n");
        }
        const TestFacts *x = &t->facts[0];
        for (int k = 0; k < o->ntests; k++) write_apart(f, o->tests[k], t, &t->facts[k].pool);
        if (x->pool.seed_df)
            fprintf(f, "- \"Indistinguishable\" is no proof of equality: on %s, with these seeds, "
                       "a difference under about %.2f BLEU is likely to go unseen (the minimum "
                       "detectable effect).\n", o->tests[0], x->mde);
        int nctl = 0, nsig = 0;
        for (int k = 0; k < o->ntests; k++) nctl += t->facts[k].nctl, nsig += t->facts[k].nctl_sig;
        if (nctl)
            fprintf(f, "- Seed control: %d of %d comparisons of a config's seeds against its own "
                       "other seeds are significant at %.2f.\n", nsig, nctl, ALPHA);
        if (t->t->pending && t->t->pending[0])
            fprintf(f, "- Not trained yet (no run archived): %s.\n", t->t->pending);
        fprintf(f, "\n");
        free(cls);
    }
}

static void file_name(char *buf, size_t n, const char *stem, const char *tag) {
    snprintf(buf, n, "%s%s%s.png", stem, tag && tag[0] ? "_" : "", tag ? tag : "");
}

/* Mean curves of each group: at each epoch every run of the group reached. */
static Status write_curves(const ReportOpts *o, const Table *t, const char *png, Err *err) {
    char path[1400];
    snprintf(path, sizeof path, "%s/%s", o->out_dir, png);
    const char **names = xcalloc((size_t)t->ng, sizeof *names);
    CurvePoint **pts = xcalloc((size_t)t->ng, sizeof *pts);
    int *npts = xcalloc((size_t)t->ng, sizeof *npts);
    for (int gi = 0; gi < t->ng; gi++) {
        const Group *g = &t->g[gi];
        names[gi] = g->name;
        int emax = 0;
        for (int i = 0; i < g->n; i++)
            if (run_epochs(g->runs[i]) > emax) emax = run_epochs(g->runs[i]);
        pts[gi] = xcalloc((size_t)(emax > 0 ? emax : 1), sizeof **pts);
        for (int e = 1; e <= emax; e++) {
            double bl = 0, pp = 0, h = 0;
            int have = 0, nh = 0; /* nh: runs on the reference machine, whose times count */
            for (int i = 0; i < g->n; i++)
                for (int j = 0; j < g->runs[i]->log.nval; j++) {
                    const RunVal *v = &g->runs[i]->log.val[j];
                    if (v->epoch != e) continue;
                    bl += v->val_bleu, pp += v->val_ppl, have++;
                    if (on_ref(t, g->runs[i])) h += v->elapsed / 3600.0, nh++;
                    break;
                }
            if (have == g->n)
                pts[gi][npts[gi]++] = (CurvePoint){e, bl / have, pp / have, nh ? h / nh : NAN};
        }
    }
    Status rc = plot_curves_png(path, "validation curves (mean over seeds)", t->ng, names,
                                (const CurvePoint *const *)pts, npts, err);
    for (int gi = 0; gi < t->ng; gi++) free(pts[gi]);
    free(names), free(pts), free(npts);
    return rc;
}

static Status write_tradeoff(const ReportOpts *o, const Table *t, const char *png, int K,
                             Err *err) {
    char path[1400], title[256];
    snprintf(path, sizeof path, "%s/%s", o->out_dir, png);
    RunPoint *p = xcalloc((size_t)t->ng, sizeof *p);
    for (int gi = 0; gi < t->ng; gi++) {
        const Group *g = &t->g[gi];
        double *v = xcalloc((size_t)g->n, sizeof *v), *h = xcalloc((size_t)g->n, sizeof *h);
        group_scores(g, o->tests[0], 2, v);
        int nh = 0; /* the times of the runs on the reference machine alone */
        for (int i = 0; i < g->n; i++)
            if (on_ref(t, g->runs[i])) h[nh++] = run_secs(g->runs[i]) / 3600.0;
        p[gi] = (RunPoint){g->name, mean_of(v, g->n), g->n > 1 ? sd_of(v, g->n) : NAN,
                           (double)g->runs[0]->params, nh ? mean_of(h, nh) : NAN};
        free(v), free(h);
    }
    if (t->ref_split)
        snprintf(title, sizeof title, "%s BLEU with beam %d (mean over seeds); hours on %s",
                 o->tests[0], K, t->ref);
    else snprintf(title, sizeof title, "%s BLEU with beam %d (mean over seeds)", o->tests[0], K);
    Status rc = plot_tradeoff_png(path, title, p, t->ng, err);
    free(p);
    return rc;
}

/* The across-tables section (report.h): every attention's BLEU with beam K at each table's x,
 * a table per test set and across.png. Nothing when fewer than two tables have an x. */
static Status write_across(FILE *f, const ReportOpts *o, const Table *tables, int nt, int K,
                           Err *err) {
    int nx = 0, *tx = xcalloc((size_t)nt + 1, sizeof *tx); /* the tables with an x, by x */
    for (int ti = 0; ti < nt; ti++)
        if (tables[ti].t->has_x) {
            int j = nx++;
            for (; j > 0 && tables[tx[j - 1]].t->x > tables[ti].t->x; j--) tx[j] = tx[j - 1];
            tx[j] = ti;
        }
    if (!o->x_label || nx < 2) {
        free(tx);
        return STATUS_OK;
    }
    /* the series: each attention, in the order of its first config */
    int cap = 0, ns = 0;
    for (int i = 0; i < nx; i++) cap += tables[tx[i]].ng;
    char(*name)[64] = xcalloc((size_t)cap, sizeof *name);
    for (int i = 0; i < nx; i++)
        for (int gi = 0; gi < tables[tx[i]].ng; gi++) {
            char a[64];
            config_attention_text(&tables[tx[i]].g[gi].runs[0]->cfg, a, sizeof a);
            int j = 0;
            while (j < ns && strcmp(name[j], a)) j++;
            if (j == ns) snprintf(name[ns++], sizeof name[0], "%s", a);
        }
    size_t cells = (size_t)ns * (size_t)o->ntests * (size_t)nx;
    double *y = xcalloc(cells, sizeof *y), *sd = xcalloc(cells, sizeof *sd);
    double *xs = xcalloc((size_t)nx, sizeof *xs);
    int *seeds = xcalloc(cells, sizeof *seeds);
    for (size_t c = 0; c < cells; c++) y[c] = sd[c] = NAN;
    for (int i = 0; i < nx; i++) {
        const Table *t = &tables[tx[i]];
        xs[i] = t->t->x;
        for (int gi = 0; gi < t->ng; gi++) {
            const Group *g = &t->g[gi];
            char a[64];
            config_attention_text(&g->runs[0]->cfg, a, sizeof a);
            int j = 0;
            while (strcmp(name[j], a)) j++;
            double *v = xcalloc((size_t)g->n, sizeof *v);
            for (int k = 0; k < o->ntests; k++) {
                size_t c = ((size_t)j * o->ntests + k) * nx + i;
                if (isfinite(y[c])) continue; /* two configs of one attention: the first */
                group_scores(g, o->tests[k], 2, v);
                y[c] = mean_of(v, g->n), sd[c] = g->n > 1 ? sd_of(v, g->n) : NAN;
                seeds[c] = g->n;
            }
            free(v);
        }
    }
    fprintf(f, "## BLEU against %s\n\nEach attention's test BLEU with beam %d at each table's "
               "%s: the mean ± the standard deviation over its seeds (their number in "
               "brackets).\n\n", o->x_label, K, o->x_label);
    for (int k = 0; k < o->ntests; k++) {
        fprintf(f, "| %s | ", o->tests[k]);
        for (int i = 0; i < nx; i++) fprintf(f, "%s%g (%s) |", i ? " " : "", xs[i],
                                             tables[tx[i]].t->tag);
        fprintf(f, "\n|---|");
        for (int i = 0; i < nx; i++) fprintf(f, "--:|");
        fprintf(f, "\n");
        for (int j = 0; j < ns; j++) {
            fprintf(f, "| %s |", name[j]);
            for (int i = 0; i < nx; i++) {
                size_t c = ((size_t)j * o->ntests + k) * nx + i;
                if (!isfinite(y[c])) fprintf(f, " " DASH " |");
                else if (!isfinite(sd[c])) fprintf(f, " %.2f (1) |", y[c]);
                else fprintf(f, " %.2f ± %.2f (%d) |", y[c], sd[c], seeds[c]);
            }
            fprintf(f, "\n");
        }
        fprintf(f, "\n");
    }
    fprintf(f, "![test BLEU against %s](across.png)\n\n", o->x_label);
    PlotSeries *ps = xcalloc((size_t)ns, sizeof *ps); /* y and sd are [series][test][x] */
    for (int j = 0; j < ns; j++)
        ps[j] = (PlotSeries){name[j], nx, xs, y + (size_t)j * o->ntests * nx,
                             sd + (size_t)j * o->ntests * nx};
    char path[1400], title[256], ylabel[64];
    snprintf(path, sizeof path, "%s/across.png", o->out_dir);
    snprintf(title, sizeof title, "test BLEU with beam %d, the mean over seeds", K);
    snprintf(ylabel, sizeof ylabel, "BLEU, beam %d", K);
    Status rc = plot_series_png(path, title, o->x_label, ylabel, o->tests, o->ntests, ps, ns, err);
    free(ps), free(y), free(sd), free(xs), free(seeds), free(name), free(tx);
    return rc;
}

/* 1 if map m of an archive is one the report draws: a chosen sentence of the first test set. */
static int drawn_map(const ReportOpts *o, const ArchiveMap *m) {
    if (strcmp(m->test, o->tests[0])) return 0;
    for (int k = 0; k < o->nsentences; k++)
        if (m->sentence == o->sentences[k]) return 1;
    return 0;
}

/* How peaked a group's weights are, over the rows of every drawn map of its runs: sums of each
 * row's entropy −Σ_s w_s ln w_s (nats; the row renormalised, its weights being rounded), of
 * the entropy ln S of a uniform row over the same S source pieces, and of the largest weight;
 * *rows counts the rows. */
static void map_sharpness(const ReportOpts *o, const Group *g, double *h, double *u, double *mx,
                          int *rows) {
    *h = *u = *mx = 0, *rows = 0;
    for (int i = 0; i < g->n; i++)
        for (int m = 0; m < g->runs[i]->nmaps; m++) {
            const ArchiveMap *am = &g->runs[i]->maps[m];
            if (!drawn_map(o, am) || am->map.S < 1) continue;
            for (int t = 0; t < am->map.T; t++) {
                const float *w = am->map.w + (size_t)t * am->map.S;
                double z = 0, top = 0, e = 0;
                for (int j = 0; j < am->map.S; j++) z += w[j], top = fmax(top, w[j]);
                if (!(z > 0)) continue;
                for (int j = 0; j < am->map.S; j++)
                    if (w[j] > 0) e -= w[j] / z * log(w[j] / z);
                *h += e, *u += log((double)am->map.S), *mx += top / z, (*rows)++;
            }
        }
}

/* A table of how peaked every group's weights are (map_sharpness) into f, and the heatmaps of
 * the first run of each group that has them into the gallery gal. */
static Status write_maps(FILE *f, FILE *gal, const ReportOpts *o, const Table *t, Err *err) {
    int any = 0;
    for (int gi = 0; gi < t->ng; gi++) {
        double h, u, mx;
        int rows;
        map_sharpness(o, &t->g[gi], &h, &u, &mx, &rows);
        if (!rows) continue;
        if (!any++)
            fprintf(f, "How peaked the weights are, over every row of the chosen sentences' maps "
                       "in every seed's greedy translation (the weights the maps below draw: a "
                       "Transformer's last cross-attention layer, heads averaged): the mean "
                       "entropy of a row, that of a uniform row over the same source pieces, "
                       "and the mean largest weight of a row.\n\n| config | rows | entropy "
                       "(nats) | uniform (nats) | largest weight |\n|---|--:|--:|--:|--:|\n");
        fprintf(f, "| %s | %d | %.2f | %.2f | %.2f |\n", t->g[gi].name, rows, h / rows, u / rows,
                mx / rows);
    }
    if (any) fprintf(f, "\n");
    int tagged = t->t->tag && t->t->tag[0];
    fprintf(f, "The heatmaps of each config's first run: [%s](%s%s%s).\n\n", GALLERY, GALLERY,
            tagged ? "#" : "", tagged ? t->t->tag : "");
    fprintf(gal, "## %s\n\n", t->t->title);
    if (tagged) fprintf(gal, "<a id=\"%s\"></a>\n\n", t->t->tag);
    f = gal;
    for (int gi = 0; gi < t->ng; gi++) {
        const Group *g = &t->g[gi];
        const Archive *a = NULL;
        for (int i = 0; i < g->n && !a; i++)
            if (g->runs[i]->nmaps) a = g->runs[i];
        if (!a) {
            fprintf(f, "- %s: no map (%s)\n\n", g->name,
                    g->runs[0]->cfg.model.type == MODEL_RNN &&
                            g->runs[0]->cfg.model.attention == ATTN_NONE
                        ? "the model has no attention"
                        : "its archives hold none: a kind without weights to draw, or no "
                          "sentence chosen");
            continue;
        }
        for (int k = 0; k < o->nsentences; k++)
            for (int m = 0; m < a->nmaps; m++) {
                const ArchiveMap *am = &a->maps[m];
                if (am->sentence != o->sentences[k] || strcmp(am->test, o->tests[0])) continue;
                char png[600], path[1400], title[800];
                snprintf(png, sizeof png, "attention_%s_%d.png", g->name, am->sentence);
                snprintf(path, sizeof path, "%s/%s", o->out_dir, png);
                snprintf(title, sizeof title, "%s (%s): %s sentence %d (greedy)", g->name,
                         a->name, am->test, am->sentence);
                if (plot_attention_png(&am->map, path, title, err)) return STATUS_ERR;
                fprintf(f, "#### %s, %s sentence %d\n\n![attention of %s on sentence %d](%s)\n\n",
                        g->name, am->test, am->sentence, g->name, am->sentence, png);
            }
    }
    return STATUS_OK;
}

/* The table of every run; a revision built from uncommitted changes ("-dirty") says so in
 * words, and a line after the table counts the archives that do not record their SentencePiece
 * model's hash. */
static void write_runs(FILE *f, const Table *tables, int nt) {
    int nruns = 0, unhashed = 0;
    fprintf(f, "## Runs\n\n| run | config | seed | checkpoint scored (val BLEU) | trained on | "
               "revision | archive |\n|---|---|--:|---|---|---|---|\n");
    for (int ti = 0; ti < nt; ti++)
        for (int gi = 0; gi < tables[ti].ng; gi++) {
            const Group *g = &tables[ti].g[gi];
            for (int i = 0; i < g->n; i++) {
                const Archive *a = g->runs[i];
                char seed[32], where[1024], rev[256], marked[512] = "", vb[32];
                trained_on(a, where, sizeof where);
                revisions(a, rev, sizeof rev);
                int said = 0;
                for (const char *r = rev; *r;) { /* "A, B-dirty, C": each revision in turn */
                    size_t len = strcspn(r, ",");
                    int dirty = len >= 6 && !strncmp(r + len - 6, "-dirty", 6);
                    str_appendf(marked, sizeof marked, "%.*s%s", (int)len, r,
                                dirty ? " (uncommitted changes)" : "");
                    said |= dirty;
                    r += len;
                    if (*r == ',') str_appendf(marked, sizeof marked, ","), r++;
                }
                if (a->uncommitted_changes && !said)
                    str_appendf(marked, sizeof marked, " (uncommitted changes)");
                if (isfinite(a->checkpoint_val_bleu))
                    snprintf(vb, sizeof vb, " (%.2f)", a->checkpoint_val_bleu);
                else snprintf(vb, sizeof vb, " (no validation had run)");
                fprintf(f, "| %s | %s | %s | %s%s | %s | %s | `%s` |\n", a->name, g->name,
                        seed_text(a, seed, sizeof seed), a->checkpoint, vb, where, marked,
                        a->dir);
                nruns++, unhashed += !a->spm_hash_known;
            }
        }
    fprintf(f, "\n");
    if (unhashed)
        fprintf(f, "%d of these %d archives do not record their SentencePiece model's hash "
                   "(`spm_hash` in run.json), so whether they share one is not checked.\n\n",
                unhashed, nruns);
}

static Status close_checked(FILE *f, const char *path, Err *err) {
    int bad = ferror(f);
    if (fclose(f) != 0 || bad)
        return err_set(err, "%s: write failed (%s); check the free space and permissions of "
                       "the output folder", path, strerror(errno));
    return STATUS_OK;
}

static Status append_file(FILE *f, const char *path, Err *err) {
    FILE *in = fopen(path, "rb");
    if (!in) return err_set(err, "%s: cannot read the notes: %s", path, strerror(errno));
    char buf[8192];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0) fwrite(buf, 1, n, f);
    int bad = ferror(in);
    fclose(in);
    return bad ? err_set(err, "%s: read error", path) : STATUS_OK;
}

static Status write_md(const ReportOpts *o, Table *tables, int nt, int K, float alpha,
                       Err *err) {
    char path[1400];
    snprintf(path, sizeof path, "%s/%s", o->out_dir, o->md_file);
    FILE *f = fopen(path, "w");
    if (!f) return err_set(err, "%s: cannot write: %s", path, strerror(errno));
    char gpath[1400];
    snprintf(gpath, sizeof gpath, "%s/%s", o->out_dir, GALLERY);
    FILE *gal = fopen(gpath, "w");
    if (!gal) {
        fclose(f);
        return err_set(err, "%s: cannot write: %s", gpath, strerror(errno));
    }
    fprintf(f, "# %s\n\n", o->title);
    if (o->intro) fprintf(f, "%s\n\n", o->intro);
    fprintf(gal, "# %s: attention heatmaps\n\nThe greedy translations' attention of the chosen "
                 "sentences of %s, from the first run of each config (the report: [%s](%s)).\n\n",
            o->title, o->tests[0], o->md_file, o->md_file);
    write_summary(f, o, tables, nt);
    fprintf(f, "Test sets:");
    for (int k = 0; k < o->ntests; k++) {
        const ArchiveTest *x = archive_test(tables[0].g[0].runs[0], o->tests[k]);
        fprintf(f, "%s %s (`%s`, %ld sentences)", k ? "," : "", o->tests[k], x->tgt, x->n);
    }
    fprintf(f, ". Decoding: greedy, and beam search with K = %d and length penalty α = %.2f "
               "(Wu et al. 2016 eq. 14), at most 2·S + 10 target pieces. BLEU and chrF as "
               "sacreBLEU's defaults, in points; a config's figures are the mean ± the sample "
               "standard deviation over its seeds. Training time, tokens/s and peak memory are "
               "each run's own (metrics.jsonl), on the machine it trained on, and are averaged "
               "only over the runs of one machine.\n\n", K,
            (double)alpha);
    Status rc = write_across(f, o, tables, nt, K, err);
    for (int ti = 0; ti < nt && !rc; ti++) {
        Table *t = &tables[ti];
        char png[600];
        fprintf(f, "## %s\n\n### Scores\n\n", t->t->title);
        write_scores(f, o, t, K);
        if (o->echo) {
            fprintf(o->echo, "%s\n\n", t->t->title);
            write_scores(o->echo, o, t, K);
            fprintf(o->echo, "\n");
        }
        fprintf(f, "\n");
        if (table_concat(o, t) > 1) write_split(f, o, t, K);
        fprintf(f, "### Cost\n\n");
        write_cost(f, t);
        fprintf(f, "\n");
        if (t->base >= 0) {
            fprintf(f, "### Significance against %s\n\n", t->g[t->base].name);
            write_significance(f, o, t, K);
        } else if (t->t->baseline_due) {
            fprintf(f, "### Significance against %s\n\n%s, the baseline, has no archived run "
                       "yet: the configs are tested against it once it has.\n\n",
                    t->t->baseline_due, t->t->baseline_due);
        }
        file_name(png, sizeof png, "curves", t->t->tag);
        fprintf(f, "### Validation curves\n\n![validation BLEU and perplexity by epoch](%s)\n\n",
                png);
        rc = write_curves(o, t, png, err);
        if (rc) break;
        file_name(png, sizeof png, "tradeoff", t->t->tag);
        fprintf(f, "### Test BLEU by model size and by training time\n\nEach config's mean "
                   "over its seeds, with a bar of ± one standard deviation of its seeds.\n\n"
                   "![test BLEU against parameters and training time](%s)\n\n", png);
        rc = write_tradeoff(o, t, png, K, err);
        if (rc) break;
        fprintf(f, "### Attention (greedy translations of %s)\n\n", o->tests[0]);
        rc = write_maps(f, gal, o, t, err);
    }
    if (!rc) {
        write_runs(f, tables, nt);
        char cpu[256], now[32];
        fprintf(f, "Report written %s on %s by trainer %s.\n",
                machine_utc_now(now, sizeof now), machine_cpu(cpu, sizeof cpu),
                trainer_revision());
        if (o->notes_file) {
            fprintf(f, "\n");
            rc = append_file(f, o->notes_file, err);
        }
    }
    Status c = close_checked(f, path, err);
    Status cg = close_checked(gal, gpath, err);
    return rc ? rc : c ? c : cg;
}

/* ---- CSV ---- */

static void csv_text(FILE *f, const char *s) {
    if (!strpbrk(s, ",\"\r\n")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (const char *p = s; *p; p++) {
        if (*p == '"') fputc('"', f);
        fputc(*p, f);
    }
    fputc('"', f);
}

static void csv_num(FILE *f, double v, const char *fmt) {
    fputc(',', f);
    if (isfinite(v)) fprintf(f, fmt, v);
}

static Status write_csv(const ReportOpts *o, const Table *tables, int nt, Err *err) {
    char path[1400];
    snprintf(path, sizeof path, "%s/%s", o->out_dir, o->csv_file);
    FILE *f = fopen(path, "w");
    if (!f) return err_set(err, "%s: cannot write: %s", path, strerror(errno));
    fprintf(f, "table,config,run,seed,model,attention,parameters,precision,epochs,train_seconds,"
               "tok_s,peak_mib,best_val_ppl,best_val_bleu,checkpoint,checkpoint_val_bleu");
    int joined = 0; /* the split scores' columns, when some table has joined documents */
    for (int ti = 0; ti < nt; ti++) joined |= table_concat(o, &tables[ti]) > 1;
    for (int k = 0; k < o->ntests; k++) {
        fprintf(f, ",%s_bleu_greedy,%s_chrf_greedy,%s_bleu_beam,%s_chrf_beam", o->tests[k],
                o->tests[k], o->tests[k], o->tests[k]);
        if (joined)
            fprintf(f, ",%s_concat,%s_split_mismatches_beam,%s_bleu_split_beam", o->tests[k],
                    o->tests[k], o->tests[k]);
    }
    fprintf(f, "\n");
    for (int ti = 0; ti < nt; ti++)
        for (int gi = 0; gi < tables[ti].ng; gi++) {
            const Group *g = &tables[ti].g[gi];
            for (int i = 0; i < g->n; i++) {
                const Archive *a = g->runs[i];
                char attn[64], seed[32];
                csv_text(f, tables[ti].t->title);
                fputc(',', f);
                csv_text(f, g->name);
                fputc(',', f);
                csv_text(f, a->name);
                fprintf(f, ",%s,%s,%s,%ld,%s,%d", seed_text(a, seed, sizeof seed),
                        model_type_names[a->cfg.model.type],
                        config_attention_text(&a->cfg, attn, sizeof attn), a->params,
                        precision_names[a->cfg.precision], run_epochs(a));
                csv_num(f, run_secs(a), "%.1f");
                csv_num(f, a->log.tok_s, "%.1f");
                csv_num(f, run_peak(a), "%.1f");
                csv_num(f, run_best_ppl(a), "%.4f");
                csv_num(f, a->log.nval ? runlog_best_bleu(&a->log, NULL) : NAN, "%.4f");
                fprintf(f, ",%s", a->checkpoint);
                csv_num(f, a->checkpoint_val_bleu, "%.4f");
                for (int k = 0; k < o->ntests; k++) {
                    const ArchiveTest *x = archive_test(a, o->tests[k]);
                    fprintf(f, ",%.4f,%.4f,%.4f,%.4f", x->bleu_g, x->chrf_g, x->bleu_b, x->chrf_b);
                    if (joined) {
                        fprintf(f, ",%d,", x->concat);
                        if (x->split_mismatch_b >= 0) fprintf(f, "%ld", x->split_mismatch_b);
                        csv_num(f, x->split_bleu_b, "%.4f");
                    }
                }
                fprintf(f, "\n");
            }
        }
    return close_checked(f, path, err);
}

static Status write_sig_csv(const ReportOpts *o, const Table *tables, int nt, Err *err) {
    int any = 0;
    for (int ti = 0; ti < nt; ti++) any |= tables[ti].base >= 0;
    if (!any) return STATUS_OK;
    char path[1400];
    snprintf(path, sizeof path, "%s/significance.csv", o->out_dir);
    FILE *f = fopen(path, "w");
    if (!f) return err_set(err, "%s: cannot write: %s", path, strerror(errno));
    fprintf(f, "table,test,comparison,config,baseline,seeds,baseline_seeds,bleu,baseline_bleu,"
               "delta,delta_lo,delta_hi,se,df,p,p_mc,p_adjusted,p_sentences,var_seed,var_test,"
               "resamples,verdict\n");
    for (int ti = 0; ti < nt; ti++) {
        const Table *t = &tables[ti];
        if (t->base < 0) continue;
        for (int k = 0; k < o->ntests; k++)
            for (int gi = 0; gi < t->ng; gi++)
                for (int c = 0; c < 2; c++) { /* against the baseline, then the seed control */
                    const SeedTest *st;
                    const Sig *s = NULL;
                    char v[96], x[300], y[300];
                    const Group *g = &t->g[gi];
                    if (c == 0) {
                        if (gi == t->base) continue;
                        s = &t->sig[(size_t)gi * o->ntests + k];
                        st = &s->st;
                        verdict(s, v, sizeof v);
                        snprintf(x, sizeof x, "%s", g->name);
                        snprintf(y, sizeof y, "%s", t->g[t->base].name);
                    } else {
                        st = &t->facts[k].ctl[gi];
                        if (!st->nb) continue;
                        char s1[64], s2[64];
                        snprintf(v, sizeof v, "%s", st->p < ALPHA ? "significant" : "not significant");
                        snprintf(x, sizeof x, "%s %s", g->name, seed_list(s2, sizeof s2, g, st->nb, st->ns));
                        snprintf(y, sizeof y, "%s %s", g->name, seed_list(s1, sizeof s1, g, 0, st->nb));
                    }
                    csv_text(f, t->t->title);
                    fprintf(f, ",%s,%s,", o->tests[k], c ? "seed_control" : "baseline");
                    csv_text(f, x);
                    fputc(',', f);
                    csv_text(f, y);
                    fprintf(f, ",%d,%d", st->ns, st->nb);
                    csv_num(f, st->sys_bleu, "%.4f");
                    csv_num(f, st->base_bleu, "%.4f");
                    csv_num(f, st->delta, "%.4f");
                    csv_num(f, st->lo, "%.4f");
                    csv_num(f, st->hi, "%.4f");
                    csv_num(f, st->se, "%.4f");
                    csv_num(f, st->df, "%.1f");
                    csv_num(f, st->p, "%.6g");
                    csv_num(f, st->p_mc, "%.6g");
                    csv_num(f, s ? s->p_adj : NAN, "%.6g");
                    csv_num(f, st->p_sentences, "%.6g");
                    csv_num(f, st->var_seed, "%.6f");
                    csv_num(f, st->var_test, "%.6f");
                    fprintf(f, ",%d,", t->resamples);
                    csv_text(f, v);
                    fputc('\n', f);
                }
    }
    return close_checked(f, path, err);
}

Status report_write(const ReportOpts *o, const ReportTable *rt, int ntables, Err *err) {
    CHECK(o && rt && ntables >= 1 && o->ntests >= 1, "report_write: needs a table and a test set");
    Table *t = xcalloc((size_t)ntables, sizeof *t);
    Status rc = STATUS_ERR;
    int K = 0;
    float alpha = 0;
    if (make_dirs(o->out_dir, err)) {
        err_prefix(err, "the report's folder");
        goto done;
    }
    for (int i = 0; i < ntables; i++) {
        if (rt[i].nruns < 1) {
            err_set(err, "%s has no run to report", rt[i].title);
            goto done;
        }
        for (int r = 0; r < rt[i].nruns; r++) {
            const DecodeOpts *d = &rt[i].runs[r]->beam;
            if (!K) K = d->beam, alpha = d->len_penalty;
            else if (d->beam != K || d->len_penalty != alpha) {
                err_set(err, "run %s was decoded with beam %d, α %.2f, others with beam %d, "
                        "α %.2f; archive every run with the same settings", rt[i].runs[r]->name,
                        d->beam, (double)d->len_penalty, K, (double)alpha);
                goto done;
            }
        }
        if (build_table(o, &rt[i], &t[i], err)) goto done;
    }
    for (int i = 0; i < ntables; i++) significance(o, &t[i]);
    if (write_csv(o, t, ntables, err) || write_sig_csv(o, t, ntables, err) ||
        write_md(o, t, ntables, K, alpha, err))
        goto done;
    rc = STATUS_OK;
done:
    for (int i = 0; i < ntables; i++) {
        for (int g = 0; g < t[i].ng; g++) free(t[i].g[g].runs);
        free(t[i].g);
        free(t[i].sig);
        for (int k = 0; t[i].facts && k < o->ntests; k++) {
            free(t[i].facts[k].ctl);
            seed_pool_free(&t[i].facts[k].pool);
        }
        free(t[i].facts);
    }
    free(t);
    return rc;
}
