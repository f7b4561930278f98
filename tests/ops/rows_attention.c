/* rows_attention.c — the attention ops' rows of test_backend_ops (op_harness.h): linear,
 * efficient, linformer, taylor (l2feature), sdp (attn_*, merged), flash, additive, local and
 * pointwise attention, and head_rmsnorm. Their CPU cases against references and the kinds built
 * on them are attention_*.c (attention_cases.h); these rows check another backend against the
 * CPU, and on the CPU the inputs unchanged, the hooks' checks, and for pointwise_attn and
 * head_rmsnorm a double reference and finite differences. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "op_harness.h"
#include "ops/cpu/cpu.h"
#include "testutil.h"

/* The attention rows' layout: q 0, k 1, v 2 (or the row's inputs), key_len 3, dims B, NH, Tq,
 * Tk first. key_len: row 1 with no key, the others padded (Tk − b mod 3). Tolerance 1e-5
 * normwise: the same float operations per output element in other orders, with FMA contraction
 * on a GPU. */
static void attn_prep(void **h, const int *d) {
    for (int b = 0; b < d[0]; b++) HI(3)[b] = b == 1 ? 0 : d[3] - b % 3;
}
#define ADIMS d[0], d[1], d[2], d[3], d[4], d[5] /* B, NH, Tq, Tk, D, Dv */

/* linear attention (both feature maps: elu + 1 on q, k in [−1, 1); the identity on [0, 1), so
 * that every φ(q)·φ(k) ≥ 0, as the taylor kind's features give), causal and not; Tq != Tk,
 * D != Dv, D and Dv past the 128-thread block */
static void lin_prep(void **h, const int *d) {
    attn_prep(h, d);
    for (int i = 0; i < 2 && d[7] == LINEAR_PHI_IDENTITY; i++)
        for (size_t k = 0; k < (size_t)d[0] * d[1] * d[2 + i] * d[4]; k++) HF(i)[k] = (HF(i)[k] + 1) * 0.5f;
}
static void lin_fwd(const Backend *be, void **p, const int *d) {
    be->linear_attn_forward(F(4), F(0), F(1), F(2), I(3), d[6], d[7], ADIMS, F(9));
}
static void lin_bwd(const Backend *be, void **p, const int *d) {
    be->linear_attn_backward(F(6), F(7), F(8), F(5), F(0), F(1), F(2), I(3), d[6], d[7], ADIMS, F(9));
}
static size_t lin_work(const Backend *be, const int *d) { return be->linear_attn_workspace(ADIMS); }
static const int lin_sh[][MAXD] = {{2, 2, 5, 7, 4, 3, -2, -2}, {3, 1, 6, 6, 8, 8, -2, -2}, {1, 3, 1, 9, 5, 6, -2, -2},
                                   {2, 2, 9, 4, 16, 150, -2, -2}, {1, 1, 3, 4, 130, 131, -2, -2}};

/* linear_attn_step: Tk decoding steps (dim k), a new query, key and value each, from zero state */
static void step_fwd(const Backend *be, void **p, const int *d) {
    size_t nz = (size_t)d[0] * d[1] * d[3], nv = (size_t)d[0] * d[1] * d[4];
    for (int t = 0; t < d[2]; t++)
        be->linear_attn_step(F(3) + t * nv, F(4), F(5), F(0) + t * nz, F(1) + t * nz, F(2) + t * nv, d[5],
                             d[0], d[1], d[3], d[4]);
}
static void step_prep(void **h, const int *d) {
    for (int i = 0; i < 2 && d[5] == LINEAR_PHI_IDENTITY; i++)
        for (size_t k = 0; k < (size_t)d[0] * d[1] * d[2] * d[3]; k++) HF(i)[k] = (HF(i)[k] + 1) * 0.5f;
}
static const int step_sh[][MAXD] = {{2, 2, 7, 4, 3, -2}, {3, 1, 6, 8, 8, -2}, {1, 3, 9, 5, 6, -2},
                                    {2, 2, 4, 16, 150, -2}, {1, 1, 4, 130, 131, -2}};

/* linear_attn_summary, _read, _read_backward, _summary_backward (the non-causal form split at its
 * key summary), the shapes of linear attention and one with D = Dv = 130 (k = v and dk = dv one
 * buffer: the RNN's one-head case):
 *   summary with key_len and with NULL onto random prefills (it overwrites); the read of each;
 *     summary then read equals linear_attn_forward with causal = 0 bit for bit (lsp_extra);
 *   read_backward onto the prefills of dq, dstate, dzsum over the summary of every key, then
 *     with dq NULL (compared there: a pair with no key has den = 1e-6 and a dstate a million
 *     times larger, which would hide the other pairs' errors), then over the summary with key_len
 *     (dq and dzsum at the end);
 *   summary_backward of random dstate, dzsum with key_len onto the prefills of dk, dv (padded keys
 *     keep theirs), then with dv NULL, then with dk NULL; where D = Dv, k = v and dk = dv. */
