/* attention_linformer.c — the case of test_backend_ops (attention_cases.h) for the linformer
 * kind's ops linformer_proj_forward / linformer_proj_backward (src/ops/ops.h;
 * src/ops/cpu/linformer.c) and for the kind itself (src/attention/linformer.c: the projections
 * through attn_forward / attn_backward), on the CPU backend (backend_cpu()), against plain
 * double-precision references (docs/design.md §11). Helpers and the shared tolerances FWD_*, FD_*,
 * ACC_TOL: tests/optest.h.
 *
 * linformer_proj (per (b, h), L = min(key_len[b], Tk)): out[j,:] = Σ_{s<L} P_h[j,s] x[s,:].
 *   Checks, per-head and shared P, n > Tk and n = Tk, key_len full / 0 / partial / NULL: forward
 *   vs a double loop (out overwritten: NaN-prefilled); dx, dP vs the double gradient of
 *   Σ g ⊙ out; dx, dP vs central finite differences; accumulate; padded rows of dx and the
 *   columns s >= Tk of dP untouched (bit for bit); dx or dP NULL computes the other alone; the
 *   same bits for 1 and 2 OpenMP threads.
 *
 * The kind (Wang et al. 2020 eq. 7), per (b, h) and query t, written straight from the paper in
 * double loops: K̄ = E_h K (padded rows of K zeroed, only E_h's first Tk columns), V̄ = F_h V,
 *   out_t = Σ_j softmax_j(q_t·K̄_j / √HS) V̄_j.
 *   Checks, for the sharing modes none / headwise / kv (the parameter shapes each declares):
 *   forward vs the reference; backward (dq, dk, dv, dE, dF) vs double central differences of the
 *   reference (GRAD_* below) and vs finite differences of the float kind itself (fd_check);
 *   padding never receives weight (padded keys and values replaced by others change no output
 *   or gradient bit; padded dk, dv and the columns s >= Tk of dE, dF are exactly 0; a sentence
 *   with no key gets out = 0, dq = 0); accumulate; keys = values in one buffer with dk = dv in
 *   one buffer gives dk + dv (the RNN's call); one query at a time against the same keys (a
 *   decoding step of the cross-attention) equals the batched forward row for row, bit for bit;
 *   the kind refuses the causal slot (attention_supports names model.dec_self_attention and
 *   "no causal form"); bit-identical for 1 and 2 threads.
 * Runs on one OpenMP thread but for the thread checks. */
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
#include "ops/params.h"
#include "optest.h"
#include "testutil.h"

/* Backward vs double central differences (ε = REF_FD_EPS) of the double reference: error
 * O(ε²) + 1e-16/ε in the quotient, against the float kind's own rounding through the softmax
 * and two projections: GRAD_ATOL + GRAD_RTOL·|ref|. */
#define GRAD_ATOL 2e-5
#define GRAD_RTOL 2e-4
#define REF_FD_EPS 1e-6

static const Backend *be; /* backend_cpu() */

static int vlen(const int *key_len, int b, int Tk) {
    int L = key_len ? key_len[b] : Tk;
    return L > Tk ? Tk : (L < 0 ? 0 : L);
}

/* ------------------------------------------------------------------------------------------ */
/* linformer_proj_forward / _backward                                                         */

typedef struct {
    int B, NH, R, Tk, D, n, shared;
    const int *key_len;
    float *P, *x, *g, *out; /* P [NP,R,n], x [B,NH,Tk,D], g = dL/dout [B,NH,R,D], out scratch */
    size_t np, nx, no;
} ProjProb;

static double proj_loss(void *ctx) {
    ProjProb *p = ctx;
    be->linformer_proj_forward(p->out, p->P, p->x, p->key_len, p->B, p->NH, p->R, p->Tk, p->D,
                               p->n, p->shared);
    return dot_rd(p->g, p->out, p->no);
}

