/* rnn.c — RNN encoder–decoder with attention: parameters, memory, the decoder and the training
 * pass (rnn.h; legend and the files beside it: rnn_internal.h). */
#include "model/rnn_internal.h"

#include <string.h>

static void declare_layer(ParamSet *ps, RnnLayer *L, const char *name, int gru, int in, int h) {
    char buf[96];
    L->gru = gru, L->in = in, L->h = h, L->G = gru ? 3 : 4;
    snprintf(buf, sizeof buf, "%s.W_ih", name);
    params_declare(ps, &L->W_ih, buf, INIT_UNIFORM, 2, L->G * h, in);
    snprintf(buf, sizeof buf, "%s.W_hh", name);
    params_declare(ps, &L->W_hh, buf, INIT_UNIFORM, 2, L->G * h, h);
    snprintf(buf, sizeof buf, gru ? "%s.b_ih" : "%s.b", name);
    params_declare(ps, &L->b, buf, INIT_UNIFORM, 1, L->G * h, 0);
    if (gru) {
        snprintf(buf, sizeof buf, "%s.b_hh", name);
        params_declare(ps, &L->b_hh, buf, INIT_UNIFORM, 1, 3 * h, 0);
    }
}

Status rnn_create(RnnModel **out, ParamSet *ps, const ModelSpec *spec, int V, Err *err) {
    int E = spec->emb, H = spec->hidden, enc_layers = spec->enc_layers;
    int dec_layers = spec->dec_layers, gru = spec->cell == CELL_GRU;
    int input_feeding = spec->input_feeding, heads = spec->heads;
    AttentionKind attention = spec->attention;
    char why[512];
    *out = NULL;
    if (H % 2) return err_set(err, "model.hidden = %d must be even (the bidirectional encoder "
                                   "uses hidden/2 per direction)", H);
    if (enc_layers > MAXL || dec_layers > MAXL)
        return err_set(err, "model.enc_layers = %d, model.dec_layers = %d: the RNN takes at most "
                       "%d layers a side; lower them", enc_layers, dec_layers, MAXL);
    if (!attention_supports(attention, ATTN_SLOT_RNN, 0, ps->be, H, H, heads, why, sizeof why))
        return err_set(err, "%s", why);
    const AttentionOps *row = attention_row(attention);
    DecStyle style = !row ? DEC_NONE : row->rnn_prev_state ? DEC_BAHDANAU : DEC_LUONG;
    if (input_feeding && style != DEC_LUONG)
        return err_set(err, "model.input_feeding = true applies to the attentions on the current "
                            "state (Luong et al. 2015 §3.3); with model.attention = %s set "
                            "model.input_feeding = false", attention_kind_names[attention]);
    RnnModel *m = xcalloc(1, sizeof *m);
    m->be = ps->be;
    m->V = V, m->E = E, m->H = H, m->Hd = H / 2, m->Le = enc_layers, m->Ld = dec_layers;
    m->p = spec->dropout, m->gru = gru, m->feed = input_feeding, m->style = style;
    params_declare(ps, &m->emb_src, "enc.emb", INIT_UNIFORM, 2, V, E);
    for (int l = 0; l < m->Le; l++)
        for (int d = 0; d < 2; d++) {
            if (d == 0) m->off_enc[l] = ps->total;
            char name[64];
            snprintf(name, sizeof name, "enc.l%d.%s", l, d ? "bwd" : "fwd");
            declare_layer(ps, &m->enc[2 * l + d], name, gru, l ? H : E, m->Hd);
        }
    m->off_emb_tgt = ps->total;
    params_declare(ps, &m->emb_tgt, "dec.emb", INIT_UNIFORM, 2, V, E);
    int in0 = E + (input_feeding || style == DEC_BAHDANAU ? H : 0);
    for (int l = 0; l < m->Ld; l++) {
        char name[64];
        snprintf(name, sizeof name, "dec.l%d", l);
        declare_layer(ps, &m->dec[l], name, gru, l ? H : in0, H);
    }
    if (style != DEC_NONE) rnn_attn_declare(&m->attn, ps, "dec.attn", attention, H, H, heads,
                                             &spec->attn_opt);
    params_declare(ps, &m->W_c, "dec.W_c", INIT_UNIFORM, 2, H, style == DEC_NONE ? H : 2 * H);
    params_declare(ps, &m->W_out, "out.W", INIT_UNIFORM, 2, V, H);
    params_declare(ps, &m->b_out, "out.b", INIT_UNIFORM, 1, V, 0);
    *out = m;
    return STATUS_OK;
}

