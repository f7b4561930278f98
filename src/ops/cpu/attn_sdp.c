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

/* Where row r = (b, h) of a [·, T, W] operand starts, in floats: split heads [B, NH, T, W]
 * (merged = 0; its T rows W apart) or the merged layout [B, T, NH, W] (merged = 1; NH·W apart). */
static size_t row_start(int merged, int r, int NH, int T, int W) {
    return merged ? ((size_t)(r / NH) * T * NH + (size_t)(r % NH)) * W : (size_t)r * T * W;
}

/* Per row b: S = scale · q_b k_bᵀ [Tq, len] and out_b = P v_b are cblas_sgemm calls (OpenBLAS,
 * OpenMP build, runs them single-threaded inside the parallel region; the merged layout is the
 * same call with a wider leading dimension); the masked softmax is a vectorised loop over each
 * query row (softmax_row). Masked entries of weights are exactly 0. */
static void attn_forward(float *out, float *weights, const float *q, const float *k,
                         const float *v, const int *key_len, float scale, int causal, int B,
                         int NH, int Tq, int Tk, int D, int Dv, int merged) {
    int R = B * NH; /* rows (b, h), row r = b·NH + h */
    int ld = merged ? NH * D : D, ldv = merged ? NH * Dv : Dv;
#pragma omp parallel for schedule(dynamic, 1) if ((long)R * Tq * Tk * (D + Dv) > 65536)
    for (int b = 0; b < R; b++) {
        int len = key_len ? key_len[b / NH] : Tk;
        if (len > Tk) len = Tk;
        if (len < 0) len = 0;
        const float *qb = q + row_start(merged, b, NH, Tq, D);
        const float *kb = k + row_start(merged, b, NH, Tk, D);
        const float *vb = v + row_start(merged, b, NH, Tk, Dv);
        float *wb = weights + (size_t)b * Tq * Tk, *ob = out + row_start(merged, b, NH, Tq, Dv);
        if (len > 0) /* e = scale · q kᵀ over the unpadded keys */
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, Tq, len, D, scale, qb, ld, kb,
                        ld, 0.0f, wb, Tk);
        for (int t = 0; t < Tq; t++) {
            int lim = len;
            if (causal && t + (Tk - Tq) + 1 < lim) lim = t + (Tk - Tq) + 1;
            softmax_row(wb + (size_t)t * Tk, lim < 0 ? 0 : lim, Tk);
        }
        if (len > 0) /* out = Σ_s a_s v_s */
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, Tq, Dv, len, 1.0f, wb, Tk, vb,
                        ldv, 0.0f, ob, ldv);
        else
            for (int t = 0; t < Tq; t++) memset(ob + (size_t)t * ldv, 0, sizeof(float) * Dv);
    }
}

static void cpu_attn_forward(float *out, float *weights, const float *q, const float *k,
                             const float *v, const int *key_len, float scale, int causal, int B,
                             int NH, int Tq, int Tk, int D, int Dv) {
    attn_forward(out, weights, q, k, v, key_len, scale, causal, B, NH, Tq, Tk, D, Dv, 0);
}

static void cpu_attn_forward_merged(float *out, float *weights, const float *q, const float *k,
                                    const float *v, const int *key_len, float scale, int causal,
                                    int B, int NH, int Tq, int Tk, int D, int Dv) {
    attn_forward(out, weights, q, k, v, key_len, scale, causal, B, NH, Tq, Tk, D, Dv, 1);
}

/* Floats of work for attn_backward: one [Tq, Tk] matrix dP per OpenMP thread. */
static size_t cpu_attn_workspace(int B, int NH, int Tq, int Tk, int D, int Dv) {
    (void)B, (void)NH, (void)D, (void)Dv;
    return (size_t)omp_get_max_threads() * ((size_t)Tq * Tk + 1);
}

