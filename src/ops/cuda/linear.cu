/* ops/cuda/linear.cu — linear attention on the GPU: linear_attn_forward/backward/step/workspace
 * and linear_attn_summary/read/read_backward/summary_backward, the non-causal form split at its
 * key summary (Katharopoulos et al. 2020 eq. 6–9, §3.3.1, §3.4), with the feature map elu + 1 or
 * the identity, and the taylor kind's features l2feature_forward/backward (Li et al. 2020; one
 * block per row, block_reduce.cuh for the norm; semantics: ops/ops.h; kernels and the
 * determinism argument: linear.cuh). Shapes as ops.h; the workspace holds one (b, h) pair's
 * state and row vectors per block (lin_work floats each), so nothing of size Tq×Tk or T·D·Dv.
 * linear_attn_step needs no workspace: its state is the caller's, and its row scratch
 * (2·D + Dv + 1 floats per (b, h) block) is the block's dynamic shared memory. The split
 * non-causal form (linear_attn_summary, _read, _read_backward, _summary_backward) needs none
 * either: the summary is the caller's state and zsum, and the row scratch is dynamic shared
 * memory (read: D + 1 floats per block, read_backward: D + Dv + 2, summary_backward: D). Nothing
 * is allocated. Errors: linear_attn_step with 2·D + Dv + 1 floats over 48 KiB aborts (CHECK), as
 * do linear_attn_read, _read_backward and _summary_backward with their scratch over 48 KiB; a
 * failed launch aborts (LAUNCH).
 */
#include "ops/cuda/cuda_internal.h"
#include "ops/cuda/linear.cuh"

static_assert(LIN_PHI_ELU1 == LINEAR_PHI_ELU1 && LIN_PHI_IDENTITY == LINEAR_PHI_IDENTITY,
              "linear.cuh's feature maps must be ops.h's LINEAR_PHI_*");

static size_t cu_linear_attn_workspace(int B, int NH, int Tq, int Tk, int D, int Dv) {
    (void)Tk;
    return (size_t)B * NH * lin_work(Tq, D, Dv);
}

static void cu_linear_attn_forward(float *out, const float *q, const float *k, const float *v,
                                   const int *key_len, int causal, int phi, int B, int NH, int Tq,
                                   int Tk, int D, int Dv, float *work) {
    if (B * NH <= 0 || Tq <= 0 || Dv <= 0) return;
    LAUNCH(k_linear_forward, B * NH, LIN_THREADS, 0, out, q, k, v, key_len, causal, phi, NH, Tq,
           Tk, D, Dv, work);
}

static void cu_linear_attn_backward(float *dq, float *dk, float *dv, const float *dout,
                                    const float *q, const float *k, const float *v,
                                    const int *key_len, int causal, int phi, int B, int NH,
                                    int Tq, int Tk, int D, int Dv, float *work) {
    if ((!dq && !dk && !dv) || B * NH <= 0 || Tq <= 0) return;
    LAUNCH(k_linear_backward, B * NH, LIN_THREADS, 0, dq, dk, dv, dout, q, k, v, key_len, causal,
           phi, NH, Tq, Tk, D, Dv, work);
}

static void cu_linear_attn_step(float *out, float *state, float *zsum, const float *q,
                                const float *k, const float *v, int phi, int B, int NH, int D,
                                int Dv) {
    if (B * NH <= 0) return;
    size_t smem = lin_step_smem(D, Dv);
    CHECK(smem <= LIN_SMEM_MAX, "linear_attn_step: its 2·D + Dv + 1 floats of row scratch "
                                "exceed 48 KiB of shared memory; use a smaller head size");
    LAUNCH(k_linear_step, B * NH, LIN_THREADS, smem, out, state, zsum, q, k, v, phi, D, Dv);
}

