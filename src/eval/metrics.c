/* metrics.c — corpus BLEU (tokenizer 13a, 'exp' smoothing) and chrF, as sacreBLEU 2.x computes them
 * by default. See metrics.h for the definitions and sources.
 *
 * Text is decoded from UTF-8 into arrays of code points (uint32_t) once; every step below works on
 * code points so that it agrees with sacreBLEU's Python str operations. An n-gram is a span of code
 * points: for BLEU a run of n tokens in the single-space-joined token string (tokens contain no
 * whitespace, so span equality is tuple equality), for chrF n consecutive non-space characters.
 * Clipped matches min(hyp_count, ref_count) are counted with one hash table per segment and order. */
#include "eval/metrics.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "data/corpus.h"

_Static_assert(METRICS_MAX_REFS == 16, "the CHECK messages below say 16 references");

/* ---------------------------------------------------------------- code point buffers */

typedef struct {
    uint32_t *v;
    size_t n, cap;
} CpBuf;

static void cp_reserve(CpBuf *b, size_t want) {
    if (want <= b->cap) return;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < want) cap *= 2;
    b->v = xrealloc(b->v, cap * sizeof *b->v);
    b->cap = cap;
}

static void cp_push(CpBuf *b, uint32_t c) {
    if (b->n == b->cap) cp_reserve(b, b->n + 1);
    b->v[b->n++] = c;
}

static void cp_free(CpBuf *b) {
    free(b->v);
    b->v = NULL;
    b->n = b->cap = 0;
}

static void cp_swap(CpBuf *a, CpBuf *b) {
    CpBuf t = *a;
    *a = *b;
    *b = t;
}

/* Decodes UTF-8 into out (replacing its contents). An invalid or truncated sequence, an overlong
 * form, a surrogate or a value above U+10FFFF yields U+FFFD for its first byte, and decoding
 * resumes at the next byte. */
static void utf8_decode(CpBuf *out, const char *s) {
    const unsigned char *p = (const unsigned char *)s;
    out->n = 0;
    while (*p) {
        uint32_t c = p[0];
        int len = 0;
        uint32_t min = 0;
        if (c < 0x80) {
            cp_push(out, c);
            p++;
            continue;
        } else if ((c & 0xE0) == 0xC0) {
            len = 2, c &= 0x1F, min = 0x80;
        } else if ((c & 0xF0) == 0xE0) {
            len = 3, c &= 0x0F, min = 0x800;
        } else if ((c & 0xF8) == 0xF0) {
            len = 4, c &= 0x07, min = 0x10000;
        }
        int ok = len > 0;
        for (int k = 1; ok && k < len; k++) {
            if ((p[k] & 0xC0) != 0x80) ok = 0; /* also stops at the terminating NUL */
            else c = (c << 6) | (p[k] & 0x3F);
        }
        if (ok && (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))) ok = 0;
        if (ok) {
            cp_push(out, c);
            p += len;
        } else {
            cp_push(out, 0xFFFD);
            p++;
        }
    }
}

/* Python's str.isspace(), which str.split() and str.rstrip() use. */
static int py_isspace(uint32_t c) {
    if (c <= 0x20) return c == 0x20 || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F);
    if (c < 0x85) return 0;
    return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
           c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

static int is_digit(uint32_t c) { return c >= '0' && c <= '9'; } /* regex [0-9]: ASCII only */

/* Python's in.replace(pat, rep) for a non-empty ASCII pattern: one left-to-right pass over
 * non-overlapping occurrences. */
static void replace_all(CpBuf *out, const CpBuf *in, const char *pat, const char *rep) {
    size_t m = strlen(pat);
    out->n = 0;
    size_t i = 0;
    while (i < in->n) {
        size_t k = 0;
        if (i + m <= in->n)
            while (k < m && in->v[i + k] == (unsigned char)pat[k]) k++;
        if (k == m) {
            for (const char *r = rep; *r; r++) cp_push(out, (unsigned char)*r);
            i += m;
        } else {
            cp_push(out, in->v[i++]);
        }
    }
}

