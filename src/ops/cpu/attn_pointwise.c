/* attn_pointwise.c — pointwise attention and the per-head RMS normalisation on the CPU
 * (ops/ops.h pointwise_attn_*, head_rmsnorm_*): the sigmoid kind's weights σ(scale·q·k − log n)
 * (Ramapuram et al. 2024) and ReLA's max(scale·q·k, 0) with its RMSNorm (Zhang et al. 2021;
 * Zhang and Sennrich 2019). Semantics in ops/ops.h.
 *
 * Shapes: rows r = b·NH + h of R = B·NH; q [R,Tq,D], k [R,Tk,D], v [R,Tk,Dv], out [R,Tq,Dv],
 * weights [R,Tq,Tk]; head_rmsnorm: rows (b, h, t) of [B,NH,T,C], gain [NH,C], rstd [B,NH,T].
 * Parallel over the rows r, each written by one thread, so the results do not depend on the
 * thread count (docs/design.md §9). The backward's per-thread [Tq, Tk] scratch is the caller's
 * work (cpu_pointwise_attn_workspace); nothing is allocated. */
#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <string.h>

#include "ops/cpu/cpu_internal.h"

#define RMS_EPS 1e-8

/* The keys query t of a row with len keys sees: s < the returned limit (ops.h's masks). */
static int key_limit(int len, int causal, int t, int Tq, int Tk) {
    if (causal && t + (Tk - Tq) + 1 < len) len = t + (Tk - Tq) + 1;
    return len < 0 ? 0 : len;
}

/* Per row r: e = scale · q kᵀ over the unpadded keys (cblas_sgemm), then w = f(e + bias) over
 * each query's visible keys and 0 beyond, then out = w v (cblas_sgemm). */
static void cpu_pointwise_attn_forward(float *out, float *weights, const float *q,
                                       const float *k, const float *v, const int *key_len,
                                       float scale, int causal, int fn, int B, int NH, int Tq,
                                       int Tk, int D, int Dv) {
    int R = B * NH;
#pragma omp parallel for schedule(dynamic, 1) if ((long)R * Tq * Tk * (D + Dv) > 65536)
    for (int r = 0; r < R; r++) {
        int len = key_len ? key_len[r / NH] : Tk;
        len = len > Tk ? Tk : len < 0 ? 0 : len;
        const float *qb = q + (size_t)r * Tq * D, *kb = k + (size_t)r * Tk * D;
        const float *vb = v + (size_t)r * Tk * Dv;
        float *wb = weights + (size_t)r * Tq * Tk, *ob = out + (size_t)r * Tq * Dv;
        if (len > 0)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, Tq, len, D, scale, qb, D, kb, D,
                        0.0f, wb, Tk);
        for (int t = 0; t < Tq; t++) {
            int lim = key_limit(len, causal, t, Tq, Tk);
            float *w = wb + (size_t)t * Tk;
            if (fn == POINTWISE_SIGMOID) { /* w = σ(e − log n), n = lim (Ramapuram et al.) */
                float bias = lim > 0 ? -logf((float)lim) : 0.0f;
                for (int s = 0; s < lim; s++) w[s] = 1.0f / (1.0f + expf(-(w[s] + bias)));
            } else { /* w = max(e, 0) (Zhang et al. 2021) */
                for (int s = 0; s < lim; s++) w[s] = w[s] > 0.0f ? w[s] : 0.0f;
            }
            for (int s = lim; s < Tk; s++) w[s] = 0.0f;
        }
        if (len > 0) /* out = Σ_s w_s v_s */
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, Tq, Dv, len, 1.0f, wb, Tk, vb,
                        Dv, 0.0f, ob, Dv);
        else
            memset(ob, 0, sizeof(float) * (size_t)Tq * Dv);
    }
}

/* Floats of work for pointwise_attn_backward: one [Tq, Tk] matrix dP per OpenMP thread. */
static size_t cpu_pointwise_attn_workspace(int B, int NH, int Tq, int Tk, int D, int Dv) {
    (void)B, (void)NH, (void)D, (void)Dv;
    return (size_t)omp_get_max_threads() * ((size_t)Tq * Tk + 1);
}

/* Per row r, with W = weights_r: dv += Wᵀ dout, dP = dout vᵀ, dS = f'(W) ⊙ dP · scale,
 * dq += dS k, dk += dSᵀ q (cblas_sgemm calls and one pass over [Tq, Tk] in the thread's
 * scratch). */
