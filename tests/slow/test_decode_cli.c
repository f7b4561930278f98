/* test_decode_cli.c — `trainer translate` and `trainer eval` for scripts: ensembles, n-best
 * lists, sampling, --out, --json, several references, --help.
 *
 * Data: the first 2000 training and 100 validation pairs of Multi30k, tests/fixtures/tiny.ini,
 * one thread; A is one epoch of it (A/best.ckpt), B the same with another seed in another folder
 * (its SentencePiece model, trained there, is A's vocabulary in a file that names another
 * folder), D the same with data.vocab_size = 400 (another SentencePiece model). The input is the
 * 100 validation sources.
 *   - eval --help and translate --help print their usage and exit 0;
 *   - an ensemble of A with itself translates as A alone, byte for byte, greedy and with beam 3;
 *     an ensemble of A and B translates (one vocabulary, files that differ in their paths); an
 *     ensemble of A and D is refused, naming the SentencePiece model;
 *   - --nbest 3: three lines "i ||| translation ||| score" for each input line i (from 0), the
 *     scores non-increasing, the first hypothesis the --beam 3 translation;
 *   - --sample topk:5 --seed 1 twice gives the same output, --seed 2 another; topk:1 is greedy
 *     decoding; temp:1 differs from greedy decoding;
 *   - eval --json --out FILE: stdout is one JSON line (bleu, chrf, ppl, sentences = 100, nrefs
 *     = 1, the signatures), stderr has the signature line, FILE holds translate's output;
 *     the ensemble A,A scores A's BLEU; --ref twice the same file scores that BLEU with nrefs:2;
 *     a --ref of fewer lines is refused.
 */
#include "trainer_run.h"

#define TIMEOUT 240.0

static const char *g_work;
static int g_no = 0;

/* Runs trainer with the arguments (NULL ended), stdin from in (NULL: none), stdout to *out and
 * stderr to *err (paths in g_work). Returns the exit code. */
static int run(const char *in, const char **out, const char **err, ...) {
    TrArgv a = {.n = 0};
    tr_arg(&a, "%s", tr_bin());
    va_list ap;
    va_start(ap, err);
    for (const char *s; (s = va_arg(ap, const char *)) != NULL;) tr_arg(&a, "%s", s);
    va_end(ap);
    g_no++;
    *out = test_strdup(tr_fmt("%s/out%02d.txt", g_work, g_no));
    *err = test_strdup(tr_fmt("%s/err%02d.txt", g_work, g_no));
    char what[32];
    snprintf(what, sizeof what, "run %d", g_no);
    tr_print_argv(what, a.v);
    int rc = tr_wait(tr_spawn2(a.v, *out, *err, 0, in), TIMEOUT);
    if (rc) tr_print_tail(*err, 5);
    tr_argv_free(&a);
    return rc;
}

/* Checks an n-best file of k hypotheses for each of n lines; its first hypotheses (the
 * translation of each line) into best (a file). Returns 1 if well-formed. */
static int check_nbest(const char *path, long n, int k, const char *best) {
    char *t = test_read_file(path, NULL);
    FILE *f = fopen(best, "w");
    if (!t || !f) return 0;
    long lines = 0;
    int ok = 1;
    double prev = 0;
    char *save = NULL;
    for (char *l = strtok_r(t, "\n", &save); l && ok; l = strtok_r(NULL, "\n", &save), lines++) {
        char *a = strstr(l, " ||| "), *b = a ? strstr(a + 5, " ||| ") : NULL;
        ok = a && b && strtol(l, NULL, 10) == lines / k;
        if (!ok) break;
        double sc = strtod(b + 5, NULL);
        if (lines % k) ok = sc <= prev;
        else fprintf(f, "%.*s\n", (int)(b - a - 5), a + 5);
        prev = sc;
    }
    fclose(f);
    free(t);
    if (!ok || lines != n * k)
        printf("n-best: %ld lines (want %ld), well-formed %d\n", lines, n * k, ok);
    return ok && lines == n * k;
}

