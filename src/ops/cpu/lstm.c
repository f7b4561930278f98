/* lstm.c — the LSTM cell's point-wise part (Hochreiter & Schmidhuber 1997, with forget gate,
 * Gers et al. 2000), gate order i, f, g, o. The matrix products around it are matmul calls in
 * src/model/rnn.c. Semantics in ops/ops.h. */
#include <math.h>

#include "ops/cpu/cpu_internal.h"

static void cpu_lstm_cell_forward(float *h, float *c, float *gates, const float *h_prev,
                                  const float *c_prev, const float *mask, int B, int H) {
#pragma omp parallel for if ((long)B * H > 16384)
    for (int b = 0; b < B; b++) {
        float *gt = gates + (size_t)b * 4 * H;
        const float *cp = c_prev + (size_t)b * H, *hp = h_prev + (size_t)b * H;
        float *cb = c + (size_t)b * H, *hb = h + (size_t)b * H;
        int keep = mask && mask[b] == 0.0f;
#pragma omp simd
        for (int j = 0; j < H; j++) {
            float i = cpu_sigmoidf(gt[j]), f = cpu_sigmoidf(gt[H + j]);
            float g = cpu_tanhf(gt[2 * H + j]), o = cpu_sigmoidf(gt[3 * H + j]);
            gt[j] = i, gt[H + j] = f, gt[2 * H + j] = g, gt[3 * H + j] = o;
            float cn = f * cp[j] + i * g; /* c_t = f ⊙ c_{t-1} + i ⊙ g */
            cb[j] = keep ? cp[j] : cn;
            hb[j] = keep ? hp[j] : o * cpu_tanhf(cn); /* h_t = o ⊙ tanh(c_t) */
        }
    }
}

static void cpu_lstm_cell_backward(float *dgates, float *dh_prev, float *dc_prev, const float *dh,
                                   const float *dc, const float *gates, const float *c,
                                   const float *c_prev, const float *mask, int B, int H) {
#pragma omp parallel for if ((long)B * H > 16384)
    for (int b = 0; b < B; b++) {
        const float *gt = gates + (size_t)b * 4 * H;
        float *dg = dgates + (size_t)b * 4 * H;
        const float *dhb = dh + (size_t)b * H, *dcb = dc + (size_t)b * H;
        const float *cb = c + (size_t)b * H, *cp = c_prev + (size_t)b * H;
        if (mask && mask[b] == 0.0f) { /* padding step: state passed through unchanged */
            for (int j = 0; j < H; j++) {
                dh_prev[(size_t)b * H + j] += dhb[j];
                dc_prev[(size_t)b * H + j] += dcb[j];
                dg[j] = dg[H + j] = dg[2 * H + j] = dg[3 * H + j] = 0.0f;
            }
            continue;
        }
#pragma omp simd
        for (int j = 0; j < H; j++) {
            float i = gt[j], f = gt[H + j], g = gt[2 * H + j], o = gt[3 * H + j];
            float tc = cpu_tanhf(cb[j]);
            float dct = dcb[j] + dhb[j] * o * (1.0f - tc * tc); /* h = o ⊙ tanh(c) */
            float di = dct * g, df = dct * cp[j], dgg = dct * i, d_o = dhb[j] * tc;
            dc_prev[(size_t)b * H + j] += dct * f; /* c = f ⊙ c_prev + i ⊙ g */
            dg[j] = di * i * (1.0f - i);            /* i = σ(·) */
            dg[H + j] = df * f * (1.0f - f);        /* f = σ(·) */
            dg[2 * H + j] = dgg * (1.0f - g * g);   /* g = tanh(·) */
            dg[3 * H + j] = d_o * o * (1.0f - o);   /* o = σ(·) */
        }
    }
}

void cpu_register_lstm(Backend *be) {
    be->lstm_cell_forward = cpu_lstm_cell_forward;
    be->lstm_cell_backward = cpu_lstm_cell_backward;
}
