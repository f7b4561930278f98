/* attention_local.c — the case of test_backend_ops (attention_cases.h) for local attention (Luong
 * et al. 2015 §3.2): the ops local_attn_forward / local_attn_backward (src/ops/ops.h;
 * src/ops/cpu/attn_local.c) and the luong_local kind built on them (src/attention/local.c), on
 * the CPU backend, against plain double-precision references written from the paper's equations
 * (docs/design.md §11). Helpers and the shared tolerances FWD_*, FD_*, ACC_TOL: tests/optest.h.
 *
 * The reference (per row b, head h, query t; len = key_len[b], W the window, σ = W/2):
 *   p_t = pos0 + t (local-m) or len · sigmoid(z_t) (local-p, eq. 9);
 *   s ranges over the integers with |s − p_t| ≤ W and 0 ≤ s < len;
 *   a_t(s) = exp(e_s) / Σ_s' exp(e_s') (eq. 7 over the window), times exp(−(s − p_t)²/(2σ²)) for
 *   local-p (eq. 10); e_s = scale q·k_s (dot) or v_aᵀ tanh(q + k_s) (concat); c_t = Σ a_t(s) v_s.
 * For the kind, z_t = v_pᵀ tanh(W_p h_t) (eq. 9) and the score's query h_t W_a (general) or
 * W_q h_t (concat, the RNN's own projections) are formed in the reference from h_t too.
 *
 * Checks, for both modes and the scores dot (scale 1 and 0.5), additive; windows that clip at
 * both ends, windows wider than the sequence, empty windows (local-m past the end), key_len 0:
 *  - forward vs the double reference (FWD_*), weights saved = the reference's a_t(s); the saved
 *    rows (2W + 2 floats, ops.h) start at the window's first key max(⌈p_t − W⌉, 0) and hold
 *    exactly 0 past its last key;
 *  - backward vs double central differences of the reference (GRAD_*; dq, dk, dva, dv, dz) and
 *    vs central differences of the float op (fd_check: FD_*). Inputs are chosen so that no key
 *    sits within 0.15 of a window edge (p_t's fractional part in [0.3, 0.7]): window membership
 *    is piecewise constant in p_t and carries no gradient, which the differences then agree
 *    with;
 *  - padding: keys s >= len get weight 0 and exactly zero dk, dv; other padded keys and values
 *    change no output or gradient bit; a row with an empty window has out = 0 and dq = dz = 0;
 *  - accumulate; bit-identical for 1 and 2 OpenMP threads;
 *  - the kind (RNN setting: one head, own projections; Transformer setting: 2 heads on
 *    projected heads) for dot / general / concat / scaled_dot × monotonic / predictive: what it
 *    saves is B·Tq·NH·(2W + 2) floats and neither that nor its workspace grows with Tk; forward
 *    vs the reference from h_t, and its gradients (dq, dk, dv and every parameter it owns: W_a,
 *    W_q, v, v_a, W_p, v_p) vs central differences of the float kind;
 *  - local-m with scaled_dot and a window over every key against the sdp kind (W_Q = W_a).
 * Runs on one OpenMP thread but for the thread check. */
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention/attention.h"
#include "attention_cases.h"
#include "ops/cpu/cpu.h"
#include "ops/ops.h"
#include "ops/params.h"
#include "optest.h"
#include "testutil.h"

/* Backward vs double central differences (ε = REF_FD_EPS) of the double reference: the float
 * op's own rounding (a softmax over ≤ 2W + 1 keys, D-term dot products). */
#define GRAD_ATOL 2e-5
#define GRAD_RTOL 2e-4
#define REF_FD_EPS 1e-6

static const Backend *be; /* backend_cpu() */

/* ------------------------------------------------------------------------------------------ */
/* the ops                                                                                    */

typedef struct {
    int B, NH, Tq, Tk, D, Dv, window, pos0, additive, pred;
    float scale;
    const int *key_len;               /* [B] */
    float *q, *k, *va, *v, *z;        /* [B,NH,Tq,D], [B,NH,Tk,D], [NH,D], [B,NH,Tk,Dv], [B,Tq] */
    float *r, *out, *w;               /* r = dL/dout; out, saved weights [ns] scratch */
    size_t nq, nk, nv, no, nw, nz, na; /* nw: the weights over all keys [B,NH,Tq,Tk] */
    size_t ns;                        /* the saved windows [B,NH,Tq,LW] */
    int LW;                           /* 2W + 2: a saved row (its first key, its weights) */
} OpProb;

static int plen(const OpProb *p, int b) {
    int l = p->key_len[b];
    return l > p->Tk ? p->Tk : l < 0 ? 0 : l;
}

