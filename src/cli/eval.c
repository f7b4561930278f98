/* eval.c — `trainer eval --checkpoint FILE --src FILE --ref FILE [--beam K] [--len-penalty A]
 * [--json] [--device cpu|cuda]`: translates --src with the checkpoint's model and prints BLEU,
 * chrF (sacreBLEU defaults) and teacher-forced perplexity against --ref. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "data/corpus.h"
#include "data/encoded.h"
#include "eval/metrics.h"
#include "eval/translate.h"
#include "train/checkpoint.h"
#include "train/train.h"

int cmd_eval(int argc, char **argv) {
    EvalArgs a;
    int rc = cli_parse_eval_args(argc, argv, &a, "eval");
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
    Config cfg;
    Spm *spm;
    Corpus c = {0};
    Encoded e = {0};
    char **hyp = NULL;
    double t0 = now_seconds(), ppl = 0;
    rc = 1;
    if (checkpoint_load_weights(a.checkpoint, &m, &cfg, &spm, a.device, &err)) {
        fprintf(stderr, "trainer: %s\n", err.msg);
        return 1;
    }
    set_threads(cfg.threads);
    if (corpus_load(&c, a.src, a.ref, cfg.max_line_bytes, &err)) goto done;
    if (!a.json) corpus_print_summary(&c, "eval", stderr);
    if (encoded_build(&e, (const char *const *)c.src, (const char *const *)c.tgt, c.n, spm, NULL,
                      &err))
        goto done;
    if (eval_perplexity(&m, &e, &ppl, NULL, &err)) goto done;
    if (translate_lines(&m, spm, (const char *const *)c.src, c.n, &a.dec, &hyp, NULL, &err))
        goto done;
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
    spm_free(spm);
    return rc;
}
