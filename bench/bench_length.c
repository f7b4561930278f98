/* bench_length.c — the memory of one Transformer training step against the example length, for
 * every attention kind the Transformer allows in its encoder self-attention (CPU backend).
 *
 *   bench_length [--min 64] [--max 4096] [--kinds sdp,flash,...] [--d-model 64] [--heads 4]
 *                [--ff 256] [--layers 2] [--local-window 10] [--linformer-k 32] [--csv FILE]
 *                [--plot PNG]
 *
 * For each kind and each length L = min, 2·min, … ≤ max (powers of two): the Transformer of
 * d_model, heads, ff and layers encoder + layers decoder layers (vocabulary 64, dropout 0.1,
 * pre-LN, tied embeddings), the kind in every slot that allows it and flash elsewhere (the
 * decoder self-attention needs a causal form; tests/slow/test_length.c builds the same),
 * linformer with linformer_max_len = L, luong_local local-p with the general score; one example
 * of L pieces a side. Each (kind, L) runs in a forked child: after one untimed step at L = 16
 * (freed; so that code and the BLAS and OpenMP runtimes are resident before the baseline), it
 * builds the model, reads its peak resident set (getrusage, machine_peak_rss_mb), reserves the
 * activations for that one example (model_reserve) and runs one training step (model_loss:
 * forward and backward), then reads the peak again. Reported per (kind, L):
 *   planned MiB  model_activation_bytes: what model_reserve holds for a training pass
 *                (activations, what the attentions save, their workspace, the output layer's);
 *   attention MiB  of planned, what depends on the kinds (transformer_attention_bytes: what the
 *                attentions save for backward and their workspace): the kinds' extra memory;
 *   peak MiB     the peak resident set after the step minus before the reserve: the pages the
 *                step touched (4 KiB pages; the ops' stack scratch included);
 *   step s       the wall clock of that first and only step, page faults included: a rough
 *                figure, not a speed measurement (bench_train and bench_attention time);
 *   x2           planned MiB over that at L/2 (2.0: linear in L; 4.0: quadratic).
 * Output: a Markdown table per kind, then --csv FILE: kind,L,d_model,heads,layers,threads,
 * planned_mib,peak_mib,step_s,loss,attention_mib (a failed child: empty figures); --plot PNG:
 * planned MiB against L, log-log, one line per kind (gnuplot). The step's cost grows as L² for
 * the quadratic kinds: a full run to 4,096 takes minutes; --max 256 is a smoke run.
 */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "core/machine.h"
#include "core/tokens.h"
#include "eval/plot.h"
#include "data/batch.h"
#include "model/model.h"
#include "model/transformer.h"
#include "ops/cpu/cpu.h"

enum { V = 64, MAXLEN = 16 };

typedef struct {
    int dm, heads, ff, layers, window, lf_k;
} Setup;

typedef struct {
    int ok;
    double planned_mib, peak_mib, step_s, loss, attn_mib;
} Result;

static ModelSpec spec_for(AttentionKind k, const Setup *su, int L) {
    const Backend *be = backend_cpu();
    ModelSpec s = {0};
    char why[512];
    s.type = MODEL_TRANSFORMER, s.d_model = su->dm, s.heads = su->heads, s.d_ff = su->ff;
    s.enc_layers = su->layers, s.dec_layers = su->layers, s.dropout = 0.1f, s.norm = NORM_PRE;
    s.tie_embeddings = 1, s.self_attention = k;
    s.dec_self_attention = attention_supports(k, ATTN_SLOT_DEC_SELF, 1, be, su->dm, su->dm,
                                              su->heads, why, sizeof why) ? k : ATTN_FLASH;
    s.cross_attention = attention_supports(k, ATTN_SLOT_CROSS, 0, be, su->dm, su->dm, su->heads,
                                           why, sizeof why) ? k : ATTN_FLASH;
    s.attn_opt = (AttentionOptions){.linformer_k = su->lf_k, .linformer_max_len = L,
                                    .linformer_share = LINFORMER_SHARE_NONE,
                                    .local_window = su->window, .local_mode = LOCAL_PREDICTIVE,
                                    .local_score = LOCAL_SCORE_GENERAL};
    return s;
}

