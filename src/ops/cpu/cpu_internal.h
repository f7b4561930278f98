/* ops/cpu/cpu_internal.h — private to src/ops/cpu: the CPU backend's functions (OpenBLAS +
 * OpenMP), each defined in the file of its op family (matmul.c, bias.c, elementwise.c,
 * dropout.c, layernorm.c, embedding.c, softmax_xent.c, lstm.c, gru.c, adam.c, shape.c,
 * attn_sdp.c, attn_additive.c, attn_pointwise.c, flash.c, linear.c, efficient.c) and gathered
 * into the table by backend_cpu.c, and the helpers those files share. Semantics, shapes,
 * errors (none: shapes are the caller's contract) and sources are documented once, on the table
 * in ops/ops.h. */
#ifndef TRAINER_CPU_INTERNAL_H
#define TRAINER_CPU_INTERNAL_H
#include <stdint.h>

#include "ops/cpu/cpu.h"
#include "ops/ops.h"

/* e^x with no branch and no call, so that the loops using it vectorise (glibc's expf does not
 * without -ffast-math): Cody–Waite reduction x = n ln 2 + r, |r| ≤ ln 2 / 2, then Cephes' expf
 * polynomial for e^r, times 2^n built from its bits. n = round(x / ln 2) is read off the low
 * mantissa bits of 1.5·2^23 + x / ln 2 (no float-to-int conversion). Relative error against exp
 * in double over [−87, 1]: at most 8.6e-8 (about 1 ulp). Returns 0 below −87
 * (and for −∞), where expf gives < 1.7e-38; NaN gives NaN. The callers pass x ≲ 0 (a score
 * minus its row's maximum or log-sum-exp): flash and efficient attention, the softmax
 * cross-entropy. */
static inline float cpu_expf(float x) {
    const float xc = x < -87.0f ? -87.0f : (x > 88.0f ? 88.0f : x);
    union {
        float f;
        uint32_t i;
    } t = {xc * 1.44269504088896341f + 12582912.0f}; /* 12582912 = 1.5·2^23 = 0x4B400000 */
    const float n = t.f - 12582912.0f;
    float r = xc - n * 0.693359375f; /* ln 2 = 0.693359375 − 2.12194440e-4, the first exact */
    r = r - n * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f; /* e^r */
    const uint32_t n_i = t.i - 0x4B400000u; /* n, in [−126, 127] */
    union {
        uint32_t i;
        float f;
    } two_n = {((n_i + 127u) << 23) & -(uint32_t) !(x < -87.0f)}; /* 2^n, or 0 below −87 */
    return p * two_n.f;
}

/* σ(x) = 1 / (1 + e^−x) through cpu_expf (vectorises; 1 for x > 87, about 6e-39 below −88).
 * Relative error ≤ 1.5e-7 against double over every float in [−20, 20]. The LSTM and GRU cells. */
static inline float cpu_sigmoidf(float x) { return 1.0f / (1.0f + cpu_expf(-x)); }

/* tanh x, branch-free so that its loops vectorise (glibc's tanhf is a call): for |x| < 0.4 the
 * odd Taylor series through x¹³ (the next term is below 2e-9 there), else
 * sign(x)·(1 − 2 / (e^{2|x|} + 1)) through cpu_expf (±1 from |x| ≈ 9 on). Relative error
 * ≤ 1.8e-7 against tanh in double over every float in [−20, 20] (glibc's tanhf: 1.7e-7); NaN
 * gives NaN. The LSTM and GRU cells, tanh_forward and the additive score below. */
static inline float cpu_tanhf(float x) {
    const float x2 = x * x;
    float p = 21844.0f / 6081075.0f;
    p = p * x2 - 1382.0f / 155925.0f;
    p = p * x2 + 62.0f / 2835.0f;
    p = p * x2 - 17.0f / 315.0f;
    p = p * x2 + 2.0f / 15.0f;
    p = p * x2 - 1.0f / 3.0f;
    const float small = x + x * x2 * p;
    const float ax = x < 0.0f ? -x : x;
    const float big = 1.0f - 2.0f / (cpu_expf(2.0f * ax) + 1.0f);
    return ax < 0.4f ? small : (x < 0.0f ? -big : big);
}

/* The additive score e = vᵀ tanh(q + k) over A features (Bahdanau et al. 2015 eq. 6; Luong et
 * al. 2015 eq. 8 "concat"), q, k, v [A], through cpu_tanhf in one `omp simd` reduction (a fixed
 * order: deterministic). attn_additive.c and attn_local.c. */