/* p_t of query t of batch row b in double (the reference's) */
static double ref_pt(const OpProb *p, const double *z, int b, int t) {
    return p->pred ? plen(p, b) / (1.0 + exp(-z[(size_t)b * p->Tq + t])) : p->pos0 + t;
}

/* The saved windows [ns] placed over the keys: dense [nw], zero outside each window (written
 * here from ops.h's layout, apart from the library's attention_saved_weights_host). */
static void expand(const OpProb *p, const float *saved, float *dense) {
    memset(dense, 0, sizeof(float) * p->nw);
    for (size_t row = 0; row < p->nw / (p->Tk ? p->Tk : 1); row++) {
        const float *sr = saved + row * p->LW;
        int lo = (int)sr[0];
        for (int j = 0; j + 1 < p->LW; j++)
            if (lo + j >= 0 && lo + j < p->Tk) dense[row * p->Tk + lo + j] = sr[1 + j];
    }
}

/* The reference, in double, from (possibly perturbed) double copies of the inputs. out [no],
 * w [nw] (may be NULL). */
static void ref_local(const OpProb *p, double *out, double *w, const double *q, const double *k,
                      const double *va, const double *v, const double *z) {
    double sig = p->window / 2.0;
    memset(out, 0, sizeof(double) * p->no);
    if (w) memset(w, 0, sizeof(double) * p->nw);
    for (int b = 0; b < p->B; b++)
        for (int h = 0; h < p->NH; h++)
            for (int t = 0; t < p->Tq; t++) {
                size_t r = (size_t)b * p->NH + h, row = r * p->Tq + t;
                int len = plen(p, b);
                double pt = ref_pt(p, z, b, t);
                double e[256], mx = -INFINITY, sum = 0;
                int in[256];
                for (int s = 0; s < p->Tk; s++) {
                    in[s] = s < len && fabs(s - pt) <= p->window;
                    if (!in[s]) continue;
                    double acc = 0;
                    const double *qr = q + row * p->D, *kr = k + (r * p->Tk + s) * p->D;
                    for (int d = 0; d < p->D; d++)
                        acc += p->additive ? va[h * p->D + d] * tanh(qr[d] + kr[d])
                                           : p->scale * qr[d] * kr[d];
                    e[s] = acc;
                    if (acc > mx) mx = acc;
                }
                for (int s = 0; s < p->Tk; s++)
                    if (in[s]) sum += exp(e[s] - mx);
                for (int s = 0; s < p->Tk; s++) {
                    if (!in[s]) continue;
                    double a = exp(e[s] - mx) / sum; /* eq. 7 over the window */
                    if (p->pred) a *= exp(-(s - pt) * (s - pt) / (2 * sig * sig)); /* eq. 10 */
                    if (w) w[row * p->Tk + s] = a;
                    for (int d = 0; d < p->Dv; d++)
                        out[row * p->Dv + d] += a * v[(r * p->Tk + s) * p->Dv + d];
                }
            }
}

/* z such that p_t = len·σ(z) has its fractional part in [0.3, 0.7] (no key near an edge) */
static void pick_z(OpProb *p) {
    float *u = frand(2 * p->nz, 0, 1);
    for (int b = 0; b < p->B; b++)
        for (int t = 0; t < p->Tq; t++) {
            size_t i = (size_t)b * p->Tq + t;
            int len = plen(p, b);
            double base = (int)(u[2 * i] * (len > 0 ? len - 1 : 0)) + 0.3 + 0.4 * u[2 * i + 1];
            double f = len > 0 ? base / len : 0.5;
            if (f >= 0.999) f = 0.999;
            p->z[i] = (float)log(f / (1 - f));
        }
    free(u);
}

static void opprob_init(OpProb *p, int B, int NH, int Tq, int Tk, int D, int Dv, int window,
                        int pos0, int additive, int pred, float scale, const int *key_len) {
    memset(p, 0, sizeof *p);
    p->B = B, p->NH = NH, p->Tq = Tq, p->Tk = Tk, p->D = D, p->Dv = Dv, p->window = window;
    p->pos0 = pos0, p->additive = additive, p->pred = pred, p->scale = scale;
    p->key_len = key_len;
    p->nq = (size_t)B * NH * Tq * D, p->nk = (size_t)B * NH * Tk * D;
    p->nv = (size_t)B * NH * Tk * Dv, p->no = (size_t)B * NH * Tq * Dv;
    p->nw = (size_t)B * NH * Tq * Tk, p->nz = (size_t)B * Tq, p->na = (size_t)NH * D;
    p->LW = 2 * window + 2, p->ns = (size_t)B * NH * Tq * p->LW;
    CHECK(local_attn_save_width(window) == p->LW, "ops.h's saved row is 2W + 2 floats");
    p->q = frand(p->nq, -1, 1), p->k = frand(p->nk, -1, 1), p->v = frand(p->nv, -1, 1);
    p->va = frand(p->na, -1, 1), p->z = fnew(p->nz);
    if (pred) pick_z(p);
    p->r = frand(p->no, -1, 1), p->out = fnew(p->no), p->w = fnew(p->ns);
}

