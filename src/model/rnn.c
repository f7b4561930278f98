/* rnn.c — RNN encoder–decoder with attention: forward, backward, greedy decoding (see rnn.h).
 *
 * Legend: B batch, S source length, T target length, E embedding, H decoder hidden, Hd = H/2
 * encoder hidden per direction, V vocabulary. Activations are time-major: [S,B,·], [T,B,·].
 */
#include "model/rnn.h"

#include <string.h>

#include "rng.h"
#include "data/spm.h"

#define MAXL 8

struct RnnModel {
    const Backend *be;
    int V, E, H, Hd, Le, Ld, input_feeding;
    float p; /* dropout */
    Param emb_src, emb_tgt; /* [V,E] */
    LstmLayer enc[2 * MAXL]; /* layer l, direction d at [2l+d]; in → 4Hd */
    LstmLayer dec[MAXL];
    RnnAttention attn;
    const RnnAttentionOps *aops;
    Param W_c;          /* [H, 2H]: h̃ = tanh(W_c [c; h]) */
    Param W_out, b_out; /* [V, H], [V] */

    /* ---- activations (backend memory), capacity below ---- */
    int capB, capS, capT;
    long capNS, capNT;
    void *allocs[256];
    int nallocs;
    float *src_emb, *src_emb_mask, *src_x;      /* [S,B,E] */
    float *enc_gates[2 * MAXL];                 /* [S,B,4Hd] */
    float *enc_h[2 * MAXL], *enc_c[2 * MAXL];   /* [S,B,Hd] */
    float *enc_cat[MAXL];                       /* [S,B,H] layer output [→h; ←h] */
    float *enc_x[MAXL], *enc_xmask[MAXL];       /* [S,B,H] input of layer l > 0 (dropped) */
    float *enc_out;                             /* [B,S,H] top layer, batch-major */
    float *zeros;                               /* [B,H] */
    float *tgt_emb, *tgt_emb_mask, *tgt_x;      /* [T,B,E] */
    float *dec_x[MAXL], *dec_xmask[MAXL];       /* [T,B,in_l] */
    float *dec_gates[MAXL];                     /* [T,B,4H] */
    float *dec_h[MAXL], *dec_c[MAXL];           /* [T,B,H] */
    float *dec_h0[MAXL], *dec_c0[MAXL];         /* [B,H] initial state */
    float *qsave, *ctx;                         /* [T,B,H] */
    float *attw;                                /* [T,B,S] */
    float *cat;                                 /* [T,B,2H] [c_t; h_t] */
    float *htil, *htil_drop, *htil_mask;        /* [T,B,H] */
    float *logits, *dlogits;                    /* [T,B,V] */
    /* gradients / scratch */
    float *d_htil, *d_htil_drop;                /* [T,B,H] */
    float *d_cat;                               /* [B,2H] */
    float *d_ctx_all;                           /* [T,B,H] */
    float *d_hq, *d_pre;                        /* [B,H] */
    float *d_dec_gates[MAXL];                   /* [T,B,4H] */
    float *dh[MAXL][2], *dc[MAXL][2];           /* [B,H] current / previous */
    float *d_x;                                 /* [B, E+H] */
    float *d_tgt_x;                             /* [T,B,E] */
    float *d_enc_out, *d_enc_cat;               /* [B,S,H], [S,B,H] */
    float *d_enc_hdir[2];                       /* [S,B,Hd] */
    float *d_enc_gates;                         /* [S,B,4Hd] */
    float *d_enc_x;                             /* [S,B,max(E,H)] */
    float *d_src_x;                             /* [S,B,E] */
    float *d_hrec[2], *d_crec[2];               /* [B,Hd] */
    float *attn_work;
    float *step_attw;                           /* [B,S] for greedy */
    int *dev_ids;                               /* [B] */
};

static void declare_lstm(ParamSet *ps, LstmLayer *L, const char *name, int in, int h) {
    char buf[96];
    L->in = in, L->h = h;
    snprintf(buf, sizeof buf, "%s.W_ih", name);
    params_declare(ps, &L->W_ih, buf, INIT_UNIFORM, 2, 4 * h, in);
    snprintf(buf, sizeof buf, "%s.W_hh", name);
    params_declare(ps, &L->W_hh, buf, INIT_UNIFORM, 2, 4 * h, h);
    snprintf(buf, sizeof buf, "%s.b", name);
    params_declare(ps, &L->b, buf, INIT_UNIFORM, 1, 4 * h, 0);
}

