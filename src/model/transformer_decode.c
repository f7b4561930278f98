/* transformer_decode.c — incremental decoding of the Transformer (transformer.h): the caches
 * (each decoder layer's self-attention state, a KV cache or linear attention's running sums,
 * through the attention table; the cross-attention's keys and values once per sentence),
 * decode_begin / step / reorder, and the cross-attention map. Shapes as in transformer.c's
 * legend; R = B·K rows, Tc cache capacity. */
#include <math.h>
#include <string.h>

#include "model/transformer_internal.h"

/* ---------------------------------------------------------------------------------------- */
/* incremental decoding                                                                     */

static float *dact(TfModel *m, size_t n) { return acts_floats(&m->dacts, m->be, n); }
static int *diact(TfModel *m, size_t n) {
    return (int *)acts_alloc(&m->dacts, m->be, sizeof(int) * n);
}

/* The decoding buffers' sizes for R rows of B sentences, S source positions, Tc cached steps.
 * The buffers' layouts follow the current call's R, S and Tc, so each needs only the largest
 * size any call asks of it, not the product of the largest R, S and Tc: translate_lines' batches
 * of many short sentences and of few long ones share them. Grows m->dcap (never shrinks);
 * returns 1 if any size grew. */
static int decode_grow(TfModel *m, int R, int B, int S, int Tc) {
    /* save: what one step's self- and cross-attention save for R queries, as each row sizes
     * it (attention_save_floats: the weights of one query, or more, such as luong_local's
     * windows, which may hold more floats than a short source's keys) */
    size_t st = 0, work = 0, save = 0;
    for (int l = 0; l < m->Ld; l++) {
        size_t s = attention_state_floats(&m->dec[l].self.at, R, Tc);
        size_t a = mha_workspace_floats(&m->dec[l].self, m->be, R, 1, Tc);
        size_t c = mha_workspace_floats(&m->dec[l].cross, m->be, R, 1, S);
        /* what one step's self- and cross-attention save (the weights of one query, or more:
         * attention_save_floats) */
        size_t vs = attention_save_floats(&m->dec[l].self.at, R, Tc);
        size_t vc = attention_save_floats(&m->dec[l].cross.at, R, S);
        st = s > st ? s : st;
        work = a > work ? a : work;
        work = c > work ? c : work;
        save = vs > save ? vs : save;
        save = vc > save ? vc : save;
    }
    DecodeCaps need = {(size_t)R, (size_t)R * S, (size_t)B * S, save, st, work, (size_t)Tc};
    DecodeCaps *cap = &m->dcap;
    int grew = 0;
#define GROW(f) if (need.f > cap->f) cap->f = need.f, grew = 1
    GROW(R); GROW(RS); GROW(BS); GROW(save); GROW(state); GROW(work); GROW(Tc);
#undef GROW
    return grew;
}

/* (Re)allocates every decoding buffer at m->dcap's sizes. */
static void decode_alloc(TfModel *m) {
    const DecodeCaps *cap = &m->dcap;
    size_t R = cap->R, D = (size_t)m->D, NH = (size_t)m->NH;
    acts_free(&m->dacts, m->be);
    tf_reserve_positions(m, (int)cap->Tc);
    for (int l = 0; l < m->Ld; l++) {
        DecCache *c = &m->dc[l];
        memset(c, 0, sizeof *c);
        for (int i = 0; i < 2; i++) c->st[i] = dact(m, cap->state);
        c->ck = dact(m, cap->RS * D), c->cv = dact(m, cap->RS * D);
    }
    m->h_rlen = xrealloc(m->h_rlen, sizeof(int) * R);
    m->h_parent = xrealloc(m->h_parent, sizeof(int) * R);
    m->h_step = xrealloc(m->h_step, sizeof(int) * R);
    m->h_parent_bh = xrealloc(m->h_parent_bh, sizeof(int) * R * NH);
    m->d_rlen = diact(m, R), m->d_rowmap = diact(m, R);
    m->d_step = diact(m, R);
    m->d_parent_bh = diact(m, R * NH);
    float **rd[] = {&m->x1, &m->a1, &m->q1, &m->k1, &m->v1, &m->o1, &m->f1, &m->t1, &m->t2,
                    &m->qlast};
    for (size_t i = 0; i < sizeof rd / sizeof rd[0]; i++) *rd[i] = dact(m, R * D);
    m->h1 = dact(m, R * m->F);
    m->lnm = dact(m, R), m->lnr = dact(m, R);
    m->save1 = dact(m, cap->save);
    m->dlog = dact(m, R * m->V), m->dlogp = dact(m, R * m->V);
    m->W_outT = dact(m, (size_t)m->V * D);
    m->dattn = dact(m, cap->RS);
    m->tmp_rows = dact(m, cap->BS * D);
    m->dwork = dact(m, cap->work + 1);
    m->dcap_stale = 0;
}