void rnn_set_stepwise(RnnModel *m, int on) { m->stepwise = on; }

void rnn_set_loss_rows(RnnModel *m, int rows) {
    CHECK(m->cap.B == 0, "rnn_set_loss_rows after rnn_reserve");
    m->loss_rows = rows;
}

void rnn_set_grad_ready(RnnModel *m, GradReady h) { m->grad_ready = h; }

Status rnn_set_impl(RnnModel *m, int cudnn, Err *err) {
    CHECK(m->cap.B == 0, "rnn_set_impl after rnn_reserve");
    m->cud = m->dec_cud = 0;
    if (!cudnn) return STATUS_OK;
    const Backend *be = m->be;
    if (!be->rnn_seq_sizes || !be->rnn_seq_forward || !be->rnn_seq_backward)
        return err_set(err, "model.rnn_impl = cudnn: the %s backend has no cuDNN RNN (%s); set "
                       "model.rnn_impl = own", be->name,
                       strcmp(be->name, "cuda") != 0 ? "cuDNN runs with train.device = cuda only"
                       : !backend_info(BACKEND_DEVICE_CUDA).cudnn ? "this build has no cuDNN"
                       : "cuDNN did not start on this machine");
    m->cud = 1;
    m->dec_cud = !m->feed && m->style != DEC_BAHDANAU;
    return STATUS_OK;
}

int rnn_has_attention(const RnnModel *m) { return m->style != DEC_NONE; }

const Attention *rnn_attention(const RnnModel *m) {
    return m->style != DEC_NONE ? &m->attn.at : NULL;
}

static void free_acts(RnnModel *m) {
    acts_free(&m->acts, m->be);
    free(m->len_host);
    free(m->src_len_buf);
    m->len_host = m->src_len_buf = NULL;
}

void rnn_release(RnnModel *m) {
    free_acts(m);
    m->cap = (BatchBounds){0};
}

/* The batched attention call's workspace (bounds_max's f): ctx the model. */
static size_t batched_attn_workspace(const void *ctx, int B, int T, int S) {
    const RnnModel *m = ctx;
    return rnn_attn_workspace(&m->attn, m->be, B, T, S);
}

size_t rnn_activation_bytes(const RnnModel *m) { return m->acts.bytes; }

