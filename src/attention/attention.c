/* attention.c — the attention table (attention.h): names, the rows (one file per kind), the one
 * "supports" check with its one refusal message, and the calls every model makes through a row;
 * the KV cache is the decoding state of every kind without its own (linear and taylor have
 * running sums). */
#include "attention/attention.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "attention/kinds.h"

const char *const attention_kind_names[ATTN_KIND_COUNT] = {
    "none", ATTENTION_KINDS(ATTENTION_KIND_NAME)};
const char *const local_mode_names[LOCAL_MODE_COUNT] = {"monotonic", "predictive"};
const char *const local_score_names[LOCAL_SCORE_COUNT] = {LOCAL_SCORES(LOCAL_SCORE_NAME_)};
static_assert(sizeof attention_kind_names / sizeof attention_kind_names[0] == ATTN_KIND_COUNT,
              "attention_kind_names must name every AttentionKind");

const char *const linformer_share_names[LINFORMER_SHARE_COUNT] = {"none", "headwise", "kv",
                                                                  "layerwise"};

const char *const attention_slot_keys[ATTN_SLOT_COUNT] = {
    "model.attention", "model.self_attention", "model.dec_self_attention",
    "model.cross_attention"};
static_assert(sizeof attention_slot_keys / sizeof attention_slot_keys[0] == ATTN_SLOT_COUNT,
              "attention_slot_keys must name every AttentionSlot");

Status attention_kind_from_name(const char *name, AttentionKind *kind, Err *err) {
    for (int i = 0; i < ATTN_KIND_COUNT; i++) {
        if (strcmp(name, attention_kind_names[i]) == 0) {
            *kind = (AttentionKind)i;
            return STATUS_OK;
        }
    }
    char list[512] = "";
    for (int i = 0; i < ATTN_KIND_COUNT; i++) {
        strcat(list, i ? ", " : "");
        strcat(list, attention_kind_names[i]);
    }
    return err_set(err, "unknown attention kind '%s' (valid: %s)", name, list);
}

const AttentionOps *attention_row(AttentionKind kind) {
#define ATTENTION_ROW_(E, name) [ATTN_##E] = &attention_##name,
    static const AttentionOps *const rows[ATTN_KIND_COUNT] = {ATTENTION_KINDS(ATTENTION_ROW_)};
#undef ATTENTION_ROW_
    CHECK(kind >= 0 && kind < ATTN_KIND_COUNT, "attention_row: kind out of range");
    return rows[kind];
}

/* 1 if be has every op row r calls; else 0 and the missing ops named in why. */
static int attention_ops_supported(const AttentionOps *r, const Backend *be, char *why,
                                   size_t why_len) {
    Err e;
    if (!backend_require_ops(be, r->ops, r->nops, &e)) return 1;
    snprintf(why, why_len, "%.300s; or choose another kind", e.msg);
    return 0;
}

int attention_ops_used(AttentionKind kind, OpKind *ops) {
    const AttentionOps *r = attention_row(kind);
    return r ? op_list_append(ops, 0, r->ops, r->nops) : 0;
}

int attention_supports(AttentionKind kind, AttentionSlot slot, int causal, const Backend *be,
                       int Dq, int Dk, int NH, char *why, size_t why_len) {
    const char *key = attention_slot_keys[slot], *name = attention_kind_names[kind];
    const AttentionOps *r = attention_row(kind);
    char reason[384] = "";
    if (!r) {
        if (slot == ATTN_SLOT_RNN) return 1; /* no attention: the RNN runs without one */
        snprintf(reason, sizeof reason, "model.type = transformer needs an attention in every "
                 "slot; set %s to a kind (e.g. sdp)", key);
    } else if (causal && !r->causal_ok) {
        snprintf(reason, sizeof reason, "%s, so it has no causal form for the decoder's "
                 "self-attention; set %s to sdp, flash, linear or taylor", r->no_causal, key);
    } else if ((slot != ATTN_SLOT_RNN || r->multi_head) && (NH < 1 || Dk % NH)) {
        snprintf(reason, sizeof reason, "model.heads = %d does not divide %s = %d; choose heads "
                 "that divide it", NH, slot == ATTN_SLOT_RNN ? "model.hidden" : "model.d_model",
                 Dk);
    } else if (r->sizes_ok && !r->sizes_ok(Dq, Dk, reason, sizeof reason)) {
        /* reason filled by the row */
    } else if (be && !attention_ops_supported(r, be, reason, sizeof reason)) {
        /* reason names the missing ops */
    } else {
        return 1;
    }
    snprintf(why, why_len, "%s = %s: %s", key, name, reason);
    return 0;
}

