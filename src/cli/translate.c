/* translate.c — `trainer translate --checkpoint FILE[,FILE...] [--beam K] [--len-penalty A]
 * [--nbest K] [--sample topk:K|topp:P|temp:T] [--seed N] [--attention-map PNG] [--alignment]
 * [--crop-long] [--batch-tokens N] [--batch-size N] [--device cpu|cuda] [--threads N]
 * [--stream] [--input FILE] [--output FILE] < input > output`: translates standard input (or
 * --input, gzip or plain) line by line into standard output (or --output), with one model or
 * the ensemble of the listed ones; --nbest prints K hypotheses a line with their scores as
 * Marian's n-best lists do; --sample draws the translations (back-translation); --alignment
 * appends each line's word alignment from the attention (" ||| i-j ...", translate.h
 * attn_map_alignment); --attention-map draws the first line's attention as a PNG (eval/plot.h).
 * A source line over the model's data.max_line_bytes (config_line_bytes: times data.concat, with
 * the separators, for a model of joined sentences), or of more subword tokens than the model
 * reads, is refused naming its line, or cut with --crop-long (stderr counts them at the end).
 * A file read whole shows its progress on stderr when stderr is a terminal.
 *
 * Every input line gives one output line (--nbest: K), in order: an empty line translates to an
 * empty line, and the bytes of a line that are not UTF-8 are read as U+FFFD (a warning on stderr
 * names the lines), as `trainer eval` reads its files. A regular file on standard input is read
 * whole and decoded in batches of similar length; a pipe or a terminal (or any input with
 * --stream) is translated as it arrives: the lines at hand (one, when a program writes a line and
 * waits) are decoded together and their translations written and flushed before more input is
 * read, so that another program can drive the trainer line by line. The translations do not
 * depend on how the lines were grouped (sampling draws line i from the seed and i). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "data/corpus.h"
#include "eval/plot.h"
#include "eval/translate.h"
#include "train/checkpoint.h"

/* Standard input read as it arrives (read(2) into a growing buffer): lines end at '\n', the last
 * one may lack it. */
typedef struct {
    char *buf;
    size_t len, pos, cap; /* bytes held, the next line's start, the buffer's size */
    int eof;              /* read(2) returned 0 */
    long lineno;          /* lines returned so far */
} StdinLines;

/* The next line of r, without its '\n', one trailing '\r' stripped (and a UTF-8 BOM before the
 * first): 1 with *line malloc'd, 0 when there is none — at the end of the input, or, when wait is
 * 0, when no complete line has arrived yet (r->eof tells which) — or STATUS_ERR with err set: a
 * read error, a NUL byte (not text), or gzip data (plain text only on a stream). Blocks only
 * when wait is set and no line is held. */
static int next_line(StdinLines *r, int wait, char **line, Err *err) {
    for (;;) {
        char *nl = r->len > r->pos ? memchr(r->buf + r->pos, '\n', r->len - r->pos) : NULL;
        if (nl || (r->eof && r->pos < r->len)) {
            size_t n = nl ? (size_t)(nl - (r->buf + r->pos)) : r->len - r->pos;
            const char *s = r->buf + r->pos;
            r->pos += n + (nl != NULL);
            r->lineno++;
            if (r->lineno == 1 && n >= 2 && (unsigned char)s[0] == 0x1f &&
                (unsigned char)s[1] == 0x8b)
                return err_set(err, "standard input is gzip data; a stream is read as plain "
                               "text: decompress it first (zcat FILE.gz | trainer translate "
                               "...), or give the file itself (trainer translate ... < FILE.gz)");
            if (r->lineno == 1 && n >= 3 && !memcmp(s, "\xEF\xBB\xBF", 3)) s += 3, n -= 3;
            if (memchr(s, '\0', n))
                return err_set(err, "standard input, line %ld: contains a NUL byte; is this a "
                               "text file? (remove the NUL bytes)", r->lineno);
            if (n && s[n - 1] == '\r') n--;
            *line = xmalloc(n + 1);
            memcpy(*line, s, n);
            (*line)[n] = '\0';
            return 1;
        }
        if (r->eof || !wait) return 0;
        if (r->pos > 0) { /* keep the unread part only */
            memmove(r->buf, r->buf + r->pos, r->len - r->pos);
            r->len -= r->pos, r->pos = 0;
        }
        if (r->len == r->cap) r->buf = xrealloc(r->buf, r->cap = r->cap ? 2 * r->cap : 1 << 16);
        ssize_t got = read(STDIN_FILENO, r->buf + r->len, r->cap - r->len);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0)
            return err_set(err, "standard input: read error: %s", strerror(errno));
        if (got == 0) r->eof = 1;
        r->len += (size_t)got;
    }
}

