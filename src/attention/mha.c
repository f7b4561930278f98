/* mha.c — the projections and heads around the attention table (mha.h): multi-head attention
 * for the Transformer (Vaswani et al. 2017 §3.2.2) and the RNN decoder's attention without
 * projections. What happens between the heads is the kind's row (attention.h).
 *
 * Legend: B batch, Tq / Tk query / key positions, D model width, NH heads, HS head size,
 * Nq = B·Tq and Nk = B·Tk rows of the merged [·, D] layout; RNN: Dq decoder width, Dk encoder
 * output width, A additive score size. */
#include "attention/mha.h"
#include "attention/kinds.h"

#include <string.h>

/* ---------------------------------------------------------------------------------------- */
/* Transformer: parameters and memory                                                       */

void mha_declare(Mha *a, ParamSet *ps, const char *prefix, AttentionKind kind, int D, int NH,
                 int causal, const AttentionOptions *opt) {
    char n[96];
    memset(a, 0, sizeof *a);
    a->D = D, a->NH = NH, a->HS = D / NH, a->causal = causal;
    struct { Param *p; const char *s; int mat; } t[] = {
        {&a->W_q, "W_q", 1}, {&a->b_q, "b_q", 0}, {&a->W_k, "W_k", 1}, {&a->b_k, "b_k", 0},
        {&a->W_v, "W_v", 1}, {&a->b_v, "b_v", 0}, {&a->W_o, "W_o", 1}, {&a->b_o, "b_o", 0}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        snprintf(n, sizeof n, "%s.%s", prefix, t[i].s);
        if (t[i].mat) params_declare(ps, t[i].p, n, INIT_XAVIER, 2, D, D);
        else params_declare(ps, t[i].p, n, INIT_ZERO, 1, D, 0);
    }
    attention_declare(&a->at, ps, prefix, kind, D, D, NH, 0, INIT_XAVIER, opt);
}

size_t mha_workspace_floats(const Mha *a, const Backend *be, int B, int Tq, int Tk) {
    return attention_workspace(&a->at, be, B, Tq, Tk);
}

size_t mha_acts_floats(const Mha *a, long NQ, long NK, int Tk_max) {
    return (4 * (size_t)NQ + 2 * (size_t)NK) * a->D + attention_save_floats(&a->at, NQ, Tk_max);
}

void mha_acts_carve(const Mha *a, MhaActs *acts, float *buf, int B, int Tq, int Tk) {
    size_t nq = (size_t)B * Tq * a->D, nk = (size_t)B * Tk * a->D;
    acts->qm = buf, buf += nq;
    acts->q = buf, buf += nq;
    acts->k = buf, buf += nk;
    acts->v = buf, buf += nk;
    acts->o = buf, buf += nq;
    acts->om = buf, buf += nq;
    acts->save = attention_save_floats(&a->at, (long)B * Tq, Tk) ? buf : NULL;
}

/* ---------------------------------------------------------------------------------------- */
/* Transformer: projections                                                                 */

/* y[N,D] = x W_ᵀ + b */
static void linear(const Backend *be, float *y, const float *x, const Param *W, const Param *b,
                   int N, int D) {
    be->matmul_bias_forward(y, x, W->w, b->w, N, D, D, 0);
}

/* y = x Wᵀ + b  →  dx = dx_keep · dx + dy W (dx_keep 1: accumulate, 0: overwrite),
 * dW += dyᵀ x: the two products, inside the caller's matmul run (dy rounded once at bf16) */
static void linear_backward_products(const Backend *be, float *dx, float dx_keep,
                                     const float *dy, const float *x, const Param *W, int N,
                                     int D) {
    if (dx) be->matmul(dx, dy, W->w, N, D, D, 0, 0, 1.0f, dx_keep);
    be->matmul(W->g, dy, x, D, D, N, 1, 0, 1.0f, 1.0f);
}