Status rnn_create(RnnModel **out, ParamSet *ps, int V, int E, int H, int enc_layers,
                  int dec_layers, float dropout, int input_feeding, AttentionKind attention,
                  Err *err) {
    char why[512];
    *out = NULL;
    if (H % 2) return err_set(err, "model.hidden = %d must be even (the bidirectional encoder "
                                   "uses hidden/2 per direction)", H);
    if (enc_layers > MAXL || dec_layers > MAXL)
        return err_set(err, "at most %d layers are supported", MAXL);
    if (!input_feeding)
        return err_set(err, "model.input_feeding = false is not implemented yet in this build; "
                            "set model.input_feeding = true");
    const RnnAttentionOps *aops = rnn_attention_ops(attention, H, H, why, sizeof why);
    if (!aops) return err_set(err, "model.attention: %s", why);
    RnnModel *m = xcalloc(1, sizeof *m);
    m->be = ps->be;
    m->V = V, m->E = E, m->H = H, m->Hd = H / 2, m->Le = enc_layers, m->Ld = dec_layers;
    m->p = dropout, m->input_feeding = input_feeding, m->aops = aops;
    params_declare(ps, &m->emb_src, "enc.emb", INIT_UNIFORM, 2, V, E);
    for (int l = 0; l < m->Le; l++)
        for (int d = 0; d < 2; d++) {
            char name[64];
            snprintf(name, sizeof name, "enc.l%d.%s", l, d ? "bwd" : "fwd");
            declare_lstm(ps, &m->enc[2 * l + d], name, l ? H : E, m->Hd);
        }
    params_declare(ps, &m->emb_tgt, "dec.emb", INIT_UNIFORM, 2, V, E);
    for (int l = 0; l < m->Ld; l++) {
        char name[64];
        snprintf(name, sizeof name, "dec.l%d", l);
        declare_lstm(ps, &m->dec[l], name, l ? H : E + (input_feeding ? H : 0), H);
    }
    m->attn.kind = attention, m->attn.Hq = H, m->attn.Hk = H;
    aops->declare(&m->attn, ps, "dec.attn");
    params_declare(ps, &m->W_c, "dec.W_c", INIT_UNIFORM, 2, H, 2 * H);
    params_declare(ps, &m->W_out, "out.W", INIT_UNIFORM, 2, V, H);
    params_declare(ps, &m->b_out, "out.b", INIT_UNIFORM, 1, V, 0);
    *out = m;
    return STATUS_OK;
}

static float *act(RnnModel *m, size_t n) {
    CHECK(m->nallocs < 256, "too many activation buffers");
    float *p = m->be->alloc(sizeof(float) * (n ? n : 1));
    m->allocs[m->nallocs++] = p;
    return p;
}

static void free_acts(RnnModel *m) {
    for (int i = 0; i < m->nallocs; i++) m->be->free(m->allocs[i]);
    m->nallocs = 0;
}

