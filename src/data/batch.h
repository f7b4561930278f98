/* data/batch.h — token-budget batches of sentence pairs (docs/design.md §1), built as batch-major
 * TokenBatch arrays (core/tokens.h: src [B,S], tgt_in/tgt_out [B,T], PAD = 0).
 *
 * Legend: B sentences in a batch, S longest source (subword tokens), T longest target + 1 (the
 * decoder reads BOS y_1..y_n and predicts y_1..y_n EOS). A batch holds at most batch_tokens
 * padded tokens: B·(S + T) ≤ batch_tokens.
 *
 * Bucketing: each epoch the kept pairs are shuffled by the seeded PRNG, stably sorted by
 * (source length, target length) — so pairs of equal lengths stay in random order — cut into
 * batches greedily, and the batch order is shuffled. The same seed and epoch RNG state give the
 * same batches. Every array here is host memory (model.c uploads the TokenBatch). Units: lengths
 * and budgets in subword tokens. Source: — (length bucketing as in OpenNMT-py / fairseq).
 */
#ifndef TRAINER_BATCH_H
#define TRAINER_BATCH_H

#include "core/common.h"
#include "core/tokens.h"
#include "data/encoded.h"
#include "core/rng.h"

typedef struct {
    long *idx;    /* sentence indices of every batch, concatenated */
    long *start;  /* [nbatches + 1]: batch k is idx[start[k] .. start[k+1]) */
    long nbatches;
} BatchPlan;

/* Indices of pairs whose two sides both have 1..max_len tokens (the training filter).
 * Returns the count; *keep is malloc'd ([e->n] longs at most; the caller frees it). No errors. */
long batch_filter(const Encoded *e, int max_len, long **keep);
/* Plans one epoch over keep[0..nkeep). rng == NULL: no shuffling (sorted by length, for
 * evaluation). Errors (STATUS_ERR, p left empty): a single pair that does not fit in batch_tokens
 * ("train.batch_tokens = N is too small for a pair of S + T tokens; raise train.batch_tokens or
 * lower data.max_len"). */
Status batch_plan(BatchPlan *p, const Encoded *e, const long *keep, long nkeep, int batch_tokens,
                  Rng *rng, Err *err);
void batch_plan_free(BatchPlan *p); /* frees and zeroes p; no errors */
/* The bounds of p's batches as batch_fill makes them from e: the largest B, S, T (targets with
 * their EOS; T = 1 without targets) and B·S, B·T over the batches, each at least 1. For sizing
 * batch_alloc and model_reserve to a plan known in advance (evaluation) instead of batch_bounds'
 * worst case. No errors. Source: —. */
BatchBounds batch_plan_bounds(const BatchPlan *p, const Encoded *e);
/* Data parallelism (docs/distributed.md): the shard of the batch idx[0..B) that rank `rank`
 * of `world` ranks trains. The rule: the ranks take contiguous ranges of the batch's sentences
 * in rank order, [*lo, *hi) for this rank, cut at the sentence boundaries nearest to k·total /
 * world target tokens (k = 1 .. world - 1; a tie goes to the earlier boundary), where a
 * sentence's target tokens are its target length + 1 (EOS: the tokens batch_fill counts in
 * tgt_tokens) and total is the batch's sum of them. Shards thus hold about equal target tokens
 * (at most one sentence off); a batch of fewer sentences than ranks leaves some shards empty
 * (*lo == *hi). world = 1: the whole batch. Returns total (every rank gets the same, the
 * normaliser of the global loss). Units: tokens, sentence positions in idx. No errors. */
long batch_shard(const Encoded *e, const long *idx, int B, int rank, int world, int *lo, int *hi);
/* Capacity bounds of any batch batch_plan can make with these settings: B, S, T at most *B, *S,
 * *T, and B·S, B·T at most batch_tokens (for batch_alloc and model_reserve). S ≤ max_len and
 * T ≤ max_len + 1 (EOS), each also within one pair of batch_tokens (S ≤ batch_tokens − 2,
 * T ≤ batch_tokens − 1) when max_len is longer than a batch holds. No errors. */
void batch_bounds(int batch_tokens, int max_len, int *B, int *S, int *T);
/* Allocates tb's host arrays once for batches of up to B sentences, S source and T target
 * positions, NS = B·S and NT = B·T tokens (padding included); batch_fill never allocates.
 * No errors (xmalloc aborts on out-of-memory). */
void batch_alloc(TokenBatch *tb, int B, int S, int T, long NS, long NT);
/* Fills tb (batch-major, PAD = 0, every field of core/tokens.h) with pairs idx[0..B) of e;
 * targets may be absent (e->tgt_ids NULL) for decoding, then T = 1, tgt_in = BOS, tgt_out = PAD
 * and NR = 0. A batch beyond batch_alloc's capacity is a programmer error (CHECK). */
void batch_fill(TokenBatch *tb, const Encoded *e, const long *idx, int B);
void batch_free(TokenBatch *tb); /* frees tb's host arrays and zeroes tb; no errors */

#endif