void rnn_reserve(RnnModel *m, int B, int S, int T, long NS, long NT) {
    if (!bounds_grow(&m->cap, (BatchBounds){B, S, T, NS, NT})) return;
    B = m->cap.B, S = m->cap.S, T = m->cap.T, NS = m->cap.NS, NT = m->cap.NT;
    free_acts(m);
    int E = m->E, H = m->H, Hd = m->Hd, V = m->V, G = m->gru ? 3 : 4;
    int in0 = m->dec[0].in;
    for (int ld = 0; ld < 2 * m->Le; ld++) /* transpose_weights' copies */
        m->enc[ld].W_hhT = rnn_act(m, (size_t)m->enc[ld].G * m->enc[ld].h * m->enc[ld].h);
    for (int l = 0; l < m->Ld; l++) {
        RnnLayer *L = &m->dec[l];
        L->W_hhT = rnn_act(m, (size_t)L->G * L->h * L->h), L->W_ihT = rnn_act(m, (size_t)L->G * L->h * L->in);
    }
    m->W_cT = rnn_act(m, (size_t)H * (m->style == DEC_NONE ? H : 2 * H));
    m->src_tm = (int *)rnn_act(m, NS), m->mask_tm = rnn_act(m, NS);
    m->tin_tm = (int *)rnn_act(m, NT), m->tout_tm = (int *)rnn_act(m, NT);
    m->src_emb = rnn_act(m, NS * E), m->src_emb_mask = rnn_act(m, NS * E), m->src_x = rnn_act(m, NS * E);
    for (int l = 0; l < m->Le; l++) {
        for (int d = 0; d < 2; d++) {
            m->enc_gx[2 * l + d] = rnn_act(m, NS * G * Hd);
            m->enc_gh[2 * l + d] = m->gru ? rnn_act(m, NS * 3 * Hd) : NULL;
            m->enc_h[2 * l + d] = rnn_act(m, NS * Hd);
            m->enc_c[2 * l + d] = rnn_act(m, NS * Hd);
        }
        m->enc_cat[l] = rnn_act(m, NS * H);
        if (l) m->enc_x[l] = rnn_act(m, NS * H), m->enc_xmask[l] = rnn_act(m, NS * H);
    }
    m->enc_out = rnn_act(m, NS * H);
    m->enc_out_beam = rnn_act(m, NS * H);
    m->zeros = rnn_act(m, (size_t)B * H);
    m->be->zero(m->zeros, sizeof(float) * B * H);
    m->tgt_emb = rnn_act(m, NT * E), m->tgt_emb_mask = rnn_act(m, NT * E), m->tgt_x = rnn_act(m, NT * E);
    for (int l = 0; l < m->Ld; l++) {
        int in = m->dec[l].in;
        m->dec_x[l] = rnn_act(m, NT * in);
        if (l) m->dec_xmask[l] = rnn_act(m, NT * H);
        m->dec_gx[l] = rnn_act(m, NT * G * H);
        m->dec_gh[l] = m->gru ? rnn_act(m, NT * 3 * H) : NULL;
        m->dec_h[l] = rnn_act(m, NT * H), m->dec_c[l] = rnn_act(m, NT * H);
        m->dec_h0[l] = rnn_act(m, (size_t)B * H), m->dec_c0[l] = rnn_act(m, (size_t)B * H);
        m->d_dec_gx[l] = rnn_act(m, NT * G * H);
        m->d_dec_gh[l] = m->gru ? rnn_act(m, NT * 3 * H) : m->d_dec_gx[l];
        for (int k = 0; k < 2; k++)
            m->dh[l][k] = rnn_act(m, (size_t)B * H), m->dc[l][k] = rnn_act(m, (size_t)B * H);
    }
    m->qsave = rnn_act(m, NT * H), m->ctx = rnn_act(m, NT * H);
    m->q_bm = rnn_act(m, NT * H), m->ctx_bm = rnn_act(m, NT * H), m->dctx_bm = rnn_act(m, NT * H);
    m->cat = rnn_act(m, NT * 2 * H);
    m->htil = rnn_act(m, NT * H), m->htil_drop = rnn_act(m, NT * H), m->htil_mask = rnn_act(m, NT * H);
    /* the output layer's blocks; decoding's scores (B·K <= B rows) use the same buffers */
    m->out.rows = output_loss_rows(m->be, NT, V, m->loss_rows), m->out.V = V;
    long LR = m->out.rows > B ? m->out.rows : B;
    m->out.logits = rnn_act(m, LR * V), m->out.dlogits = rnn_act(m, LR * V);
    m->out.work = rnn_act(m, m->be->xent_workspace(m->out.rows, V));
    m->d_htil = rnn_act(m, NT * H), m->d_htil_drop = rnn_act(m, NT * H);
    m->d_cat_all = rnn_act(m, NT * 2 * H);
    m->d_ctx_all = rnn_act(m, NT * H), m->d_htop_all = rnn_act(m, NT * H);
    m->d_cat = rnn_act(m, (size_t)B * 2 * H), m->d_pre = rnn_act(m, (size_t)B * H);
    m->d_x = rnn_act(m, (size_t)B * (in0 > H ? in0 : H));
    m->d_tgt_x = rnn_act(m, NT * E);
    m->d_enc_out = rnn_act(m, NS * H), m->d_enc_cat = rnn_act(m, NS * H);
    m->d_enc_hdir[0] = rnn_act(m, NS * Hd), m->d_enc_hdir[1] = rnn_act(m, NS * Hd);
    m->d_enc_gx = rnn_act(m, NS * G * Hd);
    m->d_enc_gh = m->gru ? rnn_act(m, NS * 3 * Hd) : m->d_enc_gx;
    m->d_enc_x = rnn_act(m, NS * (E > H ? E : H));
    m->d_src_x = rnn_act(m, NS * E);
    for (int k = 0; k < 2; k++) m->d_hrec[k] = rnn_act(m, (size_t)B * Hd), m->d_crec[k] = rnn_act(m, (size_t)B * Hd);
    if (m->style != DEC_NONE) { /* per step (Tq = 1) or batched (Tq = T) */
        m->attw = rnn_act(m, rnn_attn_save_floats(&m->attn, NT, S));
        size_t w1 = rnn_attn_workspace(&m->attn, m->be, B, 1, S);
        size_t wT = bounds_max(batched_attn_workspace, m, B, T, S, NT, NS); /* Tq = T */
        m->attn_work_cap = w1 > wT ? w1 : wT;
        m->attn_work = rnn_act(m, m->attn_work_cap);
        m->attn_map = rnn_act(m, (size_t)B * S);
        size_t nk = rnn_attn_kbuf_floats(&m->attn, NS, B);
        if (nk) m->attn.kbuf = rnn_act(m, nk), m->attn.dkbuf = rnn_act(m, nk);
    }
    m->tmp_rows = rnn_act(m, (size_t)B * H);
    m->beam_len = (int *)rnn_act(m, (size_t)B);
    m->beam_idx = (int *)rnn_act(m, (size_t)B);
    if (m->cud) rnn_reserve_cudnn(m, B, S, T, (size_t)NT);
}

