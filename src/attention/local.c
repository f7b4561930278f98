/* local.c — local attention (Luong et al. 2015 §3.2), the luong_local kind: each query attends
 * to a window [p_t − D, p_t + D] of the source (D = model.local_window), clipped to the valid
 * keys (s < key_len[b]):
 *   local-m (model.local_mode = monotonic): p_t = t, the decoder position (the RNN's decoding
 *     step; for Tq queries at once, the query index); a_t(s) = align(h_t, h̄_s), the softmax of
 *     the score over the window (eq. 7 restricted to it);
 *   local-p (predictive): p_t = S·sigmoid(v_pᵀ tanh(W_p h_t)) (eq. 9), S = the source length
 *     key_len[b]; a_t(s) = align(h_t, h̄_s) · exp(−(s − p_t)² / (2σ²)), σ = D/2 (eq. 10), integer
 *     s in the window. The gradient reaches W_p, v_p and h_t through p_t in the Gaussian; window
 *     membership is piecewise constant in p_t and contributes none (as in the paper's model).
 * The score (model.local_score, eq. 8) is dot (h_tᵀ h̄_s), general (h_t W_a h̄_s: luong.c's
 * query transform), concat (the additive score of bahdanau.c: W_q, U, v in the RNN, v_a per
 * head in the Transformer) or scaled_dot: general divided by √HS (per head), so that local-m
 * with a window over every key computes sdp's function of the query h_t W_a (Vaswani et al.
 * 2017 eq. 1; unscaled, the head's h_t W_a · h̄_s grows as √HS and saturates the softmax,
 * their §3.2.1). c_t = Σ_s a_t(s) h̄_s; the weights are saved as each query's window
 * (ATTN_SAVE_WINDOW: [B,NH,Tq,2D+2], its first key and its 2D + 1 weights), O(Tq·D) a head.
 * Ops: local_attn_forward / _backward (ops.h), matmul and tanh for p_t.
 *
 * The position needs the untransformed query h_t, so this row has no query transform of its own
 * for the model (q_transform = 0: the RNN's qsave and the Transformer's q heads are h_t itself);
 * forward and backward apply the score's query transform (general, scaled_dot: W_a; concat in
 * the RNN: W_q) and eq. 9 themselves, on the merged query [B·Tq, Dq] (heads merged through work
 * when NH > 1).
 * p_t is one position per query, shared by the heads (as the paper's one alignment); in the RNN
 * the kind runs with one head, like the other luong kinds. No causal form: decoder
 * self-attention is refused (local-m's window cut at t would be one; it is not implemented).
 *
 * Legend: B batch, NH heads, Tq queries, Tk keys, HS head size, Dq query width, Dk key width,
 * A additive size, Nq = B·Tq, Wd the score query's merged width (Dk; concat in the RNN: A).
 * Workspace (floats), in this order: qm [Nq,Dq] merged query (NH > 1), qs [Nq,Wd] the score
 * query (general, scaled_dot; concat in the RNN), qh [B,NH,Tq,HS] its heads (NH > 1),
 * u [Nq,Dq] = tanh(qm W_pᵀ) and z [Nq] (predictive); backward also dqh, dqm, dz, dpre, du of
 * those sizes; then local_attn_workspace. The backward reuses what the op has read: dqs, the
 * merged gradient of the score query, goes into qh, and dpre into dqh once that is merged (NH > 1,
 * when dqh holds Nq·Dq floats). */
#include <math.h>
#include <stdio.h>

#include "attention/kinds.h"

