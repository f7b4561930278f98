/* elementwise.c — CPU element-wise ops, embedding, row gather and the Adam update (semantics in
 * ops/ops.h). */
#include <math.h>
#include <string.h>

#include "ops/cpu/cpu_internal.h"
#include "rng.h"

void cpu_tanh_forward(float *out, const float *inp, size_t n) {
#pragma omp parallel for if (n > 65536)
    for (size_t i = 0; i < n; i++) out[i] = tanhf(inp[i]);
}

void cpu_tanh_backward(float *dinp, const float *dout, const float *out, size_t n) {
    /* out = tanh(inp)  →  dinp += dout · (1 − out²) */
#pragma omp parallel for if (n > 65536)
    for (size_t i = 0; i < n; i++) dinp[i] += dout[i] * (1.0f - out[i] * out[i]);
}



/* The keep mask of inverted dropout for element i: 1/(1−p) or 0 (dropout_forward's rule). */
static inline float keep_mask(uint64_t key, size_t i, float p, float keep_scale) {
    float u = (float)(rng_hash(key, i) >> 8) * (1.0f / 16777216.0f);
    return (p <= 0 || u >= p) ? keep_scale : 0.0f;
}

void cpu_dropout_forward(float *out, float *mask, const float *inp, float p, uint64_t key,
                         size_t n) {
    float keep_scale = p > 0 ? 1.0f / (1.0f - p) : 1.0f;
#pragma omp parallel for simd if (n > 65536)
    for (size_t i = 0; i < n; i++) {
        mask[i] = keep_mask(key, i, p, keep_scale);
        out[i] = inp[i] * mask[i];
    }
}

void cpu_bias_relu_dropout_forward(float *out, const float *inp, const float *bias, float p,
                                   uint64_t key, int N, int C) {
    float keep_scale = p > 0 ? 1.0f / (1.0f - p) : 1.0f;
#pragma omp parallel for if ((long)N * C > 65536)
    for (int n = 0; n < N; n++) {
        size_t o = (size_t)n * C;
        if (p <= 0) {
#pragma omp simd
            for (int c = 0; c < C; c++) out[o + c] = fmaxf(inp[o + c] + bias[c], 0.0f);
            continue;
        }
#pragma omp simd
        for (int c = 0; c < C; c++) { /* out = max(inp + b, 0) · mask */
            float x = inp[o + c] + bias[c];
            out[o + c] = (x > 0.0f ? x : 0.0f) * keep_mask(key, o + c, p, keep_scale);
        }
    }
}

void cpu_relu_dropout_backward(float *dinp, const float *dout, const float *out, float p,
                               size_t n) {
    /* out = max(x, 0) · mask, mask ∈ {0, 1/(1-p)}  →  dx = dout · mask · [x > 0], and
     * mask · [x > 0] = [out > 0] / (1 - p) */
    float keep_scale = p > 0 ? 1.0f / (1.0f - p) : 1.0f;
#pragma omp parallel for simd if (n > 65536)
    for (size_t i = 0; i < n; i++) dinp[i] = out[i] > 0.0f ? dout[i] * keep_scale : 0.0f;
}

void cpu_dropout_backward(float *dinp, const float *dout, const float *mask, size_t n) {
    /* out = inp · mask  →  dinp += dout · mask */
#pragma omp parallel for simd if (n > 65536)
    for (size_t i = 0; i < n; i++) dinp[i] += dout[i] * mask[i];
}

void cpu_embedding_forward(float *out, const int *ids, const float *table, int N, int E) {
    for (int n = 0; n < N; n++)
        memcpy(out + (size_t)n * E, table + (size_t)ids[n] * E, sizeof(float) * E);
}

void cpu_embedding_backward(float *dtable, const float *dout, const int *ids, int N, int E) {
    /* out[n] = table[ids[n]]  →  dtable[ids[n]] += dout[n], rows summed in order */
    for (int n = 0; n < N; n++) {
        float *d = dtable + (size_t)ids[n] * E;
        const float *g = dout + (size_t)n * E;
#pragma omp simd
        for (int e = 0; e < E; e++) d[e] += g[e];
    }
}

void cpu_gather_rows(float *dst, const float *src, const int *idx, int n, int D) {
    /* dst[i, :] = src[idx[i], :]; dst [n,D], src [*,D] (repeated indices allowed) */
    for (int i = 0; i < n; i++)
        memcpy(dst + (size_t)i * D, src + (size_t)idx[i] * D, sizeof(float) * D);
}

void cpu_adam_update(float *param, const float *grad, float *m, float *v, size_t n, float lr,
                     float b1, float b2, float eps, int t) {
    float c1 = 1.0f / (1.0f - powf(b1, (float)t));
    float c2 = 1.0f / (1.0f - powf(b2, (float)t));
#pragma omp parallel for simd if (n > 65536)
    for (size_t i = 0; i < n; i++) {
        float g = grad[i];
        m[i] = b1 * m[i] + (1.0f - b1) * g;
        v[i] = b2 * v[i] + (1.0f - b2) * g * g;
        param[i] -= lr * (m[i] * c1) / (sqrtf(v[i] * c2) + eps);
    }
}

void cpu_gather_rows_strided(float *dst, const float *src, const int *idx, int n, int D,
                             int stride) {
    /* dst[i·stride + c] = src[idx[i]·stride + c], c < D <= stride */
    for (int i = 0; i < n; i++)
        memcpy(dst + (size_t)i * stride, src + (size_t)idx[i] * stride, sizeof(float) * D);
}

void cpu_permute0213_forward(float *out, const float *inp, int A, int D0, int D1, int C) {
    /* out[a, j, i, :] = inp[a, i, j, :] */
#pragma omp parallel for collapse(2) if ((long)A * D0 * D1 * C > 65536)
    for (int a = 0; a < A; a++)
        for (int i = 0; i < D0; i++)
            for (int j = 0; j < D1; j++)
                memcpy(out + (((size_t)a * D1 + j) * D0 + i) * C,
                       inp + (((size_t)a * D0 + i) * D1 + j) * C, sizeof(float) * C);
}

void cpu_permute0213_backward(float *dinp, const float *dout, int A, int D0, int D1, int C) {
    /* out[a, j, i, :] = inp[a, i, j, :]  →  dinp[a, i, j, :] += dout[a, j, i, :] */
#pragma omp parallel for collapse(2) if ((long)A * D0 * D1 * C > 65536)
    for (int a = 0; a < A; a++)
        for (int i = 0; i < D0; i++)
            for (int j = 0; j < D1; j++) {
                float *d = dinp + (((size_t)a * D0 + i) * D1 + j) * C;
                const float *s = dout + (((size_t)a * D1 + j) * D0 + i) * C;
                for (int c = 0; c < C; c++) d[c] += s[c];
            }
}

void cpu_write_step(float *cache, const float *x, int N, int Tcap, int t, int C) {
    /* cache[n, t, :] = x[n, :] */
    for (int n = 0; n < N; n++)
        memcpy(cache + ((size_t)n * Tcap + t) * C, x + (size_t)n * C, sizeof(float) * C);
}
