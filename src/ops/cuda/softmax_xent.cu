/* ops/cuda/softmax_xent.cu — xent_forward_backward, log_softmax and argmax on the GPU
 * (Szegedy et al. 2016 §7 for the label smoothing; semantics: ops/ops.h; kernels and
 * determinism: softmax_xent.cuh). xent keeps one double per row (the rows' losses) and the sum
 * in a device buffer grown on demand: the one allocation, when N first exceeds its size.
 * Returns the summed loss in nats (synchronises: the value is copied to the host).
 * Errors: a failed launch, allocation or copy aborts (LAUNCH, CUDA_CHECK).
 */
#include "ops/cuda/cuda_internal.h"
#include "ops/cuda/softmax_xent.cuh"

static double *g_rowloss; /* device [g_rowcap + 1]: rows' losses, then their sum */
static size_t g_rowcap;

static double cu_xent_forward_backward(float *dlogits, const float *logits, const int *targets,
                                       int N, int V, float smoothing, int ignore_id,
                                       float grad_scale) {
    if (N <= 0 || V <= 0) return 0.0;
    if ((size_t)N > g_rowcap) {
        if (g_rowloss) CUDA_CHECK(cudaFree(g_rowloss));
        CUDA_CHECK(cudaMalloc((void **)&g_rowloss, ((size_t)N + 1) * sizeof(double)));
        g_rowcap = (size_t)N;
    }
    LAUNCH(k_xent_rows, N, SX_THREADS, 0, dlogits, g_rowloss, logits, targets, V, smoothing,
           ignore_id, grad_scale);
    LAUNCH(k_sum_rows, 1, SX_THREADS, 0, g_rowloss + N, g_rowloss, N);
    double total = 0.0;
    CUDA_CHECK(cudaMemcpy(&total, g_rowloss + N, sizeof total, cudaMemcpyDeviceToHost));
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
    be->log_softmax = cu_log_softmax;
    be->argmax = cu_argmax;
}
