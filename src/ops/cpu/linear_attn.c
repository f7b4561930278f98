/* linear_attn.c — attention in linear time and memory, no Tq×Tk matrix: linear attention and
 * efficient attention (semantics on the table in ops/ops.h, "efficient attention kinds").
 *
 * Shapes: B batch, NH heads, Tq queries, Tk keys, D query/key width, Dv value width.
 *   q [B, NH, Tq, D], k [B, NH, Tk, D], v [B, NH, Tk, Dv], out [B, NH, Tq, Dv], key_len [B].
 *
 * Linear attention — Katharopoulos et al. 2020, "Transformers are RNNs: Fast Autoregressive
 * Transformers with Linear Attention", eq. 6–9 and §3.3.1. Feature map φ(x) = elu(x) + 1
 * (= x + 1 for x > 0, eˣ for x ≤ 0; φ'(x) = 1 for x > 0, eˣ for x ≤ 0). Per (b, h), with
 * Q_t = φ(q_t), K_s = φ(k_s) and the keys visible to row t being s < vis(t), where
 *   vis(t) = key_len[b]                          (non-causal)
 *   vis(t) = min(key_len[b], t + (Tk − Tq) + 1)  (causal: s ≤ t + Tk − Tq),
 *   S_t = Σ_{s<vis(t)} K_s v_sᵀ  [D, Dv],   z_t = Σ_{s<vis(t)} K_s  [D]          (eq. 6, 8–9)
 *   num_t = S_tᵀ Q_t,  den_t = Q_t · z_t + 1e-6,  out_t = num_t / den_t          (eq. 6)
 * vis(t) is non-decreasing in t, so the causal S_t, z_t are prefix sums carried forward in time.
 * A row with vis(t) = 0 gets out_t = 0 and passes no gradient.
 *   Gradients, with g_t = dL/dout_t and c_t = (g_t · out_t) / den_t:
 *   dL/dQ_t = (S_t g_t − z_t (g_t · out_t)) / den_t
 *   dL/dK_s = R_s v_s − r_s,   dL/dv_s = R_sᵀ K_s,  where over the rows that see key s,
 *     R_s = Σ_{t: vis(t)>s} Q_t g_tᵀ / den_t  [D, Dv],   r_s = Σ_{t: vis(t)>s} Q_t c_t  [D]
 *   and dq = dL/dQ ⊙ φ'(q), dk = dL/dK ⊙ φ'(k).
 * {t : vis(t) > s} is a suffix of the rows, so R_s, r_s are suffix sums carried backward in time
 * (§3.3.1: the numerator's gradient by a forward and a reverse cumulative sum; here extended by
 * the normaliser terms z_t and r_s). The backward stores only den_t and c_t per row (2·Tq
 * floats) next to one D×Dv state per thread: nothing of size Tq×Tk or T·D·Dv.
 *
 * Efficient attention — Shen et al. 2021, "Efficient Attention: Attention with Linear
 * Complexities", eq. 2 (WACV 2021): per (b, h), with L = key_len[b] visible keys,
 *   P_t = softmax_d(q_t)          (ρ_q: over each row of q, across D)
 *   K_sd = exp(k_sd) / Σ_{s'<L} exp(k_s'd) for s < L, 0 for s ≥ L  (ρ_k: over each column)
 *   C = Σ_{s<L} K_s v_sᵀ [D, Dv],  out_t = Cᵀ P_t.
 *   Gradients: dP_t = C g_t,  dq_t = P_t ⊙ (dP_t − P_t · dP_t);
 *   dC = Σ_t P_t g_tᵀ,  dK_s = dC v_s,  dv_s = dCᵀ K_s,
 *   dk_sd = K_sd (dK_sd − Σ_{s'} K_s'd dK_s'd), and Σ_{s'} K_s'd dK_s'd = Σ_e dC_de C_de, so
 *   the column softmax needs no second pass over the keys. L = 0 gives out = 0, no gradient.
 *
 * Parallel over the B·NH (b, h) pairs; each pair is computed by one thread in a fixed order and
 * owns its slices of out / dq / dk / dv, so the results are race-free and bit-identical for any
 * thread count. Workspace is allocated per thread inside the parallel region. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "ops/cpu/cpu_internal.h"

#define LINEAR_ATTN_EPS 1e-6f /* the normaliser's guard (den_t = φ(q_t)·z_t + 1e-6) */

