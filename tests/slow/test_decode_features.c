/* test_decode_features.c — what users of Marian, fairseq and OpenNMT-py expect of decoding:
 * nothing cut silently, `trainer score`, word alignments, nucleus sampling, decoding batches and
 * files.
 *
 * Data: the first 2000 training and 100 validation pairs of Multi30k, tests/fixtures/tiny.ini,
 * one thread. A: two epochs of it; N: the same without attention (model.attention = none);
 * L: the same with linformer attention over sources of at most model.linformer_max_len = 80
 * tokens. The input is the 100 validation sources unless said otherwise.
 *   - long sources: a line over data.max_line_bytes (1000) is refused by translate and eval,
 *     naming the line and --crop-long; with --crop-long they translate every line and stderr
 *     says "1 line" was cut; a source of 120+ tokens (under 1000 bytes) is refused by L naming
 *     model.linformer_max_len, the line and --crop-long by translate and eval, and cropped
 *     with --crop-long;
 *   - score: one number a line; exp(-Σ logp / Σ tokens) of --json equals eval's perplexity to
 *     1e-4 relative; --normalize prints logp / tokens; the ensemble A,A scores as A; the greedy
 *     translation scores at least as high as the reference with its words reversed on at least
 *     80 of the 100 lines;
 *   - --alignment: every line is "translation ||| i-j ...", the translation translate's, one
 *     pair for each whitespace word j of the translation in order, i a whitespace word of the
 *     source; N refuses --alignment, naming model.attention = none;
 *   - --sample topp:1e-6 equals greedy decoding; topp:0.9 --seed 1 twice agrees;
 *   - batches and files: beam 5 on 200 lines of test_2016_flickr.de.gz with --batch-size 1, and
 *     with --batch-tokens 64, equals the default batches line for line; --input (the gzip file)
 *     --output FILE writes what standard output gets.
 */
#include <math.h>

#include "trainer_run.h"

#define TIMEOUT 300.0

static const char *g_work;

/* Whitespace words of s. */
static int count_words(const char *s) {
    int n = 0, in = 0;
    for (; *s; s++) {
        int sp = *s == ' ' || *s == '\t';
        if (!sp && !in) n++;
        in = !sp;
    }
    return n;
}

/* The lines of path (malloc'd copies; *n their number). */
static char **read_lines(const char *path, long *n) {
    char *t = test_read_file(path, NULL);
    *n = 0;
    if (!t) return NULL;
    long cap = 16;
    char **l = malloc(sizeof(char *) * cap);
    for (char *p = t, *q; *p; p = q + 1) {
        q = strchr(p, '\n');
        if (!q) q = p + strlen(p);
        if (*n == cap) l = realloc(l, sizeof(char *) * (cap *= 2));
        l[(*n)++] = strndup(p, (size_t)(q - p));
        if (!*q) break;
    }
    free(t);
    return l;
}

/* Checks an --alignment output against the sources and the plain translations; 1 if right. */
static int check_alignment(const char *out, const char *src, const char *plain) {
    long n, ns, np;
    char **o = read_lines(out, &n), **s = read_lines(src, &ns), **p = read_lines(plain, &np);
    int ok = n == ns && n == np && n > 0;
    for (long i = 0; ok && i < n; i++) {
        char *bar = strstr(o[i], " ||| ");
        if (!bar) {
            printf("line %ld: no ' ||| ' in '%s'\n", i + 1, o[i]);
            ok = 0;
            break;
        }
        *bar = '\0';
        if (strcmp(o[i], p[i])) {
            printf("line %ld: '%s', translate gives '%s'\n", i + 1, o[i], p[i]);
            ok = 0;
            break;
        }
        int sw = count_words(s[i]), tw = count_words(o[i]), j = 0;
        for (char *q = bar + 5; *q;) {
            char *end;
            long a = strtol(q, &end, 10);
            if (end == q || *end != '-') break;
            long b = strtol(end + 1, &q, 10);
            if (a < 0 || a >= sw || b != j) {
                printf("line %ld: pair %ld-%ld (source words %d, target word %d expected)\n",
                       i + 1, a, b, sw, j);
                ok = 0;
                break;
            }
            j++;
            if (*q == ' ') q++;
            else if (*q) break;
        }
        if (ok && j != tw) {
            printf("line %ld: %d pairs for %d target words in '%s'\n", i + 1, j, tw, o[i]);
            ok = 0;
        }
    }
    for (long i = 0; i < n; i++) free(o[i]);
    for (long i = 0; i < ns; i++) free(s[i]);
    for (long i = 0; i < np; i++) free(p[i]);
    free(o), free(s), free(p);
    return ok;
}

