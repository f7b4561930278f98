/* test_corpus.c — corpus reader: gzip/plain, CRLF, BOM, lone CR, skipping rules, strict UTF-8,
 * binary junk, errors. (Bounded memory on huge inputs: test_corpus_memory.c.) */
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "data/corpus.h"
#include "testutil.h"

static char dir[4096];

static const char *tpath(const char *name) {
    static char bufs[8][4352];
    static int k = 0;
    char *b = bufs[k++ % 8];
    snprintf(b, sizeof bufs[0], "%s/%s", dir, name);
    return b;
}

static const char *write_plain(const char *name, const char *data, size_t n) {
    const char *p = tpath(name);
    if (test_write_file(p, data, n) != 0) {
        fprintf(stderr, "cannot write %s\n", p);
        exit(2);
    }
    return p;
}

static const char *write_gz(const char *name, const char *data, size_t n) {
    const char *p = tpath(name);
    gzFile g = gzopen(p, "wb");
    if (!g || (n && gzwrite(g, data, (unsigned)n) != (int)n) || gzclose(g) != Z_OK) {
        fprintf(stderr, "cannot write %s\n", p);
        exit(2);
    }
    return p;
}

#define S(lit) lit, sizeof(lit) - 1

static void test_utf8(void) {
    EXPECT(corpus_utf8_valid(S("")), "empty");
    EXPECT(corpus_utf8_valid(S("plain ascii")), "ascii");
    EXPECT(corpus_utf8_valid(S("M\xC3\xA4nner \xE2\x82\xAC \xF0\x9F\x98\x80")), "2/3/4-byte");
    EXPECT(corpus_utf8_valid(S("\xED\x9F\xBF")), "U+D7FF ok");
    EXPECT(corpus_utf8_valid(S("\xEE\x80\x80")), "U+E000 ok");
    EXPECT(corpus_utf8_valid(S("\xF4\x8F\xBF\xBF")), "U+10FFFF ok");
    EXPECT(corpus_utf8_valid(S("\xEF\xBB\xBF")), "U+FEFF ok");
    EXPECT(!corpus_utf8_valid(S("\xC0\xAF")), "overlong 2-byte");
    EXPECT(!corpus_utf8_valid(S("\xC1\xBF")), "overlong 2-byte C1");
    EXPECT(!corpus_utf8_valid(S("\xE0\x80\xAF")), "overlong 3-byte");
    EXPECT(!corpus_utf8_valid(S("\xF0\x80\x80\xAF")), "overlong 4-byte");
    EXPECT(!corpus_utf8_valid(S("\xED\xA0\x80")), "surrogate D800");
    EXPECT(!corpus_utf8_valid(S("\xED\xBF\xBF")), "surrogate DFFF");
    EXPECT(!corpus_utf8_valid(S("\xF4\x90\x80\x80")), "U+110000");
    EXPECT(!corpus_utf8_valid(S("\xF5\x80\x80\x80")), "F5 lead");
    EXPECT(!corpus_utf8_valid(S("\xFF")), "FF");
    EXPECT(!corpus_utf8_valid(S("\x80")), "lone continuation");
    EXPECT(!corpus_utf8_valid(S("ab\xC3")), "truncated 2-byte at end");
    EXPECT(!corpus_utf8_valid(S("\xE2\x82")), "truncated 3-byte");
    EXPECT(!corpus_utf8_valid(S("\xE2\x28\xA1")), "bad continuation");
    EXPECT(!corpus_utf8_valid(S("a\0b")), "NUL");
}

/* corpus_utf8_repair(in) equals want (and reports a change exactly when in != want). */
static void check_repair(const char *in, const char *want, const char *what) {
    char *line = strdup(in);
    int changed = corpus_utf8_repair(&line);
    EXPECT(!strcmp(line, want) && changed == (strcmp(in, want) != 0) &&
               corpus_utf8_valid(line, strlen(line)),
           "repair %s: got '%s' (changed %d)", what, line, changed);
    free(line);
}