/* Σ_i a_i b_i in float32; an `omp simd` reduction (a fixed, compile-time order: the result does
 * not depend on the thread count). */
static inline float dotf(const float *a, const float *b, int n) {
    float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
    for (int i = 0; i < n; i++) acc += a[i] * b[i];
    return acc;
}

/* y += a·x over n floats; an `omp simd` loop (vectorised at -O2 whatever the cost model; the
 * result is element-wise, so it is the same as the scalar loop's). */
static inline void axpyf(float *y, float a, const float *x, int n) {
#pragma omp simd
    for (int i = 0; i < n; i++) y[i] += a * x[i];
}

/* φ(x) = elu(x) + 1 */
static inline float phi(float x) { return x > 0.0f ? x + 1.0f : expf(x); }
/* φ'(x) = 1 for x > 0, eˣ for x ≤ 0 */
static inline float dphi(float x) { return x > 0.0f ? 1.0f : expf(x); }

/* Number of keys visible to query row t (keys 0 .. vis−1); non-decreasing in t. */
static inline int visible_keys(int t, int len, int causal, int Tq, int Tk) {
    if (!causal) return len;
    long lim = (long)t + (Tk - Tq) + 1; /* causal: s ≤ t + (Tk − Tq) */
    if (lim < 0) lim = 0;
    return lim < len ? (int)lim : len;
}

/* key_len[b] clipped to [0, Tk] (all Tk keys when key_len is NULL). */
static inline int key_count(const int *key_len, int b, int Tk) {
    int len = key_len ? key_len[b] : Tk;
    if (len > Tk) len = Tk;
    if (len < 0) len = 0;
    return len;
}

/* S += K vᵀ, z += K for one key: K = φ(k_s) (written into Kbuf). */
static void linear_add_key(float *S, float *z, float *Kbuf, const float *kr, const float *vr,
                           int D, int Dv) {
    for (int d = 0; d < D; d++) Kbuf[d] = phi(kr[d]);
    for (int d = 0; d < D; d++) {
        float kd = Kbuf[d];
        float *Sd = S + (size_t)d * Dv;
        axpyf(Sd, kd, vr, Dv); /* S_t = Σ φ(k_s) v_sᵀ */
        z[d] += kd;            /* z_t = Σ φ(k_s) */
    }
}

/* One output row: Qbuf = φ(q_t); o = Sᵀ Q / (Q·z + eps); returns den. Shared by forward and
 * backward so that the recomputed out_t is the forward's, bit for bit. */
static float linear_row(float *o, float *Qbuf, const float *qr, const float *S, const float *z,
                        int D, int Dv) {
    float den = 0.0f;
    for (int d = 0; d < D; d++) {
        Qbuf[d] = phi(qr[d]);
        den += Qbuf[d] * z[d];
    }
    den += LINEAR_ATTN_EPS; /* den_t = φ(q_t)·z_t + 1e-6 */
    for (int e = 0; e < Dv; e++) o[e] = 0.0f;
    for (int d = 0; d < D; d++) {
        float qd = Qbuf[d];
        const float *Sd = S + (size_t)d * Dv;
        axpyf(o, qd, Sd, Dv); /* num_t = S_tᵀ φ(q_t) */
    }
    float inv = 1.0f / den;
    for (int e = 0; e < Dv; e++) o[e] *= inv; /* out_t = num_t / den_t */
    return den;
}

/* Linear attention forward (Katharopoulos et al. 2020 eq. 6; causal: eq. 8–9 as prefix sums).
 * out[B,NH,Tq,Dv] is overwritten. Per thread: one D×Dv state S and z, K, Q buffers. */
