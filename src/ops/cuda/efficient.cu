/* ops/cuda/efficient.cu — efficient attention on the GPU: efficient_attn_forward/backward/
 * workspace (Shen et al. 2021 eq. 2; semantics: ops/ops.h; kernels and the determinism argument:
 * efficient.cuh). The workspace holds one (b, h) pair's statistics, context and query softmax per
 * block (eff_work floats each): nothing of size Tq×Tk. No causal form (callers refuse one).
 * Errors: a failed launch aborts (LAUNCH).
 */
#include "ops/cuda/cuda_internal.h"
#include "ops/cuda/efficient.cuh"

static size_t cu_efficient_attn_workspace(int B, int NH, int Tq, int Tk, int D, int Dv) {
    (void)Tk;
    return (size_t)B * NH * eff_work(Tq, D, Dv);
}

static void cu_efficient_attn_forward(float *out, const float *q, const float *k, const float *v,
                                      const int *key_len, int B, int NH, int Tq, int Tk, int D,
                                      int Dv, float *work) {
    if (B * NH <= 0 || Tq <= 0 || Dv <= 0) return;
    LAUNCH(k_efficient_forward, B * NH, EFF_THREADS, 0, out, q, k, v, key_len, NH, Tq, Tk, D, Dv,
           work);
}

static void cu_efficient_attn_backward(float *dq, float *dk, float *dv, const float *dout,
                                       const float *q, const float *k, const float *v,
                                       const int *key_len, int B, int NH, int Tq, int Tk, int D,
                                       int Dv, float *work) {
    if ((!dq && !dk && !dv) || B * NH <= 0 || Tq <= 0) return;
    LAUNCH(k_efficient_backward, B * NH, EFF_THREADS, 0, dq, dk, dv, dout, q, k, v, key_len, NH,
           Tq, Tk, D, Dv, work);
}

void cuda_register_efficient(Backend *be) {
    be->efficient_attn_forward = cu_efficient_attn_forward;
    be->efficient_attn_backward = cu_efficient_attn_backward;
    be->efficient_attn_workspace = cu_efficient_attn_workspace;
}
