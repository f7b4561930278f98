/* attention_linear.c — the cases of test_backend_ops (attention_cases.h) for the CPU linear-time
 * attention ops (backend_cpu(), src/ops/ops.h "efficient attention kinds"; src/ops/cpu/linear.c,
 * efficient.c) against plain double-precision references (docs/design.md §11). Helpers and the shared
 * tolerances FWD_*, FD_*, ACC_TOL: tests/optest.h.
 *
 * Linear attention (Katharopoulos et al. 2020 eq. 6–9, §3.3.1), φ(x) = elu(x) + 1. The reference
 * is the explicit quadratic masked form: for every row t and key s, w_ts = φ(q_t)·φ(k_s) if s is
 * visible (s < key_len[b] and, causal, s ≤ t + Tk − Tq) else 0, and
 *   out_t = Σ_s w_ts v_s / (Σ_s w_ts + 1e-6)     (out_t = 0 when no key is visible),
 * so the op's prefix-sum (causal) form must equal it ("causal linear equals its quadratic masked
 * form", docs/design.md §11). Its gradient, derived on the quadratic form:
 *   den_t = Σ_s w_ts + 1e-6,  dL/dw_ts = (g_t·v_s − g_t·out_t) / den_t,
 *   dL/dφ(q_t) = Σ_s dL/dw_ts φ(k_s),  dL/dφ(k_s) = Σ_t dL/dw_ts φ(q_t),
 *   dv_s = Σ_t w_ts g_t / den_t,
 *   dq = dL/dφ(q) ⊙ φ'(q),  dk = dL/dφ(k) ⊙ φ'(k),  φ'(x) = 1 (x > 0), eˣ (x ≤ 0).
 * Efficient attention (Shen et al. 2021 eq. 2): out = ρ_q(q) (ρ_k(k)ᵀ v), ρ_q the softmax of each
 *   row of q over D, ρ_k the softmax of each column of k over the visible keys (0 for padded).
 *   Reference gradient: dP_t = C g_t, dq = P ⊙ (dP − P·dP), dC = Σ_t P_t g_tᵀ, dK_s = dC v_s,
 *   dk_sd = K_sd (dK_sd − Σ_s' K_s'd dK_s'd) (the column sum taken explicitly), dv_s = dCᵀ K_s.
 *
 * Checks per case: forward vs the reference (output overwritten, key_len 0 / partial / full,
 * Tq ≠ Tk, D ≠ Dv); padded keys are never read (NaN there changes nothing); backward vs the
 * reference gradient and vs central finite differences of the float op (L = Σ r ⊙ out with a fixed
 * random r, so dout = r); padded keys get exactly zero dk, dv and rows with no visible key get
 * exactly zero dq; accumulate (prefilled buffers end as prefill + gradient); NULL gradients
 * (each alone equals the full run bit for bit); results bit-identical for 1 and 2 OpenMP
 * threads. The double references' own gradients are checked against double finite differences.
 * The recurrent step (linear_attn_step, §3.4), run for t = 0 .. T−1 from a zero state, equals
 * the causal forward (Tq = Tk = T, no padding) row by row, bit for bit (memcmp), and leaves
 * state = Σ_s φ(k_s) v_sᵀ, zsum = Σ_s φ(k_s). The summary split (linear_attn_summary, _read,
 * _read_backward, _summary_backward) equals the non-causal forward and backward
 * (test_summary_split), and so does efficient attention's context split (test_efficient_split).
 * Each case seeds optest_rng itself and runs on one OpenMP thread (tiny shapes; ctest -j2 on two
 * cores must not oversubscribe), restoring the thread count afterwards. */
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention_cases.h"
#include "attention_fixture.h"
#include "ops/cpu/cpu.h"
#include "ops/ops.h"
#include "optest.h"
#include "testutil.h"

/* Tolerances.
 * Forward, float32 op vs double reference (sums of ≤ 40 terms of size O(1) in float32):
 *   |got − ref| ≤ FWD_ATOL + FWD_RTOL·|ref|.
 * Backward, float32 op vs the double reference gradient (adds the cancellation in
 *   S g − z (g·out) and R v − r, terms O(1..10)): |got − ref| ≤ GRAD_ATOL + GRAD_RTOL·|ref|.
 * Backward vs central finite differences of the float32 op (ε = FD_EPS; the loss is summed in
 *   double from float32 outputs, so the quotient carries ~1e-4 of rounding noise):
 *   |analytic − numeric| ≤ FD_ATOL + FD_RTOL·|numeric|.
 * The double references' gradients vs double central differences (ε = REF_FD_EPS; truncation
 *   O(ε²) ≈ 1e-12, rounding ≈ 1e-16/ε = 1e-10): ≤ REF_FD_TOL·(1 + |numeric|).
 * Accumulate (one float add per element, possibly fused): |after − (pre + g)| ≤
 *   ACC_TOL·(1 + |pre| + |g|).
 * The causal "equals its quadratic masked form" check uses FWD_* and GRAD_*; NULL, padding,
 *   thread-count and step-equals-forward checks are exact (bit-identical); the step's final
 *   state and zsum use FWD_*. */
#define GRAD_ATOL 1e-5
#define GRAD_RTOL 1e-4
#define REF_FD_EPS 1e-6
#define REF_FD_TOL 1e-7
#define LIN_EPS 1e-6 /* the normaliser's guard in linear attention (ops.h) */

static const Backend *be; /* backend_cpu() */

/* ------------------------------------------------------------------------------------------ */
/* helpers                                                                                     */

static double *d_of(const float *x, size_t n) {
    double *p = test_dnew(n);
    for (size_t i = 0; i < n; i++) p[i] = x[i];
    return p;
}
static void stat_arr(Stat *s, const float *got, const double *ref, size_t n, double atol,
                     double rtol, const char *what) {
    for (size_t i = 0; i < n; i++) stat_add(s, got[i], ref[i], atol, rtol, what, (long)i);
}

/* ------------------------------------------------------------------------------------------ */
/* the problem: one op, shapes and inputs                                                      */

enum { LINEAR, EFFICIENT };

static const char *kind_name(const AttnProb *p) {
    return p->kind == LINEAR ? (p->causal ? "linear causal" : "linear") : "efficient";
}

/* The op's workspace (linear_ / efficient_attn_workspace floats). */
static size_t op_workspace(const AttnProb *p) {
    return (p->kind == LINEAR ? be->linear_attn_workspace : be->efficient_attn_workspace)(
        p->B, p->NH, p->Tq, p->Tk, p->D, p->Dv);
}

static void op_fwd(const AttnProb *p, float *out, const float *q, const float *k, const float *v) {
    if (p->kind == LINEAR)
        be->linear_attn_forward(out, q, k, v, p->key_len, p->causal, LINEAR_PHI_ELU1, p->B, p->NH,
                                p->Tq, p->Tk, p->D, p->Dv, p->work);
    else
        be->efficient_attn_forward(out, q, k, v, p->key_len, p->B, p->NH, p->Tq, p->Tk, p->D,
                                   p->Dv, p->work);
}

