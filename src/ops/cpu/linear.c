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
 * the normaliser terms z_t and r_s). Since g_t · out_t = Q_t · (S_t g_t) / den_t, the backward
 * needs no out_t: it keeps den_t and c_t per row, φ(q), φ(k) of the pair and two D×Dv states
 * per thread (S_tᵀ, then R_s both ways): nothing of size Tq×Tk or T·D·Dv.
 *
 * Parallel over the B·NH (b, h) pairs; each pair is computed by one thread in a fixed order and
 * owns its slices of out / dq / dk / dv, so the results are race-free and bit-identical for any
 * thread count. Scratch per thread comes from the caller's work (the *_attn_workspace function:
 * the D×Dv state, φ(q) and φ(k) of the pair, and a few rows); nothing is allocated.
 *
 * Every state update and every read goes through two kernels, outer_add (S += Σ_i a_i v_iᵀ, the
 * rows i in order) and read_rows (o_i = Sᵀ a_i, the sum over d in order), which keep partial sums
 * in registers: a state element is loaded and stored once per group of keys, and an output once
 * per row. The rows (keys) that see the same keys (rows) go through them together. Each
 * element's sum is taken in the same order however the keys and rows are grouped, so the
 * forward, the recurrent step and the summary split agree bit for bit. φ goes through cpu_expf,
 * so that its loops vectorise.
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
#define LINEAR_BLOCK 16       /* columns of S (floats) per register block of outer_add, read_rows */
#define LINEAR_ROWS 4         /* rows per register block of read_rows */
#define LINEAR_WIDE 64        /* columns per register block of read_rows' rows left over */

/* y = φ(x) over n floats: elu(x) + 1 (LINEAR_PHI_ELU1) through cpu_expf, or x (identity). */
static inline void phi_vec(float *y, const float *x, int m, int n) {
    if (m == LINEAR_PHI_IDENTITY) {
        memcpy(y, x, sizeof(float) * (size_t)n);
        return;
    }
#pragma omp simd
    for (int i = 0; i < n; i++)
        y[i] = x[i] > 0.0f ? x[i] + 1.0f : cpu_expf(x[i] < 0.0f ? x[i] : 0.0f);
}

/* φ'(x) given x and φ(x): 1 for x > 0, eˣ = φ(x) for x ≤ 0 (ELU1); 1 (identity). */
static inline float dphi(float x, float phix, int m) {
    return m == LINEAR_PHI_IDENTITY || x > 0.0f ? 1.0f : phix;
}

/* Number of keys visible to query row t (keys 0 .. vis−1); non-decreasing in t. */
static inline int visible_keys(int t, int len, int causal, int Tq, int Tk) {
    if (!causal) return len;
    long lim = (long)t + (Tk - Tq) + 1; /* causal: s ≤ t + (Tk − Tq) */
    if (lim < 0) lim = 0;
    return lim < len ? (int)lim : len;
}

/* S[D, Dv] += Σ_{i<n} a_i v_iᵀ, a [n, D] (row stride D), v [n, Dv] (row stride Dv): each element
 * S_de gets a_0d v_0e, then a_1d v_1e, … in turn, as n calls with one row each would give it. */
static void outer_add(float *S, const float *a, const float *v, int n, int D, int Dv) {
    if (n <= 0) return;
    if (n == 1) { /* one row: each element once, straight from memory to memory */
        for (int d = 0; d < D; d++) cpu_axpyf(S + (size_t)d * Dv, a[d], v, Dv);
        return;
    }
    int e0 = 0;
    for (; e0 + LINEAR_BLOCK <= Dv; e0 += LINEAR_BLOCK)
        for (int d = 0; d < D; d++) {
            float *Sd = S + (size_t)d * Dv + e0, acc[LINEAR_BLOCK];
#pragma omp simd
            for (int j = 0; j < LINEAR_BLOCK; j++) acc[j] = Sd[j];
            for (int i = 0; i < n; i++) {
                const float ad = a[(size_t)i * D + d], *vi = v + (size_t)i * Dv + e0;
#pragma omp simd
                for (int j = 0; j < LINEAR_BLOCK; j++) acc[j] += ad * vi[j];
            }
#pragma omp simd
            for (int j = 0; j < LINEAR_BLOCK; j++) Sd[j] = acc[j];
        }
    if (e0 < Dv) /* the last columns, fewer than a block */
        for (int d = 0; d < D; d++)
            for (int i = 0; i < n; i++)
                cpu_axpyf(S + (size_t)d * Dv + e0, a[(size_t)i * D + d], v + (size_t)i * Dv + e0,
                          Dv - e0);
}

