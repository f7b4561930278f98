#include "model/model.h"

#include <string.h>

Status model_create(Model *m, const Config *cfg, Spm *spm, Err *err) {
    if (model_declare(m, cfg, spm, err)) return STATUS_ERR;
    model_allocate(m);
    return STATUS_OK;
}

void model_allocate(Model *m) { params_allocate(&m->ps); }

Status model_declare(Model *m, const Config *cfg, Spm *spm, Err *err) {
    memset(m, 0, sizeof *m);
    m->cfg = *cfg;
    m->spm = spm;
    m->V = spm_vocab_size(spm);
    if (cfg->device == DEVICE_CUDA) {
        char why[512];
        m->be = backend_cuda(why, sizeof why);
        if (!m->be) return err_set(err, "train.device = cuda: %s", why);
    } else {
        m->be = backend_cpu();
    }
    params_init_set(&m->ps, m->be);
    if (cfg->model_type == MODEL_TRANSFORMER) {
        TfConfig tc = {m->V, cfg->d_model, cfg->heads, cfg->d_ff, cfg->enc_layers,
                       cfg->dec_layers, cfg->dropout, cfg->norm == NORM_PRE,
                       cfg->tie_embeddings, cfg->self_attention, config_dec_self_attention(cfg),
                       cfg->cross_attention};
        if (transformer_create(&m->tf, &m->ps, &tc, err)) return STATUS_ERR;
    } else if (rnn_create(&m->rnn, &m->ps, m->V, cfg->emb, cfg->hidden, cfg->enc_layers,
                          cfg->dec_layers, cfg->dropout, cfg->cell == CELL_GRU,
                          cfg->input_feeding, cfg->attention, cfg->heads, err)) {
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

void model_init_params(Model *m) {
    Rng rng;
    rng_seed(&rng, m->cfg.seed, 0x1d);
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
    spm_free(m->spm);
    memset(m, 0, sizeof *m);
}