/* Per row b, with P = weights_b: dP = dout vᵀ, dv += Pᵀ dout, dS = P ⊙ (dP − rowsum(P ⊙ dP))
 * · scale, dq += dS k, dk += dSᵀ q — cblas_sgemm calls and one pass over [Tq, Tk] in a
 * per-thread scratch. Masked entries have P = 0 and pass no gradient. */
static void attn_backward(float *dq, float *dk, float *dv, const float *dout, const float *q,
                          const float *k, const float *v, const float *weights, float scale,
                          int B, int NH, int Tq, int Tk, int D, int Dv, float *work, int merged) {
    /* each gradient's block of row b is written by one product: += (split), = (merged) */
    float keep = merged ? 0.0f : 1.0f;
    if (!dq && !dk && !dv) return;
    int R = B * NH; /* rows (b, h) */
    int ld = merged ? NH * D : D, ldv = merged ? NH * Dv : Dv;
#pragma omp parallel if ((long)R * Tq * Tk * (D + Dv) > 65536)
    {
        float *dP = work + omp_get_thread_num() * ((size_t)Tq * Tk + 1); /* [Tq, Tk] */
#pragma omp for schedule(dynamic, 1)
        for (int b = 0; b < R; b++) {
            const float *P = weights + (size_t)b * Tq * Tk;
            size_t oq = row_start(merged, b, NH, Tq, D), ok = row_start(merged, b, NH, Tk, D);
            size_t ov = row_start(merged, b, NH, Tk, Dv), og = row_start(merged, b, NH, Tq, Dv);
            const float *go = dout + og, *qb = q + oq, *kb = k + ok, *vb = v + ov;
            if (dv) /* out = P v  →  dv += Pᵀ dout */
                cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, Tk, Dv, Tq, 1.0f, P, Tk, go,
                            ldv, keep, dv + ov, ldv);
            if (!dq && !dk) continue;
            /* dP = dout vᵀ */
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, Tq, Tk, Dv, 1.0f, go, ldv, vb,
                        ldv, 0.0f, dP, Tk);
            for (int t = 0; t < Tq; t++) { /* a = softmax(e), e = scale · q kᵀ */
                const float *p = P + (size_t)t * Tk;
                float *d = dP + (size_t)t * Tk;
                float dot = 0;
                for (int s = 0; s < Tk; s++) dot += p[s] * d[s];
                for (int s = 0; s < Tk; s++) d[s] = p[s] == 0.0f ? 0.0f : p[s] * (d[s] - dot) * scale;
            }
            if (dq)
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, Tq, D, Tk, 1.0f, dP, Tk, kb,
                            ld, keep, dq + oq, ld);
            if (dk)
                cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, Tk, D, Tq, 1.0f, dP, Tk, qb,
                            ld, keep, dk + ok, ld);
        }
    }
}

static void cpu_attn_backward(float *dq, float *dk, float *dv, const float *dout, const float *q,
                              const float *k, const float *v, const float *weights, float scale,
                              int B, int NH, int Tq, int Tk, int D, int Dv, float *work) {
    attn_backward(dq, dk, dv, dout, q, k, v, weights, scale, B, NH, Tq, Tk, D, Dv, work, 0);
}

static void cpu_attn_backward_merged(float *dq, float *dk, float *dv, const float *dout,
                                     const float *q, const float *k, const float *v,
                                     const float *weights, float scale, int B, int NH, int Tq,
                                     int Tk, int D, int Dv, float *work) {
    attn_backward(dq, dk, dv, dout, q, k, v, weights, scale, B, NH, Tq, Tk, D, Dv, work, 1);
}

void cpu_register_attn_sdp(Backend *be) {
    be->attn_forward = cpu_attn_forward;
    be->attn_forward_merged = cpu_attn_forward_merged;
    be->attn_workspace = cpu_attn_workspace;
    be->attn_backward = cpu_attn_backward;
    be->attn_backward_merged = cpu_attn_backward_merged;
}