/* out, and dx, dP of Σ g ⊙ out, in double */
static void ref_proj(const ProjProb *p, double *out, double *dx, double *dP) {
    int NH = p->NH, R = p->R, Tk = p->Tk, D = p->D, n = p->n;
    for (int b = 0; b < p->B; b++)
        for (int h = 0; h < NH; h++) {
            size_t bh = (size_t)b * NH + h;
            const float *Ph = p->P + (p->shared ? 0 : (size_t)h * R * n);
            double *dPh = dP + (p->shared ? 0 : (size_t)h * R * n);
            int L = vlen(p->key_len, b, Tk);
            for (int j = 0; j < R; j++)
                for (int d = 0; d < D; d++) {
                    double acc = 0;
                    for (int s = 0; s < L; s++)
                        acc += (double)Ph[(size_t)j * n + s] * p->x[(bh * Tk + s) * D + d];
                    out[(bh * R + j) * D + d] = acc;
                }
            for (int s = 0; s < L; s++)
                for (int j = 0; j < R; j++)
                    for (int d = 0; d < D; d++) {
                        double g = p->g[(bh * R + j) * D + d];
                        dx[(bh * Tk + s) * D + d] += Ph[(size_t)j * n + s] * g;
                        dPh[(size_t)j * n + s] += g * p->x[(bh * Tk + s) * D + d];
                    }
        }
}

static void test_proj(int B, int NH, int R, int Tk, int D, int n, int shared, const int *len,
                      const char *tag) {
    ProjProb P = {.B = B, .NH = NH, .R = R, .Tk = Tk, .D = D, .n = n, .shared = shared,
                  .key_len = len};
    P.np = (size_t)(shared ? 1 : NH) * R * n, P.nx = (size_t)B * NH * Tk * D;
    P.no = (size_t)B * NH * R * D;
    P.P = frand(P.np, -1, 1), P.x = frand(P.nx, -1, 1), P.g = frand(P.no, -1, 1);
    P.out = fnew(P.no);
    double *ro = test_dnew(P.no), *rdx = test_dnew(P.nx), *rdP = test_dnew(P.np);
    ref_proj(&P, ro, rdx, rdP);
    Stat st;
    stat_begin(&st, "linformer_proj_forward vs double ref %s", tag);
    float *out = fnew(P.no);
    for (size_t i = 0; i < P.no; i++) out[i] = NAN;
    be->linformer_proj_forward(out, P.P, P.x, len, B, NH, R, Tk, D, n, shared);
    for (size_t i = 0; i < P.no; i++)
        stat_add(&st, out[i], ro[i], FWD_ATOL, FWD_RTOL, "out", (long)i);
    stat_end(&st);

    stat_begin(&st, "linformer_proj_backward vs double ref grad %s", tag);
    float *dx = fnew(P.nx), *dP = fnew(P.np);
    be->linformer_proj_backward(dx, dP, P.g, P.P, P.x, len, B, NH, R, Tk, D, n, shared);
    for (size_t i = 0; i < P.nx; i++)
        stat_add(&st, dx[i], rdx[i], FWD_ATOL, FWD_RTOL, "dx", (long)i);
    for (size_t i = 0; i < P.np; i++)
        stat_add(&st, dP[i], rdP[i], FWD_ATOL, FWD_RTOL, "dP", (long)i);
    stat_end(&st);

    stat_begin(&st, "linformer_proj backward vs FD (eps %.0e) %s", (double)FD_EPS, tag);
    fd_check(&st, "dx", P.x, P.nx, dx, proj_loss, &P);
    fd_check(&st, "dP", P.P, P.np, dP, proj_loss, &P);
    stat_end(&st);

    stat_begin(&st, "linformer_proj backward accumulates, leaves padding / columns >= Tk, one of "
               "dx, dP alone %s", tag);
    {
        float *px = frand(P.nx, -1, 1), *pP = frand(P.np, -1, 1);
        float *ax = fdup(px, P.nx), *aP = fdup(pP, P.np);
        be->linformer_proj_backward(ax, aP, P.g, P.P, P.x, len, B, NH, R, Tk, D, n, shared);
        accum_check(&st, "dx", ax, px, dx, P.nx);
        accum_check(&st, "dP", aP, pP, dP, P.np);
        for (int b = 0; b < B; b++)
            for (int h = 0; h < NH; h++)
                for (int s = vlen(len, b, Tk); s < Tk; s++) {
                    size_t i = (((size_t)b * NH + h) * Tk + s) * D;
                    stat_true(&st, !memcmp(ax + i, px + i, sizeof(float) * D),
                              "padded row b%d h%d s%d of dx was written", b, h, s);
                }
        for (size_t i = 0; i < P.np; i++)
            if ((int)(i % n) >= Tk)
                stat_true(&st, aP[i] == pP[i], "dP column %d >= Tk was written", (int)(i % n));
        float *x1 = fnew(P.nx), *P1 = fnew(P.np);
        be->linformer_proj_backward(x1, NULL, P.g, P.P, P.x, len, B, NH, R, Tk, D, n, shared);
        be->linformer_proj_backward(NULL, P1, P.g, P.P, P.x, len, B, NH, R, Tk, D, n, shared);
        stat_same(&st, "dx alone", x1, dx, P.nx);
        stat_same(&st, "dP alone", P1, dP, P.np);
        free(px), free(pP), free(ax), free(aP), free(x1), free(P1);
    }
    stat_end(&st);
    free(P.P), free(P.x), free(P.g), free(P.out), free(ro), free(rdx), free(rdP), free(out);
    free(dx), free(dP);
}

