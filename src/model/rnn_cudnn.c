/* rnn_cudnn.c — model.rnn_impl = cudnn: the RNN's LSTM/GRU layers whose whole input is known run
 * through the backend's rnn_seq_* ops (cuDNN on the GPU; ops.h): every encoder layer, and the
 * decoder layers without input feeding and without bahdanau (legend: rnn_internal.h). */
#include "model/rnn_internal.h"

static RnnSeqParams seq_params(RnnLayer *L) {
    return (RnnSeqParams){L->W_ih.w, L->W_hh.w, L->b.w, L->gru ? L->b_hh.w : NULL};
}

static RnnSeqParams seq_grads(RnnLayer *L) {
    return (RnnSeqParams){L->W_ih.g, L->W_hh.g, L->b.g, L->gru ? L->b_hh.g : NULL};
}

/* cuDNN's buffers for the capacity B, S, T (model.rnn_impl = cudnn): per layer a weight space and
 * a reserve; one workspace and one weight-gradient space for the largest layer. */
void rnn_reserve_cudnn(RnnModel *m, int B, int S, int T, size_t NT) {
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
            m->cud_enc_w[k] = rnn_act(m, z.weights);
            m->cud_enc_res[k] = rnn_act(m, z.reserve), m->cud_enc_res_n[k] = z.reserve;
            m->cud_hy[k] = rnn_act(m, (size_t)2 * B * Hd), m->cud_cy[k] = rnn_act(m, (size_t)2 * B * Hd);
        } else {
            m->cud_dec_w[k] = rnn_act(m, z.weights);
            m->cud_dec_res[k] = rnn_act(m, z.reserve), m->cud_dec_res_n[k] = z.reserve;
        }
    }
    m->cud_work = rnn_act(m, work), m->cud_work_n = work;
    m->cud_dw = rnn_act(m, wmax);
    m->cud_dhy = rnn_act(m, (size_t)2 * B * Hd), m->cud_dcy = rnn_act(m, (size_t)2 * B * Hd);
    if (m->dec_cud) {
        int E = m->E;
        m->cud_dy = rnn_act(m, NT * H);
        m->cud_dx = rnn_act(m, NT * (E > H ? E : H));
    }
    m->dec_len = (int *)rnn_act(m, (size_t)B);
    m->len_host = xmalloc(sizeof(int) * (size_t)B);
    m->src_len_buf = xmalloc(sizeof(int) * (size_t)B);
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
void rnn_encoder_cudnn_layer(RnnModel *m, int l, const float *x, const TokenBatch *b,
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
void rnn_encoder_cudnn_layer_backward(RnnModel *m, int l, const float *x, const TokenBatch *b,
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
const int *rnn_host_src_len(RnnModel *m, const TokenBatch *b) {
    if (b->src_len_host) return b->src_len_host;
    m->be->download(m->src_len_buf, b->src_len, sizeof(int) * (size_t)b->B);
    return m->src_len_buf;
}

/* model.rnn_impl = cudnn, decoder without input feeding and without bahdanau: every layer over
 * all T steps in one call (be->rnn_seq_forward, one direction), from dec_h0/dec_c0, into dec_h[l]
 * [T,B,H]. Layer 0 reads the dropped target embeddings tgt_x; layer l > 0 reads
 * dropout(dec_h[l−1]) with the per-step keys of decoder_step, so the masks are the same as on
 * our path. All rows run T steps (the decoder has no mask: padding targets are ignored by the
 * loss alone, as on our path). dec_gx, dec_c and dec_gh are unused on this path. */
void rnn_decoder_cudnn_forward(RnnModel *m, const TokenBatch *b, int train, uint64_t key) {
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
                                    rnn_site_key(key, 200 + 1000 * (uint64_t)t + l), BH);
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
void rnn_decoder_cudnn_backward(RnnModel *m, const TokenBatch *b, int *cur) {
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
