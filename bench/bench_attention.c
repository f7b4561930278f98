/* bench_attention.c — forward and backward time and extra memory of each attention kind of the
 * attention table (attention/attention.h) on the CPU backend against sequence length, causal and
 * not (a benchmark, not a test).
 *
 *   bench_attention [--threads N] [--min-len 16] [--max-len 4096] [--heads 8] [--head-size 64]
 *                   [--causal | --non-causal] [--kinds a,b,...] [--reps R] [--linformer-k 32]
 *                   [--local-window 10] [--additive-max-len 512] [--clock wall|cpu] [--csv FILE]
 *                   [--plot PNG]
 *
 * --threads: 0 (default) all cores. --kinds: a comma-separated subset of the table's kinds, by
 * their config names (default: every kind). --clock cpu (with --threads 1 only): time the passes
 * by the process's CPU time (CLOCK_PROCESS_CPUTIME_ID) instead of the wall clock, so that other
 * jobs on the machine take the core from the benchmark without adding to its figures (they still
 * share its caches and memory bandwidth; the output names the clock).
 *
 * Self-attention of one sequence: q, k, v [1, NH, T, HS] (uniform in [−0.5, 0.5)), every key
 * visible (no padding), T = min-len, 2·min-len, …, max-len. Two series, one after the other: not
 * causal, then causal (key s visible to query t iff s <= t); --causal or --non-causal runs one.
 * Each kind is its row's attention_forward and attention_backward (attention.h) on heads that
 * projections would have made (attention_declare with own_proj = 0, as in the Transformer: the
 * projections and a query transform such as luong_general's W_a are matmuls outside it, not
 * timed), with the config's default options: linformer r = --linformer-k (default 32) with
 * n = T at every length (its projections must span the sequence), sharing none; luong_local
 * local-p, the general score, window D = --local-window (default 10). The kinds whose scores call
 * additive_attn_forward (bahdanau, luong_concat: NH·T²·A tanh, A = HS) run up to
 * T = --additive-max-len (default 512) only. Kinds without a causal form (the row's causal_ok)
 * are left out of the causal series (the output names them; the CSV has no causal rows for
 * them).
 *
 * Time: each (series, kind, T) runs one warm-up forward + backward, then R timed ones (R = --reps,
 * else 9 up to T = 256, 5 up to 1024, 3 beyond); forward and backward are timed separately (wall
 * clock, now_seconds, or --clock cpu). Reported: the median forward ms, the median backward ms
 * and the median of their per-pass sums ("fwd+bwd"), so fwd + bwd need not equal fwd+bwd exactly.
 * Memory: each (series, kind, T) runs in a forked child. The child allocates and touches the
 * arguments (q, k, v, out, dout, dq, dk, dv, and the kind's own parameters and their gradients),
 * reads its peak resident set (getrusage ru_maxrss), then allocates what the kind needs beyond
 * its arguments once (attention_workspace's floats and attention_save_floats' for what its
 * forward keeps) and runs the passes. "extra MiB" = the peak after the passes minus the peak
 * before: pages the kind touched beyond its arguments. Before all this the child runs one
 * untimed pass at T = 16 (its buffers freed after), so that the ops' code and the BLAS and
 * OpenMP runtimes are resident before the baseline and not counted. Resolution: 4 KiB pages;
 * figures under about 0.2 MiB are at the allocator's granularity. Buffers are allocated once per
 * child, as a model reserves them once, so the timed passes do not fault in fresh pages.
 * Output: per series a Markdown table (T, kind, reps, fwd ms, bwd ms, fwd+bwd ms, extra MiB),
 * then per series the shortest T from which each kind's fwd+bwd is below sdp's at every longer
 * T measured, and linear against flash. --csv FILE: one row per (series, kind, T):
 * kind,causal,T,heads,head_size,threads,reps,fwd_ms,bwd_ms,total_ms,extra_mib (a failed child:
 * reps 0 and empty figures). --plot PNG: three log-log panels drawn by gnuplot (eval/plot.h):
 * fwd+bwd ms against T not causal, the same causal, extra MiB against T (the non-causal series;
 * the causal one when only that ran); points of 0 MiB cannot be drawn on a log axis and are left
 * out.
 */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention/attention.h"
#include "core/common.h"
#include "core/machine.h"
#include "core/rng.h"
#include "eval/plot.h"
#include "ops/cpu/cpu.h"
#include "ops/ops.h"
#include "train/train.h"