static void opprob_free(OpProb *p) {
    free(p->q), free(p->k), free(p->va), free(p->v), free(p->z), free(p->r), free(p->out),
        free(p->w);
}

static void op_fwd(const OpProb *p, float *out, float *w, const float *k, const float *v) {
    be->local_attn_forward(out, w, p->q, k, p->additive ? p->va : NULL, v, p->pred ? p->z : NULL,
                           p->key_len, p->scale, p->window, p->pos0, p->B, p->NH, p->Tq, p->Tk,
                           p->D, p->Dv);
}

static void op_bwd(const OpProb *p, float *dq, float *dk, float *dva, float *dv, float *dz,
                   const float *k, const float *v, const float *w) {
    be->local_attn_backward(dq, dk, p->additive ? dva : NULL, dv, p->pred ? dz : NULL, p->r, p->q,
                            k, p->additive ? p->va : NULL, v, p->pred ? p->z : NULL, w,
                            p->key_len, p->scale, p->window, p->pos0, p->B, p->NH, p->Tq, p->Tk,
                            p->D, p->Dv, NULL);
}

static double op_loss(void *ctx) {
    OpProb *p = ctx;
    op_fwd(p, p->out, p->w, p->k, p->v);
    return dot_rd(p->r, p->out, p->no);
}

static double *to_d(const float *x, size_t n) {
    double *d = test_dnew(n ? n : 1);
    for (size_t i = 0; i < n; i++) d[i] = x[i];
    return d;
}

/* d/dx of Σ r ⊙ ref by double central differences; which: 0 q, 1 k, 2 va, 3 v, 4 z */
static void op_ref_grad(const OpProb *p, double *grad, int which) {
    double *x[5] = {to_d(p->q, p->nq), to_d(p->k, p->nk), to_d(p->va, p->na), to_d(p->v, p->nv),
                    to_d(p->z, p->nz)};
    size_t n[5] = {p->nq, p->nk, p->na, p->nv, p->nz};
    double *o = test_dnew(p->no);
    for (size_t i = 0; i < n[which]; i++) {
        double x0 = x[which][i], l[2];
        for (int sg = 0; sg < 2; sg++) {
            x[which][i] = x0 + (sg ? -REF_FD_EPS : REF_FD_EPS);
            ref_local(p, o, NULL, x[0], x[1], x[2], x[3], x[4]);
            l[sg] = 0;
            for (size_t j = 0; j < p->no; j++) l[sg] += p->r[j] * o[j];
        }
        x[which][i] = x0;
        grad[i] = (l[0] - l[1]) / (2 * REF_FD_EPS);
    }
    for (int i = 0; i < 5; i++) free(x[i]);
    free(o);
}

