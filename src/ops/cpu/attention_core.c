/* attention_core.c — attention with the weights materialised: dot-product (Luong et al. 2015
 * eq. 7–8 with the dot score; Vaswani et al. 2017 eq. 1 with scale 1/√d) and additive (Bahdanau
 * et al. 2015 eq. 6; Luong et al. 2015 eq. 8 "concat"). Semantics in ops/ops.h. Parallel over
 * the batch; each (b, t) row is independent. */
#include <math.h>
#include <string.h>

#include "ops/cpu/cpu_internal.h"

void cpu_attn_forward(float *out, float *weights, const float *q, const float *k, const float *v,
                      const int *key_len, float scale, int causal, int B, int Tq, int Tk, int D,
                      int Dv) {
#pragma omp parallel for if ((long)B * Tq * Tk * D > 65536)
    for (int b = 0; b < B; b++) {
        int len = key_len ? key_len[b] : Tk;
        if (len > Tk) len = Tk;
        for (int t = 0; t < Tq; t++) {
            const float *qr = q + ((size_t)b * Tq + t) * D;
            float *w = weights + ((size_t)b * Tq + t) * Tk;
            float *o = out + ((size_t)b * Tq + t) * Dv;
            int lim = len;
            if (causal && t + (Tk - Tq) + 1 < lim) lim = t + (Tk - Tq) + 1;
            float mx = -INFINITY;
            for (int s = 0; s < lim; s++) {
                const float *kr = k + ((size_t)b * Tk + s) * D;
                float acc = 0;
                for (int d = 0; d < D; d++) acc += qr[d] * kr[d];
                w[s] = acc * scale; /* e_s = scale · q·k_s */
                if (w[s] > mx) mx = w[s];
            }
            double z = 0;
            for (int s = 0; s < lim; s++) z += (w[s] = expf(w[s] - mx));
            for (int s = 0; s < lim; s++) w[s] = (float)(w[s] / z); /* a = softmax(e) */
            for (int s = lim < 0 ? 0 : lim; s < Tk; s++) w[s] = 0.0f;
            memset(o, 0, sizeof(float) * Dv);
            for (int s = 0; s < lim; s++) { /* out = Σ_s a_s v_s */
                const float *vr = v + ((size_t)b * Tk + s) * Dv;
                for (int d = 0; d < Dv; d++) o[d] += w[s] * vr[d];
            }
        }
    }
}

void cpu_attn_backward(float *dq, float *dk, float *dv, const float *dout, const float *q,
                       const float *k, const float *v, const float *weights, float scale, int B,
                       int Tq, int Tk, int D, int Dv) {
#pragma omp parallel
    {
        float dw[Tk > 0 ? Tk : 1]; /* dL/da_s for one query row (Tk floats on the stack) */
#pragma omp for
        for (int b = 0; b < B; b++) {
            for (int t = 0; t < Tq; t++) {
                const float *w = weights + ((size_t)b * Tq + t) * Tk;
                const float *go = dout + ((size_t)b * Tq + t) * Dv;
                const float *qr = q + ((size_t)b * Tq + t) * D;
                float dot = 0;
                for (int s = 0; s < Tk; s++) {
                    if (w[s] == 0.0f) {
                        dw[s] = 0;
                        continue;
                    }
                    const float *vr = v + ((size_t)b * Tk + s) * Dv;
                    float acc = 0;
                    for (int d = 0; d < Dv; d++) acc += go[d] * vr[d]; /* out = Σ a_s v_s */
                    dw[s] = acc;
                    dot += w[s] * acc;
                    if (dv) {
                        float *dvr = dv + ((size_t)b * Tk + s) * Dv;
                        for (int d = 0; d < Dv; d++) dvr[d] += w[s] * go[d];
                    }
                }
                for (int s = 0; s < Tk; s++) {
                    if (w[s] == 0.0f) continue;
                    float de = w[s] * (dw[s] - dot) * scale; /* a = softmax(e), e = scale q·k */
                    const float *kr = k + ((size_t)b * Tk + s) * D;
                    if (dq) {
                        float *dqr = dq + ((size_t)b * Tq + t) * D;
                        for (int d = 0; d < D; d++) dqr[d] += de * kr[d];
                    }
                    if (dk) {
                        float *dkr = dk + ((size_t)b * Tk + s) * D;
                        for (int d = 0; d < D; d++) dkr[d] += de * qr[d];
                    }
                }
            }
        }
    }
}