/* the kinds: the attention table's, indexed by AttentionKind (ATTN_NONE is not one) */
enum { NKINDS = ATTN_KIND_COUNT };
#define kind_names attention_kind_names

/* 1 if kind has a causal form (its row's causal_ok) */
static int kind_causal(int kind) { return attention_row((AttentionKind)kind)->causal_ok; }

/* 1 if kind's scores call additive_attn_forward (NH·T²·A tanh: capped at --additive-max-len) */
static int kind_additive(int kind) {
    const AttentionOps *r = attention_row((AttentionKind)kind);
    for (int i = 0; i < r->nops; i++)
        if (r->ops[i] == OP_ADDITIVE_ATTN_FORWARD) return 1;
    return 0;
}

typedef struct {
    int NH, HS, lf_r, window, reps_fixed, additive_max;
} Setup;

typedef struct {
    int reps;                              /* 0: the child failed; −1: not measured */
    double fwd_ms, bwd_ms, total_ms, extra_mib;
} Result;

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int g_cpu_clock; /* --clock cpu */

/* Seconds on the clock --clock chose: the wall clock, or the process's CPU time. */
static double bench_clock(void) { return g_cpu_clock ? cpu_seconds() : now_seconds(); }

static double median(double *x, int n) {
    qsort(x, n, sizeof(double), cmp_double);
    return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

static int reps_for(const Setup *su, int T) {
    if (su->reps_fixed > 0) return su->reps_fixed;
    return T <= 256 ? 9 : T <= 1024 ? 5 : 3;
}

/* n floats uniform in [lo, lo + width), touched */
static float *rand_buf(Rng *rng, size_t n, float lo, float width) {
    float *x = xmalloc(sizeof(float) * (n ? n : 1));
    for (size_t i = 0; i < n; i++) x[i] = lo + width * rng_uniform(rng);
    return x;
}

/* n zeros, touched (calloc may hand out untouched pages, which would count as "extra" later) */
static float *zero_buf(size_t n) {
    float *x = xmalloc(sizeof(float) * (n ? n : 1));
    memset(x, 0, sizeof(float) * (n ? n : 1));
    return x;
}

/* One (kind, T)'s buffers: the arguments, then what the kind needs beyond them. */
typedef struct {
    int T, len;
    size_t n;
    float *q, *k, *v, *g, *o, *dq, *dk, *dv; /* [NH, T, HS] */
    Attention at;                            /* the kind, declared for T */
    ParamSet ps;                             /* its own parameters and their gradients */
    float *save, *work;                      /* beyond the arguments */
} Bufs;

/* The arguments (touched), and the kind declared with the config's default options (linformer:
 * n = T). */
static void alloc_args(Bufs *b, int kind, int T, const Setup *su) {
    const Backend *be = backend_cpu();
    int NH = su->NH, HS = su->HS;
    memset(b, 0, sizeof *b);
    b->T = b->len = T;
    b->n = (size_t)NH * T * HS;
    Rng rng;
    rng_seed(&rng, 1, (uint64_t)T);
    b->q = rand_buf(&rng, b->n, -0.5f, 1.0f), b->k = rand_buf(&rng, b->n, -0.5f, 1.0f);
    b->v = rand_buf(&rng, b->n, -0.5f, 1.0f), b->g = rand_buf(&rng, b->n, -0.5f, 1.0f);
    b->o = zero_buf(b->n), b->dq = zero_buf(b->n);
    b->dk = zero_buf(b->n), b->dv = zero_buf(b->n);
    AttentionOptions opt = {.linformer_k = su->lf_r, .linformer_max_len = T,
                            .linformer_share = LINFORMER_SHARE_NONE, .local_window = su->window,
                            .local_mode = LOCAL_PREDICTIVE, .local_score = LOCAL_SCORE_GENERAL};
    params_init_set(&b->ps, be);
    attention_declare(&b->at, &b->ps, "attn", (AttentionKind)kind, NH * HS, NH * HS, NH, 0,
                      INIT_XAVIER, &opt);
    if (b->ps.n) {
        params_allocate(&b->ps);
        params_initialise(&b->ps, &rng, 0.1f);
        params_zero_grad(&b->ps);
    }
}

/* What the kind needs beyond its arguments (not touched here): its workspace and what its
 * forward keeps for the backward, as its attention row sizes them. */
static void alloc_extra(Bufs *b) {
    size_t nsave = attention_save_floats(&b->at, b->T, b->T);
    size_t nwork = attention_workspace(&b->at, backend_cpu(), 1, b->T, b->T);
    b->save = xmalloc(sizeof(float) * (nsave + 1));
    b->work = xmalloc(sizeof(float) * (nwork + 1));
}

static void free_bufs(Bufs *b) {
    float *p[] = {b->q, b->k, b->v, b->g, b->o, b->dq, b->dk, b->dv, b->save, b->work};
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++) free(p[i]);
    params_free(&b->ps);
    memset(b, 0, sizeof *b);
}

