/* taylor.c — first-order Taylor linear attention (Li et al. 2020, "Linear Attention Mechanism: An
 * Efficient Attention for Semantic Segmentation", arXiv:2007.14902): the
 * softmax's e^{q̂·k̂} replaced by its first-order expansion 1 + q̂·k̂ on L2-normalised queries and
 * keys (q̂ = q/‖q‖₂, k̂ = k/‖k‖₂ per row and head, over HS), so that
 *   out_t = (Σ_s v_s + q̂_t (K̂ᵀV)) / (N_t + q̂_t·(K̂ᵀ1))
 * over the visible keys s (padding masked; causal: s ≤ t + Tk − Tq), N_t their count. The weights
 * 1 + q̂·k̂_s lie in [0, 2]. This is linear attention with the feature map φ(x) = [1; x/‖x‖₂]
 * (HS + 1 wide): φ(q)·φ(k) = 1 + q̂·k̂, Σ_s φ(k_s) v_sᵀ = [Σ v; K̂ᵀV],
 * φ(q)·Σ_s φ(k_s) = N + q̂·K̂ᵀ1.
 * So the row runs the features (op l2feature_forward) through linear attention with the identity
 * map (linear_attn_forward, LINEAR_PHI_IDENTITY, D = HS + 1; its normaliser guard adds 1e-6 to
 * the denominator): causal by prefix sums, nothing of size Tq × Tk stored, and an O(1) decoding
 * state (linear_attn_step over the features: S [R, NH, HS+1, HS], z [R, NH, HS+1]). The backward
 * recomputes the features, runs linear_attn_backward into their gradients and carries those
 * through the normalisation by hand (l2feature_backward: dx += r (dx̂ − x̂ (x̂·dx̂))).
 *
 * In the RNN decoder, whose keys are the same encoder states at every step, the running sums
 * over the keys' features are built once per batch (the summary hooks of attention.h, with
 * linear attention's summary ops over the features): a step costs O(HS²) instead of
 * O(Tk·HS²).
 *
 * Workspace (floats): the features of q [B,NH,Tq,HS+1] and of k [B,NH,Tk,HS+1], their gradients
 * (the same sizes, backward only), then linear attention's own. */
#include <math.h>

#include "attention/kinds.h"

/* The pieces of one call's workspace: features fq, fk; their gradients dfq, dfk; linear's. */
typedef struct {
    float *fq, *fk, *dfq, *dfk, *lin;
} TaylorWork;

static TaylorWork taylor_carve(const Attention *a, float *work, int B, int Tq, int Tk) {
    size_t nq = (size_t)B * a->NH * Tq * (a->HS + 1), nk = (size_t)B * a->NH * Tk * (a->HS + 1);
    TaylorWork w = {work, work + nq, work + nq + nk, work + 2 * nq + nk, work + 2 * (nq + nk)};
    return w;
}

static void taylor_forward(const Attention *a, const Backend *be, float *o, float *save,
                           const float *q, const float *k, const float *v, const int *key_len,
                           int causal, int B, int Tq, int Tk, float *work) {
    (void)save;
    int NH = a->NH, HS = a->HS;
    TaylorWork w = taylor_carve(a, work, B, Tq, Tk);
    be->l2feature_forward(w.fq, q, B * NH * Tq, HS); /* φ(q) = [1; q̂] */
    be->l2feature_forward(w.fk, k, B * NH * Tk, HS); /* φ(k) = [1; k̂] */
    /* out_t = φ(q_t)ᵀ Σ_s φ(k_s) v_sᵀ / (φ(q_t)·Σ_s φ(k_s) + 1e-6) */
    be->linear_attn_forward(o, w.fq, w.fk, v, key_len, causal, LINEAR_PHI_IDENTITY, B, NH, Tq, Tk,
                            HS + 1, HS, w.lin);
}

