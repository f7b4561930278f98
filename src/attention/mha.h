/* attention/mha.h — multi-head attention for the Transformer (Vaswani et al. 2017 §3.2.2), with the kind
 * of attention switchable per slot (encoder self, decoder self, cross) from the config
 * (docs/design.md §4).
 *
 * Legend: B batch, Tq query positions, Tk key positions, D model width, NH heads, HS = D / NH
 * head size. Activations are batch-major: xq [B,Tq,D], xkv [B,Tk,D]; heads [B,NH,T,HS].
 *
 *   q = xq W_qᵀ + b_q,  k = xkv W_kᵀ + b_k,  v = xkv W_vᵀ + b_v        (each [B,T,D] → heads)
 *   o_h = attend(q_h, k_h, v_h)  per head h, keys masked by key_len and causality
 *   out = concat_h(o_h) W_oᵀ + b_o                                     (eq. MultiHead)
 *
 * attend() is the kind's row of the attention table (attention.h; one file per kind, whose
 * header gives its formula and source; all of them in docs/attention.md, "The kinds"): the
 * softmax of scaled dot products (sdp, flash), Luong's and Bahdanau's scores (luong_general
 * projects q by W_a [D,D] first; the additive kinds keep one v_a [NH,HS]; luong_local's window
 * position p_t is shared by the heads), the kinds linear in the length, and the others. A kind
 * without a causal form (the row's causal_ok) is refused in the decoder self-attention.

 * Masking: key s is visible to query t iff s < key_len[b] and, causal, s <= t + Tk − Tq. A
 * query with no visible key gets a zero output. No kind lets a weight reach a masked key.
 *
 * The RNN decoder uses the same table (RnnAttn below, Luong et al. 2015 §3.1): queries are
 * decoder states, keys and values the encoder states. Luong's and Bahdanau's kinds bring their
 * own transforms (W_a; W, U); the multi-head kinds get the query and key projections of
 * eq. MultiHead, q' = h_t W_q and k' = h̄ W_k, split into heads, with the encoder states
 * themselves, split the same way, as values (h̃_t = tanh(W_c [c_t; h_t]) takes W_o's place).
 *
 * Memory: every tensor here is backend memory unless a comment says host. Sizes are floats.
 * Errors: none of these functions returns a Status; kinds and sizes were accepted by
 * attention_supports before (programmer's contract). mha_attend CHECKs its workspace (below).
 */
#ifndef TRAINER_MHA_H
#define TRAINER_MHA_H

#include "attention/attention.h"

typedef struct {
    Attention at;                                 /* the kind and the parameters it owns */
    int D, NH, HS, causal;
    Param W_q, b_q, W_k, b_k, W_v, b_v, W_o, b_o; /* [D,D] and [D] */
} Mha;

/* Saved activations of one forward call (backend memory, sized by mha_acts_alloc). */
typedef struct {
    float *qm;   /* [B,Tq,D] q before splitting (luong_general: before W_a; kept for dW_a) */
    float *q, *k, *v; /* heads [B,NH,Tq,HS], [B,NH,Tk,HS], [B,NH,Tk,HS] */
    float *o;    /* heads [B,NH,Tq,HS] */
    float *om;   /* [B,Tq,D] merged heads (input of W_o) */
    float *save; /* what the kind saves: weights [B,NH,Tq,Tk], lse [B,NH,Tq] or nothing */
} MhaActs;

/* Scratch shared by every Mha of a model (backend memory): [B·max(Tq,Tk), D] buffers, and the
 * ops' workspace (work_cap floats, at least mha_workspace_floats of every call). */
typedef struct {
    float *m1, *m2, *m3;      /* merged-layout temporaries */
    float *h1, *h2, *h3, *h4; /* head-layout temporaries */
    float *work;
    size_t work_cap;
} MhaScratch;

/* The mask of one call: key_len [B] in backend memory (NULL = every key visible) and the causal
 * flag. */
typedef struct {
    const int *key_len;
    int causal;
} MhaMask;

/* Declares the parameters of a as prefix.W_q, ... (weights [D,D] INIT_XAVIER, biases [D] zero),
 * then the kind's own (attention_declare with opt, the kinds' options or NULL, whose CHECK
 * applies: attention_supports must have accepted kind for the slot). NH | D. Source: Vaswani et
 * al. 2017 §3.2.2. */
void mha_declare(Mha *a, ParamSet *ps, const char *prefix, AttentionKind kind, int D, int NH,
                 int causal, const AttentionOptions *opt);
/* Floats of op workspace a call with B, Tq, Tk needs (forward and backward; depends on the
 * thread count: size it after setting the threads). */
size_t mha_workspace_floats(const Mha *a, const Backend *be, int B, int Tq, int Tk);
/* Floats of saved activations (every pointer of MhaActs) for any call with B·Tq <= NQ,
 * B·Tk <= NK and Tk <= Tk_max. */