static int contains_cp(const CpBuf *b, uint32_t c) {
    for (size_t i = 0; i < b->n; i++)
        if (b->v[i] == c) return 1;
    return 0;
}

/* ---------------------------------------------------------------- tokenizer 13a */

/* The first regex of sacreBLEU's TokenizerRegexp: ([\{-\~\[-\` -\&\(-\+\:-\@\/]) -> " \1 ". */
static int tok13a_punct(uint32_t c) {
    return (c >= 0x7B && c <= 0x7E) ||  /* { | } ~ */
           (c >= 0x5B && c <= 0x60) ||  /* [ \ ] ^ _ ` */
           (c >= 0x20 && c <= 0x26) ||  /* space ! " # $ % & */
           (c >= 0x28 && c <= 0x2B) ||  /* ( ) * + */
           (c >= 0x3A && c <= 0x40) ||  /* : ; < = > ? @ */
           c == 0x2F;                   /* / */
}

/* Regex 2: ([^0-9])([\.,]) -> "\1 \2 " (period and comma unless preceded by a digit). */
static int nondigit_then_period_comma(uint32_t a, uint32_t b) {
    return !is_digit(a) && (b == '.' || b == ',');
}
/* Regex 3: ([\.,])([^0-9]) -> " \1 \2" (period and comma unless followed by a digit). */
static int period_comma_then_nondigit(uint32_t a, uint32_t b) {
    return (a == '.' || a == ',') && !is_digit(b);
}
/* Regex 4: ([0-9])(-) -> "\1 \2 " (dash after a digit). */
static int digit_then_dash(uint32_t a, uint32_t b) { return is_digit(a) && b == '-'; }

/* One re.sub of a two-character pattern over x (the result is left in x; y is scratch): positions
 * are tried left to right, and a pair (a, b) with match(a, b) becomes "a b " (lead = 0) or " a b"
 * (lead = 1), the scan resuming after b. */
static void sub_pairs(CpBuf *x, CpBuf *y, int (*match)(uint32_t, uint32_t), int lead) {
    y->n = 0;
    for (size_t i = 0; i < x->n;) {
        if (i + 1 < x->n && match(x->v[i], x->v[i + 1])) {
            if (lead) cp_push(y, ' ');
            cp_push(y, x->v[i]);
            cp_push(y, ' ');
            cp_push(y, x->v[i + 1]);
            if (!lead) cp_push(y, ' ');
            i += 2;
        } else {
            cp_push(y, x->v[i++]);
        }
    }
    cp_swap(x, y);
}

typedef struct {
    CpBuf a, b;              /* scratch for the rewriting passes */
} Tok13a;

/* Tokenises the code points in `line` (destroyed) the way sacreBLEU's BLEU._preprocess_segment
 * does with its default Tokenizer13a: rstrip(), then the mteval-v13a rules. Writes the tokens joined
 * by single spaces to out, their start offsets in out to starts (if non-NULL) and returns the number
 * of tokens. */
