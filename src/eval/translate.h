/* eval/translate.h — decoding and scoring with a trained model.
 *
 * translate_lines: greedy decoding (the argmax of p(y_t | y_<t, x) at each step) or beam search
 * (Wu et al. 2016: K hypotheses per sentence, finished ones ranked by log p(Y|X) / lp(Y) with
 * lp(Y) = ((5 + |Y|) / 6)^α, eq. 14) of raw UTF-8 lines, until EOS or max length 2·S + 10
 * tokens (S the source length in subwords), batched by source length; returns detokenised text
 * in the input order, and optionally each translation's attention.
 * eval_perplexity: teacher-forced perplexity exp(Σ −log p(y_t) / N) over the target tokens
 * (EOS included, no label smoothing; exp of the mean loss in nats).
 * eval needs no trainer (docs/design.md §1): the CLI loads the checkpoint and hands these a model.
 * Everything here is host memory; the model runs on its backend.
 */
#ifndef TRAINER_TRANSLATE_H
#define TRAINER_TRANSLATE_H

#include "data/encoded.h"
#include "data/spm.h"
#include "eval/decode.h"
#include "model/model.h"

/* One translation's attention: w[T,S], row t the weights over the source pieces when the
 * t-th target piece was produced (the last row is EOS's). Pieces are SentencePiece strings. */
typedef struct {
    int S, T;
    char **src, **tgt; /* S and T malloc'd strings */
    float *w;          /* [T,S] */
} AttnMap;

/* spm: the model's SentencePiece model (encodes lines, decodes and names the pieces).
 * out: malloc'd array of n malloc'd strings. maps: NULL, or n AttnMaps to fill (free each with
 * attn_map_free). lines [n] UTF-8, host; an empty line (or one of blanks) translates to "".
 * Errors (STATUS_ERR): SentencePiece failures (with the line); maps requested from a model
 * without attention ("this model has no attention to draw"); beam outside 1..64 or len_penalty
 * < 0 (naming --beam / --len-penalty); a line longer than the model can read ("input line N: a
 * source of S subword tokens is longer than model.linformer_max_len = n ...",
 * model_check_source_len; N = opt->first_line + i + 1). Source: decode.h (Wu et al. 2016). */
Status translate_lines(Model *m, const Spm *spm, const char *const *lines, long n,
                       const DecodeOpts *opt, char ***out, AttnMap *maps, Err *err);
/* translate_lines with the ensemble models[0..nm) (nm >= 1: decode.h decode_search, the mean of
 * their log-probabilities at each step; models of one SentencePiece model spm on one backend)
 * and opt's n-best list and sampling: out gets n·nbest malloc'd strings (nbest = opt->nbest, 1
 * when 0), line i's hypothesis k at i·nbest + k, best first ("" for one beam search did not
 * finish); scores (NULL: not wanted) n·nbest floats, each hypothesis's s(Y) in nats (decode.h;
 * -inf for a missing one, 0 for an empty line); maps the best hypothesis's attention (models[0]'s).
 * Sampling draws line i's translation from PCG32 seeded (opt->seed, opt->first_line + i),
 * whatever the batches and however the input is split into calls.
 * Errors: translate_lines's; nbest above beam (naming --nbest and --beam); sampling with a beam
 * or an n-best list, or with K < 1 or T <= 0 (naming --sample); models of different vocabulary
 * sizes or backends. */
Status translate_ensemble(Model *const *models, int nm, const Spm *spm, const char *const *lines,
                          long n, const DecodeOpts *opt, char ***out, float *scores,
                          AttnMap *maps, Err *err);
void attn_map_free(AttnMap *a); /* frees and zeroes *a; NULL is fine; no errors */
/* Perplexity of the pairs in e (no length filter; pairs with an empty source are left out), in
 * batches of at most EVAL_BATCH_TOKENS padded tokens (more if one pair needs it); *tokens (may be
 * NULL) gets N, *ppl = 0 when N = 0. Errors: batch_plan's (cannot happen with that budget); a
 * source longer than the model can read ("pair N: a source of S subword tokens is longer than
 * model.linformer_max_len ...", model_check_source_len). */
Status eval_perplexity(Model *m, const Encoded *e, double *ppl, long *tokens, Err *err);
/* Frees n malloc'd strings and the array (translate_lines' out); NULL is fine; no errors. */
void free_lines(char **lines, long n);

/* Longest source (subwords) translate_lines feeds the model; longer inputs are cut there. */
#define TRANSLATE_MAX_SRC 250
/* Padded tokens (source and target) per batch of eval_perplexity: its activations are sized
 * like a training step's of that many tokens (the output layer's [N, V] logits among them), so
 * fewer keep a standalone evaluation small; a validation inside a run with train.batch_tokens
 * at least this reuses the training's. */
#define EVAL_BATCH_TOKENS 1024
/* Padded target tokens per decoding batch (bounds activation memory). */
#define TRANSLATE_BATCH_TOKENS 6000

#endif