/* o_i = Sᵀ a_i for i < n: o [n, Dv] overwritten (row stride Dv), a [n, D], S [D, Dv]; each
 * element is Σ_d a_id S_de taken from 0 in the order d = 0 .. D−1, whatever n. Rows go
 * LINEAR_ROWS at a time, each block of columns summed in registers (a chain per row); a row
 * left over is summed LINEAR_WIDE columns at a time (a chain per 16 columns), and the columns
 * after the last such block in memory. */
static void read_rows(float *o, const float *a, const float *S, int n, int D, int Dv) {
    int i0 = 0;
    for (; i0 + LINEAR_ROWS <= n; i0 += LINEAR_ROWS) {
        const float *a0 = a + (size_t)i0 * D, *a1 = a0 + D, *a2 = a1 + D, *a3 = a2 + D;
        float *o0 = o + (size_t)i0 * Dv, *o1 = o0 + Dv, *o2 = o1 + Dv, *o3 = o2 + Dv;
        int e0 = 0;
        for (; e0 + LINEAR_BLOCK <= Dv; e0 += LINEAR_BLOCK) {
            float c0[LINEAR_BLOCK] = {0}, c1[LINEAR_BLOCK] = {0}, c2[LINEAR_BLOCK] = {0},
                  c3[LINEAR_BLOCK] = {0};
            for (int d = 0; d < D; d++) {
                const float *Sd = S + (size_t)d * Dv + e0;
                const float x0 = a0[d], x1 = a1[d], x2 = a2[d], x3 = a3[d];
#pragma omp simd
                for (int j = 0; j < LINEAR_BLOCK; j++) {
                    c0[j] += x0 * Sd[j];
                    c1[j] += x1 * Sd[j];
                    c2[j] += x2 * Sd[j];
                    c3[j] += x3 * Sd[j];
                }
            }
            memcpy(o0 + e0, c0, sizeof c0), memcpy(o1 + e0, c1, sizeof c1);
            memcpy(o2 + e0, c2, sizeof c2), memcpy(o3 + e0, c3, sizeof c3);
        }
        if (e0 < Dv)
            for (int r = 0; r < LINEAR_ROWS; r++) {
                float *orow = o + (size_t)(i0 + r) * Dv;
                const float *arow = a + (size_t)(i0 + r) * D;
                memset(orow + e0, 0, sizeof(float) * (size_t)(Dv - e0));
                for (int d = 0; d < D; d++)
                    cpu_axpyf(orow + e0, arow[d], S + (size_t)d * Dv + e0, Dv - e0);
            }
    }
    for (int i = i0; i < n; i++) { /* the last rows, fewer than LINEAR_ROWS */
        const float *ai = a + (size_t)i * D;
        float *oi = o + (size_t)i * Dv;
        int e0 = 0;
        for (; e0 + LINEAR_WIDE <= Dv; e0 += LINEAR_WIDE) { /* LINEAR_WIDE / 16 chains */
            float c[LINEAR_WIDE] = {0};
            for (int d = 0; d < D; d++) {
                const float *Sd = S + (size_t)d * Dv + e0, x = ai[d];
#pragma omp simd
                for (int j = 0; j < LINEAR_WIDE; j++) c[j] += x * Sd[j];
            }
            memcpy(oi + e0, c, sizeof c);
        }
        if (e0 < Dv) {
            memset(oi + e0, 0, sizeof(float) * (size_t)(Dv - e0));
            for (int d = 0; d < D; d++)
                cpu_axpyf(oi + e0, ai[d], S + (size_t)d * Dv + e0, Dv - e0);
        }
    }
}

