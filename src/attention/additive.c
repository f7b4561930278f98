/* additive.c — additive attention for the RNN decoder: Bahdanau et al. 2015 eq. 6,
 * e_tj = vᵀ tanh(W s_{t−1} + U h_j), and Luong et al. 2015 eq. 8 "concat",
 * score(h_t, h̄_s) = v_aᵀ tanh(W_a [h_t; h̄_s]) — the same function once W_a is split into the
 * block W_q acting on the query and the block U acting on the source state. The two kinds differ
 * in which decoder state asks (model/rnn.c), not here.
 * U h̄_s is computed once per batch (begin), the query projection W_q q once per query; the
 * backend's additive_attn op does the rest (ops.h). Parameters: W_q [A,Hq], U [A,Hk], v [A];
 * A = Hq. */
#include <stdio.h>

#include "attention/rnn_attention.h"

static int additive_supports(int Hq, int Hk, char *why, size_t n) {
    (void)Hq, (void)Hk, (void)why, (void)n;
    return 1;
}

static void additive_declare(RnnAttention *a, ParamSet *ps, const char *prefix) {
    char name[96];
    a->A = a->Hq;
    snprintf(name, sizeof name, "%s.W_q", prefix);
    params_declare(ps, &a->W_a, name, INIT_UNIFORM, 2, a->A, a->Hq);
    snprintf(name, sizeof name, "%s.U", prefix);
    params_declare(ps, &a->U_a, name, INIT_UNIFORM, 2, a->A, a->Hk);
    snprintf(name, sizeof name, "%s.v", prefix);
    params_declare(ps, &a->v_a, name, INIT_UNIFORM, 1, a->A, 0);
}

static void additive_begin(const RnnAttention *a, const Backend *be, const float *keys, int B,
                           int Tk) { /* kp = h̄ Uᵀ   [B·Tk, A] */
    be->matmul(a->kp, keys, a->U_a.w, B * Tk, a->A, a->Hk, 0, 1, 1.0f, 0.0f);
}

static void additive_forward(const RnnAttention *a, const Backend *be, float *ctx,
                             float *weights, float *qsave, const float *q, const float *keys,
                             const int *key_len, int B, int Tq, int Tk) {
    /* qp = q W_qᵀ   [B·Tq, A] */
    be->matmul(qsave, q, a->W_a.w, B * Tq, a->A, a->Hq, 0, 1, 1.0f, 0.0f);
    be->additive_attn_forward(ctx, weights, qsave, a->kp, a->v_a.w, keys, key_len, 0, B, 1, Tq,
                              Tk, a->A, a->Hk);
}

static void additive_backward(const RnnAttention *a, const Backend *be, float *dq, float *dkeys,
                              const float *dctx, const float *q, const float *qsave,
                              const float *keys, const float *weights, int B, int Tq, int Tk,
                              float *work) {
    float *dqp = work; /* [B·Tq, A] */
    be->zero(dqp, sizeof(float) * (size_t)B * Tq * a->A);
    be->additive_attn_backward(dqp, a->dkp, a->v_a.g, dkeys, dctx, qsave, a->kp, a->v_a.w, keys,
                               weights, B, 1, Tq, Tk, a->A, a->Hk);
    /* qp = q W_qᵀ  →  dW_q += dqpᵀ q,  dq += dqp W_q */
    be->matmul(a->W_a.g, dqp, q, a->A, a->Hq, B * Tq, 1, 0, 1.0f, 1.0f);
    be->matmul(dq, dqp, a->W_a.w, B * Tq, a->Hq, a->A, 0, 0, 1.0f, 1.0f);
}

static void additive_end_backward(const RnnAttention *a, const Backend *be, float *dkeys,
                                  const float *keys, int B, int Tk) {
    /* kp = h̄ Uᵀ  →  dU += dkpᵀ h̄,  dh̄ += dkp U */
    be->matmul(a->U_a.g, a->dkp, keys, a->A, a->Hk, B * Tk, 1, 0, 1.0f, 1.0f);
    be->matmul(dkeys, a->dkp, a->U_a.w, B * Tk, a->Hk, a->A, 0, 0, 1.0f, 1.0f);
}

static size_t additive_workspace(const Backend *be, int B, int Tq, int Tk, int Hq, int Hk) {
    (void)be, (void)Tk, (void)Hk;
    return (size_t)B * Tq * Hq; /* A = Hq */
}

const RnnAttentionOps rnn_attention_luong_concat = {
    .kind = ATTN_LUONG_CONCAT, .supports = additive_supports, .declare = additive_declare,
    .begin = additive_begin, .forward = additive_forward, .backward = additive_backward,
    .end_backward = additive_end_backward, .workspace = additive_workspace};
const RnnAttentionOps rnn_attention_bahdanau = {
    .kind = ATTN_BAHDANAU, .supports = additive_supports, .declare = additive_declare,
    .begin = additive_begin, .forward = additive_forward, .backward = additive_backward,
    .end_backward = additive_end_backward, .workspace = additive_workspace};
