/* linear.c — linear attention (Katharopoulos et al. 2020, eq. 6–9), φ(x) = elu(x) + 1:
 * out_t = φ(q_t)ᵀ Σ_s φ(k_s) v_sᵀ / φ(q_t)ᵀ Σ_s φ(k_s); causal by prefix sums; nothing of size
 * Tq × Tk is stored (ops: linear_attn_forward, linear_attn_backward). Its decoding state is the
 * running sums of the recurrent form (§3.4): S [R, NH, HS, HS] and z [R, NH, HS], constant in t
 * (op: linear_attn_step). In the RNN decoder, whose keys are the same encoder states at every
 * step, S and z are built once per batch (the summary hooks of attention.h; ops
 * linear_attn_summary, _read, _read_backward, _summary_backward): a step reads them in
 * O(HS²) instead of rebuilding them from the Tk keys.
 *
 * The machinery here serves every row of ATTENTION_LINEAR_ROW (kinds.h), whose features
 * (AttentionOps.linear_features) say what the running sums are over, of width F:
 *  - LINEAR_FEATURES_ELU1 (linear): q and k themselves, F = HS, through the ops' φ = elu + 1;
 *  - LINEAR_FEATURES_L2 (taylor.c): [1; x̂], x̂ = x/‖x‖₂ per row and head (op l2feature_forward),
 *    F = HS + 1, through the identity map (LINEAR_PHI_IDENTITY). The backward recomputes the
 *    features, runs linear attention's backward into their gradients and carries those through
 *    the normalisation (l2feature_backward).
 * Workspace (floats): for L2 features, those of q [B,NH,Tq,F] and of k [B,NH,Tk,F], their
 * gradients (the same sizes, backward only), then linear attention's own; for ELU1 features
 * linear attention's own. A summary (attention.h) holds S [B,NH,F,HS] and z [B,NH,F], and for
 * L2 features then the keys' features fk [B,NH,Tk,F], which its backward reads (in dsum, the slot
 * where their gradient gathers); the decoding state is S [R,NH,F,HS] then z [R,NH,F]. */
#include <math.h>

#include "attention/kinds.h"

/* 1 when a's features are [1; x̂] (taylor), 0 when q and k themselves (linear). */
static int l2(const Attention *a) { return a->ops->linear_features == LINEAR_FEATURES_L2; }
/* The features' width F and the map the linear attention ops apply to them. */
static int width(const Attention *a) { return a->HS + l2(a); }
static int phi(const Attention *a) { return l2(a) ? LINEAR_PHI_IDENTITY : LINEAR_PHI_ELU1; }

/* The features of N rows x [N, HS]: x itself, or [1; x̂] written to f [N, HS + 1]. */
static const float *features(const Attention *a, const Backend *be, float *f, const float *x,
                             int N) {
    if (!l2(a)) return x;
    be->l2feature_forward(f, x, N, a->HS);
    return f;
}

/* The pieces of one call's workspace: features fq, fk and their gradients dfq, dfk (L2 features
 * only, else NULL); linear attention's own. */
typedef struct {
    float *fq, *fk, *dfq, *dfk, *lin;
} LinearWork;

static LinearWork carve(const Attention *a, float *work, int B, int Tq, int Tk) {
    if (!l2(a)) return (LinearWork){NULL, NULL, NULL, NULL, work};
    size_t nq = (size_t)B * a->NH * Tq * (a->HS + 1), nk = (size_t)B * a->NH * Tk * (a->HS + 1);
    LinearWork w = {work, work + nq, work + nq + nk, work + 2 * nq + nk, work + 2 * (nq + nk)};
    return w;
}

void attention_linear_forward(const Attention *a, const Backend *be, float *o, float *save,
                              const float *q, const float *k, const float *v, const int *key_len,
                              int causal, int B, int Tq, int Tk, float *work) {
    (void)save;
    int NH = a->NH, HS = a->HS;
    LinearWork w = carve(a, work, B, Tq, Tk);
    const float *fq = features(a, be, w.fq, q, B * NH * Tq); /* φ(q) = [1; q̂] (L2) */
    const float *fk = features(a, be, w.fk, k, B * NH * Tk); /* φ(k) = [1; k̂] (L2) */
    /* out_t = φ(q_t)ᵀ Σ_s φ(k_s) v_sᵀ / (φ(q_t)·Σ_s φ(k_s) + 1e-6) */
    be->linear_attn_forward(o, fq, fk, v, key_len, causal, phi(a), B, NH, Tq, Tk, width(a), HS,
                            w.lin);
}

