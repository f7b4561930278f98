/* attention_softmax.c — the cases of test_backend_ops (attention_cases.h) for the softmax
 * attention ops of the CPU backend (src/ops/ops.h): attn_forward/backward/workspace (sdp),
 * additive_attn_forward/backward, flash_attn_forward/backward/workspace (docs/design.md §3, §9, §11).
 * Helpers and the shared tolerances FWD_*, FD_*, ACC_TOL: tests/optest.h.
 *
 * sdp (attn_*) and additive attention against plain references written here in double precision,
 *   every backward against central finite differences, and the accumulate convention:
 *   key_len full / partial / 0, causal with Tq < Tk and Tq > Tk (rows that see no key get zero
 *   weights, output and gradients); masked weights are exactly 0. Additive attention also with
 *   heads (B = batch × NH rows, row r uses v[r mod NH], dv [NH, A]); keys no query sees (padding)
 *   receive exactly zero gradient. Shapes above an op's OpenMP threshold (attn, additive
 *   attention) run the parallel code, against the double reference where finite differences
 *   would be slow; additive attention's backward run twice is bit-identical.
 *
 * flash attention against the materialised attention of the same table (attn_forward/backward),
 *   which docs/design.md §11 says flash must equal exactly in mathematics, both in the layout
 *   [B, NH, T, ·] with key_len[B]:
 *  - forward vs attn_forward (out), and lse vs a log-sum-exp in double; rows with no visible key
 *    must have out exactly 0 and lse exactly −∞;
 *  - backward vs attn_backward (dq, dk, dv) with L = Σ r ⊙ out (dout = r), all finite;
 *  - the accumulate convention (gradients pre-filled) and NULL gradient pointers (each gradient
 *    alone must be bit-identical to the one computed with all three, all NULL is a no-op);
 *  - backward vs central finite differences of the flash forward on small cases (one crossing a
 *    key tile boundary);
 *  - bit-identical results with 1, 2 and 3 OpenMP threads (docs/design.md §9).
 *  - forward and backward in exactly flash_attn_workspace floats (a guard after it unchanged,
 *    the same bits as in a larger buffer) with 1, 2 and 3 threads, and that size non-decreasing
 *    in Tq and Tk.
 *   Shapes cover padding (key_len full, partial and 0), causal on and off, Tq ≠ Tk (both signs
 *   of Tk − Tq, also causal, where early queries see no key), lengths 1, 63, 64, 65, 130, 200,
 *   257, 270, 300, 520, 600 (within one block of 128 queries and one tile of 256 keys, and past
 *   them) and D ≠ Dv.
 *
 * Each case seeds optest_rng itself, so its inputs do not depend on the cases run before it. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention_cases.h"
#include "attention_fixture.h"
#include "ops/cpu/cpu.h"
#include "ops/ops.h"
#include "optest.h"
#include "testutil.h"

/* Tolerances of the flash cases.
 * Flash vs materialised (both float32, summed in different orders), and lse vs double:
 *   |flash − ref| ≤ CMP_TOL·(1 + |ref|).
 * Accumulate: the op adds tile by tile into the pre-filled buffer, so up to one rounding per
 *   visited tile row: |after − (prefill + grad)| ≤ FLASH_ACC_TOL·(1 + |prefill| + |grad|). */
#define CMP_TOL 1e-5
#define FLASH_ACC_TOL 1e-5

static const Backend *be; /* backend_cpu() */

/* ------------------------------------------------------------------------------------------ */
/* scaled dot-product attention (attn_*)                                                        */

typedef struct {
    float *q, *k, *v, *out, *w;
    const int *key_len;
    const float *r;
    float scale;
    int causal, B, Tq, Tk, D, Dv;
} AttnCtx;
static double attn_loss(void *p) {
    AttnCtx *a = p;
    be->attn_forward(a->out, a->w, a->q, a->k, a->v, a->key_len, a->scale, a->causal, a->B, 1,
                     a->Tq, a->Tk, a->D, a->Dv);
    return dot_rd(a->r, a->out, (size_t)a->B * a->Tq * a->Dv);
}

static int attn_allowed(int b, int t, int s, const int *key_len, int causal, int Tq, int Tk) {
    if (s >= key_len[b]) return 0;
    if (causal && s > t + (Tk - Tq)) return 0;
    return 1;
}

