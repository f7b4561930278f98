/* model/transformer_internal.h — private to src/model/transformer.c and transformer_decode.c: the
 * model's types and the helpers both files use. Shapes as in transformer.c's legend (and
 * transformer.h's); every pointer is backend memory unless named h_. No errors except the CHECKs
 * named below. */
#ifndef TRAINER_TRANSFORMER_INTERNAL_H
#define TRAINER_TRANSFORMER_INTERNAL_H

#include "model/acts.h"
#include "model/output_loss.h"
#include "model/transformer.h"

#define TF_MAXL 16

typedef struct {
    Param w, b; /* [D] gain and bias */
} Norm;

typedef struct {
    Mha self, cross;         /* cross: decoder layers only */
    Norm ln[3];              /* one per sub-layer */
    Param W1, b1, W2, b2;    /* [F,D], [F], [D,F], [D] */
    float *W2T;              /* W2ᵀ [F,D] (transformer_reserve), refreshed by every pass
                              * (tf_encoder_forward) where the backend says so (w2t below):
                              * products read x·(W2ᵀ), not x·W2ᵀ, which the CPU's sgemm runs
                              * slower at K = F (bench/bench_gemm) */
} TfLayer;

typedef struct {             /* saved activations of one sub-layer */
    float *ln_out;           /* [N,D] pre: LN(u); post: LN(s), the output */
    float *mean, *rstd;      /* [N] */
    float *s;                /* [N,D] u + dropout(f) */
    float *mask;             /* [N,D] residual dropout mask */
} Sub;

typedef struct {
    Sub sub[3];
    float *self_buf, *cross_buf; /* MhaActs storage */
    float *hd;                   /* [N,F] dropout(relu(a W1ᵀ + b1)) */
} LayerActs;

typedef struct {             /* decoding caches of one decoder layer (backend memory) */
    float *st[2];            /* the self-attention's decoding state (attention_state_floats:
                              * a KV cache or linear's running sums), ping-pong for reorder */
    float *ck, *cv;          /* cross-attention keys/values [R,NH,S,HS] */
} DecCache;

typedef struct {             /* decoding buffers' sizes in floats (grow-only) */
    size_t R;                /* rows R = B·K: the [R,·] buffers */
    size_t RS, BS;           /* R·S (cross-attention keys and values, per D) and B·S */
    size_t save, state, work; /* the most any step's attention saves (attention_save_floats),
                              * attention_state_floats, the workspace */
    size_t Tc;               /* cached steps (the position table's length) */
} DecodeCaps;

struct TfModel {
    const Backend *be;
    ModelSpec spec;         /* transformer_create's (its kinds, options, dropout, tying) */
    AttentionKind dec_self; /* the decoder self-attention's kind (spec_dec_self_attention) */
    int D, NH, HS, F, V, Le, Ld, pre;
    int w2t; /* this pass multiplies by the layers' W2T copies (Backend.matmul_transb_slower) */
    Param emb_src, emb_tgt, W_out, b_out; /* tied: emb_src serves all three */
    float *W_outT;                        /* the output layer's weight transposed [D,V]: decoding
                                           * (decode_reserve; refreshed by decode_begin) */
    Norm ln_enc, ln_dec;                  /* pre-LN: after each stack */
    TfLayer enc[TF_MAXL], dec[TF_MAXL];
    /* the first float of each block in the flat parameter buffers (GradReady, ops/params.h):
     * encoder layer l, decoder layer l, the encoder's final layer norm (pre-LN), the target
     * embedding (untied), the decoder's final layer norm (pre-LN), the output layer */
    size_t off_enc[TF_MAXL], off_dec[TF_MAXL], off_ln_enc, off_emb_tgt, off_ln_dec, off_out;
    GradReady grad_ready; /* transformer_set_grad_ready */