static void cu_linear_attn_summary(float *state, float *zsum, const float *k, const float *v,
                                   const int *key_len, int phi, int B, int NH, int Tk, int D,
                                   int Dv) {
    size_t n = (size_t)D * Dv + D; /* output floats per (b, h): state, then zsum */
    if (B * NH <= 0 || D <= 0) return;
    dim3 grid((unsigned)((n + LIN_THREADS - 1) / LIN_THREADS), (unsigned)(B * NH));
    LAUNCH(k_linear_summary, grid, LIN_THREADS, 0, state, zsum, k, v, key_len, phi, NH, Tk, D,
           Dv);
}

static void cu_linear_attn_read(float *out, const float *q, const float *state,
                                const float *zsum, int phi, int B, int NH, int Tq, int D,
                                int Dv) {
    if (B * NH <= 0 || Tq <= 0 || Dv <= 0) return;
    size_t smem = lin_read_smem(D);
    CHECK(smem <= LIN_SMEM_MAX, "linear_attn_read: its D + 1 floats of row scratch exceed 48 KiB "
                                "of shared memory; use a smaller head size");
    dim3 grid((unsigned)Tq, (unsigned)(B * NH));
    LAUNCH(k_linear_read, grid, LIN_THREADS, smem, out, q, state, zsum, phi, Tq, D, Dv);
}

static void cu_linear_attn_read_backward(float *dq, float *dstate, float *dzsum,
                                         const float *dout, const float *q, const float *state,
                                         const float *zsum, int phi, int B, int NH, int Tq, int D,
                                         int Dv) {
    if (B * NH <= 0 || Tq <= 0) return;
    size_t smem = lin_read_backward_smem(D, Dv);
    CHECK(smem <= LIN_SMEM_MAX, "linear_attn_read_backward: its D + Dv + 2 floats of row scratch "
                                "exceed 48 KiB of shared memory; use a smaller head size");
    LAUNCH(k_linear_read_backward, B * NH, LIN_THREADS, smem, dq, dstate, dzsum, dout, q, state,
           zsum, phi, Tq, D, Dv);
}

static void cu_linear_attn_summary_backward(float *dk, float *dv, const float *dstate,
                                            const float *dzsum, const float *k, const float *v,
                                            const int *key_len, int phi, int B, int NH, int Tk,
                                            int D, int Dv) {
    if ((!dk && !dv) || B * NH <= 0 || Tk <= 0) return;
    size_t smem = dv ? lin_summary_backward_smem(D) : 0;
    CHECK(smem <= LIN_SMEM_MAX, "linear_attn_summary_backward: its D floats of φ(k) exceed 48 KiB "
                                "of shared memory; use a smaller head size");
    dim3 grid((unsigned)Tk, (unsigned)(B * NH));
    LAUNCH(k_linear_summary_backward, grid, LIN_THREADS, smem, dk, dv, dstate, dzsum, k, v,
           key_len, phi, NH, Tk, D, Dv);
}

static void cu_l2feature_forward(float *out, const float *inp, int N, int D) {
    if (N <= 0) return;
    LAUNCH(k_l2feature_forward, N, L2F_THREADS, 0, out, inp, D);
}

static void cu_l2feature_backward(float *dinp, const float *dout, const float *inp, int N, int D) {
    if (N <= 0 || D <= 0) return;
    LAUNCH(k_l2feature_backward, N, L2F_THREADS, 0, dinp, dout, inp, D);
}

void cuda_register_linear(Backend *be) {
    be->linear_attn_forward = cu_linear_attn_forward;
    be->linear_attn_backward = cu_linear_attn_backward;
    be->linear_attn_step = cu_linear_attn_step;
    be->linear_attn_workspace = cu_linear_attn_workspace;
    be->linear_attn_summary = cu_linear_attn_summary;
    be->linear_attn_read = cu_linear_attn_read;
    be->linear_attn_read_backward = cu_linear_attn_read_backward;
    be->linear_attn_summary_backward = cu_linear_attn_summary_backward;
    be->l2feature_forward = cu_l2feature_forward;
    be->l2feature_backward = cu_l2feature_backward;
}
