/* linear.c — linear attention on the CPU, in linear time and memory, no Tq×Tk matrix
 * (semantics in ops/ops.h, "efficient attention kinds"; efficient attention is efficient.c).
 *
 * Shapes: B batch, NH heads, Tq queries, Tk keys, D query/key width, Dv value width.
 *   q [B, NH, Tq, D], k [B, NH, Tk, D], v [B, NH, Tk, Dv], out [B, NH, Tq, Dv], key_len [B].
 *
 * Linear attention — Katharopoulos et al. 2020, "Transformers are RNNs: Fast Autoregressive
 * Transformers with Linear Attention", eq. 6–9 and §3.3.1. Feature map φ(x) = elu(x) + 1
 * (= x + 1 for x > 0, eˣ for x ≤ 0; φ'(x) = 1 for x > 0, eˣ for x ≤ 0), or the identity
 * (LINEAR_PHI_IDENTITY: φ(x) = x, φ' = 1; the taylor kind's features, below). Per (b, h), with
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
 * Parallel over the B·NH (b, h) pairs; each pair is computed by one thread in a fixed order and
 * owns its slices of out / dq / dk / dv, so the results are race-free and bit-identical for any
 * thread count. Scratch per thread comes from the
 * caller's work (the *_attn_workspace function); nothing is allocated.
 *
 * The features of the taylor kind (first-order Taylor linear attention, Li et al. 2020, "Linear
 * Attention Mechanism: An Efficient Attention for Semantic Segmentation"): l2feature_forward
 * writes φ(x) = [1; x̂], x̂ = x r, r = 1/√(‖x‖² + 1e-12), so that linear attention with the
 * identity map over them weighs key s by φ(q)·φ(k_s) = 1 + q̂·k̂_s. Its backward, with g = dL/dx̂:
 *   ∂x̂_i/∂x_j = r δ_ij − r³ x_i x_j  ⇒  dL/dx = r (g − x̂ (x̂·g)).
 * Parallel over rows, each row by one thread: bit-identical for any thread count. */
#include <math.h>
#include <omp.h>
#include <string.h>

#include "ops/cpu/cpu_internal.h"

#define LINEAR_ATTN_EPS 1e-6f /* the normaliser's guard (den_t = φ(q_t)·z_t + 1e-6) */

/* φ(x) = elu(x) + 1 (LINEAR_PHI_ELU1), or x (LINEAR_PHI_IDENTITY: q, k are features already) */
static inline float phi(float x, int m) {
    return m == LINEAR_PHI_IDENTITY ? x : x > 0.0f ? x + 1.0f : expf(x);
}
/* φ'(x) = 1 for x > 0, eˣ for x ≤ 0 (ELU1); 1 (identity) */
static inline float dphi(float x, int m) {
    return m == LINEAR_PHI_IDENTITY ? 1.0f : x > 0.0f ? 1.0f : expf(x);
}

/* Number of keys visible to query row t (keys 0 .. vis−1); non-decreasing in t. */
static inline int visible_keys(int t, int len, int causal, int Tq, int Tk) {
    if (!causal) return len;
    long lim = (long)t + (Tk - Tq) + 1; /* causal: s ≤ t + (Tk − Tq) */
    if (lim < 0) lim = 0;
    return lim < len ? (int)lim : len;
}

/* S += K vᵀ, z += K for one key: K = φ(k_s) (written into Kbuf). */
static void linear_add_key(float *S, float *z, float *Kbuf, const float *kr, const float *vr,
                           int m, int D, int Dv) {
    for (int d = 0; d < D; d++) Kbuf[d] = phi(kr[d], m);
    for (int d = 0; d < D; d++) {
        float kd = Kbuf[d];
        float *Sd = S + (size_t)d * Dv;
        cpu_axpyf(Sd, kd, vr, Dv); /* S_t = Σ φ(k_s) v_sᵀ */
        z[d] += kd;            /* z_t = Σ φ(k_s) */
    }
}

/* One output row: Qbuf = φ(q_t); o = Sᵀ Q / (Q·z + eps); returns den. Shared by forward and
 * backward so that the recomputed out_t is the forward's, bit for bit. */