static void lsp_fwd(const Backend *be, void **p, const int *d) {
    int f = d[6];
    be->linear_attn_summary(F(5), F(6), F(1), F(2), I(3), f, d[0], d[1], d[3], d[4], d[5]);
    be->linear_attn_summary(F(7), F(8), F(1), F(2), NULL, f, d[0], d[1], d[3], d[4], d[5]);
    be->linear_attn_read(F(9), F(0), F(5), F(6), f, d[0], d[1], d[2], d[4], d[5]);
    be->linear_attn_read(F(10), F(0), F(7), F(8), f, d[0], d[1], d[2], d[4], d[5]);
}
static void lsp_bwd(const Backend *be, void **p, const int *d) {
    const Row *r = row_named("linear_attn_split");
    int f = d[6], B = d[0], NH = d[1], Tq = d[2], Tk = d[3], D = d[4], Dv = d[5];
    be->linear_attn_read_backward(F(11), F(12), F(13), F(4), F(0), F(7), F(8), f, B, NH, Tq, D, Dv);
    be->linear_attn_read_backward(NULL, F(12), F(13), F(4), F(0), F(7), F(8), f, B, NH, Tq, D, Dv);
    emit_mid(r, d, p, 11, "then dq NULL"), emit_mid(r, d, p, 12, "twice"), emit_mid(r, d, p, 13, "twice");
    be->linear_attn_read_backward(F(11), F(12), F(13), F(4), F(0), F(5), F(6), f, B, NH, Tq, D, Dv);
    be->linear_attn_summary_backward(F(16), F(17), F(14), F(15), F(1), F(2), I(3), f, B, NH, Tk, D, Dv);
    emit_mid(r, d, p, 16, "dk and dv"), emit_mid(r, d, p, 17, "dk and dv");
    be->linear_attn_summary_backward(F(16), NULL, F(14), F(15), F(1), F(2), I(3), f, B, NH, Tk, D, Dv);
    be->linear_attn_summary_backward(NULL, F(17), F(14), F(15), F(1), F(2), I(3), f, B, NH, Tk, D, Dv);
    if (D != Dv) return;
    emit_mid(r, d, p, 16, "then dv NULL");
    be->linear_attn_summary_backward(F(16), F(16), F(14), F(15), F(1), F(1), I(3), f, B, NH, Tk, D, Dv);
}
static void lsp_prep(void **h, const int *d) {
    attn_prep(h, d);
    for (int i = 0; i < 2 && d[6] == LINEAR_PHI_IDENTITY; i++)
        for (size_t k = 0; k < (size_t)d[0] * d[1] * d[2 + i] * d[4]; k++) HF(i)[k] = (HF(i)[k] + 1) * 0.5f;
}
static size_t lsp_work(const Backend *be, const int *d) { return be->linear_attn_workspace(ADIMS); }
/* summary + read (o: p[o]; key_len NULL: p[o + 1]) = the forward (fwd: 0 linear, 1 efficient) */
static void split_same(const Backend *be, void **p, const int *d, Stat *st, int o, int w, int eff) {
    size_t n = (size_t)d[0] * d[1] * d[2] * d[5];
    float *f = be->alloc(n * 4);
    for (int null = 0; null < 2 - eff; null++) {
        if (eff)
            be->efficient_attn_forward(f, F(0), F(1), F(2), I(3), ADIMS, F(w));
        else
            be->linear_attn_forward(f, F(0), F(1), F(2), null ? NULL : I(3), 0, d[6], ADIMS, F(w));
        float *a = from_backend(be, f, n), *b = from_backend(be, F(o + null), n);
        stat_same(st, null ? "summary + read, key_len NULL: the forward" : "summary + read: the forward", b, a, n);
        free(a), free(b);
    }
    be->free(f);
}
static void lsp_extra(const Backend *be, void **p, void **h, const int *d, Stat *st) {
    split_same(be, p, d, st, 9, 18, 0), (void)h;
}
static const int lsp_sh[][MAXD] = {{2, 2, 5, 7, 4, 3, -2}, {3, 1, 6, 6, 8, 8, -2}, {1, 3, 1, 9, 5, 6, -2},
                                   {2, 2, 9, 4, 16, 150, -2}, {1, 1, 3, 4, 130, 131, -2}, {3, 1, 3, 5, 130, 130, -2}};

/* efficient attention (keys x3: a sharper column softmax), and its context split as linear's
 * (summary with key_len: row 1's context 0; then read; then read_backward onto dq, dctx, and with
 * dq NULL; summary_backward of a random dctx, then dv NULL, then dk NULL, and k = v, dk = dv
 * where D = Dv, over the summary of (k, k)); summary then read equals the forward bit for bit */
static void eff_prep(void **h, const int *d) {
    attn_prep(h, d);
    for (size_t i = 0; i < (size_t)d[0] * d[1] * d[3] * d[4]; i++) HF(1)[i] *= 3.0f;
}
static void eff_fwd(const Backend *be, void **p, const int *d) {
    be->efficient_attn_forward(F(4), F(0), F(1), F(2), I(3), ADIMS, F(9));
}
static void eff_bwd(const Backend *be, void **p, const int *d) {
    be->efficient_attn_backward(F(6), F(7), F(8), F(5), F(0), F(1), F(2), I(3), ADIMS, F(9));
}
static size_t eff_work(const Backend *be, const int *d) { return be->efficient_attn_workspace(ADIMS); }
static void esp_fwd(const Backend *be, void **p, const int *d) {
    be->efficient_attn_summary(F(5), F(1), F(2), I(3), d[0], d[1], d[3], d[4], d[5]);
    be->efficient_attn_summary(F(6), F(1), F(2), NULL, d[0], d[1], d[3], d[4], d[5]);
    be->efficient_attn_read(F(7), F(0), F(5), d[0], d[1], d[2], d[4], d[5]);
}
static void esp_bwd(const Backend *be, void **p, const int *d) {
    const Row *r = row_named("efficient_attn_split");
    int B = d[0], NH = d[1], Tq = d[2], Tk = d[3], D = d[4], Dv = d[5];
    be->efficient_attn_read_backward(F(8), F(9), F(4), F(0), F(5), B, NH, Tq, D, Dv);
    be->efficient_attn_read_backward(NULL, F(9), F(4), F(0), F(5), B, NH, Tq, D, Dv);
    be->efficient_attn_summary_backward(F(11), F(12), F(10), F(5), F(1), F(2), I(3), B, NH, Tk, D, Dv);
    emit_mid(r, d, p, 11, "dk and dv"), emit_mid(r, d, p, 12, "dk and dv");
    be->efficient_attn_summary_backward(F(11), NULL, F(10), F(5), F(1), F(2), I(3), B, NH, Tk, D, Dv);
    be->efficient_attn_summary_backward(NULL, F(12), F(10), F(5), F(1), F(2), I(3), B, NH, Tk, D, Dv);
    if (D != Dv) return;
    emit_mid(r, d, p, 11, "then dv NULL"), emit_mid(r, d, p, 5, "of k, v");
    be->efficient_attn_summary(F(5), F(1), F(1), I(3), B, NH, Tk, D, Dv);
    be->efficient_attn_summary_backward(F(11), F(11), F(10), F(5), F(1), F(1), I(3), B, NH, Tk, D, Dv);
}
static void esp_extra(const Backend *be, void **p, void **h, const int *d, Stat *st) {
    split_same(be, p, d, st, 7, 13, 1), (void)h;
}

/* linformer_proj (the projections over the key axis): per-head and shared P (s; H its heads),
 * n > Tk and n = Tk, key_len and NULL (l), a shape wider than one block; the last two past the
 * element-wise grid; padded rows of dx and the columns s >= Tk of dP keep their prefills */
