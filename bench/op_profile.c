/* op_profile.c — a Backend that times the ops of another (bench/op_profile.h). The shims below
 * are one per computational field of Backend (src/ops/ops.h) they time, in the field order;
 * each times its call between the inner backend's synchronize()s and adds the FLOPs of the
 * dense-algebra and attention ops. An op without a shim passes through to the inner backend
 * untimed (its time falls between the ops), and op_profile_print names it, from the OpKind
 * table (op_name, op_offset). */
#include "op_profile.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/common.h"

/* the computational fields of Backend (src/ops/ops.h) timed here, in its order */
#define PROF_OPS(X) \
    X(matmul) X(matmul_bias_forward) X(bias_forward) X(bias_backward) X(axpy) X(scale) X(sumsq) \
    X(all_finite) X(concat2_forward) X(concat2_backward) X(transpose01_forward) \
    X(transpose01_backward) X(tanh_forward) X(tanh_backward) X(dropout_forward) \
    X(dropout_backward) X(layernorm_forward) X(layernorm_backward) X(bias_relu_dropout_forward) \
    X(relu_dropout_backward) X(permute0213_forward) X(permute0213_backward) X(write_step) \
    X(gather_rows_strided) X(embedding_forward) X(embedding_backward) X(lstm_cell_forward) \
    X(lstm_cell_backward) X(gru_cell_forward) X(gru_cell_backward) X(additive_attn_forward) \
    X(additive_attn_backward) X(additive_attn_workspace) X(flash_attn_forward) \
    X(flash_attn_backward) X(flash_attn_workspace) X(linear_attn_forward) \
    X(linear_attn_backward) X(linear_attn_workspace) X(linear_attn_step) \
    X(linear_attn_summary) X(linear_attn_read) X(linear_attn_read_backward) \
    X(linear_attn_summary_backward) X(l2feature_forward) X(l2feature_backward) \
    X(linformer_proj_forward) X(linformer_proj_backward) \
    X(local_attn_forward) X(local_attn_backward) X(local_attn_workspace) \
    X(efficient_attn_forward) X(efficient_attn_backward) X(efficient_attn_workspace) \
    X(efficient_attn_summary) X(efficient_attn_read) X(efficient_attn_read_backward) \
    X(efficient_attn_summary_backward) \
    X(gather_rows) X(attn_forward) X(attn_backward) X(attn_workspace) X(attn_forward_merged) \
    X(attn_backward_merged) X(pointwise_attn_forward) X(pointwise_attn_backward) \
    X(pointwise_attn_workspace) X(head_rmsnorm_forward) X(head_rmsnorm_backward) \
    X(xent_forward_backward) \
    X(xent_workspace) X(log_softmax) X(argmax) X(adam_update) X(rnn_seq_sizes) \
    X(rnn_seq_forward) X(rnn_seq_backward)

static const Backend *g_in; /* the backend being timed */

static int g_cpu_clock; /* op_profile_cpu_clock */

static double prof_now(void) { return g_cpu_clock ? cpu_seconds() : now_seconds(); }

void op_profile_cpu_clock(int on) { g_cpu_clock = on; }

/* ---- the per-op table ---- */
#define PROF_INDEX(name) PI_##name,
enum { PROF_OPS(PROF_INDEX) PI_COUNT };
#define PROF_NAME(name) #name,
static const char *const g_names[PI_COUNT] = {PROF_OPS(PROF_NAME)};

typedef struct {
    long calls;
    double seconds, flops;
} OpStat;
static OpStat g_ops[PI_COUNT];

/* GEMM shapes: M, N, K, transA, transB as matmul takes them */
typedef struct {
    int M, N, K, ta, tb;
    long calls;
    double seconds;
} GemmStat;
#define PROF_MAX_GEMMS 2048
static GemmStat g_gemms[PROF_MAX_GEMMS];
static int g_ngemms, g_gemm_overflow;

static double prof_begin(void) {
    g_in->synchronize();
    return prof_now();
}
/* Adds the call (started at t0) to op i with its FLOPs; returns its seconds. */
static double prof_end(int i, double t0, double flops) {
    g_in->synchronize();
    double dt = prof_now() - t0;
    g_ops[i].calls++, g_ops[i].seconds += dt, g_ops[i].flops += flops;
    return dt;
}
static void prof_gemm(int M, int N, int K, int ta, int tb, double dt) {
    for (int i = 0; i < g_ngemms; i++) {
        GemmStat *g = &g_gemms[i];
        if (g->M == M && g->N == N && g->K == K && g->ta == ta && g->tb == tb) {
            g->calls++, g->seconds += dt;
            return;
        }
    }
    if (g_ngemms == PROF_MAX_GEMMS) {
        g_gemm_overflow = 1;
        return;
    }
    g_gemms[g_ngemms++] = (GemmStat){M, N, K, ta, tb, 1, dt};
}

/* ---- the shims (one per op; the FLOPs counted: matmul 2·M·N·K, attention 2·B·NH·Tq·Tk per
 * product of Tq × Tk by a head dimension, dense: causal masking not discounted) ---- */
