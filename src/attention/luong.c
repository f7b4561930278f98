/* luong.c — the score functions of Luong et al. 2015 eq. 8, weights by eq. 7:
 *   dot      h_tᵀ h̄_s                 the dot-product core of sdp.c, unscaled
 *   general  h_tᵀ W_a h̄_s = (h_t W_a)·h̄_s: the query is transformed once per call
 *            (B·Tq·Dq·Dk) instead of every key; W_a [Dq, Dk]
 *   concat   v_aᵀ tanh(W_a [h_t; h̄_s]): the additive score of bahdanau.c
 * In the RNN the query is the current top state h_t (§3.1) and h̃_t = tanh(W_c [c_t; h_t])
 * (eq. 5, model/rnn.c); in the Transformer these serve any slot on the projected heads. */
#include <stdio.h>

#include "attention/kinds.h"

static int luong_dot_sizes_ok(int Dq, int Dk, char *why, size_t n) {
    if (Dq == Dk) return 1;
    snprintf(why, n, "luong_dot needs the query width (%d) to equal the key width (%d); use "
             "luong_general", Dq, Dk);
    return 0;
}

static void luong_general_declare(Attention *a, ParamSet *ps, const char *prefix,
                                  ParamInit mat) {
    char name[128];
    a->q_transform = 1;
    snprintf(name, sizeof name, "%s.W_a", prefix);
    params_declare(ps, &a->W_a, name, mat, 2, a->Dq, a->Dk);
}

/* q' = q W_a  [N, Dk] */
void attention_general_query_forward(const Attention *a, const Backend *be, float *qp,
                                     const float *q, int N) {
    attention_proj_forward(be, qp, q, &a->W_a, N, a->Dq, a->Dk, 0);
}

void attention_general_query_backward(const Attention *a, const Backend *be, float *dq,
                                      const float *dqp, const float *q, int N) {
    attention_proj_backward(be, dq, dqp, q, &a->W_a, N, a->Dq, a->Dk, 0);
}

static void luong_weights_host(float *w, const float *q, const float *k, const float *v_a,
                               int len, int HS) {
    (void)v_a;
    attention_dot_weights_host(w, q, k, len, HS, 1.0f);
}

const AttentionOps attention_luong_dot = {
    .kind = ATTN_LUONG_DOT, .causal_ok = 1, .save = ATTN_SAVE_WEIGHTS,
    .ops = attention_dot_ops, .nops = 3,
    .sizes_ok = luong_dot_sizes_ok, .forward = attention_dot_forward,
    .backward = attention_dot_backward, .workspace = attention_dot_workspace,
    .weights_host = luong_weights_host};

const AttentionOps attention_luong_general = {
    .kind = ATTN_LUONG_GENERAL, .causal_ok = 1, .save = ATTN_SAVE_WEIGHTS,
    .ops = attention_dot_ops, .nops = 3,
    .declare = luong_general_declare, .query_forward = attention_general_query_forward,
    .query_backward = attention_general_query_backward, .forward = attention_dot_forward,
    .backward = attention_dot_backward, .workspace = attention_dot_workspace,
    .weights_host = luong_weights_host};

const AttentionOps attention_luong_concat = {.kind = ATTN_LUONG_CONCAT, ATTENTION_ADDITIVE_ROW};