/* z[D] += Σ_{i<n} w·a_i (w = 1: z_t = Σ φ(k_s)), the rows in order. */
static inline void add_rows(float *z, const float *a, float w, int n, int D) {
    for (int i = 0; i < n; i++)
#pragma omp simd
        for (int d = 0; d < D; d++) z[d] += a[(size_t)i * D + d] * w;
}

/* den_t = φ(q_t)·z_t + 1e-6, the sum over d in order, of one row Q = φ(q_t) [D]. */
static inline float row_den(const float *Q, const float *z, int D) {
    float dn = 0.0f;
    for (int d = 0; d < D; d++) dn += Q[d] * z[d];
    return dn + LINEAR_ATTN_EPS;
}

/* Normalises rows o_i = num_i / den_i (row_den) for the n rows of Q = φ(q) [n, D]; den [n] gets
 * den_i when not NULL. */
static void normalise_rows(float *o, float *den, const float *Q, const float *z, int n, int D,
                           int Dv) {
    for (int i = 0; i < n; i++) {
        float dn = row_den(Q + (size_t)i * D, z, D);
        float inv = 1.0f / dn, *oi = o + (size_t)i * Dv;
#pragma omp simd
        for (int e = 0; e < Dv; e++) oi[e] *= inv; /* out_t = num_t / den_t */
        if (den) den[i] = dn;
    }
}

/* The rows t0 .. t1−1 of one (b, h) pair after the state holds keys 0 .. vis−1 (vis > 0):
 * out = S_tᵀ φ(q_t) / den_t, from Q = φ(q) of those rows [t1 − t0, D]. */
static inline void linear_rows(float *o, float *den, const float *Q, const float *S,
                               const float *z, int n, int D, int Dv) {
    read_rows(o, Q, S, n, D, Dv);
    normalise_rows(o, den, Q, z, n, D, Dv);
}

/* Floats of work per thread: S and z [D·Dv + D], φ(q) [Tq·D], φ(k) [Tk·D]; the backward's
 * second state [D·Dv] (Rᵀ), den, c [Tq] and LINEAR_ROWS rows [D], [Dv]. */
static size_t linear_per_thread(int Tq, int Tk, int D, int Dv) {
    return 2 * (size_t)D * Dv + (size_t)D + (size_t)(Tq + Tk) * D + 2 * (size_t)Tq +
           LINEAR_ROWS * ((size_t)D + (size_t)Dv);
}

static size_t cpu_linear_attn_workspace(int B, int NH, int Tq, int Tk, int D, int Dv) {
    (void)B, (void)NH;
    return (size_t)omp_get_max_threads() * linear_per_thread(Tq, Tk, D, Dv);
}

/* Linear attention forward (Katharopoulos et al. 2020 eq. 6; causal: eq. 8–9 as prefix sums).
 * out[B,NH,Tq,Dv] is overwritten. The rows that see the same keys are read together. */
