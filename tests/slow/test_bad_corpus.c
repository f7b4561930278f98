/* test_bad_corpus.c — `trainer train` on damaged corpora behaves as the README's Data section
 * says, with every case counted in the load summary it prints.
 *
 * The first 2000 Multi30k training pairs, with a UTF-8 BOM in front and 11 crafted pairs after
 * them: CRLF endings, a lone CR inside a line, an empty and a whitespace-only source, a NUL byte,
 * invalid UTF-8, a 6000-byte line (over data.max_line_bytes = 5000), three pairs of 600 words
 * (over data.max_len = 200 subword tokens after SentencePiece, but under the byte limit), and a
 * last line without a newline. The source is plain text named train.de.gz; the target is real
 * gzip. A run of 2 steps must exit 0 and print exactly
 *   "train: 2011 pairs read, 2006 kept, skipped: 2 empty, 1 too long (>5000 bytes), 2 invalid
 *    UTF-8; 2 CRLF, 1 BOM, 1 lone CR (kept); 1 .gz file not gzip (read as plain text)"
 * and "train: 2003 pairs within 200 subword tokens a side (3 longer ones skipped)".
 * Then runs that must stop at once with status 1 and a message naming the file: validation files
 * whose line counts differ (100 vs 99), a truncated gzip validation file, empty validation files,
 * a missing file.
 */
#include "trainer_run.h"

#define TIMEOUT 120.0

static const char *g_work;
static int g_run_no = 0;

/* Appends n bytes to path. */
static void append(const char *path, const char *data, size_t n) {
    FILE *f = fopen(path, "ab");
    EXPECT(f && fwrite(data, 1, n, f) == n && fclose(f) == 0, "cannot append to %s", path);
}

/* Gzips src into dst (whole file). */
static void gzip_file(const char *src, const char *dst) {
    size_t n = 0;
    char *t = test_read_file(src, &n);
    gzFile g = gzopen(dst, "wb");
    EXPECT(t && g && gzwrite(g, t, (unsigned)n) == (int)n && gzclose(g) == Z_OK,
           "cannot gzip %s", src);
    free(t);
}

/* Runs `trainer train` on the given four files with max_steps = 2; returns the exit code. */
static int train_on(const char *tsrc, const char *ttgt, const char *vsrc, const char *vtgt,
                    const char **log_out) {
    TrArgv a;
    const char *dir = tr_fmt("%s/run%02d", g_work, ++g_run_no);
    tr_train_argv(&a, g_work, dir);
    static const char *const keys[] = {"data.train_src", "data.train_tgt", "data.val_src",
                                       "data.val_tgt"};
    const char *vals[] = {tsrc, ttgt, vsrc, vtgt};
    for (int i = 0; i < 4; i++) {
        tr_set(&a, "%s=%s", keys[i], vals[i]);
    }
    tr_set(&a, "train.max_steps=2");
    tr_set(&a, "data.max_len=200");
    tr_set(&a, "data.max_line_bytes=5000");
    const char *log = test_strdup(tr_fmt("%s/run%02d.log", g_work, g_run_no));
    int rc = tr_run(a.v, log, NULL, TIMEOUT);
    tr_argv_free(&a);
    printf("run %d: exit %d: %s\n", g_run_no, rc, tr_last_line(log));
    *log_out = log;
    return rc;
}