void rnn_reserve(RnnModel *m, int B, int S, int T, long NS, long NT) {
    if (B <= m->capB && S <= m->capS && T <= m->capT && NS <= m->capNS && NT <= m->capNT) return;
    if (B < m->capB) B = m->capB;
    if (S < m->capS) S = m->capS;
    if (T < m->capT) T = m->capT;
    if (NS < m->capNS) NS = m->capNS;
    if (NT < m->capNT) NT = m->capNT;
    free_acts(m);
    m->capB = B, m->capS = S, m->capT = T, m->capNS = NS, m->capNT = NT;
    int E = m->E, H = m->H, Hd = m->Hd, V = m->V;
    int in0 = E + (m->input_feeding ? H : 0);
    m->src_emb = act(m, NS * E), m->src_emb_mask = act(m, NS * E), m->src_x = act(m, NS * E);
    for (int l = 0; l < m->Le; l++) {
        for (int d = 0; d < 2; d++) {
            m->enc_gates[2 * l + d] = act(m, NS * 4 * Hd);
            m->enc_h[2 * l + d] = act(m, NS * Hd);
            m->enc_c[2 * l + d] = act(m, NS * Hd);
        }
        m->enc_cat[l] = act(m, NS * H);
        if (l) m->enc_x[l] = act(m, NS * H), m->enc_xmask[l] = act(m, NS * H);
    }
    m->enc_out = act(m, NS * H);
    m->zeros = act(m, (size_t)B * H);
    m->tgt_emb = act(m, NT * E), m->tgt_emb_mask = act(m, NT * E), m->tgt_x = act(m, NT * E);
    for (int l = 0; l < m->Ld; l++) {
        int in = l ? H : in0;
        m->dec_x[l] = act(m, NT * in);
        if (l) m->dec_xmask[l] = act(m, NT * H);
        m->dec_gates[l] = act(m, NT * 4 * H);
        m->dec_h[l] = act(m, NT * H), m->dec_c[l] = act(m, NT * H);
        m->dec_h0[l] = act(m, (size_t)B * H), m->dec_c0[l] = act(m, (size_t)B * H);
        m->d_dec_gates[l] = act(m, NT * 4 * H);
        for (int k = 0; k < 2; k++)
            m->dh[l][k] = act(m, (size_t)B * H), m->dc[l][k] = act(m, (size_t)B * H);
    }
    m->qsave = act(m, NT * H), m->ctx = act(m, NT * H), m->attw = act(m, NT * S);
    m->cat = act(m, NT * 2 * H);
    m->htil = act(m, NT * H), m->htil_drop = act(m, NT * H), m->htil_mask = act(m, NT * H);
    m->logits = act(m, NT * V), m->dlogits = act(m, NT * V);
    m->d_htil = act(m, NT * H), m->d_htil_drop = act(m, NT * H);
    m->d_cat = act(m, (size_t)B * 2 * H), m->d_ctx_all = act(m, NT * H);
    m->d_hq = act(m, (size_t)B * H), m->d_pre = act(m, (size_t)B * H);
    m->d_x = act(m, (size_t)B * (in0 > H ? in0 : H));
    m->d_tgt_x = act(m, NT * E);
    m->d_enc_out = act(m, NS * H), m->d_enc_cat = act(m, NS * H);
    m->d_enc_hdir[0] = act(m, NS * Hd), m->d_enc_hdir[1] = act(m, NS * Hd);
    m->d_enc_gates = act(m, NS * 4 * Hd);
    m->d_enc_x = act(m, NS * (E > H ? E : H));
    m->d_src_x = act(m, NS * E);
    for (int k = 0; k < 2; k++) m->d_hrec[k] = act(m, (size_t)B * Hd), m->d_crec[k] = act(m, (size_t)B * Hd);
    m->attn_work = act(m, m->aops->workspace(B, 1, H, H));
    m->step_attw = act(m, (size_t)B * S);
    m->dev_ids = (int *)act(m, (size_t)B);
}

static uint64_t site_key(uint64_t key, uint64_t site) { return rng_hash(key, site) | (key << 32); }

/* One direction of one encoder layer over all S steps. x[S,B,in] → h, c [S,B,Hd]. */
static void enc_direction_forward(RnnModel *m, int ld, const float *x, const RnnBatch *b) {
    const Backend *be = m->be;
    LstmLayer *L = &m->enc[ld];
    int B = b->B, S = b->S, Hd = m->Hd, rev = ld & 1;
    float *gates = m->enc_gates[ld], *h = m->enc_h[ld], *c = m->enc_c[ld];
    /* gates_t = x_t W_ihᵀ + b for all t at once, then + h_{t-1} W_hhᵀ step by step */
    be->matmul(gates, x, L->W_ih.w, S * B, 4 * Hd, L->in, 0, 1, 1.0f, 0.0f);
    be->bias_forward(gates, L->b.w, S * B, 4 * Hd);
    for (int i = 0; i < S; i++) {
        int t = rev ? S - 1 - i : i, tp = rev ? t + 1 : t - 1;
        const float *hp = i ? h + (size_t)tp * B * Hd : m->zeros;
        const float *cp = i ? c + (size_t)tp * B * Hd : m->zeros;
        float *g = gates + (size_t)t * B * 4 * Hd;
        be->matmul(g, hp, L->W_hh.w, B, 4 * Hd, Hd, 0, 1, 1.0f, 1.0f);
        be->lstm_cell_forward(h + (size_t)t * B * Hd, c + (size_t)t * B * Hd, g, hp, cp,
                              b->src_mask + (size_t)t * B, B, Hd);
    }
}