void cpu_linear_attn_forward(float *out, const float *q, const float *k, const float *v,
                             const int *key_len, int causal, int B, int NH, int Tq, int Tk, int D,
                             int Dv) {
    int BH = B * NH;
#pragma omp parallel if ((long)BH * (Tq + Tk) * D * Dv > 65536)
    {
        float *S = xmalloc(sizeof(float) * ((size_t)D * Dv + 3 * (size_t)D + 1)); /* [D,Dv] */
        float *z = S + (size_t)D * Dv;                                             /* [D] */
        float *Kbuf = z + D, *Qbuf = Kbuf + D;                                     /* [D] */
#pragma omp for schedule(dynamic, 1)
        for (int bh = 0; bh < BH; bh++) {
            int len = key_count(key_len, bh / NH, Tk);
            const float *qb = q + (size_t)bh * Tq * D;  /* [Tq, D] */
            const float *kb = k + (size_t)bh * Tk * D;  /* [Tk, D] */
            const float *vb = v + (size_t)bh * Tk * Dv; /* [Tk, Dv] */
            float *ob = out + (size_t)bh * Tq * Dv;     /* [Tq, Dv] */
            memset(S, 0, sizeof(float) * ((size_t)D * Dv + D));
            int sp = 0; /* keys 0 .. sp−1 are in S, z */
            for (int t = 0; t < Tq; t++) {
                int vis = visible_keys(t, len, causal, Tq, Tk);
                for (; sp < vis; sp++)
                    linear_add_key(S, z, Kbuf, kb + (size_t)sp * D, vb + (size_t)sp * Dv, D, Dv);
                float *o = ob + (size_t)t * Dv;
                if (vis == 0) { /* no visible key: out = 0 */
                    memset(o, 0, sizeof(float) * Dv);
                    continue;
                }
                linear_row(o, Qbuf, qb + (size_t)t * D, S, z, D, Dv);
            }
        }
        free(S);
    }
}

/* One decoding step of causal linear attention (the recurrent form, Katharopoulos et al. 2020
 * §3.4): the new key joins each row's running state, then the query reads it. Uses the same
 * linear_add_key and linear_row as the forward, so out equals the causal forward's row t bit for
 * bit. Parallel over the B·NH (row, head) pairs, each owning its state. */
void cpu_linear_attn_step(float *out, float *state, float *zsum, const float *q, const float *k,
                          const float *v, int B, int NH, int D, int Dv) {
    int BH = B * NH;
#pragma omp parallel if ((long)BH * D * Dv > 65536)
    {
        float Kbuf[D > 0 ? D : 1], Qbuf[D > 0 ? D : 1];
#pragma omp for
        for (int bh = 0; bh < BH; bh++) {
            float *S = state + (size_t)bh * D * Dv, *z = zsum + (size_t)bh * D;
            linear_add_key(S, z, Kbuf, k + (size_t)bh * D, v + (size_t)bh * Dv, D, Dv);
            linear_row(out + (size_t)bh * Dv, Qbuf, q + (size_t)bh * D, S, z, D, Dv);
        }
    }
}

/* Linear attention backward (memory-light, Katharopoulos et al. 2020 §3.3.1 with the normaliser):
 * pass 1 walks forward in time rebuilding S_t, z_t to give dq and the per-row den_t, c_t;
 * pass 2 walks backward in time accumulating R_s, r_s to give dk, dv. Accumulates (+=) into
 * dq[B,NH,Tq,D], dk[B,NH,Tk,D], dv[B,NH,Tk,Dv], each of which may be NULL. */