static void taylor_backward(const Attention *a, const Backend *be, float *dq, float *dk,
                            float *dv, const float *dout, const float *o, const float *save,
                            const float *q, const float *k, const float *v, const int *key_len,
                            int causal, int B, int Tq, int Tk, float *work) {
    (void)o, (void)save; /* the features and running sums are recomputed */
    int NH = a->NH, HS = a->HS, Nq = B * NH * Tq, Nk = B * NH * Tk;
    TaylorWork w = taylor_carve(a, work, B, Tq, Tk);
    be->l2feature_forward(w.fq, q, Nq, HS);
    be->l2feature_forward(w.fk, k, Nk, HS);
    be->zero(w.dfq, sizeof(float) * Nq * (HS + 1));
    be->zero(w.dfk, sizeof(float) * Nk * (HS + 1));
    /* out = linear attention over the features (identity map): dφ(q), dφ(k) and dv */
    be->linear_attn_backward(dq ? w.dfq : NULL, dk ? w.dfk : NULL, dv, dout, w.fq, w.fk, v, key_len,
                             causal, LINEAR_PHI_IDENTITY, B, NH, Tq, Tk, HS + 1, HS, w.lin);
    /* φ(x) = [1; x r], r = (‖x‖² + 1e-12)^(−1/2): dx += r (dx̂ − x̂ (x̂·dx̂)) */
    if (dq) be->l2feature_backward(dq, w.dfq, q, Nq, HS);
    if (dk) be->l2feature_backward(dk, w.dfk, k, Nk, HS);
}

static size_t taylor_workspace(const Attention *a, const Backend *be, int B, int Tq, int Tk) {
    size_t nq = (size_t)B * a->NH * Tq * (a->HS + 1), nk = (size_t)B * a->NH * Tk * (a->HS + 1);
    return 2 * (nq + nk) + be->linear_attn_workspace(B, a->NH, Tq, Tk, a->HS + 1, a->HS);
}

/* The keys' summary (attention.h): S [B,NH,HS+1,HS] and z [B,NH,HS+1] over the keys' features,
 * then the features themselves, fk [B,NH,Tk,HS+1], which the summary's backward reads (and, in
 * dsum, the slot where it gathers their gradient before l2feature_backward). */
typedef struct {
    float *S, *z, *fk;
} TaylorSum;

static TaylorSum taylor_sum(const Attention *a, float *sum, int B) {
    size_t nS = (size_t)B * a->NH * (a->HS + 1) * a->HS, nz = (size_t)B * a->NH * (a->HS + 1);
    TaylorSum t = {sum, sum + nS, sum + nS + nz};
    return t;
}

static size_t taylor_summary_floats(const Attention *a, int B, int Tk) {
    return (size_t)B * a->NH * (a->HS + 1) * ((size_t)a->HS + 1 + Tk);
}

static void taylor_summary_forward(const Attention *a, const Backend *be, float *sum,
                                   const float *k, const float *v, const int *key_len, int B,
                                   int Tk) {
    TaylorSum t = taylor_sum(a, sum, B);
    be->l2feature_forward(t.fk, k, B * a->NH * Tk, a->HS); /* φ(k) = [1; k̂] */
    be->linear_attn_summary(t.S, t.z, t.fk, v, key_len, LINEAR_PHI_IDENTITY, B, a->NH, Tk,
                            a->HS + 1, a->HS);
}

/* work: the query features fq, then their gradient dfq (backward), [B,NH,Tq,HS+1] each: within
 * taylor_workspace(B, Tq, Tk). */
static void taylor_forward_summary(const Attention *a, const Backend *be, float *o,
                                   const float *q, const float *sum, int B, int Tq,
                                   float *work) {
    TaylorSum t = taylor_sum(a, (float *)sum, B);
    be->l2feature_forward(work, q, B * a->NH * Tq, a->HS);
    be->linear_attn_read(o, work, t.S, t.z, LINEAR_PHI_IDENTITY, B, a->NH, Tq, a->HS + 1, a->HS);
}

static void taylor_backward_summary(const Attention *a, const Backend *be, float *dq,
                                    float *dsum, const float *dout, const float *q,
                                    const float *sum, int B, int Tq, float *work) {
    int Nq = B * a->NH * Tq;
    TaylorSum t = taylor_sum(a, (float *)sum, B), dt = taylor_sum(a, dsum, B);
    float *fq = work, *dfq = work + (size_t)Nq * (a->HS + 1);
    be->l2feature_forward(fq, q, Nq, a->HS);
    be->zero(dfq, sizeof(float) * Nq * (a->HS + 1));
    be->linear_attn_read_backward(dq ? dfq : NULL, dt.S, dt.z, dout, fq, t.S, t.z,
                                  LINEAR_PHI_IDENTITY, B, a->NH, Tq, a->HS + 1, a->HS);
    if (dq) be->l2feature_backward(dq, dfq, q, Nq, a->HS);
}

