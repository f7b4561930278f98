/* sigmoid.c — sigmoid attention (Ramapuram et al. 2024, "Theory, analysis, and best practices
 * for sigmoid self-attention", SigmoidAttn with the bias b = −log n they recommend): per
 * head,
 *   w_ts = σ(q_t·k_s / √HS − log n_t),   out_t = Σ_s w_ts v_s,
 * each weight a function of its own score, with no normalisation over the keys. The bias: n_t
 * is the number of keys query t sees (the visible keys of its row: s < key_len[b] and, causal,
 * s <= t + Tk − Tq), so a causal row t of a T-long sequence has n_t = t + 1 and a decoding step
 * with its KV cache of t + 1 keys gives the same weights as the causal forward. Masked keys get
 * weight 0, and a row with no visible key output 0. The weights are saved for the backward,
 * which needs nothing else: dσ = w (1 − w) (ops: pointwise_attn_* with POINTWISE_SIGMOID).
 * Multi-head in the Transformer (every slot) and in the RNN (model.heads heads of the width). */
#include <math.h>

#include "attention/kinds.h"

static float sigmoid_scale(const Attention *a) { return 1.0f / sqrtf((float)a->HS); }

static void sigmoid_forward(const Attention *a, const Backend *be, float *o, float *save,
                            const float *q, const float *k, const float *v, const int *key_len,
                            int causal, int B, int Tq, int Tk, float *work) {
    (void)work;
    be->pointwise_attn_forward(o, save, q, k, v, key_len, sigmoid_scale(a), causal,
                               POINTWISE_SIGMOID, B, a->NH, Tq, Tk, a->HS, a->HS);
}

static void sigmoid_backward(const Attention *a, const Backend *be, float *dq, float *dk,
                             float *dv, const float *dout, const float *o, const float *save,
                             const float *q, const float *k, const float *v, const int *key_len,
                             int causal, int B, int Tq, int Tk, float *work) {
    (void)o, (void)key_len, (void)causal; /* the saved weights carry the mask */
    be->pointwise_attn_backward(dq, dk, dv, dout, q, k, v, save, sigmoid_scale(a),
                                POINTWISE_SIGMOID, B, a->NH, Tq, Tk, a->HS, a->HS, work);
}

static size_t sigmoid_workspace(const Attention *a, const Backend *be, int B, int Tq, int Tk) {
    return be->pointwise_attn_workspace(B, a->NH, Tq, Tk, a->HS, a->HS);
}

/* w[s] = σ(q·k_s / √HS − log len), the weights themselves (they need not sum to 1). */
static void sigmoid_weights_host(float *w, const float *q, const float *k, const float *v_a,
                                 int len, int HS) {
    (void)v_a;
    double bias = len > 0 ? -log((double)len) : 0.0, scale = 1.0 / sqrt((double)HS);
    for (int s = 0; s < len; s++) {
        double e = 0;
        for (int d = 0; d < HS; d++) e += (double)q[d] * k[(size_t)s * HS + d];
        w[s] = (float)(1.0 / (1.0 + exp(-(e * scale + bias))));
    }
}

static const OpKind sigmoid_ops[3] = {OP_POINTWISE_ATTN_FORWARD, OP_POINTWISE_ATTN_BACKWARD,
                                      OP_POINTWISE_ATTN_WORKSPACE};

const AttentionOps attention_sigmoid = {
    .kind = ATTN_SIGMOID, .causal_ok = 1, .multi_head = 1, .scaled = 1,
    .save = ATTN_SAVE_WEIGHTS, .weights = ATTN_WEIGHTS_OPEN_UNIT, .ops = sigmoid_ops, .nops = 3,
    .forward = sigmoid_forward, .backward = sigmoid_backward, .workspace = sigmoid_workspace,
    .weights_host = sigmoid_weights_host};
