/* attention_taylor.c — the case of test_backend_ops (attention_cases.h) for the taylor kind's ops
 * l2feature_forward / l2feature_backward (src/ops/ops.h; src/ops/cpu/linear.c) and for the kind
 * itself (src/attention/taylor.c: the features through linear_attn_* with the identity map), on
 * the CPU backend (backend_cpu()), against plain double-precision references (docs/design.md §11).
 * Helpers and the shared tolerances FWD_*, FD_*, ACC_TOL: tests/optest.h.
 *
 * l2feature (per row n of x [N,D]): out = [1; x r], r = 1/√(‖x‖² + 1e-12); its backward
 *   dx += r (g − x̂ (x̂·g)), g = dout[n, 1..D]. Checks: forward and backward vs double references
 *   (a zero row: r = 1e6, x̂ = 0; a row of values ~1e3), backward vs central finite differences
 *   (rows away from 0, where the map is smooth),
 *   accumulate, dout[n, 0] is ignored, bit-identical for 1 and 2 OpenMP threads.
 *
 * The taylor kind (Li et al. 2020, arXiv:2007.14902), per (b, h) and query row t
 * over the visible keys j (j < key_len[b]; causal: j ≤ t + Tk − Tq), N_t of them:
 *   out_t = (Σ_j v_j + q̂_t (K̂ᵀV)) / (N_t + q̂_t·(K̂ᵀ1)),  q̂ = q/‖q‖₂, k̂ = k/‖k‖₂,
 * the reference written literally as the seed's three terms (term1 = Vᵀ1, term2 = Q̂ (K̂ᵀV),
 * term3 = Q̂ (K̂ᵀ1)) in double, O(Tq·Tk) per head, rows with no visible key out = 0. Checks, masked
 * (key_len full / 0 / partial) and causal (Tq = Tk, Tq < Tk, Tq > Tk): forward vs the reference
 * (the kind adds linear attention's guard 1e-6 to the denominator: allowed for in the tolerance,
 * and checked tightly against the reference with the same guard); backward vs central finite
 * differences of the double reference with the guard (a tight check) and of the
 * float kind itself (dq, dk, dv, fd_check); padding never receives weight (padded keys and values
 * replaced by other values change no output or gradient bit, and padded keys get exactly zero dk,
 * dv); accumulate; keys = values in one buffer (the RNN) with dk = dv in one buffer gives
 * dk + dv; cached decoding (attention_decode_step for t = 0 .. T−1 from a zero state) equals the
 * causal forward (teacher forcing) row by row, bit for bit, and its state is O(1) in T;
 * weights_host sums to 1 and equals (1 + q̂·k̂_s) / Σ; bit-identical for 1 and 2 threads.
 * Runs on one OpenMP thread (as attention_linear.c) but for the thread check. */
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention/attention.h"
#include "attention_cases.h"
#include "attention_fixture.h"
#include "ops/cpu/cpu.h"
#include "ops/ops.h"
#include "optest.h"
#include "testutil.h"

/* Tolerances (see attention_linear.c for the reasoning; the same sizes of sums here).
 * Forward vs the double reference: FWD_ATOL + FWD_RTOL·|ref| (the kind adds linear attention's
 *   guard 1e-6 to the denominator N + q̂·K̂ᵀ1, a relative change of 1e-6 / that denominator).
 * Backward vs double central differences of the double reference with the kind's guard
 *   (TAYLOR_GUARD, below; ε = REF_FD_EPS, error
 *   O(ε²) + 1e-16/ε ≈ 1e-10 in the quotient): GRAD_ATOL + GRAD_RTOL·|ref|, the float kind's own
 *   rounding (cancellation in r (g − x̂ (x̂·g)) and in the linear backward's S g − z (g·out)).
 * l2feature vs its double reference: FWD_* (forward), GRAD_* (backward). */
#define GRAD_ATOL 2e-5
#define GRAD_RTOL 2e-4
#define REF_FD_EPS 1e-6

static const Backend *be; /* backend_cpu() */

/* ------------------------------------------------------------------------------------------ */
/* l2feature_forward / _backward                                                              */

typedef struct {
    int N, D;
    float *x, *r, *out; /* x [N,D]; r = dL/dout [N,D+1]; out scratch */
} L2Prob;

