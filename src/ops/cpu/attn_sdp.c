/* attn_sdp.c — dot-product attention with the weights materialised (Luong et al. 2015 eq. 7–8
 * with the dot score; Vaswani et al. 2017 eq. 1 with scale 1/√d). Semantics in ops/ops.h.
 * Rows r = b·NH + h; parallel over the rows, each row written by one thread (deterministic).
 * The backward's per-thread [Tq, Tk] scratch comes from the caller's work (cpu_attn_workspace);
 * nothing is allocated. */
#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <string.h>

#include "core/common.h"
#include "ops/cpu/cpu_internal.h"

/* The masked softmax of one row of scores in place: w[s] for s < lim becomes softmax(w[:lim]),
 * w[s] for lim <= s < n exactly 0. A short row is first copied into a buffer padded with −∞ to
 * a multiple of 16 floats, so that its loops run whole vectors (GCC's vectorised loops leave a
 * row shorter than one vector to the scalar remainder). */
static void softmax_row(float *w, int lim, int n) {
    enum { PAD = 16, SHORT_ROW = 128 };
    float buf[SHORT_ROW] __attribute__((aligned(64)));
    int m = (lim + PAD - 1) / PAD * PAD;
    float *e = w;
    if (m <= SHORT_ROW) {
        memcpy(buf, w, sizeof(float) * lim);
        for (int s = lim; s < m; s++) buf[s] = -INFINITY; /* cpu_expf(−∞) = 0 */
        e = buf;
    } else {
        m = lim;
    }
    float mx = -INFINITY; /* the maximum and the sum in scalar loops: at these lengths an
                             * `omp simd` reduction's final pass over its lanes costs more */
    for (int s = 0; s < lim; s++) mx = e[s] > mx ? e[s] : mx;
#pragma omp simd
    for (int s = 0; s < m; s++) e[s] = cpu_expf(e[s] - mx);
    double z = 0;
    for (int s = 0; s < lim; s++) z += e[s];
    float inv = (float)(1.0 / z);
#pragma omp simd
    for (int s = 0; s < lim; s++) w[s] = e[s] * inv; /* a = softmax(e) */
    for (int s = lim; s < n; s++) w[s] = 0.0f;
}

/* Per row b: S = scale · q_b k_bᵀ [Tq, len] and out_b = P v_b are cblas_sgemm calls (OpenBLAS,
 * OpenMP build, runs them single-threaded inside the parallel region); the masked softmax is a
 * vectorised loop over each query row (softmax_row). Masked entries of weights are exactly 0. */
void cpu_attn_forward(float *out, float *weights, const float *q, const float *k, const float *v,
                      const int *key_len, float scale, int causal, int B, int NH, int Tq, int Tk,
                      int D, int Dv) {
    int R = B * NH; /* rows (b, h), row r = b·NH + h */
#pragma omp parallel for schedule(dynamic, 1) if ((long)R * Tq * Tk * (D + Dv) > 65536)
    for (int b = 0; b < R; b++) {
        int len = key_len ? key_len[b / NH] : Tk;
        if (len > Tk) len = Tk;
        if (len < 0) len = 0;
        const float *qb = q + (size_t)b * Tq * D, *kb = k + (size_t)b * Tk * D;
        const float *vb = v + (size_t)b * Tk * Dv;
        float *wb = weights + (size_t)b * Tq * Tk, *ob = out + (size_t)b * Tq * Dv;
        if (len > 0) /* e = scale · q kᵀ over the unpadded keys */
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, Tq, len, D, scale, qb, D, kb, D,
                        0.0f, wb, Tk);
        for (int t = 0; t < Tq; t++) {
            int lim = len;
            if (causal && t + (Tk - Tq) + 1 < lim) lim = t + (Tk - Tq) + 1;
            softmax_row(wb + (size_t)t * Tk, lim < 0 ? 0 : lim, Tk);
        }
        if (len > 0) /* out = Σ_s a_s v_s */
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, Tq, Dv, len, 1.0f, wb, Tk, vb,
                        Dv, 0.0f, ob, Dv);
        else
            memset(ob, 0, sizeof(float) * Tq * Dv);
    }
}

/* Floats of work for attn_backward: one [Tq, Tk] matrix dP per OpenMP thread. */
size_t cpu_attn_workspace(int B, int NH, int Tq, int Tk, int D, int Dv) {
    (void)B, (void)NH, (void)D, (void)Dv;
    return (size_t)omp_get_max_threads() * ((size_t)Tq * Tk + 1);
}

/* Per row b, with P = weights_b: dP = dout vᵀ, dv += Pᵀ dout, dS = P ⊙ (dP − rowsum(P ⊙ dP))
 * · scale, dq += dS k, dk += dSᵀ q — cblas_sgemm calls and one pass over [Tq, Tk] in a
 * per-thread scratch. Masked entries have P = 0 and pass no gradient. */
void cpu_attn_backward(float *dq, float *dk, float *dv, const float *dout, const float *q,
                       const float *k, const float *v, const float *weights, float scale, int B,
                       int NH, int Tq, int Tk, int D, int Dv, float *work) {
    if (!dq && !dk && !dv) return;
    B *= NH; /* rows (b, h) */
#pragma omp parallel if ((long)B * Tq * Tk * (D + Dv) > 65536)
    {
        float *dP = work + omp_get_thread_num() * ((size_t)Tq * Tk + 1); /* [Tq, Tk] */
#pragma omp for schedule(dynamic, 1)
        for (int b = 0; b < B; b++) {
            const float *P = weights + (size_t)b * Tq * Tk;
            const float *go = dout + (size_t)b * Tq * Dv;
            const float *qb = q + (size_t)b * Tq * D, *kb = k + (size_t)b * Tk * D;
            const float *vb = v + (size_t)b * Tk * Dv;
            if (dv) /* out = P v  →  dv += Pᵀ dout */
                cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, Tk, Dv, Tq, 1.0f, P, Tk, go,
                            Dv, 1.0f, dv + (size_t)b * Tk * Dv, Dv);
            if (!dq && !dk) continue;
            /* dP = dout vᵀ */
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, Tq, Tk, Dv, 1.0f, go, Dv, vb, Dv,
                        0.0f, dP, Tk);
            for (int t = 0; t < Tq; t++) { /* a = softmax(e), e = scale · q kᵀ */
                const float *p = P + (size_t)t * Tk;
                float *d = dP + (size_t)t * Tk;
                float dot = 0;
                for (int s = 0; s < Tk; s++) dot += p[s] * d[s];
                for (int s = 0; s < Tk; s++) d[s] = p[s] == 0.0f ? 0.0f : p[s] * (d[s] - dot) * scale;
            }
            if (dq)
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, Tq, D, Tk, 1.0f, dP, Tk, kb,
                            D, 1.0f, dq + (size_t)b * Tq * D, D);
            if (dk)
                cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, Tk, D, Tq, 1.0f, dP, Tk, qb,
                            D, 1.0f, dk + (size_t)b * Tk * D, D);
        }
    }
}
