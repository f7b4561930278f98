/* attention_core.c — dot-product attention with the weights materialised (Luong et al. 2015
 * eq. 7–8 with the dot score; Vaswani et al. 2017 eq. 1 with scale 1/√d). Semantics in
 * ops/ops.h. Parallel over the batch; each (b, t) row is independent. */
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