static double l2_loss(void *ctx) {
    L2Prob *p = ctx;
    be->l2feature_forward(p->out, p->x, p->N, p->D);
    return dot_rd(p->r, p->out, (size_t)p->N * (p->D + 1));
}

/* reference: out [N,D+1] and dx [N,D] += the gradient of Σ g ⊙ out, in double */
static void ref_l2(const float *x, const float *g, double *out, double *dx, int N, int D) {
    for (int n = 0; n < N; n++) {
        const float *xr = x + (size_t)n * D, *gr = g + (size_t)n * (D + 1) + 1;
        double ss = 0, xg = 0;
        for (int d = 0; d < D; d++) ss += (double)xr[d] * xr[d];
        double r = 1 / sqrt(ss + 1e-12);
        out[(size_t)n * (D + 1)] = 1;
        for (int d = 0; d < D; d++) out[(size_t)n * (D + 1) + 1 + d] = xr[d] * r;
        for (int d = 0; d < D; d++) xg += xr[d] * r * gr[d];
        for (int d = 0; d < D; d++) dx[(size_t)n * D + d] += r * (gr[d] - xr[d] * r * xg);
    }
}

static void test_l2feature(int N, int D, int special, int do_fd) {
    L2Prob P = {N, D, frand((size_t)N * D, -1, 1), frand((size_t)N * (D + 1), -1, 1),
                fnew((size_t)N * (D + 1))};
    size_t ni = (size_t)N * D, no = (size_t)N * (D + 1);
    if (special && N > 2)
        for (int d = 0; d < D; d++) P.x[D + d] = 0.0f, P.x[2 * D + d] *= 1000.0f;
    double *ro = test_dnew(no), *rd = test_dnew(ni);
    ref_l2(P.x, P.r, ro, rd, N, D);
    Stat st;
    stat_begin(&st, "l2feature_forward vs double ref (N%d D%d%s)", N, D,
               special ? ", a zero row, a row ~1e3" : "");
    float *out = fnew(no);
    for (size_t i = 0; i < no; i++) out[i] = NAN;
    be->l2feature_forward(out, P.x, N, D);
    for (size_t i = 0; i < no; i++)
        stat_add(&st, out[i], ro[i], FWD_ATOL, FWD_RTOL, "out", (long)i);
    stat_end(&st);

    stat_begin(&st, "l2feature_backward vs double ref grad (N%d D%d%s)", N, D,
               special ? ", a zero row: r = 1e6" : "");
    float *dx = fnew(ni);
    be->l2feature_backward(dx, P.r, P.x, N, D);
    for (size_t i = 0; i < ni; i++)
        stat_add(&st, dx[i], rd[i], GRAD_ATOL, GRAD_RTOL, "dx", (long)i);
    /* dout[n, 0] belongs to the constant: changing it changes nothing */
    float *r2 = fdup(P.r, no), *dx2 = fnew(ni);
    for (int n = 0; n < N; n++) r2[(size_t)n * (D + 1)] = 1234.5f;
    be->l2feature_backward(dx2, r2, P.x, N, D);
    stat_same(&st, "dx with another dout[:, 0]", dx2, dx, ni);
    stat_end(&st);

    if (do_fd) {
        stat_begin(&st, "l2feature backward vs FD (eps %.0e) (N%d D%d)", (double)FD_EPS, N, D);
        fd_check(&st, "dx", P.x, ni, dx, l2_loss, &P);
        stat_end(&st);
    }
    stat_begin(&st, "l2feature backward accumulates (N%d D%d)", N, D);
    float *pre = frand(ni, -1, 1), *acc = fdup(pre, ni);
    be->l2feature_backward(acc, P.r, P.x, N, D);
    accum_check(&st, "dx", acc, pre, dx, ni);
    stat_end(&st);
    free(P.x), free(P.r), free(P.out), free(ro), free(rd), free(out), free(dx), free(r2);
    free(dx2), free(pre), free(acc);
}

