/* luong.c — Luong et al. 2015 attention for the RNN decoder: the dot and general scores of eq. 8
 * on the current decoder state h_t, weights by eq. 7, context c_t = Σ_s a_t(s) h̄_s.
 * general: score(h_t, h̄_s) = h_tᵀ W_a h̄_s = (h_t W_a) · h̄_s — the query is projected once per
 * step (B·Hq·Hk) instead of projecting every source state. */
#include <stdio.h>

#include "attention/rnn_attention.h"

static int luong_dot_supports(int Hq, int Hk, char *why, size_t n) {
    if (Hq == Hk) return 1;
    snprintf(why, n, "luong_dot needs the decoder hidden size (%d) to equal the encoder output "
             "size (%d); use luong_general", Hq, Hk);
    return 0;
}
static int luong_general_supports(int Hq, int Hk, char *why, size_t n) {
    (void)Hq, (void)Hk, (void)why, (void)n;
    return 1;
}
static void luong_dot_declare(RnnAttention *a, ParamSet *ps, const char *prefix) {
    (void)a, (void)ps, (void)prefix;
}
static void luong_general_declare(RnnAttention *a, ParamSet *ps, const char *prefix) {
    char name[96];
    snprintf(name, sizeof name, "%s.W_a", prefix);
    params_declare(ps, &a->W_a, name, INIT_UNIFORM, 2, a->Hq, a->Hk);
}

static void luong_forward(const RnnAttention *a, const Backend *be, float *ctx, float *weights,
                          float *qsave, const float *q, const float *keys, const int *key_len,
                          int B, int Tq, int Tk) {
    if (a->kind == ATTN_LUONG_GENERAL) /* q' = h_t W_a   [B·Tq, Hk] */
        be->matmul(qsave, q, a->W_a.w, B * Tq, a->Hk, a->Hq, 0, 0, 1.0f, 0.0f);
    else
        be->copy(qsave, q, sizeof(float) * (size_t)B * Tq * a->Hk);
    /* a_t = softmax_s(q'·h̄_s) over s < len; c_t = Σ a_t(s) h̄_s */
    be->attn_forward(ctx, weights, qsave, keys, keys, key_len, 1.0f, 0, B, 1, Tq, Tk, a->Hk,
                     a->Hk);
}

static void luong_backward(const RnnAttention *a, const Backend *be, float *dq, float *dkeys,
                           const float *dctx, const float *q, const float *qsave,
                           const float *keys, const float *weights, int B, int Tq, int Tk,
                           float *work) {
    float *dqsave = work; /* [B·Tq, Hk], then the op's workspace */
    be->zero(dqsave, sizeof(float) * (size_t)B * Tq * a->Hk);
    be->attn_backward(dqsave, dkeys, dkeys, dctx, qsave, keys, keys, weights, 1.0f, B, 1, Tq, Tk,
                      a->Hk, a->Hk, work + (size_t)B * Tq * a->Hk);
    if (a->kind == ATTN_LUONG_GENERAL) {
        /* q' = h W_a  →  dW_a += hᵀ dq',  dh += dq' W_aᵀ */
        be->matmul(a->W_a.g, q, dqsave, a->Hq, a->Hk, B * Tq, 1, 0, 1.0f, 1.0f);
        be->matmul(dq, dqsave, a->W_a.w, B * Tq, a->Hq, a->Hk, 0, 1, 1.0f, 1.0f);
    } else {
        be->axpy(dq, 1.0f, dqsave, (size_t)B * Tq * a->Hk);
    }
}

static size_t luong_workspace(const Backend *be, int B, int Tq, int Tk, int Hq, int Hk) {
    (void)Hq;
    return (size_t)B * Tq * Hk + be->attn_workspace(B, 1, Tq, Tk, Hk, Hk);
}

const RnnAttentionOps rnn_attention_luong_dot = {
    .kind = ATTN_LUONG_DOT, .supports = luong_dot_supports, .declare = luong_dot_declare,
    .forward = luong_forward, .backward = luong_backward, .workspace = luong_workspace};
const RnnAttentionOps rnn_attention_luong_general = {
    .kind = ATTN_LUONG_GENERAL, .supports = luong_general_supports,
    .declare = luong_general_declare, .forward = luong_forward, .backward = luong_backward,
    .workspace = luong_workspace};