static void lp_fwd(const Backend *be, void **p, const int *d) {
    be->linformer_proj_forward(F(4), F(0), F(1), d[8] ? NULL : I(3), d[0], d[1], d[2], d[3], d[4], d[5], d[6]);
}
static void lp_bwd(const Backend *be, void **p, const int *d) {
    be->linformer_proj_backward(F(5), F(6), F(2), F(0), F(1), d[8] ? NULL : I(3), d[0], d[1], d[2], d[3], d[4],
                                d[5], d[6]);
}
static const int lp_sh[][MAXD] = {/* B, NH, R, Tk, D, n, shared, H, key_len NULL */
    {3, 2, 4, 5, 3, 7, 0, 2, 0}, {3, 2, 4, 5, 3, 7, 1, 1, 0}, {2, 3, 3, 6, 4, 6, 0, 3, 1},
    {2, 3, 3, 6, 4, 6, 1, 1, 1}, {4, 4, 32, 37, 16, 128, 0, 4, 0}, {4, 4, 32, 37, 16, 128, 1, 1, 0},
    {1025, 1, 2, 2, 513, 2, 0, 1, 0}, {1, 1, 1025, 1025, 1, 1025, 0, 1, 0}};

/* l2feature (the taylor kind's features [1; x/‖x‖₂], E = D + 1): widths 1, a head size, past
 * the 64-thread block; a zero row (x̂ = 0) and a row of large values */
static void l2_fwd(const Backend *be, void **p, const int *d) { be->l2feature_forward(F(1), F(0), d[0], d[1]); }
static void l2_bwd(const Backend *be, void **p, const int *d) { be->l2feature_backward(F(3), F(2), F(0), d[0], d[1]); }
static void l2_prep(void **h, const int *d) {
    for (int k = 0; k < d[1] && d[0] > 2; k++) HF(0)[d[1] + k] = 0.0f, HF(0)[2 * d[1] + k] *= 1000.0f;
}
static const int l2_sh[][MAXD] = {{5, 8, 9}, {1, 1, 2}, {37, 64, 65}, {3, 150, 151}};

/* The softmax kinds' shapes (B, NH, Tq, Tk, D, Dv, then the row's): Tq != Tk, D != Dv, padded
 * keys, Tq > Tk with causal (rows that see no key), Tk past one block; D and Dv past a warp and not
 * multiples of it, one query (Luong's decoder step), Tk·D large enough that attn_backward's
 * inputs kernel splits a row over 2 and 4 blocks; the last past flash's 64-row tiles, the
 * 128-thread blocks, and D (A = D + 3) past the 128- and 64-thread blocks. */
#define SDP_SH(A, ...) {2, 2, 5, 7, 4 A, 3, __VA_ARGS__}, {3, 1, 6, 4, 8 A, 8, __VA_ARGS__}, \
    {1, 3, 1, 9, 5 A, 6, __VA_ARGS__}, {2, 1, 3, 140, 16 A, 24, __VA_ARGS__}, {3, 1, 1, 13, 100 A, 70, __VA_ARGS__}, \
    {2, 2, 2, 40, 96 A, 33, __VA_ARGS__}, {2, 4, 14, 12, 64 A, 64, __VA_ARGS__}, {1, 1, 70, 150, 130 A, 5, __VA_ARGS__}

/* The keys of every (b, h) row at s = 1 (an odd lane) and s = Tk − 1 (the last) times 30, so
 * that their scores lie far from the others' (a maximum taken over the even lanes only, or
 * without the last key, then overflows exp). k [B, NH, Tk, D], or [B, Tk, NH, D] when merged. */
static void spike_keys(float *k, int B, int NH, int Tk, int D, int merged) {
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++)
            for (int s = 1; s < Tk; s += Tk - 2 > 0 ? Tk - 2 : Tk) /* s = 1, then Tk − 1 */
                for (int d = 0; d < D; d++)
                    k[(merged ? ((size_t)b * Tk + s) * NH + h : ((size_t)b * NH + h) * Tk + s) * D +
                      d] *= 30.0f;
}

/* x rounded to multiples of 1/16, in place: with |x| <= 2 (and keys spiked x30), every product
 * q_d k_d and every partial sum of a score over D <= 130 terms is exact in float, so both
 * backends compute the same scores whatever their order of summation. */
static void round_to_sixteenths(float *x, size_t n) {
    for (size_t i = 0; i < n; i++) x[i] = roundf(x[i] * 16.0f) / 16.0f;
}

/* The size of the terms attn_backward adds, the floor of its tolerance. With P the weights
 * [B,NH,Tq,Tk], dP = dout vᵀ and δ_t = Σ_s P_ts dP_ts, dS = P ∘ (dP − δ) is a difference of
 * terms of size a = P (|dP| + |δ|), which a saturated row (one weight near 1, as the spiked keys
 * make) cancels down to far below a: its rounding is then of the size of a, not of dS. Writes
 * *mq = max over (b, h, t, d) of scale Σ_s a_ts |k_sd| and *mk = max over (b, h, s, d) of
 * scale Σ_t a_ts |q_td|. q, k, v, dout: host arrays [B,NH,T,·], or [B,T,NH,·] when merged. */
static void sdp_backward_terms(double *mq, double *mk, const float *q, const float *k,
                               const float *v, const float *dout, const float *w, float scale,
                               int merged, int B, int NH, int Tq, int Tk, int D, int Dv) {
#define SDP_AT(b, h, t, T, d, W) \
    (merged ? (((size_t)(b) * (T) + (t)) * NH + (h)) * (W) + (d) \
            : (((size_t)(b) * NH + (h)) * (T) + (t)) * (W) + (d))
    double *a = malloc(sizeof(double) * (size_t)Tq * Tk + 1);
    if (!a) exit(2);
    *mq = *mk = 0.0;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) {
            const float *P = w + ((size_t)b * NH + h) * Tq * Tk;
            for (int t = 0; t < Tq; t++) {
                double delta = 0.0;
                for (int s = 0; s < Tk; s++) {
                    double dp = 0.0;
                    for (int e = 0; e < Dv; e++)
                        dp += (double)dout[SDP_AT(b, h, t, Tq, e, Dv)] * v[SDP_AT(b, h, s, Tk, e, Dv)];
                    a[(size_t)t * Tk + s] = fabs(dp);
                    delta += P[(size_t)t * Tk + s] * dp;
                }
                for (int s = 0; s < Tk; s++)
                    a[(size_t)t * Tk + s] = P[(size_t)t * Tk + s] * (a[(size_t)t * Tk + s] + fabs(delta));
            }
            for (int d = 0; d < D; d++) {
                for (int t = 0; t < Tq; t++) {
                    double m = 0.0;
                    for (int s = 0; s < Tk; s++)
                        m += a[(size_t)t * Tk + s] * fabs((double)k[SDP_AT(b, h, s, Tk, d, D)]);
                    *mq = fmax(*mq, scale * m);
                }
                for (int s = 0; s < Tk; s++) {
                    double m = 0.0;
                    for (int t = 0; t < Tq; t++)
                        m += a[(size_t)t * Tk + s] * fabs((double)q[SDP_AT(b, h, t, Tq, d, D)]);
                    *mk = fmax(*mk, scale * m);
                }
            }
        }
    free(a);
