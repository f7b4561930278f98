/* efficient.c — efficient attention on the CPU, in linear time and memory, no Tq×Tk matrix
 * (semantics in ops/ops.h, "efficient attention kinds"; linear attention is linear.c).
 *
 * Shapes: B batch, NH heads, Tq queries, Tk keys, D query/key width, Dv value width.
 *   q [B, NH, Tq, D], k [B, NH, Tk, D], v [B, NH, Tk, Dv], out [B, NH, Tq, Dv], key_len [B].
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
 * thread count. Scratch per thread comes from the
 * caller's work (the *_attn_workspace function); nothing is allocated. */
#include <math.h>
#include <omp.h>
#include <string.h>

#include "ops/cpu/cpu_internal.h"

/* Floats of work per thread: the backward's C, dC, seven [D] vectors and one [Dv] cover the
 * forward's C and four [D] vectors. */
static size_t efficient_per_thread(int D, int Dv) {
    return 2 * (size_t)D * Dv + 7 * (size_t)D + (size_t)Dv + 1;
}

static size_t cpu_efficient_attn_workspace(int B, int NH, int Tq, int Tk, int D, int Dv) {
    (void)B, (void)NH, (void)Tq, (void)Tk;
    return (size_t)omp_get_max_threads() * efficient_per_thread(D, Dv);
}

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
        for (int d = 0; d < D; d++) inv[d] += cpu_expf(kr[d] - mx[d]);
    }
    for (int d = 0; d < D; d++) inv[d] = 1.0f / inv[d];
}

/* K = ρ_k(k)_s: K_d = exp(k_sd − mx[d]) · inv[d]. */
static inline void colsoftmax_row(float *K, const float *kr, const float *mx, const float *inv,
                                  int D) {
    for (int d = 0; d < D; d++) K[d] = cpu_expf(kr[d] - mx[d]) * inv[d];
}

/* P = softmax over the D entries of one query row (ρ_q). */
static void row_softmax(float *P, const float *qr, int D) {
    float m = -INFINITY;
    for (int d = 0; d < D; d++)
        if (qr[d] > m) m = qr[d];
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (int d = 0; d < D; d++) sum += (P[d] = cpu_expf(qr[d] - m));
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
            cpu_axpyf(Cd, kd, vr, Dv); /* C = Σ_s ρ_k(k)_s v_sᵀ */
        }
    }
}

/* One output row: P = ρ_q(q_t) (written), o = Cᵀ P [Dv]. The forward's rows and the read's. */
static void efficient_row(float *o, float *P, const float *qr, const float *C, int D, int Dv) {
    row_softmax(P, qr, D);
    for (int e = 0; e < Dv; e++) o[e] = 0.0f;
    for (int d = 0; d < D; d++) cpu_axpyf(o, P[d], C + (size_t)d * Dv, Dv); /* out_t = Cᵀ ρ_q(q_t) */
}

/* One query row's backward, g = dL/dout_t: P = ρ_q(q_t) (written); out_t = Cᵀ P gives dP = C g
 * and, P being a softmax, dq_t += P ⊙ (dP − P·dP) (when dqr); dC += P gᵀ (when dC). gP: [D]
 * scratch. The backward's rows and the read's. */
static void efficient_row_backward(float *dqr, float *dC, float *P, float *gP, const float *qr,
                                   const float *g, const float *C, int D, int Dv) {
    row_softmax(P, qr, D);
    if (dqr) {
        float pdp = 0.0f;
        for (int d = 0; d < D; d++) {
            gP[d] = cpu_dotf(C + (size_t)d * Dv, g, Dv);
            pdp += P[d] * gP[d];
        }
        for (int d = 0; d < D; d++) dqr[d] += P[d] * (gP[d] - pdp);
    }
    if (dC)
        for (int d = 0; d < D; d++) cpu_axpyf(dC + (size_t)d * Dv, P[d], g, Dv);
}

/* The keys' backward from dC = dL/dC, C = Σ_s K_s v_sᵀ over the len visible keys of kb [len, D],
 * vb [len, Dv], given the column-softmax statistics mx, inv: dK_s = dC v_s, and K being a
 * softmax over each column, dk_sd += K_sd (dK_sd − cs_d) with cs_d = Σ_s K_sd dK_sd =
 * Σ_e dC_de C_de; dv_s += dCᵀ K_s. Both are computed before either is added, so dkb may be dvb;
 * either may be NULL. sc: scratch of 3·D + Dv floats. The backward's and the summary's. */