int main(void) {
    double t_start;
    char *work = tr_begin("test_bad_corpus", &t_start);
    g_work = work;

    /* the damaged training corpus */
    const char *de = test_strdup(tr_fmt("%s/bad.de.gz", g_work)); /* plain text, named .gz */
    const char *en_txt = test_strdup(tr_fmt("%s/bad.en.txt", g_work));
    const char *en = test_strdup(tr_fmt("%s/bad.en.gz", g_work));
    {
        size_t n = 0;
        char *t = test_read_file(tr_fmt("%s/train.de", g_work), &n);
        EXPECT(t && test_write_file(de, "\xEF\xBB\xBF", 3) == 0, "cannot write %s", de);
        append(de, t, n);
        free(t);
        t = test_read_file(tr_fmt("%s/train.en", g_work), &n);
        EXPECT(t && test_write_file(en_txt, t, n) == 0, "cannot write %s", en_txt);
        free(t);
    }
    static const char nul_de[] = "Ein NUL\0Byte.\n";
    append(de, "Ein Hund l\xC3\xA4uft.\r\n", 18);
    append(en_txt, "A dog runs.\r\n", 13);
    append(de, "Ein\rHund.\n", 10);
    append(en_txt, "A dog.\n", 7);
    append(de, "\n", 1);
    append(en_txt, "An empty source.\n", 17);
    append(de, "   \t\n", 5);
    append(en_txt, "A blank source.\n", 16);
    append(de, nul_de, sizeof nul_de - 1);
    append(en_txt, "A NUL byte.\n", 12);
    append(de, "Kaputt \xC0\xAF.\n", 11);
    append(en_txt, "Broken.\n", 8);
    {
        char *longline = malloc(6002);
        memset(longline, 'a', 6000);
        longline[6000] = '\n';
        append(de, longline, 6001);
        append(en_txt, "A long line.\n", 13);
        free(longline);
    }
    for (int k = 0; k < 3; k++) {
        char *words = malloc(600 * 6 + 2);
        size_t n = 0;
        for (int i = 0; i < 600; i++)
            n += (size_t)snprintf(words + n, 600 * 6 + 2 - n, "%s", i % 2 ? "wort " : "word ");
        words[n - 1] = '\n';
        append(de, words, n);
        append(en_txt, words, n);
        free(words);
    }
    append(de, "Das Ende.", 9);
    append(en_txt, "The end.", 8);
    gzip_file(en_txt, en);

    const char *vde = test_strdup(tr_fmt("%s/val.de", g_work)), *ven = test_strdup(tr_fmt("%s/val.en", g_work));
    const char *log = NULL;
    int rc = train_on(de, en, vde, ven, &log);
    EXPECT(rc == 0, "the damaged corpus should train (exit %d)", rc);
    if (rc != 0) tr_print_tail(log, 10);
    const char *summary = "train: 2011 pairs read, 2006 kept, skipped: 2 empty, 1 too long "
                          "(>5000 bytes), 2 invalid UTF-8; 2 CRLF, 1 BOM, 1 lone CR (kept); 1 .gz "
                          "file not gzip (read as plain text)\n";
    EXPECT(tr_file_contains(log, summary), "the log should hold the summary\n  %s", summary);
    const char *filt = "train: 2003 pairs within 200 subword tokens a side (3 longer ones "
                       "skipped)";
    EXPECT(tr_file_contains(log, filt), "the log should say '%s'", filt);
    if (!tr_file_contains(log, summary) || !tr_file_contains(log, filt)) tr_print_tail(log, 12);

    /* refusals */
    const char *short_en = test_strdup(tr_fmt("%s/val99.en", g_work));
    EXPECT(tr_gz_head(TR_DATA "/val.en.gz", short_en, 99) == 99, "write %s", short_en);
    rc = train_on(de, en, vde, short_en, &log);
    EXPECT(rc == 1 && strstr(tr_last_line(log), tr_fmt("line count mismatch: %s has 100 lines "
                                                       "but %s has 99 lines", vde, short_en)),
           "line-count mismatch: exit %d", rc);

    const char *vgz = test_strdup(tr_fmt("%s/val.de.gz", g_work)), *vcut = test_strdup(tr_fmt("%s/cut.de.gz", g_work));
    gzip_file(vde, vgz);
    {
        size_t n = 0;
        char *g = test_read_file(vgz, &n);
        EXPECT(g && n > 100 && test_write_file(vcut, g, n / 2) == 0, "write %s", vcut);
        free(g);
    }
    rc = train_on(de, en, vcut, ven, &log);
    EXPECT(rc == 1 && strstr(tr_last_line(log), tr_fmt("%s: truncated gzip file", vcut)),
           "truncated gzip: exit %d", rc);

    const char *e1 = test_strdup(tr_fmt("%s/empty.de", g_work)), *e2 = test_strdup(tr_fmt("%s/empty.en", g_work));
    test_write_file(e1, "", 0);
    test_write_file(e2, "", 0);
    rc = train_on(de, en, e1, e2, &log);
    EXPECT(rc == 1 && strstr(tr_last_line(log), "both files are empty") &&
               strstr(tr_last_line(log), e1), "empty files: exit %d", rc);

    const char *missing = tr_fmt("%s/missing.de", g_work);
    rc = train_on(de, en, missing, ven, &log);
    EXPECT(rc == 1 && strstr(tr_last_line(log), missing) &&
               strstr(tr_last_line(log), "No such file"), "missing file: exit %d", rc);

    return tr_finish("test_bad_corpus", t_start);
}
