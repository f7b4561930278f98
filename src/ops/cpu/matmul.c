/* matmul.c — the CPU backend's dense products (the Backend's matmul and matmul_bias_forward;
 * semantics in ops/ops.h), and the choice of the library that computes them:
 *   fp32  OpenBLAS's cblas_sgemm, or oneDNN's dnnl_sgemm when the build has oneDNN (TRAINER_DNNL)
 *         and the CPU has AVX-512, where Debian's oneDNN runs the models' shapes faster than Debian's
 *         OpenBLAS (bench/bench_gemm compares them); on AVX2 CPUs OpenBLAS is ahead.
 *         TRAINER_CPU_GEMM = openblas | onednn overrides the choice (benchmarks, tests).
 *   bf16  (backend_cpu_set_precision) both inputs rounded to bfloat16 (round to nearest even),
 *         products accumulated and stored in fp32: oneDNN's matmul primitive (its JIT GEMM with
 *         AVX512_BF16's vdpbf16ps), or, on an Intel CPU without AMX, the fp32 product above on
 *         the rounded inputs held as floats (the same inputs and exact products, summed in
 *         another order): there vdpbf16ps has half the FMA's throughput, so the fp32 product is
 *         the faster (docs/performance.md). TRAINER_CPU_BF16_GEMM = onednn | sgemm overrides
 *         the choice. The same rounding as the CUDA backend's bf16 (its kernel
 *         k_round_bf16 before a CUDA_R_16BF product) and PyTorch's autocast: weights, their
 *         gradients and Adam stay fp32; only the product's inputs are rounded, each once where
 *         the caller allows it (Backend.matmul_run, matmul_hold, matmul_keep: kept roundings,
 *         the same bits).
 * The small products inside the attention ops (attn_sdp.c, flash.c) call cblas_sgemm directly,
 * single-threaded inside their parallel regions, in fp32 at every precision. */
#include <cblas.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "ops/cpu/cpu_internal.h"

#ifdef TRAINER_DNNL
#include <oneapi/dnnl/dnnl.h>
#endif

static int g_precision = BACKEND_PRECISION_FP32;
/* This thread's held ranges, as addresses [lo, hi): [0] the one of Backend.matmul_hold, the
 * others added to it by matmul_keep (a model's activations); none while t_nheld is 0. A keep
 * past HELD_RANGES is dropped: its operand is then rounded per product, as without it. */
enum { HELD_RANGES = 128 };
static _Thread_local struct {
    uintptr_t lo, hi;
} t_held[HELD_RANGES];
static _Thread_local int t_nheld;

/* Whether p[0..n) overlaps one of this thread's held ranges. */
static int overlaps_held(const float *p, size_t n) {
    const uintptr_t a = (uintptr_t)p, b = (uintptr_t)(p + n);
    for (int i = 0; i < t_nheld; i++)
        if (a < t_held[i].hi && b > t_held[i].lo) return 1;
    return 0;
}
static pthread_once_t g_gemm_once = PTHREAD_ONCE_INIT;
static int g_use_dnnl;    /* fp32 products on dnnl_sgemm */
static int g_bf16_sgemm;  /* bf16 products: the fp32 product on the rounded inputs */

#if defined(TRAINER_DNNL) && defined(__x86_64__)
#include <cpuid.h>
/* An Intel CPU without AMX-BF16 (CPUID leaf 7, EDX bit 22): its vdpbf16ps runs on one port, at
 * half the rate of its two FMA ports. */
static int intel_without_amx(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid(0, &a, &b, &c, &d)) return 0;
    int intel = b == 0x756e6547u && d == 0x49656e69u && c == 0x6c65746eu; /* GenuineIntel */
    if (!intel || a < 7) return intel;
    __cpuid_count(7, 0, a, b, c, d);
    return !((d >> 22) & 1u);
}
#elif defined(TRAINER_DNNL)
static int intel_without_amx(void) { return 0; }
#endif

/* Whether the CPU has AVX512_BF16, unless TRAINER_CPU_BF16=off says to act as if it had not
 * (cpu.h: the emulated products and the portable rounding, testable on any CPU). */