static void efficient_keys_backward(float *dkb, float *dvb, const float *dC, const float *C,
                                    const float *kb, const float *vb, const float *mx,
                                    const float *inv, int len, int D, int Dv, float *sc) {
    float *K = sc, *cs = K + D, *gk = cs + D, *gv = gk + D;
    for (int d = 0; d < D; d++) cs[d] = cpu_dotf(dC + (size_t)d * Dv, C + (size_t)d * Dv, Dv);
    for (int s = 0; s < len; s++) {
        const float *vr = vb + (size_t)s * Dv;
        colsoftmax_row(K, kb + (size_t)s * D, mx, inv, D);
        for (int d = 0; d < D; d++)
            gk[d] = K[d] * (cpu_dotf(dC + (size_t)d * Dv, vr, Dv) - cs[d]);
        for (int e = 0; e < Dv; e++) gv[e] = 0.0f;
        for (int d = 0; d < D; d++) cpu_axpyf(gv, K[d], dC + (size_t)d * Dv, Dv);
        if (dkb)
            for (int d = 0; d < D; d++) dkb[(size_t)s * D + d] += gk[d];
        if (dvb)
            for (int e = 0; e < Dv; e++) dvb[(size_t)s * Dv + e] += gv[e];
    }
}

/* Efficient attention forward (Shen et al. 2021 eq. 2): out = ρ_q(q) (ρ_k(k)ᵀ v), ρ_k over the
 * key_len[b] visible keys; out[B,NH,Tq,Dv] overwritten, 0 where key_len[b] = 0. */
static void cpu_efficient_attn_forward(float *out, const float *q, const float *k, const float *v,
                                       const int *key_len, int B, int NH, int Tq, int Tk, int D,
                                       int Dv, float *work) {
    int BH = B * NH;
#pragma omp parallel if ((long)BH * (Tq + Tk) * D * Dv > 65536)
    {
        float *C = work + omp_get_thread_num() * efficient_per_thread(D, Dv); /* [D,Dv] */
        float *mx = C + (size_t)D * Dv, *inv = mx + D, *K = inv + D, *P = K + D; /* [D] */
#pragma omp for schedule(dynamic, 1)
        for (int bh = 0; bh < BH; bh++) {
            int len = cpu_key_count(key_len, bh / NH, Tk);
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
            for (int t = 0; t < Tq; t++)
                efficient_row(ob + (size_t)t * Dv, P, qb + (size_t)t * D, C, D, Dv);
        }
    }
}

/* The context of the visible keys (ops.h efficient_attn_summary): colsoftmax_stats and
 * efficient_context, as the forward builds it; 0 for a pair with no visible key. */
static void cpu_efficient_attn_summary(float *ctx, const float *k, const float *v,
                                       const int *key_len, int B, int NH, int Tk, int D, int Dv) {
    int BH = B * NH;
#pragma omp parallel if ((long)BH * Tk * D * Dv > 65536)
    {
        float mx[D > 0 ? D : 1], inv[D > 0 ? D : 1], K[D > 0 ? D : 1];
#pragma omp for
        for (int bh = 0; bh < BH; bh++) {
            int len = cpu_key_count(key_len, bh / NH, Tk);
            float *C = ctx + (size_t)bh * D * Dv;
            if (len == 0) {
                memset(C, 0, sizeof(float) * (size_t)D * Dv);
                continue;
            }
            const float *kb = k + (size_t)bh * Tk * D, *vb = v + (size_t)bh * Tk * Dv;
            colsoftmax_stats(mx, inv, kb, len, D);
            efficient_context(C, K, kb, vb, mx, inv, len, D, Dv);
        }
    }
}

/* out_t = ctxᵀ ρ_q(q_t), as the forward's rows (ops.h efficient_attn_read). */
static void cpu_efficient_attn_read(float *out, const float *q, const float *ctx, int B, int NH,
                                    int Tq, int D, int Dv) {
    int BH = B * NH;
#pragma omp parallel if ((long)BH * Tq * D * Dv > 65536)
    {
        float P[D > 0 ? D : 1];
#pragma omp for
        for (int bh = 0; bh < BH; bh++)
            for (int t = 0; t < Tq; t++)
                efficient_row(out + ((size_t)bh * Tq + t) * Dv, P, q + ((size_t)bh * Tq + t) * D,
                              ctx + (size_t)bh * D * Dv, D, Dv);
    }
}

/* dq and dC = Σ_t P_t g_tᵀ as the backward's rows (ops.h efficient_attn_read_backward). */
static void cpu_efficient_attn_read_backward(float *dq, float *dctx, const float *dout,
                                             const float *q, const float *ctx, int B, int NH,
                                             int Tq, int D, int Dv) {
    int BH = B * NH;
#pragma omp parallel if ((long)BH * Tq * D * Dv > 65536)
    {
        float P[D > 0 ? D : 1], gP[D > 0 ? D : 1];
#pragma omp for
        for (int bh = 0; bh < BH; bh++)
            for (int t = 0; t < Tq; t++) {
                size_t row = (size_t)bh * Tq + t;
                efficient_row_backward(dq ? dq + row * D : NULL, dctx + (size_t)bh * D * Dv, P, gP,
                                       q + row * D, dout + row * Dv, ctx + (size_t)bh * D * Dv, D,
                                       Dv);
            }
    }
}