/* 1 and 2 threads, above the op's OpenMP threshold: the same bits. */
static void test_proj_threads(void) {
    const int B = 4, NH = 4, R = 16, Tk = 40, D = 16, n = 48;
    const int len[4] = {40, 17, 0, 33};
    for (int shared = 0; shared < 2; shared++) {
        size_t np = (size_t)(shared ? 1 : NH) * R * n, nx = (size_t)B * NH * Tk * D,
               no = (size_t)B * NH * R * D;
        float *P = frand(np, -1, 1), *x = frand(nx, -1, 1), *g = frand(no, -1, 1);
        float *o[2], *dx[2], *dP[2];
        for (int i = 0; i < 2; i++) {
            omp_set_num_threads(i + 1);
            o[i] = fnew(no), dx[i] = fnew(nx), dP[i] = fnew(np);
            be->linformer_proj_forward(o[i], P, x, len, B, NH, R, Tk, D, n, shared);
            be->linformer_proj_backward(dx[i], dP[i], g, P, x, len, B, NH, R, Tk, D, n, shared);
        }
        omp_set_num_threads(1);
        Stat st;
        stat_begin(&st, "linformer_proj bit-identical for 1 and 2 threads (shared %d)", shared);
        stat_same(&st, "out", o[0], o[1], no);
        stat_same(&st, "dx", dx[0], dx[1], nx);
        stat_same(&st, "dP", dP[0], dP[1], np);
        stat_end(&st);
        for (int i = 0; i < 2; i++) free(o[i]), free(dx[i]), free(dP[i]);
        free(P), free(x), free(g);
    }
}

/* ------------------------------------------------------------------------------------------ */
/* the linformer kind                                                                          */

/* floats of E (and of F): [NH·r, n] (share none) or [r, n] */
static size_t lf_size(const AttnProb *p) {
    return (size_t)(p->at.lf_share == LINFORMER_SHARE_NONE ? p->NH : 1) * p->at.lf_r * p->at.lf_n;
}

static float *E_w(const AttnProb *p) { return p->at.lf_E.w; }
static float *F_w(const AttnProb *p) { /* kv: F = E */
    return p->at.lf_share == LINFORMER_SHARE_KV ? p->at.lf_E.w : p->at.lf_F.w;
}

static void kind_fwd(const AttnProb *p, float *out, const float *q, const float *k, const float *v,
                     int Tq) {
    attention_forward(&p->at, be, out, NULL, q, k, v, p->key_len, 0, p->B, Tq, p->Tk, p->work);
}
/* dq, dk, dv accumulate; the parameter gradients start from zero */
static void kind_bwd(AttnProb *p, float *dq, float *dk, float *dv, const float *q, const float *k,
                     const float *v) {
    params_zero_grad(&p->ps);
    attention_backward(&p->at, be, dq, dk, dv, p->r, NULL, NULL, q, k, v, p->key_len, 0, p->B,
                       p->Tq, p->Tk, p->work);
}

/* kind_fwd on all Tq queries (the fixture's fwd) */
static void kind_fwd_all(const AttnProb *p, float *out, const float *q, const float *k,
                         const float *v) {
    kind_fwd(p, out, q, k, v, p->Tq);
}

/* One problem (attention_fixture.h) of the kind: sharing mode share, head size HS, E (and F)
 * [·, r, n] uniform in [−0.8, 0.8) (drawn first), q and k uniform in [−1, 1). */