static void p_matmul(float *C, const float *A, const float *B, int M, int Nc, int K, int transA,
                     int transB, float alpha, float beta) {
    double t_ = prof_begin();
    g_in->matmul(C, A, B, M, Nc, K, transA, transB, alpha, beta);
    t_ = prof_end(PI_matmul, t_, 2.0 * M * Nc * K);
    prof_gemm(M, Nc, K, transA, transB, t_);
}
static void p_matmul_bias_forward(float *out, const float *inp, const float *weight,
                                  const float *bias, int N, int C, int K, int relu) {
    double t_ = prof_begin();
    g_in->matmul_bias_forward(out, inp, weight, bias, N, C, K, relu);
    t_ = prof_end(PI_matmul_bias_forward, t_, 2.0 * N * C * K);
    prof_gemm(N, C, K, 0, 1, t_);
}
static void p_bias_forward(float *out, const float *bias, int N, int C) {
    double t_ = prof_begin();
    g_in->bias_forward(out, bias, N, C);
    t_ = prof_end(PI_bias_forward, t_, 0);
}
static void p_bias_backward(float *dbias, const float *dout, int N, int C) {
    double t_ = prof_begin();
    g_in->bias_backward(dbias, dout, N, C);
    t_ = prof_end(PI_bias_backward, t_, 0);
}
static void p_axpy(float *y, float a, const float *x, size_t n) {
    double t_ = prof_begin();
    g_in->axpy(y, a, x, n);
    t_ = prof_end(PI_axpy, t_, 0);
}
static void p_scale(float *x, float a, size_t n) {
    double t_ = prof_begin();
    g_in->scale(x, a, n);
    t_ = prof_end(PI_scale, t_, 0);
}
static double p_sumsq(const float *x, size_t n) {
    double t_ = prof_begin();
    double r_ = g_in->sumsq(x, n);
    t_ = prof_end(PI_sumsq, t_, 0);
    return r_;
}
static int p_all_finite(const float *x, size_t n) {
    double t_ = prof_begin();
    int r_ = g_in->all_finite(x, n);
    t_ = prof_end(PI_all_finite, t_, 0);
    return r_;
}
static void p_concat2_forward(float *out, const float *a, const float *b, int N, int Ca, int Cb) {
    double t_ = prof_begin();
    g_in->concat2_forward(out, a, b, N, Ca, Cb);
    t_ = prof_end(PI_concat2_forward, t_, 0);
}
static void p_concat2_backward(float *da, float *db, const float *dout, int N, int Ca, int Cb) {
    double t_ = prof_begin();
    g_in->concat2_backward(da, db, dout, N, Ca, Cb);
    t_ = prof_end(PI_concat2_backward, t_, 0);
}
static void p_transpose01_forward(float *out, const float *inp, int D0, int D1, int C) {
    double t_ = prof_begin();
    g_in->transpose01_forward(out, inp, D0, D1, C);
    t_ = prof_end(PI_transpose01_forward, t_, 0);
}
static void p_transpose01_backward(float *dinp, const float *dout, int D0, int D1, int C) {
    double t_ = prof_begin();
    g_in->transpose01_backward(dinp, dout, D0, D1, C);
    t_ = prof_end(PI_transpose01_backward, t_, 0);
}
static void p_tanh_forward(float *out, const float *inp, size_t n) {
    double t_ = prof_begin();
    g_in->tanh_forward(out, inp, n);
    t_ = prof_end(PI_tanh_forward, t_, 0);
}
static void p_tanh_backward(float *dinp, const float *dout, const float *out, size_t n) {
    double t_ = prof_begin();
    g_in->tanh_backward(dinp, dout, out, n);
    t_ = prof_end(PI_tanh_backward, t_, 0);
}
static void p_dropout_forward(float *out, float *mask, const float *inp, float p, uint64_t key,
                              size_t n) {
    double t_ = prof_begin();
    g_in->dropout_forward(out, mask, inp, p, key, n);
    t_ = prof_end(PI_dropout_forward, t_, 0);
}
static void p_dropout_backward(float *dinp, const float *dout, const float *mask, size_t n) {
    double t_ = prof_begin();
    g_in->dropout_backward(dinp, dout, mask, n);
    t_ = prof_end(PI_dropout_backward, t_, 0);
}
static void p_layernorm_forward(float *out, float *mean, float *rstd, const float *inp,
                                const float *weight, const float *bias, int N, int C) {
    double t_ = prof_begin();
    g_in->layernorm_forward(out, mean, rstd, inp, weight, bias, N, C);
    t_ = prof_end(PI_layernorm_forward, t_, 0);
}
static void p_layernorm_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                                 const float *inp, const float *weight, const float *mean,
                                 const float *rstd, int N, int C) {
    double t_ = prof_begin();
    g_in->layernorm_backward(dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C);
    t_ = prof_end(PI_layernorm_backward, t_, 0);
}
static void p_bias_relu_dropout_forward(float *out, const float *inp, const float *bias, float p,
                                        uint64_t key, int N, int C) {
    double t_ = prof_begin();
    g_in->bias_relu_dropout_forward(out, inp, bias, p, key, N, C);
    t_ = prof_end(PI_bias_relu_dropout_forward, t_, 0);
}
static void p_relu_dropout_backward(float *dinp, const float *dout, const float *out, float p,
                                    size_t n) {
    double t_ = prof_begin();
    g_in->relu_dropout_backward(dinp, dout, out, p, n);
    t_ = prof_end(PI_relu_dropout_backward, t_, 0);
}
static void p_permute0213_forward(float *out, const float *inp, int A, int D0, int D1, int C) {
    double t_ = prof_begin();
    g_in->permute0213_forward(out, inp, A, D0, D1, C);
    t_ = prof_end(PI_permute0213_forward, t_, 0);
}
static void p_permute0213_backward(float *dinp, const float *dout, int A, int D0, int D1, int C) {
    double t_ = prof_begin();
    g_in->permute0213_backward(dinp, dout, A, D0, D1, C);
    t_ = prof_end(PI_permute0213_backward, t_, 0);
}
static void p_write_step(float *cache, const float *x, int N, int Tcap, int t, int C) {
    double t_ = prof_begin();
    g_in->write_step(cache, x, N, Tcap, t, C);
    t_ = prof_end(PI_write_step, t_, 0);
}
static void p_gather_rows_strided(float *dst, const float *src, const int *idx, int n, int D,
                                  int stride) {
    double t_ = prof_begin();
    g_in->gather_rows_strided(dst, src, idx, n, D, stride);
    t_ = prof_end(PI_gather_rows_strided, t_, 0);
}
static void p_embedding_forward(float *out, const int *ids, const float *table, int N, int E) {
    double t_ = prof_begin();
    g_in->embedding_forward(out, ids, table, N, E);
    t_ = prof_end(PI_embedding_forward, t_, 0);
}
static void p_embedding_backward(float *dtable, const float *dout, const int *ids, int N, int E) {
    double t_ = prof_begin();
    g_in->embedding_backward(dtable, dout, ids, N, E);
    t_ = prof_end(PI_embedding_backward, t_, 0);
}
static void p_lstm_cell_forward(float *h, float *c, float *gates, const float *h_prev,
                                const float *c_prev, const float *mask, int B, int H) {
    double t_ = prof_begin();
    g_in->lstm_cell_forward(h, c, gates, h_prev, c_prev, mask, B, H);
    t_ = prof_end(PI_lstm_cell_forward, t_, 0);
}
static void p_lstm_cell_backward(float *dgates, float *dh_prev, float *dc_prev, const float *dh,
                                 const float *dc, const float *gates, const float *c,
                                 const float *c_prev, const float *mask, int B, int H) {
    double t_ = prof_begin();
    g_in->lstm_cell_backward(dgates, dh_prev, dc_prev, dh, dc, gates, c, c_prev, mask, B, H);
    t_ = prof_end(PI_lstm_cell_backward, t_, 0);
}
static void p_gru_cell_forward(float *h, float *gx, const float *gh, const float *h_prev,
                               const float *mask, int B, int H) {
    double t_ = prof_begin();
    g_in->gru_cell_forward(h, gx, gh, h_prev, mask, B, H);
    t_ = prof_end(PI_gru_cell_forward, t_, 0);
}
static void p_gru_cell_backward(float *dgx, float *dgh, float *dh_prev, const float *dh,
                                const float *gx, const float *gh, const float *h_prev,
                                const float *mask, int B, int H) {
    double t_ = prof_begin();
    g_in->gru_cell_backward(dgx, dgh, dh_prev, dh, gx, gh, h_prev, mask, B, H);
    t_ = prof_end(PI_gru_cell_backward, t_, 0);
}
static void p_additive_attn_forward(float *out, float *weights, const float *qp, const float *kp,
                                    const float *v, const float *values, const int *key_len,
                                    int causal, int B, int NH, int Tq, int Tk, int A, int Dv) {
    double t_ = prof_begin();
    g_in->additive_attn_forward(out, weights, qp, kp, v, values, key_len, causal, B, NH, Tq, Tk, A,
                                Dv);
    t_ = prof_end(PI_additive_attn_forward, t_, 0);
}
static void p_additive_attn_backward(float *dqp, float *dkp, float *dv, float *dvalues,
                                     const float *dout, const float *qp, const float *kp,
                                     const float *v, const float *values, const float *weights,
                                     int B, int NH, int Tq, int Tk, int A, int Dv, float *work) {
    double t_ = prof_begin();
    g_in->additive_attn_backward(dqp, dkp, dv, dvalues, dout, qp, kp, v, values, weights, B, NH, Tq,
                                 Tk, A, Dv, work);
    t_ = prof_end(PI_additive_attn_backward, t_, 0);
}
static size_t p_additive_attn_workspace(int B, int NH, int Tq, int Tk, int A, int Dv) {
    double t_ = prof_begin();
    size_t r_ = g_in->additive_attn_workspace(B, NH, Tq, Tk, A, Dv);
    t_ = prof_end(PI_additive_attn_workspace, t_, 0);
    return r_;
}
static void p_flash_attn_forward(float *out, float *lse, const float *q, const float *k,
                                 const float *v, const int *key_len, float scale, int causal, int B,
                                 int NH, int Tq, int Tk, int D, int Dv, float *work) {
    double t_ = prof_begin();
    g_in->flash_attn_forward(out, lse, q, k, v, key_len, scale, causal, B, NH, Tq, Tk, D, Dv, work);
    t_ = prof_end(PI_flash_attn_forward, t_, 2.0 * B * NH * Tq * Tk * (D + Dv));
}
static void p_flash_attn_backward(float *dq, float *dk, float *dv, const float *dout,
                                  const float *q, const float *k, const float *v, const float *out,
                                  const float *lse, const int *key_len, float scale, int causal,
                                  int B, int NH, int Tq, int Tk, int D, int Dv, float *work) {
    double t_ = prof_begin();
    g_in->flash_attn_backward(dq, dk, dv, dout, q, k, v, out, lse, key_len, scale, causal, B, NH,
                              Tq, Tk, D, Dv, work);
    t_ = prof_end(PI_flash_attn_backward, t_, 2.0 * B * NH * Tq * Tk * (3.0 * D + 2 * Dv));
}
static size_t p_flash_attn_workspace(int B, int NH, int Tq, int Tk, int D, int Dv) {
    double t_ = prof_begin();
    size_t r_ = g_in->flash_attn_workspace(B, NH, Tq, Tk, D, Dv);
    t_ = prof_end(PI_flash_attn_workspace, t_, 0);
    return r_;
}
static void p_linear_attn_forward(float *out, const float *q, const float *k, const float *v,
                                  const int *key_len, int causal, int phi, int B, int NH, int Tq,
                                  int Tk, int D, int Dv, float *work) {
    double t_ = prof_begin();
    g_in->linear_attn_forward(out, q, k, v, key_len, causal, phi, B, NH, Tq, Tk, D, Dv, work);
    t_ = prof_end(PI_linear_attn_forward, t_, 0);
}
static void p_linear_attn_backward(float *dq, float *dk, float *dv, const float *dout,
                                   const float *q, const float *k, const float *v,
                                   const int *key_len, int causal, int phi, int B, int NH, int Tq,
                                   int Tk, int D, int Dv, float *work) {
    double t_ = prof_begin();
    g_in->linear_attn_backward(dq, dk, dv, dout, q, k, v, key_len, causal, phi, B, NH, Tq, Tk, D,
                               Dv, work);
    t_ = prof_end(PI_linear_attn_backward, t_, 0);
}
static size_t p_linear_attn_workspace(int B, int NH, int Tq, int Tk, int D, int Dv) {
    double t_ = prof_begin();
    size_t r_ = g_in->linear_attn_workspace(B, NH, Tq, Tk, D, Dv);
    t_ = prof_end(PI_linear_attn_workspace, t_, 0);
    return r_;
}
static void p_linear_attn_step(float *out, float *state, float *zsum, const float *q,
                               const float *k, const float *v, int phi, int B, int NH, int D,
                               int Dv) {
    double t_ = prof_begin();
    g_in->linear_attn_step(out, state, zsum, q, k, v, phi, B, NH, D, Dv);
    t_ = prof_end(PI_linear_attn_step, t_, 0);
}
static void p_linear_attn_summary(float *state, float *zsum, const float *k, const float *v,
                                  const int *key_len, int phi, int B, int NH, int Tk, int D,
                                  int Dv) {
    double t_ = prof_begin();
    g_in->linear_attn_summary(state, zsum, k, v, key_len, phi, B, NH, Tk, D, Dv);
    t_ = prof_end(PI_linear_attn_summary, t_, 0);
}
static void p_linear_attn_read(float *out, const float *q, const float *state, const float *zsum,
                               int phi, int B, int NH, int Tq, int D, int Dv) {
    double t_ = prof_begin();
    g_in->linear_attn_read(out, q, state, zsum, phi, B, NH, Tq, D, Dv);
    t_ = prof_end(PI_linear_attn_read, t_, 0);
}
static void p_linear_attn_read_backward(float *dq, float *dstate, float *dzsum, const float *dout,
                                        const float *q, const float *state, const float *zsum,
                                        int phi, int B, int NH, int Tq, int D, int Dv) {
    double t_ = prof_begin();
    g_in->linear_attn_read_backward(dq, dstate, dzsum, dout, q, state, zsum, phi, B, NH, Tq, D,
                                    Dv);
    t_ = prof_end(PI_linear_attn_read_backward, t_, 0);
}
static void p_linear_attn_summary_backward(float *dk, float *dv, const float *dstate,
                                           const float *dzsum, const float *k, const float *v,
                                           const int *key_len, int phi, int B, int NH, int Tk,
                                           int D, int Dv) {
    double t_ = prof_begin();
    g_in->linear_attn_summary_backward(dk, dv, dstate, dzsum, k, v, key_len, phi, B, NH, Tk, D,
                                       Dv);
    t_ = prof_end(PI_linear_attn_summary_backward, t_, 0);
}
static void p_l2feature_forward(float *out, const float *inp, int N, int D) {
    double t_ = prof_begin();
    g_in->l2feature_forward(out, inp, N, D);
    t_ = prof_end(PI_l2feature_forward, t_, 0);
}
static void p_l2feature_backward(float *dinp, const float *dout, const float *inp, int N, int D) {
    double t_ = prof_begin();
    g_in->l2feature_backward(dinp, dout, inp, N, D);
    t_ = prof_end(PI_l2feature_backward, t_, 0);
}
static void p_linformer_proj_forward(float *out, const float *P, const float *x,
                                     const int *key_len, int B, int NH, int R, int Tk, int D,
                                     int n, int shared) {
    double t_ = prof_begin();
    g_in->linformer_proj_forward(out, P, x, key_len, B, NH, R, Tk, D, n, shared);
    prof_end(PI_linformer_proj_forward, t_, 2.0 * B * NH * R * Tk * D);
}
static void p_linformer_proj_backward(float *dx, float *dP, const float *dout, const float *P,
                                      const float *x, const int *key_len, int B, int NH, int R,
                                      int Tk, int D, int n, int shared) {
    double t_ = prof_begin();
    g_in->linformer_proj_backward(dx, dP, dout, P, x, key_len, B, NH, R, Tk, D, n, shared);
    prof_end(PI_linformer_proj_backward, t_, 4.0 * B * NH * R * Tk * D);
}
/* luong_local's window: at most 2·window + 1 keys per query (an upper bound: clipped to Tk, not
 * to each row's key_len; the additive score's tanh not counted) */