static void test_op(OpProb *p, const char *tag) {
    char kn[160];
    snprintf(kn, sizeof kn, "local_attn %s %s W%d%s %s", p->pred ? "predictive" : "monotonic",
             p->additive ? "additive" : "dot", p->window, p->pos0 ? " pos0" : "", tag);
    Stat st;
    /* forward vs the reference (out and the saved weights; both overwritten) */
    double *q64 = to_d(p->q, p->nq), *k64 = to_d(p->k, p->nk), *a64 = to_d(p->va, p->na),
           *v64 = to_d(p->v, p->nv), *z64 = to_d(p->z, p->nz);
    double *ro = test_dnew(p->no), *rw = test_dnew(p->nw);
    ref_local(p, ro, rw, q64, k64, a64, v64, z64);
    float *out = fnew(p->no), *ws = fnew(p->ns), *w = fnew(p->nw);
    for (size_t i = 0; i < p->no; i++) out[i] = NAN;
    for (size_t i = 0; i < p->ns; i++) ws[i] = NAN;
    op_fwd(p, out, ws, p->k, p->v);
    expand(p, ws, w);
    stat_begin(&st, "%s forward vs eq. 7/9/10 reference", kn);
    for (size_t i = 0; i < p->no; i++)
        stat_add(&st, out[i], ro[i], FWD_ATOL, FWD_RTOL, "out", (long)i);
    for (size_t i = 0; i < p->nw; i++) stat_add(&st, w[i], rw[i], FWD_ATOL, FWD_RTOL, "w", (long)i);
    stat_end(&st);
    /* the saved rows: 2W + 2 floats, the window's first key max(⌈p_t − W⌉, 0), then exactly 0
     * past the window's last key (so nothing outside the window is kept) */
    stat_begin(&st, "%s saved rows: the window's first key, zeros past the window", kn);
    for (int b = 0; b < p->B; b++)
        for (int h = 0; h < p->NH; h++)
            for (int t = 0; t < p->Tq; t++) {
                size_t row = ((size_t)b * p->NH + h) * p->Tq + t;
                const float *sr = ws + row * p->LW;
                double pt = ref_pt(p, z64, b, t);
                int lo = (int)ceil(pt - p->window), len = plen(p, b);
                lo = lo < 0 ? 0 : lo;
                stat_true(&st, sr[0] == (float)lo, "row b%d h%d t%d starts at %g, not %d", b, h,
                          t, (double)sr[0], lo);
                for (int j = 0; j + 1 < p->LW; j++) {
                    int s = lo + j, in = s < len && fabs(s - pt) <= p->window;
                    stat_true(&st, in || sr[1 + j] == 0.0f,
                              "row b%d h%d t%d keeps %g at key %d, outside its window", b, h, t,
                              (double)sr[1 + j], s);
                }
            }
    stat_end(&st);

    /* backward vs double central differences of the reference */
    float *g[5] = {fnew(p->nq), fnew(p->nk), fnew(p->na), fnew(p->nv), fnew(p->nz)};
    size_t n[5] = {p->nq, p->nk, p->na, p->nv, p->nz};
    const char *names[5] = {"dq", "dk", "dva", "dv", "dz"};
    op_bwd(p, g[0], g[1], g[2], g[3], g[4], p->k, p->v, ws);
    stat_begin(&st, "%s backward vs double FD of the reference", kn);
    for (int i = 0; i < 5; i++) {
        if ((i == 2 && !p->additive) || (i == 4 && !p->pred)) continue;
        double *rg = test_dnew(n[i]);
        op_ref_grad(p, rg, i);
        for (size_t j = 0; j < n[i]; j++)
            stat_add(&st, g[i][j], rg[j], GRAD_ATOL, GRAD_RTOL, names[i], (long)j);
        free(rg);
    }
    stat_end(&st);
    stat_begin(&st, "%s backward vs FD (eps %.0e)", kn, (double)FD_EPS);
    float *xs[5] = {p->q, p->k, p->va, p->v, p->z};
    for (int i = 0; i < 5; i++) {
        if ((i == 2 && !p->additive) || (i == 4 && !p->pred)) continue;
        fd_check(&st, names[i], xs[i], n[i], g[i], op_loss, p);
    }
    stat_end(&st);

    /* padding: zero weight and zero dk/dv at s >= len; other padded keys change nothing */
    stat_begin(&st, "%s padding: no weight, zero dk/dv, other padded keys change nothing", kn);
    {
        float *k2 = fdup(p->k, p->nk), *v2 = fdup(p->v, p->nv), *o2 = fnew(p->no);
        float *w2 = fnew(p->ns);
        float *h[5] = {fnew(p->nq), fnew(p->nk), fnew(p->na), fnew(p->nv), fnew(p->nz)};
        for (int b = 0; b < p->B; b++)
            for (int hh = 0; hh < p->NH; hh++)
                for (int s = plen(p, b); s < p->Tk; s++) {
                    size_t r = (size_t)b * p->NH + hh;
                    for (int t = 0; t < p->Tq; t++)
                        stat_true(&st, w[(r * p->Tq + t) * p->Tk + s] == 0.0f,
                                  "padded key b%d h%d s%d has weight", b, hh, s);
                    for (int d = 0; d < p->D; d++) {
                        stat_true(&st, g[1][(r * p->Tk + s) * p->D + d] == 0.0f,
                                  "padded key b%d h%d s%d has a nonzero dk", b, hh, s);
                        k2[(r * p->Tk + s) * p->D + d] = 50.0f * (d % 2 ? 1 : -1);
                    }
                    for (int d = 0; d < p->Dv; d++) {
                        stat_true(&st, g[3][(r * p->Tk + s) * p->Dv + d] == 0.0f,
                                  "padded key b%d h%d s%d has a nonzero dv", b, hh, s);
                        v2[(r * p->Tk + s) * p->Dv + d] = 1e3f;
                    }
                }
        op_fwd(p, o2, w2, k2, v2);
        op_bwd(p, h[0], h[1], h[2], h[3], h[4], k2, v2, w2);
        stat_same(&st, "out with other padded keys", o2, out, p->no);
        stat_same(&st, "weights with other padded keys", w2, ws, p->ns);
        for (int i = 0; i < 5; i++) stat_same(&st, names[i], h[i], g[i], n[i]);
        for (int b = 0; b < p->B; b++) /* rows with an empty window: out = 0, dq = 0 */
            for (int hh = 0; hh < p->NH; hh++)
                for (int t = 0; t < p->Tq; t++) {
                    size_t row = ((size_t)b * p->NH + hh) * p->Tq + t;
                    double sw = 0;
                    for (int s = 0; s < p->Tk; s++) sw += rw[row * p->Tk + s];
                    if (sw != 0) continue;
                    int zero = 1;
                    for (int d = 0; d < p->Dv; d++) zero &= out[row * p->Dv + d] == 0.0f;
                    for (int d = 0; d < p->D; d++) zero &= g[0][row * p->D + d] == 0.0f;
                    if (p->pred) zero &= g[4][(size_t)b * p->Tq + t] == 0.0f;
                    stat_true(&st, zero, "row b%d h%d t%d has an empty window: out/dq/dz nonzero",
                              b, hh, t);
                }
        free(k2), free(v2), free(o2), free(w2);
        for (int i = 0; i < 5; i++) free(h[i]);
    }
    stat_end(&st);

    stat_begin(&st, "%s backward accumulates", kn);
    {
        float *pre[5], *acc[5];
        for (int i = 0; i < 5; i++) pre[i] = frand(n[i], -1, 1), acc[i] = fdup(pre[i], n[i]);
        op_bwd(p, acc[0], acc[1], acc[2], acc[3], acc[4], p->k, p->v, ws);
        for (int i = 0; i < 5; i++) {
            if ((i == 2 && !p->additive) || (i == 4 && !p->pred)) continue;
            accum_check(&st, names[i], acc[i], pre[i], g[i], n[i]);
        }
        for (int i = 0; i < 5; i++) free(pre[i]), free(acc[i]);
    }
    stat_end(&st);
    free(q64), free(k64), free(a64), free(v64), free(z64), free(ro), free(rw), free(out), free(w),
        free(ws);
    for (int i = 0; i < 5; i++) free(g[i]);
}