static long tokenize_13a(Tok13a *t, CpBuf *line, CpBuf *out, CpBuf *starts) {
    CpBuf *x = &t->a, *y = &t->b;
    /* sent.rstrip() */
    while (line->n > 0 && py_isspace(line->v[line->n - 1])) line->n--;
    /* Tokenizer13a.__call__: the language-independent part. */
    replace_all(x, line, "<skipped>", "");
    replace_all(y, x, "-\n", "");
    replace_all(x, y, "\n", " ");
    if (contains_cp(x, '&')) {
        replace_all(y, x, "&quot;", "\"");
        replace_all(x, y, "&amp;", "&");
        replace_all(y, x, "&lt;", "<");
        replace_all(x, y, "&gt;", ">");
    }
    /* f' {line} ' and regex 1: punctuation gets a space on each side. */
    y->n = 0;
    cp_push(y, ' ');
    for (size_t i = 0; i < x->n; i++) {
        uint32_t c = x->v[i];
        if (tok13a_punct(c)) {
            cp_push(y, ' ');
            cp_push(y, c);
            cp_push(y, ' ');
        } else {
            cp_push(y, c);
        }
    }
    cp_push(y, ' ');
    cp_swap(x, y); /* current text in x */

    /* Regexes 2-4 of Tokenizer13a. */
    sub_pairs(x, y, nondigit_then_period_comma, 0);
    sub_pairs(x, y, period_comma_then_nondigit, 1);
    sub_pairs(x, y, digit_then_dash, 0);
    /* ' '.join(line.split()) */
    out->n = 0;
    if (starts) starts->n = 0;
    long ntok = 0;
    for (size_t i = 0; i < x->n;) {
        while (i < x->n && py_isspace(x->v[i])) i++;
        if (i == x->n) break;
        if (ntok > 0) cp_push(out, ' ');
        if (starts) cp_push(starts, (uint32_t)out->n);
        while (i < x->n && !py_isspace(x->v[i])) cp_push(out, x->v[i++]);
        ntok++;
    }
    return ntok;
}

/* ---------------------------------------------------------------- n-gram matching */

typedef struct {
    const uint32_t *key; /* NULL: empty slot */
    size_t len;
    uint64_t hash;
    long ref, hyp;       /* occurrences in the reference (the most in any one of several) and
                          * (so far) in the hypothesis */
    long cur;            /* occurrences in the reference being counted (several references) */
} Slot;

typedef struct {
    Slot *s;
    size_t alloc; /* slots allocated */
    size_t mask;  /* slots in use for the current segment and order, minus 1 */
} NgramTable;

static uint64_t span_hash(const uint32_t *p, size_t len) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a, one code point at a time */
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
    return h ^ (h >> 29);
}

/* Clears the table and sizes it for up to `entries` distinct keys. */
static void table_reset(NgramTable *t, size_t entries) {
    size_t cap = 16;
    while (cap < 2 * entries) cap *= 2;
    if (cap > t->alloc) {
        free(t->s);
        t->s = xmalloc(cap * sizeof *t->s);
        t->alloc = cap;
    }
    memset(t->s, 0, cap * sizeof *t->s);
    t->mask = cap - 1;
}

static Slot *table_get(NgramTable *t, const uint32_t *key, size_t len) {
    uint64_t h = span_hash(key, len);
    size_t i = (size_t)h & t->mask;
    for (;;) {
        Slot *s = &t->s[i];
        if (!s->key) {
            s->key = key;
            s->len = len;
            s->hash = h;
            return s;
        }
        if (s->hash == h && s->len == len && memcmp(s->key, key, len * sizeof *key) == 0) return s;
        i = (i + 1) & t->mask;
    }
}

/* The clipped match count sum over distinct n-grams g of min(count_hyp(g), count_ref(g)), where the
 * n-grams of each side are given by nr / nh spans (start offsets into ref / hyp, common length
 * function). The hypothesis count of g climbing past k adds one match while k < count_ref(g). */
typedef struct {
    const uint32_t *base;
    const uint32_t *start; /* offsets of each n-gram's first code point, or NULL: i-th starts at i */
    const uint32_t *end;   /* offsets one past each n-gram's last code point, or NULL: start + n */
    long count;
    size_t n;
} Spans;

static void span_at(const Spans *sp, long i, const uint32_t **key, size_t *len) {
    size_t st = sp->start ? sp->start[i] : (size_t)i;
    size_t en = sp->end ? sp->end[i] : st + sp->n;
    *key = sp->base + st;
    *len = en - st;
}

/* Clipped matches against several references refs[0..nr) at once, as sacreBLEU's BLEU counts
 * them: an n-gram's reference count is its largest count in any one reference. */
