/* test_precision_cpu.c — train.precision on the CPU: the bfloat16 rounding itself
 * (nearest, ties to even, NaN and infinity; one call over 200,003 floats, the blocked and
 * multithreaded way, bit for bit against the rule), the bf16 products of the CPU backend against a
 * double-precision product of the rounded inputs (every transpose, alpha, beta), that they are
 * not the fp32 products, that keeping an operand's rounding across products (matmul_run,
 * matmul_hold, matmul_keep) changes no bit and lasts as long as each says, and the refusals
 * (tf32 on the cpu: config_validate; bf16 where the build cannot: backend_open, while the
 * config validates on every machine). The products run where backend_cpu_bf16_supported() says
 * yes (a build with oneDNN): natively on an AVX512_BF16 CPU, else emulated, on sgemm with the
 * portable rounding, which the backend must then name; without oneDNN the rounding and the
 * refusal are checked, and the test exits 77 (skipped: the products were not) unless one of
 * those checks failed (exit 1). CTest's test_precision_cpu_no_bf16 runs it with
 * TRAINER_CPU_BF16=off (ops.h), as on a CPU without AVX512_BF16.
 *   test_precision_cpu --products   the rounding and the products only (not the refusals);
 *     CTest runs it with TRAINER_CPU_BF16_GEMM=onednn and =sgemm, both ways of the bf16 products
 *     (ops/cpu/matmul.c), which must then be the ones the backend names; =onednn exits 77 where
 *     the CPU has no AVX512_BF16 (oneDNN's bf16 matmul has no kernel there; the products ran
 *     on sgemm and were checked).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/cpu/cpu.h"
#include "ops/ops.h"
#include "testutil.h"
#include "train/config.h"

static float bits_f(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static void test_rounding(void) {
    /* value bits -> expected bf16 bits */
    static const uint32_t cases[][2] = {
        {0x3F800000u, 0x3F80u}, /* 1 */
        {0x3F808000u, 0x3F80u}, /* 1 + 2^-8: a tie, to even (down) */
        {0x3F818000u, 0x3F82u}, /* 1 + 3·2^-8: a tie, to even (up) */
        {0x3F808001u, 0x3F81u}, /* just above the tie: up */
        {0x3F807FFFu, 0x3F80u}, /* just below: down */
        {0xBF80C000u, 0xBF81u}, /* negative: magnitude rounds */
        {0x7F800000u, 0x7F80u}, /* +inf */
        {0xFF800000u, 0xFF80u}, /* -inf */
        {0x7F7FFFFFu, 0x7F80u}, /* the largest float rounds to inf, as IEEE nearest does */
        {0x00000001u, 0x0000u}, /* the smallest subnormal: to +0 */
        {0x80000000u, 0x8000u}, /* -0 */
    };
    int n = (int)(sizeof cases / sizeof cases[0]);
    for (int i = 0; i < n; i++) {
        float f = bits_f(cases[i][0]);
        uint16_t b;
        backend_cpu_round_bf16(&b, &f, 1);
        EXPECT(b == cases[i][1], "bf16(%08x) = %04x, expected %04x", cases[i][0], b, cases[i][1]);
    }
    /* NaN stays NaN, also one whose payload sits only in the low 16 bits */
    float nans[2] = {bits_f(0x7FC00000u), bits_f(0x7F800001u)};
    uint16_t b[2];
    backend_cpu_round_bf16(b, nans, 2);
    for (int i = 0; i < 2; i++)
        EXPECT((b[i] & 0x7F80u) == 0x7F80u && (b[i] & 0x7Fu) != 0, "NaN %d -> %04x", i, b[i]);
    /* relative error of the rounding ≤ 2^-8, the unit roundoff of 8 significant bits */
    Rng rng;
    rng_seed(&rng, 7, 1);
    double worst = 0;
    for (int i = 0; i < 100000; i++) {
        float f = (rng_uniform(&rng) - 0.5f) * 1e3f;
        uint16_t h;
        backend_cpu_round_bf16(&h, &f, 1);
        float g = bits_f((uint32_t)h << 16);
        if (f != 0) worst = fmax(worst, fabs((double)g - f) / fabs(f));
    }
    EXPECT(worst <= 1.0 / 256 && worst > 1.0 / 512, "worst relative rounding error %.3g", worst);

    /* One call over many elements: the blocked, multithreaded way (AVX512_BF16 or the portable
     * loop) against the rule itself, bit for bit, over a tail that is not a whole block. Random
     * bit patterns of normal floats, one in 7 made an exact tie (low 16 bits 0x8000). */
    enum { BULK = 200003 };
    float *src = malloc(sizeof(float) * BULK);
    uint16_t *got = malloc(sizeof(uint16_t) * BULK);
    EXPECT(src && got, "out of memory");
    if (!src || !got) return;
    for (int i = 0; i < BULK; i++) {
        uint32_t u = rng_u32(&rng);
        const uint32_t exponent = 1u + rng_u32(&rng) % 254u; /* normal: 1 … 254 */
        u = (u & 0x807FFFFFu) | (exponent << 23);
        if (i % 7 == 0) u = (u & 0xFFFF0000u) | 0x8000u;
        src[i] = bits_f(u);
    }
    backend_cpu_round_bf16(got, src, BULK);
    int wrong = 0, first = 0;
    uint32_t first_bits = 0;
    for (int i = 0; i < BULK; i++) {
        uint32_t u;
        memcpy(&u, &src[i], sizeof u);
        const uint16_t want = (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
        if (got[i] != want && wrong++ == 0) first = i, first_bits = u;
    }
    EXPECT(wrong == 0,
           "bulk rounding of %d floats: %d differ from nearest-even, the first at %d (%08x -> %04x)",
           BULK, wrong, first, first_bits, got[first]);
    free(src);
    free(got);
}

