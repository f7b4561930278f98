/* transformer.c — the Transformer encoder–decoder: forward, backward, incremental decoding
 * (transformer.h).
 *
 * Legend: B batch, S source length, T target length, D model width, NH heads, HS = D/NH,
 * F feed-forward width, V vocabulary, L layers, R = B·K decoding rows, Tc cache capacity (the
 * reserved T). Activations are batch-major: N = B·S (encoder) or B·T (decoder) rows of D.
 *
 * Every layer is a list of sub-layers (self-attention, [cross-attention,] FFN), each
 *   pre-LN:  s = u + dropout(f(LN(u))), output s
 *   post-LN: s = u + dropout(f(u)),     output LN(s)
 * with its saved activations in a Sub; sub_forward / sub_backward handle both orders. */
#include "model/transformer.h"

#include <math.h>
#include <string.h>

#include "data/spm.h"
#include "rng.h"

#define TF_MAXL 16
enum { SUB_SELF, SUB_CROSS, SUB_FFN };

typedef struct {
    Param w, b; /* [D] gain and bias */
} Norm;

typedef struct {
    Mha self, cross;         /* cross: decoder layers only */
    Norm ln[3];              /* one per sub-layer */
    Param W1, b1, W2, b2;    /* [F,D], [F], [D,F], [D] */
} TfLayer;

typedef struct {             /* saved activations of one sub-layer */
    float *ln_out;           /* [N,D] pre: LN(u); post: LN(s), the output */
    float *mean, *rstd;      /* [N] */
    float *s;                /* [N,D] u + dropout(f) */
    float *mask;             /* [N,D] residual dropout mask */
} Sub;

typedef struct {
    Sub sub[3];
    float *self_buf, *cross_buf; /* MhaActs storage */
    float *hd;                   /* [N,F] dropout(relu(a W1ᵀ + b1)) */
} LayerActs;

typedef struct {             /* decoding caches of one decoder layer (backend memory) */
    float *st[2];            /* the self-attention's decoding state (attention_state_floats:
                              * a KV cache or linear's running sums), ping-pong for reorder */
    float *ck, *cv;          /* cross-attention keys/values [R,NH,S,HS] */
} DecCache;

struct TfModel {
    const Backend *be;
    TfConfig c;
    int D, NH, HS, F, V, Le, Ld, pre;
    Param emb_src, emb_tgt, W_out, b_out; /* tied: emb_src serves all three */
    Norm ln_enc, ln_dec;                  /* pre-LN: after each stack */
    TfLayer enc[TF_MAXL], dec[TF_MAXL];

    /* capacity and buffers (backend memory unless h_) */
    int capB, capS, capT, capPos;
    long capNS, capNT;
    void *allocs[512];
    int nallocs;
    int B, S, T;                                          /* the current batch */
    int NR; /* target positions that are not padding: the output layer's rows (row_ids) */
    int *h_src, *h_tin, *h_tout, *h_slen, *h_tlen;        /* host staging */
    int *h_rows, *h_rows_tout;
    int *d_src, *d_tin, *d_tout, *d_slen, *d_tlen;
    int *d_rows, *d_rows_tout; /* [NR]: b·T + t of each such position, and its target */
    float *pe;                                            /* [capPos, D] */
    float *src_emb, *src_x, *src_mask;                    /* [NS,D] */
    float *tgt_emb, *tgt_x, *tgt_mask;                    /* [NT,D] */
    LayerActs ea[TF_MAXL], da[TF_MAXL];
    float *enc_out, *enc_mean, *enc_rstd;                 /* [NS,D], [NS] */
    float *dec_y, *dec_mean, *dec_rstd;                   /* [NT,D], [NT] */
    float *logits, *dlogits;                              /* [NR,V] */
    MhaScratch scr;                                       /* [max(NS,NT), D] each */
    float *f, *g1, *g2, *g3, *gA, *gB;                    /* [max(NS,NT), D] */
    float *fh1, *fh2;                                     /* [max(NS,NT), F] */
    float *d_enc_out;                                     /* [NS,D] */

    /* decoding (allocated by decode_begin, grow-only) */
    void *dallocs[8 * TF_MAXL + 32];
    int ndallocs;
    int dcapR, dcapB, dcapS, dcapTc;
    int R, K, Sd, Tc, cur;        /* rows, beam, source length, cache capacity, ping-pong side */
    DecCache dc[TF_MAXL];
    int *h_rlen, *h_step, *h_parent, *h_parent_bh; /* host [R], [R], [R], [R·NH] */
    int *d_rlen, *d_step, *d_parent_bh, *d_rowmap;
    float *x1, *a1, *q1, *k1, *v1, *o1, *f1, *t1, *t2, *qlast; /* [R,D] */
    float *h1;                    /* [R,F] FFN activation */
    float *lnm, *lnr;             /* [R] layer-norm statistics (not needed afterwards) */
    float *save1;                 /* [R·NH·max(Tc,S)] weights or lse of one attention call */
    float *dwork;                 /* dwork_cap floats: the attention ops' workspace */
    size_t dwork_cap;
    float *dlog, *dlogp, *dattn;  /* [R,V], [R,V], [R,S] */
    float *tmp_rows;              /* [B·S·D] cross keys of the B sentences before the beam copy */
};