/* One forward (the time into *tf, seconds) and one backward (*tb) of b's kind. */
static void pass(Bufs *b, int causal, double *tf, double *tb) {
    const Backend *be = backend_cpu();
    int T = b->T;
    double t0 = bench_clock();
    attention_forward(&b->at, be, b->o, b->save, b->q, b->k, b->v, &b->len, causal, 1, T, T,
                      b->work);
    double t1 = bench_clock();
    attention_backward(&b->at, be, b->dq, b->dk, b->dv, b->g, b->o, b->save, b->q, b->k, b->v,
                       &b->len, causal, 1, T, T, b->work);
    *tf = t1 - t0, *tb = bench_clock() - t1;
}

/* One (kind, T, causal) measurement; runs in the child. A pass at T = 16 first brings the ops'
 * code, the BLAS and OpenMP runtimes and their buffers into memory, so that the baseline holds
 * them and "extra" is the kind's data alone. */
static Result measure(int kind, int T, int causal, const Setup *su) {
    Bufs b;
    double f, bw;
    alloc_args(&b, kind, 16, su);
    alloc_extra(&b);
    pass(&b, causal, &f, &bw);
    free_bufs(&b);
    alloc_args(&b, kind, T, su);
    double base = machine_peak_rss_mb();
    alloc_extra(&b);
    int reps = reps_for(su, T);
    double *tf = xmalloc(sizeof(double) * reps), *tb = xmalloc(sizeof(double) * reps);
    double *tt = xmalloc(sizeof(double) * reps);
    for (int rep = -1; rep < reps; rep++) { /* rep = -1: warm-up */
        pass(&b, causal, &f, &bw);
        if (rep >= 0) tf[rep] = f, tb[rep] = bw, tt[rep] = f + bw;
    }
    Result res = {reps, 1e3 * median(tf, reps), 1e3 * median(tb, reps), 1e3 * median(tt, reps),
                  machine_peak_rss_mb() - base};
    free(tf), free(tb), free(tt);
    free_bufs(&b);
    return res;
}

/* measure()'s arguments, for machine_run_forked. */
typedef struct {
    int kind, T, causal;
    const Setup *su;
} Job;
static void measure_job(const void *arg, void *out) {
    const Job *j = arg;
    *(Result *)out = measure(j->kind, j->T, j->causal, j->su);
}

/* Runs measure() in a child so that each figure's peak memory is its own. */
static int run_child(int kind, int T, int causal, const Setup *su, Result *out) {
    Job j = {kind, T, causal, su};
    return machine_run_forked(measure_job, &j, out, sizeof *out);
}

/* The shortest T from which kind's fwd+bwd is below ref's at every longer T where both were
 * measured; 0 when there is none. *last: the longest such T (0: none). */
static int faster_from(Result (*res)[NKINDS], int nlen, const int *lens, int kind, int ref,
                       int *last) {
    int from = 0;
    *last = 0;
    for (int i = nlen - 1; i >= 0; i--) {
        const Result *a = &res[i][kind], *b = &res[i][ref];
        if (a->reps < 0 || b->reps < 0) continue;
        if (!*last) *last = lens[i];
        if (!a->reps || !b->reps || a->total_ms >= b->total_ms) break;
        from = lens[i];
    }
    return from;
}

/* One colour and point type per kind, the same in every panel (the colours cycle past 14). */
static const char *const palette[] = {"#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e",
                                      "#e6ab02", "#a6761d", "#444444", "#1f78b4", "#b2df8a",
                                      "#fb9a99", "#cab2d6", "#ff7f00", "#6a3d9a"};
static const char *kind_colour(int kind) {
    return palette[(kind - 1) % (int)(sizeof palette / sizeof palette[0])];
}

/* The gnuplot commands of --plot: one data block per (panel, kind), then three panels. A kind
 * with no point to draw in a panel (not measured there, or 0 MiB everywhere) is named in a
 * note under the panel's key instead. */
