/* ops/cuda/gru.cuh — the fused GRU cell (Cho et al. 2014 in cuDNN's and PyTorch's form; gate
 * order r, z, n; semantics: ops/ops.h; CPU reference: ops/cpu/gru.c). Written against
 * ops/cuda/kernel_api.h. Host side: gru.cu. Shapes: B rows, H hidden; gx, gh [B,3H], h, h_prev
 * [B,H], mask [B] (may be NULL). One thread per (b, j), grid-stride; one writer per float.
 */
#ifndef TRAINER_CUDA_GRU_CUH
#define TRAINER_CUDA_GRU_CUH

#include <stddef.h>

#include "ops/cuda/kernel_api.h"

__device__ inline float gru_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

/* r = σ(gx_r + gh_r), z = σ(gx_z + gh_z), n = tanh(gx_n + r gh_n) written into gx;
 * h = (1 − z) n + z h_prev (a masked row keeps h_prev). Launch: cuda_ew_blocks(B·H) blocks of
 * 256. */
__global__ void __launch_bounds__(256)
    k_gru_forward(float *h, float *gx, const float *gh, const float *h_prev, const float *mask,
                  int B, int H) {
    size_t total = (size_t)B * H, stride = (size_t)gridDim.x * blockDim.x;
    for (size_t k = (size_t)blockIdx.x * blockDim.x + threadIdx.x; k < total; k += stride) {
        size_t b = k / (size_t)H, j = k % (size_t)H;
        float *gt = gx + b * 3 * H;
        const float *gr = gh + b * 3 * H;
        float r = gru_sigmoid(gt[j] + gr[j]);
        float z = gru_sigmoid(gt[H + j] + gr[H + j]);
        float n = tanhf(gt[2 * H + j] + r * gr[2 * H + j]);
        gt[j] = r, gt[H + j] = z, gt[2 * H + j] = n;
        int keep = mask && mask[b] == 0.0f;
        h[k] = keep ? h_prev[k] : (1.0f - z) * n + z * h_prev[k];
    }
}

/* dgx, dgh written (0 on masked rows), dh_prev accumulated (the direct z h_prev path; masked
 * rows: dh passes through). Launch as k_gru_forward. */
__global__ void __launch_bounds__(256)
    k_gru_backward(float *dgx, float *dgh, float *dh_prev, const float *dh, const float *gx,
                   const float *gh, const float *h_prev, const float *mask, int B, int H) {
    size_t total = (size_t)B * H, stride = (size_t)gridDim.x * blockDim.x;
    for (size_t k = (size_t)blockIdx.x * blockDim.x + threadIdx.x; k < total; k += stride) {
        size_t b = k / (size_t)H, j = k % (size_t)H;
        const float *gt = gx + b * 3 * H, *gr = gh + b * 3 * H;
        float *dx = dgx + b * 3 * H, *dgr = dgh + b * 3 * H;
        if (mask && mask[b] == 0.0f) {
            dh_prev[k] += dh[k];
            dx[j] = dx[H + j] = dx[2 * H + j] = 0.0f;
            dgr[j] = dgr[H + j] = dgr[2 * H + j] = 0.0f;
            continue;
        }
        float r = gt[j], z = gt[H + j], n = gt[2 * H + j], d = dh[k];
        float dn = d * (1.0f - z), dz = d * (h_prev[k] - n);
        dh_prev[k] += d * z;
        float dpn = dn * (1.0f - n * n);
        float dr = dpn * gr[2 * H + j];
        float dpr = dr * r * (1.0f - r);
        float dpz = dz * z * (1.0f - z);
        dx[j] = dpr, dgr[j] = dpr;
        dx[H + j] = dpz, dgr[H + j] = dpz;
        dx[2 * H + j] = dpn, dgr[2 * H + j] = dpn * r;
    }
}

#endif