static long clipped_matches_refs(NgramTable *t, const Spans *refs, int nr, const Spans *hyp) {
    long total = 0;
    for (int r = 0; r < nr; r++) total += refs[r].count > 0 ? refs[r].count : 0;
    if (total <= 0 || hyp->count <= 0) return 0;
    table_reset(t, (size_t)total + (size_t)hyp->count);
    const uint32_t *key;
    size_t len;
    for (int r = 0; r < nr; r++) {
        for (long i = 0; i < refs[r].count; i++) {
            span_at(&refs[r], i, &key, &len);
            table_get(t, key, len)->cur++;
        }
        for (long i = 0; i < refs[r].count; i++) { /* fold this reference's counts in */
            span_at(&refs[r], i, &key, &len);
            Slot *s = table_get(t, key, len);
            if (s->cur > s->ref) s->ref = s->cur;
            s->cur = 0;
        }
    }
    long match = 0;
    for (long i = 0; i < hyp->count; i++) {
        span_at(hyp, i, &key, &len);
        Slot *s = table_get(t, key, len);
        if (++s->hyp <= s->ref) match++;
    }
    return match;
}

static long clipped_matches(NgramTable *t, const Spans *ref, const Spans *hyp) {
    return clipped_matches_refs(t, ref, 1, hyp);
}

/* ---------------------------------------------------------------- BLEU */

#define BLEU_ORDER 4

/* Token end offsets (one past the last code point) from the start offsets of a joined string. */
static void token_ends(CpBuf *ends, const CpBuf *starts, size_t joined_len) {
    ends->n = 0;
    for (size_t i = 0; i < starts->n; i++)
        cp_push(ends, i + 1 < starts->n ? starts->v[i + 1] - 1 : (uint32_t)joined_len);
}

/* sacreBLEU's BLEU.compute_bleu with smooth_method='exp', effective_order=False. */
static BleuScore bleu_from_stats(const int64_t correct[BLEU_ORDER], const int64_t total[BLEU_ORDER],
                                 int64_t sys_len, int64_t ref_len) {
    BleuScore r;
    memset(&r, 0, sizeof r);
    r.hyp_len = (long)sys_len;
    r.ref_len = (long)ref_len;
    r.ratio = ref_len ? (double)sys_len / (double)ref_len : 0.0;
    r.bp = 1.0;
    if (sys_len < ref_len) r.bp = sys_len > 0 ? exp(1.0 - (double)ref_len / (double)sys_len) : 0.0;

    int any = 0;
    for (int n = 0; n < BLEU_ORDER; n++) any |= correct[n] != 0;
    if (!any) return r; /* score and precisions 0 (as sacreBLEU when no n-gram matches) */

    double smooth_mteval = 1.0;
    for (int n = 0; n < BLEU_ORDER; n++) {
        if (total[n] == 0) break; /* this and higher precisions stay 0 */
        if (correct[n] == 0) {
            smooth_mteval *= 2.0;
            r.precisions[n] = 100.0 / (smooth_mteval * (double)total[n]);
        } else {
            r.precisions[n] = 100.0 * (double)correct[n] / (double)total[n];
        }
    }
    /* score = bp * exp(sum(my_log(p)) / order), my_log(0) = -9999999999 */
    double sum = 0.0;
    for (int n = 0; n < BLEU_ORDER; n++)
        sum += r.precisions[n] == 0.0 ? -9999999999.0 : log(r.precisions[n]);
    r.score = r.bp * exp(sum / BLEU_ORDER);
    return r;
}

/* sacreBLEU's BLEU._get_closest_ref_len: the reference length nearest hyp_len, the shorter of
 * two as near. */
static long long closest_ref_len(long long hyp_len, const long *lens, int nr) {
    long long best = -1, diff = -1;
    for (int r = 0; r < nr; r++) {
        long long d = hyp_len > lens[r] ? hyp_len - lens[r] : lens[r] - hyp_len;
        if (diff < 0 || d < diff) diff = d, best = lens[r];
        else if (d == diff && lens[r] < best) best = lens[r];
    }
    return best;
}

