/* attention_core.c — attention with the weights materialised: dot-product (Luong et al. 2015
 * eq. 7–8 with the dot score; Vaswani et al. 2017 eq. 1 with scale 1/√d) and additive (Bahdanau
 * et al. 2015 eq. 6; Luong et al. 2015 eq. 8 "concat"). Semantics in ops/ops.h. Parallel over
 * the batch; each row b is independent and written by one thread (deterministic). */
#include <cblas.h>
#include <math.h>
#include <string.h>

#include "common.h"
#include "ops/cpu/cpu_internal.h"

/* Per row b: S = scale · q_b k_bᵀ [Tq, len] and out_b = P v_b are cblas_sgemm calls (OpenBLAS,
 * OpenMP build, runs them single-threaded inside the parallel region); the masked softmax is a
 * loop over each query row. Masked entries of weights are exactly 0. */
void cpu_attn_forward(float *out, float *weights, const float *q, const float *k, const float *v,
                      const int *key_len, float scale, int causal, int B, int Tq, int Tk, int D,
                      int Dv) {
#pragma omp parallel for schedule(dynamic, 1) if ((long)B * Tq * Tk * (D + Dv) > 65536)
    for (int b = 0; b < B; b++) {
        int len = key_len ? key_len[b] : Tk;
        if (len > Tk) len = Tk;
        if (len < 0) len = 0;
        const float *qb = q + (size_t)b * Tq * D, *kb = k + (size_t)b * Tk * D;
        const float *vb = v + (size_t)b * Tk * Dv;
        float *wb = weights + (size_t)b * Tq * Tk, *ob = out + (size_t)b * Tq * Dv;
        if (len > 0) /* e = scale · q kᵀ over the unpadded keys */
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, Tq, len, D, scale, qb, D, kb, D,
                        0.0f, wb, Tk);
        for (int t = 0; t < Tq; t++) {
            float *w = wb + (size_t)t * Tk;
            int lim = len;
            if (causal && t + (Tk - Tq) + 1 < lim) lim = t + (Tk - Tq) + 1;
            if (lim < 0) lim = 0;
            float mx = -INFINITY;
            for (int s = 0; s < lim; s++) mx = w[s] > mx ? w[s] : mx;
            double z = 0;
            for (int s = 0; s < lim; s++) z += (w[s] = expf(w[s] - mx));
            float inv = (float)(1.0 / z);
            for (int s = 0; s < lim; s++) w[s] *= inv; /* a = softmax(e) */
            for (int s = lim; s < Tk; s++) w[s] = 0.0f;
        }
        if (len > 0) /* out = Σ_s a_s v_s */
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, Tq, Dv, len, 1.0f, wb, Tk, vb,
                        Dv, 0.0f, ob, Dv);
        else
            memset(ob, 0, sizeof(float) * Tq * Dv);
    }
}

/* Per row b, with P = weights_b: dP = dout vᵀ, dv += Pᵀ dout, dS = P ⊙ (dP − rowsum(P ⊙ dP))
 * · scale, dq += dS k, dk += dSᵀ q — cblas_sgemm calls and one pass over [Tq, Tk] in a
 * per-thread scratch. Masked entries have P = 0 and pass no gradient. */
void cpu_attn_backward(float *dq, float *dk, float *dv, const float *dout, const float *q,
                       const float *k, const float *v, const float *weights, float scale, int B,
                       int Tq, int Tk, int D, int Dv) {
    if (!dq && !dk && !dv) return;
#pragma omp parallel if ((long)B * Tq * Tk * (D + Dv) > 65536)
    {
        float *dP = xmalloc(sizeof(float) * ((size_t)Tq * Tk + 1)); /* [Tq, Tk] */
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
        free(dP);
    }
}

/* Additive attention (Bahdanau et al. 2015 eq. 6; Luong et al. 2015 eq. 8 "concat"): the score
 * is v_hᵀ tanh(qp + kp) instead of a dot product; qp [B,Tq,A], kp [B,Tk,A], v [NH,A] (row r uses
 * head r mod NH), values [B,Tk,Dv]. Parallel over the rows; each (r, t) row is independent. */