static int g_bf16_cpu = -1;
static pthread_once_t g_bf16_once = PTHREAD_ONCE_INIT;
static void probe_bf16(void) {
    const char *env = getenv("TRAINER_CPU_BF16");
    __builtin_cpu_init();
    g_bf16_cpu = __builtin_cpu_supports("avx512bf16") && !(env && strcmp(env, "off") == 0);
}
static int cpu_has_bf16(void) {
    pthread_once(&g_bf16_once, probe_bf16);
    return g_bf16_cpu;
}

static void choose_gemm(void) {
#ifdef TRAINER_DNNL
    const char *env = getenv("TRAINER_CPU_GEMM");
    if (env && strcmp(env, "openblas") == 0)
        g_use_dnnl = 0;
    else if (env && strcmp(env, "onednn") == 0)
        g_use_dnnl = 1;
    else {
        __builtin_cpu_init();
        g_use_dnnl = __builtin_cpu_supports("avx512f") != 0;
    }
    const char *b16 = getenv("TRAINER_CPU_BF16_GEMM");
    if (!cpu_has_bf16() || (b16 && strcmp(b16, "sgemm") == 0))
        g_bf16_sgemm = 1; /* oneDNN's bf16 matmul has no kernel without AVX512_BF16 */
    else if (b16 && strcmp(b16, "onednn") == 0)
        g_bf16_sgemm = 0;
    else
        g_bf16_sgemm = intel_without_amx();
#endif
}

const char *backend_cpu_gemm_name(void) {
    pthread_once(&g_gemm_once, choose_gemm);
    if (g_precision == BACKEND_PRECISION_BF16)
        return !g_bf16_sgemm ? "onednn matmul (bf16 inputs, fp32 accumulation)"
               : g_use_dnnl  ? "onednn sgemm on bf16-rounded inputs (fp32 accumulation)"
                             : "openblas sgemm on bf16-rounded inputs (fp32 accumulation)";
    return g_use_dnnl ? "onednn sgemm" : "openblas sgemm";
}

int backend_cpu_bf16_supported(const char **why) {
#ifdef TRAINER_DNNL
    if (why)
        *why = cpu_has_bf16() ? ""
                              : "emulated: this CPU has no AVX512_BF16, so the products are fp32 "
                                "sgemm on bf16-rounded inputs (the same values, slower than fp32)";
    return 1;
#else
    if (why)
        *why = "this build has no oneDNN (install Debian's libdnnl-dev and rebuild: cmake finds it)";
    return 0;
#endif
}

void backend_cpu_set_precision(int precision) {
    CHECK(precision == BACKEND_PRECISION_FP32 || precision == BACKEND_PRECISION_BF16,
          "backend_cpu_set_precision: the CPU computes in fp32 or bf16 only");
#ifndef TRAINER_DNNL
    CHECK(precision == BACKEND_PRECISION_FP32,
          "backend_cpu_set_precision: bf16 needs a build with oneDNN");
#endif
    g_precision = precision;
}

/* The bits of x rounded to bfloat16, in the high half (the low half zero): NaN stays NaN (quiet
 * bit set); else round to nearest, ties to even. */
static inline uint32_t bf16_bits(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    const uint32_t nan = (u & 0x7fffffffu) > 0x7f800000u;
    return (nan ? (u | 0x00400000u) : u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
}

#if defined(__x86_64__)
#include <immintrin.h>
/* AVX512_BF16's rounding of one float (vcvtneps2bf16), as the loops below round. */
__attribute__((target("avx512f,avx512vl,avx512bf16"))) static inline uint16_t
bf16_one_avx512(float x) {
    __m128bh h = _mm_cvtneps_pbh(_mm_set_ss(x));
    uint16_t v[8];
    _mm_storeu_si128((__m128i *)v, (__m128i)h);
    return v[0];
}

/* AVX512_BF16's vcvtne2ps2bf16: 32 floats to bf16 per instruction, round to nearest even, NaN
 * kept quiet — the portable loop's results, except that it flushes subnormal inputs (below
 * 1.2e-38) to zero (Intel SDM, VCVTNE2PS2BF16). One thread: an OpenMP region inside would be
 * outlined into a function without this target. */
__attribute__((target("avx512f,avx512vl,avx512bf16"))) static void
round_bf16_avx512(uint16_t *dst, const float *src, size_t n) {
    const size_t n32 = n / 32 * 32;
    for (size_t i = 0; i < n32; i += 32) {
        __m512bh h = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(src + i + 16), _mm512_loadu_ps(src + i));
        _mm512_storeu_si512((void *)(dst + i), (__m512i)h);
    }
    for (size_t i = n32; i < n; i++) dst[i] = bf16_one_avx512(src[i]);
}