static void test_attn(int B, int Tq, int Tk, int D, int Dv, const int *key_len, int causal,
                      float scale) {
    size_t nq = (size_t)B * Tq * D, nk = (size_t)B * Tk * D, nv = (size_t)B * Tk * Dv;
    size_t no = (size_t)B * Tq * Dv, nw = (size_t)B * Tq * Tk;
    float *q = frand(nq, -1.5f, 1.5f), *k = frand(nk, -1.5f, 1.5f), *v = frand(nv, -1, 1);
    float *out = fnew(no), *w = fnew(nw);
    /* garbage in the outputs: the op must write every element */
    for (size_t i = 0; i < no; i++) out[i] = 123.0f;
    for (size_t i = 0; i < nw; i++) w[i] = 123.0f;
    char tag[96];
    int tl = snprintf(tag, sizeof tag, "B%d Tq%d Tk%d D%d Dv%d causal=%d len=", B, Tq, Tk, D, Dv,
                      causal);
    for (int b = 0; b < B && tl < (int)sizeof tag; b++)
        tl += snprintf(tag + tl, sizeof tag - tl, b ? ",%d" : "%d", key_len[b]);
    Stat st;
    stat_begin(&st, "attn_forward %s", tag);
    be->attn_forward(out, w, q, k, v, key_len, scale, causal, B, 1, Tq, Tk, D, Dv);
    int fully_masked_rows = 0;
    for (int b = 0; b < B; b++)
        for (int t = 0; t < Tq; t++) {
            double e[64], a[64], mx = -INFINITY, z = 0;
            int any = 0;
            for (int s = 0; s < Tk; s++) {
                if (!attn_allowed(b, t, s, key_len, causal, Tq, Tk)) continue;
                double d = 0;
                for (int j = 0; j < D; j++)
                    d += (double)q[((size_t)b * Tq + t) * D + j] *
                         (double)k[((size_t)b * Tk + s) * D + j];
                e[s] = scale * d;
                if (e[s] > mx) mx = e[s];
                any = 1;
            }
            for (int s = 0; s < Tk; s++) {
                a[s] = 0;
                if (attn_allowed(b, t, s, key_len, causal, Tq, Tk)) z += (a[s] = exp(e[s] - mx));
            }
            if (any)
                for (int s = 0; s < Tk; s++) a[s] /= z;
            else
                fully_masked_rows++;
            const float *wr = w + ((size_t)b * Tq + t) * Tk;
            double wsum = 0;
            for (int s = 0; s < Tk; s++) {
                long idx = (long)((b * Tq + t) * Tk + s);
                if (attn_allowed(b, t, s, key_len, causal, Tq, Tk))
                    stat_add(&st, wr[s], a[s], FWD_ATOL, FWD_RTOL, "weights", idx);
                else /* a masked key gets exactly zero weight */
                    stat_add(&st, wr[s], 0.0, 0, 0, "masked weight", idx);
                wsum += wr[s];
            }
            stat_add(&st, wsum, any ? 1.0 : 0.0, FWD_ATOL, 0, "row sum of weights", b * Tq + t);
            for (int d = 0; d < Dv; d++) {
                double o = 0;
                for (int s = 0; s < Tk; s++) o += a[s] * (double)v[((size_t)b * Tk + s) * Dv + d];
                long idx = (long)((b * Tq + t) * Dv + d);
                stat_add(&st, out[idx], o, any ? FWD_ATOL : 0, any ? FWD_RTOL : 0,
                         any ? "out" : "out (fully masked row)", idx);
            }
        }
    stat_end(&st);
    (void)fully_masked_rows;

    /* backward: L = Σ r ⊙ out */
    float *r = frand(no, -1, 1);
    float *gq = fnew(nq), *gk = fnew(nk), *gv = fnew(nv);
    float *work = fnew(be->attn_workspace(B, 1, Tq, Tk, D, Dv)); /* B rows as B·1 heads */
    be->attn_forward(out, w, q, k, v, key_len, scale, causal, B, 1, Tq, Tk, D, Dv);
    be->attn_backward(gq, gk, gv, r, q, k, v, w, scale, B, 1, Tq, Tk, D, Dv, work);
    AttnCtx ctx = {q, k, v, fnew(no), fnew(nw), key_len, r, scale, causal, B, Tq, Tk, D, Dv};
    stat_begin(&st, "attn_backward vs FD %s", tag);
    /* The loss is evaluated twice per input element: on one thread, so that a shape above the
     * OpenMP threshold does not pay a thread wake-up per evaluation on a loaded machine (the
     * forward and backward checked here ran with the default thread count). */
    int threads0 = omp_get_max_threads();
    omp_set_num_threads(1);
    fd_check(&st, "dq", q, nq, gq, attn_loss, &ctx);
    fd_check(&st, "dk", k, nk, gk, attn_loss, &ctx);
    fd_check(&st, "dv", v, nv, gv, attn_loss, &ctx);
    omp_set_num_threads(threads0);
    stat_end(&st);

    stat_begin(&st, "attn_backward accumulates (and NULL) %s", tag);
    float *pq = frand(nq, -2, 2), *pk = frand(nk, -2, 2), *pv = frand(nv, -2, 2);
    float *aq = fdup(pq, nq), *ak = fdup(pk, nk), *av = fdup(pv, nv);
    be->attn_backward(aq, ak, av, r, q, k, v, w, scale, B, 1, Tq, Tk, D, Dv, work);
    accum_check(&st, "dq", aq, pq, gq, nq);
    accum_check(&st, "dk", ak, pk, gk, nk);
    accum_check(&st, "dv", av, pv, gv, nv);
    /* each gradient may be NULL; the others are unchanged by that */
    memcpy(aq, pq, sizeof(float) * nq);
    be->attn_backward(aq, NULL, NULL, r, q, k, v, w, scale, B, 1, Tq, Tk, D, Dv, work);
    accum_check(&st, "dq (dk,dv NULL)", aq, pq, gq, nq);
    memcpy(ak, pk, sizeof(float) * nk);
    be->attn_backward(NULL, ak, NULL, r, q, k, v, w, scale, B, 1, Tq, Tk, D, Dv, work);
    accum_check(&st, "dk (dq,dv NULL)", ak, pk, gk, nk);
    memcpy(av, pv, sizeof(float) * nv);
    be->attn_backward(NULL, NULL, av, r, q, k, v, w, scale, B, 1, Tq, Tk, D, Dv, work);
    accum_check(&st, "dv (dq,dk NULL)", av, pv, gv, nv);
    stat_end(&st);

    free(q), free(k), free(v), free(out), free(w), free(r), free(gq), free(gk), free(gv);
    free(ctx.out), free(ctx.w), free(pq), free(pk), free(pv), free(aq), free(ak), free(av);
    free(work);
}

/* ------------------------------------------------------------------------------------------ */
/* additive attention                                                                          */

/* B rows (B / NH batch entries × NH heads flattened); row r uses v[r mod NH]; key s is visible
 * to query t of row r as for attn_forward (attn_allowed: s < key_len[r] and, causal,
 * s ≤ t + Tk − Tq). The op takes key_len per batch entry: batch_lens gives it (the rows of one
 * entry share their length). */
static const int *batch_lens(const int *row_len, int B, int NH) {
    static int lens[64];
    for (int r = 0; r < B; r++) {
        if (row_len[r] != row_len[r - r % NH]) {
            fprintf(stderr, "test error: rows of one batch entry differ in key_len\n");
            exit(1);
        }
        if (r % NH == 0) lens[r / NH] = row_len[r];
    }
    return lens;
}
typedef struct {
    float *qp, *kp, *v, *values, *out, *w;
    const int *key_len;
    const float *r;
    int causal, B, NH, Tq, Tk, A, Dv;
} AddAttnCtx;
static double add_attn_loss(void *p) {
    AddAttnCtx *a = p;
    be->additive_attn_forward(a->out, a->w, a->qp, a->kp, a->v, a->values, batch_lens(a->key_len, a->B, a->NH),
                              a->causal, a->B / a->NH, a->NH, a->Tq, a->Tk, a->A, a->Dv);
    return dot_rd(a->r, a->out, (size_t)a->B * a->Tq * a->Dv);
}

/* The double-precision reference: weights a[B,Tq,Tk] and out[B,Tq,Dv] (forward), and, when r
 * (= dout) is given, the gradients of L = Σ r ⊙ out written (not added) into gqp, gkp,
 * gv[NH,A], gvalues, by the chain rule written out plainly. */
static void add_attn_ref(double *a, double *out, double *gqp, double *gkp, double *gv,
                         double *gvalues, const float *qp, const float *kp, const float *v,
                         const float *values, const int *key_len, int causal, const float *r,
                         int B, int NH, int Tq, int Tk, int A, int Dv) {
    if (r) {
        memset(gqp, 0, sizeof(double) * B * Tq * A);
        memset(gkp, 0, sizeof(double) * B * Tk * A);
        memset(gv, 0, sizeof(double) * NH * A);
        memset(gvalues, 0, sizeof(double) * B * Tk * Dv);
    }
    for (int b = 0; b < B; b++)
        for (int t = 0; t < Tq; t++) {
            const float *q = qp + ((size_t)b * Tq + t) * A;
            const float *vh = v + (size_t)(b % NH) * A; /* row b uses head b mod NH */
            double e[64], mx = -INFINITY, z = 0;
            double *ar = a + ((size_t)b * Tq + t) * Tk;
            int vis[64], any = 0;
            for (int s = 0; s < Tk; s++) {
                vis[s] = attn_allowed(b, t, s, key_len, causal, Tq, Tk);
                if (!vis[s]) continue;
                const float *k = kp + ((size_t)b * Tk + s) * A;
                e[s] = 0;
                for (int j = 0; j < A; j++) e[s] += (double)vh[j] * tanh((double)q[j] + k[j]);
                if (e[s] > mx) mx = e[s];
                any = 1;
            }
            for (int s = 0; s < Tk; s++) ar[s] = vis[s] ? exp(e[s] - mx) : 0.0;
            for (int s = 0; s < Tk; s++) z += ar[s];
            if (any)
                for (int s = 0; s < Tk; s++) ar[s] /= z;
            double *o = out + ((size_t)b * Tq + t) * Dv;
            for (int d = 0; d < Dv; d++) {
                o[d] = 0;
                for (int s = 0; s < Tk; s++)
                    o[d] += ar[s] * (double)values[((size_t)b * Tk + s) * Dv + d];
            }
            if (!r) continue;
            const float *go = r + ((size_t)b * Tq + t) * Dv;
            double da[64], dot = 0;
            for (int s = 0; s < Tk; s++) {
                if (!vis[s]) continue;
                da[s] = 0;
                for (int d = 0; d < Dv; d++) {
                    da[s] += (double)go[d] * values[((size_t)b * Tk + s) * Dv + d];
                    gvalues[((size_t)b * Tk + s) * Dv + d] += ar[s] * go[d];
                }
                dot += ar[s] * da[s];
            }
            for (int s = 0; s < Tk; s++) {
                if (!vis[s]) continue;
                double de = ar[s] * (da[s] - dot);
                const float *k = kp + ((size_t)b * Tk + s) * A;
                for (int j = 0; j < A; j++) {
                    double u = tanh((double)q[j] + k[j]), du = de * vh[j] * (1 - u * u);
                    gqp[((size_t)b * Tq + t) * A + j] += du;
                    gkp[((size_t)b * Tk + s) * A + j] += du;
                    gv[(size_t)(b % NH) * A + j] += de * u;
                }
            }
        }
}