/* 1 and 2 threads, above the ops' OpenMP threshold (N·D > 65536): the same bits. */
static void test_l2feature_threads(void) {
    const int N = 1100, D = 64;
    size_t ni = (size_t)N * D, no = (size_t)N * (D + 1);
    float *x = frand(ni, -1, 1), *g = frand(no, -1, 1);
    float *o[2], *dx[2];
    for (int i = 0; i < 2; i++) {
        omp_set_num_threads(i + 1);
        o[i] = fnew(no), dx[i] = fnew(ni);
        be->l2feature_forward(o[i], x, N, D);
        be->l2feature_backward(dx[i], g, x, N, D);
    }
    omp_set_num_threads(1);
    Stat st;
    stat_begin(&st, "l2feature bit-identical for 1 and 2 threads (N%d D%d)", N, D);
    stat_same(&st, "out", o[0], o[1], no);
    stat_same(&st, "dx", dx[0], dx[1], ni);
    stat_end(&st);
    for (int i = 0; i < 2; i++) free(o[i]), free(dx[i]);
    free(x), free(g);
}

/* ------------------------------------------------------------------------------------------ */
/* the taylor kind                                                                            */

static void kind_fwd(const AttnProb *p, float *out, const float *q, const float *k,
                     const float *v) {
    attention_forward(&p->at, be, out, NULL, q, k, v, p->key_len, p->causal, p->B, p->Tq, p->Tk,
                      p->work);
}
static void kind_bwd(AttnProb *p, float *dq, float *dk, float *dv, const float *q,
                     const float *k, const float *v) {
    attention_backward(&p->at, be, dq, dk, dv, p->r, NULL, NULL, q, k, v, p->key_len, p->causal,
                       p->B, p->Tq, p->Tk, p->work);
}

/* One problem (attention_fixture.h) of the kind, head size HS; q and k uniform in [−1, 1). */
static void kind_prob(AttnProb *p, int causal, int B, int NH, int Tq, int Tk, int HS,
                      const int *key_len) {
    *p = (AttnProb){.B = B, .NH = NH, .Tq = Tq, .Tk = Tk, .D = HS, .Dv = HS, .causal = causal,
                    .key_len = key_len, .workspace = attn_kind_workspace, .fwd = kind_fwd,
                    .bwd = kind_bwd};
    attention_declare(&p->at, NULL, "t", ATTN_TAYLOR, NH * HS, NH * HS, NH, 0, INIT_XAVIER, NULL);
    attn_prob_init(p, 1.0f);
}

/* The seed's formula (Method 3), literally, per (b, h) and row t over its visible keys, its
 * denominator plus guard (0: the formula itself; TAYLOR_GUARD: as the kind computes it, linear
 * attention's 1e-6 — Li et al.'s own code adds an eps there too); den [B,NH,Tq] (may be NULL)
 * receives N + q̂·K̂ᵀ1 without the guard. */
#define TAYLOR_GUARD 1e-6
static void ref_taylor(const AttnProb *p, double *out, double *den, const double *q,
                       const double *k, const double *v, double guard) {
    int Tq = p->Tq, Tk = p->Tk, HS = p->D;
    double *KtV = test_dnew((size_t)HS * HS), *Kt1 = test_dnew((size_t)HS), *qh = test_dnew((size_t)HS),
           *kh = test_dnew((size_t)HS);
    for (int b = 0; b < p->B; b++)
        for (int h = 0; h < p->NH; h++) {
            size_t bh = (size_t)b * p->NH + h;
            const double *qb = q + bh * Tq * HS, *kb = k + bh * Tk * HS, *vb = v + bh * Tk * HS;
            for (int t = 0; t < Tq; t++) {
                double *o = out + (bh * Tq + t) * HS, nq = 0, N = 0;
                memset(KtV, 0, sizeof(double) * HS * HS), memset(Kt1, 0, sizeof(double) * HS);
                memset(o, 0, sizeof(double) * HS); /* term1 = Vᵀ 1 (accumulated into o) */
                for (int s = 0; s < Tk; s++) {
                    if (!attn_prob_visible(p, b, t, s)) continue;
                    double nk = 0;
                    for (int d = 0; d < HS; d++) nk += kb[s * HS + d] * kb[s * HS + d];
                    for (int d = 0; d < HS; d++) kh[d] = kb[s * HS + d] / sqrt(nk); /* K' = K/‖K‖ */
                    for (int d = 0; d < HS; d++) {
                        Kt1[d] += kh[d];
                        for (int e = 0; e < HS; e++) KtV[d * HS + e] += kh[d] * vb[s * HS + e];
                    }
                    for (int e = 0; e < HS; e++) o[e] += vb[s * HS + e];
                    N++;
                }
                if (den) den[bh * Tq + t] = N;
                if (N == 0) continue; /* no visible key: out = 0 */
                for (int d = 0; d < HS; d++) nq += qb[t * HS + d] * qb[t * HS + d];
                for (int d = 0; d < HS; d++) qh[d] = qb[t * HS + d] / sqrt(nq); /* Q' = Q/‖Q‖ */
                double term3 = 0;
                for (int d = 0; d < HS; d++) term3 += qh[d] * Kt1[d];
                if (den) den[bh * Tq + t] = N + term3;
                for (int e = 0; e < HS; e++) {
                    double term2 = 0;
                    for (int d = 0; d < HS; d++) term2 += qh[d] * KtV[d * HS + e];
                    o[e] = (o[e] + term2) / (N + term3 + guard);
                }
            }
        }
    free(KtV), free(Kt1), free(qh), free(kh);
}

