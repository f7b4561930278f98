/* model.c — the one entry point over both model families (model.h): builds the RNN or the
 * Transformer a ModelSpec describes, lists and checks the backend ops it needs, reserves and
 * uploads the batch (one upload per step into m->dev) and dispatches loss and decoding. */
#include "model/model.h"

#include <string.h>

Status model_create(Model *m, const ModelSpec *spec, int V, const Backend *be, Err *err) {
    if (model_declare(m, spec, V, be, err)) return STATUS_ERR;
    model_allocate(m);
    return STATUS_OK;
}

void model_allocate(Model *m) { params_allocate(&m->ps); }

void model_allocate_weights(Model *m) { params_allocate_weights(&m->ps); }

int model_ops_used(const Model *m, OpKind *ops) {
    /* the ops both families call (embeddings, projections, dropout, the output layer and loss,
     * beam reordering), and the trainer's (clipping, Adam) and the decoder's */
    static const OpKind run_ops[] = {
        OP_MATMUL,          OP_MATMUL_BIAS_FORWARD, OP_BIAS_FORWARD,       OP_BIAS_BACKWARD,
        OP_AXPY,            OP_DROPOUT_FORWARD,     OP_DROPOUT_BACKWARD,   OP_EMBEDDING_FORWARD,
        OP_EMBEDDING_BACKWARD, OP_XENT_FORWARD_BACKWARD, OP_XENT_WORKSPACE, OP_LOG_SOFTMAX,
        OP_GATHER_ROWS,     OP_ARGMAX,              OP_SUMSQ,              OP_SCALE,
        OP_ADAM_UPDATE};
    int n = m->tf ? transformer_ops_used(m->tf, ops) : rnn_ops_used(m->rnn, ops);
    return op_list_append(ops, n, run_ops, (int)(sizeof run_ops / sizeof run_ops[0]));
}

Status model_declare(Model *m, const ModelSpec *spec, int V, const Backend *be, Err *err) {
    memset(m, 0, sizeof *m);
    m->spec = *spec;
    m->V = V;
    m->be = be;
    params_init_set(&m->ps, m->be);
    if (spec->type == MODEL_TRANSFORMER) {
        if (transformer_create(&m->tf, &m->ps, spec, m->V, err)) goto fail;
    } else if (rnn_create(&m->rnn, &m->ps, spec, m->V, err) ||
               rnn_set_impl(m->rnn, spec->rnn_impl == RNN_IMPL_CUDNN, err)) {
        goto fail;
    }
    if (m->tf && spec->rnn_impl == RNN_IMPL_CUDNN) {
        err_set(err, "model.rnn_impl = cudnn applies to the RNN's LSTM/GRU layers, but "
                     "model.type = transformer; set model.rnn_impl = own");
        goto fail;
    }
    /* every op the model, the trainer (clipping, Adam) and the decoder call must exist on the
     * backend: refused here, before training, naming each missing op */
    OpKind ops[3 * OP_COUNT];
    int n = model_ops_used(m, ops);
    if (backend_require_ops(m->be, ops, n, err)) goto fail;
    return STATUS_OK;
fail: /* all or nothing: m is left zeroed */
    model_free(m);
    return STATUS_ERR;
}

void model_init_params(Model *m, uint64_t seed) {
    Rng rng;
    rng_seed(&rng, seed, 0x1d);
    params_initialise(&m->ps, &rng, 0.1f);
}

/* Frees the backend batch's arrays. */
static void free_dev(Model *m) {
    TokenBatch *d = &m->dev;
    void *p[] = {d->src, d->src_len, d->src_mask, d->tgt_in, d->tgt_out, d->tgt_len, d->tgt_row,
                 d->tgt_row_id, d->tgt_row_tm};
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++)
        if (p[i]) m->be->free(p[i]);
    memset(d, 0, sizeof *d);
}