/* B rows = B / NH batch entries × NH heads flattened (key_len per row, equal within an entry:
 * batch_lens), v[NH,A]. */
static void test_additive_attn(int B, int NH, int Tq, int Tk, int A, int Dv, const int *key_len,
                               int causal) {
    size_t nq = (size_t)B * Tq * A, nk = (size_t)B * Tk * A, nval = (size_t)B * Tk * Dv;
    size_t no = (size_t)B * Tq * Dv, nw = (size_t)B * Tq * Tk, nvh = (size_t)NH * A;
    float *qp = frand(nq, -1.5f, 1.5f), *kp = frand(nk, -1.5f, 1.5f);
    float *v = frand(nvh, -1.5f, 1.5f);
    float *values = frand(nval, -1, 1), *out = fnew(no), *w = fnew(nw);
    /* garbage in the outputs: the op must write every element */
    for (size_t i = 0; i < no; i++) out[i] = 123.0f;
    for (size_t i = 0; i < nw; i++) w[i] = 123.0f;
    char tag[96];
    int tl = snprintf(tag, sizeof tag, "B%d NH%d Tq%d Tk%d A%d Dv%d%s len=", B, NH, Tq, Tk, A, Dv,
                      causal ? " causal" : "");
    for (int b = 0; b < B && tl < (int)sizeof tag; b++)
        tl += snprintf(tag + tl, sizeof tag - tl, b ? ",%d" : "%d", key_len[b]);
    double *ra = malloc(sizeof(double) * nw), *ro = malloc(sizeof(double) * no);
    add_attn_ref(ra, ro, NULL, NULL, NULL, NULL, qp, kp, v, values, key_len, causal, NULL, B, NH,
                 Tq, Tk, A, Dv);
    Stat st;
    stat_begin(&st, "additive_attn_forward %s", tag);
    be->additive_attn_forward(out, w, qp, kp, v, values, batch_lens(key_len, B, NH), causal, B / NH, NH, Tq, Tk, A, Dv);
    int *row_any = calloc((size_t)B * Tq, sizeof(int));  /* query (b,t) sees some key */
    int *key_seen = calloc((size_t)B * Tk, sizeof(int)); /* key (b,s) seen by some query */
    for (int b = 0; b < B; b++)
        for (int t = 0; t < Tq; t++) {
            double wsum = 0;
            for (int s = 0; s < Tk; s++) {
                long idx = (long)((b * Tq + t) * Tk + s);
                if (attn_allowed(b, t, s, key_len, causal, Tq, Tk)) {
                    row_any[b * Tq + t] = key_seen[b * Tk + s] = 1;
                    stat_add(&st, w[idx], ra[idx], FWD_ATOL, FWD_RTOL, "weights", idx);
                } else { /* a padded or future key gets exactly zero weight */
                    stat_add(&st, w[idx], 0.0, 0, 0, "masked weight", idx);
                }
                wsum += w[idx];
            }
            int any = row_any[b * Tq + t];
            stat_add(&st, wsum, any ? 1.0 : 0.0, FWD_ATOL, 0, "row sum of weights", b * Tq + t);
            for (int d = 0; d < Dv; d++) {
                long idx = (long)((b * Tq + t) * Dv + d);
                stat_add(&st, out[idx], ro[idx], any ? FWD_ATOL : 0, any ? FWD_RTOL : 0,
                         any ? "out" : "out (no visible key)", idx);
            }
        }
    stat_end(&st);

    /* backward: L = Σ r ⊙ out */
    float *r = frand(no, -1, 1);
    float *gq = fnew(nq), *gk = fnew(nk), *gv = fnew(nvh), *gval = fnew(nval);
    be->additive_attn_forward(out, w, qp, kp, v, values, batch_lens(key_len, B, NH), causal, B / NH, NH, Tq, Tk, A, Dv);
    /* the op's workspace, the size function's value (the CPU's is 0: NULL then is allowed) */
    float *work = fnew(be->additive_attn_workspace(B / NH, NH, Tq, Tk, A, Dv) + 1);
    be->additive_attn_backward(gq, gk, gv, gval, r, qp, kp, v, values, w, B / NH, NH, Tq, Tk, A, Dv,
                               work);
    AddAttnCtx ctx = {qp, kp, v, values, fnew(no), fnew(nw), key_len, r, causal, B, NH, Tq, Tk,
                      A, Dv};
    stat_begin(&st, "additive_attn_backward vs FD %s", tag);
    fd_check(&st, "dqp", qp, nq, gq, add_attn_loss, &ctx);
    fd_check(&st, "dkp", kp, nk, gk, add_attn_loss, &ctx);
    fd_check(&st, "dv", v, nvh, gv, add_attn_loss, &ctx);
    fd_check(&st, "dvalues", values, nval, gval, add_attn_loss, &ctx);
    /* keys no query sees (padding) receive exactly nothing; nor do queries that see no key */
    for (int b = 0; b < B; b++)
        for (int s = 0; s < Tk; s++) {
            if (key_seen[b * Tk + s]) continue;
            for (int j = 0; j < A; j++)
                stat_add(&st, gk[((size_t)b * Tk + s) * A + j], 0.0, 0, 0, "dkp (unseen key)",
                         (long)(((size_t)b * Tk + s) * A + j));
            for (int d = 0; d < Dv; d++)
                stat_add(&st, gval[((size_t)b * Tk + s) * Dv + d], 0.0, 0, 0,
                         "dvalues (unseen key)", (long)(((size_t)b * Tk + s) * Dv + d));
        }
    for (int bt = 0; bt < B * Tq; bt++)
        if (!row_any[bt])
            for (int j = 0; j < A; j++)
                stat_add(&st, gq[(size_t)bt * A + j], 0.0, 0, 0, "dqp (no visible key)",
                         (long)bt * A + j);
    stat_end(&st);

    stat_begin(&st, "additive_attn_backward accumulates (and NULL) %s", tag);
    float *pq = frand(nq, -2, 2), *pk = frand(nk, -2, 2), *pv = frand(nvh, -2, 2);
    float *pval = frand(nval, -2, 2);
    float *aq = fdup(pq, nq), *ak = fdup(pk, nk), *av = fdup(pv, nvh), *aval = fdup(pval, nval);
    be->additive_attn_backward(aq, ak, av, aval, r, qp, kp, v, values, w, B / NH, NH, Tq, Tk, A, Dv,
                               work);
    accum_check(&st, "dqp", aq, pq, gq, nq);
    accum_check(&st, "dkp", ak, pk, gk, nk);
    accum_check(&st, "dv", av, pv, gv, nvh);
    accum_check(&st, "dvalues", aval, pval, gval, nval);
    /* each gradient may be NULL; the others are unchanged by that; all NULL is a no-op that must
     * not crash (i = 4) */
    float *acc[4] = {aq, ak, av, aval};
    const float *pre[4] = {pq, pk, pv, pval}, *grad[4] = {gq, gk, gv, gval};
    const size_t len[4] = {nq, nk, nvh, nval};
    const char *alone[4] = {"dqp (others NULL)", "dkp (others NULL)", "dv (others NULL)",
                            "dvalues (others NULL)"};
    for (int i = 0; i <= 4; i++) {
        float *only[4] = {NULL, NULL, NULL, NULL};
        if (i < 4) memcpy(only[i] = acc[i], pre[i], sizeof(float) * len[i]);
        be->additive_attn_backward(only[0], only[1], only[2], only[3], r, qp, kp, v, values, w,
                                   B / NH, NH, Tq, Tk, A, Dv, work);
        if (i < 4) accum_check(&st, alone[i], acc[i], pre[i], grad[i], len[i]);
    }
    stat_end(&st);

    free(qp), free(kp), free(v), free(values), free(out), free(w), free(ra), free(ro), free(r);
    free(gq), free(gk), free(gv), free(gval), free(ctx.out), free(ctx.w), free(pq), free(pk);
    free(pv), free(pval), free(aq), free(ak), free(av), free(aval), free(row_any);
    free(key_seen), free(work);
}