static void kind_prob(AttnProb *p, LinformerShare share, int B, int NH, int Tq, int Tk, int HS,
                      int r, int n, const int *key_len) {
    *p = (AttnProb){.B = B, .NH = NH, .Tq = Tq, .Tk = Tk, .D = HS, .Dv = HS, .key_len = key_len,
                    .workspace = attn_kind_workspace, .fwd = kind_fwd_all, .bwd = kind_bwd};
    AttentionOptions opt = {.linformer_k = r, .linformer_max_len = n, .linformer_share = share};
    params_init_set(&p->ps, be);
    attention_declare(&p->at, &p->ps, "t", ATTN_LINFORMER, NH * HS, NH * HS, NH, 0, INIT_XAVIER,
                      &opt);
    params_allocate(&p->ps);
    for (size_t i = 0; i < p->ps.total; i++)
        p->ps.data[i] = 0.8f * (2 * rng_uniform(&optest_rng) - 1);
    attn_prob_init(p, 1.0f);
}

/* Wang et al. 2020 eq. 7, literally, in double: per (b, h): K̄ = E_h K, V̄ = F_h V over the
 * visible keys (padded rows of K, V zeroed), then for each query t
 * out_t = softmax(q_t K̄ᵀ / √HS) V̄. E, F [NP, r, n] (F may be E: kv). */
static void ref_linformer(const AttnProb *p, double *out, const double *q, const double *k,
                          const double *v, const double *E, const double *F, int shared) {
    int NH = p->NH, Tq = p->Tq, Tk = p->Tk, HS = p->D, r = p->at.lf_r, n = p->at.lf_n;
    double *Kb = test_dnew((size_t)r * HS), *Vb = test_dnew((size_t)r * HS), *e = test_dnew(r);
    double *Kz = test_dnew((size_t)Tk * HS), *Vz = test_dnew((size_t)Tk * HS);
    for (int b = 0; b < p->B; b++)
        for (int h = 0; h < NH; h++) {
            size_t bh = (size_t)b * NH + h;
            const double *Eh = E + (shared ? 0 : (size_t)h * r * n);
            const double *Fh = F + (shared ? 0 : (size_t)h * r * n);
            for (int s = 0; s < Tk; s++) /* padding zeroed before projecting */
                for (int d = 0; d < HS; d++) {
                    int pad = s >= vlen(p->key_len, b, Tk);
                    Kz[s * HS + d] = pad ? 0 : k[(bh * Tk + s) * HS + d];
                    Vz[s * HS + d] = pad ? 0 : v[(bh * Tk + s) * HS + d];
                }
            for (int j = 0; j < r; j++) /* E_i K, F_i V with the first Tk columns */
                for (int d = 0; d < HS; d++) {
                    double a = 0, c = 0;
                    for (int s = 0; s < Tk; s++)
                        a += Eh[(size_t)j * n + s] * Kz[s * HS + d],
                            c += Fh[(size_t)j * n + s] * Vz[s * HS + d];
                    Kb[j * HS + d] = a, Vb[j * HS + d] = c;
                }
            for (int t = 0; t < Tq; t++) {
                const double *qt = q + (bh * Tq + t) * HS;
                double mx = -INFINITY, z = 0;
                for (int j = 0; j < r; j++) {
                    double a = 0;
                    for (int d = 0; d < HS; d++) a += qt[d] * Kb[j * HS + d];
                    e[j] = a / sqrt((double)HS);
                    mx = e[j] > mx ? e[j] : mx;
                }
                for (int j = 0; j < r; j++) z += (e[j] = exp(e[j] - mx));
                for (int d = 0; d < HS; d++) {
                    double a = 0;
                    for (int j = 0; j < r; j++) a += e[j] / z * Vb[j * HS + d];
                    out[(bh * Tq + t) * HS + d] = a;
                }
            }
        }
    free(Kb), free(Vb), free(e), free(Kz), free(Vz);
}

static double *to_double(const float *x, size_t n) {
    double *d = test_dnew(n);
    for (size_t i = 0; i < n; i++) d[i] = x[i];
    return d;
}

static void ref_out(const AttnProb *p, double *out) {
    int kv = p->at.lf_share == LINFORMER_SHARE_KV;
    double *q = to_double(p->q, p->nq), *k = to_double(p->k, p->nk), *v = to_double(p->v, p->nk);
    double *E = to_double(E_w(p), lf_size(p)), *F = kv ? E : to_double(F_w(p), lf_size(p));
    ref_linformer(p, out, q, k, v, E, F, p->at.lf_share != LINFORMER_SHARE_NONE);
    free(q), free(k), free(v), free(E);
    if (!kv) free(F);
}

