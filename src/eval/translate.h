/* eval/translate.h — decoding and scoring with a trained model.
 *
 * translate_lines: greedy decoding (the argmax of p(y_t | y_<t, x) at each step) or beam search
 * (Wu et al. 2016: K hypotheses per sentence, finished ones ranked by log p(Y|X) / lp(Y) with
 * lp(Y) = ((5 + |Y|) / 6)^α, eq. 14) of raw UTF-8 lines, until EOS or max length 2·S + 10
 * tokens (S the source length in subwords, uncut: a source longer than the model can read is
 * refused or, asked to, cropped), batched by source length; returns detokenised text in the
 * input order, and optionally each translation's attention.
 * score_ensemble: forced decoding, log p(ref | src) of given references.
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
 * model_check_source_len; N = opt->first_line + i + 1) unless opt->crop_long, which cuts it to
 * model_max_source_len tokens and counts it in *opt->cropped. Other models have no limit here:
 * the RNN reads any length, the Transformer's sinusoidal positions are computed for any length.
 * Source: decode.h (Wu et al. 2016). */
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
/* Forced decoding of the pairs (src[i], ref[i]), i < n, by the ensemble models[0..nm) (as
 * translate_ensemble's: the mean of their log-probabilities at each step, decode.h
 * decode_force): logp[i] gets log p(ref_i | src_i) = Σ_t log p(y_t | y_<t, x) in nats over the
 * reference's subword pieces and EOS, ntok[i] (NULL: not wanted) their number (pieces + 1).
 * Batches as translate_ensemble's (opt->batch_tokens, batch_size: padded target tokens and
 * sentences; the scores do not depend on them beyond float rounding); opt->crop_long,
 * opt->cropped and opt->first_line as there; the search and sampling fields are not read.
 * Errors (STATUS_ERR): SentencePiece failures, a source longer than the model can read (as
 * translate_ensemble's, "input line N: ..."), an empty source ("input line N: the source is
 * empty ..."), models of different vocabularies or backends. Source: marian-scorer and
 * fairseq-score (the sum over target tokens, EOS included); Sutskever et al. 2014 eq. 1. */
Status score_ensemble(Model *const *models, int nm, const Spm *spm, const char *const *src,
                      const char *const *ref, long n, const DecodeOpts *opt, double *logp,
                      long *ntok, Err *err);
/* Word alignment from one translation's attention a (Marian's --alignment, fast_align's
 * format): a malloc'd string of "i-j" pairs separated by blanks, i a source word, j a target
 * word (0-based, in order of j), one pair for every target word j: the source word whose pieces
 * receive the largest attention summed over j's pieces (rows) and the source word's pieces
 * (columns); of equal sums the first. Words are the pieces grouped at SentencePiece's word
 * marks (U+2581): those of the source are its whitespace words, those of the target the
 * detokenised translation's (an unknown piece, "<unk>", is a word of its own in the target, as
 * its detokenised form " ⁇ "); pieces without a character other than the mark and the EOS row
 * belong to no word. "" when either side has no word. No errors. Source: the attention as soft
 * alignment of Bahdanau et al. 2015 §3.1; Marian's guided-alignment output format. */
char *attn_map_alignment(const AttnMap *a);
void attn_map_free(AttnMap *a); /* frees and zeroes *a; NULL is fine; no errors */
/* Perplexity of the pairs in e (no length filter; pairs with an empty source are left out), in
 * batches of at most EVAL_BATCH_TOKENS padded tokens (more if one pair needs it); *tokens (may be
 * NULL) gets N, *ppl = 0 when N = 0. Errors: batch_plan's (cannot happen with that budget); a
 * source longer than the model can read ("pair N: a source of S subword tokens is longer than
 * model.linformer_max_len ...", model_check_source_len). */
Status eval_perplexity(Model *m, const Encoded *e, double *ppl, long *tokens, Err *err);
/* Frees n malloc'd strings and the array (translate_lines' out); NULL is fine; no errors. */
void free_lines(char **lines, long n);

/* Padded tokens (source and target) per batch of eval_perplexity: its activations are sized
 * like a training step's of that many tokens (the output layer's [N, V] logits among them), so
 * fewer keep a standalone evaluation small; a validation inside a run with train.batch_tokens
 * at least this reuses the training's. */
#define EVAL_BATCH_TOKENS 1024
/* Padded target tokens per decoding batch (bounds activation memory), unless
 * DecodeOpts.batch_tokens says otherwise. */
#define TRANSLATE_BATCH_TOKENS 6000

#endif