/* The same rounding, each result widened back to a float (its low 16 bits zero). */
__attribute__((target("avx512f,avx512vl,avx512bf16"))) static void
round_bf16_f32_avx512(float *dst, const float *src, size_t n) {
    const size_t n16 = n / 16 * 16;
    for (size_t i = 0; i < n16; i += 16) {
        __m256i h = (__m256i)_mm512_cvtneps_pbh(_mm512_loadu_ps(src + i));
        _mm512_storeu_si512((void *)(dst + i), _mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    }
    for (size_t i = n16; i < n; i++) {
        uint32_t u = (uint32_t)bf16_one_avx512(src[i]) << 16;
        memcpy(&dst[i], &u, sizeof u);
    }
}
#endif

/* src[n] rounded to bfloat16 into dst: bf16 values (as_float 0), or floats whose low 16 bits are
 * zero (as_float 1); AVX512_BF16's instruction where the CPU has it, else the portable rule,
 * vectorised (no branch) and on every thread past 64 Ki elements (a product's input of the output
 * layer is up to rows × V, tens of millions). */
static void round_bf16_into(void *dst, int as_float, const float *src, size_t n) {
#if defined(__x86_64__)
    if (cpu_has_bf16()) {
        enum { BLOCK = 8192 }; /* elements a call, a multiple of 32 */
        const size_t nblocks = (n + BLOCK - 1) / BLOCK;
#pragma omp parallel for schedule(static) if (n > 65536)
        for (size_t b = 0; b < nblocks; b++) {
            const size_t lo = b * BLOCK, len = n - lo < BLOCK ? n - lo : BLOCK;
            if (as_float) round_bf16_f32_avx512((float *)dst + lo, src + lo, len);
            else round_bf16_avx512((uint16_t *)dst + lo, src + lo, len);
        }
        return;
    }
#endif
    uint16_t *d16 = dst;
    uint32_t *d32 = dst;
#pragma omp parallel for simd schedule(static) if (n > 65536)
    for (size_t i = 0; i < n; i++) {
        const uint32_t r = bf16_bits(src[i]);
        if (as_float) d32[i] = r;
        else d16[i] = (uint16_t)(r >> 16);
    }
}

void backend_cpu_round_bf16(uint16_t *dst, const float *src, size_t n) {
    round_bf16_into(dst, 0, src, n);
}

#ifdef TRAINER_DNNL
/* A failed oneDNN call is a programmer or resource error: its name and status, then abort. */
#define DNNL_OK(call)                                                                             \
    do {                                                                                          \
        dnnl_status_t s_ = (call);                                                                \
        if (s_ != dnnl_success) {                                                                 \
            fprintf(stderr, "oneDNN: %s failed (status %d) at %s:%d\n", #call, (int)s_,          \
                    __FILE__, __LINE__);                                                          \
            abort();                                                                              \
        }                                                                                         \
    } while (0)

/* One bf16 matmul primitive per (transA, transB, alpha, beta), its M, N and K given at run time
 * (DNNL_RUNTIME_DIM_VAL): oneDNN then runs its JIT GEMM (gemm:jit), and no batch shape costs a
 * new primitive.
 * Created once under a lock and kept for the process's life; primitives execute concurrently
 * (user-provided scratchpad, one stream per thread). */
typedef struct {
    int ta, tb;
    float alpha, beta;
    dnnl_primitive_t prim;
    size_t scratch; /* bytes */
} Bf16Prim;
enum { BF16_PRIMS = 16 };
static Bf16Prim g_prims[BF16_PRIMS];
static int g_nprims;
static pthread_mutex_t g_prims_lock = PTHREAD_MUTEX_INITIALIZER;
static dnnl_engine_t g_engine;

/* The row-major memory descriptor of op(X) [rows, cols] stored [cols, rows] when trans; rows or
 * cols DNNL_RUNTIME_DIM_VAL for the primitive's run-time shape. */
static void md2(dnnl_memory_desc_t *md, int64_t rows, int64_t cols, int trans,
                dnnl_data_type_t dt) {
    dnnl_dims_t dims = {rows, cols}, strides = {trans ? 1 : cols, trans ? rows : 1};
    DNNL_OK(dnnl_memory_desc_init_by_strides(md, 2, dims, dt, strides));
}

static const Bf16Prim *bf16_prim(int ta, int tb, float alpha, float beta) {
    pthread_mutex_lock(&g_prims_lock);
    for (int i = 0; i < g_nprims; i++) {
        const Bf16Prim *p = &g_prims[i];
        if (p->ta == ta && p->tb == tb && p->alpha == alpha && p->beta == beta) {
            pthread_mutex_unlock(&g_prims_lock);
            return p;
        }
    }
    CHECK(g_nprims < BF16_PRIMS, "bf16 products: more (alpha, beta) pairs than BF16_PRIMS");
    if (!g_engine) DNNL_OK(dnnl_engine_create(&g_engine, dnnl_cpu, 0));
    const int64_t R = DNNL_RUNTIME_DIM_VAL;
    dnnl_memory_desc_t a, b, c;
    md2(&a, R, R, ta, dnnl_bf16);
    md2(&b, R, R, tb, dnnl_bf16);
    md2(&c, R, R, 0, dnnl_f32);
    dnnl_matmul_desc_t desc;
    DNNL_OK(dnnl_matmul_desc_init(&desc, &a, &b, NULL, &c));
    dnnl_primitive_attr_t attr;
    DNNL_OK(dnnl_primitive_attr_create(&attr));
    DNNL_OK(dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user));
    if (alpha != 1.0f) DNNL_OK(dnnl_primitive_attr_set_output_scales(attr, 1, 0, &alpha));
    dnnl_post_ops_t po = NULL;
    if (beta != 0.0f) {
        DNNL_OK(dnnl_post_ops_create(&po));
        DNNL_OK(dnnl_post_ops_append_sum(po, beta));
        DNNL_OK(dnnl_primitive_attr_set_post_ops(attr, po));
    }
    dnnl_primitive_desc_t pd;
    DNNL_OK(dnnl_primitive_desc_create(&pd, &desc, attr, g_engine, NULL));
    Bf16Prim *p = &g_prims[g_nprims];
    *p = (Bf16Prim){ta, tb, alpha, beta, NULL, 0};
    p->scratch = dnnl_memory_desc_get_size(dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0));
    DNNL_OK(dnnl_primitive_create(&p->prim, pd));
    dnnl_primitive_desc_destroy(pd);
    dnnl_primitive_attr_destroy(attr);
    if (po) dnnl_post_ops_destroy(po);
    g_nprims++;
    pthread_mutex_unlock(&g_prims_lock);
    return p;
}