/* What one call of translate_batch needs beyond its lines. */
typedef struct {
    Model **models;
    int nm;
    const Spm *spm;
    const EvalArgs *a;
    FILE *out;                /* standard output, or --output's file */
    const char *out_name;     /* for messages: "standard output" or the file */
    long max_line_bytes;      /* the model's config_line_bytes */
    int concat;               /* the model's data.concat (for the message) */
    long bad_utf8, first_bad; /* lines read with U+FFFD so far, the first's number (from 1) */
    long cropped_bytes, cropped_tokens; /* lines cut by --crop-long so far */
} Translator;

/* Lines first .. first + n - 1 of the input (numbered from 0), lines[0..n): their bytes that are
 * not UTF-8 read as U+FFFD (counted in t; on a stream each such line is named on stderr at once),
 * a line over t->max_line_bytes refused or cut (--crop-long, counted in t), translated and
 * written to t->out as translate's output lines (with --alignment, " ||| " and the alignment
 * after each), then flushed; with --attention-map the map of input line 0 drawn when it is
 * among them. Errors: cli_check_long_lines's, translate_ensemble's, the map's
 * (plot_attention_png), a failed write of the output. */
static Status translate_batch(Translator *t, char **lines, long n, long first, int stream,
                              Err *err) {
    const EvalArgs *a = t->a;
    int nbest = a->dec.nbest > 1 ? a->dec.nbest : 1;
    for (long i = 0; i < n; i++) {
        if (!corpus_utf8_repair(&lines[i])) continue;
        if (t->bad_utf8++ == 0) t->first_bad = first + i + 1;
        if (stream)
            fprintf(stderr, "trainer translate: warning: input line %ld is not valid UTF-8; its "
                    "invalid bytes were read as U+FFFD\n", first + i + 1);
    }
    if (cli_check_long_lines(lines, n, first, t->max_line_bytes, t->concat, a->crop_long,
                             a->input ? a->input : "standard input", &t->cropped_bytes, err))
        return STATUS_ERR;
    DecodeOpts dec = a->dec;
    dec.first_line = first;
    dec.crop_long = a->crop_long, dec.cropped = &t->cropped_tokens;
    AttnMap *maps = (a->attention_map && first == 0) || a->alignment
                        ? xcalloc((size_t)n, sizeof(AttnMap)) : NULL;
    float *scores = a->dec.nbest ? xmalloc(sizeof(float) * (size_t)n * nbest) : NULL;
    char **out = NULL;
    Status rc = translate_ensemble(t->models, t->nm, t->spm, (const char *const *)lines, n, &dec,
                                   &out, scores, maps, err);
    for (long i = 0; !rc && i < n; i++) {
        if (!a->dec.nbest) {
            if (a->alignment) {
                char *al = attn_map_alignment(&maps[i]);
                fprintf(t->out, "%s ||| %s\n", out[i], al);
                free(al);
            } else {
                fprintf(t->out, "%s\n", out[i]);
            }
            continue;
        }
        for (int k = 0; k < nbest; k++) /* Marian's n-best line; a missing hypothesis: none */
            if (scores[i * nbest + k] > -INFINITY || out[i * nbest + k][0])
                fprintf(t->out, "%ld ||| %s ||| %.6f\n", first + i, out[i * nbest + k],
                        scores[i * nbest + k]);
    }
    if (!rc && (fflush(t->out) != 0 || ferror(t->out)))
        rc = err_set(err, "%s: write error: %s", t->out_name, strerror(errno));
    if (!rc && a->attention_map && first == 0) {
        if (plot_attention_png(&maps[0], a->attention_map, lines[0], err)) rc = STATUS_ERR;
        else
            fprintf(stderr, "attention of line 1 (%d source × %d target pieces) drawn in %s\n",
                    maps[0].S, maps[0].T, a->attention_map);
    }
    free_lines(out, n * nbest); /* NULL when translate_ensemble failed */
    free(scores);
    for (long i = 0; maps && i < n; i++) attn_map_free(&maps[i]);
    free(maps);
    return rc;
}