void model_release(Model *m) {
    if (m->tf) transformer_release(m->tf);
    else rnn_release(m->rnn);
    free_dev(m);
}

void model_set_loss_rows(Model *m, int rows) {
    if (m->tf) transformer_set_loss_rows(m->tf, rows);
    else rnn_set_loss_rows(m->rnn, rows);
}

void model_reserve(Model *m, int B, int S, int T, long NS, long NT) {
    if (m->tf) transformer_reserve(m->tf, B, S, T, NS, NT);
    else rnn_reserve(m->rnn, B, S, T, NS, NT);
    TokenBatch *d = &m->dev;
    BatchBounds cap = d->cap;
    if (!bounds_grow(&cap, (BatchBounds){B, S, T, NS, NT})) return;
    free_dev(m);
    const Backend *be = m->be;
    *d = (TokenBatch){.cap = cap};
    d->src = be->alloc(sizeof(int) * d->cap.NS);
    d->src_mask = be->alloc(sizeof(float) * d->cap.NS);
    d->src_len = be->alloc(sizeof(int) * d->cap.B);
    d->tgt_in = be->alloc(sizeof(int) * d->cap.NT);
    d->tgt_out = be->alloc(sizeof(int) * d->cap.NT);
    d->tgt_len = be->alloc(sizeof(int) * d->cap.B);
    d->tgt_row = be->alloc(sizeof(int) * d->cap.NT);
    d->tgt_row_id = be->alloc(sizeof(int) * d->cap.NT);
    d->tgt_row_tm = be->alloc(sizeof(int) * d->cap.NT);
}

size_t model_activation_bytes(const Model *m) {
    return m->tf ? transformer_activation_bytes(m->tf) : rnn_activation_bytes(m->rnn);
}

void model_reserve_decode(Model *m, int K, const BatchBounds *batches, long n) {
    BatchBounds u = {1, 1, 1, 1, 1};
    for (long i = 0; i < n; i++) bounds_grow(&u, batches[i]);
    if (!m->tf) { /* two steps' states (rnn_decode_begin's slots) */
        model_reserve(m, u.B * K, u.S, 2, u.NS * K, 2L * u.B * K);
        return;
    }
    model_reserve(m, u.B, u.S, 1, u.NS, u.B); /* the encoder's */
    for (long i = 0; i < n; i++)
        transformer_decode_plan(m->tf, batches[i].B, K, batches[i].S, batches[i].T);
}

/* The one upload of a step: every array of tb into m->dev (no allocation). */
static const TokenBatch *upload(Model *m, const TokenBatch *tb) {
    const Backend *be = m->be;
    TokenBatch *d = &m->dev;
    int B = tb->B;
    size_t NS = (size_t)B * tb->S, NT = (size_t)B * tb->T, NR = (size_t)tb->tgt_tokens;
    CHECK(bounds_fit(&d->cap, B, tb->S, tb->T), "batch larger than model_reserve'd capacity");
    d->B = B, d->S = tb->S, d->T = tb->T;
    d->src_tokens = tb->src_tokens, d->tgt_tokens = tb->tgt_tokens;
    d->src_len_host = tb->src_len; /* valid for this call only: tb is the caller's */
    be->upload(d->src, tb->src, sizeof(int) * NS);
    be->upload(d->src_mask, tb->src_mask, sizeof(float) * NS);
    be->upload(d->src_len, tb->src_len, sizeof(int) * B);
    be->upload(d->tgt_in, tb->tgt_in, sizeof(int) * NT);
    be->upload(d->tgt_out, tb->tgt_out, sizeof(int) * NT);
    be->upload(d->tgt_len, tb->tgt_len, sizeof(int) * B);
    if (NR) {
        be->upload(d->tgt_row, tb->tgt_row, sizeof(int) * NR);
        be->upload(d->tgt_row_id, tb->tgt_row_id, sizeof(int) * NR);
        be->upload(d->tgt_row_tm, tb->tgt_row_tm, sizeof(int) * NR);
    }
    return d;
}