/* 1 and 2 threads give the same bits (above the op's OpenMP threshold) */
static void test_op_threads(int additive, int pred) {
    const int len[3] = {40, 17, 33};
    OpProb P;
    opprob_init(&P, 3, 2, 24, 40, 16, 12, 6, 3, additive, pred, 1.0f, len);
    float *o[2], *w[2], *g[2][5];
    size_t n[5] = {P.nq, P.nk, P.na, P.nv, P.nz};
    for (int i = 0; i < 2; i++) {
        omp_set_num_threads(i + 1);
        o[i] = fnew(P.no), w[i] = fnew(P.ns);
        for (int j = 0; j < 5; j++) g[i][j] = fnew(n[j]);
        op_fwd(&P, o[i], w[i], P.k, P.v);
        op_bwd(&P, g[i][0], g[i][1], g[i][2], g[i][3], g[i][4], P.k, P.v, w[i]);
    }
    omp_set_num_threads(1);
    Stat st;
    stat_begin(&st, "local_attn %s %s bit-identical for 1 and 2 threads",
               pred ? "predictive" : "monotonic", additive ? "additive" : "dot");
    stat_same(&st, "out", o[0], o[1], P.no);
    stat_same(&st, "weights", w[0], w[1], P.ns);
    const char *names[5] = {"dq", "dk", "dva", "dv", "dz"};
    for (int j = 0; j < 5; j++) stat_same(&st, names[j], g[0][j], g[1][j], n[j]);
    stat_end(&st);
    for (int i = 0; i < 2; i++) {
        free(o[i]), free(w[i]);
        for (int j = 0; j < 5; j++) free(g[i][j]);
    }
    opprob_free(&P);
}

/* ------------------------------------------------------------------------------------------ */
/* the luong_local kind                                                                       */

typedef struct {
    Attention at;
    ParamSet ps;
    int B, NH, Tq, Tk, Dq, Dk, HS, own;
    const int *key_len;
    float *q, *k, *v, *r, *out, *save, *work; /* q [B,NH,Tq,HS] (the RNN: [B,Tq,Dq]) */
    size_t nq, nk, nv, no;
} KindProb;

