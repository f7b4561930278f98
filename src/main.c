/* main.c — the command line: train (default) | eval | translate.
 *
 *   trainer [train] --config FILE [--set section.key=value]... [--resume]
 *   trainer eval --checkpoint FILE --src FILE --ref FILE [--beam K] [--len-penalty A] [--json]
 *                [--device cpu|cuda]
 *   trainer translate --checkpoint FILE [--beam K] [--len-penalty A] [--attention-map PNG]
 *                     [--device cpu|cuda] < input > output
 *   trainer compare RUN_DIR|CONFIG... [--out DIR] [options, see eval/compare.h]
 *
 * Only this file turns a Status into an exit code: 0 success, 1 a failure of the run, 2 a bad
 * command line.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "data/corpus.h"
#include "data/encoded.h"
#include "eval/compare.h"
#include "eval/metrics.h"
#include "eval/plot.h"
#include "eval/translate.h"
#include "train/checkpoint.h"
#include "train/config.h"
#include "train/train.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage:\n"
            "  trainer [train] --config FILE [--set section.key=value]... [--resume]\n"
            "      train a model; --resume continues from <save_dir>/last.ckpt\n"
            "  trainer eval --checkpoint FILE --src FILE --ref FILE [--beam K] [--len-penalty A]\n"
            "               [--json] [--device cpu|cuda]\n"
            "      translate --src and print BLEU, chrF (sacreBLEU defaults) and perplexity;\n"
            "      greedy by default, beam search with --beam K (length penalty A, Wu et al.\n"
            "      2016 eq. 14; default 1.0 with a beam, 0 when greedy)\n"
            "  trainer translate --checkpoint FILE [--beam K] [--len-penalty A]\n"
            "                    [--attention-map PNG] [--device cpu|cuda] < in > out\n"
            "      translate standard input line by line; --attention-map draws the attention\n"
            "      of the first line's translation\n"
            "  trainer compare RUN_DIR|CONFIG... [--out DIR] [--beam K] [--len-penalty A]\n"
            "      a report comparing runs (tables, curves, attention heatmaps) in DIR\n"
            "  trainer --help     this text and every config key\n\n");
}

static int device_arg(const char *s, int *dev) {
    if (!strcmp(s, "cpu")) return *dev = DEVICE_CPU, 0;
    if (!strcmp(s, "cuda")) return *dev = DEVICE_CUDA, 0;
    fprintf(stderr, "trainer: --device must be cpu or cuda, not '%s'\n", s);
    return 2;
}

static int cmd_train(int argc, char **argv) {
    const char *config = NULL;
    int resume = 0;
    Err err;
    Config cfg;
    config_defaults(&cfg);
    const char *sets[256];
    int nsets = 0;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--config") && i + 1 < argc) config = argv[++i];
        else if (!strcmp(argv[i], "--set") && i + 1 < argc) {
            if (nsets == 256) return fprintf(stderr, "trainer: too many --set\n"), 2;
            sets[nsets++] = argv[++i];
        } else if (!strncmp(argv[i], "--set=", 6)) sets[nsets++] = argv[i] + 6;
        else if (!strcmp(argv[i], "--resume")) resume = 1;
        else {
            fprintf(stderr, "trainer train: unknown or incomplete argument '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    if (!config) {
        fprintf(stderr, "trainer train: --config FILE is required (e.g. configs/luong.ini)\n");
        return 2;
    }
    if (config_load(&cfg, config, &err)) return fprintf(stderr, "trainer: %s\n", err.msg), 2;
    for (int i = 0; i < nsets; i++)
        if (config_set(&cfg, sets[i], &err)) return fprintf(stderr, "trainer: %s\n", err.msg), 2;
    if (config_validate(&cfg, &err)) return fprintf(stderr, "trainer: %s: %s\n", config, err.msg), 2;
    if (train_run(&cfg, resume, &err)) return fprintf(stderr, "trainer: %s\n", err.msg), 1;
    return 0;
}

typedef struct {
    const char *checkpoint, *src, *ref, *attention_map;
    int json, device, len_penalty_set;
    DecodeOpts dec;
} EvalArgs;

static int parse_eval_args(int argc, char **argv, EvalArgs *a, const char *cmd) {
    memset(a, 0, sizeof *a);
    a->device = -1;
    a->dec.beam = 1;
    for (int i = 0; i < argc; i++) {
        int r = parse_decode_arg(argc, argv, &i, &a->dec, &a->len_penalty_set, cmd);
        if (r == 2) return 2;
        if (r == 1) continue;
        if (!strcmp(argv[i], "--checkpoint") && i + 1 < argc) a->checkpoint = argv[++i];
        else if (!strcmp(argv[i], "--src") && i + 1 < argc) a->src = argv[++i];
        else if (!strcmp(argv[i], "--ref") && i + 1 < argc) a->ref = argv[++i];
        else if (!strcmp(argv[i], "--attention-map") && i + 1 < argc) a->attention_map = argv[++i];
        else if (!strcmp(argv[i], "--json")) a->json = 1;
        else if (!strcmp(argv[i], "--device") && i + 1 < argc) {
            if (device_arg(argv[++i], &a->device)) return 2;
        } else {
            fprintf(stderr, "trainer %s: unknown or incomplete argument '%s'\n", cmd, argv[i]);
            usage(stderr);
            return 2;
        }
    }
    if (!a->checkpoint) {
        fprintf(stderr, "trainer %s: --checkpoint FILE is required\n", cmd);
        return 2;
    }
    return 0;
}

static int cmd_eval(int argc, char **argv) {
    EvalArgs a;
    int rc = parse_eval_args(argc, argv, &a, "eval");
    if (rc) return rc;
    if (a.attention_map) {
        fprintf(stderr, "trainer eval: --attention-map belongs to translate\n");
        return 2;
    }
    if (!a.src || !a.ref) {
        fprintf(stderr, "trainer eval: --src FILE and --ref FILE are required\n");
        return 2;
    }
    Err err;
    Model m;
    Corpus c = {0};
    Encoded e = {0};
    char **hyp = NULL;
    double t0 = now_seconds(), ppl = 0;
    rc = 1;
    if (checkpoint_load(a.checkpoint, &m, NULL, a.device, &err)) {
        fprintf(stderr, "trainer: %s\n", err.msg);
        return 1;
    }
    set_threads(m.cfg.threads);
    if (corpus_load(&c, a.src, a.ref, m.cfg.max_line_bytes, &err)) goto done;
    if (!a.json) corpus_print_summary(&c, "eval", stderr);
    if (encoded_build(&e, (const char *const *)c.src, (const char *const *)c.tgt, c.n, m.spm, NULL,
                      &err))
        goto done;
    if (eval_perplexity(&m, &e, &ppl, NULL, &err)) goto done;
    if (translate_lines(&m, (const char *const *)c.src, c.n, &a.dec, &hyp, NULL, &err)) goto done;
    BleuScore b = bleu_corpus((const char *const *)hyp, (const char *const *)c.tgt, c.n);
    double chrf = chrf_corpus((const char *const *)hyp, (const char *const *)c.tgt, c.n);
    double secs = now_seconds() - t0;
    printf("BLEU = %.2f %.1f/%.1f/%.1f/%.1f (BP = %.3f ratio = %.3f hyp_len = %ld ref_len = %ld)\n",
           b.score, b.precisions[0], b.precisions[1], b.precisions[2], b.precisions[3], b.bp,
           b.ratio, b.hyp_len, b.ref_len);
    char how[64];
    if (a.dec.beam > 1) snprintf(how, sizeof how, "beam %d, length penalty %g", a.dec.beam,
                                 (double)a.dec.len_penalty);
    else snprintf(how, sizeof how, "greedy decoding");
    printf("chrF2 = %.2f\nperplexity = %.3f\nsentences = %ld, %.1f s, %s\n", chrf, ppl, c.n,
           secs, how);
    if (a.json)
        printf("{\"bleu\": %.4f, \"chrf\": %.4f, \"ppl\": %.4f, \"sentences\": %ld, "
               "\"seconds\": %.3f, \"beam\": %d, \"len_penalty\": %g}\n", b.score, chrf, ppl,
               c.n, secs, a.dec.beam, (double)a.dec.len_penalty);
    rc = 0;
done:
    if (rc) fprintf(stderr, "trainer: %s\n", err.msg);
    free_lines(hyp, c.n);
    encoded_free(&e);
    corpus_free(&c);
    model_free(&m);
    return rc;
}

static int cmd_translate(int argc, char **argv) {
    EvalArgs a;
    int rc = parse_eval_args(argc, argv, &a, "translate");
    if (rc) return rc;
    if (a.attention_map && a.json) {
        fprintf(stderr, "trainer translate: --json belongs to eval\n");
        return 2;
    }
    if (a.src || a.ref) {
        fprintf(stderr, "trainer translate: reads standard input; --src/--ref belong to eval\n");
        return 2;
    }
    Err err;
    Model m;
    if (checkpoint_load(a.checkpoint, &m, NULL, a.device, &err)) {
        fprintf(stderr, "trainer: %s\n", err.msg);
        return 1;
    }
    set_threads(m.cfg.threads);
    char **lines = NULL, **out = NULL;
    AttnMap *maps = NULL;
    long n = 0;
    CorpusStats st;
    rc = 1;
    if (corpus_read_lines("/dev/stdin", 0, &lines, &n, &st, &err)) goto done;
    if (a.attention_map && n == 0) {
        err_set(&err, "--attention-map %s: there is no input line to translate", a.attention_map);
        goto done;
    }
    if (a.attention_map) {
        maps = xcalloc(n, sizeof *maps);
        if (!model_has_attention(&m)) {
            err_set(&err, "--attention-map: %s has no attention to draw (model.attention = none)",
                    a.checkpoint);
            goto done;
        }
    }
    if (translate_lines(&m, (const char *const *)lines, n, &a.dec, &out, maps, &err)) goto done;
    for (long i = 0; i < n; i++) printf("%s\n", out[i]);
    if (maps) {
        fflush(stdout);
        if (plot_attention_png(&maps[0], a.attention_map, lines[0], &err)) goto done;
        fprintf(stderr, "attention of line 1 (%d source × %d target pieces) drawn in %s\n",
                maps[0].S, maps[0].T, a.attention_map);
    }
    rc = 0;
done:
    if (rc) fprintf(stderr, "trainer: %s\n", err.msg);
    free_lines(out, n);
    for (long i = 0; maps && i < n; i++) attn_map_free(&maps[i]);
    free(maps);
    corpus_free_lines(lines, n);
    model_free(&m);
    return rc;
}

int main(int argc, char **argv) {
    backend_cpu_prefer_fast_blas(argv);
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        usage(stdout);
        config_print_keys(stdout);
        return 0;
    }
    if (argc >= 2 && !strcmp(argv[1], "eval")) return cmd_eval(argc - 2, argv + 2);
    if (argc >= 2 && !strcmp(argv[1], "translate")) return cmd_translate(argc - 2, argv + 2);
    if (argc >= 2 && !strcmp(argv[1], "compare")) return cmd_compare(argc - 2, argv + 2);
    if (argc >= 2 && !strcmp(argv[1], "train")) return cmd_train(argc - 2, argv + 2);
    if (argc >= 2 && argv[1][0] != '-') {
        fprintf(stderr, "trainer: unknown command '%s'\n", argv[1]);
        usage(stderr);
        return 2;
    }
    return cmd_train(argc - 1, argv + 1);
}
