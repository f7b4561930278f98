/* eval.c — `trainer eval --checkpoint FILE[,FILE...] --src FILE --ref FILE [--ref FILE]...
 * [--beam K] [--len-penalty A] [--out FILE] [--json] [--device cpu|cuda] [--threads N]
 * [--crop-long]`: translates --src with the checkpoint's model (or the ensemble of the listed
 * ones) and prints BLEU and chrF (sacreBLEU's defaults, with their signatures; several
 * references as sacreBLEU takes them) and teacher-forced perplexity against the first --ref.
 * Every line of the files is scored, and --out holds one line for each line of --src: an empty source line translates to
 * an empty line (as translate's), bytes that are not UTF-8 are read as U+FFFD with a warning
 * counting the lines, and a source line longer than the model's data.max_line_bytes is refused
 * naming its file and line, or with --crop-long cut to that length at a character boundary
 * (stderr counts them); so is a source of more subword tokens than the model reads
 * (model_max_source_len: a linformer's model.linformer_max_len), cut with --crop-long to that
 * many tokens for the perplexity and the translation. The references must have the source's
 * number of lines. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "data/corpus.h"
#include "data/encoded.h"
#include "data/prepare.h"
#include "eval/metrics.h"
#include "eval/translate.h"
#include "train/checkpoint.h"

/* The lines of an eval file (--src, or the reference --ref) as corpus_read_lines reads them
 * (every line, in order), with the bytes that are not UTF-8 read as U+FFFD and a warning on
 * stderr counting the lines and naming the first. Errors: corpus_read_lines's, prefixed with the
 * option. */
static Status read_eval_file(const char *opt, const char *path, char ***lines, long *n,
                             Err *err) {
    CorpusStats st;
    if (corpus_read_lines(path, 0, lines, n, &st, err)) return err_prefix(err, "%s", opt);
    long bad = 0, first = 0;
    for (long i = 0; i < *n; i++)
        if (corpus_utf8_repair(&(*lines)[i]) && bad++ == 0) first = i + 1;
    if (bad)
        fprintf(stderr, "trainer eval: warning: %s %s: %ld line%s (the first: line %ld) %s not "
                "valid UTF-8; %s invalid bytes were read as U+FFFD\n", opt, path, bad,
                bad == 1 ? "" : "s", first, bad == 1 ? "is" : "are", bad == 1 ? "its" : "their");
    return STATUS_OK;
}

/* "--src FILE" in a static buffer (the name of the file in messages). */
static const char *tr_fmt_src(const char *path) {
    static char buf[4200];
    snprintf(buf, sizeof buf, "--src %s", path);
    return buf;
}

/* Cuts every source of e longer than lim tokens (lim 0: none) to lim, in place, counting them in
 * *cropped: --crop-long for a model that reads at most lim tokens (model_max_source_len). */
static void crop_sources(Encoded *e, int lim, long *cropped) {
    if (!lim) return;
    int64_t w = 0;
    for (long i = 0; i < e->n; i++) {
        int64_t a = e->src_off[i], k = e->src_off[i + 1] - a;
        if (k > lim) k = lim, (*cropped)++;
        memmove(e->src_ids + w, e->src_ids + a, sizeof(int32_t) * (size_t)k);
        e->src_off[i] = w;
        w += k;
    }
    e->src_off[e->n] = w;
}

/* A perplexity as a JSON number into buf (n bytes): %.4f, %.17g from 1e15 on, null when it is
 * not finite (JSON has no inf). Returns buf. */
