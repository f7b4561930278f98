/* ops/cuda/attn_pointwise.cu — pointwise_attn_forward, _backward, _workspace and
 * head_rmsnorm_forward, _backward on the GPU (the sigmoid and rela kinds; semantics: ops/ops.h;
 * kernels and determinism: attn_pointwise.cuh). The backward's workspace holds dS [B·NH, Tq, Tk].
 * Grids: (Tq, B·NH) blocks, (B·NH, slices) for the backward's inputs (attn_sdp.cuh's kernel),
 * one block per row for the norm; Tq and B·NH must be within CUDA's grid limits (65,535 in y).
 * Errors: a failed launch aborts (LAUNCH).
 */
#include "ops/cuda/attn_pointwise.cuh"
#include "ops/cuda/cuda_internal.h"

static_assert(PW_SIGMOID == POINTWISE_SIGMOID && PW_RELU == POINTWISE_RELU,
              "attn_pointwise.cuh's PW_* must be ops.h's POINTWISE_*");

static void cu_pointwise_attn_forward(float *out, float *weights, const float *q, const float *k,
                                      const float *v, const int *key_len, float scale,
                                      int causal, int fn, int B, int NH, int Tq, int Tk, int D,
                                      int Dv) {
    if (B * NH <= 0 || Tq <= 0) return;
    dim3 grid((unsigned)Tq, (unsigned)(B * NH));
    LAUNCH(k_pointwise_attn_forward, grid, SDP_THREADS, 0, out, weights, q, k, v, key_len, scale,
           causal, fn, NH, Tq, Tk, D, Dv);
}

static size_t cu_pointwise_attn_workspace(int B, int NH, int Tq, int Tk, int D, int Dv) {
    (void)D, (void)Dv;
    return (size_t)B * NH * Tq * Tk + 1;
}

static void cu_pointwise_attn_backward(float *dq, float *dk, float *dv, const float *dout,
                                       const float *q, const float *k, const float *v,
                                       const float *weights, float scale, int fn, int B, int NH,
                                       int Tq, int Tk, int D, int Dv, float *work) {
    if ((!dq && !dk && !dv) || B * NH <= 0 || Tq <= 0 || Tk <= 0) return;
    if (dq || dk) {
        dim3 grid((unsigned)Tq, (unsigned)(B * NH));
        LAUNCH(k_pointwise_attn_backward_scores, grid, SDP_THREADS, 0, work, dout, v, weights,
               scale, fn, Tq, Tk, Dv);
    }
    dim3 grid((unsigned)(B * NH), sdp_slices(Tq, Tk, D, Dv));
    LAUNCH(k_attn_backward_inputs<0>, grid, SDP_THREADS, 0, dq, dk, dv, work, dout, q, k, weights,
           NH, Tq, Tk, D, Dv);
}

static void cu_head_rmsnorm_forward(float *out, float *rstd, const float *inp, const float *gain,
                                    int B, int NH, int T, int C) {
    long N = (long)B * NH * T;
    if (N <= 0 || C <= 0) return;
    LAUNCH(k_head_rmsnorm_forward, (unsigned)N, RMS_THREADS, 0, out, rstd, inp, gain, NH, T, C);
}

static void cu_head_rmsnorm_backward(float *dinp, float *dgain, const float *dout,
                                     const float *inp, const float *gain, const float *rstd,
                                     int B, int NH, int T, int C) {
    long N = (long)B * NH * T;
    if (N <= 0 || C <= 0) return;
    if (dinp)
        LAUNCH(k_head_rmsnorm_backward_rows, (unsigned)N, RMS_THREADS, 0, dinp, dout, inp, gain,
               rstd, NH, T, C);
    if (dgain)
        LAUNCH(k_head_rmsnorm_backward_gain,
               (unsigned)((NH * C + RMS_GAIN_THREADS - 1) / RMS_GAIN_THREADS), RMS_GAIN_THREADS,
               0, dgain, dout, inp, rstd, B, NH, T, C);
}

void cuda_register_attn_pointwise(Backend *be) {
    be->pointwise_attn_forward = cu_pointwise_attn_forward;
    be->pointwise_attn_backward = cu_pointwise_attn_backward;
    be->pointwise_attn_workspace = cu_pointwise_attn_workspace;
    be->head_rmsnorm_forward = cu_head_rmsnorm_forward;
    be->head_rmsnorm_backward = cu_head_rmsnorm_backward;
}