/* d/dx of Σ r ⊙ ref for x = q, k, v, E, F (which = 0..4; kv: E = F, one tensor) by double
 * central differences */
static void ref_grad(const AttnProb *p, double *grad, int which) {
    int kv = p->at.lf_share == LINFORMER_SHARE_KV;
    double *q = to_double(p->q, p->nq), *k = to_double(p->k, p->nk), *v = to_double(p->v, p->nk);
    double *E = to_double(E_w(p), lf_size(p)), *F = kv ? E : to_double(F_w(p), lf_size(p));
    double *o = test_dnew(p->no);
    double *x = which == 0 ? q : which == 1 ? k : which == 2 ? v : which == 3 ? E : F;
    size_t n = which == 0 ? p->nq : which <= 2 ? p->nk : lf_size(p);
    for (size_t i = 0; i < n; i++) {
        double x0 = x[i], l[2];
        for (int sg = 0; sg < 2; sg++) {
            x[i] = x0 + (sg ? -REF_FD_EPS : REF_FD_EPS);
            ref_linformer(p, o, q, k, v, E, F, p->at.lf_share != LINFORMER_SHARE_NONE);
            l[sg] = 0;
            for (size_t j = 0; j < p->no; j++) l[sg] += p->r[j] * o[j];
        }
        x[i] = x0;
        grad[i] = (l[0] - l[1]) / (2 * REF_FD_EPS);
    }
    free(q), free(k), free(v), free(E), free(o);
    if (!kv) free(F);
}