void bleu_segment_stats_refs(BleuStats *stats, const char *const *hyps,
                             const char *const *const *refs, int nrefs, long n) {
    CHECK(n >= 0, "bleu_corpus: negative segment count");
    CHECK(nrefs >= 1 && nrefs <= METRICS_MAX_REFS, "bleu_corpus: 1 to 16 references");
    CHECK(n == 0 || (hyps && refs && stats), "bleu_corpus: NULL hypothesis or reference array");
    Tok13a tok = {0};
    CpBuf line = {0}, hj = {0}, hs = {0}, he = {0};
    CpBuf rj[METRICS_MAX_REFS] = {{0}}, rs[METRICS_MAX_REFS] = {{0}}, re[METRICS_MAX_REFS] = {{0}};
    long rn[METRICS_MAX_REFS];
    Spans rsp[METRICS_MAX_REFS];
    NgramTable table = {0};
    for (long s = 0; s < n; s++) {
        CHECK(hyps[s], "bleu_corpus: NULL segment string");
        BleuStats *st = &stats[s];
        memset(st, 0, sizeof *st);
        for (int r = 0; r < nrefs; r++) {
            CHECK(refs[r] && refs[r][s], "bleu_corpus: NULL segment string");
            utf8_decode(&line, refs[r][s]);
            rn[r] = tokenize_13a(&tok, &line, &rj[r], &rs[r]);
            token_ends(&re[r], &rs[r], rj[r].n);
        }
        utf8_decode(&line, hyps[s]);
        long hn = tokenize_13a(&tok, &line, &hj, &hs);
        token_ends(&he, &hs, hj.n);
        st->hyp_len = hn;
        st->ref_len = closest_ref_len(hn, rn, nrefs);
        for (int o = 1; o <= BLEU_ORDER; o++) {
            /* n-gram i spans tokens i .. i+o-1: from start[i] to end[i+o-1] */
            for (int r = 0; r < nrefs; r++)
                rsp[r] = (Spans){rj[r].v, rs[r].v, rn[r] >= o ? re[r].v + (o - 1) : NULL,
                                 rn[r] - o + 1, 0};
            Spans h = {hj.v, hs.v, hn >= o ? he.v + (o - 1) : NULL, hn - o + 1, 0};
            if (h.count > 0) st->total[o - 1] = h.count;
            st->correct[o - 1] = clipped_matches_refs(&table, rsp, nrefs, &h);
        }
    }
    cp_free(&tok.a), cp_free(&tok.b), cp_free(&line), cp_free(&hj), cp_free(&hs), cp_free(&he);
    for (int r = 0; r < nrefs; r++) cp_free(&rj[r]), cp_free(&rs[r]), cp_free(&re[r]);
    free(table.s);
}

void bleu_segment_stats(BleuStats *stats, const char *const *hyps, const char *const *refs,
                        long n) {
    bleu_segment_stats_refs(stats, hyps, &refs, 1, n);
}

BleuScore bleu_from_sum(const BleuStats *sum) {
    int64_t correct[BLEU_ORDER], total[BLEU_ORDER];
    for (int o = 0; o < BLEU_ORDER; o++) correct[o] = sum->correct[o], total[o] = sum->total[o];
    return bleu_from_stats(correct, total, sum->hyp_len, sum->ref_len);
}

BleuScore bleu_corpus_refs(const char *const *hyps, const char *const *const *refs, int nrefs,
                           long n) {
    CHECK(n >= 0, "bleu_corpus: negative segment count");
    CHECK(n == 0 || (hyps && refs), "bleu_corpus: NULL hypothesis or reference array");
    BleuStats sum;
    memset(&sum, 0, sizeof sum);
    if (n == 0) { /* all zeros, bp included (metrics.h) */
        BleuScore zero;
        memset(&zero, 0, sizeof zero);
        return zero;
    }
    BleuStats *st = xmalloc(sizeof *st * (size_t)n);
    bleu_segment_stats_refs(st, hyps, refs, nrefs, n);
    for (long s = 0; s < n; s++) {
        for (int o = 0; o < BLEU_ORDER; o++)
            sum.correct[o] += st[s].correct[o], sum.total[o] += st[s].total[o];
        sum.hyp_len += st[s].hyp_len, sum.ref_len += st[s].ref_len;
    }
    free(st);
    return bleu_from_sum(&sum);
}