/* A shape above the ops' OpenMP threshold (B·Tq·Tk·A > 16384), so the parallel code runs:
 * forward and backward against the double-precision reference (finite differences would be
 * slow here), and the backward run twice must be bit-identical (dv[NH,A] is reduced in the
 * order of the rows, not by atomics). Backward tolerance: float32 sums of up to B·Tq·Tk terms,
 *   |got − ref| ≤ 1e-4 + 1e-4·|ref|. */
static void test_additive_attn_parallel(int NH, int causal) {
    enum { B = 16, Tq = 8, Tk = 9, A = 32, Dv = 12 };
    int key_len[B];
    for (int b = 0; b < B; b++) key_len[b] = (b / NH * 5) % (Tk + 1); /* 0 .. Tk, per entry */
    size_t nq = (size_t)B * Tq * A, nk = (size_t)B * Tk * A, nval = (size_t)B * Tk * Dv;
    size_t no = (size_t)B * Tq * Dv, nw = (size_t)B * Tq * Tk, nvh = (size_t)NH * A;
    float *qp = frand(nq, -1.5f, 1.5f), *kp = frand(nk, -1.5f, 1.5f), *v = frand(nvh, -1, 1);
    float *values = frand(nval, -1, 1), *out = fnew(no), *w = fnew(nw), *r = frand(no, -1, 1);
    double *ra = malloc(sizeof(double) * nw), *ro = malloc(sizeof(double) * no);
    double *rq = malloc(sizeof(double) * nq), *rk = malloc(sizeof(double) * nk);
    double *rv = malloc(sizeof(double) * nvh), *rval = malloc(sizeof(double) * nval);
    add_attn_ref(ra, ro, rq, rk, rv, rval, qp, kp, v, values, key_len, causal, r, B, NH, Tq, Tk,
                 A, Dv);
    Stat st;
    stat_begin(&st, "additive_attn B%d NH%d Tq%d Tk%d A%d Dv%d%s (OpenMP) vs ref", B, NH, Tq, Tk,
               A, Dv, causal ? " causal" : "");
    be->additive_attn_forward(out, w, qp, kp, v, values, batch_lens(key_len, B, NH), causal, B / NH, NH, Tq, Tk, A, Dv);
    for (size_t i = 0; i < nw; i++) stat_add(&st, w[i], ra[i], FWD_ATOL, FWD_RTOL, "w", (long)i);
    for (size_t i = 0; i < no; i++)
        stat_add(&st, out[i], ro[i], FWD_ATOL, FWD_RTOL, "out", (long)i);
    float *gq = fnew(nq), *gk = fnew(nk), *gv = fnew(nvh), *gval = fnew(nval);
    float *work = fnew(be->additive_attn_workspace(B / NH, NH, Tq, Tk, A, Dv) + 1);
    be->additive_attn_backward(gq, gk, gv, gval, r, qp, kp, v, values, w, B / NH, NH, Tq, Tk, A, Dv,
                               work);
    for (size_t i = 0; i < nq; i++) stat_add(&st, gq[i], rq[i], 1e-4, 1e-4, "dqp", (long)i);
    for (size_t i = 0; i < nk; i++) stat_add(&st, gk[i], rk[i], 1e-4, 1e-4, "dkp", (long)i);
    for (size_t i = 0; i < nvh; i++) stat_add(&st, gv[i], rv[i], 1e-4, 1e-4, "dv", (long)i);
    for (size_t i = 0; i < nval; i++)
        stat_add(&st, gval[i], rval[i], 1e-4, 1e-4, "dvalues", (long)i);
    float *gq2 = fnew(nq), *gk2 = fnew(nk), *gv2 = fnew(nvh), *gval2 = fnew(nval);
    be->additive_attn_backward(gq2, gk2, gv2, gval2, r, qp, kp, v, values, w, B / NH, NH, Tq, Tk, A,
                               Dv, work);
    stat_true(&st, memcmp(gq, gq2, sizeof(float) * nq) == 0, "dqp differs between two runs");
    stat_true(&st, memcmp(gk, gk2, sizeof(float) * nk) == 0, "dkp differs between two runs");
    stat_true(&st, memcmp(gv, gv2, sizeof(float) * nvh) == 0, "dv differs between two runs");
    stat_true(&st, memcmp(gval, gval2, sizeof(float) * nval) == 0,
              "dvalues differs between two runs");
    stat_end(&st);
    free(qp), free(kp), free(v), free(values), free(out), free(w), free(r), free(ra), free(ro);
    free(rq), free(rk), free(rv), free(rval), free(gq), free(gk), free(gv), free(gval);
    free(gq2), free(gk2), free(gv2), free(gval2), free(work);
}

/* n floats, all val. */
static float *ffill(size_t n, float val) {
    float *p = fnew(n);
    for (size_t i = 0; i < n; i++) p[i] = val;
    return p;
}
/* got vs ref elementwise with |got − ref| ≤ CMP_TOL·(1 + |ref|). */
static void cmp_arrays(Stat *st, const char *what, const float *got, const float *ref, size_t n) {
    for (size_t i = 0; i < n; i++) stat_add(st, got[i], ref[i], CMP_TOL, CMP_TOL, what, (long)i);
}
static int all_finite(const float *x, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i])) return 0;
    return 1;
}