/* ---------------------------------------------------------------------------------------- */
/* parameters                                                                               */

static void declare_norm(ParamSet *ps, Norm *n, const char *name, int D) {
    char buf[96];
    snprintf(buf, sizeof buf, "%s.w", name);
    params_declare(ps, &n->w, buf, INIT_ONE, 1, D, 0);
    snprintf(buf, sizeof buf, "%s.b", name);
    params_declare(ps, &n->b, buf, INIT_ZERO, 1, D, 0);
}

static void declare_layer(TfModel *m, ParamSet *ps, TfLayer *L, int dec, int l) {
    char p[32], q[96];
    const TfConfig *c = &m->c;
    snprintf(p, sizeof p, "%s.l%d", dec ? "dec" : "enc", l);
    snprintf(q, sizeof q, "%s.self", p);
    mha_declare(&L->self, ps, q, dec ? c->dec_self : c->enc_self, m->D, m->NH, dec);
    if (dec) {
        snprintf(q, sizeof q, "%s.cross", p);
        mha_declare(&L->cross, ps, q, c->cross, m->D, m->NH, 0);
    }
    for (int i = 0; i < (dec ? 3 : 2); i++) {
        snprintf(q, sizeof q, "%s.ln%d", p, i + 1);
        declare_norm(ps, &L->ln[i], q, m->D);
    }
    snprintf(q, sizeof q, "%s.ffn.W1", p);
    params_declare(ps, &L->W1, q, INIT_XAVIER, 2, m->F, m->D);
    snprintf(q, sizeof q, "%s.ffn.b1", p);
    params_declare(ps, &L->b1, q, INIT_ZERO, 1, m->F, 0);
    snprintf(q, sizeof q, "%s.ffn.W2", p);
    params_declare(ps, &L->W2, q, INIT_XAVIER, 2, m->D, m->F);
    snprintf(q, sizeof q, "%s.ffn.b2", p);
    params_declare(ps, &L->b2, q, INIT_ZERO, 1, m->D, 0);
}

Status transformer_create(TfModel **out, ParamSet *ps, const TfConfig *c, Err *err) {
    char why[512];
    *out = NULL;
    if (c->enc_layers > TF_MAXL || c->dec_layers > TF_MAXL)
        return err_set(err, "at most %d layers are supported (model.enc_layers, "
                       "model.dec_layers)", TF_MAXL);
    const struct { AttentionKind k; AttentionSlot slot; int causal; } slots[] = {
        {c->enc_self, ATTN_SLOT_ENC_SELF, 0}, {c->dec_self, ATTN_SLOT_DEC_SELF, 1},
        {c->cross, ATTN_SLOT_CROSS, 0}};
    for (int i = 0; i < 3; i++)
        if (!attention_supports(slots[i].k, slots[i].slot, slots[i].causal, ps->be, c->D, c->D,
                                c->NH, why, sizeof why))
            return err_set(err, "%s", why);
    TfModel *m = xcalloc(1, sizeof *m);
    m->be = ps->be;
    m->c = *c;
    m->D = c->D, m->NH = c->NH, m->HS = c->D / c->NH, m->F = c->F, m->V = c->V;
    m->Le = c->enc_layers, m->Ld = c->dec_layers, m->pre = c->pre_ln;
    params_declare(ps, &m->emb_src, c->tie_embeddings ? "emb" : "enc.emb", INIT_EMB, 2, c->V,
                   c->D);
    for (int l = 0; l < m->Le; l++) declare_layer(m, ps, &m->enc[l], 0, l);
    if (m->pre) declare_norm(ps, &m->ln_enc, "enc.ln", m->D);
    if (!c->tie_embeddings) params_declare(ps, &m->emb_tgt, "dec.emb", INIT_EMB, 2, c->V, c->D);
    for (int l = 0; l < m->Ld; l++) declare_layer(m, ps, &m->dec[l], 1, l);
    if (m->pre) declare_norm(ps, &m->ln_dec, "dec.ln", m->D);
    if (!c->tie_embeddings) params_declare(ps, &m->W_out, "out.W", INIT_XAVIER, 2, c->V, c->D);
    params_declare(ps, &m->b_out, "out.b", INIT_ZERO, 1, c->V, 0);
    *out = m;
    return STATUS_OK;
}

/* The embedding tables and output matrix (one tensor when tied). */
static const Param *E_src(const TfModel *m) { return &m->emb_src; }
static const Param *E_tgt(const TfModel *m) { return m->c.tie_embeddings ? &m->emb_src : &m->emb_tgt; }
static const Param *W_out(const TfModel *m) { return m->c.tie_embeddings ? &m->emb_src : &m->W_out; }

/* ---------------------------------------------------------------------------------------- */
/* memory                                                                                   */

static void *act_in(const Backend *be, void **list, int *n, int max, size_t bytes) {
    CHECK(*n < max, "too many activation buffers");
    void *p = be->alloc(bytes ? bytes : 4);
    list[(*n)++] = p;
    return p;
}
static float *act(TfModel *m, size_t n) {
    return act_in(m->be, m->allocs, &m->nallocs, 512, sizeof(float) * n);
}
static int *iact(TfModel *m, size_t n) {
    return act_in(m->be, m->allocs, &m->nallocs, 512, sizeof(int) * n);
}
static void free_list(const Backend *be, void **list, int *n) {
    for (int i = 0; i < *n; i++) be->free(list[i]);
    *n = 0;
}