BleuScore bleu_corpus(const char *const *hyps, const char *const *refs, long n) {
    return bleu_corpus_refs(hyps, &refs, 1, n);
}

/* ---------------------------------------------------------------- chrF */

#define CHRF_ORDER 6
#define CHRF_BETA 2

/* ''.join(line.split()) in place. */
static void remove_whitespace(CpBuf *b) {
    size_t k = 0;
    for (size_t i = 0; i < b->n; i++)
        if (!py_isspace(b->v[i])) b->v[k++] = b->v[i];
    b->n = k;
}

/* sacreBLEU's CHRF._compute_f_score with eps_smoothing=False (the default). */
static double chrf_from_stats(const int64_t hyp[CHRF_ORDER], const int64_t ref[CHRF_ORDER],
                              const int64_t match[CHRF_ORDER]) {
    const double factor = CHRF_BETA * CHRF_BETA;
    double avg_prec = 0.0, avg_rec = 0.0;
    int eff = 0;
    for (int i = 0; i < CHRF_ORDER; i++) {
        if (hyp[i] > 0 && ref[i] > 0) {
            avg_prec += (double)match[i] / (double)hyp[i];
            avg_rec += (double)match[i] / (double)ref[i];
            eff++;
        }
    }
    if (eff == 0) return 0.0;
    avg_prec /= eff;
    avg_rec /= eff;
    if (avg_prec + avg_rec == 0.0) return 0.0;
    double score = (1.0 + factor) * avg_prec * avg_rec;
    score /= factor * avg_prec + avg_rec;
    return 100.0 * score;
}

double chrf_corpus_refs(const char *const *hyps, const char *const *const *refs, int nrefs,
                        long n) {
    CHECK(n >= 0, "chrf_corpus: negative segment count");
    CHECK(nrefs >= 1 && nrefs <= METRICS_MAX_REFS, "chrf_corpus: 1 to 16 references");
    CHECK(n == 0 || (hyps && refs), "chrf_corpus: NULL hypothesis or reference array");
    int64_t sh[CHRF_ORDER] = {0}, sr[CHRF_ORDER] = {0}, sm[CHRF_ORDER] = {0};
    CpBuf h = {0}, r = {0};
    NgramTable table = {0};
    for (long s = 0; s < n; s++) {
        CHECK(hyps[s], "chrf_corpus: NULL segment string");
        utf8_decode(&h, hyps[s]);
        remove_whitespace(&h);
        /* several references: the statistics of the one with the best sentence chrF (the first
         * of equals), as sacreBLEU's CHRF._compute_segment_statistics */
        int64_t bh[CHRF_ORDER], br[CHRF_ORDER], bm[CHRF_ORDER];
        double best = -1.0;
        for (int k = 0; k < nrefs; k++) {
            CHECK(refs[k] && refs[k][s], "chrf_corpus: NULL segment string");
            utf8_decode(&r, refs[k][s]);
            remove_whitespace(&r);
            int64_t th[CHRF_ORDER], tr[CHRF_ORDER], tm[CHRF_ORDER];
            for (int o = 1; o <= CHRF_ORDER; o++) {
                Spans rsp = {r.v, NULL, NULL, (long)r.n - o + 1, (size_t)o};
                Spans hsp = {h.v, NULL, NULL, (long)h.n - o + 1, (size_t)o};
                long rc = rsp.count > 0 ? rsp.count : 0, hc = hsp.count > 0 ? hsp.count : 0;
                /* hypothesis n-grams count only when the reference has n-grams of this order */
                th[o - 1] = rc > 0 ? hc : 0;
                tr[o - 1] = rc;
                tm[o - 1] = clipped_matches(&table, &rsp, &hsp);
            }
            double f = nrefs > 1 ? chrf_from_stats(th, tr, tm) : 0.0;
            if (f > best) {
                best = f;
                memcpy(bh, th, sizeof th), memcpy(br, tr, sizeof tr), memcpy(bm, tm, sizeof tm);
            }
        }
        for (int o = 0; o < CHRF_ORDER; o++) sh[o] += bh[o], sr[o] += br[o], sm[o] += bm[o];
    }
    cp_free(&h), cp_free(&r);
    free(table.s);
    return chrf_from_stats(sh, sr, sm);
}

