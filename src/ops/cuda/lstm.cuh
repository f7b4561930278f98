/* ops/cuda/lstm.cuh — the fused LSTM cell (Hochreiter & Schmidhuber 1997; gate order i, f, g, o
 * as cuDNN; semantics: ops/ops.h; CPU reference: ops/cpu/lstm.c). Written against
 * ops/cuda/kernel_api.h. Host side: lstm.cu. Shapes: B rows, H hidden; gates [B,4H], h, c,
 * h_prev, c_prev [B,H], mask [B] (may be NULL: 1 = real step, 0 = padding keeps the state).
 * One thread per (b, j), grid-stride; each output float has one writer: deterministic.
 */
#ifndef TRAINER_CUDA_LSTM_CUH
#define TRAINER_CUDA_LSTM_CUH

#include <stddef.h>

#include "ops/cuda/kernel_api.h"

__device__ inline float lstm_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

/* gates: pre-activations in, activations (σ(i), σ(f), tanh(g), σ(o)) out; c = f c_prev + i g,
 * h = o tanh(c); a masked row keeps c_prev, h_prev. Launch: cuda_ew_blocks(B·H) blocks of
 * CUDA_EW_THREADS (256). */
__global__ void __launch_bounds__(256)
    k_lstm_forward(float *h, float *c, float *gates, const float *h_prev, const float *c_prev,
                   const float *mask, int B, int H) {
    size_t total = (size_t)B * H, stride = (size_t)gridDim.x * blockDim.x;
    for (size_t k = (size_t)blockIdx.x * blockDim.x + threadIdx.x; k < total; k += stride) {
        size_t b = k / (size_t)H, j = k % (size_t)H;
        float *gt = gates + b * 4 * H;
        float i = lstm_sigmoid(gt[j]), f = lstm_sigmoid(gt[H + j]);
        float g = tanhf(gt[2 * H + j]), o = lstm_sigmoid(gt[3 * H + j]);
        gt[j] = i, gt[H + j] = f, gt[2 * H + j] = g, gt[3 * H + j] = o;
        float cn = f * c_prev[k] + i * g;
        int keep = mask && mask[b] == 0.0f;
        c[k] = keep ? c_prev[k] : cn;
        h[k] = keep ? h_prev[k] : o * tanhf(cn);
    }
}

/* dgates written (pre-activation gradients; 0 on masked rows), dh_prev and dc_prev accumulated
 * (masked rows: dh, dc pass through). Launch as k_lstm_forward. */
__global__ void __launch_bounds__(256)
    k_lstm_backward(float *dgates, float *dh_prev, float *dc_prev, const float *dh,
                    const float *dc, const float *gates, const float *c, const float *c_prev,
                    const float *mask, int B, int H) {
    size_t total = (size_t)B * H, stride = (size_t)gridDim.x * blockDim.x;
    for (size_t k = (size_t)blockIdx.x * blockDim.x + threadIdx.x; k < total; k += stride) {
        size_t b = k / (size_t)H, j = k % (size_t)H;
        const float *gt = gates + b * 4 * H;
        float *dg = dgates + b * 4 * H;
        if (mask && mask[b] == 0.0f) {
            dh_prev[k] += dh[k];
            dc_prev[k] += dc[k];
            dg[j] = dg[H + j] = dg[2 * H + j] = dg[3 * H + j] = 0.0f;
            continue;
        }
        float i = gt[j], f = gt[H + j], g = gt[2 * H + j], o = gt[3 * H + j];
        float tc = tanhf(c[k]);
        float dct = dc[k] + dh[k] * o * (1.0f - tc * tc);
        dc_prev[k] += dct * f;
        dg[j] = dct * g * i * (1.0f - i);
        dg[H + j] = dct * c_prev[k] * f * (1.0f - f);
        dg[2 * H + j] = dct * i * (1.0f - g * g);
        dg[3 * H + j] = dh[k] * tc * o * (1.0f - o);
    }
}

#endif
