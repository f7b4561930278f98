/* rnn.c — RNN encoder–decoder with attention: forward, backward, incremental decoding (rnn.h).
 *
 * Legend: B batch, S source length, T target length, E embedding, H decoder hidden, Hd = H/2
 * encoder hidden per direction, V vocabulary, G gate blocks (LSTM 4, GRU 3). The batch's ids
 * and mask are batch-major ([B,S], [B,T]) and transposed on the device once per pass;
 * activations are time-major: [S,B,·], [T,B,·]; the attention works batch-major ([B,S,H] keys).
 */
#include "model/rnn.h"
#include "model/output_loss.h"

#include <string.h>

#include "core/tokens.h"
#include "core/rng.h"

#define MAXL 8

typedef enum { DEC_NONE, DEC_LUONG, DEC_BAHDANAU } DecStyle;

/* The source side a decoder step attends to: B rows (sentences, or sentences × beams). */
typedef struct {
    int B, S;
    const float *enc_out; /* [B,S,H] */
    const int *src_len;   /* [B] */
} DecSrc;

struct RnnModel {
    const Backend *be;
    int V, E, H, Hd, Le, Ld, gru, feed, stepwise;
    DecStyle style;
    float p; /* dropout */
    Param emb_src, emb_tgt; /* [V,E] */
    RnnLayer enc[2 * MAXL]; /* layer l, direction d at [2l+d]; in → G·Hd */
    RnnLayer dec[MAXL];
    RnnAttn attn;                /* the attention (style != DEC_NONE), keys = values = h̄ */
    Param W_c;                   /* [H, 2H] (none: [H, H]): h̃ = tanh(W_c [c; h]) */
    float *W_cT;                 /* W_cᵀ, backend memory (transpose_weights) */
    Param W_out, b_out;          /* [V, H], [V] */
    /* the first float of encoder layer l (both directions) and of the target embedding in the
     * flat parameter buffers (GradReady, ops/params.h); the source embedding is at 0 */
    size_t off_enc[MAXL], off_emb_tgt;
    GradReady grad_ready; /* rnn_set_grad_ready */

    /* ---- activations (backend memory), capacity below ---- */
    BatchBounds cap;
    void *allocs[512];
    int nallocs;
    int *src_tm, *tin_tm, *tout_tm;                   /* [S,B], [T,B], [T,B] the batch's ids */
    float *mask_tm;                                   /* [S,B] the batch's source mask */
    float *src_emb, *src_emb_mask, *src_x;            /* [S,B,E] */
    float *enc_gx[2 * MAXL], *enc_gh[2 * MAXL];       /* [S,B,G·Hd], GRU [S,B,3Hd] */
    float *enc_h[2 * MAXL], *enc_c[2 * MAXL];         /* [S,B,Hd] */
    float *enc_cat[MAXL];                             /* [S,B,H] layer output [→h; ←h] */
    float *enc_x[MAXL], *enc_xmask[MAXL];             /* [S,B,H] input of layer l > 0 (dropped) */
    float *enc_out;                                   /* [B,S,H] top layer, batch-major */
    float *enc_out_beam;                              /* [B·K,S,H] decoding with K > 1 */
    float *zeros;                                     /* [B,H] */
    float *tgt_emb, *tgt_emb_mask, *tgt_x;            /* [T,B,E] */
    float *dec_x[MAXL], *dec_xmask[MAXL];             /* [T,B,in_l] */
    float *dec_gx[MAXL], *dec_gh[MAXL];               /* [T,B,G·H], GRU [T,B,3H] */
    float *dec_h[MAXL], *dec_c[MAXL];                 /* [T,B,H] */
    float *dec_h0[MAXL], *dec_c0[MAXL];               /* [B,H] initial state */
    float *qsave, *ctx;                               /* [T,B,H] (batched Luong: [B,T,H]) */
    float *attw;     /* what the attention saves, per step [B,NH,1,S] weights or [B,NH,1] lse */
    float *q_bm, *ctx_bm, *dctx_bm;                   /* [B,T,H] batched Luong attention */
    float *cat;                                       /* [T,B,2H] [c_t; h_t] */
    float *htil, *htil_drop, *htil_mask;              /* [T,B,H] */
    OutputLoss out;   /* the output layer's blocks; its logits, dlogits [max(rows, B), V] */
    int loss_rows;    /* rnn_set_loss_rows (0: automatic) */
    /* gradients / scratch */
    float *d_htil, *d_htil_drop;                      /* [T,B,H] */
    float *d_cat_all;                                 /* [T,B,2H] */
    float *d_ctx_all, *d_htop_all;                    /* [T,B,H] */
    float *d_cat, *d_pre;                             /* [B,2H], [B,H] */
    float *d_dec_gx[MAXL], *d_dec_gh[MAXL];           /* [T,B,G·H], GRU [T,B,3H] */
    float *dh[MAXL][2], *dc[MAXL][2];                 /* [B,H] current / previous */
    float *d_x;                                       /* [B, in0] */
    float *d_tgt_x;                                   /* [T,B,E] */
    float *d_enc_out, *d_enc_cat;                     /* [B,S,H], [S,B,H] */
    float *d_enc_hdir[2];                             /* [S,B,Hd] */
    float *d_enc_gx, *d_enc_gh;                       /* [S,B,G·Hd], GRU [S,B,3Hd] */
    float *d_enc_x;                                   /* [S,B,max(E,H)] */
    float *d_src_x;                                   /* [S,B,E] */
    float *d_hrec[2], *d_crec[2];                     /* [B,Hd] */
    float *attn_work;                                 /* rnn_attn_workspace floats */
    size_t attn_work_cap;
    float *attn_map;                                  /* [B,S] decoding: recomputed weights */
    float *tmp_rows;                                  /* [B,H] reorder scratch */
    int *beam_len, *beam_idx;                         /* [B] decoding: src_len and row map */
    DecSrc dsrc;                                      /* decoding: the rows being decoded */
    int ring; /* 0: step t's states at slot t (training); 2: decoding's two slots, t mod 2 */

