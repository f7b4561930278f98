/* rnn_attention.h — the attention table for the RNN decoder (DESIGN.md §4).
 *
 * Legend: B batch, Tq query positions (1 per decoder step with input feeding), Tk source
 * positions, Hq decoder hidden size, Hk encoder output size (keys = values = encoder states h̄_s).
 *
 * Each kind provides one row: the parameters it owns, forward, backward, workspace size, and
 * supports(), so an unsupported combination is refused with a clear message. Score functions:
 * Luong et al. 2015 eq. 8 (dot: h_tᵀ h̄_s; general: h_tᵀ W_a h̄_s; concat: v_aᵀ tanh(W_a [h_t; h̄_s]))
 * and Bahdanau et al. 2015 eq. 6 (e_tj = vᵀ tanh(W s_{t−1} + U h_j)); weights by softmax over the
 * unpadded source (Luong eq. 7), context c_t = Σ_s a_t(s) h̄_s. Which decoder state is the query
 * (the current h_t for Luong, the previous s_{t−1} for Bahdanau) is the decoder's business
 * (model/rnn.c); here a query is a query.
 * Additive kinds (concat, bahdanau) split the weight into W_q [A,Hq] on the query and U [A,Hk] on
 * the keys; U h̄_s is computed once per batch by begin(), A = Hq.
 */
#ifndef TRAINER_RNN_ATTENTION_H
#define TRAINER_RNN_ATTENTION_H

#include "attention/attention.h"
#include "model/params.h"
#include "ops/ops.h"

typedef struct {
    AttentionKind kind;
    int Hq, Hk, A;     /* A: additive attention size (0 for the Luong dot/general kinds) */
    Param W_a;         /* general: [Hq, Hk]; additive: W_q [A, Hq] */
    Param U_a, v_a;    /* additive: [A, Hk], [A] */
    float *kp, *dkp;   /* additive: U h̄_s [B,Tk,A] and its gradient (backend memory, sized and
                        * owned by the model; dkp zeroed by the model before a backward pass) */
} RnnAttention;

typedef struct {
    AttentionKind kind;
    /* 1 if this kind can serve as the RNN's attention with these sizes; else 0 and a reason. */
    int (*supports)(int Hq, int Hk, char *why, size_t why_len);
    /* Declares the parameters it owns under prefix (e.g. "dec.attn"). */
    void (*declare)(RnnAttention *a, ParamSet *ps, const char *prefix);
    /* Once per batch, after the encoder: per-sentence work on keys[B,Tk,Hk] (additive: kp = U h̄).
     * NULL for kinds that need none. */
    void (*begin)(const RnnAttention *a, const Backend *be, const float *keys, int B, int Tk);
    /* ctx[B,Tq,Hk] = Σ_s weights[B,Tq,Tk] · keys[B,Tk,Hk]; q[B,Tq,Hq] the decoder states;
     * qsave[B,Tq,max(Hk,A)]: saved activation (the projected query); key_len[B] (backend
     * memory). */
    void (*forward)(const RnnAttention *a, const Backend *be, float *ctx, float *weights,
                    float *qsave, const float *q, const float *keys, const int *key_len, int B,
                    int Tq, int Tk);
    /* Accumulates dq[B,Tq,Hq], dkeys[B,Tk,Hk] and parameter gradients; work: workspace floats. */
    void (*backward)(const RnnAttention *a, const Backend *be, float *dq, float *dkeys,
                     const float *dctx, const float *q, const float *qsave, const float *keys,
                     const float *weights, int B, int Tq, int Tk, float *work);
    /* Once per batch, after every backward call: turns the per-sentence gradients (dkp) into
     * dkeys[B,Tk,Hk] and parameter gradients. NULL for kinds that need none. */
    void (*end_backward)(const RnnAttention *a, const Backend *be, float *dkeys,
                         const float *keys, int B, int Tk);
    /* Floats of workspace backward needs (for Tq queries against Tk keys). */
    size_t (*workspace)(const Backend *be, int B, int Tq, int Tk, int Hq, int Hk);
} RnnAttentionOps;

/* The row for kind, or NULL if the RNN has no implementation of that kind (error in why). */
const RnnAttentionOps *rnn_attention_ops(AttentionKind kind, int Hq, int Hk, char *why,
                                         size_t why_len);

#endif
