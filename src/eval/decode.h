/* eval/decode.h — search over a model's output distribution, one batch of sentences at a time.
 *
 * Legend: B sentences, S source length, K beam size, V vocabulary, max_T the longest output.
 * Greedy: y_t = argmax p(y_t | y_<t, x) until EOS. Beam search (Wu et al. 2016 §7): K
 * hypotheses per sentence; each step keeps the K best continuations by log p(y_≤t | x) among the
 * K·V candidates; a candidate ending in EOS that ranks among the K best is finished (as in
 * fairseq; lower ones are dropped) and scored s(Y) = log p(Y | X) / lp(Y)
 * with lp(Y) = ((5 + |Y|) / 6)^α (eq. 14, no coverage penalty; |Y| counts EOS); a sentence stops
 * when it has K finished hypotheses (or at max_T, where the live ones are finished as they
 * are) and returns the best s(Y). With K = 1 this is greedy decoding. Scores are in nats.
 * Errors: the searches have none (no Status); the model CHECKs its reserved capacity.
 */
#ifndef TRAINER_DECODE_H
#define TRAINER_DECODE_H

#include <stdint.h>

#include "core/rng.h"
#include "core/tokens.h"
#include "model/model.h"

/* How a step's token is chosen: by the search (greedy or beam), or drawn (sampling). */
typedef enum { DECODE_SEARCH, DECODE_TOPK, DECODE_TEMP, DECODE_TOPP } DecodeSample;

typedef struct {
    int beam;          /* K >= 1 hypotheses per sentence; 1 = greedy */
    float len_penalty; /* α of Wu et al. 2016 eq. 14 (>= 0); 0 ranks by log-probability */
    int nbest;         /* hypotheses returned per sentence, 1..beam (0 = 1): beam search's best
                        * finished ones, best first */
    DecodeSample sample; /* DECODE_TOPK: each token drawn from softmax(log p) over the topk most
                        * probable (Fan et al. 2018); DECODE_TEMP: from softmax(log p / temperature)
                        * over all (T = 1: the unrestricted sampling of back-translation, Edunov et
                        * al. 2018); DECODE_TOPP: from softmax(log p) over the nucleus, the
                        * fewest most probable tokens whose probabilities sum to >= topp
                        * (Holtzman et al. 2020 §3.1, eq. 2-3); one row per sentence, beam 1 */
    int topk;          /* K of DECODE_TOPK, >= 1 */
    float temperature; /* T of DECODE_TEMP, > 0 */
    float topp;        /* P of DECODE_TOPP, in (0, 1] */
    uint64_t seed;     /* sampling: sentence i of the input draws from PCG32 seeded (seed, i) */
    long first_line;   /* translate_ensemble: the input's line number (from 0) of its lines[0],
                        * which i above and the lines named in its errors count from; 0 when the
                        * lines are the whole input */
    int crop_long;     /* translate_ensemble: a source of more subword tokens than the model can
                        * read (model_max_source_len) is cut to that many (0: refused) */
    long *cropped;     /* translate_ensemble: NULL, or a count it adds each source so cut to */
    int batch_tokens;  /* translate_ensemble: padded target tokens (beam rows included) per
                        * decoding batch, 0 = TRANSLATE_BATCH_TOKENS; a longer sentence alone */
    int batch_size;    /* translate_ensemble: sentences per decoding batch at most, 0 = any */
} DecodeOpts;

/* Decodes tb's sources (host, targets unused) with the ensemble models[0..nm) (nm >= 1, one
 * vocabulary, each with room for B·K sentences: model_reserve_decode), at each step from the
 * mean of their log-probabilities (nm = 1: the model's own; the attention is models[0]'s), as
 * opt says: greedy (one model: decode_greedy), beam search (decode_beam, keeping opt->nbest
 * finished hypotheses), or sampling (opt->sample; row b draws from PCG32 seeded (opt->seed,
 * row_keys[b]), row_keys NULL: b). out_ids [B·nbest·max_T] (host) gets hypothesis k of sentence
 * b at row b·nbest + k, best first: its ids up to and including EOS, then PAD (a sentence with
 * fewer finished hypotheses: PAD rows); scores [B·nbest] (host, NULL: not wanted) their s(Y) =
 * log p(Y|X) / lp(Y) of beam search (with beam 1 and no sampling: the beam search of K = 1, which
 * equals greedy), Σ log p for sampling, -inf for a missing one; attn (host, NULL to skip) the
 * best output's weights [B, max_T, S] (rows after the output's end untouched).
 * Source: Wu et al. 2016 §7 (above); ensembles average log-probabilities as Marian does (its
 * weighted sum of scorers, equal weights). */
void decode_search(Model *const *models, int nm, const TokenBatch *tb, const DecodeOpts *opt,
                   const uint64_t *row_keys, int max_T, int *out_ids, float *scores, float *attn);
/* Forced decoding (marian-scorer, fairseq-score): feeds each sentence of tb (host, sources only,
 * T = 1) its reference through the ensemble's incremental decoder and sums the mean
 * log-probability (nats) of each reference token. tgt [B·max_T] (host) holds row b's y_1 .. y_n
 * EOS (row b at b·max_T), len [B] its n + 1 (1..max_T); logp [B] gets Σ_t log p(y_t | y_<t, x)
 * over those n + 1 tokens (the models' mean at each step, as decode_search's ensembles). Each
 * model must have room for B sentences and max_T steps (model_reserve_decode with K = 1). No
 * errors. Source: the teacher-forced likelihood of Sutskever et al. 2014 eq. 1 (log p(Y|X) =
 * Σ_t log p(y_t | y_<t, X)). */
void decode_force(Model *const *models, int nm, const TokenBatch *tb, const int *tgt,
                  const int *len, int max_T, double *logp);
/* The token drawn (or chosen) from one row of log-probabilities lp [V] (host), as opt->sample
 * says: DECODE_SEARCH the first maximum; DECODE_TEMP a draw from softmax(lp / T); DECODE_TOPK a
 * draw from softmax(lp) over the K largest (of equals, the lower ids); DECODE_TOPP a draw from
 * softmax(lp) over the nucleus (the most probable tokens, in order of decreasing probability and
 * of increasing id among equals, up to and including the first whose cumulative probability
 * reaches topp; at least one token). r: the row's generator (one uniform draw per call when
 * sampling); order [V] scratch. No errors. Source: Fan et al. 2018 (top-k), Holtzman et al.
 * 2020 §3.1 (top-p). */
int decode_pick_token(const float *lp, int V, const DecodeOpts *opt, Rng *r, int *order);
/* The two searches of one model (arguments as decode_search's with nm = 1, nbest = 1; alpha the length penalty α of Wu et
 * al. 2016 eq. 14); decode_beam with K = 1 must equal decode_greedy. */
void decode_greedy(Model *m, const TokenBatch *tb, int max_T, int *out_ids, float *attn);
void decode_beam(Model *m, const TokenBatch *tb, int K, float alpha, int max_T, int *out_ids,
                 float *attn);

/* Command-line decoding options shared by eval, translate and compare: --beam K (1..64) and
 * --len-penalty A (0..10; default 1.0 with a beam, 0 when greedy unless given). Returns 1 if
 * argv[*i] was one of them (*i then points at its value), 0 if not, 2 on a bad or missing value
 * (message on stderr naming cmd). *alpha_set tracks whether --len-penalty was given.
 * Source: —. */
int parse_decode_arg(int argc, char **argv, int *i, DecodeOpts *d, int *alpha_set,
                     const char *cmd);

#endif
