/* rnn_cell.c — one LSTM/GRU cell over B rows and its weight gradients, shared by the RNN's
 * encoder (rnn_encoder.c) and decoder (rnn.c); the cell ops of ops.h on one layer's weights
 * (legend: rnn_internal.h). */
#include "model/rnn_internal.h"

/* One step of cell L: gx[B,G·h] holds x W_ihᵀ + b on entry; gh[B,3h] is GRU scratch that
 * backward needs again. Writes h (and c for LSTM). Reads W_hh through L->W_hhT. */
void rnn_cell_forward(const Backend *be, const RnnLayer *L, float *gx, float *gh, const float *hp,
                      const float *cp, float *h, float *c, const float *mask, int B) {
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
void rnn_cell_backward(const Backend *be, const RnnLayer *L, float *dgx, float *dgh, float *dhp,
                       float *dcp, const float *dh, const float *dc, const float *gx,
                       const float *gh, const float *hp, const float *c, const float *cp,
                       const float *mask, int B) {
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
void rnn_cell_input_grads(const Backend *be, RnnLayer *L, const float *dgx, const float *dgh,
                          const float *x, int N) {
    be->matmul(L->W_ih.g, dgx, x, L->G * L->h, L->in, N, 1, 0, 1.0f, 1.0f);
    be->bias_backward(L->b.g, dgx, N, L->G * L->h);
    if (L->gru) be->bias_backward(L->b_hh.g, dgh, N, 3 * L->h);
}

/* dW_hh += dghᵀ hprev over N rows (dgh: LSTM's dgates, GRU's hidden-side gradient). */
void rnn_cell_recurrent_grads(const Backend *be, RnnLayer *L, const float *dgh,
                              const float *hprev, int N) {
    be->matmul(L->W_hh.g, dgh, hprev, L->G * L->h, L->h, N, 1, 0, 1.0f, 1.0f);
}