#undef SDP_AT
}


/* attn_* (weights materialised), and its merged layout (m): out and weights, causal and not;
 * backward onto random prefills (the merged one overwrites them), then dv alone. q and k on a grid
 * of 1/16 and a power-of-two scale (near 1/√D), so that the scores are exact on both sides and
 * the spiked keys' steep softmax does not turn their rounding into the weights'. dq and dk
 * against the larger of the result and the terms they add (sdp_floor). flash_attn_* the same
 * way: out and lse (±∞ exactly where the CPU has them), the backward then dk, dv alone. */
static float sdp_scale(int D) { return ldexpf(1.0f, -(int)lrint(0.5 * log2((double)D))); }
static void sdp_prep(void **h, const int *d) {
    attn_prep(h, d);
    for (int i = 0; i < 2; i++) round_to_sixteenths(HF(i), (size_t)d[0] * d[1] * d[2 + i] * d[4]);
    spike_keys(HF(1), d[0], d[1], d[3], d[4], d[7]);
}
static void sdp_fwd(const Backend *be, void **p, const int *d) {
    (d[7] ? be->attn_forward_merged : be->attn_forward)(F(4), F(5), F(0), F(1), F(2), I(3), sdp_scale(d[4]), d[6], ADIMS);
}
static void sdp_bwd(const Backend *be, void **p, const int *d) {
    void (*f)(float *, float *, float *, const float *, const float *, const float *, const float *,
              const float *, float, int, int, int, int, int, int, float *) =
        d[7] ? be->attn_backward_merged : be->attn_backward;
    f(F(7), F(8), F(9), F(6), F(0), F(1), F(2), F(5), sdp_scale(d[4]), ADIMS, F(10));
    f(NULL, NULL, F(9), F(6), F(0), F(1), F(2), F(5), sdp_scale(d[4]), ADIMS, F(10));
}
static size_t sdp_work(const Backend *be, const int *d) { return be->attn_workspace(ADIMS); }
static double sdp_floor(int i, void **h, const int *d) {
    if (i != 7 && i != 8) return 0;
    size_t nw = (size_t)d[0] * d[1] * d[2] * d[3], no = (size_t)d[0] * d[1] * d[2] * d[5];
    float *w = fnew(nw + 1), *o = fnew(no + 1);
    const Backend *c = backend_cpu();
    (d[7] ? c->attn_forward_merged : c->attn_forward)(o, w, HF(0), HF(1), HF(2), HI(3), sdp_scale(d[4]), d[6], ADIMS);
    double mq, mk;
    sdp_backward_terms(&mq, &mk, HF(0), HF(1), HF(2), HF(6), w, sdp_scale(d[4]), d[7], ADIMS);
    free(w), free(o);
    return i == 7 ? mq : mk * (1 + (d[8] == 1)); /* flash's dk: twice */
}
static const int sdp_sh[][MAXD] = {SDP_SH(+0, -2, -2)};
static void fl_fwd(const Backend *be, void **p, const int *d) {
    be->flash_attn_forward(F(4), F(5), F(0), F(1), F(2), I(3), sdp_scale(d[4]), d[6], ADIMS, F(10));
}
static void fl_bwd(const Backend *be, void **p, const int *d) {
    be->flash_attn_backward(F(7), F(8), F(9), F(6), F(0), F(1), F(2), F(4), F(5), I(3), sdp_scale(d[4]), d[6], ADIMS, F(10));
    be->flash_attn_backward(NULL, F(8), F(9), F(6), F(0), F(1), F(2), F(4), F(5), I(3), sdp_scale(d[4]), d[6], ADIMS, F(10));
}
static size_t fl_work(const Backend *be, const int *d) { return be->flash_attn_workspace(ADIMS); }
static const int fl_sh[][MAXD] = {SDP_SH(+0, -2, 0, 1)};

/* additive_attn_* (A = D + 3): out and weights, causal and not; backward of qp, kp, v_a and the
 * values onto random prefills, then the values alone */
static void add_fwd(const Backend *be, void **p, const int *d) {
    be->additive_attn_forward(F(4), F(5), F(0), F(1), F(11), F(2), I(3), d[6], ADIMS);
}
static void add_bwd(const Backend *be, void **p, const int *d) {
    be->additive_attn_backward(F(7), F(8), F(12), F(9), F(6), F(0), F(1), F(11), F(2), F(5), ADIMS, F(10));
    be->additive_attn_backward(NULL, NULL, NULL, F(9), F(6), F(0), F(1), F(11), F(2), F(5), ADIMS, F(10));
}
static size_t add_work(const Backend *be, const int *d) { return be->additive_attn_workspace(ADIMS); }
static const int add_sh[][MAXD] = {SDP_SH(+3, -2)};

/* local_attn_* (Luong et al. 2015 §3.2): local-m and local-p (p), the dot (scale 1/√D) and the
 * additive score (a), windows W clipped by padding and by the ends (from position P; the last
 * shape's windows are wider than its keys, clipped at both ends at once), a row of length 0;
 * backward of q, k, v_a, v, z onto random prefills, then v alone. z puts p_t at a fractional
 * part in [0.25, 0.75], so both backends find the same windows. The saved rows (w = 2W + 2: the
 * window's first key, then its weights) are compared element-wise, so that the first key, an
 * integer, must agree exactly and does not set the scale of the weights' tolerance. */