    /* ---- model.rnn_impl = cudnn (rnn_set_impl; the comment above encoder_cudnn_layer) ---- */
    int cud;                       /* encoder layers through be->rnn_seq_* */
    int dec_cud;                   /* decoder layers too (no input feeding, not bahdanau) */
    float *cud_enc_w[MAXL], *cud_dec_w[MAXL];     /* weight spaces (cuDNN's layout) */
    float *cud_enc_res[MAXL], *cud_dec_res[MAXL]; /* reserves of the training forward */
    size_t cud_enc_res_n[MAXL], cud_dec_res_n[MAXL];
    float *cud_dw, *cud_work;      /* weight-gradient space, workspace (the largest layer's) */
    size_t cud_work_n;
    float *cud_hy[MAXL], *cud_cy[MAXL]; /* [2,B,Hd] final states of encoder layer l */
    float *cud_dhy, *cud_dcy;      /* [2,B,Hd] */
    float *cud_dy;                 /* [T,B,H] gradient of a decoder layer's output */
    float *cud_dx;                 /* [T,B,max(E,H)] gradient of a decoder layer's input */
    int *dec_len;                  /* [B] backend: T for every row (the decoder has no padding) */
    int *len_host;                 /* [B] host (xmalloc): T for every row (decoder) */
    int *src_len_buf;              /* [B] host (xmalloc): src_len downloaded when the batch has
                                      no host copy (TokenBatch.src_len_host) */
    const int *src_len_h;          /* [B] host: this pass's source lengths */
};

/* ---------------------------------------------------------------------------------------- */
/* cells                                                                                    */

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

/* One step of cell L: gx[B,G·h] holds x W_ihᵀ + b on entry; gh[B,3h] is GRU scratch that
 * backward needs again. Writes h (and c for LSTM). Reads W_hh through L->W_hhT. */
static void cell_forward(const Backend *be, const RnnLayer *L, float *gx, float *gh,
                         const float *hp, const float *cp, float *h, float *c, const float *mask,
                         int B) {
    if (!L->gru) {
        be->matmul(gx, hp, L->W_hhT, B, 4 * L->h, L->h, 0, 0, 1.0f, 1.0f);
        be->lstm_cell_forward(h, c, gx, hp, cp, mask, B, L->h);
    } else {
        be->matmul(gh, hp, L->W_hhT, B, 3 * L->h, L->h, 0, 0, 1.0f, 0.0f);
        be->bias_forward(gh, L->b_hh.w, B, 3 * L->h);
        be->gru_cell_forward(h, gx, gh, hp, mask, B, L->h);
    }
}

/* Backward of cell_forward, dh and dc complete: writes dgx (and dgh, GRU) and accumulates dhp
 * (recurrent product included) and dcp (LSTM). */
static void cell_backward(const Backend *be, const RnnLayer *L, float *dgx, float *dgh,
                          float *dhp, float *dcp, const float *dh, const float *dc,
                          const float *gx, const float *gh, const float *hp, const float *c,
                          const float *cp, const float *mask, int B) {
    if (!L->gru) {
        be->lstm_cell_backward(dgx, dhp, dcp, dh, dc, gx, c, cp, mask, B, L->h);
        be->matmul(dhp, dgx, L->W_hh.w, B, L->h, 4 * L->h, 0, 0, 1.0f, 1.0f);
    } else {
        be->gru_cell_backward(dgx, dgh, dhp, dh, gx, gh, hp, mask, B, L->h);
        be->matmul(dhp, dgh, L->W_hh.w, B, L->h, 3 * L->h, 0, 0, 1.0f, 1.0f);
    }
}

/* Weight gradients of the input side over N rows: dW_ih += dgxᵀ x, db += Σ dgx, and for GRU
 * db_hh += Σ dgh (the LSTM's single bias sits in gx). */
static void cell_input_grads(const Backend *be, RnnLayer *L, const float *dgx, const float *dgh,
                             const float *x, int N) {
    be->matmul(L->W_ih.g, dgx, x, L->G * L->h, L->in, N, 1, 0, 1.0f, 1.0f);
    be->bias_backward(L->b.g, dgx, N, L->G * L->h);
    if (L->gru) be->bias_backward(L->b_hh.g, dgh, N, 3 * L->h);
}

/* dW_hh += dghᵀ hprev over N rows (dgh: LSTM's dgates, GRU's hidden-side gradient). */
static void cell_recurrent_grads(const Backend *be, RnnLayer *L, const float *dgh,
                                 const float *hprev, int N) {
    be->matmul(L->W_hh.g, dgh, hprev, L->G * L->h, L->h, N, 1, 0, 1.0f, 1.0f);
}

/* ---------------------------------------------------------------------------------------- */

Status rnn_create(RnnModel **out, ParamSet *ps, int V, int E, int H, int enc_layers,
                  int dec_layers, float dropout, int gru, int input_feeding,
                  AttentionKind attention, int heads, const AttentionOptions *attn_opt,
                  Err *err) {
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
    m->p = dropout, m->gru = gru, m->feed = input_feeding, m->style = style;
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
                                             attn_opt);
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
                       : !backend_cuda_has_cudnn() ? "this build has no cuDNN"
                                                   : "cuDNN did not start on this machine");
    m->cud = 1;
    m->dec_cud = !m->feed && m->style != DEC_BAHDANAU;
    return STATUS_OK;
}
int rnn_has_attention(const RnnModel *m) { return m->style != DEC_NONE; }

const Attention *rnn_attention(const RnnModel *m) {
    return m->style != DEC_NONE ? &m->attn.at : NULL;
}

/* Where step t's per-step states live in the [T,B,·] buffers: slot t when training (the
 * backward reads them all), slot t mod 2 when decoding (a step reads only the one before), so
 * decoding needs two steps' rows, not max_T's. */
static size_t slot(const RnnModel *m, int t) {
    return m->ring ? (size_t)(t % m->ring) : (size_t)t;
}

/* What the attention saves at step t of B rows against S keys. */
static float *step_save(RnnModel *m, int t, int B, int S) {
    return m->attw + slot(m, t) * rnn_attn_save_floats(&m->attn, B, S);
}

static float *act(RnnModel *m, size_t n) {
    CHECK(m->nallocs < 512, "too many activation buffers");
    float *p = m->be->alloc(sizeof(float) * (n ? n : 1));
    m->allocs[m->nallocs++] = p;
    return p;
}

static void free_acts(RnnModel *m) {
    for (int i = 0; i < m->nallocs; i++) m->be->free(m->allocs[i]);
    m->nallocs = 0;
    free(m->len_host);
    free(m->src_len_buf);
    m->len_host = m->src_len_buf = NULL;
}

static RnnSeqParams seq_params(RnnLayer *L) {
    return (RnnSeqParams){L->W_ih.w, L->W_hh.w, L->b.w, L->gru ? L->b_hh.w : NULL};
}