/* Additive attention (Bahdanau et al. 2015 eq. 6; Luong et al. 2015 eq. 8 "concat"): the score
 * is vᵀ tanh(qp + kp) instead of a dot product; qp [B,Tq,A], kp [B,Tk,A], v [A], values
 * [B,Tk,Dv]. Parallel over the batch; each (b, t) row is independent. */
void cpu_additive_attn_forward(float *out, float *weights, const float *qp, const float *kp,
                               const float *v, const float *values, const int *key_len, int B,
                               int Tq, int Tk, int A, int Dv) {
#pragma omp parallel for if ((long)B * Tq * Tk * A > 16384)
    for (int b = 0; b < B; b++) {
        int len = key_len ? key_len[b] : Tk;
        if (len > Tk) len = Tk;
        if (len < 0) len = 0;
        for (int t = 0; t < Tq; t++) {
            const float *qr = qp + ((size_t)b * Tq + t) * A;
            float *w = weights + ((size_t)b * Tq + t) * Tk;
            float *o = out + ((size_t)b * Tq + t) * Dv;
            float mx = -INFINITY;
            for (int s = 0; s < len; s++) {
                const float *kr = kp + ((size_t)b * Tk + s) * A;
                float acc = 0;
                for (int a = 0; a < A; a++) acc += v[a] * tanhf(qr[a] + kr[a]);
                w[s] = acc; /* e_s = vᵀ tanh(qp_t + kp_s) */
                if (w[s] > mx) mx = w[s];
            }
            double z = 0;
            for (int s = 0; s < len; s++) z += (w[s] = expf(w[s] - mx));
            for (int s = 0; s < len; s++) w[s] = (float)(w[s] / z); /* a = softmax(e) */
            for (int s = len; s < Tk; s++) w[s] = 0.0f;
            memset(o, 0, sizeof(float) * Dv);
            for (int s = 0; s < len; s++) { /* out = Σ_s a_s values_s */
                const float *vr = values + ((size_t)b * Tk + s) * Dv;
                for (int d = 0; d < Dv; d++) o[d] += w[s] * vr[d];
            }
        }
    }
}

/* u = tanh(qp_t + kp_s) is recomputed, never stored. dqp rows belong to (b, t) and dkp, dvalues
 * rows to (b, s), so the loop over b has no races; dv [A] is shared: each b sums into a private
 * row, added to dv in the order of b (omp ordered), so the result does not depend on the number
 * of threads and no floating-point atomics are used (DESIGN.md §8). Positions with weight 0
 * (masked) contribute nothing and are skipped. */
void cpu_additive_attn_backward(float *dqp, float *dkp, float *dv, float *dvalues,
                                const float *dout, const float *qp, const float *kp,
                                const float *v, const float *values, const float *weights, int B,
                                int Tq, int Tk, int A, int Dv) {
    int need_u = dqp || dkp || dv; /* anything behind the tanh wanted? */
#pragma omp parallel if ((long)B * Tq * Tk * A > 16384)
    {
        float dw[Tk > 0 ? Tk : 1]; /* dL/da_s for one query row (Tk floats on the stack) */
        float dvb[A > 0 ? A : 1];  /* this b's share of dv */
#pragma omp for schedule(static, 1) ordered
        for (int b = 0; b < B; b++) {
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
                        float du = de * v[a] * (1.0f - u * u);
                        if (dqr) dqr[a] += du;
                        if (dkr) dkr[a] += du;
                        if (dv) dvb[a] += de * u;
                    }
                }
            }
#pragma omp ordered
            { /* every iteration passes here once, in the order of b */
                if (dv)
                    for (int a = 0; a < A; a++) dv[a] += dvb[a];
            }
        }
    }
}
