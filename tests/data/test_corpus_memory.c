/* test_corpus_memory.c — the corpus reader's memory is bounded by what it keeps, not by what it
 * reads (src/data/corpus.h: a fixed read buffer, at most max_line_bytes + 1 bytes of a line held).
 *
 * Peak resident memory (getrusage ru_maxrss) is measured before and after each case, in a fresh
 * process, the cases that keep nothing first:
 *   A. a ~200 MB gzip stream (a ~200 KB file) of 1500-byte lines, read as both sides with
 *      max_line_bytes = 1000: every pair skipped as too long; corpus_load refuses ("all N pairs
 *      were skipped"); peak growth must stay under 24 MiB.
 *   B. one 200 MB line without a newline (gzip), beside a one-line file: skipped as too long
 *      (corpus_load), and an error naming line 1 (corpus_read_lines with a limit); peak growth
 *      under 24 MiB.
 *   C. 200 000 kept pairs of 100-byte lines (20 MB a side): peak growth must stay under twice the
 *      kept bytes plus 24 MiB (each line is stored once, at its length + 1, plus two pointers;
 *      four times under AddressSanitizer, whose redzones cost more).
 */
#include <string.h>
#include <zlib.h>

#include "core/machine.h"
#include "core/sanitizers.h"
#include "data/corpus.h"
#include "testutil.h"

#define MiB (1024.0 * 1024.0)

/* A sanitizer's redzones and shadow memory make every allocation dearer: allow for it. */
#define ALLOC_FACTOR (TRAINER_ASAN || TRAINER_MSAN ? 4.0 : 2.0)

/* Writes `lines` lines of `len` bytes (repeated text, then '\n'; no '\n' at all when newline is
 * 0) to a gzip file at level 1, in pieces of at most 64 KiB (so that writing does not raise the
 * peak memory being measured). Returns 0 on success. */
static int write_repeated_gz(const char *path, long lines, size_t len, int newline) {
    gzFile g = gzopen(path, "wb1");
    if (!g) return -1;
    enum { PIECE = 1 << 16 };
    static char piece[PIECE];
    for (size_t i = 0; i < PIECE; i++) piece[i] = "abcdefghij klmnopqrstuvwxyz"[i % 27];
    int ok = 1;
    for (long i = 0; i < lines && ok; i++) {
        for (size_t left = len; left > 0 && ok;) {
            unsigned k = left < PIECE ? (unsigned)left : PIECE;
            ok = gzwrite(g, piece, k) == (int)k;
            left -= k;
        }
        if (newline && ok) ok = gzputc(g, '\n') == '\n';
    }
    return gzclose(g) == Z_OK && ok ? 0 : -1;
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *dir = test_tmpdir();
    char a_path[4200], b_path[4200], one_path[4200], c_path[4200];
    snprintf(a_path, sizeof a_path, "%s/long_lines.gz", dir);
    snprintf(b_path, sizeof b_path, "%s/one_line.gz", dir);
    snprintf(one_path, sizeof one_path, "%s/one.txt", dir);
    snprintf(c_path, sizeof c_path, "%s/kept.gz", dir);
    Corpus c;
    Err err = {{0}};

    /* A: 140 000 lines of 1500 bytes = 210 MB uncompressed, all too long */
    long na = 140000;
    EXPECT(write_repeated_gz(a_path, na, 1500, 1) == 0, "cannot write %s", a_path);
    double p0 = machine_peak_rss_mb();
    Status st = corpus_load(&c, a_path, a_path, 1000, &err);
    double pa = machine_peak_rss_mb();
    printf("A: %ld lines of 1500 bytes (%.0f MB) per side: %s; peak RSS %.1f -> %.1f MiB\n", na,
           na * 1501 / 1e6, st == STATUS_OK ? "loaded" : err.msg, p0, pa);
    char want[128];
    snprintf(want, sizeof want, "all %ld pairs were skipped", na);
    EXPECT(st == STATUS_ERR && strstr(err.msg, want) && strstr(err.msg, "longer than 1000"),
           "A: %s", err.msg);
    EXPECT(pa - p0 < 24, "A: reading 2 x 210 MB of skipped lines grew the peak by %.1f MiB",
           pa - p0);

    /* B: one 200 MB line */
    EXPECT(write_repeated_gz(b_path, 1, 200u << 20, 0) == 0, "cannot write %s", b_path);
    EXPECT(test_write_file(one_path, "one\n", 4) == 0, "cannot write %s", one_path);
    p0 = machine_peak_rss_mb();
    st = corpus_load(&c, b_path, one_path, 1000, &err);
    EXPECT(st == STATUS_ERR && strstr(err.msg, "all 1 pairs were skipped") &&
               strstr(err.msg, "1 longer than 1000"), "B: %s", err.msg);
    char **lines = NULL;
    long n = 0;
    st = corpus_read_lines(b_path, 1000, &lines, &n, NULL, &err);
    double pb = machine_peak_rss_mb();
    EXPECT(st == STATUS_ERR && strstr(err.msg, b_path) && strstr(err.msg, "line 1") &&
               strstr(err.msg, "209715200 bytes"), "B, read_lines: %s", err.msg);
    printf("B: one 200 MiB line: %s; peak RSS %.1f -> %.1f MiB\n", err.msg, p0, pb);
    EXPECT(pb - p0 < 24, "B: a 200 MiB line grew the peak by %.1f MiB", pb - p0);

    /* C: kept lines */
    long nc = 200000;
    EXPECT(write_repeated_gz(c_path, nc, 100, 1) == 0, "cannot write %s", c_path);
    p0 = machine_peak_rss_mb();
    st = corpus_load(&c, c_path, c_path, 1000, &err);
    double pc = machine_peak_rss_mb();
    double kept = 2.0 * nc * 101 / MiB;
    printf("C: %ld pairs of 100-byte lines kept (%.1f MiB of text): peak RSS %.1f -> %.1f MiB "
           "(%.2f x the kept bytes)\n", c.n, kept, p0, pc, (pc - p0) / kept);
    EXPECT(st == STATUS_OK && c.n == nc, "C: %s (kept %ld)", err.msg, c.n);
    EXPECT(pc - p0 < ALLOC_FACTOR * kept + 24, "C: keeping %.1f MiB grew the peak by %.1f MiB",
           kept, pc - p0);
    EXPECT(pc - p0 > kept / 2, "C: the peak grew by only %.1f MiB for %.1f MiB kept: is the "
           "measurement working?", pc - p0, kept);
    corpus_free(&c);

    remove(a_path);
    remove(b_path);
    remove(one_path);
    remove(c_path);
    remove(dir);
    return test_report("test_corpus_memory");
}
