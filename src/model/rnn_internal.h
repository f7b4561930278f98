/* model/rnn_internal.h — what the files of the RNN share (rnn.c: parameters, memory, the decoder
 * and the training pass; rnn_cell.c: the LSTM/GRU cell; rnn_encoder.c: the encoder;
 * rnn_cudnn.c: model.rnn_impl = cudnn; rnn_decode.c: incremental decoding). Not a public
 * interface: rnn.h is. The files call one way only: of rnn_decode.c, rnn.c, rnn_encoder.c,
 * rnn_cudnn.c each calls only those after it, and rnn.c and rnn_encoder.c call rnn_cell.c, which
 * calls none of them (tests/check_calls.py fails on a circle).
 *
 * Legend: B batch, S source length, T target length, E embedding, H decoder hidden, Hd = H/2
 * encoder hidden per direction, V vocabulary, G gate blocks (LSTM 4, GRU 3). The batch's ids
 * and mask are batch-major ([B,S], [B,T]) and transposed on the device once per pass;
 * activations are time-major: [S,B,·], [T,B,·]; the attention works batch-major ([B,S,H] keys).
 * Everything here is backend memory unless it says host.
 */
#ifndef TRAINER_MODEL_RNN_INTERNAL_H
#define TRAINER_MODEL_RNN_INTERNAL_H

#include "core/rng.h"
#include "core/tokens.h"
#include "model/acts.h"
#include "model/output_loss.h"
#include "model/rnn.h"

#define MAXL 8

typedef enum { DEC_NONE, DEC_LUONG, DEC_BAHDANAU } DecStyle;

/* The source side a decoder step attends to: B rows (sentences, or sentences × beams). */
typedef struct {
    int B, S;
    const float *enc_out; /* [B,S,H] */
    const int *src_len;   /* [B] */
} DecSrc;

struct RnnModel {
    const Backend *be;
    int V, E, H, Hd, Le, Ld, gru, feed, stepwise;
    DecStyle style;
    float p; /* dropout */
    Param emb_src, emb_tgt; /* [V,E] */
    RnnLayer enc[2 * MAXL]; /* layer l, direction d at [2l+d]; in → G·Hd */
    RnnLayer dec[MAXL];
    RnnAttn attn;                /* the attention (style != DEC_NONE) over h̄ */
    Param W_c;                   /* [H, 2H] (none: [H, H]): h̃ = tanh(W_c [c; h]) */
    float *W_cT;                 /* W_cᵀ, backend memory (transpose_weights) */
    Param W_out, b_out;          /* [V, H], [V] */
    /* the first float of encoder layer l (both directions) and of the target embedding in the
     * flat parameter buffers (GradReady, ops/params.h); the source embedding is at 0 */
    size_t off_enc[MAXL], off_emb_tgt;
    GradReady grad_ready; /* rnn_set_grad_ready */

