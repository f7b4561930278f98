/* bahdanau.c — additive attention (Bahdanau et al. 2015 eq. 6): e_tj = vᵀ tanh(W s + U h_j),
 * weights by softmax over the visible keys, context Σ_j a_tj h_j (ops: additive_attn_forward,
 * additive_attn_backward with additive_attn_workspace floats of work; the tanh is recomputed
 * in backward). The same score serves Luong's
 * concat (luong.c): v_aᵀ tanh(W_a [h_t; h̄_s]) once W_a is split into W_q on the query and U on
 * the key.
 *
 * Parameters: with projections around it (the Transformer's W_q, W_k) only v_a [NH, HS], one
 * vector per head, A = HS; without (the RNN, own_proj) the kind owns W_q [A, Dq], U [A, Dk] and
 * v [A], A = Dq, and transforms the query (q W_qᵀ, per call) and the keys (h̄ Uᵀ, once per
 * batch). In the RNN, bahdanau's query is the previous state s_{t−1} and c_t feeds the RNN
 * input (§3.1); concat's is the current h_t. */
#include <math.h>
#include <stdio.h>

#include "attention/kinds.h"

void attention_additive_declare(Attention *a, ParamSet *ps, const char *prefix, ParamInit mat) {
    char name[128];
    if (!a->own_proj) {
        snprintf(name, sizeof name, "%s.v_a", prefix);
        params_declare(ps, &a->v_a, name, mat, 2, a->NH, a->HS);
        return;
    }
    a->q_transform = a->k_transform = 1;
    snprintf(name, sizeof name, "%s.W_q", prefix);
    params_declare(ps, &a->W_a, name, mat, 2, a->A, a->Dq);
    snprintf(name, sizeof name, "%s.U", prefix);
    params_declare(ps, &a->U_a, name, mat, 2, a->A, a->Dk);
    snprintf(name, sizeof name, "%s.v", prefix);
    params_declare(ps, &a->v_a, name, mat, 1, a->A, 0);
}

/* qp = q W_qᵀ  [N, A] */
void attention_additive_query_forward(const Attention *a, const Backend *be, float *qp,
                                      const float *q, int N) {
    attention_proj_forward(be, qp, q, &a->W_a, N, a->Dq, a->A, 1);
}

void attention_additive_query_backward(const Attention *a, const Backend *be, float *dq,
                                       const float *dqp, const float *q, int N) {
    attention_proj_backward(be, dq, dqp, q, &a->W_a, N, a->Dq, a->A, 1);
}

/* kp = h̄ Uᵀ  [N, A] */
void attention_additive_keys_forward(const Attention *a, const Backend *be, float *kp,
                                     const float *keys, int N) {
    attention_proj_forward(be, kp, keys, &a->U_a, N, a->Dk, a->A, 1);
}

void attention_additive_keys_backward(const Attention *a, const Backend *be, float *dkeys,
                                      const float *dkp, const float *keys, int N) {
    attention_proj_backward(be, dkeys, dkp, keys, &a->U_a, N, a->Dk, a->A, 1);
}

/* q [B,NH,Tq,A], k [B,NH,Tk,A] (after the transforms), v [B,NH,Tk,HS]; weights saved */
void attention_additive_forward(const Attention *a, const Backend *be, float *o, float *save,
                                const float *q, const float *k, const float *v,
                                const int *key_len, int causal, int B, int Tq, int Tk,
                                float *work) {
    (void)work;
    be->additive_attn_forward(o, save, q, k, a->v_a.w, v, key_len, causal, B, a->NH, Tq, Tk,
                              a->A, a->HS);
}

void attention_additive_backward(const Attention *a, const Backend *be, float *dq, float *dk,
                                 float *dv, const float *dout, const float *o, const float *save,
                                 const float *q, const float *k, const float *v,
                                 const int *key_len, int causal, int B, int Tq, int Tk,
                                 float *work) {
    (void)o, (void)key_len, (void)causal; /* the saved weights carry the mask */
    be->additive_attn_backward(dq, dk, a->v_a.g, dv, dout, q, k, a->v_a.w, v, save, B, a->NH,
                               Tq, Tk, a->A, a->HS, work);
}

size_t attention_additive_workspace(const Attention *a, const Backend *be, int B, int Tq, int Tk) {
    return be->additive_attn_workspace(B, a->NH, Tq, Tk, a->A, a->HS);
}

const OpKind attention_additive_ops[3] = {OP_ADDITIVE_ATTN_FORWARD, OP_ADDITIVE_ATTN_BACKWARD,
                                          OP_ADDITIVE_ATTN_WORKSPACE};

/* w = softmax_s(v_aᵀ tanh(q + k_s)) over len keys of width HS (A) */
void attention_additive_weights_host(float *w, const float *q, const float *k, const float *v_a,
                                     int len, int HS) {
    float e[len > 0 ? len : 1];
    for (int s = 0; s < len; s++) {
        double acc = 0;
        for (int d = 0; d < HS; d++) acc += v_a[d] * tanhf(q[d] + k[(size_t)s * HS + d]);
        e[s] = (float)acc;
    }
    attention_softmax_host(w, e, len);
}

const AttentionOps attention_bahdanau = {.kind = ATTN_BAHDANAU, .rnn_prev_state = 1,
                                         ATTENTION_ADDITIVE_ROW};
