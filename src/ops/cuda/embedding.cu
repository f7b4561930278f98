/* ops/cuda/embedding.cu — embedding_forward and embedding_backward on the GPU (semantics:
 * ops/ops.h; kernels and the determinism argument: embedding.cuh). Shapes: ids[N] (int32, device
 * memory, each in [0, V)), table/dtable [V,E], out/dout [N,E]. The backward uses no atomics and
 * equals the CPU's in-order sum bit for bit. Errors: a failed launch aborts (LAUNCH). No
 * workspace. Source: Vaswani et al. 2017 §3.4 (the √E scale is the caller's).
 */
#include "ops/cuda/embedding.cuh"
#include "ops/cuda/cuda_internal.h"

static_assert(EMB_THREADS == CUDA_EW_THREADS, "embedding_forward is an element-wise kernel");

/* out[N,E] = table[ids[n], :]. */
static void cu_embedding_forward(float *out, const int *ids, const float *table, int N, int E) {
    if (N <= 0 || E <= 0) return;
    size_t total = (size_t)N * E;
    LAUNCH(k_embedding_forward, cuda_ew_blocks(total), CUDA_EW_THREADS, 0, out, ids, table, total,
           E);
}

/* Id groups of the backward for N tokens: a power of two near N / 8 (about 8 tokens, a quarter
 * of a ballot, per group), from EMB_TY (one block row) to EMB_GROUPS (N > 2,048; an 8192-token
 * batch has N of about 4,100). Beyond the tokens, more groups only add warps that find nothing
 * (in the emulated build, 32 fibers each). */
static unsigned emb_groups(int N) {
    unsigned g = EMB_TY;
    while (g < (unsigned)EMB_GROUPS && g * 8u < (unsigned)N) g <<= 1;
    return g;
}

/* dtable[ids[n], :] += dout[n, :], rows summed in order n = 0..N-1. */
static void cu_embedding_backward(float *dtable, const float *dout, const int *ids, int N,
                                  int E) {
    if (N <= 0 || E <= 0) return;
    dim3 grid((unsigned)((E + EMB_TX - 1) / EMB_TX), emb_groups(N) / EMB_TY);
    dim3 block(EMB_TX, EMB_TY);
    LAUNCH(k_embedding_backward, grid, block, 0, dtable, dout, ids, N, E);
}

void cuda_register_embedding(Backend *be) {
    be->embedding_forward = cu_embedding_forward;
    be->embedding_backward = cu_embedding_backward;
}
