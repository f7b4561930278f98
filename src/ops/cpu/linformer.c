/* linformer.c — Linformer's projection over the key axis on the CPU (semantics in ops/ops.h,
 * linformer_proj_*; the attention kind that uses it is src/attention/linformer.c).
 *
 * Shapes: B batch, NH heads, R projected length (model.linformer_k), Tk keys, D width per head,
 * n the projection's full width (model.linformer_max_len, Tk <= n).
 *   x [B, NH, Tk, D], out [B, NH, R, D], P [NP, R, n] with NP = NH, or 1 when shared,
 *   key_len [B] (NULL: all Tk visible); L_b = min(key_len[b], Tk).
 *
 * Wang et al. 2020, "Linformer: Self-Attention with Linear Complexity", eq. 7: the keys and
 * values enter attention as E_i K and F_i V, E_i, F_i ∈ R^{R×n}; padded positions are zeroed
 * first, so only s < L_b contributes:
 *   out[b,h,j,:] = Σ_{s<L_b} P_h[j,s] x[b,h,s,:]
 * Gradients (out = P_h X_b,h over the visible rows):
 *   dx[b,h,s,:] += Σ_j P_h[j,s] dout[b,h,j,:]            (s < L_b; padded rows get nothing)
 *   dP_h[j,s]   += Σ_b [s < L_b] Σ_d dout[b,h,j,d] x[b,h,s,d]   (shared: Σ over h as well)
 *
 * Parallel over the (b, h) pairs for out and dx, over the elements (p, j, s) of dP with the sum
 * over b (and h) in ascending order inside one thread: race-free, no atomics, the same bits for
 * any thread count. Accumulation in float, in ascending s / j / (h, b) order (the CUDA kernels
 * use the same order), each (h, b)'s sum over d by cpu_dotf (`omp simd`, lanes then their sum). */
#include <omp.h>
#include <string.h>

#include "ops/cpu/cpu_internal.h"

static int visible_len(const int *key_len, int b, int Tk) {
    int L = key_len ? key_len[b] : Tk;
    return L > Tk ? Tk : (L < 0 ? 0 : L);
}

static void cpu_linformer_proj_forward(float *out, const float *P, const float *x,
                                       const int *key_len, int B, int NH, int R, int Tk, int D,
                                       int n, int shared) {
    int BH = B * NH;
#pragma omp parallel for schedule(static) if ((long)BH * R * Tk * D > 65536)
    for (int bh = 0; bh < BH; bh++) {
        int b = bh / NH, h = bh % NH, L = visible_len(key_len, b, Tk);
        const float *Ph = P + (shared ? 0 : (size_t)h * R * n);
        const float *xb = x + (size_t)bh * Tk * D;
        float *ob = out + (size_t)bh * R * D;
        for (int j = 0; j < R; j++) { /* row j: Σ_s P_h[j,s] x_s, ascending s, along d */
            float *oj = ob + (size_t)j * D;
            memset(oj, 0, sizeof(float) * D);
            for (int s = 0; s < L; s++) cpu_axpyf(oj, Ph[(size_t)j * n + s], xb + (size_t)s * D, D);
        }
    }
}

static void cpu_linformer_proj_backward(float *dx, float *dP, const float *dout, const float *P,
                                        const float *x, const int *key_len, int B, int NH, int R,
                                        int Tk, int D, int n, int shared) {
    int BH = B * NH;
    if (dx) {
#pragma omp parallel if ((long)BH * R * Tk * D > 65536)
        {
            float acc[D > 0 ? D : 1]; /* one row's Σ_j, ascending j, before it is added */
#pragma omp for schedule(static)
            for (int bh = 0; bh < BH; bh++) {
                int b = bh / NH, h = bh % NH, L = visible_len(key_len, b, Tk);
                const float *Ph = P + (shared ? 0 : (size_t)h * R * n);
                const float *gb = dout + (size_t)bh * R * D;
                float *dxb = dx + (size_t)bh * Tk * D;
                for (int s = 0; s < L; s++) {
                    memset(acc, 0, sizeof(float) * D);
                    for (int j = 0; j < R; j++)
                        cpu_axpyf(acc, Ph[(size_t)j * n + s], gb + (size_t)j * D, D);
                    cpu_axpyf(dxb + (size_t)s * D, 1.0f, acc, D);
                }
            }
        }
    }
    if (dP) {
        int NP = shared ? 1 : NH;
        long cells = (long)NP * R * Tk;
#pragma omp parallel for schedule(static) if (cells * B * (shared ? NH : 1) * D > 65536)
        for (long c = 0; c < cells; c++) {
            int p = (int)(c / ((long)R * Tk)), j = (int)(c / Tk % R), s = (int)(c % Tk);
            int h0 = shared ? 0 : p, h1 = shared ? NH : p + 1;
            float acc = 0.0f;
            for (int h = h0; h < h1; h++)
                for (int b = 0; b < B; b++) {
                    if (s >= visible_len(key_len, b, Tk)) continue;
                    size_t bh = (size_t)b * NH + h;
                    const float *gj = dout + (bh * R + j) * D, *xs = x + (bh * Tk + s) * D;
                    acc += cpu_dotf(gj, xs, D);
                }
            dP[((size_t)p * R + j) * n + s] += acc;
        }
    }
}

void cpu_register_linformer(Backend *be) {
    be->linformer_proj_forward = cpu_linformer_proj_forward;
    be->linformer_proj_backward = cpu_linformer_proj_backward;
}
