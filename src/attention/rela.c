/* rela.c — rectified linear attention, ReLA (Zhang, Titov and Sennrich 2021, "Sparse attention
 * with linear units", EMNLP): per head,
 *   w_ts = max(q_t·k_s / √HS, 0),   y_t = Σ_s w_ts v_s,   out_t = RMSNorm(y_t) = y_t·rstd_t ⊙ g_h,
 *   rstd_t = 1/√(mean_d y_td² + 1e-8),
 * with a learned gain g_h [HS] per head (initialised to 1; Zhang and Sennrich 2019's RMSNorm).
 * ReLU zeroes the weights of negative scores: the attention is sparse, and a row may attend to
 * nothing (out = 0). The RMSNorm here is per head, over each head's HS values; the authors' code
 * (github.com/bzhangGo/zero, modules/rela.py) normalises the merged heads' width and multiplies
 * by a gate σ(w ⊙ y); neither the merged form nor the gate is built here.
 * Masked keys get weight 0, and a row with no visible key output 0.
 *
 * Ops: pointwise_attn_* with POINTWISE_RELU (weights saved; the backward needs only them:
 * dReLU = [w > 0]) and head_rmsnorm_*. Saved (save_floats): the weights [B,NH,Tq,Tk], then y
 * [B,NH,Tq,HS] and rstd [B,NH,Tq] for the norm's backward. Workspace: dy [B,NH,Tq,HS] and
 * pointwise_attn_workspace. Multi-head in the Transformer (every slot) and in the RNN
 * (model.heads heads of the width); decoding with the KV cache. */
#include <math.h>
#include <stdio.h>

#include "attention/kinds.h"

static float rela_scale(const Attention *a) { return 1.0f / sqrtf((float)a->HS); }

static void rela_declare(Attention *a, ParamSet *ps, const char *prefix, ParamInit mat) {
    (void)mat;
    char name[128];
    snprintf(name, sizeof name, "%s.rms_gain", prefix);
    params_declare(ps, &a->gain, name, INIT_ONE, 2, a->NH, a->HS);
}

static size_t rela_save_floats(const Attention *a, long BTq, int Tk) {
    return (size_t)BTq * a->NH * ((size_t)Tk + a->HS + 1);
}

/* The saved pieces of a call of B·Tq query rows against Tk keys. */
static float *rela_y(const Attention *a, const float *save, int B, int Tq, int Tk) {
    return (float *)save + (size_t)B * a->NH * Tq * Tk;
}
static float *rela_rstd(const Attention *a, const float *save, int B, int Tq, int Tk) {
    return rela_y(a, save, B, Tq, Tk) + (size_t)B * a->NH * Tq * a->HS;
}

static void rela_forward(const Attention *a, const Backend *be, float *o, float *save,
                         const float *q, const float *k, const float *v, const int *key_len,
                         int causal, int B, int Tq, int Tk, float *work) {
    (void)work;
    float *y = rela_y(a, save, B, Tq, Tk), *rstd = rela_rstd(a, save, B, Tq, Tk);
    be->pointwise_attn_forward(y, save, q, k, v, key_len, rela_scale(a), causal, POINTWISE_RELU,
                               B, a->NH, Tq, Tk, a->HS, a->HS);
    be->head_rmsnorm_forward(o, rstd, y, a->gain.w, B, a->NH, Tq, a->HS);
}

static void rela_backward(const Attention *a, const Backend *be, float *dq, float *dk, float *dv,
                          const float *dout, const float *o, const float *save, const float *q,
                          const float *k, const float *v, const int *key_len, int causal, int B,
                          int Tq, int Tk, float *work) {
    (void)o, (void)key_len, (void)causal; /* the saved weights carry the mask */
    const float *y = rela_y(a, save, B, Tq, Tk), *rstd = rela_rstd(a, save, B, Tq, Tk);
    size_t ny = (size_t)B * a->NH * Tq * a->HS;
    float *dy = work;
    be->zero(dy, sizeof(float) * ny);
    /* out = RMSNorm(y) ⊙ g  →  dy, dg */
    be->head_rmsnorm_backward(dy, a->gain.g, dout, y, a->gain.w, rstd, B, a->NH, Tq, a->HS);
    /* y = ReLU(scale · q kᵀ) v  →  dq, dk, dv */
    be->pointwise_attn_backward(dq, dk, dv, dy, q, k, v, save, rela_scale(a), POINTWISE_RELU, B,
                                a->NH, Tq, Tk, a->HS, a->HS, work + ny);
}

static size_t rela_workspace(const Attention *a, const Backend *be, int B, int Tq, int Tk) {
    return (size_t)B * a->NH * Tq * a->HS +
           be->pointwise_attn_workspace(B, a->NH, Tq, Tk, a->HS, a->HS);
}

/* w[s] = max(q·k_s / √HS, 0), the weights before the RMSNorm (they need not sum to 1). */
static void rela_weights_host(float *w, const float *q, const float *k, const float *v_a, int len,
                              int HS) {
    (void)v_a;
    double scale = 1.0 / sqrt((double)HS);
    for (int s = 0; s < len; s++) {
        double e = 0;
        for (int d = 0; d < HS; d++) e += (double)q[d] * k[(size_t)s * HS + d];
        w[s] = e > 0 ? (float)(e * scale) : 0.0f;
    }
}

static const OpKind rela_ops[5] = {OP_POINTWISE_ATTN_FORWARD, OP_POINTWISE_ATTN_BACKWARD,
                                   OP_POINTWISE_ATTN_WORKSPACE, OP_HEAD_RMSNORM_FORWARD,
                                   OP_HEAD_RMSNORM_BACKWARD};

const AttentionOps attention_rela = {
    .kind = ATTN_RELA, .causal_ok = 1, .multi_head = 1, .scaled = 1, .save = ATTN_SAVE_WEIGHTS,
    .weights = ATTN_WEIGHTS_NONNEG, .fd_eps = 1e-3f, .ops = rela_ops, .nops = 5, .declare = rela_declare, .forward = rela_forward,
    .backward = rela_backward, .workspace = rela_workspace, .save_floats = rela_save_floats,
    .weights_host = rela_weights_host};