/* dk and dv from dC and C as the backward's keys (ops.h efficient_attn_summary_backward); dk
 * may be dv. */
static void cpu_efficient_attn_summary_backward(float *dk, float *dv, const float *dctx,
                                                const float *ctx, const float *k, const float *v,
                                                const int *key_len, int B, int NH, int Tk, int D,
                                                int Dv) {
    if (!dk && !dv) return;
    int BH = B * NH;
#pragma omp parallel if ((long)BH * Tk * D * Dv > 65536)
    {
        float mx[D > 0 ? D : 1], inv[D > 0 ? D : 1], sc[3 * D + Dv > 0 ? 3 * D + Dv : 1];
#pragma omp for
        for (int bh = 0; bh < BH; bh++) {
            int len = cpu_key_count(key_len, bh / NH, Tk);
            if (len == 0) continue;
            const float *kb = k + (size_t)bh * Tk * D, *vb = v + (size_t)bh * Tk * Dv;
            colsoftmax_stats(mx, inv, kb, len, D);
            efficient_keys_backward(dk ? dk + (size_t)bh * Tk * D : NULL,
                                    dv ? dv + (size_t)bh * Tk * Dv : NULL, dctx + (size_t)bh * D * Dv,
                                    ctx + (size_t)bh * D * Dv, kb, vb, mx, inv, len, D, Dv, sc);
        }
    }
}

/* Efficient attention backward: recomputes C, then per row dq (row-softmax backward) and
 * dC = Σ_t P_t g_tᵀ, then per visible key dv_s = dCᵀ K_s and dk (column-softmax backward).
 * Accumulates (+=) into dq, dk, dv, each may be NULL; padded keys (s ≥ key_len[b]) get no
 * gradient. */
static void cpu_efficient_attn_backward(float *dq, float *dk, float *dv, const float *dout,
                                        const float *q, const float *k, const float *v,
                                        const int *key_len, int B, int NH, int Tq, int Tk, int D,
                                        int Dv, float *work) {
    if (!dq && !dk && !dv) return;
    int BH = B * NH;
#pragma omp parallel if ((long)BH * (Tq + Tk) * D * Dv > 65536)
    {
        size_t ndd = (size_t)D * Dv;
        float *C = work + omp_get_thread_num() * efficient_per_thread(D, Dv);
        float *dC = C + ndd;                                 /* [D,Dv] */
        float *mx = dC + ndd, *inv = mx + D, *P = inv + D;   /* [D] */
        float *gP = P + D, *sc = gP + D;                     /* [D], [3·D + Dv] */
        int want_dC = dk || dv;
#pragma omp for schedule(dynamic, 1)
        for (int bh = 0; bh < BH; bh++) {
            int len = cpu_key_count(key_len, bh / NH, Tk);
            if (len == 0) continue; /* out = 0 regardless of q, k, v */
            const float *qb = q + (size_t)bh * Tq * D;
            const float *kb = k + (size_t)bh * Tk * D;
            const float *vb = v + (size_t)bh * Tk * Dv;
            const float *gb = dout + (size_t)bh * Tq * Dv;
            colsoftmax_stats(mx, inv, kb, len, D);
            efficient_context(C, sc, kb, vb, mx, inv, len, D, Dv);
            memset(dC, 0, sizeof(float) * ndd);
            for (int t = 0; t < Tq; t++)
                efficient_row_backward(dq ? dq + ((size_t)bh * Tq + t) * D : NULL,
                                       want_dC ? dC : NULL, P, gP, qb + (size_t)t * D,
                                       gb + (size_t)t * Dv, C, D, Dv);
            if (want_dC)
                efficient_keys_backward(dk ? dk + (size_t)bh * Tk * D : NULL,
                                        dv ? dv + (size_t)bh * Tk * Dv : NULL, dC, C, kb, vb, mx,
                                        inv, len, D, Dv, sc);
        }
    }
}

void cpu_register_efficient(Backend *be) {
    be->efficient_attn_workspace = cpu_efficient_attn_workspace;
    be->efficient_attn_forward = cpu_efficient_attn_forward;
    be->efficient_attn_summary = cpu_efficient_attn_summary;
    be->efficient_attn_read = cpu_efficient_attn_read;
    be->efficient_attn_read_backward = cpu_efficient_attn_read_backward;
    be->efficient_attn_summary_backward = cpu_efficient_attn_summary_backward;
    be->efficient_attn_backward = cpu_efficient_attn_backward;
}
