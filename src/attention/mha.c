/* mha.c — multi-head attention with switchable kinds (mha.h): the projections, and one row per
 * kind in the table below (the core attention on heads, forward and backward, and what it
 * saves). The heavy lifting of each kind is a backend op (ops/ops.h); a row only names it.
 *
 * Legend: B batch, Tq / Tk query / key positions, D model width, NH heads, HS head size,
 * Nq = B·Tq and Nk = B·Tk rows of the merged [·, D] layout. */
#include "attention/mha.h"

#include <math.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------- */
/* the kinds                                                                                */

/* One kind's core attention on heads: q [B,NH,Tq,HS] (luong_general: already times W_a),
 * k, v [B,NH,Tk,HS] → o [B,NH,Tq,HS]; save holds what backward needs besides q, k, v, o. */
typedef struct {
    AttentionKind kind;
    int causal_ok; /* has a causal form */
    enum { SAVE_NONE, SAVE_WEIGHTS, SAVE_LSE } save;
    void (*forward)(const Mha *a, const Backend *be, float *o, float *save, const float *q,
                    const float *k, const float *v, const MhaMask *m, int B, int Tq, int Tk,
                    float *work);
    /* Accumulates dq, dk, dv (heads) and the kind's own parameter gradients. */
    void (*backward)(const Mha *a, const Backend *be, float *dq, float *dk, float *dv,
                     const float *dout, const float *o, const float *save, const float *q,
                     const float *k, const float *v, const MhaMask *m, int B, int Tq, int Tk,
                     float *work);
    /* Floats of workspace (NULL: none). */
    size_t (*workspace)(const Backend *be, int B, int NH, int Tq, int Tk, int HS);
} MhaKind;

static float dot_scale(const Mha *a) { /* Vaswani: 1/√HS; Luong's dot and general: 1 */
    return a->kind == ATTN_SDP || a->kind == ATTN_FLASH ? 1.0f / sqrtf((float)a->HS) : 1.0f;
}

/* sdp, luong_dot, luong_general: softmax(scale · q kᵀ) v with the weights materialised. */
static void dot_fwd(const Mha *a, const Backend *be, float *o, float *save, const float *q,
                    const float *k, const float *v, const MhaMask *m, int B, int Tq, int Tk,
                    float *work) {
    (void)work;
    be->attn_forward(o, save, q, k, v, m->key_len, dot_scale(a), m->causal, B, a->NH, Tq, Tk,
                     a->HS, a->HS);
}
static void dot_bwd(const Mha *a, const Backend *be, float *dq, float *dk, float *dv,
                    const float *dout, const float *o, const float *save, const float *q,
                    const float *k, const float *v, const MhaMask *m, int B, int Tq, int Tk,
                    float *work) {
    (void)o, (void)m;
    be->attn_backward(dq, dk, dv, dout, q, k, v, save, dot_scale(a), B, a->NH, Tq, Tk, a->HS,
                      a->HS, work);
}

/* flash (Dao et al. 2022): the same function, no Tq×Tk matrix; saves lse. */
static void flash_fwd(const Mha *a, const Backend *be, float *o, float *save, const float *q,
                      const float *k, const float *v, const MhaMask *m, int B, int Tq, int Tk,
                      float *work) {
    be->flash_attn_forward(o, save, q, k, v, m->key_len, dot_scale(a), m->causal, B, a->NH, Tq,
                           Tk, a->HS, a->HS, work);
}
static void flash_bwd(const Mha *a, const Backend *be, float *dq, float *dk, float *dv,
                      const float *dout, const float *o, const float *save, const float *q,
                      const float *k, const float *v, const MhaMask *m, int B, int Tq, int Tk,
                      float *work) {
    be->flash_attn_backward(dq, dk, dv, dout, q, k, v, o, save, m->key_len, dot_scale(a),
                            m->causal, B, a->NH, Tq, Tk, a->HS, a->HS, work);
}

/* linear (Katharopoulos et al. 2020): nothing saved; the backward recomputes the state. */
static void linear_fwd(const Mha *a, const Backend *be, float *o, float *save, const float *q,
                       const float *k, const float *v, const MhaMask *m, int B, int Tq, int Tk,
                       float *work) {
    (void)save;
    be->linear_attn_forward(o, q, k, v, m->key_len, m->causal, B, a->NH, Tq, Tk, a->HS, a->HS,
                            work);
}
static void linear_bwd(const Mha *a, const Backend *be, float *dq, float *dk, float *dv,
                       const float *dout, const float *o, const float *save, const float *q,
                       const float *k, const float *v, const MhaMask *m, int B, int Tq, int Tk,
                       float *work) {
    (void)o, (void)save;
    be->linear_attn_backward(dq, dk, dv, dout, q, k, v, m->key_len, m->causal, B, a->NH, Tq, Tk,
                             a->HS, a->HS, work);
}

