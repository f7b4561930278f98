/* ops/cuda/attn_additive.cu — additive_attn_forward and additive_attn_backward on the GPU
 * (Bahdanau et al. 2015 eq. 6; semantics: ops/ops.h; kernels and determinism:
 * attn_additive.cuh). The op has no workspace argument, so the backward's scratch (dE
 * [B·NH,Tq,Tk] and the rows' shares of dv [B·NH,A]) is a device buffer grown on demand: an
 * allocation only when a batch shape first exceeds it. Errors: a failed launch or allocation
 * aborts (LAUNCH, CUDA_CHECK).
 */
#include "ops/cuda/attn_additive.cuh"
#include "ops/cuda/cuda_internal.h"

static float *g_scratch; /* device, grown on demand */
static size_t g_scratch_floats;

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
                                      int B, int NH, int Tq, int Tk, int A, int Dv) {
    int R = B * NH;
    if ((!dqp && !dkp && !dv && !dvalues) || R <= 0 || Tq <= 0 || Tk <= 0) return;
    size_t need = (size_t)R * Tq * Tk + (size_t)R * A + 1;
    if (need > g_scratch_floats) {
        if (g_scratch) CUDA_CHECK(cudaFree(g_scratch));
        CUDA_CHECK(cudaMalloc((void **)&g_scratch, need * sizeof(float)));
        g_scratch_floats = need;
    }
    float *dE = g_scratch, *dvpart = g_scratch + (size_t)R * Tq * Tk;
    if (dqp || dkp || dv) {
        dim3 grid((unsigned)Tq, (unsigned)R);
        LAUNCH(k_additive_backward_scores, grid, ADD_THREADS, 0, dE, dout, values, weights, Tq, Tk,
               Dv);
    }
    LAUNCH(k_additive_backward_inputs, R, ADD_THREADS, 0, dqp, dkp, dv ? dvpart : NULL, dvalues,
           dE, dout, qp, kp, v, weights, NH, Tq, Tk, A, Dv);
    if (dv) LAUNCH(k_additive_backward_v, NH, ADD_THREADS, 0, dv, dvpart, B, NH, A);
}

void cuda_register_attn_additive(Backend *be) {
    be->additive_attn_forward = cu_additive_attn_forward;
    be->additive_attn_backward = cu_additive_attn_backward;
}
