/* dropout.c — inverted dropout (Srivastava et al. 2014) with a counter-based mask
 * (rng_hash(key, i)), and the feed-forward network's fused bias + ReLU + dropout (Vaswani et al.
 * 2017 eq. 2) with its backward. Semantics in ops/ops.h. */
#include <math.h>

#include "ops/cpu/cpu_internal.h"
#include "core/rng.h"

static inline float keep_mask(uint64_t key, size_t i, float p, float keep_scale) {
    float u = (float)(rng_hash(key, i) >> 8) * (1.0f / 16777216.0f);
    return (p <= 0 || u >= p) ? keep_scale : 0.0f;
}

static void cpu_dropout_forward(float *out, float *mask, const float *inp, float p, uint64_t key,
                                size_t n) {
    float keep_scale = p > 0 ? 1.0f / (1.0f - p) : 1.0f;
#pragma omp parallel for simd if (n > 65536)
    for (size_t i = 0; i < n; i++) {
        mask[i] = keep_mask(key, i, p, keep_scale);
        out[i] = inp[i] * mask[i];
    }
}

static void cpu_dropout_backward(float *dinp, const float *dout, const float *mask, size_t n) {
    /* out = inp · mask  →  dinp += dout · mask */
#pragma omp parallel for simd if (n > 65536)
    for (size_t i = 0; i < n; i++) dinp[i] += dout[i] * mask[i];
}

void cpu_bias_relu_dropout_forward(float *out, const float *inp, const float *bias, float p,
                                   uint64_t key, int N, int C) {
    float keep_scale = p > 0 ? 1.0f / (1.0f - p) : 1.0f;
#pragma omp parallel for if ((long)N * C > 65536)
    for (int n = 0; n < N; n++) {
        size_t o = (size_t)n * C;
        if (p <= 0) {
#pragma omp simd
            for (int c = 0; c < C; c++) { /* max(v, 0), NaN → 0 as fmaxf, without its libm call */
                float v = inp[o + c] + bias[c];
                out[o + c] = v > 0.0f ? v : 0.0f;
            }
            continue;
        }
#pragma omp simd
        for (int c = 0; c < C; c++) { /* out = max(inp + b, 0) · mask */
            float x = inp[o + c] + bias[c];
            out[o + c] = (x > 0.0f ? x : 0.0f) * keep_mask(key, o + c, p, keep_scale);
        }
    }
}

static void cpu_relu_dropout_backward(float *dinp, const float *dout, const float *out, float p,
                                      size_t n) {
    /* out = max(x, 0) · mask, mask ∈ {0, 1/(1-p)}  →  dx = dout · mask · [x > 0], and
     * mask · [x > 0] = [out > 0] / (1 - p) */
    float keep_scale = p > 0 ? 1.0f / (1.0f - p) : 1.0f;
#pragma omp parallel for simd if (n > 65536)
    for (size_t i = 0; i < n; i++) dinp[i] = out[i] > 0.0f ? dout[i] * keep_scale : 0.0f;
}

void cpu_register_dropout(Backend *be) {
    be->dropout_forward = cpu_dropout_forward;
    be->dropout_backward = cpu_dropout_backward;
    be->bias_relu_dropout_forward = cpu_bias_relu_dropout_forward;
    be->relu_dropout_backward = cpu_relu_dropout_backward;
}