void cpu_linear_attn_backward(float *dq, float *dk, float *dv, const float *dout, const float *q,
                              const float *k, const float *v, const int *key_len, int causal,
                              int B, int NH, int Tq, int Tk, int D, int Dv) {
    if (!dq && !dk && !dv) return;
    int BH = B * NH;
#pragma omp parallel if ((long)BH * (Tq + Tk) * D * Dv > 65536)
    {
        size_t nst = (size_t)D * Dv + D; /* S,z (pass 1) then R,r (pass 2) */
        float *S = xmalloc(sizeof(float) * (nst + 3 * (size_t)D + (size_t)Dv + 2 * (size_t)Tq + 1));
        float *z = S + (size_t)D * Dv;            /* [D] */
        float *Kbuf = S + nst, *Qbuf = Kbuf + D;  /* [D] */
        float *gQ = Qbuf + D;                     /* [D]  dL/dφ(q_t) */
        float *o = gQ + D;                        /* [Dv] out_t recomputed */
        float *den = o + Dv, *cc = den + Tq;      /* [Tq] den_t, c_t = (g_t·out_t)/den_t */
        float *R = S, *r = z;                     /* pass 2 reuses the state */
#pragma omp for schedule(dynamic, 1)
        for (int bh = 0; bh < BH; bh++) {
            int len = key_count(key_len, bh / NH, Tk);
            if (len == 0) continue; /* no row sees a key: no gradient */
            const float *qb = q + (size_t)bh * Tq * D;
            const float *kb = k + (size_t)bh * Tk * D;
            const float *vb = v + (size_t)bh * Tk * Dv;
            const float *gb = dout + (size_t)bh * Tq * Dv;

            /* pass 1, forward in time: S_t, z_t as in the forward; dq_t and den_t, c_t */
            memset(S, 0, sizeof(float) * nst);
            int sp = 0;
            for (int t = 0; t < Tq; t++) {
                int vis = visible_keys(t, len, causal, Tq, Tk);
                for (; sp < vis; sp++)
                    linear_add_key(S, z, Kbuf, kb + (size_t)sp * D, vb + (size_t)sp * Dv, D, Dv);
                if (vis == 0) {
                    den[t] = 0.0f;
                    cc[t] = 0.0f;
                    continue;
                }
                const float *qr = qb + (size_t)t * D;
                const float *g = gb + (size_t)t * Dv;
                float dn = linear_row(o, Qbuf, qr, S, z, D, Dv);
                float gdo = dotf(g, o, Dv); /* g_t · out_t */
                den[t] = dn;
                cc[t] = gdo / dn;
                if (dq) {
                    /* out_t = S_tᵀ Q / den_t, den_t = Q·z_t + eps:
                     * dL/dQ = (S_t g − z_t (g·out_t)) / den_t; dq = dL/dQ ⊙ φ'(q_t) */
                    float *dqr = dq + ((size_t)bh * Tq + t) * D;
                    for (int d = 0; d < D; d++)
                        gQ[d] = (dotf(S + (size_t)d * Dv, g, Dv) - z[d] * gdo) / dn;
                    for (int d = 0; d < D; d++) dqr[d] += gQ[d] * dphi(qr[d]);
                }
            }
            if (!dk && !dv) continue;

            /* pass 2, backward in time: rows t with vis(t) > s form a suffix tp .. Tq−1 */
            memset(R, 0, sizeof(float) * nst);
            int tp = Tq;
            for (int s = len - 1; s >= 0; s--) {
                while (tp > 0 && visible_keys(tp - 1, len, causal, Tq, Tk) > s) {
                    tp--;
                    /* R += φ(q_t) g_tᵀ / den_t, r += φ(q_t) c_t */
                    const float *qr = qb + (size_t)tp * D;
                    const float *g = gb + (size_t)tp * Dv;
                    float w = 1.0f / den[tp], c = cc[tp];
                    for (int d = 0; d < D; d++) {
                        float qd = phi(qr[d]);
                        float qw = qd * w;
                        float *Rd = R + (size_t)d * Dv;
                        axpyf(Rd, qw, g, Dv);
                        r[d] += qd * c;
                    }
                }
                const float *kr = kb + (size_t)s * D;
                const float *vr = vb + (size_t)s * Dv;
                if (dk) {
                    /* num_t += φ(q_t)·φ(k_s) v_s, den_t += φ(q_t)·φ(k_s):
                     * dL/dφ(k_s) = R v_s − r; dk = dL/dφ(k_s) ⊙ φ'(k_s) */
                    float *dkr = dk + ((size_t)bh * Tk + s) * D;
                    for (int d = 0; d < D; d++)
                        dkr[d] += (dotf(R + (size_t)d * Dv, vr, Dv) - r[d]) * dphi(kr[d]);
                }
                if (dv) {
                    /* num_t += (φ(q_t)·φ(k_s)) v_s: dv_s = Rᵀ φ(k_s) */
                    float *dvr = dv + ((size_t)bh * Tk + s) * Dv;
                    for (int d = 0; d < D; d++) Kbuf[d] = phi(kr[d]);
                    for (int e = 0; e < Dv; e++) o[e] = 0.0f;
                    for (int d = 0; d < D; d++) {
                        float kd = Kbuf[d];
                        const float *Rd = R + (size_t)d * Dv;
                        axpyf(o, kd, Rd, Dv);
                    }
                    for (int e = 0; e < Dv; e++) dvr[e] += o[e];
                }
            }
        }
        free(S);
    }
}

/* ---------------------------------------------------------------------------------------- */
/* efficient attention                                                                        */

/* Column-softmax statistics of k over the len visible keys: mx[d] = max_s k_sd and
 * inv[d] = 1 / Σ_s exp(k_sd − mx[d]) (len > 0). */
