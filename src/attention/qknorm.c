/* qknorm.c — query-key normalisation, QKNorm (Henry, Dachapally, Pawar and Chen 2020,
 * "Query-Key Normalization for Transformers", Findings of EMNLP; made for low-resource
 * translation): per head,
 *   out_t = Σ_s softmax_s(g · q̂_t·k̂_s) v_s,   q̂ = q/‖q‖₂, k̂ = k/‖k‖₂ (over HS),
 * the cosine similarity of query and key scaled by one learned scalar g per attention (shared
 * by its heads) instead of 1/√HS. g starts at g0 = log2(L² − L), the paper's rule with L = 100
 * pieces, the default data.max_len (the paper takes the 97.5th percentile of the training
 * lengths; from L = 20 to 200, g0 runs from 8.6 to 15.3). The parameter stored is g − g0
 * (`<prefix>.qk_gain`, initialised to 0), so that Adam moves g exactly as it would move g itself.
 *
 * Ops: l2feature_forward makes [1; x̂] (HS + 1 wide) for queries and keys; the constant adds g to
 * every score of a row, which the softmax ignores, and gets no gradient (l2feature_backward
 * drops it). q' = g·[1; q̂] by two products (a product by the [1, 1] matrix g − g0, then g0·[1; q̂]
 * added: at bf16 only the small g − g0 is rounded); then attn_forward / attn_backward with
 * D = HS + 1, Dv = HS, scale 1. Saved: the weights [B,NH,Tq,Tk] (attention maps read them); the
 * backward recomputes the features. Workspace: [1; q̂], q', [1; k̂], dq', d[1; k̂] and
 * attn_workspace. Multi-head in the Transformer (every slot) and in the RNN (model.heads heads
 * of the width); decoding with the KV cache. */
#include <math.h>
#include <stdio.h>

#include "attention/kinds.h"

enum { QKNORM_L = 100 }; /* L of g0 = log2(L² − L) */

static float qknorm_g0(void) { return (float)log2((double)QKNORM_L * QKNORM_L - QKNORM_L); }

static void qknorm_declare(Attention *a, ParamSet *ps, const char *prefix, ParamInit mat) {
    (void)mat;
    char name[128];
    snprintf(name, sizeof name, "%s.qk_gain", prefix);
    params_declare(ps, &a->gain, name, INIT_ZERO, 1, 1, 0);
}

/* The workspace's pieces for B·NH·Tq query rows and B·NH·Tk key rows, F = HS + 1 wide each. */
typedef struct {
    float *qf, *qs, *kf, *dqs, *dkf, *attn;
} QkWork;

/* Floats of B·NH·T feature rows. */
static size_t qk_floats(const Attention *a, int B, int T) {
    return (size_t)B * a->NH * T * (a->HS + 1);
}

static QkWork qk_work(const Attention *a, float *work, int B, int Tq, int Tk) {
    size_t nq = qk_floats(a, B, Tq), nk = qk_floats(a, B, Tk);
    QkWork w = {work, work + nq, work + 2 * nq, work + 2 * nq + nk, work + 3 * nq + nk,
                work + 3 * nq + 2 * nk};
    return w;
}

/* qf = [1; q̂], qs = g·qf, kf = [1; k̂]. */
static void qknorm_features(const Attention *a, const Backend *be, const QkWork *w,
                            const float *q, const float *k, int B, int Tq, int Tk) {
    int HS = a->HS, Nq = B * a->NH * Tq, Nk = B * a->NH * Tk;
    size_t nq = qk_floats(a, B, Tq);
    be->l2feature_forward(w->qf, q, Nq, HS);
    be->l2feature_forward(w->kf, k, Nk, HS);
    be->matmul(w->qs, w->qf, a->gain.w, (int)nq, 1, 1, 0, 0, 1.0f, 0.0f); /* (g − g0)·qf */
    be->axpy(w->qs, qknorm_g0(), w->qf, nq);                              /* + g0·qf */
}

static void qknorm_forward(const Attention *a, const Backend *be, float *o, float *save,
                           const float *q, const float *k, const float *v, const int *key_len,
                           int causal, int B, int Tq, int Tk, float *work) {
    QkWork w = qk_work(a, work, B, Tq, Tk);
    qknorm_features(a, be, &w, q, k, B, Tq, Tk);
    be->attn_forward(o, save, w.qs, w.kf, v, key_len, 1.0f, causal, B, a->NH, Tq, Tk, a->HS + 1,
                     a->HS);
}

static void qknorm_backward(const Attention *a, const Backend *be, float *dq, float *dk,
                            float *dv, const float *dout, const float *o, const float *save,
                            const float *q, const float *k, const float *v, const int *key_len,
                            int causal, int B, int Tq, int Tk, float *work) {
    (void)o, (void)key_len, (void)causal; /* the saved weights carry the mask */
    int HS = a->HS, Nq = B * a->NH * Tq, Nk = B * a->NH * Tk;
    size_t nq = qk_floats(a, B, Tq), nk = qk_floats(a, B, Tk);
    QkWork w = qk_work(a, work, B, Tq, Tk);
    qknorm_features(a, be, &w, q, k, B, Tq, Tk);
    be->zero(w.dqs, sizeof(float) * nq);
    be->zero(w.dkf, sizeof(float) * nk);
    be->attn_backward(w.dqs, w.dkf, dv, dout, w.qs, w.kf, v, save, 1.0f, B, a->NH, Tq, Tk, HS + 1,
                      HS, w.attn);
    /* dg += qfᵀ dq'; then d[1; q̂] = g·dq' (into qs, no longer needed) */
    be->matmul(a->gain.g, w.qf, w.dqs, 1, 1, (int)nq, 1, 0, 1.0f, 1.0f);
    be->matmul(w.qs, w.dqs, a->gain.w, (int)nq, 1, 1, 0, 0, 1.0f, 0.0f);
    be->axpy(w.qs, qknorm_g0(), w.dqs, nq);
    be->l2feature_backward(dq, w.qs, q, Nq, HS);
    be->l2feature_backward(dk, w.dkf, k, Nk, HS);
}

static size_t qknorm_workspace(const Attention *a, const Backend *be, int B, int Tq, int Tk) {
    size_t nq = qk_floats(a, B, Tq), nk = qk_floats(a, B, Tk);
    return 3 * nq + 2 * nk + be->attn_workspace(B, a->NH, Tq, Tk, a->HS + 1, a->HS);
}

static const OpKind qknorm_ops[7] = {OP_L2FEATURE_FORWARD, OP_L2FEATURE_BACKWARD, OP_MATMUL,
                                     OP_AXPY, OP_ATTN_FORWARD, OP_ATTN_BACKWARD,
                                     OP_ATTN_WORKSPACE};

/* No weights_host: the weights need g, which it does not receive; maps read the saved ones. */
const AttentionOps attention_qknorm = {
    .kind = ATTN_QKNORM, .causal_ok = 1, .multi_head = 1, .save = ATTN_SAVE_WEIGHTS,
    .ops = qknorm_ops, .nops = 7, .declare = qknorm_declare, .forward = qknorm_forward,
    .backward = qknorm_backward, .workspace = qknorm_workspace};