static void test_kind(LinformerShare share, int B, int NH, int Tq, int Tk, int HS, int r, int n,
                      const int *len, const char *tag0) {
    AttnProb P, *p = &P;
    kind_prob(p, share, B, NH, Tq, Tk, HS, r, n, len);
    int kv = share == LINFORMER_SHARE_KV;
    size_t nE = lf_size(p);
    char tag[160];
    snprintf(tag, sizeof tag, "share %s %s", linformer_share_names[share], tag0);
    Stat st;
    stat_begin(&st, "linformer parameters declared for share %s", linformer_share_names[share]);
    stat_true(&st, p->ps.n == (kv ? 1 : 2) && p->ps.total >= (kv ? 1 : 2) * nE &&
                       p->ps.specs[0].shape[0] == (share == LINFORMER_SHARE_NONE ? NH * r : r) &&
                       p->ps.specs[0].shape[1] == n,
              "%d tensors, E [%d, %d]", p->ps.n, p->ps.specs[0].shape[0], p->ps.specs[0].shape[1]);
    stat_end(&st);

    /* forward vs eq. 7 */
    double *ro = test_dnew(p->no);
    ref_out(p, ro);
    float *out = fnew(p->no);
    for (size_t i = 0; i < p->no; i++) out[i] = NAN;
    kind_fwd(p, out, p->q, p->k, p->v, Tq);
    stat_begin(&st, "linformer forward vs softmax(q (E K)^T / sqrt(HS)) (F V) %s", tag);
    for (size_t i = 0; i < p->no; i++)
        stat_add(&st, out[i], ro[i], FWD_ATOL, FWD_RTOL, "out", (long)i);
    stat_end(&st);

    /* backward vs double central differences of the reference */
    float *gq = fnew(p->nq), *gk = fnew(p->nk), *gv = fnew(p->nk);
    kind_bwd(p, gq, gk, gv, p->q, p->k, p->v);
    float *gE = fdup(p->at.lf_E.g, nE), *gF = kv ? NULL : fdup(p->at.lf_F.g, nE);
    stat_begin(&st, "linformer backward vs double FD of eq. 7 %s", tag);
    {
        float *gs[5] = {gq, gk, gv, gE, gF};
        size_t ns[5] = {p->nq, p->nk, p->nk, nE, nE};
        const char *names[5] = {"dq", "dk", "dv", "dE", "dF"};
        attn_check_ref_grads(&st, p, ref_grad, kv ? 4 : 5, gs, ns, names, GRAD_ATOL, GRAD_RTOL);
    }
    stat_end(&st);

    /* finite differences through the float kind */
    stat_begin(&st, "linformer backward vs FD (eps %.0e) %s", (double)FD_EPS, tag);
    fd_check(&st, "dq", p->q, p->nq, gq, attn_prob_loss, p);
    fd_check(&st, "dk", p->k, p->nk, gk, attn_prob_loss, p);
    fd_check(&st, "dv", p->v, p->nk, gv, attn_prob_loss, p);
    fd_check(&st, "dE", E_w(p), nE, gE, attn_prob_loss, p);
    if (!kv) fd_check(&st, "dF", F_w(p), nE, gF, attn_prob_loss, p);
    stat_end(&st);

    /* padding never receives weight */
    stat_begin(&st, "linformer padding: other padded keys / values change no bit, padded dk/dv "
               "and dE/dF columns >= Tk are 0 %s", tag);
    attn_check_padding(&st, p, out, gq, gk, gv);
    for (size_t i = 0; i < nE; i++)
        if ((int)(i % n) >= Tk)
            stat_true(&st, gE[i] == 0.0f && (kv || gF[i] == 0.0f),
                      "dE/dF column %d >= Tk is nonzero", (int)(i % n));
    stat_same(&st, "dE with other padded keys", p->at.lf_E.g, gE, nE);
    if (!kv) stat_same(&st, "dF with other padded keys", p->at.lf_F.g, gF, nE);
    stat_end(&st);

    /* accumulate */
    stat_begin(&st, "linformer backward accumulates %s", tag);
    attn_check_accumulate(&st, p, gq, gk, gv);
    /* the parameter gradient too: onto a prefill (drawn after the three above) */
    {
        float *pE = frand(nE, -1, 1);
        memcpy(p->at.lf_E.g, pE, sizeof(float) * nE);
        attention_backward(&p->at, be, NULL, NULL, NULL, p->r, NULL, NULL, p->q, p->k, p->v,
                           p->key_len, 0, B, Tq, Tk, p->work);
        accum_check(&st, "dE", p->at.lf_E.g, pE, gE, nE);
        free(pE);
    }
    stat_end(&st);

    /* keys = values (the RNN: one buffer) with dk = dv (one buffer): dk + dv of separate runs */
    stat_begin(&st, "linformer keys = values, dk = dv in one buffer %s", tag);
    attn_check_kv_one_buffer(&st, p);
    stat_end(&st);

    /* decoding: one query at a time against the same keys = the batched forward, bit for bit */
    stat_begin(&st, "linformer one query per call (decoding, keys fixed) = batched rows %s", tag);
    {
        size_t row = (size_t)HS, nq1 = (size_t)B * NH * HS;
        float *q1 = fnew(nq1), *o1 = fnew(nq1);
        for (int t = 0; t < Tq; t++) {
            for (int bh = 0; bh < B * NH; bh++)
                memcpy(q1 + bh * row, p->q + ((size_t)bh * Tq + t) * row, sizeof(float) * row);
            kind_fwd(p, o1, q1, p->k, p->v, 1);
            for (int bh = 0; bh < B * NH; bh++)
                stat_true(&st, !memcmp(o1 + bh * row, out + ((size_t)bh * Tq + t) * row,
                                       sizeof(float) * row),
                          "query %d, pair %d: differs from the batched forward", t, bh);
        }
        free(q1), free(o1);
    }
    stat_end(&st);
    free(ro), free(out), free(gq), free(gk), free(gv), free(gE), free(gF);
    attn_prob_free(p);
}

/* 1 and 2 threads give the same bits (shapes above the ops' OpenMP thresholds). */
static void test_kind_threads(void) {
    const int len[3] = {40, 23, 0};
    AttnProb P, *p = &P;
    kind_prob(p, LINFORMER_SHARE_NONE, 3, 4, 30, 40, 16, 16, 48, len);
    size_t nE = lf_size(p);
    float *o[2], *gq[2], *gk[2], *gv[2], *gE[2], *gF[2];
    for (int i = 0; i < 2; i++) {
        omp_set_num_threads(i + 1);
        attn_prob_work(p);
        o[i] = fnew(p->no), gq[i] = fnew(p->nq), gk[i] = fnew(p->nk), gv[i] = fnew(p->nk);
        kind_fwd(p, o[i], p->q, p->k, p->v, p->Tq);
        kind_bwd(p, gq[i], gk[i], gv[i], p->q, p->k, p->v);
        gE[i] = fdup(p->at.lf_E.g, nE), gF[i] = fdup(p->at.lf_F.g, nE);
    }
    omp_set_num_threads(1);
    Stat st;
    stat_begin(&st, "linformer bit-identical for 1 and 2 threads");
    stat_same(&st, "out", o[0], o[1], p->no);
    stat_same(&st, "dq", gq[0], gq[1], p->nq);
    stat_same(&st, "dk", gk[0], gk[1], p->nk);
    stat_same(&st, "dv", gv[0], gv[1], p->nk);
    stat_same(&st, "dE", gE[0], gE[1], nE);
    stat_same(&st, "dF", gF[0], gF[1], nE);
    stat_end(&st);
    for (int i = 0; i < 2; i++)
        free(o[i]), free(gq[i]), free(gk[i]), free(gv[i]), free(gE[i]), free(gF[i]);
    attn_prob_free(p);
}