/* Sinusoidal positions (Vaswani et al. 2017 §3.5): PE[t, 2i] = sin(t / 10000^(2i/D)),
 * PE[t, 2i+1] = cos(t / 10000^(2i/D)); computed in double on the host, uploaded. */
static void build_positions(TfModel *m) {
    int D = m->D;
    float *h = xmalloc(sizeof(float) * (size_t)m->capPos * D);
    for (int t = 0; t < m->capPos; t++)
        for (int i = 0; i < D; i += 2) {
            double ang = t / pow(10000.0, (double)i / D);
            h[(size_t)t * D + i] = (float)sin(ang);
            if (i + 1 < D) h[(size_t)t * D + i + 1] = (float)cos(ang);
        }
    m->be->upload(m->pe, h, sizeof(float) * (size_t)m->capPos * D);
    free(h);
}

static void reserve_layer(TfModel *m, LayerActs *la, const TfLayer *L, int dec, long N,
                          long NK, int Tk_self) {
    int D = m->D;
    for (int i = 0; i < (dec ? 3 : 2); i++) {
        Sub *s = &la->sub[i];
        s->ln_out = act(m, N * D), s->s = act(m, N * D), s->mask = act(m, N * D);
        s->mean = act(m, N), s->rstd = act(m, N);
    }
    la->self_buf = act(m, mha_acts_floats(&L->self, N, N, Tk_self));
    la->cross_buf = dec ? act(m, mha_acts_floats(&L->cross, N, NK, m->capS)) : NULL;
    la->hd = act(m, N * m->F);
}

void transformer_reserve(TfModel *m, int B, int S, int T, long NS, long NT) {
    if (B <= m->capB && S <= m->capS && T <= m->capT && NS <= m->capNS && NT <= m->capNT) return;
    if (B < m->capB) B = m->capB;
    if (S < m->capS) S = m->capS;
    if (T < m->capT) T = m->capT;
    if (NS < m->capNS) NS = m->capNS;
    if (NT < m->capNT) NT = m->capNT;
    free_list(m->be, m->allocs, &m->nallocs);
    m->capB = B, m->capS = S, m->capT = T, m->capNS = NS, m->capNT = NT;
    m->capPos = S > T ? S : T;
    int D = m->D;
    long NM = NS > NT ? NS : NT;
    m->h_src = xrealloc(m->h_src, sizeof(int) * NS);
    m->h_tin = xrealloc(m->h_tin, sizeof(int) * NT);
    m->h_tout = xrealloc(m->h_tout, sizeof(int) * NT);
    m->h_rows = xrealloc(m->h_rows, sizeof(int) * NT);
    m->h_rows_tout = xrealloc(m->h_rows_tout, sizeof(int) * NT);
    m->h_slen = xrealloc(m->h_slen, sizeof(int) * B);
    m->h_tlen = xrealloc(m->h_tlen, sizeof(int) * B);
    m->d_src = iact(m, NS), m->d_tin = iact(m, NT), m->d_tout = iact(m, NT);
    m->d_rows = iact(m, NT), m->d_rows_tout = iact(m, NT);
    m->d_slen = iact(m, B), m->d_tlen = iact(m, B);
    m->pe = act(m, (size_t)m->capPos * D);
    build_positions(m);
    m->src_emb = act(m, NS * D), m->src_x = act(m, NS * D), m->src_mask = act(m, NS * D);
    m->tgt_emb = act(m, NT * D), m->tgt_x = act(m, NT * D), m->tgt_mask = act(m, NT * D);
    for (int l = 0; l < m->Le; l++) reserve_layer(m, &m->ea[l], &m->enc[l], 0, NS, NS, S);
    for (int l = 0; l < m->Ld; l++) reserve_layer(m, &m->da[l], &m->dec[l], 1, NT, NS, T);
    m->enc_out = act(m, NS * D), m->enc_mean = act(m, NS), m->enc_rstd = act(m, NS);
    m->dec_y = act(m, NT * D), m->dec_mean = act(m, NT), m->dec_rstd = act(m, NT);
    m->logits = act(m, NT * m->V), m->dlogits = act(m, NT * m->V);
    float **scr[] = {&m->scr.m1, &m->scr.m2, &m->scr.m3, &m->scr.h1, &m->scr.h2, &m->scr.h3,
                     &m->scr.h4, &m->f, &m->g1, &m->g2, &m->g3, &m->gA, &m->gB};
    for (size_t i = 0; i < sizeof scr / sizeof scr[0]; i++) *scr[i] = act(m, NM * D);
    m->fh1 = act(m, NM * m->F), m->fh2 = act(m, NM * m->F);
    m->scr.work_cap = 0; /* the attention ops' workspace: the largest call of any layer */
    for (int l = 0; l < m->Le; l++) {
        size_t a = mha_workspace_floats(&m->enc[l].self, m->be, B, S, S);
        m->scr.work_cap = a > m->scr.work_cap ? a : m->scr.work_cap;
    }
    for (int l = 0; l < m->Ld; l++) {
        size_t a = mha_workspace_floats(&m->dec[l].self, m->be, B, T, T);
        size_t b = mha_workspace_floats(&m->dec[l].cross, m->be, B, T, S);
        m->scr.work_cap = a > m->scr.work_cap ? a : m->scr.work_cap;
        m->scr.work_cap = b > m->scr.work_cap ? b : m->scr.work_cap;
    }
    m->scr.work = act(m, m->scr.work_cap + 1);
    m->d_enc_out = act(m, NS * D);
}