void transformer_decode_plan(TfModel *m, int B, int K, int S, int max_T) {
    if (decode_grow(m, B * K, B, S, max_T)) m->dcap_stale = 1;
}

void transformer_decode_begin(TfModel *m, const TokenBatch *b, int K, int max_T) {
    const Backend *be = m->be;
    tf_use_batch(m, b);
    int B = m->B, S = m->S, R = B * K, D = m->D;
    const float *enc_in[2 * TF_MAXL];
    tf_encoder_forward(m, 0, 0, enc_in); /* also refreshes W2ᵀ */
    if (decode_grow(m, R, B, S, max_T) || m->dcap_stale) decode_alloc(m);
    be->transpose01_forward(m->W_outT, tf_W_out(m)->w, m->V, D, 1);
    m->R = R, m->K = K, m->Sd = S, m->Tc = max_T, m->cur = 0;
    for (int r = 0; r < R; r++) m->h_parent[r] = r / K; /* the row map: row r reads sentence r / K */
    be->upload(m->d_rowmap, m->h_parent, sizeof(int) * R);
    /* key lengths per row, on the device (gather_rows copies 4-byte words unchanged, so it
     * carries int32 lengths as well as floats), and on the host for decode_attention's maps */
    be->gather_rows((float *)m->d_rlen, (const float *)b->src_len, m->d_rowmap, R, 1);
    be->download(m->h_rlen, m->d_rlen, sizeof(int) * R);
    size_t row = (size_t)S * D; /* one sentence's keys (or values), all heads */
    for (int l = 0; l < m->Ld; l++) {
        DecCache *c = &m->dc[l];
        if (K == 1) {
            mha_project_kv(&m->dec[l].cross, be, c->ck, c->cv, m->f, m->enc_out, B, S);
        } else { /* project the B sentences once, then copy each to its K rows */
            mha_project_kv(&m->dec[l].cross, be, m->tmp_rows, c->cv, m->f, m->enc_out, B, S);
            be->gather_rows(c->ck, m->tmp_rows, m->d_rowmap, R, (int)row);
            be->copy(m->tmp_rows, c->cv, sizeof(float) * B * row);
            be->gather_rows(c->cv, m->tmp_rows, m->d_rowmap, R, (int)row);
        }
        be->zero(c->st[0], sizeof(float) * attention_state_floats(&m->dec[l].self.at, R, max_T));
    }
}

/* x ← x + f (pre-LN) or LN(x + f) (post-LN), for one decoding step; f is consumed. */
static void step_residual(TfModel *m, const Norm *ln, float *x, float *f) {
    size_t n = (size_t)m->R * m->D;
    if (m->pre) {
        m->be->axpy(x, 1.0f, f, n);
        return;
    }
    m->be->axpy(f, 1.0f, x, n);
    m->be->layernorm_forward(x, m->lnm, m->lnr, f, ln->w.w, ln->b.w, m->R, m->D);
}

/* The sub-layer's input: LN(x) (pre-LN, into a1) or x itself. */
static const float *step_input(TfModel *m, const Norm *ln, const float *x) {
    if (!m->pre) return x;
    m->be->layernorm_forward(m->a1, m->lnm, m->lnr, x, ln->w.w, ln->b.w, m->R, m->D);
    return m->a1;
}