static float bf(float x) {
    uint16_t h;
    backend_cpu_round_bf16(&h, &x, 1);
    return bits_f((uint32_t)h << 16);
}

/* C = alpha op(A) op(B) + beta C at precision bf16, against double sums of the rounded inputs
 * (the only rounding left is fp32 accumulation: ≤ 1e-5 of Σ|a||b|), and unlike fp32's. */
static void test_products(int emulated) {
    const Backend *be = backend_cpu();
    static const int shapes[][3] = {{7, 5, 3}, {64, 48, 96}, {130, 257, 200}, {1, 300, 17}};
    Rng rng;
    rng_seed(&rng, 11, 2);
    double max_fp32_diff = 0;
    int ncases = 0;
    for (int s = 0; s < 4; s++)
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++)
                for (int ab = 0; ab < 3; ab++) {
                    const int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
                    const float alpha = ab == 2 ? 0.5f : 1.0f, beta = ab == 0 ? 0.0f : 1.0f;
                    float *A = malloc(sizeof(float) * M * K), *B = malloc(sizeof(float) * K * N);
                    float *C = malloc(sizeof(float) * M * N), *C0 = malloc(sizeof(float) * M * N);
                    float *C32 = malloc(sizeof(float) * M * N);
                    for (int i = 0; i < M * K; i++) A[i] = rng_uniform(&rng) * 2 - 1;
                    for (int i = 0; i < K * N; i++) B[i] = rng_uniform(&rng) * 2 - 1;
                    for (int i = 0; i < M * N; i++) C0[i] = rng_uniform(&rng) * 2 - 1;
                    memcpy(C, C0, sizeof(float) * M * N);
                    memcpy(C32, C0, sizeof(float) * M * N);
                    backend_cpu_set_precision(BACKEND_PRECISION_BF16);
                    be->matmul(C, A, B, M, N, K, ta, tb, alpha, beta);
                    backend_cpu_set_precision(BACKEND_PRECISION_FP32);
                    be->matmul(C32, A, B, M, N, K, ta, tb, alpha, beta);
                    /* the inputs rounded once, for the reference */
                    float *Ar = malloc(sizeof(float) * M * K), *Br = malloc(sizeof(float) * K * N);
                    for (int i = 0; i < M * K; i++) Ar[i] = bf(A[i]);
                    for (int i = 0; i < K * N; i++) Br[i] = bf(B[i]);
                    double worst = 0;
                    for (int m = 0; m < M; m++)
                        for (int n = 0; n < N; n++) {
                            double sum = 0, mag = 0;
                            for (int k = 0; k < K; k++) {
                                size_t ia = ta ? (size_t)k * M + m : (size_t)m * K + k;
                                size_t ib = tb ? (size_t)n * K + k : (size_t)k * N + n;
                                sum += (double)Ar[ia] * Br[ib];
                                mag += fabs((double)A[ia] * B[ib]);
                            }
                            double ref = alpha * sum + beta * C0[(size_t)m * N + n];
                            double err = fabs(C[(size_t)m * N + n] - ref) /
                                         (fabs(alpha) * mag + fabs(beta * C0[(size_t)m * N + n]) + 1e-30);
                            worst = fmax(worst, err);
                            max_fp32_diff = fmax(max_fp32_diff,
                                                 fabs(C[(size_t)m * N + n] - C32[(size_t)m * N + n]));
                        }
                    EXPECT(worst <= 1e-5, "bf16 %dx%dx%d ta %d tb %d alpha %g beta %g: relative "
                           "error %.3g against the rounded inputs' product", M, N, K, ta, tb,
                           alpha, beta, worst);
                    ncases++;
                    free(A), free(B), free(Ar), free(Br), free(C), free(C0), free(C32);
                }
    /* the inputs were rounded: somewhere the product differs from fp32's by more than fp32
     * summation order could (inputs in [-1, 1], K up to 257: bf16 errors ~1e-2) */
    EXPECT(max_fp32_diff > 1e-3, "bf16 products equal fp32's (largest difference %.3g)",
           max_fp32_diff);
    backend_cpu_set_precision(BACKEND_PRECISION_BF16);
    const char *name = backend_cpu_gemm_name(), *path = getenv("TRAINER_CPU_BF16_GEMM");
    backend_cpu_set_precision(BACKEND_PRECISION_FP32);
    EXPECT(!path || strcmp(path, "sgemm") != 0 || strstr(name, "sgemm on bf16-rounded inputs"),
           "TRAINER_CPU_BF16_GEMM=sgemm, but the bf16 products ran on %s", name);
    EXPECT(emulated || !path || strcmp(path, "onednn") != 0 || strstr(name, "onednn matmul"),
           "TRAINER_CPU_BF16_GEMM=onednn, but the bf16 products ran on %s", name);
    EXPECT(!emulated || strstr(name, "sgemm on bf16-rounded inputs"),
           "bf16 emulated (no AVX512_BF16), but the bf16 products ran on %s", name);
    printf("bf16 products: %d cases within 1e-5 of the rounded inputs' product; largest "
           "difference from fp32 %.3g; matmul at bf16: %s\n", ncases, max_fp32_diff, name);
}