static float linear_row(float *o, float *Qbuf, const float *qr, const float *S, const float *z,
                        int m, int D, int Dv) {
    float den = 0.0f;
    for (int d = 0; d < D; d++) {
        Qbuf[d] = phi(qr[d], m);
        den += Qbuf[d] * z[d];
    }
    den += LINEAR_ATTN_EPS; /* den_t = φ(q_t)·z_t + 1e-6 */
    for (int e = 0; e < Dv; e++) o[e] = 0.0f;
    for (int d = 0; d < D; d++) {
        float qd = Qbuf[d];
        const float *Sd = S + (size_t)d * Dv;
        cpu_axpyf(o, qd, Sd, Dv); /* num_t = S_tᵀ φ(q_t) */
    }
    float inv = 1.0f / den;
    for (int e = 0; e < Dv; e++) o[e] *= inv; /* out_t = num_t / den_t */
    return den;
}

/* Floats of work per thread: the backward's S, z, K, Q, gQ, o, den, cc cover the forward's
 * S, z, K, Q. */
static size_t linear_per_thread(int Tq, int D, int Dv) {
    return (size_t)D * Dv + 4 * (size_t)D + (size_t)Dv + 2 * (size_t)Tq + 1;
}

size_t cpu_linear_attn_workspace(int B, int NH, int Tq, int Tk, int D, int Dv) {
    (void)B, (void)NH, (void)Tk;
    return (size_t)omp_get_max_threads() * linear_per_thread(Tq, D, Dv);
}

/* Linear attention forward (Katharopoulos et al. 2020 eq. 6; causal: eq. 8–9 as prefix sums).
 * out[B,NH,Tq,Dv] is overwritten. Per thread: one D×Dv state S and z, K, Q buffers. */
void cpu_linear_attn_forward(float *out, const float *q, const float *k, const float *v,
                             const int *key_len, int causal, int phi_m, int B, int NH, int Tq,
                             int Tk, int D, int Dv, float *work) {
    int BH = B * NH;
#pragma omp parallel if ((long)BH * (Tq + Tk) * D * Dv > 65536)
    {
        float *S = work + omp_get_thread_num() * linear_per_thread(Tq, D, Dv); /* [D,Dv] */
        float *z = S + (size_t)D * Dv;                                             /* [D] */
        float *Kbuf = z + D, *Qbuf = Kbuf + D;                                     /* [D] */
#pragma omp for schedule(dynamic, 1)
        for (int bh = 0; bh < BH; bh++) {
            int len = cpu_key_count(key_len, bh / NH, Tk);
            const float *qb = q + (size_t)bh * Tq * D;  /* [Tq, D] */
            const float *kb = k + (size_t)bh * Tk * D;  /* [Tk, D] */
            const float *vb = v + (size_t)bh * Tk * Dv; /* [Tk, Dv] */
            float *ob = out + (size_t)bh * Tq * Dv;     /* [Tq, Dv] */
            memset(S, 0, sizeof(float) * ((size_t)D * Dv + D));
            int sp = 0; /* keys 0 .. sp−1 are in S, z */
            for (int t = 0; t < Tq; t++) {
                int vis = visible_keys(t, len, causal, Tq, Tk);
                for (; sp < vis; sp++)
                    linear_add_key(S, z, Kbuf, kb + (size_t)sp * D, vb + (size_t)sp * Dv, phi_m,
                                   D, Dv);
                float *o = ob + (size_t)t * Dv;
                if (vis == 0) { /* no visible key: out = 0 */
                    memset(o, 0, sizeof(float) * Dv);
                    continue;
                }
                linear_row(o, Qbuf, qb + (size_t)t * D, S, z, phi_m, D, Dv);
            }
        }
    }
}

/* One decoding step of causal linear attention (the recurrent form, Katharopoulos et al. 2020
 * §3.4): the new key joins each row's running state, then the query reads it. Uses the same
 * linear_add_key and linear_row as the forward, so out equals the causal forward's row t bit for
 * bit. Parallel over the B·NH (row, head) pairs, each owning its state. */
