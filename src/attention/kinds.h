/* attention/kinds.h — private to src/attention: the rows of the table (one file per kind) and
 * the pieces two rows share (the dot-product score of sdp.c serves luong_dot and luong_general;
 * the additive score of bahdanau.c serves luong_concat; linear.c's machinery serves linear and
 * taylor; attention.c's projection serves bahdanau, luong and mha.c). Shapes, memory and
 * sources as in attention.h and the AttentionOps fields these functions fill; none has errors
 * of its own. */
#ifndef TRAINER_ATTENTION_KINDS_H
#define TRAINER_ATTENTION_KINDS_H

#include "attention/attention.h"

#define ATTENTION_ROW_EXTERN_(E, name) extern const AttentionOps attention_##name;
ATTENTION_KINDS(ATTENTION_ROW_EXTERN_)
#undef ATTENTION_ROW_EXTERN_

/* attention.c: the projection y[N, Dout] = x[N, Din] W of a kind's own weight W, stored
 * [Din, Dout] (wt = 0: y = x W; luong_general's W_a, the RNN's multi-head W_q and W_k in mha.c)
 * or [Dout, Din] (wt = 1: y = x Wᵀ; the additive score's W_q and U), and its backward,
 * accumulating dW and dx[N, Din]. */
void attention_proj_forward(const Backend *be, float *y, const float *x, const Param *W, int N,
                            int Din, int Dout, int wt);
void attention_proj_backward(const Backend *be, float *dx, const float *dy, const float *x,
                             const Param *W, int N, int Din, int Dout, int wt);

/* luong.c: the general score's query transform q' = q W_a (W_a [Dq, Dk]; Luong et al. 2015
 * eq. 8) and its backward (dW_a += qᵀ dq', dq += dq' W_aᵀ); luong_local reuses them. */
void attention_general_query_forward(const Attention *a, const Backend *be, float *qp,
                                     const float *q, int N);
void attention_general_query_backward(const Attention *a, const Backend *be, float *dq,
                                      const float *dqp, const float *q, int N);

/* sdp.c: softmax(scale · q kᵀ) v with the weights [B, NH, Tq, Tk] saved (attn_forward /
 * attn_backward); scale 1/√HS when the row is scaled (Vaswani et al. 2017 eq. 1), else 1 (Luong
 * et al. 2015 eq. 8 dot / general). */
void attention_dot_forward(const Attention *a, const Backend *be, float *o, float *save,
                           const float *q, const float *k, const float *v, const int *key_len,
                           int causal, int B, int Tq, int Tk, float *work);
void attention_dot_backward(const Attention *a, const Backend *be, float *dq, float *dk,
                            float *dv, const float *dout, const float *o, const float *save,
                            const float *q, const float *k, const float *v, const int *key_len,
                            int causal, int B, int Tq, int Tk, float *work);
size_t attention_dot_workspace(const Attention *a, const Backend *be, int B, int Tq, int Tk);
extern const OpKind attention_dot_ops[3]; /* sdp, luong: attn_forward, _backward, _workspace */
/* w[s] = softmax_s(scale · q·k_s) over len keys; w [len], q [HS], k [len, HS], all host. */
void attention_dot_weights_host(float *w, const float *q, const float *k, int len, int HS,
                                float scale);

/* bahdanau.c: the additive score vᵀ tanh(q' + k') (additive_attn_*; Bahdanau et al. 2015 eq. 6,
 * Luong et al. 2015 eq. 8 concat), its parameters and, for own_proj, the query and key
 * projections W_q [A, Dq], U [A, Dk] (q' [N, A] = q W_qᵀ, k' [N, A] = keys Uᵀ). */
void attention_additive_declare(Attention *a, ParamSet *ps, const char *prefix, ParamInit mat);
void attention_additive_query_forward(const Attention *a, const Backend *be, float *qp,
                                      const float *q, int N);
void attention_additive_query_backward(const Attention *a, const Backend *be, float *dq,
                                       const float *dqp, const float *q, int N);
void attention_additive_keys_forward(const Attention *a, const Backend *be, float *kp,
                                     const float *keys, int N);
void attention_additive_keys_backward(const Attention *a, const Backend *be, float *dkeys,
                                      const float *dkp, const float *keys, int N);
void attention_additive_forward(const Attention *a, const Backend *be, float *o, float *save,
                                const float *q, const float *k, const float *v,
                                const int *key_len, int causal, int B, int Tq, int Tk,
                                float *work);
void attention_additive_backward(const Attention *a, const Backend *be, float *dq, float *dk,
                                 float *dv, const float *dout, const float *o, const float *save,
                                 const float *q, const float *k, const float *v,
                                 const int *key_len, int causal, int B, int Tq, int Tk,
                                 float *work);