/* Repair (each byte outside a valid sequence becomes U+FFFD) and crop (at a character
 * boundary). */
static void test_utf8_repair_crop(void) {
#define FFFD "\xEF\xBF\xBD"
    check_repair("M\xC3\xA4nner", "M\xC3\xA4nner", "valid text");
    check_repair("", "", "empty");
    check_repair("a\xFF" "b", "a" FFFD "b", "FF");
    check_repair("\x80\x80", FFFD FFFD, "two continuations");
    check_repair("ab\xC3", "ab" FFFD, "truncated at the end");
    check_repair("\xED\xA0\x80", FFFD FFFD FFFD, "a surrogate, byte by byte");
    check_repair("\xE2\x28\xA1", FFFD "(" FFFD, "bad continuation");
#undef FFFD
    char s[] = "ab\xC3\xA4\xC3\xA4";
    EXPECT(corpus_utf8_crop(s, 3) == 2 && !strcmp(s, "ab"), "crop inside a character: '%s'", s);
    char t[] = "ab\xC3\xA4";
    EXPECT(corpus_utf8_crop(t, 4) == 4 && !strcmp(t, "ab\xC3\xA4"), "crop at the length");
    char u[] = "abcd";
    EXPECT(corpus_utf8_crop(u, 2) == 2 && !strcmp(u, "ab"), "crop ASCII");
}

static void test_good_gz_and_plain(void) {
    const char de[] = "Ein Hund.\nZwei M\xC3\xA4nner.\nEine Frau.\n";
    const char en[] = "A dog.\nTwo men.\nA woman.\n";
    const char *paths[2][2] = {
        {write_gz("g.de.gz", S(de)), write_gz("g.en.gz", S(en))},
        {write_plain("p.de.txt", S(de)), write_plain("p.en.txt", S(en))},
    };
    for (int k = 0; k < 2; k++) {
        Corpus c;
        Err err = {{0}};
        Status st = corpus_load(&c, paths[k][0], paths[k][1], 1000, &err);
        EXPECT(st == STATUS_OK, "load %d: %s", k, err.msg);
        EXPECT(c.n == 3, "n=%ld", c.n);
        if (c.n == 3) {
            EXPECT(strcmp(c.src[1], "Zwei M\xC3\xA4nner.") == 0, "src[1]=%s", c.src[1]);
            EXPECT(strcmp(c.tgt[2], "A woman.") == 0, "tgt[2]=%s", c.tgt[2]);
        }
        EXPECT(c.stats.pairs_read == 3 && c.stats.kept == 3, "stats");
        EXPECT(c.stats.crlf_stripped == 0 && c.stats.bom_stripped == 0, "no crlf/bom");
        char buf[512] = {0};
        FILE *f = fmemopen(buf, sizeof buf - 1, "w");
        corpus_print_summary(&c, "tiny", f);
        fclose(f);
        EXPECT(strcmp(buf, "tiny: 3 pairs read, 3 kept, skipped: 0 empty, 0 too long (>1000 "
                           "bytes), 0 invalid UTF-8; 0 CRLF, 0 BOM\n") == 0,
               "summary: %s", buf);
        corpus_free(&c);
        EXPECT(c.n == 0 && c.src == NULL && c.tgt == NULL, "freed");
        corpus_free(&c); /* twice is fine */
    }
}