/* The state the Bahdanau attention asks with at step t: s_{t−1} of the top layer. */
static const float *prev_top(RnnModel *m, int t, int B) {
    int top = m->Ld - 1;
    return t ? m->dec_h[top] + rnn_slot(m, t - 1) * B * m->H : m->dec_h0[top];
}

/* The output layer over nt steps from step t0 (B rows each): h̃ = tanh(W_c [c; h]) (none:
 * tanh(W_c h)). */
static void output_forward(RnnModel *m, int t0, int nt, int B) {
    const Backend *be = m->be;
    int H = m->H, N = nt * B;
    size_t o = rnn_slot(m, t0) * B * H;
    const float *in = m->dec_h[m->Ld - 1] + o;
    if (m->style != DEC_NONE) {
        be->concat2_forward(m->cat + 2 * o, m->ctx + o, in, N, H, H);
        in = m->cat + 2 * o;
    }
    int in_w = m->style == DEC_NONE ? H : 2 * H;
    be->matmul(m->htil + o, in, m->W_cT, N, H, in_w, 0, 0, 1.0f, 0.0f);
    be->tanh_forward(m->htil + o, m->htil + o, (size_t)N * H);
}

/* Decoder step t over src->B rows: emb_t [B,E] (dropped) → top state h_t at slot t; with
 * per_step also the Luong attention on h_t and h̃_t (input feeding, decoding, the stepwise
 * test switch). */