/* Backward of enc_direction_forward. dh_out[S,B,Hd]: gradient w.r.t. h from above;
 * d_hrec/d_crec: on entry the gradient w.r.t. the final state (the decoder's initial state).
 * Accumulates d_x[S,B,in] and the layer's parameter gradients. */
static void enc_direction_backward(RnnModel *m, int ld, const float *x, const RnnBatch *b,
                                   const float *dh_out, float *dhrec, float *dcrec, float *d_x) {
    const Backend *be = m->be;
    LstmLayer *L = &m->enc[ld];
    int B = b->B, S = b->S, Hd = m->Hd, rev = ld & 1;
    float *h = m->enc_h[ld], *c = m->enc_c[ld], *gates = m->enc_gates[ld];
    float *dg = m->d_enc_gates;
    float *dh = m->d_hrec[0] == dhrec ? m->d_hrec[1] : m->d_hrec[0]; /* scratch for dh_prev */
    float *dcp = m->d_crec[0] == dcrec ? m->d_crec[1] : m->d_crec[0];
    for (int i = S - 1; i >= 0; i--) {
        int t = rev ? S - 1 - i : i, tp = rev ? t + 1 : t - 1;
        const float *cp = i ? c + (size_t)tp * B * Hd : m->zeros;
        /* total dh_t = from the layer above + from step t+1 (carried in dhrec) */
        be->axpy(dhrec, 1.0f, dh_out + (size_t)t * B * Hd, (size_t)B * Hd);
        be->zero(dh, sizeof(float) * B * Hd);
        be->zero(dcp, sizeof(float) * B * Hd);
        float *g = dg + (size_t)t * B * 4 * Hd;
        be->lstm_cell_backward(g, dh, dcp, dhrec, dcrec, gates + (size_t)t * B * 4 * Hd,
                               c + (size_t)t * B * Hd, cp, b->src_mask + (size_t)t * B, B, Hd);
        /* gates_t += h_{t-1} W_hhᵀ  →  dh_{t-1} += dgates_t W_hh */
        be->matmul(dh, g, L->W_hh.w, B, Hd, 4 * Hd, 0, 0, 1.0f, 1.0f);
        float *tmp = dhrec; dhrec = dh; dh = tmp;
        tmp = dcrec; dcrec = dcp; dcp = tmp;
    }
    /* dW_hh += Σ_t dgates_tᵀ h_{t-1} (h_{-1} = 0 contributes nothing): one product */
    if (S > 1) {
        const float *dg1 = rev ? dg : dg + (size_t)B * 4 * Hd;
        const float *hprev = rev ? h + (size_t)B * Hd : h;
        be->matmul(L->W_hh.g, dg1, hprev, 4 * Hd, Hd, (S - 1) * B, 1, 0, 1.0f, 1.0f);
    }
    /* gates = x W_ihᵀ + b  →  dW_ih += dgatesᵀ x, db += Σ dgates, dx += dgates W_ih */
    be->matmul(L->W_ih.g, dg, x, 4 * Hd, L->in, S * B, 1, 0, 1.0f, 1.0f);
    be->bias_backward(L->b.g, dg, S * B, 4 * Hd);
    be->matmul(d_x, dg, L->W_ih.w, S * B, L->in, 4 * Hd, 0, 0, 1.0f, 1.0f);
}