/* efficient (Shen et al. 2021): non-causal only (mha_supports refuses the causal slot). */
static void efficient_fwd(const Mha *a, const Backend *be, float *o, float *save,
                          const float *q, const float *k, const float *v, const MhaMask *m, int B,
                          int Tq, int Tk, float *work) {
    (void)save;
    be->efficient_attn_forward(o, q, k, v, m->key_len, B, a->NH, Tq, Tk, a->HS, a->HS, work);
}
static void efficient_bwd(const Mha *a, const Backend *be, float *dq, float *dk, float *dv,
                          const float *dout, const float *o, const float *save, const float *q,
                          const float *k, const float *v, const MhaMask *m, int B, int Tq,
                          int Tk, float *work) {
    (void)o, (void)save;
    be->efficient_attn_backward(dq, dk, dv, dout, q, k, v, m->key_len, B, a->NH, Tq, Tk, a->HS,
                                a->HS, work);
}

/* bahdanau, luong_concat: e = v_hᵀ tanh(q_h + k_h) per head; weights saved. */
static void additive_fwd(const Mha *a, const Backend *be, float *o, float *save,
                         const float *q, const float *k, const float *v, const MhaMask *m, int B,
                         int Tq, int Tk, float *work) {
    (void)work;
    be->additive_attn_forward(o, save, q, k, a->v_a.w, v, m->key_len, m->causal, B, a->NH, Tq,
                              Tk, a->HS, a->HS);
}
static void additive_bwd(const Mha *a, const Backend *be, float *dq, float *dk, float *dv,
                         const float *dout, const float *o, const float *save, const float *q,
                         const float *k, const float *v, const MhaMask *m, int B, int Tq,
                         int Tk, float *work) {
    (void)o, (void)m, (void)work;
    be->additive_attn_backward(dq, dk, a->v_a.g, dv, dout, q, k, a->v_a.w, v, save, B, a->NH,
                               Tq, Tk, a->HS, a->HS);
}

static size_t dot_work(const Backend *be, int B, int NH, int Tq, int Tk, int HS) {
    return be->attn_workspace(B, NH, Tq, Tk, HS, HS);
}
static size_t flash_work(const Backend *be, int B, int NH, int Tq, int Tk, int HS) {
    return be->flash_attn_workspace(B, NH, Tq, Tk, HS, HS);
}
static size_t linear_work(const Backend *be, int B, int NH, int Tq, int Tk, int HS) {
    return be->linear_attn_workspace(B, NH, Tq, Tk, HS, HS);
}
static size_t efficient_work(const Backend *be, int B, int NH, int Tq, int Tk, int HS) {
    return be->efficient_attn_workspace(B, NH, Tq, Tk, HS, HS);
}

static const MhaKind KINDS[] = {
    {ATTN_SDP, 1, SAVE_WEIGHTS, dot_fwd, dot_bwd, dot_work},
    {ATTN_FLASH, 1, SAVE_LSE, flash_fwd, flash_bwd, flash_work},
    {ATTN_LINEAR, 1, SAVE_NONE, linear_fwd, linear_bwd, linear_work},
    {ATTN_EFFICIENT, 0, SAVE_NONE, efficient_fwd, efficient_bwd, efficient_work},
    {ATTN_LUONG_DOT, 1, SAVE_WEIGHTS, dot_fwd, dot_bwd, dot_work},
    {ATTN_LUONG_GENERAL, 1, SAVE_WEIGHTS, dot_fwd, dot_bwd, dot_work},
    {ATTN_BAHDANAU, 1, SAVE_WEIGHTS, additive_fwd, additive_bwd, NULL},
    {ATTN_LUONG_CONCAT, 1, SAVE_WEIGHTS, additive_fwd, additive_bwd, NULL},
};

static const MhaKind *kind_row(AttentionKind k) {
    for (size_t i = 0; i < sizeof KINDS / sizeof KINDS[0]; i++)
        if (KINDS[i].kind == k) return &KINDS[i];
    return NULL;
}