static void cpu_linear_attn_forward(float *out, const float *q, const float *k, const float *v,
                                    const int *key_len, int causal, int phi_m, int B, int NH,
                                    int Tq, int Tk, int D, int Dv, float *work) {
    int BH = B * NH;
#pragma omp parallel if ((long)BH * (Tq + Tk) * D * Dv > 65536)
    {
        float *S = work + omp_get_thread_num() * linear_per_thread(Tq, Tk, D, Dv); /* [D,Dv] */
        float *z = S + (size_t)D * Dv;                                               /* [D] */
        float *Q = z + D, *K = Q + (size_t)Tq * D; /* φ(q) [Tq,D], φ(k) [Tk,D] */
#pragma omp for schedule(dynamic, 1)
        for (int bh = 0; bh < BH; bh++) {
            int len = cpu_key_count(key_len, bh / NH, Tk);
            const float *vb = v + (size_t)bh * Tk * Dv; /* [Tk, Dv] */
            float *ob = out + (size_t)bh * Tq * Dv;     /* [Tq, Dv] */
            phi_vec(Q, q + (size_t)bh * Tq * D, phi_m, Tq * D);
            phi_vec(K, k + (size_t)bh * Tk * D, phi_m, len * D);
            memset(S, 0, sizeof(float) * ((size_t)D * Dv + D));
            int sp = 0; /* keys 0 .. sp−1 are in S, z */
            for (int t = 0; t < Tq;) {
                int vis = visible_keys(t, len, causal, Tq, Tk), t1 = t + 1;
                while (t1 < Tq && visible_keys(t1, len, causal, Tq, Tk) == vis) t1++;
                if (vis == 0) { /* no visible key: out = 0 */
                    memset(ob + (size_t)t * Dv, 0, sizeof(float) * (size_t)(t1 - t) * Dv);
                } else {
                    /* S_t = Σ φ(k_s) v_sᵀ, z_t = Σ φ(k_s) */
                    outer_add(S, K + (size_t)sp * D, vb + (size_t)sp * Dv, vis - sp, D, Dv);
                    add_rows(z, K + (size_t)sp * D, 1.0f, vis - sp, D);
                    sp = vis;
                    linear_rows(ob + (size_t)t * Dv, NULL, Q + (size_t)t * D, S, z, t1 - t, D,
                                Dv);
                }
                t = t1;
            }
        }
    }
}

/* One decoding step of causal linear attention (the recurrent form, Katharopoulos et al. 2020
 * §3.4): the new key joins each row's running state, then the query reads it, through the
 * forward's kernels, so out equals the causal forward's row t bit for bit. Parallel over the
 * B·NH (row, head) pairs, each owning its state. */
static void cpu_linear_attn_step(float *out, float *state, float *zsum, const float *q,
                                 const float *k, const float *v, int phi_m, int B, int NH, int D,
                                 int Dv) {
    int BH = B * NH;
#pragma omp parallel if ((long)BH * D * Dv > 65536)
    {
        float Kf[D > 0 ? D : 1], Qf[D > 0 ? D : 1];
#pragma omp for
        for (int bh = 0; bh < BH; bh++) {
            float *S = state + (size_t)bh * D * Dv, *z = zsum + (size_t)bh * D;
            phi_vec(Kf, k + (size_t)bh * D, phi_m, D);
            phi_vec(Qf, q + (size_t)bh * D, phi_m, D);
            outer_add(S, Kf, v + (size_t)bh * Dv, 1, D, Dv);
            add_rows(z, Kf, 1.0f, 1, D);
            linear_rows(out + (size_t)bh * Dv, NULL, Qf, S, z, 1, D, Dv);
        }
    }
}

/* The summary of the visible keys (ops.h linear_attn_summary): state = Σ φ(k_s) v_sᵀ,
 * zsum = Σ φ(k_s) over s < L in order, as the forward builds them. Parallel over the B·NH
 * pairs, each owning its state; φ(k) is taken a block of keys at a time. */
static void cpu_linear_attn_summary(float *state, float *zsum, const float *k, const float *v,
                                    const int *key_len, int phi_m, int B, int NH, int Tk, int D,
                                    int Dv) {
    int BH = B * NH;
    enum { KEYS = 32 };
#pragma omp parallel if ((long)BH * Tk * D * Dv > 65536)
    {
        float Kf[KEYS * (D > 0 ? D : 1)];
#pragma omp for
        for (int bh = 0; bh < BH; bh++) {
            int len = cpu_key_count(key_len, bh / NH, Tk);
            float *S = state + (size_t)bh * D * Dv, *z = zsum + (size_t)bh * D;
            memset(S, 0, sizeof(float) * (size_t)D * Dv);
            memset(z, 0, sizeof(float) * (size_t)D);
            for (int s0 = 0; s0 < len; s0 += KEYS) {
                int n = len - s0 < KEYS ? len - s0 : KEYS;
                phi_vec(Kf, k + ((size_t)bh * Tk + s0) * D, phi_m, n * D);
                outer_add(S, Kf, v + ((size_t)bh * Tk + s0) * Dv, n, D, Dv);
                add_rows(z, Kf, 1.0f, n, D);
            }
        }
    }
}

