/* attn_local.c — local attention (Luong et al. 2015 §3.2): local-m (p_t = pos0 + t) and local-p
 * (p_t = len·σ(z), eq. 9, with the Gaussian of eq. 10), the dot or the additive score, the
 * softmax over the window [p_t − W, p_t + W] clipped to the valid keys; the weights saved as
 * each query's window (2W + 2 floats: its first key, its weights).
 * Semantics in ops/ops.h (local_attn_*). Parallel over the batch rows b (each b's heads by one
 * thread), so dz [B,Tq], shared by the heads, is summed in a fixed order; dva [NH,D] is summed
 * over b in the order of b (omp ordered), as attn_additive.c: deterministic for any thread count.
 * No workspace: per-thread scratch rows on the stack. */
#include <math.h>
#include <string.h>

#include "ops/cpu/cpu_internal.h"

/* The query's window [*lo, *hi] (empty when lo > hi) and its position p (local-p: len·σ(z)). */
static void cpu_local_window(int *lo, int *hi, float *p, const float *z, int len, int window,
                             int pos0, int b, int t, int Tq) {
    float pt = z ? (float)len / (1.0f + expf(-z[(size_t)b * Tq + t])) : (float)(pos0 + t);
    int l = (int)ceilf(pt - (float)window), h = (int)floorf(pt + (float)window);
    *lo = l < 0 ? 0 : l;
    *hi = h > len - 1 ? len - 1 : h;
    *p = pt;
}

/* e_s = scale·q·k (va NULL) or vaᵀ tanh(q + k) */
static float local_score(const float *q, const float *k, const float *va, float scale, int D) {
    return va ? cpu_additive_score(q, k, va, D) : scale * cpu_dotf(q, k, D);
}

static int local_len(const int *key_len, int b, int Tk) {
    int len = key_len ? key_len[b] : Tk;
    return len > Tk ? Tk : len < 0 ? 0 : len;
}

static void cpu_local_attn_forward(float *out, float *weights, const float *q, const float *k,
                                   const float *va, const float *v, const float *z,
                                   const int *key_len, float scale, int window, int pos0, int B,
                                   int NH, int Tq, int Tk, int D, int Dv) {
    int R = B * NH, LW = local_attn_save_width(window);
    float sig = 0.5f * (float)window; /* σ = D/2 (eq. 10) */
#pragma omp parallel for if ((long)R * Tq * (2 * window + 1) * D > 16384)
    for (int r = 0; r < R; r++) {
        int b = r / NH, len = local_len(key_len, b, Tk);
        const float *vh = va ? va + (size_t)(r % NH) * D : NULL;
        for (int t = 0; t < Tq; t++) {
            const float *qr = q + ((size_t)r * Tq + t) * D;
            float *row = weights + ((size_t)r * Tq + t) * LW, *o = out + ((size_t)r * Tq + t) * Dv;
            int lo, hi;
            float p;
            cpu_local_window(&lo, &hi, &p, z, len, window, pos0, b, t, Tq);
            float *w = row + 1; /* w[s − lo] = a_s */
            row[0] = (float)lo;
            memset(row + 1, 0, sizeof(float) * (LW - 1));
            memset(o, 0, sizeof(float) * Dv);
            if (lo > hi) continue; /* empty window: zero weights, zero output */
            float mx = -INFINITY;
            for (int s = lo; s <= hi; s++) {
                w[s - lo] = local_score(qr, k + ((size_t)r * Tk + s) * D, vh, scale, D);
                if (w[s - lo] > mx) mx = w[s - lo];
            }
            double sum = 0;
            for (int s = lo; s <= hi; s++) sum += (w[s - lo] = expf(w[s - lo] - mx));
            for (int s = lo; s <= hi; s++) {
                w[s - lo] = (float)(w[s - lo] / sum); /* align(h_t, h̄_s), eq. 7 over the window */
                if (z) { /* eq. 10: × exp(−(s − p_t)² / 2σ²) */
                    float u = ((float)s - p) / sig;
                    w[s - lo] *= expf(-0.5f * u * u);
                }
            }
            for (int s = lo; s <= hi; s++) { /* c_t = Σ_s a_t(s) h̄_s */
                const float *vr = v + ((size_t)r * Tk + s) * Dv;
                for (int d = 0; d < Dv; d++) o[d] += w[s - lo] * vr[d];
            }
        }
    }
}

static size_t cpu_local_attn_workspace(int B, int NH, int Tq, int Tk, int D, int Dv,
                                       int window) {
    (void)B, (void)NH, (void)Tq, (void)Tk, (void)D, (void)Dv, (void)window;
    return 0;
}