double chrf_corpus(const char *const *hyps, const char *const *refs, long n) {
    return chrf_corpus_refs(hyps, &refs, 1, n);
}

void bleu_signature(char *buf, size_t n, int nrefs) {
    snprintf(buf, n, "nrefs:%d|case:mixed|eff:no|tok:13a|smooth:exp|version:%s", nrefs,
             METRICS_SACREBLEU_VERSION);
}

void chrf_signature(char *buf, size_t n, int nrefs) {
    snprintf(buf, n, "nrefs:%d|case:mixed|eff:yes|nc:6|nw:0|space:no|version:%s", nrefs,
             METRICS_SACREBLEU_VERSION);
}

const char *metrics_ppl_text(char *buf, size_t n, double ppl, int decimals) {
    if (isnan(ppl)) snprintf(buf, n, "nan");
    else if (ppl > METRICS_PPL_PRINT_MAX) snprintf(buf, n, "> 1e6");
    else snprintf(buf, n, "%.*f", decimals, ppl);
    return buf;
}

/* Frees lines[0..n) and the array. */
static void free_parts(char **lines, long n) {
    for (long i = 0; i < n; i++) free(lines[i]);
    free(lines);
}

void metrics_joined_score(JoinedScore *j, char *const *hyp, char **const ref[], int nrefs,
                          long n, int k, long nsent) {
    char **sh = xmalloc((size_t)(nsent ? nsent : 1) * sizeof *sh), **sr[METRICS_MAX_REFS];
    char **part = xmalloc((size_t)(k + 1) * sizeof *part);
    for (int r = 0; r < nrefs; r++) {
        j->doc_ref[r] = xmalloc((size_t)(n ? n : 1) * sizeof(char *));
        sr[r] = xmalloc((size_t)(nsent ? nsent : 1) * sizeof(char *));
    }
    j->doc_hyp = xmalloc((size_t)(n ? n : 1) * sizeof(char *));
    long w = 0;
    for (long i = 0; i < n; i++) {
        int want = (int)(i + 1 < n ? k : nsent - (long)k * (n - 1)), got, rp;
        j->doc_hyp[i] = corpus_split_joined(hyp[i], &got, part, k + 1);
        int keep = got == want;
        for (int p = 0; p < got && p <= k; p++) {
            if (keep) sh[w + p] = part[p];
            else free(part[p]);
        }
        for (int r = 0; r < nrefs; r++) {
            j->doc_ref[r][i] = corpus_split_joined(ref[r][i], &rp, part, k + 1);
            for (int p = 0; p < rp && p <= k; p++) {
                if (keep && p < want) sr[r][w + p] = part[p];
                else free(part[p]);
            }
        }
        if (keep) w += want;
        else j->mismatches++;
    }
    j->nsplit = w;
    if (w) j->split = bleu_corpus_refs((const char *const *)sh, (const char *const *const *)sr,
                                       nrefs, w);
    free_parts(sh, w);
    for (int r = 0; r < nrefs; r++) free_parts(sr[r], w);
    free(part);
}

void metrics_joined_free(JoinedScore *j, int nrefs, long n) {
    if (!j->doc_hyp) return;
    free_parts(j->doc_hyp, n);
    for (int r = 0; r < nrefs; r++) free_parts(j->doc_ref[r], n);
    j->doc_hyp = NULL;
}
