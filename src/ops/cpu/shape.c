/* shape.c — copies that move data without arithmetic (except the += of their backward):
 * concat2, transpose01, permute0213 (split/merge heads), write_step (a decoding step into a
 * cache), gather_rows and gather_rows_strided (beam search). Semantics in ops/ops.h. */
#include <string.h>

#include "ops/cpu/cpu_internal.h"

static void cpu_concat2_forward(float *out, const float *a, const float *b, int N, int Ca, int Cb) {
    for (int n = 0; n < N; n++) {
        memcpy(out + (size_t)n * (Ca + Cb), a + (size_t)n * Ca, sizeof(float) * Ca);
        memcpy(out + (size_t)n * (Ca + Cb) + Ca, b + (size_t)n * Cb, sizeof(float) * Cb);
    }
}

static void cpu_concat2_backward(float *da, float *db, const float *dout, int N, int Ca, int Cb) {
    for (int n = 0; n < N; n++) {
        const float *row = dout + (size_t)n * (Ca + Cb);
        if (da)
            for (int c = 0; c < Ca; c++) da[(size_t)n * Ca + c] += row[c];
        if (db)
            for (int c = 0; c < Cb; c++) db[(size_t)n * Cb + c] += row[Ca + c];
    }
}

static void cpu_transpose01_forward(float *out, const float *inp, int D0, int D1, int C) {
    if (C == 1) { /* a matrix (ids, masks, weights): 32×32 tiles, one row of tiles per thread */
#pragma omp parallel for if ((long)D0 * D1 > 65536)
        for (int i0 = 0; i0 < D0; i0 += 32)
            for (int j0 = 0; j0 < D1; j0 += 32)
                for (int j = j0; j < (j0 + 32 < D1 ? j0 + 32 : D1); j++)
                    for (int i = i0; i < (i0 + 32 < D0 ? i0 + 32 : D0); i++)
                        memcpy(out + (size_t)j * D0 + i, inp + (size_t)i * D1 + j, 4); /* bits, ids too */
        return;
    }
    for (int i = 0; i < D0; i++)
        for (int j = 0; j < D1; j++)
            memcpy(out + ((size_t)j * D0 + i) * C, inp + ((size_t)i * D1 + j) * C,
                   sizeof(float) * C);
}

static void cpu_transpose01_backward(float *dinp, const float *dout, int D0, int D1, int C) {
    for (int i = 0; i < D0; i++)
        for (int j = 0; j < D1; j++) {
            float *d = dinp + ((size_t)i * D1 + j) * C;
            const float *s = dout + ((size_t)j * D0 + i) * C;
            for (int c = 0; c < C; c++) d[c] += s[c];
        }
}

static void cpu_permute0213_forward(float *out, const float *inp, int A, int D0, int D1, int C) {
    /* out[a, j, i, :] = inp[a, i, j, :] */
#pragma omp parallel for collapse(2) if ((long)A * D0 * D1 * C > 65536)
    for (int a = 0; a < A; a++)
        for (int i = 0; i < D0; i++)
            for (int j = 0; j < D1; j++)
                memcpy(out + (((size_t)a * D1 + j) * D0 + i) * C,
                       inp + (((size_t)a * D0 + i) * D1 + j) * C, sizeof(float) * C);
}

static void cpu_permute0213_backward(float *dinp, const float *dout, int A, int D0, int D1, int C) {
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

static void cpu_write_step(float *cache, const float *x, int N, int Tcap, int t, int C) {
    /* cache[n, t, :] = x[n, :] */
    for (int n = 0; n < N; n++)
        memcpy(cache + ((size_t)n * Tcap + t) * C, x + (size_t)n * C, sizeof(float) * C);
}

static void cpu_gather_rows(float *dst, const float *src, const int *idx, int n, int D) {
    /* dst[i, :] = src[idx[i], :]; dst [n,D], src [*,D] (repeated indices allowed) */
    for (int i = 0; i < n; i++)
        memcpy(dst + (size_t)i * D, src + (size_t)idx[i] * D, sizeof(float) * D);
}

static void cpu_gather_rows_strided(float *dst, const float *src, const int *idx, int n, int D,
                                    int stride) {
    /* dst[i·stride + c] = src[idx[i]·stride + c], c < D <= stride */
    for (int i = 0; i < n; i++)
        memcpy(dst + (size_t)i * stride, src + (size_t)idx[i] * stride, sizeof(float) * D);
}

void cpu_register_shape(Backend *be) {
    be->concat2_forward = cpu_concat2_forward;
    be->concat2_backward = cpu_concat2_backward;
    be->transpose01_forward = cpu_transpose01_forward;
    be->transpose01_backward = cpu_transpose01_backward;
    be->permute0213_forward = cpu_permute0213_forward;
    be->permute0213_backward = cpu_permute0213_backward;
    be->write_step = cpu_write_step;
    be->gather_rows = cpu_gather_rows;
    be->gather_rows_strided = cpu_gather_rows_strided;
}