/* Each query reads the summary as the forward's rows do (ops.h linear_attn_read). */
static void cpu_linear_attn_read(float *out, const float *q, const float *state, const float *zsum,
                                 int phi_m, int B, int NH, int Tq, int D, int Dv) {
    int BH = B * NH;
#pragma omp parallel if ((long)BH * Tq * D * Dv > 65536)
    {
        float Qf[LINEAR_ROWS * (D > 0 ? D : 1)];
#pragma omp for
        for (int bh = 0; bh < BH; bh++)
            for (int t = 0; t < Tq; t += LINEAR_ROWS) {
                int n = Tq - t < LINEAR_ROWS ? Tq - t : LINEAR_ROWS;
                phi_vec(Qf, q + ((size_t)bh * Tq + t) * D, phi_m, n * D);
                linear_rows(out + ((size_t)bh * Tq + t) * Dv, NULL, Qf, state + (size_t)bh * D * Dv,
                            zsum + (size_t)bh * D, n, D, Dv);
            }
    }
}

/* dL/dq_t of one row from out_t, den_t: dL/dQ = (S g − z (g·out)) / den, dq += dL/dQ ⊙ φ'(q);
 * returns c_t = (g·out_t) / den_t. */
static float row_dq(float *dq, const float *qr, const float *Qr, const float *g, const float *o,
                    float dn, const float *S, const float *z, int phi_m, int D, int Dv) {
    float gdo = cpu_dotf(g, o, Dv); /* g_t · out_t */
    if (dq)
        for (int d = 0; d < D; d++)
            dq[d] += (cpu_dotf(S + (size_t)d * Dv, g, Dv) - z[d] * gdo) / dn *
                     dphi(qr[d], Qr[d], phi_m);
    return gdo / dn;
}

/* The read's backward (ops.h linear_attn_read_backward): per row, out_t and den_t recomputed
 * as the read computes them; dq_t by row_dq; dstate, dzsum take the row's part of R_s, r_s
 * (dL/dφ(k_s) = R v_s − r, so dzsum holds −r). Parallel over the pairs. */
static void cpu_linear_attn_read_backward(float *dq, float *dstate, float *dzsum, const float *dout,
                                          const float *q, const float *state, const float *zsum,
                                          int phi_m, int B, int NH, int Tq, int D, int Dv) {
    int BH = B * NH;
#pragma omp parallel if ((long)BH * Tq * D * Dv > 65536)
    {
        float Qf[D > 0 ? D : 1], Qw[D > 0 ? D : 1], o[Dv > 0 ? Dv : 1];
#pragma omp for
        for (int bh = 0; bh < BH; bh++) {
            const float *S = state + (size_t)bh * D * Dv, *z = zsum + (size_t)bh * D;
            float *dS = dstate + (size_t)bh * D * Dv, *dz = dzsum + (size_t)bh * D;
            for (int t = 0; t < Tq; t++) {
                const float *qr = q + ((size_t)bh * Tq + t) * D;
                const float *g = dout + ((size_t)bh * Tq + t) * Dv;
                float dn;
                phi_vec(Qf, qr, phi_m, D);
                linear_rows(o, &dn, Qf, S, z, 1, D, Dv);
                float c = row_dq(dq ? dq + ((size_t)bh * Tq + t) * D : NULL, qr, Qf, g, o, dn, S,
                                 z, phi_m, D, Dv);
                float w = 1.0f / dn;
#pragma omp simd
                for (int d = 0; d < D; d++) Qw[d] = Qf[d] * w;
                outer_add(dS, Qw, g, 1, D, Dv); /* dS += φ(q) gᵀ / den */
                add_rows(dz, Qf, -c, 1, D);      /* dz −= φ(q) c */
            }
        }
    }
}

