/* ops/cuda/elementwise.cu — the element-wise family on the GPU: axpy, scale, sumsq, all_finite,
 * tanh_forward, tanh_backward (kernels in elementwise.cuh). Semantics and shapes: ops.h; the CPU
 * twin: ops/cpu/elementwise.c. sumsq and all_finite synchronise (they return a host value) and
 * are deterministic two-pass reductions (see elementwise.cuh) whose fixed-size partials are
 * allocated once, when the backend is built. Errors: a failed CUDA call or launch aborts
 * (CUDA_CHECK).
 */
#include "ops/cuda/elementwise.cuh"

/* Reduction scratch (device) of a fixed size, allocated once with the backend's own alloc when
 * the table is built (cuda_register_elementwise, from backend_cuda()) and kept: the ops
 * themselves never allocate (docs/design.md §2). */
static double *g_sum_partials; /* [RED_BLOCKS + 1]: pass-1 partials, then the total */
static int *g_bad_partials;    /* [RED_BLOCKS + 1]: pass-1 0/1 per block, then the verdict */

/* y[n] += a * x[n]. */
static void cu_axpy(float *y, float a, const float *x, size_t n) {
    if (!n) return;
    LAUNCH(k_axpy, cuda_ew_blocks(n), CUDA_EW_THREADS, 0, y, a, x, n);
}

/* x[n] *= a. */
static void cu_scale(float *x, float a, size_t n) {
    if (!n) return;
    LAUNCH(k_scale, cuda_ew_blocks(n), CUDA_EW_THREADS, 0, x, a, n);
}

/* out[n] = tanh(inp[n]). */
static void cu_tanh_forward(float *out, const float *inp, size_t n) {
    if (!n) return;
    LAUNCH(k_tanh_forward, cuda_ew_blocks(n), CUDA_EW_THREADS, 0, out, inp, n);
}

/* dinp[n] += dout[n] * (1 - out[n]^2). */
static void cu_tanh_backward(float *dinp, const float *dout, const float *out, size_t n) {
    if (!n) return;
    LAUNCH(k_tanh_backward, cuda_ew_blocks(n), CUDA_EW_THREADS, 0, dinp, dout, out, n);
}

/* Returns sum x[n]^2, squares and sums in double, fixed order. Synchronises. */
static double cu_sumsq(const float *x, size_t n) {
    if (!n) return 0.0;
    LAUNCH(k_sumsq_partial, RED_BLOCKS, RED_THREADS, 0, g_sum_partials, x, n);
    LAUNCH(k_sum_partials, 1, RED_THREADS, 0, g_sum_partials + RED_BLOCKS, g_sum_partials,
           RED_BLOCKS);
    double r = 0.0;
    CUDA_CHECK(cudaMemcpy(&r, g_sum_partials + RED_BLOCKS, sizeof r, cudaMemcpyDeviceToHost));
    return r;
}

/* Returns 1 if every x[i], i < n, is finite (n = 0: 1). Synchronises. */
static int cu_all_finite(const float *x, size_t n) {
    if (!n) return 1;
    LAUNCH(k_nonfinite_partial, RED_BLOCKS, RED_THREADS, 0, g_bad_partials, x, n);
    LAUNCH(k_all_zero, 1, RED_THREADS, 0, g_bad_partials + RED_BLOCKS, g_bad_partials,
           RED_BLOCKS);
    int r = 0;
    CUDA_CHECK(cudaMemcpy(&r, g_bad_partials + RED_BLOCKS, sizeof r, cudaMemcpyDeviceToHost));
    return r;
}

void cuda_register_elementwise(Backend *be) {
    if (!g_sum_partials) { /* be->alloc is set before the families register (backend_cuda.cu) */
        g_sum_partials = (double *)be->alloc((RED_BLOCKS + 1) * sizeof(double));
        g_bad_partials = (int *)be->alloc((RED_BLOCKS + 1) * sizeof(int));
    }
    be->axpy = cu_axpy;
    be->scale = cu_scale;
    be->sumsq = cu_sumsq;
    be->all_finite = cu_all_finite;
    be->tanh_forward = cu_tanh_forward;
    be->tanh_backward = cu_tanh_backward;
}
