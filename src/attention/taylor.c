/* taylor.c — first-order Taylor linear attention (Li et al. 2020, "Linear Attention Mechanism: An
 * Efficient Attention for Semantic Segmentation", arXiv:2007.14902): the
 * softmax's e^{q̂·k̂} replaced by its first-order expansion 1 + q̂·k̂ on L2-normalised queries and
 * keys (q̂ = q/‖q‖₂, k̂ = k/‖k‖₂ per row and head, over HS), so that
 *   out_t = (Σ_s v_s + q̂_t (K̂ᵀV)) / (N_t + q̂_t·(K̂ᵀ1))
 * over the visible keys s (padding masked; causal: s ≤ t + Tk − Tq), N_t their count. The weights
 * 1 + q̂·k̂_s lie in [0, 2]. This is linear attention with the feature map φ(x) = [1; x/‖x‖₂]
 * (HS + 1 wide): φ(q)·φ(k) = 1 + q̂·k̂, Σ_s φ(k_s) v_sᵀ = [Σ v; K̂ᵀV],
 * φ(q)·Σ_s φ(k_s) = N + q̂·K̂ᵀ1.
 * So the row is linear attention's machinery (linear.c, ATTENTION_LINEAR_ROW) over the features
 * LINEAR_FEATURES_L2: l2feature_forward makes them, linear attention runs over them with the
 * identity map (LINEAR_PHI_IDENTITY, D = HS + 1; its normaliser guard adds 1e-6 to the
 * denominator), and l2feature_backward carries their gradients back through the normalisation
 * (dx += r (dx̂ − x̂ (x̂·dx̂))): causal by prefix sums, nothing of size Tq × Tk stored, an O(1)
 * decoding state, and in the RNN decoder the keys' running sums built once per batch (a step
 * O(HS²) instead of O(Tk·HS²)). Workspace, summary and state layouts: linear.c. */
#include <math.h>

#include "attention/kinds.h"

static const OpKind taylor_ops[] = {OP_L2FEATURE_FORWARD, OP_L2FEATURE_BACKWARD,
                                    OP_LINEAR_ATTN_FORWARD, OP_LINEAR_ATTN_BACKWARD,
                                    OP_LINEAR_ATTN_WORKSPACE, OP_LINEAR_ATTN_STEP,
                                    OP_LINEAR_ATTN_SUMMARY, OP_LINEAR_ATTN_READ,
                                    OP_LINEAR_ATTN_READ_BACKWARD,
                                    OP_LINEAR_ATTN_SUMMARY_BACKWARD};

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
    .kind = ATTN_TAYLOR, .linear_features = LINEAR_FEATURES_L2, .ops = taylor_ops, .nops = 10,
    .weights_host = taylor_weights_host, ATTENTION_LINEAR_ROW};