/* ---------------------------------------------------------------------------------------- */
/* batches                                                                                  */

/* Transposes hb (time-major) to batch-major, counts target lengths (BOS .. y_n), expands the
 * lengths per head, and uploads. */
static void upload(TfModel *m, const HostBatch *hb, int with_targets) {
    const Backend *be = m->be;
    int B = hb->B, S = hb->S, T = hb->T;
    CHECK(B <= m->capB && S <= m->capS && T <= m->capT && (long)B * S <= m->capNS &&
              (long)B * T <= m->capNT, "batch larger than transformer_reserve'd capacity");
    m->B = B, m->S = S, m->T = T, m->NR = 0;
    for (int b = 0; b < B; b++) {
        for (int s = 0; s < S; s++) m->h_src[b * S + s] = hb->src[s * B + b];
        m->h_slen[b] = hb->src_len[b];
        int len = 0;
        for (int t = 0; with_targets && t < T; t++) {
            m->h_tin[b * T + t] = hb->tgt_in[t * B + b];
            m->h_tout[b * T + t] = hb->tgt_out[t * B + b];
            if (hb->tgt_in[t * B + b] != SPM_PAD_ID) len = t + 1;
            if (hb->tgt_out[t * B + b] != SPM_PAD_ID) {
                m->h_rows[m->NR] = b * T + t;
                m->h_rows_tout[m->NR++] = hb->tgt_out[t * B + b];
            }
        }
        m->h_tlen[b] = len;
    }
    be->upload(m->d_src, m->h_src, sizeof(int) * B * S);
    be->upload(m->d_slen, m->h_slen, sizeof(int) * B);
    if (!with_targets) return;
    be->upload(m->d_tin, m->h_tin, sizeof(int) * B * T);
    be->upload(m->d_tout, m->h_tout, sizeof(int) * B * T);
    be->upload(m->d_rows, m->h_rows, sizeof(int) * m->NR);
    be->upload(m->d_rows_tout, m->h_rows_tout, sizeof(int) * m->NR);
    be->upload(m->d_tlen, m->h_tlen, sizeof(int) * B);
}

static uint64_t site_key(uint64_t key, uint64_t site) { return rng_hash(key, site) | (key << 32); }

/* x[B,T,D] = dropout(E[ids] · √D + PE[0..T)), mask saved; emb is scratch for E[ids]. */
static void embed(TfModel *m, float *x, float *mask, float *emb, const int *ids, const Param *E,
                  int B, int T, float p, uint64_t key) {
    const Backend *be = m->be;
    size_t n = (size_t)B * T * m->D;
    be->embedding_forward(emb, ids, E->w, B * T, m->D);
    be->scale(emb, sqrtf((float)m->D), n);
    be->bias_forward(emb, m->pe, B, T * m->D); /* + PE[t] for every sentence */
    be->dropout_forward(x, mask, emb, p, key, n);
}

/* Backward of embed: dE[ids] += √D · dropout'(dx) (dx is consumed as scratch). */
static void embed_backward(TfModel *m, const Param *E, float *tmp, const float *dx,
                           const float *mask, const int *ids, int N) {
    const Backend *be = m->be;
    size_t n = (size_t)N * m->D;
    be->zero(tmp, sizeof(float) * n);
    be->dropout_backward(tmp, dx, mask, n);
    be->scale(tmp, sqrtf((float)m->D), n);
    be->embedding_backward(E->g, tmp, ids, N, m->D);
}

/* ---------------------------------------------------------------------------------------- */
/* sub-layers                                                                               */

typedef struct {             /* where a sub-layer runs */
    const TfLayer *L;
    LayerActs *la;
    int i, kind;             /* sub-layer index and SUB_* */
    int B, Tq, Tk;
    MhaMask mask;
    uint64_t key;            /* dropout key of this site */
} SubCall;

static MhaActs carve(const Mha *a, float *buf, int B, int Tq, int Tk) {
    MhaActs acts;
    mha_acts_carve(a, &acts, buf, B, Tq, Tk);
    return acts;
}

/* FFN(a) = W2 dropout(relu(a W1ᵀ + b1)) + b2 into out [N,D] (fh1 is scratch). */
static void ffn_forward(TfModel *m, const TfLayer *L, LayerActs *la, float *out, const float *a,
                        int N, float p, uint64_t key) {
    const Backend *be = m->be;
    int D = m->D, F = m->F;
    be->matmul(m->fh1, a, L->W1.w, N, F, D, 0, 1, 1.0f, 0.0f);
    be->bias_relu_dropout_forward(la->hd, m->fh1, L->b1.w, p, key, N, F);
    be->matmul(out, la->hd, L->W2.w, N, D, F, 0, 1, 1.0f, 0.0f);
    be->bias_forward(out, L->b2.w, N, D);
}

