/* sdp.c — scaled dot-product attention (Vaswani et al. 2017 §3.2.1, eq. 1):
 * softmax(q kᵀ / √HS) v per head, with the weights materialised (ops: attn_forward,
 * attn_backward, or their merged-layout forms attn_forward_merged / attn_backward_merged).
 * The same dot-product core, unscaled, is Luong's dot and general score (luong.c). Multi-head
 * in the Transformer and in the RNN (model.heads heads of the width). */
#include <math.h>

#include "attention/kinds.h"

static float dot_scale(const Attention *a) { /* Vaswani: 1/√HS; Luong's dot and general: 1 */
    return a->ops->scaled ? 1.0f / sqrtf((float)a->HS) : 1.0f;
}

void attention_dot_forward(const Attention *a, const Backend *be, float *o, float *save,
                           const float *q, const float *k, const float *v, const int *key_len,
                           int causal, int B, int Tq, int Tk, float *work) {
    (void)work;
    be->attn_forward(o, save, q, k, v, key_len, dot_scale(a), causal, B, a->NH, Tq, Tk, a->HS,
                     a->HS);
}

void attention_dot_backward(const Attention *a, const Backend *be, float *dq, float *dk,
                            float *dv, const float *dout, const float *o, const float *save,
                            const float *q, const float *k, const float *v, const int *key_len,
                            int causal, int B, int Tq, int Tk, float *work) {
    (void)o, (void)key_len, (void)causal; /* the saved weights carry the mask */
    be->attn_backward(dq, dk, dv, dout, q, k, v, save, dot_scale(a), B, a->NH, Tq, Tk, a->HS,
                      a->HS, work);
}

int attention_merged_ok(const Attention *a, const Backend *be) {
    return a->ops->forward == attention_dot_forward && !a->q_transform && !a->k_transform &&
           be->attn_forward_merged && be->attn_backward_merged;
}

void attention_forward_merged(const Attention *a, const Backend *be, float *o, float *save,
                              const float *q, const float *k, const float *v,
                              const int *key_len, int causal, int B, int Tq, int Tk) {
    CHECK(attention_merged_ok(a, be), "attention_forward_merged: not for this kind or backend");
    be->attn_forward_merged(o, save, q, k, v, key_len, dot_scale(a), causal, B, a->NH, Tq, Tk,
                            a->HS, a->HS);
}

void attention_backward_merged(const Attention *a, const Backend *be, float *dq, float *dk,
                               float *dv, const float *dout, const float *save, const float *q,
                               const float *k, const float *v, int B, int Tq, int Tk,
                               float *work) {
    CHECK(attention_merged_ok(a, be), "attention_backward_merged: not for this kind or backend");
    be->attn_backward_merged(dq, dk, dv, dout, q, k, v, save, dot_scale(a), B, a->NH, Tq, Tk,
                             a->HS, a->HS, work);
}

size_t attention_dot_workspace(const Attention *a, const Backend *be, int B, int Tq, int Tk) {
    return be->attn_workspace(B, a->NH, Tq, Tk, a->HS, a->HS);
}

const OpKind attention_dot_ops[3] = {OP_ATTN_FORWARD, OP_ATTN_BACKWARD, OP_ATTN_WORKSPACE};

void attention_dot_weights_host(float *w, const float *q, const float *k, int len, int HS,
                                float scale) {
    float e[len > 0 ? len : 1];
    for (int s = 0; s < len; s++) {
        double acc = 0;
        for (int d = 0; d < HS; d++) acc += q[d] * k[(size_t)s * HS + d] * scale;
        e[s] = (float)acc;
    }
    attention_softmax_host(w, e, len);
}

static void sdp_weights_host(float *w, const float *q, const float *k, const float *v_a, int len,
                             int HS) {
    (void)v_a;
    attention_dot_weights_host(w, q, k, len, HS, 1.0f / sqrtf((float)HS));
}

const AttentionOps attention_sdp = {
    .kind = ATTN_SDP, .causal_ok = 1, .multi_head = 1, .scaled = 1, .save = ATTN_SAVE_WEIGHTS,
    .ops = attention_dot_ops, .nops = 3,
    .forward = attention_dot_forward, .backward = attention_dot_backward,
    .workspace = attention_dot_workspace, .weights_host = sdp_weights_host};
