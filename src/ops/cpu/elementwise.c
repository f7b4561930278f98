/* elementwise.c — CPU vector ops: axpy, scale, the sum of squares and the finiteness test
 * (gradient clipping, docs/design.md §6), and tanh with its backward. Semantics in ops/ops.h. */
#include <math.h>

#include "ops/cpu/cpu_internal.h"

void cpu_axpy(float *y, float a, const float *x, size_t n) {
#pragma omp parallel for simd if (n > 262144)
    for (size_t i = 0; i < n; i++) y[i] += a * x[i];
}

void cpu_scale(float *x, float a, size_t n) {
#pragma omp parallel for simd if (n > 262144)
    for (size_t i = 0; i < n; i++) x[i] *= a;
}

double cpu_sumsq(const float *x, size_t n) {
    double s = 0;
#pragma omp parallel for simd reduction(+ : s) if (n > 262144)
    for (size_t i = 0; i < n; i++) s += (double)x[i] * x[i];
    return s;
}

int cpu_all_finite(const float *x, size_t n) {
    int ok = 1;
#pragma omp parallel for simd reduction(& : ok) if (n > 262144)
    for (size_t i = 0; i < n; i++) ok &= isfinite(x[i]) ? 1 : 0;
    return ok;
}

void cpu_tanh_forward(float *out, const float *inp, size_t n) {
#pragma omp parallel for simd if (n > 65536)
    for (size_t i = 0; i < n; i++) out[i] = cpu_tanhf(inp[i]);
}

void cpu_tanh_backward(float *dinp, const float *dout, const float *out, size_t n) {
    /* out = tanh(inp)  →  dinp += dout · (1 − out²) */
#pragma omp parallel for if (n > 65536)
    for (size_t i = 0; i < n; i++) dinp[i] += dout[i] * (1.0f - out[i] * out[i]);
}