static void colsoftmax_stats(float *mx, float *inv, const float *kb, int len, int D) {
    for (int d = 0; d < D; d++) mx[d] = -INFINITY;
    for (int s = 0; s < len; s++) {
        const float *kr = kb + (size_t)s * D;
        for (int d = 0; d < D; d++)
            if (kr[d] > mx[d]) mx[d] = kr[d];
    }
    for (int d = 0; d < D; d++) inv[d] = 0.0f;
    for (int s = 0; s < len; s++) {
        const float *kr = kb + (size_t)s * D;
        for (int d = 0; d < D; d++) inv[d] += expf(kr[d] - mx[d]);
    }
    for (int d = 0; d < D; d++) inv[d] = 1.0f / inv[d];
}

/* K = ρ_k(k)_s: K_d = exp(k_sd − mx[d]) · inv[d]. */
static inline void colsoftmax_row(float *K, const float *kr, const float *mx, const float *inv,
                                  int D) {
    for (int d = 0; d < D; d++) K[d] = expf(kr[d] - mx[d]) * inv[d];
}

/* P = softmax over the D entries of one query row (ρ_q). */
static void row_softmax(float *P, const float *qr, int D) {
    float m = -INFINITY;
    for (int d = 0; d < D; d++)
        if (qr[d] > m) m = qr[d];
    float sum = 0.0f;
    for (int d = 0; d < D; d++) sum += (P[d] = expf(qr[d] - m));
    float inv = 1.0f / sum;
    for (int d = 0; d < D; d++) P[d] *= inv;
}

/* C = ρ_k(k)ᵀ v over the len visible keys (len > 0); K used as a [D] buffer. */
static void efficient_context(float *C, float *K, const float *kb, const float *vb,
                              const float *mx, const float *inv, int len, int D, int Dv) {
    memset(C, 0, sizeof(float) * (size_t)D * Dv);
    for (int s = 0; s < len; s++) {
        colsoftmax_row(K, kb + (size_t)s * D, mx, inv, D);
        const float *vr = vb + (size_t)s * Dv;
        for (int d = 0; d < D; d++) {
            float kd = K[d];
            float *Cd = C + (size_t)d * Dv;
            axpyf(Cd, kd, vr, Dv); /* C = Σ_s ρ_k(k)_s v_sᵀ */
        }
    }
}

/* Efficient attention forward (Shen et al. 2021 eq. 2): out = ρ_q(q) (ρ_k(k)ᵀ v), ρ_k over the
 * key_len[b] visible keys; out[B,NH,Tq,Dv] overwritten, 0 where key_len[b] = 0. */
void cpu_efficient_attn_forward(float *out, const float *q, const float *k, const float *v,
                                const int *key_len, int B, int NH, int Tq, int Tk, int D, int Dv) {
    int BH = B * NH;
#pragma omp parallel if ((long)BH * (Tq + Tk) * D * Dv > 65536)
    {
        float *C = xmalloc(sizeof(float) * ((size_t)D * Dv + 4 * (size_t)D + 1)); /* [D,Dv] */
        float *mx = C + (size_t)D * Dv, *inv = mx + D, *K = inv + D, *P = K + D; /* [D] */
#pragma omp for schedule(dynamic, 1)
        for (int bh = 0; bh < BH; bh++) {
            int len = key_count(key_len, bh / NH, Tk);
            const float *qb = q + (size_t)bh * Tq * D;
            const float *kb = k + (size_t)bh * Tk * D;
            const float *vb = v + (size_t)bh * Tk * Dv;
            float *ob = out + (size_t)bh * Tq * Dv;
            if (len == 0) {
                memset(ob, 0, sizeof(float) * (size_t)Tq * Dv);
                continue;
            }
            colsoftmax_stats(mx, inv, kb, len, D);
            efficient_context(C, K, kb, vb, mx, inv, len, D, Dv);
            for (int t = 0; t < Tq; t++) {
                row_softmax(P, qb + (size_t)t * D, D);
                float *o = ob + (size_t)t * Dv;
                for (int e = 0; e < Dv; e++) o[e] = 0.0f;
                for (int d = 0; d < D; d++) {
                    float pd = P[d];
                    const float *Cd = C + (size_t)d * Dv;
                    axpyf(o, pd, Cd, Dv); /* out_t = Cᵀ ρ_q(q_t) */
                }
            }
        }
        free(C);
    }
}

