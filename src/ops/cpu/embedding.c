/* embedding.c — embedding lookup and its backward (rows summed in order: deterministic).
 * Semantics in ops/ops.h. */
#include <string.h>

#include "ops/cpu/cpu_internal.h"

static void cpu_embedding_forward(float *out, const int *ids, const float *table, int N, int E) {
    for (int n = 0; n < N; n++)
        memcpy(out + (size_t)n * E, table + (size_t)ids[n] * E, sizeof(float) * E);
}

static void cpu_embedding_backward(float *dtable, const float *dout, const int *ids, int N, int E) {
    /* out[n] = table[ids[n]]  →  dtable[ids[n]] += dout[n], rows summed in order */
    for (int n = 0; n < N; n++) {
        float *d = dtable + (size_t)ids[n] * E;
        const float *g = dout + (size_t)n * E;
#pragma omp simd
        for (int e = 0; e < E; e++) d[e] += g[e];
    }
}

void cpu_register_embedding(Backend *be) {
    be->embedding_forward = cpu_embedding_forward;
    be->embedding_backward = cpu_embedding_backward;
}