int mha_supports(AttentionKind kind, int causal, int D, int NH, const char *slot, char *why,
                 size_t why_len) {
    const MhaKind *r = kind_row(kind);
    if (!r) {
        snprintf(why, why_len, "%s = %s: a Transformer attention needs a kind (sdp, flash, "
                 "linear, efficient, luong_dot, luong_general, luong_concat or bahdanau)", slot,
                 attention_kind_names[kind]);
        return 0;
    }
    if (causal && !r->causal_ok) {
        snprintf(why, why_len, "%s = %s: efficient attention (Shen et al. 2021) normalises each "
                 "key column over the whole sequence, so it has no causal form for the decoder's "
                 "self-attention; set model.dec_self_attention to sdp, flash or linear", slot,
                 attention_kind_names[kind]);
        return 0;
    }
    if (NH < 1 || D % NH) {
        snprintf(why, why_len, "model.heads = %d must divide model.d_model = %d", NH, D);
        return 0;
    }
    return 1;
}

void mha_declare(Mha *a, ParamSet *ps, const char *prefix, AttentionKind kind, int D, int NH,
                 int causal) {
    char n[96];
    memset(a, 0, sizeof *a);
    a->kind = kind, a->D = D, a->NH = NH, a->HS = D / NH, a->causal = causal;
    CHECK(kind_row(kind) && D % NH == 0, "mha_declare: check mha_supports first");
    struct { Param *p; const char *s; int mat; } t[] = {
        {&a->W_q, "W_q", 1}, {&a->b_q, "b_q", 0}, {&a->W_k, "W_k", 1}, {&a->b_k, "b_k", 0},
        {&a->W_v, "W_v", 1}, {&a->b_v, "b_v", 0}, {&a->W_o, "W_o", 1}, {&a->b_o, "b_o", 0}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        snprintf(n, sizeof n, "%s.%s", prefix, t[i].s);
        if (t[i].mat) params_declare(ps, t[i].p, n, INIT_XAVIER, 2, D, D);
        else params_declare(ps, t[i].p, n, INIT_ZERO, 1, D, 0);
    }
    if (kind == ATTN_LUONG_GENERAL) {
        snprintf(n, sizeof n, "%s.W_a", prefix);
        params_declare(ps, &a->W_a, n, INIT_XAVIER, 2, D, D);
    }
    if (kind == ATTN_BAHDANAU || kind == ATTN_LUONG_CONCAT) {
        snprintf(n, sizeof n, "%s.v_a", prefix);
        params_declare(ps, &a->v_a, n, INIT_XAVIER, 2, NH, a->HS);
    }
}

size_t mha_workspace_floats(const Mha *a, const Backend *be, int B, int Tq, int Tk) {
    const MhaKind *r = kind_row(a->kind);
    return r->workspace ? r->workspace(be, B, a->NH, Tq, Tk, a->HS) : 0;
}

/* Floats saved by the kind for NQ = B·Tq query rows against Tk keys. */
static size_t save_floats(const Mha *a, long NQ, int Tk) {
    const MhaKind *r = kind_row(a->kind);
    return r->save == SAVE_WEIGHTS ? (size_t)NQ * a->NH * Tk
           : r->save == SAVE_LSE   ? (size_t)NQ * a->NH
                                   : 0;
}

size_t mha_acts_floats(const Mha *a, long NQ, long NK, int Tk_max) {
    return (4 * (size_t)NQ + 2 * (size_t)NK) * a->D + save_floats(a, NQ, Tk_max);
}

void mha_acts_carve(const Mha *a, MhaActs *acts, float *buf, int B, int Tq, int Tk) {
    size_t nq = (size_t)B * Tq * a->D, nk = (size_t)B * Tk * a->D;
    acts->qm = buf, buf += nq;
    acts->q = buf, buf += nq;
    acts->k = buf, buf += nk;
    acts->v = buf, buf += nk;
    acts->o = buf, buf += nq;
    acts->om = buf, buf += nq;
    acts->save = save_floats(a, (long)B * Tq, Tk) ? buf : NULL;
}

/* ---------------------------------------------------------------------------------------- */
/* projections                                                                              */

/* y[N,D] = x W_ᵀ + b */
static void linear(const Backend *be, float *y, const float *x, const Param *W, const Param *b,
                   int N, int D) {
    be->matmul(y, x, W->w, N, D, D, 0, 1, 1.0f, 0.0f);
    be->bias_forward(y, b->w, N, D);
}

/* y = x Wᵀ + b  →  dx += dy W, dW += dyᵀ x, db += Σ dy */
static void linear_backward(const Backend *be, float *dx, const float *dy, const float *x,
                            const Param *W, const Param *b, int N, int D) {
    if (dx) be->matmul(dx, dy, W->w, N, D, D, 0, 0, 1.0f, 1.0f);
    be->matmul(W->g, dy, x, D, D, N, 1, 0, 1.0f, 1.0f);
    be->bias_backward(b->g, dy, N, D);
}