/* linear_backward_products in a run of their own, then db += Σ dy */
static void linear_backward(const Backend *be, float *dx, float dx_keep, const float *dy,
                            const float *x, const Param *W, const Param *b, int N, int D) {
    backend_matmul_run(be, 1);
    linear_backward_products(be, dx, dx_keep, dy, x, W, N, D);
    backend_matmul_run(be, 0);
    be->bias_backward(b->g, dy, N, D);
}

void mha_attend(const Mha *a, const Backend *be, float *o, float *save, const float *q,
                const float *k, const float *v, const MhaMask *mask, int B, int Tq, int Tk,
                float *work, size_t work_cap) {
    CHECK(mha_workspace_floats(a, be, B, Tq, Tk) <= work_cap,
          "attention workspace too small: reserve after setting the thread count");
    attention_forward(&a->at, be, o, save, q, k, v, mask->key_len, mask->causal, B, Tq, Tk,
                      work);
}

void mha_project_q(const Mha *a, const Backend *be, float *q, float *qm, float *tmp,
                   const float *xq, int B, int Tq) {
    int D = a->D, Nq = B * Tq;
    linear(be, qm, xq, &a->W_q, &a->b_q, Nq, D); /* q = xq W_qᵀ + b_q */
    const float *src = qm;
    if (a->at.q_transform) { /* the kind's own query transform (luong_general: q W_a) */
        attention_query_forward(&a->at, be, tmp, qm, Nq);
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
    if (attention_merged_ok(&a->at, be)) { /* the heads stay merged: qm, k, v, om [B, T, D] */
        /* the backward's workspace, checked here as mha_attend does */
        CHECK(mha_workspace_floats(a, be, B, Tq, Tk) <= scr->work_cap,
              "attention workspace too small: reserve after setting the thread count");
        backend_matmul_run(be, 1); /* xq (= xkv in self-attention) rounded once at bf16 */
        linear(be, acts->qm, xq, &a->W_q, &a->b_q, B * Tq, a->D);
        linear(be, acts->k, xkv, &a->W_k, &a->b_k, B * Tk, a->D);
        linear(be, acts->v, xkv, &a->W_v, &a->b_v, B * Tk, a->D);
        backend_matmul_run(be, 0);
        attention_forward_merged(&a->at, be, acts->om, acts->save, acts->qm, acts->k, acts->v,
                                 mask->key_len, mask->causal, B, Tq, Tk);
        backend_matmul_keep(be, acts->om, (size_t)B * Tq * a->D); /* read again by dW_o */
        linear(be, out, acts->om, &a->W_o, &a->b_o, B * Tq, a->D);
        return;
    }
    mha_project_q(a, be, acts->q, acts->qm, scr->m1, xq, B, Tq);
    mha_project_kv(a, be, acts->k, acts->v, scr->m2, xkv, B, Tk);
    mha_attend(a, be, acts->o, acts->save, acts->q, acts->k, acts->v, mask, B, Tq, Tk, scr->work,
               scr->work_cap);
    /* mha_project_out, with om kept for dW_o (decoding's om is scratch: not kept) */
    be->permute0213_forward(acts->om, acts->o, B, a->NH, Tq, a->HS);
    backend_matmul_keep(be, acts->om, (size_t)B * Tq * a->D);
    linear(be, out, acts->om, &a->W_o, &a->b_o, B * Tq, a->D);
}

void mha_backward(const Mha *a, const Backend *be, float *dxq, float dxq_keep, float *dxkv,
                  const float *dout, const MhaActs *acts, const float *xq, const float *xkv,
                  const MhaMask *mask, int B, int Tq, int Tk, MhaScratch *scr) {
    int D = a->D, NH = a->NH, HS = a->HS, Nq = B * Tq, Nk = B * Tk;
    size_t bq = sizeof(float) * Nq * D, bk = sizeof(float) * Nk * D;
    float *dom = scr->m1, *dO = scr->h1, *dq = scr->h2, *dk = scr->h3, *dv = scr->h4;
    /* out = om W_oᵀ + b_o */
    linear_backward(be, dom, 0.0f, dout, acts->om, &a->W_o, &a->b_o, Nq, D);
    if (attention_merged_ok(&a->at, be)) { /* as mha_forward: no split or merge */
        /* dq, dk, dv written whole (the merged backward overwrites) */
        attention_backward_merged(&a->at, be, dq, dk, dv, dom, acts->save, acts->qm, acts->k,
                                  acts->v, B, Tq, Tk, scr->work);
        /* the six products in one run (each of dq, dk, dv and xkv rounded once at bf16),
         * then the biases */
        backend_matmul_run(be, 1);
        linear_backward_products(be, dxq, dxq_keep, dq, xq, &a->W_q, Nq, D);
        linear_backward_products(be, dxkv, 1.0f, dk, xkv, &a->W_k, Nk, D);
        linear_backward_products(be, dxkv, 1.0f, dv, xkv, &a->W_v, Nk, D);
        backend_matmul_run(be, 0);
        be->bias_backward(a->b_q.g, dq, Nq, D);
        be->bias_backward(a->b_k.g, dk, Nk, D);
        be->bias_backward(a->b_v.g, dv, Nk, D);
        return;
    }
    /* Each permutation's gradient is the inverse permutation, written whole (no zeroing and
     * accumulating pass): permute0213_forward with the two middle axes swapped. */
    /* om = merge(o): [B,NH,Tq,HS] → [B,Tq,NH,HS] */
    be->permute0213_forward(dO, dom, B, Tq, NH, HS);
    /* o = attend(q, k, v) */
    be->zero(dq, bq), be->zero(dk, bk), be->zero(dv, bk);
    attention_backward(&a->at, be, dq, dk, dv, dO, acts->o, acts->save, acts->q, acts->k, acts->v,
                       mask->key_len, mask->causal, B, Tq, Tk, scr->work);
    /* q = split(q'), q' = the kind's transform of qm (luong_general: qm W_a), or qm */
    float *dqm = scr->m1;
    be->permute0213_forward(dqm, dq, B, NH, Tq, HS);
    if (a->at.q_transform) {
        be->zero(scr->m2, bq);
        attention_query_backward(&a->at, be, scr->m2, dqm, acts->qm, Nq);
        dqm = scr->m2;
    }
    linear_backward(be, dxq, dxq_keep, dqm, xq, &a->W_q, &a->b_q, Nq, D); /* qm = xq W_qᵀ + b_q */
    /* k = split(xkv W_kᵀ + b_k), v likewise */
    float *dkm = scr->m3;
    be->permute0213_forward(dkm, dk, B, NH, Tk, HS);
    linear_backward(be, dxkv, 1.0f, dkm, xkv, &a->W_k, &a->b_k, Nk, D);
    be->permute0213_forward(dkm, dv, B, NH, Tk, HS);
    linear_backward(be, dxkv, 1.0f, dkm, xkv, &a->W_v, &a->b_v, Nk, D);
}

/* ---------------------------------------------------------------------------------------- */
/* attention maps                                                                           */

void mha_weights_host(const Attention *a, float *w, const float *q, const float *k,
                      const float *v_a, const int *key_len, int R, int Tk) {
    int NH = a->NH, HS = a->k_transform ? a->A : a->HS; /* the width of q and k */
    CHECK(a->ops->weights_host, "attention maps of a kind without host weights (linformer): "
                                "callers ask model_has_attention first");
    float *wh = xmalloc(sizeof(float) * (Tk > 0 ? Tk : 1));
    for (int r = 0; r < R; r++) {
        int len = key_len[r] < Tk ? key_len[r] : Tk;
        float *wr = w + (size_t)r * Tk;
        memset(wr, 0, sizeof(float) * Tk);
        for (int h = 0; h < NH && len > 0; h++) {
            a->ops->weights_host(wh, q + ((size_t)r * NH + h) * HS,
                                    k + ((size_t)r * NH + h) * Tk * HS,
                                    v_a ? v_a + (size_t)h * HS : NULL, len, HS);
            for (int s = 0; s < len; s++) wr[s] += wh[s] / NH;
        }
    }
    free(wh);
}

/* ---------------------------------------------------------------------------------------- */
/* the RNN decoder's attention                                                              */

void rnn_attn_declare(RnnAttn *r, ParamSet *ps, const char *prefix, AttentionKind kind, int Dq,
                      int Dk, int heads, const AttentionOptions *opt) {
    memset(r, 0, sizeof *r);
    int NH = attention_row(kind)->multi_head ? heads : 1;
    attention_declare(&r->at, ps, prefix, kind, Dq, Dk, NH, 1, INIT_UNIFORM, opt);
    if (!attention_row(kind)->multi_head) return;
    char name[128];
    r->proj = 1;
    snprintf(name, sizeof name, "%s.W_q", prefix);
    params_declare(ps, &r->W_q, name, INIT_UNIFORM, 2, Dq, Dk);
    snprintf(name, sizeof name, "%s.W_k", prefix);
    params_declare(ps, &r->W_k, name, INIT_UNIFORM, 2, Dk, Dk);
}

/* Keys prepared once per batch: U h̄ (additive), or the key heads of h̄ W_k and the value heads
 * of h̄ (multi-head); then the kind's summary of them where it has one (attention.h). */
static int kbuf_width(const RnnAttn *r) {
    return r->proj ? 2 * r->at.Dk : r->at.k_transform ? r->at.A : 0;
}

static size_t summary_floats(const RnnAttn *r, int B, int Tk) {
    return r->at.ops->summary_floats ? r->at.ops->summary_floats(&r->at, B, Tk) : 0;
}

/* The kinds' summaries take α·B + β·B·Tk floats, so B and ⌈NK / B⌉ bound every smaller call. */
size_t rnn_attn_kbuf_floats(const RnnAttn *r, long NK, int B) {
    int Tk = B > 0 ? (int)((NK + B - 1) / B) : 0;
    return (size_t)NK * kbuf_width(r) + summary_floats(r, B, Tk);
}

/* The summary in kbuf (and its gradient in dkbuf): after the B·Tk prepared keys; NULL without. */
static float *summary_of(const RnnAttn *r, float *buf, int B, int Tk) {
    return summary_floats(r, B, Tk) ? buf + (size_t)B * Tk * kbuf_width(r) : NULL;
}

size_t rnn_attn_save_floats(const RnnAttn *r, long NQ, int Tk) {
    return attention_save_floats(&r->at, NQ, Tk);
}

int rnn_attn_qsave_width(const RnnAttn *r) { return attention_query_width(&r->at); }

/* Queries and outputs are split into heads through work only for NH > 1 and Tq > 1 (with
 * Tq = 1, [B,1,NH,HS] is [B,NH,1,HS]). */
static int split(const RnnAttn *r, int Tq) { return r->at.NH > 1 && Tq > 1; }

size_t rnn_attn_workspace(const RnnAttn *r, const Backend *be, int B, int Tq, int Tk) {
    size_t n = (size_t)B * Tq;
    return n * rnn_attn_qsave_width(r) + (split(r, Tq) ? 4 * n * r->at.Dk : 0) +
           attention_workspace(&r->at, be, B, Tq, Tk);
}

/* The keys and values of the core call: k = kbuf (U h̄ or key heads) or h̄; v = the value heads
 * after the B·Tk·Dk floats of key heads, or h̄. */
static const float *core_k(const RnnAttn *r, const float *enc) {
    return kbuf_width(r) ? r->kbuf : enc;
}
static const float *core_v(const RnnAttn *r, const float *enc, int B, int Tk) {
    return r->proj ? r->kbuf + (size_t)B * Tk * r->at.Dk : enc;
}
/* Where their gradients go: dkbuf (prepared keys, key and value heads) or denc. */
static float *core_dk(const RnnAttn *r, float *denc) { return kbuf_width(r) ? r->dkbuf : denc; }
static float *core_dv(const RnnAttn *r, float *denc, int B, int Tk) {
    return r->proj ? r->dkbuf + (size_t)B * Tk * r->at.Dk : denc;
}

void rnn_attn_begin(const RnnAttn *r, const Backend *be, const float *enc, const int *key_len,
                    int B, int Tk) {
    const Attention *a = &r->at;
    if (!rnn_attn_kbuf_floats(r, (long)B * Tk, B)) return;
    if (r->proj) {
        float *vh = r->kbuf + (size_t)B * Tk * a->Dk;
        attention_proj_forward(be, vh, enc, &r->W_k, B * Tk, a->Dk, a->Dk, 0); /* k' = h̄ W_k */
        be->permute0213_forward(r->kbuf, vh, B, Tk, a->NH, a->HS);              /* key heads */
        be->permute0213_forward(vh, enc, B, Tk, a->NH, a->HS);                  /* value heads */
    } else if (a->k_transform) a->ops->keys_forward(a, be, r->kbuf, enc, B * Tk); /* h̄ Uᵀ */
    float *sum = summary_of(r, r->kbuf, B, Tk);
    if (sum)
        a->ops->summary_forward(a, be, sum, core_k(r, enc), core_v(r, enc, B, Tk), key_len, B,
                                Tk);
    be->zero(r->dkbuf, sizeof(float) * rnn_attn_kbuf_floats(r, (long)B * Tk, B));
}

void rnn_attn_forward(const RnnAttn *r, const Backend *be, float *ctx, float *save, float *qsave,
                      const float *q, const float *enc, const int *key_len, int B, int Tq,
                      int Tk, float *work) {
    const Attention *a = &r->at;
    if (r->proj) /* q W_q */
        attention_proj_forward(be, qsave, q, &r->W_q, B * Tq, a->Dq, a->Dk, 0);
    else attention_query_forward(a, be, qsave, q, B * Tq); /* general: h W_a; additive: W_q h */
    const float *qh = qsave;
    float *oh = ctx;
    if (split(r, Tq)) { /* [B,Tq,NH,HS] → [B,NH,Tq,HS] */
        size_t n = (size_t)B * Tq * a->Dk;
        float *qs = work, *os = work + n;
        be->permute0213_forward(qs, qsave, B, Tq, a->NH, a->HS);
        qh = qs, oh = os, work += 2 * n;
    }
    const float *sum = summary_of(r, r->kbuf, B, Tk);
    if (sum) a->ops->forward_summary(a, be, oh, qh, sum, B, Tq, work);
    else attention_forward(a, be, oh, save, qh, core_k(r, enc), core_v(r, enc, B, Tk), key_len, 0,
                           B, Tq, Tk, work);
    if (oh != ctx) be->permute0213_forward(ctx, oh, B, a->NH, Tq, a->HS); /* merge the heads */
}

void rnn_attn_backward(const RnnAttn *r, const Backend *be, float *dq, float *denc,
                       const float *dctx, const float *ctx, const float *save, const float *q,
                       const float *qsave, const float *enc, const int *key_len, int B, int Tq,
                       int Tk, float *work) {
    const Attention *a = &r->at;
    size_t nq = (size_t)B * Tq * rnn_attn_qsave_width(r);
    float *dqp = work; /* [B,Tq, qsave width] */
    work += nq;
    be->zero(dqp, sizeof(float) * nq);
    const float *qh = qsave, *oh = ctx, *doh = dctx;
    float *dqh = dqp;
    if (split(r, Tq)) { /* the heads of q, o, dout; dq in heads, merged below */
        size_t n = (size_t)B * Tq * a->Dk;
        float *qs = work, *os = work + n, *ds = work + 2 * n, *dqs = work + 3 * n;
        be->permute0213_forward(qs, qsave, B, Tq, a->NH, a->HS);
        be->permute0213_forward(os, ctx, B, Tq, a->NH, a->HS);
        be->permute0213_forward(ds, dctx, B, Tq, a->NH, a->HS);
        be->zero(dqs, sizeof(float) * n);
        qh = qs, oh = os, doh = ds, dqh = dqs, work += 4 * n;
    }
    const float *sum = summary_of(r, r->kbuf, B, Tk);
    if (sum) /* dk, dv at rnn_attn_end_backward, from the summed summary gradient */
        a->ops->backward_summary(a, be, dqh, summary_of(r, r->dkbuf, B, Tk), doh, qh, sum, B, Tq,
                                 work);
    else attention_backward(a, be, dqh, core_dk(r, denc), core_dv(r, denc, B, Tk), doh, oh, save,
                            qh, core_k(r, enc), core_v(r, enc, B, Tk), key_len, 0, B, Tq, Tk,
                            work);
    if (dqh != dqp) be->permute0213_backward(dqp, dqh, B, Tq, a->NH, a->HS);
    if (r->proj) attention_proj_backward(be, dq, dqp, q, &r->W_q, B * Tq, a->Dq, a->Dk, 0);
    else attention_query_backward(a, be, dq, dqp, q, B * Tq);
}

void rnn_attn_end_backward(const RnnAttn *r, const Backend *be, float *denc, const float *enc,
                           const int *key_len, int B, int Tk) {
    const Attention *a = &r->at;
    float *dsum = summary_of(r, r->dkbuf, B, Tk);
    if (dsum) /* into the key heads' gradient (dkbuf), or denc for one head */
        a->ops->summary_backward(a, be, core_dk(r, denc), core_dv(r, denc, B, Tk), dsum,
                                 summary_of(r, r->kbuf, B, Tk), core_k(r, enc),
                                 core_v(r, enc, B, Tk), key_len, B, Tk);
    if (r->proj) {
        size_t n = (size_t)B * Tk * a->Dk;
        float *dvh = r->dkbuf + n, *dkp = dvh; /* the value heads' gradient, then dk' merged */
        be->permute0213_backward(denc, dvh, B, Tk, a->NH, a->HS); /* values: denc += merged */
        be->zero(dkp, sizeof(float) * n);
        be->permute0213_backward(dkp, r->dkbuf, B, Tk, a->NH, a->HS); /* dk' [B·Tk, Dk] */
        attention_proj_backward(be, denc, dkp, enc, &r->W_k, B * Tk, a->Dk, a->Dk, 0);
    } else if (a->k_transform) a->ops->keys_backward(a, be, denc, r->dkbuf, enc, B * Tk);
}

void rnn_attn_weights(const RnnAttn *r, const Backend *be, float *w, const float *qsave,
                      const float *enc, const int *key_len, int B, int Tk) {
    const Attention *a = &r->at;
    size_t nq = (size_t)B * rnn_attn_qsave_width(r);
    size_t nk = (size_t)B * Tk * (a->k_transform ? a->A : a->Dk); /* the keys alone */
    float *hq = xmalloc(sizeof(float) * nq), *hk = xmalloc(sizeof(float) * nk);
    float *hw = xmalloc(sizeof(float) * ((size_t)B * Tk + 1)), *hv = NULL;
    int *hl = xmalloc(sizeof(int) * B);
    be->download(hq, qsave, sizeof(float) * nq);
    be->download(hk, core_k(r, enc), sizeof(float) * nk);
    be->download(hl, key_len, sizeof(int) * B);
    if (a->v_a.w) {
        size_t nv = (size_t)a->NH * (a->k_transform ? a->A : a->HS);
        hv = xmalloc(sizeof(float) * nv);
        be->download(hv, a->v_a.w, sizeof(float) * nv);
    }
    mha_weights_host(a, hw, hq, hk, hv, hl, B, Tk);
    be->upload(w, hw, sizeof(float) * (size_t)B * Tk);
    free(hq), free(hk), free(hw), free(hv), free(hl);
}
