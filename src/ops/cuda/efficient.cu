/* ops/cuda/efficient.cu — efficient attention on the GPU: efficient_attn_forward/backward/
 * workspace (Shen et al. 2021 eq. 2; semantics: ops/ops.h; kernels and the determinism argument:
 * efficient.cuh). The workspace holds one (b, h) pair's statistics, context and query softmax per
 * block (eff_work floats each): nothing of size Tq×Tk. No causal form (callers refuse one).
 * The context split (efficient_attn_summary, _read, _read_backward, _summary_backward) keeps its
 * few [D] vectors in dynamic shared memory instead: no workspace. Errors: a split op whose
 * shared memory would exceed 48 KiB aborts (CHECK); a failed launch aborts (LAUNCH).
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

static void cu_efficient_attn_summary(float *ctx, const float *k, const float *v,
                                      const int *key_len, int B, int NH, int Tk, int D, int Dv) {
    if (B * NH <= 0 || D <= 0 || Dv <= 0) return;
    CHECK(eff_smem(2, D) <= EFF_SMEM_MAX,
          "efficient_attn_summary: its 2·D floats of row scratch exceed 48 KiB of shared "
          "memory; use a smaller head size");
    LAUNCH(k_efficient_summary, B * NH, EFF_THREADS, eff_smem(2, D), ctx, k, v, key_len, NH, Tk,
           D, Dv);
}

static void cu_efficient_attn_read(float *out, const float *q, const float *ctx, int B, int NH,
                                   int Tq, int D, int Dv) {
    if (B * NH <= 0 || Tq <= 0 || Dv <= 0) return;
    CHECK(eff_smem(1, D) <= EFF_SMEM_MAX,
          "efficient_attn_read: its D floats of row scratch exceed 48 KiB of shared "
          "memory; use a smaller head size");
    dim3 grid((unsigned)Tq, (unsigned)(B * NH));
    LAUNCH(k_efficient_read, grid, EFF_THREADS, eff_smem(1, D), out, q, ctx, Tq, D, Dv);
}

static void cu_efficient_attn_read_backward(float *dq, float *dctx, const float *dout,
                                            const float *q, const float *ctx, int B, int NH,
                                            int Tq, int D, int Dv) {
    if (B * NH <= 0 || Tq <= 0 || D <= 0) return;
    CHECK(eff_smem(2, D) <= EFF_SMEM_MAX,
          "efficient_attn_read_backward: its 2·D floats of row scratch exceed 48 KiB of "
          "shared memory; use a smaller head size");
    LAUNCH(k_efficient_read_backward, B * NH, EFF_THREADS, eff_smem(2, D), dq, dctx, dout, q, ctx,
           Tq, D, Dv);
}

static void cu_efficient_attn_summary_backward(float *dk, float *dv, const float *dctx,
                                               const float *ctx, const float *k, const float *v,
                                               const int *key_len, int B, int NH, int Tk, int D,
                                               int Dv) {
    if ((!dk && !dv) || B * NH <= 0 || D <= 0) return;
    CHECK(eff_smem(3, D) <= EFF_SMEM_MAX,
          "efficient_attn_summary_backward: its 3·D floats of row scratch exceed 48 KiB of "
          "shared memory; use a smaller head size");
    LAUNCH(k_efficient_summary_backward, B * NH, EFF_THREADS, eff_smem(3, D), dk, dv, dctx, ctx,
           k, v, key_len, NH, Tk, D, Dv);
}

void cuda_register_efficient(Backend *be) {
    be->efficient_attn_forward = cu_efficient_attn_forward;
    be->efficient_attn_backward = cu_efficient_attn_backward;
    be->efficient_attn_workspace = cu_efficient_attn_workspace;
    be->efficient_attn_summary = cu_efficient_attn_summary;
    be->efficient_attn_read = cu_efficient_attn_read;
    be->efficient_attn_read_backward = cu_efficient_attn_read_backward;
    be->efficient_attn_summary_backward = cu_efficient_attn_summary_backward;
}