static void encoder_forward(RnnModel *m, const RnnBatch *b, int train, uint64_t key) {
    const Backend *be = m->be;
    int B = b->B, S = b->S, E = m->E, H = m->H, Hd = m->Hd;
    size_t NS = (size_t)S * B;
    be->embedding_forward(m->src_emb, b->src, m->emb_src.w, (int)NS, E);
    be->dropout_forward(m->src_x, m->src_emb_mask, m->src_emb, train ? m->p : 0.0f,
                        site_key(key, 1), NS * E);
    const float *x = m->src_x;
    for (int l = 0; l < m->Le; l++) {
        if (l) {
            be->dropout_forward(m->enc_x[l], m->enc_xmask[l], m->enc_cat[l - 1],
                                train ? m->p : 0.0f, site_key(key, 100 + l), NS * H);
            x = m->enc_x[l];
        }
        enc_direction_forward(m, 2 * l, x, b);
        enc_direction_forward(m, 2 * l + 1, x, b);
        be->concat2_forward(m->enc_cat[l], m->enc_h[2 * l], m->enc_h[2 * l + 1], (int)NS, Hd, Hd);
    }
    be->transpose01_forward(m->enc_out, m->enc_cat[m->Le - 1], S, B, H);
    /* decoder initial state: [→h_final; ←h_final] of the matching encoder layer */
    for (int l = 0; l < m->Ld; l++) {
        if (m->Le == m->Ld) {
            size_t last = (size_t)(S - 1) * B * Hd;
            be->concat2_forward(m->dec_h0[l], m->enc_h[2 * l] + last, m->enc_h[2 * l + 1], B, Hd, Hd);
            be->concat2_forward(m->dec_c0[l], m->enc_c[2 * l] + last, m->enc_c[2 * l + 1], B, Hd, Hd);
        } else {
            be->zero(m->dec_h0[l], sizeof(float) * B * H);
            be->zero(m->dec_c0[l], sizeof(float) * B * H);
        }
    }
}

/* Decoder step t: emb_t [B,E] (dropped) → h̃_t at m->htil[t]. Slot t of every activation. */
static void decoder_step(RnnModel *m, int t, const float *emb_t, const RnnBatch *b, int train,
                         uint64_t key) {
    const Backend *be = m->be;
    int B = b->B, S = b->S, E = m->E, H = m->H;
    size_t BH = (size_t)B * H;
    for (int l = 0; l < m->Ld; l++) {
        LstmLayer *L = &m->dec[l];
        float *x = m->dec_x[l] + (size_t)t * B * L->in;
        if (l == 0) { /* input feeding: x = [y_{t-1}; h̃_{t-1}] */
            const float *hprev_til = t ? m->htil + (size_t)(t - 1) * BH : m->zeros;
            be->concat2_forward(x, emb_t, hprev_til, B, E, H);
        } else { /* x = dropout(h_{l-1,t}) */
            be->dropout_forward(x, m->dec_xmask[l] + (size_t)t * BH, m->dec_h[l - 1] + (size_t)t * BH,
                                train ? m->p : 0.0f, site_key(key, 200 + 1000 * (uint64_t)t + l), BH);
        }
        const float *hp = t ? m->dec_h[l] + (size_t)(t - 1) * BH : m->dec_h0[l];
        const float *cp = t ? m->dec_c[l] + (size_t)(t - 1) * BH : m->dec_c0[l];
        float *g = m->dec_gates[l] + (size_t)t * B * 4 * H;
        be->matmul(g, x, L->W_ih.w, B, 4 * H, L->in, 0, 1, 1.0f, 0.0f);
        be->matmul(g, hp, L->W_hh.w, B, 4 * H, H, 0, 1, 1.0f, 1.0f);
        be->bias_forward(g, L->b.w, B, 4 * H);
        be->lstm_cell_forward(m->dec_h[l] + (size_t)t * BH, m->dec_c[l] + (size_t)t * BH, g, hp, cp,
                              NULL, B, H);
    }
    const float *ht = m->dec_h[m->Ld - 1] + (size_t)t * BH;
    float *ctx = m->ctx + (size_t)t * BH;
    m->aops->forward(&m->attn, be, ctx, m->attw + (size_t)t * B * S, m->qsave + (size_t)t * BH, ht,
                     m->enc_out, b->src_len, B, 1, S);
    float *cat = m->cat + (size_t)t * 2 * BH;
    be->concat2_forward(cat, ctx, ht, B, H, H);
    float *ht_til = m->htil + (size_t)t * BH;
    be->matmul(ht_til, cat, m->W_c.w, B, H, 2 * H, 0, 1, 1.0f, 0.0f); /* W_c [c; h] */
    be->tanh_forward(ht_til, ht_til, BH);                             /* h̃ = tanh(·) */
}