void rnn_decoder_step(RnnModel *m, int t, const float *emb_t, const DecSrc *src, int per_step,
                         int train, uint64_t key) {
    const Backend *be = m->be;
    int B = src->B, S = src->S, E = m->E, H = m->H, top = m->Ld - 1;
    size_t BH = (size_t)B * H, st = rnn_slot(m, t), sp = t ? rnn_slot(m, t - 1) : 0;
    float *ctx = m->ctx + st * BH;
    if (m->style == DEC_BAHDANAU) /* c_t from s_{t−1} */
        rnn_attn_forward(&m->attn, be, ctx, rnn_step_save(m, t, B, S), m->qsave + st * BH,
                         prev_top(m, t, B), src->enc_out, src->src_len, B, 1, S, m->attn_work);
    for (int l = 0; l < m->Ld; l++) {
        RnnLayer *L = &m->dec[l];
        float *x = m->dec_x[l] + st * B * L->in;
        if (l) { /* x = dropout(h_{l-1,t}) */
            be->dropout_forward(x, m->dec_xmask[l] + st * BH, m->dec_h[l - 1] + st * BH,
                                train ? m->p : 0.0f, rnn_site_key(key, 200 + 1000 * (uint64_t)t + l), BH);
        } else if (m->feed) { /* input feeding: x = [y_{t-1}; h̃_{t-1}] */
            be->concat2_forward(x, emb_t, t ? m->htil + sp * BH : m->zeros, B, E, H);
        } else if (m->style == DEC_BAHDANAU) { /* x = [y_{t-1}; c_t] */
            be->concat2_forward(x, emb_t, ctx, B, E, H);
        } else {
            be->copy(x, emb_t, sizeof(float) * B * E);
        }
        const float *hp = t ? m->dec_h[l] + sp * BH : m->dec_h0[l];
        const float *cp = t ? m->dec_c[l] + sp * BH : m->dec_c0[l];
        float *gx = m->dec_gx[l] + st * BH * L->G;
        be->matmul(gx, x, L->W_ihT, B, L->G * H, L->in, 0, 0, 1.0f, 0.0f);
        be->bias_forward(gx, L->b.w, B, L->G * H);
        rnn_cell_forward(be, L, gx, m->gru ? m->dec_gh[l] + st * BH * 3 : NULL, hp, cp,
                     m->dec_h[l] + st * BH, m->dec_c[l] + st * BH, NULL, B);
    }
    if (!per_step) return;
    m->attn.at.pos0 = t; /* luong_local's p_t = t (local-m) */
    if (m->style == DEC_LUONG) /* c_t from h_t */
        rnn_attn_forward(&m->attn, be, ctx, rnn_step_save(m, t, B, S), m->qsave + st * BH,
                         m->dec_h[top] + st * BH, src->enc_out, src->src_len, B, 1, S,
                         m->attn_work);
    output_forward(m, t, 1, B);
}

/* Luong attention without input feeding, batched over all T positions: one call with Tq = T. */
static void luong_batched_forward(RnnModel *m, const TokenBatch *b) {
    const Backend *be = m->be;
    int B = b->B, S = b->S, T = b->T, H = m->H;
    be->transpose01_forward(m->q_bm, m->dec_h[m->Ld - 1], T, B, H); /* [B,T,H] */
    m->attn.at.pos0 = 0; /* query t is step t (luong_local) */
    rnn_attn_forward(&m->attn, be, m->ctx_bm, m->attw, m->qsave, m->q_bm, m->enc_out, b->src_len,
                     B, T, S, m->attn_work);
    be->transpose01_forward(m->ctx, m->ctx_bm, B, T, H); /* [T,B,H] */
}

/* Backward of one step's output layer (and Luong attention) at step t: from d_htil[t] into
 * dh_top (the top layer's dh of step t), d_ctx_all[t] and d_enc_out. */
static void output_step_backward(RnnModel *m, int t, const TokenBatch *b, float *dh_top) {
    const Backend *be = m->be;
    int B = b->B, S = b->S, H = m->H, top = m->Ld - 1;
    size_t BH = (size_t)B * H;
    const float *ht = m->dec_h[top] + (size_t)t * BH;
    be->zero(m->d_pre, sizeof(float) * BH);
    be->tanh_backward(m->d_pre, m->d_htil + (size_t)t * BH, m->htil + (size_t)t * BH, BH);
    if (m->style == DEC_NONE) { /* pre = h W_cᵀ */
        be->matmul(m->W_c.g, m->d_pre, ht, H, H, B, 1, 0, 1.0f, 1.0f);
        be->matmul(dh_top, m->d_pre, m->W_c.w, B, H, H, 0, 0, 1.0f, 1.0f);
        return;
    }
    /* pre = [c; h] W_cᵀ  →  dW_c += dpreᵀ [c; h], d[c; h] = dpre W_c */
    be->matmul(m->W_c.g, m->d_pre, m->cat + (size_t)t * 2 * BH, H, 2 * H, B, 1, 0, 1.0f, 1.0f);
    be->matmul(m->d_cat, m->d_pre, m->W_c.w, B, 2 * H, H, 0, 0, 1.0f, 0.0f);
    float *dctx = m->d_ctx_all + (size_t)t * BH;
    be->concat2_backward(dctx, dh_top, m->d_cat, B, H, H);
    m->attn.at.pos0 = t;
    if (m->style == DEC_LUONG) /* c_t = attn(h_t, h̄) */
        rnn_attn_backward(&m->attn, be, dh_top, m->d_enc_out, dctx, m->ctx + (size_t)t * BH,
                          rnn_step_save(m, t, B, S), ht, m->qsave + (size_t)t * BH, m->enc_out,
                          b->src_len, B, 1, S, m->attn_work);
}