/* dq, dk, dv += the gradient of L = Σ r ⊙ out (dout = p->r) */
static void op_bwd(AttnProb *p, float *dq, float *dk, float *dv, const float *q, const float *k,
                   const float *v) {
    if (p->kind == LINEAR)
        be->linear_attn_backward(dq, dk, dv, p->r, q, k, v, p->key_len, p->causal, LINEAR_PHI_ELU1,
                                 p->B, p->NH, p->Tq, p->Tk, p->D, p->Dv, p->work);
    else
        be->efficient_attn_backward(dq, dk, dv, p->r, q, k, v, p->key_len, p->B, p->NH, p->Tq,
                                    p->Tk, p->D, p->Dv, p->work);
}

/* One problem (attention_fixture.h) of op kind (LINEAR or EFFICIENT): q and k uniform in
 * [−2, 2), so that both branches of elu (and of φ') are exercised. */
static void op_prob(AttnProb *p, int kind, int causal, int B, int NH, int Tq, int Tk, int D,
                    int Dv, const int *key_len) {
    *p = (AttnProb){.B = B, .NH = NH, .Tq = Tq, .Tk = Tk, .D = D, .Dv = Dv, .causal = causal,
                    .kind = kind, .key_len = key_len, .workspace = op_workspace, .fwd = op_fwd,
                    .bwd = op_bwd};
    attn_prob_init(p, 2.0f);
    if (kind == EFFICIENT) /* softmax over each query row: its maximum (100) in the last lane on
                            * every third row, in lane 0 of the row after the next, so that a
                            * maximum that misses the last lane or reads the next row's first
                            * overflows or underflows exp */
        for (size_t row = 0; row < p->nq / (size_t)D; row++) {
            if (row % 3 == 0) p->q[row * D + D - 1] = 100.0f;
            if (row % 3 == 2) p->q[row * D] = 100.0f;
        }
}

/* ------------------------------------------------------------------------------------------ */
/* double-precision references                                                                 */

static double phi_d(double x) { return x > 0 ? x + 1 : exp(x); }
static double dphi_d(double x) { return x > 0 ? 1 : exp(x); }

/* Linear attention, quadratic masked form; gradients added into dq, dk, dv when non-NULL. */
static void ref_linear(const AttnProb *p, double *out, double *dq, double *dk, double *dv,
                       const double *q, const double *k, const double *v, const double *g) {
    int Tq = p->Tq, Tk = p->Tk, D = p->D, Dv = p->Dv;
    double *w = test_dnew((size_t)Tk), *o = test_dnew((size_t)Dv);
    for (int b = 0; b < p->B; b++)
        for (int h = 0; h < p->NH; h++) {
            size_t bh = (size_t)b * p->NH + h;
            const double *qb = q + bh * Tq * D, *kb = k + bh * Tk * D, *vb = v + bh * Tk * Dv;
            for (int t = 0; t < Tq; t++) {
                double W = 0;
                int any = 0;
                for (int s = 0; s < Tk; s++) {
                    w[s] = 0;
                    if (!attn_prob_visible(p, b, t, s)) continue;
                    any = 1;
                    for (int d = 0; d < D; d++)
                        w[s] += phi_d(qb[(size_t)t * D + d]) * phi_d(kb[(size_t)s * D + d]);
                    W += w[s];
                }
                double den = W + LIN_EPS;
                for (int e = 0; e < Dv; e++) {
                    o[e] = 0;
                    for (int s = 0; s < Tk; s++) o[e] += w[s] * vb[(size_t)s * Dv + e];
                    o[e] = any ? o[e] / den : 0;
                }
                if (out) memcpy(out + (bh * Tq + t) * Dv, o, sizeof(double) * Dv);
                if (!g || !any) continue;
                const double *gt = g + (bh * Tq + t) * Dv;
                double go = 0;
                for (int e = 0; e < Dv; e++) go += gt[e] * o[e];
                for (int s = 0; s < Tk; s++) {
                    if (!attn_prob_visible(p, b, t, s)) continue;
                    double gv = 0;
                    for (int e = 0; e < Dv; e++) gv += gt[e] * vb[(size_t)s * Dv + e];
                    double dw = (gv - go) / den; /* dL/dw_ts */
                    for (int d = 0; d < D; d++) {
                        double qd = qb[(size_t)t * D + d], kd = kb[(size_t)s * D + d];
                        if (dq) dq[(bh * Tq + t) * D + d] += dw * phi_d(kd) * dphi_d(qd);
                        if (dk) dk[(bh * Tk + s) * D + d] += dw * phi_d(qd) * dphi_d(kd);
                    }
                    if (dv)
                        for (int e = 0; e < Dv; e++)
                            dv[(bh * Tk + s) * Dv + e] += w[s] / den * gt[e];
                }
            }
        }
    free(w), free(o);
}