double rnn_forward_backward(RnnModel *m, const RnnBatch *b, float smoothing, int train,
                            uint64_t key, float grad_scale) {
    const Backend *be = m->be;
    int B = b->B, S = b->S, T = b->T, E = m->E, H = m->H, Hd = m->Hd, V = m->V;
    size_t BH = (size_t)B * H, NT = (size_t)T * B, NS = (size_t)S * B;
    CHECK(B <= m->capB && S <= m->capS && T <= m->capT && (long)NS <= m->capNS &&
              (long)NT <= m->capNT, "batch larger than rnn_reserve'd capacity");
    encoder_forward(m, b, train, key);
    be->embedding_forward(m->tgt_emb, b->tgt_in, m->emb_tgt.w, (int)NT, E);
    be->dropout_forward(m->tgt_x, m->tgt_emb_mask, m->tgt_emb, train ? m->p : 0.0f,
                        site_key(key, 2), NT * E);
    for (int t = 0; t < T; t++) decoder_step(m, t, m->tgt_x + (size_t)t * B * E, b, train, key);
    /* p(y_t) = softmax(W_out dropout(h̃_t) + b_out) for all t at once */
    be->dropout_forward(m->htil_drop, m->htil_mask, m->htil, train ? m->p : 0.0f,
                        site_key(key, 3), NT * H);
    be->matmul(m->logits, m->htil_drop, m->W_out.w, (int)NT, V, H, 0, 1, 1.0f, 0.0f);
    be->bias_forward(m->logits, m->b_out.w, (int)NT, V);
    if (!train)
        return be->xent_forward_backward(NULL, m->logits, b->tgt_out, (int)NT, V, smoothing,
                                         SPM_PAD_ID, 0.0f);
    be->zero(m->dlogits, sizeof(float) * NT * V);
    double loss = be->xent_forward_backward(m->dlogits, m->logits, b->tgt_out, (int)NT, V,
                                            smoothing, SPM_PAD_ID, grad_scale);

    /* ---------------- backward ---------------- */
    /* logits = h̃_drop W_outᵀ + b_out */
    be->matmul(m->W_out.g, m->dlogits, m->htil_drop, V, H, (int)NT, 1, 0, 1.0f, 1.0f);
    be->bias_backward(m->b_out.g, m->dlogits, (int)NT, V);
    be->matmul(m->d_htil_drop, m->dlogits, m->W_out.w, (int)NT, H, V, 0, 0, 1.0f, 0.0f);
    be->zero(m->d_htil, sizeof(float) * NT * H);
    be->dropout_backward(m->d_htil, m->d_htil_drop, m->htil_mask, NT * H);
    be->zero(m->d_enc_out, sizeof(float) * NS * H);
    be->zero(m->d_tgt_x, sizeof(float) * NT * E);
    int cur[MAXL];
    for (int l = 0; l < m->Ld; l++) {
        cur[l] = 0;
        be->zero(m->dh[l][0], sizeof(float) * BH);
        be->zero(m->dc[l][0], sizeof(float) * BH);
    }
    int top = m->Ld - 1;
    for (int t = T - 1; t >= 0; t--) {
        const float *ht = m->dec_h[top] + (size_t)t * BH;
        float *ht_til = m->htil + (size_t)t * BH;
        /* h̃ = tanh(pre) */
        be->zero(m->d_pre, sizeof(float) * BH);
        be->tanh_backward(m->d_pre, m->d_htil + (size_t)t * BH, ht_til, BH);
        /* pre = [c; h] W_cᵀ  →  dW_c += dpreᵀ [c; h], d[c; h] = dpre W_c */
        be->matmul(m->W_c.g, m->d_pre, m->cat + (size_t)t * 2 * BH, H, 2 * H, B, 1, 0, 1.0f, 1.0f);
        be->matmul(m->d_cat, m->d_pre, m->W_c.w, B, 2 * H, H, 0, 0, 1.0f, 0.0f);
        float *dctx = m->d_ctx_all + (size_t)t * BH;
        be->zero(dctx, sizeof(float) * BH);
        be->concat2_backward(dctx, m->dh[top][cur[top]], m->d_cat, B, H, H);
        /* attention: c_t = attn(h_t, h̄) */
        m->aops->backward(&m->attn, be, m->dh[top][cur[top]], m->d_enc_out, dctx, ht,
                          m->qsave + (size_t)t * BH, m->enc_out, m->attw + (size_t)t * B * S, B, 1,
                          S, m->attn_work);
        for (int l = top; l >= 0; l--) {
            LstmLayer *L = &m->dec[l];
            float *dhc = m->dh[l][cur[l]], *dcc = m->dc[l][cur[l]];
            float *dhp = m->dh[l][!cur[l]], *dcp = m->dc[l][!cur[l]];
            const float *cp = t ? m->dec_c[l] + (size_t)(t - 1) * BH : m->dec_c0[l];
            float *g = m->d_dec_gates[l] + (size_t)t * B * 4 * H;
            be->zero(dhp, sizeof(float) * BH);
            be->zero(dcp, sizeof(float) * BH);
            be->lstm_cell_backward(g, dhp, dcp, dhc, dcc, m->dec_gates[l] + (size_t)t * B * 4 * H,
                                   m->dec_c[l] + (size_t)t * BH, cp, NULL, B, H);
            /* gates = x W_ihᵀ + h_{t-1} W_hhᵀ + b */
            be->matmul(dhp, g, L->W_hh.w, B, H, 4 * H, 0, 0, 1.0f, 1.0f);
            be->matmul(m->d_x, g, L->W_ih.w, B, L->in, 4 * H, 0, 0, 1.0f, 0.0f);
            if (l) { /* x = dropout(h_{l-1,t}) */
                be->dropout_backward(m->dh[l - 1][cur[l - 1]], m->d_x,
                                     m->dec_xmask[l] + (size_t)t * BH, BH);
            } else { /* x = [y_{t-1}; h̃_{t-1}] */
                be->concat2_backward(m->d_tgt_x + (size_t)t * B * E,
                                     t ? m->d_htil + (size_t)(t - 1) * BH : NULL, m->d_x, B, E, H);
            }
            cur[l] = !cur[l];
        }
    }
    for (int l = 0; l < m->Ld; l++) { /* batched weight gradients of the decoder layers */
        LstmLayer *L = &m->dec[l];
        float *g = m->d_dec_gates[l];
        be->matmul(L->W_ih.g, g, m->dec_x[l], 4 * H, L->in, (int)NT, 1, 0, 1.0f, 1.0f);
        be->bias_backward(L->b.g, g, (int)NT, 4 * H);
        be->matmul(L->W_hh.g, g, m->dec_h0[l], 4 * H, H, B, 1, 0, 1.0f, 1.0f);
        if (T > 1)
            be->matmul(L->W_hh.g, g + BH * 4, m->dec_h[l], 4 * H, H, (T - 1) * B, 1, 0, 1.0f, 1.0f);
    }
    /* target embedding: x = dropout(emb(y)) */
    be->zero(m->tgt_x, sizeof(float) * NT * E); /* reuse as scratch for d(emb) */
    be->dropout_backward(m->tgt_x, m->d_tgt_x, m->tgt_emb_mask, NT * E);
    be->embedding_backward(m->emb_tgt.g, m->tgt_x, b->tgt_in, (int)NT, E);

    /* encoder: enc_out = transpose(enc_cat[top]) */
    be->zero(m->d_enc_cat, sizeof(float) * NS * H);
    be->transpose01_backward(m->d_enc_cat, m->d_enc_out, S, B, H);
    for (int l = m->Le - 1; l >= 0; l--) {
        be->zero(m->d_enc_hdir[0], sizeof(float) * NS * Hd);
        be->zero(m->d_enc_hdir[1], sizeof(float) * NS * Hd);
        be->concat2_backward(m->d_enc_hdir[0], m->d_enc_hdir[1], m->d_enc_cat, (int)NS, Hd, Hd);
        int in = l ? H : E;
        const float *x = l ? m->enc_x[l] : m->src_x;
        be->zero(m->d_enc_x, sizeof(float) * NS * in);
        for (int d = 0; d < 2; d++) {
            be->zero(m->d_hrec[0], sizeof(float) * B * Hd);
            be->zero(m->d_crec[0], sizeof(float) * B * Hd);
            if (m->Le == m->Ld) { /* decoder h0[l] = [→h_final; ←h_final] */
                int c = cur[l]; /* after the loop, dh[l][cur] holds d h0 */
                be->concat2_backward(d ? NULL : m->d_hrec[0], d ? m->d_hrec[0] : NULL, m->dh[l][c], B, Hd, Hd);
                be->concat2_backward(d ? NULL : m->d_crec[0], d ? m->d_crec[0] : NULL, m->dc[l][c], B, Hd, Hd);
            }
            enc_direction_backward(m, 2 * l + d, x, b, m->d_enc_hdir[d], m->d_hrec[0],
                                   m->d_crec[0], m->d_enc_x);
        }
        if (l) { /* x_l = dropout(enc_cat[l-1]) */
            be->zero(m->d_enc_cat, sizeof(float) * NS * H);
            be->dropout_backward(m->d_enc_cat, m->d_enc_x, m->enc_xmask[l], NS * H);
        } else { /* x_0 = dropout(emb(src)) */
            be->zero(m->d_src_x, sizeof(float) * NS * E);
            be->dropout_backward(m->d_src_x, m->d_enc_x, m->src_emb_mask, NS * E);
            be->embedding_backward(m->emb_src.g, m->d_src_x, b->src, (int)NS, E);
        }
    }
    return loss;
}

