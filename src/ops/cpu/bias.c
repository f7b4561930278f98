/* bias.c — adding a bias row to every row, and its gradient (the column sums). Semantics in
 * ops/ops.h. */
#include <cblas.h>

#include "ops/cpu/cpu_internal.h"

void cpu_bias_forward(float *out, const float *bias, int N, int C) {
#pragma omp parallel for if ((long)N * C > 65536)
    for (int n = 0; n < N; n++) {
        float *o = out + (size_t)n * C;
#pragma omp simd
        for (int c = 0; c < C; c++) o[c] += bias[c];
    }
}

/* 65536 ones in read-only data: the vector bias_backward multiplies by (no allocation, no state).
 */
#define ONES4 1.0f, 1.0f, 1.0f, 1.0f
#define ONES16 ONES4, ONES4, ONES4, ONES4
#define ONES256 ONES16, ONES16, ONES16, ONES16, ONES16, ONES16, ONES16, ONES16, ONES16, ONES16, \
    ONES16, ONES16, ONES16, ONES16, ONES16, ONES16
#define ONES4K ONES256, ONES256, ONES256, ONES256, ONES256, ONES256, ONES256, ONES256, ONES256, \
    ONES256, ONES256, ONES256, ONES256, ONES256, ONES256, ONES256
#define ONES64K ONES4K, ONES4K, ONES4K, ONES4K, ONES4K, ONES4K, ONES4K, ONES4K, ONES4K, ONES4K, \
    ONES4K, ONES4K, ONES4K, ONES4K, ONES4K, ONES4K
enum { NONES = 65536 };
static const float ONES[NONES] = {ONES64K};

static void cpu_bias_backward(float *dbias, const float *dout, int N, int C) {
    /* out = inp + bias (broadcast over N rows)  →  dbias += doutᵀ · 1, one sgemv per 65536 rows
     * (one in practice: N is the rows of one batch) */
    for (int n0 = 0; n0 < N; n0 += NONES) {
        int rows = N - n0 < NONES ? N - n0 : NONES;
        cblas_sgemv(CblasRowMajor, CblasTrans, rows, C, 1.0f, dout + (size_t)n0 * C, C, ONES, 1,
                    1.0f, dbias, 1);
    }
}

void cpu_register_bias(Backend *be) {
    be->bias_forward = cpu_bias_forward;
    be->bias_backward = cpu_bias_backward;
}
