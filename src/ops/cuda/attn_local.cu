/* ops/cuda/attn_local.cu — local_attn_forward, local_attn_backward and local_attn_workspace on
 * the GPU (Luong et al. 2015 §3.2; semantics: ops/ops.h; kernels and determinism:
 * attn_local.cuh). The backward's scratch — the score gradients of the windows dE
 * [B·NH,Tq,2W+1], the per-row
 * gradients of p_t dpart [B·NH,Tq] and the rows' shares of dva [B·NH,D] — is the caller's work
 * (local_attn_workspace floats); nothing is allocated. Errors: a NULL work aborts (CHECK); a
 * failed launch aborts (LAUNCH).
 */
#include "ops/cuda/attn_local.cuh"
#include "ops/cuda/cuda_internal.h"

/* dE [R,Tq,2W+1], dpart [R,Tq], dvapart [R,D], R = B·NH: O(Tq·W) per row. */
static size_t cu_local_attn_workspace(int B, int NH, int Tq, int Tk, int D, int Dv, int window) {
    (void)Dv;
    size_t R = (size_t)(B > 0 ? B : 0) * (NH > 0 ? NH : 0);
    if (!R || Tq <= 0 || Tk <= 0) return 0;
    size_t NW = 2 * (size_t)(window > 0 ? window : 0) + 1;
    return R * (size_t)Tq * NW + R * (size_t)Tq + R * (size_t)(D > 0 ? D : 0);
}

static void cu_local_attn_forward(float *out, float *weights, const float *q, const float *k,
                                  const float *va, const float *v, const float *z,
                                  const int *key_len, float scale, int window, int pos0, int B,
                                  int NH, int Tq, int Tk, int D, int Dv) {
    if (B * NH <= 0 || Tq <= 0) return;
    dim3 grid((unsigned)Tq, (unsigned)(B * NH));
    LAUNCH(k_local_forward, grid, LOC_THREADS, 0, out, weights, q, k, va, v, z, key_len, scale,
           window, pos0, NH, Tq, Tk, D, Dv);
}

static void cu_local_attn_backward(float *dq, float *dk, float *dva, float *dv, float *dz,
                                   const float *dout, const float *q, const float *k,
                                   const float *va, const float *v, const float *z,
                                   const float *weights, const int *key_len, float scale,
                                   int window, int pos0, int B, int NH, int Tq, int Tk, int D,
                                   int Dv, float *work) {
    int R = B * NH;
    if (!va) dva = NULL;
    if (!z) dz = NULL;
    if ((!dq && !dk && !dva && !dv && !dz) || R <= 0 || Tq <= 0 || Tk <= 0) return;
    CHECK(work != NULL, "local_attn_backward: work is NULL; pass local_attn_workspace(B, NH, Tq, "
                        "Tk, D, Dv, window) floats of backend memory (reserved once by the caller)");
    float *dE = work, *dpart = work + (size_t)R * Tq * (2 * (size_t)window + 1);
    float *dvapart = dpart + (size_t)R * Tq;
    dim3 grid((unsigned)Tq, (unsigned)R);
    LAUNCH(k_local_backward_rows, grid, LOC_THREADS, 0, dE, dpart, dq, dout, q, k, va, v, z,
           weights, key_len, scale, window, pos0, NH, Tq, Tk, D, Dv);
    LAUNCH(k_local_backward_keys, R, LOC_THREADS, 0, dk, dva ? dvapart : NULL, dv, dE, dout, q, k,
           va, weights, scale, window, NH, Tq, Tk, D, Dv);
    if (dz) {
        int n = B * Tq;
        LAUNCH(k_local_backward_z, (n + LOC_THREADS - 1) / LOC_THREADS, LOC_THREADS, 0, dz, dpart,
               z, key_len, window, B, NH, Tq, Tk);
    }
    if (dva) LAUNCH(k_local_backward_va, NH, LOC_THREADS, 0, dva, dvapart, B, NH, D);
}

void cuda_register_attn_local(Backend *be) {
    be->local_attn_forward = cu_local_attn_forward;
    be->local_attn_backward = cu_local_attn_backward;
    be->local_attn_workspace = cu_local_attn_workspace;
}