int main(void) {
    double t_start;
    g_work = tr_begin("test_decode_cli", &t_start);
    const char *out, *err, *o2, *e2;
    int rc = run(NULL, &out, &err, "eval", "--help", NULL);
    EXPECT(rc == 0 && tr_file_contains(out, "usage:") && tr_file_contains(out, "--ref"),
           "eval --help: exit %d", rc);
    rc = run(NULL, &out, &err, "translate", "--help", NULL);
    EXPECT(rc == 0 && tr_file_contains(out, "usage:") && tr_file_contains(out, "--nbest"),
           "translate --help: exit %d", rc);

    const char *dA = test_strdup(tr_fmt("%s/A", g_work)), *dD = test_strdup(tr_fmt("%s/D", g_work));
    EXPECT(tr_train(g_work, dA, TIMEOUT, NULL, "--set", "train.max_epochs=1", NULL) == 0,
           "training A failed");
    EXPECT(tr_train(g_work, dD, TIMEOUT, NULL, "--set", "train.max_epochs=1", "--set",
                    "data.vocab_size=400", NULL) == 0,
           "training D failed");
    const char *dB = test_strdup(tr_fmt("%s/B", g_work));
    EXPECT(tr_train(g_work, dB, TIMEOUT, NULL, "--set", "train.max_epochs=1", "--set",
                    "train.seed=2", NULL) == 0,
           "training B failed");
    EXPECT(!test_files_equal(tr_fmt("%s/spm.model", dA), tr_fmt("%s/spm.model", dB)),
           "A's and B's spm.model are the same bytes: the ensemble below would not test that "
           "one vocabulary trained in two folders is one model");
    const char *A = test_strdup(tr_fmt("%s/best.ckpt", dA));
    const char *AA = test_strdup(tr_fmt("%s,%s", A, A));
    const char *AD = test_strdup(tr_fmt("%s,%s/best.ckpt", A, dD));
    const char *src = test_strdup(tr_fmt("%s/val.de", g_work));
    const char *ref = test_strdup(tr_fmt("%s/val.en", g_work));

    /* ---- ensembles ---- */
    rc = run(src, &out, &err, "translate", "--checkpoint", A, NULL);
    rc |= run(src, &o2, &e2, "translate", "--checkpoint", AA, NULL);
    EXPECT(rc == 0 && tr_count_lines(out) == 100 && test_files_equal(out, o2),
           "greedy: the ensemble of A with itself should translate as A (exit %d)", rc);
    const char *greedy = out;
    rc = run(src, &out, &err, "translate", "--checkpoint", A, "--beam", "3", NULL);
    rc |= run(src, &o2, &e2, "translate", "--checkpoint", AA, "--beam", "3", NULL);
    EXPECT(rc == 0 && test_files_equal(out, o2),
           "beam 3: the ensemble of A with itself should translate as A (exit %d)", rc);
    const char *beam3 = out;
    rc = run(src, &out, &err, "translate", "--checkpoint",
             tr_fmt("%s,%s/best.ckpt", A, dB), NULL);
    EXPECT(rc == 0 && tr_count_lines(out) == 100, "an ensemble of A and B (one vocabulary, "
           "SentencePiece files trained in two folders) should translate (exit %d)", rc);
    rc = run(src, &out, &err, "translate", "--checkpoint", AD, NULL);
    EXPECT(rc == 1 && tr_file_contains(err, "another SentencePiece model"),
           "an ensemble of two SentencePiece models should be refused (exit %d)", rc);

    /* ---- n-best ---- */
    rc = run(src, &out, &err, "translate", "--checkpoint", A, "--nbest", "3", NULL);
    const char *firsts = test_strdup(tr_fmt("%s/nbest_first.txt", g_work));
    EXPECT(rc == 0 && check_nbest(out, 100, 3, firsts), "--nbest 3: not 3 well-formed lines a "
           "sentence with non-increasing scores (exit %d)", rc);
    EXPECT(test_files_equal(firsts, beam3), "--nbest 3: the first hypotheses should be --beam 3's");

    /* ---- sampling ---- */
    rc = run(src, &out, &err, "translate", "--checkpoint", A, "--sample", "topk:5", "--seed", "1",
             NULL);
    rc |= run(src, &o2, &e2, "translate", "--checkpoint", A, "--sample", "topk:5", "--seed", "1",
              NULL);
    EXPECT(rc == 0 && test_files_equal(out, o2), "--sample topk:5 --seed 1 twice should agree");
    rc = run(src, &o2, &e2, "translate", "--checkpoint", A, "--sample", "topk:5", "--seed", "2",
             NULL);
    EXPECT(rc == 0 && !test_files_equal(out, o2), "--seed 2 should draw other translations");
    rc = run(src, &out, &err, "translate", "--checkpoint", A, "--sample", "topk:1", NULL);
    EXPECT(rc == 0 && test_files_equal(out, greedy), "--sample topk:1 should be greedy decoding");
    rc = run(src, &out, &err, "translate", "--checkpoint", A, "--sample", "temp:1", NULL);
    EXPECT(rc == 0 && !test_files_equal(out, greedy) && tr_count_lines(out) == 100,
           "--sample temp:1 should differ from greedy decoding");
    rc = run(src, &out, &err, "translate", "--checkpoint", A, "--sample", "temp:0", NULL);
    EXPECT(rc == 2, "--sample temp:0 should be refused (exit %d)", rc);

    /* ---- eval for scripts ---- */
    const char *hyp = test_strdup(tr_fmt("%s/hyp.txt", g_work));
    rc = run(NULL, &out, &err, "eval", "--checkpoint", A, "--src", src, "--ref", ref, "--json",
             "--out", hyp, NULL);
    static const char *const keys[] = {"bleu", "chrf", "ppl", "sentences", "seconds", "nrefs",
                                       NULL};
    char why[256] = "";
    const char *line = test_strdup(tr_last_line(out));
    EXPECT(rc == 0 && tr_count_lines(out) == 1, "eval --json: stdout should be one line (exit "
           "%d, %ld lines)", rc, tr_count_lines(out));
    EXPECT(strstr(line, "\"bleu_signature\": \"nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|"
                        "version:") != NULL,
           "eval --json: no BLEU signature in %s", line);
    char *copy = strdup(line), *sig = strstr(copy, ", \"bleu_signature\"");
    if (sig) strcpy(sig, "}"); /* the numbers alone */
    EXPECT(tr_json_object_has_numbers(copy, keys, why, sizeof why), "eval --json: %s", why);
    free(copy);
    double bleu = -1, v = 0;
    EXPECT(tr_json_number(line, "bleu", &bleu) && tr_json_number(line, "sentences", &v) &&
               v == 100, "eval --json: bleu and 100 sentences expected in %s", line);
    EXPECT(tr_file_contains(err, "BLEU|nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:") &&
               tr_file_contains(err, "chrF2|nrefs:1|"),
           "eval --json: the signature lines should be on stderr");
    EXPECT(test_files_equal(hyp, greedy),
           "eval --out should write translate's greedy translations");
    rc = run(NULL, &out, &err, "eval", "--checkpoint", AA, "--src", src, "--ref", ref, "--json",
             NULL);
    double b2 = -2;
    EXPECT(rc == 0 && tr_json_number(tr_last_line(out), "bleu", &b2) && b2 == bleu,
           "eval of the ensemble A,A: BLEU %g, A alone %g", b2, bleu);
    rc = run(NULL, &out, &err, "eval", "--checkpoint", A, "--src", src, "--ref", ref, "--ref",
             ref, NULL);
    EXPECT(rc == 0 && tr_file_contains(out, "BLEU|nrefs:2|") &&
               tr_file_contains(out, tr_fmt(" = %.2f ", bleu)),
           "eval with the reference twice should score BLEU %.2f with nrefs:2", bleu);
    const char *short_ref = test_strdup(tr_fmt("%s/short.en", g_work));
    tr_gz_head(ref, short_ref, 50);
    rc = run(NULL, &out, &err, "eval", "--checkpoint", A, "--src", src, "--ref", ref, "--ref",
             short_ref, NULL);
    EXPECT(rc == 1, "a --ref of 50 lines for 100 sources should be refused (exit %d)", rc);
    return tr_finish("test_decode_cli", t_start);
}
