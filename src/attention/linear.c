/* linear.c — linear attention (Katharopoulos et al. 2020, eq. 6–9), φ(x) = elu(x) + 1:
 * out_t = φ(q_t)ᵀ Σ_s φ(k_s) v_sᵀ / φ(q_t)ᵀ Σ_s φ(k_s); causal by prefix sums; nothing of size
 * Tq × Tk is stored (ops: linear_attn_forward, linear_attn_backward). Its decoding state is the
 * running sums of the recurrent form (§3.4): S [R, NH, HS, HS] and z [R, NH, HS], constant in t
 * (op: linear_attn_step). In the RNN decoder, whose keys are the same encoder states at every
 * step, S and z are built once per batch (the summary hooks of attention.h; ops
 * linear_attn_summary, _read, _read_backward, _summary_backward): a step reads them in
 * O(HS²) instead of rebuilding them from the Tk keys. */
#include <math.h>

#include "attention/kinds.h"

static void linear_forward(const Attention *a, const Backend *be, float *o, float *save,
                           const float *q, const float *k, const float *v, const int *key_len,
                           int causal, int B, int Tq, int Tk, float *work) {
    (void)save;
    be->linear_attn_forward(o, q, k, v, key_len, causal, LINEAR_PHI_ELU1, B, a->NH, Tq, Tk, a->HS,
                            a->HS, work);
}

static void linear_backward(const Attention *a, const Backend *be, float *dq, float *dk,
                            float *dv, const float *dout, const float *o, const float *save,
                            const float *q, const float *k, const float *v, const int *key_len,
                            int causal, int B, int Tq, int Tk, float *work) {
    (void)o, (void)save; /* the backward recomputes the running sums */
    be->linear_attn_backward(dq, dk, dv, dout, q, k, v, key_len, causal, LINEAR_PHI_ELU1, B, a->NH,
                             Tq, Tk, a->HS, a->HS, work);
}

static size_t linear_workspace(const Attention *a, const Backend *be, int B, int Tq, int Tk) {
    return be->linear_attn_workspace(B, a->NH, Tq, Tk, a->HS, a->HS);
}

/* The keys' summary (attention.h): sum = [S [B,NH,HS,HS], z [B,NH,HS]]. */
static size_t linear_summary_floats(const Attention *a, int B, int Tk) {
    (void)Tk;
    return (size_t)B * a->NH * a->HS * (a->HS + 1);
}

static void linear_summary_forward(const Attention *a, const Backend *be, float *sum,
                                   const float *k, const float *v, const int *key_len, int B,
                                   int Tk) {
    be->linear_attn_summary(sum, sum + (size_t)B * a->NH * a->HS * a->HS, k, v, key_len,
                            LINEAR_PHI_ELU1, B, a->NH, Tk, a->HS, a->HS);
}

static void linear_forward_summary(const Attention *a, const Backend *be, float *o,
                                   const float *q, const float *sum, int B, int Tq,
                                   float *work) {
    (void)work;
    be->linear_attn_read(o, q, sum, sum + (size_t)B * a->NH * a->HS * a->HS, LINEAR_PHI_ELU1, B,
                         a->NH, Tq, a->HS, a->HS);
}

static void linear_backward_summary(const Attention *a, const Backend *be, float *dq,
                                    float *dsum, const float *dout, const float *q,
                                    const float *sum, int B, int Tq, float *work) {
    (void)work;
    size_t nS = (size_t)B * a->NH * a->HS * a->HS;
    be->linear_attn_read_backward(dq, dsum, dsum + nS, dout, q, sum, sum + nS, LINEAR_PHI_ELU1, B,
                                  a->NH, Tq, a->HS, a->HS);
}

static void linear_summary_backward(const Attention *a, const Backend *be, float *dk, float *dv,
                                    float *dsum, const float *sum, const float *k,
                                    const float *v, const int *key_len, int B, int Tk) {
    (void)sum;
    size_t nS = (size_t)B * a->NH * a->HS * a->HS;
    be->linear_attn_summary_backward(dk, dv, dsum, dsum + nS, k, v, key_len, LINEAR_PHI_ELU1, B,
                                     a->NH, Tk, a->HS, a->HS);
}

static const OpKind linear_ops[] = {OP_LINEAR_ATTN_FORWARD, OP_LINEAR_ATTN_BACKWARD,
                                    OP_LINEAR_ATTN_WORKSPACE, OP_LINEAR_ATTN_STEP,
                                    OP_LINEAR_ATTN_SUMMARY, OP_LINEAR_ATTN_READ,
                                    OP_LINEAR_ATTN_READ_BACKWARD,
                                    OP_LINEAR_ATTN_SUMMARY_BACKWARD};

/* S [R, NH, HS, HS] then z [R, NH, HS] */
static size_t linear_state_floats(const Attention *a, int R, int Tcap) {
    (void)Tcap;
    return (size_t)R * a->NH * a->HS * (a->HS + 1);
}

static void linear_decode_step(const Attention *a, const Backend *be, float *o, float *save,
                               float *state, const float *q, const float *k, const float *v,
                               const int *step_len, int R, int t, int Tcap, float *work) {
    (void)save, (void)step_len, (void)t, (void)Tcap, (void)work;
    float *S = state, *z = state + (size_t)R * a->NH * a->HS * a->HS;
    be->linear_attn_step(o, S, z, q, k, v, LINEAR_PHI_ELU1, R, a->NH, a->HS, a->HS);
}

static void linear_decode_reorder(const Attention *a, const Backend *be, float *dst,
                                  const float *src, const int *parent, const int *parent_bh,
                                  int R, int t, int Tcap) {
    (void)parent_bh, (void)t, (void)Tcap;
    size_t nS = (size_t)R * a->NH * a->HS * a->HS;
    be->gather_rows(dst, src, parent, R, a->NH * a->HS * a->HS);
    be->gather_rows(dst + nS, src + nS, parent, R, a->NH * a->HS);
}

static float phi_host(float x) { return x > 0.0f ? x + 1.0f : expf(x); }

/* w_s = φ(q)·φ(k_s) / Σ_s' φ(q)·φ(k_s') */
static void linear_weights_host(float *w, const float *q, const float *k, const float *v_a,
                                int len, int HS) {
    (void)v_a;
    float P[HS > 0 ? HS : 1], e[len > 0 ? len : 1];
    double z = 0;
    for (int d = 0; d < HS; d++) P[d] = phi_host(q[d]);
    for (int s = 0; s < len; s++) {
        double acc = 0;
        for (int d = 0; d < HS; d++) acc += P[d] * phi_host(k[(size_t)s * HS + d]);
        e[s] = (float)acc, z += acc;
    }
    for (int s = 0; s < len; s++) w[s] = (float)(e[s] / z);
}

const AttentionOps attention_linear = {
    .kind = ATTN_LINEAR, .causal_ok = 1, .multi_head = 1, .save = ATTN_SAVE_NONE,
    .ops = linear_ops, .nops = 8, .forward = linear_forward,
    .backward = linear_backward, .workspace = linear_workspace,
    .state_floats = linear_state_floats, .decode_step = linear_decode_step,
    .decode_reorder = linear_decode_reorder, .weights_host = linear_weights_host,
    .summary_floats = linear_summary_floats, .summary_forward = linear_summary_forward,
    .forward_summary = linear_forward_summary, .backward_summary = linear_backward_summary,
    .summary_backward = linear_summary_backward};