    /* ---- activations (backend memory), capacity below ---- */
    BatchBounds cap;
    Acts acts;
    int *src_tm, *tin_tm, *tout_tm;                   /* [S,B], [T,B], [T,B] the batch's ids */
    float *mask_tm;                                   /* [S,B] the batch's source mask */
    float *src_emb, *src_emb_mask, *src_x;            /* [S,B,E] */
    float *enc_gx[2 * MAXL], *enc_gh[2 * MAXL];       /* [S,B,G·Hd], GRU [S,B,3Hd] */
    float *enc_h[2 * MAXL], *enc_c[2 * MAXL];         /* [S,B,Hd] */
    float *enc_cat[MAXL];                             /* [S,B,H] layer output [→h; ←h] */
    float *enc_x[MAXL], *enc_xmask[MAXL];             /* [S,B,H] input of layer l > 0 (dropped) */
    float *enc_out;                                   /* [B,S,H] top layer, batch-major */
    float *enc_out_beam;                              /* [B·K,S,H] decoding with K > 1 */
    float *zeros;                                     /* [B,H] */
    float *tgt_emb, *tgt_emb_mask, *tgt_x;            /* [T,B,E] */
    float *dec_x[MAXL], *dec_xmask[MAXL];             /* [T,B,in_l] */
    float *dec_gx[MAXL], *dec_gh[MAXL];               /* [T,B,G·H], GRU [T,B,3H] */
    float *dec_h[MAXL], *dec_c[MAXL];                 /* [T,B,H] */
    float *dec_h0[MAXL], *dec_c0[MAXL];               /* [B,H] initial state */
    float *qsave, *ctx;                               /* [T,B,H] (batched Luong: [B,T,H]) */
    float *attw;     /* what the attention saves, per step [B,NH,1,S] weights or [B,NH,1] lse */
    float *q_bm, *ctx_bm, *dctx_bm;                   /* [B,T,H] batched Luong attention */
    float *cat;                                       /* [T,B,2H] [c_t; h_t] */
    float *htil, *htil_drop, *htil_mask;              /* [T,B,H] */
    OutputLoss out;   /* the output layer's blocks; its logits, dlogits [max(rows, B), V] */
    int loss_rows;    /* rnn_set_loss_rows (0: automatic) */
    /* gradients / scratch */
    float *d_htil, *d_htil_drop;                      /* [T,B,H] */
    float *d_cat_all;                                 /* [T,B,2H] */
    float *d_ctx_all, *d_htop_all;                    /* [T,B,H] */
    float *d_cat, *d_pre;                             /* [B,2H], [B,H] */
    float *d_dec_gx[MAXL], *d_dec_gh[MAXL];           /* [T,B,G·H], GRU [T,B,3H] */
    float *dh[MAXL][2], *dc[MAXL][2];                 /* [B,H] current / previous */
    float *d_x;                                       /* [B, in0] */
    float *d_tgt_x;                                   /* [T,B,E] */
    float *d_enc_out, *d_enc_cat;                     /* [B,S,H], [S,B,H] */
    float *d_enc_hdir[2];                             /* [S,B,Hd] */
    float *d_enc_gx, *d_enc_gh;                       /* [S,B,G·Hd], GRU [S,B,3Hd] */
    float *d_enc_x;                                   /* [S,B,max(E,H)] */
    float *d_src_x;                                   /* [S,B,E] */
    float *d_hrec[2], *d_crec[2];                     /* [B,Hd] */
    float *attn_work;                                 /* rnn_attn_workspace floats */
    size_t attn_work_cap;
    float *attn_map;                                  /* [B,S] decoding: recomputed weights */
    float *tmp_rows;                                  /* [B,H] reorder scratch */
    int *beam_len, *beam_idx;                         /* [B] decoding: src_len and row map */
    DecSrc dsrc;                                      /* decoding: the rows being decoded */
    int ring; /* 0: step t's states at slot t (training); 2: decoding's two slots, t mod 2 */

    /* ---- model.rnn_impl = cudnn (rnn_set_impl; the comment above encoder_cudnn_layer) ---- */
    int cud;                       /* encoder layers through be->rnn_seq_* */
    int dec_cud;                   /* decoder layers too (no input feeding, not bahdanau) */
    float *cud_enc_w[MAXL], *cud_dec_w[MAXL];     /* weight spaces (cuDNN's layout) */
    float *cud_enc_res[MAXL], *cud_dec_res[MAXL]; /* reserves of the training forward */
    size_t cud_enc_res_n[MAXL], cud_dec_res_n[MAXL];
    float *cud_dw, *cud_work;      /* weight-gradient space, workspace (the largest layer's) */
    size_t cud_work_n;
    float *cud_hy[MAXL], *cud_cy[MAXL]; /* [2,B,Hd] final states of encoder layer l */
    float *cud_dhy, *cud_dcy;      /* [2,B,Hd] */
    float *cud_dy;                 /* [T,B,H] gradient of a decoder layer's output */
    float *cud_dx;                 /* [T,B,max(E,H)] gradient of a decoder layer's input */
    int *dec_len;                  /* [B] backend: T for every row (the decoder has no padding) */
    int *len_host;                 /* [B] host (xmalloc): T for every row (decoder) */
    int *src_len_buf;              /* [B] host (xmalloc): src_len downloaded when the batch has
                                      no host copy (TokenBatch.src_len_host) */
    const int *src_len_h;          /* [B] host: this pass's source lengths */
};