static void test_crlf_bom_lastline(void) {
    /* BOM + CRLF on the source, no trailing newline on the target, lone trailing CR at end. */
    const char de[] = "\xEF\xBB\xBF"
                      "eins\r\nzwei\r\ndrei\r";
    const char en[] = "\xEF\xBB\xBFone\ntwo\r\nthree";
    const char *a = write_gz("crlf.de.gz", S(de));
    const char *b = write_plain("crlf.en", S(en));
    Corpus c;
    Err err = {{0}};
    EXPECT(corpus_load(&c, a, b, 100, &err) == STATUS_OK, "%s", err.msg);
    EXPECT(c.n == 3, "n=%ld", c.n);
    if (c.n == 3) {
        EXPECT(strcmp(c.src[0], "eins") == 0, "src0 '%s'", c.src[0]);
        EXPECT(strcmp(c.src[2], "drei") == 0, "src2 '%s'", c.src[2]);
        EXPECT(strcmp(c.tgt[0], "one") == 0, "tgt0 '%s'", c.tgt[0]);
        EXPECT(strcmp(c.tgt[1], "two") == 0, "tgt1 '%s'", c.tgt[1]);
        EXPECT(strcmp(c.tgt[2], "three") == 0, "tgt2 '%s'", c.tgt[2]);
    }
    EXPECT(c.stats.crlf_stripped == 4, "crlf=%ld", c.stats.crlf_stripped);
    EXPECT(c.stats.bom_stripped == 2, "bom=%ld", c.stats.bom_stripped);
    corpus_free(&c);

    /* read_lines: line counting rules. */
    struct { const char *data; size_t n; long lines; } cases[] = {
        {S(""), 0}, {S("\n"), 1}, {S("a"), 1}, {S("a\n"), 1}, {S("a\nb"), 2},
        {S("a\n\n"), 2}, {S("\xEF\xBB\xBF"), 0}, {S("\xEF\xBB\xBF\n"), 1}, {S("\r\n"), 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *p = write_plain("count.txt", cases[i].data, cases[i].n);
        char **lines;
        long n;
        CorpusStats st;
        EXPECT(corpus_read_lines(p, 0, &lines, &n, &st, &err) == STATUS_OK, "%s", err.msg);
        EXPECT(n == cases[i].lines, "case %zu: %ld lines, expected %ld", i, n, cases[i].lines);
        EXPECT(st.pairs_read == n, "stats lines");
        corpus_free_lines(lines, n);
    }
}

static void test_skips(void) {
    /* pair 1 ok; 2 empty src; 3 whitespace tgt; 4 too long src; 5 invalid utf8 tgt; 6 NUL src;
     * 7 surrogate src; 8 ok exactly at the limit (10 bytes) with CRLF; 9 too long AND empty
     * (counted once, as empty). */
    const char de[] = "gut\n\nhallo\n0123456789X\nda\na\0b\n\xED\xA0\x80\n0123456789\r\n\n";
    const char en[] = "good\nx\n \t \ntoo long\n\xC0\xAF\nnul\nsurrogate\nlimit\n0123456789X\n";
    const char *a = write_plain("skip.de", S(de));
    const char *b = write_gz("skip.en.gz", S(en));
    Corpus c;
    Err err = {{0}};
    EXPECT(corpus_load(&c, a, b, 10, &err) == STATUS_OK, "%s", err.msg);
    EXPECT(c.stats.pairs_read == 9, "read %ld", c.stats.pairs_read);
    EXPECT(c.n == 2 && c.stats.kept == 2, "kept %ld", c.n);
    EXPECT(c.stats.skipped_empty == 3, "empty %ld", c.stats.skipped_empty);
    EXPECT(c.stats.skipped_long == 1, "long %ld", c.stats.skipped_long);
    EXPECT(c.stats.skipped_utf8 == 3, "utf8 %ld", c.stats.skipped_utf8);
    EXPECT(c.stats.crlf_stripped == 1, "crlf %ld", c.stats.crlf_stripped);
    if (c.n == 2) {
        EXPECT(strcmp(c.src[0], "gut") == 0 && strcmp(c.tgt[0], "good") == 0, "pair 0");
        EXPECT(strcmp(c.src[1], "0123456789") == 0 && strcmp(c.tgt[1], "limit") == 0, "pair 1");
    }
    char buf[512] = {0};
    FILE *f = fmemopen(buf, sizeof buf - 1, "w");
    corpus_print_summary(&c, "skip", f);
    fclose(f);
    EXPECT(strcmp(buf, "skip: 9 pairs read, 2 kept, skipped: 3 empty, 1 too long (>10 bytes), "
                       "3 invalid UTF-8; 1 CRLF, 0 BOM\n") == 0, "summary: %s", buf);
    corpus_free(&c);

    /* No limit: the long pair is kept. */
    EXPECT(corpus_load(&c, a, b, 0, &err) == STATUS_OK, "%s", err.msg);
    EXPECT(c.n == 3 && c.stats.skipped_long == 0, "no limit: n=%ld", c.n);
    corpus_free(&c);

    /* A very long line (1 MiB, beyond the 64 KiB read buffer) with a small limit is skipped;
     * with no limit it is kept intact, CR stripped across buffer boundaries. */
    size_t big = (1u << 20) + 7;
    char *data = malloc(big + 32);
    memset(data, 'x', big);
    memcpy(data + big, "\r\nshort\n", 8);
    const char *pb = write_gz("big.gz", data, big + 8);
    const char *pt = write_plain("big.en", S("big\nshort\n"));
    EXPECT(corpus_load(&c, pb, pt, 1000, &err) == STATUS_OK, "%s", err.msg);
    EXPECT(c.n == 1 && c.stats.skipped_long == 1, "big skipped: n=%ld", c.n);
    corpus_free(&c);
    EXPECT(corpus_load(&c, pb, pt, 0, &err) == STATUS_OK, "%s", err.msg);
    EXPECT(c.n == 2 && strlen(c.src[0]) == big && c.src[0][big - 1] == 'x', "big kept");
    corpus_free(&c);
    free(data);
}

static void test_read_lines(void) {
    const char txt[] = "\xEF\xBB\xBFone\r\n\n\xC0\xAF bad\n0123456789\nlast";
    const char *p = write_gz("rl.gz", S(txt));
    char **lines;
    long n;
    CorpusStats st;
    Err err = {{0}};
    EXPECT(corpus_read_lines(p, 0, &lines, &n, &st, &err) == STATUS_OK, "%s", err.msg);
    EXPECT(n == 5, "n=%ld", n);
    if (n == 5) {
        EXPECT(strcmp(lines[0], "one") == 0, "l0 '%s'", lines[0]);
        EXPECT(strcmp(lines[1], "") == 0, "empty kept");
        EXPECT(strcmp(lines[2], "\xC0\xAF bad") == 0, "invalid kept");
        EXPECT(strcmp(lines[4], "last") == 0, "last line");
    }
    EXPECT(st.bom_stripped == 1 && st.crlf_stripped == 1 && st.kept == 5, "stats");
    EXPECT(st.skipped_empty == 0 && st.skipped_utf8 == 0, "nothing flagged");
    corpus_free_lines(lines, n);

    /* At the limit: fine. Over it: an error naming file and line. */
    EXPECT(corpus_read_lines(p, 10, &lines, &n, NULL, &err) == STATUS_OK, "%s", err.msg);
    corpus_free_lines(lines, n);
    EXPECT(corpus_read_lines(p, 9, &lines, &n, &st, &err) == STATUS_ERR, "over limit");
    EXPECT(lines == NULL && n == 0, "outputs cleared");
    EXPECT(strstr(err.msg, p) && strstr(err.msg, "line 4") && strstr(err.msg, "10 bytes"),
           "msg: %s", err.msg);

    const char *pn = write_plain("nul.txt", S("ok\na\0b\n"));
    EXPECT(corpus_read_lines(pn, 0, &lines, &n, NULL, &err) == STATUS_ERR, "NUL is an error");
    EXPECT(strstr(err.msg, "line 2") && strstr(err.msg, "NUL"), "msg: %s", err.msg);
}

static void test_errors(void) {
    Corpus c;
    Err err = {{0}};
    const char *a = write_gz("m.de.gz", S("a\nb\nc\n"));
    const char *b = write_gz("m.en.gz", S("a\nb\n"));
    /* mismatch, both directions */
    EXPECT(corpus_load(&c, a, b, 100, &err) == STATUS_ERR, "mismatch");
    EXPECT(strstr(err.msg, a) && strstr(err.msg, b) && strstr(err.msg, "3 lines") &&
               strstr(err.msg, "2 lines"), "msg: %s", err.msg);
    EXPECT(c.n == 0 && c.src == NULL, "left empty");
    EXPECT(corpus_load(&c, b, a, 100, &err) == STATUS_ERR, "mismatch reversed");
    EXPECT(strstr(err.msg, "2 lines but") && strstr(err.msg, "3 lines"), "msg: %s", err.msg);

    /* missing file */
    const char *missing = tpath("does-not-exist.gz");
    EXPECT(corpus_load(&c, a, missing, 100, &err) == STATUS_ERR, "missing");
    EXPECT(strstr(err.msg, missing) && strstr(err.msg, "No such file"), "msg: %s", err.msg);
    char **lines;
    long n;
    EXPECT(corpus_read_lines(missing, 0, &lines, &n, NULL, &err) == STATUS_ERR, "missing rl");

    /* a directory */
    EXPECT(corpus_read_lines(dir, 0, &lines, &n, NULL, &err) == STATUS_ERR, "directory");
    EXPECT(strstr(err.msg, dir) != NULL, "msg: %s", err.msg);

    /* unreadable file (skip when running as root, which ignores permissions) */
    if (geteuid() != 0) {
        const char *u = write_plain("unreadable.txt", S("a\n"));
        chmod(u, 0);
        EXPECT(corpus_read_lines(u, 0, &lines, &n, NULL, &err) == STATUS_ERR, "unreadable");
        EXPECT(strstr(err.msg, "Permission denied"), "msg: %s", err.msg);
    }

    /* truncated gzip: compress 200 KB of lines, cut the file at several points */
    size_t len = 0, cap = 300000;
    char *text = malloc(cap);
    for (int i = 0; len + 64 < cap; i++)
        len += (size_t)snprintf(text + len, cap - len, "line %d with some words %d\n", i, i * 7);
    write_gz("full.gz", text, len);
    size_t glen;
    char *gz = test_read_file(tpath("full.gz"), &glen);
    EXPECT(corpus_read_lines(tpath("full.gz"), 0, &lines, &n, NULL, &err) == STATUS_OK, "full");
    corpus_free_lines(lines, n);
    size_t cuts[] = {glen - 1, glen - 4, glen - 8, glen / 2, 20};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        const char *t = write_plain("trunc.gz", gz, cuts[i]);
        EXPECT(corpus_read_lines(t, 0, &lines, &n, NULL, &err) == STATUS_ERR,
               "truncated at %zu of %zu accepted", cuts[i], glen);
        EXPECT(strstr(err.msg, t) && strstr(err.msg, "truncated"), "cut %zu msg: %s", cuts[i],
               err.msg);
        const char *u = write_plain("trunc_pair.gz", text, len); /* plain, same line count */
        EXPECT(corpus_load(&c, u, t, 0, &err) == STATUS_ERR, "load truncated at %zu", cuts[i]);
        EXPECT(strstr(err.msg, "truncated") || strstr(err.msg, "mismatch"), "msg: %s", err.msg);
    }

    /* corrupt gzip: flip bytes in the CRC32 trailer, and in the middle of the deflate data */
    char *bad = malloc(glen);
    memcpy(bad, gz, glen);
    bad[glen - 6] ^= 0x5A;
    const char *pc = write_plain("crc.gz", bad, glen);
    EXPECT(corpus_read_lines(pc, 0, &lines, &n, NULL, &err) == STATUS_ERR, "bad crc");
    EXPECT(strstr(err.msg, pc) && strstr(err.msg, "corrupt"), "msg: %s", err.msg);
    memcpy(bad, gz, glen);
    for (size_t k = glen / 2; k < glen / 2 + 16; k++) bad[k] ^= 0xFF;
    pc = write_plain("mid.gz", bad, glen);
    EXPECT(corpus_read_lines(pc, 0, &lines, &n, NULL, &err) == STATUS_ERR, "corrupt middle");
    EXPECT(strstr(err.msg, "corrupt") || strstr(err.msg, "truncated"), "msg: %s", err.msg);
    free(bad);
    free(gz);
    free(text);
}