static int is_pred(const Attention *a) { return a->opt.local_mode == LOCAL_PREDICTIVE; }
static int has_wa(const Attention *a) { /* q' = q W_a (general, scaled_dot) */
    return a->opt.local_score == LOCAL_SCORE_GENERAL ||
           a->opt.local_score == LOCAL_SCORE_SCALED_DOT;
}
static int has_qs(const Attention *a) { /* the score transforms the query */
    return has_wa(a) || (a->opt.local_score == LOCAL_SCORE_CONCAT && a->own_proj);
}
static float score_scale(const Attention *a) { /* the dot score's factor */
    return a->opt.local_score == LOCAL_SCORE_SCALED_DOT ? 1.0f / sqrtf((float)a->HS) : 1.0f;
}
static int score_width(const Attention *a) { /* the op's D: per head q·k width */
    return a->opt.local_score == LOCAL_SCORE_CONCAT ? a->A : a->HS;
}
static int qs_width(const Attention *a) { return has_qs(a) ? score_width(a) * a->NH : a->Dq; }

static void local_declare(Attention *a, ParamSet *ps, const char *prefix, ParamInit mat) {
    char name[128];
    CHECK(a->opt.local_window >= 1, "luong_local: model.local_window must be >= 1 (pass the "
                                    "AttentionOptions to attention_declare)");
    switch (a->opt.local_score) {
    case LOCAL_SCORE_GENERAL: /* W_a [Dq, Dk], as luong_general (applied in forward here) */
    case LOCAL_SCORE_SCALED_DOT:
        snprintf(name, sizeof name, "%s.W_a", prefix);
        params_declare(ps, &a->W_a, name, mat, 2, a->Dq, a->Dk);
        break;
    case LOCAL_SCORE_CONCAT: /* v_a (and W_q, U in the RNN), as bahdanau / luong_concat */
        attention_additive_declare(a, ps, prefix, mat);
        a->q_transform = 0; /* W_q is applied in forward: p_t needs h_t itself */
        break;
    default: break;
    }
    if (is_pred(a)) { /* eq. 9: W_p [Dq, Dq], v_p [Dq] */
        snprintf(name, sizeof name, "%s.W_p", prefix);
        params_declare(ps, &a->W_p, name, mat, 2, a->Dq, a->Dq);
        snprintf(name, sizeof name, "%s.v_p", prefix);
        params_declare(ps, &a->v_p, name, mat, 1, a->Dq, 0);
    }
}

typedef struct {
    float *qm, *qs, *qh, *u, *z;       /* forward pieces (aliases where not needed) */
    float *dqh, *dqm, *dz, *dpre, *du; /* backward (dpre may be dqh: local_sizes) */
    float *op;                          /* local_attn_workspace */
} LocalWork;

enum { LOCAL_BUFS = 10 };

/* dpre takes dqh's floats once dqh is merged: NH > 1 and dqh holds an [Nq, Dq] matrix. */
static int dpre_in_dqh(const Attention *a) {
    return a->NH > 1 && (size_t)a->NH * score_width(a) >= (size_t)a->Dq;
}

static size_t local_sizes(const Attention *a, int B, int Tq, size_t *sz) {
    size_t Nq = (size_t)B * Tq, nh = (size_t)a->NH * score_width(a) * Nq;
    int multi = a->NH > 1, pred = is_pred(a);
    sz[0] = multi ? Nq * a->Dq : 0;                  /* qm */
    sz[1] = has_qs(a) ? Nq * qs_width(a) : 0;        /* qs */
    sz[2] = multi ? nh : 0;                          /* qh, then dqs (NH·Wd = Nq·qs_width) */
    sz[3] = pred ? Nq * a->Dq : 0;                   /* u */
    sz[4] = pred ? Nq : 0;                           /* z */
    sz[5] = nh;                                      /* dqh */
    sz[6] = multi ? Nq * a->Dq : 0;                  /* dqm */
    sz[7] = pred ? Nq : 0;                           /* dz */
    sz[8] = pred && !dpre_in_dqh(a) ? Nq * a->Dq : 0; /* dpre */
    sz[9] = pred ? Nq * a->Dq : 0;                   /* du */
    size_t n = 0;
    for (int i = 0; i < LOCAL_BUFS; i++) n += sz[i];
    return n;
}

