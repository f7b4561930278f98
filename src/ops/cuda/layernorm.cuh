/* ops/cuda/layernorm.cuh — layer normalisation forward and backward (Ba et al. 2016 eq. 4;
 * semantics: ops/ops.h; CPU reference: ops/cpu/layernorm.c). Written against
 * ops/cuda/kernel_api.h. Host side: layernorm.cu. Shapes: N rows, C columns; inp, out, dout,
 * dinp [N,C]; weight, bias, dweight, dbias [C]; mean, rstd [N].
 *
 * Row kernels: one block of LN_THREADS per row; the row's sums (in double, as the CPU) are
 * block_sum's fixed tree. Column kernel (dweight, dbias): block_reduce.cuh's column sums (row lanes
 * in order, then a fixed tree). Every output float has one writer: deterministic under any
 * schedule.
 */
#ifndef TRAINER_CUDA_LAYERNORM_CUH
#define TRAINER_CUDA_LAYERNORM_CUH

#include <stddef.h>

#include "ops/cuda/block_reduce.cuh"
#include "ops/cuda/kernel_api.h"

constexpr int LN_THREADS = 128; /* threads per row block (a power of two) */

/* μ, σ² (biased, two passes in double), rstd = 1/√(σ² + 1e-5); out = (x − μ) rstd w + b.
 * Launch: N blocks of LN_THREADS. */
__global__ void __launch_bounds__(LN_THREADS)
    k_layernorm_forward(float *out, float *mean, float *rstd, const float *inp,
                        const float *weight, const float *bias, int C) {
    __shared__ double buf[LN_THREADS];
    const float *x = inp + (size_t)blockIdx.x * C;
    float *o = out + (size_t)blockIdx.x * C;
    double s = 0.0;
    for (int c = threadIdx.x; c < C; c += LN_THREADS) s += x[c];
    double mu = block_sum<LN_THREADS>(s, buf) / C;
    double v = 0.0;
    for (int c = threadIdx.x; c < C; c += LN_THREADS) v += (x[c] - mu) * (x[c] - mu);
    double var = block_sum<LN_THREADS>(v, buf) / C;
    float m = (float)mu, r = (float)(1.0 / sqrt(var + 1e-5));
    if (threadIdx.x == 0) mean[blockIdx.x] = m, rstd[blockIdx.x] = r;
    for (int c = threadIdx.x; c < C; c += LN_THREADS) o[c] = (x[c] - m) * r * weight[c] + bias[c];
}

/* dinp += rstd (g − mean(g) − x̂ mean(g x̂)), g = dout ⊙ weight. Launch: N blocks of LN_THREADS. */
__global__ void __launch_bounds__(LN_THREADS)
    k_layernorm_backward_rows(float *dinp, const float *dout, const float *inp,
                              const float *weight, const float *mean, const float *rstd, int C) {
    __shared__ double buf[LN_THREADS];
    const size_t off = (size_t)blockIdx.x * C;
    const float *x = inp + off, *go = dout + off;
    float *dx = dinp + off;
    float m = mean[blockIdx.x], r = rstd[blockIdx.x];
    double sg = 0.0, sgx = 0.0;
    for (int c = threadIdx.x; c < C; c += LN_THREADS) {
        float g = go[c] * weight[c], xh = (x[c] - m) * r;
        sg += g, sgx += g * xh;
    }
    float mg = (float)(block_sum<LN_THREADS>(sg, buf) / C);
    float mgx = (float)(block_sum<LN_THREADS>(sgx, buf) / C);
    for (int c = threadIdx.x; c < C; c += LN_THREADS) {
        float g = go[c] * weight[c], xh = (x[c] - m) * r;
        dx[c] += r * (g - mg - xh * mgx);
    }
}

/* dweight[c] += Σ_n dout x̂, dbias[c] += Σ_n dout (either may be NULL). Launch:
 * ceil(C / COL_TX) blocks of dim3(COL_TX, col_lanes(N)) (block_reduce.cuh's column sums). */
__global__ void __launch_bounds__(COL_TX * COL_TY)
    k_layernorm_backward_cols(float *dweight, float *dbias, const float *dout, const float *inp,
                              const float *mean, const float *rstd, int N, int C) {
    __shared__ float part[COL_TY][COL_TX];
    int c = (int)(blockIdx.x * COL_TX + threadIdx.x);
    float sw = 0.0f, sb = 0.0f;
    if (c < C)
        for (int n = (int)threadIdx.y; n < N; n += (int)blockDim.y) {
            float go = dout[(size_t)n * C + c];
            sw += go * (inp[(size_t)n * C + c] - mean[n]) * rstd[n];
            sb += go;
        }
    col_tree_sum(sw, part);
    if (dweight && threadIdx.y == 0 && c < C) dweight[c] += part[0][threadIdx.x];
    col_tree_sum(sb, part);
    if (dbias && threadIdx.y == 0 && c < C) dbias[c] += part[0][threadIdx.x];
}

#endif