static void test_plain_named_gz_and_empty(void) {
    Corpus c;
    Err err = {{0}};
    /* A non-gzip file named .gz is read transparently as plain text (documented behaviour). */
    const char *a = write_plain("plain.de.gz", S("Hallo Welt\n"));
    const char *b = write_plain("plain.en.gz", S("Hello world\n"));
    EXPECT(corpus_load(&c, a, b, 100, &err) == STATUS_OK, "%s", err.msg);
    EXPECT(c.n == 1 && strcmp(c.src[0], "Hallo Welt") == 0, "plain .gz read");
    EXPECT(c.stats.plain_gz == 2, "plain .gz files counted: %ld", c.stats.plain_gz);
    {
        char buf[512] = {0};
        FILE *f = fmemopen(buf, sizeof buf - 1, "w");
        corpus_print_summary(&c, "pgz", f);
        fclose(f);
        EXPECT(strstr(buf, "0 CRLF, 0 BOM; 2 .gz files not gzip (read as plain text)\n"),
               "summary: %s", buf);
    }
    corpus_free(&c);
    /* a real gzip file is not counted; a plain file not named .gz is not either */
    EXPECT(corpus_load(&c, write_gz("real.de.gz", S("a\n")), write_plain("real.en", S("b\n")), 100,
                       &err) == STATUS_OK && c.stats.plain_gz == 0, "real gzip counted as plain");
    corpus_free(&c);

    /* Empty files: read_lines gives 0 lines; corpus_load refuses with a clear message. */
    const char *e1 = write_plain("empty.de", "", 0);
    const char *e2 = write_gz("empty.en.gz", "", 0);
    char **lines = (char **)1;
    long n = -1;
    EXPECT(corpus_read_lines(e1, 0, &lines, &n, NULL, &err) == STATUS_OK, "%s", err.msg);
    EXPECT(n == 0, "n=%ld", n);
    corpus_free_lines(lines, n);
    EXPECT(corpus_read_lines(e2, 0, &lines, &n, NULL, &err) == STATUS_OK, "%s", err.msg);
    EXPECT(n == 0, "n=%ld", n);
    corpus_free_lines(lines, n);
    EXPECT(corpus_load(&c, e1, e2, 100, &err) == STATUS_ERR, "empty pair refused");
    EXPECT(strstr(err.msg, "no usable sentence pairs") && strstr(err.msg, e1) &&
               strstr(err.msg, e2) && strstr(err.msg, "empty"), "msg: %s", err.msg);
    /* one empty, one not: a line count mismatch */
    EXPECT(corpus_load(&c, e1, b, 100, &err) == STATUS_ERR, "empty vs 1 line");
    EXPECT(strstr(err.msg, "0 lines") && strstr(err.msg, "1 lines"), "msg: %s", err.msg);
    /* every pair skipped */
    const char *x = write_plain("allbad.de", S("\n\n"));
    const char *y = write_plain("allbad.en", S("a\nb\n"));
    EXPECT(corpus_load(&c, x, y, 100, &err) == STATUS_ERR, "all skipped refused");
    EXPECT(strstr(err.msg, "all 2 pairs were skipped") && strstr(err.msg, "2 empty"), "msg: %s",
           err.msg);
}