static RnnSeqParams seq_grads(RnnLayer *L) {
    return (RnnSeqParams){L->W_ih.g, L->W_hh.g, L->b.g, L->gru ? L->b_hh.g : NULL};
}

/* cuDNN's buffers for the capacity B, S, T (model.rnn_impl = cudnn): per layer a weight space and
 * a reserve; one workspace and one weight-gradient space for the largest layer. */
static void reserve_cudnn(RnnModel *m, int B, int S, int T, size_t NT) {
    const Backend *be = m->be;
    size_t work = 0, wmax = 0;
    int Hd = m->Hd, H = m->H;
    for (int l = 0; l < m->Le + (m->dec_cud ? m->Ld : 0); l++) {
        int enc = l < m->Le, k = enc ? l : l - m->Le;
        RnnSeqShape s = enc ? (RnnSeqShape){m->gru, 2, k ? H : m->E, Hd, B, S}
                            : (RnnSeqShape){m->gru, 1, m->dec[k].in, H, B, T};
        RnnSeqSizes z;
        be->rnn_seq_sizes(&z, &s);
        if (z.work > work) work = z.work;
        if (z.weights > wmax) wmax = z.weights;
        if (enc) {
            m->cud_enc_w[k] = act(m, z.weights);
            m->cud_enc_res[k] = act(m, z.reserve), m->cud_enc_res_n[k] = z.reserve;
            m->cud_hy[k] = act(m, (size_t)2 * B * Hd), m->cud_cy[k] = act(m, (size_t)2 * B * Hd);
        } else {
            m->cud_dec_w[k] = act(m, z.weights);
            m->cud_dec_res[k] = act(m, z.reserve), m->cud_dec_res_n[k] = z.reserve;
        }
    }
    m->cud_work = act(m, work), m->cud_work_n = work;
    m->cud_dw = act(m, wmax);
    m->cud_dhy = act(m, (size_t)2 * B * Hd), m->cud_dcy = act(m, (size_t)2 * B * Hd);
    if (m->dec_cud) {
        int E = m->E;
        m->cud_dy = act(m, NT * H);
        m->cud_dx = act(m, NT * (E > H ? E : H));
    }
    m->dec_len = (int *)act(m, (size_t)B);
    m->len_host = xmalloc(sizeof(int) * (size_t)B);
    m->src_len_buf = xmalloc(sizeof(int) * (size_t)B);
}

void rnn_release(RnnModel *m) {
    free_acts(m);
    m->cap = (BatchBounds){0};
}

void rnn_reserve(RnnModel *m, int B, int S, int T, long NS, long NT) {
    if (!bounds_grow(&m->cap, (BatchBounds){B, S, T, NS, NT})) return;
    B = m->cap.B, S = m->cap.S, T = m->cap.T, NS = m->cap.NS, NT = m->cap.NT;
    free_acts(m);
    int E = m->E, H = m->H, Hd = m->Hd, V = m->V, G = m->gru ? 3 : 4;
    int in0 = m->dec[0].in;
    for (int ld = 0; ld < 2 * m->Le; ld++) /* transpose_weights' copies */
        m->enc[ld].W_hhT = act(m, (size_t)m->enc[ld].G * m->enc[ld].h * m->enc[ld].h);
    for (int l = 0; l < m->Ld; l++) {
        RnnLayer *L = &m->dec[l];
        L->W_hhT = act(m, (size_t)L->G * L->h * L->h), L->W_ihT = act(m, (size_t)L->G * L->h * L->in);
    }
    m->W_cT = act(m, (size_t)H * (m->style == DEC_NONE ? H : 2 * H));
    m->src_tm = (int *)act(m, NS), m->mask_tm = act(m, NS);
    m->tin_tm = (int *)act(m, NT), m->tout_tm = (int *)act(m, NT);
    m->src_emb = act(m, NS * E), m->src_emb_mask = act(m, NS * E), m->src_x = act(m, NS * E);
    for (int l = 0; l < m->Le; l++) {
        for (int d = 0; d < 2; d++) {
            m->enc_gx[2 * l + d] = act(m, NS * G * Hd);
            m->enc_gh[2 * l + d] = m->gru ? act(m, NS * 3 * Hd) : NULL;
            m->enc_h[2 * l + d] = act(m, NS * Hd);
            m->enc_c[2 * l + d] = act(m, NS * Hd);
        }
        m->enc_cat[l] = act(m, NS * H);
        if (l) m->enc_x[l] = act(m, NS * H), m->enc_xmask[l] = act(m, NS * H);
    }
    m->enc_out = act(m, NS * H);
    m->enc_out_beam = act(m, NS * H);
    m->zeros = act(m, (size_t)B * H);
    m->be->zero(m->zeros, sizeof(float) * B * H);
    m->tgt_emb = act(m, NT * E), m->tgt_emb_mask = act(m, NT * E), m->tgt_x = act(m, NT * E);
    for (int l = 0; l < m->Ld; l++) {
        int in = m->dec[l].in;
        m->dec_x[l] = act(m, NT * in);
        if (l) m->dec_xmask[l] = act(m, NT * H);
        m->dec_gx[l] = act(m, NT * G * H);
        m->dec_gh[l] = m->gru ? act(m, NT * 3 * H) : NULL;
        m->dec_h[l] = act(m, NT * H), m->dec_c[l] = act(m, NT * H);
        m->dec_h0[l] = act(m, (size_t)B * H), m->dec_c0[l] = act(m, (size_t)B * H);
        m->d_dec_gx[l] = act(m, NT * G * H);
        m->d_dec_gh[l] = m->gru ? act(m, NT * 3 * H) : m->d_dec_gx[l];
        for (int k = 0; k < 2; k++)
            m->dh[l][k] = act(m, (size_t)B * H), m->dc[l][k] = act(m, (size_t)B * H);
    }
    m->qsave = act(m, NT * H), m->ctx = act(m, NT * H);
    m->q_bm = act(m, NT * H), m->ctx_bm = act(m, NT * H), m->dctx_bm = act(m, NT * H);
    m->cat = act(m, NT * 2 * H);
    m->htil = act(m, NT * H), m->htil_drop = act(m, NT * H), m->htil_mask = act(m, NT * H);
    /* the output layer's blocks; decoding's scores (B·K <= B rows) use the same buffers */
    m->out.rows = output_loss_rows(m->be, NT, V, m->loss_rows), m->out.V = V;
    long LR = m->out.rows > B ? m->out.rows : B;
    m->out.logits = act(m, LR * V), m->out.dlogits = act(m, LR * V);
    m->out.work = act(m, m->be->xent_workspace(m->out.rows, V));
    m->d_htil = act(m, NT * H), m->d_htil_drop = act(m, NT * H);
    m->d_cat_all = act(m, NT * 2 * H);
    m->d_ctx_all = act(m, NT * H), m->d_htop_all = act(m, NT * H);
    m->d_cat = act(m, (size_t)B * 2 * H), m->d_pre = act(m, (size_t)B * H);
    m->d_x = act(m, (size_t)B * (in0 > H ? in0 : H));
    m->d_tgt_x = act(m, NT * E);
    m->d_enc_out = act(m, NS * H), m->d_enc_cat = act(m, NS * H);
    m->d_enc_hdir[0] = act(m, NS * Hd), m->d_enc_hdir[1] = act(m, NS * Hd);
    m->d_enc_gx = act(m, NS * G * Hd);
    m->d_enc_gh = m->gru ? act(m, NS * 3 * Hd) : m->d_enc_gx;
    m->d_enc_x = act(m, NS * (E > H ? E : H));
    m->d_src_x = act(m, NS * E);
    for (int k = 0; k < 2; k++) m->d_hrec[k] = act(m, (size_t)B * Hd), m->d_crec[k] = act(m, (size_t)B * Hd);
    if (m->style != DEC_NONE) { /* per step (Tq = 1) or batched (Tq = T) */
        m->attw = act(m, rnn_attn_save_floats(&m->attn, NT, S));
        size_t w1 = rnn_attn_workspace(&m->attn, m->be, B, 1, S);
        size_t wT = rnn_attn_workspace(&m->attn, m->be, B, T, S);
        m->attn_work_cap = w1 > wT ? w1 : wT;
        m->attn_work = act(m, m->attn_work_cap);
        m->attn_map = act(m, (size_t)B * S);
        size_t nk = rnn_attn_kbuf_floats(&m->attn, NS);
        if (nk) m->attn.kbuf = act(m, nk), m->attn.dkbuf = act(m, nk);
    }
    m->tmp_rows = act(m, (size_t)B * H);
    m->beam_len = (int *)act(m, (size_t)B);
    m->beam_idx = (int *)act(m, (size_t)B);
    if (m->cud) reserve_cudnn(m, B, S, T, (size_t)NT);
}

