/* ops/cuda/shape.cu — the shape ops on the GPU: concat2, transpose01, permute0213, write_step,
 * gather_rows, gather_rows_strided (semantics and shapes: ops/ops.h; kernels: shape.cuh).
 * Each host function launches one element-wise kernel on the default stream (cuda_ew_blocks
 * blocks of CUDA_EW_THREADS threads); an empty tensor launches nothing. Results are exact copies
 * (backward: one float add per element), bit-identical to the CPU backend.
 * Errors: a failed launch aborts (CUDA_CHECK_LAUNCH inside LAUNCH). No workspace. Source: —.
 */
#include "ops/cuda/shape.cuh"
#include "ops/cuda/cuda_internal.h"

static_assert(SHAPE_THREADS == CUDA_EW_THREADS, "shape kernels are element-wise kernels");

/* out[N, Ca+Cb] = [a[N,Ca] | b[N,Cb]]. */
static void cu_concat2_forward(float *out, const float *a, const float *b, int N, int Ca,
                               int Cb) {
    size_t total = (size_t)N * ((size_t)Ca + Cb);
    if (N <= 0 || total == 0) return;
    LAUNCH(k_concat2_forward, cuda_ew_blocks(total), CUDA_EW_THREADS, 0, out, a, b, total, Ca,
           Cb);
}

/* da[N,Ca] += dout[:, :Ca]; db[N,Cb] += dout[:, Ca:] (either may be NULL). */
static void cu_concat2_backward(float *da, float *db, const float *dout, int N, int Ca, int Cb) {
    size_t total = (size_t)N * ((size_t)Ca + Cb);
    if (N <= 0 || total == 0 || (!da && !db)) return;
    LAUNCH(k_concat2_backward, cuda_ew_blocks(total), CUDA_EW_THREADS, 0, da, db, dout, total,
           Ca, Cb);
}

/* out[A,D1,D0,C] = inp[A,D0,D1,C] with axes 1, 2 swapped. */
static void cu_permute0213_forward(float *out, const float *inp, int A, int D0, int D1, int C) {
    size_t total = (size_t)A * D0 * D1 * C;
    if (A <= 0 || D0 <= 0 || D1 <= 0 || C <= 0) return;
    LAUNCH(k_permute0213_forward, cuda_ew_blocks(total), CUDA_EW_THREADS, 0, out, inp, total, D0,
           D1, C);
}

/* dinp[A,D0,D1,C] += dout[A,D1,D0,C] permuted back. */
static void cu_permute0213_backward(float *dinp, const float *dout, int A, int D0, int D1,
                                    int C) {
    size_t total = (size_t)A * D0 * D1 * C;
    if (A <= 0 || D0 <= 0 || D1 <= 0 || C <= 0) return;
    LAUNCH(k_permute0213_backward, cuda_ew_blocks(total), CUDA_EW_THREADS, 0, dinp, dout, total,
           D0, D1, C);
}

/* out[D1,D0,C] = inp[D0,D1,C] transposed in its first two axes: permute0213 with A = 1. */
static void cu_transpose01_forward(float *out, const float *inp, int D0, int D1, int C) {
    cu_permute0213_forward(out, inp, 1, D0, D1, C);
}

/* dinp[D0,D1,C] += dout[D1,D0,C] transposed back. */
static void cu_transpose01_backward(float *dinp, const float *dout, int D0, int D1, int C) {
    cu_permute0213_backward(dinp, dout, 1, D0, D1, C);
}

/* cache[n, t, :] = x[n, :] for n < N; cache [N, Tcap, C]. */
static void cu_write_step(float *cache, const float *x, int N, int Tcap, int t, int C) {
    size_t total = (size_t)N * C;
    if (N <= 0 || C <= 0) return;
    LAUNCH(k_write_step, cuda_ew_blocks(total), CUDA_EW_THREADS, 0, cache, x, total, Tcap, t, C);
}

/* dst[i·stride + c] = src[idx[i]·stride + c] for i < n, c < D <= stride. */
static void cu_gather_rows_strided(float *dst, const float *src, const int *idx, int n, int D,
                                   int stride) {
    size_t total = (size_t)n * D;
    if (n <= 0 || D <= 0) return;
    LAUNCH(k_gather_rows_strided, cuda_ew_blocks(total), CUDA_EW_THREADS, 0, dst, src, idx,
           total, D, stride);
}

/* dst[i, :] = src[idx[i], :] for i < n, rows of D floats. */
static void cu_gather_rows(float *dst, const float *src, const int *idx, int n, int D) {
    cu_gather_rows_strided(dst, src, idx, n, D, D);
}

void cuda_register_shape(Backend *be) {
    be->concat2_forward = cu_concat2_forward;
    be->concat2_backward = cu_concat2_backward;
    be->transpose01_forward = cu_transpose01_forward;
    be->transpose01_backward = cu_transpose01_backward;
    be->permute0213_forward = cu_permute0213_forward;
    be->permute0213_backward = cu_permute0213_backward;
    be->write_step = cu_write_step;
    be->gather_rows = cu_gather_rows;
    be->gather_rows_strided = cu_gather_rows_strided;
}