void attention_linear_backward(const Attention *a, const Backend *be, float *dq, float *dk,
                               float *dv, const float *dout, const float *o, const float *save,
                               const float *q, const float *k, const float *v,
                               const int *key_len, int causal, int B, int Tq, int Tk,
                               float *work) {
    (void)o, (void)save; /* the features and running sums are recomputed */
    int NH = a->NH, HS = a->HS, Nq = B * NH * Tq, Nk = B * NH * Tk;
    LinearWork w = carve(a, work, B, Tq, Tk);
    const float *fq = features(a, be, w.fq, q, Nq), *fk = features(a, be, w.fk, k, Nk);
    float *dfq = dq, *dfk = dk;
    if (l2(a)) {
        be->zero(w.dfq, sizeof(float) * Nq * (HS + 1));
        be->zero(w.dfk, sizeof(float) * Nk * (HS + 1));
        dfq = dq ? w.dfq : NULL, dfk = dk ? w.dfk : NULL;
    }
    /* out = linear attention over the features: dφ(q), dφ(k) and dv */
    be->linear_attn_backward(dfq, dfk, dv, dout, fq, fk, v, key_len, causal, phi(a), B, NH, Tq, Tk,
                             width(a), HS, w.lin);
    /* φ(x) = [1; x r], r = (‖x‖² + 1e-12)^(−1/2): dx += r (dx̂ − x̂ (x̂·dx̂)) */
    if (l2(a) && dq) be->l2feature_backward(dq, w.dfq, q, Nq, HS);
    if (l2(a) && dk) be->l2feature_backward(dk, w.dfk, k, Nk, HS);
}

size_t attention_linear_workspace(const Attention *a, const Backend *be, int B, int Tq, int Tk) {
    size_t lin = be->linear_attn_workspace(B, a->NH, Tq, Tk, width(a), a->HS);
    if (!l2(a)) return lin;
    size_t nq = (size_t)B * a->NH * Tq * (a->HS + 1), nk = (size_t)B * a->NH * Tk * (a->HS + 1);
    return 2 * (nq + nk) + lin;
}

/* The keys' summary: S [B,NH,F,HS], z [B,NH,F], then (L2 features) fk [B,NH,Tk,F]. */
typedef struct {
    float *S, *z, *fk;
} LinearSum;

static LinearSum sum_parts(const Attention *a, float *sum, int B) {
    size_t nS = (size_t)B * a->NH * width(a) * a->HS, nz = (size_t)B * a->NH * width(a);
    LinearSum t = {sum, sum + nS, sum + nS + nz};
    return t;
}

size_t attention_linear_summary_floats(const Attention *a, int B, int Tk) {
    return (size_t)B * a->NH * width(a) * ((size_t)a->HS + 1 + (l2(a) ? Tk : 0));
}

void attention_linear_summary_forward(const Attention *a, const Backend *be, float *sum,
                                      const float *k, const float *v, const int *key_len, int B,
                                      int Tk) {
    LinearSum t = sum_parts(a, sum, B);
    const float *fk = features(a, be, t.fk, k, B * a->NH * Tk);
    be->linear_attn_summary(t.S, t.z, fk, v, key_len, phi(a), B, a->NH, Tk, width(a), a->HS);
}

/* work (L2 features): the query features fq, then their gradient dfq (backward),
 * [B,NH,Tq,F] each: within attention_linear_workspace(B, Tq, Tk). */
void attention_linear_forward_summary(const Attention *a, const Backend *be, float *o,
                                      const float *q, const float *sum, int B, int Tq,
                                      float *work) {
    LinearSum t = sum_parts(a, (float *)sum, B);
    const float *fq = features(a, be, work, q, B * a->NH * Tq);
    be->linear_attn_read(o, fq, t.S, t.z, phi(a), B, a->NH, Tq, width(a), a->HS);
}