/* d/dx of Σ r ⊙ ref_taylor (with the kind's guard) by double central differences, for x = q, k
 * or v (which = 0, 1, 2) */
static void ref_grad(const AttnProb *p, double *grad, int which) {
    double *q = test_dnew(p->nq), *k = test_dnew(p->nk), *v = test_dnew(p->nk), *o = test_dnew(p->no);
    for (size_t i = 0; i < p->nq; i++) q[i] = p->q[i];
    for (size_t i = 0; i < p->nk; i++) k[i] = p->k[i], v[i] = p->v[i];
    double *x = which == 0 ? q : which == 1 ? k : v;
    size_t n = which == 0 ? p->nq : p->nk;
    for (size_t i = 0; i < n; i++) {
        double x0 = x[i], l[2];
        for (int sg = 0; sg < 2; sg++) {
            x[i] = x0 + (sg ? -REF_FD_EPS : REF_FD_EPS);
            ref_taylor(p, o, NULL, q, k, v, TAYLOR_GUARD);
            l[sg] = 0;
            for (size_t j = 0; j < p->no; j++) l[sg] += p->r[j] * o[j];
        }
        x[i] = x0;
        grad[i] = (l[0] - l[1]) / (2 * REF_FD_EPS);
    }
    free(q), free(k), free(v), free(o);
}