static double kind_loss(void *ctx) {
    KindProb *p = ctx;
    attention_forward(&p->at, be, p->out, p->save, p->q, p->k, p->v, p->key_len, 0, p->B, p->Tq,
                      p->Tk, p->work);
    return dot_rd(p->r, p->out, p->no);
}

/* The reference from h_t: per (b, t) the merged query h [Dq] (heads merged when NH > 1), z =
 * v_pᵀ tanh(W_p h) (eq. 9), q' = h W_a (general, scaled_dot; W_a [Dq, Dk]) / W_q h (concat, own
 * projections) / h, split into heads; then ref_local per head with the kind's keys and values,
 * scale 1/√HS for scaled_dot. */
static void kind_ref(const KindProb *p, double *out) {
    const Attention *a = &p->at;
    const AttentionOptions *o = &a->opt;
    int sc = o->local_score, pred = o->local_mode == LOCAL_PREDICTIVE;
    int concat = sc == LOCAL_SCORE_CONCAT;
    int D = concat ? a->A : p->HS, NH = p->NH;
    OpProb op;
    memset(&op, 0, sizeof op);
    op.B = p->B, op.NH = NH, op.Tq = p->Tq, op.Tk = p->Tk, op.D = D, op.Dv = p->HS;
    op.window = o->local_window, op.pos0 = a->pos0, op.additive = concat, op.pred = pred;
    op.scale = sc == LOCAL_SCORE_SCALED_DOT ? (float)(1.0 / sqrt((double)p->HS)) : 1.0f;
    op.key_len = p->key_len;
    op.nq = (size_t)p->B * NH * p->Tq * D, op.nk = (size_t)p->B * NH * p->Tk * D;
    op.nv = p->nv, op.no = p->no, op.nw = (size_t)p->B * NH * p->Tq * p->Tk;
    op.nz = (size_t)p->B * p->Tq, op.na = (size_t)NH * D;
    double *q = test_dnew(op.nq), *z = test_dnew(op.nz), *h = test_dnew((size_t)p->Dq),
           *va = concat ? to_d(a->v_a.w, op.na) : test_dnew(1);
    for (int b = 0; b < p->B; b++)
        for (int t = 0; t < p->Tq; t++) {
            for (int hh = 0; hh < NH; hh++) /* merge the heads of h_t */
                for (int d = 0; d < p->Dq / NH; d++)
                    h[hh * (p->Dq / NH) + d] =
                        p->q[(((size_t)b * NH + hh) * p->Tq + t) * (p->Dq / NH) + d];
            if (pred) {
                double acc = 0;
                for (int i = 0; i < p->Dq; i++) {
                    double u = 0;
                    for (int j = 0; j < p->Dq; j++) u += a->W_p.w[(size_t)i * p->Dq + j] * h[j];
                    acc += a->v_p.w[i] * tanh(u);
                }
                z[(size_t)b * p->Tq + t] = acc;
            }
            int W = NH * D; /* merged width of q' */
            for (int c = 0; c < W; c++) {
                double acc = 0;
                if (sc == LOCAL_SCORE_GENERAL || sc == LOCAL_SCORE_SCALED_DOT) /* (h W_a)_c */
                    for (int j = 0; j < p->Dq; j++) acc += h[j] * a->W_a.w[(size_t)j * p->Dk + c];
                else if (concat && p->own) /* (W_q h)_c, W_q [A, Dq] */
                    for (int j = 0; j < p->Dq; j++) acc += a->W_a.w[(size_t)c * p->Dq + j] * h[j];
                else
                    acc = h[c];
                int hh = c / D, d = c % D;
                q[(((size_t)b * NH + hh) * p->Tq + t) * D + d] = acc;
            }
        }
    double *k = to_d(p->k, op.nk), *v = to_d(p->v, p->nv);
    ref_local(&op, out, NULL, q, k, va, v, z);
    free(q), free(z), free(h), free(va), free(k), free(v);
}