static inline float cpu_additive_score(const float *q, const float *k, const float *v, int A) {
    float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
    for (int a = 0; a < A; a++) acc += v[a] * cpu_tanhf(q[a] + k[a]);
    return acc;
}

/* The additive score's backward for one (query, key) pair given de = dL/de: with u = tanh(q + k),
 * dq += de·v⊙(1 − u²), dk += the same, dv += de·u (each skipped where NULL); u is recomputed. */
static inline void cpu_additive_score_backward(float *dq, float *dk, float *dv, const float *q,
                                               const float *k, const float *v, float de, int A) {
#pragma omp simd
    for (int a = 0; a < A; a++) {
        const float u = cpu_tanhf(q[a] + k[a]);
        const float du = de * v[a] * (1.0f - u * u);
        if (dq) dq[a] += du;
        if (dk) dk[a] += du;
        if (dv) dv[a] += de * u;
    }
}


void cpu_matmul(float *C, const float *A, const float *B, int M, int Nc, int K, int transA,
                int transB, float alpha, float beta);
void cpu_matmul_run(int begin);
void cpu_matmul_hold(const float *p, size_t n);
void cpu_matmul_keep(const float *p, size_t n);
int cpu_matmul_transb_slower(void);
void cpu_matmul_bias_forward(float *out, const float *inp, const float *weight, const float *bias,
                             int N, int C, int K, int relu);
void cpu_bias_forward(float *out, const float *bias, int N, int C);
void cpu_bias_backward(float *dbias, const float *dout, int N, int C);
void cpu_axpy(float *y, float a, const float *x, size_t n);
void cpu_scale(float *x, float a, size_t n);
double cpu_sumsq(const float *x, size_t n);
int cpu_all_finite(const float *x, size_t n);
void cpu_concat2_forward(float *out, const float *a, const float *b, int N, int Ca, int Cb);
void cpu_concat2_backward(float *da, float *db, const float *dout, int N, int Ca, int Cb);
void cpu_transpose01_forward(float *out, const float *inp, int D0, int D1, int C);
void cpu_transpose01_backward(float *dinp, const float *dout, int D0, int D1, int C);
void cpu_tanh_forward(float *out, const float *inp, size_t n);
void cpu_tanh_backward(float *dinp, const float *dout, const float *out, size_t n);
void cpu_dropout_forward(float *out, float *mask, const float *inp, float p, uint64_t key,
                         size_t n);
void cpu_dropout_backward(float *dinp, const float *dout, const float *mask, size_t n);
void cpu_embedding_forward(float *out, const int *ids, const float *table, int N, int E);
void cpu_embedding_backward(float *dtable, const float *dout, const int *ids, int N, int E);
void cpu_lstm_cell_forward(float *h, float *c, float *gates, const float *h_prev,
                           const float *c_prev, const float *mask, int B, int H);
void cpu_lstm_cell_backward(float *dgates, float *dh_prev, float *dc_prev, const float *dh,
                            const float *dc, const float *gates, const float *c,
                            const float *c_prev, const float *mask, int B, int H);
void cpu_gru_cell_forward(float *h, float *gx, const float *gh, const float *h_prev,
                          const float *mask, int B, int H);
void cpu_gru_cell_backward(float *dgx, float *dgh, float *dh_prev, const float *dh,
                           const float *gx, const float *gh, const float *h_prev,
                           const float *mask, int B, int H);
void cpu_additive_attn_forward(float *out, float *weights, const float *qp, const float *kp,
                               const float *v, const float *values, const int *key_len,
                               int causal, int B, int NH, int Tq, int Tk, int A, int Dv);
void cpu_additive_attn_backward(float *dqp, float *dkp, float *dv, float *dvalues,
                                const float *dout, const float *qp, const float *kp,
                                const float *v, const float *values, const float *weights, int B,
                                int NH, int Tq, int Tk, int A, int Dv, float *work);
size_t cpu_additive_attn_workspace(int B, int NH, int Tq, int Tk, int A, int Dv);
void cpu_gather_rows(float *dst, const float *src, const int *idx, int n, int D);
void cpu_gather_rows_strided(float *dst, const float *src, const int *idx, int n, int D,
                             int stride);
void cpu_layernorm_forward(float *out, float *mean, float *rstd, const float *inp,
                           const float *weight, const float *bias, int N, int C);
void cpu_layernorm_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                            const float *inp, const float *weight, const float *mean,
                            const float *rstd, int N, int C);
void cpu_bias_relu_dropout_forward(float *out, const float *inp, const float *bias,
                                   float p, uint64_t key, int N, int C);
