/* ops/cuda/softmax_xent.cuh — the output layer's row kernels: fused log-softmax + cross-entropy
 * with label smoothing (Szegedy et al. 2016 §7), log-softmax and argmax (semantics: ops/ops.h;
 * CPU reference: ops/cpu/softmax_xent.c). Written against ops/cuda/kernel_api.h. Host side:
 * softmax_xent.cu. Shapes: N rows, V vocabulary; logits, dlogits, out [N,V]; targets, ids [N].
 *
 * One block of SX_THREADS per row; the row's max and sums (z and Σx in double, as the CPU) are
 * block_reduce.cuh's fixed trees; each output float has one writer (the target's gradient is
 * finished by the thread that owns that column). The loss is summed over rows by one block in a
 * fixed order (k_sum_rows). Deterministic under every schedule.
 */
#ifndef TRAINER_CUDA_SOFTMAX_XENT_CUH
#define TRAINER_CUDA_SOFTMAX_XENT_CUH

#include <stddef.h>

#include "ops/cuda/block_reduce.cuh"
#include "ops/cuda/kernel_api.h"

constexpr int SX_THREADS = 256; /* threads per row block (a power of two) */

/* rowloss[n] = −(1−ε) log p_y − (ε/V) Σ_v log p_v (0 for an ignored row); dlogits (if not NULL)
 * = grad_scale · (p − (1−ε) onehot − ε/V), zeros on ignored rows. Launch: N blocks of SX_THREADS. */
__global__ void __launch_bounds__(SX_THREADS)
    k_xent_rows(float *dlogits, double *rowloss, const float *logits, const int *targets, int V,
                float smoothing, int ignore_id, float grad_scale) {
    __shared__ double dbuf[SX_THREADS];
    __shared__ float fbuf[SX_THREADS];
    const size_t row = blockIdx.x;
    const int y = targets[row];
    float *g = dlogits ? dlogits + row * V : NULL;
    if (y == ignore_id) { /* uniform in the block, before any barrier */
        if (g)
            for (int v = threadIdx.x; v < V; v += SX_THREADS) g[v] = 0.0f;
        if (threadIdx.x == 0) rowloss[row] = 0.0;
        return;
    }
    const float *x = logits + row * V;
    float mx = -INFINITY;
    for (int v = threadIdx.x; v < V; v += SX_THREADS) mx = x[v] > mx ? x[v] : mx;
    mx = block_max<SX_THREADS>(mx, fbuf);
    double z = 0.0, sx = 0.0;
    for (int v = threadIdx.x; v < V; v += SX_THREADS) {
        z += (double)expf(x[v] - mx);
        sx += (double)x[v];
    }
    z = block_sum<SX_THREADS>(z, dbuf);
    sx = block_sum<SX_THREADS>(sx, dbuf);
    double lse = mx + log(z);
    float conf = 1.0f - smoothing, uni = smoothing / (float)V;
    if (threadIdx.x == 0)
        rowloss[row] = -(double)conf * (x[y] - lse) - (double)uni * (sx - (double)V * lse);
    if (g) {
        float inv = (float)(1.0 / z), a = grad_scale * inv, c = grad_scale * uni;
        for (int v = threadIdx.x; v < V; v += SX_THREADS) {
            float gv = a * expf(x[v] - mx) - c;
            if (v == y) gv -= grad_scale * conf;
            g[v] = gv;
        }
    }
}

/* *out = Σ_n rowloss[n] in a fixed order (thread i sums rows i, i + SX_THREADS, … in order,
 * then block_sum). Launch: 1 block of SX_THREADS. */
__global__ void __launch_bounds__(SX_THREADS)
    k_sum_rows(double *out, const double *rowloss, int N) {
    __shared__ double dbuf[SX_THREADS];
    double s = 0.0;
    for (int n = threadIdx.x; n < N; n += SX_THREADS) s += rowloss[n];
    s = block_sum<SX_THREADS>(s, dbuf);
    if (threadIdx.x == 0) *out = s;
}

/* out[n, :] = logits[n, :] − log Σ_v exp(logits[n, v]). Launch: N blocks of SX_THREADS. */
__global__ void __launch_bounds__(SX_THREADS)
    k_log_softmax(float *out, const float *logits, int V) {
    __shared__ double dbuf[SX_THREADS];
    __shared__ float fbuf[SX_THREADS];
    const float *x = logits + (size_t)blockIdx.x * V;
    float *o = out + (size_t)blockIdx.x * V;
    float mx = -INFINITY;
    for (int v = threadIdx.x; v < V; v += SX_THREADS) mx = x[v] > mx ? x[v] : mx;
    mx = block_max<SX_THREADS>(mx, fbuf);
    double z = 0.0;
    for (int v = threadIdx.x; v < V; v += SX_THREADS) z += (double)expf(x[v] - mx);
    z = block_sum<SX_THREADS>(z, dbuf);
    float lse = mx + (float)log(z);
    for (int v = threadIdx.x; v < V; v += SX_THREADS) o[v] = x[v] - lse;
}

/* ids[n] = the first v with the largest x[n, v]. Each thread keeps the first maximum of its
 * strided share; the tree keeps the larger value, on ties the smaller index. Launch: N blocks of
 * SX_THREADS. */
__global__ void __launch_bounds__(SX_THREADS)
    k_argmax(int *ids, const float *x, int V) {
    __shared__ float bv[SX_THREADS];
    __shared__ int bi[SX_THREADS];
    const float *r = x + (size_t)blockIdx.x * V;
    float best = -INFINITY;
    int at = V; /* none yet */
    for (int v = threadIdx.x; v < V; v += SX_THREADS)
        if (at == V || r[v] > best) best = r[v], at = v;
    bv[threadIdx.x] = best, bi[threadIdx.x] = at;
    __syncthreads();
    for (int h = SX_THREADS / 2; h > 0; h >>= 1) {
        if ((int)threadIdx.x < h) {
            float ov = bv[threadIdx.x + h];
            int oi = bi[threadIdx.x + h];
            int mine = bi[threadIdx.x];
            if (oi != V && (mine == V || ov > bv[threadIdx.x] ||
                            (ov == bv[threadIdx.x] && oi < mine)))
                bv[threadIdx.x] = ov, bi[threadIdx.x] = oi;
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) ids[blockIdx.x] = bi[0] == V ? 0 : bi[0];
}

#endif
