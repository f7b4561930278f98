/* translate.c — `trainer translate --checkpoint FILE[,FILE...] [--beam K] [--len-penalty A]
 * [--nbest K] [--sample topk:K|temp:T] [--seed N] [--attention-map PNG] [--device cpu|cuda]
 * [--threads N] < input > output`: translates standard input line by line, with one model or
 * the ensemble of the listed ones; --nbest prints K hypotheses a line with their scores as
 * Marian's n-best lists do; --sample draws the translations (back-translation);
 * --attention-map draws the first line's attention as a PNG (eval/plot.h). Every input line
 * gives one output line (--nbest: K), in order: an empty line translates to an empty line, and
 * the bytes of a line that are not UTF-8 are read as U+FFFD (a warning on stderr counts the
 * lines), as `trainer eval` reads its files. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "data/corpus.h"
#include "eval/plot.h"
#include "eval/translate.h"
#include "train/checkpoint.h"

void cli_translate_usage(FILE *f) {
    fprintf(f,
            "  trainer translate --checkpoint FILE[,FILE...] [--beam K] [--len-penalty A]\n"
            "                    [--nbest K] [--sample topk:K|temp:T] [--seed N]\n"
            "                    [--attention-map PNG] [--device cpu|cuda] [--threads N]\n"
            "                    < in > out\n"
            "      translate standard input line by line (greedy, or beam search with --beam),\n"
            "      one output line for each input line (an empty one for an empty one; bytes\n"
            "      that are not UTF-8 are read as U+FFFD, with a warning naming the lines)\n"
            "      --checkpoint a.ckpt,b.ckpt  an ensemble: the mean of the models'\n"
            "                     log-probabilities at each step (one SentencePiece model)\n"
            "      --nbest K      K hypotheses a line, best first, as Marian's n-best lists:\n"
            "                     'i ||| translation ||| score' (i from 0, score log p(Y|X) /\n"
            "                     lp(Y) of the beam search; a beam of K unless --beam is given)\n"
            "      --sample topk:K  draw each token from the K most probable; temp:T from all\n"
            "                     at temperature T (temp:1 samples the model's distribution);\n"
            "                     --seed N (default 0) fixes the draws of each line\n"
            "      --attention-map PNG  draw the attention of the first line's translation\n"
            "      --threads N    CPU threads (default: the checkpoint's train.threads)\n");
}

int cmd_translate(int argc, char **argv) {
    EvalArgs a;
    int rc = cli_parse_eval_args(argc, argv, &a, "translate");
    if (rc) return rc;
    if (a.help) {
        fprintf(stdout, "usage:\n");
        cli_translate_usage(stdout);
        return 0;
    }
    if (a.json || a.out) {
        fprintf(stderr, "trainer translate: %s belongs to eval (translate writes standard "
                "output)\n", a.json ? "--json" : "--out");
        return 2;
    }
    if (a.src || a.nrefs) {
        fprintf(stderr, "trainer translate: reads standard input; --src/--ref belong to eval\n");
        return 2;
    }
    if (a.seed_set && !a.dec.sample) {
        fprintf(stderr, "trainer translate: --seed fixes the draws of --sample; give --sample\n");
        return 2;
    }
    if (a.attention_map && a.dec.nbest > 1) {
        fprintf(stderr, "trainer translate: --attention-map draws one translation; drop --nbest\n");
        return 2;
    }
    Err err;
    Model m[CLI_MAX_MODELS], *mp[CLI_MAX_MODELS];
    Config cfg;
    Spm *spm;
    int nm;
    if (cli_load_models(a.checkpoint, a.device, a.threads, m, &nm, &cfg, &spm, "translate")) return 1;
    for (int i = 0; i < nm; i++) mp[i] = &m[i];
    char **lines = NULL, **out = NULL;
    float *scores = NULL;
    AttnMap *maps = NULL;
    long n = 0;
    int nbest = a.dec.nbest > 1 ? a.dec.nbest : 1;
    CorpusStats st;
    rc = 1;
    if (corpus_read_lines("/dev/stdin", 0, &lines, &n, &st, &err)) goto done;
    long bad = 0, first_bad = 0; /* as eval reads its files: invalid bytes as U+FFFD */
    for (long i = 0; i < n; i++)
        if (corpus_utf8_repair(&lines[i]) && bad++ == 0) first_bad = i + 1;
    if (bad)
        fprintf(stderr, "trainer translate: warning: %ld input line%s (the first: line %ld) %s "
                "not valid UTF-8; %s invalid bytes were read as U+FFFD\n", bad,
                bad == 1 ? "" : "s", first_bad, bad == 1 ? "is" : "are",
                bad == 1 ? "its" : "their");
    if (a.attention_map && n == 0) {
        err_set(&err, "--attention-map %s: there is no input line to translate", a.attention_map);
        goto done;
    }
    if (a.attention_map) {
        maps = xcalloc(n, sizeof *maps);
        if (!model_has_attention(&m[0])) {
            err_set(&err, "--attention-map: %s has no attention to draw (model.attention = none, "
                    "or a linformer cross-attention, whose implied weights need its E and F)",
                    a.checkpoint);
            goto done;
        }
    }
    if (a.dec.nbest) scores = xmalloc(sizeof(float) * (n ? n : 1) * nbest);
    if (translate_ensemble(mp, nm, spm, (const char *const *)lines, n, &a.dec, &out, scores, maps,
                           &err))
        goto done;
    for (long i = 0; i < n; i++) {
        if (!a.dec.nbest) {
            printf("%s\n", out[i]);
            continue;
        }
        for (int k = 0; k < nbest; k++) /* Marian's n-best line; a missing hypothesis: none */
            if (scores[i * nbest + k] > -INFINITY || out[i * nbest + k][0])
                printf("%ld ||| %s ||| %.6f\n", i, out[i * nbest + k], scores[i * nbest + k]);
    }
    if (maps) {
        fflush(stdout);
        if (plot_attention_png(&maps[0], a.attention_map, lines[0], &err)) goto done;
        fprintf(stderr, "attention of line 1 (%d source × %d target pieces) drawn in %s\n",
                maps[0].S, maps[0].T, a.attention_map);
    }
    rc = 0;
done:
    if (rc) fprintf(stderr, "trainer: %s\n", err.msg);
    free_lines(out, n * nbest);
    free(scores);
    for (long i = 0; maps && i < n; i++) attn_map_free(&maps[i]);
    free(maps);
    corpus_free_lines(lines, n);
    cli_free_models(m, nm, spm);
    return rc;
}