void cpu_relu_dropout_backward(float *dinp, const float *dout, const float *out, float p,
                               size_t n);
void cpu_permute0213_forward(float *out, const float *inp, int A, int D0, int D1, int C);
void cpu_permute0213_backward(float *dinp, const float *dout, int A, int D0, int D1, int C);
void cpu_write_step(float *cache, const float *x, int N, int Tcap, int t, int C);
void cpu_linear_attn_step(float *out, float *state, float *zsum, const float *q, const float *k,
                          const float *v, int phi, int B, int NH, int D, int Dv);
void cpu_linear_attn_summary(float *state, float *zsum, const float *k, const float *v,
                             const int *key_len, int phi, int B, int NH, int Tk, int D, int Dv);
void cpu_linear_attn_read(float *out, const float *q, const float *state, const float *zsum,
                          int phi, int B, int NH, int Tq, int D, int Dv);
void cpu_linear_attn_read_backward(float *dq, float *dstate, float *dzsum, const float *dout,
                                   const float *q, const float *state, const float *zsum, int phi,
                                   int B, int NH, int Tq, int D, int Dv);
void cpu_linear_attn_summary_backward(float *dk, float *dv, const float *dstate,
                                      const float *dzsum, const float *k, const float *v,
                                      const int *key_len, int phi, int B, int NH, int Tk, int D,
                                      int Dv);
void cpu_efficient_attn_summary(float *ctx, const float *k, const float *v, const int *key_len,
                                int B, int NH, int Tk, int D, int Dv);
void cpu_efficient_attn_read(float *out, const float *q, const float *ctx, int B, int NH, int Tq,
                             int D, int Dv);
void cpu_efficient_attn_read_backward(float *dq, float *dctx, const float *dout, const float *q,
                                      const float *ctx, int B, int NH, int Tq, int D, int Dv);
void cpu_efficient_attn_summary_backward(float *dk, float *dv, const float *dctx,
                                         const float *ctx, const float *k, const float *v,
                                         const int *key_len, int B, int NH, int Tk, int D,
                                         int Dv);
void cpu_l2feature_forward(float *out, const float *inp, int N, int D);
void cpu_l2feature_backward(float *dinp, const float *dout, const float *inp, int N, int D);
void cpu_linformer_proj_forward(float *out, const float *P, const float *x, const int *key_len,
                                int B, int NH, int R, int Tk, int D, int n, int shared);
void cpu_linformer_proj_backward(float *dx, float *dP, const float *dout, const float *P,
                                 const float *x, const int *key_len, int B, int NH, int R, int Tk,
                                 int D, int n, int shared);
void cpu_attn_forward(float *out, float *weights, const float *q, const float *k, const float *v,
                      const int *key_len, float scale, int causal, int B, int NH, int Tq, int Tk,
                      int D, int Dv);
void cpu_attn_backward(float *dq, float *dk, float *dv, const float *dout, const float *q,
                       const float *k, const float *v, const float *weights, float scale, int B,
                       int NH, int Tq, int Tk, int D, int Dv, float *work);
void cpu_attn_forward_merged(float *out, float *weights, const float *q, const float *k,
                             const float *v, const int *key_len, float scale, int causal, int B,
                             int NH, int Tq, int Tk, int D, int Dv);
void cpu_attn_backward_merged(float *dq, float *dk, float *dv, const float *dout,
                              const float *q, const float *k, const float *v,
                              const float *weights, float scale, int B, int NH, int Tq, int Tk,
                              int D, int Dv, float *work);
size_t cpu_attn_workspace(int B, int NH, int Tq, int Tk, int D, int Dv);
size_t cpu_flash_attn_workspace(int B, int NH, int Tq, int Tk, int D, int Dv);
/* attn_pointwise.c: pointwise attention and the per-head RMS normalisation (ops.h
 * pointwise_attn_*, head_rmsnorm_*) */
void cpu_pointwise_attn_forward(float *out, float *weights, const float *q, const float *k,
                                const float *v, const int *key_len, float scale, int causal,
                                int fn, int B, int NH, int Tq, int Tk, int D, int Dv);
void cpu_pointwise_attn_backward(float *dq, float *dk, float *dv, const float *dout,
                                 const float *q, const float *k, const float *v,
                                 const float *weights, float scale, int fn, int B, int NH, int Tq,
                                 int Tk, int D, int Dv, float *work);
size_t cpu_pointwise_attn_workspace(int B, int NH, int Tq, int Tk, int D, int Dv);
void cpu_head_rmsnorm_forward(float *out, float *rstd, const float *inp, const float *gain,
                              int B, int NH, int T, int C);
