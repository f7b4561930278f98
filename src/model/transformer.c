/* transformer.c — the Transformer encoder–decoder: parameters, memory, forward, backward and the
 * loss (transformer.h); incremental decoding is transformer_decode.c, the types both share are
 * in transformer_internal.h.
 *
 * Legend: B batch, S source length, T target length, D model width, NH heads, HS = D/NH,
 * F feed-forward width, V vocabulary, L layers, R = B·K decoding rows, Tc cache capacity (the
 * reserved T). Activations are batch-major: N = B·S (encoder) or B·T (decoder) rows of D.
 *
 * Every layer is a list of sub-layers (self-attention, [cross-attention,] FFN), each
 *   pre-LN:  s = u + dropout(f(LN(u))), output s
 *   post-LN: s = u + dropout(f(u)),     output LN(s)
 * with its saved activations in a Sub; sub_forward / sub_backward handle both orders. */
#include "model/transformer_internal.h"

#include <math.h>
#include <string.h>

#include "core/tokens.h"
#include "core/rng.h"

enum { SUB_SELF, SUB_CROSS, SUB_FFN };

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
    const ModelSpec *c = &m->spec;
    snprintf(p, sizeof p, "%s.l%d", dec ? "dec" : "enc", l);
    snprintf(q, sizeof q, "%s.self", p);
    mha_declare(&L->self, ps, q, dec ? m->dec_self : c->self_attention, m->D, m->NH, dec,
                &c->attn_opt);
    if (dec) {
        snprintf(q, sizeof q, "%s.cross", p);
        mha_declare(&L->cross, ps, q, c->cross_attention, m->D, m->NH, 0, &c->attn_opt);
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

Status transformer_create(TfModel **out, ParamSet *ps, const ModelSpec *c, int V, Err *err) {
    char why[512];
    *out = NULL;
    int D = c->d_model, NH = c->heads;
    AttentionKind dec_self = spec_dec_self_attention(c);
    if (c->enc_layers > TF_MAXL || c->dec_layers > TF_MAXL)
        return err_set(err, "at most %d layers are supported (model.enc_layers, "
                       "model.dec_layers)", TF_MAXL);
    if (!attention_supports_transformer(c->self_attention, dec_self, c->cross_attention, ps->be,
                                        D, NH, why, sizeof why))
        return err_set(err, "%s", why);
    TfModel *m = xcalloc(1, sizeof *m);
    m->be = ps->be;
    m->spec = *c, m->dec_self = dec_self;
    m->D = D, m->NH = NH, m->HS = D / NH, m->F = c->d_ff, m->V = V;
    m->Le = c->enc_layers, m->Ld = c->dec_layers, m->pre = c->norm == NORM_PRE;
    params_declare(ps, &m->emb_src, c->tie_embeddings ? "emb" : "enc.emb", INIT_EMB, 2, V, D);
    for (int l = 0; l < m->Le; l++) {
        m->off_enc[l] = ps->total;
        declare_layer(m, ps, &m->enc[l], 0, l);
    }
    m->off_ln_enc = ps->total;
    if (m->pre) declare_norm(ps, &m->ln_enc, "enc.ln", m->D);
    m->off_emb_tgt = ps->total;
    if (!c->tie_embeddings) params_declare(ps, &m->emb_tgt, "dec.emb", INIT_EMB, 2, V, D);
    for (int l = 0; l < m->Ld; l++) {
        m->off_dec[l] = ps->total;
        declare_layer(m, ps, &m->dec[l], 1, l);
    }
    m->off_ln_dec = ps->total;
    if (m->pre) declare_norm(ps, &m->ln_dec, "dec.ln", m->D);
    m->off_out = ps->total;
    if (!c->tie_embeddings) params_declare(ps, &m->W_out, "out.W", INIT_XAVIER, 2, V, D);
    params_declare(ps, &m->b_out, "out.b", INIT_ZERO, 1, V, 0);
    *out = m;
    return STATUS_OK;
}

const ModelSpec *transformer_spec(const TfModel *m) { return &m->spec; }

/* The embedding tables and output matrix (one tensor when tied). */
static const Param *E_src(const TfModel *m) { return &m->emb_src; }
const Param *tf_E_tgt(const TfModel *m) { return m->spec.tie_embeddings ? &m->emb_src : &m->emb_tgt; }
const Param *tf_W_out(const TfModel *m) { return m->spec.tie_embeddings ? &m->emb_src : &m->W_out; }

/* ---------------------------------------------------------------------------------------- */
/* memory                                                                                   */

static float *act(TfModel *m, size_t n) { return acts_floats(&m->acts, m->be, n); }

/* Sinusoidal positions (Vaswani et al. 2017 §3.5): PE[t, 2i] = sin(t / 10000^(2i/D)),
 * PE[t, 2i+1] = cos(t / 10000^(2i/D)); computed in double on the host, uploaded. */
void tf_reserve_positions(TfModel *m, int n) {
    if (n <= m->capPos) return;
    int D = m->D;
    if (m->pe) m->be->free(m->pe);
    m->capPos = n;
    m->pe = m->be->alloc(sizeof(float) * (size_t)n * D);
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
    la->cross_buf = dec ? act(m, mha_acts_floats(&L->cross, N, NK, m->cap.S)) : NULL;
    m->attn_bytes += sizeof(float) * attention_save_floats(&L->self.at, N, Tk_self);
    if (dec) m->attn_bytes += sizeof(float) * attention_save_floats(&L->cross.at, N, m->cap.S);
    la->hd = act(m, N * m->F);
}

void transformer_release(TfModel *m) {
    acts_free(&m->acts, m->be);
    m->attn_bytes = 0;
    m->cap = (BatchBounds){0};
}

/* One attention on one backend, for bounds_max: its workspace for b sentences of tq queries and
 * tk keys. */
typedef struct {
    const Mha *a;
    const Backend *be;
} MhaOn;
static size_t mha_on_workspace(const void *ctx, int b, int tq, int tk) {
    const MhaOn *o = ctx;
    return mha_workspace_floats(o->a, o->be, b, tq, tk);
}

void transformer_reserve(TfModel *m, int B, int S, int T, long NS, long NT) {
    if (!bounds_grow(&m->cap, (BatchBounds){B, S, T, NS, NT})) return;
    B = m->cap.B, S = m->cap.S, T = m->cap.T, NS = m->cap.NS, NT = m->cap.NT;
    acts_free(&m->acts, m->be);
    m->attn_bytes = 0;
    tf_reserve_positions(m, S > T ? S : T);
    int D = m->D;
    long NM = NS > NT ? NS : NT;
    m->src_emb = act(m, NS * D), m->src_x = act(m, NS * D), m->src_mask = act(m, NS * D);
    m->tgt_emb = act(m, NT * D), m->tgt_x = act(m, NT * D), m->tgt_mask = act(m, NT * D);
    for (int l = 0; l < m->Le; l++) m->enc[l].W2T = act(m, (size_t)D * m->F);
    for (int l = 0; l < m->Ld; l++) m->dec[l].W2T = act(m, (size_t)D * m->F);
    for (int l = 0; l < m->Le; l++) reserve_layer(m, &m->ea[l], &m->enc[l], 0, NS, NS, S);
    for (int l = 0; l < m->Ld; l++) reserve_layer(m, &m->da[l], &m->dec[l], 1, NT, NS, T);
    m->enc_out = act(m, NS * D), m->enc_mean = act(m, NS), m->enc_rstd = act(m, NS);
    m->dec_y = act(m, NT * D), m->dec_mean = act(m, NT), m->dec_rstd = act(m, NT);
    m->out.rows = output_loss_rows(m->be, NT, m->V, m->loss_rows), m->out.V = m->V;
    m->out.logits = act(m, (size_t)m->out.rows * m->V);
    m->out.dlogits = act(m, (size_t)m->out.rows * m->V);
    m->out.work = act(m, m->be->xent_workspace(m->out.rows, m->V));
    float **scr[] = {&m->scr.m1, &m->scr.m2, &m->scr.m3, &m->scr.h1, &m->scr.h2, &m->scr.h3,
                     &m->scr.h4, &m->f, &m->g1, &m->g2, &m->g3, &m->gA, &m->gB};
    for (size_t i = 0; i < sizeof scr / sizeof scr[0]; i++) *scr[i] = act(m, NM * D);
    m->fh1 = act(m, NM * m->F), m->fh2 = act(m, NM * m->F);
    m->scr.work_cap = 0; /* the attention ops' workspace: the largest call of any layer */
    for (int l = 0; l < m->Le; l++) {
        MhaOn e = {&m->enc[l].self, m->be};
        size_t a = bounds_max(mha_on_workspace, &e, B, S, S, NS, NS);
        m->scr.work_cap = a > m->scr.work_cap ? a : m->scr.work_cap;
    }
    for (int l = 0; l < m->Ld; l++) {
        MhaOn d = {&m->dec[l].self, m->be}, c = {&m->dec[l].cross, m->be};
        size_t a = bounds_max(mha_on_workspace, &d, B, T, T, NT, NT);
        size_t b = bounds_max(mha_on_workspace, &c, B, T, S, NT, NS);
        m->scr.work_cap = a > m->scr.work_cap ? a : m->scr.work_cap;
        m->scr.work_cap = b > m->scr.work_cap ? b : m->scr.work_cap;
    }
    m->scr.work = act(m, m->scr.work_cap + 1);
    m->attn_bytes += sizeof(float) * (m->scr.work_cap + 1);
    m->d_enc_out = act(m, NS * D);
}

size_t transformer_activation_bytes(const TfModel *m) { return m->acts.bytes; }

size_t transformer_attention_bytes(const TfModel *m) { return m->attn_bytes; }

/* ---------------------------------------------------------------------------------------- */
/* batches                                                                                  */

/* Points the model at batch b (backend memory, batch-major; model.c uploaded it). */
void tf_use_batch(TfModel *m, const TokenBatch *b) {
    int B = b->B, S = b->S, T = b->T;
    CHECK(bounds_fit(&m->cap, B, S, T), "batch larger than transformer_reserve'd capacity");
    m->B = B, m->S = S, m->T = T, m->NR = (int)b->tgt_tokens;
    m->d_src = b->src, m->d_slen = b->src_len;
    m->d_tin = b->tgt_in, m->d_tout = b->tgt_out, m->d_tlen = b->tgt_len;
    m->d_rows = b->tgt_row, m->d_rows_tout = b->tgt_row_id;
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
    if (p > 0.0f) { /* the dropout needs its own pass */
        be->matmul(m->fh1, a, L->W1.w, N, F, D, 0, 1, 1.0f, 0.0f);
        be->bias_relu_dropout_forward(la->hd, m->fh1, L->b1.w, p, key, N, F);
    } else { /* no dropout: bias and ReLU fuse into the product */
        be->matmul_bias_forward(la->hd, a, L->W1.w, L->b1.w, N, F, D, 1);
    }
    backend_matmul_keep(be, la->hd, (size_t)N * F); /* read again by dW2 */
    tf_ffn_w2_product(m, out, la->hd, L, N); /* hd W2ᵀ + b2 */
    be->bias_forward(out, L->b2.w, N, D);
}

void tf_ffn_w2_product(const TfModel *m, float *out, const float *h, const TfLayer *L, int N) {
    if (m->w2t)
        m->be->matmul(out, h, L->W2T, N, m->D, m->F, 0, 0, 1.0f, 0.0f);
    else
        m->be->matmul(out, h, L->W2.w, N, m->D, m->F, 0, 1, 1.0f, 0.0f);
}

/* da[N,D] = da_keep · da + the gradient of the FFN's input (da_keep 1: accumulate, 0:
 * overwrite), and accumulates the FFN's parameter gradients, from dout[N,D]. */
static void ffn_backward(TfModel *m, const TfLayer *L_, const LayerActs *la, float *da,
                         float da_keep, const float *dout, const float *a, int N) {
    const Backend *be = m->be;
    TfLayer *L = (TfLayer *)L_;
    int D = m->D, F = m->F;
    /* out = hd W2ᵀ + b2 */
    backend_matmul_run(be, 1); /* dout rounded once for both products at bf16 */
    be->matmul(L->W2.g, dout, la->hd, D, F, N, 1, 0, 1.0f, 1.0f);
    be->matmul(m->fh1, dout, L->W2.w, N, F, D, 0, 0, 1.0f, 0.0f);
    backend_matmul_run(be, 0);
    be->bias_backward(L->b2.g, dout, N, D);
    /* hd = dropout(relu(pre + b1)), with the training dropout rate (backward runs only then) */
    be->relu_dropout_backward(m->fh2, m->fh1, la->hd, m->spec.dropout, (size_t)N * F);
    /* pre = a W1ᵀ */
    backend_matmul_run(be, 1); /* fh2 likewise */
    be->matmul(L->W1.g, m->fh2, a, F, D, N, 1, 0, 1.0f, 1.0f);
    be->matmul(da, m->fh2, L->W1.w, N, D, F, 0, 0, 1.0f, da_keep);
    backend_matmul_run(be, 0);
    be->bias_backward(L->b1.g, m->fh2, N, F);
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
    /* the projections' input, read again by their weight gradients (post-LN: u, the previous
     * sub-layer's output or the embedding, written once a pass as sb->ln_out is) */
    backend_matmul_keep(be, a, n);
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
 * receives the gradient of u (overwritten). Cross-attention adds into m->d_enc_out. */
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
    be->copy(du, ds, bytes); /* s = u + drop(f) */
    be->zero(m->g2, bytes);
    be->dropout_backward(m->g2, ds, sb->mask, n);
    /* the gradient of the sub-layer's input a: pre-LN, a = LN(u), into g3 (overwritten);
     * post-LN, a = u, added to du */
    const float *a = m->pre ? sb->ln_out : u;
    float *da = m->pre ? m->g3 : du, keep = m->pre ? 0.0f : 1.0f;
    if (c->kind == SUB_FFN) {
        ffn_backward(m, c->L, c->la, da, keep, m->g2, a, N);
    } else if (c->kind == SUB_SELF) {
        MhaActs acts = carve(&c->L->self, c->la->self_buf, c->B, c->Tq, c->Tk);
        mha_backward(&c->L->self, be, da, keep, da, m->g2, &acts, a, a, &c->mask, c->B, c->Tq,
                     c->Tk, &m->scr);
    } else {
        MhaActs acts = carve(&c->L->cross, c->la->cross_buf, c->B, c->Tq, c->Tk);
        mha_backward(&c->L->cross, be, da, keep, m->d_enc_out, m->g2, &acts, a, m->enc_out,
                     &c->mask, c->B, c->Tq, c->Tk, &m->scr);
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
    float p = train ? m->spec.dropout : 0.0f;
    int k = 0;
    for (int l = 0; l < (dec ? m->Ld : m->Le); l++) {
        SubCall c[3];
        int ns = layer_subs(m, dec, l, c, key);
        for (int i = 0; i < ns; i++) in[k++] = x, x = sub_forward(m, &c[i], x, p);
    }
    return x;
}

void transformer_set_grad_ready(TfModel *m, GradReady h) { m->grad_ready = h; }

/* Backward through a stack given dx, the gradient of its output (in gA or gB); returns the
 * buffer holding the gradient of its input. After each layer, its parameters and those
 * declared after it are final (GradReady). */
static float *stack_backward(TfModel *m, int dec, float *dx, const float *const *in,
                             uint64_t key) {
    int L = dec ? m->Ld : m->Le, k = L * (dec ? 3 : 2);
    for (int l = L - 1; l >= 0; l--) {
        SubCall c[3];
        int ns = layer_subs(m, dec, l, c, key);
        for (int i = ns - 1; i >= 0; i--) {
            float *du = dx == m->gA ? m->gB : m->gA;
            sub_backward(m, &c[i], in[--k], dx, du);
            dx = du;
        }
        grad_ready(&m->grad_ready, dec ? m->off_dec[l] : m->off_enc[l]);
    }
    return dx;
}

/* ---------------------------------------------------------------------------------------- */
/* training pass                                                                            */

/* Embeds and encodes the uploaded sources into enc_out; returns the stack's output (the input
 * of the final LN in pre-LN). */
const float *tf_encoder_forward(TfModel *m, int train, uint64_t key, const float **in) {
    int B = m->B, S = m->S, D = m->D;
    /* every pass (training, validation, decoding) starts here: W2ᵀ of the weights as they are,
     * where the backend multiplies faster from the copy (Backend.matmul_transb_slower) */
    m->w2t = backend_matmul_transb_slower(m->be);
    for (int l = 0; m->w2t && l < m->Le; l++)
        m->be->transpose01_forward(m->enc[l].W2T, m->enc[l].W2.w, D, m->F, 1);
    for (int l = 0; m->w2t && l < m->Ld; l++)
        m->be->transpose01_forward(m->dec[l].W2T, m->dec[l].W2.w, D, m->F, 1);
    embed(m, m->src_x, m->src_mask, m->src_emb, m->d_src, E_src(m), B, S,
          train ? m->spec.dropout : 0.0f, site_key(key, 1));
    const float *x = stack_forward(m, 0, m->src_x, train, key, in);
    if (m->pre)
        m->be->layernorm_forward(m->enc_out, m->enc_mean, m->enc_rstd, x, m->ln_enc.w.w,
                                 m->ln_enc.b.w, B * S, D);
    else
        m->be->copy(m->enc_out, x, sizeof(float) * (size_t)B * S * D);
    /* every decoder layer's cross-attention projects it, forward and backward */
    backend_matmul_keep(m->be, m->enc_out, (size_t)B * S * D);
    return x;
}

double transformer_loss(TfModel *m, const TokenBatch *b, float smoothing, int train,
                        uint64_t key, float grad_scale) {
    const Backend *be = m->be;
    tf_use_batch(m, b);
    int B = m->B, S = m->S, T = m->T, D = m->D, NS = B * S, NT = B * T;
    const float *enc_in[2 * TF_MAXL], *dec_in[3 * TF_MAXL];
    const float *xtop = tf_encoder_forward(m, train, key, enc_in);
    embed(m, m->tgt_x, m->tgt_mask, m->tgt_emb, m->d_tin, tf_E_tgt(m), B, T,
          train ? m->spec.dropout : 0.0f, site_key(key, 2));
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
    /* the loss, and in training its gradient d(yr): into g2 where packed, else dy (gA) */
    float *dy = m->gA, *dyr = packed ? m->g2 : dy;
    double loss = output_loss(be, &m->out, dyr, yr, tg, R, D, tf_W_out(m), &m->b_out, smoothing,
                              train, grad_scale);
    if (!train) return loss;

    /* ---------------- backward ---------------- */
    if (packed) { /* dy[rows] = d(yr), zero elsewhere (scattered like an embedding) */
        be->zero(dy, sizeof(float) * NT * D);
        be->embedding_backward(dy, m->g2, m->d_rows, R, D);
    }
    grad_ready(&m->grad_ready, m->off_out); /* tied: W_out is emb, at 0, and not final */
    if (m->pre) { /* y = LN_dec(x) */
        be->zero(m->gB, sizeof(float) * NT * D);
        be->layernorm_backward(m->gB, m->ln_dec.w.g, m->ln_dec.b.g, dy, x, m->ln_dec.w.w,
                               m->dec_mean, m->dec_rstd, NT, D);
        dy = m->gB;
        grad_ready(&m->grad_ready, m->off_ln_dec);
    }
    be->zero(m->d_enc_out, sizeof(float) * NS * D);
    float *dx = stack_backward(m, 1, dy, dec_in, key);
    embed_backward(m, tf_E_tgt(m), m->g1, dx, m->tgt_mask, m->d_tin, NT);
    /* untied: dec.emb (declared after enc.ln) is final; tied: it is emb, at 0 */
    if (!m->spec.tie_embeddings) grad_ready(&m->grad_ready, m->off_emb_tgt);

    /* encoder: enc_out = LN_enc(x) (pre) or x */
    float *de = m->gA;
    if (m->pre) {
        be->zero(de, sizeof(float) * NS * D);
        be->layernorm_backward(de, m->ln_enc.w.g, m->ln_enc.b.g, m->d_enc_out, xtop,
                               m->ln_enc.w.w, m->enc_mean, m->enc_rstd, NS, D);
        grad_ready(&m->grad_ready, m->off_ln_enc);
    } else {
        be->copy(de, m->d_enc_out, sizeof(float) * NS * D);
    }
    dx = stack_backward(m, 0, de, enc_in, key);
    embed_backward(m, E_src(m), m->g1, dx, m->src_mask, m->d_src, NS);
    grad_ready(&m->grad_ready, 0);
    return loss;
}

const float *transformer_logits(const TfModel *m, int *rows) {
    CHECK(m->out.last_blocks == 1, "transformer_logits: the last loss ran in several blocks of "
          "rows (transformer_set_loss_rows); only the last block's logits are kept");
    *rows = m->NR > 0 && m->NR < m->B * m->T ? m->NR : m->B * m->T;
    return m->out.logits;
}

void transformer_set_loss_rows(TfModel *m, int rows) {
    CHECK(m->cap.B == 0, "transformer_set_loss_rows after transformer_reserve");
    m->loss_rows = rows;
}

int transformer_ops_used(const TfModel *m, OpKind *ops) {
    static const OpKind own[] = {
        OP_BIAS_RELU_DROPOUT_FORWARD, OP_RELU_DROPOUT_BACKWARD, OP_LAYERNORM_FORWARD,
        OP_LAYERNORM_BACKWARD,        OP_PERMUTE0213_FORWARD,   OP_PERMUTE0213_BACKWARD,
        OP_WRITE_STEP,                OP_GATHER_ROWS_STRIDED, /* these two: decoding */
        OP_TRANSPOSE01_FORWARD}; /* the weight copies W2T, W_outT */
    int n = op_list_append(ops, 0, own, (int)(sizeof own / sizeof own[0]));
    n += attention_ops_used(m->spec.self_attention, ops + n);
    n += attention_ops_used(m->dec_self, ops + n);
    n += attention_ops_used(m->spec.cross_attention, ops + n);
    return n;
}

void transformer_free(TfModel *m) {
    if (!m) return;
    acts_free(&m->acts, m->be);
    acts_free(&m->dacts, m->be);
    if (m->pe) m->be->free(m->pe);
    int **h[] = {&m->h_rlen, &m->h_step, &m->h_parent, &m->h_parent_bh};
    for (size_t i = 0; i < sizeof h / sizeof h[0]; i++) free(*h[i]);
    free(m);
}