void rnn_greedy(RnnModel *m, const RnnBatch *b, int max_T, int *out_ids, float *attn_out) {
    const Backend *be = m->be;
    int B = b->B, S = b->S, E = m->E, H = m->H, V = m->V;
    CHECK(B <= m->capB && S <= m->capS && max_T <= m->capT && (long)S * B <= m->capNS &&
              (long)max_T * B <= m->capNT, "decode batch larger than rnn_reserve'd capacity");
    encoder_forward(m, b, 0, 0);
    int *ids = xmalloc(sizeof(int) * B);
    char *done = xcalloc(B, 1);
    float *w = attn_out ? xmalloc(sizeof(float) * B * S) : NULL; /* one step's weights [B,S] */
    for (int i = 0; i < B; i++) ids[i] = SPM_BOS_ID;
    for (int i = 0; i < B * max_T; i++) out_ids[i] = SPM_PAD_ID;
    for (int t = 0; t < max_T; t++) {
        be->upload(m->dev_ids, ids, sizeof(int) * B);
        float *emb = m->tgt_x + (size_t)t * B * E;
        be->embedding_forward(emb, m->dev_ids, m->emb_tgt.w, B, E);
        decoder_step(m, t, emb, b, 0, 0);
        be->matmul(m->logits, m->htil + (size_t)t * B * H, m->W_out.w, B, V, H, 0, 1, 1.0f, 0.0f);
        be->bias_forward(m->logits, m->b_out.w, B, V);
        be->argmax(m->dev_ids, m->logits, B, V);
        be->download(ids, m->dev_ids, sizeof(int) * B);
        int all = 1;
        for (int i = 0; i < B; i++) {
            if (done[i]) continue;
            out_ids[i * max_T + t] = ids[i];
            if (ids[i] == SPM_EOS_ID) done[i] = 1;
            all &= done[i];
        }
        if (attn_out) {
            be->download(w, m->attw + (size_t)t * B * S, sizeof(float) * B * S);
            for (int i = 0; i < B; i++)
                memcpy(attn_out + ((size_t)i * max_T + t) * S, w + (size_t)i * S, sizeof(float) * S);
        }
        if (all) break;
    }
    free(ids);
    free(done);
    free(w);
}

void rnn_free(RnnModel *m) {
    if (!m) return;
    free_acts(m);
    free(m);
}