static uint64_t site_key(uint64_t key, uint64_t site) { return rng_hash(key, site) | (key << 32); }

/* Refreshes the transposed copies of the weights the per-step products read (W_hhT of every
 * layer, W_ihT of the decoder layers, W_cT; model.rnn_impl = cudnn leaves some unread; the
 * buffers are rnn_reserve's). Called at the start of every pass
 * (encoder_forward), after which the weights do not change until the next pass: the CPU's sgemm
 * runs x·Wᵀ with few rows markedly slower than x·(Wᵀ) from a stored copy (bench/bench_gemm
 * measures both layouts). */
static void transpose_weights(RnnModel *m) {
    const Backend *be = m->be;
    for (int ld = 0; ld < 2 * m->Le; ld++) {
        RnnLayer *L = &m->enc[ld];
        be->transpose01_forward(L->W_hhT, L->W_hh.w, L->G * L->h, L->h, 1);
    }
    for (int l = 0; l < m->Ld; l++) {
        RnnLayer *L = &m->dec[l];
        be->transpose01_forward(L->W_hhT, L->W_hh.w, L->G * L->h, L->h, 1);
        be->transpose01_forward(L->W_ihT, L->W_ih.w, L->G * L->h, L->in, 1);
    }
    be->transpose01_forward(m->W_cT, m->W_c.w, m->H, m->style == DEC_NONE ? m->H : 2 * m->H, 1);
}

/* ---------------------------------------------------------------------------------------- */
/* encoder                                                                                  */

/* One direction of one encoder layer over all S steps. x[S,B,in] → h, c [S,B,Hd]. */
static void enc_direction_forward(RnnModel *m, int ld, const float *x, const TokenBatch *b) {
    const Backend *be = m->be;
    RnnLayer *L = &m->enc[ld];
    int B = b->B, S = b->S, Hd = m->Hd, G = L->G, rev = ld & 1;
    float *gx = m->enc_gx[ld], *gh = m->enc_gh[ld], *h = m->enc_h[ld], *c = m->enc_c[ld];
    /* gx_t = x_t W_ihᵀ + b for all t at once; the recurrent part step by step */
    be->matmul_bias_forward(gx, x, L->W_ih.w, L->b.w, S * B, G * Hd, L->in, 0);
    for (int i = 0; i < S; i++) {
        int t = rev ? S - 1 - i : i, tp = rev ? t + 1 : t - 1;
        size_t o = (size_t)t * B * Hd;
        const float *hp = i ? h + (size_t)tp * B * Hd : m->zeros;
        const float *cp = i ? c + (size_t)tp * B * Hd : m->zeros;
        cell_forward(be, L, gx + o * G, gh ? gh + o * 3 : NULL, hp, cp, h + o, c + o,
                     m->mask_tm + (size_t)t * B, B);
    }
}

/* Backward of enc_direction_forward. dh_out[S,B,Hd]: gradient w.r.t. h from above;
 * d_hrec/d_crec: on entry the gradient w.r.t. the final state (the decoder's initial state).
 * Accumulates d_x[S,B,in] and the layer's parameter gradients. */