/* Accumulates da[N,D] and the FFN's parameter gradients from dout[N,D]. */
static void ffn_backward(TfModel *m, const TfLayer *L_, const LayerActs *la, float *da,
                         const float *dout, const float *a, int N) {
    const Backend *be = m->be;
    TfLayer *L = (TfLayer *)L_;
    int D = m->D, F = m->F;
    /* out = hd W2ᵀ + b2 */
    be->matmul(L->W2.g, dout, la->hd, D, F, N, 1, 0, 1.0f, 1.0f);
    be->bias_backward(L->b2.g, dout, N, D);
    be->matmul(m->fh1, dout, L->W2.w, N, F, D, 0, 0, 1.0f, 0.0f);
    /* hd = dropout(relu(pre + b1)), with the training dropout rate (backward runs only then) */
    be->relu_dropout_backward(m->fh2, m->fh1, la->hd, m->c.dropout, (size_t)N * F);
    /* pre = a W1ᵀ */
    be->matmul(L->W1.g, m->fh2, a, F, D, N, 1, 0, 1.0f, 1.0f);
    be->bias_backward(L->b1.g, m->fh2, N, F);
    be->matmul(da, m->fh2, L->W1.w, N, D, F, 0, 0, 1.0f, 1.0f);
}

/* Runs sub-layer c on u [N,D]; returns its output (pre: s, post: LN(s)). */
static const float *sub_forward(TfModel *m, const SubCall *c, const float *u, float p) {
    const Backend *be = m->be;
    Sub *sb = &c->la->sub[c->i];
    const Norm *ln = &c->L->ln[c->i];
    int D = m->D, N = c->B * c->Tq;
    size_t n = (size_t)N * D;
    const float *a = u;
    if (m->pre) {
        be->layernorm_forward(sb->ln_out, sb->mean, sb->rstd, u, ln->w.w, ln->b.w, N, D);
        a = sb->ln_out;
    }
    if (c->kind == SUB_FFN) {
        ffn_forward(m, c->L, c->la, m->f, a, N, p, site_key(c->key, 1));
    } else if (c->kind == SUB_SELF) {
        MhaActs acts = carve(&c->L->self, c->la->self_buf, c->B, c->Tq, c->Tk);
        mha_forward(&c->L->self, be, m->f, &acts, a, a, &c->mask, c->B, c->Tq, c->Tk, &m->scr);
    } else {
        MhaActs acts = carve(&c->L->cross, c->la->cross_buf, c->B, c->Tq, c->Tk);
        mha_forward(&c->L->cross, be, m->f, &acts, a, m->enc_out, &c->mask, c->B, c->Tq, c->Tk,
                    &m->scr);
    }
    be->dropout_forward(sb->s, sb->mask, m->f, p, site_key(c->key, 2), n); /* s = u + drop(f) */
    be->axpy(sb->s, 1.0f, u, n);
    if (m->pre) return sb->s;
    be->layernorm_forward(sb->ln_out, sb->mean, sb->rstd, sb->s, ln->w.w, ln->b.w, N, D);
    return sb->ln_out;
}

/* Backward of sub_forward: dy [N,D] the gradient of its output (read only), du [N,D]
 * accumulates the gradient of u. Cross-attention adds into m->d_enc_out. */
static void sub_backward(TfModel *m, const SubCall *c, const float *u, const float *dy,
                         float *du) {
    const Backend *be = m->be;
    Sub *sb = &c->la->sub[c->i];
    Norm *ln = (Norm *)&c->L->ln[c->i];
    int D = m->D, N = c->B * c->Tq;
    size_t n = (size_t)N * D, bytes = sizeof(float) * n;
    const float *ds = dy;
    if (!m->pre) { /* y = LN(s) */
        be->zero(m->g1, bytes);
        be->layernorm_backward(m->g1, ln->w.g, ln->b.g, dy, sb->s, ln->w.w, sb->mean, sb->rstd,
                               N, D);
        ds = m->g1;
    }
    be->axpy(du, 1.0f, ds, n); /* s = u + drop(f) */
    be->zero(m->g2, bytes);
    be->dropout_backward(m->g2, ds, sb->mask, n);
    const float *a = m->pre ? sb->ln_out : u;
    float *da = du;
    if (m->pre) {
        be->zero(m->g3, bytes);
        da = m->g3;
    }
    if (c->kind == SUB_FFN) {
        ffn_backward(m, c->L, c->la, da, m->g2, a, N);
    } else if (c->kind == SUB_SELF) {
        MhaActs acts = carve(&c->L->self, c->la->self_buf, c->B, c->Tq, c->Tk);
        mha_backward(&c->L->self, be, da, da, m->g2, &acts, a, a, &c->mask, c->B, c->Tq, c->Tk,
                     &m->scr);
    } else {
        MhaActs acts = carve(&c->L->cross, c->la->cross_buf, c->B, c->Tq, c->Tk);
        mha_backward(&c->L->cross, be, da, m->d_enc_out, m->g2, &acts, a, m->enc_out, &c->mask,
                     c->B, c->Tq, c->Tk, &m->scr);
    }
    if (m->pre) /* a = LN(u) */
        be->layernorm_backward(du, ln->w.g, ln->b.g, m->g3, u, ln->w.w, sb->mean, sb->rstd, N, D);
}

