/* bias.c — adding a bias row to every row, and its gradient (the column sums). Semantics in
 * ops/ops.h. */
#include <cblas.h>

#include "common.h"
#include "ops/cpu/cpu_internal.h"

void cpu_bias_forward(float *out, const float *bias, int N, int C) {
#pragma omp parallel for if ((long)N * C > 65536)
    for (int n = 0; n < N; n++) {
        float *o = out + (size_t)n * C;
#pragma omp simd
        for (int c = 0; c < C; c++) o[c] += bias[c];
    }
}

void cpu_bias_backward(float *dbias, const float *dout, int N, int C) {
    /* out = inp + bias (broadcast over N rows)  →  dbias += doutᵀ · 1 */
    /* a vector of ones, grown on demand and kept (no allocation once the largest N was seen) */
    static float *ones = NULL;
    static int nones = 0;
    if (N <= 0) return;
    if (N > nones) {
        free(ones);
        ones = xmalloc(sizeof(float) * N);
        for (int n = 0; n < N; n++) ones[n] = 1.0f;
        nones = N;
    }
    cblas_sgemv(CblasRowMajor, CblasTrans, N, C, 1.0f, dout, C, ones, 1, 1.0f, dbias, 1);
}