void attention_linear_backward_summary(const Attention *a, const Backend *be, float *dq,
                                       float *dsum, const float *dout, const float *q,
                                       const float *sum, int B, int Tq, float *work) {
    int Nq = B * a->NH * Tq;
    LinearSum t = sum_parts(a, (float *)sum, B), dt = sum_parts(a, dsum, B);
    float *dfq = l2(a) ? work + (size_t)Nq * (a->HS + 1) : dq;
    const float *fq = features(a, be, work, q, Nq);
    if (l2(a)) be->zero(dfq, sizeof(float) * Nq * (a->HS + 1));
    be->linear_attn_read_backward(dq ? dfq : NULL, dt.S, dt.z, dout, fq, t.S, t.z, phi(a), B,
                                  a->NH, Tq, width(a), a->HS);
    if (l2(a) && dq) be->l2feature_backward(dq, dfq, q, Nq, a->HS);
}

/* L2 features: dφ(k) into dsum's fk slot (zero until now), then dk through the normalisation. */
void attention_linear_summary_backward(const Attention *a, const Backend *be, float *dk,
                                       float *dv, float *dsum, const float *sum, const float *k,
                                       const float *v, const int *key_len, int B, int Tk) {
    LinearSum t = sum_parts(a, (float *)sum, B), dt = sum_parts(a, dsum, B);
    float *dfk = l2(a) ? dt.fk : dk;
    be->linear_attn_summary_backward(dk ? dfk : NULL, dv, dt.S, dt.z, l2(a) ? t.fk : k, v,
                                     key_len, phi(a), B, a->NH, Tk, width(a), a->HS);
    if (l2(a) && dk) be->l2feature_backward(dk, dt.fk, k, B * a->NH * Tk, a->HS);
}

/* S [R, NH, F, HS] then z [R, NH, F]: the running sums over the features, constant in t */
size_t attention_linear_state_floats(const Attention *a, int R, int Tcap) {
    (void)Tcap;
    return (size_t)R * a->NH * width(a) * (a->HS + 1);
}

/* One step: (L2 features) the query's and the new key's features (work: 2·R·NH·F floats,
 * within attention_linear_workspace(R, 1, Tcap)), then linear attention's recurrent step. */
void attention_linear_decode_step(const Attention *a, const Backend *be, float *o, float *save,
                                  float *state, const float *q, const float *k, const float *v,
                                  const int *step_len, int R, int t, int Tcap, float *work) {
    (void)save, (void)step_len, (void)t, (void)Tcap;
    int NH = a->NH, HS = a->HS;
    float *S = state, *z = state + (size_t)R * NH * width(a) * HS;
    const float *fq = features(a, be, work, q, R * NH);
    const float *fk = features(a, be, l2(a) ? work + (size_t)R * NH * (HS + 1) : NULL, k, R * NH);
    be->linear_attn_step(o, S, z, fq, fk, v, phi(a), R, NH, width(a), HS);
}

void attention_linear_decode_reorder(const Attention *a, const Backend *be, float *dst,
                                     const float *src, const int *parent, const int *parent_bh,
                                     int R, int t, int Tcap) {
    (void)parent_bh, (void)t, (void)Tcap;
    size_t nS = (size_t)R * a->NH * width(a) * a->HS;
    be->gather_rows(dst, src, parent, R, a->NH * width(a) * a->HS);
    be->gather_rows(dst + nS, src + nS, parent, R, a->NH * width(a));
}

static const OpKind linear_ops[] = {OP_LINEAR_ATTN_FORWARD, OP_LINEAR_ATTN_BACKWARD,
                                    OP_LINEAR_ATTN_WORKSPACE, OP_LINEAR_ATTN_STEP,
                                    OP_LINEAR_ATTN_SUMMARY, OP_LINEAR_ATTN_READ,
                                    OP_LINEAR_ATTN_READ_BACKWARD,
                                    OP_LINEAR_ATTN_SUMMARY_BACKWARD};

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
    .kind = ATTN_LINEAR, .linear_features = LINEAR_FEATURES_ELU1, .ops = linear_ops, .nops = 8,
    .weights_host = linear_weights_host, ATTENTION_LINEAR_ROW};