static double local_keys(int window, int Tk) {
    return 2.0 * window + 1 < Tk ? 2.0 * window + 1 : (double)Tk;
}
static void p_local_attn_forward(float *out, float *weights, const float *q, const float *k,
                                 const float *va, const float *v, const float *z,
                                 const int *key_len, float scale, int window, int pos0, int B,
                                 int NH, int Tq, int Tk, int D, int Dv) {
    double t_ = prof_begin();
    g_in->local_attn_forward(out, weights, q, k, va, v, z, key_len, scale, window, pos0, B, NH, Tq,
                             Tk, D, Dv);
    prof_end(PI_local_attn_forward, t_, 2.0 * B * NH * Tq * local_keys(window, Tk) * (D + Dv));
}
static void p_local_attn_backward(float *dq, float *dk, float *dva, float *dv, float *dz,
                                  const float *dout, const float *q, const float *k,
                                  const float *va, const float *v, const float *z,
                                  const float *weights, const int *key_len, float scale,
                                  int window, int pos0, int B, int NH, int Tq, int Tk, int D,
                                  int Dv, float *work) {
    double t_ = prof_begin();
    g_in->local_attn_backward(dq, dk, dva, dv, dz, dout, q, k, va, v, z, weights, key_len, scale,
                              window, pos0, B, NH, Tq, Tk, D, Dv, work);
    prof_end(PI_local_attn_backward, t_, 4.0 * B * NH * Tq * local_keys(window, Tk) * (D + Dv));
}
static size_t p_local_attn_workspace(int B, int NH, int Tq, int Tk, int D, int Dv,
                                     int window) {
    double t_ = prof_begin();
    size_t r_ = g_in->local_attn_workspace(B, NH, Tq, Tk, D, Dv, window);
    t_ = prof_end(PI_local_attn_workspace, t_, 0);
    return r_;
}
static void p_efficient_attn_forward(float *out, const float *q, const float *k, const float *v,
                                     const int *key_len, int B, int NH, int Tq, int Tk, int D,
                                     int Dv, float *work) {
    double t_ = prof_begin();
    g_in->efficient_attn_forward(out, q, k, v, key_len, B, NH, Tq, Tk, D, Dv, work);
    t_ = prof_end(PI_efficient_attn_forward, t_, 0);
}
static void p_efficient_attn_backward(float *dq, float *dk, float *dv, const float *dout,
                                      const float *q, const float *k, const float *v,
                                      const int *key_len, int B, int NH, int Tq, int Tk, int D,
                                      int Dv, float *work) {
    double t_ = prof_begin();
    g_in->efficient_attn_backward(dq, dk, dv, dout, q, k, v, key_len, B, NH, Tq, Tk, D, Dv, work);
    t_ = prof_end(PI_efficient_attn_backward, t_, 0);
}
static void p_efficient_attn_summary(float *ctx, const float *k, const float *v,
                                     const int *key_len, int B, int NH, int Tk, int D, int Dv) {
    double t_ = prof_begin();
    g_in->efficient_attn_summary(ctx, k, v, key_len, B, NH, Tk, D, Dv);
    t_ = prof_end(PI_efficient_attn_summary, t_, 0);
}
static void p_efficient_attn_read(float *out, const float *q, const float *ctx, int B, int NH,
                                  int Tq, int D, int Dv) {
    double t_ = prof_begin();
    g_in->efficient_attn_read(out, q, ctx, B, NH, Tq, D, Dv);
    t_ = prof_end(PI_efficient_attn_read, t_, 0);
}
static void p_efficient_attn_read_backward(float *dq, float *dctx, const float *dout,
                                           const float *q, const float *ctx, int B, int NH,
                                           int Tq, int D, int Dv) {
    double t_ = prof_begin();
    g_in->efficient_attn_read_backward(dq, dctx, dout, q, ctx, B, NH, Tq, D, Dv);
    t_ = prof_end(PI_efficient_attn_read_backward, t_, 0);
}
static void p_efficient_attn_summary_backward(float *dk, float *dv, const float *dctx,
                                              const float *ctx, const float *k, const float *v,
                                              const int *key_len, int B, int NH, int Tk, int D,
                                              int Dv) {
    double t_ = prof_begin();
    g_in->efficient_attn_summary_backward(dk, dv, dctx, ctx, k, v, key_len, B, NH, Tk, D, Dv);
    t_ = prof_end(PI_efficient_attn_summary_backward, t_, 0);
}
static size_t p_efficient_attn_workspace(int B, int NH, int Tq, int Tk, int D, int Dv) {
    double t_ = prof_begin();
    size_t r_ = g_in->efficient_attn_workspace(B, NH, Tq, Tk, D, Dv);
    t_ = prof_end(PI_efficient_attn_workspace, t_, 0);
    return r_;
}
static void p_gather_rows(float *dst, const float *src, const int *idx, int n, int D) {
    double t_ = prof_begin();
    g_in->gather_rows(dst, src, idx, n, D);
    t_ = prof_end(PI_gather_rows, t_, 0);
}
static void p_attn_forward(float *out, float *weights, const float *q, const float *k,
                           const float *v, const int *key_len, float scale, int causal, int B,
                           int NH, int Tq, int Tk, int D, int Dv) {
    double t_ = prof_begin();
    g_in->attn_forward(out, weights, q, k, v, key_len, scale, causal, B, NH, Tq, Tk, D, Dv);
    t_ = prof_end(PI_attn_forward, t_, 2.0 * B * NH * Tq * Tk * (D + Dv));
}
static void p_attn_backward(float *dq, float *dk, float *dv, const float *dout, const float *q,
                            const float *k, const float *v, const float *weights, float scale,
                            int B, int NH, int Tq, int Tk, int D, int Dv, float *work) {
    double t_ = prof_begin();
    g_in->attn_backward(dq, dk, dv, dout, q, k, v, weights, scale, B, NH, Tq, Tk, D, Dv, work);
    t_ = prof_end(PI_attn_backward, t_, 4.0 * B * NH * Tq * Tk * (D + Dv));
}
static void p_pointwise_attn_forward(float *out, float *weights, const float *q, const float *k,
                                     const float *v, const int *key_len, float scale, int causal,
                                     int fn, int B, int NH, int Tq, int Tk, int D, int Dv) {
    double t_ = prof_begin();
    g_in->pointwise_attn_forward(out, weights, q, k, v, key_len, scale, causal, fn, B, NH, Tq, Tk,
                                 D, Dv);
    t_ = prof_end(PI_pointwise_attn_forward, t_, 2.0 * B * NH * Tq * Tk * (D + Dv));
}
static void p_pointwise_attn_backward(float *dq, float *dk, float *dv, const float *dout,
                                      const float *q, const float *k, const float *v,
                                      const float *weights, float scale, int fn, int B, int NH,
                                      int Tq, int Tk, int D, int Dv, float *work) {
    double t_ = prof_begin();
    g_in->pointwise_attn_backward(dq, dk, dv, dout, q, k, v, weights, scale, fn, B, NH, Tq, Tk, D,
                                  Dv, work);
    t_ = prof_end(PI_pointwise_attn_backward, t_, 4.0 * B * NH * Tq * Tk * (D + Dv));
}
static size_t p_pointwise_attn_workspace(int B, int NH, int Tq, int Tk, int D, int Dv) {
    double t_ = prof_begin();
    size_t r_ = g_in->pointwise_attn_workspace(B, NH, Tq, Tk, D, Dv);
    t_ = prof_end(PI_pointwise_attn_workspace, t_, 0);
    return r_;
}
static void p_head_rmsnorm_forward(float *out, float *rstd, const float *inp, const float *gain,
                                   int B, int NH, int T, int C) {
    double t_ = prof_begin();
    g_in->head_rmsnorm_forward(out, rstd, inp, gain, B, NH, T, C);
    t_ = prof_end(PI_head_rmsnorm_forward, t_, 0);
}
static void p_head_rmsnorm_backward(float *dinp, float *dgain, const float *dout, const float *inp,
                                    const float *gain, const float *rstd, int B, int NH, int T,
                                    int C) {
    double t_ = prof_begin();
    g_in->head_rmsnorm_backward(dinp, dgain, dout, inp, gain, rstd, B, NH, T, C);
    t_ = prof_end(PI_head_rmsnorm_backward, t_, 0);
}
static size_t p_attn_workspace(int B, int NH, int Tq, int Tk, int D, int Dv) {
    double t_ = prof_begin();
    size_t r_ = g_in->attn_workspace(B, NH, Tq, Tk, D, Dv);
    t_ = prof_end(PI_attn_workspace, t_, 0);
    return r_;
}
static void p_attn_forward_merged(float *out, float *weights, const float *q, const float *k,
                                  const float *v, const int *key_len, float scale, int causal,
                                  int B, int NH, int Tq, int Tk, int D, int Dv) {
    double t_ = prof_begin();
    g_in->attn_forward_merged(out, weights, q, k, v, key_len, scale, causal, B, NH, Tq, Tk, D,
                              Dv);
    t_ = prof_end(PI_attn_forward_merged, t_, 2.0 * B * NH * Tq * Tk * (D + Dv));
}
static void p_attn_backward_merged(float *dq, float *dk, float *dv, const float *dout,
                                   const float *q, const float *k, const float *v,
                                   const float *weights, float scale, int B, int NH, int Tq,
                                   int Tk, int D, int Dv, float *work) {
    double t_ = prof_begin();
    g_in->attn_backward_merged(dq, dk, dv, dout, q, k, v, weights, scale, B, NH, Tq, Tk, D, Dv,
                               work);
    t_ = prof_end(PI_attn_backward_merged, t_, 4.0 * B * NH * Tq * Tk * (D + Dv));
}
static double p_xent_forward_backward(float *dlogits, const float *logits, const int *targets,
                                      int N, int V, float smoothing, int ignore_id,
                                      float grad_scale, float *work) {
    double t_ = prof_begin();
    double r_ = g_in->xent_forward_backward(dlogits, logits, targets, N, V, smoothing, ignore_id,
                                            grad_scale, work);
    t_ = prof_end(PI_xent_forward_backward, t_, 0);
    return r_;
}
static size_t p_xent_workspace(int N, int V) {
    double t_ = prof_begin();
    size_t r_ = g_in->xent_workspace(N, V);
    t_ = prof_end(PI_xent_workspace, t_, 0);
    return r_;
}
static void p_log_softmax(float *out, const float *logits, int N, int V) {
    double t_ = prof_begin();
    g_in->log_softmax(out, logits, N, V);
    t_ = prof_end(PI_log_softmax, t_, 0);
}
static void p_argmax(int *ids, const float *x, int N, int V) {
    double t_ = prof_begin();
    g_in->argmax(ids, x, N, V);
    t_ = prof_end(PI_argmax, t_, 0);
}
static void p_adam_update(float *param, const float *grad, float *m, float *v, size_t n, float lr,
                          float b1, float b2, float eps, int t) {
    double t_ = prof_begin();
    g_in->adam_update(param, grad, m, v, n, lr, b1, b2, eps, t);
    t_ = prof_end(PI_adam_update, t_, 0);
}
static void p_rnn_seq_sizes(RnnSeqSizes *out, const RnnSeqShape *s) {
    double t_ = prof_begin();
    g_in->rnn_seq_sizes(out, s);
    t_ = prof_end(PI_rnn_seq_sizes, t_, 0);
}
static void p_rnn_seq_forward(float *y, float *hy, float *cy, const float *x, const float *hx,
                              const float *cx, const RnnSeqParams *params, const int *len,
                              const int *len_host, const RnnSeqShape *s, int train, float *wspace,
                              float *work, size_t work_n, float *reserve, size_t reserve_n) {
    double t_ = prof_begin();
    g_in->rnn_seq_forward(y, hy, cy, x, hx, cx, params, len, len_host, s, train, wspace, work,
                          work_n, reserve, reserve_n);
    t_ = prof_end(PI_rnn_seq_forward, t_, 0);
}
static void p_rnn_seq_backward(float *dx, float *dhx, float *dcx, const RnnSeqParams *grads,
                               const float *dy, const float *dhy, const float *dcy, const float *x,
                               const float *y, const float *hx, const float *cx, const int *len,
                               const int *len_host, const RnnSeqShape *s, const float *wspace,
                               float *dwspace, float *work, size_t work_n, float *reserve,
                               size_t reserve_n) {
    double t_ = prof_begin();
    g_in->rnn_seq_backward(dx, dhx, dcx, grads, dy, dhy, dcy, x, y, hx, cx, len, len_host, s,
                           wspace, dwspace, work, work_n, reserve, reserve_n);
    t_ = prof_end(PI_rnn_seq_backward, t_, 0);
}