void mha_attend(const Mha *a, const Backend *be, float *o, float *save, const float *q,
                const float *k, const float *v, const MhaMask *mask, int B, int Tq, int Tk,
                float *work, size_t work_cap) {
    CHECK(mha_workspace_floats(a, be, B, Tq, Tk) <= work_cap,
          "attention workspace too small: reserve after setting the thread count");
    kind_row(a->kind)->forward(a, be, o, save, q, k, v, mask, B, Tq, Tk, work);
}

void mha_project_q(const Mha *a, const Backend *be, float *q, float *qm, float *tmp,
                   const float *xq, int B, int Tq) {
    int D = a->D, Nq = B * Tq;
    linear(be, qm, xq, &a->W_q, &a->b_q, Nq, D); /* q = xq W_qᵀ + b_q */
    const float *src = qm;
    if (a->kind == ATTN_LUONG_GENERAL) { /* q' = q W_a */
        be->matmul(tmp, qm, a->W_a.w, Nq, D, D, 0, 0, 1.0f, 0.0f);
        src = tmp;
    }
    be->permute0213_forward(q, src, B, Tq, a->NH, a->HS); /* [B,Tq,NH,HS] → [B,NH,Tq,HS] */
}

void mha_project_kv(const Mha *a, const Backend *be, float *k, float *v, float *tmp,
                    const float *xkv, int B, int Tk) {
    int D = a->D, Nk = B * Tk;
    linear(be, tmp, xkv, &a->W_k, &a->b_k, Nk, D); /* k = xkv W_kᵀ + b_k */
    be->permute0213_forward(k, tmp, B, Tk, a->NH, a->HS);
    linear(be, tmp, xkv, &a->W_v, &a->b_v, Nk, D); /* v = xkv W_vᵀ + b_v */
    be->permute0213_forward(v, tmp, B, Tk, a->NH, a->HS);
}

void mha_project_out(const Mha *a, const Backend *be, float *out, float *om, const float *o,
                     int B, int Tq) {
    be->permute0213_forward(om, o, B, a->NH, Tq, a->HS); /* concat_h o_h */
    linear(be, out, om, &a->W_o, &a->b_o, B * Tq, a->D); /* out = om W_oᵀ + b_o */
}

void mha_forward(const Mha *a, const Backend *be, float *out, MhaActs *acts, const float *xq,
                 const float *xkv, const MhaMask *mask, int B, int Tq, int Tk,
                 MhaScratch *scr) {
    mha_project_q(a, be, acts->q, acts->qm, scr->m1, xq, B, Tq);
    mha_project_kv(a, be, acts->k, acts->v, scr->m2, xkv, B, Tk);
    mha_attend(a, be, acts->o, acts->save, acts->q, acts->k, acts->v, mask, B, Tq, Tk, scr->work,
               scr->work_cap);
    mha_project_out(a, be, out, acts->om, acts->o, B, Tq);
}

void mha_backward(const Mha *a, const Backend *be, float *dxq, float *dxkv, const float *dout,
                  const MhaActs *acts, const float *xq, const float *xkv, const MhaMask *mask,
                  int B, int Tq, int Tk, MhaScratch *scr) {
    int D = a->D, NH = a->NH, HS = a->HS, Nq = B * Tq, Nk = B * Tk;
    size_t bq = sizeof(float) * Nq * D, bk = sizeof(float) * Nk * D;
    float *dom = scr->m1, *dO = scr->h1, *dq = scr->h2, *dk = scr->h3, *dv = scr->h4;
    /* out = om W_oᵀ + b_o */
    be->zero(dom, bq);
    linear_backward(be, dom, dout, acts->om, &a->W_o, &a->b_o, Nq, D);
    /* om = merge(o) */
    be->zero(dO, bq);
    be->permute0213_backward(dO, dom, B, NH, Tq, HS);
    /* o = attend(q, k, v) */
    be->zero(dq, bq), be->zero(dk, bk), be->zero(dv, bk);
    kind_row(a->kind)->backward(a, be, dq, dk, dv, dO, acts->o, acts->save, acts->q, acts->k,
                                acts->v, mask, B, Tq, Tk, scr->work);
    /* q = split(q'), q' = qm W_a (general) or qm */
    float *dqm = scr->m1;
    be->zero(dqm, bq);
    be->permute0213_backward(dqm, dq, B, Tq, NH, HS);
    if (a->kind == ATTN_LUONG_GENERAL) { /* dW_a += qmᵀ dq', dqm = dq' W_aᵀ */
        be->matmul(a->W_a.g, acts->qm, dqm, D, D, Nq, 1, 0, 1.0f, 1.0f);
        be->matmul(scr->m2, dqm, a->W_a.w, Nq, D, D, 0, 1, 1.0f, 0.0f);
        dqm = scr->m2;
    }
    linear_backward(be, dxq, dqm, xq, &a->W_q, &a->b_q, Nq, D); /* qm = xq W_qᵀ + b_q */
    /* k = split(xkv W_kᵀ + b_k), v likewise */
    float *dkm = scr->m3;
    be->zero(dkm, bk);
    be->permute0213_backward(dkm, dk, B, Tk, NH, HS);
    linear_backward(be, dxkv, dkm, xkv, &a->W_k, &a->b_k, Nk, D);
    be->zero(dkm, bk);
    be->permute0213_backward(dkm, dv, B, Tk, NH, HS);
    linear_backward(be, dxkv, dkm, xkv, &a->W_v, &a->b_v, Nk, D);
}