static LocalWork local_carve(const Attention *a, float *work, int B, int Tq) {
    size_t sz[LOCAL_BUFS];
    local_sizes(a, B, Tq, sz);
    float *p[LOCAL_BUFS];
    for (int i = 0; i < LOCAL_BUFS; i++) p[i] = work, work += sz[i];
    LocalWork w = {p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8], p[9], work};
    if (is_pred(a) && dpre_in_dqh(a)) w.dpre = w.dqh;
    return w;
}

static size_t local_workspace(const Attention *a, const Backend *be, int B, int Tq, int Tk) {
    size_t sz[LOCAL_BUFS];
    return local_sizes(a, B, Tq, sz) +
           be->local_attn_workspace(B, a->NH, Tq, Tk, score_width(a), a->HS,
                                    a->opt.local_window);
}

/* The op's inputs from the query heads q [B,NH,Tq,HS] (the RNN: [B,Tq,Dq]): the merged query
 * qm, the score query's heads qh (returned) and, local-p, z = tanh(qm W_pᵀ) v_p (eq. 9). */
static const float *local_prepare(const Attention *a, const Backend *be, LocalWork *w,
                                  const float *q, int B, int Tq) {
    int NH = a->NH, Nq = B * Tq;
    const float *qm = q, *qs;
    if (NH > 1) { /* [B,NH,Tq,HS] → [B,Tq,NH,HS] */
        be->permute0213_forward(w->qm, q, B, NH, Tq, a->HS);
        qm = w->qm;
    }
    qs = qm;
    if (has_wa(a)) /* q' = q W_a */
        attention_general_query_forward(a, be, w->qs, qm, Nq), qs = w->qs;
    else if (has_qs(a)) /* concat in the RNN: q' = q W_qᵀ */
        attention_additive_query_forward(a, be, w->qs, qm, Nq), qs = w->qs;
    if (is_pred(a)) { /* z = v_pᵀ tanh(W_p h_t): u = tanh(qm W_pᵀ), z = u v_p */
        be->matmul(w->u, qm, a->W_p.w, Nq, a->Dq, a->Dq, 0, 1, 1.0f, 0.0f);
        be->tanh_forward(w->u, w->u, (size_t)Nq * a->Dq);
        be->matmul(w->z, w->u, a->v_p.w, Nq, 1, a->Dq, 0, 0, 1.0f, 0.0f);
    }
    if (NH > 1) { /* the score query's heads */
        be->permute0213_forward(w->qh, qs, B, Tq, NH, score_width(a));
        return w->qh;
    }
    return qs;
}

static const float *local_va(const Attention *a) {
    return a->opt.local_score == LOCAL_SCORE_CONCAT ? a->v_a.w : NULL;
}

static void local_forward(const Attention *a, const Backend *be, float *o, float *save,
                          const float *q, const float *k, const float *v, const int *key_len,
                          int causal, int B, int Tq, int Tk, float *work) {
    CHECK(!causal, "luong_local has no causal form (attention_supports refuses it)");
    LocalWork w = local_carve(a, work, B, Tq);
    const float *qh = local_prepare(a, be, &w, q, B, Tq);
    be->local_attn_forward(o, save, qh, k, local_va(a), v, is_pred(a) ? w.z : NULL, key_len,
                           score_scale(a), a->opt.local_window, a->pos0, B, a->NH, Tq, Tk,
                           score_width(a), a->HS);
}