static Backend g_wrapped; /* op_profile_wrap's table: inner's, with the shims set */

const Backend *op_profile_wrap(const Backend *inner) {
    CHECK(!g_in, "op_profile_wrap: call it once");
    g_in = inner;
    g_wrapped = *inner;
#define PROF_SET(name) g_wrapped.name = inner->name ? p_##name : NULL;
    PROF_OPS(PROF_SET)
    return &g_wrapped;
}

/* 1 if op is inner's own function in the wrapped table (no shim: untimed). */
static int op_untimed(OpKind op) {
    void (*a)(void), (*b)(void);
    memcpy(&a, (const char *)&g_wrapped + op_offset(op), sizeof a);
    memcpy(&b, (const char *)g_in + op_offset(op), sizeof b);
    return a && a == b;
}

void op_profile_reset(void) {
    memset(g_ops, 0, sizeof g_ops);
    memset(g_gemms, 0, sizeof g_gemms);
    g_ngemms = 0, g_gemm_overflow = 0;
}

static int gemm_by_seconds(const void *a, const void *b) {
    double x = ((const GemmStat *)a)->seconds, y = ((const GemmStat *)b)->seconds;
    return (x < y) - (x > y);
}

/* GFLOP/s of inner->matmul alone at one shape: operands of the shape (filled with small values)
 * multiplied repeatedly for at least 0.2 s after one untimed call. */
