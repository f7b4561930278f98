/* gru.c — the GRU cell's point-wise part (Cho et al. 2014, in the form of cuDNN and PyTorch:
 * the reset gate multiplies h_prev W_hn + b_hn), gate order r, z, n. The matrix products around
 * it (gx = x W_ihᵀ + b_ih, gh = h_prev W_hhᵀ + b_hh) are matmul calls in src/model/rnn.c.
 * Semantics in ops/ops.h. Shapes: B batch, H hidden; gx, gh [B,3H]; h, h_prev [B,H]. */
#include <math.h>

#include "ops/cpu/cpu_internal.h"

static void cpu_gru_cell_forward(float *h, float *gx, const float *gh, const float *h_prev,
                                 const float *mask, int B, int H) {
#pragma omp parallel for if ((long)B * H > 16384)
    for (int b = 0; b < B; b++) {
        float *gt = gx + (size_t)b * 3 * H;       /* [3H] in: x W_ihᵀ + b_ih; out: r,z,n */
        const float *gr = gh + (size_t)b * 3 * H; /* [3H] h_prev W_hhᵀ + b_hh */
        const float *hp = h_prev + (size_t)b * H; /* [H] */
        float *hb = h + (size_t)b * H;            /* [H] */
        int keep = mask && mask[b] == 0.0f;
#pragma omp simd
        for (int j = 0; j < H; j++) {
            float r = cpu_sigmoidf(gt[j] + gr[j]);                  /* r = σ(gx_r + gh_r) */
            float z = cpu_sigmoidf(gt[H + j] + gr[H + j]);          /* z = σ(gx_z + gh_z) */
            float n = cpu_tanhf(gt[2 * H + j] + r * gr[2 * H + j]); /* n = tanh(gx_n + r ⊙ gh_n) */
            gt[j] = r, gt[H + j] = z, gt[2 * H + j] = n;
            hb[j] = keep ? hp[j] : (1.0f - z) * n + z * hp[j]; /* h = (1 − z) ⊙ n + z ⊙ h_prev */
        }
    }
}

static void cpu_gru_cell_backward(float *dgx, float *dgh, float *dh_prev, const float *dh,
                                  const float *gx, const float *gh, const float *h_prev,
                                  const float *mask, int B, int H) {
#pragma omp parallel for if ((long)B * H > 16384)
    for (int b = 0; b < B; b++) {
        const float *gt = gx + (size_t)b * 3 * H; /* [3H] activations r, z, n */
        const float *gr = gh + (size_t)b * 3 * H; /* [3H] pre-activations of h_prev W_hhᵀ + b_hh */
        float *dx = dgx + (size_t)b * 3 * H, *dgr = dgh + (size_t)b * 3 * H;
        const float *dhb = dh + (size_t)b * H, *hp = h_prev + (size_t)b * H;
        float *dhp = dh_prev + (size_t)b * H;
        if (mask && mask[b] == 0.0f) { /* padding step: h = h_prev passed through unchanged */
            for (int j = 0; j < H; j++) {
                dhp[j] += dhb[j];
                dx[j] = dx[H + j] = dx[2 * H + j] = 0.0f;
                dgr[j] = dgr[H + j] = dgr[2 * H + j] = 0.0f;
            }
            continue;
        }
#pragma omp simd
        for (int j = 0; j < H; j++) {
            float r = gt[j], z = gt[H + j], n = gt[2 * H + j], d = dhb[j];
            /* h = (1 − z) ⊙ n + z ⊙ h_prev */
            float dn = d * (1.0f - z), dz = d * (hp[j] - n);
            dhp[j] += d * z;
            float dpn = dn * (1.0f - n * n); /* n = tanh(gx_n + r ⊙ gh_n) */
            float dr = dpn * gr[2 * H + j];
            float dpr = dr * r * (1.0f - r); /* r = σ(gx_r + gh_r) */
            float dpz = dz * z * (1.0f - z); /* z = σ(gx_z + gh_z) */
            dx[j] = dpr, dgr[j] = dpr;
            dx[H + j] = dpz, dgr[H + j] = dpz;
            dx[2 * H + j] = dpn, dgr[2 * H + j] = dpn * r;
        }
    }
}

void cpu_register_gru(Backend *be) {
    be->gru_cell_forward = cpu_gru_cell_forward;
    be->gru_cell_backward = cpu_gru_cell_backward;
}