/* The folder of --attention-map's file exists and takes a new file, checked before anything is
 * decoded; else err says which folder and why. */
static Status check_map_folder(const char *path, Err *err) {
    char dir[4096];
    const char *slash = strrchr(path, '/');
    if (!slash) snprintf(dir, sizeof dir, ".");
    else snprintf(dir, sizeof dir, "%.*s", slash == path ? 1 : (int)(slash - path), path);
    struct stat sb;
    if (stat(dir, &sb) != 0)
        return err_set(err, "--attention-map %s: the folder %s: %s; create it first, or give "
                       "another file", path, dir, strerror(errno));
    if (!S_ISDIR(sb.st_mode))
        return err_set(err, "--attention-map %s: %s is not a folder; give another file", path,
                       dir);
    if (access(dir, W_OK | X_OK) != 0)
        return err_set(err, "--attention-map %s: cannot write into the folder %s: %s; give "
                       "another file", path, dir, strerror(errno));
    return STATUS_OK;
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
    if (a.json || a.out || a.concat) {
        fprintf(stderr, "trainer translate: %s belongs to eval (translate writes standard "
                "output, or --output FILE, a line for each input line; join lines with \" "
                CORPUS_SEP " \" yourself)\n", a.json ? "--json" : a.out ? "--out" : "--concat");
        return 2;
    }
    if (a.normalize) {
        fprintf(stderr, "trainer translate: --normalize belongs to score\n");
        return 2;
    }
    if (a.alignment && a.dec.nbest) {
        fprintf(stderr, "trainer translate: --alignment aligns one translation a line; drop "
                "--nbest\n");
        return 2;
    }
    if (a.input && a.stream) {
        fprintf(stderr, "trainer translate: --input %s is read whole; --stream reads standard "
                "input as it arrives: give one of them\n", a.input);
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
    if (a.attention_map && check_map_folder(a.attention_map, &err)) {
        fprintf(stderr, "trainer translate: %s\n", err.msg);
        return 1;
    }
    Model m[CLI_MAX_MODELS], *mp[CLI_MAX_MODELS];
    Config cfg;
    Spm *spm;
    int nm;
    if (cli_load_models(a.checkpoint, a.device, a.threads, m, &nm, &cfg, &spm, "translate"))
        return 1;
    for (int i = 0; i < nm; i++) mp[i] = &m[i];
    if ((a.attention_map || a.alignment) && !model_has_attention(&m[0])) {
        const char *slot = cfg.model.type == MODEL_RNN ? "model.attention" : "model.cross_attention";
        AttentionKind k = cfg.model.type == MODEL_RNN ? cfg.model.attention
                                                      : cfg.model.cross_attention;
        fprintf(stderr, "trainer translate: %s: %s has no attention weights (%s = %s%s); "
                "translate without it, or with a model of another attention\n",
                a.alignment ? "--alignment" : "--attention-map", a.checkpoint, slot,
                attention_kind_names[k], k == ATTN_NONE ? ""
                : ": its implied weights need its projections E and F, which it does not keep");
        cli_free_models(m, nm, spm);
        return 1;
    }
    Translator t = {mp, nm, spm, &a, stdout, "standard output", config_line_bytes(&cfg),
                    cfg.concat, 0, 0, 0, 0};
    char **lines = NULL;
    long n = 0, done = 0;
    struct stat sb;
    int stream = !a.input && (a.stream || fstat(STDIN_FILENO, &sb) != 0 || !S_ISREG(sb.st_mode));
    rc = 1;
    if (a.output) {
        t.out = fopen(a.output, "w");
        t.out_name = a.output;
        if (!t.out) {
            t.out = stdout;
            err_set(&err, "--output %s: cannot write it: %s; give a file in a folder that exists "
                    "and is writable", a.output, strerror(errno));
            goto done;
        }
    }
    if (!stream) { /* a file: read whole, decoded in batches of similar length */
        CorpusStats st;
        const char *path = a.input ? a.input : "/dev/stdin";
        if (corpus_read_lines(path, 0, &lines, &n, &st, &err)) {
            if (a.input) err_prefix(&err, "--input");
            goto done;
        }
        /* on a terminal, a progress line: the file in chunks (the translations are the same) */
        long chunk = isatty(STDERR_FILENO) ? 500 : n;
        double t0 = now_seconds();
        for (long i = 0; i < n; i += chunk) {
            long k = n - i < chunk ? n - i : chunk;
            if (translate_batch(&t, lines + i, k, i, 0, &err)) goto done;
            if (chunk < n)
                fprintf(stderr, "\rtranslate: %ld of %ld lines, %.0f s", i + k, n,
                        now_seconds() - t0);
        }
        if (chunk < n) fprintf(stderr, "\n");
        done = n;
    } else { /* a stream: the lines at hand, translated and flushed before reading on */
        StdinLines in = {0};
        long cap = 0;
        for (;;) {
            char *line;
            int got = next_line(&in, 1, &line, &err);
            while (got == 1) {
                if (n == cap) lines = xrealloc(lines, sizeof *lines * (size_t)(cap = 2 * cap + 16));
                lines[n++] = line;
                got = n < 256 ? next_line(&in, 0, &line, &err) : 0; /* no wait */
            }
            if (got < 0 || (n && translate_batch(&t, lines, n, done, 1, &err))) {
                free(in.buf);
                goto done;
            }
            done += n;
            corpus_free_lines(lines, n);
            lines = NULL, n = 0, cap = 0;
            if (in.eof && in.pos == in.len) break;
        }
        free(in.buf);
    }
    if (a.attention_map && done == 0) {
        err_set(&err, "--attention-map %s: there is no input line to translate", a.attention_map);
        goto done;
    }
    if (t.cropped_bytes)
        fprintf(stderr, "trainer translate: --crop-long: %ld line%s cut to the %ld bytes the "
                "model reads a line\n", t.cropped_bytes, t.cropped_bytes == 1 ? "" : "s",
                t.max_line_bytes);
    if (t.cropped_tokens)
        fprintf(stderr, "trainer translate: --crop-long: %ld line%s cut to the %d subword tokens "
                "the model reads (model.linformer_max_len)\n", t.cropped_tokens,
                t.cropped_tokens == 1 ? "" : "s", model_max_source_len(&m[0]));
    if (t.bad_utf8 && !stream) /* a stream named each line as it came */
        fprintf(stderr, "trainer translate: warning: %ld input line%s (the first: line %ld) %s "
                "not valid UTF-8; %s invalid bytes were read as U+FFFD\n", t.bad_utf8,
                t.bad_utf8 == 1 ? "" : "s", t.first_bad, t.bad_utf8 == 1 ? "is" : "are",
                t.bad_utf8 == 1 ? "its" : "their");
    rc = 0;
done:
    if (t.out != stdout && fclose(t.out) != 0 && !rc) {
        err_set(&err, "--output %s: write error: %s", a.output, strerror(errno));
        rc = 1;
    }
    if (rc) fprintf(stderr, "trainer: %s\n", err.msg);
    corpus_free_lines(lines, n);
    cli_free_models(m, nm, spm);
    return rc;
}
