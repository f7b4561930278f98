/* ops/cuda/attn_sdp.cu — attn_forward, attn_backward, attn_workspace and the heads' merged
 * layout's attn_forward_merged, attn_backward_merged on the GPU (Vaswani et al. 2017 eq. 1;
 * semantics: ops/ops.h; kernels and determinism: attn_sdp.cuh). The backward's
 * workspace holds dS [B·NH, Tq, Tk]. Grids: (Tq, B·NH) blocks, and (B·NH, slices) for the
 * backward's inputs; Tq and B·NH must be within CUDA's grid limits (65,535 in y): far above any
 * batch the trainer forms. Errors: a failed launch aborts (LAUNCH).
 */
#include "ops/cuda/attn_sdp.cuh"
#include "ops/cuda/cuda_internal.h"

/* LAUNCH of kernel<1> (the heads' merged layout) when merged, else of kernel<0> (split). */
#define LAUNCH_LAYOUT(kernel, merged, grid, ...)                                                 \
    do {                                                                                         \
        if (merged)                                                                              \
            LAUNCH(kernel<1>, grid, __VA_ARGS__);                                                \
        else                                                                                     \
            LAUNCH(kernel<0>, grid, __VA_ARGS__);                                                \
    } while (0)

static void attn_forward_layout(float *out, float *weights, const float *q, const float *k,
                                const float *v, const int *key_len, float scale, int causal,
                                int B, int NH, int Tq, int Tk, int D, int Dv, int merged) {
    if (B * NH <= 0 || Tq <= 0) return;
    dim3 grid((unsigned)Tq, (unsigned)(B * NH));
    LAUNCH_LAYOUT(k_attn_forward, merged, grid, SDP_THREADS, 0, out, weights, q, k, v, key_len,
                  scale, causal, NH, Tq, Tk, D, Dv);
}

static void cu_attn_forward(float *out, float *weights, const float *q, const float *k,
                            const float *v, const int *key_len, float scale, int causal, int B,
                            int NH, int Tq, int Tk, int D, int Dv) {
    attn_forward_layout(out, weights, q, k, v, key_len, scale, causal, B, NH, Tq, Tk, D, Dv, 0);
}

static void cu_attn_forward_merged(float *out, float *weights, const float *q, const float *k,
                                   const float *v, const int *key_len, float scale, int causal,
                                   int B, int NH, int Tq, int Tk, int D, int Dv) {
    attn_forward_layout(out, weights, q, k, v, key_len, scale, causal, B, NH, Tq, Tk, D, Dv, 1);
}

static size_t cu_attn_workspace(int B, int NH, int Tq, int Tk, int D, int Dv) {
    (void)D, (void)Dv;
    return (size_t)B * NH * Tq * Tk + 1;
}

static void attn_backward_layout(float *dq, float *dk, float *dv, const float *dout,
                                 const float *q, const float *k, const float *v,
                                 const float *weights, float scale, int B, int NH, int Tq, int Tk,
                                 int D, int Dv, float *work, int merged) {
    if ((!dq && !dk && !dv) || B * NH <= 0) return;
    if (!merged && (Tq <= 0 || Tk <= 0)) return; /* nothing to add; merged still writes zeros */
    if ((dq || dk) && Tq > 0) {
        dim3 grid((unsigned)Tq, (unsigned)(B * NH));
        LAUNCH_LAYOUT(k_attn_backward_scores, merged, grid, SDP_THREADS, 0, work, dout, v,
                      weights, scale, NH, Tq, Tk, Dv);
    }
    dim3 grid((unsigned)(B * NH), sdp_slices(Tq, Tk, D, Dv));
    LAUNCH_LAYOUT(k_attn_backward_inputs, merged, grid, SDP_THREADS, 0, dq, dk, dv, work, dout, q,
                  k, weights, NH, Tq, Tk, D, Dv);
}

static void cu_attn_backward(float *dq, float *dk, float *dv, const float *dout, const float *q,
                             const float *k, const float *v, const float *weights, float scale,
                             int B, int NH, int Tq, int Tk, int D, int Dv, float *work) {
    attn_backward_layout(dq, dk, dv, dout, q, k, v, weights, scale, B, NH, Tq, Tk, D, Dv, work, 0);
}

static void cu_attn_backward_merged(float *dq, float *dk, float *dv, const float *dout,
                                    const float *q, const float *k, const float *v,
                                    const float *weights, float scale, int B, int NH, int Tq,
                                    int Tk, int D, int Dv, float *work) {
    attn_backward_layout(dq, dk, dv, dout, q, k, v, weights, scale, B, NH, Tq, Tk, D, Dv, work, 1);
}

void cuda_register_attn_sdp(Backend *be) {
    be->attn_forward = cu_attn_forward;
    be->attn_backward = cu_attn_backward;
    be->attn_workspace = cu_attn_workspace;
    be->attn_forward_merged = cu_attn_forward_merged;
    be->attn_backward_merged = cu_attn_backward_merged;
}