    /* capacity and buffers (backend memory unless h_) */
    BatchBounds cap;
    int capPos;
    Acts acts;               /* the training activations (transformer_reserve) */
    size_t attn_bytes;       /* of acts: the attentions' saves and their workspace */
    int B, S, T;                                          /* the current batch */
    int NR; /* target positions that are not padding: the output layer's rows (row_ids) */
    /* the current batch's arrays, batch-major, in backend memory (model.c uploads them) */
    const int *d_src, *d_slen;                      /* [B,S], [B] */
    const int *d_tin, *d_tout, *d_tlen;             /* [B,T], [B,T], [B] */
    const int *d_rows, *d_rows_tout; /* [NR]: b·T + t of each such position, and its target */
    float *pe;                                            /* [capPos, D] */
    float *src_emb, *src_x, *src_mask;                    /* [NS,D] */
    float *tgt_emb, *tgt_x, *tgt_mask;                    /* [NT,D] */
    LayerActs ea[TF_MAXL], da[TF_MAXL];
    float *enc_out, *enc_mean, *enc_rstd;                 /* [NS,D], [NS] */
    float *dec_y, *dec_mean, *dec_rstd;                   /* [NT,D], [NT] */
    OutputLoss out;            /* the output layer's blocks of rows (model/output_loss.h) */
    int loss_rows;                                        /* transformer_set_loss_rows */
    MhaScratch scr;                                       /* [max(NS,NT), D] each */
    float *f, *g1, *g2, *g3, *gA, *gB;                    /* [max(NS,NT), D] */
    float *fh1, *fh2;                                     /* [max(NS,NT), F] */
    float *d_enc_out;                                     /* [NS,D] */

    /* decoding (allocated by decode_begin, grow-only) */
    Acts dacts;              /* the decoding state (tf_decode_reserve) */
    DecodeCaps dcap; /* each decoding buffer's size (decode_grow) */
    int dcap_stale;  /* dcap grew in transformer_decode_plan: decode_begin reallocates */
    int R, K, Sd, Tc, cur;        /* rows, beam, source length, cache capacity, ping-pong side */
    DecCache dc[TF_MAXL];
    int *h_rlen, *h_step, *h_parent, *h_parent_bh; /* host [R], [R], [R], [R·NH] */
    int *d_rlen, *d_step, *d_parent_bh, *d_rowmap;
    float *x1, *a1, *q1, *k1, *v1, *o1, *f1, *t1, *t2, *qlast; /* [R,D] */
    float *h1;                    /* [R,F] FFN activation */
    float *lnm, *lnr;             /* [R] layer-norm statistics (not needed afterwards) */
    float *save1;                 /* [R·NH·max(Tc,S)] weights or lse of one attention call */
    float *dwork;                 /* dcap.work floats: the attention ops' workspace */
    float *dlog, *dlogp, *dattn;  /* [R,V], [R,V], [R,S] */
    float *tmp_rows;              /* [B·S·D] cross keys of the B sentences before the beam copy */
};

/* The target embedding table and the output matrix (emb_src when tied). */
const Param *tf_E_tgt(const TfModel *m);
const Param *tf_W_out(const TfModel *m);
/* Grows the sinusoidal position table m->pe to at least n positions (m->capPos); its own
 * allocation, which neither reserve frees. */
void tf_reserve_positions(TfModel *m, int n);
/* Points the model at batch b (backend memory, batch-major, uploaded by model.c: ids, lengths,
 * the non-padding target rows) and sets m->B, S, T, NR. CHECKs b within transformer_reserve
 * ("batch larger than transformer_reserve'd capacity"). */
void tf_use_batch(TfModel *m, const TokenBatch *b);
/* out[N,D] = h[N,F] W2ᵀ of layer L (backend memory; the FFN's second product, bias not
 * added): from L's W2T copy where this pass made one (m->w2t), else from W2 itself. Source:
 * Vaswani et al. 2017 eq. 2. No errors. */
void tf_ffn_w2_product(const TfModel *m, float *out, const float *h, const TfLayer *L, int N);
/* Embeds and encodes the uploaded sources into enc_out; returns the stack's output (the input
 * of the final LN in pre-LN) [B,S,D]; in[] (L entries) receives each layer's input [B,S,D].
 * train != 0: dropout keyed by key. Source: Vaswani et al. 2017 §3.1 (encoder). No errors. */
const float *tf_encoder_forward(TfModel *m, int train, uint64_t key, const float **in);

#endif