/* Lone CRs, binary junk named .gz, and a file with old Mac (CR-only) line ends. */
static void test_odd_bytes(void) {
    Corpus c;
    Err err = {{0}};
    /* a CR inside a line is text: kept, and the line counted; one CR at the end is CRLF */
    const char *a = write_plain("cr.de", S("a\rb\nplain\n\r\n"));
    const char *b = write_gz("cr.en.gz", S("x\ny\rz\r\nlast\r"));
    EXPECT(corpus_load(&c, a, b, 100, &err) == STATUS_OK, "%s", err.msg);
    EXPECT(c.stats.pairs_read == 3 && c.n == 2 && c.stats.skipped_empty == 1,
           "lone CR: read %ld kept %ld", c.stats.pairs_read, c.n);
    if (c.n == 2) {
        EXPECT(strcmp(c.src[0], "a\rb") == 0 && strcmp(c.tgt[1], "y\rz") == 0, "CRs kept");
    }
    EXPECT(c.stats.lone_cr == 2 && c.stats.crlf_stripped == 3, "lone CR %ld, CRLF %ld",
           c.stats.lone_cr, c.stats.crlf_stripped);
    char buf[512] = {0};
    FILE *f = fmemopen(buf, sizeof buf - 1, "w");
    corpus_print_summary(&c, "cr", f);
    fclose(f);
    EXPECT(strcmp(buf, "cr: 3 pairs read, 2 kept, skipped: 1 empty, 0 too long (>100 bytes), 0 "
                       "invalid UTF-8; 3 CRLF, 0 BOM, 2 lone CR (kept)\n") == 0,
           "summary: %s", buf);
    corpus_free(&c);
    char **lines;
    long n;
    CorpusStats st;
    EXPECT(corpus_read_lines(a, 0, &lines, &n, &st, &err) == STATUS_OK && n == 3 &&
               st.lone_cr == 1 && st.crlf_stripped == 1, "read_lines lone CR: %ld", st.lone_cr);
    corpus_free_lines(lines, n);

    /* old Mac line ends (CR only): one line, so the line counts differ — refused */
    const char *mac = write_plain("mac.de", S("eins\rzwei\rdrei\r"));
    const char *unix3 = write_plain("unix.en", S("one\ntwo\nthree\n"));
    EXPECT(corpus_load(&c, mac, unix3, 100, &err) == STATUS_ERR &&
               strstr(err.msg, "line count mismatch") && strstr(err.msg, "has 1 lines") &&
               strstr(err.msg, "has 3 lines"), "CR-only file: %s", err.msg);

    /* binary junk named .gz (a download gone wrong): 64 "lines" of bytes that are never UTF-8 */
    unsigned char junk[64 * 33];
    uint32_t r = 99;
    for (size_t i = 0; i < sizeof junk; i++) {
        r = r * 1103515245u + 12345u;
        junk[i] = (i % 33 == 32) ? '\n' : (unsigned char)(0xF8 + (r >> 16) % 8);
    }
    const char *jk = write_plain("junk.de.gz", (const char *)junk, sizeof junk);
    char text[64 * 8];
    size_t tl = 0;
    for (int i = 0; i < 64; i++) tl += (size_t)snprintf(text + tl, sizeof text - tl, "w%d\n", i);
    const char *t64 = write_plain("t64.en", text, tl);
    EXPECT(corpus_load(&c, jk, t64, 100, &err) == STATUS_ERR &&
               strstr(err.msg, "all 64 pairs were skipped") && strstr(err.msg, "64 invalid UTF-8"),
           "junk .gz, same line count: %s", err.msg);
    EXPECT(corpus_load(&c, jk, unix3, 100, &err) == STATUS_ERR && strstr(err.msg, jk) &&
               strstr(err.msg, "has 64 lines") && strstr(err.msg, "line count mismatch"),
           "junk .gz, other line count: %s", err.msg);
    /* a gzip header followed by junk: corrupt gzip, an error naming the file */
    unsigned char hdr_junk[64] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3};
    memset(hdr_junk + 10, 0xFF, sizeof hdr_junk - 10);
    const char *hj = write_plain("hdrjunk.de.gz", (const char *)hdr_junk, sizeof hdr_junk);
    EXPECT(corpus_load(&c, hj, t64, 100, &err) == STATUS_ERR && strstr(err.msg, hj) &&
               (strstr(err.msg, "corrupt") || strstr(err.msg, "truncated")),
           "gzip header + junk: %s", err.msg);
}