static void enc_direction_backward(RnnModel *m, int ld, const float *x, const TokenBatch *b,
                                   const float *dh_out, float *dhrec, float *dcrec, float *d_x) {
    const Backend *be = m->be;
    RnnLayer *L = &m->enc[ld];
    int B = b->B, S = b->S, Hd = m->Hd, G = L->G, rev = ld & 1;
    float *h = m->enc_h[ld], *c = m->enc_c[ld], *gx = m->enc_gx[ld], *gh = m->enc_gh[ld];
    float *dgx = m->d_enc_gx, *dgh = m->d_enc_gh;
    float *dh = m->d_hrec[0] == dhrec ? m->d_hrec[1] : m->d_hrec[0]; /* scratch for dh_prev */
    float *dcp = m->d_crec[0] == dcrec ? m->d_crec[1] : m->d_crec[0];
    for (int i = S - 1; i >= 0; i--) {
        int t = rev ? S - 1 - i : i, tp = rev ? t + 1 : t - 1;
        size_t o = (size_t)t * B * Hd;
        const float *hp = i ? h + (size_t)tp * B * Hd : m->zeros;
        const float *cp = i ? c + (size_t)tp * B * Hd : m->zeros;
        /* total dh_t = from the layer above + from step t+1 (carried in dhrec) */
        be->axpy(dhrec, 1.0f, dh_out + o, (size_t)B * Hd);
        be->zero(dh, sizeof(float) * B * Hd);
        be->zero(dcp, sizeof(float) * B * Hd);
        cell_backward(be, L, dgx + o * G, dgh + o * (L->gru ? 3 : 4), dh, dcp, dhrec, dcrec,
                      gx + o * G, gh ? gh + o * 3 : NULL, hp, c + o, cp,
                      m->mask_tm + (size_t)t * B, B);
        float *tmp = dhrec; dhrec = dh; dh = tmp;
        tmp = dcrec; dcrec = dcp; dcp = tmp;
    }
    /* dW_hh += Σ_t dgh_tᵀ h_{t-1} (h_{-1} = 0 contributes nothing): one product */
    int Gh = L->gru ? 3 : 4;
    if (S > 1)
        cell_recurrent_grads(be, L, rev ? dgh : dgh + (size_t)B * Gh * Hd,
                             rev ? h + (size_t)B * Hd : h, (S - 1) * B);
    cell_input_grads(be, L, dgx, dgh, x, S * B);
    be->matmul(d_x, dgx, L->W_ih.w, S * B, L->in, G * Hd, 0, 0, 1.0f, 1.0f);
}

/* ids_tm [L,B] = ids [B,L] transposed on the device: transpose01 moves 4-byte words unchanged,
 * so it carries int32 ids as well as floats. */
static void time_major(const Backend *be, int *ids_tm, const int *ids, int B, int L) {
    be->transpose01_forward((float *)ids_tm, (const float *)ids, B, L, 1);
}

/* model.rnn_impl = cudnn: encoder layer l, both directions in one call (be->rnn_seq_forward,
 * bidirectional), x [S,B,in] → enc_cat[l] = [→h; ←h] [S,B,H] directly, and the final states
 * cud_hy[l], cud_cy[l] [2,B,Hd] (direction 0 after each sentence's last real step, direction 1
 * after step 0).
 *
 * Padding, and why the difference from our cells does not matter. Our cells mask padding steps
 * (t >= src_len[b]): the state is kept there. cuDNN runs each sentence over its own length (an
 * RNN data descriptor with the batch's lengths) and writes 0 at the padding steps. So:
 *  - for t < src_len[b] both give the same h (the same equations, ops.h), and direction 1 starts
 *    at each sentence's true end in both;
 *  - at t >= src_len[b], direction 1 is 0 in both (ours keeps its zero initial state there);
 *    direction 0 is 0 in cuDNN but h at the last real step in ours. Who reads enc_cat there:
 *    (1) the attention, as keys and values at positions >= src_len: every kind masks them
 *    (key_len, ops.h), so they change no output, and the gradients it returns there are 0;
 *    (2) the next encoder layer's input at the same padding step, which our masked cell and
 *    cuDNN both ignore (no output, no gradient: our cell writes dgates = 0 on masked rows, the
 *    op writes dx = 0 at padding steps); (3) the decoder's initial state, which ours reads at
 *    step S−1 (= the last real step, kept through the padding) and this path takes from hy, the
 *    same state.
 *  - backward: dy at padding steps is ignored by cuDNN and 0 in ours (from (1), (2)); the gradient
 *    of the decoder's initial state enters as dhy, where ours enters at step S−1 and passes
 *    unchanged through the masked steps to the same last real step.
 * Hence loss and every gradient agree up to rounding; tests/gpu/test_rnn_cudnn.c checks it with
 * padded sentences. The per-direction buffers enc_h, enc_c, enc_gx are unused on this path. */
static void encoder_cudnn_layer(RnnModel *m, int l, const float *x, const TokenBatch *b,
                                int train) {
    RnnSeqShape s = {m->gru, 2, l ? m->H : m->E, m->Hd, b->B, b->S};
    RnnSeqParams p[2] = {seq_params(&m->enc[2 * l]), seq_params(&m->enc[2 * l + 1])};
    m->be->rnn_seq_forward(m->enc_cat[l], m->cud_hy[l], m->gru ? NULL : m->cud_cy[l], x, NULL,
                           NULL, p, b->src_len, m->src_len_h, &s, train, m->cud_enc_w[l],
                           m->cud_work, m->cud_work_n, m->cud_enc_res[l], m->cud_enc_res_n[l]);
}

/* Backward of encoder_cudnn_layer: dy = d_enc_cat [S,B,H], dhy/dcy from the decoder's initial
 * state gradients dh[l][cur[l]], dc[l][cur[l]] (when the layer counts match); WRITES d_enc_x
 * [S,B,in] (0 at padding steps) and accumulates the two directions' parameter gradients. */
static void encoder_cudnn_layer_backward(RnnModel *m, int l, const float *x, const TokenBatch *b,
                                         const int *cur) {
    const Backend *be = m->be;
    int B = b->B, Hd = m->Hd;
    size_t BHd = (size_t)B * Hd;
    float *dhy = NULL, *dcy = NULL;
    if (m->Le == m->Ld) { /* decoder h0[l] = [→h_final; ←h_final] */
        dhy = m->cud_dhy;
        be->zero(dhy, sizeof(float) * 2 * BHd);
        be->concat2_backward(dhy, dhy + BHd, m->dh[l][cur[l]], B, Hd, Hd);
        if (!m->gru) {
            dcy = m->cud_dcy;
            be->zero(dcy, sizeof(float) * 2 * BHd);
            be->concat2_backward(dcy, dcy + BHd, m->dc[l][cur[l]], B, Hd, Hd);
        }
    }
    RnnSeqShape s = {m->gru, 2, l ? m->H : m->E, Hd, B, b->S};
    RnnSeqParams g[2] = {seq_grads(&m->enc[2 * l]), seq_grads(&m->enc[2 * l + 1])};
    be->rnn_seq_backward(m->d_enc_x, NULL, NULL, g, m->d_enc_cat, dhy, dcy, x, m->enc_cat[l],
                         NULL, NULL, b->src_len, m->src_len_h, &s, m->cud_enc_w[l], m->cud_dw,
                         m->cud_work, m->cud_work_n, m->cud_enc_res[l], m->cud_enc_res_n[l]);
}

/* The batch's source lengths on the host (cuDNN's data descriptor needs them there): the host
 * copy model.c attaches, else downloaded once into src_len_buf. */
