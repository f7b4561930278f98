/* adam.c — the Adam update (Kingma & Ba 2015, Algorithm 1, bias-corrected) over one flat
 * parameter buffer. Semantics in ops/ops.h. */
#include <math.h>

#include "ops/cpu/cpu_internal.h"

static void cpu_adam_update(float *param, const float *grad, float *m, float *v, size_t n, float lr,
                            float b1, float b2, float eps, int t) {
    float c1 = 1.0f / (1.0f - powf(b1, (float)t));
    float c2 = 1.0f / (1.0f - powf(b2, (float)t));
#pragma omp parallel for simd if (n > 65536)
    for (size_t i = 0; i < n; i++) {
        float g = grad[i];
        m[i] = b1 * m[i] + (1.0f - b1) * g;
        v[i] = b2 * v[i] + (1.0f - b2) * g * g;
        param[i] -= lr * (m[i] * c1) / (sqrtf(v[i] * c2) + eps);
    }
}

void cpu_register_adam(Backend *be) { be->adam_update = cpu_adam_update; }