static void test_kind(int own, int NH, int B, int Tq, int Tk, int Dq, int window, int pos0,
                      LocalMode mode, LocalScore score, const int *key_len) {
    KindProb P, *p = &P;
    memset(p, 0, sizeof *p);
    AttentionOptions opts = {
        .local_window = window, .local_mode = mode, .local_score = score};
    params_init_set(&p->ps, be);
    attention_declare(&p->at, &p->ps, "l", ATTN_LUONG_LOCAL, Dq, Dq, NH, own, INIT_UNIFORM, &opts);
    params_allocate(&p->ps);
    Rng rng;
    rng_seed(&rng, 77, (uint64_t)mode * 3 + score);
    params_initialise(&p->ps, &rng, 1.0f);
    p->at.pos0 = pos0;
    p->B = B, p->NH = NH, p->Tq = Tq, p->Tk = Tk, p->Dq = p->Dk = Dq, p->HS = Dq / NH, p->own = own;
    p->key_len = key_len;
    int Dkey = score == LOCAL_SCORE_CONCAT ? p->at.A * NH : Dq; /* the keys after the RNN's U */
    p->nq = (size_t)B * Tq * Dq, p->nk = (size_t)B * Tk * Dkey, p->nv = (size_t)B * Tk * Dq;
    p->no = (size_t)B * Tq * Dq;
    p->q = frand(p->nq, -1, 1), p->k = frand(p->nk, -1, 1), p->v = frand(p->nv, -1, 1);
    p->r = frand(p->no, -1, 1), p->out = fnew(p->no);
    p->save = fnew(attention_save_floats(&p->at, (long)B * Tq, Tk));
    p->work = fnew(attention_workspace(&p->at, be, B, Tq, Tk) + 1);
    char kn[160];
    snprintf(kn, sizeof kn, "luong_local kind %s %s %s NH%d W%d (B%d Tq%d Tk%d Dq%d)",
             own ? "RNN" : "heads", local_mode_names[mode], local_score_names[score], NH, window,
             B, Tq, Tk, Dq);
    Stat st;
    /* what the kind saves and its workspace: O(Tq·W) a head, the same at 64 times the keys */
    stat_begin(&st, "%s saves and works in O(Tq W)", kn);
    {
        size_t ns = attention_save_floats(&p->at, (long)B * Tq, Tk);
        stat_true(&st, ns == (size_t)B * Tq * NH * (2 * window + 2),
                  "saves %zu floats, not B Tq NH (2W + 2)", ns);
        stat_true(&st, attention_save_floats(&p->at, (long)B * Tq, 64 * Tk) == ns,
                  "the saved floats grow with Tk");
        stat_true(&st, attention_workspace(&p->at, be, B, Tq, 64 * Tk) ==
                           attention_workspace(&p->at, be, B, Tq, Tk),
                  "the workspace grows with Tk");
    }
    stat_end(&st);
    /* p_t (local-p) comes from the parameters here: the seed was checked to put no key within
     * the differences' reach (~1e-3) of a window edge */
    double *ro = test_dnew(p->no);
    kind_ref(p, ro);
    kind_loss(p);
    stat_begin(&st, "%s forward vs the reference from h_t (eq. 7, 9, 10)", kn);
    for (size_t i = 0; i < p->no; i++)
        stat_add(&st, p->out[i], ro[i], FWD_ATOL, FWD_RTOL, "out", (long)i);
    stat_end(&st);

    float *dq = fnew(p->nq), *dk = fnew(p->nk), *dv = fnew(p->nv);
    params_zero_grad(&p->ps);
    attention_backward(&p->at, be, dq, dk, dv, p->r, p->out, p->save, p->q, p->k, p->v,
                       p->key_len, 0, B, Tq, Tk, p->work);
    stat_begin(&st, "%s backward vs FD (eps %.0e), parameters included", kn, (double)FD_EPS);
    fd_check(&st, "dq", p->q, p->nq, dq, kind_loss, p);
    fd_check(&st, "dk", p->k, p->nk, dk, kind_loss, p);
    fd_check(&st, "dv", p->v, p->nv, dv, kind_loss, p);
    for (int i = 0; i < p->ps.n; i++) {
        const ParamSpec *s = &p->ps.specs[i];
        fd_check(&st, s->name, p->ps.data + s->offset, s->size, p->ps.grad + s->offset, kind_loss,
                 p);
    }
    stat_end(&st);
    free(ro), free(dq), free(dk), free(dv);
    free(p->q), free(p->k), free(p->v), free(p->r), free(p->out), free(p->save), free(p->work);
    params_free(&p->ps);
}

/* local-m with the scaled_dot score and a window over every key computes sdp's function with
 * W_Q = W_a (Vaswani et al. 2017 eq. 1), padded keys included: the luong_local kind on h_t's
 * heads against the sdp kind on the heads of h_t W_a, forward outputs within FWD_*. */
