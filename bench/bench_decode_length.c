/* bench_decode_length.c — incremental decoding speed against output length, for each kind of
 * the Transformer decoder's self-attention: does a kind with a recurrent state (linear, taylor:
 * Katharopoulos et al. 2020 §3.4) decode with constant work per token while sdp and flash
 * (a key/value cache read whole at every step) slow down as the output grows?
 *
 *   bench_decode_length --config configs/transformer.ini [--kinds sdp,flash,linear,taylor]
 *       [--lengths 16,64,256,1024,4096] [--batch B] [--src-len S] [--rounds R] [--threads N]
 *       [--clock wall|cpu] [--csv FILE] [--plot PNG] [--set SECTION.KEY=VALUE]...
 *   bench_decode_length --replot FILE.csv --plot PNG
 *
 * For each kind K the config's model is built with model.dec_self_attention = K (the encoder's
 * self-attention and the cross-attention as the config says), parameters initialised from
 * train.seed (trained weights cost the same arithmetic), and reserved for B sentences of S
 * source tokens and up to the longest length L + 1 decoder steps. One measurement is forced
 * decoding (decode_force, what `trainer score` runs) of B random references of L tokens each
 * (ids drawn uniformly from the non-special vocabulary, then EOS): every step runs the
 * incremental decoder, the output layer and the log-softmax over V for the B rows, exactly as
 * greedy decoding does, without the search's own small costs. tokens/s = B·(L + 1) decoder
 * steps over the wall time of the call; the source is the same for every L, so the encoder's
 * one pass is part of every figure (it is small beside L ≥ 64 steps).
 * R rounds (default 3): each round measures every (kind, L) once, kinds interleaved, after one
 * untimed warm-up call per kind at the shortest L. Prints per L and kind the median tokens/s and
 * min–max, and per kind the ratio of its median at the longest L to that at the shortest (1.0:
 * constant work per token); --csv writes one row per (kind, L), --plot a figure of the median
 * tokens/s against L, a line per kind, L log-scaled (gnuplot: eval/plot.h); --replot draws it
 * again from a --csv file and measures nothing. CPU or
 * CUDA (train.device).
 * --clock cpu (the CPU backend at --threads 1 only) times each call by the process's CPU time
 * instead of the wall clock, so that other jobs on a shared machine do not add to the figures
 * (bench_attention's option).
 * Errors (exit 2 on a bad command line or config, 1 on a model that cannot be built) on stderr.
 */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "core/machine.h"
#include "core/rng.h"
#include "data/batch.h"
#include "data/encoded.h"
#include "eval/decode.h"
#include "eval/plot.h"
#include "model/model.h"
#include "train/config.h"

enum { MAX_KINDS = 16, MAX_LENGTHS = 16, MAX_SETS = 32, MAX_ROUNDS = 50 };

static int parse_list(const char *s, char items[][64], int max) {
    int n = 0;
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (n == max) return -1;
        snprintf(items[n++], 64, "%s", t);
    }
    return n;
}

static int g_cpu_clock; /* --clock cpu */

/* Seconds on the clock --clock chose: the wall clock, or the process's CPU time. */
static double bench_clock(void) { return g_cpu_clock ? cpu_seconds() : now_seconds(); }

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int usage(void) {
    fprintf(stderr, "usage: bench_decode_length --config FILE [--kinds k1,k2,...] "
                    "[--lengths L1,L2,...] [--batch B] [--src-len S] [--rounds R] "
                    "[--threads N] [--clock wall|cpu] [--csv FILE] [--plot PNG] "
                    "[--set SECTION.KEY=VALUE]...\n"
                    "       bench_decode_length --replot FILE.csv --plot PNG\n"
                    "  (what it measures: the top of bench/bench_decode_length.c)\n");
    return 2;
}

/* The figure of --plot: med[k][j], kind k's median tokens/s at lens[j] (ascending), a line per
 * kind against L. title may be NULL. Returns 0, or 1 after naming the failure on stderr. */