/* ------------------------------------------------------------------------------------------ */
/* one problem: inputs, flash results and materialised results                                */

/* The ops' workspace: the larger of flash_attn_workspace and attn_workspace. */
static size_t flash_workspace(const AttnProb *p) {
    size_t wf = be->flash_attn_workspace(p->B, p->NH, p->Tq, p->Tk, p->D, p->Dv);
    size_t wa = be->attn_workspace(p->B, p->NH, p->Tq, p->Tk, p->D, p->Dv);
    return wf > wa ? wf : wa;
}

/* One problem (attention_fixture.h), q and k uniform in [−1.5, 1.5). */
static void flash_prob(AttnProb *p, int B, int NH, int Tq, int Tk, int D, int Dv,
                       const int *key_len, int causal, float scale) {
    *p = (AttnProb){.B = B, .NH = NH, .Tq = Tq, .Tk = Tk, .D = D, .Dv = Dv, .causal = causal,
                    .scale = scale, .key_len = key_len, .workspace = flash_workspace};
    attn_prob_init(p, 1.5f);
}
/* floats of lse [B,NH,Tq] and of the weights [B,NH,Tq,Tk] */
static size_t n_lse(const AttnProb *p) { return (size_t)p->B * p->NH * p->Tq; }
static size_t n_weights(const AttnProb *p) { return n_lse(p) * p->Tk; }
static void flash_fwd(const AttnProb *p, float *out, float *lse) {
    be->flash_attn_forward(out, lse, p->q, p->k, p->v, p->key_len, p->scale, p->causal, p->B,
                           p->NH, p->Tq, p->Tk, p->D, p->Dv, p->work);
}
static void flash_bwd(const AttnProb *p, float *dq, float *dk, float *dv, const float *out,
                      const float *lse) {
    be->flash_attn_backward(dq, dk, dv, p->r, p->q, p->k, p->v, out, lse, p->key_len, p->scale,
                            p->causal, p->B, p->NH, p->Tq, p->Tk, p->D, p->Dv, p->work);
}

/* ------------------------------------------------------------------------------------------ */
/* flash vs materialised attention, lse vs double, accumulate and NULL                        */

/* spike: keys 1 (an odd lane) and Tk − 1 (the last) of every row times 300, scores hundreds
 * away from the others, which a maximum over keys a row must not see (masked by causality or
 * length) would turn into an underflow of every exp; the forward only (the gradients of such
 * scores are compared at the tolerances of ordinary ones elsewhere). */
static void test_vs_materialised(int B, int NH, int Tq, int Tk, int D, int Dv, const int *key_len,
                                 int causal, float scale, int spike) {
    AttnProb p;
    flash_prob(&p, B, NH, Tq, Tk, D, Dv, key_len, causal, scale);
    for (int bh = 0; bh < B * NH && spike; bh++)
        for (int d = 0; d < D; d++) {
            if (Tk > 1) p.k[((size_t)bh * Tk + 1) * D + d] *= 300.0f;
            if (Tk > 2) p.k[((size_t)bh * Tk + Tk - 1) * D + d] *= 300.0f;
        }
    char tag[96], lens[40] = "";
    for (int b = 0; b < B; b++)
        snprintf(lens + strlen(lens), sizeof lens - strlen(lens), "%s%d", b ? "," : "",
                 key_len[b]);
    snprintf(tag, sizeof tag, "B%d NH%d Tq%d Tk%d D%d Dv%d causal=%d len=%s%s", B, NH, Tq, Tk, D,
             Dv, causal, lens, spike ? " spiked keys" : "");

    /* forward; garbage in the outputs: the op must write every element */
    float *out = ffill(p.no, 123.0f), *lse = ffill(n_lse(&p), 123.0f);
    float *mout = fnew(p.no), *mw = fnew(n_weights(&p));
    flash_fwd(&p, out, lse);
    be->attn_forward(mout, mw, p.q, p.k, p.v, p.key_len, scale, causal, B, NH, Tq, Tk, D, Dv);
    Stat st;
    stat_begin(&st, "flash forward vs attn_forward, lse vs double  %s", tag);
    int empty_rows = 0;
    for (int bh = 0; bh < B * NH; bh++) {
        for (int t = 0; t < Tq; t++) {
            size_t row = (size_t)bh * Tq + t;
            double mx = -INFINITY, z = 0;
            for (int s = 0; s < Tk; s++) {
                if (!attn_allowed(bh / NH, t, s, key_len, causal, Tq, Tk)) continue;
                double e = 0;
                for (int d = 0; d < D; d++)
                    e += (double)p.q[row * D + d] * (double)p.k[((size_t)bh * Tk + s) * D + d];
                e *= scale;
                if (e > mx) {
                    z = z * exp(mx - e) + 1.0;
                    mx = e;
                } else {
                    z += exp(e - mx);
                }
            }
            if (mx == -INFINITY) { /* no visible key: out exactly 0, lse exactly −∞ */
                empty_rows++;
                stat_true(&st, lse[row] == -INFINITY, "lse[%zu] = %g for a row with no key", row,
                          lse[row]);
                int zero = 1;
                for (int d = 0; d < Dv; d++) zero &= out[row * Dv + d] == 0.0f;
                stat_true(&st, zero, "out row %zu not 0 for a row with no key", row);
            } else {
                stat_add(&st, lse[row], mx + log(z), CMP_TOL, CMP_TOL, "lse", (long)row);
                for (int d = 0; d < Dv; d++)
                    stat_add(&st, out[row * Dv + d], mout[row * Dv + d], CMP_TOL, CMP_TOL, "out",
                             (long)(row * Dv + d));
            }
        }
    }
    stat_end(&st);
    if (spike) {
        free(out), free(lse), free(mout), free(mw);
        attn_prob_free(&p);
        return;
    }

    /* backward vs materialised */
    float *gq = fnew(p.nq), *gk = fnew(p.nk), *gv = fnew(p.nv);
    float *mq = fnew(p.nq), *mk = fnew(p.nk), *mv = fnew(p.nv);
    flash_bwd(&p, gq, gk, gv, out, lse);
    be->attn_backward(mq, mk, mv, p.r, p.q, p.k, p.v, mw, scale, B, NH, Tq, Tk, D, Dv, p.work);
    stat_begin(&st, "flash backward vs attn_backward  %s", tag);
    stat_true(&st, all_finite(gq, p.nq) && all_finite(gk, p.nk) && all_finite(gv, p.nv),
              "non-finite gradient");
    cmp_arrays(&st, "dq", gq, mq, p.nq);
    cmp_arrays(&st, "dk", gk, mk, p.nk);
    cmp_arrays(&st, "dv", gv, mv, p.nv);
    stat_end(&st);

    /* accumulate into pre-filled gradients; NULL pointers */
    stat_begin(&st, "flash backward accumulates, NULL gradients  %s", tag);
    float *pq = frand(p.nq, -2, 2), *pk = frand(p.nk, -2, 2), *pv = frand(p.nv, -2, 2);
    float *aq = fdup(pq, p.nq), *ak = fdup(pk, p.nk), *av = fdup(pv, p.nv);
    flash_bwd(&p, aq, ak, av, out, lse);
    accum_check_tol(&st, "dq", aq, pq, gq, p.nq, FLASH_ACC_TOL);
    accum_check_tol(&st, "dk", ak, pk, gk, p.nk, FLASH_ACC_TOL);
    accum_check_tol(&st, "dv", av, pv, gv, p.nv, FLASH_ACC_TOL);
    float *zq = fnew(p.nq), *zk = fnew(p.nk), *zv = fnew(p.nv);
    flash_bwd(&p, zq, NULL, NULL, out, lse);
    stat_same(&st, "dq (dk, dv NULL)", zq, gq, p.nq);
    flash_bwd(&p, NULL, zk, NULL, out, lse);
    stat_same(&st, "dk (dq, dv NULL)", zk, gk, p.nk);
    flash_bwd(&p, NULL, NULL, zv, out, lse);
    stat_same(&st, "dv (dq, dk NULL)", zv, gv, p.nv);
    flash_bwd(&p, NULL, NULL, NULL, out, lse); /* nothing to do; must not crash */
    stat_end(&st);
    (void)empty_rows;

    free(out), free(lse), free(mout), free(mw), free(gq), free(gk), free(gv), free(mq);
    free(mk), free(mv), free(pq), free(pk), free(pv), free(aq), free(ak), free(av), free(zq);
    free(zk), free(zv);
    attn_prob_free(&p);
}