static void test_kind(int causal, int B, int NH, int Tq, int Tk, int HS, const int *len,
                      const char *tag) {
    AttnProb P, *p = &P;
    kind_prob(p, causal, B, NH, Tq, Tk, HS, len);
    const char *kn = causal ? "taylor causal" : "taylor";
    Stat st;
    /* forward vs the seed's formula; out overwritten (NaN-prefilled). Against the formula itself
     * the guard's share is allowed: out·den/(den + 1e-6) − out = −out·1e-6/(den + 1e-6), so
     * |Δ| ≤ FWD_ATOL + FWD_RTOL·|ref| + 1e-6·|ref|/den; against the guarded formula FWD_*. */
    double *q64 = test_dnew(p->nq), *k64 = test_dnew(p->nk), *v64 = test_dnew(p->nk), *ro = test_dnew(p->no);
    double *rg = test_dnew(p->no), *den = test_dnew((size_t)B * NH * Tq);
    for (size_t i = 0; i < p->nq; i++) q64[i] = p->q[i];
    for (size_t i = 0; i < p->nk; i++) k64[i] = p->k[i], v64[i] = p->v[i];
    ref_taylor(p, ro, den, q64, k64, v64, 0);
    ref_taylor(p, rg, NULL, q64, k64, v64, TAYLOR_GUARD);
    float *out = fnew(p->no);
    for (size_t i = 0; i < p->no; i++) out[i] = NAN;
    kind_fwd(p, out, p->q, p->k, p->v);
    stat_begin(&st, "%s forward vs (sum v + q'(K'^T V)) / (N + q'(K'^T 1)) %s", kn, tag);
    for (size_t i = 0; i < p->no; i++) {
        double dn = den[i / HS], guard = dn > 0 ? TAYLOR_GUARD * fabs(ro[i]) / dn : 0;
        stat_add(&st, out[i], ro[i], FWD_ATOL + guard, FWD_RTOL, "out", (long)i);
    }
    stat_end(&st);
    stat_begin(&st, "%s forward vs the same + 1e-6 in the denominator %s", kn, tag);
    for (size_t i = 0; i < p->no; i++)
        stat_add(&st, out[i], rg[i], FWD_ATOL, FWD_RTOL, "out", (long)i);
    stat_end(&st);

    /* backward vs double central differences of the reference */
    float *gq = fnew(p->nq), *gk = fnew(p->nk), *gv = fnew(p->nk);
    kind_bwd(p, gq, gk, gv, p->q, p->k, p->v);
    stat_begin(&st, "%s backward vs double FD of the reference %s", kn, tag);
    {
        float *gs[3] = {gq, gk, gv};
        size_t ns[3] = {p->nq, p->nk, p->nk};
        const char *names[3] = {"dq", "dk", "dv"};
        attn_check_ref_grads(&st, p, ref_grad, 3, gs, ns, names, GRAD_ATOL, GRAD_RTOL);
    }
    stat_end(&st);

    /* finite differences through the whole kind (float) */
    stat_begin(&st, "%s backward vs FD (eps %.0e) %s", kn, (double)FD_EPS, tag);
    fd_check(&st, "dq", p->q, p->nq, gq, attn_prob_loss, p);
    fd_check(&st, "dk", p->k, p->nk, gk, attn_prob_loss, p);
    fd_check(&st, "dv", p->v, p->nk, gv, attn_prob_loss, p);
    stat_end(&st);

    /* padding never receives weight: other padded keys / values change nothing; zero grads */
    stat_begin(&st, "%s padding: no weight, zero dk/dv, other padded keys change nothing %s", kn,
               tag);
    attn_check_padding(&st, p, out, gq, gk, gv);
    stat_end(&st);

    /* accumulate */
    stat_begin(&st, "%s backward accumulates %s", kn, tag);
    attn_check_accumulate(&st, p, gq, gk, gv);
    stat_end(&st);

    /* keys = values (the RNN: one buffer) with dk = dv (one buffer): dk + dv of separate runs */
    stat_begin(&st, "%s keys = values, dk = dv in one buffer %s", kn, tag);
    attn_check_kv_one_buffer(&st, p);
    stat_end(&st);
    free(q64), free(k64), free(v64), free(ro), free(rg), free(den), free(out);
    free(gq), free(gk), free(gv);
    attn_prob_free(p);
}

/* attention_decode_step, t = 0 .. T−1 from a zero state (one new key and query per step, every
 * row and head), equals the causal forward (teacher forcing: Tq = Tk = T, no padding) row by
 * row, bit for bit; the state's size does not depend on T. */
static void test_decode_equals_forward(void) {
    const int R = 2, NH = 3, HS = 5, T = 9;
    const int len[2] = {T, T};
    AttnProb P, *p = &P;
    kind_prob(p, 1, R, NH, T, T, HS, len);
    float *out = fnew(p->no);
    kind_fwd(p, out, p->q, p->k, p->v);
    size_t nst = attention_state_floats(&p->at, R, T);
    float *state = fnew(nst), *qt = fnew((size_t)R * NH * HS), *kt = fnew((size_t)R * NH * HS),
          *vt = fnew((size_t)R * NH * HS), *ot = fnew((size_t)R * NH * HS);
    float *work = fnew(attention_workspace(&p->at, be, R, 1, T) + 1);
    int step_len[2];
    Stat st;
    stat_begin(&st, "taylor decode_step t=0..%d equals the causal forward (R%d NH%d HS%d)", T - 1,
               R, NH, HS);
    stat_true(&st, nst == attention_state_floats(&p->at, R, 1000),
              "the decoding state grows with T");
    stat_true(&st, nst == (size_t)R * NH * (HS + 1) * (HS + 1), "state floats %zu", nst);
    for (int t = 0; t < T; t++) {
        for (int bh = 0; bh < R * NH; bh++) {
            memcpy(qt + (size_t)bh * HS, p->q + ((size_t)bh * T + t) * HS, sizeof(float) * HS);
            memcpy(kt + (size_t)bh * HS, p->k + ((size_t)bh * T + t) * HS, sizeof(float) * HS);
            memcpy(vt + (size_t)bh * HS, p->v + ((size_t)bh * T + t) * HS, sizeof(float) * HS);
        }
        for (int r = 0; r < R; r++) step_len[r] = t + 1;
        for (size_t i = 0; i < (size_t)R * NH * HS; i++) ot[i] = 123.0f;
        attention_decode_step(&p->at, be, ot, NULL, state, qt, kt, vt, step_len, R, t, T, work);
        for (int bh = 0; bh < R * NH; bh++)
            stat_true(&st, memcmp(ot + (size_t)bh * HS, out + ((size_t)bh * T + t) * HS,
                                  sizeof(float) * HS) == 0,
                      "step %d, row %d head %d: differs from the causal forward", t, bh / NH,
                      bh % NH);
    }
    stat_end(&st);
    free(out), free(state), free(qt), free(kt), free(vt), free(ot), free(work);
    attn_prob_free(p);
}