/* dφ(k) into dsum's fk slot (zero until now), then dk through the normalisation. */
static void taylor_summary_backward(const Attention *a, const Backend *be, float *dk, float *dv,
                                    float *dsum, const float *sum, const float *k,
                                    const float *v, const int *key_len, int B, int Tk) {
    TaylorSum t = taylor_sum(a, (float *)sum, B), dt = taylor_sum(a, dsum, B);
    int Nk = B * a->NH * Tk;
    be->linear_attn_summary_backward(dk ? dt.fk : NULL, dv, dt.S, dt.z, t.fk, v, key_len,
                                     LINEAR_PHI_IDENTITY, B, a->NH, Tk, a->HS + 1, a->HS);
    if (dk) be->l2feature_backward(dk, dt.fk, k, Nk, a->HS);
}

static const OpKind taylor_ops[] = {OP_L2FEATURE_FORWARD, OP_L2FEATURE_BACKWARD,
                                    OP_LINEAR_ATTN_FORWARD, OP_LINEAR_ATTN_BACKWARD,
                                    OP_LINEAR_ATTN_WORKSPACE, OP_LINEAR_ATTN_STEP,
                                    OP_LINEAR_ATTN_SUMMARY, OP_LINEAR_ATTN_READ,
                                    OP_LINEAR_ATTN_READ_BACKWARD,
                                    OP_LINEAR_ATTN_SUMMARY_BACKWARD};

/* S [R, NH, HS+1, HS] then z [R, NH, HS+1]: the running sums over the features, constant in t */
static size_t taylor_state_floats(const Attention *a, int R, int Tcap) {
    (void)Tcap;
    return (size_t)R * a->NH * (a->HS + 1) * (a->HS + 1);
}

/* One step: the new key's and the query's features (work: 2·R·NH·(HS+1) floats, within
 * taylor_workspace(R, 1, Tcap)), then linear attention's recurrent step over them. */
static void taylor_decode_step(const Attention *a, const Backend *be, float *o, float *save,
                               float *state, const float *q, const float *k, const float *v,
                               const int *step_len, int R, int t, int Tcap, float *work) {
    (void)save, (void)step_len, (void)t, (void)Tcap;
    int NH = a->NH, HS = a->HS;
    float *S = state, *z = state + (size_t)R * NH * (HS + 1) * HS;
    float *fq = work, *fk = work + (size_t)R * NH * (HS + 1);
    be->l2feature_forward(fq, q, R * NH, HS);
    be->l2feature_forward(fk, k, R * NH, HS);
    be->linear_attn_step(o, S, z, fq, fk, v, LINEAR_PHI_IDENTITY, R, NH, HS + 1, HS);
}

static void taylor_decode_reorder(const Attention *a, const Backend *be, float *dst,
                                  const float *src, const int *parent, const int *parent_bh,
                                  int R, int t, int Tcap) {
    (void)parent_bh, (void)t, (void)Tcap;
    size_t nS = (size_t)R * a->NH * (a->HS + 1) * a->HS;
    be->gather_rows(dst, src, parent, R, a->NH * (a->HS + 1) * a->HS);
    be->gather_rows(dst + nS, src + nS, parent, R, a->NH * (a->HS + 1));
}

/* w_s = (1 + q̂·k̂_s) / Σ_s' (1 + q̂·k̂_s') over the len visible keys */
static void taylor_weights_host(float *w, const float *q, const float *k, const float *v_a,
                                int len, int HS) {
    (void)v_a;
    float e[len > 0 ? len : 1];
    double qq = 0, z = 0;
    for (int d = 0; d < HS; d++) qq += (double)q[d] * q[d];
    double rq = 1.0 / sqrt(qq + 1e-12);
    for (int s = 0; s < len; s++) {
        const float *ks = k + (size_t)s * HS;
        double kk = 0, qk = 0;
        for (int d = 0; d < HS; d++) kk += (double)ks[d] * ks[d], qk += (double)q[d] * ks[d];
        double ws = 1.0 + qk * rq / sqrt(kk + 1e-12);
        e[s] = (float)ws, z += ws;
    }
    for (int s = 0; s < len; s++) w[s] = (float)(e[s] / z);
}

const AttentionOps attention_taylor = {
    .kind = ATTN_TAYLOR, .causal_ok = 1, .multi_head = 1, .save = ATTN_SAVE_NONE,
    .ops = taylor_ops, .nops = 10, .forward = taylor_forward,
    .backward = taylor_backward, .workspace = taylor_workspace,
    .state_floats = taylor_state_floats, .decode_step = taylor_decode_step,
    .decode_reorder = taylor_decode_reorder, .weights_host = taylor_weights_host,
    .summary_floats = taylor_summary_floats, .summary_forward = taylor_summary_forward,
    .forward_summary = taylor_forward_summary, .backward_summary = taylor_backward_summary,
    .summary_backward = taylor_summary_backward};
