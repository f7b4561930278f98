/* layernorm.c — layer normalisation on the CPU (Ba et al. 2016, "Layer Normalization", eq. 4;
 * used around every Transformer sub-layer, Vaswani et al. 2017 §3.1). Semantics in ops/ops.h.
 *
 * Shapes: N rows, C features. inp, out, dinp, dout [N,C]; weight, bias, dweight, dbias [C];
 * mean, rstd [N].
 *
 * Forward, per row: μ = Σ_c x_c / C, σ² = Σ_c (x_c − μ)² / C, rstd = 1/√(σ² + ε), ε = 1e-5,
 *   x̂_c = (x_c − μ)·rstd, out_c = x̂_c·w_c + b_c. Statistics in double (one pass for μ, a second
 *   for σ², so no cancellation), in `omp simd` loops (a fixed order: deterministic).
 * Backward, per row, with g_c = dout_c·w_c:
 *   dx_c = rstd·(g_c − mean_c(g) − x̂_c·mean_c(g ⊙ x̂)),
 *   dw_c = Σ_n dout_nc x̂_nc,  db_c = Σ_n dout_nc.
 * Rows are parallel for dinp; dweight and dbias are summed over the rows column by column (each
 * thread owns a block of columns and walks the rows in order), so the result does not depend on
 * the thread count and no atomics are used (docs/design.md §9). */
#include <math.h>

#include "ops/cpu/cpu_internal.h"

#define LN_EPS 1e-5

static void cpu_layernorm_forward(float *out, float *mean, float *rstd, const float *inp,
                                  const float *weight, const float *bias, int N, int C) {
#pragma omp parallel for if ((long)N * C > 32768)
    for (int n = 0; n < N; n++) {
        const float *x = inp + (size_t)n * C;
        float *o = out + (size_t)n * C;
        double mu = 0, var = 0;
#pragma omp simd reduction(+ : mu)
        for (int c = 0; c < C; c++) mu += x[c];
        mu /= C;
#pragma omp simd reduction(+ : var)
        for (int c = 0; c < C; c++) var += (x[c] - mu) * (x[c] - mu);
        var /= C;
        float m = (float)mu, r = (float)(1.0 / sqrt(var + LN_EPS));
        mean[n] = m, rstd[n] = r;
#pragma omp simd
        for (int c = 0; c < C; c++) o[c] = (x[c] - m) * r * weight[c] + bias[c];
    }
}

static void cpu_layernorm_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                                   const float *inp, const float *weight, const float *mean,
                                   const float *rstd, int N, int C) {
#pragma omp parallel if ((long)N * C > 32768)
    {
        /* out = x̂ w + b, x̂ = (x − μ)·rstd  →  dx = rstd (g − mean(g) − x̂ mean(g x̂)) */
        if (dinp) {
#pragma omp for
            for (int n = 0; n < N; n++) {
                const float *x = inp + (size_t)n * C, *go = dout + (size_t)n * C;
                float *dx = dinp + (size_t)n * C;
                float m = mean[n], r = rstd[n];
                double sg = 0, sgx = 0;
#pragma omp simd reduction(+ : sg, sgx)
                for (int c = 0; c < C; c++) {
                    float g = go[c] * weight[c], xh = (x[c] - m) * r;
                    sg += g, sgx += g * xh;
                }
                float mg = (float)(sg / C), mgx = (float)(sgx / C);
#pragma omp simd
                for (int c = 0; c < C; c++) {
                    float g = go[c] * weight[c], xh = (x[c] - m) * r;
                    dx[c] += r * (g - mg - xh * mgx);
                }
            }
        }
        /* dw_c = Σ_n dout x̂, db_c = Σ_n dout: columns split among threads in blocks of 64
         * (vectorised across the block), rows in order */
        if (dweight || dbias) {
#pragma omp for
            for (int c0 = 0; c0 < C; c0 += 64) {
                int c1 = c0 + 64 < C ? c0 + 64 : C, w = c1 - c0;
                float sw[64] = {0}, sb[64] = {0};
                for (int n = 0; n < N; n++) {
                    const float *x = inp + (size_t)n * C + c0, *go = dout + (size_t)n * C + c0;
                    float m = mean[n], r = rstd[n];
#pragma omp simd
                    for (int j = 0; j < w; j++) {
                        sw[j] += go[j] * (x[j] - m) * r;
                        sb[j] += go[j];
                    }
                }
                for (int c = c0; c < c1; c++) {
                    if (dweight) dweight[c] += sw[c - c0];
                    if (dbias) dbias[c] += sb[c - c0];
                }
            }
        }
    }
}

void cpu_register_layernorm(Backend *be) {
    be->layernorm_forward = cpu_layernorm_forward;
    be->layernorm_backward = cpu_layernorm_backward;
}