/* A thread's buffer of at least bytes (grown, never shrunk; freed at thread exit by no one: a
 * handful of threads call products). */
typedef struct {
    void *p;
    size_t n;
} Buf;
static void *grow(Buf *b, size_t bytes) {
    if (b->n < bytes) {
        free(b->p);
        b->n = bytes + bytes / 4;
        CHECK(posix_memalign(&b->p, 64, b->n) == 0, "out of host memory (bf16 products)");
    }
    return b->p;
}

/* src[n] rounded to bf16 into b (grown as needed): bf16 values, or floats where the products
 * run on sgemm (g_bf16_sgemm); returns b's data. */
static const void *round_into(Buf *b, const float *src, size_t n) {
    if (g_bf16_sgemm) {
        float *d = grow(b, sizeof(float) * n + 64);
        round_bf16_into(d, 1, src, n);
        return d;
    }
    uint16_t *d = grow(b, sizeof(uint16_t) * n + 64);
    backend_cpu_round_bf16(d, src, n);
    return d;
}

/* An operand's kept rounding: src[n] in buf (src NULL: empty), last used at clock used. */
typedef struct {
    const float *src;
    size_t n;
    unsigned long used;
    Buf buf;
} Kept;

/* The operands rounded in this thread's current run (Backend.matmul_run), kept for the run's
 * later products: a layer's output gradient for both its backward products, the input of the
 * Q, K and V projections. RUN_KEEP entries, the least recently used one replaced (a product's
 * second operand never replaces its first, the most recent); buffers grow and are kept. */