/* Floats of work of one call: additive_attn_workspace (the backward's; the forward needs none). */
size_t attention_additive_workspace(const Attention *a, const Backend *be, int B, int Tq, int Tk);
extern const OpKind attention_additive_ops[3]; /* bahdanau, luong_concat */
/* The fields of a row that scores additively (bahdanau, luong_concat differ only in their kind
 * and place in the RNN). */
#define ATTENTION_ADDITIVE_ROW                                                                   \
    .causal_ok = 1, .save = ATTN_SAVE_WEIGHTS, .ops = attention_additive_ops,                   \
    .nops = 3, .declare = attention_additive_declare,                                           \
    .workspace = attention_additive_workspace,                                                  \
    .query_forward = attention_additive_query_forward,                                          \
    .query_backward = attention_additive_query_backward,                                        \
    .keys_forward = attention_additive_keys_forward,                                            \
    .keys_backward = attention_additive_keys_backward, .forward = attention_additive_forward,    \
    .backward = attention_additive_backward, .weights_host = attention_additive_weights_host
/* w[s] = softmax_s(v_aᵀ tanh(q + k_s)) over len keys (host arrays, as weights_host). */
void attention_additive_weights_host(float *w, const float *q, const float *k, const float *v_a,
                                     int len, int HS);

/* linear.c: linear attention over the features the row's linear_features name (q and k through
 * φ = elu + 1: linear; [1; x̂] through the identity: taylor), one function per field of
 * ATTENTION_LINEAR_ROW; workspace, summary and state layouts in linear.c's header. */
void attention_linear_forward(const Attention *a, const Backend *be, float *o, float *save,
                              const float *q, const float *k, const float *v, const int *key_len,
                              int causal, int B, int Tq, int Tk, float *work);
void attention_linear_backward(const Attention *a, const Backend *be, float *dq, float *dk,
                               float *dv, const float *dout, const float *o, const float *save,
                               const float *q, const float *k, const float *v,
                               const int *key_len, int causal, int B, int Tq, int Tk,
                               float *work);
size_t attention_linear_workspace(const Attention *a, const Backend *be, int B, int Tq, int Tk);
size_t attention_linear_summary_floats(const Attention *a, int B, int Tk);
void attention_linear_summary_forward(const Attention *a, const Backend *be, float *sum,
                                      const float *k, const float *v, const int *key_len, int B,
                                      int Tk);
void attention_linear_forward_summary(const Attention *a, const Backend *be, float *o,
                                      const float *q, const float *sum, int B, int Tq,
                                      float *work);
void attention_linear_backward_summary(const Attention *a, const Backend *be, float *dq,
                                       float *dsum, const float *dout, const float *q,
                                       const float *sum, int B, int Tq, float *work);
void attention_linear_summary_backward(const Attention *a, const Backend *be, float *dk,
                                       float *dv, float *dsum, const float *sum, const float *k,
                                       const float *v, const int *key_len, int B, int Tk);
size_t attention_linear_state_floats(const Attention *a, int R, int Tcap);
void attention_linear_decode_step(const Attention *a, const Backend *be, float *o, float *save,
                                  float *state, const float *q, const float *k, const float *v,
                                  const int *step_len, int R, int t, int Tcap, float *work);
void attention_linear_decode_reorder(const Attention *a, const Backend *be, float *dst,
                                     const float *src, const int *parent, const int *parent_bh,
                                     int R, int t, int Tcap);
/* The fields of a linear-attention row (linear, taylor differ in their kind, linear_features,
 * ops and weights_host). */
#define ATTENTION_LINEAR_ROW                                                                     \
    .causal_ok = 1, .multi_head = 1, .save = ATTN_SAVE_NONE,                                    \
    .forward = attention_linear_forward, .backward = attention_linear_backward,                 \
    .workspace = attention_linear_workspace, .state_floats = attention_linear_state_floats,     \
    .decode_step = attention_linear_decode_step,                                                \
    .decode_reorder = attention_linear_decode_reorder,                                          \
    .summary_floats = attention_linear_summary_floats,                                          \
    .summary_forward = attention_linear_summary_forward,                                        \
    .forward_summary = attention_linear_forward_summary,                                        \
    .backward_summary = attention_linear_backward_summary,                                      \
    .summary_backward = attention_linear_summary_backward

/* attention.c: w[s] = softmax(e)[s] over len scores (double sum), w, e [len] on the host; w may
 * not alias e. */
void attention_softmax_host(float *w, const float *e, int len);

#endif