/* weights_host (attention maps): w_s = (1 + q̂·k̂_s) / Σ, summing to 1 */
static void test_weights_host(void) {
    const int HS = 6, len = 7;
    float *q = frand(HS, -1, 1), *k = frand((size_t)len * HS, -1, 1), w[7];
    attention_row(ATTN_TAYLOR)->weights_host(w, q, k, NULL, len, HS);
    double e[7], z = 0, sum = 0, nq = 0;
    for (int d = 0; d < HS; d++) nq += (double)q[d] * q[d];
    for (int s = 0; s < len; s++) {
        double nk = 0, qk = 0;
        for (int d = 0; d < HS; d++) nk += (double)k[s * HS + d] * k[s * HS + d],
                                     qk += (double)q[d] * k[s * HS + d];
        e[s] = 1 + qk / sqrt(nq * nk), z += e[s];
    }
    Stat st;
    stat_begin(&st, "taylor weights_host = (1 + q'.k'_s) / sum, sums to 1");
    for (int s = 0; s < len; s++)
        stat_add(&st, w[s], e[s] / z, FWD_ATOL, FWD_RTOL, "w", s), sum += w[s];
    stat_add(&st, sum, 1.0, FWD_ATOL, 0, "sum", 0);
    stat_end(&st);
    free(q), free(k);
}

/* 1 and 2 threads give the same bits (shapes above linear attention's OpenMP threshold). */
static void test_kind_threads(int causal) {
    const int B = 2, NH = 3, T = 48, HS = 16;
    const int len[2] = {48, 29};
    AttnProb P, *p = &P;
    kind_prob(p, causal, B, NH, T, T, HS, len);
    Stat st;
    stat_begin(&st, "taylor%s bit-identical for 1 and 2 threads", causal ? " causal" : "");
    attn_check_threads(&st, p);
    stat_end(&st);
    attn_prob_free(p);
}

void case_taylor_attn(void) {
    be = backend_cpu();
    rng_seed(&optest_rng, 20240611, 9);
    int threads0 = omp_get_max_threads();
    omp_set_num_threads(1);
    test_l2feature(5, 7, 0, 1);
    test_l2feature(3, 1, 0, 1);
    test_l2feature(4, 33, 1, 0); /* finite differences are meaningless at the zero row */
    test_l2feature(6, 9, 1, 0);
    test_l2feature_threads();
    /* masked (non-causal): key_len full / 0 / partial, Tq != Tk; one query (a decoder step) */
    const int len[3] = {5, 0, 3};
    test_kind(0, 3, 2, 4, 5, 4, len, "(Tq4 Tk5 HS4, len 5/0/3)");
    const int len1[2] = {1, 6};
    test_kind(0, 2, 2, 1, 6, 3, len1, "(Tq1 Tk6 HS3, len 1/6)");
    /* causal: Tq = Tk (self-attention) with padding; Tq < Tk; Tq > Tk (rows that see no key) */
    const int len2[3] = {6, 0, 4};
    test_kind(1, 3, 2, 6, 6, 4, len2, "(T6 HS4, len 6/0/4)");
    const int len3[2] = {5, 4};
    test_kind(1, 2, 1, 3, 5, 5, len3, "(Tq3 Tk5 HS5, len 5/4)");
    const int len4[2] = {3, 2};
    test_kind(1, 2, 2, 5, 3, 3, len4, "(Tq5 Tk3 HS3, len 3/2)");
    test_decode_equals_forward();
    test_weights_host();
    test_kind_threads(0);
    test_kind_threads(1);
    omp_set_num_threads(threads0);
}
