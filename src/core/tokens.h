/* core/tokens.h — the special token ids and TokenBatch, the one layout of a batch of sentence pairs
 * (DESIGN.md §1, §2): built on the host by data/batch.c, uploaded once per step by model.c into
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
 * NR = tgt_tokens. A batch without targets (decoding) has T = 1, tgt_in = BOS, tgt_out = PAD
 * and NR = 0. Units: lengths and counts are subword tokens. Declarations only (no functions).
 */
#ifndef TRAINER_TOKENS_H
#define TRAINER_TOKENS_H

#include "core/common.h"

/* The ids SentencePiece models are trained with (data/spm.cc checks a loaded model has them). */
enum { TOKEN_PAD = 0, TOKEN_UNK = 1, TOKEN_BOS = 2, TOKEN_EOS = 3 };

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
    long src_tokens;   /* Σ src_len */
    long tgt_tokens;   /* NR: non-padding targets (EOS counts) */
    int capB, capS, capT;   /* capacity: B, S, T at most these, and */
    long capNS, capNT;      /* B·S ≤ capNS, B·T ≤ capNT */
} TokenBatch;

#endif