static void local_backward(const Attention *a, const Backend *be, float *dq, float *dk,
                           float *dv, const float *dout, const float *o, const float *save,
                           const float *q, const float *k, const float *v, const int *key_len,
                           int causal, int B, int Tq, int Tk, float *work) {
    (void)o, (void)causal;
    int NH = a->NH, Nq = B * Tq, Dq = a->Dq, pred = is_pred(a), multi = NH > 1;
    LocalWork w = local_carve(a, work, B, Tq);
    const float *qh = local_prepare(a, be, &w, q, B, Tq); /* recomputed: qm, qs, u, z */
    const float *qm = multi ? w.qm : q;
    /* where the gradient of the merged query goes: dq itself (one head) or dqm, split below */
    float *dqm = multi ? w.dqm : dq;
    if (multi) be->zero(dqm, sizeof(float) * Nq * Dq);
    /* the gradient of the op's query: straight into dqm when the score has no query transform
     * and one head; else into dqh (zeroed) */
    float *dqh = !multi && !has_qs(a) ? dqm : w.dqh;
    if (dqh != dqm) be->zero(dqh, sizeof(float) * (size_t)Nq * NH * score_width(a));
    if (pred) be->zero(w.dz, sizeof(float) * Nq);
    be->local_attn_backward(dqh, dk, a->opt.local_score == LOCAL_SCORE_CONCAT ? a->v_a.g : NULL,
                            dv, pred ? w.dz : NULL, dout, qh, k, local_va(a), v,
                            pred ? w.z : NULL, save, key_len, score_scale(a), a->opt.local_window,
                            a->pos0, B, NH, Tq, Tk, score_width(a), a->HS, w.op);
    /* the score query: heads → merged (dqs, in qh's floats: the op has read qh), then back
     * through its transform into dqm */
    float *dqs = dqh;
    if (multi && dqh != dqm) {
        float *m = has_qs(a) ? w.qh : dqm;
        if (m != dqm) be->zero(m, sizeof(float) * Nq * qs_width(a));
        be->permute0213_backward(m, dqh, B, Tq, NH, score_width(a));
        dqs = m;
    }
    if (has_wa(a)) /* q' = q W_a */
        attention_general_query_backward(a, be, dqm, dqs, qm, Nq);
    else if (has_qs(a)) /* q' = q W_qᵀ */
        attention_additive_query_backward(a, be, dqm, dqs, qm, Nq);
    if (pred) { /* z = u v_p, u = tanh(qm W_pᵀ) (eq. 9) */
        size_t nu = (size_t)Nq * Dq;
        be->matmul(a->v_p.g, w.u, w.dz, Dq, 1, Nq, 1, 0, 1.0f, 1.0f);    /* dv_p += uᵀ dz */
        be->matmul(w.du, w.dz, a->v_p.w, Nq, Dq, 1, 0, 0, 1.0f, 0.0f);   /* du = dz v_pᵀ */
        be->zero(w.dpre, sizeof(float) * nu); /* dqh, merged above, or its own */
        be->tanh_backward(w.dpre, w.du, w.u, nu);                         /* dpre = du (1 − u²) */
        be->matmul(a->W_p.g, w.dpre, qm, Dq, Dq, Nq, 1, 0, 1.0f, 1.0f);  /* dW_p += dpreᵀ qm */
        be->matmul(dqm, w.dpre, a->W_p.w, Nq, Dq, Dq, 0, 0, 1.0f, 1.0f); /* dqm += dpre W_p */
    }
    if (multi) be->permute0213_backward(dq, dqm, B, NH, Tq, a->HS); /* merged → heads */
}

static const OpKind local_ops[] = {OP_LOCAL_ATTN_FORWARD, OP_LOCAL_ATTN_BACKWARD,
                                   OP_LOCAL_ATTN_WORKSPACE, OP_TANH_FORWARD, OP_TANH_BACKWARD,
                                   OP_MATMUL, OP_PERMUTE0213_FORWARD, OP_PERMUTE0213_BACKWARD};

const AttentionOps attention_luong_local = {
    .kind = ATTN_LUONG_LOCAL, .causal_ok = 0, .save = ATTN_SAVE_WINDOW,
    .weights = ATTN_WEIGHTS_SUM_AT_MOST_1,
    .no_causal = "local attention (Luong et al. 2015 §3.2) centres its window on a position "
                 "aligned with the source (a causal local-m window is not implemented)",
    .ops = local_ops, .nops = 8, .declare = local_declare, .forward = local_forward,
    .backward = local_backward, .workspace = local_workspace,
    /* concat in the RNN: the keys' U h̄, once per batch (bahdanau.c; k_transform set by its
     * declare) */
    .keys_forward = attention_additive_keys_forward,
    .keys_backward = attention_additive_keys_backward};