double model_loss(Model *m, const TokenBatch *tb, float smoothing, int train, uint64_t key,
                  float grad_scale) {
    CHECK(!train || m->ps.grad, "model_loss(train) on a model allocated for inference");
    const TokenBatch *d = upload(m, tb);
    /* nothing writes the weights until the pass ends (matmul_hold: rounded once at bf16) */
    backend_matmul_hold(m->be, m->ps.data, m->ps.total);
    double loss = m->tf ? transformer_loss(m->tf, d, smoothing, train, key, grad_scale)
                        : rnn_forward_backward(m->rnn, d, smoothing, train, key, grad_scale);
    backend_matmul_hold(m->be, NULL, 0);
    return loss;
}

void model_set_grad_ready(Model *m, GradReady h) {
    if (m->tf) transformer_set_grad_ready(m->tf, h);
    else rnn_set_grad_ready(m->rnn, h);
}

void model_decode_begin(Model *m, const TokenBatch *tb, int K, int max_T) {
    const TokenBatch *d = upload(m, tb);
    if (m->tf) transformer_decode_begin(m->tf, d, K, max_T);
    else rnn_decode_begin(m->rnn, d, K);
}

const float *model_decode_step(Model *m, int t, const int *ids, int log_probs) {
    return m->tf ? transformer_decode_step(m->tf, t, ids, log_probs)
                 : rnn_decode_step(m->rnn, t, ids, log_probs);
}

void model_decode_reorder(Model *m, int t, const int *parent) {
    if (m->tf) transformer_decode_reorder(m->tf, t, parent);
    else rnn_decode_reorder(m->rnn, t, parent);
}

const float *model_decode_attention(Model *m, int t) {
    return m->tf ? transformer_decode_attention(m->tf, t) : rnn_decode_attention(m->rnn, t);
}

int model_has_attention(const Model *m) {
    /* a kind without host weights (linformer: they need E, F) has no map to show, unless it
     * saves its weights (luong_local: the maps are its saved weights, averaged over heads) */
    const Attention *a = m->tf ? NULL : rnn_attention(m->rnn);
    const AttentionOps *r = m->tf ? attention_row(transformer_spec(m->tf)->cross_attention)
                                  : a ? a->ops : NULL;
    return r && (r->weights_host || attention_saves_weights(r));
}

int model_max_source_len(const Model *m) {
    /* the attentions whose keys are the source: the encoder's self- and the cross-attention, or
     * the RNN decoder's */
    AttentionKind k[2] = {ATTN_NONE, ATTN_NONE};
    AttentionOptions opt = {.linformer_share = LINFORMER_SHARE_NONE};
    if (m->tf) {
        const ModelSpec *c = transformer_spec(m->tf);
        k[0] = c->self_attention, k[1] = c->cross_attention, opt = c->attn_opt;
    } else if (rnn_attention(m->rnn)) {
        const Attention *a = rnn_attention(m->rnn);
        k[0] = a->kind, opt.linformer_k = a->lf_r, opt.linformer_max_len = a->lf_n;
    }
    int lim = 0;
    for (int i = 0; i < 2; i++) {
        int l = attention_max_keys(k[i], &opt);
        if (l && (!lim || l < lim)) lim = l;
    }
    return lim;
}

Status model_check_source_len(const Model *m, int S, Err *err) {
    int lim = model_max_source_len(m);
    if (!lim || S <= lim) return STATUS_OK;
    return err_set(err, "a source of %d subword tokens is longer than model.linformer_max_len = "
                   "%d, the most positions the linformer attention's projections E, F span; "
                   "shorten it, or train with model.linformer_max_len >= %d", S, lim, S);
}

void model_free(Model *m) {
    if (m->be) free_dev(m);
    rnn_free(m->rnn);
    transformer_free(m->tf);
    params_free(&m->ps);
    memset(m, 0, sizeof *m);
}