/* Backward of output_forward over all T steps and of luong_batched_forward: fills d_htop_all
 * and d_ctx_all, accumulates d_enc_out. */
static void output_batched_backward(RnnModel *m, const TokenBatch *b) {
    const Backend *be = m->be;
    int B = b->B, S = b->S, T = b->T, H = m->H, N = B * T;
    size_t NH = (size_t)N * H;
    float *d_pre = m->d_htil_drop; /* free once d_htil is formed */
    be->zero(d_pre, sizeof(float) * NH);
    be->tanh_backward(d_pre, m->d_htil, m->htil, NH);
    be->zero(m->d_htop_all, sizeof(float) * NH);
    if (m->style == DEC_NONE) {
        const float *h = m->dec_h[m->Ld - 1];
        be->matmul(m->W_c.g, d_pre, h, H, H, N, 1, 0, 1.0f, 1.0f);
        be->matmul(m->d_htop_all, d_pre, m->W_c.w, N, H, H, 0, 0, 1.0f, 0.0f);
        return;
    }
    be->matmul(m->W_c.g, d_pre, m->cat, H, 2 * H, N, 1, 0, 1.0f, 1.0f);
    be->matmul(m->d_cat_all, d_pre, m->W_c.w, N, 2 * H, H, 0, 0, 1.0f, 0.0f);
    be->concat2_backward(m->d_ctx_all, m->d_htop_all, m->d_cat_all, N, H, H);
    if (m->style != DEC_LUONG) return;
    /* ctx = transpose(ctx_bm), ctx_bm = attn(q_bm), q_bm = transpose(h_top); cat is free now
     * and serves as dq_bm */
    float *dctx_bm = m->dctx_bm, *dq_bm = m->cat;
    be->zero(dctx_bm, sizeof(float) * NH);
    be->transpose01_backward(dctx_bm, m->d_ctx_all, B, T, H);
    be->zero(dq_bm, sizeof(float) * NH);
    m->attn.at.pos0 = 0;
    rnn_attn_backward(&m->attn, be, dq_bm, m->d_enc_out, dctx_bm, m->ctx_bm, m->attw, m->q_bm,
                      m->qsave, m->enc_out, b->src_len, B, T, S, m->attn_work);
    be->transpose01_backward(m->d_htop_all, dq_bm, T, B, H);
}

