/* linformer.c — Linformer attention (Wang et al. 2020, "Linformer: Self-Attention with Linear
 * Complexity", eq. 7): per head i,
 *   head_i = softmax(q (E_i K)ᵀ / √HS) (F_i V),   E_i, F_i ∈ R^{r×n}
 * learned projections over the key axis (r = model.linformer_k, n = model.linformer_max_len).
 * The keys and values of padded positions (s >= key_len[b]) are zeroed before projecting, and a
 * call with Tk keys uses only the first Tk columns of E_i, F_i (Tk <= n: longer sequences are
 * refused before they reach the model, model_max_source_len; here a CHECK). The r projected keys
 * are all visible to every query, so the kind has no causal form (attention_supports refuses the
 * decoder's self-attention); a row whose keys are all padding gets E K = F V = 0 and out = 0.
 *
 * Sharing (model.linformer_share, §4 "Parameter sharing"): none — E, F [NH·r, n], head h's E_h
 * in rows h·r .. h·r + r − 1; headwise — E, F [r, n] for all heads of the layer; kv — one
 * E [r, n] = F for keys and values and all heads (the layerwise variant is refused by
 * config_validate). Initialisation: the model's matrix rule (the Transformer: Xavier-uniform over
 * [r, n], ±√(6/(r + n)), Glorot & Bengio 2010 eq. 16, as the paper's fairseq reference initialises
 * its compress_k / compress_v Linear(n → r) layers with xavier_uniform (gain 1/√2 there); the RNN:
 * uniform ±model's param_init).
 *
 * Built from ops (no Tq × Tk or Tq × n matrix): linformer_proj_forward (Kp = E K, Vp = F V over
 * the visible keys, [B,NH,r,HS]) and attn_forward over the r projected keys (key_len NULL: all
 * visible), whose weights [B,NH,Tq,r] sit in the workspace. The backward recomputes Kp, Vp and
 * the weights, runs attn_backward into dKp, dVp, then linformer_proj_backward into dk, dE and dv,
 * dF (nothing is saved between the passes: save = none).
 *
 * In the RNN decoder, whose keys are the same encoder states at every step, Kp and Vp are
 * computed once per batch (the summary hooks of attention.h): a step then costs attn_forward over
 * r keys, and the steps' dKp, dVp are summed before one linformer_proj_backward.
 *
 * Workspace (floats): Kp, Vp [B,NH,r,HS]; weights [B,NH,Tq,r]; out scratch [B,NH,Tq,HS] and
 * dKp, dVp [B,NH,r,HS] (backward); attn_workspace(B, NH, Tq, r, HS, HS). */
#include <math.h>
#include <stdio.h>

#include "attention/kinds.h"

/* The pieces of one call's workspace. */
typedef struct {
    float *Kp, *Vp, *W, *o, *dKp, *dVp, *attn;
} LfWork;

static LfWork lf_carve(const Attention *a, float *work, int B, int Tq) {
    size_t nkv = (size_t)B * a->NH * a->lf_r * a->HS, nw = (size_t)B * a->NH * Tq * a->lf_r;
    size_t no = (size_t)B * a->NH * Tq * a->HS;
    LfWork w;
    w.Kp = work, w.Vp = w.Kp + nkv, w.W = w.Vp + nkv, w.o = w.W + nw, w.dKp = w.o + no;
    w.dVp = w.dKp + nkv, w.attn = w.dVp + nkv;
    return w;
}

static size_t linformer_workspace(const Attention *a, const Backend *be, int B, int Tq, int Tk) {
    (void)Tk;
    size_t nkv = (size_t)B * a->NH * a->lf_r * a->HS, nw = (size_t)B * a->NH * Tq * a->lf_r;
    size_t no = (size_t)B * a->NH * Tq * a->HS;
    return 4 * nkv + nw + no + be->attn_workspace(B, a->NH, Tq, a->lf_r, a->HS, a->HS);
}

static int lf_shared(const Attention *a) { return a->lf_share != LINFORMER_SHARE_NONE; }
static const Param *lf_F(const Attention *a) {
    return a->lf_share == LINFORMER_SHARE_KV ? &a->lf_E : &a->lf_F;
}

static void linformer_declare(Attention *a, ParamSet *ps, const char *prefix, ParamInit mat) {
    char name[128];
    CHECK(a->lf_share != LINFORMER_SHARE_LAYERWISE,
          "linformer: model.linformer_share = layerwise is refused by config_validate");
    int rows = a->lf_share == LINFORMER_SHARE_NONE ? a->NH * a->lf_r : a->lf_r;
    snprintf(name, sizeof name, "%s.lf_E", prefix);
    params_declare(ps, &a->lf_E, name, mat, 2, rows, a->lf_n);
    if (a->lf_share == LINFORMER_SHARE_KV) return; /* F = E */
    snprintf(name, sizeof name, "%s.lf_F", prefix);
    params_declare(ps, &a->lf_F, name, mat, 2, rows, a->lf_n);
}

/* The keys' summary (attention.h): sum = [Kp, Vp], each [B,NH,r,HS]. The Transformer's forward
 * and backward below build it in their workspace at every call; the RNN once per batch. */
static size_t linformer_summary_floats(const Attention *a, int B, int Tk) {
    (void)Tk;
    return 2 * (size_t)B * a->NH * a->lf_r * a->HS;
}

