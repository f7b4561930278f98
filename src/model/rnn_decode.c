/* rnn_decode.c — the RNN's incremental decoding (rnn.h rnn_decode_*): the encoder once, then
 * one decoder step at a time over R = B·K rows, two steps' states kept (legend:
 * rnn_internal.h). */
#include "model/rnn_internal.h"

#include <stdlib.h>

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
    rnn_encoder_forward(m, b, 0, 0);
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
    if (m->style != DEC_NONE) rnn_attn_begin(&m->attn, be, m->dsrc.enc_out, m->dsrc.src_len, R, S);
}

const float *rnn_decode_step(RnnModel *m, int t, const int *ids, int log_probs) {
    const Backend *be = m->be;
    int R = m->dsrc.B, E = m->E, H = m->H, V = m->V;
    CHECK(m->ring == 2, "decode step before rnn_decode_begin"); /* which checked 2·R <= NT */
    float *emb = m->tgt_x + rnn_slot(m, t) * R * E;
    be->embedding_forward(emb, ids, m->emb_tgt.w, R, E);
    rnn_decoder_step(m, t, emb, &m->dsrc, 1, 0, 0);
    be->matmul_bias_forward(m->out.logits, m->htil + rnn_slot(m, t) * R * H, m->W_out.w, m->b_out.w,
                            R, V, H, 0);
    if (!log_probs) return m->out.logits;
    be->log_softmax(m->out.dlogits, m->out.logits, R, V);
    return m->out.dlogits;
}

void rnn_decode_reorder(RnnModel *m, int t, const int *parent) {
    int R = m->dsrc.B, H = m->H;
    size_t o = rnn_slot(m, t) * R * H;
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
        return rnn_step_save(m, t, R, S); /* the weights themselves */
    const Attention *a = &m->attn.at;
    if (attention_saves_weights(a->ops) && (a->NH == 1 || !a->ops->weights_host)) {
        /* luong_local's window, or the heads' weights of a kind without host weights (qknorm):
         * each row's saved weights placed over the S keys, the mean over heads */
        size_t ns = (size_t)R * rnn_attn_save_floats(&m->attn, 1, S);
        float *sw = xmalloc(sizeof(float) * ns), *w = xmalloc(sizeof(float) * (size_t)R * S);
        m->be->download(sw, rnn_step_save(m, t, R, S), sizeof(float) * ns);
        attention_saved_map_host(a, w, sw, R, S);
        m->be->upload(m->attn_map, w, sizeof(float) * (size_t)R * S);
        free(sw), free(w);
        return m->attn_map;
    }
    /* no weights kept (flash, linear, efficient, taylor) or one set per head: the kind's host
     * weights of step t's query, averaged over heads */
    rnn_attn_weights(&m->attn, m->be, m->attn_map,
                     m->qsave + rnn_slot(m, t) * R * m->H, m->dsrc.enc_out,
                     m->dsrc.src_len, R, S);
    return m->attn_map;
}
