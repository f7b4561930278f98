/* test_significance.c — the paired bootstrap (src/eval/significance.c) against sacreBLEU's
 * `--paired-bs` on tests/fixtures/bootstrap/ (written by tests/reference/make_bootstrap_fixture.py;
 * expected.txt names the sacrebleu and numpy versions):
 *  1. exact: given the resample indices of idx.txt (numpy's), every statistic — BLEU of both
 *     systems, bootstrap mean and 95% half-width of each, the p-value — must equal what
 *     sacreBLEU's own functions compute from those indices, to 1e-5 BLEU (sacreBLEU's paired
 *     bootstrap scores from float32 statistics, so its figures carry float32 rounding, measured
 *     up to 1e-6; ours are double), and the p-value, a count, equal to 1e-12;
 *  2. seeded: with our own sampler (1000 resamples, seed 12345) against sacreBLEU's paired-bs
 *     run (1000 of numpy's resamples): sampling differs, so the system's bootstrap mean must agree
 *     within 0.3 BLEU, its half-width within 20% and p within 0.06 (about 3 standard errors of
 *     the difference of two p estimates near 0.2 from 1000 resamples each);
 *  3. properties: the difference's interval contains the difference; swapping the systems
 *     negates the difference and its interval and keeps p; one seed gives one answer;
 * The test of configs over seeds is test_seed_test.c.
 * Run from the repository root (CTest does). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval/significance.h"
#include "testutil.h"

#define FIXDIR "tests/fixtures/bootstrap/"

/* The lines of a file (terminators removed), pointing into *text; *n their count. The caller
 * frees the array and *text. */
static char **read_lines(const char *path, long *n, char **text_out) {
    size_t len = 0;
    char *text = *text_out = test_read_file(path, &len);
    *n = 0;
    if (!text) return NULL;
    long cap = 1;
    for (size_t i = 0; i < len; i++) cap += text[i] == '\n';
    char **lines = calloc((size_t)cap, sizeof *lines);
    char *p = text;
    while (*p) {
        char *e = strchr(p, '\n');
        if (e) *e = 0;
        lines[(*n)++] = p;
        if (!e) break;
        p = e + 1;
    }
    return lines;
}

static double expected(const char *key) {
    static char *text;
    if (!text) text = test_read_file(FIXDIR "expected.txt", NULL);
    EXPECT(text != NULL, "cannot read " FIXDIR "expected.txt");
    if (!text) exit(test_report("test_significance"));
    size_t kl = strlen(key);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (!strncmp(p, key, kl) && p[kl] == ' ') return strtod(p + kl + 1, NULL);
    EXPECT(0, "expected.txt has no key %s", key);
    return NAN;
}

static void close_to(double ours, double ref, double tol, const char *what) {
    EXPECT(fabs(ours - ref) <= tol, "%s: ours %.17g, sacreBLEU %.17g (tolerance %g)", what, ours,
           ref, tol);
    printf("  %-28s ours %10.6f  sacreBLEU %10.6f\n", what, ours, ref);
}

int main(void) {
    long nr = 0, nb = 0, ns = 0, nidx = 0;
    char *texts[4] = {NULL, NULL, NULL, NULL};
    char **refs = read_lines(FIXDIR "refs.txt", &nr, &texts[0]);
    char **hb = read_lines(FIXDIR "hyps_base.txt", &nb, &texts[1]);
    char **hs = read_lines(FIXDIR "hyps_sys.txt", &ns, &texts[2]);
    char **rows = read_lines(FIXDIR "idx.txt", &nidx, &texts[3]);
    long n = (long)expected("n");
    int R = (int)expected("resamples");
    EXPECT(refs && hb && hs && rows && nr == n && nb == n && ns == n && nidx == R,
           "fixture sizes: refs %ld, base %ld, sys %ld, idx rows %ld; want n %ld, R %d", nr, nb,
           ns, nidx, n, R);
    if (test_failures) return test_report("test_significance");

    BleuStats *sb = malloc(sizeof *sb * (size_t)n), *ss = malloc(sizeof *ss * (size_t)n);
    bleu_segment_stats(sb, (const char *const *)hb, (const char *const *)refs, n);
    bleu_segment_stats(ss, (const char *const *)hs, (const char *const *)refs, n);
    long *idx = malloc(sizeof *idx * (size_t)R * (size_t)n);
    int bad_idx = 0;
    for (int r = 0; r < R; r++) {
        char *p = rows[r];
        for (long i = 0; i < n; i++) {
            char *e;
            idx[(size_t)r * n + i] = strtol(p, &e, 10);
            bad_idx |= e == p;
            p = e;
        }
    }
    EXPECT(!bad_idx, "idx.txt: a row with fewer than n indices");

    printf("exact (sacreBLEU's %d resamples of %ld segments):\n", R, n);
    PairedBootstrap x = paired_bootstrap(sb, ss, n, R, idx, 0);
    close_to(x.base_bleu, expected("base_bleu"), 1e-5, "baseline BLEU");
    close_to(x.sys_bleu, expected("sys_bleu"), 1e-5, "system BLEU");
    close_to(x.base_mean, expected("base_mean"), 1e-5, "baseline bootstrap mean");
    close_to(x.base_ci, expected("base_ci"), 1e-5, "baseline 95% half-width");
    close_to(x.sys_mean, expected("sys_mean"), 1e-5, "system bootstrap mean");
    close_to(x.sys_ci, expected("sys_ci"), 1e-5, "system 95% half-width");
    close_to(x.p, expected("p"), 1e-12, "p-value");

    printf("seeded (ours: 1000 resamples, seed 12345; sacreBLEU: numpy's):\n");
    PairedBootstrap y = paired_bootstrap(sb, ss, n, 1000, NULL, 12345);
    close_to(y.sys_mean, expected("seeded_sys_mean"), 0.3, "system bootstrap mean");
    double ci_ref = expected("seeded_sys_ci");
    close_to(y.sys_ci, ci_ref, 0.2 * ci_ref, "system 95% half-width");
    close_to(y.p, expected("seeded_p"), 0.06, "p-value");
    printf("  difference %.3f BLEU, 95%% interval [%.3f, %.3f]\n", y.delta, y.delta_lo,
           y.delta_hi);
    EXPECT(y.delta_lo <= y.delta && y.delta <= y.delta_hi && y.delta_lo < y.delta_hi,
           "the difference %.4f lies outside its interval [%.4f, %.4f]", y.delta, y.delta_lo,
           y.delta_hi);

    PairedBootstrap z = paired_bootstrap(ss, sb, n, 1000, NULL, 12345);
    EXPECT(z.delta == -y.delta && z.delta_lo == -y.delta_hi && z.delta_hi == -y.delta_lo &&
               z.p == y.p,
           "swapping the systems: delta %.6f vs %.6f, interval [%.4f, %.4f] vs [%.4f, %.4f], "
           "p %.4f vs %.4f", z.delta, y.delta, z.delta_lo, z.delta_hi, y.delta_lo, y.delta_hi,
           z.p, y.p);
    PairedBootstrap w = paired_bootstrap(sb, ss, n, 1000, NULL, 12345);
    EXPECT(!memcmp(&w, &y, sizeof w), "the same seed gave another answer");
    PairedBootstrap v = paired_bootstrap(sb, ss, n, 1000, NULL, 12346);
    EXPECT(v.sys_mean != y.sys_mean, "another seed drew the same resamples");

    free(sb), free(ss), free(idx);
    free(refs), free(hb), free(hs), free(rows);
    for (int i = 0; i < 4; i++) free(texts[i]);
    return test_report("test_significance");
}