/* ------------------------------------------------------------------------------------------ */
/* backward vs central finite differences of the flash forward                                */

typedef struct {
    const AttnProb *p;
    float *out, *lse;
} FdCtx;
/* L = Σ r ⊙ flash_attn_forward(q, k, v), in double from the float32 output. */
static double flash_loss(void *ctx) {
    const FdCtx *c = ctx;
    flash_fwd(c->p, c->out, c->lse);
    return dot_rd(c->p->r, c->out, c->p->no);
}

static void test_fd(int B, int NH, int Tq, int Tk, int D, int Dv, const int *key_len, int causal,
                    float scale) {
    AttnProb p;
    flash_prob(&p, B, NH, Tq, Tk, D, Dv, key_len, causal, scale);
    float *out = fnew(p.no), *lse = fnew(n_lse(&p));
    float *gq = fnew(p.nq), *gk = fnew(p.nk), *gv = fnew(p.nv);
    flash_fwd(&p, out, lse);
    flash_bwd(&p, gq, gk, gv, out, lse);
    FdCtx c = {&p, fnew(p.no), fnew(n_lse(&p))};
    Stat st;
    stat_begin(&st, "flash backward vs FD  B%d NH%d Tq%d Tk%d D%d Dv%d causal=%d", B, NH, Tq, Tk, D, Dv,
               causal);
    fd_check(&st, "dq", p.q, p.nq, gq, flash_loss, &c);
    fd_check(&st, "dk", p.k, p.nk, gk, flash_loss, &c);
    fd_check(&st, "dv", p.v, p.nv, gv, flash_loss, &c);
    stat_end(&st);
    free(out), free(lse), free(gq), free(gk), free(gv), free(c.out), free(c.lse);
    attn_prob_free(&p);
}

/* ------------------------------------------------------------------------------------------ */
/* determinism across thread counts                                                            */

static void test_threads(int B, int NH, int Tq, int Tk, int D, int Dv, const int *key_len,
                         int causal) {
    AttnProb p;
    flash_prob(&p, B, NH, Tq, Tk, D, Dv, key_len, causal, 1.0f / sqrtf((float)D));
    const int nthr[3] = {1, 2, 3};
    float *out[3], *lse[3], *gq[3], *gk[3], *gv[3];
    int saved = omp_get_max_threads();
    for (int i = 0; i < 3; i++) {
        omp_set_num_threads(nthr[i]);
        attn_prob_work(&p);
        out[i] = fnew(p.no), lse[i] = fnew(n_lse(&p));
        gq[i] = fnew(p.nq), gk[i] = fnew(p.nk), gv[i] = fnew(p.nv);
        flash_fwd(&p, out[i], lse[i]);
        flash_bwd(&p, gq[i], gk[i], gv[i], out[i], lse[i]);
    }
    omp_set_num_threads(saved);
    Stat st;
    stat_begin(&st, "flash bit-identical with 1, 2, 3 threads  B%d NH%d Tq%d Tk%d causal=%d", B, NH, Tq,
               Tk, causal);
    for (int i = 1; i < 3; i++) {
        stat_same(&st, "out", out[i], out[0], p.no);
        stat_same(&st, "lse", lse[i], lse[0], n_lse(&p));
        stat_same(&st, "dq", gq[i], gq[0], p.nq);
        stat_same(&st, "dk", gk[i], gk[0], p.nk);
        stat_same(&st, "dv", gv[i], gv[0], p.nv);
    }
    stat_end(&st);
    for (int i = 0; i < 3; i++) free(out[i]), free(lse[i]), free(gq[i]), free(gk[i]), free(gv[i]);
    attn_prob_free(&p);
}

/* ------------------------------------------------------------------------------------------ */
/* the workspace: exactly flash_attn_workspace floats suffice                                   */

/* With 1, 2 and 3 OpenMP threads, flash forward and backward run in a buffer of exactly
 * flash_attn_workspace(B, NH, Tq, Tk, D, Dv) floats followed by a guard of sentinel floats: the
 * guard must come back unchanged (no thread's tiles reach past the size the op asked for) and
 * the results must be the bits of a run in the fixture's larger buffer (the larger of flash's
 * and attn_workspace). The sizes must not shrink as Tq or Tk grows, so that a workspace sized for
 * the longest lengths serves every shorter call. */
static void test_workspace_exact(int B, int NH, int Tq, int Tk, int D, int Dv, const int *key_len,
                                 int causal) {
    enum { GUARD = 1024 };
    AttnProb p;
    flash_prob(&p, B, NH, Tq, Tk, D, Dv, key_len, causal, 1.0f / sqrtf((float)D));
    float *out0 = fnew(p.no), *lse0 = fnew(n_lse(&p));
    float *gq0 = fnew(p.nq), *gk0 = fnew(p.nk), *gv0 = fnew(p.nv);
    flash_fwd(&p, out0, lse0);
    flash_bwd(&p, gq0, gk0, gv0, out0, lse0);
    Stat st;
    stat_begin(&st, "flash in exactly flash_attn_workspace floats, 1-3 threads  B%d NH%d Tq%d Tk%d "
               "causal=%d", B, NH, Tq, Tk, causal);
    int saved = omp_get_max_threads();
    float guard[GUARD];
    for (int i = 0; i < GUARD; i++) guard[i] = 1234.5f + (float)i;
    for (int nt = 1; nt <= 3; nt++) {
        omp_set_num_threads(nt);
        size_t ws = be->flash_attn_workspace(B, NH, Tq, Tk, D, Dv);
        float *work = fnew(ws + GUARD);
        memcpy(work + ws, guard, sizeof guard);
        float *out = fnew(p.no), *lse = fnew(n_lse(&p));
        float *gq = fnew(p.nq), *gk = fnew(p.nk), *gv = fnew(p.nv);
        be->flash_attn_forward(out, lse, p.q, p.k, p.v, p.key_len, p.scale, p.causal, B, NH, Tq,
                               Tk, D, Dv, work);
        be->flash_attn_backward(gq, gk, gv, p.r, p.q, p.k, p.v, out, lse, p.key_len, p.scale,
                                p.causal, B, NH, Tq, Tk, D, Dv, work);
        stat_same(&st, "guard", work + ws, guard, GUARD);
        stat_same(&st, "out", out, out0, p.no);
        stat_same(&st, "lse", lse, lse0, n_lse(&p));
        stat_same(&st, "dq", gq, gq0, p.nq);
        stat_same(&st, "dk", gk, gk0, p.nk);
        stat_same(&st, "dv", gv, gv0, p.nv);
        free(work), free(out), free(lse), free(gq), free(gk), free(gv);
    }
    omp_set_num_threads(saved);
    const int lens[] = {0, 1, 2, 63, 64, 65, 127, 128, 129, 255, 256, 257, 511, 512, 513, 1000};
    const int nl = (int)(sizeof lens / sizeof lens[0]);
    for (int i = 0; i + 1 < nl; i++)
        for (int j = 0; j + 1 < nl; j++) {
            size_t w = be->flash_attn_workspace(B, NH, lens[i], lens[j], D, Dv);
            stat_true(&st, w <= be->flash_attn_workspace(B, NH, lens[i + 1], lens[j], D, Dv) &&
                               w <= be->flash_attn_workspace(B, NH, lens[i], lens[j + 1], D, Dv),
                      "workspace shrinks past Tq %d, Tk %d", lens[i], lens[j]);
        }
    stat_end(&st);
    free(out0), free(lse0), free(gq0), free(gk0), free(gv0);
    attn_prob_free(&p);
}

