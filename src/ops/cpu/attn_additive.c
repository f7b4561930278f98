/* attn_additive.c — additive attention with the weights materialised (Bahdanau et al. 2015
 * eq. 6; Luong et al. 2015 eq. 8 "concat"). Semantics in ops/ops.h. Rows r = b·NH + h; parallel
 * over the rows, each row written by one thread (deterministic). No workspace: the per-row
 * scratch is on the stack. */
#include <math.h>
#include <string.h>

#include "ops/cpu/cpu_internal.h"

/* Additive attention (Bahdanau et al. 2015 eq. 6; Luong et al. 2015 eq. 8 "concat"): the score
 * is v_hᵀ tanh(qp + kp) instead of a dot product; qp [B,Tq,A], kp [B,Tk,A], v [NH,A] (row r uses
 * head r mod NH), values [B,Tk,Dv]. Parallel over the rows; each (r, t) row is independent. */
static void cpu_additive_attn_forward(float *out, float *weights, const float *qp, const float *kp,
                                      const float *v, const float *values, const int *key_len,
                                      int causal, int B, int NH, int Tq, int Tk, int A, int Dv) {
    int R = B * NH; /* rows (b, h), row r = b·NH + h */
#pragma omp parallel for if ((long)R * Tq * Tk * A > 16384)
    for (int b = 0; b < R; b++) {
        int len = key_len ? key_len[b / NH] : Tk;
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
                w[s] = cpu_additive_score(qr, kr, vh, A); /* e_s = vᵀ tanh(qp_t + kp_s) */
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

/* No workspace: the backward's scratch rows (Tk + A floats) are per thread, on the stack. */
static size_t cpu_additive_attn_workspace(int B, int NH, int Tq, int Tk, int A, int Dv) {
    (void)B, (void)NH, (void)Tq, (void)Tk, (void)A, (void)Dv;
    return 0;
}

/* u = tanh(qp_t + kp_s) is recomputed, never stored. dqp rows belong to (r, t) and dkp, dvalues
 * rows to (r, s), so the loop over rows has no races; dv [NH,A] is shared: each row sums into a
 * private vector, added to dv[r mod NH] in the order of r (omp ordered), so the result does not
 * depend on the number of threads and no floating-point atomics are used (docs/design.md §9).
 * Positions with weight 0 (masked) contribute nothing and are skipped. */
static void cpu_additive_attn_backward(float *dqp, float *dkp, float *dv, float *dvalues,
                                       const float *dout, const float *qp, const float *kp,
                                       const float *v, const float *values, const float *weights,
                                       int B, int NH, int Tq, int Tk, int A, int Dv, float *work) {
    (void)work; /* no workspace: the scratch rows dw, dvb are per thread, on the stack */
    int need_u = dqp || dkp || dv; /* anything behind the tanh wanted? */
    B *= NH;                       /* rows (b, h) */
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
                    float acc = 0; /* out = Σ a_s values_s */
#pragma omp simd reduction(+ : acc)
                    for (int d = 0; d < Dv; d++) acc += go[d] * vr[d];
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
                    cpu_additive_score_backward(dqr, dkr, dv ? dvb : NULL, qr, kr, vh, de, A);
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

void cpu_register_attn_additive(Backend *be) {
    be->additive_attn_forward = cpu_additive_attn_forward;
    be->additive_attn_workspace = cpu_additive_attn_workspace;
    be->additive_attn_backward = cpu_additive_attn_backward;
}