static double sgemm_rate(const GemmStat *g) {
    size_t na = (size_t)g->M * g->K, nb = (size_t)g->K * g->N, nc = (size_t)g->M * g->N;
    float *h = xmalloc(sizeof(float) * (na > nb ? na : nb));
    for (size_t i = 0; i < (na > nb ? na : nb); i++)
        h[i] = (float)((i * 7919u) % 17) / 17.0f;
    float *A = g_in->alloc(sizeof(float) * na), *B = g_in->alloc(sizeof(float) * nb),
          *C = g_in->alloc(sizeof(float) * nc);
    g_in->upload(A, h, sizeof(float) * na);
    g_in->upload(B, h, sizeof(float) * nb);
    g_in->matmul(C, A, B, g->M, g->N, g->K, g->ta, g->tb, 1.0f, 0.0f);
    g_in->synchronize();
    long reps = 0;
    double t0 = prof_now(), dt;
    do {
        g_in->matmul(C, A, B, g->M, g->N, g->K, g->ta, g->tb, 1.0f, 0.0f);
        g_in->synchronize();
        reps++;
    } while ((dt = prof_now() - t0) < 0.2);
    g_in->free(A), g_in->free(B), g_in->free(C);
    free(h);
    return 2.0 * g->M * g->N * g->K * reps / dt * 1e-9;
}