/* The table refuses the causal slot and accepts the others. */
static void test_supports(void) {
    char why[512] = "";
    Stat st;
    stat_begin(&st, "linformer: refused for the decoder self-attention, accepted elsewhere");
    stat_true(&st, !attention_supports(ATTN_LINFORMER, ATTN_SLOT_DEC_SELF, 1, be, 8, 8, 2, why,
                                       sizeof why) &&
                       strstr(why, "model.dec_self_attention = linformer") &&
                       strstr(why, "no causal form"),
              "dec self-attention: '%s'", why);
    stat_true(&st, attention_supports(ATTN_LINFORMER, ATTN_SLOT_ENC_SELF, 0, be, 8, 8, 2, why,
                                      sizeof why), "encoder self: %s", why);
    stat_true(&st, attention_supports(ATTN_LINFORMER, ATTN_SLOT_CROSS, 0, be, 8, 8, 2, why,
                                      sizeof why), "cross: %s", why);
    stat_true(&st, attention_supports(ATTN_LINFORMER, ATTN_SLOT_RNN, 0, be, 8, 8, 2, why,
                                      sizeof why), "rnn: %s", why);
    AttentionOptions o = {.linformer_share = LINFORMER_SHARE_NONE};
    stat_true(&st, attention_max_keys(ATTN_LINFORMER, &o) == LINFORMER_MAX_LEN_DEFAULT &&
                       attention_max_keys(ATTN_LINFORMER, NULL) == LINFORMER_MAX_LEN_DEFAULT &&
                       attention_max_keys(ATTN_SDP, &o) == 0,
              "attention_max_keys defaults");
    stat_end(&st);
}

void case_linformer_attn(void) {
    be = backend_cpu();
    rng_seed(&optest_rng, 20240611, 11);
    int threads0 = omp_get_max_threads();
    omp_set_num_threads(1);
    const int len[3] = {5, 0, 3};
    test_proj(3, 2, 4, 5, 3, 7, 0, len, "(B3 NH2 R4 Tk5 D3 n7, len 5/0/3)");
    test_proj(3, 2, 4, 5, 3, 7, 1, len, "(shared P, len 5/0/3)");
    test_proj(2, 3, 3, 6, 4, 6, 0, NULL, "(Tk = n = 6, key_len NULL)");
    const int len2[2] = {9, 2};
    test_proj(2, 1, 5, 4, 2, 4, 1, len2, "(shared, key_len 9 > Tk / 2)");
    test_proj_threads();
    /* the kind: each sharing mode; Tk < n and Tk = n; r > Tk and r < Tk; one query (a step) */
    test_kind(LINFORMER_SHARE_NONE, 3, 2, 4, 5, 4, 3, 7, len, "(Tq4 Tk5 HS4 r3 n7, len 5/0/3)");
    test_kind(LINFORMER_SHARE_HEADWISE, 3, 2, 4, 5, 4, 6, 7, len,
              "(Tq4 Tk5 HS4 r6 n7, len 5/0/3)");
    test_kind(LINFORMER_SHARE_KV, 3, 2, 4, 5, 4, 3, 5, len, "(Tq4 Tk5 HS4 r3 n5, len 5/0/3)");
    const int len1[2] = {1, 6};
    test_kind(LINFORMER_SHARE_NONE, 2, 2, 1, 6, 3, 4, 6, len1, "(Tq1 Tk6 HS3 r4 n6, len 1/6)");
    test_kind_threads();
    test_supports();
    omp_set_num_threads(threads0);
}
