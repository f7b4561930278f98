/* rnn_encoder.c — the RNN's bidirectional encoder: forward and backward over all source steps
 * (legend: rnn_internal.h). With model.rnn_impl = cudnn each layer runs through rnn_cudnn.c. */
#include "model/rnn_internal.h"

/* dst [cols, rows] = srcᵀ (src [rows, cols]), then kept for the pass: nothing writes it until the
 * next one, so the CPU at bf16 rounds it once a pass, not once a time step (ops.h,
 * backend_matmul_keep). */
static void transpose_kept(const Backend *be, float *dst, const float *src, int rows, int cols) {
    be->transpose01_forward(dst, src, rows, cols, 1);
    backend_matmul_keep(be, dst, (size_t)rows * cols);
}

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
        transpose_kept(be, L->W_hhT, L->W_hh.w, L->G * L->h, L->h);
    }
    for (int l = 0; l < m->Ld; l++) {
        RnnLayer *L = &m->dec[l];
        transpose_kept(be, L->W_hhT, L->W_hh.w, L->G * L->h, L->h);
        transpose_kept(be, L->W_ihT, L->W_ih.w, L->G * L->h, L->in);
    }
    transpose_kept(be, m->W_cT, m->W_c.w, m->H, m->style == DEC_NONE ? m->H : 2 * m->H);
}

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
        rnn_cell_forward(be, L, gx + o * G, gh ? gh + o * 3 : NULL, hp, cp, h + o, c + o,
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
        rnn_cell_backward(be, L, dgx + o * G, dgh + o * (L->gru ? 3 : 4), dh, dcp, dhrec, dcrec,
                      gx + o * G, gh ? gh + o * 3 : NULL, hp, c + o, cp,
                      m->mask_tm + (size_t)t * B, B);
        float *tmp = dhrec; dhrec = dh; dh = tmp;
        tmp = dcrec; dcrec = dcp; dcp = tmp;
    }
    /* dW_hh += Σ_t dgh_tᵀ h_{t-1} (h_{-1} = 0 contributes nothing): one product */
    int Gh = L->gru ? 3 : 4;
    if (S > 1)
        rnn_cell_recurrent_grads(be, L, rev ? dgh : dgh + (size_t)B * Gh * Hd,
                             rev ? h + (size_t)B * Hd : h, (S - 1) * B);
    rnn_cell_input_grads(be, L, dgx, dgh, x, S * B);
    be->matmul(d_x, dgx, L->W_ih.w, S * B, L->in, G * Hd, 0, 0, 1.0f, 1.0f);
}

/* ids_tm [L,B] = ids [B,L] transposed on the device: transpose01 moves 4-byte words unchanged,
 * so it carries int32 ids as well as floats. */
void rnn_time_major(const Backend *be, int *ids_tm, const int *ids, int B, int L) {
    be->transpose01_forward((float *)ids_tm, (const float *)ids, B, L, 1);
}

void rnn_encoder_forward(RnnModel *m, const TokenBatch *b, int train, uint64_t key) {
    const Backend *be = m->be;
    int B = b->B, S = b->S, E = m->E, H = m->H, Hd = m->Hd;
    size_t NS = (size_t)S * B;
    transpose_weights(m);
    if (m->cud) m->src_len_h = rnn_host_src_len(m, b);
    rnn_time_major(be, m->src_tm, b->src, B, S);
    be->transpose01_forward(m->mask_tm, b->src_mask, B, S, 1);
    be->embedding_forward(m->src_emb, m->src_tm, m->emb_src.w, (int)NS, E);
    be->dropout_forward(m->src_x, m->src_emb_mask, m->src_emb, train ? m->p : 0.0f,
                        rnn_site_key(key, 1), NS * E);
    const float *x = m->src_x;
    for (int l = 0; l < m->Le; l++) {
        if (l) {
            be->dropout_forward(m->enc_x[l], m->enc_xmask[l], m->enc_cat[l - 1],
                                train ? m->p : 0.0f, rnn_site_key(key, 100 + l), NS * H);
            x = m->enc_x[l];
        }
        if (m->cud) {
            rnn_encoder_cudnn_layer(m, l, x, b, train);
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

/* The encoder's backward, after the decoder's: from d_enc_out [B,S,H] (the attention's keys and
 * values) and the gradients of the decoder's initial states dh[l][cur[l]], dc[l][cur[l]], every
 * encoder layer down to the source embedding; reports each layer's gradients ready. */
void rnn_encoder_backward(RnnModel *m, const TokenBatch *b, const int *cur) {
    const Backend *be = m->be;
    int B = b->B, S = b->S, E = m->E, H = m->H, Hd = m->Hd;
    size_t NS = (size_t)S * B;
    /* enc_out = transpose(enc_cat[top]) */
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
        if (m->cud) rnn_encoder_cudnn_layer_backward(m, l, x, b, cur);
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
}