/* Writes the lines of path with their words in reverse order into rev. */
static void reverse_words(const char *path, const char *rev) {
    long n;
    char **l = read_lines(path, &n);
    FILE *f = fopen(rev, "w");
    for (long i = 0; f && i < n; i++) {
        char *w[256];
        int k = 0;
        for (char *tok = strtok(l[i], " "); tok && k < 256; tok = strtok(NULL, " ")) w[k++] = tok;
        for (int j = k - 1; j >= 0; j--) fprintf(f, "%s%s", w[j], j ? " " : "");
        fprintf(f, "\n");
        free(l[i]);
    }
    if (f) fclose(f);
    free(l);
}

int main(void) {
    double t_start;
    g_work = tr_begin("test_decode_features", &t_start);
    const char *out, *err, *o2, *e2;
    const char *dA = test_strdup(tr_fmt("%s/A", g_work)), *dN = test_strdup(tr_fmt("%s/N", g_work));
    const char *dL = test_strdup(tr_fmt("%s/L", g_work));
    EXPECT(tr_train(g_work, dA, TIMEOUT, NULL, "--set", "train.max_epochs=2", NULL) == 0,
           "training A failed");
    EXPECT(tr_train(g_work, dN, TIMEOUT, NULL, "--set", "train.max_epochs=1", "--set",
                    "model.attention=none", "--set", "model.input_feeding=no", NULL) == 0,
           "training N failed");
    EXPECT(tr_train(g_work, dL, TIMEOUT, NULL, "--set", "train.max_epochs=1", "--set",
                    "model.attention=linformer", "--set", "model.input_feeding=no", "--set",
                    "model.linformer_max_len=80", NULL) == 0,
           "training L failed");
    const char *A = test_strdup(tr_fmt("%s/best.ckpt", dA));
    const char *N = test_strdup(tr_fmt("%s/best.ckpt", dN));
    const char *L = test_strdup(tr_fmt("%s/best.ckpt", dL));
    const char *src = test_strdup(tr_fmt("%s/val.de", g_work));
    const char *ref = test_strdup(tr_fmt("%s/val.en", g_work));

    /* ---- nothing cut silently ---- */
    const char *longf = test_strdup(tr_fmt("%s/long.de", g_work));
    const char *tokf = test_strdup(tr_fmt("%s/tok.de", g_work));
    FILE *f = fopen(longf, "w"), *g = fopen(tokf, "w");
    fprintf(f, "Ein Hund.\n");
    fprintf(g, "Ein Hund.\n");
    for (int i = 0; i < 120; i++) fprintf(f, "Ein Hund "); /* 1080 bytes */
    for (int i = 0; i < 60; i++) fprintf(g, "Ein Hund "); /* 540 bytes, 120+ pieces */
    fprintf(f, "\nZwei Katzen.\n");
    fprintf(g, "\nZwei Katzen.\n");
    fclose(f), fclose(g);
    int rc = tr_cmd(g_work, longf, &out, &err, TIMEOUT, "translate", "--checkpoint", A, NULL);
    EXPECT(rc == 1 && tr_file_contains(err, "line 2") && tr_file_contains(err, "1080 bytes") &&
               tr_file_contains(err, "--crop-long"),
           "translate should refuse a line of 1080 bytes naming line 2 and --crop-long (exit %d)",
           rc);
    rc = tr_cmd(g_work, longf, &out, &err, TIMEOUT, "translate", "--checkpoint", A,
                "--crop-long", NULL);
    EXPECT(rc == 0 && tr_count_lines(out) == 3 && tr_file_contains(err, "--crop-long: 1 line"),
           "translate --crop-long: 3 lines and '1 line' cut on stderr expected (exit %d)", rc);
    rc = tr_cmd(g_work, NULL, &out, &err, TIMEOUT, "eval", "--checkpoint", A, "--src", longf,
                "--ref", longf, NULL);
    EXPECT(rc == 1 && tr_file_contains(err, "line 2") && tr_file_contains(err, "--crop-long"),
           "eval should refuse the line of 1080 bytes (exit %d)", rc);
    rc = tr_cmd(g_work, tokf, &out, &err, TIMEOUT, "translate", "--checkpoint", L, NULL);
    EXPECT(rc == 1 && tr_file_contains(err, "input line 2") &&
               tr_file_contains(err, "model.linformer_max_len = 80") &&
               tr_file_contains(err, "--crop-long"),
           "a linformer model of 80 positions should refuse a source of 120+ tokens naming line 2 "
           "(exit %d)", rc);
    rc = tr_cmd(g_work, tokf, &out, &err, TIMEOUT, "translate", "--checkpoint", L, "--crop-long",
                NULL);
    EXPECT(rc == 0 && tr_count_lines(out) == 3 &&
               tr_file_contains(err, "1 line cut to the 80 subword tokens"),
           "translate --crop-long of the linformer model: 3 lines, one cut to 80 tokens (exit %d)",
           rc);
    rc = tr_cmd(g_work, NULL, &out, &err, TIMEOUT, "eval", "--checkpoint", L, "--src", tokf,
                "--ref", tokf, NULL);
    EXPECT(rc == 1 && tr_file_contains(err, "line 2") && tr_file_contains(err, "--crop-long") &&
               tr_file_contains(err, "model.linformer_max_len = 80"),
           "eval of the linformer model should refuse the long source naming line 2 (exit %d)",
           rc);
    rc = tr_cmd(g_work, NULL, &out, &err, TIMEOUT, "eval", "--checkpoint", L, "--src", tokf,
                "--ref", tokf, "--crop-long", NULL);
    EXPECT(rc == 0 && tr_file_contains(err, "1 line of --src"),
           "eval --crop-long of the linformer model should cut one line (exit %d)", rc);

    /* ---- score ---- */
    rc = tr_cmd(g_work, NULL, &out, &err, TIMEOUT, "score", "--help", NULL);
    EXPECT(rc == 0 && tr_file_contains(out, "--normalize"), "score --help: exit %d", rc);
    rc = tr_cmd(g_work, NULL, &out, &err, TIMEOUT, "score", "--checkpoint", A, "--src", src,
                "--ref", ref, "--json", NULL);
    long n = 0;
    char **js = rc == 0 ? read_lines(out, &n) : NULL;
    double sum = 0, ntok = 0;
    int json_ok = n == 100;
    for (long i = 0; i < n; i++) {
        double lp, tk, per, line;
        json_ok &= tr_json_number(js[i], "logp", &lp) && tr_json_number(js[i], "tokens", &tk) &&
                   tr_json_number(js[i], "logp_per_token", &per) &&
                   tr_json_number(js[i], "line", &line) && line == i + 1 && lp <= 0 && tk >= 1;
        sum += lp, ntok += tk;
        free(js[i]);
    }
    free(js);
    EXPECT(rc == 0 && json_ok, "score --json: 100 lines with line, logp <= 0, tokens expected "
           "(exit %d, %ld lines)", rc, n);
    rc = tr_cmd(g_work, NULL, &o2, &e2, TIMEOUT, "eval", "--checkpoint", A, "--src", src, "--ref",
                ref, "--json", NULL);
    double ppl = 0, ours = exp(-sum / ntok);
    EXPECT(rc == 0 && tr_json_number(tr_last_line(o2), "ppl", &ppl) &&
               fabs(ours - ppl) <= 1e-4 * ppl,
           "exp(-Σ logp / Σ tokens) = %.6f should equal eval's perplexity %.6f", ours, ppl);
    rc = tr_cmd(g_work, NULL, &out, &err, TIMEOUT, "score", "--checkpoint", A, "--src", src,
                "--ref", ref, NULL);
    rc |= tr_cmd(g_work, NULL, &o2, &e2, TIMEOUT, "score", "--checkpoint",
                 tr_fmt("%s,%s", A, A), "--src", src, "--ref", ref, NULL);
    long na, nb;
    char **sa = read_lines(out, &na), **sb = read_lines(o2, &nb);
    int same = rc == 0 && na == 100 && nb == 100;
    for (long i = 0; same && i < na; i++) same = fabs(atof(sa[i]) - atof(sb[i])) <= 1e-4;
    EXPECT(same, "score: the ensemble A,A should score as A (exit %d, %ld and %ld lines)", rc, na,
           nb);
    rc = tr_cmd(g_work, NULL, &out, &err, TIMEOUT, "score", "--checkpoint", A, "--src", src,
                "--ref", ref, "--normalize", NULL);
    long nn;
    char **sn = read_lines(out, &nn);
    int norm_ok = rc == 0 && nn == 100;
    for (long i = 0; norm_ok && i < nn; i++) norm_ok = atof(sn[i]) < 0 && atof(sn[i]) >= atof(sa[i]);
    EXPECT(norm_ok, "score --normalize: a mean per token (above the sum) on each of 100 lines");
    /* the model's own greedy translation against the reversed reference */
    rc = tr_cmd(g_work, src, &out, &err, TIMEOUT, "translate", "--checkpoint", A, NULL);
    const char *greedy = out;
    const char *rev = test_strdup(tr_fmt("%s/rev.en", g_work));
    reverse_words(ref, rev);
    rc |= tr_cmd(g_work, NULL, &out, &err, TIMEOUT, "score", "--checkpoint", A, "--src", src,
                 "--ref", greedy, NULL);
    rc |= tr_cmd(g_work, NULL, &o2, &e2, TIMEOUT, "score", "--checkpoint", A, "--src", src,
                 "--ref", rev, NULL);
    long ng, nr, better = 0;
    char **sg = read_lines(out, &ng), **sr = read_lines(o2, &nr);
    for (long i = 0; i < ng && i < nr; i++) better += atof(sg[i]) >= atof(sr[i]);
    EXPECT(rc == 0 && ng == 100 && better >= 80, "score: the greedy translation should score at "
           "least the reversed reference on >= 80 of 100 lines (%ld)", better);

    /* ---- alignment ---- */
    rc = tr_cmd(g_work, src, &out, &err, TIMEOUT, "translate", "--checkpoint", A, "--alignment",
                NULL);
    EXPECT(rc == 0 && check_alignment(out, src, greedy),
           "--alignment: each line 'translation ||| i-j ...' with one pair per target word");
    rc = tr_cmd(g_work, src, &out, &err, TIMEOUT, "translate", "--checkpoint", N, "--alignment",
                NULL);
    EXPECT(rc == 1 && tr_file_contains(err, "model.attention = none"),
           "--alignment of a model without attention should be refused naming it (exit %d)", rc);

    /* ---- nucleus sampling ---- */
    rc = tr_cmd(g_work, src, &out, &err, TIMEOUT, "translate", "--checkpoint", A, "--sample",
                "topp:0.000001", NULL);
    EXPECT(rc == 0 && test_files_equal(out, greedy), "--sample topp:1e-6 should be greedy");
    rc = tr_cmd(g_work, src, &out, &err, TIMEOUT, "translate", "--checkpoint", A, "--sample",
                "topp:0.9", "--seed", "1", NULL);
    rc |= tr_cmd(g_work, src, &o2, &e2, TIMEOUT, "translate", "--checkpoint", A, "--sample",
                 "topp:0.9", "--seed", "1", NULL);
    EXPECT(rc == 0 && test_files_equal(out, o2) && !test_files_equal(out, greedy),
           "--sample topp:0.9 --seed 1 twice should agree and differ from greedy decoding");
    rc = tr_cmd(g_work, src, &out, &err, TIMEOUT, "translate", "--checkpoint", A, "--sample",
                "topp:1.5", NULL);
    EXPECT(rc == 2, "--sample topp:1.5 should be refused (exit %d)", rc);

    /* ---- batches and files ---- */
    const char *test200 = test_strdup(tr_fmt("%s/test200.de", g_work));
    EXPECT(tr_gz_head(TR_DATA "/test_2016_flickr.de.gz", test200, 200) == 200,
           "could not read 200 lines of test_2016_flickr.de.gz");
    rc = tr_cmd(g_work, test200, &out, &err, TIMEOUT, "translate", "--checkpoint", A, "--beam",
                "5", NULL);
    rc |= tr_cmd(g_work, test200, &o2, &e2, TIMEOUT, "translate", "--checkpoint", A, "--beam",
                 "5", "--batch-size", "1", NULL);
    EXPECT(rc == 0 && tr_count_lines(out) == 200 && test_files_equal(out, o2),
           "beam 5 with --batch-size 1 should equal the default batches line for line");
    const char *beam5 = out;
    rc = tr_cmd(g_work, test200, &o2, &e2, TIMEOUT, "translate", "--checkpoint", A, "--beam",
                "5", "--batch-tokens", "64", NULL);
    EXPECT(rc == 0 && test_files_equal(beam5, o2),
           "beam 5 with --batch-tokens 64 should equal the default batches line for line");
    const char *outf = test_strdup(tr_fmt("%s/out200.en", g_work));
    const char *gz = TR_DATA "/test_2016_flickr.de.gz";
    rc = tr_cmd(g_work, NULL, &out, &err, TIMEOUT, "translate", "--checkpoint", A, "--input", gz,
                "--output", outf, NULL);
    rc |= tr_cmd(g_work, gz, &o2, &e2, TIMEOUT, "translate", "--checkpoint", A, NULL);
    EXPECT(rc == 0 && tr_count_lines(outf) == 1000 && tr_file_size(out) == 0 &&
               test_files_equal(outf, o2),
           "--input FILE.gz --output FILE: the file should hold what standard output gets from "
           "the same input, nothing on stdout (exit %d)", rc);
    for (long i = 0; i < na; i++) free(sa[i]);
    for (long i = 0; i < nb; i++) free(sb[i]);
    for (long i = 0; i < nn; i++) free(sn[i]);
    for (long i = 0; i < ng; i++) free(sg[i]);
    for (long i = 0; i < nr; i++) free(sr[i]);
    free(sa), free(sb), free(sn), free(sg), free(sr);
    return tr_finish("test_decode_features", t_start);
}