static char *plot_body(Result (*res[2])[NKINDS], const int *run_series, int nlen,
                       const int *lens, const int *use, const Setup *su, int threads) {
    char *body = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&body, &len);
    CHECK(f != NULL, "open_memstream failed (out of memory)");
    int panel_series[3] = {0, 1, run_series[0] ? 0 : 1}, rows[3][NKINDS] = {{0}};
    for (int p = 0; p < 3; p++)
        for (int k = 1; k < NKINDS; k++) {
            int s = panel_series[p];
            if (!run_series[s] || !use[k] || (s && !kind_causal(k))) continue;
            fprintf(f, "$p%d_%s << EOD\n", p, kind_names[k]);
            for (int i = 0; i < nlen; i++) {
                const Result *r = &res[s][i][k];
                double y = p < 2 ? r->total_ms : r->extra_mib;
                if (r->reps > 0 && y > 0) fprintf(f, "%d %.6g\n", lens[i], y), rows[p][k]++;
            }
            fprintf(f, "EOD\n");
        }
    fprintf(f, "set multiplot layout 1,3 title \"attention kinds on the CPU backend: one sequence, "
               "%d heads of %d, %d thread%s\"\n", su->NH, su->HS, threads, threads == 1 ? "" : "s");
    fprintf(f, "set grid\nset logscale x 2\nset logscale y 10\nset format x '%%g'\n"
               "set xlabel 'sequence length T'\nset key top left box opaque\n");
    for (int p = 0; p < 3; p++) {
        int s = panel_series[p];
        if (p < 2)
            fprintf(f, "set title \"forward + backward, %s\"\nset ylabel 'ms'\n",
                    s ? "causal" : "not causal");
        else
            fprintf(f, "set title \"extra memory beyond the arguments, %s\"\nset ylabel 'MiB'\n",
                    s ? "causal" : "not causal");
        int drawn = 0, missing = 0;
        char note[256] = "";
        for (int k = 1; k < NKINDS; k++) {
            if (!run_series[s] || !use[k] || (s && !kind_causal(k))) continue;
            if (rows[p][k]) {
                drawn++;
                continue;
            }
            size_t l = strlen(note);
            snprintf(note + l, sizeof note - l, "%s%s", missing++ ? ", " : "", kind_names[k]);
        }
        if (!drawn) {
            fprintf(f, "set label 1 '%s' at graph 0.5, graph 0.5 center\n"
                       "plot [16:32] [1:10] 2 notitle\nunset label 1\n",
                    run_series[s] ? "nothing to draw" : "not measured");
            continue;
        }
        if (missing) /* a failed child, or no page beyond the arguments at any T */
            fprintf(f, "set label 2 'not drawn (%s): %s' at graph 0.98, graph 0.04 right\n",
                    p < 2 ? "failed" : "0 MiB at every T", note);
        for (int k = 1, n = 0; k < NKINDS; k++) {
            if (!run_series[s] || !use[k] || (s && !kind_causal(k)) || !rows[p][k]) continue;
            fprintf(f, "%s$p%d_%s using 1:2 with linespoints lw 2 lc rgb '%s' pt %d ps 0.9 "
                       "title '%s'", n++ ? ", " : "plot ", p, kind_names[k], kind_colour(k),
                    4 + k, kind_names[k]);
        }
        fprintf(f, "\nunset label 2\n");
    }
    fprintf(f, "unset multiplot\n");
    fclose(f);
    return body;
}

static int usage(void) {
    fprintf(stderr, "usage: bench_attention [--threads N] [--min-len L] [--max-len L] [--heads NH] "
                    "[--head-size HS] [--causal | --non-causal] [--kinds a,b,...] [--reps R] "
                    "[--linformer-k R] [--local-window D] [--additive-max-len L] "
                    "[--clock wall|cpu] [--csv FILE] [--plot PNG]\nkinds:");
    for (int k = 1; k < NKINDS; k++) fprintf(stderr, " %s", kind_names[k]);
    fprintf(stderr, "\n");
    return 2;
}

/* a whole number in [lo, hi], else -1 */
static int parse_int(const char *s, int lo, int hi) {
    char *end;
    long x = strtol(s, &end, 10);
    return *s && !*end && x >= lo && x <= hi ? (int)x : -1;
}