/* Efficient attention; gradients added into dq, dk, dv when non-NULL. */
static void ref_efficient(const AttnProb *p, double *out, double *dq, double *dk, double *dv,
                          const double *q, const double *k, const double *v, const double *g) {
    int Tq = p->Tq, Tk = p->Tk, D = p->D, Dv = p->Dv;
    double *K = test_dnew((size_t)Tk * D), *C = test_dnew((size_t)D * Dv), *P = test_dnew((size_t)Tq * D);
    double *dC = test_dnew((size_t)D * Dv), *dK = test_dnew((size_t)Tk * D), *dP = test_dnew((size_t)D);
/* row-major element (i, j) of a matrix with n columns */
#define AT(x, i, j, n) (x)[(size_t)(i) * (n) + (j)]
    for (int b = 0; b < p->B; b++)
        for (int h = 0; h < p->NH; h++) {
            size_t bh = (size_t)b * p->NH + h;
            int L = attn_prob_klen(p, b);
            const double *qb = q + bh * Tq * D, *kb = k + bh * Tk * D, *vb = v + bh * Tk * Dv;
            /* ρ_q: softmax of each row of q */
            for (int t = 0; t < Tq; t++) {
                double m = -INFINITY, z = 0;
                for (int d = 0; d < D; d++) m = fmax(m, AT(qb, t, d, D));
                for (int d = 0; d < D; d++) z += exp(AT(qb, t, d, D) - m);
                for (int d = 0; d < D; d++) AT(P, t, d, D) = exp(AT(qb, t, d, D) - m) / z;
            }
            /* ρ_k: softmax of each column of k over s < L, 0 beyond */
            for (int d = 0; d < D; d++) {
                double m = -INFINITY, z = 0;
                for (int s = 0; s < L; s++) m = fmax(m, AT(kb, s, d, D));
                for (int s = 0; s < L; s++) z += exp(AT(kb, s, d, D) - m);
                for (int s = 0; s < Tk; s++)
                    AT(K, s, d, D) = s < L ? exp(AT(kb, s, d, D) - m) / z : 0;
            }
            /* C = ρ_k(k)ᵀ v */
            for (int d = 0; d < D; d++)
                for (int e = 0; e < Dv; e++) {
                    double c = 0;
                    for (int s = 0; s < Tk; s++) c += AT(K, s, d, D) * AT(vb, s, e, Dv);
                    AT(C, d, e, Dv) = c;
                }
            /* out = ρ_q(q) C */
            if (out)
                for (int t = 0; t < Tq; t++)
                    for (int e = 0; e < Dv; e++) {
                        double o = 0;
                        for (int d = 0; d < D; d++) o += AT(P, t, d, D) * AT(C, d, e, Dv);
                        out[(bh * Tq + t) * Dv + e] = o;
                    }
            if (!g || L == 0) continue;
            const double *gb = g + bh * Tq * Dv;
            memset(dC, 0, sizeof(double) * D * Dv);
            for (int t = 0; t < Tq; t++) {
                double pdp = 0;
                for (int d = 0; d < D; d++) {
                    dP[d] = 0;
                    for (int e = 0; e < Dv; e++) dP[d] += AT(C, d, e, Dv) * AT(gb, t, e, Dv);
                    pdp += AT(P, t, d, D) * dP[d];
                }
                for (int d = 0; d < D; d++) {
                    double pd = AT(P, t, d, D);
                    if (dq) dq[(bh * Tq + t) * D + d] += pd * (dP[d] - pdp);
                    for (int e = 0; e < Dv; e++) AT(dC, d, e, Dv) += pd * AT(gb, t, e, Dv);
                }
            }
            for (int s = 0; s < L; s++)
                for (int d = 0; d < D; d++) {
                    double a = 0;
                    for (int e = 0; e < Dv; e++) a += AT(dC, d, e, Dv) * AT(vb, s, e, Dv);
                    AT(dK, s, d, D) = a;
                }
            for (int d = 0; d < D; d++) {
                double cs = 0; /* Σ_s K_sd dK_sd, explicitly */
                for (int s = 0; s < L; s++) cs += AT(K, s, d, D) * AT(dK, s, d, D);
                if (dk)
                    for (int s = 0; s < L; s++)
                        dk[(bh * Tk + s) * D + d] += AT(K, s, d, D) * (AT(dK, s, d, D) - cs);
            }
            if (dv)
                for (int s = 0; s < L; s++)
                    for (int e = 0; e < Dv; e++) {
                        double a = 0;
                        for (int d = 0; d < D; d++) a += AT(dC, d, e, Dv) * AT(K, s, d, D);
                        dv[(bh * Tk + s) * Dv + e] += a;
                    }
        }
#undef AT
    free(K), free(C), free(P), free(dC), free(dK), free(dP);
}

static void ref_op(const AttnProb *p, double *out, double *dq, double *dk, double *dv,
                   const double *q, const double *k, const double *v, const double *g) {
    if (p->kind == LINEAR)
        ref_linear(p, out, dq, dk, dv, q, k, v, g);
    else
        ref_efficient(p, out, dq, dk, dv, q, k, v, g);
}

/* ------------------------------------------------------------------------------------------ */
/* the checks of one case                                                                      */

static void test_case(int kind, int causal, int B, int NH, int Tq, int Tk, int D, int Dv,
                      const int *key_len, const char *tag, int do_fd) {
    AttnProb P, *p = &P;
    op_prob(p, kind, causal, B, NH, Tq, Tk, D, Dv, key_len);
    const char *kn = kind_name(p);
    Stat st;

    /* forward vs the double reference; out is overwritten (prefilled with NaN) */
    double *q64 = d_of(p->q, p->nq), *k64 = d_of(p->k, p->nk), *v64 = d_of(p->v, p->nv);
    double *g64 = d_of(p->r, p->no);
    double *ro = test_dnew(p->no), *rq = test_dnew(p->nq), *rk = test_dnew(p->nk), *rv = test_dnew(p->nv);
    ref_op(p, ro, rq, rk, rv, q64, k64, v64, g64);
    float *out = fnew(p->no);
    for (size_t i = 0; i < p->no; i++) out[i] = NAN;
    stat_begin(&st, "%s forward vs double ref %s", kn, tag);
    op_fwd(p, out, p->q, p->k, p->v);
    stat_arr(&st, out, ro, p->no, FWD_ATOL, FWD_RTOL, "out");
    /* rows with no visible key: exactly 0 */
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++)
            for (int t = 0; t < Tq; t++) {
                int any = 0;
                for (int s = 0; s < Tk; s++) any |= attn_prob_visible(p, b, t, s);
                if (any) continue;
                const float *o = out + (((size_t)b * NH + h) * Tq + t) * Dv;
                int zero = 1;
                for (int e = 0; e < Dv; e++) zero &= o[e] == 0.0f && !signbit(o[e]);
                stat_true(&st, zero, "row b%d h%d t%d has no visible key but out != +0", b, h, t);
            }
    stat_end(&st);

    /* backward (into zeroed buffers) vs the double reference gradient */
    float *gq = fnew(p->nq), *gk = fnew(p->nk), *gv = fnew(p->nv);
    op_bwd(p, gq, gk, gv, p->q, p->k, p->v);
    stat_begin(&st, "%s backward vs double ref grad %s", kn, tag);
    stat_arr(&st, gq, rq, p->nq, GRAD_ATOL, GRAD_RTOL, "dq");
    stat_arr(&st, gk, rk, p->nk, GRAD_ATOL, GRAD_RTOL, "dk");
    stat_arr(&st, gv, rv, p->nv, GRAD_ATOL, GRAD_RTOL, "dv");
    stat_end(&st);

    /* padding: padded keys get exactly zero dk, dv; rows with no visible key get zero dq; NaN
     * in padded keys / values changes nothing (they are never read) */
    stat_begin(&st, "%s padding: zero grads, padded keys unread %s", kn, tag);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) {
            size_t bh = (size_t)b * NH + h;
            for (int s = attn_prob_klen(p, b); s < Tk; s++) {
                int zero = 1;
                for (int d = 0; d < D; d++) zero &= gk[(bh * Tk + s) * D + d] == 0.0f;
                for (int e = 0; e < Dv; e++) zero &= gv[(bh * Tk + s) * Dv + e] == 0.0f;
                stat_true(&st, zero, "padded key b%d h%d s%d has a nonzero dk/dv", b, h, s);
            }
            for (int t = 0; t < Tq; t++) {
                int any = 0;
                for (int s = 0; s < Tk; s++) any |= attn_prob_visible(p, b, t, s);
                if (any) continue;
                int zero = 1;
                for (int d = 0; d < D; d++) zero &= gq[(bh * Tq + t) * D + d] == 0.0f;
                stat_true(&st, zero, "row b%d h%d t%d sees no key but has a nonzero dq", b, h, t);
            }
        }
    {
        float *kn2 = fdup(p->k, p->nk), *vn2 = fdup(p->v, p->nv);
        for (int b = 0; b < B; b++)
            for (int h = 0; h < NH; h++) {
                size_t bh = (size_t)b * NH + h;
                for (int s = attn_prob_klen(p, b); s < Tk; s++) {
                    for (int d = 0; d < D; d++) kn2[(bh * Tk + s) * D + d] = NAN;
                    for (int e = 0; e < Dv; e++) vn2[(bh * Tk + s) * Dv + e] = NAN;
                }
            }
        float *o2 = fnew(p->no), *q2 = fnew(p->nq), *k2 = fnew(p->nk), *v2 = fnew(p->nv);
        op_fwd(p, o2, p->q, kn2, vn2);
        op_bwd(p, q2, k2, v2, p->q, kn2, vn2);
        stat_same(&st, "out with NaN padding", o2, out, p->no);
        stat_same(&st, "dq with NaN padding", q2, gq, p->nq);
        stat_same(&st, "dk with NaN padding", k2, gk, p->nk);
        stat_same(&st, "dv with NaN padding", v2, gv, p->nv);
        free(kn2), free(vn2), free(o2), free(q2), free(k2), free(v2);
    }
    stat_end(&st);

    /* backward vs central finite differences of the float op */
    if (do_fd) {
        stat_begin(&st, "%s backward vs FD (eps %.0e) %s", kn, (double)FD_EPS, tag);
        fd_check(&st, "dq", p->q, p->nq, gq, attn_prob_loss, p);
        fd_check(&st, "dk", p->k, p->nk, gk, attn_prob_loss, p);
        fd_check(&st, "dv", p->v, p->nv, gv, attn_prob_loss, p);
        stat_end(&st);
    }

    /* accumulate: prefilled buffers end as prefill + gradient */
    stat_begin(&st, "%s backward accumulates %s", kn, tag);
    attn_check_accumulate(&st, p, gq, gk, gv);
    stat_end(&st);

    /* NULL gradients: each one alone equals the full run, bit for bit; all NULL is a no-op */
    stat_begin(&st, "%s backward with NULL gradients %s", kn, tag);
    {
        float *aq = fnew(p->nq), *ak = fnew(p->nk), *av = fnew(p->nv);
        op_bwd(p, aq, NULL, NULL, p->q, p->k, p->v);
        op_bwd(p, NULL, ak, NULL, p->q, p->k, p->v);
        op_bwd(p, NULL, NULL, av, p->q, p->k, p->v);
        op_bwd(p, NULL, NULL, NULL, p->q, p->k, p->v);
        stat_same(&st, "dq alone", aq, gq, p->nq);
        stat_same(&st, "dk alone", ak, gk, p->nk);
        stat_same(&st, "dv alone", av, gv, p->nv);
        memset(ak, 0, sizeof(float) * p->nk), memset(av, 0, sizeof(float) * p->nv);
        op_bwd(p, NULL, ak, av, p->q, p->k, p->v);
        stat_same(&st, "dk with dq NULL", ak, gk, p->nk);
        stat_same(&st, "dv with dq NULL", av, gv, p->nv);
        free(aq), free(ak), free(av);
    }
    stat_end(&st);

    free(q64), free(k64), free(v64), free(g64), free(ro), free(rq), free(rk), free(rv);
    free(out), free(gq), free(gk), free(gv);
    attn_prob_free(p);
}

