/* eval.c — `trainer eval --checkpoint FILE[,FILE...] --src FILE --ref FILE [--ref FILE]...
 * [--beam K] [--len-penalty A] [--out FILE] [--json] [--device cpu|cuda] [--threads N]`:
 * translates --src with the checkpoint's model (or the ensemble of the listed ones) and prints
 * BLEU and chrF (sacreBLEU's defaults, with their signatures; several references as sacreBLEU
 * takes them) and teacher-forced perplexity against the first --ref. */
#include <omp.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "data/corpus.h"
#include "data/encoded.h"
#include "eval/metrics.h"
#include "eval/translate.h"
#include "train/checkpoint.h"

void cli_eval_usage(FILE *f) {
    fprintf(f,
            "  trainer eval --checkpoint FILE[,FILE...] --src FILE --ref FILE [--ref FILE]...\n"
            "               [--beam K] [--len-penalty A] [--out FILE] [--json]\n"
            "               [--device cpu|cuda] [--threads N]\n"
            "      translate --src and score it against the references: BLEU and chrF as\n"
            "      sacreBLEU computes them by default (its signature lines; several --ref as\n"
            "      sacreBLEU takes several references) and the perplexity of the first --ref;\n"
            "      greedy by default, beam search with --beam K (length penalty A, Wu et al.\n"
            "      2016 eq. 14; default 1.0 with a beam, 0 when greedy)\n"
            "      --checkpoint a.ckpt,b.ckpt  an ensemble: the mean of the models'\n"
            "                     log-probabilities at each step (one SentencePiece model);\n"
            "                     its perplexity is given per model\n"
            "      --out FILE     write the translations, one a line\n"
            "      --threads N    CPU threads (default: the checkpoint's train.threads)\n"
            "      --json         print only a JSON object on stdout (the lines above go to\n"
            "                     stderr): bleu, chrf, ppl (ppl_models for an ensemble),\n"
            "                     sentences, seconds, beam, len_penalty, threads, nrefs,\n"
            "                     bleu_signature, chrf_signature\n");
}