/* The sub-layers of layer l of a stack, in order. */
static int layer_subs(const TfModel *m, int dec, int l, SubCall *c, uint64_t key) {
    int B = m->B, S = m->S, T = m->T, n = 0;
    const TfLayer *L = dec ? &m->dec[l] : &m->enc[l];
    LayerActs *la = dec ? (LayerActs *)&m->da[l] : (LayerActs *)&m->ea[l];
    MhaMask src = {m->d_slen, 0}, tgt = {m->d_tlen, 1};
    uint64_t base = 1000 + (uint64_t)(dec * TF_MAXL + l) * 4;
    c[n++] = (SubCall){L, la, 0, SUB_SELF, B, dec ? T : S, dec ? T : S, dec ? tgt : src,
                       site_key(key, base)};
    if (dec) c[n++] = (SubCall){L, la, 1, SUB_CROSS, B, T, S, src, site_key(key, base + 1)};
    c[n] = (SubCall){L, la, n, SUB_FFN, B, dec ? T : S, 0, src, site_key(key, base + 2)};
    return n + 1;
}

/* The input of every sub-layer of a stack and its output: in[k] for the k-th sub-layer over
 * all layers; returns the stack's output (before the final LN). */
static const float *stack_forward(TfModel *m, int dec, const float *x, int train, uint64_t key,
                                  const float **in) {
    float p = train ? m->c.dropout : 0.0f;
    int k = 0;
    for (int l = 0; l < (dec ? m->Ld : m->Le); l++) {
        SubCall c[3];
        int ns = layer_subs(m, dec, l, c, key);
        for (int i = 0; i < ns; i++) in[k++] = x, x = sub_forward(m, &c[i], x, p);
    }
    return x;
}

/* Backward through a stack given dx, the gradient of its output (in gA or gB); returns the
 * buffer holding the gradient of its input. */
static float *stack_backward(TfModel *m, int dec, float *dx, const float *const *in,
                             uint64_t key) {
    int L = dec ? m->Ld : m->Le, k = L * (dec ? 3 : 2);
    size_t bytes = sizeof(float) * (size_t)m->B * (dec ? m->T : m->S) * m->D;
    for (int l = L - 1; l >= 0; l--) {
        SubCall c[3];
        int ns = layer_subs(m, dec, l, c, key);
        for (int i = ns - 1; i >= 0; i--) {
            float *du = dx == m->gA ? m->gB : m->gA;
            m->be->zero(du, bytes);
            sub_backward(m, &c[i], in[--k], dx, du);
            dx = du;
        }
    }
    return dx;
}

/* ---------------------------------------------------------------------------------------- */
/* training pass                                                                            */

/* Embeds and encodes the uploaded sources into enc_out; returns the stack's output (the input
 * of the final LN in pre-LN). */
static const float *encoder_forward(TfModel *m, int train, uint64_t key, const float **in) {
    int B = m->B, S = m->S, D = m->D;
    embed(m, m->src_x, m->src_mask, m->src_emb, m->d_src, E_src(m), B, S,
          train ? m->c.dropout : 0.0f, site_key(key, 1));
    const float *x = stack_forward(m, 0, m->src_x, train, key, in);
    if (m->pre)
        m->be->layernorm_forward(m->enc_out, m->enc_mean, m->enc_rstd, x, m->ln_enc.w.w,
                                 m->ln_enc.b.w, B * S, D);
    else
        m->be->copy(m->enc_out, x, sizeof(float) * (size_t)B * S * D);
    return x;
}

