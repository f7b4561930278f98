/* ops/cuda/attn_additive.cu — additive_attn_forward, additive_attn_backward and
 * additive_attn_workspace on the GPU (Bahdanau et al. 2015 eq. 6; semantics: ops/ops.h; kernels
 * and determinism: attn_additive.cuh). The backward's scratch, the score gradients dE
 * [B·NH,Tq,Tk] and the queries' shares of dv [B·NH,Tq,A], is the caller's work
 * (additive_attn_workspace floats); nothing is allocated. Errors: a NULL work aborts (CHECK); a
 * failed launch aborts (LAUNCH).
 */
#include "ops/cuda/attn_additive.cuh"
#include "ops/cuda/cuda_internal.h"

/* dE [R,Tq,Tk], then dvpart [R,Tq,A], R = B·NH. */
static size_t cu_additive_attn_workspace(int B, int NH, int Tq, int Tk, int A, int Dv) {
    (void)Dv;
    size_t R = (size_t)(B > 0 ? B : 0) * (NH > 0 ? NH : 0);
    if (!R || Tq <= 0 || Tk <= 0) return 0;
    return R * (size_t)Tq * Tk + R * (size_t)Tq * (A > 0 ? A : 0);
}

static void cu_additive_attn_forward(float *out, float *weights, const float *qp, const float *kp,
                                     const float *v, const float *values, const int *key_len,
                                     int causal, int B, int NH, int Tq, int Tk, int A, int Dv) {
    if (B * NH <= 0 || Tq <= 0) return;
    dim3 grid((unsigned)Tq, (unsigned)(B * NH));
    LAUNCH(k_additive_forward, grid, ADD_THREADS, 0, out, weights, qp, kp, v, values, key_len,
           causal, NH, Tq, Tk, A, Dv);
}

static void cu_additive_attn_backward(float *dqp, float *dkp, float *dv, float *dvalues,
                                      const float *dout, const float *qp, const float *kp,
                                      const float *v, const float *values, const float *weights,
                                      int B, int NH, int Tq, int Tk, int A, int Dv,
                                      float *work) {
    int R = B * NH;
    if ((!dqp && !dkp && !dv && !dvalues) || R <= 0 || Tq <= 0 || Tk <= 0) return;
    CHECK(work != NULL, "additive_attn_backward: work is NULL; pass additive_attn_workspace(B, "
                        "NH, Tq, Tk, A, Dv) floats of backend memory (reserved once by the "
                        "caller)");
    float *dE = work, *dvpart = work + (size_t)R * Tq * Tk;
    if (dqp || dkp || dv) {
        dim3 grid((unsigned)Tq, (unsigned)R);
        LAUNCH(k_additive_backward_scores, grid, ADD_THREADS, 0, dE, dout, values, weights, Tq, Tk,
               Dv);
    }
    LAUNCH(k_additive_backward_inputs, R, ADD_THREADS, 0, dqp, dkp, dv ? dvpart : NULL, dvalues,
           dE, dout, qp, kp, v, weights, NH, Tq, Tk, A, Dv);
    if (dv) LAUNCH(k_additive_backward_v, NH, ADD_THREADS, 0, dv, dvpart, B, NH, Tq, A);
}

void cuda_register_attn_additive(Backend *be) {
    be->additive_attn_forward = cu_additive_attn_forward;
    be->additive_attn_backward = cu_additive_attn_backward;
    be->additive_attn_workspace = cu_additive_attn_workspace;
}