int cmd_eval(int argc, char **argv) {
    EvalArgs a;
    int rc = cli_parse_eval_args(argc, argv, &a, "eval");
    if (rc) return rc;
    if (a.help) {
        fprintf(stdout, "usage:\n");
        cli_eval_usage(stdout);
        return 0;
    }
    const char *theirs = a.attention_map ? "--attention-map" : a.dec.nbest ? "--nbest"
                         : a.dec.sample ? "--sample" : a.seed_set ? "--seed" : NULL;
    if (theirs) {
        fprintf(stderr, "trainer eval: %s belongs to translate\n", theirs);
        return 2;
    }
    if (!a.src || a.nrefs == 0) {
        fprintf(stderr, "trainer eval: --src FILE and --ref FILE are required (see trainer eval "
                "--help)\n");
        return 2;
    }
    Err err;
    Model m[CLI_MAX_MODELS];
    Config cfg;
    Spm *spm;
    int nm;
    Corpus c[METRICS_MAX_REFS] = {{0}};
    Encoded e = {0};
    char **hyp = NULL;
    double t0 = now_seconds(), ppl[CLI_MAX_MODELS] = {0};
    FILE *human = a.json ? stderr : stdout; /* --json: stdout holds the JSON alone */
    if (cli_load_models(a.checkpoint, a.device, a.threads, m, &nm, &cfg, &spm, "eval")) return 1;
    rc = 1;
    /* each reference with the source: a pair with an empty or unreadable side is skipped, so
     * every reference must keep the pairs the first keeps */
    for (int r = 0; r < a.nrefs; r++) {
        if (corpus_load(&c[r], a.src, a.refs[r], cfg.max_line_bytes, &err)) goto done;
        int same = c[r].n == c[0].n;
        for (long i = 0; same && i < c[0].n; i++) same = !strcmp(c[r].src[i], c[0].src[i]);
        if (!same) {
            err_set(&err, "--ref %s keeps %ld of the %ld pairs with --src %s, --ref %s %ld (a "
                    "line empty, too long or not UTF-8 in one reference and not in the other); "
                    "give references with text on the same lines", a.refs[r], c[r].n,
                    c[r].stats.pairs_read, a.src, a.refs[0], c[0].n);
            goto done;
        }
    }
    if (!a.json) corpus_print_summary(&c[0], "eval", stderr);
    if (encoded_build(&e, (const char *const *)c[0].src, (const char *const *)c[0].tgt, c[0].n,
                      spm, NULL, &err))
        goto done;
    for (int i = 0; i < nm; i++)
        if (eval_perplexity(&m[i], &e, &ppl[i], NULL, &err)) goto done;
    Model *mp[CLI_MAX_MODELS];
    for (int i = 0; i < nm; i++) mp[i] = &m[i];
    if (translate_ensemble(mp, nm, spm, (const char *const *)c[0].src, c[0].n, &a.dec, &hyp,
                           NULL, NULL, &err))
        goto done;
    const char *refs[METRICS_MAX_REFS];
    for (int r = 0; r < a.nrefs; r++) refs[r] = (const char *)c[r].tgt;
    const char *const *const *rr = (const char *const *const *)refs;
    BleuScore b = bleu_corpus_refs((const char *const *)hyp, rr, a.nrefs, c[0].n);
    double chrf = chrf_corpus_refs((const char *const *)hyp, rr, a.nrefs, c[0].n);
    if (a.out) {
        size_t len = 0, cap = 1;
        for (long i = 0; i < c[0].n; i++) cap += strlen(hyp[i]) + 1;
        char *text = xmalloc(cap);
        for (long i = 0; i < c[0].n; i++) len += (size_t)sprintf(text + len, "%s\n", hyp[i]);
        Status ws = write_file_atomic(a.out, text, len, &err);
        free(text);
        if (ws) {
            err_prefix(&err, "--out");
            goto done;
        }
    }
    double secs = now_seconds() - t0;
    char bsig[128], csig[128];
    bleu_signature(bsig, sizeof bsig, a.nrefs);
    chrf_signature(csig, sizeof csig, a.nrefs);
    fprintf(human, "BLEU|%s = %.2f %.1f/%.1f/%.1f/%.1f (BP = %.3f ratio = %.3f hyp_len = %ld "
            "ref_len = %ld)\n", bsig, b.score, b.precisions[0], b.precisions[1], b.precisions[2],
            b.precisions[3], b.bp, b.ratio, b.hyp_len, b.ref_len);
    fprintf(human, "chrF2|%s = %.2f\n", csig, chrf);
    if (nm == 1) {
        fprintf(human, "perplexity = %.3f\n", ppl[0]);
    } else {
        fprintf(human, "perplexity (of --ref %s, each model of the ensemble):", a.refs[0]);
        for (int i = 0; i < nm; i++) fprintf(human, " %.3f", ppl[i]);
        fprintf(human, "\n");
    }
    char how[96];
    if (a.dec.beam > 1) snprintf(how, sizeof how, "beam %d, length penalty %g", a.dec.beam,
                                 (double)a.dec.len_penalty);
    else snprintf(how, sizeof how, "greedy decoding");
    if (nm > 1) str_appendf(how, sizeof how, ", an ensemble of %d models", nm);
    int threads = omp_get_max_threads();
    str_appendf(how, sizeof how, ", %d thread%s", threads, threads == 1 ? "" : "s");
    fprintf(human, "sentences = %ld, %.1f s, %s\n", c[0].n, secs, how);
    if (a.out) fprintf(human, "translations written to %s\n", a.out);
    if (a.json) {
        printf("{\"bleu\": %.4f, \"chrf\": %.4f, ", b.score, chrf);
        if (nm == 1) {
            printf("\"ppl\": %.4f, ", ppl[0]);
        } else {
            printf("\"ppl_models\": [");
            for (int i = 0; i < nm; i++) printf("%s%.4f", i ? ", " : "", ppl[i]);
            printf("], \"models\": %d, ", nm);
        }
        printf("\"sentences\": %ld, \"seconds\": %.3f, \"beam\": %d, \"len_penalty\": %g, "
               "\"threads\": %d, \"nrefs\": %d, \"bleu_signature\": \"%s\", "
               "\"chrf_signature\": \"%s\"}\n", c[0].n, secs, a.dec.beam,
               (double)a.dec.len_penalty, threads, a.nrefs, bsig, csig);
    }
    rc = 0;
done:
    if (rc) fprintf(stderr, "trainer: %s\n", err.msg);
    free_lines(hyp, c[0].n);
    encoded_free(&e);
    for (int r = 0; r < a.nrefs; r++) corpus_free(&c[r]);
    cli_free_models(m, nm, spm);
    return rc;
}
