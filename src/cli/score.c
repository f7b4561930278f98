/* score.c — `trainer score --checkpoint FILE[,FILE...] --src FILE --ref FILE [--normalize]
 * [--json] [--crop-long] [--batch-tokens N] [--batch-size N] [--device cpu|cuda] [--threads N]`:
 * forced decoding, as marian-scorer and fairseq-score: for each line i of --src and --ref (gzip
 * or plain, the same number of lines), log p(ref_i | src_i) in nats, the sum over the
 * reference's subword pieces and EOS of the model's log-probabilities (an ensemble's mean at
 * each step, as translate's), printed one number a line in input order; --normalize prints the
 * mean per token instead; --json one JSON object a line ({"line", "logp", "tokens",
 * "logp_per_token"}). exp(-Σ logp / Σ tokens) over a file is eval's perplexity of the same pairs.
 * Bytes that are not UTF-8 are read as U+FFFD, as eval reads them; a source line over the
 * model's data.max_line_bytes (config_line_bytes: times data.concat, with the separators, for a
 * model of joined sentences), or of more tokens than the model reads, is refused naming its
 * line, or cut with --crop-long; an empty source line is refused (a model reads no empty
 * source). Source: translate.h score_ensemble. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "data/corpus.h"
#include "eval/translate.h"

/* The lines of --src or --ref (opt) at path, every line in order, invalid UTF-8 read as U+FFFD
 * (a warning on stderr counts the lines). Errors: corpus_read_lines's, prefixed with opt. */
static Status read_lines(const char *opt, const char *path, char ***lines, long *n, Err *err) {
    CorpusStats st;
    if (corpus_read_lines(path, 0, lines, n, &st, err)) return err_prefix(err, "%s", opt);
    long bad = 0;
    for (long i = 0; i < *n; i++) bad += corpus_utf8_repair(&(*lines)[i]) != 0;
    if (bad)
        fprintf(stderr, "trainer score: warning: %s %s: %ld line%s not valid UTF-8; the invalid "
                "bytes were read as U+FFFD\n", opt, path, bad, bad == 1 ? " is" : "s are");
    return STATUS_OK;
}

int cmd_score(int argc, char **argv) {
    EvalArgs a;
    int rc = cli_parse_eval_args(argc, argv, &a, "score");
    if (rc) return rc;
    if (a.help) {
        fprintf(stdout, "usage:\n");
        cli_score_usage(stdout);
        return 0;
    }
    const char *theirs = a.attention_map ? "--attention-map" : a.dec.nbest ? "--nbest"
                         : a.dec.sample ? "--sample" : a.seed_set ? "--seed"
                         : a.stream ? "--stream" : a.alignment ? "--alignment"
                         : a.input ? "--input" : a.output ? "--output" : a.out ? "--out"
                         : a.dec.beam > 1 ? "--beam" : a.concat ? "--concat" : NULL;
    if (theirs) {
        fprintf(stderr, "trainer score: %s belongs to translate or eval (score reads the "
                "references it is given)\n", theirs);
        return 2;
    }
    if (!a.src || a.nrefs != 1) {
        fprintf(stderr, "trainer score: give --src FILE and one --ref FILE (see trainer score "
                "--help)\n");
        return 2;
    }
    Err err;
    Model m[CLI_MAX_MODELS], *mp[CLI_MAX_MODELS];
    Config cfg;
    Spm *spm;
    int nm;
    char **src = NULL, **ref = NULL;
    long n = 0, nref = 0, cropped = 0, cropped_tok = 0, *ntok = NULL;
    double *logp = NULL;
    if (cli_load_models(a.checkpoint, a.device, a.threads, m, &nm, &cfg, &spm, "score")) return 1;
    for (int i = 0; i < nm; i++) mp[i] = &m[i];
    rc = 1;
    if (read_lines("--src", a.src, &src, &n, &err) ||
        read_lines("--ref", a.refs[0], &ref, &nref, &err))
        goto done;
    if (nref != n) {
        err_set(&err, "--ref %s has %ld lines, --src %s %ld; line i of the reference translates "
                "line i of the source: give files of the same length", a.refs[0], nref, a.src, n);
        goto done;
    }
    char what[4200];
    snprintf(what, sizeof what, "--src %s", a.src);
    long limit = config_line_bytes(&cfg); /* a joined model's lines hold its data.concat */
    if (cli_check_long_lines(src, n, 0, limit, cfg.concat, a.crop_long, what, &cropped, &err))
        goto done;
    logp = xmalloc(sizeof(double) * (n ? n : 1));
    ntok = xmalloc(sizeof(long) * (n ? n : 1));
    a.dec.crop_long = a.crop_long, a.dec.cropped = &cropped_tok;
    if (score_ensemble(mp, nm, spm, (const char *const *)src, (const char *const *)ref, n, &a.dec,
                       logp, ntok, &err)) {
        err_prefix(&err, "--src %s", a.src);
        goto done;
    }
    for (long i = 0; i < n; i++) {
        double per = logp[i] / (double)ntok[i];
        if (a.json)
            printf("{\"line\": %ld, \"logp\": %.6f, \"tokens\": %ld, \"logp_per_token\": %.6f}\n",
                   i + 1, logp[i], ntok[i], per);
        else
            printf("%.6f\n", a.normalize ? per : logp[i]);
    }
    if (fflush(stdout) != 0 || ferror(stdout)) {
        err_set(&err, "standard output: write error");
        goto done;
    }
    if (cropped)
        fprintf(stderr, "trainer score: --crop-long: %ld line%s of --src %s cut to the %ld bytes "
                "the model reads a line\n", cropped, cropped == 1 ? "" : "s", a.src, limit);
    if (cropped_tok)
        fprintf(stderr, "trainer score: --crop-long: %ld line%s of --src %s cut to the %d subword "
                "tokens the model reads (model.linformer_max_len)\n", cropped_tok,
                cropped_tok == 1 ? "" : "s", a.src, model_max_source_len(&m[0]));
    rc = 0;
done:
    if (rc) fprintf(stderr, "trainer: %s\n", err.msg);
    free(logp);
    free(ntok);
    corpus_free_lines(src, n);
    corpus_free_lines(ref, nref);
    cli_free_models(m, nm, spm);
    return rc;
}
