/* ops/cuda/dropout.cu — dropout_forward/backward, bias_relu_dropout_forward and
 * relu_dropout_backward on the GPU (semantics: ops/ops.h; kernels and the mask rule:
 * dropout.cuh). The keep value 1/(1-p) is computed here, on the host, exactly as the CPU backend
 * computes it, so masks and outputs equal the CPU's bit for bit. One element-wise launch per op
 * on the default stream; n = 0 launches nothing. Errors: a failed launch aborts (LAUNCH).
 * No workspace. Source: Srivastava et al. 2014 (inverted dropout); Vaswani et al. 2017 eq. 2.
 */
#include "ops/cuda/dropout.cuh"
#include "ops/cuda/cuda_internal.h"

static_assert(DROPOUT_THREADS == CUDA_EW_THREADS, "dropout kernels are element-wise kernels");

/* The kept elements' value, as ops/cpu/dropout.c: 1/(1-p) for p > 0, else 1. */
static float keep_scale_of(float p) { return p > 0 ? 1.0f / (1.0f - p) : 1.0f; }

/* out, mask, inp [n]: mask from rng_hash(key, i); out = inp · mask. */
static void cu_dropout_forward(float *out, float *mask, const float *inp, float p, uint64_t key,
                               size_t n) {
    if (!n) return;
    LAUNCH(k_dropout_forward, cuda_ew_blocks(n), CUDA_EW_THREADS, 0, out, mask, inp, p,
           keep_scale_of(p), key, n);
}

/* dinp[n] += dout · mask. */
static void cu_dropout_backward(float *dinp, const float *dout, const float *mask, size_t n) {
    if (!n) return;
    LAUNCH(k_dropout_backward, cuda_ew_blocks(n), CUDA_EW_THREADS, 0, dinp, dout, mask, n);
}

/* out[N,C] = max(inp + bias[C], 0) · mask (out may equal inp). */
static void cu_bias_relu_dropout_forward(float *out, const float *inp, const float *bias,
                                         float p, uint64_t key, int N, int C) {
    if (N <= 0 || C <= 0) return;
    size_t total = (size_t)N * C;
    LAUNCH(k_bias_relu_dropout_forward, cuda_ew_blocks(total), CUDA_EW_THREADS, 0, out, inp,
           bias, p, keep_scale_of(p), key, total, C);
}

/* dinp[n] = [out > 0] · dout / (1-p), overwritten. */
static void cu_relu_dropout_backward(float *dinp, const float *dout, const float *out, float p,
                                     size_t n) {
    if (!n) return;
    LAUNCH(k_relu_dropout_backward, cuda_ew_blocks(n), CUDA_EW_THREADS, 0, dinp, dout, out,
           keep_scale_of(p), n);
}

void cuda_register_dropout(Backend *be) {
    be->dropout_forward = cu_dropout_forward;
    be->dropout_backward = cu_dropout_backward;
    be->bias_relu_dropout_forward = cu_bias_relu_dropout_forward;
    be->relu_dropout_backward = cu_relu_dropout_backward;
}