void cpu_head_rmsnorm_backward(float *dinp, float *dgain, const float *dout, const float *inp,
                               const float *gain, const float *rstd, int B, int NH, int T,
                               int C);
size_t cpu_linear_attn_workspace(int B, int NH, int Tq, int Tk, int D, int Dv);
size_t cpu_efficient_attn_workspace(int B, int NH, int Tq, int Tk, int D, int Dv);
/* attn_local.c: local attention (ops.h local_attn_*); cpu_local_window: the window [lo, hi] and
 * p_t of query t of batch row b (the one definition the CPU op uses) */
void cpu_local_window(int *lo, int *hi, float *p, const float *z, int len, int window, int pos0,
                      int b, int t, int Tq);
void cpu_local_attn_forward(float *out, float *weights, const float *q, const float *k,
                            const float *va, const float *v, const float *z, const int *key_len,
                            float scale, int window, int pos0, int B, int NH, int Tq, int Tk,
                            int D, int Dv);
void cpu_local_attn_backward(float *dq, float *dk, float *dva, float *dv, float *dz,
                             const float *dout, const float *q, const float *k, const float *va,
                             const float *v, const float *z, const float *weights,
                             const int *key_len, float scale, int window, int pos0, int B, int NH,
                             int Tq, int Tk, int D, int Dv, float *work);
size_t cpu_local_attn_workspace(int B, int NH, int Tq, int Tk, int D, int Dv);
double cpu_xent_forward_backward(float *dlogits, const float *logits, const int *targets, int N,
                                 int V, float smoothing, int ignore_id, float grad_scale,
                                 float *work);
size_t cpu_xent_workspace(int N, int V);
void cpu_log_softmax(float *out, const float *logits, int N, int V);
void cpu_argmax(int *ids, const float *x, int N, int V);
void cpu_adam_update(float *param, const float *grad, float *m, float *v, size_t n, float lr,
                     float b1, float b2, float eps, int t);
void cpu_flash_attn_forward(float *out, float *lse, const float *q, const float *k,
                            const float *v, const int *key_len, float scale, int causal, int B,
                            int NH, int Tq, int Tk, int D, int Dv, float *work);
void cpu_flash_attn_backward(float *dq, float *dk, float *dv, const float *dout, const float *q,
                             const float *k, const float *v, const float *out, const float *lse,
                             const int *key_len, float scale, int causal, int B, int NH, int Tq,
                             int Tk, int D, int Dv, float *work);
void cpu_linear_attn_forward(float *out, const float *q, const float *k, const float *v,
                             const int *key_len, int causal, int phi, int B, int NH, int Tq,
                             int Tk, int D, int Dv, float *work);
void cpu_linear_attn_backward(float *dq, float *dk, float *dv, const float *dout, const float *q,
                              const float *k, const float *v, const int *key_len, int causal,
                              int phi, int B, int NH, int Tq, int Tk, int D, int Dv,
                              float *work);
void cpu_efficient_attn_forward(float *out, const float *q, const float *k, const float *v,
                                const int *key_len, int B, int NH, int Tq, int Tk, int D, int Dv,
                                float *work);
void cpu_efficient_attn_backward(float *dq, float *dk, float *dv, const float *dout,
                                 const float *q, const float *k, const float *v,
                                 const int *key_len, int B, int NH, int Tq, int Tk, int D, int Dv,
                                 float *work);

/* Shared by the linear-time attention ops (linear.c, efficient.c, flash.c). */
/* Σ_i a_i b_i in float32; an `omp simd` reduction (a fixed, compile-time order: the result does
 * not depend on the thread count). */
static inline float cpu_dotf(const float *a, const float *b, int n) {
    float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
    for (int i = 0; i < n; i++) acc += a[i] * b[i];
    return acc;
}

/* y += a·x over n floats; an `omp simd` loop (vectorised at -O2 whatever the cost model; the
 * result is element-wise, so it is the same as the scalar loop's). */
static inline void cpu_axpyf(float *y, float a, const float *x, int n) {
#pragma omp simd
    for (int i = 0; i < n; i++) y[i] += a * x[i];
}

/* key_len[b] clipped to [0, Tk] (all Tk keys when key_len is NULL). */
static inline int cpu_key_count(const int *key_len, int b, int Tk) {
    int len = key_len ? key_len[b] : Tk;
    if (len > Tk) len = Tk;
    if (len < 0) len = 0;
    return len;
}

#endif