double transformer_loss(TfModel *m, const HostBatch *hb, float smoothing, int train,
                        uint64_t key, float grad_scale) {
    const Backend *be = m->be;
    upload(m, hb, 1);
    int B = m->B, S = m->S, T = m->T, D = m->D, V = m->V, NS = B * S, NT = B * T;
    const float *enc_in[2 * TF_MAXL], *dec_in[3 * TF_MAXL];
    const float *xtop = encoder_forward(m, train, key, enc_in);
    embed(m, m->tgt_x, m->tgt_mask, m->tgt_emb, m->d_tin, E_tgt(m), B, T,
          train ? m->c.dropout : 0.0f, site_key(key, 2));
    const float *x = stack_forward(m, 1, m->tgt_x, train, key, dec_in);
    const float *y = x;
    if (m->pre) {
        be->layernorm_forward(m->dec_y, m->dec_mean, m->dec_rstd, x, m->ln_dec.w.w,
                              m->ln_dec.b.w, NT, D);
        y = m->dec_y;
    }
    /* logits = y W_outᵀ + b_out over the NR target positions that are not padding (the output
     * layer is the largest product; padding is about a sixth of the target positions of a
     * length-bucketed batch): yr = y[rows] (g3, free until the stacks' backward) */
    int packed = m->NR > 0 && m->NR < NT, R = packed ? m->NR : NT;
    const int *tg = packed ? m->d_rows_tout : m->d_tout;
    const float *yr = y;
    if (packed) {
        be->gather_rows(m->g3, y, m->d_rows, R, D);
        yr = m->g3;
    }
    be->matmul(m->logits, yr, W_out(m)->w, R, V, D, 0, 1, 1.0f, 0.0f);
    be->bias_forward(m->logits, m->b_out.w, R, V);
    if (!train)
        return be->xent_forward_backward(NULL, m->logits, tg, R, V, smoothing, SPM_PAD_ID, 0.0f);
    double loss = be->xent_forward_backward(m->dlogits, m->logits, tg, R, V, smoothing,
                                            SPM_PAD_ID, grad_scale);

    /* ---------------- backward ---------------- */
    Param *Wo = (Param *)W_out(m);
    be->matmul(Wo->g, m->dlogits, yr, V, D, R, 1, 0, 1.0f, 1.0f);
    be->bias_backward(m->b_out.g, m->dlogits, R, V);
    float *dy = m->gA;
    if (packed) { /* dy[rows] = dlogits W_out, zero elsewhere (scattered like an embedding) */
        be->matmul(m->g2, m->dlogits, Wo->w, R, D, V, 0, 0, 1.0f, 0.0f);
        be->zero(dy, sizeof(float) * NT * D);
        be->embedding_backward(dy, m->g2, m->d_rows, R, D);
    } else {
        be->matmul(dy, m->dlogits, Wo->w, NT, D, V, 0, 0, 1.0f, 0.0f);
    }
    if (m->pre) { /* y = LN_dec(x) */
        be->zero(m->gB, sizeof(float) * NT * D);
        be->layernorm_backward(m->gB, m->ln_dec.w.g, m->ln_dec.b.g, dy, x, m->ln_dec.w.w,
                               m->dec_mean, m->dec_rstd, NT, D);
        dy = m->gB;
    }
    be->zero(m->d_enc_out, sizeof(float) * NS * D);
    float *dx = stack_backward(m, 1, dy, dec_in, key);
    embed_backward(m, E_tgt(m), m->g1, dx, m->tgt_mask, m->d_tin, NT);

    /* encoder: enc_out = LN_enc(x) (pre) or x */
    float *de = m->gA;
    if (m->pre) {
        be->zero(de, sizeof(float) * NS * D);
        be->layernorm_backward(de, m->ln_enc.w.g, m->ln_enc.b.g, m->d_enc_out, xtop,
                               m->ln_enc.w.w, m->enc_mean, m->enc_rstd, NS, D);
    } else {
        be->copy(de, m->d_enc_out, sizeof(float) * NS * D);
    }
    dx = stack_backward(m, 0, de, enc_in, key);
    embed_backward(m, E_src(m), m->g1, dx, m->src_mask, m->d_src, NS);
    return loss;
}

const float *transformer_logits(const TfModel *m, int *rows) {
    *rows = m->NR > 0 && m->NR < m->B * m->T ? m->NR : m->B * m->T;
    return m->logits;
}

/* ---------------------------------------------------------------------------------------- */
/* incremental decoding                                                                     */

static float *dact(TfModel *m, size_t n) {
    return act_in(m->be, m->dallocs, &m->ndallocs, 8 * TF_MAXL + 32, sizeof(float) * n);
}
static int *diact(TfModel *m, size_t n) {
    return act_in(m->be, m->dallocs, &m->ndallocs, 8 * TF_MAXL + 32, sizeof(int) * n);
}

/* Decoding buffers for R rows of B sentences, S source positions, Tc cached steps. */
static void decode_reserve(TfModel *m, int R, int B, int S, int Tc) {
    if (R <= m->dcapR && B <= m->dcapB && S <= m->dcapS && Tc <= m->dcapTc) return;
    R = R > m->dcapR ? R : m->dcapR, B = B > m->dcapB ? B : m->dcapB;
    S = S > m->dcapS ? S : m->dcapS, Tc = Tc > m->dcapTc ? Tc : m->dcapTc;
    free_list(m->be, m->dallocs, &m->ndallocs);
    m->dcapR = R, m->dcapB = B, m->dcapS = S, m->dcapTc = Tc;
    int D = m->D, NH = m->NH;
    for (int l = 0; l < m->Ld; l++) {
        DecCache *c = &m->dc[l];
        memset(c, 0, sizeof *c);
        for (int i = 0; i < 2; i++) c->st[i] = dact(m, attention_state_floats(&m->dec[l].self.at, R, Tc));
        c->ck = dact(m, (size_t)R * S * D), c->cv = dact(m, (size_t)R * S * D);
    }
    m->h_rlen = xrealloc(m->h_rlen, sizeof(int) * R);
    m->h_parent = xrealloc(m->h_parent, sizeof(int) * R);
    m->h_step = xrealloc(m->h_step, sizeof(int) * R);
    m->h_parent_bh = xrealloc(m->h_parent_bh, sizeof(int) * R * NH);
    m->d_rlen = diact(m, R), m->d_rowmap = diact(m, R);
    m->d_step = diact(m, R);
    m->d_parent_bh = diact(m, (size_t)R * NH);
    float **rd[] = {&m->x1, &m->a1, &m->q1, &m->k1, &m->v1, &m->o1, &m->f1, &m->t1, &m->t2,
                    &m->qlast};
    for (size_t i = 0; i < sizeof rd / sizeof rd[0]; i++) *rd[i] = dact(m, (size_t)R * D);
    m->h1 = dact(m, (size_t)R * m->F);
    m->lnm = dact(m, R), m->lnr = dact(m, R);
    m->save1 = dact(m, (size_t)R * NH * (Tc > S ? Tc : S));
    m->dlog = dact(m, (size_t)R * m->V), m->dlogp = dact(m, (size_t)R * m->V);
    m->dattn = dact(m, (size_t)R * S);
    m->tmp_rows = dact(m, (size_t)B * S * D);
    m->dwork_cap = 0; /* one query against Tc cached steps or S source positions */
    for (int l = 0; l < m->Ld; l++) {
        size_t a = mha_workspace_floats(&m->dec[l].self, m->be, R, 1, Tc);
        size_t b = mha_workspace_floats(&m->dec[l].cross, m->be, R, 1, S);
        m->dwork_cap = a > m->dwork_cap ? a : m->dwork_cap;
        m->dwork_cap = b > m->dwork_cap ? b : m->dwork_cap;
    }
    m->dwork = dact(m, m->dwork_cap + 1);
}