static void test_real_val(void) {
    const char *de = "data/multi30k/val.de.gz";
    const char *en = "data/multi30k/val.en.gz";
    if (access(de, R_OK) != 0 || access(en, R_OK) != 0) {
        printf("skipping real Multi30k val test (%s not found)\n", de);
        return;
    }
    Corpus c;
    Err err = {{0}};
    EXPECT(corpus_load(&c, de, en, 1000, &err) == STATUS_OK, "%s", err.msg);
    EXPECT(c.stats.pairs_read == 1014, "read %ld", c.stats.pairs_read);
    EXPECT(c.n == 1014, "kept %ld", c.n);
    if (c.n > 0)
        EXPECT(strncmp(c.src[0], "Eine Gruppe von M\xC3\xA4nnern", 24) == 0, "first: %s",
               c.src[0]);
    corpus_print_summary(&c, "val", stdout);
    corpus_free(&c);
}

/* data.concat: corpus_concat and corpus_join_lines join k lines with " <sep> ", the last group
 * holding the rest; corpus_split_joined recovers the parts and the document text; a sentence
 * holding the separator is refused, naming it. */
static void test_concat(void) {
    char *a[] = {"a b", "c", "d e f", "g", "h"};
    char **j;
    long nj;
    Err err;
    EXPECT(corpus_join_lines(a, 5, 2, &j, &nj, &err) == STATUS_OK && nj == 3, "join 5 by 2");
    if (nj == 3) {
        EXPECT(!strcmp(j[0], "a b <sep> c") && !strcmp(j[1], "d e f <sep> g") &&
                   !strcmp(j[2], "h"),
               "joined: '%s' '%s' '%s'", j[0], j[1], j[2]);
        corpus_free_lines(j, nj);
    }
    EXPECT(corpus_join_lines(a, 5, 1, &j, &nj, &err) == STATUS_OK && nj == 5 &&
               !strcmp(j[2], "d e f"), "join by 1 keeps the lines");
    corpus_free_lines(j, nj);
    char *bad[] = {"x", "y <sep> z"};
    EXPECT(corpus_join_lines(bad, 2, 2, &j, &nj, &err) != STATUS_OK &&
               strstr(err.msg, "line 2") && strstr(err.msg, "<sep>"),
           "a line holding the separator should be refused naming it: %s", err.msg);

    char *parts[4];
    int np;
    char *doc = corpus_split_joined("a b  <sep> c<sep>d <sep>", &np, parts, 4);
    EXPECT(np == 4 && !strcmp(parts[0], "a b") && !strcmp(parts[1], "c") &&
               !strcmp(parts[2], "d") && !strcmp(parts[3], "") && !strcmp(doc, "a b c d"),
           "split: %d parts, doc '%s'", np, doc);
    for (int i = 0; i < np && i < 4; i++) free(parts[i]);
    free(doc);
    doc = corpus_split_joined("no separator", &np, NULL, 0);
    EXPECT(np == 1 && !strcmp(doc, "no separator"), "one part: %d '%s'", np, doc);
    free(doc);

    Corpus c = {0};
    c.n = 3;
    c.src = xmalloc(3 * sizeof(char *)), c.tgt = xmalloc(3 * sizeof(char *));
    for (int i = 0; i < 3; i++) c.src[i] = strdup(a[i]), c.tgt[i] = strdup(a[4 - i]);
    EXPECT(corpus_concat(&c, 3, &err) == STATUS_OK && c.n == 1 &&
               !strcmp(c.src[0], "a b <sep> c <sep> d e f") &&
               !strcmp(c.tgt[0], "h <sep> g <sep> d e f"),
           "corpus_concat by 3: %ld examples", c.n);
    corpus_free(&c);
}

int main(void) {
    snprintf(dir, sizeof dir, "%s", test_tmpdir());
    test_concat();
    test_utf8();
    test_utf8_repair_crop();
    test_good_gz_and_plain();
    test_crlf_bom_lastline();
    test_skips();
    test_read_lines();
    test_errors();
    test_plain_named_gz_and_empty();
    test_odd_bytes();
    test_real_val();
    return test_report("test_corpus");
}