static void linformer_summary_forward(const Attention *a, const Backend *be, float *sum,
                                      const float *k, const float *v, const int *key_len, int B,
                                      int Tk) {
    int NH = a->NH, HS = a->HS, r = a->lf_r, n = a->lf_n, sh = lf_shared(a);
    CHECK(Tk <= n, "linformer: Tk > model.linformer_max_len; longer sources must be refused "
                   "before the model (model_max_source_len)");
    float *Kp = sum, *Vp = sum + (size_t)B * NH * r * HS;
    be->linformer_proj_forward(Kp, a->lf_E.w, k, key_len, B, NH, r, Tk, HS, n, sh);
    be->linformer_proj_forward(Vp, lf_F(a)->w, v, key_len, B, NH, r, Tk, HS, n, sh);
}

static void linformer_forward_summary(const Attention *a, const Backend *be, float *o,
                                      const float *q, const float *sum, int B, int Tq,
                                      float *work) {
    int NH = a->NH, HS = a->HS, r = a->lf_r;
    LfWork w = lf_carve(a, work, B, Tq);
    be->attn_forward(o, w.W, q, sum, sum + (size_t)B * NH * r * HS, NULL,
                     1.0f / sqrtf((float)HS), 0, B, NH, Tq, r, HS, HS);
}

static void linformer_backward_summary(const Attention *a, const Backend *be, float *dq,
                                       float *dsum, const float *dout, const float *q,
                                       const float *sum, int B, int Tq, float *work) {
    int NH = a->NH, HS = a->HS, r = a->lf_r;
    size_t nkv = (size_t)B * NH * r * HS;
    LfWork w = lf_carve(a, work, B, Tq); /* the weights are recomputed into w.W */
    be->attn_forward(w.o, w.W, q, sum, sum + nkv, NULL, 1.0f / sqrtf((float)HS), 0, B, NH, Tq,
                     r, HS, HS);
    be->attn_backward(dq, dsum, dsum + nkv, dout, q, sum, sum + nkv, w.W,
                      1.0f / sqrtf((float)HS), B, NH, Tq, r, HS, HS, w.attn);
}

static void linformer_summary_backward(const Attention *a, const Backend *be, float *dk,
                                       float *dv, float *dsum, const float *sum,
                                       const float *k, const float *v, const int *key_len, int B,
                                       int Tk) {
    (void)sum;
    int NH = a->NH, HS = a->HS, r = a->lf_r, n = a->lf_n, sh = lf_shared(a);
    const float *dKp = dsum, *dVp = dsum + (size_t)B * NH * r * HS;
    be->linformer_proj_backward(dk, a->lf_E.g, dKp, a->lf_E.w, k, key_len, B, NH, r, Tk, HS, n,
                                sh);
    be->linformer_proj_backward(dv, lf_F(a)->g, dVp, lf_F(a)->w, v, key_len, B, NH, r, Tk, HS, n,
                                sh);
}

/* Kp = E K, Vp = F V over the visible keys (padding zeroed) into the workspace, then
 * o = softmax(q Kpᵀ / √HS) Vp. */
static void linformer_forward(const Attention *a, const Backend *be, float *o, float *save,
                              const float *q, const float *k, const float *v, const int *key_len,
                              int causal, int B, int Tq, int Tk, float *work) {
    (void)save;
    CHECK(!causal, "linformer attention has no causal form (attention_supports refuses it)");
    LfWork w = lf_carve(a, work, B, Tq); /* Kp, Vp: one summary */
    linformer_summary_forward(a, be, w.Kp, k, v, key_len, B, Tk);
    linformer_forward_summary(a, be, o, q, w.Kp, B, Tq, work);
}

/* Kp, Vp and the weights recomputed; dKp, dVp; then dk, dE and dv, dF (kv: F = E, both add
 * into E's gradient). */
static void linformer_backward(const Attention *a, const Backend *be, float *dq, float *dk,
                               float *dv, const float *dout, const float *o, const float *save,
                               const float *q, const float *k, const float *v,
                               const int *key_len, int causal, int B, int Tq, int Tk,
                               float *work) {
    (void)o, (void)save, (void)causal;
    LfWork w = lf_carve(a, work, B, Tq);
    linformer_summary_forward(a, be, w.Kp, k, v, key_len, B, Tk);
    be->zero(w.dKp, sizeof(float) * linformer_summary_floats(a, B, Tk)); /* dKp, dVp */
    linformer_backward_summary(a, be, dq, w.dKp, dout, q, w.Kp, B, Tq, work);
    linformer_summary_backward(a, be, dk, dv, w.dKp, w.Kp, k, v, key_len, B, Tk);
}

static const OpKind linformer_ops[] = {OP_LINFORMER_PROJ_FORWARD, OP_LINFORMER_PROJ_BACKWARD,
                                       OP_ATTN_FORWARD, OP_ATTN_BACKWARD, OP_ATTN_WORKSPACE};

/* No weights_host: a query's implied weight on key s, Σ_j softmax_j F_h[j, s], needs E and F,
 * which weights_host does not receive; model_has_attention says no map for this kind. */
const AttentionOps attention_linformer = {
    .kind = ATTN_LINFORMER, .causal_ok = 0,
    .no_causal = "linformer attention (Wang et al. 2020) mixes every key position into each "
                 "projected key and value (E K, F V over the whole sequence)",
    .multi_head = 1, .scaled = 1, .save = ATTN_SAVE_NONE, .ops = linformer_ops, .nops = 5,
    .declare = linformer_declare, .forward = linformer_forward, .backward = linformer_backward,
    .workspace = linformer_workspace, .summary_floats = linformer_summary_floats,
    .summary_forward = linformer_summary_forward, .forward_summary = linformer_forward_summary,
    .backward_summary = linformer_backward_summary,
    .summary_backward = linformer_summary_backward};
