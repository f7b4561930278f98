#include "model/model.h"

#include <string.h>

Status model_create(Model *m, const ModelSpec *spec, int V, const Backend *be, Err *err) {
    if (model_declare(m, spec, V, be, err)) return STATUS_ERR;
    model_allocate(m);
    return STATUS_OK;
}

void model_allocate(Model *m) { params_allocate(&m->ps); }

Status model_declare(Model *m, const ModelSpec *spec, int V, const Backend *be, Err *err) {
    memset(m, 0, sizeof *m);
    m->spec = *spec;
    m->V = V;
    m->be = be;
    params_init_set(&m->ps, m->be);
    if (spec->type == MODEL_TRANSFORMER) {
        TfConfig tc = {m->V, spec->d_model, spec->heads, spec->d_ff, spec->enc_layers,
                       spec->dec_layers, spec->dropout, spec->norm == NORM_PRE,
                       spec->tie_embeddings, spec->self_attention, spec_dec_self_attention(spec),
                       spec->cross_attention};
        if (transformer_create(&m->tf, &m->ps, &tc, err)) return STATUS_ERR;
    } else if (rnn_create(&m->rnn, &m->ps, m->V, spec->emb, spec->hidden, spec->enc_layers,
                          spec->dec_layers, spec->dropout, spec->cell == CELL_GRU,
                          spec->input_feeding, spec->attention, err)) {
        return STATUS_ERR;
    }
    /* every op the model calls must exist on the backend */
    const void *const *ops = (const void *const *)&m->be->alloc;
    size_t nops = (sizeof(Backend) - offsetof(Backend, alloc)) / sizeof(void *);
    for (size_t i = 0; i < nops; i++)
        if (!ops[i])
            return err_set(err, "backend '%s' does not implement every op this model needs yet "
                           "(entry %zu of the backend table is missing); use train.device = cpu",
                           m->be->name, i);
    return STATUS_OK;
}

void model_init_params(Model *m, uint64_t seed) {
    Rng rng;
    rng_seed(&rng, seed, 0x1d);
    params_initialise(&m->ps, &rng, 0.1f);
}

void model_reserve(Model *m, int B, int S, int T, long NS, long NT) {
    if (m->tf) {
        transformer_reserve(m->tf, B, S, T, NS, NT);
        return;
    }
    rnn_reserve(m->rnn, B, S, T, NS, NT);
    if (B <= m->capB && NS <= m->capNS && NT <= m->capNT) return;
    const Backend *be = m->be;
    if (m->d_src) {
        be->free(m->d_src), be->free(m->d_src_len), be->free(m->d_src_mask);
        be->free(m->d_tgt_in), be->free(m->d_tgt_out);
    }
    m->capB = B > m->capB ? B : m->capB;
    m->capNS = NS > m->capNS ? NS : m->capNS;
    m->capNT = NT > m->capNT ? NT : m->capNT;
    m->d_src = be->alloc(sizeof(int) * m->capNS);
    m->d_src_mask = be->alloc(sizeof(float) * m->capNS);
    m->d_src_len = be->alloc(sizeof(int) * m->capB);
    m->d_tgt_in = be->alloc(sizeof(int) * m->capNT);
    m->d_tgt_out = be->alloc(sizeof(int) * m->capNT);
}

static RnnBatch upload(Model *m, const HostBatch *hb) {
    const Backend *be = m->be;
    size_t NS = (size_t)hb->B * hb->S, NT = (size_t)hb->B * hb->T;
    be->upload(m->d_src, hb->src, sizeof(int) * NS);
    be->upload(m->d_src_mask, hb->src_mask, sizeof(float) * NS);
    be->upload(m->d_src_len, hb->src_len, sizeof(int) * hb->B);
    be->upload(m->d_tgt_in, hb->tgt_in, sizeof(int) * NT);
    be->upload(m->d_tgt_out, hb->tgt_out, sizeof(int) * NT);
    RnnBatch b = {hb->B, hb->S, hb->T, m->d_src, m->d_src_len, m->d_src_mask, m->d_tgt_in,
                  m->d_tgt_out};
    return b;
}

double model_loss(Model *m, const HostBatch *hb, float smoothing, int train, uint64_t key,
                  float grad_scale) {
    if (m->tf) return transformer_loss(m->tf, hb, smoothing, train, key, grad_scale);
    RnnBatch b = upload(m, hb);
    return rnn_forward_backward(m->rnn, &b, smoothing, train, key, grad_scale);
}

void model_decode_begin(Model *m, const HostBatch *hb, int K, int max_T) {
    if (m->tf) {
        transformer_decode_begin(m->tf, hb, K, max_T);
        return;
    }
    RnnBatch b = upload(m, hb);
    rnn_decode_begin(m->rnn, &b, K);
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

int model_has_attention(const Model *m) { return m->tf ? 1 : rnn_has_attention(m->rnn); }

void model_free(Model *m) {
    if (m->d_src) {
        m->be->free(m->d_src), m->be->free(m->d_src_len), m->be->free(m->d_src_mask);
        m->be->free(m->d_tgt_in), m->be->free(m->d_tgt_out);
    }
    rnn_free(m->rnn);
    transformer_free(m->tf);
    params_free(&m->ps);
    memset(m, 0, sizeof *m);
}
