/* fuzz_corpus.c — fuzz target of the corpus reader (src/data/corpus.c): corpus_read_lines and
 * corpus_load on gzip or plain text, with and without a line-length limit.
 *
 * Input: the bytes of one text file (gzip data when it starts with 1f 8b, else plain text read
 * through zlib's transparent mode). It is read as a single file, as both sides of a parallel
 * corpus, and against a fixed 3-line file.
 * Invariants checked for plain text (input not starting with 0x1f), against an independent
 * splitting of the bytes by the rules of corpus.h (leading BOM stripped, lines end at '\n', a last
 * line without '\n' counts, one trailing '\r' stripped): corpus_read_lines returns exactly those
 * lines, and fails exactly when one holds a NUL byte or is over the limit; corpus_load keeps
 * exactly the non-blank, valid UTF-8 lines within the limit, counts every line once, fails when
 * none is usable and, against the 3-line file, when the line counts differ.
 * For every input: kept lines are NUL-terminated strings of valid UTF-8 within the limit. */
#include <string.h>

#include "data/corpus.h"
#include "fuzz_util.h"

typedef struct {
    const char *s; /* into the input */
    size_t len;
    int had_cr;
} Line;

/* Splits plain text by the rules of corpus.h; returns the line count (lines: malloc'd). */
static long split_lines(const uint8_t *p, size_t n, Line **out, int *bom) {
    size_t at = 0;
    *bom = n >= 3 && p[0] == 0xEF && p[1] == 0xBB && p[2] == 0xBF;
    if (*bom) at = 3;
    Line *lines = malloc(sizeof *lines * (n + 1));
    long count = 0;
    while (at < n) {
        const uint8_t *nl = memchr(p + at, '\n', n - at);
        size_t len = nl ? (size_t)(nl - (p + at)) : n - at;
        Line l = {(const char *)p + at, len, 0};
        if (len > 0 && l.s[len - 1] == '\r') l.len--, l.had_cr = 1;
        lines[count++] = l;
        at += len + (nl ? 1 : 0);
    }
    *out = lines;
    return count;
}

static int blank(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!strchr(" \t\r\v\f", s[i]) || s[i] == 0) return 0;
    return 1;
}

static int usable(const Line *l, long limit) {
    return !blank(l->s, l->len) && (limit <= 0 || l->len <= (size_t)limit) &&
           corpus_utf8_valid(l->s, l->len);
}

static void check_read_lines(const char *path, long limit, const Line *exp, long nexp, int plain) {
    char **lines = NULL;
    long n = -1;
    CorpusStats stats;
    Err err;
    Status st = corpus_read_lines(path, limit, &lines, &n, &stats, &err);
    if (!plain) {
        if (st == STATUS_OK)
            for (long i = 0; i < n; i++)
                FUZZ_ASSERT(lines[i] && (limit <= 0 || strlen(lines[i]) <= (size_t)limit),
                            "line %ld over the limit", i);
        corpus_free_lines(lines, n);
        return;
    }
    int expect_ok = 1;
    for (long i = 0; i < nexp; i++)
        if (memchr(exp[i].s, 0, exp[i].len) || (limit > 0 && exp[i].len > (size_t)limit))
            expect_ok = 0;
    FUZZ_ASSERT((st == STATUS_OK) == expect_ok, "corpus_read_lines(limit %ld): status %d, expected "
                "%s (%s)", limit, st, expect_ok ? "success" : "an error", err.msg);
    if (st != STATUS_OK) {
        FUZZ_ASSERT(lines == NULL && n == 0, "failed but returned lines");
        return;
    }
    FUZZ_ASSERT(n == nexp, "corpus_read_lines: %ld lines, expected %ld", n, nexp);
    long crlf = 0;
    for (long i = 0; i < n; i++) {
        FUZZ_ASSERT(strlen(lines[i]) == exp[i].len && memcmp(lines[i], exp[i].s, exp[i].len) == 0,
                    "corpus_read_lines: line %ld differs", i + 1);
        crlf += exp[i].had_cr;
    }
    FUZZ_ASSERT(stats.pairs_read == n && stats.kept == n && stats.crlf_stripped == crlf,
                "corpus_read_lines: wrong stats");
    corpus_free_lines(lines, n);
}