static void test_scaled_dot_is_sdp(void) {
    enum { B = 2, NH = 2, Tq = 5, Tk = 6, Dq = 8, HS = Dq / NH };
    const int key_len[B] = {6, 4};
    AttentionOptions opts = {.local_window = Tq + Tk, .local_mode = LOCAL_MONOTONIC,
                             .local_score = LOCAL_SCORE_SCALED_DOT};
    ParamSet ps;
    Attention loc, sdp;
    params_init_set(&ps, be);
    attention_declare(&loc, &ps, "l", ATTN_LUONG_LOCAL, Dq, Dq, NH, 0, INIT_UNIFORM, &opts);
    attention_declare(&sdp, &ps, "s", ATTN_SDP, Dq, Dq, NH, 0, INIT_UNIFORM, &opts);
    params_allocate(&ps);
    Rng rng;
    rng_seed(&rng, 2017, 1);
    params_initialise(&ps, &rng, 1.0f);
    size_t nq = (size_t)B * Tq * Dq, nk = (size_t)B * Tk * Dq;
    float *h = frand(nq, -1, 1), *k = frand(nk, -1, 1), *v = frand(nk, -1, 1), *q = fnew(nq);
    for (int b = 0; b < B; b++) /* q = the heads of h_t W_a, h_t merged from h's heads */
        for (int t = 0; t < Tq; t++)
            for (int c = 0; c < Dq; c++) {
                double acc = 0;
                for (int j = 0; j < Dq; j++)
                    acc += (double)h[(((size_t)b * NH + j / HS) * Tq + t) * HS + j % HS] *
                           loc.W_a.w[(size_t)j * Dq + c];
                q[(((size_t)b * NH + c / HS) * Tq + t) * HS + c % HS] = (float)acc;
            }
    float *ol = fnew(nq), *os = fnew(nq);
    float *sl = fnew(attention_save_floats(&loc, (long)B * Tq, Tk) + 1);
    float *ss = fnew(attention_save_floats(&sdp, (long)B * Tq, Tk) + 1);
    float *wl = fnew(attention_workspace(&loc, be, B, Tq, Tk) + 1);
    float *wsd = fnew(attention_workspace(&sdp, be, B, Tq, Tk) + 1);
    attention_forward(&loc, be, ol, sl, h, k, v, key_len, 0, B, Tq, Tk, wl);
    attention_forward(&sdp, be, os, ss, q, k, v, key_len, 0, B, Tq, Tk, wsd);
    Stat st;
    stat_begin(&st, "luong_local monotonic scaled_dot, window over every key = sdp with W_Q = W_a "
                    "(B2 NH2 Tq5 Tk6, len 6/4)");
    for (size_t i = 0; i < nq; i++) stat_add(&st, ol[i], os[i], FWD_ATOL, FWD_RTOL, "out", (long)i);
    stat_end(&st);
    free(h), free(k), free(v), free(q), free(ol), free(os), free(sl), free(ss), free(wl), free(wsd);
    params_free(&ps);
}

void case_local_attn(void) {
    be = backend_cpu();
    rng_seed(&optest_rng, 20151103, 32);
    int threads0 = omp_get_max_threads();
    omp_set_num_threads(1);
    const int len[3] = {7, 0, 4}, len2[2] = {9, 3}, len3[2] = {2, 6};
    for (int pred = 0; pred < 2; pred++)
        for (int add = 0; add < 2; add++) {
            OpProb P;
            /* windows clipped at both ends; key_len 0; local-m rows past the end */
            opprob_init(&P, 3, 2, 9, 7, 4, 3, 2, 0, add, pred, 1.0f, len);
            test_op(&P, "(B3 NH2 Tq9 Tk7, len 7/0/4)");
            opprob_free(&P);
            /* one query per call at position pos0 = 5 (a decoder step), a wider window */
            opprob_init(&P, 2, 1, 1, 9, 5, 4, 3, 5, add, pred, 0.5f, len2);
            test_op(&P, "(B2 NH1 Tq1 Tk9, len 9/3)");
            opprob_free(&P);
            /* a window wider than the sequence */
            opprob_init(&P, 2, 1, 3, 6, 3, 2, 10, 0, add, pred, 1.0f, len3);
            test_op(&P, "(B2 NH1 Tq3 Tk6, len 2/6)");
            opprob_free(&P);
            test_op_threads(add, pred);
        }
    const int kl[2] = {6, 4};
    for (int mode = 0; mode < LOCAL_MODE_COUNT; mode++)
        for (int score = 0; score < LOCAL_SCORE_COUNT; score++) {
            test_kind(1, 1, 2, 3, 6, 5, 2, 0, (LocalMode)mode, (LocalScore)score, kl); /* RNN */
            test_kind(1, 1, 2, 1, 6, 4, 1, 4, (LocalMode)mode, (LocalScore)score, kl); /* a step */
            test_kind(0, 2, 2, 4, 6, 6, 2, 0, (LocalMode)mode, (LocalScore)score, kl); /* heads */
        }
    test_scaled_dot_is_sdp();
    omp_set_num_threads(threads0);
}
