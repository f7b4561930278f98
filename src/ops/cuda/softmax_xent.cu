/* ops/cuda/softmax_xent.cu — xent_forward_backward, xent_workspace, log_softmax and argmax on the
 * GPU (Szegedy et al. 2016 §7 for the label smoothing; semantics: ops/ops.h; kernels and
 * determinism: softmax_xent.cuh). xent keeps one double per row (the rows' losses) and their sum
 * in the caller's work (xent_workspace(N, V) floats: N + 1 doubles and one float of alignment);
 * nothing is allocated. Returns the summed loss in nats (synchronises: the value is copied to the
 * host). Errors: a NULL work aborts (CHECK); a failed launch or copy aborts (LAUNCH,
 * CUDA_CHECK).
 */
#include <stdint.h>

#include "ops/cuda/cuda_internal.h"
#include "ops/cuda/softmax_xent.cuh"

/* N + 1 doubles (the rows' losses, then their sum) and one float, so that the doubles can start
 * at the first 8-byte boundary of work (backend memory is float-aligned at least). */
static size_t cu_xent_workspace(int N, int V) {
    if (N <= 0 || V <= 0) return 0;
    return 2 * ((size_t)N + 1) + 1;
}

static double cu_xent_forward_backward(float *dlogits, const float *logits, const int *targets,
                                       int N, int V, float smoothing, int ignore_id,
                                       float grad_scale, float *work) {
    if (N <= 0 || V <= 0) return 0.0;
    CHECK(work != NULL, "xent_forward_backward: work is NULL; pass xent_workspace(N, V) floats "
                        "of backend memory (reserved once by the caller)");
    double *rowloss = (double *)(((uintptr_t)work + 7) & ~(uintptr_t)7); /* [N + 1] */
    LAUNCH(k_xent_rows, N, SX_THREADS, 0, dlogits, rowloss, logits, targets, V, smoothing,
           ignore_id, grad_scale);
    LAUNCH(k_sum_rows, 1, SX_THREADS, 0, rowloss + N, rowloss, N);
    double total = 0.0;
    CUDA_CHECK(cudaMemcpy(&total, rowloss + N, sizeof total, cudaMemcpyDeviceToHost));
    return total;
}

static void cu_log_softmax(float *out, const float *logits, int N, int V) {
    if (N <= 0 || V <= 0) return;
    LAUNCH(k_log_softmax, N, SX_THREADS, 0, out, logits, V);
}

static void cu_argmax(int *ids, const float *x, int N, int V) {
    if (N <= 0 || V <= 0) return;
    LAUNCH(k_argmax, N, SX_THREADS, 0, ids, x, V);
}

void cuda_register_softmax_xent(Backend *be) {
    be->xent_forward_backward = cu_xent_forward_backward;
    be->xent_workspace = cu_xent_workspace;
    be->log_softmax = cu_log_softmax;
    be->argmax = cu_argmax;
}