/* dL/dk_s and dL/dv_s of one key from R (= dS) and r (= −dz): dL/dφ(k_s) = R v_s − r,
 * dk += (R v_s − r) ⊙ φ'(k_s), dv += Rᵀ φ(k_s); both computed before either is added, so dk may
 * be dv. gv: [Dv] scratch. */
static void key_grads(float *dk, float *dv, float *gv, const float *kr, const float *Kr,
                      const float *vr, const float *R, const float *r, float rsign, int phi_m,
                      int D, int Dv) {
    float gk[D > 0 ? D : 1];
    if (dk)
        for (int d = 0; d < D; d++)
            gk[d] = (cpu_dotf(R + (size_t)d * Dv, vr, Dv) + rsign * r[d]) *
                    dphi(kr[d], Kr[d], phi_m);
    if (dv) read_rows(gv, Kr, R, 1, D, Dv);
    if (dk) {
#pragma omp simd
        for (int d = 0; d < D; d++) dk[d] += gk[d];
    }
    if (dv) {
#pragma omp simd
        for (int e = 0; e < Dv; e++) dv[e] += gv[e];
    }
}

/* The summary's backward (ops.h linear_attn_summary_backward), per visible key by key_grads. */
static void cpu_linear_attn_summary_backward(float *dk, float *dv, const float *dstate,
                                             const float *dzsum, const float *k, const float *v,
                                             const int *key_len, int phi_m, int B, int NH, int Tk,
                                             int D, int Dv) {
    if (!dk && !dv) return;
    int BH = B * NH;
#pragma omp parallel if ((long)BH * Tk * D * Dv > 65536)
    {
        float Kf[D > 0 ? D : 1], gv[Dv > 0 ? Dv : 1];
#pragma omp for
        for (int bh = 0; bh < BH; bh++) {
            int len = cpu_key_count(key_len, bh / NH, Tk);
            const float *dS = dstate + (size_t)bh * D * Dv, *dz = dzsum + (size_t)bh * D;
            for (int s = 0; s < len; s++) {
                size_t ks = (size_t)bh * Tk + s;
                phi_vec(Kf, k + ks * D, phi_m, D);
                key_grads(dk ? dk + ks * D : NULL, dv ? dv + ks * Dv : NULL, gv, k + ks * D, Kf,
                          v + ks * Dv, dS, dz, 1.0f, phi_m, D, Dv);
            }
        }
    }
}

/* Linear attention backward (memory-light, Katharopoulos et al. 2020 §3.3.1 with the normaliser):
 * pass 1 walks forward in time rebuilding S_t, z_t to give dq and the per-row den_t, c_t;
 * pass 2 walks backward in time accumulating R_s, r_s to give dk, dv. Accumulates (+=) into
 * dq[B,NH,Tq,D], dk[B,NH,Tk,D], dv[B,NH,Tk,Dv], each of which may be NULL.
 * Pass 1 keeps S_t transposed, [Dv, D], so that u_t = S_t g_t is a read (read_rows) and not D dot
 * products; g_t·out_t = φ(q_t)·u_t / den_t needs no out_t. Pass 2 keeps R_s both ways: R [D, Dv]
 * for dv_s = Rᵀ φ(k_s) and Rᵀ [Dv, D] for R v_s. */
