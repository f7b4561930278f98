/* test_metrics.c — corpus BLEU and chrF (src/eval/metrics.c) against sacreBLEU.
 *
 * tests/fixtures/metrics/ holds hypothesis/reference sets and sacreBLEU's default BLEU and chrF for
 * each (written by tests/reference/make_metric_fixtures.py; the file header names the sacrebleu
 * version). Every field must agree to within TOL (absolute, in the metric's own units: percent for
 * scores and precisions); token lengths must agree exactly. The computation mirrors sacreBLEU's
 * operation order, so on glibc the results are normally bit-identical; TOL only allows for a libm
 * whose log/exp differ by an ulp. Run from the repository root (CTest does). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval/metrics.h"
#include "testutil.h"

#define FIXDIR "tests/fixtures/metrics/"
#define TOL 1e-9

static double max_diff = 0.0;

static void close_to(double ours, double ref, const char *set, const char *field) {
    double d = fabs(ours - ref);
    if (d > max_diff) max_diff = d;
    EXPECT(d <= TOL, "set %s, %s: ours %.17g, sacreBLEU %.17g (diff %.3g)", set, field, ours, ref, d);
}

static void put_utf8(char **w, unsigned long c) {
    unsigned char *o = (unsigned char *)*w;
    if (c < 0x80) {
        *o++ = (unsigned char)c;
    } else if (c < 0x800) {
        *o++ = (unsigned char)(0xC0 | (c >> 6));
        *o++ = (unsigned char)(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
        *o++ = (unsigned char)(0xE0 | (c >> 12));
        *o++ = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
        *o++ = (unsigned char)(0x80 | (c & 0x3F));
    } else {
        *o++ = (unsigned char)(0xF0 | (c >> 18));
        *o++ = (unsigned char)(0x80 | ((c >> 12) & 0x3F));
        *o++ = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
        *o++ = (unsigned char)(0x80 | (c & 0x3F));
    }
    *w = (char *)o;
}

/* Splits a fixture file into segments (one per '\n'-terminated line) and undoes the escapes
 * (\\ \n \r \u{HEX}) in place; every escape is no longer than what it stands for. */
static char **read_segments(const char *path, long *count, char **storage) {
    size_t n;
    char *text = test_read_file(path, &n);
    if (!text) {
        fprintf(stderr, "cannot read %s (run from the repository root)\n", path);
        exit(1);
    }
    long lines = 0;
    for (size_t i = 0; i < n; i++) lines += text[i] == '\n';
    char **seg = malloc((size_t)(lines ? lines : 1) * sizeof *seg);
    char *r = text;
    for (long l = 0; l < lines; l++) {
        seg[l] = r;
        char *w = r;
        while (*r != '\n') {
            if (*r != '\\') {
                *w++ = *r++;
                continue;
            }
            char e = r[1];
            if (e == '\\') *w++ = '\\', r += 2;
            else if (e == 'n') *w++ = '\n', r += 2;
            else if (e == 'r') *w++ = '\r', r += 2;
            else if (e == 'u' && r[2] == '{') {
                char *end;
                unsigned long c = strtoul(r + 3, &end, 16);
                if (*end != '}') {
                    fprintf(stderr, "%s: bad escape\n", path);
                    exit(1);
                }
                put_utf8(&w, c);
                r = end + 1;
            } else {
                fprintf(stderr, "%s: bad escape \\%c\n", path, e);
                exit(1);
            }
        }
        *w = '\0';
        r++;
    }
    *count = lines;
    *storage = text;
    return seg;
}

static void test_fixtures(void) {
    long nh, nr;
    char *hs, *rs;
    char **hyps = read_segments(FIXDIR "hyps.txt", &nh, &hs);
    char **refs = read_segments(FIXDIR "refs.txt", &nr, &rs);
    EXPECT(nh == nr, "hyps.txt has %ld segments, refs.txt %ld", nh, nr);
    size_t n;
    char *exp = test_read_file(FIXDIR "expected.txt", &n);
    EXPECT(exp != NULL, "cannot read " FIXDIR "expected.txt");
    if (!exp || nh != nr) return;

    long pos = 0, sets = 0;
    for (char *line = strtok(exp, "\n"); line; line = strtok(NULL, "\n")) {
        if (line[0] == '#') {
            if (strstr(line, "sacrebleu")) printf("%s\n", line);
            continue;
        }
        char name[128];
        long cnt, sys_len, ref_len;
        double v[8], chrf;
        int got = sscanf(line, "%127s %ld %lf %lf %lf %lf %lf %lf %lf %ld %ld %lf", name, &cnt, &v[0],
                         &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &sys_len, &ref_len, &chrf);
        EXPECT(got == 12, "malformed expected line: %s", line);
        if (got != 12) continue;
        EXPECT(pos + cnt <= nh, "set %s runs past the end of hyps.txt", name);
        if (pos + cnt > nh) break;
        const char *const *h = (const char *const *)hyps + pos;
        const char *const *r = (const char *const *)refs + pos;
        BleuScore b = bleu_corpus(h, r, cnt);
        double c = chrf_corpus(h, r, cnt);
        close_to(b.score, v[0], name, "BLEU");
        for (int k = 0; k < 4; k++) {
            char f[16];
            snprintf(f, sizeof f, "p%d", k + 1);
            close_to(b.precisions[k], v[1 + k], name, f);
        }
        close_to(b.bp, v[5], name, "bp");
        close_to(b.ratio, v[6], name, "ratio");
        EXPECT(b.hyp_len == sys_len, "set %s: hyp_len %ld, sacreBLEU %ld", name, b.hyp_len, sys_len);
        EXPECT(b.ref_len == ref_len, "set %s: ref_len %ld, sacreBLEU %ld", name, b.ref_len, ref_len);
        close_to(c, chrf, name, "chrF");
        pos += cnt;
        sets++;
    }
    EXPECT(pos == nh, "expected.txt covers %ld of %ld segments", pos, nh);
    EXPECT(sets >= 70, "only %ld fixture sets", sets);
    printf("%ld fixture sets, %ld segments, max |ours - sacreBLEU| = %.3g\n", sets, pos, max_diff);
    free(exp);
    free(hyps);
    free(refs);
    free(hs);
    free(rs);
}

