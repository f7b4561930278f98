/* eval/metrics.h — corpus BLEU and chrF on detokenised text, as sacreBLEU computes them by default.
 *
 * Sources:
 *  - BLEU: Papineni, Roukos, Ward, Zhu 2002, "BLEU: a Method for Automatic Evaluation of Machine
 *    Translation" (modified n-gram precision, geometric mean over orders 1..4, brevity penalty).
 *  - chrF: Popović 2015, "chrF: character n-gram F-score for automatic MT evaluation".
 *  - Exact conventions: Post 2018, "A Call for Clarity in Reporting BLEU Scores" (sacreBLEU), as
 *    implemented by sacrebleu 2.x `BLEU()` and `CHRF()` with their default arguments:
 *      BLEU signature  nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp
 *      chrF signature  nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no
 *    The fixtures in tests/fixtures/metrics/ (written by tests/reference/make_metric_fixtures.py
 *    with sacrebleu) are matched to within 1e-9 by tests/unit/test_metrics.c.
 *
 * Input: n hypothesis and n reference segments, one reference per segment (or, in the *_refs
 * functions, nrefs references per segment: refs[r][s], 1 <= nrefs <= METRICS_MAX_REFS), each a
 * NUL-terminated UTF-8 string (neither array nor any string may be NULL when n > 0: programmer
 * error, CHECK).
 * Characters are Unicode code points; an invalid UTF-8 byte is read as U+FFFD (sacreBLEU itself
 * would have refused to decode such text). "Whitespace" means Python's str.isspace() set (ASCII
 * whitespace, U+001C..U+001F, U+0085, U+00A0, U+1680, U+2000..U+200A, U+2028, U+2029, U+202F,
 * U+205F, U+3000), because sacreBLEU splits with str.split().
 *
 * BLEU (units: percent, 0..100):
 *  - each segment: rstrip whitespace, then tokenizer 13a (mteval-v13a: drop "<skipped>", join
 *    "-\n", newline -> space, unescape &quot; &amp; &lt; &gt;, split off ASCII punctuation
 *    {|}~[\]^_`space!"#$%&()*+:;<=>?@/, split '.'/',' unless between ASCII digits, split '-' after
 *    an ASCII digit); case-sensitive;
 *  - clipped n-gram matches and totals for n = 1..4 and token lengths are summed over the corpus;
 *  - precision p_n = 100 * correct_n / total_n; if correct_n == 0 ('exp' smoothing, mteval's NIST
 *    rule) p_n = 100 / (2^k * total_n) where k counts the zero-match orders so far;
 *  - no effective order: if total_n == 0 for some n, p_n and all higher orders are 0 and the score is
 *    0; if no n-gram of any order matches, score and all precisions are 0;
 *  - bp = 1 if hyp_len >= ref_len, exp(1 - ref_len / hyp_len) if 0 < hyp_len < ref_len, 0 if
 *    hyp_len == 0 < ref_len; score = bp * exp(mean_n log p_n); ratio = hyp_len / ref_len (0 when
 *    ref_len == 0).
 *
 * chrF (units: percent, 0..100): whitespace removed, character n-grams for n = 1..6 over code
 * points, beta = 2, case-sensitive. Per order, corpus sums of hypothesis n-grams (counted only for
 * segments whose reference has n-grams of that order), reference n-grams and clipped matches.
 * sacreBLEU's default (eps_smoothing = False) then averages precision and recall over the orders
 * where both sums are > 0 ("effective order") and returns the F_beta of those two averages; 0 when no
 * order qualifies or nothing matches.
 *
 * Several references (sacreBLEU 2.x with several reference streams, none None): BLEU clips each
 * n-gram's hypothesis count at its largest count in any one reference and takes as the segment's
 * reference length the reference length closest to the hypothesis length (the shorter of two as
 * close); chrF takes, per segment, the statistics of the reference whose sentence chrF is highest
 * (the first of equals). The signatures then say nrefs:N.
 *
 * Empty input: n == 0 gives a BleuScore of all zeros and a chrF of 0 (sacreBLEU raises an error).
 * Empty segments are ordinary segments with zero tokens / characters.
 * Errors: none but the CHECKs above (negative n, NULL arrays or strings); host memory only.
 */
#ifndef TRAINER_EVAL_METRICS_H
#define TRAINER_EVAL_METRICS_H

#include <stddef.h>

/* The sacreBLEU release whose numbers these functions reproduce (the fixtures' version), as
 * the signatures name it, and the most references a segment may have. */
#define METRICS_SACREBLEU_VERSION "2.6.0"
#define METRICS_MAX_REFS 16