/* Backward, per query row (a = α·g, α the window softmax, g the Gaussian or 1):
 *   dw_s = dout·v_s;  dv_s += a_s dout                                  (out = Σ a_s v_s)
 *   de_s = α_s (g_s dw_s − Σ_s' a_s' dw_s') = a_s dw_s − α_s Σ          (a = α g, α = softmax)
 *   dp = Σ_s dw_s a_s (s − p)/σ²;  dz += dp · p (1 − p/len)             (g, then p = len σ(z))
 *   dot: dq += scale Σ de_s k_s, dk_s += scale de_s q;  additive: u = tanh(q + k_s),
 *   dq += de_s va (1 − u²), dk_s += the same, dva += de_s u. */
static void cpu_local_attn_backward(float *dq, float *dk, float *dva, float *dv, float *dz,
                                    const float *dout, const float *q, const float *k,
                                    const float *va, const float *v, const float *z,
                                    const float *weights, const int *key_len, float scale,
                                    int window, int pos0, int B, int NH, int Tq, int Tk, int D,
                                    int Dv, float *work) {
    (void)work;
    int LW = local_attn_save_width(window);
    float sig = 0.5f * (float)window;
#pragma omp parallel if ((long)B * NH * Tq * (2 * window + 1) * D > 16384)
    {
        float dw[2 * window + 1]; /* dw_s of the window at dw[s − lo] */
        float dvb[va && dva ? NH * D : 1]; /* this b's share of dva */
#pragma omp for schedule(static, 1) ordered
        for (int b = 0; b < B; b++) {
            int len = local_len(key_len, b, Tk);
            if (va && dva) memset(dvb, 0, sizeof(float) * NH * D);
            for (int t = 0; t < Tq; t++) {
                int lo, hi;
                float p;
                cpu_local_window(&lo, &hi, &p, z, len, window, pos0, b, t, Tq);
                double dpz = 0; /* Σ over the heads of dp */
                for (int h = 0; h < NH && lo <= hi; h++) {
                    int r = b * NH + h;
                    const float *w = weights + ((size_t)r * Tq + t) * LW + 1; /* w[s − lo] = a_s */
                    const float *go = dout + ((size_t)r * Tq + t) * Dv;
                    const float *qr = q + ((size_t)r * Tq + t) * D;
                    const float *vh = va ? va + (size_t)h * D : NULL;
                    float *dqr = dq ? dq + ((size_t)r * Tq + t) * D : NULL;
                    double sum = 0, dp = 0;
                    for (int s = lo; s <= hi; s++) {
                        const float *vr = v + ((size_t)r * Tk + s) * Dv;
                        float acc = 0.0f;
                        for (int d = 0; d < Dv; d++) acc += go[d] * vr[d];
                        dw[s - lo] = acc;
                        sum += (double)w[s - lo] * acc;
                        if (z) dp += (double)acc * w[s - lo] * ((float)s - p) / (sig * sig);
                        if (dv) {
                            float *dvr = dv + ((size_t)r * Tk + s) * Dv;
                            for (int d = 0; d < Dv; d++) dvr[d] += w[s - lo] * go[d];
                        }
                    }
                    dpz += dp;
                    for (int s = lo; s <= hi; s++) {
                        float g = 1.0f;
                        if (z) {
                            float u = ((float)s - p) / sig;
                            g = expf(-0.5f * u * u);
                        }
                        float de = w[s - lo] * dw[s - lo] - (w[s - lo] / g) * (float)sum;
                        const float *kr = k + ((size_t)r * Tk + s) * D;
                        float *dkr = dk ? dk + ((size_t)r * Tk + s) * D : NULL;
                        if (!vh) {
                            for (int d = 0; d < D; d++) {
                                if (dqr) dqr[d] += scale * de * kr[d];
                                if (dkr) dkr[d] += scale * de * qr[d];
                            }
                            continue;
                        }
                        cpu_additive_score_backward(dqr, dkr, dva ? dvb + h * D : NULL, qr, kr,
                                                    vh, de, D);
                    }
                }
                if (z && dz && lo <= hi) /* p = len σ(z): dp/dz = p (1 − p/len) */
                    dz[(size_t)b * Tq + t] += (float)(dpz * p * (1.0 - p / len));
            }
#pragma omp ordered
            {
                if (va && dva)
                    for (int i = 0; i < NH * D; i++) dva[i] += dvb[i];
            }
        }
    }
}

void cpu_register_attn_local(Backend *be) {
    be->local_attn_forward = cpu_local_attn_forward;
    be->local_attn_workspace = cpu_local_attn_workspace;
    be->local_attn_backward = cpu_local_attn_backward;
}