void cpu_additive_attn_forward(float *out, float *weights, const float *qp, const float *kp,
                               const float *v, const float *values, const int *key_len,
                               int causal, int B, int NH, int Tq, int Tk, int A, int Dv) {
#pragma omp parallel for if ((long)B * Tq * Tk * A > 16384)
    for (int b = 0; b < B; b++) {
        int len = key_len ? key_len[b] : Tk;
        if (len > Tk) len = Tk;
        if (len < 0) len = 0;
        const float *vh = v + (size_t)(b % NH) * A;
        for (int t = 0; t < Tq; t++) {
            const float *qr = qp + ((size_t)b * Tq + t) * A;
            float *w = weights + ((size_t)b * Tq + t) * Tk;
            float *o = out + ((size_t)b * Tq + t) * Dv;
            int lim = len;
            if (causal && t + (Tk - Tq) + 1 < lim) lim = t + (Tk - Tq) + 1;
            if (lim < 0) lim = 0;
            float mx = -INFINITY;
            for (int s = 0; s < lim; s++) {
                const float *kr = kp + ((size_t)b * Tk + s) * A;
                float acc = 0;
                for (int a = 0; a < A; a++) acc += vh[a] * tanhf(qr[a] + kr[a]);
                w[s] = acc; /* e_s = vᵀ tanh(qp_t + kp_s) */
                if (w[s] > mx) mx = w[s];
            }
            double z = 0;
            for (int s = 0; s < lim; s++) z += (w[s] = expf(w[s] - mx));
            for (int s = 0; s < lim; s++) w[s] = (float)(w[s] / z); /* a = softmax(e) */
            for (int s = lim; s < Tk; s++) w[s] = 0.0f;
            memset(o, 0, sizeof(float) * Dv);
            for (int s = 0; s < lim; s++) { /* out = Σ_s a_s values_s */
                const float *vr = values + ((size_t)b * Tk + s) * Dv;
                for (int d = 0; d < Dv; d++) o[d] += w[s] * vr[d];
            }
        }
    }
}

/* u = tanh(qp_t + kp_s) is recomputed, never stored. dqp rows belong to (r, t) and dkp, dvalues
 * rows to (r, s), so the loop over rows has no races; dv [NH,A] is shared: each row sums into a
 * private vector, added to dv[r mod NH] in the order of r (omp ordered), so the result does not
 * depend on the number of threads and no floating-point atomics are used (DESIGN.md §8).
 * Positions with weight 0 (masked) contribute nothing and are skipped. */
void cpu_additive_attn_backward(float *dqp, float *dkp, float *dv, float *dvalues,
                                const float *dout, const float *qp, const float *kp,
                                const float *v, const float *values, const float *weights, int B,
                                int NH, int Tq, int Tk, int A, int Dv) {
    int need_u = dqp || dkp || dv; /* anything behind the tanh wanted? */
#pragma omp parallel if ((long)B * Tq * Tk * A > 16384)
    {
        float dw[Tk > 0 ? Tk : 1]; /* dL/da_s for one query row (Tk floats on the stack) */
        float dvb[A > 0 ? A : 1];  /* this row's share of dv */
#pragma omp for schedule(static, 1) ordered
        for (int b = 0; b < B; b++) {
            const float *vh = v + (size_t)(b % NH) * A;
            if (dv) memset(dvb, 0, sizeof(float) * A);
            for (int t = 0; t < Tq; t++) {
                const float *w = weights + ((size_t)b * Tq + t) * Tk;
                const float *go = dout + ((size_t)b * Tq + t) * Dv;
                const float *qr = qp + ((size_t)b * Tq + t) * A;
                float dot = 0;
                for (int s = 0; s < Tk; s++) {
                    if (w[s] == 0.0f) {
                        dw[s] = 0;
                        continue;
                    }
                    const float *vr = values + ((size_t)b * Tk + s) * Dv;
                    float acc = 0;
                    for (int d = 0; d < Dv; d++) acc += go[d] * vr[d]; /* out = Σ a_s values_s */
                    dw[s] = acc;
                    dot += w[s] * acc;
                    if (dvalues) {
                        float *dvr = dvalues + ((size_t)b * Tk + s) * Dv;
                        for (int d = 0; d < Dv; d++) dvr[d] += w[s] * go[d];
                    }
                }
                if (!need_u) continue;
                for (int s = 0; s < Tk; s++) {
                    if (w[s] == 0.0f) continue;
                    float de = w[s] * (dw[s] - dot); /* a = softmax(e) */
                    const float *kr = kp + ((size_t)b * Tk + s) * A;
                    float *dqr = dqp ? dqp + ((size_t)b * Tq + t) * A : NULL;
                    float *dkr = dkp ? dkp + ((size_t)b * Tk + s) * A : NULL;
                    for (int a = 0; a < A; a++) { /* e = Σ_a v_a u_a, u = tanh(qp + kp) */
                        float u = tanhf(qr[a] + kr[a]);
                        float du = de * vh[a] * (1.0f - u * u);
                        if (dqr) dqr[a] += du;
                        if (dkr) dkr[a] += du;
                        if (dv) dvb[a] += de * u;
                    }
                }
            }
#pragma omp ordered
            { /* every iteration passes here once, in the order of the rows */
                if (dv) {
                    float *dvh = dv + (size_t)(b % NH) * A;
                    for (int a = 0; a < A; a++) dvh[a] += dvb[a];
                }
            }
        }
    }
}