/* ------------------------------------------------------------------------------------------ */
/* the cases                                                                                   */

void case_attn_sdp(void) {
    be = backend_cpu();
    rng_seed(&optest_rng, 20240611, 3);
    {
        /* padding (b=2 fully masked by key_len 0), non-causal, scale 1/√D */
        const int len[3] = {5, 3, 0};
        test_attn(3, 4, 5, 6, 7, len, 0, 1.0f / sqrtf(6.0f));
        /* padding + causal (key s > t + Tk − Tq masked) */
        test_attn(3, 4, 5, 6, 7, len, 1, 1.0f / sqrtf(6.0f));
        /* Tq > Tk causal: query t = 0 sees no key (fully masked by causality); other scale */
        const int len2[3] = {4, 2, 3};
        test_attn(3, 5, 4, 6, 7, len2, 1, 0.8f);
    }
    {
        /* Tq ≠ Tk, causal (key s > t + Tk − Tq masked), a padded row and a row with key_len 0,
         * above the OpenMP threshold (B·Tq·Tk·(D+Dv) > 65536): the parallel per-row gemm path */
        const int len[5] = {25, 11, 0, 4, 18};
        test_attn(5, 20, 25, 14, 13, len, 1, 1.0f / sqrtf(14.0f));
    }
}

/* x [B, A, C, W] → y [B, C, A, W] (split heads ↔ merged layout, host) */
static void swap12(float *y, const float *x, int B, int A, int C, int W) {
    for (int b = 0; b < B; b++)
        for (int i = 0; i < A; i++)
            for (int j = 0; j < C; j++)
                memcpy(y + (((size_t)b * C + j) * A + i) * W, x + (((size_t)b * A + i) * C + j) * W,
                       sizeof(float) * W);
}

/* attn_forward_merged / attn_backward_merged against attn_forward / attn_backward with the heads
 * split and merged around them (permute0213 done here on the host): the same sums in the same
 * order, so every output must be bit-identical. The merged backward overwrites garbage, the
 * split one accumulates into zeros; then dv alone (dq, dk NULL) once more on both sides. */
static void test_attn_merged(int B, int NH, int Tq, int Tk, int D, int Dv, const int *key_len,
                             int causal) {
    size_t nq = (size_t)B * NH * Tq * D, nk = (size_t)B * NH * Tk * D;
    size_t nv = (size_t)B * NH * Tk * Dv, no = (size_t)B * NH * Tq * Dv;
    size_t nw = (size_t)B * NH * Tq * Tk;
    float scale = 1.0f / sqrtf((float)D);
    float *q = frand(nq, -1.5f, 1.5f), *k = frand(nk, -1.5f, 1.5f), *v = frand(nv, -1, 1);
    float *g = frand(no, -1, 1), *dq0 = frand(nq, -1, 1), *dk0 = frand(nk, -1, 1);
    float *dv0 = frand(nv, -1, 1); /* garbage for the merged backward to overwrite */
    float *o = fnew(no), *w = fnew(nw), *dq = fnew(nq), *dk = fnew(nk), *dv = fnew(nv); /* zeros */
    size_t nwork = be->attn_workspace(B, NH, Tq, Tk, D, Dv);
    float *work = fnew(nwork + 1);
    be->attn_forward(o, w, q, k, v, key_len, scale, causal, B, NH, Tq, Tk, D, Dv);
    be->attn_backward(dq, dk, dv, g, q, k, v, w, scale, B, NH, Tq, Tk, D, Dv, work);
    /* the same in the merged layout */
    float *qm = fnew(nq), *km = fnew(nk), *vm = fnew(nv), *gm = fnew(no), *om = fnew(no);
    float *wm = fnew(nw), *dqm = fnew(nq), *dkm = fnew(nk), *dvm = fnew(nv);
    swap12(qm, q, B, NH, Tq, D), swap12(km, k, B, NH, Tk, D), swap12(vm, v, B, NH, Tk, Dv);
    swap12(gm, g, B, NH, Tq, Dv), swap12(dqm, dq0, B, NH, Tq, D), swap12(dkm, dk0, B, NH, Tk, D);
    swap12(dvm, dv0, B, NH, Tk, Dv);
    for (size_t i = 0; i < no; i++) om[i] = 123.0f; /* garbage: every element must be written */
    be->attn_forward_merged(om, wm, qm, km, vm, key_len, scale, causal, B, NH, Tq, Tk, D, Dv);
    be->attn_backward_merged(dqm, dkm, dvm, gm, qm, km, vm, wm, scale, B, NH, Tq, Tk, D, Dv, work);
    float *back = fnew(nq > nk ? (nq > no ? nq : no) : (nk > nv ? nk : nv));
    Stat st;
    stat_begin(&st, "attn_*_merged B%d NH%d Tq%d Tk%d D%d Dv%d causal=%d", B, NH, Tq, Tk, D, Dv,
               causal);
    stat_same(&st, "weights", wm, w, nw);
    swap12(back, om, B, Tq, NH, Dv), stat_same(&st, "out", back, o, no);
    swap12(back, dqm, B, Tq, NH, D), stat_same(&st, "dq", back, dq, nq);
    swap12(back, dkm, B, Tk, NH, D), stat_same(&st, "dk", back, dk, nk);
    swap12(back, dvm, B, Tk, NH, Dv), stat_same(&st, "dv", back, dv, nv);
    /* dv alone: the merged op overwrites it with the same values */
    memset(dv, 0, sizeof(float) * nv);
    be->attn_backward(NULL, NULL, dv, g, q, k, v, w, scale, B, NH, Tq, Tk, D, Dv, work);
    be->attn_backward_merged(NULL, NULL, dvm, gm, qm, km, vm, wm, scale, B, NH, Tq, Tk, D, Dv,
                             work);
    swap12(back, dvm, B, Tk, NH, Dv), stat_same(&st, "dv (dq, dk NULL)", back, dv, nv);
    stat_end(&st);
    free(q), free(k), free(v), free(g), free(dq0), free(dk0), free(dv0), free(o), free(w);
    free(dq), free(dk), free(dv), free(work), free(qm), free(km), free(vm), free(gm), free(om);
    free(wm), free(dqm), free(dkm), free(dvm), free(back);
}

