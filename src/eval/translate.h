/* translate.h — decoding and scoring with a trained model.
 *
 * translate_lines: greedy decoding (the argmax of p(y_t | y_<t, x) at each step, until EOS or
 * max length 2·S + 10 tokens, S the source length in subwords) of raw UTF-8 lines, batched by
 * source length; returns detokenised text in the input order.
 * eval_perplexity: teacher-forced perplexity exp(Σ −log p(y_t) / N) over the target tokens
 * (EOS included, no label smoothing).
 */
#ifndef TRAINER_TRANSLATE_H
#define TRAINER_TRANSLATE_H

#include "data/encoded.h"
#include "model/model.h"

/* out: malloc'd array of n malloc'd strings. Errors: SentencePiece failures, with the line. */
Status translate_lines(Model *m, const char *const *lines, long n, char ***out, Err *err);
/* Perplexity of the pairs in e (all of them, no length filter); *tokens gets N. */
Status eval_perplexity(Model *m, const Encoded *e, double *ppl, long *tokens, Err *err);
void free_lines(char **lines, long n);

/* Longest source (subwords) translate_lines feeds the model; longer inputs are cut there. */
#define TRANSLATE_MAX_SRC 250
/* Padded target tokens per decoding batch (bounds activation memory). */
#define TRANSLATE_BATCH_TOKENS 6000

#endif