size_t mha_acts_floats(const Mha *a, long NQ, long NK, int Tk_max);
/* Carves acts for a call with B, Tq, Tk out of buf (mha_acts_floats floats of a capacity that
 * covers the call, backend memory). The same call shape gives the same pointers. */
void mha_acts_carve(const Mha *a, MhaActs *acts, float *buf, int B, int Tq, int Tk);

/* out[B,Tq,D] = MultiHead(xq [B,Tq,D], xkv [B,Tk,D]) (Vaswani et al. 2017 §3.2.2, the kind's
 * attend per head). Overwrites out and acts; scr->work must hold mha_workspace_floats. No
 * errors. */
void mha_forward(const Mha *a, const Backend *be, float *out, MhaActs *acts, const float *xq,
                 const float *xkv, const MhaMask *mask, int B, int Tq, int Tk,
                 MhaScratch *scr);
/* Backward of mha_forward: accumulates dxkv[B,Tk,D] and the parameter gradients, and writes
 * dxq[B,Tq,D] = dxq_keep · dxq + its gradient (dxq_keep 1: accumulate; 0: overwrite, dxq's
 * old contents unread). dxkv may equal dxq for self-attention (xq == xkv): dxq is written
 * first. dout [B,Tq,D]. No errors. */
void mha_backward(const Mha *a, const Backend *be, float *dxq, float dxq_keep, float *dxkv,
                  const float *dout, const MhaActs *acts, const float *xq, const float *xkv,
                  const MhaMask *mask, int B, int Tq, int Tk, MhaScratch *scr);

/* The pieces of mha_forward, for decoding one position at a time (Tq = 1) against cached keys:
 * q heads [B,NH,Tq,HS] from xq [B,Tq,D] (qm [B,Tq,D] receives xq W_qᵀ + b_q; the kind's query
 * transform (luong_general: W_a) then writes tmp [B,Tq,D]); k, v heads [B,NH,Tk,HS] from xkv
 * (tmp [B,Tk,D]); and out [B,Tq,D] = merge(o) W_oᵀ + b_o (om [B,Tq,D] receives merge(o)).
 * No errors. */
void mha_project_q(const Mha *a, const Backend *be, float *q, float *qm, float *tmp,
                   const float *xq, int B, int Tq);
void mha_project_kv(const Mha *a, const Backend *be, float *k, float *v, float *tmp,
                    const float *xkv, int B, int Tk);
void mha_project_out(const Mha *a, const Backend *be, float *out, float *om, const float *o,
                     int B, int Tq);

/* The core attention alone on heads (no projections): o[B,NH,Tq,HS] from q, k, v heads, saving
 * into save (see MhaActs), for decoding, where the projections are done by the caller and the
 * keys live in a cache. q after the kind's query transform; work: work_cap floats of backend
 * memory; CHECKs work_cap >= mha_workspace_floats ("attention workspace too small: reserve
 * after setting the thread count"). */
void mha_attend(const Mha *a, const Backend *be, float *o, float *save, const float *q,
                const float *k, const float *v, const MhaMask *mask, int B, int Tq, int Tk,
                float *work, size_t work_cap);

/* Host-side weights of one query per row, averaged over heads, for attention maps: w[R,Tk]
 * from q heads [R,NH,HS] (after the kind's query transform) and k heads [R,NH,Tk,HS] given on
 * the host, key_len[R] on the host, v_a [NH,HS] on the host for the additive kinds (else
 * NULL). Each kind's implied weights (AttentionOps.weights_host; each sums to 1 over the
 * visible keys). No errors; CHECKs the kind has weights_host (linformer has none:
 * model_has_attention is 0 for it). */
void mha_weights_host(const Attention *a, float *w, const float *q, const float *k,
                      const float *v_a, const int *key_len, int R, int Tk);

/* ---- the RNN decoder's attention (no W_v, W_o around it) ----
 * q [B,Tq,Dq] decoder states, enc [B,Tk,Dk] encoder states, ctx [B,Tq,Dk].
 * Heads: NH = model.heads for the multi-head kinds (the rows' multi_head: sdp, flash, ...),
 * else 1. The multi-head kinds: q' = q W_q,
 * k' = enc W_k, values = enc (Vaswani et al. 2017 §3.2.2, W^Q and W^K; the kind's score on q',
 * k' as in the Transformer).
 * Per batch, rnn_attn_begin prepares the keys (the additive U h̄, or the multi-head kinds' key
 * and value heads) in kbuf, then, for a kind with a summary of its keys (attention.h; linformer:
 * E K, F V), that summary, which every step reads instead of the keys, and zeroes dkbuf; after
 * every backward call of the batch, rnn_attn_end_backward turns dkbuf (the summary's summed
 * gradient, then the keys' and values') into denc and parameter gradients. */