/* The double references' own gradients against double central differences (so that the
 * reference gradient is trustworthy as a tight check of the op). */
static void test_ref_gradients(int kind, int causal, const char *tag) {
    const int len[2] = {5, 3};
    AttnProb P, *p = &P;
    op_prob(p, kind, causal, 2, 2, kind == LINEAR && causal ? 5 : 4, 5, 3, 4, len);
    double *q = d_of(p->q, p->nq), *k = d_of(p->k, p->nk), *v = d_of(p->v, p->nv);
    double *g = d_of(p->r, p->no), *o = test_dnew(p->no);
    double *dq = test_dnew(p->nq), *dk = test_dnew(p->nk), *dv = test_dnew(p->nv);
    ref_op(p, NULL, dq, dk, dv, q, k, v, g);
    Stat st;
    stat_begin(&st, "%s double ref grad vs double FD (eps %.0e) %s", kind_name(p), REF_FD_EPS,
               tag);
    double *xs[3] = {q, k, v}, *gs[3] = {dq, dk, dv};
    size_t ns[3] = {p->nq, p->nk, p->nv};
    const char *names[3] = {"dq", "dk", "dv"};
    for (int a = 0; a < 3; a++)
        for (size_t i = 0; i < ns[a]; i++) {
            double x0 = xs[a][i], l[2];
            for (int sgn = 0; sgn < 2; sgn++) {
                xs[a][i] = x0 + (sgn ? -REF_FD_EPS : REF_FD_EPS);
                ref_op(p, o, NULL, NULL, NULL, q, k, v, NULL);
                l[sgn] = 0;
                for (size_t j = 0; j < p->no; j++) l[sgn] += g[j] * o[j];
            }
            xs[a][i] = x0;
            double num = (l[0] - l[1]) / (2 * REF_FD_EPS);
            stat_add(&st, gs[a][i], num, REF_FD_TOL, REF_FD_TOL, names[a], (long)i);
        }
    stat_end(&st);
    free(q), free(k), free(v), free(g), free(o), free(dq), free(dk), free(dv);
    attn_prob_free(p);
}

/* docs/design.md §11: causal linear attention (prefix sums, memory-light backward) equals its
 * quadratic masked form, on a longer sequence with padding. */
