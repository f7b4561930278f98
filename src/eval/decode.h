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

#include "core/tokens.h"
#include "model/model.h"

typedef struct {
    int beam;          /* K >= 1 hypotheses per sentence; 1 = greedy */
    float len_penalty; /* α of Wu et al. 2016 eq. 14 (>= 0); 0 ranks by log-probability */
} DecodeOpts;

/* Decodes tb's sources (host, targets unused). out_ids[B·max_T] (host) gets each sentence's ids up to
 * and including EOS, then PAD; attn (host, NULL to skip) gets the chosen output's weights
 * [B, max_T, S] (rows after the output's end untouched). The model must have room for B·K
 * sentences (model_reserve_decode). opt->beam == 1 runs decode_greedy.
 * Source: Wu et al. 2016 §7 (above). */
void decode_batch(Model *m, const TokenBatch *tb, const DecodeOpts *opt, int max_T, int *out_ids,
                  float *attn);
/* The two searches themselves (arguments as decode_batch; alpha the length penalty α of Wu et
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