/* ---------------------------------------------------------------------------------------- */
/* attention maps                                                                           */

static float phi_host(float x) { return x > 0.0f ? x + 1.0f : expf(x); }

void mha_weights_host(AttentionKind kind, float *w, const float *q, const float *k,
                      const float *v_a, const int *key_len, int R, int NH, int HS, int Tk) {
    float *e = xmalloc(sizeof(float) * (Tk > 0 ? Tk : 1));
    float *P = xmalloc(sizeof(float) * HS), *mx = xmalloc(sizeof(float) * HS);
    float *den = xmalloc(sizeof(float) * HS);
    for (int r = 0; r < R; r++) {
        int len = key_len[r] < Tk ? key_len[r] : Tk;
        float *wr = w + (size_t)r * Tk;
        memset(wr, 0, sizeof(float) * Tk);
        for (int h = 0; h < NH && len > 0; h++) {
            const float *qh = q + ((size_t)r * NH + h) * HS;
            const float *kh = k + ((size_t)r * NH + h) * Tk * HS;
            double z = 0;
            if (kind == ATTN_LINEAR || kind == ATTN_EFFICIENT) {
                if (kind == ATTN_EFFICIENT) { /* ρ_q(q), and the column softmax of k */
                    float m = -INFINITY, zq = 0;
                    for (int d = 0; d < HS; d++) m = qh[d] > m ? qh[d] : m;
                    for (int d = 0; d < HS; d++) zq += (P[d] = expf(qh[d] - m));
                    for (int d = 0; d < HS; d++) P[d] /= zq, mx[d] = -INFINITY, den[d] = 0;
                    for (int s = 0; s < len; s++)
                        for (int d = 0; d < HS; d++)
                            mx[d] = kh[(size_t)s * HS + d] > mx[d] ? kh[(size_t)s * HS + d] : mx[d];
                    for (int s = 0; s < len; s++)
                        for (int d = 0; d < HS; d++) den[d] += expf(kh[(size_t)s * HS + d] - mx[d]);
                } else {
                    for (int d = 0; d < HS; d++) P[d] = phi_host(qh[d]);
                }
                for (int s = 0; s < len; s++) {
                    double acc = 0;
                    for (int d = 0; d < HS; d++) {
                        float kv = kh[(size_t)s * HS + d];
                        acc += P[d] * (kind == ATTN_LINEAR ? phi_host(kv)
                                                           : expf(kv - mx[d]) / den[d]);
                    }
                    e[s] = (float)acc, z += acc;
                }
                for (int s = 0; s < len; s++) wr[s] += (float)(e[s] / z) / NH;
                continue;
            }
            float m = -INFINITY, scale = kind == ATTN_SDP || kind == ATTN_FLASH
                                             ? 1.0f / sqrtf((float)HS) : 1.0f;
            for (int s = 0; s < len; s++) {
                double acc = 0;
                for (int d = 0; d < HS; d++) {
                    float qd = qh[d], kd = kh[(size_t)s * HS + d];
                    acc += kind == ATTN_BAHDANAU || kind == ATTN_LUONG_CONCAT
                               ? v_a[(size_t)h * HS + d] * tanhf(qd + kd)
                               : qd * kd * scale;
                }
                e[s] = (float)acc;
                m = e[s] > m ? e[s] : m;
            }
            for (int s = 0; s < len; s++) z += (e[s] = expf(e[s] - m));
            for (int s = 0; s < len; s++) wr[s] += (float)(e[s] / z) / NH;
        }
    }
    free(e), free(P), free(mx), free(den);
}