void attention_declare(Attention *a, ParamSet *ps, const char *prefix, AttentionKind kind,
                       int Dq, int Dk, int NH, int own_proj, ParamInit mat,
                       const AttentionOptions *opt) {
    memset(a, 0, sizeof *a);
    if (opt) a->opt = *opt;
    a->kind = kind, a->ops = attention_row(kind);
    CHECK(a->ops && NH >= 1 && Dk % NH == 0, "attention_declare: check attention_supports first");
    a->NH = NH, a->HS = Dk / NH, a->Dq = Dq, a->Dk = Dk, a->own_proj = own_proj;
    a->A = own_proj ? Dq : a->HS;
    a->lf_r = opt && opt->linformer_k > 0 ? opt->linformer_k : LINFORMER_K_DEFAULT;
    a->lf_n = attention_max_keys(ATTN_LINFORMER, opt);
    a->lf_share = opt ? opt->linformer_share : LINFORMER_SHARE_NONE;
    if (a->ops->declare) a->ops->declare(a, ps, prefix, mat);
}

int attention_max_keys(AttentionKind kind, const AttentionOptions *opt) {
    if (kind != ATTN_LINFORMER) return 0;
    return opt && opt->linformer_max_len > 0 ? opt->linformer_max_len : LINFORMER_MAX_LEN_DEFAULT;
}

size_t attention_save_floats(const Attention *a, long BTq, int Tk) {
    if (a->ops->save_floats) return a->ops->save_floats(a, BTq, Tk);
    switch (a->ops->save) {
    case ATTN_SAVE_WEIGHTS: return (size_t)BTq * a->NH * Tk;
    case ATTN_SAVE_LSE: return (size_t)BTq * a->NH;
    case ATTN_SAVE_WINDOW:
        return (size_t)BTq * a->NH * (size_t)local_attn_save_width(a->opt.local_window);
    default: return 0;
    }
}

int attention_saves_weights(const AttentionOps *row) {
    return row->save == ATTN_SAVE_WEIGHTS || row->save == ATTN_SAVE_WINDOW;
}

void attention_saved_weights_host(const Attention *a, float *w, const float *saved, int Tk) {
    CHECK(attention_saves_weights(a->ops), "attention_saved_weights_host: the kind saves no "
                                           "weights (ask attention_saves_weights first)");
    if (a->ops->save == ATTN_SAVE_WEIGHTS) {
        memcpy(w, saved, sizeof(float) * (size_t)Tk);
        return;
    }
    int lo = (int)saved[0], n = local_attn_save_width(a->opt.local_window) - 1;
    memset(w, 0, sizeof(float) * (size_t)Tk);
    for (int j = 0; j < n && lo + j < Tk; j++)
        if (lo + j >= 0) w[lo + j] = saved[1 + j];
}

void attention_saved_map_host(const Attention *a, float *w, const float *saved, int R, int Tk) {
    int NH = a->NH;
    size_t n = attention_save_floats(a, 1, Tk) / NH;
    float *wh = xmalloc(sizeof(float) * (Tk > 0 ? (size_t)Tk : 1));
    for (int r = 0; r < R; r++) {
        float *wr = w + (size_t)r * Tk;
        memset(wr, 0, sizeof(float) * (size_t)Tk);
        for (int h = 0; h < NH; h++) {
            attention_saved_weights_host(a, wh, saved + ((size_t)r * NH + h) * n, Tk);
            for (int s = 0; s < Tk; s++) wr[s] += wh[s] / NH;
        }
    }
    free(wh);
}

size_t attention_workspace(const Attention *a, const Backend *be, int B, int Tq, int Tk) {
    return a->ops->workspace ? a->ops->workspace(a, be, B, Tq, Tk) : 0;
}

int attention_query_width(const Attention *a) {
    return a->k_transform ? a->A : a->Dk; /* the additive W_q [A, Dq], or Dk */
}

void attention_query_forward(const Attention *a, const Backend *be, float *qp, const float *q,
                             int N) {
    if (a->q_transform) a->ops->query_forward(a, be, qp, q, N);
    else be->copy(qp, q, sizeof(float) * (size_t)N * a->Dq);
}

void attention_query_backward(const Attention *a, const Backend *be, float *dq,
                              const float *dqp, const float *q, int N) {
    if (a->q_transform) a->ops->query_backward(a, be, dq, dqp, q, N);
    else be->axpy(dq, 1.0f, dqp, (size_t)N * a->Dq);
}