static void cpu_pointwise_attn_backward(float *dq, float *dk, float *dv, const float *dout,
                                        const float *q, const float *k, const float *v,
                                        const float *weights, float scale, int fn, int B, int NH,
                                        int Tq, int Tk, int D, int Dv, float *work) {
    if (!dq && !dk && !dv) return;
    int R = B * NH;
#pragma omp parallel if ((long)R * Tq * Tk * (D + Dv) > 65536)
    {
        float *dP = work + omp_get_thread_num() * ((size_t)Tq * Tk + 1); /* [Tq, Tk] */
#pragma omp for schedule(dynamic, 1)
        for (int r = 0; r < R; r++) {
            const float *P = weights + (size_t)r * Tq * Tk, *go = dout + (size_t)r * Tq * Dv;
            const float *qb = q + (size_t)r * Tq * D, *kb = k + (size_t)r * Tk * D;
            const float *vb = v + (size_t)r * Tk * Dv;
            if (dv) /* out = W v  →  dv += Wᵀ dout */
                cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, Tk, Dv, Tq, 1.0f, P, Tk, go,
                            Dv, 1.0f, dv + (size_t)r * Tk * Dv, Dv);
            if (!dq && !dk) continue;
            /* dP = dout vᵀ */
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, Tq, Tk, Dv, 1.0f, go, Dv, vb, Dv,
                        0.0f, dP, Tk);
            size_t n = (size_t)Tq * Tk;
            if (fn == POINTWISE_SIGMOID) /* w = σ(e + b)  →  de = w (1 − w) dw */
                for (size_t i = 0; i < n; i++) dP[i] = P[i] * (1.0f - P[i]) * dP[i] * scale;
            else /* w = max(e, 0)  →  de = [w > 0] dw */
                for (size_t i = 0; i < n; i++) dP[i] = P[i] > 0.0f ? dP[i] * scale : 0.0f;
            if (dq) /* e = scale · q kᵀ  →  dq += dS k, dk += dSᵀ q */
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, Tq, D, Tk, 1.0f, dP, Tk, kb,
                            D, 1.0f, dq + (size_t)r * Tq * D, D);
            if (dk)
                cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, Tk, D, Tq, 1.0f, dP, Tk, qb, D,
                            1.0f, dk + (size_t)r * Tk * D, D);
        }
    }
}

static void cpu_head_rmsnorm_forward(float *out, float *rstd, const float *inp,
                                     const float *gain, int B, int NH, int T, int C) {
    long N = (long)B * NH * T;
#pragma omp parallel for if (N * C > 32768)
    for (long n = 0; n < N; n++) {
        const float *x = inp + (size_t)n * C, *g = gain + (size_t)((n / T) % NH) * C;
        float *o = out + (size_t)n * C;
        double ss = 0;
        for (int c = 0; c < C; c++) ss += (double)x[c] * x[c];
        float r = (float)(1.0 / sqrt(ss / C + RMS_EPS));
        rstd[n] = r;
        for (int c = 0; c < C; c++) o[c] = x[c] * r * g[c]; /* out = x rstd ⊙ gain */
    }
}

static void cpu_head_rmsnorm_backward(float *dinp, float *dgain, const float *dout,
                                      const float *inp, const float *gain, const float *rstd,
                                      int B, int NH, int T, int C) {
    long N = (long)B * NH * T;
    /* out = x̂ ⊙ gain, x̂ = x rstd, rstd = (mean x² + ε)^(−1/2)
     * →  dx = rstd (g − x̂ mean(x̂ ⊙ g)), g = dout ⊙ gain */
    if (dinp) {
#pragma omp parallel for if (N * C > 32768)
        for (long n = 0; n < N; n++) {
            const float *x = inp + (size_t)n * C, *go = dout + (size_t)n * C;
            const float *g = gain + (size_t)((n / T) % NH) * C;
            float *dx = dinp + (size_t)n * C, r = rstd[n];
            double sgx = 0;
            for (int c = 0; c < C; c++) sgx += (double)go[c] * g[c] * (x[c] * r);
            float m = (float)(sgx / C);
            for (int c = 0; c < C; c++) dx[c] += r * (go[c] * g[c] - x[c] * r * m);
        }
    }
    /* dgain[h,c] = Σ_b Σ_t dout x̂: one thread per (h, c), b then t in order */
    if (dgain) {
#pragma omp parallel for if (N * C > 32768)
        for (int j = 0; j < NH * C; j++) {
            int h = j / C, c = j % C;
            float acc = 0.0f;
            for (int b = 0; b < B; b++)
                for (int t = 0; t < T; t++) {
                    size_t n = ((size_t)b * NH + h) * T + t;
                    acc += dout[n * C + c] * (inp[n * C + c] * rstd[n]);
                }
            dgain[j] += acc;
        }
    }
}

void cpu_register_attn_pointwise(Backend *be) {
    be->pointwise_attn_forward = cpu_pointwise_attn_forward;
    be->pointwise_attn_backward = cpu_pointwise_attn_backward;
    be->pointwise_attn_workspace = cpu_pointwise_attn_workspace;
    be->head_rmsnorm_forward = cpu_head_rmsnorm_forward;
    be->head_rmsnorm_backward = cpu_head_rmsnorm_backward;
}
