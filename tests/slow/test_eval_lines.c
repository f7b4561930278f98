/* test_eval_lines.c — `trainer eval` scores every line of its test files, as `trainer translate`
 * translates them.
 *
 * Data: the first 2000 training and 100 validation pairs of Multi30k, tests/fixtures/tiny.ini,
 * one thread, one epoch (A/best.ckpt). The test set is 10 validation pairs, its source line 4
 * emptied and line 7 given bytes that are not UTF-8 (0xFF, a lone continuation byte).
 *   - eval --json --out: exit 0, "sentences": 10, --out has 10 lines and its line 4 is empty;
 *     stderr warns that line 7 is not valid UTF-8 (read as U+FFFD); BLEU is the BLEU of those 10
 *     lines (the translations scored again against the references by a second eval of the same
 *     files: the same number);
 *   - translate of the same source file writes exactly eval's --out, and warns about line 7;
 *   - a source line 9 of 1200 bytes (data.max_line_bytes is 1000) is refused, naming the file
 *     and line 9; with --crop-long it is scored (10 sentences) and stderr says 1 line was cut;
 *   - a reference of 9 lines is refused, naming both files' line counts.
 */
#include "trainer_run.h"

#define TIMEOUT 180.0

/* Writes n lines to path, line k (from 0) from lines[k]. Exits 1 on failure. */
static void write_lines(const char *path, char *const *lines, int n) {
    FILE *f = fopen(path, "wb");
    for (int k = 0; f && k < n; k++) fprintf(f, "%s\n", lines[k]);
    if (!f || fclose(f)) {
        fprintf(stderr, "FAIL: cannot write %s\n", path);
        exit(1);
    }
}

/* The first n lines of path into lines[0..n) (malloc'd). Exits 1 when it has fewer. */
static void read_lines(const char *path, char **lines, int n) {
    char *t = test_read_file(path, NULL), *p = t;
    for (int k = 0; k < n; k++) {
        char *nl = p ? strchr(p, '\n') : NULL;
        if (!nl) {
            fprintf(stderr, "FAIL: %s has fewer than %d lines\n", path, n);
            exit(1);
        }
        lines[k] = strndup(p, (size_t)(nl - p));
        p = nl + 1;
    }
    free(t);
}

int main(void) {
    double t_start;
    const char *work = tr_begin("test_eval_lines", &t_start), *out, *err;
    const char *dir = test_strdup(tr_fmt("%s/A", work));
    EXPECT(tr_train(work, dir, TIMEOUT, NULL, "--set", "train.max_epochs=1", NULL) == 0,
           "the training run failed");
    const char *ck = test_strdup(tr_fmt("%s/best.ckpt", dir));
    char *src[10], *ref[10];
    read_lines(tr_fmt("%s/val.de", work), src, 10);
    read_lines(tr_fmt("%s/val.en", work), ref, 10);
    free(src[3]);
    src[3] = strdup("");
    free(src[6]);
    src[6] = strdup("Ein Hund \xff rennt \x80 durch den Schnee.");
    const char *fsrc = test_strdup(tr_fmt("%s/test.de", work));
    const char *fref = test_strdup(tr_fmt("%s/test.en", work));
    const char *hyp = test_strdup(tr_fmt("%s/hyp.en", work));
    write_lines(fsrc, src, 10);
    write_lines(fref, ref, 10);

    /* ---- every line scored, --out aligned with --src ---- */
    int rc = tr_cmd(work, NULL, &out, &err, TIMEOUT, "eval", "--checkpoint", ck, "--src", fsrc,
                    "--ref", fref, "--json", "--out", hyp, NULL);
    const char *json = test_strdup(tr_last_line(out));
    double sentences = 0, bleu = -1;
    EXPECT(rc == 0 && tr_json_number(json, "sentences", &sentences) && sentences == 10 &&
               tr_json_number(json, "bleu", &bleu),
           "eval should score all 10 lines (exit %d, %s)", rc, json);
    EXPECT(tr_count_lines(hyp) == 10, "--out should have one line for each of the 10 source "
           "lines, not %ld", tr_count_lines(hyp));
    char *h[10];
    if (tr_count_lines(hyp) == 10) {
        read_lines(hyp, h, 10);
        EXPECT(h[3][0] == 0, "the empty source line 4 should give an empty line, not '%s'", h[3]);
        for (int k = 0; k < 10; k++) free(h[k]);
    }
    EXPECT(tr_file_contains(err, "line 7") && tr_file_contains(err, "U+FFFD"),
           "eval should warn that line 7 is not valid UTF-8 (read as U+FFFD)");
    rc = tr_cmd(work, NULL, &out, &err, TIMEOUT, "eval", "--checkpoint", ck, "--src", fsrc,
                "--ref", fref, "--json", NULL);
    double bleu2 = -2;
    EXPECT(rc == 0 && tr_json_number(tr_last_line(out), "bleu", &bleu2) && bleu2 == bleu,
           "a second eval of the same files should score the same BLEU (%g, then %g)", bleu,
           bleu2);

    /* ---- translate agrees ---- */
    rc = tr_cmd(work, fsrc, &out, &err, TIMEOUT, "translate", "--checkpoint", ck, NULL);
    EXPECT(rc == 0 && test_files_equal(out, hyp),
           "translate of the source should write eval's --out, line for line (exit %d)", rc);
    EXPECT(tr_file_contains(err, "line 7") && tr_file_contains(err, "U+FFFD"),
           "translate should warn that line 7 is not valid UTF-8");

    /* ---- a line over data.max_line_bytes ---- */
    char longline[1300];
    memset(longline, 'a', 1200);
    memcpy(longline, "Ein Hund ", 9);
    longline[1200] = 0;
    free(src[8]);
    src[8] = strdup(longline);
    const char *flong = test_strdup(tr_fmt("%s/long.de", work));
    write_lines(flong, src, 10);
    rc = tr_cmd(work, NULL, &out, &err, TIMEOUT, "eval", "--checkpoint", ck, "--src", flong,
                "--ref", fref, "--json", NULL);
    EXPECT(rc == 1 && tr_file_contains(err, tr_fmt("%s, line 9", flong)) &&
               tr_file_contains(err, "--crop-long") && tr_count_lines(out) <= 0,
           "a source line of 1200 bytes should be refused naming the file and line 9 (exit %d)",
           rc);
    rc = tr_cmd(work, NULL, &out, &err, TIMEOUT, "eval", "--checkpoint", ck, "--src", flong,
                "--ref", fref, "--json", "--crop-long", NULL);
    sentences = 0;
    EXPECT(rc == 0 && tr_json_number(tr_last_line(out), "sentences", &sentences) &&
               sentences == 10 && tr_file_contains(err, "1 line of --src"),
           "--crop-long should score 10 lines and say that 1 line was cut (exit %d)", rc);

    /* ---- references of another length ---- */
    const char *fshort = test_strdup(tr_fmt("%s/short.en", work));
    write_lines(fshort, ref, 9);
    rc = tr_cmd(work, NULL, &out, &err, TIMEOUT, "eval", "--checkpoint", ck, "--src", fsrc,
                "--ref", fshort, NULL);
    EXPECT(rc == 1 && tr_file_contains(err, "has 9 lines") && tr_file_contains(err, " 10;"),
           "a reference of 9 lines for 10 source lines should be refused (exit %d)", rc);
    for (int k = 0; k < 10; k++) free(src[k]), free(ref[k]);
    return tr_finish("test_eval_lines", t_start);
}