typedef struct {
    double score;         /* BLEU in percent, 0..100 */
    double precisions[4]; /* n-gram precisions n = 1..4 in percent (after 'exp' smoothing) */
    double bp;            /* brevity penalty, 0..1 */
    double ratio;         /* hyp_len / ref_len (0 when ref_len == 0) */
    long hyp_len;         /* 13a tokens in all hypotheses (sacreBLEU's sys_len) */
    long ref_len;         /* 13a tokens in all references */
} BleuScore;

/* Corpus BLEU of hyps[0..n) against refs[0..n) (see above; Papineni et al. 2002, sacreBLEU's
 * defaults). CHECKs n >= 0 and non-NULL arrays and strings. */
BleuScore bleu_corpus(const char *const *hyps, const char *const *refs, long n);

/* bleu_corpus against nrefs references per segment, refs[r][0..n) (see above). */
BleuScore bleu_corpus_refs(const char *const *hyps, const char *const *const *refs, int nrefs,
                           long n);

/* BLEU's sufficient statistics (sacreBLEU's per-segment "stats"): clipped n-gram matches and
 * n-gram counts of the hypothesis for n = 1..4, and the 13a token counts of hypothesis and
 * reference. Corpus BLEU is a function of their sum over segments, which is what lets a
 * bootstrap resample be scored without re-tokenising (eval/significance.h). */
typedef struct {
    long long correct[4], total[4];
    long long hyp_len, ref_len;
} BleuStats;

/* stats[s] = the statistics of segment s, s < n (CHECKs as bleu_corpus). */
void bleu_segment_stats(BleuStats *stats, const char *const *hyps, const char *const *refs,
                        long n);
/* bleu_segment_stats against nrefs references per segment (ref_len: the closest one's). */
void bleu_segment_stats_refs(BleuStats *stats, const char *const *hyps,
                             const char *const *const *refs, int nrefs, long n);
/* BLEU (sacreBLEU's exp smoothing, as bleu_corpus) of summed statistics. No errors. */
BleuScore bleu_from_sum(const BleuStats *sum);

/* The scores of examples of k lines joined by CORPUS_SEP (data.concat = k > 1; data/corpus.h):
 * each hypothesis and reference as a document (the separators left out: corpus_split_joined),
 * and sentence BLEU over the sentences of the examples whose hypothesis splits into as many
 * parts as the example joins lines. */
typedef struct {
    char **doc_hyp, **doc_ref[METRICS_MAX_REFS]; /* [n] documents, the separators left out */
    BleuScore split; /* sentence BLEU of the examples that split right (when nsplit > 0) */
    long nsplit;     /* their sentences; 0: no example split right */
    long mismatches; /* examples whose hypothesis has another number of separators */
} JoinedScore;

/* Fills *j (zeroed by the caller) for n joined hypotheses hyp[0..n) and references
 * ref[r][0..n), r < nrefs, of nsent lines joined k at a time (corpus_join_lines: the last
 * example holds the rest). Free with metrics_joined_free. No errors. Source: document-level
 * BLEU on concatenated sentences (Junczys-Dowmunt 2019 §2); sacreBLEU for both scores. */
void metrics_joined_score(JoinedScore *j, char *const *hyp, char **const ref[], int nrefs,
                          long n, int k, long nsent);
/* Frees what metrics_joined_score allocated; a zeroed *j is fine. No errors. */
void metrics_joined_free(JoinedScore *j, int nrefs, long n);

/* Corpus chrF (chrF2, character order 6, no word n-grams) in percent, 0..100 (Popović 2015,
 * sacreBLEU's defaults). CHECKs as bleu_corpus. */
double chrf_corpus(const char *const *hyps, const char *const *refs, long n);
/* chrf_corpus against nrefs references per segment, refs[r][0..n) (see above). */
double chrf_corpus_refs(const char *const *hyps, const char *const *const *refs, int nrefs,
                        long n);

/* sacreBLEU's signatures of these scores with nrefs references into buf (n bytes):
 * "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0" (BLEU) and
 * "nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:2.6.0" (chrF). No errors. */
void bleu_signature(char *buf, size_t n, int nrefs);
void chrf_signature(char *buf, size_t n, int nrefs);

/* Perplexities above this are printed as "> 1e6" (metrics_ppl_text): beyond it the number tells
 * only that the model has not learnt the text, and an overflowed one is +inf. */
#define METRICS_PPL_PRINT_MAX 1e6

/* A perplexity for people into buf (n bytes): ppl with `decimals` decimals up to
 * METRICS_PPL_PRINT_MAX, "> 1e6" above it (+inf included), "nan" for NaN. Returns buf. No
 * errors. (metrics.jsonl and eval --json write null for a non-finite one instead.) */
const char *metrics_ppl_text(char *buf, size_t n, double ppl, int decimals);

#endif