#if defined(__x86_64__)
#include <immintrin.h>
/* fl FLOPs of dependent-free FMAs (12 accumulators of 8 floats, AVX2 + FMA) on this thread. */
__attribute__((target("avx2,fma"))) static float fma_loop(long iters) {
    __m256 m = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-7f);
    __m256 a0 = _mm256_set1_ps(0), a1 = _mm256_set1_ps(1), a2 = _mm256_set1_ps(2),
           a3 = _mm256_set1_ps(3), a4 = _mm256_set1_ps(4), a5 = _mm256_set1_ps(5),
           a6 = _mm256_set1_ps(6), a7 = _mm256_set1_ps(7), a8 = _mm256_set1_ps(8),
           a9 = _mm256_set1_ps(9), a10 = _mm256_set1_ps(10), a11 = _mm256_set1_ps(11);
    for (long it = 0; it < iters; it++) { /* 12 independent chains in registers */
        a0 = _mm256_fmadd_ps(a0, m, c), a1 = _mm256_fmadd_ps(a1, m, c);
        a2 = _mm256_fmadd_ps(a2, m, c), a3 = _mm256_fmadd_ps(a3, m, c);
        a4 = _mm256_fmadd_ps(a4, m, c), a5 = _mm256_fmadd_ps(a5, m, c);
        a6 = _mm256_fmadd_ps(a6, m, c), a7 = _mm256_fmadd_ps(a7, m, c);
        a8 = _mm256_fmadd_ps(a8, m, c), a9 = _mm256_fmadd_ps(a9, m, c);
        a10 = _mm256_fmadd_ps(a10, m, c), a11 = _mm256_fmadd_ps(a11, m, c);
    }
    __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)),
                             _mm256_add_ps(_mm256_add_ps(a4, a5), _mm256_add_ps(a6, a7)));
    s = _mm256_add_ps(s, _mm256_add_ps(_mm256_add_ps(a8, a9), _mm256_add_ps(a10, a11)));
    float out[8];
    _mm256_storeu_ps(out, s);
    return out[0];
}

