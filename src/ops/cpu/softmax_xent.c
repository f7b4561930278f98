/* softmax_xent.c — fused log-softmax + cross-entropy with label smoothing (Szegedy et al. 2016
 * §7), log-softmax and argmax for decoding. Semantics in ops/ops.h. */
#include <math.h>
#include <string.h>

#include "ops/cpu/cpu_internal.h"

/* No workspace: the rows' losses are summed by the OpenMP reduction (work is unused). */
static size_t cpu_xent_workspace(int N, int V) {
    (void)N, (void)V;
    return 0;
}

/* Per row: the maximum, Σ exp(x − max) and Σ x in `omp simd` loops (cpu_expf; the sums in
 * double), then the gradient softmax − smoothed target in one vectorised pass. */
static double cpu_xent_forward_backward(float *dlogits, const float *logits, const int *targets,
                                        int N, int V, float smoothing, int ignore_id,
                                        float grad_scale, float *work) {
    (void)work;
    double total = 0;
    float conf = 1.0f - smoothing, uni = smoothing / (float)V;
#pragma omp parallel for reduction(+ : total) schedule(static)
    for (int n = 0; n < N; n++) {
        if (targets[n] == ignore_id) {
            if (dlogits) memset(dlogits + (size_t)n * V, 0, sizeof(float) * V);
            continue;
        }
        const float *x = logits + (size_t)n * V;
        float mx = -INFINITY;
#pragma omp simd reduction(max : mx)
        for (int v = 0; v < V; v++) mx = x[v] > mx ? x[v] : mx;
        double z = 0, sumx = 0;
#pragma omp simd reduction(+ : z, sumx)
        for (int v = 0; v < V; v++) {
            z += (double)cpu_expf(x[v] - mx);
            sumx += (double)x[v];
        }
        double lse = mx + log(z); /* log Σ exp x */
        /* loss = −(1−ε) log p_y − (ε/V) Σ_v log p_v, log p_v = x_v − lse */
        total += -(double)conf * (x[targets[n]] - lse) - (double)uni * (sumx - (double)V * lse);
        if (dlogits) {
            float *g = dlogits + (size_t)n * V;
            float inv = (float)(1.0 / z), a = grad_scale * inv, c = grad_scale * uni;
#pragma omp simd
            for (int v = 0; v < V; v++) g[v] = a * cpu_expf(x[v] - mx) - c;
            g[targets[n]] -= grad_scale * conf;
        }
    }
    return total;
}

static void cpu_log_softmax(float *out, const float *logits, int N, int V) {
#pragma omp parallel for if ((long)N * V > 65536)
    for (int n = 0; n < N; n++) {
        const float *x = logits + (size_t)n * V;
        float mx = -INFINITY;
#pragma omp simd reduction(max : mx)
        for (int v = 0; v < V; v++) mx = x[v] > mx ? x[v] : mx;
        double z = 0;
#pragma omp simd reduction(+ : z)
        for (int v = 0; v < V; v++) z += (double)cpu_expf(x[v] - mx);
        float lse = mx + (float)log(z);
#pragma omp simd
        for (int v = 0; v < V; v++) out[(size_t)n * V + v] = x[v] - lse;
    }
}

static void cpu_argmax(int *ids, const float *x, int N, int V) {
#pragma omp parallel for if ((long)N * V > 65536)
    for (int n = 0; n < N; n++) { /* the largest value (a vectorised max), then its first index */
        const float *r = x + (size_t)n * V;
        float mx = r[0];
        for (int v = 1; v < V; v++) mx = r[v] > mx ? r[v] : mx;
        int best = 0;
        while (best < V && !(r[best] == mx)) best++;
        ids[n] = best < V ? best : 0; /* a row of NaN: 0 */
    }
}

void cpu_register_softmax_xent(Backend *be) {
    be->xent_workspace = cpu_xent_workspace;
    be->xent_forward_backward = cpu_xent_forward_backward;
    be->log_softmax = cpu_log_softmax;
    be->argmax = cpu_argmax;
}