void cpu_linear_attn_step(float *out, float *state, float *zsum, const float *q, const float *k,
                          const float *v, int phi_m, int B, int NH, int D, int Dv) {
    int BH = B * NH;
#pragma omp parallel if ((long)BH * D * Dv > 65536)
    {
        float Kbuf[D > 0 ? D : 1], Qbuf[D > 0 ? D : 1];
#pragma omp for
        for (int bh = 0; bh < BH; bh++) {
            float *S = state + (size_t)bh * D * Dv, *z = zsum + (size_t)bh * D;
            linear_add_key(S, z, Kbuf, k + (size_t)bh * D, v + (size_t)bh * Dv, phi_m, D, Dv);
            linear_row(out + (size_t)bh * Dv, Qbuf, q + (size_t)bh * D, S, z, phi_m, D, Dv);
        }
    }
}

/* The summary of the visible keys (ops.h linear_attn_summary): state = Σ φ(k_s) v_sᵀ,
 * zsum = Σ φ(k_s) over s < L in order, by linear_add_key as the forward builds them. Parallel
 * over the B·NH pairs, each owning its state. */
void cpu_linear_attn_summary(float *state, float *zsum, const float *k, const float *v,
                             const int *key_len, int phi_m, int B, int NH, int Tk, int D,
                             int Dv) {
    int BH = B * NH;
#pragma omp parallel if ((long)BH * Tk * D * Dv > 65536)
    {
        float Kbuf[D > 0 ? D : 1];
#pragma omp for
        for (int bh = 0; bh < BH; bh++) {
            int len = cpu_key_count(key_len, bh / NH, Tk);
            float *S = state + (size_t)bh * D * Dv, *z = zsum + (size_t)bh * D;
            memset(S, 0, sizeof(float) * (size_t)D * Dv);
            memset(z, 0, sizeof(float) * (size_t)D);
            for (int s = 0; s < len; s++)
                linear_add_key(S, z, Kbuf, k + ((size_t)bh * Tk + s) * D,
                               v + ((size_t)bh * Tk + s) * Dv, phi_m, D, Dv);
        }
    }
}

/* Each query reads the summary by linear_row, as the forward's rows do (ops.h
 * linear_attn_read). */
void cpu_linear_attn_read(float *out, const float *q, const float *state, const float *zsum,
                          int phi_m, int B, int NH, int Tq, int D, int Dv) {
    int BH = B * NH;
#pragma omp parallel if ((long)BH * Tq * D * Dv > 65536)
    {
        float Qbuf[D > 0 ? D : 1];
#pragma omp for
        for (int bh = 0; bh < BH; bh++)
            for (int t = 0; t < Tq; t++)
                linear_row(out + ((size_t)bh * Tq + t) * Dv, Qbuf, q + ((size_t)bh * Tq + t) * D,
                           state + (size_t)bh * D * Dv, zsum + (size_t)bh * D, phi_m, D, Dv);
    }
}

/* The read's backward (ops.h linear_attn_read_backward): per row, out_t and den_t recomputed
 * by linear_row; dq_t as pass 1 of the backward below; dstate, dzsum take the row's part of
 * R_s, r_s (dL/dφ(k_s) = R v_s − r, so dzsum holds −r). Parallel over the pairs. */
void cpu_linear_attn_read_backward(float *dq, float *dstate, float *dzsum, const float *dout,
                                   const float *q, const float *state, const float *zsum,
                                   int phi_m, int B, int NH, int Tq, int D, int Dv) {
    int BH = B * NH;
#pragma omp parallel if ((long)BH * Tq * D * Dv > 65536)
    {
        float Qbuf[D > 0 ? D : 1], o[Dv > 0 ? Dv : 1];
#pragma omp for
        for (int bh = 0; bh < BH; bh++) {
            const float *S = state + (size_t)bh * D * Dv, *z = zsum + (size_t)bh * D;
            float *dS = dstate + (size_t)bh * D * Dv, *dz = dzsum + (size_t)bh * D;
            for (int t = 0; t < Tq; t++) {
                const float *qr = q + ((size_t)bh * Tq + t) * D;
                const float *g = dout + ((size_t)bh * Tq + t) * Dv;
                float dn = linear_row(o, Qbuf, qr, S, z, phi_m, D, Dv);
                float gdo = cpu_dotf(g, o, Dv); /* g_t · out_t */
                float w = 1.0f / dn, c = gdo / dn;
                if (dq) { /* dL/dQ = (S g − z (g·out)) / den; dq = dL/dQ ⊙ φ'(q) */
                    float *dqr = dq + ((size_t)bh * Tq + t) * D;
                    for (int d = 0; d < D; d++)
                        dqr[d] += (cpu_dotf(S + (size_t)d * Dv, g, Dv) - z[d] * gdo) / dn *
                                  dphi(qr[d], phi_m);
                }
                for (int d = 0; d < D; d++) { /* dS += φ(q) gᵀ / den, dz −= φ(q) c */
                    cpu_axpyf(dS + (size_t)d * Dv, Qbuf[d] * w, g, Dv);
                    dz[d] -= Qbuf[d] * c;
                }
            }
        }
    }
}