static int draw(const char *png, const char *title, char (*kinds)[64], int nk, const int *lens,
                int nl, double (*med)[MAX_LENGTHS]) {
    PlotSeries ps[MAX_KINDS];
    double xs[MAX_LENGTHS], nan[MAX_LENGTHS];
    for (int j = 0; j < nl; j++) xs[j] = lens[j], nan[j] = NAN;
    for (int k = 0; k < nk; k++) ps[k] = (PlotSeries){kinds[k], nl, xs, med[k], nan};
    const char *panel = "median tokens/s against output length";
    Err err = {{0}};
    if (plot_series_png(png, title, "output length L (tokens)", "tokens/s", &panel, 1, ps, nk,
                        &err)) {
        fprintf(stderr, "bench_decode_length: --plot %s: %s\n", png, err.msg);
        return 1;
    }
    return 0;
}

/* --replot CSV: the figure again from a --csv file (kind,L,median_tokens_per_s,...; a new L
 * above the ones before it, as --csv writes them), measuring nothing. */
static int replot(const char *csv, const char *png) {
    FILE *f = fopen(csv, "r");
    if (!f) {
        fprintf(stderr, "bench_decode_length: --replot: cannot read %s\n", csv);
        return 2;
    }
    char kinds[MAX_KINDS][64], line[512];
    int lens[MAX_LENGTHS], nk = 0, nl = 0, bad = 0;
    double med[MAX_KINDS][MAX_LENGTHS];
    for (int k = 0; k < MAX_KINDS; k++)
        for (int j = 0; j < MAX_LENGTHS; j++) med[k][j] = NAN; /* a (kind, L) with no row */
    for (int row = 0; fgets(line, sizeof line, f); row++) {
        char kind[64];
        int L;
        double m;
        if (row == 0) continue; /* the header */
        if (sscanf(line, "%63[^,],%d,%lf", kind, &L, &m) != 3) {
            bad = row + 1;
            break;
        }
        int k = 0, j = 0;
        while (k < nk && strcmp(kinds[k], kind)) k++;
        while (j < nl && lens[j] != L) j++;
        if ((k == nk && nk == MAX_KINDS) ||
            (j == nl && (nl == MAX_LENGTHS || (nl && L < lens[nl - 1])))) {
            bad = row + 1; /* too many kinds or lengths, or a new length below the last */
            break;
        }
        if (k == nk) snprintf(kinds[nk++], 64, "%s", kind);
        if (j == nl) lens[nl++] = L;
        med[k][j] = m;
    }
    fclose(f);
    if (bad || nk < 1 || nl < 1) {
        fprintf(stderr, "bench_decode_length: --replot %s: line %d is not a row of --csv "
                        "(kind,L,median_tokens_per_s,...), or the file has none\n", csv, bad);
        return 2;
    }
    return draw(png, NULL, kinds, nk, lens, nl, med);
}