/* Where step t's per-step states live in the [T,B,·] buffers: slot t when training (the
 * backward reads them all), slot t mod 2 when decoding (a step reads only the one before), so
 * decoding needs two steps' rows, not max_T's. */
static inline size_t rnn_slot(const RnnModel *m, int t) {
    return m->ring ? (size_t)(t % m->ring) : (size_t)t;
}

/* What the attention saves at step t of B rows against S keys. */
static inline float *rnn_step_save(RnnModel *m, int t, int B, int S) {
    return m->attw + rnn_slot(m, t) * rnn_attn_save_floats(&m->attn, B, S);
}

/* The dropout key of a site of the pass whose key is key. */
static inline uint64_t rnn_site_key(uint64_t key, uint64_t site) {
    return rng_hash(key, site) | (key << 32);
}

/* n floats of activation memory (rnn_reserve's; freed by rnn_release). */
static inline float *rnn_act(RnnModel *m, size_t n) { return acts_floats(&m->acts, m->be, n); }

/* One LSTM/GRU cell over B rows (rnn_cell.c; ops.h's cell ops on layer L's weights): gx [B,G·h] the
 * input part x W_ihᵀ + b, gh the GRU's recurrent part (NULL for the LSTM), hp, cp the previous
 * state, h, c the new one; mask [B] (NULL: none) keeps the state on masked rows. */
void rnn_cell_forward(const Backend *be, const RnnLayer *L, float *gx, float *gh, const float *hp,
                      const float *cp, float *h, float *c, const float *mask, int B);
/* Its backward: dgx, dgh the gates' gradients (written); dhp, dcp accumulate the previous
 * state's; dh, dc the gradient of the new state. */
void rnn_cell_backward(const Backend *be, const RnnLayer *L, float *dgx, float *dgh, float *dhp,
                       float *dcp, const float *dh, const float *dc, const float *gx,
                       const float *gh, const float *hp, const float *c, const float *cp,
                       const float *mask, int B);
/* dW_ih += dgxᵀ x and the biases' gradients, over N rows. */
void rnn_cell_input_grads(const Backend *be, RnnLayer *L, const float *dgx, const float *dgh,
                          const float *x, int N);
/* dW_hh += dghᵀ h over N rows. */
void rnn_cell_recurrent_grads(const Backend *be, RnnLayer *L, const float *dgh, const float *h,
                              int N);

/* rnn_encoder.c: ids_tm [L,B] = ids [B,L] on the device. */
void rnn_time_major(const Backend *be, int *ids_tm, const int *ids, int B, int L);
/* rnn_encoder.c: the encoder's forward over b (train: dropout on; key: the pass's dropout key)
 * into enc_out [B,S,H], and the decoder's initial states dec_h0, dec_c0. */
void rnn_encoder_forward(RnnModel *m, const TokenBatch *b, int train, uint64_t key);
void rnn_encoder_backward(RnnModel *m, const TokenBatch *b, const int *cur);

/* rnn.c: decoder step t over src->B rows (see its comment). */
void rnn_decoder_step(RnnModel *m, int t, const float *emb_t, const DecSrc *src, int per_step,
                      int train, uint64_t key);

/* rnn_cudnn.c: model.rnn_impl = cudnn (each function's comment there). */
void rnn_reserve_cudnn(RnnModel *m, int B, int S, int T, size_t NT);
const int *rnn_host_src_len(RnnModel *m, const TokenBatch *b);
void rnn_encoder_cudnn_layer(RnnModel *m, int l, const float *x, const TokenBatch *b, int train);
void rnn_encoder_cudnn_layer_backward(RnnModel *m, int l, const float *x, const TokenBatch *b,
                                      const int *cur);
void rnn_decoder_cudnn_forward(RnnModel *m, const TokenBatch *b, int train, uint64_t key);
void rnn_decoder_cudnn_backward(RnnModel *m, const TokenBatch *b, int *cur);

#endif