void case_attn_sdp_merged(void) {
    be = backend_cpu();
    rng_seed(&optest_rng, 20240611, 11);
    const int len[3] = {5, 3, 0}; /* full, partial, no key */
    test_attn_merged(3, 2, 5, 5, 6, 6, len, 0);
    test_attn_merged(3, 4, 5, 5, 8, 8, len, 1);
    test_attn_merged(3, 3, 4, 5, 6, 7, len, 0); /* Tq ≠ Tk, D ≠ Dv */
    const int len2[4] = {14, 9, 14, 1}; /* configs/transformer.ini's heads, above the threshold */
    test_attn_merged(4, 4, 14, 14, 64, 64, len2, 1);
    test_attn_merged(4, 4, 12, 14, 64, 64, len2, 0);
}

void case_additive_attn(void) {
    be = backend_cpu();
    rng_seed(&optest_rng, 20240611, 4);
    /* key_len: full, partial, 0 (zero weights and output) */
    const int len[3] = {5, 3, 0};
    test_additive_attn(3, 1, 4, 5, 6, 7, len, 0);
    /* Tq = 1 (one decoder step, as the RNN calls it), other lengths */
    const int len2[3] = {2, 5, 1};
    test_additive_attn(3, 1, 1, 5, 6, 7, len2, 0);
    /* heads: 3 batch entries × NH 3 rows, row r uses v[r mod NH]; causal with Tq < Tk
     * (key s visible iff s ≤ t + 1), full, partial and key_len 0 rows */
    const int len3[9] = {5, 5, 5, 2, 2, 2, 0, 0, 0};
    test_additive_attn(9, 3, 4, 5, 6, 7, len3, 1);
    /* causal with Tq > Tk: query t = 0 sees no key; NH 2 */
    const int len4[4] = {4, 4, 1, 1};
    test_additive_attn(4, 2, 5, 4, 3, 5, len4, 1);
    /* heads, not causal */
    const int len5[6] = {4, 4, 1, 1, 0, 0};
    test_additive_attn(6, 2, 3, 4, 5, 2, len5, 0);
    test_additive_attn_parallel(1, 0);
    test_additive_attn_parallel(4, 1);
}

void case_flash_attn(void) {
    be = backend_cpu();
    rng_seed(&optest_rng, 20240611, 7);
    {
        /* square, key_len full / partial / 0, causal off and on; D ≠ Dv */
        const int len[3] = {130, 77, 0};
        test_vs_materialised(3, 2, 130, 130, 16, 24, len, 0, 0.25f, 0);
        test_vs_materialised(3, 2, 130, 130, 16, 24, len, 1, 0.25f, 0);
        test_vs_materialised(3, 2, 130, 130, 16, 24, len, 0, 0.25f, 1);
        test_vs_materialised(3, 2, 130, 130, 16, 24, len, 1, 0.25f, 1);
    }
    {
        /* Tq ≠ Tk, non-causal; partial length 65 just past one tile */
        const int len[3] = {200, 65, 0};
        test_vs_materialised(3, 2, 63, 200, 8, 5, len, 0, 1.0f / sqrtf(8.0f), 0);
        /* causal with Tk > Tq (offset 137: every query sees ≥ 1 key when len > 0) */
        test_vs_materialised(3, 2, 63, 200, 8, 5, len, 1, 1.0f / sqrtf(8.0f), 0);
    }
    {
        /* causal with Tq > Tk: queries t < Tq − Tk see no key (lse = −∞) */
        const int len[2] = {130, 64};
        test_vs_materialised(2, 3, 200, 130, 12, 7, len, 1, 0.3f, 0);
        /* a large scale: the running maximum keeps changing across tiles (rescaling) */
        test_vs_materialised(2, 3, 65, 130, 12, 7, len, 0, 2.0f, 0);
    }
    {
        /* one query (a decoding step), causal sees every key; lengths 65, 1, 0 */
        const int len[3] = {65, 1, 0};
        test_vs_materialised(3, 2, 1, 65, 16, 8, len, 1, 0.25f, 0);
        test_vs_materialised(3, 2, 1, 65, 16, 8, len, 0, 0.25f, 0);
        /* one key */
        const int len1[3] = {1, 1, 0};
        test_vs_materialised(3, 1, 65, 1, 4, 3, len1, 0, 0.5f, 0);
    }
    {
        /* past the 128-row blocks and the 256-key tiles: two and three key tiles, a partial
         * length one past a tile (257), causal blocks on the diagonal that end inside a tile */
        const int len[3] = {600, 257, 0};
        test_vs_materialised(3, 2, 300, 600, 16, 24, len, 0, 0.25f, 0);
        test_vs_materialised(3, 2, 300, 600, 16, 24, len, 1, 0.25f, 0);
        test_vs_materialised(3, 2, 300, 600, 16, 24, len, 0, 0.25f, 1);
        /* a large scale: the running maximum keeps changing across the key tiles (rescaling) */
        test_vs_materialised(3, 2, 65, 600, 12, 7, len, 0, 2.0f, 0);
        /* causal, square: the diagonal crosses blocks and tiles */
        const int len2[2] = {520, 300};
        test_vs_materialised(2, 2, 520, 520, 8, 8, len2, 1, 0.35f, 0);
    }
    {
        /* finite differences: small, and crossing the key tile (FLASH_BC = 256 keys) */
        const int len[2] = {7, 4};
        test_fd(2, 2, 5, 7, 4, 3, len, 0, 0.5f);
        test_fd(2, 2, 5, 7, 4, 3, len, 1, 0.5f);
        test_fd(2, 2, 9, 7, 4, 3, len, 1, 0.5f); /* Tq > Tk: two queries see no key */
        const int len2[1] = {70};
        test_fd(1, 2, 3, 70, 3, 2, len2, 0, 0.7f);
        const int len3[1] = {270};
        test_fd(1, 1, 3, 270, 3, 2, len3, 0, 0.7f);
    }
    {
        const int len[3] = {200, 130, 0};
        test_threads(3, 2, 130, 200, 64, 40, len, 0); /* D 64: the usual head size */
        test_threads(3, 2, 200, 200, 16, 24, len, 1);
        const int len2[3] = {600, 257, 0};
        test_threads(3, 2, 300, 600, 16, 24, len2, 0);
    }
    {
        /* the workspace: single tiles, then several blocks and tiles, causal both ways */
        const int len[3] = {200, 130, 0};
        test_workspace_exact(3, 2, 130, 200, 64, 40, len, 0);
        const int len2[3] = {600, 257, 0};
        test_workspace_exact(3, 2, 300, 600, 16, 24, len2, 1);
        test_workspace_exact(3, 2, 600, 300, 16, 24, len2, 1);
        const int len3[2] = {1, 1};
        test_workspace_exact(2, 1, 1, 1, 4, 3, len3, 0);
    }
}