static void loc_prep(void **h, const int *d) {
    attn_prep(h, d);
    spike_keys(HF(1), d[0], d[1], d[3], d[4], 0);
    for (int b = 0; b < d[0]; b++) /* p_t = len σ(z) = an integer + [0.25, 0.75] */
        for (int t = 0; t < d[2]; t++) {
            float *z = &HF(13)[(size_t)b * d[2] + t];
            int len = HI(3)[b];
            double pt = (int)((*z + 1) * 0.5f * (len > 1 ? len - 1 : 0)) + 0.5 + 0.25 * *z;
            double f = fmin(len > 0 ? pt / len : 0.5, 0.99);
            *z = (float)log(f / (1 - f));
        }
}
static void loc_fwd(const Backend *be, void **p, const int *d) {
    be->local_attn_forward(F(4), F(5), F(0), F(1), d[7] ? F(11) : NULL, F(2), d[6] ? F(13) : NULL, I(3),
                           1.0f / sqrtf((float)d[4]), d[8], d[9], ADIMS);
}
static void loc_bwd(const Backend *be, void **p, const int *d) {
    const float *va = d[7] ? F(11) : NULL, *z = d[6] ? F(13) : NULL;
    float s = 1.0f / sqrtf((float)d[4]);
    be->local_attn_backward(F(7), F(8), d[7] ? F(12) : NULL, F(9), d[6] ? F(14) : NULL, F(6), F(0), F(1), va, F(2),
                            z, F(5), I(3), s, d[8], d[9], ADIMS, F(10));
    be->local_attn_backward(NULL, NULL, NULL, F(9), NULL, F(6), F(0), F(1), va, F(2), z, F(5), I(3), s, d[8], d[9],
                            ADIMS, F(10));
}
static size_t loc_work(const Backend *be, const int *d) { return be->local_attn_workspace(ADIMS, d[8]); }
/* the workspace is O(Tq·W) a head: the same for 64 times the keys, and below Tq·Tk floats a row
 * once Tk exceeds the window (it holds the windows' score gradients, not Tq × Tk) */
static void loc_extra(const Backend *be, void **p, void **h, const int *d, Stat *st) {
    (void)p, (void)h;
    size_t w1 = be->local_attn_workspace(ADIMS, d[8]);
    size_t w64 = be->local_attn_workspace(d[0], d[1], d[2], 64 * d[3], d[4], d[5], d[8]);
    stat_true(st, w64 == w1, "local_attn_workspace grows with Tk: %zu floats at Tk = %d, %zu at %d",
              w1, d[3], w64, 64 * d[3]);
    size_t quad = (size_t)d[0] * d[1] * d[2] * 64 * d[3];
    stat_true(st, w64 < quad || quad == 0, "local_attn_workspace %zu floats >= Tq x Tk (%zu)", w64,
              quad);
}
static const int loc_sh[][MAXD] = {/* B, NH, Tq, Tk, D, Dv, predictive, additive, W, pos0,
                                   * 2W + 2 (the saved row) */
    {2, 2, 5, 7, 4, 3, -2, -2, 2, 0, 6},   {3, 1, 6, 4, 8, 8, -2, -2, 3, 0, 8},      {1, 3, 1, 9, 5, 6, -2, -2, 4, 4, 10},
    {2, 1, 3, 140, 16, 24, -2, -2, 70, 0, 142}, {3, 1, 1, 13, 100, 70, -2, -2, 6, 0, 14}, {2, 2, 2, 40, 96, 33, -2, -2, 7, 0, 16},
    {2, 4, 14, 12, 64, 64, -2, -2, 8, 0, 18}, {1, 1, 70, 150, 130, 5, -2, -2, 70, 0, 142},
    {2, 2, 6, 5, 4, 3, -2, -2, 3, 0, 8}};

/* pointwise_attn_* (the sigmoid and rela kinds' weights f(scale·q·k + bias)), both functions
 * (f), causal and not, on the softmax kinds' shapes; scale 1/√D. The CPU against a reference
 * written here in double from ops.h's formulas (weights, out, and the gradients added to the
 * prefills), and its gradients against finite differences on the small shapes; extra (both
 * backends): each gradient alone (the others NULL) equals its value with all three, into
 * zeroed buffers, and the masked weights are exactly 0. */