/* The sum of the 12 accumulators' lanes (keeps the chains' results alive). */
__attribute__((target("avx512f"))) static float sum12(const __m512 *a) {
    __m512 s = a[0];
    for (int i = 1; i < 12; i++) s = _mm512_add_ps(s, a[i]);
    return _mm512_reduce_add_ps(s);
}

/* The same with 16-float AVX-512 vectors (12 · 16 · 2 FLOPs per iteration). */
__attribute__((target("avx512f"))) static float fma_loop512(long iters) {
    __m512 m = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-7f), a[12];
    for (int i = 0; i < 12; i++) a[i] = _mm512_set1_ps((float)i);
    for (long it = 0; it < iters; it++) {
#pragma GCC unroll 12
        for (int i = 0; i < 12; i++) a[i] = _mm512_fmadd_ps(a[i], m, c);
    }
    return sum12(a);
}

/* bf16 dot products (AVX512_BF16 vdpbf16ps: 32 products and sums into 16 floats, 64 FLOPs per
 * instruction; 12 chains, 12 · 64 FLOPs per iteration). */
__attribute__((target("avx512f,avx512vl,avx512bf16"))) static float dpbf16_loop(long iters) {
    __m512bh x = (__m512bh)_mm512_set1_epi16(0x3F80), y = (__m512bh)_mm512_set1_epi16(0x3380);
    __m512 a[12];
    for (int i = 0; i < 12; i++) a[i] = _mm512_set1_ps((float)i);
    for (long it = 0; it < iters; it++) {
#pragma GCC unroll 12
        for (int i = 0; i < 12; i++) a[i] = _mm512_dpbf16_ps(a[i], x, y);
    }
    return sum12(a);
}
#endif