void attention_forward(const Attention *a, const Backend *be, float *o, float *save,
                       const float *q, const float *k, const float *v, const int *key_len,
                       int causal, int B, int Tq, int Tk, float *work) {
    a->ops->forward(a, be, o, save, q, k, v, key_len, causal, B, Tq, Tk, work);
}

void attention_backward(const Attention *a, const Backend *be, float *dq, float *dk, float *dv,
                        const float *dout, const float *o, const float *save, const float *q,
                        const float *k, const float *v, const int *key_len, int causal, int B,
                        int Tq, int Tk, float *work) {
    a->ops->backward(a, be, dq, dk, dv, dout, o, save, q, k, v, key_len, causal, B, Tq, Tk, work);
}

/* ---------------------------------------------------------------------------------------- */
/* decoding state: a KV cache unless the row has its own                                     */

/* keys then values, [R, NH, Tcap, HS] each */
size_t attention_state_floats(const Attention *a, int R, int Tcap) {
    if (a->ops->state_floats) return a->ops->state_floats(a, R, Tcap);
    return 2 * (size_t)R * a->NH * Tcap * a->HS;
}

void attention_decode_step(const Attention *a, const Backend *be, float *o, float *save,
                           float *state, const float *q, const float *k, const float *v,
                           const int *step_len, int R, int t, int Tcap, float *work) {
    if (a->ops->decode_step) {
        a->ops->decode_step(a, be, o, save, state, q, k, v, step_len, R, t, Tcap, work);
        return;
    }
    float *kc = state, *vc = state + (size_t)R * a->NH * Tcap * a->HS;
    be->write_step(kc, k, R * a->NH, Tcap, t, a->HS);
    be->write_step(vc, v, R * a->NH, Tcap, t, a->HS);
    /* the query sees the t + 1 cached positions (step_len), nothing beyond */
    a->ops->forward(a, be, o, save, q, kc, vc, step_len, 0, R, 1, Tcap, work);
}

void attention_decode_reorder(const Attention *a, const Backend *be, float *dst,
                              const float *src, const int *parent, const int *parent_bh, int R,
                              int t, int Tcap) {
    if (a->ops->decode_reorder) {
        a->ops->decode_reorder(a, be, dst, src, parent, parent_bh, R, t, Tcap);
        return;
    }
    size_t half = (size_t)R * a->NH * Tcap * a->HS;
    for (int i = 0; i < 2; i++) /* only the filled prefix 0..t of each (row, head) */
        be->gather_rows_strided(dst + i * half, src + i * half, parent_bh, R * a->NH,
                                (t + 1) * a->HS, Tcap * a->HS);
}

/* ---------------------------------------------------------------------------------------- */
/* helpers shared by the rows (kinds.h)                                                      */

void attention_proj_forward(const Backend *be, float *y, const float *x, const Param *W, int N,
                            int Din, int Dout, int wt) {
    be->matmul(y, x, W->w, N, Dout, Din, 0, wt, 1.0f, 0.0f);
}

/* y = x W  →  dW += xᵀ dy, dx += dy Wᵀ;  y = x Wᵀ (wt)  →  dW += dyᵀ x, dx += dy W */
void attention_proj_backward(const Backend *be, float *dx, const float *dy, const float *x,
                             const Param *W, int N, int Din, int Dout, int wt) {
    if (wt)
        be->matmul(W->g, dy, x, Dout, Din, N, 1, 0, 1.0f, 1.0f);
    else
        be->matmul(W->g, x, dy, Din, Dout, N, 1, 0, 1.0f, 1.0f);
    be->matmul(dx, dy, W->w, N, Din, Dout, 0, !wt, 1.0f, 1.0f);
}

void attention_softmax_host(float *w, const float *e, int len) {
    float m = -INFINITY;
    double z = 0;
    float *x = w; /* w doubles as the exp buffer */
    for (int s = 0; s < len; s++) m = e[s] > m ? e[s] : m;
    for (int s = 0; s < len; s++) z += (x[s] = expf(e[s] - m));
    for (int s = 0; s < len; s++) w[s] = (float)(x[s] / z);
}

int attention_supports_transformer(AttentionKind enc, AttentionKind dec, AttentionKind cross,
                                   const Backend *be, int D, int NH, char *why, size_t why_len) {
    const struct { AttentionKind k; AttentionSlot slot; int causal; } slots[] = {
        {enc, ATTN_SLOT_ENC_SELF, 0}, {dec, ATTN_SLOT_DEC_SELF, 1}, {cross, ATTN_SLOT_CROSS, 0}};
    for (int i = 0; i < 3; i++)
        if (!attention_supports(slots[i].k, slots[i].slot, slots[i].causal, be, D, D, NH, why,
                                why_len))
            return 0;
    return 1;
}
