/* test_metrics_refs.c — BLEU and chrF against several references per segment
 * (bleu_corpus_refs, chrf_corpus_refs; eval/metrics.h) against sacreBLEU 2.6.0's numbers on the
 * committed fixture tests/fixtures/metrics/multiref.txt (tests/reference/make_multiref_fixture.py):
 * 2, 3 and 4 references (clipping at the largest count in one reference, the closest reference
 * length with ties to the shorter, chrF's best reference per segment with equal and empty ones)
 * and one. Every BLEU field and chrF within 1e-9; where the references differ, the scores of the
 * first reference alone differ (the others are read); one reference gives bleu_corpus's result;
 * the signatures name the references.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval/metrics.h"
#include "testutil.h"

#define FIXTURE "tests/fixtures/metrics/multiref.txt"

static int near(double a, double b) { return fabs(a - b) <= 1e-9 * (1 + fabs(b)); }

int main(void) {
    size_t len = 0;
    char *text = test_read_file(FIXTURE, &len);
    if (!text) {
        EXPECT(0, "cannot read %s (run the test from the repository root)", FIXTURE);
        return test_report("test_metrics_refs");
    }
    int sets = 0;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (line[0] == '#') continue;
        char name[128];
        int nrefs;
        long n;
        if (sscanf(line, "set %127s %d %ld", name, &nrefs, &n) != 3 || nrefs < 1 ||
            nrefs > METRICS_MAX_REFS || n < 1) {
            EXPECT(0, "%s: bad line '%.60s'", FIXTURE, line);
            break;
        }
        char **hyp = xcalloc((size_t)n, sizeof *hyp);
        char **ref[METRICS_MAX_REFS];
        for (int r = 0; r < nrefs; r++) ref[r] = xcalloc((size_t)n, sizeof(char *));
        for (long i = 0; i < n; i++) {
            char *seg = strtok_r(NULL, "\n", &save);
            CHECK(seg, "multiref fixture: set cut short");
            hyp[i] = seg;
            for (int r = 0; r < nrefs; r++) {
                char *tab = strchr(seg, '\t');
                CHECK(tab, "multiref fixture: a segment lacks a reference");
                *tab = 0;
                ref[r][i] = seg = tab + 1;
            }
        }
        char *exp_line = strtok_r(NULL, "\n", &save);
        double e[10]; /* score, p1..p4, bp, ratio, sys_len, ref_len, chrF */
        CHECK(exp_line && sscanf(exp_line, "expect %lf %lf %lf %lf %lf %lf %lf %lf %lf %lf",
                                 &e[0], &e[1], &e[2], &e[3], &e[4], &e[5], &e[6], &e[7], &e[8],
                                 &e[9]) == 10,
              "multiref fixture: no expect line");
        const char *const *const *refs = (const char *const *const *)ref;
        BleuScore b = bleu_corpus_refs((const char *const *)hyp, refs, nrefs, n);
        double c = chrf_corpus_refs((const char *const *)hyp, refs, nrefs, n);
        printf("%s (%d references, %ld segments): BLEU %.6f (sacreBLEU %.6f), chrF %.6f "
               "(%.6f), ref_len %ld (%.0f)\n", name, nrefs, n, b.score, e[0], c, e[9],
               b.ref_len, e[8]);
        EXPECT(near(b.score, e[0]) && near(b.precisions[0], e[1]) && near(b.precisions[1], e[2]) &&
                   near(b.precisions[2], e[3]) && near(b.precisions[3], e[4]) && near(b.bp, e[5]) &&
                   near(b.ratio, e[6]) && b.hyp_len == (long)e[7] && b.ref_len == (long)e[8],
               "%s: BLEU %.12g %.6g/%.6g/%.6g/%.6g bp %.6g lens %ld/%ld, sacreBLEU %.12g", name,
               b.score, b.precisions[0], b.precisions[1], b.precisions[2], b.precisions[3], b.bp,
               b.hyp_len, b.ref_len, e[0]);
        EXPECT(near(c, e[9]), "%s: chrF %.12g, sacreBLEU %.12g", name, c, e[9]);
        if (nrefs > 1 && strcmp(name, "equal_and_empty") != 0) {
            /* the first reference alone scores otherwise (in equal_and_empty it holds every
             * n-gram of the others) */
            BleuScore b1 = bleu_corpus((const char *const *)hyp, (const char *const *)ref[0], n);
            double c1 = chrf_corpus((const char *const *)hyp, (const char *const *)ref[0], n);
            EXPECT(!near(b1.score, e[0]) && !near(c1, e[9]),
                   "%s: the first reference alone gives the same scores", name);
        } else {
            BleuScore b1 = bleu_corpus((const char *const *)hyp, (const char *const *)ref[0], n);
            EXPECT(memcmp(&b1, &b, sizeof b) == 0, "%s: bleu_corpus and bleu_corpus_refs with "
                   "one reference differ", name);
        }
        for (int r = 0; r < nrefs; r++) free(ref[r]);
        free(hyp);
        sets++;
    }
    EXPECT(sets == 5, "%s: %d sets read, 5 expected", FIXTURE, sets);
    char sig[128];
    bleu_signature(sig, sizeof sig, 3);
    EXPECT(!strcmp(sig, "nrefs:3|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0"),
           "BLEU signature: %s", sig);
    chrf_signature(sig, sizeof sig, 1);
    EXPECT(!strcmp(sig, "nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:2.6.0"),
           "chrF signature: %s", sig);
    free(text);
    return test_report("test_metrics_refs");
}
