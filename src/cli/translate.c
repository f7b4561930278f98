/* translate.c — `trainer translate --checkpoint FILE [--beam K] [--len-penalty A]
 * [--attention-map PNG] [--device cpu|cuda] < input > output`: translates standard input line by
 * line; --attention-map draws the first line's attention as a PNG (eval/plot.h). */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "data/corpus.h"
#include "eval/plot.h"
#include "eval/translate.h"
#include "train/checkpoint.h"
#include "train/train.h"

int cmd_translate(int argc, char **argv) {
    EvalArgs a;
    int rc = cli_parse_eval_args(argc, argv, &a, "translate");
    if (rc) return rc;
    if (a.json) {
        fprintf(stderr, "trainer translate: --json belongs to eval\n");
        return 2;
    }
    if (a.src || a.ref) {
        fprintf(stderr, "trainer translate: reads standard input; --src/--ref belong to eval\n");
        return 2;
    }
    Err err;
    Model m;
    Config cfg;
    Spm *spm;
    if (checkpoint_load_weights(a.checkpoint, &m, &cfg, &spm, a.device, &err)) {
        fprintf(stderr, "trainer: %s\n", err.msg);
        return 1;
    }
    set_threads(cfg.threads);
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
            err_set(&err, "--attention-map: %s has no attention to draw (model.attention = none, "
                    "or a linformer cross-attention, whose implied weights need its E and F)",
                    a.checkpoint);
            goto done;
        }
    }
    if (translate_lines(&m, spm, (const char *const *)lines, n, &a.dec, &out, maps, &err))
        goto done;
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
    spm_free(spm);
    return rc;
}