static const char *json_ppl(char *buf, size_t n, double ppl) {
    if (!isfinite(ppl)) snprintf(buf, n, "null");
    else snprintf(buf, n, ppl >= 1e15 ? "%.17g" : "%.4f", ppl);
    return buf;
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
                         : a.dec.sample ? "--sample" : a.seed_set ? "--seed"
                         : a.stream ? "--stream" : a.alignment ? "--alignment"
                         : a.input ? "--input" : a.output ? "--output" : NULL;
    if (a.normalize) {
        fprintf(stderr, "trainer eval: --normalize belongs to score\n");
        return 2;
    }
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
    char **src = NULL, **ref[METRICS_MAX_REFS] = {NULL};
    long n = 0, nref[METRICS_MAX_REFS] = {0}, empty = 0, cropped = 0;
    Encoded e = {0};
    char **hyp = NULL;
    double t0 = now_seconds(), ppl[CLI_MAX_MODELS] = {0};
    FILE *human = a.json ? stderr : stdout; /* --json: stdout holds the JSON alone */
    if (cli_load_models(a.checkpoint, a.device, a.threads, m, &nm, &cfg, &spm, "eval")) return 1;
    rc = 1;
    /* every line is scored: line i of each reference translates line i of the source */
    if (read_eval_file("--src", a.src, &src, &n, &err)) goto done;
    if (n == 0) {
        err_set(&err, "--src %s has no lines; give the test set's source text", a.src);
        goto done;
    }
    for (int r = 0; r < a.nrefs; r++) {
        if (read_eval_file("--ref", a.refs[r], &ref[r], &nref[r], &err)) goto done;
        if (nref[r] != n) {
            err_set(&err, "--ref %s has %ld lines, --src %s %ld; line i of a reference "
                    "translates line i of the source: give files of the same length",
                    a.refs[r], nref[r], a.src, n);
            goto done;
        }
    }
    /* a source line longer than the model was trained on (data.max_line_bytes): refused, or
     * with --crop-long cut to that many bytes */
    long limit = cfg.max_line_bytes, cropped_tok = 0;
    for (long i = 0; i < n; i++) empty += src[i][0] == '\0';
    if (cli_check_long_lines(src, n, 0, limit, 1, a.crop_long, tr_fmt_src(a.src), &cropped, &err))
        goto done;
    if (cropped)
        fprintf(stderr, "trainer eval: --crop-long: %ld line%s of --src %s cut to "
                "data.max_line_bytes = %ld bytes\n", cropped, cropped == 1 ? "" : "s", a.src,
                limit);
    if (!a.json) {
        fprintf(stderr, "eval: %ld lines of %s, every one scored", n, a.src);
        if (empty) fprintf(stderr, " (%ld empty: an empty translation each)", empty);
        fprintf(stderr, "\n");
    }
    /* joined examples: the model's data.concat, or --concat */
    int k = a.concat ? a.concat : cfg.concat > 0 ? cfg.concat : 1;
    long nsent = n;
    if (k > 1) {
        if (prepare_check_sep(spm, k, a.checkpoint, &err)) goto done;
        char **j;
        long nj;
        if (corpus_join_lines(src, n, k, &j, &nj, &err)) {
            err_prefix(&err, "--src %s", a.src);
            goto done;
        }
        corpus_free_lines(src, n);
        src = j;
        for (int r = 0; r < a.nrefs; r++) {
            if (corpus_join_lines(ref[r], n, k, &j, &nj, &err)) {
                err_prefix(&err, "--ref %s", a.refs[r]);
                goto done;
            }
            corpus_free_lines(ref[r], n);
            ref[r] = j, nref[r] = nj;
        }
        n = nj;
        if (!a.json)
            fprintf(stderr, "eval: joined %d lines an example (%s): %ld examples\n", k,
                    a.concat ? "--concat" : "the model's data.concat", n);
    }
    if (encoded_build(&e, (const char *const *)src, (const char *const *)ref[0], n, spm, NULL,
                      &err))
        goto done;
    int lim = model_max_source_len(&m[0]);
    if (a.crop_long) crop_sources(&e, lim, &cropped_tok);
    for (long i = 0; lim && i < n; i++)
        if (model_check_source_len(&m[0], (int)(e.src_off[i + 1] - e.src_off[i]), &err)) {
            err_prefix(&err, "--src %s, line %ld", a.src, i + 1);
            str_appendf(err.msg, sizeof err.msg, "; or give --crop-long to cut such sources to "
                        "%d tokens", lim);
            goto done;
        }
    for (int i = 0; i < nm; i++)
        if (eval_perplexity(&m[i], &e, &ppl[i], NULL, &err)) goto done;
    Model *mp[CLI_MAX_MODELS];
    for (int i = 0; i < nm; i++) mp[i] = &m[i];
    a.dec.crop_long = a.crop_long, a.dec.cropped = NULL; /* counted by crop_sources */
    if (translate_ensemble(mp, nm, spm, (const char *const *)src, n, &a.dec, &hyp, NULL, NULL,
                           &err))
        goto done;
    if (cropped_tok)
        fprintf(stderr, "trainer eval: --crop-long: %ld line%s of --src %s cut to the %d subword "
                "tokens the model reads (model.linformer_max_len)\n", cropped_tok,
                cropped_tok == 1 ? "" : "s", a.src, lim);
    const char *const *const *rr = (const char *const *const *)ref;
    JoinedScore jd = {0};
    if (k > 1) {
        metrics_joined_score(&jd, hyp, ref, a.nrefs, n, k, nsent);
        rr = (const char *const *const *)jd.doc_ref;
    }
    const char *const *hh = (const char *const *)(k > 1 ? jd.doc_hyp : hyp);
    BleuScore b = bleu_corpus_refs(hh, rr, a.nrefs, n);
    double chrf = chrf_corpus_refs(hh, rr, a.nrefs, n);
    if (a.out) { /* one line for each line of --src */
        size_t len = 0, cap = 1;
        for (long i = 0; i < n; i++) cap += strlen(hyp[i]) + 1;
        char *text = xmalloc(cap);
        for (long i = 0; i < n; i++) len += (size_t)sprintf(text + len, "%s\n", hyp[i]);
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
    if (k > 1) {
        fprintf(human, "(BLEU and chrF of the %ld documents of %d lines, the separators left "
                "out)\n", n, k);
        if (jd.nsplit)
            fprintf(human, "sentence BLEU (translations split at %s) = %.2f over the %ld "
                    "sentences of %ld of %ld examples; %ld had another number of separators\n",
                    CORPUS_SEP, jd.split.score, jd.nsplit, n - jd.mismatches, n, jd.mismatches);
        else
            fprintf(human, "sentence BLEU: none; every one of the %ld translations has another "
                    "number of separators than its source\n", n);
    }
    char pt[32];
    if (nm == 1) {
        fprintf(human, "perplexity = %s\n", metrics_ppl_text(pt, sizeof pt, ppl[0], 3));
    } else {
        fprintf(human, "perplexity (of --ref %s, each model of the ensemble):", a.refs[0]);
        for (int i = 0; i < nm; i++)
            fprintf(human, " %s", metrics_ppl_text(pt, sizeof pt, ppl[i], 3));
        fprintf(human, "\n");
    }
    char how[96];
    if (a.dec.beam > 1) snprintf(how, sizeof how, "beam %d, length penalty %g", a.dec.beam,
                                 (double)a.dec.len_penalty);
    else snprintf(how, sizeof how, "greedy decoding");
    if (nm > 1) str_appendf(how, sizeof how, ", an ensemble of %d models", nm);
    int threads = omp_get_max_threads();
    str_appendf(how, sizeof how, ", %d thread%s", threads, threads == 1 ? "" : "s");
    fprintf(human, "sentences = %ld, %.1f s, %s\n", n, secs, how);
    if (a.out) fprintf(human, "translations written to %s\n", a.out);
    if (a.json) {
        printf("{\"bleu\": %.4f, \"chrf\": %.4f, ", b.score, chrf);
        if (nm == 1) {
            printf("\"ppl\": %s, ", json_ppl(pt, sizeof pt, ppl[0]));
        } else {
            printf("\"ppl_models\": [");
            for (int i = 0; i < nm; i++)
                printf("%s%s", i ? ", " : "", json_ppl(pt, sizeof pt, ppl[i]));
            printf("], \"models\": %d, ", nm);
        }
        if (k > 1) {
            printf("\"concat\": %d, \"split_mismatches\": %ld, \"bleu_split\": ", k,
                   jd.mismatches);
            if (jd.nsplit) printf("%.4f, ", jd.split.score);
            else printf("null, ");
        }
        printf("\"sentences\": %ld, \"seconds\": %.3f, \"beam\": %d, \"len_penalty\": %g, "
               "\"threads\": %d, \"nrefs\": %d, \"bleu_signature\": \"%s\", "
               "\"chrf_signature\": \"%s\"}\n", n, secs, a.dec.beam,
               (double)a.dec.len_penalty, threads, a.nrefs, bsig, csig);
    }
    rc = 0;
    metrics_joined_free(&jd, a.nrefs, n);
done:
    if (rc) fprintf(stderr, "trainer: %s\n", err.msg);
    free_lines(hyp, n);
    encoded_free(&e);
    corpus_free_lines(src, n);
    for (int r = 0; r < a.nrefs; r++) corpus_free_lines(ref[r], nref[r]);
    cli_free_models(m, nm, spm);
    return rc;
}