enum { RUN_KEEP = 6 };
static _Thread_local struct {
    int on;
    unsigned long clock;
    Kept k[RUN_KEEP];
} t_run;

/* The operands inside this thread's held ranges rounded since its hold began: HOLD_KEEP
 * entries (a model's weight matrices and kept activations), any further ones rounded per
 * product. */
enum { HOLD_KEEP = 256 };
static _Thread_local struct {
    int n;
    Kept k[HOLD_KEEP];
} t_hold;

/* Whether p[0..n) lies inside one of this thread's held ranges. */
static int held(const float *p, size_t n) {
    const uintptr_t a = (uintptr_t)p;
    for (int i = 0; i < t_nheld; i++)
        if (a >= t_held[i].lo && a < t_held[i].hi && n <= (t_held[i].hi - a) / sizeof(float))
            return 1;
    return 0;
}

/* src[n] rounded to bf16: from the held operands or the run's kept ones when it is one of them,
 * else rounded into a new held entry (inside a held range), a kept entry (inside a run) or
 * scratch. */
static const void *rounded(const float *src, size_t n, Buf *scratch) {
    if (held(src, n)) {
        for (int i = 0; i < t_hold.n; i++)
            if (t_hold.k[i].src == src && t_hold.k[i].n == n) return t_hold.k[i].buf.p;
        if (t_hold.n < HOLD_KEEP) {
            Kept *k = &t_hold.k[t_hold.n++];
            k->src = src, k->n = n;
            return round_into(&k->buf, src, n);
        }
    }
    if (!t_run.on) return round_into(scratch, src, n);
    Kept *lru = &t_run.k[0];
    for (int i = 0; i < RUN_KEEP; i++) {
        Kept *k = &t_run.k[i];
        if (k->src == src && k->n == n) {
            k->used = ++t_run.clock;
            return k->buf.p;
        }
        if (k->used < lru->used) lru = k;
    }
    lru->src = src, lru->n = n, lru->used = ++t_run.clock;
    return round_into(&lru->buf, src, n);
}
#endif

static void cpu_matmul_run(int begin) {
#ifdef TRAINER_DNNL
    t_run.on = begin;
    for (int i = 0; i < RUN_KEEP; i++) t_run.k[i].src = NULL, t_run.k[i].used = 0;
#else
    (void)begin;
#endif
}

static void cpu_matmul_hold(const float *p, size_t n) {
    t_nheld = p != NULL;
    if (p) t_held[0].lo = (uintptr_t)p, t_held[0].hi = (uintptr_t)(p + n);
#ifdef TRAINER_DNNL
    t_hold.n = 0; /* the entries' buffers stay for the next hold */
#endif
}

static void cpu_matmul_keep(const float *p, size_t n) {
    if (t_nheld == 0 || t_nheld == HELD_RANGES || !p || n == 0) return;
    t_held[t_nheld].lo = (uintptr_t)p, t_held[t_nheld].hi = (uintptr_t)(p + n);
    t_nheld++;
}

/* Backend.matmul_transb_slower: sgemm (fp32, or bf16 on sgemm) yes, oneDNN's bf16 matmul no
 * (ops.h). */
static int cpu_matmul_transb_slower(void) {
    pthread_once(&g_gemm_once, choose_gemm);
    return g_precision != BACKEND_PRECISION_BF16 || g_bf16_sgemm;
}

#ifdef TRAINER_DNNL
/* A kept operand that a product's output C[n] overlaps is stale: forgets it. */
static void forget_overlapped(const float *C, size_t n) {
    for (int i = 0; i < RUN_KEEP; i++) {
        Kept *k = &t_run.k[i];
        if (k->src && k->src < C + n && C < k->src + k->n) k->src = NULL, k->used = 0;
    }
}