/* matmul_bias_forward at bf16 against the bf16 matmul, then the bias row and ReLU in fp32. */
static void test_bias_forward(void) {
    const Backend *be = backend_cpu();
    const int N = 37, C = 300, K = 65;
    Rng rng;
    rng_seed(&rng, 5, 3);
    float *x = malloc(sizeof(float) * N * K), *w = malloc(sizeof(float) * C * K);
    float *bias = malloc(sizeof(float) * C), *y = malloc(sizeof(float) * N * C);
    float *ref = malloc(sizeof(float) * N * C);
    for (int i = 0; i < N * K; i++) x[i] = rng_uniform(&rng) * 2 - 1;
    for (int i = 0; i < C * K; i++) w[i] = rng_uniform(&rng) * 2 - 1;
    for (int i = 0; i < C; i++) bias[i] = rng_uniform(&rng) * 4 - 2;
    backend_cpu_set_precision(BACKEND_PRECISION_BF16);
    for (int relu = 0; relu < 2; relu++) {
        for (int i = 0; i < N * C; i++) y[i] = 1e9f; /* overwritten, never read */
        be->matmul_bias_forward(y, x, w, bias, N, C, K, relu);
        be->matmul(ref, x, w, N, C, K, 0, 1, 1.0f, 0.0f);
        double worst = 0;
        int zeros = 0;
        for (int n = 0; n < N; n++)
            for (int c = 0; c < C; c++) {
                float r = ref[(size_t)n * C + c] + bias[c];
                if (relu && r < 0) r = 0;
                float v = y[(size_t)n * C + c];
                zeros += v == 0.0f;
                worst = fmax(worst, fabs((double)v - r) / (fabs(r) + 1e-3));
            }
        EXPECT(worst <= 1e-5, "bf16 matmul_bias_forward relu %d: relative difference %.3g from "
               "matmul + bias", relu, worst);
        EXPECT(relu ? zeros > N * C / 10 : zeros == 0, "relu %d: %d zeros of %d", relu, zeros,
               N * C);
    }
    backend_cpu_set_precision(BACKEND_PRECISION_FP32);
    free(x), free(w), free(bias), free(y), free(ref);
}