void transformer_decode_begin(TfModel *m, const HostBatch *hb, int K, int max_T) {
    const Backend *be = m->be;
    upload(m, hb, 0);
    int B = m->B, S = m->S, R = B * K, D = m->D;
    const float *enc_in[2 * TF_MAXL];
    encoder_forward(m, 0, 0, enc_in);
    decode_reserve(m, R, B, S, max_T);
    m->R = R, m->K = K, m->Sd = S, m->Tc = max_T, m->cur = 0;
    for (int r = 0; r < R; r++) {
        m->h_rlen[r] = m->h_slen[r / K];
        m->h_parent[r] = r / K; /* the row map: row r reads sentence r / K */
    }
    be->upload(m->d_rlen, m->h_rlen, sizeof(int) * R);
    be->upload(m->d_rowmap, m->h_parent, sizeof(int) * R);
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
    be->embedding_forward(m->x1, ids, E_tgt(m)->w, R, D);
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
        CHECK(mha_workspace_floats(&L->self, be, R, 1, m->Tc) <= m->dwork_cap,
              "attention workspace too small: reserve after setting the thread count");
        attention_decode_step(&L->self.at, be, m->o1, m->save1, c->st[cur], m->q1, m->k1, m->v1,
                              m->d_step, R, t, m->Tc, m->dwork);
        mha_project_out(&L->self, be, m->f1, m->t1, m->o1, R, 1);
        step_residual(m, &L->ln[0], m->x1, m->f1);
        /* cross-attention over the source */
        a = step_input(m, &L->ln[1], m->x1);
        mha_project_q(&L->cross, be, m->q1, m->t2, m->t1, a, R, 1);
        mha_attend(&L->cross, be, m->o1, m->save1, m->q1, c->ck, c->cv, &src, R, 1, m->Sd,
                   m->dwork, m->dwork_cap);
        if (l == m->Ld - 1) be->copy(m->qlast, m->q1, sizeof(float) * R * D);
        mha_project_out(&L->cross, be, m->f1, m->t1, m->o1, R, 1);
        step_residual(m, &L->ln[1], m->x1, m->f1);
        /* FFN (no dropout when decoding) */
        a = step_input(m, &L->ln[2], m->x1);
        be->matmul(m->h1, a, L->W1.w, R, F, D, 0, 1, 1.0f, 0.0f);
        be->bias_relu_dropout_forward(m->h1, m->h1, L->b1.w, 0.0f, 0, R, F);
        be->matmul(m->f1, m->h1, L->W2.w, R, D, F, 0, 1, 1.0f, 0.0f);
        be->bias_forward(m->f1, L->b2.w, R, D);
        step_residual(m, &L->ln[2], m->x1, m->f1);
    }
    const float *y = m->x1;
    if (m->pre) {
        be->layernorm_forward(m->a1, m->lnm, m->lnr, m->x1, m->ln_dec.w.w, m->ln_dec.b.w, R, D);
        y = m->a1;
    }
    be->matmul(m->dlog, y, W_out(m)->w, R, V, D, 0, 1, 1.0f, 0.0f);
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
    mha_weights_host(&a->at, w, q, k, va, m->h_rlen, R, S);
    be->upload(m->dattn, w, sizeof(float) * (size_t)R * S);
    free(q), free(k), free(w), free(va);
    return m->dattn;
}

void transformer_free(TfModel *m) {
    if (!m) return;
    free_list(m->be, m->allocs, &m->nallocs);
    free_list(m->be, m->dallocs, &m->ndallocs);
    int **h[] = {&m->h_src,  &m->h_tin,         &m->h_tout, &m->h_slen, &m->h_tlen,
                 &m->h_rows, &m->h_rows_tout, &m->h_rlen, &m->h_step, &m->h_parent,
                 &m->h_parent_bh};
    for (size_t i = 0; i < sizeof h / sizeof h[0]; i++) free(*h[i]);
    free(m);
}