static const int *host_src_len(RnnModel *m, const TokenBatch *b) {
    if (b->src_len_host) return b->src_len_host;
    m->be->download(m->src_len_buf, b->src_len, sizeof(int) * (size_t)b->B);
    return m->src_len_buf;
}

static void encoder_forward(RnnModel *m, const TokenBatch *b, int train, uint64_t key) {
    const Backend *be = m->be;
    int B = b->B, S = b->S, E = m->E, H = m->H, Hd = m->Hd;
    size_t NS = (size_t)S * B;
    transpose_weights(m);
    if (m->cud) m->src_len_h = host_src_len(m, b);
    time_major(be, m->src_tm, b->src, B, S);
    be->transpose01_forward(m->mask_tm, b->src_mask, B, S, 1);
    be->embedding_forward(m->src_emb, m->src_tm, m->emb_src.w, (int)NS, E);
    be->dropout_forward(m->src_x, m->src_emb_mask, m->src_emb, train ? m->p : 0.0f,
                        site_key(key, 1), NS * E);
    const float *x = m->src_x;
    for (int l = 0; l < m->Le; l++) {
        if (l) {
            be->dropout_forward(m->enc_x[l], m->enc_xmask[l], m->enc_cat[l - 1],
                                train ? m->p : 0.0f, site_key(key, 100 + l), NS * H);
            x = m->enc_x[l];
        }
        if (m->cud) {
            encoder_cudnn_layer(m, l, x, b, train);
            continue;
        }
        enc_direction_forward(m, 2 * l, x, b);
        enc_direction_forward(m, 2 * l + 1, x, b);
        be->concat2_forward(m->enc_cat[l], m->enc_h[2 * l], m->enc_h[2 * l + 1], (int)NS, Hd, Hd);
    }
    be->transpose01_forward(m->enc_out, m->enc_cat[m->Le - 1], S, B, H);
    /* decoder initial state: [→h_final; ←h_final] of the matching encoder layer */
    for (int l = 0; l < m->Ld; l++) {
        if (m->Le == m->Ld && m->cud) { /* hy, cy: [2,B,Hd], direction-major */
            size_t BHd = (size_t)B * Hd;
            be->concat2_forward(m->dec_h0[l], m->cud_hy[l], m->cud_hy[l] + BHd, B, Hd, Hd);
            be->concat2_forward(m->dec_c0[l], m->cud_cy[l], m->cud_cy[l] + BHd, B, Hd, Hd);
        } else if (m->Le == m->Ld) {
            size_t last = (size_t)(S - 1) * B * Hd;
            be->concat2_forward(m->dec_h0[l], m->enc_h[2 * l] + last, m->enc_h[2 * l + 1], B, Hd, Hd);
            be->concat2_forward(m->dec_c0[l], m->enc_c[2 * l] + last, m->enc_c[2 * l + 1], B, Hd, Hd);
        } else {
            be->zero(m->dec_h0[l], sizeof(float) * B * H);
            be->zero(m->dec_c0[l], sizeof(float) * B * H);
        }
    }
}

/* ---------------------------------------------------------------------------------------- */
/* decoder                                                                                  */

/* The state the Bahdanau attention asks with at step t: s_{t−1} of the top layer. */
static const float *prev_top(RnnModel *m, int t, int B) {
    int top = m->Ld - 1;
    return t ? m->dec_h[top] + slot(m, t - 1) * B * m->H : m->dec_h0[top];
}

/* The output layer over nt steps from step t0 (B rows each): h̃ = tanh(W_c [c; h]) (none:
 * tanh(W_c h)). */