double rnn_forward_backward(RnnModel *m, const TokenBatch *b, float smoothing, int train,
                            uint64_t key, float grad_scale) {
    const Backend *be = m->be;
    int B = b->B, S = b->S, T = b->T, E = m->E, H = m->H;
    size_t BH = (size_t)B * H, NT = (size_t)T * B, NS = (size_t)S * B;
    CHECK(bounds_fit(&m->cap, B, S, T), "batch larger than rnn_reserve'd capacity");
    int per_step = m->feed || m->stepwise;
    CHECK(m->style == DEC_NONE ||
              rnn_attn_workspace(&m->attn, be, B, per_step ? 1 : T, S) <= m->attn_work_cap,
          "attention workspace too small: rnn_reserve after setting the thread count");
    m->ring = 0; /* every step's states at its own slot: the backward reads them */
    rnn_encoder_forward(m, b, train, key);
    if (m->style != DEC_NONE) rnn_attn_begin(&m->attn, be, m->enc_out, b->src_len, B, S);
    DecSrc src = {B, S, m->enc_out, b->src_len};
    rnn_time_major(be, m->tin_tm, b->tgt_in, B, T);
    /* the loss's targets: b's non-padding rows (tgt_row_id), or all T·B positions time-major */
    int packed = b->tgt_tokens > 0 && (size_t)b->tgt_tokens < NT;
    if (!packed) rnn_time_major(be, m->tout_tm, b->tgt_out, B, T);
    be->embedding_forward(m->tgt_emb, m->tin_tm, m->emb_tgt.w, (int)NT, E);
    be->dropout_forward(m->tgt_x, m->tgt_emb_mask, m->tgt_emb, train ? m->p : 0.0f,
                        rnn_site_key(key, 2), NT * E);
    int dec_cud = m->dec_cud && !per_step;
    if (dec_cud)
        rnn_decoder_cudnn_forward(m, b, train, key);
    else
        for (int t = 0; t < T; t++)
            rnn_decoder_step(m, t, m->tgt_x + (size_t)t * B * E, &src, per_step, train, key);
    if (!per_step) {
        if (m->style == DEC_LUONG) luong_batched_forward(m, b);
        output_forward(m, 0, T, B);
    }
    /* p(y_t) = softmax(W_out dropout(h̃_t) + b_out) for all t at once, over the R target
     * positions that are not padding (the output layer is the largest product; padding is
     * about a tenth of the target positions of a length-bucketed batch): xr = h̃_drop[rows],
     * gathered into d_htil, which is free until the decoder's backward */
    be->dropout_forward(m->htil_drop, m->htil_mask, m->htil, train ? m->p : 0.0f,
                        rnn_site_key(key, 3), NT * H);
    int R = packed ? (int)b->tgt_tokens : (int)NT;
    const int *tg = packed ? b->tgt_row_id : m->tout_tm;
    float *xr = m->htil_drop;
    if (packed) {
        be->gather_rows(m->d_htil, m->htil_drop, b->tgt_row_tm, R, H);
        xr = m->d_htil;
    }
    /* the loss, and in training its gradient dx[rows] into d_htil (over xr where packed) */
    float *dxr = packed ? m->d_htil : m->d_htil_drop;
    double loss = output_loss(be, &m->out, dxr, xr, tg, R, H, &m->W_out, &m->b_out, smoothing,
                              train, grad_scale);
    if (!train) return loss;

    /* ---------------- backward ---------------- */
    if (packed) { /* d_htil_drop[rows] = dxr, 0 elsewhere */
        be->zero(m->d_htil_drop, sizeof(float) * NT * H);
        be->embedding_backward(m->d_htil_drop, m->d_htil, b->tgt_row_tm, R, H);
    }
    be->zero(m->d_htil, sizeof(float) * NT * H);
    be->dropout_backward(m->d_htil, m->d_htil_drop, m->htil_mask, NT * H);
    be->zero(m->d_enc_out, sizeof(float) * NS * H);
    be->zero(m->d_tgt_x, sizeof(float) * NT * E);
    be->zero(m->d_ctx_all, sizeof(float) * NT * H);
    if (!per_step) output_batched_backward(m, b);
    int cur[MAXL];
    for (int l = 0; l < m->Ld; l++) {
        cur[l] = 0;
        be->zero(m->dh[l][0], sizeof(float) * BH);
        be->zero(m->dc[l][0], sizeof(float) * BH);
    }
    int top = m->Ld - 1;
    if (dec_cud) rnn_decoder_cudnn_backward(m, b, cur);
    for (int t = T - 1; t >= 0 && !dec_cud; t--) { /* our cells, step by step */
        if (per_step) output_step_backward(m, t, b, m->dh[top][cur[top]]);
        else be->axpy(m->dh[top][cur[top]], 1.0f, m->d_htop_all + (size_t)t * BH, BH);
        for (int l = top; l >= 0; l--) {
            RnnLayer *L = &m->dec[l];
            size_t o = (size_t)t * BH;
            float *dhp = m->dh[l][!cur[l]], *dcp = m->dc[l][!cur[l]];
            const float *hp = t ? m->dec_h[l] + o - BH : m->dec_h0[l];
            const float *cp = t ? m->dec_c[l] + o - BH : m->dec_c0[l];
            float *dgx = m->d_dec_gx[l] + o * L->G;
            be->zero(dhp, sizeof(float) * BH);
            be->zero(dcp, sizeof(float) * BH);
            rnn_cell_backward(be, L, dgx, m->d_dec_gh[l] + o * (L->gru ? 3 : 4), dhp, dcp,
                          m->dh[l][cur[l]], m->dc[l][cur[l]], m->dec_gx[l] + o * L->G,
                          m->gru ? m->dec_gh[l] + o * 3 : NULL, hp, m->dec_c[l] + o, cp, NULL, B);
            be->matmul(m->d_x, dgx, L->W_ih.w, B, L->in, L->G * H, 0, 0, 1.0f, 0.0f);
            float *d_emb = m->d_tgt_x + (size_t)t * B * E;
            if (l) /* x = dropout(h_{l-1,t}) */
                be->dropout_backward(m->dh[l - 1][cur[l - 1]], m->d_x, m->dec_xmask[l] + o, BH);
            else if (m->feed) /* x = [y_{t-1}; h̃_{t-1}] */
                be->concat2_backward(d_emb, t ? m->d_htil + o - BH : NULL, m->d_x, B, E, H);
            else if (m->style == DEC_BAHDANAU) /* x = [y_{t-1}; c_t] */
                be->concat2_backward(d_emb, m->d_ctx_all + o, m->d_x, B, E, H);
            else
                be->axpy(d_emb, 1.0f, m->d_x, (size_t)B * E);
            cur[l] = !cur[l];
        }
        if (m->style == DEC_BAHDANAU) /* c_t = attn(s_{t−1}, h̄): into s_{t−1}'s gradient */
            rnn_attn_backward(&m->attn, be, m->dh[top][cur[top]], m->d_enc_out,
                              m->d_ctx_all + (size_t)t * BH, m->ctx + (size_t)t * BH,
                              rnn_step_save(m, t, B, S), prev_top(m, t, B), m->qsave + (size_t)t * BH,
                              m->enc_out, b->src_len, B, 1, S, m->attn_work);
    }
    if (m->style != DEC_NONE)
        rnn_attn_end_backward(&m->attn, be, m->d_enc_out, m->enc_out, b->src_len, B, S);
    for (int l = 0; l < (dec_cud ? 0 : m->Ld); l++) { /* batched weight gradients of the decoder layers */
        RnnLayer *L = &m->dec[l];
        float *dgh = m->d_dec_gh[l];
        rnn_cell_input_grads(be, L, m->d_dec_gx[l], dgh, m->dec_x[l], (int)NT);
        rnn_cell_recurrent_grads(be, L, dgh, m->dec_h0[l], B);
        if (T > 1)
            rnn_cell_recurrent_grads(be, L, dgh + BH * (L->gru ? 3 : 4), m->dec_h[l], (T - 1) * B);
    }
    /* target embedding: x = dropout(emb(y)) */
    be->zero(m->tgt_x, sizeof(float) * NT * E); /* reuse as scratch for d(emb) */
    be->dropout_backward(m->tgt_x, m->d_tgt_x, m->tgt_emb_mask, NT * E);
    be->embedding_backward(m->emb_tgt.g, m->tgt_x, m->tin_tm, (int)NT, E);
    grad_ready(&m->grad_ready, m->off_emb_tgt); /* the decoder, attention and output: final */

    rnn_encoder_backward(m, b, cur);
    return loss;
}

int rnn_ops_used(const RnnModel *m, OpKind *ops) {
    static const OpKind own[] = {OP_CONCAT2_FORWARD,     OP_CONCAT2_BACKWARD,
                                 OP_TANH_FORWARD,        OP_TANH_BACKWARD,
                                 OP_TRANSPOSE01_FORWARD, OP_TRANSPOSE01_BACKWARD,
                                 OP_PERMUTE0213_FORWARD, OP_PERMUTE0213_BACKWARD};
    const OpKind cell[] = {m->gru ? OP_GRU_CELL_FORWARD : OP_LSTM_CELL_FORWARD,
                           m->gru ? OP_GRU_CELL_BACKWARD : OP_LSTM_CELL_BACKWARD};
    int n = op_list_append(ops, 0, own, (int)(sizeof own / sizeof own[0]));
    n = op_list_append(ops, n, cell, 2);
    if (m->style != DEC_NONE) n += attention_ops_used(m->attn.at.kind, ops + n);
    return n;
}

void rnn_free(RnnModel *m) {
    if (!m) return;
    free_acts(m);
    free(m);
}