static void cpu_linear_attn_backward(float *dq, float *dk, float *dv, const float *dout,
                                     const float *q, const float *k, const float *v,
                                     const int *key_len, int causal, int phi_m, int B, int NH,
                                     int Tq, int Tk, int D, int Dv, float *work) {
    if (!dq && !dk && !dv) return;
    int BH = B * NH;
#pragma omp parallel if ((long)BH * (Tq + Tk) * D * Dv > 65536)
    {
        float *St = work + omp_get_thread_num() * linear_per_thread(Tq, Tk, D, Dv); /* [Dv,D] */
        float *Rt = St + (size_t)D * Dv;                 /* [Dv, D] pass 2's Rᵀ */
        float *z = Rt + (size_t)D * Dv;                  /* [D] z_t, then r_s */
        float *Q = z + D, *K = Q + (size_t)Tq * D;       /* φ(q) [Tq,D], φ(k) [Tk,D] */
        float *den = K + (size_t)Tk * D, *cc = den + Tq; /* [Tq] den_t, c_t = (g_t·out_t)/den_t */
        float *u = cc + Tq;                  /* [LINEAR_ROWS, D] S_t g_t or R v_s */
        float *gv = u + LINEAR_ROWS * (size_t)D; /* [LINEAR_ROWS, Dv] dv_s */
        float *R = St, *r = z;                           /* pass 2 reuses pass 1's state */
#pragma omp for schedule(dynamic, 1)
        for (int bh = 0; bh < BH; bh++) {
            int len = cpu_key_count(key_len, bh / NH, Tk);
            if (len == 0) continue; /* no row sees a key: no gradient */
            const float *qb = q + (size_t)bh * Tq * D;
            const float *kb = k + (size_t)bh * Tk * D;
            const float *vb = v + (size_t)bh * Tk * Dv;
            const float *gb = dout + (size_t)bh * Tq * Dv;
            phi_vec(Q, qb, phi_m, Tq * D);
            phi_vec(K, kb, phi_m, len * D);

            /* pass 1, forward in time: S_tᵀ, z_t; dq_t and den_t, c_t; the rows that see the
             * same keys LINEAR_ROWS at a time */
            memset(St, 0, sizeof(float) * (size_t)D * Dv);
            memset(z, 0, sizeof(float) * (size_t)D);
            int sp = 0;
            for (int t = 0; t < Tq;) {
                int vis = visible_keys(t, len, causal, Tq, Tk), t1 = t + 1;
                while (t1 < Tq && t1 - t < LINEAR_ROWS &&
                       visible_keys(t1, len, causal, Tq, Tk) == vis)
                    t1++;
                if (vis == 0) {
                    for (; t < t1; t++) den[t] = 0.0f, cc[t] = 0.0f;
                    continue;
                }
                outer_add(St, vb + (size_t)sp * Dv, K + (size_t)sp * D, vis - sp, Dv, D);
                add_rows(z, K + (size_t)sp * D, 1.0f, vis - sp, D);
                sp = vis;
                read_rows(u, gb + (size_t)t * Dv, St, t1 - t, Dv, D); /* u_t = S_t g_t */
                for (int i = 0; t < t1; t++, i++) {
                    const float *Qt = Q + (size_t)t * D, *ut = u + (size_t)i * D;
                    float dn = row_den(Qt, z, D);
                    float gdo = cpu_dotf(Qt, ut, D) / dn; /* g_t·out_t = φ(q_t)·u_t / den_t */
                    den[t] = dn;
                    cc[t] = gdo / dn;
                    if (dq) { /* dL/dQ = (S_t g − z_t (g·out_t)) / den_t; dq = dL/dQ ⊙ φ'(q_t) */
                        float *dqr = dq + ((size_t)bh * Tq + t) * D;
                        const float *qr = qb + (size_t)t * D;
#pragma omp simd
                        for (int d = 0; d < D; d++)
                            dqr[d] += (ut[d] - z[d] * gdo) / dn * dphi(qr[d], Qt[d], phi_m);
                    }
                }
            }
            if (!dk && !dv) continue;

            /* pass 2, backward in time: rows t with vis(t) > s form a suffix tp .. Tq−1; the
             * keys that the same rows see LINEAR_ROWS at a time, s0 .. s */
            memset(R, 0, sizeof(float) * (size_t)D * Dv);
            memset(Rt, 0, sizeof(float) * (size_t)D * Dv);
            memset(r, 0, sizeof(float) * (size_t)D);
            int tp = Tq;
            for (int s = len - 1; s >= 0;) {
                int t1 = tp;
                while (tp > 0 && visible_keys(tp - 1, len, causal, Tq, Tk) > s) tp--;
                if (tp < t1) { /* rows tp .. t1−1 join: R += φ(q_t) g_tᵀ / den_t, r += φ(q_t) c_t */
                    for (int t = tp; t < t1; t++) {
                        float *Qt = Q + (size_t)t * D, w = 1.0f / den[t];
                        add_rows(r, Qt, cc[t], 1, D);
#pragma omp simd
                        for (int d = 0; d < D; d++) Qt[d] *= w; /* φ(q_t) / den_t from here on */
                    }
                    outer_add(R, Q + (size_t)tp * D, gb + (size_t)tp * Dv, t1 - tp, D, Dv);
                    outer_add(Rt, gb + (size_t)tp * Dv, Q + (size_t)tp * D, t1 - tp, Dv, D);
                }
                int s0 = s; /* keys s0 .. s: no row joins below s */
                while (s0 > 0 && s - s0 + 1 < LINEAR_ROWS &&
                       (tp == 0 || visible_keys(tp - 1, len, causal, Tq, Tk) <= s0 - 1))
                    s0--;
                int n = s - s0 + 1;
                /* num_t += φ(q_t)·φ(k_s) v_s, den_t += φ(q_t)·φ(k_s):
                 * dL/dφ(k_s) = R v_s − r; dk = dL/dφ(k_s) ⊙ φ'(k_s); dv_s = Rᵀ φ(k_s) */
                if (dk) read_rows(u, vb + (size_t)s0 * Dv, Rt, n, Dv, D);
                if (dv) read_rows(gv, K + (size_t)s0 * D, R, n, D, Dv);
                for (int i = 0; i < n; i++) {
                    int sk = s0 + i;
                    if (dk) {
                        float *dkr = dk + ((size_t)bh * Tk + sk) * D;
                        const float *kr = kb + (size_t)sk * D, *Ks = K + (size_t)sk * D;
                        const float *ui = u + (size_t)i * D;
#pragma omp simd
                        for (int d = 0; d < D; d++)
                            dkr[d] += (ui[d] - r[d]) * dphi(kr[d], Ks[d], phi_m);
                    }
                    if (dv) {
                        float *dvr = dv + ((size_t)bh * Tk + sk) * Dv;
                        const float *gi = gv + (size_t)i * Dv;
#pragma omp simd
                        for (int e = 0; e < Dv; e++) dvr[e] += gi[e];
                    }
                }
                s = s0 - 1;
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

static void cpu_l2feature_forward(float *out, const float *inp, int N, int D) {
#pragma omp parallel for if ((long)N * D > 65536)
    for (int n = 0; n < N; n++) {
        const float *x = inp + (size_t)n * D;
        float *o = out + (size_t)n * (D + 1);
        float r = l2_rnorm(x, D);
        o[0] = 1.0f;                                /* the constant term of 1 + q̂·k̂ */
        for (int d = 0; d < D; d++) o[1 + d] = x[d] * r; /* x̂ = x / ‖x‖₂ */
    }
}

static void cpu_l2feature_backward(float *dinp, const float *dout, const float *inp, int N, int D) {
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

void cpu_register_linear(Backend *be) {
    be->linear_attn_workspace = cpu_linear_attn_workspace;
    be->linear_attn_forward = cpu_linear_attn_forward;
    be->linear_attn_step = cpu_linear_attn_step;
    be->linear_attn_summary = cpu_linear_attn_summary;
    be->linear_attn_read = cpu_linear_attn_read;
    be->linear_attn_read_backward = cpu_linear_attn_read_backward;
    be->linear_attn_summary_backward = cpu_linear_attn_summary_backward;
    be->linear_attn_backward = cpu_linear_attn_backward;
    be->l2feature_forward = cpu_l2feature_forward;
    be->l2feature_backward = cpu_l2feature_backward;
}