/* One sentence of L pieces a side (batch-major = time-major for B = 1). */
static void make_batch(TokenBatch *tb, int L) {
    batch_alloc(tb, 1, L, L, L, L);
    tb->B = 1, tb->S = L, tb->T = L;
    for (int t = 0; t < L; t++) {
        tb->src[t] = 4 + (7 * t + 3) % (V - 4);
        tb->src_mask[t] = 1.0f;
        tb->tgt_in[t] = t == 0 ? TOKEN_BOS : 4 + (5 * t + 1) % (V - 4);
        tb->tgt_out[t] = t + 1 < L ? 4 + (5 * (t + 1) + 1) % (V - 4) : TOKEN_EOS;
        tb->tgt_row[t] = t, tb->tgt_row_id[t] = tb->tgt_out[t], tb->tgt_row_tm[t] = t;
    }
    tb->src_len[0] = L, tb->tgt_len[0] = L;
    tb->src_tokens = L, tb->tgt_tokens = L;
}

/* One step of kind k at length L on a fresh model: its loss and figures in *r (when r). */
static int step_at(AttentionKind k, int L, const Setup *su, Result *r) {
    ModelSpec spec = spec_for(k, su, L);
    Model m;
    Err err;
    if (model_create(&m, &spec, V, backend_cpu(), &err)) {
        fprintf(stderr, "bench_length: %s: %s\n", attention_kind_names[k], err.msg);
        return -1;
    }
    model_init_params(&m, 1);
    TokenBatch tb;
    make_batch(&tb, L);
    double base = machine_peak_rss_mb();
    model_reserve(&m, 1, L, L, L, L);
    double planned = (double)model_activation_bytes(&m) / 1048576.0, t0 = now_seconds();
    double attn = (double)transformer_attention_bytes(m.tf) / 1048576.0;
    params_zero_grad(&m.ps);
    double loss = model_loss(&m, &tb, 0.1f, 1, 5, 1.0f / (float)L);
    if (r) {
        r->step_s = now_seconds() - t0;
        r->peak_mib = machine_peak_rss_mb() - base;
        r->planned_mib = planned, r->attn_mib = attn, r->loss = loss, r->ok = isfinite(loss);
    }
    batch_free(&tb);
    model_free(&m);
    return 0;
}

/* A step at L = 16 first (freed after), so that the ops' code and the BLAS and OpenMP runtimes
 * are resident before the baseline and not counted; then the measured step at L. */
static Result measure(AttentionKind k, int L, const Setup *su) {
    Result r = {0};
    if (step_at(k, 16, su, NULL) == 0) step_at(k, L, su, &r);
    return r;
}

/* measure()'s arguments, for machine_run_forked. */
typedef struct {
    AttentionKind k;
    int L;
    const Setup *su;
} Job;
static void measure_job(const void *arg, void *out) {
    const Job *j = arg;
    *(Result *)out = measure(j->k, j->L, j->su);
}

/* measure() in a child, so that each figure's peak memory is its own; -1 also when the step's
 * loss was not finite. */
static int run_child(AttentionKind k, int L, const Setup *su, Result *out) {
    Job j = {k, L, su};
    return machine_run_forked(measure_job, &j, out, sizeof *out) == 0 && out->ok ? 0 : -1;
}