/* Efficient attention backward: recomputes C, then dq (row-softmax backward), dC = Σ_t P_t g_tᵀ,
 * dv_s = dCᵀ K_s and dk (column-softmax backward, column sums Σ_e dC_de C_de). Accumulates (+=)
 * into dq, dk, dv, each may be NULL; padded keys (s ≥ key_len[b]) get no gradient. */
void cpu_efficient_attn_backward(float *dq, float *dk, float *dv, const float *dout,
                                 const float *q, const float *k, const float *v,
                                 const int *key_len, int B, int NH, int Tq, int Tk, int D, int Dv) {
    if (!dq && !dk && !dv) return;
    int BH = B * NH;
#pragma omp parallel if ((long)BH * (Tq + Tk) * D * Dv > 65536)
    {
        size_t ndd = (size_t)D * Dv;
        float *C = xmalloc(sizeof(float) * (2 * ndd + 6 * (size_t)D + 1));
        float *dC = C + ndd;                                           /* [D,Dv] */
        float *mx = dC + ndd, *inv = mx + D, *K = inv + D, *P = K + D; /* [D] */
        float *gP = P + D, *cs = gP + D;                               /* [D] */
#pragma omp for schedule(dynamic, 1)
        for (int bh = 0; bh < BH; bh++) {
            int len = key_count(key_len, bh / NH, Tk);
            if (len == 0) continue; /* out = 0 regardless of q, k, v */
            const float *qb = q + (size_t)bh * Tq * D;
            const float *kb = k + (size_t)bh * Tk * D;
            const float *vb = v + (size_t)bh * Tk * Dv;
            const float *gb = dout + (size_t)bh * Tq * Dv;
            colsoftmax_stats(mx, inv, kb, len, D);
            efficient_context(C, K, kb, vb, mx, inv, len, D, Dv);
            memset(dC, 0, sizeof(float) * ndd);
            for (int t = 0; t < Tq; t++) {
                const float *qr = qb + (size_t)t * D;
                const float *g = gb + (size_t)t * Dv;
                row_softmax(P, qr, D);
                if (dq) {
                    /* out_t = Cᵀ P: dP = C g; P = softmax(q_t): dq = P ⊙ (dP − P·dP) */
                    float pdp = 0.0f;
                    for (int d = 0; d < D; d++) {
                        gP[d] = dotf(C + (size_t)d * Dv, g, Dv);
                        pdp += P[d] * gP[d];
                    }
                    float *dqr = dq + ((size_t)bh * Tq + t) * D;
                    for (int d = 0; d < D; d++) dqr[d] += P[d] * (gP[d] - pdp);
                }
                if (dk || dv) {
                    /* out_t = Cᵀ P_t: dC += P_t g_tᵀ */
                    for (int d = 0; d < D; d++) {
                        float pd = P[d];
                        float *dCd = dC + (size_t)d * Dv;
                        axpyf(dCd, pd, g, Dv);
                    }
                }
            }
            if (!dk && !dv) continue;
            /* Σ_s K_sd dK_sd = Σ_s K_sd Σ_e dC_de v_se = Σ_e dC_de C_de */
            for (int d = 0; d < D; d++) cs[d] = dotf(dC + (size_t)d * Dv, C + (size_t)d * Dv, Dv);
            for (int s = 0; s < len; s++) {
                const float *kr = kb + (size_t)s * D;
                const float *vr = vb + (size_t)s * Dv;
                colsoftmax_row(K, kr, mx, inv, D);
                if (dk) {
                    /* C = Σ_s K_s v_sᵀ: dK_s = dC v_s; K = column softmax of k:
                     * dk_sd = K_sd (dK_sd − Σ_s' K_s'd dK_s'd) */
                    float *dkr = dk + ((size_t)bh * Tk + s) * D;
                    for (int d = 0; d < D; d++)
                        dkr[d] += K[d] * (dotf(dC + (size_t)d * Dv, vr, Dv) - cs[d]);
                }
                if (dv) {
                    /* C = Σ_s K_s v_sᵀ: dv_s = dCᵀ K_s */
                    float *dvr = dv + ((size_t)bh * Tk + s) * Dv;
                    for (int d = 0; d < D; d++) {
                        float kd = K[d];
                        const float *dCd = dC + (size_t)d * Dv;
                        axpyf(dvr, kd, dCd, Dv);
                    }
                }
            }
        }
        free(C);
    }
}
