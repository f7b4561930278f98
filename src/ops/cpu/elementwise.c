/* elementwise.c — CPU vector ops: axpy, scale, the sum of squares and the finiteness test
 * (gradient clipping, docs/design.md §6), and tanh with its backward. Semantics in ops/ops.h. */
#include <math.h>

#include "ops/cpu/cpu_internal.h"

static void cpu_axpy(float *y, float a, const float *x, size_t n) {
#pragma omp parallel for simd if (n > 262144)
    for (size_t i = 0; i < n; i++) y[i] += a * x[i];
}

static void cpu_scale(float *x, float a, size_t n) {
#pragma omp parallel for simd if (n > 262144)
    for (size_t i = 0; i < n; i++) x[i] *= a;
}

static double cpu_sumsq(const float *x, size_t n) {
    double s = 0;
#pragma omp parallel for simd reduction(+ : s) if (n > 262144)
    for (size_t i = 0; i < n; i++) s += (double)x[i] * x[i];
    return s;
}

static int cpu_all_finite(const float *x, size_t n) {
    int ok = 1;
#pragma omp parallel for simd reduction(& : ok) if (n > 262144)
    for (size_t i = 0; i < n; i++) ok &= isfinite(x[i]) ? 1 : 0;
    return ok;
}

static void cpu_tanh_forward(float *out, const float *inp, size_t n) {
#pragma omp parallel for simd if (n > 65536)
    for (size_t i = 0; i < n; i++) out[i] = cpu_tanhf(inp[i]);
}

static void cpu_tanh_backward(float *dinp, const float *dout, const float *out, size_t n) {
    /* out = tanh(inp)  →  dinp += dout · (1 − out²) */
#pragma omp parallel for if (n > 65536)
    for (size_t i = 0; i < n; i++) dinp[i] += dout[i] * (1.0f - out[i] * out[i]);
}

void cpu_register_elementwise(Backend *be) {
    be->axpy = cpu_axpy;
    be->scale = cpu_scale;
    be->sumsq = cpu_sumsq;
    be->all_finite = cpu_all_finite;
    be->tanh_forward = cpu_tanh_forward;
    be->tanh_backward = cpu_tanh_backward;
}