static int usage(void) {
    fprintf(stderr, "usage: bench_length [--min 64] [--max 4096] [--kinds K,K,...] [--d-model 64] "
                    "[--heads 4] [--ff 256] [--layers 2] [--local-window 10] [--linformer-k 32] "
                    "[--csv FILE] [--plot PNG]\n");
    return 2;
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    Setup su = {64, 4, 256, 2, 10, 32};
    int lo = 64, hi = 4096;
    const char *csv = NULL, *kinds = NULL, *png = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int *dst = NULL;
        if (i + 1 >= argc) return usage();
        if (!strcmp(a, "--min")) dst = &lo;
        else if (!strcmp(a, "--max")) dst = &hi;
        else if (!strcmp(a, "--d-model")) dst = &su.dm;
        else if (!strcmp(a, "--heads")) dst = &su.heads;
        else if (!strcmp(a, "--ff")) dst = &su.ff;
        else if (!strcmp(a, "--layers")) dst = &su.layers;
        else if (!strcmp(a, "--local-window")) dst = &su.window;
        else if (!strcmp(a, "--linformer-k")) dst = &su.lf_k;
        else if (!strcmp(a, "--csv")) csv = argv[++i];
        else if (!strcmp(a, "--plot")) png = argv[++i];
        else if (!strcmp(a, "--kinds")) kinds = argv[++i];
        else return usage();
        if (dst && (*dst = atoi(argv[++i])) < 1) return usage();
    }
    if (lo < 2 || hi < lo || su.dm % su.heads) return usage();
    int lens[MAXLEN], nlen = 0;
    for (int L = lo; L <= hi && nlen < MAXLEN; L *= 2) lens[nlen++] = L;
    Err err = {{0}};
    if (png && !plot_gnuplot_available(&err)) { /* before the measurements, not after */
        fprintf(stderr, "bench_length: --plot %s: %s\n", png, err.msg);
        return 1;
    }
    char *body = NULL; /* --plot: the data blocks, then the plot command */
    size_t body_len = 0;
    FILE *pf = png ? open_memstream(&body, &body_len) : NULL;
    char plots[4096] = "";
    FILE *out = NULL;
    if (csv && !(out = fopen(csv, "w"))) {
        fprintf(stderr, "bench_length: cannot write %s\n", csv);
        return 1;
    }
    if (out) fprintf(out, "kind,L,d_model,heads,layers,threads,planned_mib,peak_mib,step_s,loss,"
                     "attention_mib\n");
    printf("bench_length: the Transformer (d_model %d, %d heads, d_ff %d, %d + %d layers), one "
           "example of L pieces a side, one training step, %d threads, CPU\n",
           su.dm, su.heads, su.ff, su.layers, su.layers, omp_get_max_threads());
    int failed = 0;
    for (int k = 1; k < ATTN_KIND_COUNT; k++) {
        const char *name = attention_kind_names[k];
        char why[512];
        if (kinds) { /* a comma-separated list: whole names only */
            size_t n = strlen(name);
            const char *p = kinds;
            int hit = 0;
            while ((p = strstr(p, name))) {
                if ((p == kinds || p[-1] == ',') && (p[n] == ',' || !p[n])) hit = 1;
                p += n;
            }
            if (!hit) continue;
        }
        if (!attention_supports((AttentionKind)k, ATTN_SLOT_ENC_SELF, 0, backend_cpu(), su.dm,
                                su.dm, su.heads, why, sizeof why))
            continue;
        ModelSpec sp = spec_for((AttentionKind)k, &su, lo);
        printf("\n%s (decoder self-attention %s, cross-attention %s)\n\n", name,
               attention_kind_names[sp.dec_self_attention],
               attention_kind_names[sp.cross_attention]);
        printf("| L | planned MiB | attention MiB | x2 | peak MiB | step s |\n"
               "|---|---|---|---|---|---|\n");
        double prev = 0;
        if (pf) fprintf(pf, "$%s << EOD\n", name);
        for (int i = 0; i < nlen; i++) {
            Result r;
            if (run_child((AttentionKind)k, lens[i], &su, &r)) {
                printf("| %d | failed | | | | |\n", lens[i]);
                if (out) fprintf(out, "%s,%d,%d,%d,%d,%d,,,,,\n", name, lens[i], su.dm, su.heads,
                                 su.layers, omp_get_max_threads());
                failed++, prev = 0;
                continue;
            }
            char ratio[32] = "";
            if (prev > 0) snprintf(ratio, sizeof ratio, "%.2f", r.planned_mib / prev);
            printf("| %d | %.1f | %.2f | %s | %.1f | %.2f |\n", lens[i], r.planned_mib,
                   r.attn_mib, ratio, r.peak_mib, r.step_s);
            if (out)
                fprintf(out, "%s,%d,%d,%d,%d,%d,%.3f,%.3f,%.4f,%.6f,%.4f\n", name, lens[i],
                        su.dm, su.heads, su.layers, omp_get_max_threads(), r.planned_mib,
                        r.peak_mib, r.step_s, r.loss, r.attn_mib);
            prev = r.planned_mib;
            if (pf) fprintf(pf, "%d %.6g\n", lens[i], r.planned_mib);
        }
        if (pf) {
            fprintf(pf, "EOD\n");
            size_t l = strlen(plots);
            snprintf(plots + l, sizeof plots - l, "%s$%s using 1:2 with linespoints lw 2 title '%s'",
                     l ? ", " : "plot ", name, name);
        }
    }
    if (out) fclose(out);
    if (pf) {
        fprintf(pf, "set title \"planned memory of one Transformer training step (d_model %d, %d "
                    "heads, %d + %d layers)\"\nset grid\nset logscale x 2\nset logscale y 10\n"
                    "set format x '%%g'\nset xlabel 'example length L (pieces a side)'\n"
                    "set ylabel 'MiB'\nset key top left box opaque\n%s\n",
                su.dm, su.heads, su.layers, su.layers, plots[0] ? plots : "plot [1:2] 1 notitle");
        fclose(pf);
        if (plot_script_png(png, 1000, 650, body, "memory plot", &err)) {
            fprintf(stderr, "bench_length: %s\n", err.msg);
            failed++;
        }
        free(body);
    }
    return failed ? 1 : 0;
}