static void test_causal_equals_quadratic(int Dv) {
    const int B = 2, NH = 2, T = 40, D = 8;
    const int len[2] = {40, 23};
    AttnProb P, *p = &P;
    op_prob(p, LINEAR, 1, B, NH, T, T, D, Dv, len);
    double *q = d_of(p->q, p->nq), *k = d_of(p->k, p->nk), *v = d_of(p->v, p->nv);
    double *g = d_of(p->r, p->no), *ro = test_dnew(p->no);
    double *rq = test_dnew(p->nq), *rk = test_dnew(p->nk), *rv = test_dnew(p->nv);
    ref_linear(p, ro, rq, rk, rv, q, k, v, g);
    float *out = fnew(p->no), *gq = fnew(p->nq), *gk = fnew(p->nk), *gv = fnew(p->nv);
    op_fwd(p, out, p->q, p->k, p->v);
    op_bwd(p, gq, gk, gv, p->q, p->k, p->v);
    Stat st;
    stat_begin(&st, "causal linear equals its quadratic masked form (T %d, Dv %d)", T, Dv);
    stat_arr(&st, out, ro, p->no, FWD_ATOL, FWD_RTOL, "out");
    stat_end(&st);
    stat_begin(&st, "causal linear grad equals quadratic masked grad (T %d, Dv %d)", T, Dv);
    stat_arr(&st, gq, rq, p->nq, GRAD_ATOL, GRAD_RTOL, "dq");
    stat_arr(&st, gk, rk, p->nk, GRAD_ATOL, GRAD_RTOL, "dk");
    stat_arr(&st, gv, rv, p->nv, GRAD_ATOL, GRAD_RTOL, "dv");
    stat_end(&st);
    /* causality: changing the future (keys/values after t) leaves out_t unchanged, bit for bit */
    stat_begin(&st, "causal linear: future keys do not change the past");
    {
        const int t0 = 10;
        float *k2 = fdup(p->k, p->nk), *v2 = fdup(p->v, p->nv), *o2 = fnew(p->no);
        for (int bh = 0; bh < B * NH; bh++)
            for (int s = t0 + 1; s < T; s++) {
                for (int d = 0; d < D; d++) k2[((size_t)bh * T + s) * D + d] += 1.0f;
                for (int e = 0; e < Dv; e++) v2[((size_t)bh * T + s) * Dv + e] = -3.0f;
            }
        op_fwd(p, o2, p->q, k2, v2);
        for (int bh = 0; bh < B * NH; bh++)
            stat_same(&st, "rows 0..t0", o2 + (size_t)bh * T * Dv, out + (size_t)bh * T * Dv, (size_t)(t0 + 1) * Dv);
        free(k2), free(v2), free(o2);
    }
    stat_end(&st);
    free(q), free(k), free(v), free(g), free(ro), free(rq), free(rk), free(rv);
    free(out), free(gq), free(gk), free(gv);
    attn_prob_free(p);
}

/* The recurrent form (ops.h linear_attn_step, Katharopoulos et al. 2020 §3.4): stepping
 * t = 0 .. T−1 from a zero state, each step fed k_t, v_t, q_t of every (b, h), gives row t of
 * linear_attn_forward(causal = 1, Tq = Tk = T, no padding) bit for bit (one memcmp per row
 * (b, h, t)); after the last step the state is Σ_s φ(k_s) v_sᵀ and zsum is Σ_s φ(k_s) (vs
 * double sums, FWD tolerances). */
static void test_step_equals_causal(int D, int Dv) {
    const int B = 2, NH = 3, T = 7, BH = B * NH;
    const int len[2] = {T, T};
    AttnProb P, *p = &P;
    op_prob(p, LINEAR, 1, B, NH, T, T, D, Dv, len);
    float *out = fnew(p->no);
    op_fwd(p, out, p->q, p->k, p->v);
    float *state = fnew((size_t)BH * D * Dv), *zsum = fnew((size_t)BH * D); /* zero */
    float *qt = fnew((size_t)BH * D), *kt = fnew((size_t)BH * D), *vt = fnew((size_t)BH * Dv);
    float *ot = fnew((size_t)BH * Dv);
    Stat st;
    stat_begin(&st, "linear_attn_step t=0..%d equals causal forward rows (B%d NH%d D%d Dv%d)",
               T - 1, B, NH, D, Dv);
    for (int t = 0; t < T; t++) {
        for (int bh = 0; bh < BH; bh++) { /* step t's inputs: [B,NH,D] and [B,NH,Dv] */
            memcpy(qt + (size_t)bh * D, p->q + ((size_t)bh * T + t) * D, sizeof(float) * D);
            memcpy(kt + (size_t)bh * D, p->k + ((size_t)bh * T + t) * D, sizeof(float) * D);
            memcpy(vt + (size_t)bh * Dv, p->v + ((size_t)bh * T + t) * Dv, sizeof(float) * Dv);
        }
        for (size_t i = 0; i < (size_t)BH * Dv; i++) ot[i] = 123.0f; /* must be overwritten */
        be->linear_attn_step(ot, state, zsum, qt, kt, vt, LINEAR_PHI_ELU1, B, NH, D, Dv);
        for (int bh = 0; bh < BH; bh++)
            stat_true(&st,
                      memcmp(ot + (size_t)bh * Dv, out + ((size_t)bh * T + t) * Dv,
                             sizeof(float) * Dv) == 0,
                      "step %d, row (b %d, h %d): out differs from the causal forward's row", t,
                      bh / NH, bh % NH);
    }
    for (int bh = 0; bh < BH; bh++)
        for (int d = 0; d < D; d++) {
            double zs = 0;
            for (int s = 0; s < T; s++) zs += phi_d(p->k[((size_t)bh * T + s) * D + d]);
            stat_add(&st, zsum[(size_t)bh * D + d], zs, FWD_ATOL, FWD_RTOL, "zsum",
                     (long)bh * D + d);
            for (int e = 0; e < Dv; e++) {
                double S = 0;
                for (int s = 0; s < T; s++)
                    S += phi_d(p->k[((size_t)bh * T + s) * D + d]) *
                         (double)p->v[((size_t)bh * T + s) * Dv + e];
                stat_add(&st, state[((size_t)bh * D + d) * Dv + e], S, FWD_ATOL, FWD_RTOL,
                         "state", (long)((bh * D + d) * Dv + e));
            }
        }
    stat_end(&st);
    free(out), free(state), free(zsum), free(qt), free(kt), free(vt), free(ot);
    attn_prob_free(p);
}

/* The summary split (ops.h linear_attn_summary, _read, _read_backward, _summary_backward), as
 * the RNN decoder uses it: one summary, then one read per query row (Tq calls of Tq = 1).
 * Forward: every row's out equals linear_attn_forward's (causal = 0) bit for bit (a pair with
 * key_len 0 included: out = 0), and one read of all Tq rows equals it too. Backward: the rows'
 * read_backward into one dstate, dzsum, then summary_backward once, give linear_attn_backward's
 * dq, dk and dv (GRAD tolerances: the sums over rows are taken in another order, and the
 * compiler may contract the same source differently), dk and dv accumulated into prefilled
 * buffers; padded keys get nothing;
 * dq = NULL leaves dstate, dzsum bit-identical; with k = v (D = Dv) and dk = dv one buffer, the
 * result is the sum of the separate dk and dv. Both feature maps (identity on inputs made
 * positive, as the taylor kind's features). */