/* Behaviour sacreBLEU does not define (it raises on an empty corpus) and invariants. */
static void test_edges(void) {
    BleuScore z = bleu_corpus(NULL, NULL, 0);
    EXPECT(z.score == 0.0 && z.bp == 0.0 && z.ratio == 0.0 && z.hyp_len == 0 && z.ref_len == 0,
           "empty corpus: score %g bp %g", z.score, z.bp);
    for (int k = 0; k < 4; k++) EXPECT(z.precisions[k] == 0.0, "empty corpus p%d", k + 1);
    EXPECT(chrf_corpus(NULL, NULL, 0) == 0.0, "empty corpus chrF");

    const char *s[] = {"Ein Mann mit einem orangefarbenen Hut, der etwas anstarrt.",
                       "Zwei junge Männer – „draußen“ – spielen Fußball."};
    BleuScore p = bleu_corpus(s, s, 2);
    EXPECT(fabs(p.score - 100.0) < 1e-9 && p.bp == 1.0, "identical corpus BLEU %.17g", p.score);
    EXPECT(fabs(chrf_corpus(s, s, 2) - 100.0) < 1e-12, "identical corpus chrF");

    /* invalid UTF-8 must not crash and must count each bad byte as one character */
    const char *bad_h[] = {"ab\xff\xfe cd \xe2\x82"}, *bad_r[] = {"ab\xff\xfe cd \xe2\x82"};
    BleuScore bb = bleu_corpus(bad_h, bad_r, 1);
    EXPECT(bb.hyp_len == 3 && fabs(chrf_corpus(bad_h, bad_r, 1) - 100.0) < 1e-12,
           "invalid UTF-8: hyp_len %ld", bb.hyp_len);

    /* a long segment (hash table growth) */
    size_t len = 200000;
    char *big = malloc(len + 1);
    for (size_t i = 0; i < len; i++) big[i] = (i % 7 == 6) ? ' ' : (char)('a' + (i * 31 % 26));
    big[len] = '\0';
    const char *bh[] = {big}, *br[] = {big};
    BleuScore bl = bleu_corpus(bh, br, 1);
    EXPECT(fabs(bl.score - 100.0) < 1e-9, "long segment BLEU %.17g", bl.score);
    EXPECT(fabs(chrf_corpus(bh, br, 1) - 100.0) < 1e-12, "long segment chrF");
    free(big);
}

/* metrics_joined_score: documents without the separators; sentence BLEU over the examples
 * that split into as many parts as they join lines, the others counted. */
static void test_joined(void) {
    char *hyp[] = {"the cat sat on the mat <sep> a dog ran in the park",
                   "one two three four five six", /* no separator: a mismatch */
                   "the last line alone here"};
    char *r0[] = {"the cat sat on the mat <sep> a dog ran in the park",
                  "one two three <sep> four five six", "the last line alone here"};
    char **ref[] = {r0};
    JoinedScore j = {0};
    metrics_joined_score(&j, hyp, ref, 1, 3, 2, 5);
    EXPECT(j.mismatches == 1 && j.nsplit == 3 && fabs(j.split.score - 100.0) < 1e-9,
           "joined: %ld mismatches, %ld sentences, split BLEU %g (want 1, 3, 100)",
           j.mismatches, j.nsplit, j.split.score);
    EXPECT(!strcmp(j.doc_hyp[0], "the cat sat on the mat a dog ran in the park") &&
               !strcmp(j.doc_ref[0][1], "one two three four five six"),
           "documents: '%s' / '%s'", j.doc_hyp[0], j.doc_ref[0][1]);
    BleuScore d = bleu_corpus_refs((const char *const *)j.doc_hyp,
                                   (const char *const *const *)j.doc_ref, 1, 3);
    EXPECT(fabs(d.score - 100.0) < 1e-9, "document BLEU %g, want 100", d.score);
    metrics_joined_free(&j, 1, 3);
}

int main(void) {
    test_joined();
    test_fixtures();
    test_edges();
    return test_report("test_metrics");
}