const float *transformer_decode_step(TfModel *m, int t, const int *ids, int log_probs) {
    const Backend *be = m->be;
    int R = m->R, D = m->D, V = m->V, F = m->F;
    CHECK(t < m->Tc && t < m->capPos, "decoding past transformer_decode_begin's max_T");
    /* x = E[y] · √D + PE[t] */
    be->embedding_forward(m->x1, ids, tf_E_tgt(m)->w, R, D);
    be->scale(m->x1, sqrtf((float)D), (size_t)R * D);
    be->bias_forward(m->x1, m->pe + (size_t)t * D, R, D);
    for (int i = 0; i < R; i++) m->h_step[i] = t + 1; /* the self-attention sees t + 1 steps */
    be->upload(m->d_step, m->h_step, sizeof(int) * R);
    MhaMask src = {m->d_rlen, 0};
    for (int l = 0; l < m->Ld; l++) {
        const TfLayer *L = &m->dec[l];
        DecCache *c = &m->dc[l];
        int cur = m->cur;
        /* self-attention over y_0 .. y_t */
        const float *a = step_input(m, &L->ln[0], m->x1);
        mha_project_kv(&L->self, be, m->k1, m->v1, m->t1, a, R, 1);
        mha_project_q(&L->self, be, m->q1, m->t2, m->t1, a, R, 1);
        CHECK(mha_workspace_floats(&L->self, be, R, 1, m->Tc) <= m->dcap.work,
              "attention workspace too small: reserve after setting the thread count");
        attention_decode_step(&L->self.at, be, m->o1, m->save1, c->st[cur], m->q1, m->k1, m->v1,
                              m->d_step, R, t, m->Tc, m->dwork);
        mha_project_out(&L->self, be, m->f1, m->t1, m->o1, R, 1);
        step_residual(m, &L->ln[0], m->x1, m->f1);
        /* cross-attention over the source */
        a = step_input(m, &L->ln[1], m->x1);
        mha_project_q(&L->cross, be, m->q1, m->t2, m->t1, a, R, 1);
        m->dec[l].cross.at.pos0 = t; /* luong_local's p_t = t: this step's query is position t */
        mha_attend(&L->cross, be, m->o1, m->save1, m->q1, c->ck, c->cv, &src, R, 1, m->Sd,
                   m->dwork, m->dcap.work);
        m->dec[l].cross.at.pos0 = 0; /* training calls pass all T queries from 0 */
        if (l == m->Ld - 1) be->copy(m->qlast, m->q1, sizeof(float) * R * D);
        mha_project_out(&L->cross, be, m->f1, m->t1, m->o1, R, 1);
        step_residual(m, &L->ln[1], m->x1, m->f1);
        /* FFN (no dropout when decoding) */
        a = step_input(m, &L->ln[2], m->x1);
        be->matmul_bias_forward(m->h1, a, L->W1.w, L->b1.w, R, F, D, 1);
        tf_ffn_w2_product(m, m->f1, m->h1, L, R);
        be->bias_forward(m->f1, L->b2.w, R, D);
        step_residual(m, &L->ln[2], m->x1, m->f1);
    }
    const float *y = m->x1;
    if (m->pre) {
        be->layernorm_forward(m->a1, m->lnm, m->lnr, m->x1, m->ln_dec.w.w, m->ln_dec.b.w, R, D);
        y = m->a1;
    }
    be->matmul(m->dlog, y, m->W_outT, R, V, D, 0, 0, 1.0f, 0.0f); /* y W_outᵀ + b_out */
    be->bias_forward(m->dlog, m->b_out.w, R, V);
    if (!log_probs) return m->dlog;
    be->log_softmax(m->dlogp, m->dlog, R, V);
    return m->dlogp;
}

void transformer_decode_reorder(TfModel *m, int t, const int *parent) {
    const Backend *be = m->be;
    int R = m->R, NH = m->NH, cur = m->cur;
    /* rows r·NH + h of a per-head state follow parent[r] */
    be->download(m->h_parent, parent, sizeof(int) * R);
    for (int r = 0; r < R; r++)
        for (int h = 0; h < NH; h++) m->h_parent_bh[r * NH + h] = m->h_parent[r] * NH + h;
    be->upload(m->d_parent_bh, m->h_parent_bh, sizeof(int) * R * NH);
    for (int l = 0; l < m->Ld; l++) {
        DecCache *c = &m->dc[l];
        attention_decode_reorder(&m->dec[l].self.at, be, c->st[!cur], c->st[cur], parent,
                                 m->d_parent_bh, R, t, m->Tc);
    }
    m->cur = !cur;
}

const float *transformer_decode_attention(TfModel *m, int t) {
    (void)t;
    const Backend *be = m->be;
    int R = m->R, S = m->Sd, D = m->D;
    const Mha *a = &m->dec[m->Ld - 1].cross;
    float *q = xmalloc(sizeof(float) * R * D), *k = xmalloc(sizeof(float) * (size_t)R * S * D);
    float *w = xmalloc(sizeof(float) * (size_t)R * S), *va = NULL;
    be->download(q, m->qlast, sizeof(float) * R * D);
    be->download(k, m->dc[m->Ld - 1].ck, sizeof(float) * (size_t)R * S * D);
    if (a->at.v_a.w) {
        va = xmalloc(sizeof(float) * D);
        be->download(va, a->at.v_a.w, sizeof(float) * D);
    }
    if (!a->at.ops->weights_host && attention_saves_weights(a->at.ops)) {
        /* luong_local, qknorm: the saved weights (n floats per row and head), head mean */
        size_t ns = attention_save_floats(&a->at, R, S);
        float *sw = xmalloc(sizeof(float) * ns);
        be->download(sw, m->save1, sizeof(float) * ns);
        attention_saved_map_host(&a->at, w, sw, R, S);
        free(sw);
    } else {
        mha_weights_host(&a->at, w, q, k, va, m->h_rlen, R, S);
    }
    be->upload(m->dattn, w, sizeof(float) * (size_t)R * S);
    free(q), free(k), free(w), free(va);
    return m->dattn;
}