static void test_summary_split(int phi_m, int Tq, int D, int Dv) {
    const int B = 3, NH = 2, Tk = 6, BH = B * NH;
    const int len[3] = {6, 0, 3};
    AttnProb P, *p = &P;
    op_prob(p, LINEAR, 0, B, NH, Tq, Tk, D, Dv, len);
    if (phi_m == LINEAR_PHI_IDENTITY) {
        for (size_t i = 0; i < p->nq; i++) p->q[i] = fabsf(p->q[i]) + 0.1f;
        for (size_t i = 0; i < p->nk; i++) p->k[i] = fabsf(p->k[i]) + 0.1f;
    }
    size_t nS = (size_t)BH * D * Dv, nz = (size_t)BH * D;
    float *out = fnew(p->no), *S = fnew(nS), *z = fnew(nz);
    float *gq = fnew(p->nq), *gk = fnew(p->nk), *gv = fnew(p->nv);
    be->linear_attn_forward(out, p->q, p->k, p->v, p->key_len, 0, phi_m, B, NH, Tq, Tk, D, Dv,
                            p->work);
    be->linear_attn_backward(gq, gk, gv, p->r, p->q, p->k, p->v, p->key_len, 0, phi_m, B, NH, Tq,
                             Tk, D, Dv, p->work);
    for (size_t i = 0; i < nS; i++) S[i] = 7.0f; /* must be overwritten */
    for (size_t i = 0; i < nz; i++) z[i] = 7.0f;
    be->linear_attn_summary(S, z, p->k, p->v, p->key_len, phi_m, B, NH, Tk, D, Dv);

    Stat st;
    stat_begin(&st, "linear_attn_summary + _read (phi %d, Tq %d D %d Dv %d) equal the non-causal "
               "forward", phi_m, Tq, D, Dv);
    float *o1 = fnew(p->no);
    for (size_t i = 0; i < p->no; i++) o1[i] = 123.0f;
    be->linear_attn_read(o1, p->q, S, z, phi_m, B, NH, Tq, D, Dv);
    stat_true(&st, memcmp(o1, out, sizeof(float) * p->no) == 0, "one read of %d rows", Tq);
    /* row t alone: q_t [B,NH,1,D] */
    float *qt = fnew((size_t)BH * D), *ot = fnew((size_t)BH * Dv), *gt = fnew((size_t)BH * Dv);
    for (int t = 0; t < Tq; t++) {
        for (int bh = 0; bh < BH; bh++)
            memcpy(qt + (size_t)bh * D, p->q + ((size_t)bh * Tq + t) * D, sizeof(float) * D);
        be->linear_attn_read(ot, qt, S, z, phi_m, B, NH, 1, D, Dv);
        for (int bh = 0; bh < BH; bh++)
            stat_true(&st,
                      memcmp(ot + (size_t)bh * Dv, out + ((size_t)bh * Tq + t) * Dv,
                             sizeof(float) * Dv) == 0,
                      "row %d of pair %d read alone", t, bh);
    }
    stat_end(&st);

    stat_begin(&st, "linear_attn_read_backward + _summary_backward (phi %d, Tq %d D %d Dv %d) "
               "equal the backward", phi_m, Tq, D, Dv);
    float *pk = frand(p->nk, -1, 1), *pv = frand(p->nv, -1, 1);
    float *dq = fnew(p->nq), *dk = fdup(pk, p->nk), *dv = fdup(pv, p->nv);
    float *dS = fnew(nS), *dz = fnew(nz), *dS0 = fnew(nS), *dz0 = fnew(nz);
    float *dqt = fnew((size_t)BH * D);
    for (int t = 0; t < Tq; t++) {
        for (int bh = 0; bh < BH; bh++) {
            memcpy(qt + (size_t)bh * D, p->q + ((size_t)bh * Tq + t) * D, sizeof(float) * D);
            memcpy(gt + (size_t)bh * Dv, p->r + ((size_t)bh * Tq + t) * Dv, sizeof(float) * Dv);
            memcpy(dqt + (size_t)bh * D, dq + ((size_t)bh * Tq + t) * D, sizeof(float) * D);
        }
        be->linear_attn_read_backward(dqt, dS, dz, gt, qt, S, z, phi_m, B, NH, 1, D, Dv);
        be->linear_attn_read_backward(NULL, dS0, dz0, gt, qt, S, z, phi_m, B, NH, 1, D, Dv);
        for (int bh = 0; bh < BH; bh++)
            memcpy(dq + ((size_t)bh * Tq + t) * D, dqt + (size_t)bh * D, sizeof(float) * D);
    }
    stat_true(&st, memcmp(dS, dS0, sizeof(float) * nS) == 0 && memcmp(dz, dz0, sizeof(float) *
              nz) == 0, "dq = NULL changes dstate or dzsum");
    be->linear_attn_summary_backward(dk, dv, dS, dz, p->k, p->v, p->key_len, phi_m, B, NH, Tk, D,
                                     Dv);
    for (size_t i = 0; i < p->nq; i++)
        stat_add(&st, dq[i], gq[i], GRAD_ATOL, GRAD_RTOL, "dq", (long)i);
    for (size_t i = 0; i < p->nk; i++)
        stat_add(&st, dk[i] - pk[i], gk[i], GRAD_ATOL, GRAD_RTOL, "dk", (long)i);
    for (size_t i = 0; i < p->nv; i++)
        stat_add(&st, dv[i] - pv[i], gv[i], GRAD_ATOL, GRAD_RTOL, "dv", (long)i);
    for (int bh = 0; bh < BH; bh++) /* padded keys: the prefill, exactly */
        for (int s = attn_prob_klen(p, bh / NH); s < Tk; s++) {
            for (int d = 0; d < D; d++) {
                size_t i = ((size_t)bh * Tk + s) * D + d;
                stat_true(&st, dk[i] == pk[i], "padded key (pair %d, s %d) got dk", bh, s);
            }
            for (int e = 0; e < Dv; e++) {
                size_t i = ((size_t)bh * Tk + s) * Dv + e;
                stat_true(&st, dv[i] == pv[i], "padded key (pair %d, s %d) got dv", bh, s);
            }
        }
    /* k = v, one gradient buffer: the separate dk and dv of that input, summed (D = Dv) */
    if (D == Dv) {
        float *kv = p->k, *S2 = fnew(nS), *z2 = fnew(nz), *dS2 = fnew(nS), *dz2 = fnew(nz);
        float *ga = fnew(p->nk), *gb = fnew(p->nk), *gab = fnew(p->nk);
        be->linear_attn_summary(S2, z2, kv, kv, p->key_len, phi_m, B, NH, Tk, D, Dv);
        be->linear_attn_read_backward(NULL, dS2, dz2, p->r, p->q, S2, z2, phi_m, B, NH, Tq, D,
                                      Dv);
        be->linear_attn_summary_backward(ga, NULL, dS2, dz2, kv, kv, p->key_len, phi_m, B, NH,
                                         Tk, D, Dv);
        be->linear_attn_summary_backward(NULL, gb, dS2, dz2, kv, kv, p->key_len, phi_m, B, NH,
                                         Tk, D, Dv);
        be->linear_attn_summary_backward(gab, gab, dS2, dz2, kv, kv, p->key_len, phi_m, B, NH,
                                         Tk, D, Dv);
        for (size_t i = 0; i < p->nk; i++)
            stat_true(&st, gab[i] == ga[i] + gb[i], "dk = dv aliased: [%zu] %g, not %g + %g", i,
                      gab[i], ga[i], gb[i]);
        free(S2), free(z2), free(dS2), free(dz2), free(ga), free(gb), free(gab);
    }
    stat_end(&st);
    free(out), free(S), free(z), free(gq), free(gk), free(gv), free(o1), free(qt), free(ot);
    free(gt), free(pk), free(pv), free(dq), free(dk), free(dv), free(dS), free(dz);
    free(dS0), free(dz0), free(dqt);
    attn_prob_free(p);
}