static void bf16_matmul(float *C, const float *A, const float *B, int M, int Nc, int K,
                        int transA, int transB, float alpha, float beta) {
    static _Thread_local Buf abuf, bbuf, sbuf;
    static _Thread_local dnnl_stream_t stream;
    const void *a16 = rounded(A, (size_t)M * K, &abuf);
    const void *b16 = rounded(B, (size_t)K * Nc, &bbuf);
    if (g_bf16_sgemm) { /* the rounded inputs as floats: the fp32 product */
        const float *a = a16, *b = b16;
        int lda = transA ? M : K, ldb = transB ? K : Nc;
        if (g_use_dnnl)
            DNNL_OK(dnnl_sgemm(transA ? 'T' : 'N', transB ? 'T' : 'N', M, Nc, K, alpha, a, lda, b,
                               ldb, beta, C, Nc));
        else
            cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
                        transB ? CblasTrans : CblasNoTrans, M, Nc, K, alpha, a, lda, b, ldb, beta,
                        C, Nc);
        forget_overlapped(C, (size_t)M * Nc);
        return;
    }
    const Bf16Prim *p = bf16_prim(transA, transB, alpha, beta);
    if (!stream) DNNL_OK(dnnl_stream_create(&stream, g_engine, dnnl_stream_default_flags));
    dnnl_memory_desc_t md[4];
    md2(&md[0], M, K, transA, dnnl_bf16);
    md2(&md[1], K, Nc, transB, dnnl_bf16);
    md2(&md[2], M, Nc, 0, dnnl_f32);
    const int nargs = p->scratch ? 4 : 3;
    if (nargs == 4) {
        const_dnnl_primitive_desc_t pd;
        DNNL_OK(dnnl_primitive_get_primitive_desc(p->prim, &pd));
        md[3] = *dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    }
    void *ptr[4] = {(void *)a16, (void *)b16, C,
                    nargs == 4 ? grow(&sbuf, p->scratch + 64) : NULL};
    const int arg[4] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST, DNNL_ARG_SCRATCHPAD};
    dnnl_exec_arg_t args[4];
    for (int i = 0; i < nargs; i++) {
        args[i].arg = arg[i];
        DNNL_OK(dnnl_memory_create(&args[i].memory, &md[i], g_engine, ptr[i]));
    }
    DNNL_OK(dnnl_primitive_execute(p->prim, stream, nargs, args));
    DNNL_OK(dnnl_stream_wait(stream));
    for (int i = 0; i < nargs; i++) dnnl_memory_destroy(args[i].memory);
    forget_overlapped(C, (size_t)M * Nc);
}
#endif

static void cpu_matmul(float *C, const float *A, const float *B, int M, int Nc, int K, int transA,
                       int transB, float alpha, float beta) {
    if (M == 0 || Nc == 0) return;
    CHECK(!overlaps_held(C, (size_t)M * Nc),
          "matmul: its output overlaps a range held by matmul_hold or matmul_keep (ops.h)");
    pthread_once(&g_gemm_once, choose_gemm);
    int lda = transA ? M : K, ldb = transB ? K : Nc;
#ifdef TRAINER_DNNL
    if (K > 0 && g_precision == BACKEND_PRECISION_BF16) {
        bf16_matmul(C, A, B, M, Nc, K, transA, transB, alpha, beta);
        return;
    }
    if (g_use_dnnl) {
        DNNL_OK(dnnl_sgemm(transA ? 'T' : 'N', transB ? 'T' : 'N', M, Nc, K, alpha, A, lda, B,
                           ldb, beta, C, Nc));
        return;
    }
#endif
    cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
                transB ? CblasTrans : CblasNoTrans, M, Nc, K, alpha, A, lda, B, ldb, beta, C, Nc);
}

/* The product, then the bias row (and ReLU) in a second pass: the same arithmetic as matmul +
 * bias_forward (+ bias_relu_dropout_forward with p = 0), so swapping them changes no bit. */
static void cpu_matmul_bias_forward(float *out, const float *inp, const float *weight,
                                    const float *bias, int N, int C, int K, int relu) {
    cpu_matmul(out, inp, weight, N, C, K, 0, 1, 1.0f, 0.0f);
    if (relu)
        cpu_bias_relu_dropout_forward(out, out, bias, 0.0f, 0, N, C);
    else
        cpu_bias_forward(out, bias, N, C);
}

void cpu_register_matmul(Backend *be) {
    be->matmul_run = cpu_matmul_run;
    be->matmul_hold = cpu_matmul_hold;
    be->matmul_keep = cpu_matmul_keep;
    be->matmul_transb_slower = cpu_matmul_transb_slower;
    be->matmul = cpu_matmul;
    be->matmul_bias_forward = cpu_matmul_bias_forward;
}