static float *urand(Rng *rng, size_t n) {
    float *x = malloc(sizeof(float) * n);
    for (size_t i = 0; i < n; i++) x[i] = rng_uniform(rng) * 2 - 1;
    return x;
}

static int same_bits(const float *a, const float *b, size_t n) {
    return memcmp(a, b, sizeof(float) * n) == 0;
}

/* Backend.matmul_run, matmul_hold and matmul_keep at bf16: an operand's rounding kept for the
 * later products of a run, or of a hold, gives the bits of the same products outside; an
 * operand that a product of the run overwrote in part is rounded again; more operands than the
 * run keeps; a kept activation is rounded once a hold, and only inside one. */
static void test_reuse(void) {
    const Backend *be = backend_cpu();
    enum { M = 40, K = 72, N = 56, SLOT = K * N }; /* SLOT: one product's output, at most */
    Rng rng;
    rng_seed(&rng, 9, 4);
    float *A = urand(&rng, M * K), *W = urand(&rng, 12 * N * K), *Y = urand(&rng, M * K);
    float *ref = calloc((size_t)12 * SLOT, sizeof(float));
    float *out = calloc((size_t)12 * SLOT, sizeof(float));
    float *Y0 = malloc(sizeof(float) * M * K), *Ynew = urand(&rng, M * K);
    memcpy(Y0, Y, sizeof(float) * M * K);
    backend_cpu_set_precision(BACKEND_PRECISION_BF16);
    /* the sequence: A against 12 weights (more operands than a run keeps), then A's transpose
     * (dW = Aᵀ C: the same memory, another shape), then Y, its middle rows overwritten by a
     * product of the run (an output that begins inside Y), then Y again */
    for (int pass = 0; pass < 2; pass++) { /* 0: outside a run (the reference), 1: inside */
        float *C = pass ? out : ref;
        memcpy(Y, Y0, sizeof(float) * M * K);
        if (pass) be->matmul_run(1);
        for (int w = 0; w < 12; w++)
            be->matmul(C + (size_t)w * SLOT, A, W + (size_t)w * N * K, M, N, K, 0, 1, 1.0f, 0.0f);
        be->matmul(C + 9 * SLOT, A, C, K, N, M, 1, 0, 1.0f, 1.0f); /* [K,N] += Aᵀ C0 */
        be->matmul(C + 10 * SLOT, Y, W, M, N, K, 0, 1, 1.0f, 0.0f);
        /* rows M/4 .. 3M/4 of Y ← Ynew's first M/2 rows · I (a product whose output is the
         * middle half of Y) */
        float *I = calloc((size_t)K * K, sizeof(float));
        for (int i = 0; i < K; i++) I[(size_t)i * K + i] = 1.0f;
        be->matmul(Y + (size_t)(M / 4) * K, Ynew, I, M / 2, K, K, 0, 0, 1.0f, 0.0f);
        free(I);
        be->matmul(C + 11 * SLOT, Y, W, M, N, K, 0, 1, 1.0f, 0.0f);
        if (pass) be->matmul_run(0);
    }
    EXPECT(same_bits(out, ref, (size_t)12 * SLOT),
           "bf16 products inside a matmul_run differ from the same products outside");
    EXPECT(!same_bits(out + 10 * SLOT, out + 11 * SLOT, (size_t)M * N),
           "the product on the overwritten Y equals the one before: Y's old rounding was reused");
    /* a hold over W: the same bits, again after W changes between two holds */
    for (int h = 0; h < 2; h++) {
        if (h) W[5] += 0.5f, W[(size_t)3 * N * K + 7] -= 0.25f; /* between holds */
        for (int pass = 0; pass < 2; pass++) {
            float *C = pass ? out : ref;
            if (pass) be->matmul_hold(W, (size_t)12 * N * K);
            for (int r = 0; r < 2; r++) /* each weight twice: the second from the hold */
                for (int w = 0; w < 4; w++)
                    be->matmul(C + (size_t)(4 * r + w) * SLOT, A, W + (size_t)w * N * K, M, N, K,
                               0, 1, 1.0f, 0.0f);
            if (pass) be->matmul_hold(NULL, 0);
        }
        EXPECT(same_bits(out, ref, (size_t)8 * SLOT),
               "bf16 products inside matmul_hold differ from the same products outside (hold %d)",
               h);
    }
    /* matmul_keep: inside a hold, Y's rounding is made once and kept until the hold ends. The
     * probe breaks the contract on purpose: Y changes after its first product, and a kept
     * rounding gives the old product again. Outside a hold, and in the next hold, Y is rounded
     * afresh. */
    float *P = calloc((size_t)4 * M * N, sizeof(float)), *P0 = P + (size_t)3 * M * N;
    memcpy(Y, Y0, sizeof(float) * M * K);
    be->matmul(P0, Y, W, M, N, K, 0, 1, 1.0f, 0.0f); /* the reference: no hold, no keep */
    for (int h = 0; h < 3; h++) { /* 0: a hold with Y kept, 1: the next hold, 2: no hold */
        memcpy(Y, Y0, sizeof(float) * M * K);
        if (h < 2) be->matmul_hold(W, (size_t)12 * N * K);
        if (h != 1) be->matmul_keep(Y, (size_t)M * K);
        be->matmul(P, Y, W, M, N, K, 0, 1, 1.0f, 0.0f);
        be->matmul(P + (size_t)M * N, Y, W, M, N, K, 0, 1, 1.0f, 0.0f);
        EXPECT(same_bits(P, P0, (size_t)M * N),
               "a bf16 product on a kept operand differs from the same product outside (case %d)",
               h);
        EXPECT(same_bits(P + (size_t)M * N, P, (size_t)M * N),
               "a kept operand gives another product the second time (case %d)", h);
        memcpy(Y, Ynew, sizeof(float) * M * K); /* the probe */
        be->matmul(P + (size_t)2 * M * N, Y, W, M, N, K, 0, 1, 1.0f, 0.0f);
        if (h < 2) be->matmul_hold(NULL, 0);
        if (h == 0)
            EXPECT(same_bits(P + (size_t)2 * M * N, P, (size_t)M * N),
                   "matmul_keep inside a hold: the operand was rounded again");
        else
            EXPECT(!same_bits(P + (size_t)2 * M * N, P, (size_t)M * N),
                   "matmul_keep %s: the operand's old rounding was used",
                   h == 1 ? "of the hold before" : "without a hold");
    }
    free(P);
    /* one operand at two lengths: W as N/2 rows, then as all N (the same address, more
     * floats), inside a hold and inside a run: a kept rounding serves only its own length. W's
     * last rows change first, so that a rounding of them left from an earlier hold is stale. */
    W[(size_t)N * K - 3] += 0.75f;
    for (int ctx = 0; ctx < 2; ctx++)
        for (int pass = 0; pass < 2; pass++) {
            float *C = pass ? out : ref;
            if (pass) ctx ? be->matmul_run(1) : be->matmul_hold(W, (size_t)12 * N * K);
            be->matmul(C, A, W, M, N / 2, K, 0, 1, 1.0f, 0.0f);
            be->matmul(C + SLOT, A, W, M, N, K, 0, 1, 1.0f, 0.0f);
            if (pass) ctx ? be->matmul_run(0) : be->matmul_hold(NULL, 0);
            if (pass)
                EXPECT(same_bits(out, ref, (size_t)2 * SLOT), "an operand used at two lengths "
                       "inside a %s: the second product differs from outside", ctx ? "run" : "hold");
        }
    backend_cpu_set_precision(BACKEND_PRECISION_FP32);
    printf("bf16 matmul_run, matmul_hold and matmul_keep: the same bits as without (an operand "
           "at two lengths too); a kept operand rounded once a hold\n");
    free(A), free(W), free(Y), free(Y0), free(Ynew), free(ref), free(out);
}