/* Efficient attention's context split (ops.h efficient_attn_summary, _read, _read_backward,
 * _summary_backward), checked as test_summary_split: reads of every row alone and of all rows
 * equal efficient_attn_forward bit for bit; the rows' read_backward into one dctx, then
 * summary_backward once, give efficient_attn_backward's dq, dk, dv within GRAD tolerances (dk,
 * dv into prefilled buffers); padded keys get nothing; dk = dv aliased sums. */
static void test_efficient_split(void) {
    const int B = 3, NH = 2, Tq = 4, Tk = 6, D = 5, Dv = 5, BH = B * NH;
    const int len[3] = {6, 0, 3};
    AttnProb P, *p = &P;
    op_prob(p, EFFICIENT, 0, B, NH, Tq, Tk, D, Dv, len);
    size_t nC = (size_t)BH * D * Dv;
    float *out = fnew(p->no), *C = fnew(nC);
    float *gq = fnew(p->nq), *gk = fnew(p->nk), *gv = fnew(p->nv);
    op_fwd(p, out, p->q, p->k, p->v);
    op_bwd(p, gq, gk, gv, p->q, p->k, p->v);
    for (size_t i = 0; i < nC; i++) C[i] = 7.0f; /* must be overwritten */
    be->efficient_attn_summary(C, p->k, p->v, p->key_len, B, NH, Tk, D, Dv);

    Stat st;
    stat_begin(&st, "efficient_attn_summary + _read equal the forward");
    float *o1 = fnew(p->no);
    for (size_t i = 0; i < p->no; i++) o1[i] = 123.0f;
    be->efficient_attn_read(o1, p->q, C, B, NH, Tq, D, Dv);
    stat_true(&st, memcmp(o1, out, sizeof(float) * p->no) == 0, "one read of %d rows", Tq);
    float *qt = fnew((size_t)BH * D), *ot = fnew((size_t)BH * Dv), *gt = fnew((size_t)BH * Dv);
    for (int t = 0; t < Tq; t++) {
        for (int bh = 0; bh < BH; bh++)
            memcpy(qt + (size_t)bh * D, p->q + ((size_t)bh * Tq + t) * D, sizeof(float) * D);
        be->efficient_attn_read(ot, qt, C, B, NH, 1, D, Dv);
        for (int bh = 0; bh < BH; bh++)
            stat_true(&st,
                      memcmp(ot + (size_t)bh * Dv, out + ((size_t)bh * Tq + t) * Dv,
                             sizeof(float) * Dv) == 0,
                      "row %d of pair %d read alone", t, bh);
    }
    stat_end(&st);

    stat_begin(&st, "efficient_attn_read_backward + _summary_backward equal the backward");
    float *pk = frand(p->nk, -1, 1), *pv = frand(p->nv, -1, 1);
    float *dq = fnew(p->nq), *dk = fdup(pk, p->nk), *dv = fdup(pv, p->nv);
    float *dC = fnew(nC), *dC0 = fnew(nC), *dqt = fnew((size_t)BH * D);
    for (int t = 0; t < Tq; t++) {
        for (int bh = 0; bh < BH; bh++) {
            memcpy(qt + (size_t)bh * D, p->q + ((size_t)bh * Tq + t) * D, sizeof(float) * D);
            memcpy(gt + (size_t)bh * Dv, p->r + ((size_t)bh * Tq + t) * Dv, sizeof(float) * Dv);
            memcpy(dqt + (size_t)bh * D, dq + ((size_t)bh * Tq + t) * D, sizeof(float) * D);
        }
        be->efficient_attn_read_backward(dqt, dC, gt, qt, C, B, NH, 1, D, Dv);
        be->efficient_attn_read_backward(NULL, dC0, gt, qt, C, B, NH, 1, D, Dv);
        for (int bh = 0; bh < BH; bh++)
            memcpy(dq + ((size_t)bh * Tq + t) * D, dqt + (size_t)bh * D, sizeof(float) * D);
    }
    stat_true(&st, memcmp(dC, dC0, sizeof(float) * nC) == 0, "dq = NULL changes dctx");
    be->efficient_attn_summary_backward(dk, dv, dC, C, p->k, p->v, p->key_len, B, NH, Tk, D, Dv);
    for (size_t i = 0; i < p->nq; i++)
        stat_add(&st, dq[i], gq[i], GRAD_ATOL, GRAD_RTOL, "dq", (long)i);
    for (size_t i = 0; i < p->nk; i++)
        stat_add(&st, dk[i] - pk[i], gk[i], GRAD_ATOL, GRAD_RTOL, "dk", (long)i);
    for (size_t i = 0; i < p->nv; i++)
        stat_add(&st, dv[i] - pv[i], gv[i], GRAD_ATOL, GRAD_RTOL, "dv", (long)i);
    for (int bh = 0; bh < BH; bh++)
        for (int s = attn_prob_klen(p, bh / NH); s < Tk; s++)
            for (int d = 0; d < D; d++) {
                size_t i = ((size_t)bh * Tk + s) * D + d;
                stat_true(&st, dk[i] == pk[i] && dv[i] == pv[i],
                          "padded key (pair %d, s %d) got a gradient", bh, s);
            }
    {
        float *kv = p->k, *C2 = fnew(nC), *dC2 = fnew(nC);
        float *ga = fnew(p->nk), *gb = fnew(p->nk), *gab = fnew(p->nk);
        be->efficient_attn_summary(C2, kv, kv, p->key_len, B, NH, Tk, D, Dv);
        be->efficient_attn_read_backward(NULL, dC2, p->r, p->q, C2, B, NH, Tq, D, Dv);
        be->efficient_attn_summary_backward(ga, NULL, dC2, C2, kv, kv, p->key_len, B, NH, Tk, D,
                                            Dv);
        be->efficient_attn_summary_backward(NULL, gb, dC2, C2, kv, kv, p->key_len, B, NH, Tk, D,
                                            Dv);
        be->efficient_attn_summary_backward(gab, gab, dC2, C2, kv, kv, p->key_len, B, NH, Tk, D,
                                            Dv);
        for (size_t i = 0; i < p->nk; i++)
            stat_true(&st, gab[i] == ga[i] + gb[i], "dk = dv aliased: [%zu] %g, not %g + %g", i,
                      gab[i], ga[i], gb[i]);
        free(C2), free(dC2), free(ga), free(gb), free(gab);
    }
    stat_end(&st);
    free(out), free(C), free(gq), free(gk), free(gv), free(o1), free(qt), free(ot), free(gt);
    free(pk), free(pv), free(dq), free(dk), free(dv), free(dC), free(dC0), free(dqt);
    attn_prob_free(p);
}

