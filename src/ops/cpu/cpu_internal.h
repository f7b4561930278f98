/* ops/cpu/cpu_internal.h — private to src/ops/cpu: what the CPU backend's files share. Each op
 * family (ops.h's OP_FAMILIES) is one file, <family>.c, whose op functions are static and whose
 * cpu_register_<family>, declared here from OP_FAMILIES, sets its fields of the table;
 * backend_cpu.c holds the memory functions and calls the registrations. Also here: the helpers
 * more than one file uses (the vectorisable exp, σ and tanh, the additive score, the attention
 * ops' dot product, axpy and key count) and the two ops that matmul.c's matmul_bias_forward
 * reuses. Semantics, shapes, errors (none: shapes are the caller's contract) and sources of the
 * ops are documented once, on the table in ops/ops.h. */
#ifndef TRAINER_CPU_INTERNAL_H
#define TRAINER_CPU_INTERNAL_H
#include <stdint.h>

#include "ops/cpu/cpu.h"
#include "ops/ops.h"

/* e^x with no branch and no call, so that the loops using it vectorise (glibc's expf does not
 * without -ffast-math): Cody–Waite reduction x = n ln 2 + r, |r| ≤ ln 2 / 2, then Cephes' expf
 * polynomial for e^r, times 2^n built from its bits. n = round(x / ln 2) is read off the low
 * mantissa bits of 1.5·2^23 + x / ln 2 (no float-to-int conversion). Relative error against exp
 * in double over [−87, 1]: at most 8.6e-8 (about 1 ulp). Returns 0 below −87
 * (and for −∞), where expf gives < 1.7e-38; NaN gives NaN. The callers pass x ≲ 0 (a score
 * minus its row's maximum or log-sum-exp): flash and efficient attention, the softmax
 * cross-entropy. */
static inline float cpu_expf(float x) {
    const float xc = x < -87.0f ? -87.0f : (x > 88.0f ? 88.0f : x);
    union {
        float f;
        uint32_t i;
    } t = {xc * 1.44269504088896341f + 12582912.0f}; /* 12582912 = 1.5·2^23 = 0x4B400000 */
    const float n = t.f - 12582912.0f;
    float r = xc - n * 0.693359375f; /* ln 2 = 0.693359375 − 2.12194440e-4, the first exact */
    r = r - n * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f; /* e^r */
    const uint32_t n_i = t.i - 0x4B400000u; /* n, in [−126, 127] */
    union {
        uint32_t i;
        float f;
    } two_n = {((n_i + 127u) << 23) & -(uint32_t) !(x < -87.0f)}; /* 2^n, or 0 below −87 */
    return p * two_n.f;
}

/* σ(x) = 1 / (1 + e^−x) through cpu_expf (vectorises; 1 for x > 87, about 6e-39 below −88).
 * Relative error ≤ 1.5e-7 against double over every float in [−20, 20]. The LSTM and GRU cells. */
static inline float cpu_sigmoidf(float x) { return 1.0f / (1.0f + cpu_expf(-x)); }

/* tanh x, branch-free so that its loops vectorise (glibc's tanhf is a call): for |x| < 0.4 the
 * odd Taylor series through x¹³ (the next term is below 2e-9 there), else
 * sign(x)·(1 − 2 / (e^{2|x|} + 1)) through cpu_expf (±1 from |x| ≈ 9 on). Relative error
 * ≤ 1.8e-7 against tanh in double over every float in [−20, 20] (glibc's tanhf: 1.7e-7); NaN
 * gives NaN. The LSTM and GRU cells, tanh_forward and the additive score below. */
static inline float cpu_tanhf(float x) {
    const float x2 = x * x;
    float p = 21844.0f / 6081075.0f;
    p = p * x2 - 1382.0f / 155925.0f;
    p = p * x2 + 62.0f / 2835.0f;
    p = p * x2 - 17.0f / 315.0f;
    p = p * x2 + 2.0f / 15.0f;
    p = p * x2 - 1.0f / 3.0f;
    const float small = x + x * x2 * p;
    const float ax = x < 0.0f ? -x : x;
    const float big = 1.0f - 2.0f / (cpu_expf(2.0f * ax) + 1.0f);
    return ax < 0.4f ? small : (x < 0.0f ? -big : big);
}

/* The additive score e = vᵀ tanh(q + k) over A features (Bahdanau et al. 2015 eq. 6; Luong et
 * al. 2015 eq. 8 "concat"), q, k, v [A], through cpu_tanhf in one `omp simd` reduction (a fixed
 * order: deterministic). attn_additive.c and attn_local.c. */
static inline float cpu_additive_score(const float *q, const float *k, const float *v, int A) {
    float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
    for (int a = 0; a < A; a++) acc += v[a] * cpu_tanhf(q[a] + k[a]);
    return acc;
}

/* The additive score's backward for one (query, key) pair given de = dL/de: with u = tanh(q + k),
 * dq += de·v⊙(1 − u²), dk += the same, dv += de·u (each skipped where NULL); u is recomputed. */
static inline void cpu_additive_score_backward(float *dq, float *dk, float *dv, const float *q,
                                               const float *k, const float *v, float de, int A) {
#pragma omp simd
    for (int a = 0; a < A; a++) {
        const float u = cpu_tanhf(q[a] + k[a]);
        const float du = de * v[a] * (1.0f - u * u);
        if (dq) dq[a] += du;
        if (dk) dk[a] += du;
        if (dv) dv[a] += de * u;
    }
}

/* Sets the fields of family f (ops.h's OP_FAMILIES names them) in *be: one
 * void cpu_register_<f>(Backend *be) per family, defined at the end of <f>.c and called once by
 * backend_cpu.c while it builds the table. No errors. */
#define CPU_REGISTER_DECLARE(f) void cpu_register_##f(Backend *be);
OP_FAMILIES(CPU_REGISTER_DECLARE)
#undef CPU_REGISTER_DECLARE

/* Backend.bias_forward (bias.c) and Backend.bias_relu_dropout_forward (dropout.c), also the
 * second pass of matmul.c's matmul_bias_forward, which must match them bit for bit. */
void cpu_bias_forward(float *out, const float *bias, int N, int C);
void cpu_bias_relu_dropout_forward(float *out, const float *inp, const float *bias, float p,
                                   uint64_t key, int N, int C);

/* Shared by the linear-time attention ops (linear.c, efficient.c, flash.c). */
/* Σ_i a_i b_i in float32; an `omp simd` reduction (a fixed, compile-time order: the result does
 * not depend on the thread count). */
static inline float cpu_dotf(const float *a, const float *b, int n) {
    float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
    for (int i = 0; i < n; i++) acc += a[i] * b[i];
    return acc;
}

/* y += a·x over n floats; an `omp simd` loop (vectorised at -O2 whatever the cost model; the
 * result is element-wise, so it is the same as the scalar loop's). */
static inline void cpu_axpyf(float *y, float a, const float *x, int n) {
#pragma omp simd
    for (int i = 0; i < n; i++) y[i] += a * x[i];
}

/* key_len[b] clipped to [0, Tk] (all Tk keys when key_len is NULL). */
static inline int cpu_key_count(const int *key_len, int b, int Tk) {
    int len = key_len ? key_len[b] : Tk;
    if (len > Tk) len = Tk;
    if (len < 0) len = 0;
    return len;
}

#endif