int main(int argc, char **argv) {
    backend_cpu_prefer_fast_blas(argv);
    int threads = 0, min_len = 16, max_len = 4096, only = -1;
    Setup su = {8, 64, 32, 10, 0, 512};
    int use[NKINDS] = {0};
    for (int k = 1; k < NKINDS; k++) use[k] = 1;
    const char *csv = NULL, *png = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        int *dst = NULL, lo = 1, hi = 1 << 20;
        if (!strcmp(a, "--causal")) { only = 1; continue; }
        if (!strcmp(a, "--non-causal")) { only = 0; continue; }
        if (!val) {
            fprintf(stderr, "bench_attention: %s needs a value\n", a);
            return usage();
        }
        if (!strcmp(a, "--threads")) dst = &threads, lo = 0, hi = 4096;
        else if (!strcmp(a, "--min-len")) dst = &min_len;
        else if (!strcmp(a, "--max-len")) dst = &max_len;
        else if (!strcmp(a, "--heads")) dst = &su.NH, hi = 1024;
        else if (!strcmp(a, "--head-size")) dst = &su.HS, hi = 4096;
        else if (!strcmp(a, "--reps")) dst = &su.reps_fixed, hi = 1000;
        else if (!strcmp(a, "--linformer-k")) dst = &su.lf_r, hi = 4096;
        else if (!strcmp(a, "--local-window")) dst = &su.window, hi = 1000;
        else if (!strcmp(a, "--additive-max-len")) dst = &su.additive_max;
        else if (!strcmp(a, "--csv")) csv = val;
        else if (!strcmp(a, "--clock") && (!strcmp(val, "wall") || !strcmp(val, "cpu")))
            g_cpu_clock = !strcmp(val, "cpu");
        else if (!strcmp(a, "--plot")) png = val;
        else if (!strcmp(a, "--kinds")) {
            for (int k = 1; k < NKINDS; k++) use[k] = 0;
            char list[512];
            snprintf(list, sizeof list, "%s", val);
            for (char *t = strtok(list, ","); t; t = strtok(NULL, ",")) {
                int found = 0;
                for (int k = 1; k < NKINDS; k++)
                    if (!strcmp(t, kind_names[k])) use[k] = found = 1;
                if (!found) {
                    fprintf(stderr, "bench_attention: unknown kind '%s'\n", t);
                    return usage();
                }
            }
        } else {
            fprintf(stderr, "bench_attention: unknown argument '%s'\n", a);
            return usage();
        }
        if (dst && (*dst = parse_int(val, lo, hi)) < 0) {
            fprintf(stderr, "bench_attention: %s %s: give a whole number from %d to %d\n", a, val,
                    lo, hi);
            return usage();
        }
        i++;
    }
    if (g_cpu_clock && threads != 1) {
        fprintf(stderr, "bench_attention: --clock cpu times one thread: give --threads 1\n");
        return 2;
    }
    if (min_len > max_len) {
        fprintf(stderr, "bench_attention: --min-len %d is above --max-len %d\n", min_len, max_len);
        return 2;
    }
    Err err = {{0}};
    if (png && !plot_gnuplot_available(&err)) { /* before the measurements, not after */
        fprintf(stderr, "bench_attention: --plot %s: %s\n", png, err.msg);
        return 1;
    }
    FILE *cf = NULL;
    if (csv && !(cf = fopen(csv, "w"))) {
        fprintf(stderr, "bench_attention: cannot write %s\n", csv);
        return 1;
    }
    const Backend *cpu; /* the threads; the kinds run on backend_cpu() */
    BackendOptions bo = {.device = BACKEND_DEVICE_CPU, .precision = BACKEND_KEEP,
                         .threads = threads > 0 ? threads : 0, .ordinal = BACKEND_KEEP};
    if (backend_open(&bo, &cpu, NULL, 0, &err)) {
        fprintf(stderr, "bench_attention: %s\n", err.msg);
        return 1;
    }
    threads = omp_get_max_threads();
    int lens[32], nlen = 0;
    for (long T = min_len; T <= max_len && nlen < 32; T *= 2) lens[nlen++] = (int)T;
    int run_series[2] = {only != 1, only != 0};
    Result (*res[2])[NKINDS];
    for (int s = 0; s < 2; s++) res[s] = xcalloc((size_t)nlen, sizeof *res[s]);
    if (cf)
        fprintf(cf, "kind,causal,T,heads,head_size,threads,reps,fwd_ms,bwd_ms,total_ms,"
                    "extra_mib\n");

    printf("attention kinds on the CPU backend, forward and backward: one sequence, %d heads of %d, "
           "%d threads; T = %d … %d\n", su.NH, su.HS, threads, min_len, max_len);
    printf("linformer: n = T (the projections span exactly the sequence), r = %d; luong_local: "
           "local-p, general score, window %d; additive_attn_* (", su.lf_r, su.window);
    for (int k = 1, n = 0; k < NKINDS; k++)
        if (kind_additive(k)) printf("%s%s", n++ ? ", " : "", kind_names[k]);
    printf("): A = %d, up to T = %d\n", su.HS, su.additive_max);
    printf("times: median of R passes after one warm-up (ms, %s); extra: peak resident set beyond the "
           "arguments (MiB)\n", g_cpu_clock ? "process CPU time" : "wall clock");
    for (int s = 0; s < 2; s++) {
        if (!run_series[s]) continue;
        printf("\n## %s\n\n", s ? "causal" : "not causal");
        if (s) {
            int first = 1;
            for (int k = 1; k < NKINDS; k++) {
                if (!use[k] || kind_causal(k)) continue;
                printf("%s%s", first ? "left out (no causal form): " : ", ", kind_names[k]);
                first = 0;
            }
            if (!first) printf("\n\n");
        }
        printf("| T | kind | reps | fwd ms | bwd ms | fwd+bwd ms | extra MiB |\n"
               "|---:|---|---:|---:|---:|---:|---:|\n");
        for (int i = 0; i < nlen; i++)
            for (int k = 1; k < NKINDS; k++) {
                if (!use[k] || (s && !kind_causal(k))) continue;
                Result *r = &res[s][i][k];
                if (kind_additive(k) && lens[i] > su.additive_max) {
                    r->reps = -1;
                    continue;
                }
                if (run_child(k, lens[i], s, &su, r)) {
                    memset(r, 0, sizeof *r);
                    printf("| %d | %s | failed | | | | |\n", lens[i], kind_names[k]);
                    if (cf)
                        fprintf(cf, "%s,%d,%d,%d,%d,%d,0,,,,\n", kind_names[k], s, lens[i], su.NH,
                                su.HS, threads);
                    continue;
                }
                printf("| %d | %s | %d | %.3f | %.3f | %.3f | %.2f |\n", lens[i], kind_names[k],
                       r->reps, r->fwd_ms, r->bwd_ms, r->total_ms, r->extra_mib);
                if (cf) {
                    fprintf(cf, "%s,%d,%d,%d,%d,%d,%d,%.6g,%.6g,%.6g,%.6g\n", kind_names[k], s,
                            lens[i], su.NH, su.HS, threads, r->reps, r->fwd_ms, r->bwd_ms,
                            r->total_ms, r->extra_mib);
                    fflush(cf);
                }
            }
    }
    for (int s = 0; s < 2; s++) {
        if (!run_series[s]) continue;
        int last;
        printf("\n%s: fwd+bwd below sdp's at every longer T measured:", s ? "causal" : "not causal");
        for (int k = 1; k < NKINDS; k++) {
            if (k == ATTN_SDP || !use[k] || !use[ATTN_SDP] || (s && !kind_causal(k))) continue;
            int from = faster_from(res[s], nlen, lens, k, ATTN_SDP, &last);
            if (from) printf(" %s from T = %d;", kind_names[k], from);
            else if (last) printf(" %s not at T = %d;", kind_names[k], last);
        }
        if (use[ATTN_LINEAR] && use[ATTN_FLASH]) {
            int from = faster_from(res[s], nlen, lens, ATTN_LINEAR, ATTN_FLASH, &last);
            if (from) printf(" linear below flash from T = %d", from);
            else if (last) printf(" linear not below flash at T = %d", last);
        }
        printf("\n");
    }
    int rc = 0;
    if (cf && fclose(cf)) {
        fprintf(stderr, "bench_attention: cannot write %s\n", csv);
        rc = 1;
    } else if (cf) {
        printf("wrote %s\n", csv);
    }
    if (png) {
        char *body = plot_body(res, run_series, nlen, lens, use, &su, threads);
        if (plot_script_png(png, 1950, 600, body, "timing plot", &err)) {
            fprintf(stderr, "bench_attention: %s\n", err.msg);
            rc = 1;
        } else {
            printf("wrote %s\n", png);
        }
        free(body);
    }
    for (int s = 0; s < 2; s++) free(res[s]);
    return rc;
}