/* GFLOP/s of threads threads each running loop(iters) with flops_per_iter FLOPs an iteration. */
static double peak_of(float (*loop)(long), long iters, double flops_per_iter, int threads) {
    volatile float sink = 0;
    loop(iters / 20); /* wake the cores up to their clock */
    double t0 = prof_now();
#pragma omp parallel for num_threads(threads) reduction(+ : sink)
    for (int t = 0; t < threads; t++) sink += loop(iters);
    double dt = prof_now() - t0;
    (void)sink;
    return flops_per_iter * iters * threads / dt * 1e-9;
}

double op_profile_fma_peak(int threads, int *vector_bits) {
    *vector_bits = 0;
#if defined(__x86_64__)
    if (__builtin_cpu_supports("avx512f")) {
        *vector_bits = 512;
        return peak_of(fma_loop512, 20000000, 12.0 * 16 * 2, threads);
    }
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) return 0;
    *vector_bits = 256;
    return peak_of(fma_loop, 20000000, 12.0 * 8 * 2, threads);
#else
    (void)threads;
    return 0;
#endif
}

double op_profile_bf16_peak(int threads) {
#if defined(__x86_64__)
    if (!__builtin_cpu_supports("avx512bf16")) return 0;
    return peak_of(dpbf16_loop, 20000000, 12.0 * 64, threads);
#else
    (void)threads;
    return 0;
#endif
}

double op_profile_sgemm_square(int n) {
    GemmStat g = {n, n, n, 0, 0, 0, 0};
    return sgemm_rate(&g);
}

void op_profile_print(FILE *f, int steps, double step_seconds, int gemm_rows) {
    OpStat s[PI_COUNT];
    int idx[PI_COUNT];
    double op_sec = 0, flops = 0;
    for (int i = 0; i < PI_COUNT; i++) {
        s[i] = g_ops[i];
        op_sec += s[i].seconds, flops += s[i].flops;
    }
    for (int i = 0; i < PI_COUNT; i++)
        idx[i] = i;
    for (int i = 1; i < PI_COUNT; i++) /* the ops by time, descending (insertion sort) */
        for (int j = i; j > 0 && s[idx[j]].seconds > s[idx[j - 1]].seconds; j--) {
            int t = idx[j];
            idx[j] = idx[j - 1], idx[j - 1] = t;
        }
    fprintf(f, "| op | calls/step | ms/step | %% of step | GFLOP/step | GFLOP/s |\n");
    fprintf(f, "|---|---:|---:|---:|---:|---:|\n");
    for (int k = 0; k < PI_COUNT; k++) {
        const OpStat *o = &s[idx[k]];
        if (!o->calls)
            continue;
        fprintf(f, "| %s | %.1f | %.2f | %.1f | ", g_names[idx[k]], (double)o->calls / steps,
                1e3 * o->seconds / steps, 100.0 * o->seconds / (step_seconds * steps));
        if (o->flops > 0)
            fprintf(f, "%.3f | %.1f |\n", o->flops / steps * 1e-9, o->flops / o->seconds * 1e-9);
        else
            fprintf(f, "— | — |\n");
    }
    fprintf(f, "| (between ops: host work, batch upload, loop) | | %.2f | %.1f | | |\n",
            1e3 * (step_seconds * steps - op_sec) / steps,
            100.0 * (1.0 - op_sec / (step_seconds * steps)));
    fprintf(f, "| **step** | | %.2f | 100 | %.3f | %.1f |\n\n", 1e3 * step_seconds,
            flops / steps * 1e-9, flops / steps / step_seconds * 1e-9);
    int untimed = 0;
    for (int op = 0; g_in && op < OP_COUNT; op++)
        if (op_untimed((OpKind)op))
            fprintf(f, "%s%s", untimed++ ? ", " : "untimed ops (no shim in bench/op_profile.c; "
                                                  "their time is between the ops): ",
                    op_name((OpKind)op));
    if (untimed) fprintf(f, "\n\n");

    if (gemm_rows <= 0)
        return;
    GemmStat g[PROF_MAX_GEMMS];
    memcpy(g, g_gemms, sizeof g);
    qsort(g, g_ngemms, sizeof g[0], gemm_by_seconds);
    double gsec = 0, gflop = 0, gsgemm_sec = 0;
    for (int i = 0; i < g_ngemms; i++)
        gsec += g[i].seconds;
    fprintf(f, "| GEMM M×N×K (transA, transB) | calls/step | ms/step | GFLOP/s in the step | "
               "sgemm alone GFLOP/s | step / alone |\n|---|---:|---:|---:|---:|---:|\n");
    for (int i = 0; i < g_ngemms; i++) {
        double fl = 2.0 * g[i].M * g[i].N * g[i].K * g[i].calls, in_step = fl / g[i].seconds;
        gflop += fl;
        if (i >= gemm_rows)
            continue;
        double alone = sgemm_rate(&g[i]) * 1e9;
        gsgemm_sec += fl / alone;
        fprintf(f, "| %d×%d×%d (%c, %c) | %.1f | %.2f | %.1f | %.1f | %.2f |\n", g[i].M, g[i].N,
                g[i].K, g[i].ta ? 'T' : 'N', g[i].tb ? 'T' : 'N', (double)g[i].calls / steps,
                1e3 * g[i].seconds / steps, in_step * 1e-9, alone * 1e-9, in_step / alone);
    }
    fprintf(f, "\n%d GEMM shapes%s; all of them: %.2f ms/step, %.1f GFLOP/s in the step", g_ngemms,
            g_gemm_overflow ? " (more were not recorded)" : "", 1e3 * gsec / steps,
            gflop / gsec * 1e-9);
    if (gemm_rows >= g_ngemms)
        fprintf(f, "; sgemm alone at the same shapes would take %.2f ms/step (%.1f GFLOP/s)",
                1e3 * gsgemm_sec / steps, gflop / gsgemm_sec * 1e-9);
    fprintf(f, "\n");
}