/* Efficient attention normalisations: with k ≡ 0 (ρ_k uniform 1/L), out_t = (Σ_d ρ_q(q_t)_d) ·
 * mean_{s<L} v_s, so the rows of ρ_q sum to 1 iff out_t = mean v; with v ≡ 1, out_t = Σ_d
 * ρ_q(q_t)_d · Σ_s ρ_k(k)_sd = 1 (columns of ρ_k sum to 1 too). Large |q|, |k| (±60) check the
 * max-subtracted softmaxes stay finite. */
static void test_efficient_normalisation(void) {
    const int B = 3, NH = 2, Tq = 4, Tk = 6, D = 5, Dv = 3;
    const int len[3] = {6, 2, 0};
    AttnProb P, *p = &P;
    op_prob(p, EFFICIENT, 0, B, NH, Tq, Tk, D, Dv, len);
    for (size_t i = 0; i < p->nq; i++) p->q[i] *= 30.0f; /* q in [−60, 60] */
    Stat st;
    stat_begin(&st, "efficient: rows of rho_q sum to 1 (k = 0, |q| <= 60)");
    {
        float *k0 = fnew(p->nk), *out = fnew(p->no);
        op_fwd(p, out, p->q, k0, p->v);
        for (int b = 0; b < B; b++)
            for (int h = 0; h < NH; h++) {
                size_t bh = (size_t)b * NH + h;
                int L = attn_prob_klen(p, b);
                for (int e = 0; e < Dv; e++) {
                    double mean = 0;
                    for (int s = 0; s < L; s++) mean += p->v[(bh * Tk + s) * Dv + e];
                    mean = L ? mean / L : 0;
                    for (int t = 0; t < Tq; t++)
                        stat_add(&st, out[(bh * Tq + t) * Dv + e], mean, FWD_ATOL, FWD_RTOL,
                                 "out", (long)((bh * Tq + t) * Dv + e));
                }
            }
        free(k0), free(out);
    }
    stat_end(&st);
    stat_begin(&st, "efficient: rho_q rows x rho_k columns sum to 1 (v = 1)");
    {
        float *v1 = fnew(p->nv), *out = fnew(p->no);
        for (size_t i = 0; i < p->nv; i++) v1[i] = 1.0f;
        for (size_t i = 0; i < p->nk; i++) p->k[i] *= 30.0f;
        op_fwd(p, out, p->q, p->k, v1);
        for (int b = 0; b < B; b++)
            for (int h = 0; h < NH; h++)
                for (int t = 0; t < Tq; t++)
                    for (int e = 0; e < Dv; e++) {
                        size_t i = (((size_t)b * NH + h) * Tq + t) * Dv + e;
                        stat_add(&st, out[i], attn_prob_klen(p, b) ? 1.0 : 0.0, FWD_ATOL,
                                 FWD_RTOL, "out", (long)i);
                    }
        free(v1), free(out);
    }
    stat_end(&st);
    attn_prob_free(p);
}

/* Results bit-identical for 1 and 2 OpenMP threads, on a shape large enough for the ops'
 * parallel regions to engage (B·NH·(Tq+Tk)·D·Dv > 65536). */
static void test_threads(int kind, int causal) {
    const int B = 2, NH = 3, T = 48, D = 16, Dv = 12;
    const int len[2] = {48, 29};
    AttnProb P, *p = &P;
    op_prob(p, kind, causal, B, NH, T, T, D, Dv, len);
    Stat st;
    stat_begin(&st, "%s bit-identical for 1 and 2 threads", kind_name(p));
    attn_check_threads(&st, p);
    stat_end(&st);
    attn_prob_free(p);
}

/* ------------------------------------------------------------------------------------------ */
/* the cases                                                                                   */

/* The start of either case: the CPU backend, optest_rng seeded with stream seq, one OpenMP thread
 * (returns the thread count to restore at the end); then the shapes both kinds are tested with
 * (non-causal): the double reference's own gradient; key_len full, 0, partial with Tq ≠ Tk,
 * D ≠ Dv; Tq = 1 (one decoder step); a longer case against the references (no finite
 * differences). */
static int common_cases(int kind, uint64_t seq) {
    be = backend_cpu();
    rng_seed(&optest_rng, 20240611, seq);
    int threads0 = omp_get_max_threads();
    omp_set_num_threads(1);
    test_ref_gradients(kind, 0, "(B2 NH2 Tq4 Tk5 D3 Dv4)");
    const int len[3] = {5, 0, 3};
    test_case(kind, 0, 3, 2, 4, 5, 6, 7, len, "(Tq4 Tk5 D6 Dv7, len 5/0/3)", 1);
    const int len1[3] = {1, 5, 2};
    test_case(kind, 0, 3, 2, 1, 5, 4, 3, len1, "(Tq1 Tk5 D4 Dv3, len 1/5/2)", 1);
    const int len2[2] = {33, 17};
    test_case(kind, 0, 2, 2, 29, 33, 8, 6, len2, "(Tq29 Tk33 D8 Dv6, len 33/17)", 0);
    return threads0;
}

void case_linear_attn(void) {
    int threads0 = common_cases(LINEAR, 7);
    test_ref_gradients(LINEAR, 1, "(B2 NH2 T5 D3 Dv4)");
    /* causal, Tq = Tk (self-attention), padding full / 0 / partial */
    const int len[3] = {6, 0, 4};
    test_case(LINEAR, 1, 3, 2, 6, 6, 5, 3, len, "(T6 D5 Dv3, len 6/0/4)", 1);
    /* causal, Tk > Tq: key s visible iff s ≤ t + 2 */
    const int len2[2] = {5, 4};
    test_case(LINEAR, 1, 2, 2, 3, 5, 4, 6, len2, "(Tq3 Tk5 D4 Dv6, len 5/4)", 1);
    /* causal, Tq > Tk: rows t < 2 see no key */
    const int len3[2] = {3, 2};
    test_case(LINEAR, 1, 2, 2, 5, 3, 4, 6, len3, "(Tq5 Tk3 D4 Dv6, len 3/2)", 1);
    /* Dv 37: two register blocks of the CPU kernels and 5 columns after them; Tq 9: two blocks
     * of rows and one after them */
    test_causal_equals_quadratic(5);
    test_causal_equals_quadratic(37);
    test_step_equals_causal(5, 4);
    test_step_equals_causal(6, 37);
    test_summary_split(LINEAR_PHI_ELU1, 4, 5, 5);
    test_summary_split(LINEAR_PHI_IDENTITY, 4, 5, 5);
    test_summary_split(LINEAR_PHI_ELU1, 9, 6, 37);
    test_summary_split(LINEAR_PHI_IDENTITY, 9, 6, 37);
    test_threads(LINEAR, 0);
    test_threads(LINEAR, 1);
    omp_set_num_threads(threads0);
}

void case_efficient_attn(void) {
    int threads0 = common_cases(EFFICIENT, 8);
    test_efficient_normalisation();
    test_efficient_split();
    test_threads(EFFICIENT, 0);
    omp_set_num_threads(threads0);
}