/* The summary's backward (ops.h linear_attn_summary_backward): per visible key, both
 * contributions are computed from the inputs before either is added, so dk may be dv. */
void cpu_linear_attn_summary_backward(float *dk, float *dv, const float *dstate,
                                      const float *dzsum, const float *k, const float *v,
                                      const int *key_len, int phi_m, int B, int NH, int Tk, int D,
                                      int Dv) {
    if (!dk && !dv) return;
    int BH = B * NH;
#pragma omp parallel if ((long)BH * Tk * D * Dv > 65536)
    {
        float gk[D > 0 ? D : 1], gv[Dv > 0 ? Dv : 1];
#pragma omp for
        for (int bh = 0; bh < BH; bh++) {
            int len = cpu_key_count(key_len, bh / NH, Tk);
            const float *dS = dstate + (size_t)bh * D * Dv, *dz = dzsum + (size_t)bh * D;
            for (int s = 0; s < len; s++) {
                const float *kr = k + ((size_t)bh * Tk + s) * D;
                const float *vr = v + ((size_t)bh * Tk + s) * Dv;
                for (int d = 0; d < D; d++) /* dL/dφ(k_s) = dS v_s + dz, times φ'(k_s) */
                    gk[d] = (cpu_dotf(dS + (size_t)d * Dv, vr, Dv) + dz[d]) * dphi(kr[d], phi_m);
                for (int e = 0; e < Dv; e++) gv[e] = 0.0f;
                for (int d = 0; d < D; d++) /* dv_s = dSᵀ φ(k_s) */
                    cpu_axpyf(gv, phi(kr[d], phi_m), dS + (size_t)d * Dv, Dv);
                if (dk)
                    for (int d = 0; d < D; d++) dk[((size_t)bh * Tk + s) * D + d] += gk[d];
                if (dv)
                    for (int e = 0; e < Dv; e++) dv[((size_t)bh * Tk + s) * Dv + e] += gv[e];
            }
        }
    }
}

/* Linear attention backward (memory-light, Katharopoulos et al. 2020 §3.3.1 with the normaliser):
 * pass 1 walks forward in time rebuilding S_t, z_t to give dq and the per-row den_t, c_t;
 * pass 2 walks backward in time accumulating R_s, r_s to give dk, dv. Accumulates (+=) into
 * dq[B,NH,Tq,D], dk[B,NH,Tk,D], dv[B,NH,Tk,Dv], each of which may be NULL. */