typedef struct {
    Attention at;
    Param W_q, W_k;      /* the multi-head kinds: W_q [Dq, Dk], W_k [Dk, Dk]; else unused */
    int proj;            /* 1 for the multi-head kinds (W_q, W_k declared) */
    float *kbuf, *dkbuf; /* [B·Tk·(A, or 2·Dk: key heads, then value heads) + summary] backend
                          * memory (rnn_attn_kbuf_floats), or NULL */
} RnnAttn;

/* Declares the kind's parameters under prefix (INIT_UNIFORM, as the rest of the RNN; opt: the
 * kinds' options, NULL for defaults), then, for a multi-head kind, prefix.W_q and prefix.W_k.
 * Dq decoder width, Dk encoder output width; heads used by the multi-head kinds only. kind !=
 * none, accepted by attention_supports for ATTN_SLOT_RNN (else attention_declare's CHECK).
 * Source: Luong et al. 2015 §3.1 / Bahdanau et al. 2015 §3.1 (the query), the kind's equation
 * for the score, Vaswani et al. 2017 §3.2.2 (the multi-head kinds' projections). */
void rnn_attn_declare(RnnAttn *r, ParamSet *ps, const char *prefix, AttentionKind kind, int Dq,
                      int Dk, int heads, const AttentionOptions *opt);
/* Sizes (no errors): floats of kbuf (and of dkbuf) for NK = B·Tk key rows of B sentences (0: not
 * needed); a buffer sized for NK, B serves every call with B'·Tk' <= NK and B' <= B. */
size_t rnn_attn_kbuf_floats(const RnnAttn *r, long NK, int B);
/* Floats of forward's save for NQ = B·Tq queries against Tk keys. */
size_t rnn_attn_save_floats(const RnnAttn *r, long NQ, int Tk);
/* Floats of qsave per query row (the query after the kind's transform). */
int rnn_attn_qsave_width(const RnnAttn *r);
/* Floats of work for forward and backward with B, Tq, Tk. */
size_t rnn_attn_workspace(const RnnAttn *r, const Backend *be, int B, int Tq, int Tk);
/* Once per batch, before the first forward: kbuf = the keys the kind attends over, from
 * enc [B,Tk,Dk] (additive own_proj: enc Uᵀ [B,Tk,A]; multi-head: the heads [B,NH,Tk,HS] of
 * enc W_k, then those of enc, the values), and the kind's summary of them (key_len [B], backend
 * memory); zeroes dkbuf. Nothing when kbuf is not needed. No errors. */
void rnn_attn_begin(const RnnAttn *r, const Backend *be, const float *enc, const int *key_len,
                    int B, int Tk);
/* ctx[B,Tq,Dk] and save from q[B,Tq,Dq]; qsave [B,Tq,qsave width] keeps the transformed query;
 * key_len [B] backend memory; work: rnn_attn_workspace floats. Luong et al. 2015 eq. 7 (weights)
 * with the kind's score; c_t = Σ_s a_t(s) h̄_s. No errors. */
void rnn_attn_forward(const RnnAttn *r, const Backend *be, float *ctx, float *save, float *qsave,
                      const float *q, const float *enc, const int *key_len, int B, int Tq,
                      int Tk, float *work);
/* Accumulates dq[B,Tq,Dq] and denc[B,Tk,Dk] (directly, or through dkbuf at end_backward) and
 * the parameter gradients, from dctx [B,Tq,Dk]; ctx, save, qsave as forward left them.
 * No errors. */
void rnn_attn_backward(const RnnAttn *r, const Backend *be, float *dq, float *denc,
                       const float *dctx, const float *ctx, const float *save, const float *q,
                       const float *qsave, const float *enc, const int *key_len, int B, int Tq,
                       int Tk, float *work);
/* Once per batch, after the last backward: denc [B,Tk,Dk] += dkbuf carried back through the
 * kind's summary (key_len [B] as rnn_attn_begin's) and the key transform (additive: dU += dkpᵀ
 * enc, denc += dkp U; multi-head: the merged value heads' gradient, and dk' the merged key
 * heads': dW_k += encᵀ dk', denc += dk' W_kᵀ). Leaves dkbuf spent. No errors. */
void rnn_attn_end_backward(const RnnAttn *r, const Backend *be, float *denc, const float *enc,
                           const int *key_len, int B, int Tk);
/* The attention map of one decoding step (Tq = 1), averaged over heads: w [B,Tk] (backend
 * memory) from qsave [B, qsave width] as rnn_attn_forward left it, the keys as rnn_attn_begin
 * left them (enc [B,Tk,Dk]) and key_len [B]; computed on the host by the kind's weights_host
 * (mha_weights_host; it downloads the inputs into host buffers it allocates — decoding only, not
 * the training step — and uploads w). No errors. */
void rnn_attn_weights(const RnnAttn *r, const Backend *be, float *w, const float *qsave,
                      const float *enc, const int *key_len, int B, int Tk);

#endif