int main(int argc, char **argv) {
    const char *config = NULL, *csv = NULL, *png = NULL, *again = NULL;
    const char *kinds_arg = "sdp,flash,linear,taylor";
    const char *lengths_arg = "16,64,256,1024,4096", *sets[MAX_SETS];
    int B = 8, S = 32, rounds = 3, threads = -1, nsets = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) return usage();
        if (!strcmp(a, "--config")) config = v;
        else if (!strcmp(a, "--kinds")) kinds_arg = v;
        else if (!strcmp(a, "--lengths")) lengths_arg = v;
        else if (!strcmp(a, "--batch")) B = atoi(v);
        else if (!strcmp(a, "--src-len")) S = atoi(v);
        else if (!strcmp(a, "--rounds")) rounds = atoi(v);
        else if (!strcmp(a, "--threads")) threads = atoi(v);
        else if (!strcmp(a, "--csv")) csv = v;
        else if (!strcmp(a, "--plot")) png = v;
        else if (!strcmp(a, "--replot")) again = v;
        else if (!strcmp(a, "--clock") && (!strcmp(v, "cpu") || !strcmp(v, "wall")))
            g_cpu_clock = !strcmp(v, "cpu");
        else if (!strcmp(a, "--set") && nsets < MAX_SETS) sets[nsets++] = v;
        else return usage();
        i++;
    }
    if (again) {
        if (!png) return usage();
        if (!plot_gnuplot_available(&(Err){{0}})) {
            fprintf(stderr, "bench_decode_length: --plot needs gnuplot (apt-get install "
                            "gnuplot-nox)\n");
            return 2;
        }
        return replot(again, png);
    }
    char kinds[MAX_KINDS][64], lens_s[MAX_LENGTHS][64];
    int nk = parse_list(kinds_arg, kinds, MAX_KINDS), nl = parse_list(lengths_arg, lens_s,
                                                                       MAX_LENGTHS);
    int lens[MAX_LENGTHS], Lmax = 0;
    for (int j = 0; j < nl; j++) {
        lens[j] = atoi(lens_s[j]);
        if (lens[j] < 1 || lens[j] > 65536) return usage();
        if (lens[j] > Lmax) Lmax = lens[j];
    }
    if (!config || nk < 1 || nl < 1 || B < 1 || S < 1 || rounds < 1 || rounds > MAX_ROUNDS)
        return usage();

    Err err = {{0}};
    if (png && !plot_gnuplot_available(&err)) { /* before the measurements, not after */
        fprintf(stderr, "bench_decode_length: --plot %s: %s\n", png, err.msg);
        return 2;
    }
    for (int j = 1; j < nl; j++)
        if (lens[j] <= lens[j - 1]) {
            fprintf(stderr, "bench_decode_length: --lengths %s: give them in ascending order\n",
                    lengths_arg);
            return 2;
        }
    Config cfg[MAX_KINDS];
    Model model[MAX_KINDS];
    memset(model, 0, sizeof model);
    const Backend *be = NULL;
    for (int k = 0; k < nk; k++) {
        char set[128];
        snprintf(set, sizeof set, "model.dec_self_attention=%s", kinds[k]);
        if (config_load(&cfg[k], config, &err)) goto bad;
        for (int i = 0; i < nsets; i++)
            if (config_set(&cfg[k], sets[i], &err)) goto bad;
        if (config_set(&cfg[k], set, &err) || config_validate(&cfg[k], &err)) goto bad;
        if (cfg[k].model.type != MODEL_TRANSFORMER) {
            err_set(&err, "%s: model.type must be transformer (the decoder's self-attention)",
                    config);
            goto bad;
        }
    }
    BackendOptions bo = config_backend_options(&cfg[0]);
    if (threads >= 0) bo.threads = threads;
    if (backend_open(&bo, &be, NULL, 0, &err)) goto bad;
    threads = omp_get_max_threads();
    if (g_cpu_clock && (threads != 1 || !be->host_memory)) {
        err_set(&err, "--clock cpu times one CPU thread: give --threads 1 on the CPU backend");
        goto bad;
    }
    int V = cfg[0].vocab_size;
    BatchBounds gb = {B, S, Lmax + 1, (long)B * S, (long)B * (Lmax + 1)};
    for (int k = 0; k < nk; k++) {
        if (model_create(&model[k], &cfg[k].model, V, be, &err)) {
            fprintf(stderr, "bench_decode_length: %s: %s\n", kinds[k], err.msg);
            return 1;
        }
        model_init_params(&model[k], cfg[k].seed);
        model_reserve_decode(&model[k], 1, &gb, 1);
    }

    /* the sources and references: uniform ids above the special tokens */
    Rng rng;
    rng_seed(&rng, 1, 0xdec0de);
    Encoded e = {0};
    e.n = B;
    e.src_ids = xmalloc(sizeof(int32_t) * (size_t)B * S);
    e.src_off = xmalloc(sizeof(int64_t) * (size_t)(B + 1));
    long *idx = xmalloc(sizeof(long) * B);
    for (int b = 0; b <= B; b++) e.src_off[b] = (int64_t)b * S;
    for (long i = 0; i < (long)B * S; i++) e.src_ids[i] = 4 + (int32_t)rng_below(&rng, V - 4);
    for (int b = 0; b < B; b++) idx[b] = b;
    int *tgt = xmalloc(sizeof(int) * (size_t)B * (Lmax + 1)), *len = xmalloc(sizeof(int) * B);
    double *lp = xmalloc(sizeof(double) * B);
    TokenBatch tb = {0};
    batch_alloc(&tb, B, S, 1, (long)B * S, B);
    batch_fill(&tb, &e, idx, B);

    printf("bench_decode_length: %s, %d threads, precision %s; V %d, d_model %d, heads %d, "
           "layers %d/%d; B %d sentences, S %d source tokens, %d rounds; encoder %s, cross %s; "
           "%s\n",
           be->name, threads, precision_names[cfg[0].precision], V, cfg[0].model.d_model,
           cfg[0].model.heads, cfg[0].model.enc_layers, cfg[0].model.dec_layers, B, S, rounds,
           attention_kind_names[cfg[0].model.self_attention],
           attention_kind_names[cfg[0].model.cross_attention],
           g_cpu_clock ? "process CPU time" : "wall clock");
    static double tps[MAX_KINDS][MAX_LENGTHS][MAX_ROUNDS];
    for (int r = -1; r < rounds; r++) { /* r = -1: the warm-up */
        for (int kk = 0; kk < nk; kk++) {
            int k = (kk + (r < 0 ? 0 : r)) % nk; /* each round starts at another kind */
            for (int j = 0; j < (r < 0 ? 1 : nl); j++) {
                int L = r < 0 ? lens[0] : lens[j];
                for (int b = 0; b < B; b++) {
                    for (int t = 0; t < L; t++)
                        tgt[(size_t)b * (L + 1) + t] = 4 + (int)rng_below(&rng, V - 4);
                    tgt[(size_t)b * (L + 1) + L] = TOKEN_EOS;
                    len[b] = L + 1;
                }
                Model *m = &model[k];
                double t0 = bench_clock();
                decode_force(&m, 1, &tb, tgt, len, L + 1, lp);
                be->synchronize();
                double dt = bench_clock() - t0;
                if (r >= 0) tps[k][j][r] = (double)B * (L + 1) / dt;
            }
        }
    }

    FILE *f = csv ? fopen(csv, "w") : NULL;
    if (csv && !f) {
        fprintf(stderr, "bench_decode_length: cannot write %s\n", csv);
        return 1;
    }
    if (f) fprintf(f, "kind,L,median_tokens_per_s,min,max,rounds\n");
    double med[MAX_KINDS][MAX_LENGTHS];
    printf("\n| L |");
    for (int k = 0; k < nk; k++) printf(" %s tokens/s (min–max) |", kinds[k]);
    printf("\n|---:|");
    for (int k = 0; k < nk; k++) printf("---:|");
    printf("\n");
    for (int j = 0; j < nl; j++) {
        printf("| %d |", lens[j]);
        for (int k = 0; k < nk; k++) {
            double v[MAX_ROUNDS];
            memcpy(v, tps[k][j], sizeof(double) * rounds);
            qsort(v, rounds, sizeof(double), cmp_double);
            med[k][j] = rounds % 2 ? v[rounds / 2] : (v[rounds / 2 - 1] + v[rounds / 2]) / 2;
            printf(" %.0f (%.0f–%.0f) |", med[k][j], v[0], v[rounds - 1]);
            if (f)
                fprintf(f, "%s,%d,%.1f,%.1f,%.1f,%d\n", kinds[k], lens[j], med[k][j], v[0],
                        v[rounds - 1], rounds);
        }
        printf("\n");
    }
    int jlo = 0, jhi = 0;
    for (int j = 0; j < nl; j++) jlo = lens[j] < lens[jlo] ? j : jlo, jhi = lens[j] > lens[jhi] ? j : jhi;
    printf("\nmedian tokens/s at L = %d over that at L = %d (1.0: constant work per token):",
           lens[jhi], lens[jlo]);
    for (int k = 0; k < nk; k++) printf(" %s %.2f%s", kinds[k], med[k][jhi] / med[k][jlo],
                                        k + 1 < nk ? "," : "\n");
    printf("bench_decode_length: peak resident memory %.1f MiB (the whole process)\n",
           machine_peak_rss_mb());
    int rc = 0;
    if (png) {
        char title[160];
        snprintf(title, sizeof title, "decoding %d sentences of %d source tokens, %s", B, S,
                 be->name);
        rc = draw(png, title, kinds, nk, lens, nl, med);
    }
    if (f && fclose(f)) fprintf(stderr, "bench_decode_length: cannot write %s\n", csv);
    batch_free(&tb);
    free(tgt), free(len), free(lp), free(idx), free(e.src_ids), free(e.src_off);
    for (int k = 0; k < nk; k++) model_free(&model[k]);
    return rc;
bad:
    fprintf(stderr, "bench_decode_length: %s\n", err.msg);
    return 2;
}