void cpu_linear_attn_backward(float *dq, float *dk, float *dv, const float *dout, const float *q,
                              const float *k, const float *v, const int *key_len, int causal,
                              int phi_m, int B, int NH, int Tq, int Tk, int D, int Dv,
                              float *work) {
    if (!dq && !dk && !dv) return;
    int BH = B * NH;
#pragma omp parallel if ((long)BH * (Tq + Tk) * D * Dv > 65536)
    {
        size_t nst = (size_t)D * Dv + D; /* S,z (pass 1) then R,r (pass 2) */
        float *S = work + omp_get_thread_num() * linear_per_thread(Tq, D, Dv);
        float *z = S + (size_t)D * Dv;            /* [D] */
        float *Kbuf = S + nst, *Qbuf = Kbuf + D;  /* [D] */
        float *gQ = Qbuf + D;                     /* [D]  dL/dφ(q_t) */
        float *o = gQ + D;                        /* [Dv] out_t recomputed */
        float *den = o + Dv, *cc = den + Tq;      /* [Tq] den_t, c_t = (g_t·out_t)/den_t */
        float *R = S, *r = z;                     /* pass 2 reuses the state */
#pragma omp for schedule(dynamic, 1)
        for (int bh = 0; bh < BH; bh++) {
            int len = cpu_key_count(key_len, bh / NH, Tk);
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
                    linear_add_key(S, z, Kbuf, kb + (size_t)sp * D, vb + (size_t)sp * Dv, phi_m,
                                   D, Dv);
                if (vis == 0) {
                    den[t] = 0.0f;
                    cc[t] = 0.0f;
                    continue;
                }
                const float *qr = qb + (size_t)t * D;
                const float *g = gb + (size_t)t * Dv;
                float dn = linear_row(o, Qbuf, qr, S, z, phi_m, D, Dv);
                float gdo = cpu_dotf(g, o, Dv); /* g_t · out_t */
                den[t] = dn;
                cc[t] = gdo / dn;
                if (dq) {
                    /* out_t = S_tᵀ Q / den_t, den_t = Q·z_t + eps:
                     * dL/dQ = (S_t g − z_t (g·out_t)) / den_t; dq = dL/dQ ⊙ φ'(q_t) */
                    float *dqr = dq + ((size_t)bh * Tq + t) * D;
                    for (int d = 0; d < D; d++)
                        gQ[d] = (cpu_dotf(S + (size_t)d * Dv, g, Dv) - z[d] * gdo) / dn;
                    for (int d = 0; d < D; d++) dqr[d] += gQ[d] * dphi(qr[d], phi_m);
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
                        float qd = phi(qr[d], phi_m);
                        float qw = qd * w;
                        float *Rd = R + (size_t)d * Dv;
                        cpu_axpyf(Rd, qw, g, Dv);
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
                        dkr[d] += (cpu_dotf(R + (size_t)d * Dv, vr, Dv) - r[d]) *
                                  dphi(kr[d], phi_m);
                }
                if (dv) {
                    /* num_t += (φ(q_t)·φ(k_s)) v_s: dv_s = Rᵀ φ(k_s) */
                    float *dvr = dv + ((size_t)bh * Tk + s) * Dv;
                    for (int d = 0; d < D; d++) Kbuf[d] = phi(kr[d], phi_m);
                    for (int e = 0; e < Dv; e++) o[e] = 0.0f;
                    for (int d = 0; d < D; d++) {
                        float kd = Kbuf[d];
                        const float *Rd = R + (size_t)d * Dv;
                        cpu_axpyf(o, kd, Rd, Dv);
                    }
                    for (int e = 0; e < Dv; e++) dvr[e] += o[e];
                }
            }
        }
    }
}

/* ---------------------------------------------------------------------------------------- */
/* the taylor kind's features                                                               */

#define L2FEATURE_EPS 1e-12 /* the norm's guard: r = 1/√(‖x‖² + 1e-12) */

/* r = 1/√(‖x‖² + 1e-12), the squared norm summed in double in order d = 0..D−1 */
static inline float l2_rnorm(const float *x, int D) {
    double ss = 0.0;
    for (int d = 0; d < D; d++) ss += (double)x[d] * x[d];
    return (float)(1.0 / sqrt(ss + L2FEATURE_EPS));
}

void cpu_l2feature_forward(float *out, const float *inp, int N, int D) {
#pragma omp parallel for if ((long)N * D > 65536)
    for (int n = 0; n < N; n++) {
        const float *x = inp + (size_t)n * D;
        float *o = out + (size_t)n * (D + 1);
        float r = l2_rnorm(x, D);
        o[0] = 1.0f;                                /* the constant term of 1 + q̂·k̂ */
        for (int d = 0; d < D; d++) o[1 + d] = x[d] * r; /* x̂ = x / ‖x‖₂ */
    }
}

void cpu_l2feature_backward(float *dinp, const float *dout, const float *inp, int N, int D) {
#pragma omp parallel for if ((long)N * D > 65536)
    for (int n = 0; n < N; n++) {
        const float *x = inp + (size_t)n * D, *g = dout + (size_t)n * (D + 1) + 1; /* dL/dx̂ */
        float *dx = dinp + (size_t)n * D;
        float r = l2_rnorm(x, D);
        double xg = 0.0;
        for (int d = 0; d < D; d++) xg += (double)(x[d] * r) * g[d]; /* x̂·g */
        float c = (float)xg;
        /* o[1 + d] = x[d] · r, r = (‖x‖² + ε)^(−1/2):  dx += r (g − x̂ (x̂·g)) */
        for (int d = 0; d < D; d++) dx[d] += r * (g[d] - x[d] * r * c);
    }
}
