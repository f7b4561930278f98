/* core/tokens.h — the special token ids and TokenBatch, the one layout of a batch of sentence pairs
 * (docs/design.md §1, §2): built on the host by data/batch.c, uploaded once per step by model.c into
 * a TokenBatch of the same shape whose arrays live in backend memory.
 *
 * Legend: B sentences, S longest source (subword tokens), T longest target + 1 (the decoder
 * reads BOS y_1 .. y_n and predicts y_1 .. y_n EOS), NR non-padding target positions.
 * Every array is BATCH-MAJOR: sentence b's row is contiguous; padding is TOKEN_PAD (= 0).
 *
 *   src      [B,S]  x_1 .. x_m, pad          src_len [B]  m
 *   src_mask [B,S]  1.0 token, 0.0 padding
 *   tgt_in   [B,T]  BOS y_1 .. y_n, pad      tgt_len [B]  n + 1 (BOS only, 1, without targets)
 *   tgt_out  [B,T]  y_1 .. y_n EOS, pad
 *   tgt_row  [NR]   b·T + t of every position whose tgt_out is not padding, in (b, t) order
 *   tgt_row_id [NR] tgt_out at that position
 *   tgt_row_tm [NR] t·B + b of the same positions, same order (the time-major index, model/rnn.c)
 * NR = tgt_tokens. A batch without targets (decoding) has T = 1, tgt_in = BOS, tgt_out = PAD
 * and NR = 0. Units: lengths and counts are subword tokens. Declarations only (no functions).
 */
#ifndef TRAINER_TOKENS_H
#define TRAINER_TOKENS_H

#include "core/common.h"

/* The ids SentencePiece models are trained with (data/spm.cc checks a loaded model has them). */
enum { TOKEN_PAD = 0, TOKEN_UNK = 1, TOKEN_BOS = 2, TOKEN_EOS = 3 };

/* Bounds of batches: at most B sentences, S source and T target positions, NS source and NT
 * target tokens (padding included: B·S ≤ NS, B·T ≤ NT). Capacities of the batch buffers and of
 * the models' activations are BatchBounds. */
typedef struct {
    int B, S, T;
    long NS, NT;
} BatchBounds;

/* Grows *cap to cover want, bound by bound (each the larger of the two). Returns 1 if any bound
 * grew (buffers must be reallocated), 0 if cap already covered want. No errors. */
static inline int bounds_grow(BatchBounds *cap, BatchBounds want) {
    if (want.B <= cap->B && want.S <= cap->S && want.T <= cap->T && want.NS <= cap->NS &&
        want.NT <= cap->NT)
        return 0;
    if (want.B > cap->B) cap->B = want.B;
    if (want.S > cap->S) cap->S = want.S;
    if (want.T > cap->T) cap->T = want.T;
    if (want.NS > cap->NS) cap->NS = want.NS;
    if (want.NT > cap->NT) cap->NT = want.NT;
    return 1;
}

/* The largest f(ctx, b, tq, tk) of the batches within bounds, for a call over tq query and tk
 * key positions per sentence: b <= B sentences, tq <= min(Tq, NQ / b), tk <= min(Tk, NK / b)
 * (a batch's padded positions are within NQ and NK). f must not decrease in any of its sizes;
 * the largest over b = 1..B is then the exact bound, where f(B, Tq, Tk) counts positions no
 * batch holds. No errors. */
static inline size_t bounds_max(size_t (*f)(const void *ctx, int b, int tq, int tk),
                                const void *ctx, int B, int Tq, int Tk, long NQ, long NK) {
    size_t w = 0;
    for (int b = 1; b <= B; b++) {
        long tq = NQ / b < Tq ? NQ / b : Tq, tk = NK / b < Tk ? NK / b : Tk;
        if (tq < 1 || tk < 1) break;
        size_t x = f(ctx, b, (int)tq, (int)tk);
        w = x > w ? x : w;
    }
    return w;
}

/* 1 if a batch of B sentences, S source and T target positions fits in cap. No errors. */
static inline int bounds_fit(const BatchBounds *cap, int B, int S, int T) {
    return B <= cap->B && S <= cap->S && T <= cap->T && (long)B * S <= cap->NS &&
           (long)B * T <= cap->NT;
}

typedef struct {
    int B, S, T;
    int *src;          /* [B,S] */
    int *src_len;      /* [B] */
    float *src_mask;   /* [B,S] 1 token, 0 padding */
    int *tgt_in;       /* [B,T] BOS y_1 .. y_n, pad */
    int *tgt_out;      /* [B,T] y_1 .. y_n EOS, pad */
    int *tgt_len;      /* [B] non-padding positions of tgt_in */
    int *tgt_row;      /* [NR] b·T + t of the non-padding tgt_out positions */
    int *tgt_row_id;   /* [NR] their target ids */
    int *tgt_row_tm;   /* [NR] t·B + b of the same positions (time-major), same order */
    const int *src_len_host; /* [B] src_len in HOST memory, or NULL. The backend mirror (model.c)
                                points it at the host batch's src_len for the call: cuDNN's RNN
                                data descriptor needs the lengths on the host (model/rnn.c) */
    long src_tokens;   /* Σ src_len */
    long tgt_tokens;   /* NR: non-padding targets (EOS counts) */
    BatchBounds cap;   /* what the buffers hold at most */
} TokenBatch;

#endif