static void test_config(int supported, const char *why) {
    Config c;
    Err err;
    config_defaults(&c);
    EXPECT(config_set(&c, "train.precision=tf32", &err) == STATUS_OK, "%s", err.msg);
    err.msg[0] = 0;
    EXPECT(config_validate(&c, &err) != STATUS_OK && strstr(err.msg, "train.precision = tf32") &&
               strstr(err.msg, "cuda"),
           "tf32 on the cpu: %s", err.msg);
    config_defaults(&c);
    EXPECT(config_set(&c, "train.precision=bf16", &err) == STATUS_OK, "%s", err.msg);
    err.msg[0] = 0;
    /* bf16 on the cpu is a valid config on every machine; this machine's backend decides */
    EXPECT(config_validate(&c, &err) == STATUS_OK, "bf16 on the cpu did not validate: %s",
           err.msg);
    BackendOptions bo = config_backend_options(&c);
    bo.threads = BACKEND_KEEP;
    char can_why[512] = "";
    int can = backend_can_run(&bo, can_why, sizeof can_why);
    const Backend *be = NULL;
    err.msg[0] = 0;
    Status st = backend_open(&bo, &be, NULL, 0, &err);
    if (supported) {
        EXPECT(can && st == STATUS_OK && be, "bf16 on a CPU that has it refused: %s %s", can_why,
               err.msg);
        backend_cpu_set_precision(BACKEND_PRECISION_FP32);
    } else {
        EXPECT(!can && strstr(can_why, "train.precision = bf16") && strstr(can_why, why),
               "backend_can_run, bf16 without support (%s): %s", why, can ? "runs" : can_why);
        EXPECT(st != STATUS_OK && !be && strstr(err.msg, "train.precision = bf16") &&
                   strstr(err.msg, why) && strstr(err.msg, "set train.precision = fp32"),
               "backend_open, bf16 without support (%s): %s", why, st ? err.msg : "opened");
    }
    /* tf32 is the config's refusal, and the backend's too (backend_precision_valid) */
    char tf_why[512] = "";
    EXPECT(!backend_precision_valid(BACKEND_DEVICE_CPU, BACKEND_PRECISION_TF32, tf_why,
                                    sizeof tf_why) && strstr(tf_why, "train.precision = tf32"),
           "tf32 on the cpu: %s", tf_why);
    EXPECT(backend_precision_valid(BACKEND_DEVICE_CUDA, BACKEND_PRECISION_TF32, NULL, 0) &&
               backend_precision_valid(BACKEND_DEVICE_CPU, BACKEND_PRECISION_BF16, NULL, 0),
           "tf32 on cuda or bf16 on the cpu is not valid");
}

int main(int argc, char **argv) {
    int products_only = argc > 1 && strcmp(argv[1], "--products") == 0;
    test_rounding();
    const char *why = "";
    int supported = backend_cpu_bf16_supported(&why);
    const int emulated = supported && *why;
    if (supported) {
        test_products(emulated);
        test_bias_forward();
        test_reuse();
    }
    if (!products_only) test_config(supported, why);
    int rc = test_report("test_precision_cpu");
    const char *path = getenv("TRAINER_CPU_BF16_GEMM");
    if (emulated && path && strcmp(path, "onednn") == 0 && rc == 0) {
        printf("test_precision_cpu: skipped: oneDNN's bf16 matmul was not checked here: %s\n",
               why);
        return 77;
    }
    if (!supported && rc == 0) {
        printf("test_precision_cpu: skipped: the bf16 products were not checked here: %s\n", why);
        return 77;
    }
    return rc;
}
