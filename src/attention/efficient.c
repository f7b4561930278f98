/* efficient.c — efficient attention (Shen et al. 2021, eq. 2): out = ρ_q(q) (ρ_k(k)ᵀ v), with
 * ρ_q the softmax over each row of q and ρ_k the softmax over each column of k across the
 * visible keys; linear in Tq and Tk (ops: efficient_attn_forward, efficient_attn_backward).
 * ρ_k normalises over the whole sequence, so there is no causal form: the table refuses the
 * decoder's self-attention. In the RNN decoder, whose keys are the same encoder states at every
 * step, the context ρ_k(k)ᵀ v is built once per batch (the summary hooks of attention.h; ops
 * efficient_attn_summary, _read, _read_backward, _summary_backward): a step reads it in O(HS²)
 * instead of rebuilding it from the Tk keys. */
#include <math.h>

#include "attention/kinds.h"

static void efficient_forward(const Attention *a, const Backend *be, float *o, float *save,
                              const float *q, const float *k, const float *v, const int *key_len,
                              int causal, int B, int Tq, int Tk, float *work) {
    (void)save;
    CHECK(!causal, "efficient attention has no causal form (attention_supports refuses it)");
    be->efficient_attn_forward(o, q, k, v, key_len, B, a->NH, Tq, Tk, a->HS, a->HS, work);
}

static void efficient_backward(const Attention *a, const Backend *be, float *dq, float *dk,
                               float *dv, const float *dout, const float *o, const float *save,
                               const float *q, const float *k, const float *v,
                               const int *key_len, int causal, int B, int Tq, int Tk,
                               float *work) {
    (void)o, (void)save, (void)causal;
    be->efficient_attn_backward(dq, dk, dv, dout, q, k, v, key_len, B, a->NH, Tq, Tk, a->HS,
                                a->HS, work);
}

static size_t efficient_workspace(const Attention *a, const Backend *be, int B, int Tq, int Tk) {
    return be->efficient_attn_workspace(B, a->NH, Tq, Tk, a->HS, a->HS);
}

/* The keys' summary (attention.h): the context ρ_k(k)ᵀ v [B,NH,HS,HS]. */
static size_t efficient_summary_floats(const Attention *a, int B, int Tk) {
    (void)Tk;
    return (size_t)B * a->NH * a->HS * a->HS;
}

static void efficient_summary_forward(const Attention *a, const Backend *be, float *sum,
                                      const float *k, const float *v, const int *key_len, int B,
                                      int Tk) {
    be->efficient_attn_summary(sum, k, v, key_len, B, a->NH, Tk, a->HS, a->HS);
}

static void efficient_forward_summary(const Attention *a, const Backend *be, float *o,
                                      const float *q, const float *sum, int B, int Tq,
                                      float *work) {
    (void)work;
    be->efficient_attn_read(o, q, sum, B, a->NH, Tq, a->HS, a->HS);
}

static void efficient_backward_summary(const Attention *a, const Backend *be, float *dq,
                                       float *dsum, const float *dout, const float *q,
                                       const float *sum, int B, int Tq, float *work) {
    (void)work;
    be->efficient_attn_read_backward(dq, dsum, dout, q, sum, B, a->NH, Tq, a->HS, a->HS);
}

static void efficient_summary_backward(const Attention *a, const Backend *be, float *dk,
                                       float *dv, float *dsum, const float *sum, const float *k,
                                       const float *v, const int *key_len, int B, int Tk) {
    be->efficient_attn_summary_backward(dk, dv, dsum, sum, k, v, key_len, B, a->NH, Tk, a->HS,
                                        a->HS);
}

static const OpKind efficient_ops[] = {OP_EFFICIENT_ATTN_FORWARD, OP_EFFICIENT_ATTN_BACKWARD,
                                       OP_EFFICIENT_ATTN_WORKSPACE, OP_EFFICIENT_ATTN_SUMMARY,
                                       OP_EFFICIENT_ATTN_READ, OP_EFFICIENT_ATTN_READ_BACKWARD,
                                       OP_EFFICIENT_ATTN_SUMMARY_BACKWARD};

/* w_s = ρ_q(q) · ρ_k(k)_s (sums to 1 over the visible keys) */
static void efficient_weights_host(float *w, const float *q, const float *k, const float *v_a,
                                   int len, int HS) {
    (void)v_a;
    float P[HS > 0 ? HS : 1], mx[HS > 0 ? HS : 1], den[HS > 0 ? HS : 1], e[len > 0 ? len : 1];
    float m = -INFINITY, zq = 0;
    double z = 0;
    for (int d = 0; d < HS; d++) m = q[d] > m ? q[d] : m;
    for (int d = 0; d < HS; d++) zq += (P[d] = expf(q[d] - m));
    for (int d = 0; d < HS; d++) P[d] /= zq, mx[d] = -INFINITY, den[d] = 0;
    for (int s = 0; s < len; s++)
        for (int d = 0; d < HS; d++)
            mx[d] = k[(size_t)s * HS + d] > mx[d] ? k[(size_t)s * HS + d] : mx[d];
    for (int s = 0; s < len; s++)
        for (int d = 0; d < HS; d++) den[d] += expf(k[(size_t)s * HS + d] - mx[d]);
    for (int s = 0; s < len; s++) {
        double acc = 0;
        for (int d = 0; d < HS; d++) acc += P[d] * (expf(k[(size_t)s * HS + d] - mx[d]) / den[d]);
        e[s] = (float)acc, z += acc;
    }
    for (int s = 0; s < len; s++) w[s] = (float)(e[s] / z);
}

const AttentionOps attention_efficient = {
    .kind = ATTN_EFFICIENT, .causal_ok = 0,
    .no_causal = "efficient attention (Shen et al. 2021) normalises each key column over the "
                 "whole sequence", .multi_head = 1, .save = ATTN_SAVE_NONE,
    .ops = efficient_ops, .nops = 7,
    .forward = efficient_forward, .backward = efficient_backward,
    .workspace = efficient_workspace, .weights_host = efficient_weights_host,
    .summary_floats = efficient_summary_floats, .summary_forward = efficient_summary_forward,
    .forward_summary = efficient_forward_summary, .backward_summary = efficient_backward_summary,
    .summary_backward = efficient_summary_backward};