static float pw_scale(int D) { return 1.0f / sqrtf((float)D); }
static void pw_fwd(const Backend *be, void **p, const int *d) {
    be->pointwise_attn_forward(F(4), F(5), F(0), F(1), F(2), I(3), pw_scale(d[4]), d[6], d[7], ADIMS);
}
static void pw_bwd(const Backend *be, void **p, const int *d) {
    be->pointwise_attn_backward(F(7), F(8), F(9), F(6), F(0), F(1), F(2), F(5), pw_scale(d[4]), d[7], ADIMS,
                                F(10));
}
static size_t pw_work(const Backend *be, const int *d) { return be->pointwise_attn_workspace(ADIMS); }
/* the visible keys of query t in batch row b (ops.h's masks) */
static int pw_lim(const int *key_len, const int *d, int b, int t) {
    int len = key_len[b] < d[3] ? key_len[b] : d[3];
    if (d[6] && t + d[3] - d[2] + 1 < len) len = t + d[3] - d[2] + 1;
    return len < 0 ? 0 : len;
}
static unsigned pw_ref(double **r, void **h, const int *d) {
    int B = d[0], NH = d[1], Tq = d[2], Tk = d[3], D = d[4], Dv = d[5], fn = d[7];
    double scale = pw_scale(D);
    for (int bh = 0; bh < B * NH; bh++)
        for (int t = 0; t < Tq; t++) {
            int lim = pw_lim(HI(3), d, bh / NH, t);
            const float *q = HF(0) + ((size_t)bh * Tq + t) * D, *g = HF(6) + ((size_t)bh * Tq + t) * Dv;
            double *w = r[5] + ((size_t)bh * Tq + t) * Tk, *o = r[4] + ((size_t)bh * Tq + t) * Dv;
            for (int e = 0; e < Dv; e++) o[e] = 0;
            for (int s = 0; s < Tk; s++) {
                const float *k = HF(1) + ((size_t)bh * Tk + s) * D, *v = HF(2) + ((size_t)bh * Tk + s) * Dv;
                w[s] = 0;
                if (s >= lim) continue;
                double e = 0, dw = 0;
                for (int j = 0; j < D; j++) e += (double)q[j] * k[j];
                e *= scale;
                double fp; /* f'(e) */
                if (fn == POINTWISE_SIGMOID) {
                    w[s] = 1.0 / (1.0 + exp(-(e - log((double)lim))));
                    fp = w[s] * (1 - w[s]);
                } else {
                    w[s] = e > 0 ? e : 0;
                    fp = e > 0;
                }
                for (int j = 0; j < Dv; j++) {
                    o[j] += w[s] * v[j];
                    dw += (double)g[j] * v[j];
                    r[9][((size_t)bh * Tk + s) * Dv + j] += w[s] * g[j]; /* dv */
                }
                double de = fp * dw * scale;
                for (int j = 0; j < D; j++) {
                    r[7][((size_t)bh * Tq + t) * D + j] += de * k[j]; /* dq */
                    r[8][((size_t)bh * Tk + s) * D + j] += de * q[j]; /* dk */
                }
            }
        }
    return 1u << 4 | 1u << 5 | 1u << 7 | 1u << 8 | 1u << 9;
}
static void pw_extra(const Backend *be, void **p, void **h, const int *d, Stat *st) {
    size_t nq = (size_t)d[0] * d[1] * d[2] * d[4], nk = (size_t)d[0] * d[1] * d[3] * d[4];
    size_t nv = (size_t)d[0] * d[1] * d[3] * d[5];
    const size_t n[3] = {nq, nk, nv};
    float *all[3], *one[3];
    for (int i = 0; i < 3; i++) all[i] = be->alloc(n[i] * 4 + 4), one[i] = be->alloc(n[i] * 4 + 4);
    be->pointwise_attn_backward(all[0], all[1], all[2], F(6), F(0), F(1), F(2), F(5), pw_scale(d[4]), d[7],
                                ADIMS, F(10));
    be->pointwise_attn_backward(one[0], NULL, NULL, F(6), F(0), F(1), F(2), F(5), pw_scale(d[4]), d[7], ADIMS,
                                F(10));
    be->pointwise_attn_backward(NULL, one[1], NULL, F(6), F(0), F(1), F(2), F(5), pw_scale(d[4]), d[7], ADIMS,
                                F(10));
    be->pointwise_attn_backward(NULL, NULL, one[2], F(6), F(0), F(1), F(2), F(5), pw_scale(d[4]), d[7], ADIMS,
                                F(10));
    be->pointwise_attn_backward(NULL, NULL, NULL, F(6), F(0), F(1), F(2), F(5), pw_scale(d[4]), d[7], ADIMS,
                                F(10)); /* nothing to do; must not crash */
    const char *names[3] = {"dq alone", "dk alone", "dv alone"};
    for (int i = 0; i < 3; i++) {
        float *a = from_backend(be, all[i], n[i]), *b = from_backend(be, one[i], n[i]);
        stat_same(st, names[i], b, a, n[i]);
        free(a), free(b);
        be->free(all[i]), be->free(one[i]);
    }
    size_t nw = (size_t)d[0] * d[1] * d[2] * d[3];
    float *w = from_backend(be, F(5), nw);
    int masked_zero = 1;
    for (int bh = 0; bh < d[0] * d[1]; bh++)
        for (int t = 0; t < d[2]; t++)
            for (int s = pw_lim(HI(3), d, bh / d[1], t); s < d[3]; s++)
                masked_zero &= w[((size_t)bh * d[2] + t) * d[3] + s] == 0.0f;
    stat_true(st, masked_zero, "a masked key has a nonzero weight");
    free(w);
}
/* relu: every score at least 0.02 away from ReLU's kink, where finite differences of step
 * FD_EPS would straddle it (a key whose score with some query is nearer is moved, one coordinate
 * at a time, until none is) */
static void pw_prep(void **h, const int *d) {
    attn_prep(h, d);
    if (d[7] != POINTWISE_RELU) return;
    int Tq = d[2], Tk = d[3], D = d[4];
    for (int bh = 0; bh < d[0] * d[1]; bh++)
        for (int s = 0; s < Tk; s++) {
            float *k = HF(1) + ((size_t)bh * Tk + s) * D;
            for (int tries = 0, near = 1; near && tries < 64; tries++) {
                near = 0;
                for (int t = 0; t < Tq; t++) {
                    const float *q = HF(0) + ((size_t)bh * Tq + t) * D;
                    double e = 0;
                    for (int j = 0; j < D; j++) e += (double)q[j] * k[j];
                    near |= fabs(e * pw_scale(D)) < 0.02;
                }
                if (near) k[tries % D] += 0.37f;
            }
        }
}
static const int pw_sh[][MAXD] = {SDP_SH(+0, -2, -2)};

/* head_rmsnorm_* (rela's normalisation): widths 1, a head size and past the 64-thread block,
 * rows of one head and of several; with z, row 1 all zeros (rstd = 1/√ε, out = 0; no finite
 * differences there: the norm is not smooth at 0). The CPU against a double reference (out,
 * rstd, and the gradients added to the prefills), its gradients against finite differences on
 * the small shapes. */
static void rms_fwd(const Backend *be, void **p, const int *d) {
    be->head_rmsnorm_forward(F(2), F(3), F(0), F(1), d[0], d[1], d[2], d[3]);
}
static void rms_bwd(const Backend *be, void **p, const int *d) {
    be->head_rmsnorm_backward(F(5), F(6), F(4), F(0), F(1), F(3), d[0], d[1], d[2], d[3]);
}
static void rms_prep(void **h, const int *d) {
    if (d[4])
        for (int c = 0; c < d[3]; c++) HF(0)[(size_t)d[3] + c] = 0.0f; /* row 1 */
}
static unsigned rms_ref(double **r, void **h, const int *d) {
    int NH = d[1], T = d[2], C = d[3];
    long N = (long)d[0] * NH * T;
    for (long n = 0; n < N; n++) {
        const float *x = HF(0) + (size_t)n * C, *g = HF(1) + (size_t)((n / T) % NH) * C;
        const float *go = HF(4) + (size_t)n * C;
        double ss = 0, sgx = 0;
        for (int c = 0; c < C; c++) ss += (double)x[c] * x[c];
        double rs = 1.0 / sqrt(ss / C + 1e-8);
        r[3][n] = rs;
        for (int c = 0; c < C; c++) {
            r[2][(size_t)n * C + c] = x[c] * rs * g[c];
            sgx += (double)go[c] * g[c] * x[c] * rs;
            r[6][(size_t)((n / T) % NH) * C + c] += go[c] * x[c] * rs;
        }
        for (int c = 0; c < C; c++)
            r[5][(size_t)n * C + c] += rs * (go[c] * g[c] - x[c] * rs * sgx / C);
    }
    return 1u << 2 | 1u << 3 | 1u << 5 | 1u << 6;
}
static int rms_fd(const int *d) { return !d[4] && (long)d[0] * d[1] * d[2] * d[3] <= 400; }
static const int rms_sh[][MAXD] = {{2, 3, 4, 5, 0}, {1, 1, 1, 1, 0}, {3, 2, 5, 8, -2}, {3, 4, 7, 64, 0},
                                   {2, 2, 9, 130, 0}, {1, 8, 300, 64, 1}};