static void output_forward(RnnModel *m, int t0, int nt, int B) {
    const Backend *be = m->be;
    int H = m->H, N = nt * B;
    size_t o = slot(m, t0) * B * H;
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
static void decoder_step(RnnModel *m, int t, const float *emb_t, const DecSrc *src, int per_step,
                         int train, uint64_t key) {
    const Backend *be = m->be;
    int B = src->B, S = src->S, E = m->E, H = m->H, top = m->Ld - 1;
    size_t BH = (size_t)B * H, st = slot(m, t), sp = t ? slot(m, t - 1) : 0;
    float *ctx = m->ctx + st * BH;
    if (m->style == DEC_BAHDANAU) /* c_t from s_{t−1} */
        rnn_attn_forward(&m->attn, be, ctx, step_save(m, t, B, S), m->qsave + st * BH,
                         prev_top(m, t, B), src->enc_out, src->src_len, B, 1, S, m->attn_work);
    for (int l = 0; l < m->Ld; l++) {
        RnnLayer *L = &m->dec[l];
        float *x = m->dec_x[l] + st * B * L->in;
        if (l) { /* x = dropout(h_{l-1,t}) */
            be->dropout_forward(x, m->dec_xmask[l] + st * BH, m->dec_h[l - 1] + st * BH,
                                train ? m->p : 0.0f, site_key(key, 200 + 1000 * (uint64_t)t + l), BH);
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
        cell_forward(be, L, gx, m->gru ? m->dec_gh[l] + st * BH * 3 : NULL, hp, cp,
                     m->dec_h[l] + st * BH, m->dec_c[l] + st * BH, NULL, B);
    }
    if (!per_step) return;
    m->attn.at.pos0 = t; /* luong_local's p_t = t (local-m) */
    if (m->style == DEC_LUONG) /* c_t from h_t */
        rnn_attn_forward(&m->attn, be, ctx, step_save(m, t, B, S), m->qsave + st * BH,
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
                          step_save(m, t, B, S), ht, m->qsave + (size_t)t * BH, m->enc_out,
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

/* model.rnn_impl = cudnn, decoder without input feeding and without bahdanau: every layer over
 * all T steps in one call (be->rnn_seq_forward, one direction), from dec_h0/dec_c0, into dec_h[l]
 * [T,B,H]. Layer 0 reads the dropped target embeddings tgt_x; layer l > 0 reads
 * dropout(dec_h[l−1]) with the per-step keys of decoder_step, so the masks are the same as on
 * our path. All rows run T steps (the decoder has no mask: padding targets are ignored by the
 * loss alone, as on our path). dec_gx, dec_c and dec_gh are unused on this path. */
static void decoder_cudnn_forward(RnnModel *m, const TokenBatch *b, int train, uint64_t key) {
    const Backend *be = m->be;
    int B = b->B, T = b->T, H = m->H;
    size_t BH = (size_t)B * H;
    for (int i = 0; i < B; i++) m->len_host[i] = T;
    be->upload(m->dec_len, m->len_host, sizeof(int) * (size_t)B);
    for (int l = 0; l < m->Ld; l++) {
        RnnLayer *L = &m->dec[l];
        const float *x = m->tgt_x;
        if (l) {
            for (int t = 0; t < T; t++) /* as decoder_step: x = dropout(h_{l-1,t}) */
                be->dropout_forward(m->dec_x[l] + t * BH, m->dec_xmask[l] + t * BH,
                                    m->dec_h[l - 1] + t * BH, train ? m->p : 0.0f,
                                    site_key(key, 200 + 1000 * (uint64_t)t + l), BH);
            x = m->dec_x[l];
        }
        RnnSeqShape s = {m->gru, 1, L->in, H, B, T};
        RnnSeqParams p = seq_params(L);
        be->rnn_seq_forward(m->dec_h[l], NULL, NULL, x, m->dec_h0[l],
                            m->gru ? NULL : m->dec_c0[l], &p, m->dec_len, m->len_host, &s, train,
                            m->cud_dec_w[l], m->cud_work, m->cud_work_n, m->cud_dec_res[l],
                            m->cud_dec_res_n[l]);
    }
}

/* Backward of decoder_cudnn_forward: d_htop_all [T,B,H] (complete: the attention and output
 * layer ran batched) is the top layer's dy; each layer's dx goes through the dropout into the
 * layer below's dy, and layer 0's into d_tgt_x. The gradients of the initial states land in
 * dh[l][0], dc[l][0] (cur[l] = 0), where the encoder's backward reads them. */
static void decoder_cudnn_backward(RnnModel *m, const TokenBatch *b, int *cur) {
    const Backend *be = m->be;
    int B = b->B, T = b->T, H = m->H, E = m->E;
    size_t NT = (size_t)T * B;
    const float *dy = m->d_htop_all;
    for (int l = m->Ld - 1; l >= 0; l--) {
        RnnLayer *L = &m->dec[l];
        const float *x = l ? m->dec_x[l] : m->tgt_x;
        RnnSeqShape s = {m->gru, 1, L->in, H, B, T};
        RnnSeqParams g = seq_grads(L);
        cur[l] = 0;
        be->rnn_seq_backward(m->cud_dx, m->dh[l][0], m->gru ? NULL : m->dc[l][0], &g, dy, NULL,
                             NULL, x, m->dec_h[l], m->dec_h0[l], m->gru ? NULL : m->dec_c0[l],
                             m->dec_len, m->len_host, &s, m->cud_dec_w[l], m->cud_dw,
                             m->cud_work, m->cud_work_n, m->cud_dec_res[l], m->cud_dec_res_n[l]);
        if (l) { /* x = dropout(h_{l-1}) */
            be->zero(m->cud_dy, sizeof(float) * NT * H);
            be->dropout_backward(m->cud_dy, m->cud_dx, m->dec_xmask[l], NT * H);
            dy = m->cud_dy;
        } else { /* x = y_{t-1} (dropped embedding) */
            be->axpy(m->d_tgt_x, 1.0f, m->cud_dx, NT * E);
        }
    }
}

double rnn_forward_backward(RnnModel *m, const TokenBatch *b, float smoothing, int train,
                            uint64_t key, float grad_scale) {
    const Backend *be = m->be;
    int B = b->B, S = b->S, T = b->T, E = m->E, H = m->H, Hd = m->Hd;
    size_t BH = (size_t)B * H, NT = (size_t)T * B, NS = (size_t)S * B;
    CHECK(bounds_fit(&m->cap, B, S, T), "batch larger than rnn_reserve'd capacity");
    int per_step = m->feed || m->stepwise;
    CHECK(m->style == DEC_NONE ||
              rnn_attn_workspace(&m->attn, be, B, per_step ? 1 : T, S) <= m->attn_work_cap,
          "attention workspace too small: rnn_reserve after setting the thread count");
    m->ring = 0; /* every step's states at its own slot: the backward reads them */
    encoder_forward(m, b, train, key);
    if (m->style != DEC_NONE) rnn_attn_begin(&m->attn, be, m->enc_out, B, S);
    DecSrc src = {B, S, m->enc_out, b->src_len};
    time_major(be, m->tin_tm, b->tgt_in, B, T);
    /* the loss's targets: b's non-padding rows (tgt_row_id), or all T·B positions time-major */
    int packed = b->tgt_tokens > 0 && (size_t)b->tgt_tokens < NT;
    if (!packed) time_major(be, m->tout_tm, b->tgt_out, B, T);
    be->embedding_forward(m->tgt_emb, m->tin_tm, m->emb_tgt.w, (int)NT, E);
    be->dropout_forward(m->tgt_x, m->tgt_emb_mask, m->tgt_emb, train ? m->p : 0.0f,
                        site_key(key, 2), NT * E);
    int dec_cud = m->dec_cud && !per_step;
    if (dec_cud)
        decoder_cudnn_forward(m, b, train, key);
    else
        for (int t = 0; t < T; t++)
            decoder_step(m, t, m->tgt_x + (size_t)t * B * E, &src, per_step, train, key);
    if (!per_step) {
        if (m->style == DEC_LUONG) luong_batched_forward(m, b);
        output_forward(m, 0, T, B);
    }
    /* p(y_t) = softmax(W_out dropout(h̃_t) + b_out) for all t at once, over the R target
     * positions that are not padding (the output layer is the largest product; padding is
     * about a tenth of the target positions of a length-bucketed batch): xr = h̃_drop[rows],
     * gathered into d_htil, which is free until the decoder's backward */
    be->dropout_forward(m->htil_drop, m->htil_mask, m->htil, train ? m->p : 0.0f,
                        site_key(key, 3), NT * H);
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
    if (dec_cud) decoder_cudnn_backward(m, b, cur);
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
            cell_backward(be, L, dgx, m->d_dec_gh[l] + o * (L->gru ? 3 : 4), dhp, dcp,
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
                              step_save(m, t, B, S), prev_top(m, t, B), m->qsave + (size_t)t * BH,
                              m->enc_out, b->src_len, B, 1, S, m->attn_work);
    }
    if (m->style != DEC_NONE) rnn_attn_end_backward(&m->attn, be, m->d_enc_out, m->enc_out, B, S);
    for (int l = 0; l < (dec_cud ? 0 : m->Ld); l++) { /* batched weight gradients of the decoder layers */
        RnnLayer *L = &m->dec[l];
        float *dgh = m->d_dec_gh[l];
        cell_input_grads(be, L, m->d_dec_gx[l], dgh, m->dec_x[l], (int)NT);
        cell_recurrent_grads(be, L, dgh, m->dec_h0[l], B);
        if (T > 1)
            cell_recurrent_grads(be, L, dgh + BH * (L->gru ? 3 : 4), m->dec_h[l], (T - 1) * B);
    }
    /* target embedding: x = dropout(emb(y)) */
    be->zero(m->tgt_x, sizeof(float) * NT * E); /* reuse as scratch for d(emb) */
    be->dropout_backward(m->tgt_x, m->d_tgt_x, m->tgt_emb_mask, NT * E);
    be->embedding_backward(m->emb_tgt.g, m->tgt_x, m->tin_tm, (int)NT, E);
    grad_ready(&m->grad_ready, m->off_emb_tgt); /* the decoder, attention and output: final */

    /* encoder: enc_out = transpose(enc_cat[top]) */
    be->zero(m->d_enc_cat, sizeof(float) * NS * H);
    be->transpose01_backward(m->d_enc_cat, m->d_enc_out, S, B, H);
    for (int l = m->Le - 1; l >= 0; l--) {
        if (!m->cud) { /* enc_cat = [→h; ←h] */
            be->zero(m->d_enc_hdir[0], sizeof(float) * NS * Hd);
            be->zero(m->d_enc_hdir[1], sizeof(float) * NS * Hd);
            be->concat2_backward(m->d_enc_hdir[0], m->d_enc_hdir[1], m->d_enc_cat, (int)NS, Hd, Hd);
        }
        int in = l ? H : E;
        const float *x = l ? m->enc_x[l] : m->src_x;
        be->zero(m->d_enc_x, sizeof(float) * NS * in);
        if (m->cud) encoder_cudnn_layer_backward(m, l, x, b, cur);
        for (int d = 0; d < (m->cud ? 0 : 2); d++) {
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
            be->embedding_backward(m->emb_src.g, m->d_src_x, m->src_tm, (int)NS, E);
        }
        grad_ready(&m->grad_ready, l ? m->off_enc[l] : 0);
    }
    return loss;
}

/* ---------------------------------------------------------------------------------------- */
/* incremental decoding                                                                     */

/* rows[r] = rows[idx[r]] for n rows of D floats, in place through tmp_rows. */
static void gather_in_place(RnnModel *m, float *rows, const int *idx, int n, int D) {
    m->be->gather_rows(m->tmp_rows, rows, idx, n, D);
    m->be->copy(rows, m->tmp_rows, sizeof(float) * (size_t)n * D);
}

void rnn_decode_begin(RnnModel *m, const TokenBatch *b, int K) {
    const Backend *be = m->be;
    int B = b->B, S = b->S, H = m->H, R = B * K;
    CHECK(R <= m->cap.B && (long)S * R <= m->cap.NS && S <= m->cap.S && 2L * R <= m->cap.NT,
          "decode batch larger than rnn_reserve'd capacity");
    CHECK(m->style == DEC_NONE || rnn_attn_workspace(&m->attn, be, R, 1, S) <= m->attn_work_cap,
          "attention workspace too small: rnn_reserve after setting the thread count");
    encoder_forward(m, b, 0, 0);
    m->ring = 2;
    m->dsrc = (DecSrc){R, S, m->enc_out, b->src_len};
    if (K > 1) { /* row i·K + k reads sentence i */
        int *len = xmalloc(sizeof(int) * B), *rl = xmalloc(sizeof(int) * R);
        int *idx = xmalloc(sizeof(int) * R);
        be->download(len, b->src_len, sizeof(int) * B);
        for (int r = 0; r < R; r++) idx[r] = r / K, rl[r] = len[r / K];
        be->upload(m->beam_len, rl, sizeof(int) * R);
        be->upload(m->beam_idx, idx, sizeof(int) * R);
        be->gather_rows(m->enc_out_beam, m->enc_out, m->beam_idx, R, S * H);
        for (int l = 0; l < m->Ld; l++) {
            gather_in_place(m, m->dec_h0[l], m->beam_idx, R, H);
            gather_in_place(m, m->dec_c0[l], m->beam_idx, R, H);
        }
        m->dsrc = (DecSrc){R, S, m->enc_out_beam, m->beam_len};
        free(len), free(rl), free(idx);
    }
    if (m->style != DEC_NONE) rnn_attn_begin(&m->attn, be, m->dsrc.enc_out, R, S);
}

const float *rnn_decode_step(RnnModel *m, int t, const int *ids, int log_probs) {
    const Backend *be = m->be;
    int R = m->dsrc.B, E = m->E, H = m->H, V = m->V;
    CHECK(m->ring == 2, "decode step before rnn_decode_begin"); /* which checked 2·R <= NT */
    float *emb = m->tgt_x + slot(m, t) * R * E;
    be->embedding_forward(emb, ids, m->emb_tgt.w, R, E);
    decoder_step(m, t, emb, &m->dsrc, 1, 0, 0);
    be->matmul_bias_forward(m->out.logits, m->htil + slot(m, t) * R * H, m->W_out.w, m->b_out.w,
                            R, V, H, 0);
    if (!log_probs) return m->out.logits;
    be->log_softmax(m->out.dlogits, m->out.logits, R, V);
    return m->out.dlogits;
}

void rnn_decode_reorder(RnnModel *m, int t, const int *parent) {
    int R = m->dsrc.B, H = m->H;
    size_t o = slot(m, t) * R * H;
    for (int l = 0; l < m->Ld; l++) {
        gather_in_place(m, m->dec_h[l] + o, parent, R, H);
        if (!m->gru) gather_in_place(m, m->dec_c[l] + o, parent, R, H);
    }
    if (m->feed) gather_in_place(m, m->htil + o, parent, R, H);
}

const float *rnn_decode_attention(RnnModel *m, int t) {
    if (m->style == DEC_NONE) return NULL;
    int R = m->dsrc.B, S = m->dsrc.S;
    if (m->attn.at.ops->save == ATTN_SAVE_WEIGHTS && m->attn.at.NH == 1)
        return step_save(m, t, R, S); /* the weights themselves */
    /* no weights kept (flash, linear, efficient, taylor) or one map per head: the kind's weights of
     * step t's query, averaged over heads, on the host */
    rnn_attn_weights(&m->attn, m->be, m->attn_map,
                     m->qsave + slot(m, t) * R * m->H, m->dsrc.enc_out,
                     m->dsrc.src_len, R, S);
    return m->attn_map;
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