static void check_load(const char *src, const char *tgt, long limit, const Line *exp, long nexp,
                       int plain, int same_file) {
    Corpus c;
    Err err;
    Status st = corpus_load(&c, src, tgt, limit, &err);
    if (st != STATUS_OK) {
        FUZZ_ASSERT(c.n == 0 && !c.src && !c.tgt, "corpus_load failed but left pairs");
    } else {
        FUZZ_ASSERT(c.n > 0 && c.stats.kept == c.n, "corpus_load: kept %ld, n %ld", c.stats.kept,
                    c.n);
        FUZZ_ASSERT(c.stats.kept + c.stats.skipped_empty + c.stats.skipped_long +
                            c.stats.skipped_utf8 == c.stats.pairs_read,
                    "corpus_load: kept + skipped != read");
        for (long i = 0; i < c.n; i++) {
            size_t a = strlen(c.src[i]), b = strlen(c.tgt[i]);
            FUZZ_ASSERT(corpus_utf8_valid(c.src[i], a) && corpus_utf8_valid(c.tgt[i], b) &&
                            !blank(c.src[i], a) && !blank(c.tgt[i], b),
                        "corpus_load kept an invalid or blank pair %ld", i);
            FUZZ_ASSERT(limit <= 0 || (a <= (size_t)limit && b <= (size_t)limit),
                        "corpus_load kept a line over the limit");
        }
    }
    if (plain && same_file) {
        long keep = 0;
        for (long i = 0; i < nexp; i++) keep += usable(&exp[i], limit);
        FUZZ_ASSERT((st == STATUS_OK) == (keep > 0), "corpus_load(limit %ld): status %d with %ld "
                    "usable lines (%s)", limit, st, keep, err.msg);
        if (st == STATUS_OK) {
            FUZZ_ASSERT(c.stats.pairs_read == nexp && c.n == keep, "corpus_load: read %ld kept "
                        "%ld, expected %ld and %ld", c.stats.pairs_read, c.n, nexp, keep);
            long k = 0;
            for (long i = 0; i < nexp; i++) {
                if (!usable(&exp[i], limit)) continue;
                FUZZ_ASSERT(strlen(c.src[k]) == exp[i].len &&
                                memcmp(c.src[k], exp[i].s, exp[i].len) == 0 &&
                                strcmp(c.src[k], c.tgt[k]) == 0,
                            "corpus_load: kept pair %ld differs from line %ld", k, i + 1);
                k++;
            }
        }
    } else if (plain && nexp != 3) {
        FUZZ_ASSERT(st != STATUS_OK && strstr(err.msg, "line count mismatch"),
                    "corpus_load against a 3-line file: %ld lines accepted (%s)", nexp,
                    st == STATUS_OK ? "OK" : err.msg);
    }
    corpus_free(&c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_tmp_path("input.txt");
    const char *three = fuzz_tmp_path("three.txt");
    static int three_written;
    if (!three_written) {
        static const char t[] = "ein Hund .\nzwei Hunde\r\nHunde !\n";
        fuzz_write_file(three, t, sizeof t - 1);
        three_written = 1;
    }
    fuzz_write_file(path, data, size);
    int plain = size == 0 || data[0] != 0x1f;
    Line *exp = NULL;
    int bom = 0;
    long nexp = split_lines(data, size, &exp, &bom);

    check_read_lines(path, 0, exp, nexp, plain);
    check_read_lines(path, 64, exp, nexp, plain);
    check_load(path, path, 0, exp, nexp, plain, 1);
    check_load(path, path, 40, exp, nexp, plain, 1);
    check_load(path, three, 0, exp, nexp, plain, 0);
    free(exp);
    return 0;
}