/* (a row names the fields it sets; the rest are zero: no tolerance, no gradient, no hook) */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
static const Row ROWS[] = {
#define R(...) {__VA_ARGS__}
    R("linear_attn", "linear_attn_forward,linear_attn_backward,linear_attn_workspace", "BNqkDVcf", SHAPES(lin_sh),
      {{"q", IN, "BNqD", -1, 1}, {"k", IN, "BNkD", -1, 1}, {"v", IN, "BNkV", -1, 1}, {"key_len", INT, "B"},
       {"out", OUT, "BNqV", -1, 1, 1e-5}, {"dout", IN, "BNqV", -1, 1}, {"dq", ACC, "BNqD", -1, 1, 1e-5},
       {"dk", ACC, "BNkD", -1, 1, 1e-5}, {"dv", ACC, "BNkV", -1, 1, 1e-5}, {"work", WORK, ""}},
      lin_fwd, lin_bwd, NULL, 0, lin_prep, .fd = fd_never, .work = lin_work),
    R("linear_attn_step", "linear_attn_step", "BNTDVf", SHAPES(step_sh),
      {{"q", IN, "TBND", -1, 1}, {"k", IN, "TBND", -1, 1}, {"v", IN, "TBNV", -1, 1}, {"out", OUT, "TBNV", -1, 1, 1e-5},
       {"state", ACC, "BNDV", 0, 0, 1e-5}, {"zsum", ACC, "BND", 0, 0, 1e-5}},
      step_fwd, NULL, NULL, 0, step_prep),
    R("linear_attn_split", "linear_attn_summary,linear_attn_read,linear_attn_read_backward,linear_attn_summary_backward",
      "BNqkDVf", SHAPES(lsp_sh),
      {{"q", IN, "BNqD", -1, 1}, {"k", IN, "BNkD", -1, 1}, {"v", IN, "BNkV", -1, 1}, {"key_len", INT, "B"},
       {"dout", IN, "BNqV", -1, 1}, {"state", OUT, "BNDV", -1, 1, 1e-5}, {"zsum", OUT, "BND", -1, 1, 1e-5},
       {"state (key_len NULL)", OUT, "BNDV", -1, 1, 1e-5}, {"zsum (key_len NULL)", OUT, "BND", -1, 1, 1e-5},
       {"out", OUT, "BNqV", -1, 1, 1e-5}, {"out (key_len NULL)", OUT, "BNqV", -1, 1, 1e-5},
       {"dq", ACC, "BNqD", -1, 1, 1e-5}, {"dstate", ACC, "BNDV", -1, 1, 1e-5}, {"dzsum", ACC, "BND", -1, 1, 1e-5},
       {"dstate_in", IN, "BNDV", -1, 1}, {"dzsum_in", IN, "BND", -1, 1}, {"dk", ACC, "BNkD", -1, 1, 1e-5},
       {"dv", ACC, "BNkV", -1, 1, 1e-5}, {"work", WORK, ""}},
      lsp_fwd, lsp_bwd, NULL, 0, lsp_prep, .extra = lsp_extra, .fd = fd_never, .work = lsp_work),
    R("efficient_attn", "efficient_attn_forward,efficient_attn_backward,efficient_attn_workspace", "BNqkDV", SHAPES(lin_sh),
      {{"q", IN, "BNqD", -1, 1}, {"k", IN, "BNkD", -1, 1}, {"v", IN, "BNkV", -1, 1}, {"key_len", INT, "B"},
       {"out", OUT, "BNqV", -1, 1, 1e-5}, {"dout", IN, "BNqV", -1, 1}, {"dq", ACC, "BNqD", -1, 1, 1e-5},
       {"dk", ACC, "BNkD", -1, 1, 1e-5}, {"dv", ACC, "BNkV", -1, 1, 1e-5}, {"work", WORK, ""}},
      eff_fwd, eff_bwd, NULL, 0, eff_prep, .fd = fd_never, .work = eff_work),
    R("efficient_attn_split",
      "efficient_attn_summary,efficient_attn_read,efficient_attn_read_backward,efficient_attn_summary_backward",
      "BNqkDV", SHAPES(lsp_sh),
      {{"q", IN, "BNqD", -1, 1}, {"k", IN, "BNkD", -1, 1}, {"v", IN, "BNkV", -1, 1}, {"key_len", INT, "B"},
       {"dout", IN, "BNqV", -1, 1}, {"ctx", OUT, "BNDV", -1, 1, 1e-5}, {"ctx (key_len NULL)", OUT, "BNDV", -1, 1, 1e-5},
       {"out", OUT, "BNqV", -1, 1, 1e-5}, {"dq", ACC, "BNqD", -1, 1, 1e-5}, {"dctx", ACC, "BNDV", -1, 1, 1e-5},
       {"dctx_in", IN, "BNDV", -1, 1}, {"dk", ACC, "BNkD", -1, 1, 1e-5}, {"dv", ACC, "BNkV", -1, 1, 1e-5},
       {"work", WORK, ""}},
      esp_fwd, esp_bwd, NULL, 0, eff_prep, .extra = esp_extra, .fd = fd_never, .work = eff_work),
    R("linformer_proj", "linformer_proj_forward,linformer_proj_backward", "BNRkDnsHl", SHAPES(lp_sh),
      {{"P", IN, "HRn", -1, 1}, {"x", IN, "BNkD", -1, 1}, {"dout", IN, "BNRD", -1, 1}, {"key_len", INT, "B"},
       {"out", OUT, "BNRD", -1, 1, 1e-5}, {"dx", ACC, "BNkD", -1, 1, 1e-5}, {"dP", ACC, "HRn", -1, 1, 1e-5}},
      lp_fwd, lp_bwd, NULL, 0, attn_prep, .fd = fd_never),
    R("l2feature", "l2feature_forward,l2feature_backward", "NDE", SHAPES(l2_sh),
      {{"x", IN, "ND", -1, 1}, {"out", OUT, "NE", -1, 1, 1e-5}, {"dout", IN, "NE", -1, 1}, {"dx", ACC, "ND", -1, 1, 1e-5}},
      l2_fwd, l2_bwd, NULL, 0, l2_prep, .fd = fd_never),
    R("attn", "attn_forward,attn_backward,attn_workspace,attn_forward_merged,attn_backward_merged", "BNqkDVcm",
      SHAPES(sdp_sh),
      {{"q", IN, "BNqD", -2, 2}, {"k", IN, "BNkD", -2, 2}, {"v", IN, "BNkV", -1, 1}, {"key_len", INT, "B"},
       {"out", OUT, "BNqV", -1, 1, 1e-5}, {"weights", OUT, "BNqk", -1, 1, 1e-5}, {"dout", IN, "BNqV", -1, 1},
       {"dq", ACC, "BNqD", -1, 1, 1e-5}, {"dk", ACC, "BNkD", -1, 1, 1e-5}, {"dv", ACC, "BNkV", -1, 1, 1e-5},
       {"work", WORK, ""}},
      sdp_fwd, sdp_bwd, NULL, 0, sdp_prep, sdp_floor, .fd = fd_never, .work = sdp_work),
    R("flash_attn", "flash_attn_forward,flash_attn_backward,flash_attn_workspace", "BNqkDVcmf", SHAPES(fl_sh),
      {{"q", IN, "BNqD", -2, 2}, {"k", IN, "BNkD", -2, 2}, {"v", IN, "BNkV", -1, 1}, {"key_len", INT, "B"},
       {"out", OUT, "BNqV", -1, 1, 1e-5}, {"lse", OUT, "BNq", -1, 1, -1e-5}, {"dout", IN, "BNqV", -1, 1},
       {"dq", ACC, "BNqD", -1, 1, 1e-5}, {"dk", ACC, "BNkD", -1, 1, 1e-5}, {"dv", ACC, "BNkV", -1, 1, 1e-5},
       {"work", WORK, ""}},
      fl_fwd, fl_bwd, NULL, 0, sdp_prep, sdp_floor, .fd = fd_never, .work = fl_work),
    R("additive_attn", "additive_attn_forward,additive_attn_backward,additive_attn_workspace", "BNqkAVc", SHAPES(add_sh),
      {{"qp", IN, "BNqA", -1, 1}, {"kp", IN, "BNkA", -1, 1}, {"v", IN, "BNkV", -1, 1}, {"key_len", INT, "B"},
       {"out", OUT, "BNqV", -1, 1, 1e-5}, {"weights", OUT, "BNqk", -1, 1, 1e-5}, {"dout", IN, "BNqV", -1, 1},
       {"dqp", ACC, "BNqA", -1, 1, 1e-5}, {"dkp", ACC, "BNkA", -1, 1, 1e-5}, {"dv", ACC, "BNkV", -1, 1, 1e-5},
       {"work", WORK, ""}, {"v_a", IN, "NA", -1, 1}, {"dv_a", ACC, "NA", -1, 1, 1e-5}},
      add_fwd, add_bwd, NULL, 0, attn_prep, .fd = fd_never, .work = add_work),
    R("local_attn", "local_attn_forward,local_attn_backward,local_attn_workspace", "BNqkDVpaWPw", SHAPES(loc_sh),
      {{"q", IN, "BNqD", -1, 1}, {"k", IN, "BNkD", -1, 1}, {"v", IN, "BNkV", -1, 1}, {"key_len", INT, "B"},
       {"out", OUT, "BNqV", -1, 1, 1e-5}, {"weights", OUT, "BNqw", -1, 1, -1e-5}, {"dout", IN, "BNqV", -1, 1},
       {"dq", ACC, "BNqD", -1, 1, 1e-5}, {"dk", ACC, "BNkD", -1, 1, 1e-5}, {"dv", ACC, "BNkV", -1, 1, 1e-5},
       {"work", WORK, ""}, {"v_a", IN, "ND", -1, 1}, {"dv_a", ACC, "ND", -1, 1, 1e-5}, {"z", IN, "Bq", -1, 1},
       {"dz", ACC, "Bq", -1, 1, 1e-5}},
      loc_fwd, loc_bwd, NULL, 0, loc_prep, .extra = loc_extra, .fd = fd_never, .work = loc_work),
    R("pointwise_attn", "pointwise_attn_forward,pointwise_attn_backward,pointwise_attn_workspace", "BNqkDVcf",
      SHAPES(pw_sh),
      {{"q", IN, "BNqD", -2, 2}, {"k", IN, "BNkD", -2, 2}, {"v", IN, "BNkV", -1, 1}, {"key_len", INT, "B"},
       {"out", OUT, "BNqV", -1, 1, 1e-5}, {"weights", OUT, "BNqk", -1, 1, 1e-5}, {"dout", IN, "BNqV", -1, 1, 0, 5},
       {"dq", ACC, "BNqD", -1, 1, 1e-5, 1}, {"dk", ACC, "BNkD", -1, 1, 1e-5, 2}, {"dv", ACC, "BNkV", -1, 1, 1e-5, 3},
       {"work", WORK, ""}},
      pw_fwd, pw_bwd, pw_ref, 1e-5, pw_prep, .extra = pw_extra, .work = pw_work),
    R("head_rmsnorm", "head_rmsnorm_forward,head_rmsnorm_backward", "BNTCz", SHAPES(rms_sh),
      {{"inp", IN, "BNTC", -1, 1}, {"gain", IN, "NC", 0.5f, 1.5f}, {"out", OUT, "BNTC", -1, 1, 1e-5},
       {"rstd", OUT, "BNT", -1, 1, 1e-5}, {"dout", IN, "BNTC", -1, 1, 0, 3}, {"dinp", ACC, "BNTC", -1, 1, 1e-5, 1},
       {"dgain", ACC, "NC", -1, 1, 1e-5, 2}},
      rms_fwd, rms_bwd, rms_ref, 1e-5, rms_prep, .fd = rms_fd),
#undef R
};
#pragma GCC diagnostic pop
const RowTable ROWS_ATTENTION = {ROWS, (int)(sizeof ROWS / sizeof ROWS[0])};
