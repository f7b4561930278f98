/* test_backend_ops.c — every op of the backend table (src/ops/ops.h), one case per OpKind
 * (docs/design.md §3, §11):
 *
 *   test_backend_ops                   every op of the CPU backend (backend_cpu()) against a plain
 *                                      reference written here in double precision, every backward
 *                                      against central finite differences, and the accumulate
 *                                      convention of ops.h; then OpKind/supports_op/
 *                                      backend_require_ops.
 *   test_backend_ops --backend cuda    every op the CUDA backend implements against the CPU on
 *                                      the same random inputs; exit 77 (skipped) when
 *                                      backend_cuda() returns NULL (no CUDA build or no device),
 *                                      but in the emulated build, where the backend always
 *                                      exists, a backend that does not start is a failure.
 *   ... --ops NAME[,NAME...]           only the cases of the named OpKinds (op_name's names; a
 *                                      case that serves several OpKinds runs when any of them is
 *                                      named), without the memory and table-wide checks: for
 *                                      running one op family quickly (scripts/mutate.sh). An
 *                                      unknown name is a usage error (exit 2).
 *
 * The harness: an op family is a row of ROWS (a Row: its dims and shapes, its buffers with their
 * roles, value ranges and tolerances, and the calls fwd and bwd that run it on a given Backend
 * with given buffers). run_shape draws the buffers from a stream of the row's shape, runs the
 * calls on every backend of the mode (the CPU; and the backend under test), and
 *   - checks every input unchanged, on every backend;
 *   - another backend: compares every written buffer (whole, prefills included, so what an op
 *     must not write is checked untouched) with the CPU's, bit for bit (tol 0) or normwise
 *     max|g − c| / max(max|c|, floor) < tol, floor the size of the terms where they may cancel
 *     (tol < 0: element-wise |g − c| <= |tol| max(1 + |c|, floor), infinities exactly); a row's
 *     calls may compare a value before a later call changes it (emit_mid); ints and the doubles
 *     an op returns (a loss, a sum, a verdict) are buffers too (IOUT, RET);
 *   - the CPU: the reference (ref: normwise, element-wise or exactly), the gradients computed into
 *     zeroed buffers against central finite differences of L = Σ dout ⊙ out (ε = FD_EPS),
 *     normwise: |g − g_fd| / max(|g_fd|, tiny) ≤ FD_NORM_TOL, and the run onto random prefills
 *     = prefill + gradient (accum_check), or the gradient alone where ops.h says overwritten;
 *   - the row's extra checks (extra), on every backend.
 * Checks a row does not express stay special functions of the case table (CASES): the memory
 * entries (on each backend), matmul next to held ranges, train.precision, and the attention ops'
 * CPU cases (attention_*.c; their rows check another backend against the CPU, and the hooks'
 * checks on both). The program fails when an OpKind has no case. An op the CUDA backend leaves
 * NULL is listed and skipped; an op it has but whose case has no cross-backend check fails.
 *
 * The backend under test runs with guarded memory (guarded_alloc) and workspaces of exactly the
 * size their function declares (work_new: at an odd float offset, NaN-filled, guarded). In the
 * emulated build the whole suite runs under five thread/block schedules and every output must
 * hash as under the first. Tolerances of the CPU's own checks are in tests/optest.h.
 */
#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention_cases.h"
#include "ops/cpu/cpu.h"
#include "ops/cuda/cuda.h"
#include "ops/ops.h"
#include "optest.h"
#include "core/rng.h"
#include "testutil.h"
#ifdef TRAINER_SIMT
#include "ops/cuda/simt/simt_c.h" /* the emulated build: thread schedules */
#endif

/* --ops: the OpKinds whose cases run (all when no --ops was given) */
static int op_selected[OP_COUNT];
static int ops_filtered;

/* ========================================================================================== */
/* another backend against the CPU                                                            */

static const Backend *cpu, *gpu; /* reference and backend under test (--backend) */

/* The backend under test runs with guarded memory: its alloc places every buffer between two
 * guards of GUARD_BYTES (256: cudaMalloc's alignment is kept) filled with GUARD_BYTE, and its free
 * checks them, so that an op writing before the start or past the end of any buffer it is given
 * fails ("wrote outside a buffer") although the memory it hits belongs to no other buffer (a loop
 * bound one too far, a grid-stride loop that runs one element over). Not in the sanitizer build:
 * there ASan sees every access outside a buffer, reads too, which the guards would hide. The
 * buffers of one test are few at a time: a plain list. */
enum { GUARD_BYTES = 256, GUARD_BYTE = 0xA5, GUARD_MAX = 4096 };
static Backend guarded;
static const Backend *unguarded; /* backend_cuda()'s own table */
static struct {
    char *base;
    size_t bytes;
} g_live[GUARD_MAX];
static int g_nlive;

static void *guarded_alloc(size_t bytes) {
    char *base = unguarded->alloc(bytes + 2 * GUARD_BYTES);
    if (!base) return NULL;
    unsigned char pat[GUARD_BYTES];
    memset(pat, GUARD_BYTE, sizeof pat);
    unguarded->upload(base, pat, GUARD_BYTES);
    unguarded->upload(base + GUARD_BYTES + bytes, pat, GUARD_BYTES);
    if (g_nlive == GUARD_MAX) {
        fprintf(stderr, "test_backend_ops: more than %d buffers at once\n", GUARD_MAX);
        exit(2);
    }
    g_live[g_nlive].base = base, g_live[g_nlive].bytes = bytes, g_nlive++;
    return base + GUARD_BYTES;
}

static void guarded_free(void *p) {
    if (!p) return;
    char *base = (char *)p - GUARD_BYTES;
    int i = 0;
    while (i < g_nlive && g_live[i].base != base) i++;
    EXPECT(i < g_nlive, "free of %p, which the backend's alloc did not return", p);
    if (i == g_nlive) return;
    size_t bytes = g_live[i].bytes;
    unsigned char lo[GUARD_BYTES], hi[GUARD_BYTES];
    unguarded->download(lo, base, GUARD_BYTES);
    unguarded->download(hi, base + GUARD_BYTES + bytes, GUARD_BYTES);
    int before = 0, after = 0;
    for (int k = 0; k < GUARD_BYTES; k++) before += lo[k] != GUARD_BYTE, after += hi[k] != GUARD_BYTE;
    EXPECT(before == 0 && after == 0, "an op wrote outside a buffer of %zu bytes: %d of the %d "
           "bytes before it and %d of the %d after it changed", bytes, before, GUARD_BYTES, after,
           GUARD_BYTES);
    unguarded->free(base);
    g_live[i] = g_live[--g_nlive];
}

/* n floats uniform in [-1, 1). */
static float *frand_pm1(size_t n) { return frand(n, -1, 1); }

/* A buffer of be's memory holding a copy of host[n] floats. */
static float *to_backend(const Backend *be, const float *host, size_t n) {
    float *p = be->alloc(n * sizeof(float));
    be->upload(p, host, n * sizeof(float));
    return p;
}

static void record_output(const char *what, const float *g, size_t n);

/* The schedule pass of run_vs_cpu (0: the first, and the only one outside the emulated build), and
 * whether the downloads from the backend under test are left out of the schedule check (the
 * cases past the element-wise grid below run in the first pass only). */
static int g_pass, g_quiet;

/* Element-wise kernels launch at most CUDA_EW_MAX_BLOCKS × CUDA_EW_THREADS = 4096 × 256 threads
 * (src/ops/cuda/cuda_internal.h); their grid-stride loops take a second turn only past EW_GRID
 * elements, so each such family has one case past it, where a wrong stride or bound of that loop
 * shows. No thread of those kernels reads what another wrote, so the thread order cannot change
 * their result: a row's shape past it runs in the first schedule pass only, unrecorded for the
 * schedule check, and not under the sanitizers (ASan, TSan: each of a million emulated threads
 * costs there). */
#define EW_GRID ((size_t)4096 * 256)
#ifdef __SANITIZE_THREAD__
#define TSAN_BUILD 1
#else
#define TSAN_BUILD 0
#endif
/* Downloads n floats from be's memory into a fresh host buffer; every download from the backend
 * under test is recorded (hashed) for the schedule check of run_vs_cpu, unless g_quiet. */
static float *from_backend(const Backend *be, const float *p, size_t n) {
    float *h = malloc(n * sizeof *h + 1);
    if (!h) {
        fprintf(stderr, "out of host memory\n");
        exit(2);
    }
    be->download(h, p, n * sizeof(float));
    if (be == gpu && !g_quiet) record_output("download", h, n);
    return h;
}

/* Every output downloaded from the backend under test (from_backend), in order: a 64-bit FNV-1a hash
 * of each one's bytes and its label (the schedule check of run_vs_cpu). */
static struct { uint64_t hash; char what[300]; } *out_seen;
static size_t n_seen, cap_seen;

static void record_output(const char *what, const float *g, size_t n) {
    uint64_t h = 1469598103934665603ull;
    const unsigned char *b = (const unsigned char *)g;
    for (size_t i = 0; i < n * sizeof(float); i++) h = (h ^ b[i]) * 1099511628211ull;
    if (n_seen == cap_seen) {
        cap_seen = cap_seen ? 2 * cap_seen : 256;
        out_seen = realloc(out_seen, cap_seen * sizeof *out_seen);
        if (!out_seen) {
            fprintf(stderr, "out of host memory\n");
            exit(2);
        }
    }
    out_seen[n_seen].hash = h;
    snprintf(out_seen[n_seen].what, sizeof out_seen[n_seen].what, "%s", what);
    n_seen++;
}

/* An op's workspace in one backend, exactly its size function's value n (floats), placed to catch
 * three mistakes: it starts at an odd float (4 mod 8 bytes), so the op cannot count on more than
 * float alignment; it is filled with NaN, so the op cannot count on zeros (an arena's scratch is
 * reused); and WORK_GUARD floats of a sentinel follow it, which the op must leave alone (it stays
 * within what its size function declared; work_done checks them). n = 0 passes NULL. */
enum { WORK_GUARD = 64 };
static const float WORK_SENTINEL = 4242.0f;
typedef struct {
    const Backend *b;
    float *base, *p; /* p = base + 1, or NULL when n = 0 */
    size_t n;
} Work;
static Work work_new(const Backend *b, size_t n) {
    size_t tot = 1 + n + WORK_GUARD;
    float *h = malloc(sizeof(float) * tot);
    if (!h) {
        fprintf(stderr, "out of host memory\n");
        exit(2);
    }
    for (size_t i = 0; i < 1 + n; i++) h[i] = NAN;
    for (size_t i = 1 + n; i < tot; i++) h[i] = WORK_SENTINEL;
    Work w = {b, b->alloc(sizeof(float) * tot), NULL, n};
    b->upload(w.base, h, sizeof(float) * tot);
    w.p = n ? w.base + 1 : NULL;
    free(h);
    return w;
}
/* EXPECTs the guard after w's n floats untouched, then frees w. */
static void work_done(Work w, const char *what) {
    float *h = malloc(sizeof(float) * WORK_GUARD);
    if (!h) {
        fprintf(stderr, "out of host memory\n");
        exit(2);
    }
    w.b->download(h, w.base + 1 + w.n, sizeof(float) * WORK_GUARD);
    int bad = 0;
    for (int i = 0; i < WORK_GUARD; i++) bad += h[i] != WORK_SENTINEL;
    EXPECT(bad == 0, "%s (%s): %d of the %d floats after its declared workspace (%zu floats) "
           "were overwritten", what, w.b->name, bad, WORK_GUARD, w.n);
    free(h);
    w.b->free(w.base);
}

/* 1 if both backends have the entry (a missing cuda entry is reported by run_vs_cpu). */
static int both_have(const char *op, const void *cpu_fn, const void *gpu_fn) {
    EXPECT(cpu_fn != NULL, "cpu backend lacks %s (the reference must have every op)", op);
    return cpu_fn && gpu_fn;
}
#define HAVE(op) both_have(#op, (const void *)cpu->op, (const void *)gpu->op)

/* The memory entries of b: alloc zero-fills; upload, copy and download round-trip the bytes;
 * zero clears its range and nothing else, a middle range and a block of 4.5 MiB and 3 floats at
 * an offset (the CPU clears a block of 4 MiB and more in 1 MiB pieces over its threads); free
 * of NULL does nothing. */
static void memory_checks(const Backend *b) {
    Stat st;
    stat_begin(&st, "memory (%s): alloc/upload/download/copy/zero", b->name);
    size_t n = 10007, lo = 3, len = 5000, nb = (size_t)9 << 17, big = nb + 3 + 2 * 5, bad = 0;
    float *h = frand(n, -1, 1), *d = b->alloc(n * 4), *d2 = b->alloc(n * 4);
    stat_true(&st, d != NULL && d2 != NULL, "alloc returned NULL");
    float *back = from_backend(b, d, n);
    for (size_t i = 0; i < n; i++) bad += back[i] != 0.0f;
    stat_true(&st, bad == 0, "alloc: %zu of %zu floats not zero", bad, n);
    free(back);
    b->upload(d, h, n * 4);
    back = from_backend(b, d, n);
    stat_true(&st, memcmp(back, h, n * 4) == 0, "upload/download: bytes differ");
    free(back);
    b->copy(d2, d, n * 4);
    b->zero(d2 + lo, len * 4);
    b->synchronize();
    back = from_backend(b, d2, n);
    bad = 0;
    for (size_t i = 0; i < n; i++) {
        float want = (i >= lo && i < lo + len) ? 0.0f : h[i];
        bad += memcmp(&back[i], &want, sizeof want) != 0;
    }
    stat_true(&st, bad == 0, "copy, then zero of [%zu, %zu): %zu floats wrong", lo, lo + len, bad);
    free(back);
    float *hb = malloc(sizeof(float) * big), *db = b->alloc(sizeof(float) * big);
    for (size_t i = 0; i < big; i++) hb[i] = 1.0f + (float)(i % 7);
    b->upload(db, hb, sizeof(float) * big);
    b->zero(db + 5, sizeof(float) * (nb + 3));
    b->download(hb, db, sizeof(float) * big);
    bad = 0;
    for (size_t i = 0; i < big; i++) bad += hb[i] != ((i >= 5 && i < 5 + nb + 3) ? 0.0f : 1.0f + (float)(i % 7));
    stat_true(&st, bad == 0, "zero of a large block: %zu floats wrong", bad);
    b->free(db), b->free(d), b->free(d2), b->free(NULL);
    free(hb), free(h);
    stat_end(&st);
}

/* matmul's output may lie right next to a range held by matmul_hold (ops.h forbids only an
 * overlap): C = buf[10..25) between held buf[0..10) and buf[25..35) is accepted and computed. */
static void test_matmul_next_to_held(void) {
    Stat st;
    stat_begin(&st, "matmul next to held ranges");
    float *buf = frand(35, -1, 1), *A = frand(3 * 4, -1, 1), *B = frand(4 * 5, -1, 1);
    cpu->matmul_hold(buf, 10);
    cpu->matmul_keep(buf + 25, 10);
    cpu->matmul(buf + 10, A, B, 3, 5, 4, 0, 0, 1.0f, 0.0f);
    cpu->matmul_hold(NULL, 0);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 5; j++) {
            double s = 0;
            for (int k = 0; k < 4; k++) s += (double)A[i * 4 + k] * B[k * 5 + j];
            stat_add(&st, buf[10 + i * 5 + j], s, FWD_ATOL, FWD_RTOL, "C", i * 5 + j);
        }
    stat_end(&st);
    free(buf), free(A), free(B);
}

/* x rounded to bfloat16 as the backends round it (backend_cpu_round_bf16), widened back. */
static double bf16_value(float x) {
    uint16_t h;
    backend_cpu_round_bf16(&h, &x, 1);
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Precision bf16 against the double-precision product of the bf16-rounded inputs, which it must
 * equal to within fp32 accumulation (1e-5 relative at K = 71): TF32's rounding (what cuBLAS's
 * CUBLAS_COMPUTE_32F_FAST_16BF gave on an H100, about 2e-3 away here) or none fails. bias = 0:
 * matmul, C[M,Nc] = op(A) op(B) + beta C for each transA, transB and beta 0 and 1; bias = 1:
 * matmul_bias_forward, out[M,Nc] = inp[M,K] w[Nc,K]ᵀ + b (+ ReLU). Each twice: with the default
 * staging buffer, and with one of 500 elements a half (blocks of 7 rows and 7 columns at K = 71:
 * ops/cuda/cuda.h backend_cuda_set_bf16_stage), which must give the same. Its inputs come from a
 * stream of their own, so the checks after it draw what they drew before it existed. */
static void bf16_against_reference(int bias) {
    Rng outer = optest_rng;
    rng_seed(&optest_rng, 20261127, 16 + bias);
    int M = 37, Nc = 53, K = 71;
    size_t na = (size_t)M * K, nb = (size_t)K * Nc, nc = (size_t)M * Nc;
    float *ha = frand_pm1(na), *hb = frand_pm1(nb), *hc = frand_pm1(nc), *hbias = frand_pm1(Nc);
    float *ref = malloc(nc * sizeof *ref);
    float *ga = to_backend(gpu, ha, na), *gb = to_backend(gpu, hb, nb);
    float *gbias = to_backend(gpu, hbias, (size_t)Nc), *gc = gpu->alloc(nc * sizeof(float));
    for (int stage = 0; stage < 2; stage++) {
        size_t before = stage ? backend_cuda_set_bf16_stage(500) : 0;
        for (int v = 0; v < 8; v++) { /* matmul: transA, transB, beta; bias: relu */
            int ta = bias ? 0 : v & 1, tb = bias ? 1 : (v >> 1) & 1, relu = bias && (v & 1);
            float beta = bias ? 0.0f : (float)(v >> 2);
            if (bias && v > 1) break;
            for (int i = 0; i < M; i++)
                for (int j = 0; j < Nc; j++) {
                    double sum = bias ? hbias[j] : beta * (double)hc[(size_t)i * Nc + j];
                    for (int k = 0; k < K; k++)
                        sum += bf16_value(ha[ta ? (size_t)k * M + i : (size_t)i * K + k]) *
                               bf16_value(hb[tb ? (size_t)j * K + k : (size_t)k * Nc + j]);
                    ref[(size_t)i * Nc + j] = (float)(relu && sum < 0.0 ? 0.0 : sum);
                }
            gpu->upload(gc, hc, nc * sizeof(float));
            backend_cuda_set_precision(BACKEND_PRECISION_BF16);
            if (bias)
                gpu->matmul_bias_forward(gc, ga, gb, gbias, M, Nc, K, relu);
            else
                gpu->matmul(gc, ga, gb, M, Nc, K, ta, tb, 1.0f, beta);
            backend_cuda_set_precision(BACKEND_PRECISION_FP32);
            float *g = from_backend(gpu, gc, nc);
            char what[128];
            if (bias)
                snprintf(what, sizeof what, "matmul_bias_forward at bf16 relu=%d%s", relu,
                         stage ? " (500-element staging)" : "");
            else
                snprintf(what, sizeof what, "matmul at bf16 transA=%d transB=%d beta=%g%s", ta,
                         tb, (double)beta, stage ? " (500-element staging)" : "");
            double e = test_rel_err(g, ref, nc, NULL);
            EXPECT(e < 1e-5, "%s: relative error %.3g against the product of the bf16-rounded "
                   "inputs, want < 1e-05", what, e);
            if (v == 0)
                printf("  %s: relative error %.2e against the bf16-rounded inputs' product\n",
                       what, e);
            free(g);
        }
        if (stage) backend_cuda_set_bf16_stage(before);
    }
    gpu->free(ga), gpu->free(gb), gpu->free(gbias), gpu->free(gc);
    free(ha), free(hb), free(hc), free(hbias), free(ref);
    optest_rng = outer;
}

/* train.precision: tf32 and bf16 round the inputs (10 and 7 mantissa bits), so the product
 * moves away from the cpu's fp32 one by about 2^-11 and 2^-8 relative, and no further (matmul at
 * both; matmul_bias_forward, a dense layer's shape with ReLU, at tf32); and at bf16 the product
 * of the bf16-rounded inputs (bf16_against_reference). */
static void vs_cpu_precision(void) {
    if (!HAVE(matmul) || !HAVE(matmul_bias_forward)) return;
    static const struct { int prec, bias; double lo, hi; const char *name; } runs[3] = {
        {BACKEND_PRECISION_TF32, 0, 1e-6, 3e-3, "matmul at precision tf32"},
        {BACKEND_PRECISION_BF16, 0, 1e-5, 2e-2, "matmul at precision bf16"},
        {BACKEND_PRECISION_TF32, 1, 1e-6, 3e-3, "matmul_bias_forward at precision tf32"}};
    int M = 37, Nc = 53, K = 71;
    size_t n[3] = {(size_t)M * K, (size_t)K * Nc, (size_t)Nc}, nc = (size_t)M * Nc;
    float *h[3], *g[3], *c[3], *gc = gpu->alloc(nc * sizeof(float)), *cc = cpu->alloc(nc * sizeof(float));
    for (int i = 0; i < 3; i++) h[i] = frand_pm1(n[i]), g[i] = to_backend(gpu, h[i], n[i]), c[i] = to_backend(cpu, h[i], n[i]);
    for (int k = 0; k < 3; k++) { /* matmul_bias_forward: w[Nc, K] */
        backend_cuda_set_precision(runs[k].prec);
        if (runs[k].bias)
            cpu->matmul_bias_forward(cc, c[0], c[1], c[2], M, Nc, K, 1), gpu->matmul_bias_forward(gc, g[0], g[1], g[2], M, Nc, K, 1);
        else
            cpu->matmul(cc, c[0], c[1], M, Nc, K, 0, 0, 1.0f, 0.0f), gpu->matmul(gc, g[0], g[1], M, Nc, K, 0, 0, 1.0f, 0.0f);
        backend_cuda_set_precision(BACKEND_PRECISION_FP32);
        float *gh = from_backend(gpu, gc, nc), *ch = from_backend(cpu, cc, nc);
        snprintf(out_seen[n_seen - 1].what, sizeof out_seen[0].what, "%s", runs[k].name);
        double e = test_rel_err(gh, ch, nc, NULL);
        EXPECT(e > runs[k].lo && e < runs[k].hi, "%s: relative error %.3g against the cpu's fp32, want "
               "(%.0e, %.0e)", runs[k].name, e, runs[k].lo, runs[k].hi);
        printf("  %s: relative error %.2e against the cpu's fp32\n", runs[k].name, e);
        free(gh), free(ch);
    }
    for (int i = 0; i < 3; i++) free(h[i]), gpu->free(g[i]), cpu->free(c[i]);
    gpu->free(gc), cpu->free(cc);
    bf16_against_reference(0);
    bf16_against_reference(1);
}

/* ========================================================================================== */
/* OpKind, supports_op, backend_require_ops                                                   */

/* A copy of the CPU table with one op removed is refused before training, by name. */
static void test_require_ops(void) {
    Backend crippled = *backend_cpu();
    crippled.name = "cuda";
    crippled.lstm_cell_forward = NULL;
    crippled.flash_attn_backward = NULL;
    EXPECT(!supports_op(&crippled, OP_LSTM_CELL_FORWARD), "lstm_cell_forward still supported");
    EXPECT(supports_op(&crippled, OP_LSTM_CELL_BACKWARD), "lstm_cell_backward lost");
    const OpKind ops[] = {OP_MATMUL, OP_LSTM_CELL_FORWARD, OP_FLASH_ATTN_BACKWARD,
                          OP_LSTM_CELL_FORWARD};
    Err err = {0};
    EXPECT(backend_require_ops(&crippled, ops, 4, &err) != STATUS_OK, "missing ops accepted");
    EXPECT(strcmp(err.msg, "cuda backend: no lstm_cell_forward, flash_attn_backward; use "
                           "train.device = cpu") == 0,
           "message: %s", err.msg);
    EXPECT(backend_require_ops(backend_cpu(), ops, 4, &err) == STATUS_OK, "cpu refused");
    for (int op = 0; op < OP_COUNT; op++)
        EXPECT(supports_op(backend_cpu(), (OpKind)op), "cpu lacks %s", op_name((OpKind)op));
    EXPECT(strcmp(op_name(OP_FLASH_ATTN_BACKWARD), "flash_attn_backward") == 0, "op_name");
}

/* ========================================================================================== */
/* the harness: one table of rows, each run on every backend of the mode                     */

/* A buffer of a row. Its length is the product of the dims its letters name (size; "" = 1). */
enum { IN = 1, INT, OUT, ACC, OVW, WORK, IOUT, RET };
typedef struct {
    const char *name;
    int role;         /* IN: read only, drawn in [lo, hi); INT: ints below dim `below` (or lo);
                       * OUT: written (prefilled in [lo, hi), or lo where lo == hi); ACC: added
                       * into (a random prefill); OVW: a gradient ops.h says is overwritten;
                       * WORK: the row's workspace (work_new, its size from the row's work);
                       * IOUT: ints written (prefilled with lo); RET: doubles an op returns, in
                       * host memory, which the row's calls store through p[i] */
    const char *size;
    float lo, hi;
    double tol;       /* another backend against the cpu, normwise (RET: relative to the largest
                       * finite |cpu|); 0: bit for bit; < 0: element-wise (emit) */
    int of;           /* ACC/OVW: 1 + the buffer it is the gradient of; IN: 1 + the output it is
                       * dL/d of (the loss of the finite differences is Σ this ⊙ that) */
    char below;       /* INT: the dim its values stay below */
} Buf;

enum { MAXB = 20, MAXD = 12 };
typedef struct Row {
    const char *name;
    const char *ops;  /* the OpKinds it checks, comma-separated (--ops, and the table check) */
    const char *dims; /* one letter per dim of a shape */
    const int (*sh)[MAXD];
    int nsh;          /* shapes; a dim -k runs 0 .. k-1 */
    Buf b[MAXB];
    void (*fwd)(const Backend *be, void **p, const int *d);
    void (*bwd)(const Backend *be, void **p, const int *d); /* NULL: no backward */
    /* fills the expected final value of the buffers whose bit it sets, r[i] holding the
     * buffer's prefill on entry; the cpu must match within ref_tol (normwise against the largest
     * finite |ref|; 0: exactly; < 0: element-wise |cpu − ref| <= |ref_tol| max(1 + |ref|, floor));
     * a reference that is not finite, exactly */
    unsigned (*ref)(double **r, void **h, const int *d);
    double ref_tol;
    void (*prep)(void **h, const int *d);                   /* plants values after the draw */
    double (*floor)(int i, void **h, const int *d);         /* the size of terms that cancel */
    void (*extra)(const Backend *be, void **p, void **h, const int *d, Stat *st);
    int (*fd)(const int *d);                                /* finite differences on (small) */
    size_t (*work)(const Backend *be, const int *d);
    double fd_tol; /* normwise: |g − g_fd| / max(|g_fd|, tiny); 0: FD_NORM_TOL */
} Row;
#define SHAPES(a) a, (int)(sizeof a / sizeof a[0])
#define FD_NORM_TOL 1e-2 /* and tiny = FD_ATOL / FD_NORM_TOL: 1e-3 absolute */

static int dim(const Row *r, const int *d, char c) {
    const char *p = strchr(r->dims, c);
    return p ? d[p - r->dims] : 1;
}
static size_t esz(const Buf *b) { return b->role == RET ? sizeof(double) : 4; } /* bytes */
static size_t buf_len(const Row *r, const int *d, int i) {
    size_t n = 1;
    for (const char *s = r->b[i].size; *s; s++) n *= (size_t)dim(r, d, *s);
    return n;
}
static int nbufs(const Row *r) {
    int n = 0;
    while (n < MAXB && r->b[n].name) n++;
    return n;
}

/* The outputs of the cpu (the first backend of a row's shape) that the next backends are
 * compared with, in the order emit saw them. */
static struct { void *h; size_t n; } *emitted;
static size_t n_emitted, cap_emitted, i_emitted;
static const Backend *g_be; /* the backend of the current run */
static char g_nm[200];      /* the current shape's name (shape_name) */

/* Downloads n floats (ints: isint) of be's memory and compares them: the cpu's are kept, another
 * backend's compared with the cpu's (tol normwise against max(max|cpu|, floor); 0: bit for
 * bit) and recorded for the schedule check. */
static void emit_as(int role, const char *what, const void *p, size_t n, double tol, double floor) {
    const Backend *be = g_be;
    size_t seen = n_seen, nd = n;
    float *g;
    if (role == RET) { /* host memory: its doubles as 2 n floats */
        g = malloc(2 * n * sizeof *g + 1);
        if (!g) exit(2);
        memcpy(g, p, n * sizeof(double));
        n *= 2;
        if (be == gpu && !g_quiet) record_output(what, g, n);
    } else {
        g = from_backend(be, p, n);
    }
    if (be == cpu || !gpu) {
        if (n_emitted == cap_emitted) {
            cap_emitted = cap_emitted ? 2 * cap_emitted : 64;
            emitted = realloc(emitted, cap_emitted * sizeof *emitted);
            if (!emitted) exit(2);
        }
        emitted[n_emitted].h = g;
        emitted[n_emitted++].n = n;
        return;
    }
    if (n_seen > seen) snprintf(out_seen[n_seen - 1].what, sizeof out_seen[0].what, "%s", what);
    EXPECT(i_emitted < n_emitted && emitted[i_emitted].n == n, "%s: the cpu gave no such output",
           what);
    if (i_emitted >= n_emitted) {
        free(g);
        return;
    }
    const float *c = emitted[i_emitted++].h;
    if (tol == 0) {
        size_t bad = 0, first = 0;
        for (size_t i = 0; i < n; i++)
            if (memcmp(&g[i], &c[i], sizeof(float)) != 0 && !bad++) first = i;
        EXPECT(bad == 0, "%s: %zu of %zu values differ from the cpu (first at %zu: %.9g, cpu %.9g)",
               what, bad, n, first, bad ? (double)g[first] : 0.0, bad ? (double)c[first] : 0.0);
    } else if (role == RET) { /* max|g − c| / max(largest finite |c|, floor, or 1 where 0) */
        const double *gd = (const double *)g, *cd = (const double *)c;
        double num = 0, den = floor;
        for (size_t i = 0; i < nd; i++) {
            double di = gd[i] == cd[i] || (isnan(gd[i]) && isnan(cd[i])) ? 0 : fabs(gd[i] - cd[i]);
            if (!(di <= num)) num = isnan(di) ? INFINITY : di;
            if (isfinite(cd[i])) den = fmax(den, fabs(cd[i]));
        }
        EXPECT(num / (den > 0 ? den : 1) < tol, "%s: %.17g, the cpu %.17g (relative error %.3g >= "
               "%.1g)", what, gd[0], cd[0], num / (den > 0 ? den : 1), tol);
    } else if (tol < 0) { /* element-wise: |g − c| <= |tol| max(1 + |c|, floor), infinities exactly */
        size_t bad = 0;
        for (size_t i = 0; i < n; i++)
            bad += isinf(c[i]) || isinf(g[i]) ? g[i] != c[i]
                                              : !(fabs((double)g[i] - c[i]) <= -tol * fmax(1 + fabs(c[i]), floor));
        EXPECT(bad == 0, "%s: %zu of %zu values differ from the cpu's", what, bad, n);
    } else {
        double cmax, e = test_rel_err(g, c, n, &cmax);
        if (floor > cmax) e = (cmax > 0 ? e * cmax : e) / floor;
        EXPECT(e < tol, "%s: relative error %.3g >= %.1g (n = %zu)", what, e, tol, n);
        if (getenv("TEST_PRINT_ERRORS")) printf("    error %.3g (tolerance %.0e): %s\n", e, tol, what);
    }
    free(g);
}
static void emit(const char *what, const void *p, size_t n, double tol, double floor) {
    emit_as(OUT, what, p, n, tol, floor);
}
static void emit_reset(void) {
    for (size_t i = 0; i < n_emitted; i++) free(emitted[i].h);
    n_emitted = i_emitted = 0;
}

static void shape_name(char *s, size_t cap, const Row *r, const int *d) {
    int k = snprintf(s, cap, "%s", r->name);
    for (int i = 0; r->dims[i] && k < (int)cap; i++)
        k += snprintf(s + k, cap - (size_t)k, " %c=%d", r->dims[i], d[i]);
}

/* The row's buffers in be's memory (copies of h; RET in host memory), its workspaces from
 * work_new. */
static void to_dev(const Row *r, const int *d, const Backend *be, void **h, void **p, Work *w) {
    for (int i = 0; i < nbufs(r); i++) {
        size_t n = buf_len(r, d, i);
        if (r->b[i].role == WORK) {
            *w = work_new(be, r->work(be, d));
            p[i] = w->p;
            continue;
        }
        if (r->b[i].role == RET) {
            p[i] = test_calloc(n + 1, sizeof(double));
            continue;
        }
        p[i] = be->alloc(n * 4); /* exactly: the guards of the backend under test follow */
        be->upload(p[i], h[i], n * 4);
    }
}
static void free_dev(const Row *r, const Backend *be, void **p, Work *w) {
    for (int i = 0; i < nbufs(r); i++)
        if (r->b[i].role == WORK)
            work_done(*w, r->name);
        else if (r->b[i].role == RET)
            free(p[i]);
        else
            be->free(p[i]);
}

/* L = Σ dout ⊙ out over the IN buffers that name an output: fwd on copies of h (x at its
 * perturbed value), in double. */
static double fd_loss(const Row *r, const int *d, void **h, void **c) {
    for (int i = 0; i < nbufs(r); i++)
        if (r->b[i].role != WORK) memcpy(c[i], h[i], buf_len(r, d, i) * esz(&r->b[i]));
    r->fwd(backend_cpu(), c, d);
    double l = 0;
    for (int i = 0; i < nbufs(r); i++) {
        int o = r->b[i].of - 1;
        if (r->b[i].role != IN || o < 0) continue;
        if (r->b[o].role == RET) /* a returned scalar: dL/d of it in h[i] */
            for (size_t k = 0; k < buf_len(r, d, o); k++) l += (double)((float *)h[i])[k] * ((double *)c[o])[k];
        else
            l += dot_rd(h[i], c[o], buf_len(r, d, o));
    }
    return l;
}

/* The cpu's own checks of one shape: the reference (ref), then, with a backward, the gradients
 * from zeroed buffers against central finite differences (normwise), and the accumulate
 * convention (res: the buffers after the run onto the prefills). */
static void cpu_checks(const Row *r, const int *d, void **h, void **res, const char *nm) {
    int nb = nbufs(r);
    Stat st;
    if (r->ref) {
        double *rv[MAXB] = {0};
        for (int i = 0; i < nb; i++) {
            if (r->b[i].role == WORK || r->b[i].role == INT) continue;
            size_t n = buf_len(r, d, i);
            rv[i] = test_dnew(n + 1);
            for (size_t k = 0; k < n; k++)
                rv[i][k] = r->b[i].role == IOUT  ? ((int *)h[i])[k]
                           : r->b[i].role == RET ? ((double *)h[i])[k] : ((float *)h[i])[k];
        }
        unsigned got = r->ref(rv, h, d);
        stat_begin(&st, "%s: against the reference", nm);
        for (int i = 0; i < nb; i++) {
            if (!(got >> i & 1)) continue;
            size_t n = buf_len(r, d, i), bad = 0;
            double mx = 0, e = 0, fl = r->floor ? r->floor(i | 0x100, h, d) : 0;
            for (size_t k = 0; k < n; k++)
                if (isfinite(rv[i][k])) mx = fmax(mx, fabs(rv[i][k]));
            if (r->ref_tol > 0) mx = fmax(mx, fl);
            for (size_t k = 0; k < n; k++) {
                int role = r->b[i].role;
                double g = role == IOUT ? ((int *)res[i])[k] : role == RET ? ((double *)res[i])[k] : ((float *)res[i])[k];
                if (r->ref_tol == 0 || !isfinite(rv[i][k]))
                    stat_true(&st, g == rv[i][k] || (isnan(g) && isnan(rv[i][k])), "%s[%zu] = %.9g, "
                              "want %.9g", r->b[i].name, k, g, rv[i][k]);
                else if (r->ref_tol < 0)
                    bad += !(fabs(g - rv[i][k]) <= -r->ref_tol * fmax(1 + fabs(rv[i][k]), fl));
                else
                    e = fmax(e, isnan(g) ? INFINITY : fabs(g - rv[i][k]) / (mx > 0 ? mx : 1));
            }
            if (r->ref_tol > 0) stat_add(&st, e, 0, r->ref_tol, 0, r->b[i].name, 0);
            if (r->ref_tol < 0)
                stat_true(&st, bad == 0, "%s: %zu of %zu values off the reference by more than "
                          "%.0e (1 + |ref|)", r->b[i].name, bad, n, -r->ref_tol);
        }
        stat_end(&st);
        for (int i = 0; i < nb; i++) free(rv[i]);
    }
    if (!r->bwd || (r->fd && !r->fd(d))) return;
    size_t tot = 0;
    for (int i = 0; i < nb; i++) tot += buf_len(r, d, i);
    if (!r->fd && tot > 3000) return;
    /* the gradients from zeroed buffers */
    void *c[MAXB], *g0[MAXB] = {0}, *wp = NULL;
    for (int i = 0; i < nb; i++) {
        size_t n = buf_len(r, d, i);
        if (r->b[i].role == WORK) {
            c[i] = wp = fnew(r->work(backend_cpu(), d) + 1);
            h[i] = wp;
            continue;
        }
        c[i] = fdup(h[i], n * esz(&r->b[i]) / 4);
        if (r->b[i].role == ACC && r->b[i].of) memset(c[i], 0, n * 4);
        if (r->b[i].role == OVW) memset(c[i], 0, n * 4);
    }
    r->fwd(backend_cpu(), c, d);
    r->bwd(backend_cpu(), c, d);
    stat_begin(&st, "%s: gradients accumulate (or overwrite)", nm);
    for (int i = 0; i < nb; i++) {
        if ((r->b[i].role != ACC || !r->b[i].of) && r->b[i].role != OVW) continue;
        size_t n = buf_len(r, d, i);
        g0[i] = fdup(c[i], n);
        if (r->b[i].role == OVW)
            stat_same(&st, r->b[i].name, res[i], g0[i], n);
        else
            accum_check(&st, r->b[i].name, res[i], h[i], g0[i], n);
    }
    stat_end(&st);
    stat_begin(&st, "%s: gradients against finite differences (normwise)", nm);
    for (int i = 0; i < nb; i++) {
        if (!g0[i] || !r->b[i].of) continue;
        int x = r->b[i].of - 1;
        size_t n = buf_len(r, d, x);
        float *xs = h[x];
        double num = 0, den = 0;
        for (size_t k = 0; k < n; k++) {
            float x0 = xs[k];
            xs[k] = x0 + FD_EPS;
            double lp = fd_loss(r, d, h, c);
            xs[k] = x0 - FD_EPS;
            double lm = fd_loss(r, d, h, c);
            xs[k] = x0;
            double fdv = (lp - lm) / (2.0 * FD_EPS), gv = ((float *)g0[i])[k];
            num += (gv - fdv) * (gv - fdv), den += fdv * fdv;
        }
        double e = sqrt(num) / fmax(sqrt(den), FD_ATOL / FD_NORM_TOL);
        stat_add(&st, e, 0, r->fd_tol ? r->fd_tol : FD_NORM_TOL, 0, r->b[i].name, 0);
    }
    stat_end(&st);
    for (int i = 0; i < nb; i++) {
        if (r->b[i].role == WORK) h[i] = NULL;
        free(c[i] == wp ? NULL : c[i]), free(g0[i]);
    }
    free(wp);
}

/* One shape of a row: inputs drawn (from a stream of its own), then on the cpu and, in the
 * --backend mode, on the backend under test: the call (fwd, then bwd onto the prefills), every
 * written buffer emitted (compared with the cpu's), the inputs checked unchanged, the row's extra
 * checks; the cpu's own checks in the cpu mode. */
static void run_shape(const Row *r, int ri, int si, const int *d) {
    int nb = nbufs(r);
    char nm[200];
    shape_name(nm, sizeof nm, r, d);
    snprintf(g_nm, sizeof g_nm, "%s", nm);
    size_t big = 0;
    for (int i = 0; i < nb; i++)
        if (r->b[i].role != WORK && buf_len(r, d, i) > big) big = buf_len(r, d, i);
    g_quiet = big > EW_GRID;
    if (gpu && g_quiet && (g_pass > 0 || test_sanitized() || TSAN_BUILD)) return;
    rng_seed(&optest_rng, 20240601u, 1000u * (uint64_t)ri + (uint64_t)si);
    void *h[MAXB] = {0}, *p[MAXB];
    for (int i = 0; i < nb; i++) {
        const Buf *b = &r->b[i];
        size_t n = buf_len(r, d, i);
        if (b->role == INT || b->role == IOUT) {
            int *v = test_calloc(n + 1, sizeof(int));
            for (size_t k = 0; k < n; k++)
                v[k] = b->below ? (int)rng_below(&optest_rng, (uint32_t)dim(r, d, b->below)) : (int)b->lo;
            h[i] = v;
        } else if (b->role == RET) {
            h[i] = test_calloc(n + 1, sizeof(double));
        } else if (b->role != WORK) {
            h[i] = b->lo == b->hi ? fnew(n + 1) : frand(n + 1, b->lo, b->hi);
            if (b->lo == b->hi)
                for (size_t k = 0; k < n; k++) ((float *)h[i])[k] = b->lo;
        }
    }
    if (r->prep) r->prep(h, d);
    const Backend *bes[2] = {cpu, gpu};
    void *res[MAXB] = {0};
    for (int k = 0; k < (gpu ? 2 : 1); k++) {
        const Backend *be = g_be = bes[k];
        Work w = {0};
        i_emitted = 0;
        to_dev(r, d, be, h, p, &w);
        r->fwd(be, p, d);
        if (r->bwd) r->bwd(be, p, d);
        char what[260];
        for (int i = 0; i < nb; i++) {
            const Buf *b = &r->b[i];
            size_t n = buf_len(r, d, i);
            if (b->role == WORK) continue;
            snprintf(what, sizeof what, "%s: %s", nm, b->name);
            if (b->role == IN || b->role == INT) { /* unchanged */
                float *got = from_backend(be, p[i], n);
                EXPECT(memcmp(got, h[i], n * 4) == 0, "%s (%s) changed (an input)", what, be->name);
                free(got);
            } else if (be == cpu && !gpu) {
                res[i] = b->role == RET ? fdup(p[i], 2 * n) : from_backend(be, p[i], n);
            } else {
                emit_as(b->role, what, p[i], n, b->tol, r->floor ? r->floor(i, h, d) : 0);
            }
        }
        if (r->extra) {
            Stat st;
            stat_begin(&st, "%s: %s", nm, be->name);
            r->extra(be, p, h, d, &st);
            stat_end(&st);
        }
        free_dev(r, be, p, &w);
    }
    if (!gpu) cpu_checks(r, d, h, res, nm);
    for (int i = 0; i < nb; i++) free(h[i]), free(res[i]);
    emit_reset();
    g_quiet = 0;
}

/* Every shape of a row (a dim -k runs over 0 .. k-1, the last dim fastest). */
static void run_row(const Row *r, int ri) {
    for (int s = 0; s < r->nsh; s++) {
        int d[MAXD] = {0}, nd = (int)strlen(r->dims), k;
        for (k = 0; k < nd; k++) d[k] = r->sh[s][k] < 0 ? 0 : r->sh[s][k];
        for (int idx = 0;; idx++) {
            run_shape(r, ri, s * 64 + idx, d);
            for (k = nd - 1; k >= 0; k--) {
                if (r->sh[s][k] < 0 && ++d[k] < -r->sh[s][k]) break;
                if (r->sh[s][k] < 0) d[k] = 0;
            }
            if (k < 0) break;
        }
    }
}

/* ========================================================================================== */
/* the rows                                                                                   */

#define F(i) ((float *)p[i])
#define I(i) ((int *)p[i])
#define HF(i) ((float *)h[i])
#define HI(i) ((int *)h[i])

/* matmul: C = alpha op(A) op(B) + beta C, every transpose, beta 0, -0.3 and 1, alpha 0.75. */
static const float BETAS[3] = {0.0f, -0.3f, 1.0f};
static void mm_fwd(const Backend *be, void **p, const int *d) {
    be->matmul(F(2), F(0), F(1), d[0], d[1], d[2], d[3], d[4], 0.75f, BETAS[d[5]]);
}
static unsigned mm_ref(double **r, void **h, const int *d) {
    int M = d[0], N = d[1], K = d[2], ta = d[3], tb = d[4];
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = 0;
            for (int k = 0; k < K; k++)
                s += (double)HF(0)[ta ? k * M + i : i * K + k] * HF(1)[tb ? j * K + k : k * N + j];
            r[2][i * N + j] = 0.75 * s + BETAS[d[5]] * r[2][i * N + j];
        }
    return 1u << 2;
}
static const int mm_sh[][MAXD] = {{3, 5, 4, -2, -2, -3}, {3, 1, 4, -2, -2, -3},
                                  {37, 53, 71, -2, -2, -3}, {1, 29, 130, -2, -2, -3},
                                  {64, 1, 17, -2, -2, -3},  {5, 300, 1, -2, -2, -3}};

/* matmul_bias_forward: out = inp wᵀ + b (+ ReLU), every pointer one float past an allocation;
 * on the cpu bit for bit the unfused ops it replaces. */
static void mbf_fwd(const Backend *be, void **p, const int *d) {
    be->matmul_bias_forward(F(3) + 1, F(0) + 1, F(1) + 1, F(2) + 1, d[0], d[1], d[2], d[3]);
}
static unsigned mbf_ref(double **r, void **h, const int *d) {
    int N = d[0], C = d[1], K = d[2];
    for (int n = 0; n < N; n++)
        for (int c = 0; c < C; c++) {
            double s = HF(2)[1 + c];
            for (int k = 0; k < K; k++) s += (double)HF(0)[1 + n * K + k] * HF(1)[1 + c * K + k];
            r[3][1 + n * C + c] = d[3] && s < 0 ? 0 : s;
        }
    return 1u << 3;
}
static void mbf_extra(const Backend *be, void **p, void **h, const int *d, Stat *st) {
    if (be != cpu) return;
    int N = d[0], C = d[1], K = d[2];
    float *ref = fnew((size_t)N * C), *out = from_backend(be, F(3) + 1, (size_t)N * C);
    be->matmul(ref, F(0) + 1, F(1) + 1, N, C, K, 0, 1, 1.0f, 0.0f);
    if (d[3])
        be->bias_relu_dropout_forward(ref, ref, F(2) + 1, 0.0f, 0, N, C);
    else
        be->bias_forward(ref, F(2) + 1, N, C);
    stat_same(st, "the unfused ops", out, ref, (size_t)N * C);
    free(ref), free(out);
    (void)h;
}
static const int mbf_sh[][MAXD] = {/* N, C, K, relu, then N·K+1, C·K+1, C+1, N·C+1 */
    {6, 5, 7, -2, 43, 36, 6, 31},         {37, 53, 71, -2, 2628, 3764, 54, 1962},
    {1, 29, 130, -2, 131, 3771, 30, 30},  {64, 1, 17, -2, 1089, 18, 2, 65},
    {5, 300, 1, -2, 6, 301, 301, 1501}};

/* bias: out += bias (in place), dbias += column sums of dout; rows past bias.c's 65536 (two
 * sgemv calls), within 1e-6 of Σ|dout| on the cpu */
static void bias_fwd(const Backend *be, void **p, const int *d) { be->bias_forward(F(1), F(0), d[0], d[1]); }
static void bias_bwd(const Backend *be, void **p, const int *d) { be->bias_backward(F(3), F(2), d[0], d[1]); }
static unsigned bias_ref(double **r, void **h, const int *d) {
    for (int n = 0; n < d[0]; n++)
        for (int c = 0; c < d[1]; c++) {
            r[1][(size_t)n * d[1] + c] += HF(0)[c];
            r[3][c] += HF(2)[(size_t)n * d[1] + c];
        }
    return 1u << 1 | 1u << 3;
}
static double bias_floor(int i, void **h, const int *d) {
    if ((i & 0xff) != 3 || !(i & 0x100)) return 0;
    double m = 0;
    for (int c = 0; c < d[1]; c++) {
        double s = 0;
        for (int n = 0; n < d[0]; n++) s += fabs(HF(2)[(size_t)n * d[1] + c]);
        m = fmax(m, s * 1e-6 / 1e-5);
    }
    return m;
}
static const int bias_sh[][MAXD] = {{7, 6}, {129, 67}, {1, 5}, {1000, 1}, {3, 1031},
                                    {1, 3}, {65537, 3}, {70001, 3}, {4099, 257}};

/* axpy (y += a x; against the size of its two terms, which may cancel) and scale */
static void axpy_fwd(const Backend *be, void **p, const int *d) { be->axpy(F(1), -1.37f, F(0), (size_t)d[0]); }
static unsigned axpy_ref(double **r, void **h, const int *d) {
    for (int i = 0; i < d[0]; i++) r[1][i] += -1.37 * HF(0)[i];
    return 2;
}
static double axpy_floor(int i, void **h, const int *d) {
    double m = 0;
    for (int k = 0; k < d[0] && (i & 0xff) == 1; k++) m = fmax(m, fabs(HF(1)[k]) + 1.37 * fabs(HF(0)[k]));
    return m;
}
static void scale_fwd(const Backend *be, void **p, const int *d) { be->scale(F(0), 1.7f, (size_t)d[0]); }
static unsigned scale_ref(double **r, void **h, const int *d) {
    (void)h;
    for (int i = 0; i < d[0]; i++) r[0][i] *= 1.7f;
    return 1;
}
static const int n_sh[][MAXD] = {{1}, {255}, {1001}, {100003}, {300001}, {3000017}};

/* tanh, with 0 and ±20 planted; tanh_backward onto a prefill (against its terms' size) */
static void tanh_fwd(const Backend *be, void **p, const int *d) { be->tanh_forward(F(1), F(0), (size_t)d[0]); }
static void tanh_bwd(const Backend *be, void **p, const int *d) { be->tanh_backward(F(3), F(2), F(1), (size_t)d[0]); }
static void tanh_prep(void **h, const int *d) {
    for (int i = 0; i < 3 && i < d[0]; i++) HF(0)[i] = i == 0 ? 0.0f : i == 1 ? 20.0f : -20.0f;
}
static unsigned tanh_ref(double **r, void **h, const int *d) {
    for (int i = 0; i < d[0]; i++) r[1][i] = tanh((double)HF(0)[i]);
    return 2;
}
static double tanh_floor(int i, void **h, const int *d) {
    double m = 0;
    for (int k = 0; k < d[0] && i == 3; k++) m = fmax(m, fabs(HF(3)[k]) + fabs(HF(2)[k]));
    return m;
}
static const int tanh_sh[][MAXD] = {{53}, {1}, {257}, {100003}, {EW_GRID + 7}};

/* concat2, the backward into both halves, or one with the other NULL (w = 1: db NULL, 2: da) */
static void cat_fwd(const Backend *be, void **p, const int *d) {
    be->concat2_forward(F(2), F(0), F(1), d[0], d[1], d[2]);
}
static void cat_bwd(const Backend *be, void **p, const int *d) {
    be->concat2_backward(d[4] == 2 ? NULL : F(4), d[4] == 1 ? NULL : F(5), F(3), d[0], d[1], d[2]);
}
static unsigned cat_ref(double **r, void **h, const int *d) {
    int N = d[0], A = d[1], B = d[2], C = A + B;
    for (int n = 0; n < N; n++)
        for (int c = 0; c < C; c++) {
            double g = HF(3)[n * C + c];
            r[2][n * C + c] = c < A ? HF(0)[n * A + c] : HF(1)[n * B + c - A];
            if (c < A && d[4] != 2) r[4][n * A + c] = (float)(HF(4)[n * A + c] + g);
            if (c >= A && d[4] != 1) r[5][n * B + c - A] = (float)(HF(5)[n * B + c - A] + g);
        }
    return 1u << 2 | 1u << 4 | 1u << 5;
}
static int cat_fd(const int *d) { return d[4] == 0 && (size_t)d[0] * d[3] <= 100; }
static const int cat_sh[][MAXD] = {{3, 4, 5, 9, -3}, {1, 1, 1, 2, -3}, {37, 130, 3, 133, -3},
                                   {2, 1, 257, 258, -3}, {1021, 500, 531, 1031, 0}};

/* transpose01 (C = 1: 32 x 32 tiles, 37 x 70 two tile rows and three columns, partial) */
static void tr_fwd(const Backend *be, void **p, const int *d) { be->transpose01_forward(F(1), F(0), d[0], d[1], d[2]); }
static void tr_bwd(const Backend *be, void **p, const int *d) { be->transpose01_backward(F(3), F(2), d[0], d[1], d[2]); }
static unsigned tr_ref(double **r, void **h, const int *d) {
    int D0 = d[0], D1 = d[1], C = d[2];
    for (int i = 0; i < D0; i++)
        for (int j = 0; j < D1; j++)
            for (int c = 0; c < C; c++) {
                r[1][(j * D0 + i) * C + c] = HF(0)[(i * D1 + j) * C + c];
                r[3][(i * D1 + j) * C + c] = (float)(HF(3)[(i * D1 + j) * C + c] + HF(2)[(j * D0 + i) * C + c]);
            }
    return 2 | 8;
}
static const int tr_sh[][MAXD] = {{3, 4, 5}, {1, 7, 1}, {13, 9, 33}, {37, 70, 1}, {1021, 33, 32}};

/* permute0213: out[a,j,i,c] = inp[a,i,j,c]; swapped back, the identity */
static void pm_fwd(const Backend *be, void **p, const int *d) { be->permute0213_forward(F(1), F(0), d[0], d[1], d[2], d[3]); }
static void pm_bwd(const Backend *be, void **p, const int *d) { be->permute0213_backward(F(3), F(2), d[0], d[1], d[2], d[3]); }
static unsigned pm_ref(double **r, void **h, const int *d) {
    int A = d[0], D0 = d[1], D1 = d[2], C = d[3];
    for (int a = 0; a < A; a++)
        for (int i = 0; i < D0; i++)
            for (int j = 0; j < D1; j++)
                for (int c = 0; c < C; c++) {
                    size_t o = (((size_t)a * D1 + j) * D0 + i) * C + c, x = (((size_t)a * D0 + i) * D1 + j) * C + c;
                    r[1][o] = HF(0)[x];
                    r[3][x] = (float)(HF(3)[x] + HF(2)[o]);
                }
    return 2 | 8;
}
static void pm_extra(const Backend *be, void **p, void **h, const int *d, Stat *st) {
    size_t n = (size_t)d[0] * d[1] * d[2] * d[3];
    float *back = be->alloc(n * 4);
    be->permute0213_forward(back, F(1), d[0], d[2], d[1], d[3]);
    float *b = from_backend(be, back, n);
    stat_same(st, "permuted back", b, HF(0), n);
    free(b), be->free(back);
}
static const int pm_sh[][MAXD] = {{2, 3, 4, 5}, {3, 4, 1, 6}, {1, 1, 1, 1}, {3, 33, 8, 16},
                                  {3, 33, 8, 96}, {2, 33, 16, 1000}};

/* write_step: cache[n,t,:] = x[n,:] for n < N; the rest of the cache (a row N more) untouched */
static void ws_fwd(const Backend *be, void **p, const int *d) {
    be->write_step(F(0), F(1), d[0], d[1], d[3] == 0 ? 0 : d[3] == 1 ? d[1] / 2 : d[1] - 1, d[2]);
}
static unsigned ws_ref(double **r, void **h, const int *d) {
    int N = d[0], T = d[1], C = d[2], t = d[3] == 0 ? 0 : d[3] == 1 ? T / 2 : T - 1;
    for (int n = 0; n < N; n++)
        for (int c = 0; c < C; c++) r[0][((size_t)n * T + t) * C + c] = HF(1)[n * C + c];
    return 1;
}
static const int ws_sh[][MAXD] = {{3, 6, 5, -3, 4}, {1, 1, 1, -3, 2}, {7, 4, 65, -3, 8}, {1031, 2, 1021, -3, 1032}};

/* gather_rows (D = stride) and gather_rows_strided: repeated, out-of-order indices; dst has a
 * row more than written and the tail of each row past D: untouched; n = 0 (m = 1) writes nothing */
static void ga_fwd(const Backend *be, void **p, const int *d) {
    int n = d[4] ? 0 : d[1];
    if (d[5])
        be->gather_rows(F(2), F(0), I(1), n, d[2]);
    else
        be->gather_rows_strided(F(2), F(0), I(1), n, d[2], d[3]);
}
static unsigned ga_ref(double **r, void **h, const int *d) {
    int n = d[4] ? 0 : d[1], D = d[2], S = d[3];
    for (int i = 0; i < n; i++)
        for (int c = 0; c < D; c++) r[2][i * S + c] = HF(0)[HI(1)[i] * S + c];
    return 4;
}
static const int ga_sh[][MAXD] = {{4, 7, 5, 5, -2, -2, 8},   {4, 6, 5, 7, -2, 0, 7},      {4, 6, 7, 7, -2, -2, 7},
                                  {4, 6, 1, 7, -2, 0, 7},    {1, 1, 1, 1, -2, -2, 2},     {50, 100, 37, 37, -2, -2, 101},
                                  {50, 100, 60, 64, -2, 0, 101}, {9, 3, 300, 301, -2, 0, 4}, {1100, 1025, 1025, 1030, 0, 0, 1026}};

/* dropout: mask and out bit for bit the cpu's, p = 0 (out = inp and mask 1, exactly), 0.3, 0.5,
 * keys with the high bit set; e = 1, 2: keys whose element i draws u == p exactly (kept: u >= p),
 * found by search; dropout_backward onto a prefill (against the size of its terms) and onto zeros
 * (exactly). At n = 100000 the stream (dr_stream): the fraction kept 1 − p within 0.01; the
 * same key the same mask and out, bit for bit, and a prefix of n the prefix of the mask (mask[i]
 * depends on (key, i) alone); key + 1 and the key with its high bit flipped another mask (they
 * disagree on more than 30 %: 2p(1 − p) ≥ 0.42 expected); no structure along i (mask[i] and
 * mask[i + lag] agree as p² + (1 − p)² within 0.02). */
static const float PS[3] = {0.0f, 0.3f, 0.5f};
static const uint64_t KEYS[3] = {0x1234567ull, 0x8000000000000abcull, 0xffffffffffffffffull};
static const struct { uint64_t key; size_t i; } DR_EDGE[3] = {{0, 0}, {2391, 2954}, {19341, 640}}; /* p = PS[e] */
static uint64_t dr_key(const int *d) { return d[2] ? DR_EDGE[d[2]].key : KEYS[(d[0] + d[1]) % 3]; }
static void dr_fwd(const Backend *be, void **p, const int *d) {
    be->dropout_forward(F(1), F(2), F(0), PS[d[1]], dr_key(d), (size_t)d[0]);
}
static void dr_bwd(const Backend *be, void **p, const int *d) { be->dropout_backward(F(4), F(3), F(2), (size_t)d[0]); }
static void dr_stream(const Backend *be, void **p, const float *m, const float *o, float pr, uint64_t key,
                      size_t n, Stat *st) {
    static const size_t lags[6] = {1, 2, 255, 1024, 4096, 65536};
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) kept += m[i] != 0.0f;
    stat_add(st, (double)kept / n, 1.0 - pr, 0.01, 0, "fraction kept", 0);
    for (int l = 0; l < 6; l++) {
        size_t agree = 0, len = n - lags[l];
        for (size_t i = 0; i < len; i++) agree += (m[i] == 0.0f) == (m[i + lags[l]] == 0.0f);
        stat_add(st, (double)agree / len, (double)pr * pr + (1.0 - pr) * (1.0 - pr), 0.02, 0, "lag agreement", (long)lags[l]);
    }
    const uint64_t keys[4] = {key, key, key + 1, key ^ 0x8000000000000000ull};
    const size_t len[4] = {n, 1000, n, n};
    float *o2 = be->alloc(n * 4), *m2 = be->alloc(n * 4);
    for (int k = 0; k < 4; k++) {
        be->dropout_forward(o2, m2, F(0), pr, keys[k], len[k]);
        float *a = from_backend(be, m2, len[k]), *b = from_backend(be, o2, len[k]);
        size_t differ = 0;
        for (size_t i = 0; i < len[k]; i++) differ += (a[i] == 0.0f) != (m[i] == 0.0f);
        if (k < 2)
            stat_true(st, memcmp(a, m, len[k] * 4) == 0 && memcmp(b, o, len[k] * 4) == 0, "the same key%s: "
                      "another mask or out", k ? ", a prefix" : "");
        else
            stat_true(st, differ > n * 0.3, "key %s: a mask that differs in only %zu places",
                      k == 2 ? "+ 1" : "with its high bit flipped", differ);
        free(a), free(b);
    }
    be->free(o2), be->free(m2);
}
static void dr_extra(const Backend *be, void **p, void **h, const int *d, Stat *st) {
    size_t n = (size_t)d[0], e = DR_EDGE[d[2]].i;
    float *m = from_backend(be, F(2), n), *o = from_backend(be, F(1), n), pr = PS[d[1]];
    double keep = 1.0 / (1.0 - pr);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += m[i] == 0.0f ? o[i] != 0.0f
                            : fabs(m[i] - keep) > 1e-6 * keep || fabs(o[i] - HF(0)[i] * keep) > 1e-6 * (1 + fabs(o[i]));
    for (size_t i = 0; i < n && pr == 0; i++) bad += o[i] != HF(0)[i] || m[i] != 1.0f;
    stat_true(st, bad == 0, "%zu mask values neither 0 nor 1/(1-p), or out not inp * mask (p = 0: exactly inp)", bad);
    if (d[2]) { /* u == p at element e: the case's draw, and the element kept */
        float u = (float)(rng_hash(dr_key(d), e) >> 8) * (1.0f / 16777216.0f);
        stat_true(st, u == pr, "the case's draw %.9g is not p %.9g", u, pr);
        stat_true(st, m[e] == 1.0f / (1.0f - pr), "element %zu, u == p, dropped (mask %g)", e, m[e]);
    }
    if (n >= 100000 && pr > 0) dr_stream(be, p, m, o, pr, dr_key(d), n, st);
    float *z = be->alloc(n * 4); /* the backward onto zeros: exactly dout · mask */
    be->dropout_backward(z, F(3), F(2), n);
    emit("dropout_backward onto zeros", z, n, 0, 0);
    free(m), free(o), be->free(z);
}
static double dr_floor(int i, void **h, const int *d) {
    double m = 0;
    for (int k = 0; k < d[0] && i == 4; k++) m = fmax(m, fabs(HF(4)[k]) + fabs(HF(3)[k]) / (1.0 - PS[d[1]]));
    return m;
}
static const int dr_sh[][MAXD] = {{41, -3, 0}, {1, -3, 0}, {255, -3, 0}, {70001, -3, 0}, {100000, -3, 0},
                                  {2955, 1, 1}, {641, 2, 2}, {EW_GRID + 9, 1, 0}};

/* bias_relu_dropout_forward: out = max(inp + bias, 0) · dropout_forward's mask of the
 * pre-activations, bit for bit, pre-activations planted at 0 and ±1e-30; in place the same;
 * relu_dropout_backward overwrites; f = 1: pre-activations at least 0.05 from the kink, for the
 * finite differences (of inp, and of bias through bias_backward) */
static void rd_fwd(const Backend *be, void **p, const int *d) {
    be->bias_relu_dropout_forward(F(2), F(0), F(1), PS[d[2]], KEYS[(d[0] + d[2]) % 3], d[0], d[1]);
}
static void rd_bwd(const Backend *be, void **p, const int *d) {
    be->relu_dropout_backward(F(4), F(3), F(2), PS[d[2]], (size_t)d[0] * d[1]);
    be->bias_backward(F(5), F(4), d[0], d[1]);
}
static void rd_prep(void **h, const int *d) {
    int C = d[1];
    size_t n = (size_t)d[0] * C;
    if (d[3]) { /* |inp| in [0.05, 3), bias 0 */
        for (size_t i = 0; i < n; i++) HF(0)[i] = (i % 2 ? 1 : -1) * (0.05f + 1.5f * (1 + HF(0)[i] / 3));
        for (int c = 0; c < C; c++) HF(1)[c] = 0;
        return;
    }
    HF(0)[0] = -HF(1)[0];
    if (C > 2) HF(0)[1] = 1e-30f - HF(1)[1], HF(0)[2] = -1e-30f - HF(1)[2];
}
static unsigned rd_ref(double **r, void **h, const int *d) {
    int N = d[0], C = d[1];
    size_t n = (size_t)N * C;
    float *pre = fnew(n), *m = fnew(n), *t = fnew(n);
    for (size_t i = 0; i < n; i++) pre[i] = HF(0)[i] + HF(1)[i % C];
    backend_cpu()->dropout_forward(t, m, pre, PS[d[2]], KEYS[(d[0] + d[2]) % 3], n);
    for (size_t i = 0; i < n; i++) {
        r[2][i] = (pre[i] > 0 ? pre[i] : 0.0f) * m[i];
        r[4][i] = pre[i] > 0 ? HF(3)[i] * m[i] : 0.0f;
    }
    free(pre), free(m), free(t);
    return 4 | 16;
}
static void rd_extra(const Backend *be, void **p, void **h, const int *d, Stat *st) {
    size_t n = (size_t)d[0] * d[1];
    float *ip = be->alloc(n * 4);
    be->upload(ip, h[0], n * 4);
    be->bias_relu_dropout_forward(ip, ip, F(1), PS[d[2]], KEYS[(d[0] + d[2]) % 3], d[0], d[1]);
    float *a = from_backend(be, ip, n), *b = from_backend(be, F(2), n);
    stat_same(st, "in place", a, b, n);
    long dropped = 0;
    for (size_t i = 0; i < n; i++) dropped += b[i] == 0.0f && HF(0)[i] + HF(1)[i % d[1]] > 0;
    stat_true(st, PS[d[2]] > 0 ? n < 50 || dropped > 0 : dropped == 0, "%ld dropped at p = %g",
              dropped, PS[d[2]]);
    free(a), free(b), be->free(ip);
}
static int rd_fd(const int *d) { return d[3] == 1; }
static const int rd_sh[][MAXD] = {{7, 9, -3, 0}, {1, 1, -3, 0}, {70, 101, -3, 0}, {70, 1001, -3, 0},
                                  {5, 8, 1, 1}, {1031, 1021, 1, 0}};

/* layernorm: out, mean, rstd (written over 123s), a constant row (σ² = 0) and a row with |μ| ≫ σ
 * where s = 1; the gradients accumulate (each also alone, the others NULL: u = 1, 2, 3) */
static void ln_fwd(const Backend *be, void **p, const int *d) {
    be->layernorm_forward(F(3), F(4), F(5), F(0), F(1), F(2), d[0], d[1]);
}
static void ln_bwd(const Backend *be, void **p, const int *d) {
    int u = d[3];
    be->layernorm_backward(u < 2 ? F(7) : NULL, u == 0 || u == 2 ? F(8) : NULL,
                           u == 0 || u == 3 ? F(9) : NULL, F(6), F(0), F(1), F(4), F(5), d[0], d[1]);
}
static void ln_prep(void **h, const int *d) {
    int N = d[0], C = d[1];
    for (int c = 0; c < C && N >= 3 && d[2]; c++) { /* s = 2: σ ≈ 0.006 at μ = 100 (no reference) */
        HF(0)[C + c] = d[2] == 1 ? 0.7f : 0.25f;
        HF(0)[2 * C + c] = d[2] == 1 ? HF(0)[2 * C + c] + 100.0f : 100.0f + 0.01f * HF(0)[2 * C + c];
    }
}
static unsigned ln_ref(double **r, void **h, const int *d) {
    int N = d[0], C = d[1], u = d[3];
    for (int n = 0; n < N && d[2] == 2; n++) return 0;
    for (int n = 0; n < N; n++) {
        const float *x = HF(0) + (size_t)n * C, *w = HF(1), *dout = HF(6) + (size_t)n * C;
        double mu = 0, var = 0, mg = 0, mgx = 0;
        for (int c = 0; c < C; c++) mu += x[c];
        mu /= C;
        for (int c = 0; c < C; c++) var += (x[c] - mu) * (x[c] - mu);
        double rs = 1.0 / sqrt(var / C + 1e-5);
        r[4][n] = mu, r[5][n] = rs;
        for (int c = 0; c < C; c++) {
            double xh = (x[c] - mu) * rs, g = (double)dout[c] * w[c];
            r[3][(size_t)n * C + c] = xh * w[c] + HF(2)[c];
            mg += g / C, mgx += g * xh / C;
            if (u == 0 || u == 2) r[8][c] += dout[c] * xh;
            if (u == 0 || u == 3) r[9][c] += dout[c];
        }
        for (int c = 0; c < C && u < 2; c++)
            r[7][(size_t)n * C + c] += rs * ((double)dout[c] * w[c] - mg - (x[c] - mu) * rs * mgx);
    }
    return 0x3b8;
}
/* dinp cancels where a row is constant: 4 ε rstd |g| on the terms, in the cross comparison */
static double ln_floor(int i, void **h, const int *d) {
    if (i & 0x100) return (i & 0xff) >= 7 ? 1e-4 / 1e-5 * 1.0 : 0; /* sums over N rows, C columns */
    if (i != 7 || !d[2]) return 0;
    double m = 0;
    for (size_t k = 0; k < (size_t)d[0] * d[1]; k++) m = fmax(m, fabs(HF(6)[k] * HF(1)[k % d[1]]));
    return 4 * FLT_EPSILON * 316.3 * m / 1e-5;
}
static int ln_fd(const int *d) { return !d[2] && d[3] == 0 && d[0] * d[1] < 200; }
static void ln_extra(const Backend *be, void **p, void **h, const int *d, Stat *st) {
    /* bit for bit at 1 and 2 threads: a property of the CPU backend, checked in the CPU run
     * alone (not beside a backend under test, where TSan cannot see OpenMP's barriers) */
    if (be != cpu || gpu || (size_t)d[0] * d[1] <= 32768 || d[3]) return;
    int N = d[0], C = d[1], t0 = omp_get_max_threads();
    size_t n = (size_t)N * C;
    float *o[2], *m[2], *r[2], *gx[2], *gw[2], *gb[2];
    for (int i = 0; i < 2; i++) {
        omp_set_num_threads(i + 1);
        o[i] = fnew(n), m[i] = fnew(N), r[i] = fnew(N), gx[i] = fnew(n), gw[i] = fnew(C), gb[i] = fnew(C);
        be->layernorm_forward(o[i], m[i], r[i], HF(0), HF(1), HF(2), N, C);
        be->layernorm_backward(gx[i], gw[i], gb[i], HF(6), HF(0), HF(1), m[i], r[i], N, C);
    }
    omp_set_num_threads(t0);
    stat_same(st, "out, 1 and 2 threads", o[0], o[1], n);
    stat_same(st, "mean, 1 and 2 threads", m[0], m[1], N);
    stat_same(st, "rstd, 1 and 2 threads", r[0], r[1], N);
    stat_same(st, "dinp, 1 and 2 threads", gx[0], gx[1], n);
    stat_same(st, "dweight, 1 and 2 threads", gw[0], gw[1], C);
    stat_same(st, "dbias, 1 and 2 threads", gb[0], gb[1], C);
    for (int i = 0; i < 2; i++) free(o[i]), free(m[i]), free(r[i]), free(gx[i]), free(gw[i]), free(gb[i]);
    (void)p;
}
static const int ln_sh[][MAXD] = {{5, 19, -2, 0}, {5, 7, -3, -4}, {1, 1, 0, -4}, {9, 300, -3, 0},
                                  {3, 1031, -3, -4}, {150, 37, -3, -4}, {40, 901, -2, 0}};

/* embedding: ids repeat (id 0 on about a third), rows no id names stay as they were; the backward
 * adds in token order (bit for bit a float loop in order), twice: accumulates, the same bits */
static void em_fwd(const Backend *be, void **p, const int *d) { be->embedding_forward(F(2), I(0), F(1), d[2], d[1]); }
static void em_bwd(const Backend *be, void **p, const int *d) {
    be->embedding_backward(F(4), F(3), I(0), d[2], d[1]);
}
static void em_prep(void **h, const int *d) {
    for (int i = 0; i < d[2]; i++) HI(0)[i] = rng_below(&optest_rng, 3) == 0 ? 0 : HI(0)[i];
}
static unsigned em_ref(double **r, void **h, const int *d) {
    int E = d[1], N = d[2];
    float *seq = fdup(h[4], (size_t)d[0] * E);
    for (int n = 0; n < N; n++)
        for (int e = 0; e < E; e++) {
            r[2][n * E + e] = HF(1)[HI(0)[n] * E + e];
            seq[HI(0)[n] * E + e] += HF(3)[n * E + e];
        }
    for (size_t i = 0; i < (size_t)d[0] * E; i++) r[4][i] = seq[i];
    free(seq);
    return 4 | 16;
}
static void em_extra(const Backend *be, void **p, void **h, const int *d, Stat *st) {
    (void)be;
    be->embedding_backward(F(4), F(3), I(0), d[2], d[1]); /* a second pass */
    emit("embedding_backward, the second pass", F(4), (size_t)d[0] * d[1], 0, 0);
    (void)h, (void)st;
}
static const int em_sh[][MAXD] = {{7, 5, 9}, {1, 1, 1}, {150, 70, 300}, {200, 1, 600}, {1100, 40, 700}, {50, 1031, 1021}};

/* lstm_cell: gates [B,4H] (i f g o) pre-activations in, activations out; gru_cell: gx [B,3H]
 * (r z n) likewise, gh an input. Where m = 1 the odd rows are padding steps (mask 0): their h (and
 * c) stay h_prev (c_prev) exactly, and the GRU's their dgx, dgh are exactly 0 and their dh_prev
 * exactly prefill + dh (cell_extra, on every backend). The gate gradients are overwritten, the
 * state's accumulate. The last shape past the element-wise grid. */
static double sigm(double x) { return 1.0 / (1.0 + exp(-x)); }
static void cell_prep(void **h, const int *d) {
    for (int b = 0; b < d[0]; b++) HF(3)[b] = b % 2 ? 0.0f : 1.0f;
}
static void lstm_fwd(const Backend *be, void **p, const int *d) {
    be->lstm_cell_forward(F(4), F(5), F(0), F(1), F(2), d[3] ? F(3) : NULL, d[0], d[1]);
}
static void lstm_bwd(const Backend *be, void **p, const int *d) {
    be->lstm_cell_backward(F(8), F(9), F(10), F(6), F(7), F(0), F(5), F(2), d[3] ? F(3) : NULL, d[0], d[1]);
}
static unsigned lstm_ref(double **r, void **h, const int *d) {
    int H = d[1];
    for (int b = 0; b < d[0]; b++)
        for (int j = 0; j < H; j++) {
            const float *x = HF(0) + (size_t)b * 4 * H;
            double a[4] = {sigm(x[j]), sigm(x[H + j]), tanh(x[2 * H + j]), sigm(x[3 * H + j])};
            for (int k = 0; k < 4; k++) r[0][(size_t)b * 4 * H + k * H + j] = a[k];
            size_t o = (size_t)b * H + j;
            double cn = a[1] * HF(2)[o] + a[0] * a[2];
            r[5][o] = d[3] && b % 2 ? HF(2)[o] : cn;
            r[4][o] = d[3] && b % 2 ? HF(1)[o] : a[3] * tanh(cn);
        }
    return 1 | 1u << 4 | 1u << 5;
}
static void gru_fwd(const Backend *be, void **p, const int *d) {
    be->gru_cell_forward(F(4), F(0), F(1), F(2), d[3] ? F(3) : NULL, d[0], d[1]);
}
static void gru_bwd(const Backend *be, void **p, const int *d) {
    be->gru_cell_backward(F(6), F(7), F(8), F(5), F(0), F(1), F(2), d[3] ? F(3) : NULL, d[0], d[1]);
}
static unsigned gru_ref(double **r, void **h, const int *d) {
    int H = d[1];
    for (int b = 0; b < d[0]; b++)
        for (int j = 0; j < H; j++) {
            const float *x = HF(0) + (size_t)b * 3 * H, *g = HF(1) + (size_t)b * 3 * H;
            double rr = sigm((double)x[j] + g[j]), z = sigm((double)x[H + j] + g[H + j]);
            double n = tanh((double)x[2 * H + j] + rr * g[2 * H + j]), hp = HF(2)[(size_t)b * H + j];
            r[0][(size_t)b * 3 * H + j] = rr, r[0][(size_t)b * 3 * H + H + j] = z;
            r[0][(size_t)b * 3 * H + 2 * H + j] = n;
            r[4][(size_t)b * H + j] = d[3] && b % 2 ? hp : (1 - z) * n + z * hp;
        }
    return 1 | 1u << 4;
}
static void cell_extra(const Backend *be, void **p, void **h, const int *d, Stat *st) {
    int B = d[0], H = d[1], G = d[2], lstm = G == 4;
    size_t n = (size_t)B * H, bad = 0;
    float *o[4] = {from_backend(be, F(4), n), from_backend(be, lstm ? F(5) : F(6), lstm ? n : n * G),
                   lstm ? NULL : from_backend(be, F(7), n * G), lstm ? NULL : from_backend(be, F(8), n)};
    for (int b = 1; b < B && d[3]; b += 2)
        for (int j = 0; j < H; j++) {
            size_t k = (size_t)b * H + j;
            bad += o[0][k] != HF(lstm ? 1 : 2)[k];
            if (lstm) {
                bad += o[1][k] != HF(2)[k];
                continue;
            }
            for (int g = 0; g < G; g++)
                bad += o[1][(size_t)b * G * H + g * H + j] != 0 || o[2][(size_t)b * G * H + g * H + j] != 0;
            bad += o[3][k] != (float)(HF(8)[k] + HF(5)[k]);
        }
    stat_true(st, bad == 0, "%zu values of the padding rows not exactly their state (or 0)", bad);
    for (int i = 0; i < 4; i++) free(o[i]);
}
static const int lstm_sh[][MAXD] = {{4, 5, 4, -2}, {3, 5, 4, -2}, {1, 1, 4, -2}, {4, 300, 4, -2}, {2, 524291, 4, 1}};
static const int gru_sh[][MAXD] = {{3, 5, 3, -2}, {1, 1, 3, -2}, {4, 300, 3, -2}, {2, 524291, 3, 1}};

/* ---- the attention kinds (their CPU cases: attention_*.c; here the backend under test against
 * the CPU, and on the CPU the inputs unchanged and the hooks' checks) ---- */

/* The attention rows' layout: q 0, k 1, v 2 (or the row's inputs), key_len 3, dims B, NH, Tq,
 * Tk first. key_len: row 1 with no key, the others padded (Tk − b mod 3). Tolerance 1e-5
 * normwise: the same float operations per output element in other orders, with FMA contraction
 * on a GPU. */
static int fd_never(const int *d) { return (void)d, 0; }
static void attn_prep(void **h, const int *d) {
    for (int b = 0; b < d[0]; b++) HI(3)[b] = b == 1 ? 0 : d[3] - b % 3;
}
#define ADIMS d[0], d[1], d[2], d[3], d[4], d[5] /* B, NH, Tq, Tk, D, Dv */
/* Emits (compares) an intermediate value of the row's buffer i, within 1e-5, before the row's
 * later calls change it. */
static void emit_mid(const Row *r, const int *d, void **p, int i, const char *when) {
    char what[300];
    snprintf(what, sizeof what, "%s: %s (%s)", g_nm, r->b[i].name, when);
    emit(what, p[i], buf_len(r, d, i), 1e-5, 0);
}
static const Row *row_named(const char *name);

/* linear attention (both feature maps: elu + 1 on q, k in [−1, 1); the identity on [0, 1), so
 * that every φ(q)·φ(k) ≥ 0, as the taylor kind's features give), causal and not; Tq != Tk,
 * D != Dv, D and Dv past the 128-thread block */
static void lin_prep(void **h, const int *d) {
    attn_prep(h, d);
    for (int i = 0; i < 2 && d[7] == LINEAR_PHI_IDENTITY; i++)
        for (size_t k = 0; k < (size_t)d[0] * d[1] * d[2 + i] * d[4]; k++) HF(i)[k] = (HF(i)[k] + 1) * 0.5f;
}
static void lin_fwd(const Backend *be, void **p, const int *d) {
    be->linear_attn_forward(F(4), F(0), F(1), F(2), I(3), d[6], d[7], ADIMS, F(9));
}
static void lin_bwd(const Backend *be, void **p, const int *d) {
    be->linear_attn_backward(F(6), F(7), F(8), F(5), F(0), F(1), F(2), I(3), d[6], d[7], ADIMS, F(9));
}
static size_t lin_work(const Backend *be, const int *d) { return be->linear_attn_workspace(ADIMS); }
static const int lin_sh[][MAXD] = {{2, 2, 5, 7, 4, 3, -2, -2}, {3, 1, 6, 6, 8, 8, -2, -2}, {1, 3, 1, 9, 5, 6, -2, -2},
                                   {2, 2, 9, 4, 16, 150, -2, -2}, {1, 1, 3, 4, 130, 131, -2, -2}};

/* linear_attn_step: Tk decoding steps (dim k), a new query, key and value each, from zero state */
static void step_fwd(const Backend *be, void **p, const int *d) {
    size_t nz = (size_t)d[0] * d[1] * d[3], nv = (size_t)d[0] * d[1] * d[4];
    for (int t = 0; t < d[2]; t++)
        be->linear_attn_step(F(3) + t * nv, F(4), F(5), F(0) + t * nz, F(1) + t * nz, F(2) + t * nv, d[5],
                             d[0], d[1], d[3], d[4]);
}
static void step_prep(void **h, const int *d) {
    for (int i = 0; i < 2 && d[5] == LINEAR_PHI_IDENTITY; i++)
        for (size_t k = 0; k < (size_t)d[0] * d[1] * d[2] * d[3]; k++) HF(i)[k] = (HF(i)[k] + 1) * 0.5f;
}
static const int step_sh[][MAXD] = {{2, 2, 7, 4, 3, -2}, {3, 1, 6, 8, 8, -2}, {1, 3, 9, 5, 6, -2},
                                    {2, 2, 4, 16, 150, -2}, {1, 1, 4, 130, 131, -2}};

/* linear_attn_summary, _read, _read_backward, _summary_backward (the non-causal form split at its
 * key summary), the shapes of linear attention and one with D = Dv = 130 (k = v and dk = dv one
 * buffer: the RNN's one-head case):
 *   summary with key_len and with NULL onto random prefills (it overwrites); the read of each;
 *     summary then read equals linear_attn_forward with causal = 0 bit for bit (lsp_extra);
 *   read_backward onto the prefills of dq, dstate, dzsum over the summary of every key, then
 *     with dq NULL (compared there: a pair with no key has den = 1e-6 and a dstate a million
 *     times larger, which would hide the other pairs' errors), then over the summary with key_len
 *     (dq and dzsum at the end);
 *   summary_backward of random dstate, dzsum with key_len onto the prefills of dk, dv (padded keys
 *     keep theirs), then with dv NULL, then with dk NULL; where D = Dv, k = v and dk = dv. */
static void lsp_fwd(const Backend *be, void **p, const int *d) {
    int f = d[6];
    be->linear_attn_summary(F(5), F(6), F(1), F(2), I(3), f, d[0], d[1], d[3], d[4], d[5]);
    be->linear_attn_summary(F(7), F(8), F(1), F(2), NULL, f, d[0], d[1], d[3], d[4], d[5]);
    be->linear_attn_read(F(9), F(0), F(5), F(6), f, d[0], d[1], d[2], d[4], d[5]);
    be->linear_attn_read(F(10), F(0), F(7), F(8), f, d[0], d[1], d[2], d[4], d[5]);
}
static void lsp_bwd(const Backend *be, void **p, const int *d) {
    const Row *r = row_named("linear_attn_split");
    int f = d[6], B = d[0], NH = d[1], Tq = d[2], Tk = d[3], D = d[4], Dv = d[5];
    be->linear_attn_read_backward(F(11), F(12), F(13), F(4), F(0), F(7), F(8), f, B, NH, Tq, D, Dv);
    be->linear_attn_read_backward(NULL, F(12), F(13), F(4), F(0), F(7), F(8), f, B, NH, Tq, D, Dv);
    emit_mid(r, d, p, 11, "then dq NULL"), emit_mid(r, d, p, 12, "twice"), emit_mid(r, d, p, 13, "twice");
    be->linear_attn_read_backward(F(11), F(12), F(13), F(4), F(0), F(5), F(6), f, B, NH, Tq, D, Dv);
    be->linear_attn_summary_backward(F(16), F(17), F(14), F(15), F(1), F(2), I(3), f, B, NH, Tk, D, Dv);
    emit_mid(r, d, p, 16, "dk and dv"), emit_mid(r, d, p, 17, "dk and dv");
    be->linear_attn_summary_backward(F(16), NULL, F(14), F(15), F(1), F(2), I(3), f, B, NH, Tk, D, Dv);
    be->linear_attn_summary_backward(NULL, F(17), F(14), F(15), F(1), F(2), I(3), f, B, NH, Tk, D, Dv);
    if (D != Dv) return;
    emit_mid(r, d, p, 16, "then dv NULL");
    be->linear_attn_summary_backward(F(16), F(16), F(14), F(15), F(1), F(1), I(3), f, B, NH, Tk, D, Dv);
}
static void lsp_prep(void **h, const int *d) {
    attn_prep(h, d);
    for (int i = 0; i < 2 && d[6] == LINEAR_PHI_IDENTITY; i++)
        for (size_t k = 0; k < (size_t)d[0] * d[1] * d[2 + i] * d[4]; k++) HF(i)[k] = (HF(i)[k] + 1) * 0.5f;
}
static size_t lsp_work(const Backend *be, const int *d) { return be->linear_attn_workspace(ADIMS); }
/* summary + read (o: p[o]; key_len NULL: p[o + 1]) = the forward (fwd: 0 linear, 1 efficient) */
static void split_same(const Backend *be, void **p, const int *d, Stat *st, int o, int w, int eff) {
    size_t n = (size_t)d[0] * d[1] * d[2] * d[5];
    float *f = be->alloc(n * 4);
    for (int null = 0; null < 2 - eff; null++) {
        if (eff)
            be->efficient_attn_forward(f, F(0), F(1), F(2), I(3), ADIMS, F(w));
        else
            be->linear_attn_forward(f, F(0), F(1), F(2), null ? NULL : I(3), 0, d[6], ADIMS, F(w));
        float *a = from_backend(be, f, n), *b = from_backend(be, F(o + null), n);
        stat_same(st, null ? "summary + read, key_len NULL: the forward" : "summary + read: the forward", b, a, n);
        free(a), free(b);
    }
    be->free(f);
}
static void lsp_extra(const Backend *be, void **p, void **h, const int *d, Stat *st) {
    split_same(be, p, d, st, 9, 18, 0), (void)h;
}
static const int lsp_sh[][MAXD] = {{2, 2, 5, 7, 4, 3, -2}, {3, 1, 6, 6, 8, 8, -2}, {1, 3, 1, 9, 5, 6, -2},
                                   {2, 2, 9, 4, 16, 150, -2}, {1, 1, 3, 4, 130, 131, -2}, {3, 1, 3, 5, 130, 130, -2}};

/* efficient attention (keys x3: a sharper column softmax), and its context split as linear's
 * (summary with key_len: row 1's context 0; then read; then read_backward onto dq, dctx, and with
 * dq NULL; summary_backward of a random dctx, then dv NULL, then dk NULL, and k = v, dk = dv
 * where D = Dv, over the summary of (k, k)); summary then read equals the forward bit for bit */
static void eff_prep(void **h, const int *d) {
    attn_prep(h, d);
    for (size_t i = 0; i < (size_t)d[0] * d[1] * d[3] * d[4]; i++) HF(1)[i] *= 3.0f;
}
static void eff_fwd(const Backend *be, void **p, const int *d) {
    be->efficient_attn_forward(F(4), F(0), F(1), F(2), I(3), ADIMS, F(9));
}
static void eff_bwd(const Backend *be, void **p, const int *d) {
    be->efficient_attn_backward(F(6), F(7), F(8), F(5), F(0), F(1), F(2), I(3), ADIMS, F(9));
}
static size_t eff_work(const Backend *be, const int *d) { return be->efficient_attn_workspace(ADIMS); }
static void esp_fwd(const Backend *be, void **p, const int *d) {
    be->efficient_attn_summary(F(5), F(1), F(2), I(3), d[0], d[1], d[3], d[4], d[5]);
    be->efficient_attn_summary(F(6), F(1), F(2), NULL, d[0], d[1], d[3], d[4], d[5]);
    be->efficient_attn_read(F(7), F(0), F(5), d[0], d[1], d[2], d[4], d[5]);
}
static void esp_bwd(const Backend *be, void **p, const int *d) {
    const Row *r = row_named("efficient_attn_split");
    int B = d[0], NH = d[1], Tq = d[2], Tk = d[3], D = d[4], Dv = d[5];
    be->efficient_attn_read_backward(F(8), F(9), F(4), F(0), F(5), B, NH, Tq, D, Dv);
    be->efficient_attn_read_backward(NULL, F(9), F(4), F(0), F(5), B, NH, Tq, D, Dv);
    be->efficient_attn_summary_backward(F(11), F(12), F(10), F(5), F(1), F(2), I(3), B, NH, Tk, D, Dv);
    emit_mid(r, d, p, 11, "dk and dv"), emit_mid(r, d, p, 12, "dk and dv");
    be->efficient_attn_summary_backward(F(11), NULL, F(10), F(5), F(1), F(2), I(3), B, NH, Tk, D, Dv);
    be->efficient_attn_summary_backward(NULL, F(12), F(10), F(5), F(1), F(2), I(3), B, NH, Tk, D, Dv);
    if (D != Dv) return;
    emit_mid(r, d, p, 11, "then dv NULL"), emit_mid(r, d, p, 5, "of k, v");
    be->efficient_attn_summary(F(5), F(1), F(1), I(3), B, NH, Tk, D, Dv);
    be->efficient_attn_summary_backward(F(11), F(11), F(10), F(5), F(1), F(1), I(3), B, NH, Tk, D, Dv);
}
static void esp_extra(const Backend *be, void **p, void **h, const int *d, Stat *st) {
    split_same(be, p, d, st, 7, 13, 1), (void)h;
}

/* linformer_proj (the projections over the key axis): per-head and shared P (s; H its heads),
 * n > Tk and n = Tk, key_len and NULL (l), a shape wider than one block; the last two past the
 * element-wise grid; padded rows of dx and the columns s >= Tk of dP keep their prefills */
static void lp_fwd(const Backend *be, void **p, const int *d) {
    be->linformer_proj_forward(F(4), F(0), F(1), d[8] ? NULL : I(3), d[0], d[1], d[2], d[3], d[4], d[5], d[6]);
}
static void lp_bwd(const Backend *be, void **p, const int *d) {
    be->linformer_proj_backward(F(5), F(6), F(2), F(0), F(1), d[8] ? NULL : I(3), d[0], d[1], d[2], d[3], d[4],
                                d[5], d[6]);
}
static const int lp_sh[][MAXD] = {/* B, NH, R, Tk, D, n, shared, H, key_len NULL */
    {3, 2, 4, 5, 3, 7, 0, 2, 0}, {3, 2, 4, 5, 3, 7, 1, 1, 0}, {2, 3, 3, 6, 4, 6, 0, 3, 1},
    {2, 3, 3, 6, 4, 6, 1, 1, 1}, {4, 4, 32, 37, 16, 128, 0, 4, 0}, {4, 4, 32, 37, 16, 128, 1, 1, 0},
    {1025, 1, 2, 2, 513, 2, 0, 1, 0}, {1, 1, 1025, 1025, 1, 1025, 0, 1, 0}};

/* l2feature (the taylor kind's features [1; x/‖x‖₂], E = D + 1): widths 1, a head size, past
 * the 64-thread block; a zero row (x̂ = 0) and a row of large values */
static void l2_fwd(const Backend *be, void **p, const int *d) { be->l2feature_forward(F(1), F(0), d[0], d[1]); }
static void l2_bwd(const Backend *be, void **p, const int *d) { be->l2feature_backward(F(3), F(2), F(0), d[0], d[1]); }
static void l2_prep(void **h, const int *d) {
    for (int k = 0; k < d[1] && d[0] > 2; k++) HF(0)[d[1] + k] = 0.0f, HF(0)[2 * d[1] + k] *= 1000.0f;
}
static const int l2_sh[][MAXD] = {{5, 8, 9}, {1, 1, 2}, {37, 64, 65}, {3, 150, 151}};

/* The softmax kinds' shapes (B, NH, Tq, Tk, D, Dv, then the row's): Tq != Tk, D != Dv, padded
 * keys, Tq > Tk with causal (rows that see no key), Tk past one block; D and Dv past a warp and not
 * multiples of it, one query (Luong's decoder step), Tk·D large enough that attn_backward's
 * inputs kernel splits a row over 2 and 4 blocks; the last past flash's 64-row tiles, the
 * 128-thread blocks, and D (A = D + 3) past the 128- and 64-thread blocks. */
#define SDP_SH(A, ...) {2, 2, 5, 7, 4 A, 3, __VA_ARGS__}, {3, 1, 6, 4, 8 A, 8, __VA_ARGS__}, \
    {1, 3, 1, 9, 5 A, 6, __VA_ARGS__}, {2, 1, 3, 140, 16 A, 24, __VA_ARGS__}, {3, 1, 1, 13, 100 A, 70, __VA_ARGS__}, \
    {2, 2, 2, 40, 96 A, 33, __VA_ARGS__}, {2, 4, 14, 12, 64 A, 64, __VA_ARGS__}, {1, 1, 70, 150, 130 A, 5, __VA_ARGS__}

/* The keys of every (b, h) row at s = 1 (an odd lane) and s = Tk − 1 (the last) times 30, so
 * that their scores lie far from the others' (a maximum taken over the even lanes only, or
 * without the last key, then overflows exp). k [B, NH, Tk, D], or [B, Tk, NH, D] when merged. */
static void spike_keys(float *k, int B, int NH, int Tk, int D, int merged) {
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++)
            for (int s = 1; s < Tk; s += Tk - 2 > 0 ? Tk - 2 : Tk) /* s = 1, then Tk − 1 */
                for (int d = 0; d < D; d++)
                    k[(merged ? ((size_t)b * Tk + s) * NH + h : ((size_t)b * NH + h) * Tk + s) * D +
                      d] *= 30.0f;
}

/* x rounded to multiples of 1/16, in place: with |x| <= 2 (and keys spiked x30), every product
 * q_d k_d and every partial sum of a score over D <= 130 terms is exact in float, so both
 * backends compute the same scores whatever their order of summation. */
static void round_to_sixteenths(float *x, size_t n) {
    for (size_t i = 0; i < n; i++) x[i] = roundf(x[i] * 16.0f) / 16.0f;
}

/* The size of the terms attn_backward adds, the floor of its tolerance. With P the weights
 * [B,NH,Tq,Tk], dP = dout vᵀ and δ_t = Σ_s P_ts dP_ts, dS = P ∘ (dP − δ) is a difference of
 * terms of size a = P (|dP| + |δ|), which a saturated row (one weight near 1, as the spiked keys
 * make) cancels down to far below a: its rounding is then of the size of a, not of dS. Writes
 * *mq = max over (b, h, t, d) of scale Σ_s a_ts |k_sd| and *mk = max over (b, h, s, d) of
 * scale Σ_t a_ts |q_td|. q, k, v, dout: host arrays [B,NH,T,·], or [B,T,NH,·] when merged. */
static void sdp_backward_terms(double *mq, double *mk, const float *q, const float *k,
                               const float *v, const float *dout, const float *w, float scale,
                               int merged, int B, int NH, int Tq, int Tk, int D, int Dv) {
#define SDP_AT(b, h, t, T, d, W) \
    (merged ? (((size_t)(b) * (T) + (t)) * NH + (h)) * (W) + (d) \
            : (((size_t)(b) * NH + (h)) * (T) + (t)) * (W) + (d))
    double *a = malloc(sizeof(double) * (size_t)Tq * Tk + 1);
    if (!a) exit(2);
    *mq = *mk = 0.0;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) {
            const float *P = w + ((size_t)b * NH + h) * Tq * Tk;
            for (int t = 0; t < Tq; t++) {
                double delta = 0.0;
                for (int s = 0; s < Tk; s++) {
                    double dp = 0.0;
                    for (int e = 0; e < Dv; e++)
                        dp += (double)dout[SDP_AT(b, h, t, Tq, e, Dv)] * v[SDP_AT(b, h, s, Tk, e, Dv)];
                    a[(size_t)t * Tk + s] = fabs(dp);
                    delta += P[(size_t)t * Tk + s] * dp;
                }
                for (int s = 0; s < Tk; s++)
                    a[(size_t)t * Tk + s] = P[(size_t)t * Tk + s] * (a[(size_t)t * Tk + s] + fabs(delta));
            }
            for (int d = 0; d < D; d++) {
                for (int t = 0; t < Tq; t++) {
                    double m = 0.0;
                    for (int s = 0; s < Tk; s++)
                        m += a[(size_t)t * Tk + s] * fabs((double)k[SDP_AT(b, h, s, Tk, d, D)]);
                    *mq = fmax(*mq, scale * m);
                }
                for (int s = 0; s < Tk; s++) {
                    double m = 0.0;
                    for (int t = 0; t < Tq; t++)
                        m += a[(size_t)t * Tk + s] * fabs((double)q[SDP_AT(b, h, t, Tq, d, D)]);
                    *mk = fmax(*mk, scale * m);
                }
            }
        }
    free(a);
#undef SDP_AT
}


/* attn_* (weights materialised), and its merged layout (m): out and weights, causal and not;
 * backward onto random prefills (the merged one overwrites them), then dv alone. q and k on a grid
 * of 1/16 and a power-of-two scale (near 1/√D), so that the scores are exact on both sides and
 * the spiked keys' steep softmax does not turn their rounding into the weights'. dq and dk
 * against the larger of the result and the terms they add (sdp_floor). flash_attn_* the same
 * way: out and lse (±∞ exactly where the CPU has them), the backward then dk, dv alone. */
static float sdp_scale(int D) { return ldexpf(1.0f, -(int)lrint(0.5 * log2((double)D))); }
static void sdp_prep(void **h, const int *d) {
    attn_prep(h, d);
    for (int i = 0; i < 2; i++) round_to_sixteenths(HF(i), (size_t)d[0] * d[1] * d[2 + i] * d[4]);
    spike_keys(HF(1), d[0], d[1], d[3], d[4], d[7]);
}
static void sdp_fwd(const Backend *be, void **p, const int *d) {
    (d[7] ? be->attn_forward_merged : be->attn_forward)(F(4), F(5), F(0), F(1), F(2), I(3), sdp_scale(d[4]), d[6], ADIMS);
}
static void sdp_bwd(const Backend *be, void **p, const int *d) {
    void (*f)(float *, float *, float *, const float *, const float *, const float *, const float *,
              const float *, float, int, int, int, int, int, int, float *) =
        d[7] ? be->attn_backward_merged : be->attn_backward;
    f(F(7), F(8), F(9), F(6), F(0), F(1), F(2), F(5), sdp_scale(d[4]), ADIMS, F(10));
    f(NULL, NULL, F(9), F(6), F(0), F(1), F(2), F(5), sdp_scale(d[4]), ADIMS, F(10));
}
static size_t sdp_work(const Backend *be, const int *d) { return be->attn_workspace(ADIMS); }
static double sdp_floor(int i, void **h, const int *d) {
    if (i != 7 && i != 8) return 0;
    size_t nw = (size_t)d[0] * d[1] * d[2] * d[3], no = (size_t)d[0] * d[1] * d[2] * d[5];
    float *w = fnew(nw + 1), *o = fnew(no + 1);
    const Backend *c = backend_cpu();
    (d[7] ? c->attn_forward_merged : c->attn_forward)(o, w, HF(0), HF(1), HF(2), HI(3), sdp_scale(d[4]), d[6], ADIMS);
    double mq, mk;
    sdp_backward_terms(&mq, &mk, HF(0), HF(1), HF(2), HF(6), w, sdp_scale(d[4]), d[7], ADIMS);
    free(w), free(o);
    return i == 7 ? mq : mk * (1 + (d[8] == 1)); /* flash's dk: twice */
}
static const int sdp_sh[][MAXD] = {SDP_SH(+0, -2, -2)};
static void fl_fwd(const Backend *be, void **p, const int *d) {
    be->flash_attn_forward(F(4), F(5), F(0), F(1), F(2), I(3), sdp_scale(d[4]), d[6], ADIMS, F(10));
}
static void fl_bwd(const Backend *be, void **p, const int *d) {
    be->flash_attn_backward(F(7), F(8), F(9), F(6), F(0), F(1), F(2), F(4), F(5), I(3), sdp_scale(d[4]), d[6], ADIMS, F(10));
    be->flash_attn_backward(NULL, F(8), F(9), F(6), F(0), F(1), F(2), F(4), F(5), I(3), sdp_scale(d[4]), d[6], ADIMS, F(10));
}
static size_t fl_work(const Backend *be, const int *d) { return be->flash_attn_workspace(ADIMS); }
static const int fl_sh[][MAXD] = {SDP_SH(+0, -2, 0, 1)};

/* additive_attn_* (A = D + 3): out and weights, causal and not; backward of qp, kp, v_a and the
 * values onto random prefills, then the values alone */
static void add_fwd(const Backend *be, void **p, const int *d) {
    be->additive_attn_forward(F(4), F(5), F(0), F(1), F(11), F(2), I(3), d[6], ADIMS);
}
static void add_bwd(const Backend *be, void **p, const int *d) {
    be->additive_attn_backward(F(7), F(8), F(12), F(9), F(6), F(0), F(1), F(11), F(2), F(5), ADIMS, F(10));
    be->additive_attn_backward(NULL, NULL, NULL, F(9), F(6), F(0), F(1), F(11), F(2), F(5), ADIMS, F(10));
}
static size_t add_work(const Backend *be, const int *d) { return be->additive_attn_workspace(ADIMS); }
static const int add_sh[][MAXD] = {SDP_SH(+3, -2)};

/* local_attn_* (Luong et al. 2015 §3.2): local-m and local-p (p), the dot (scale 1/√D) and the
 * additive score (a), windows W clipped by padding and by the ends (from position P; the last
 * shape's windows are wider than its keys, clipped at both ends at once), a row of length 0;
 * backward of q, k, v_a, v, z onto random prefills, then v alone. z puts p_t at a fractional
 * part in [0.25, 0.75], so both backends find the same windows. The saved rows (w = 2W + 2: the
 * window's first key, then its weights) are compared element-wise, so that the first key, an
 * integer, must agree exactly and does not set the scale of the weights' tolerance. */
static void loc_prep(void **h, const int *d) {
    attn_prep(h, d);
    spike_keys(HF(1), d[0], d[1], d[3], d[4], 0);
    for (int b = 0; b < d[0]; b++) /* p_t = len σ(z) = an integer + [0.25, 0.75] */
        for (int t = 0; t < d[2]; t++) {
            float *z = &HF(13)[(size_t)b * d[2] + t];
            int len = HI(3)[b];
            double pt = (int)((*z + 1) * 0.5f * (len > 1 ? len - 1 : 0)) + 0.5 + 0.25 * *z;
            double f = fmin(len > 0 ? pt / len : 0.5, 0.99);
            *z = (float)log(f / (1 - f));
        }
}
static void loc_fwd(const Backend *be, void **p, const int *d) {
    be->local_attn_forward(F(4), F(5), F(0), F(1), d[7] ? F(11) : NULL, F(2), d[6] ? F(13) : NULL, I(3),
                           1.0f / sqrtf((float)d[4]), d[8], d[9], ADIMS);
}
static void loc_bwd(const Backend *be, void **p, const int *d) {
    const float *va = d[7] ? F(11) : NULL, *z = d[6] ? F(13) : NULL;
    float s = 1.0f / sqrtf((float)d[4]);
    be->local_attn_backward(F(7), F(8), d[7] ? F(12) : NULL, F(9), d[6] ? F(14) : NULL, F(6), F(0), F(1), va, F(2),
                            z, F(5), I(3), s, d[8], d[9], ADIMS, F(10));
    be->local_attn_backward(NULL, NULL, NULL, F(9), NULL, F(6), F(0), F(1), va, F(2), z, F(5), I(3), s, d[8], d[9],
                            ADIMS, F(10));
}
static size_t loc_work(const Backend *be, const int *d) { return be->local_attn_workspace(ADIMS, d[8]); }
/* the workspace is O(Tq·W) a head: the same for 64 times the keys, and below Tq·Tk floats a row
 * once Tk exceeds the window (it holds the windows' score gradients, not Tq × Tk) */
static void loc_extra(const Backend *be, void **p, void **h, const int *d, Stat *st) {
    (void)p, (void)h;
    size_t w1 = be->local_attn_workspace(ADIMS, d[8]);
    size_t w64 = be->local_attn_workspace(d[0], d[1], d[2], 64 * d[3], d[4], d[5], d[8]);
    stat_true(st, w64 == w1, "local_attn_workspace grows with Tk: %zu floats at Tk = %d, %zu at %d",
              w1, d[3], w64, 64 * d[3]);
    size_t quad = (size_t)d[0] * d[1] * d[2] * 64 * d[3];
    stat_true(st, w64 < quad || quad == 0, "local_attn_workspace %zu floats >= Tq x Tk (%zu)", w64,
              quad);
}
static const int loc_sh[][MAXD] = {/* B, NH, Tq, Tk, D, Dv, predictive, additive, W, pos0,
                                   * 2W + 2 (the saved row) */
    {2, 2, 5, 7, 4, 3, -2, -2, 2, 0, 6},   {3, 1, 6, 4, 8, 8, -2, -2, 3, 0, 8},      {1, 3, 1, 9, 5, 6, -2, -2, 4, 4, 10},
    {2, 1, 3, 140, 16, 24, -2, -2, 70, 0, 142}, {3, 1, 1, 13, 100, 70, -2, -2, 6, 0, 14}, {2, 2, 2, 40, 96, 33, -2, -2, 7, 0, 16},
    {2, 4, 14, 12, 64, 64, -2, -2, 8, 0, 18}, {1, 1, 70, 150, 130, 5, -2, -2, 70, 0, 142},
    {2, 2, 6, 5, 4, 3, -2, -2, 3, 0, 8}};

/* pointwise_attn_* (the sigmoid and rela kinds' weights f(scale·q·k + bias)), both functions
 * (f), causal and not, on the softmax kinds' shapes; scale 1/√D. The CPU against a reference
 * written here in double from ops.h's formulas (weights, out, and the gradients added to the
 * prefills), and its gradients against finite differences on the small shapes; extra (both
 * backends): each gradient alone (the others NULL) equals its value with all three, into
 * zeroed buffers, and the masked weights are exactly 0. */
static float pw_scale(int D) { return 1.0f / sqrtf((float)D); }
static void pw_fwd(const Backend *be, void **p, const int *d) {
    be->pointwise_attn_forward(F(4), F(5), F(0), F(1), F(2), I(3), pw_scale(d[4]), d[6], d[7], ADIMS);
}
static void pw_bwd(const Backend *be, void **p, const int *d) {
    be->pointwise_attn_backward(F(7), F(8), F(9), F(6), F(0), F(1), F(2), F(5), pw_scale(d[4]), d[7], ADIMS,
                                F(10));
}
static size_t pw_work(const Backend *be, const int *d) { return be->pointwise_attn_workspace(ADIMS); }
/* the visible keys of query t in batch row b (ops.h's masks) */
static int pw_lim(const int *key_len, const int *d, int b, int t) {
    int len = key_len[b] < d[3] ? key_len[b] : d[3];
    if (d[6] && t + d[3] - d[2] + 1 < len) len = t + d[3] - d[2] + 1;
    return len < 0 ? 0 : len;
}
static unsigned pw_ref(double **r, void **h, const int *d) {
    int B = d[0], NH = d[1], Tq = d[2], Tk = d[3], D = d[4], Dv = d[5], fn = d[7];
    double scale = pw_scale(D);
    for (int bh = 0; bh < B * NH; bh++)
        for (int t = 0; t < Tq; t++) {
            int lim = pw_lim(HI(3), d, bh / NH, t);
            const float *q = HF(0) + ((size_t)bh * Tq + t) * D, *g = HF(6) + ((size_t)bh * Tq + t) * Dv;
            double *w = r[5] + ((size_t)bh * Tq + t) * Tk, *o = r[4] + ((size_t)bh * Tq + t) * Dv;
            for (int e = 0; e < Dv; e++) o[e] = 0;
            for (int s = 0; s < Tk; s++) {
                const float *k = HF(1) + ((size_t)bh * Tk + s) * D, *v = HF(2) + ((size_t)bh * Tk + s) * Dv;
                w[s] = 0;
                if (s >= lim) continue;
                double e = 0, dw = 0;
                for (int j = 0; j < D; j++) e += (double)q[j] * k[j];
                e *= scale;
                double fp; /* f'(e) */
                if (fn == POINTWISE_SIGMOID) {
                    w[s] = 1.0 / (1.0 + exp(-(e - log((double)lim))));
                    fp = w[s] * (1 - w[s]);
                } else {
                    w[s] = e > 0 ? e : 0;
                    fp = e > 0;
                }
                for (int j = 0; j < Dv; j++) {
                    o[j] += w[s] * v[j];
                    dw += (double)g[j] * v[j];
                    r[9][((size_t)bh * Tk + s) * Dv + j] += w[s] * g[j]; /* dv */
                }
                double de = fp * dw * scale;
                for (int j = 0; j < D; j++) {
                    r[7][((size_t)bh * Tq + t) * D + j] += de * k[j]; /* dq */
                    r[8][((size_t)bh * Tk + s) * D + j] += de * q[j]; /* dk */
                }
            }
        }
    return 1u << 4 | 1u << 5 | 1u << 7 | 1u << 8 | 1u << 9;
}
static void pw_extra(const Backend *be, void **p, void **h, const int *d, Stat *st) {
    size_t nq = (size_t)d[0] * d[1] * d[2] * d[4], nk = (size_t)d[0] * d[1] * d[3] * d[4];
    size_t nv = (size_t)d[0] * d[1] * d[3] * d[5];
    const size_t n[3] = {nq, nk, nv};
    float *all[3], *one[3];
    for (int i = 0; i < 3; i++) all[i] = be->alloc(n[i] * 4 + 4), one[i] = be->alloc(n[i] * 4 + 4);
    be->pointwise_attn_backward(all[0], all[1], all[2], F(6), F(0), F(1), F(2), F(5), pw_scale(d[4]), d[7],
                                ADIMS, F(10));
    be->pointwise_attn_backward(one[0], NULL, NULL, F(6), F(0), F(1), F(2), F(5), pw_scale(d[4]), d[7], ADIMS,
                                F(10));
    be->pointwise_attn_backward(NULL, one[1], NULL, F(6), F(0), F(1), F(2), F(5), pw_scale(d[4]), d[7], ADIMS,
                                F(10));
    be->pointwise_attn_backward(NULL, NULL, one[2], F(6), F(0), F(1), F(2), F(5), pw_scale(d[4]), d[7], ADIMS,
                                F(10));
    be->pointwise_attn_backward(NULL, NULL, NULL, F(6), F(0), F(1), F(2), F(5), pw_scale(d[4]), d[7], ADIMS,
                                F(10)); /* nothing to do; must not crash */
    const char *names[3] = {"dq alone", "dk alone", "dv alone"};
    for (int i = 0; i < 3; i++) {
        float *a = from_backend(be, all[i], n[i]), *b = from_backend(be, one[i], n[i]);
        stat_same(st, names[i], b, a, n[i]);
        free(a), free(b);
        be->free(all[i]), be->free(one[i]);
    }
    size_t nw = (size_t)d[0] * d[1] * d[2] * d[3];
    float *w = from_backend(be, F(5), nw);
    int masked_zero = 1;
    for (int bh = 0; bh < d[0] * d[1]; bh++)
        for (int t = 0; t < d[2]; t++)
            for (int s = pw_lim(HI(3), d, bh / d[1], t); s < d[3]; s++)
                masked_zero &= w[((size_t)bh * d[2] + t) * d[3] + s] == 0.0f;
    stat_true(st, masked_zero, "a masked key has a nonzero weight");
    free(w);
}
/* relu: every score at least 0.02 away from ReLU's kink, where finite differences of step
 * FD_EPS would straddle it (a key whose score with some query is nearer is moved, one coordinate
 * at a time, until none is) */
static void pw_prep(void **h, const int *d) {
    attn_prep(h, d);
    if (d[7] != POINTWISE_RELU) return;
    int Tq = d[2], Tk = d[3], D = d[4];
    for (int bh = 0; bh < d[0] * d[1]; bh++)
        for (int s = 0; s < Tk; s++) {
            float *k = HF(1) + ((size_t)bh * Tk + s) * D;
            for (int tries = 0, near = 1; near && tries < 64; tries++) {
                near = 0;
                for (int t = 0; t < Tq; t++) {
                    const float *q = HF(0) + ((size_t)bh * Tq + t) * D;
                    double e = 0;
                    for (int j = 0; j < D; j++) e += (double)q[j] * k[j];
                    near |= fabs(e * pw_scale(D)) < 0.02;
                }
                if (near) k[tries % D] += 0.37f;
            }
        }
}
static const int pw_sh[][MAXD] = {SDP_SH(+0, -2, -2)};

/* head_rmsnorm_* (rela's normalisation): widths 1, a head size and past the 64-thread block,
 * rows of one head and of several; with z, row 1 all zeros (rstd = 1/√ε, out = 0; no finite
 * differences there: the norm is not smooth at 0). The CPU against a double reference (out,
 * rstd, and the gradients added to the prefills), its gradients against finite differences on
 * the small shapes. */
static void rms_fwd(const Backend *be, void **p, const int *d) {
    be->head_rmsnorm_forward(F(2), F(3), F(0), F(1), d[0], d[1], d[2], d[3]);
}
static void rms_bwd(const Backend *be, void **p, const int *d) {
    be->head_rmsnorm_backward(F(5), F(6), F(4), F(0), F(1), F(3), d[0], d[1], d[2], d[3]);
}
static void rms_prep(void **h, const int *d) {
    if (d[4])
        for (int c = 0; c < d[3]; c++) HF(0)[(size_t)d[3] + c] = 0.0f; /* row 1 */
}
static unsigned rms_ref(double **r, void **h, const int *d) {
    int NH = d[1], T = d[2], C = d[3];
    long N = (long)d[0] * NH * T;
    for (long n = 0; n < N; n++) {
        const float *x = HF(0) + (size_t)n * C, *g = HF(1) + (size_t)((n / T) % NH) * C;
        const float *go = HF(4) + (size_t)n * C;
        double ss = 0, sgx = 0;
        for (int c = 0; c < C; c++) ss += (double)x[c] * x[c];
        double rs = 1.0 / sqrt(ss / C + 1e-8);
        r[3][n] = rs;
        for (int c = 0; c < C; c++) {
            r[2][(size_t)n * C + c] = x[c] * rs * g[c];
            sgx += (double)go[c] * g[c] * x[c] * rs;
            r[6][(size_t)((n / T) % NH) * C + c] += go[c] * x[c] * rs;
        }
        for (int c = 0; c < C; c++)
            r[5][(size_t)n * C + c] += rs * (go[c] * g[c] - x[c] * rs * sgx / C);
    }
    return 1u << 2 | 1u << 3 | 1u << 5 | 1u << 6;
}
static int rms_fd(const int *d) { return !d[4] && (long)d[0] * d[1] * d[2] * d[3] <= 400; }
static const int rms_sh[][MAXD] = {{2, 3, 4, 5, 0}, {1, 1, 1, 1, 0}, {3, 2, 5, 8, -2}, {3, 4, 7, 64, 0},
                                   {2, 2, 9, 130, 0}, {1, 8, 300, 64, 1}};

/* adam_update, t = 1..T (gradients g[t-1]: element 0 zero but a spike at t = 2, element 1
 * tiny), from zero moments; param, m and v compared after every step (normwise 1e-6: the host
 * compiler and nvcc may contract b·m + (1−b)·g into fused multiply-adds differently); the last
 * shape past the element-wise grid */
static const float ADAM[4] = {3e-3f, 0.9f, 0.98f, 1e-6f}; /* lr, b1, b2, eps */
static void adam_prep(void **h, const int *d) {
    for (int t = 0; t < d[1]; t++) {
        HF(0)[(size_t)t * d[0]] = t == 1 ? 50.0f : 0.0f;
        if (d[0] > 1) HF(0)[(size_t)t * d[0] + 1] = 1e-4f * (t + 1);
    }
}
static void adam_fwd(const Backend *be, void **p, const int *d) {
    for (int t = 1; t <= d[1]; t++) {
        be->adam_update(F(1), F(0) + (size_t)(t - 1) * d[0], F(2), F(3), (size_t)d[0], ADAM[0], ADAM[1], ADAM[2],
                        ADAM[3], t);
        for (int i = 1; i < 4 && t < d[1]; i++) emit_mid(row_named("adam"), d, p, i, "a step");
    }
}
static unsigned adam_ref(double **r, void **h, const int *d) {
    for (int t = 1; t <= d[1]; t++) {
        double c1 = 1.0 - pow((double)ADAM[1], t), c2 = 1.0 - pow((double)ADAM[2], t);
        for (int i = 0; i < d[0]; i++) {
            double g = HF(0)[(size_t)(t - 1) * d[0] + i];
            r[2][i] = ADAM[1] * r[2][i] + (1.0 - ADAM[1]) * g;
            r[3][i] = ADAM[2] * r[3][i] + (1.0 - ADAM[2]) * g * g;
            r[1][i] -= ADAM[0] * (r[2][i] / c1) / (sqrt(r[3][i] / c2) + ADAM[3]);
        }
    }
    return 14;
}
static const int adam_sh[][MAXD] = {{57, 4}, {1, 4}, {257, 4}, {10007, 4}, {EW_GRID + 3, 4}};

/* ---- the output layer, sumsq and all_finite ---- */

/* xent_forward_backward: fwd the loss alone (dlogits NULL: what the finite differences see), bwd
 * the loss with dlogits = grad_scale (p − q) (q = (1 − ε) one-hot + ε/V; loss −Σ_v q_v log p_v
 * over the counted rows), both losses and dlogits against the reference, dlogits (overwritten;
 * ignored rows 0) against finite differences of grad_scale · loss (dloss = grad_scale); the two
 * losses bit for bit the same, and every row ignored (a = 1) a loss of exactly 0 (xent_extra, on
 * every backend). ε 0 and 0.1; ignore ids −1 and 1 (a class id); rows 1, 5, 9, ... ignored, row
 * 2's target logit 8 (confident), row 0's logit 1 (an odd lane) and the last counted row's last
 * logit 100, far above the others in [−4, 4] (a maximum that misses them overflows exp); V wider
 * than a block, N = 257: one past the rows' sum's 256 threads. Tolerance 1e-5 between backends:
 * the CPU's exp is a polynomial approximation (cpu_expf, relative error ~1e-7) and the sums run
 * in another order. */
static const float SMOOTH[2] = {0.0f, 0.1f}, GSCALE[3] = {1.0f, 0.5f, 0.25f};
static const int IGNORE[2] = {-1, 1};
#define XENT_ARGS F(0), I(1), d[0], d[1], SMOOTH[d[2]], IGNORE[d[3]]
static void xent_fwd(const Backend *be, void **p, const int *d) {
    *(double *)p[3] = be->xent_forward_backward(NULL, XENT_ARGS, 1.0f, F(6));
}
static void xent_bwd(const Backend *be, void **p, const int *d) {
    *(double *)p[4] = be->xent_forward_backward(F(5), XENT_ARGS, GSCALE[d[4]], F(6));
}
static size_t xent_work(const Backend *be, const int *d) { return be->xent_workspace(d[0], d[1]); }
static void xent_prep(void **h, const int *d) {
    int N = d[0], V = d[1], ign = IGNORE[d[3]], last = 0;
    for (int n = 0; n < N; n++) {
        HI(1)[n] = d[5] || n % 4 == 1 ? ign : (n * 7 + 3) % V;
        if (HI(1)[n] != ign) last = n;
    }
    if (N > 2 && HI(1)[2] != ign) HF(0)[2 * V + HI(1)[2]] = 8.0f;
    if (V > 1) HF(0)[1] = 100.0f;
    if (last > 0) HF(0)[(size_t)last * V + V - 1] = 100.0f;
    HF(2)[0] = GSCALE[d[4]];
}
static unsigned xent_ref(double **r, void **h, const int *d) {
    int N = d[0], V = d[1];
    double eps = SMOOTH[d[2]], loss = 0;
    for (int n = 0; n < N; n++) {
        const float *x = HF(0) + (size_t)n * V;
        double mx = -INFINITY, z = 0;
        for (int v = 0; v < V; v++) mx = x[v] > mx ? x[v] : mx;
        for (int v = 0; v < V; v++) z += exp(x[v] - mx);
        for (int v = 0; v < V; v++) {
            double q = eps / V + (v == HI(1)[n] ? 1.0 - eps : 0.0), lp = x[v] - mx - log(z);
            int counted = HI(1)[n] != IGNORE[d[3]];
            loss -= counted ? q * lp : 0;
            r[5][(size_t)n * V + v] = counted ? GSCALE[d[4]] * (exp(lp) - q) : 0;
        }
    }
    r[3][0] = r[4][0] = loss;
    return 1u << 3 | 1u << 4 | 1u << 5;
}
static void xent_extra(const Backend *be, void **p, void **h, const int *d, Stat *st) {
    double l = *(double *)p[3], l2 = *(double *)p[4];
    stat_true(st, l == l2, "loss %.17g without dlogits, %.17g with", l, l2);
    stat_true(st, !d[5] || l == 0, "every row ignored: loss %.17g, not 0", l);
    float *g = from_backend(be, F(5), (size_t)d[0] * d[1]);
    size_t bad = 0;
    for (size_t k = 0; k < (size_t)d[0] * d[1]; k++) bad += HI(1)[k / d[1]] == IGNORE[d[3]] && g[k] != 0.0f;
    stat_true(st, bad == 0, "%zu dlogits of ignored rows not 0", bad);
    free(g);
}
static const int xent_sh[][MAXD] = {/* N, V, ε, ignore id, grad_scale, all ignored */
    {6, 11, -2, 1, -2, -2}, {4, 7, -2, 0, 2, 0}, {1, 1, -2, 0, 2, 0}, {6, 1000, -2, 0, 2, 0},
    {3, 8003, -2, 0, 2, 0}, {257, 5, -2, 0, 2, 0}};

/* log_softmax and argmax (first on ties) over rows of k: 0, logits in [−4, 4), row 0's logit 1
 * and the last row's last logit 100 (but on row 3), ties for argmax (row 2 all 0.5, row 3 its
 * maximum 9 twice); 1, rows 2 and 3 shifted by +1000 and −1000 (log_softmax must not overflow);
 * 2, −inf logits (a masked vocabulary: every even column, row 2's all but 151; row 0's maximum 50
 * in its last lane); 3, argmax's table (ARGMAX_TAB: ties, −inf, NaN). log_softmax element-wise
 * within 1e-5 (1 + |out|), −inf exactly, each row's Σ exp 1 within 1e-3 (sm_extra); between
 * backends no closer than an ulp of the largest logit (sm_floor: a GPU's log-sum-exp in float);
 * argmax exactly. */
enum { AN = 8, AV = 5 };
static const float ARGMAX_TAB[AN][AV] = {
    {0.1f, 3.0f, 3.0f, 2.0f, -1.0f},          /* tie: first (1) */
    {-5.0f, -1.0f, -1.0f, -3.0f, -2.0f},      /* negative tie: 1 */
    {-INFINITY, -INFINITY, 2.0f, 2.0f, 1.0f}, /* 2 */
    {7.0f, 7.0f, 7.0f, 7.0f, 7.0f},           /* all equal: 0 */
    {0.0f, 1.0f, 2.0f, 3.0f, 4.0f},           /* last: 4 */
    {9.0f, 1.0f, 2.0f, 8.99f, 4.0f},          /* first: 0 */
    {NAN, 1.0f, 2.0f, 3.0f, 4.0f},            /* NaN in column 0: 0, as k_argmax */
    {NAN, NAN, NAN, NAN, NAN},                /* a row of NaN: 0, an index in the row */
};
static const int ARGMAX_WANT[AN] = {1, 1, 2, 0, 4, 0, 0, 0};
static void sm_prep(void **h, const int *d) {
    int N = d[0], V = d[1];
    float *x = HF(0);
    if (d[2] == 0) {
        if (N > 3) {
            for (int v = 0; v < V; v++) x[(size_t)2 * V + v] = 0.5f;
            x[(size_t)3 * V + V / 3] = 9.0f, x[(size_t)3 * V + V - 1] = 9.0f;
        }
        if (V > 1) x[1] = 100.0f;
        if (N > 1 && (N <= 3 || N - 1 > 3)) x[(size_t)N * V - 1] = 100.0f;
    }
    for (int v = 0; v < V && d[2] == 1 && N > 3; v++) x[2 * V + v] += 1000.0f, x[3 * V + v] -= 1000.0f;
    for (int n = 0; n < N && d[2] == 2; n++)
        for (int v = 0; v < V; v++)
            if (v % 2 == 0 || (n == 2 && v != 151)) x[(size_t)n * V + v] = -INFINITY;
    if (d[2] == 2) x[V - 1] = 50.0f;
    if (d[2] == 3) memcpy(x, ARGMAX_TAB, sizeof ARGMAX_TAB);
}
static void ls_fwd(const Backend *be, void **p, const int *d) { be->log_softmax(F(1), F(0), d[0], d[1]); }
static unsigned ls_ref(double **r, void **h, const int *d) {
    for (int n = 0; n < d[0]; n++) {
        const float *x = HF(0) + (size_t)n * d[1];
        double mx = -INFINITY, z = 0;
        for (int v = 0; v < d[1]; v++) mx = x[v] > mx ? x[v] : mx;
        for (int v = 0; v < d[1]; v++) z += exp(x[v] - mx);
        for (int v = 0; v < d[1]; v++) r[1][(size_t)n * d[1] + v] = x[v] - mx - log(z);
    }
    return 2;
}
static double sm_floor(int i, void **h, const int *d) {
    double m = 0;
    for (size_t k = 0; k < (size_t)d[0] * d[1] && i == 1; k++)
        if (isfinite(HF(0)[k])) m = fmax(m, fabs(HF(0)[k]));
    return m * FLT_EPSILON / 1e-5;
}
static void sm_extra(const Backend *be, void **p, void **h, const int *d, Stat *st) {
    float *o = from_backend(be, F(1), (size_t)d[0] * d[1]);
    for (int n = 0; n < d[0]; n++) {
        double s = 0;
        for (int v = 0; v < d[1]; v++) s += exp((double)o[(size_t)n * d[1] + v]);
        stat_add(st, s, 1.0, 1e-3, 0, "Σ exp", n);
    }
    free(o), (void)h;
}
static void am_fwd(const Backend *be, void **p, const int *d) { be->argmax(I(1), F(0), d[0], d[1]); }
static unsigned am_ref(double **r, void **h, const int *d) {
    for (int n = 0; n < d[0]; n++) {
        const float *x = HF(0) + (size_t)n * d[1];
        int best = 0;
        for (int v = 1; v < d[1]; v++) best = x[v] > x[best] ? v : best;
        r[1][n] = d[2] == 3 ? ARGMAX_WANT[n] : best;
    }
    return 2;
}
static const int ls_sh[][MAXD] = {{4, 9, 1}, {4, 7, 0}, {1, 1, 0}, {6, 1000, 0}, {3, 8003, 0}, {257, 5, 0}, {3, 300, 2}};
static const int am_sh[][MAXD] = {{AN, AV, 3}, {10, 13, 0}, {4, 7, 0}, {1, 1, 0}, {6, 1000, 0}, {3, 8003, 0},
                                  {257, 5, 0}, {3, 300, 2}};

/* all_finite over x in ±1e30 with case c: 0, finite, FLT_MAX, −FLT_MAX and a subnormal planted;
 * 1–9, NaN, +Inf or −Inf at the first, the middle or the last element; 10–17 (n = 262145, past
 * the first pass's 1024 blocks of 256 threads), NaN in the share of the partials 255, 256, 511,
 * 512, 767, 768 and 1023 and at 262144 (the first pass's second turn); n = 0 too. On finite data
 * also sumsq (double accumulation: only the order of the sum may differ, 1e-10 from the
 * reference, 1e-9 between backends; 0 where not called) and all_finite a second time (a verdict
 * must not depend on the one before; else the first verdict again). */
static const size_t PARTIALS[7] = {255, 256, 511, 512, 767, 768, 1023};
static void red_fwd(const Backend *be, void **p, const int *d) {
    *(double *)p[1] = d[1] ? 0.0 : be->sumsq(F(0), (size_t)d[0]);
    *(double *)p[2] = be->all_finite(F(0), (size_t)d[0]);
    *(double *)p[3] = d[1] ? *(double *)p[2] : be->all_finite(F(0), (size_t)d[0]);
}
static void red_prep(void **h, const int *d) {
    size_t n = (size_t)d[0], c = (size_t)d[1], at[3] = {0, n / 2, n - 1};
    const float bad[3] = {NAN, INFINITY, -INFINITY};
    if (n && c == 0) HF(0)[0] = FLT_MAX, HF(0)[n - 1] = -FLT_MAX, HF(0)[n / 2] = FLT_MIN / 4;
    if (n && c >= 1 && c <= 9) HF(0)[at[(c - 1) % 3]] = bad[(c - 1) / 3];
    if (c >= 10) HF(0)[c < 17 ? PARTIALS[c - 10] * 256 + 3 : 262144] = NAN;
}
static unsigned red_ref(double **r, void **h, const int *d) {
    double s = 0;
    int ok = 1;
    for (int i = 0; i < d[0]; i++) s += (double)HF(0)[i] * HF(0)[i], ok &= isfinite(HF(0)[i]) != 0;
    r[1][0] = d[1] ? 0.0 : s, r[2][0] = r[3][0] = ok;
    return 14;
}
static const int red_sh[][MAXD] = {{0, 0}, {1, 0}, {1, 1}, {1, 4}, {1, 7}, {1003, -10}, {262145, -18},
                                   {300001, -10}, {5000011, -10}};

/* (a row names the fields it sets; the rest are zero: no tolerance, no gradient, no hook) */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
static const Row ROWS[] = {
#define R(...) {__VA_ARGS__}
    R("matmul", "matmul", "MNKabt", SHAPES(mm_sh),
      {{"A", IN, "MK", -1, 1}, {"B", IN, "KN", -1, 1}, {"C", ACC, "MN", -2, 2, 1e-4}},
      mm_fwd, NULL, mm_ref, 1e-5),
    R("matmul_bias_forward", "matmul_bias_forward", "NCKrXWBO", SHAPES(mbf_sh),
      {{"inp", IN, "X", -1, 1}, {"w", IN, "W", -1, 1}, {"b", IN, "B", -1, 1}, {"out", OUT, "O", -9, 9, 1e-4}},
      mbf_fwd, NULL, mbf_ref, 1e-5, .extra = mbf_extra),
    R("bias", "bias_forward,bias_backward", "NC", SHAPES(bias_sh),
      {{"bias", IN, "C", -1, 1}, {"out", ACC, "NC", -1, 1, 1e-6}, {"dout", IN, "NC", -1, 1, 0, 2},
       {"dbias", ACC, "C", -2, 2, 1e-5, 1}},
      bias_fwd, bias_bwd, bias_ref, 1e-5, .floor = bias_floor),
    R("axpy", "axpy", "n", SHAPES(n_sh), {{"x", IN, "n", -1, 1}, {"y", ACC, "n", -1, 1, 1e-6}},
      axpy_fwd, NULL, axpy_ref, 1e-5, .floor = axpy_floor),
    R("scale", "scale", "n", SHAPES(n_sh), {{"x", ACC, "n", -1, 1, 1e-6}}, scale_fwd, NULL, scale_ref, 1e-5),
    R("tanh", "tanh_forward,tanh_backward", "n", SHAPES(tanh_sh),
      {{"inp", IN, "n", -4, 4}, {"out", OUT, "n", -1, 1, 1e-6}, {"dout", IN, "n", -1, 1, 0, 2},
       {"dinp", ACC, "n", -2, 2, 1e-6, 1}},
      tanh_fwd, tanh_bwd, tanh_ref, 1e-5, tanh_prep, tanh_floor),
    R("concat2", "concat2_forward,concat2_backward", "NabCw", SHAPES(cat_sh),
      {{"a", IN, "Na", -1, 1}, {"b", IN, "Nb", -1, 1}, {"out", OUT, "NC", -1, 1}, {"dout", IN, "NC", -1, 1, 0, 3},
       {"da", ACC, "Na", -2, 2, 0, 1}, {"db", ACC, "Nb", -2, 2, 0, 2}},
      cat_fwd, cat_bwd, cat_ref, 0, .fd = cat_fd),
    R("transpose01", "transpose01_forward,transpose01_backward", "ABC", SHAPES(tr_sh),
      {{"inp", IN, "ABC", -1, 1}, {"out", OUT, "ABC", -1, 1}, {"dout", IN, "ABC", -1, 1, 0, 2},
       {"dinp", ACC, "ABC", -2, 2, 0, 1}},
      tr_fwd, tr_bwd, tr_ref, 0),
    R("permute0213", "permute0213_forward,permute0213_backward", "AIJC", SHAPES(pm_sh),
      {{"inp", IN, "AIJC", -1, 1}, {"out", OUT, "AIJC", -1, 1}, {"dout", IN, "AIJC", -1, 1, 0, 2},
       {"dinp", ACC, "AIJC", -2, 2, 0, 1}},
      pm_fwd, pm_bwd, pm_ref, 0, .extra = pm_extra),
    R("write_step", "write_step", "NTCtP", SHAPES(ws_sh), {{"cache", ACC, "PTC", -1, 1}, {"x", IN, "NC", -1, 1}},
      ws_fwd, NULL, ws_ref, 0),
    R("gather_rows", "gather_rows,gather_rows_strided", "RnDSzgP", SHAPES(ga_sh),
      {{"src", IN, "RS", -1, 1}, {"idx", INT, "n", 0, 0, 0, 0, 'R'}, {"dst", OUT, "PS", -1, 1}},
      ga_fwd, NULL, ga_ref, 0),
    R("dropout", "dropout_forward,dropout_backward", "npe", SHAPES(dr_sh),
      {{"inp", IN, "n", -1, 1}, {"out", OUT, "n", -1, 1, 0}, {"mask", OUT, "n", -1, 1, 0},
       {"dout", IN, "n", -1, 1, 0, 2}, {"dinp", ACC, "n", -2, 2, 1e-6, 1}},
      dr_fwd, dr_bwd, NULL, 0, .floor = dr_floor, .extra = dr_extra),
    R("bias_relu_dropout", "bias_relu_dropout_forward,relu_dropout_backward", "NCpf", SHAPES(rd_sh),
      {{"inp", IN, "NC", -3, 3}, {"bias", IN, "C", -1, 1}, {"out", OUT, "NC", -1, 1, 0},
       {"dout", IN, "NC", -1, 1, 0, 3}, {"dinp", OVW, "NC", -5, 5, 0, 1}, {"dbias", ACC, "C", -1, 1, 1e-5, 2}},
      rd_fwd, rd_bwd, rd_ref, 0, rd_prep, .extra = rd_extra, .fd = rd_fd),
    R("layernorm", "layernorm_forward,layernorm_backward", "NCsu", SHAPES(ln_sh),
      {{"inp", IN, "NC", -1, 1}, {"weight", IN, "C", 0.5f, 1.5f}, {"bias", IN, "C", -1, 1},
       {"out", OUT, "NC", -1, 1, 1e-5}, {"mean", OUT, "N", -1, 1, 1e-5}, {"rstd", OUT, "N", -1, 1, 1e-5},
       {"dout", IN, "NC", -1, 1, 0, 4}, {"dinp", ACC, "NC", -1, 1, 1e-5, 1}, {"dweight", ACC, "C", -1, 1, 1e-5, 2},
       {"dbias", ACC, "C", -1, 1, 1e-5, 3}},
      ln_fwd, ln_bwd, ln_ref, 1e-5, ln_prep, ln_floor, ln_extra, ln_fd),
    R("embedding", "embedding_forward,embedding_backward", "VEN", SHAPES(em_sh),
      {{"ids", INT, "N", 0, 0, 0, 0, 'V'}, {"table", IN, "VE", -1, 1}, {"out", OUT, "NE", -1, 1},
       {"dout", IN, "NE", -1, 1, 0, 3}, {"dtable", ACC, "VE", -2, 2, 0, 2}},
      em_fwd, em_bwd, em_ref, 0, em_prep, .extra = em_extra),
    R("lstm", "lstm_cell_forward,lstm_cell_backward", "BHGm", SHAPES(lstm_sh),
      {{"gates", ACC, "BGH", -3, 3, 1e-5}, {"h_prev", IN, "BH", -1, 1}, {"c_prev", IN, "BH", -1.5f, 1.5f},
       {"mask", IN, "B", 1, 1}, {"h", OUT, "BH", -1, 1, 1e-5}, {"c", OUT, "BH", -1, 1, 1e-5},
       {"dh", IN, "BH", -1, 1, 0, 5}, {"dc", IN, "BH", -1, 1, 0, 6}, {"dgates", OVW, "BGH", -3, 3, 1e-5, 1},
       {"dh_prev", ACC, "BH", -2, 2, 1e-5, 2}, {"dc_prev", ACC, "BH", -2, 2, 1e-5, 3}},
      lstm_fwd, lstm_bwd, lstm_ref, 1e-5, cell_prep, .extra = cell_extra),
    R("gru", "gru_cell_forward,gru_cell_backward", "BHGm", SHAPES(gru_sh),
      {{"gx", ACC, "BGH", -2, 2, 1e-5}, {"gh", IN, "BGH", -2, 2}, {"h_prev", IN, "BH", -1, 1}, {"mask", IN, "B", 1, 1},
       {"h", OUT, "BH", -1, 1, 1e-5}, {"dh", IN, "BH", -1, 1, 0, 5}, {"dgx", OVW, "BGH", -3, 3, 1e-5, 1},
       {"dgh", OVW, "BGH", -3, 3, 1e-5, 2}, {"dh_prev", ACC, "BH", -2, 2, 1e-5, 3}},
      gru_fwd, gru_bwd, gru_ref, 1e-5, cell_prep, .extra = cell_extra),
    R("linear_attn", "linear_attn_forward,linear_attn_backward,linear_attn_workspace", "BNqkDVcf", SHAPES(lin_sh),
      {{"q", IN, "BNqD", -1, 1}, {"k", IN, "BNkD", -1, 1}, {"v", IN, "BNkV", -1, 1}, {"key_len", INT, "B"},
       {"out", OUT, "BNqV", -1, 1, 1e-5}, {"dout", IN, "BNqV", -1, 1}, {"dq", ACC, "BNqD", -1, 1, 1e-5},
       {"dk", ACC, "BNkD", -1, 1, 1e-5}, {"dv", ACC, "BNkV", -1, 1, 1e-5}, {"work", WORK, ""}},
      lin_fwd, lin_bwd, NULL, 0, lin_prep, .fd = fd_never, .work = lin_work),
    R("linear_attn_step", "linear_attn_step", "BNTDVf", SHAPES(step_sh),
      {{"q", IN, "TBND", -1, 1}, {"k", IN, "TBND", -1, 1}, {"v", IN, "TBNV", -1, 1}, {"out", OUT, "TBNV", -1, 1, 1e-5},
       {"state", ACC, "BNDV", 0, 0, 1e-5}, {"zsum", ACC, "BND", 0, 0, 1e-5}},
      step_fwd, NULL, NULL, 0, step_prep),
    R("linear_attn_split", "linear_attn_summary,linear_attn_read,linear_attn_read_backward,linear_attn_summary_backward",
      "BNqkDVf", SHAPES(lsp_sh),
      {{"q", IN, "BNqD", -1, 1}, {"k", IN, "BNkD", -1, 1}, {"v", IN, "BNkV", -1, 1}, {"key_len", INT, "B"},
       {"dout", IN, "BNqV", -1, 1}, {"state", OUT, "BNDV", -1, 1, 1e-5}, {"zsum", OUT, "BND", -1, 1, 1e-5},
       {"state (key_len NULL)", OUT, "BNDV", -1, 1, 1e-5}, {"zsum (key_len NULL)", OUT, "BND", -1, 1, 1e-5},
       {"out", OUT, "BNqV", -1, 1, 1e-5}, {"out (key_len NULL)", OUT, "BNqV", -1, 1, 1e-5},
       {"dq", ACC, "BNqD", -1, 1, 1e-5}, {"dstate", ACC, "BNDV", -1, 1, 1e-5}, {"dzsum", ACC, "BND", -1, 1, 1e-5},
       {"dstate_in", IN, "BNDV", -1, 1}, {"dzsum_in", IN, "BND", -1, 1}, {"dk", ACC, "BNkD", -1, 1, 1e-5},
       {"dv", ACC, "BNkV", -1, 1, 1e-5}, {"work", WORK, ""}},
      lsp_fwd, lsp_bwd, NULL, 0, lsp_prep, .extra = lsp_extra, .fd = fd_never, .work = lsp_work),
    R("efficient_attn", "efficient_attn_forward,efficient_attn_backward,efficient_attn_workspace", "BNqkDV", SHAPES(lin_sh),
      {{"q", IN, "BNqD", -1, 1}, {"k", IN, "BNkD", -1, 1}, {"v", IN, "BNkV", -1, 1}, {"key_len", INT, "B"},
       {"out", OUT, "BNqV", -1, 1, 1e-5}, {"dout", IN, "BNqV", -1, 1}, {"dq", ACC, "BNqD", -1, 1, 1e-5},
       {"dk", ACC, "BNkD", -1, 1, 1e-5}, {"dv", ACC, "BNkV", -1, 1, 1e-5}, {"work", WORK, ""}},
      eff_fwd, eff_bwd, NULL, 0, eff_prep, .fd = fd_never, .work = eff_work),
    R("efficient_attn_split",
      "efficient_attn_summary,efficient_attn_read,efficient_attn_read_backward,efficient_attn_summary_backward",
      "BNqkDV", SHAPES(lsp_sh),
      {{"q", IN, "BNqD", -1, 1}, {"k", IN, "BNkD", -1, 1}, {"v", IN, "BNkV", -1, 1}, {"key_len", INT, "B"},
       {"dout", IN, "BNqV", -1, 1}, {"ctx", OUT, "BNDV", -1, 1, 1e-5}, {"ctx (key_len NULL)", OUT, "BNDV", -1, 1, 1e-5},
       {"out", OUT, "BNqV", -1, 1, 1e-5}, {"dq", ACC, "BNqD", -1, 1, 1e-5}, {"dctx", ACC, "BNDV", -1, 1, 1e-5},
       {"dctx_in", IN, "BNDV", -1, 1}, {"dk", ACC, "BNkD", -1, 1, 1e-5}, {"dv", ACC, "BNkV", -1, 1, 1e-5},
       {"work", WORK, ""}},
      esp_fwd, esp_bwd, NULL, 0, eff_prep, .extra = esp_extra, .fd = fd_never, .work = eff_work),
    R("linformer_proj", "linformer_proj_forward,linformer_proj_backward", "BNRkDnsHl", SHAPES(lp_sh),
      {{"P", IN, "HRn", -1, 1}, {"x", IN, "BNkD", -1, 1}, {"dout", IN, "BNRD", -1, 1}, {"key_len", INT, "B"},
       {"out", OUT, "BNRD", -1, 1, 1e-5}, {"dx", ACC, "BNkD", -1, 1, 1e-5}, {"dP", ACC, "HRn", -1, 1, 1e-5}},
      lp_fwd, lp_bwd, NULL, 0, attn_prep, .fd = fd_never),
    R("l2feature", "l2feature_forward,l2feature_backward", "NDE", SHAPES(l2_sh),
      {{"x", IN, "ND", -1, 1}, {"out", OUT, "NE", -1, 1, 1e-5}, {"dout", IN, "NE", -1, 1}, {"dx", ACC, "ND", -1, 1, 1e-5}},
      l2_fwd, l2_bwd, NULL, 0, l2_prep, .fd = fd_never),
    R("attn", "attn_forward,attn_backward,attn_workspace,attn_forward_merged,attn_backward_merged", "BNqkDVcm",
      SHAPES(sdp_sh),
      {{"q", IN, "BNqD", -2, 2}, {"k", IN, "BNkD", -2, 2}, {"v", IN, "BNkV", -1, 1}, {"key_len", INT, "B"},
       {"out", OUT, "BNqV", -1, 1, 1e-5}, {"weights", OUT, "BNqk", -1, 1, 1e-5}, {"dout", IN, "BNqV", -1, 1},
       {"dq", ACC, "BNqD", -1, 1, 1e-5}, {"dk", ACC, "BNkD", -1, 1, 1e-5}, {"dv", ACC, "BNkV", -1, 1, 1e-5},
       {"work", WORK, ""}},
      sdp_fwd, sdp_bwd, NULL, 0, sdp_prep, sdp_floor, .fd = fd_never, .work = sdp_work),
    R("flash_attn", "flash_attn_forward,flash_attn_backward,flash_attn_workspace", "BNqkDVcmf", SHAPES(fl_sh),
      {{"q", IN, "BNqD", -2, 2}, {"k", IN, "BNkD", -2, 2}, {"v", IN, "BNkV", -1, 1}, {"key_len", INT, "B"},
       {"out", OUT, "BNqV", -1, 1, 1e-5}, {"lse", OUT, "BNq", -1, 1, -1e-5}, {"dout", IN, "BNqV", -1, 1},
       {"dq", ACC, "BNqD", -1, 1, 1e-5}, {"dk", ACC, "BNkD", -1, 1, 1e-5}, {"dv", ACC, "BNkV", -1, 1, 1e-5},
       {"work", WORK, ""}},
      fl_fwd, fl_bwd, NULL, 0, sdp_prep, sdp_floor, .fd = fd_never, .work = fl_work),
    R("additive_attn", "additive_attn_forward,additive_attn_backward,additive_attn_workspace", "BNqkAVc", SHAPES(add_sh),
      {{"qp", IN, "BNqA", -1, 1}, {"kp", IN, "BNkA", -1, 1}, {"v", IN, "BNkV", -1, 1}, {"key_len", INT, "B"},
       {"out", OUT, "BNqV", -1, 1, 1e-5}, {"weights", OUT, "BNqk", -1, 1, 1e-5}, {"dout", IN, "BNqV", -1, 1},
       {"dqp", ACC, "BNqA", -1, 1, 1e-5}, {"dkp", ACC, "BNkA", -1, 1, 1e-5}, {"dv", ACC, "BNkV", -1, 1, 1e-5},
       {"work", WORK, ""}, {"v_a", IN, "NA", -1, 1}, {"dv_a", ACC, "NA", -1, 1, 1e-5}},
      add_fwd, add_bwd, NULL, 0, attn_prep, .fd = fd_never, .work = add_work),
    R("local_attn", "local_attn_forward,local_attn_backward,local_attn_workspace", "BNqkDVpaWPw", SHAPES(loc_sh),
      {{"q", IN, "BNqD", -1, 1}, {"k", IN, "BNkD", -1, 1}, {"v", IN, "BNkV", -1, 1}, {"key_len", INT, "B"},
       {"out", OUT, "BNqV", -1, 1, 1e-5}, {"weights", OUT, "BNqw", -1, 1, -1e-5}, {"dout", IN, "BNqV", -1, 1},
       {"dq", ACC, "BNqD", -1, 1, 1e-5}, {"dk", ACC, "BNkD", -1, 1, 1e-5}, {"dv", ACC, "BNkV", -1, 1, 1e-5},
       {"work", WORK, ""}, {"v_a", IN, "ND", -1, 1}, {"dv_a", ACC, "ND", -1, 1, 1e-5}, {"z", IN, "Bq", -1, 1},
       {"dz", ACC, "Bq", -1, 1, 1e-5}},
      loc_fwd, loc_bwd, NULL, 0, loc_prep, .extra = loc_extra, .fd = fd_never, .work = loc_work),
    R("pointwise_attn", "pointwise_attn_forward,pointwise_attn_backward,pointwise_attn_workspace", "BNqkDVcf",
      SHAPES(pw_sh),
      {{"q", IN, "BNqD", -2, 2}, {"k", IN, "BNkD", -2, 2}, {"v", IN, "BNkV", -1, 1}, {"key_len", INT, "B"},
       {"out", OUT, "BNqV", -1, 1, 1e-5}, {"weights", OUT, "BNqk", -1, 1, 1e-5}, {"dout", IN, "BNqV", -1, 1, 0, 5},
       {"dq", ACC, "BNqD", -1, 1, 1e-5, 1}, {"dk", ACC, "BNkD", -1, 1, 1e-5, 2}, {"dv", ACC, "BNkV", -1, 1, 1e-5, 3},
       {"work", WORK, ""}},
      pw_fwd, pw_bwd, pw_ref, 1e-5, pw_prep, .extra = pw_extra, .work = pw_work),
    R("head_rmsnorm", "head_rmsnorm_forward,head_rmsnorm_backward", "BNTCz", SHAPES(rms_sh),
      {{"inp", IN, "BNTC", -1, 1}, {"gain", IN, "NC", 0.5f, 1.5f}, {"out", OUT, "BNTC", -1, 1, 1e-5},
       {"rstd", OUT, "BNT", -1, 1, 1e-5}, {"dout", IN, "BNTC", -1, 1, 0, 3}, {"dinp", ACC, "BNTC", -1, 1, 1e-5, 1},
       {"dgain", ACC, "NC", -1, 1, 1e-5, 2}},
      rms_fwd, rms_bwd, rms_ref, 1e-5, rms_prep, .fd = rms_fd),
    R("adam", "adam_update", "nT", SHAPES(adam_sh),
      {{"grad", IN, "Tn", -2, 2}, {"param", ACC, "n", -1, 1, 1e-6}, {"m", ACC, "n", 0, 0, 1e-6}, {"v", ACC, "n", 0, 0, 1e-6}},
      adam_fwd, NULL, adam_ref, 1e-6, adam_prep),
    R("xent", "xent_forward_backward,xent_workspace", "NVeiga", SHAPES(xent_sh),
      {{"logits", IN, "NV", -4, 4}, {"targets", INT, "N", 0, 0, 0, 0, 'V'}, {"dloss", IN, "", 1, 1, 0, 4},
       {"loss", RET, "", 0, 0, 1e-5}, {"loss (with dlogits)", RET, "", 0, 0, 1e-5},
       {"dlogits", OVW, "NV", -2, 2, 1e-5, 1}, {"work", WORK, ""}},
      xent_fwd, xent_bwd, xent_ref, 2e-6, xent_prep, .extra = xent_extra, .work = xent_work),
    R("log_softmax", "log_softmax", "NVk", SHAPES(ls_sh), {{"x", IN, "NV", -4, 4}, {"out", OUT, "NV", -1, 1, -1e-5}},
      ls_fwd, NULL, ls_ref, -1e-5, sm_prep, sm_floor, sm_extra),
    R("argmax", "argmax", "NVk", SHAPES(am_sh), {{"x", IN, "NV", -4, 4}, {"ids", IOUT, "N", -7, -7}},
      am_fwd, NULL, am_ref, 0, sm_prep),
    R("sumsq_all_finite", "sumsq,all_finite", "nc", SHAPES(red_sh),
      {{"x", IN, "n", -1e30f, 1e30f}, {"sumsq", RET, "", 0, 0, 1e-9}, {"all_finite", RET, "", 0, 0, 0},
       {"all_finite again", RET, "", 0, 0, 0}},
      red_fwd, NULL, red_ref, 1e-10, red_prep),
#undef R
};
#pragma GCC diagnostic pop
enum { NROWS = (int)(sizeof ROWS / sizeof ROWS[0]) };

/* One entry per OpKind: its row of the harness (ROWS), and the special checks the rows do not
 * express (the cpu's, and those of another backend against the cpu; NULL: none). A row or
 * function that serves several OpKinds runs once. */
typedef struct {
    const char *name;
    const char *row; /* the name of its row in ROWS, or NULL */
    void (*cpu)(void);
    void (*vs_cpu)(void);
} OpCase;

static const OpCase CASES[OP_COUNT] = {
    [OP_MATMUL] = {"matmul", "matmul", test_matmul_next_to_held, vs_cpu_precision},
    [OP_MATMUL_BIAS_FORWARD] = {"matmul_bias_forward", "matmul_bias_forward", NULL, vs_cpu_precision},
    [OP_BIAS_FORWARD] = {"bias_forward", "bias", NULL, NULL},
    [OP_BIAS_BACKWARD] = {"bias_backward", "bias", NULL, NULL},
    [OP_AXPY] = {"axpy", "axpy", NULL, NULL},
    [OP_SCALE] = {"scale", "scale", NULL, NULL},
    [OP_SUMSQ] = {"sumsq", "sumsq_all_finite", NULL, NULL},
    [OP_ALL_FINITE] = {"all_finite", "sumsq_all_finite", NULL, NULL},
    [OP_CONCAT2_FORWARD] = {"concat2_forward", "concat2", NULL, NULL},
    [OP_CONCAT2_BACKWARD] = {"concat2_backward", "concat2", NULL, NULL},
    [OP_TRANSPOSE01_FORWARD] = {"transpose01_forward", "transpose01", NULL, NULL},
    [OP_TRANSPOSE01_BACKWARD] = {"transpose01_backward", "transpose01", NULL, NULL},
    [OP_TANH_FORWARD] = {"tanh_forward", "tanh", NULL, NULL},
    [OP_TANH_BACKWARD] = {"tanh_backward", "tanh", NULL, NULL},
    [OP_DROPOUT_FORWARD] = {"dropout_forward", "dropout", NULL, NULL},
    [OP_DROPOUT_BACKWARD] = {"dropout_backward", "dropout", NULL, NULL},
    [OP_LAYERNORM_FORWARD] = {"layernorm_forward", "layernorm", NULL, NULL},
    [OP_LAYERNORM_BACKWARD] = {"layernorm_backward", "layernorm", NULL, NULL},
    [OP_BIAS_RELU_DROPOUT_FORWARD] = {"bias_relu_dropout_forward", "bias_relu_dropout", NULL, NULL},
    [OP_RELU_DROPOUT_BACKWARD] = {"relu_dropout_backward", "bias_relu_dropout", NULL, NULL},
    [OP_PERMUTE0213_FORWARD] = {"permute0213_forward", "permute0213", NULL, NULL},
    [OP_PERMUTE0213_BACKWARD] = {"permute0213_backward", "permute0213", NULL, NULL},
    [OP_WRITE_STEP] = {"write_step", "write_step", NULL, NULL},
    [OP_GATHER_ROWS_STRIDED] = {"gather_rows_strided", "gather_rows", NULL, NULL},
    [OP_EMBEDDING_FORWARD] = {"embedding_forward", "embedding", NULL, NULL},
    [OP_EMBEDDING_BACKWARD] = {"embedding_backward", "embedding", NULL, NULL},
    [OP_LSTM_CELL_FORWARD] = {"lstm_cell_forward", "lstm", NULL, NULL},
    [OP_LSTM_CELL_BACKWARD] = {"lstm_cell_backward", "lstm", NULL, NULL},
    [OP_GRU_CELL_FORWARD] = {"gru_cell_forward", "gru", NULL, NULL},
    [OP_GRU_CELL_BACKWARD] = {"gru_cell_backward", "gru", NULL, NULL},
    [OP_GATHER_ROWS] = {"gather_rows", "gather_rows", NULL, NULL},
    [OP_XENT_FORWARD_BACKWARD] = {"xent_forward_backward", "xent", NULL, NULL},
    [OP_XENT_WORKSPACE] = {"xent_workspace", "xent", NULL, NULL},
    [OP_LOG_SOFTMAX] = {"log_softmax", "log_softmax", NULL, NULL},
    [OP_ARGMAX] = {"argmax", "argmax", NULL, NULL},
    [OP_ADAM_UPDATE] = {"adam_update", "adam", NULL, NULL},
    [OP_ATTN_FORWARD] = {"attn_forward", "attn", case_attn_sdp, NULL},
    [OP_ATTN_BACKWARD] = {"attn_backward", "attn", case_attn_sdp, NULL},
    [OP_ATTN_WORKSPACE] = {"attn_workspace", "attn", case_attn_sdp, NULL},
    [OP_ATTN_FORWARD_MERGED] = {"attn_forward_merged", "attn", case_attn_sdp_merged, NULL},
    [OP_ATTN_BACKWARD_MERGED] = {"attn_backward_merged", "attn", case_attn_sdp_merged, NULL},
    [OP_ADDITIVE_ATTN_FORWARD] = {"additive_attn_forward", "additive_attn", case_additive_attn, NULL},
    [OP_ADDITIVE_ATTN_BACKWARD] = {"additive_attn_backward", "additive_attn", case_additive_attn, NULL},
    [OP_ADDITIVE_ATTN_WORKSPACE] = {"additive_attn_workspace", "additive_attn", case_additive_attn, NULL},
    [OP_LOCAL_ATTN_FORWARD] = {"local_attn_forward", "local_attn", case_local_attn, NULL},
    [OP_LOCAL_ATTN_BACKWARD] = {"local_attn_backward", "local_attn", case_local_attn, NULL},
    [OP_LOCAL_ATTN_WORKSPACE] = {"local_attn_workspace", "local_attn", case_local_attn, NULL},
    [OP_FLASH_ATTN_FORWARD] = {"flash_attn_forward", "flash_attn", case_flash_attn, NULL},
    [OP_FLASH_ATTN_BACKWARD] = {"flash_attn_backward", "flash_attn", case_flash_attn, NULL},
    [OP_FLASH_ATTN_WORKSPACE] = {"flash_attn_workspace", "flash_attn", case_flash_attn, NULL},
    [OP_LINEAR_ATTN_FORWARD] = {"linear_attn_forward", "linear_attn", case_linear_attn, NULL},
    [OP_LINEAR_ATTN_BACKWARD] = {"linear_attn_backward", "linear_attn", case_linear_attn, NULL},
    [OP_LINEAR_ATTN_STEP] = {"linear_attn_step", "linear_attn_step", case_linear_attn, NULL},
    [OP_LINEAR_ATTN_SUMMARY] = {"linear_attn_summary", "linear_attn_split", case_linear_attn, NULL},
    [OP_LINEAR_ATTN_READ] = {"linear_attn_read", "linear_attn_split", case_linear_attn, NULL},
    [OP_LINEAR_ATTN_READ_BACKWARD] = {"linear_attn_read_backward", "linear_attn_split", case_linear_attn, NULL},
    [OP_LINEAR_ATTN_SUMMARY_BACKWARD] = {"linear_attn_summary_backward", "linear_attn_split", case_linear_attn, NULL},
    [OP_LINEAR_ATTN_WORKSPACE] = {"linear_attn_workspace", "linear_attn", case_linear_attn, NULL},
    [OP_L2FEATURE_FORWARD] = {"l2feature_forward", "l2feature", case_taylor_attn, NULL},
    [OP_L2FEATURE_BACKWARD] = {"l2feature_backward", "l2feature", case_taylor_attn, NULL},
    [OP_LINFORMER_PROJ_FORWARD] = {"linformer_proj_forward", "linformer_proj", case_linformer_attn, NULL},
    [OP_LINFORMER_PROJ_BACKWARD] = {"linformer_proj_backward", "linformer_proj", case_linformer_attn, NULL},
    [OP_EFFICIENT_ATTN_FORWARD] = {"efficient_attn_forward", "efficient_attn", case_efficient_attn, NULL},
    [OP_EFFICIENT_ATTN_BACKWARD] = {"efficient_attn_backward", "efficient_attn", case_efficient_attn, NULL},
    [OP_EFFICIENT_ATTN_WORKSPACE] = {"efficient_attn_workspace", "efficient_attn", case_efficient_attn, NULL},
    [OP_EFFICIENT_ATTN_SUMMARY] = {"efficient_attn_summary", "efficient_attn_split", case_efficient_attn, NULL},
    [OP_EFFICIENT_ATTN_READ] = {"efficient_attn_read", "efficient_attn_split", case_efficient_attn, NULL},
    [OP_EFFICIENT_ATTN_READ_BACKWARD] = {"efficient_attn_read_backward", "efficient_attn_split", case_efficient_attn, NULL},
    [OP_EFFICIENT_ATTN_SUMMARY_BACKWARD] = {"efficient_attn_summary_backward", "efficient_attn_split", case_efficient_attn, NULL},
    [OP_POINTWISE_ATTN_FORWARD] = {"pointwise_attn_forward", "pointwise_attn", NULL, NULL},
    [OP_POINTWISE_ATTN_BACKWARD] = {"pointwise_attn_backward", "pointwise_attn", NULL, NULL},
    [OP_POINTWISE_ATTN_WORKSPACE] = {"pointwise_attn_workspace", "pointwise_attn", NULL, NULL},
    [OP_HEAD_RMSNORM_FORWARD] = {"head_rmsnorm_forward", "head_rmsnorm", NULL, NULL},
    [OP_HEAD_RMSNORM_BACKWARD] = {"head_rmsnorm_backward", "head_rmsnorm", NULL, NULL},
};

static const Row *row_named(const char *name) {
    for (int i = 0; name && i < NROWS; i++)
        if (strcmp(ROWS[i].name, name) == 0) return &ROWS[i];
    return NULL;
}

/* 1 if what (a row name or a function) already ran for an earlier selected OpKind. */
static int ran_before(int op, const void *what, int kind) {
    for (int j = 0; j < op; j++) {
        const void *w = kind == 0 ? (const void *)CASES[j].row : kind == 1 ? (const void *)CASES[j].cpu
                                                                            : (const void *)CASES[j].vs_cpu;
        if (op_selected[j] && w && (kind == 0 ? strcmp(w, what) == 0 : w == what)) return 1;
    }
    return 0;
}

/* Every OpKind has a case, named as op_name says, its row (if any) in ROWS naming it. */
static void check_table(void) {
    for (int op = 0; op < OP_COUNT; op++) {
        const char *nm = op_name((OpKind)op);
        EXPECT(strcmp(nm, "?") != 0, "OpKind %d has no name", op);
        EXPECT(CASES[op].cpu != NULL || CASES[op].row, "no test case for op %s", nm);
        EXPECT(!CASES[op].name || strcmp(CASES[op].name, nm) == 0, "case %d is named %s, the op %s",
               op, CASES[op].name, nm);
        const Row *r = row_named(CASES[op].row);
        EXPECT(!CASES[op].row || (r && strstr(r->ops, nm)), "op %s: its row %s does not name it",
               nm, CASES[op].row);
    }
}

/* The case of op: its row (through the harness), then its special functions (cpu: 0, another
 * backend against the cpu: 1). */
static void run_case(int op, int cross) {
    const Row *r = row_named(CASES[op].row);
    if (r && !ran_before(op, CASES[op].row, 0)) run_row(r, (int)(r - ROWS));
    void (*fn)(void) = cross ? CASES[op].vs_cpu : CASES[op].cpu;
    /* each function's inputs are its own: the same whether or not --ops left others out */
    rng_seed(&optest_rng, cross ? 20240601u : 20240611u, 100 + (uint64_t)op);
    g_quiet = 0;
    if (fn && !ran_before(op, (const void *)fn, 1 + cross)) fn();
}

static int run_cpu(void) {
    cpu = backend_cpu();
    rng_seed(&optest_rng, 20240611, 3);
    check_table();
    if (!ops_filtered) memory_checks(cpu);
    int ncases = 0;
    for (int op = 0; op < OP_COUNT; op++) {
        if (!op_selected[op]) continue;
        ncases++;
        run_case(op, 0);
    }
    if (!ops_filtered) test_require_ops();
    printf("%d op cases (%d OpKinds)\n", ncases, OP_COUNT);
    return test_report("test_backend_ops");
}

/* One pass of every vs-cpu case the backend under test supports, the input generator seeded
 * afresh (so that every pass draws the same inputs); verbose: name the ops it lacks. */
static void vs_cpu_suite(int verbose) {
    rng_seed(&optest_rng, 20240601u, 7u);
    check_table();
    if (!ops_filtered) memory_checks(gpu);
    for (int op = 0; op < OP_COUNT; op++) {
        if (!op_selected[op]) continue;
        if (!supports_op(gpu, (OpKind)op)) {
            if (verbose) printf("  cuda backend has no %s yet: skipped\n", op_name((OpKind)op));
            continue;
        }
        EXPECT(CASES[op].vs_cpu != NULL || CASES[op].row, "cuda implements %s but its case has "
               "no check against the cpu", op_name((OpKind)op));
        run_case(op, 1);
    }
    gpu->synchronize();
}

static int run_vs_cpu(const char *backend) {
    char msg[1024] = "";
    if (strcmp(backend, "cuda") != 0) {
        fprintf(stderr, "test_backend_ops: unknown backend '%s' (cuda)\n", backend);
        return 2;
    }
    gpu = backend_cuda(msg, sizeof msg);
    if (!gpu) {
#ifdef TRAINER_SIMT
        fprintf(stderr, "test_backend_ops --backend cuda: FAIL: the emulated CUDA backend did not "
                        "start: %s\n", msg);
        return 1;
#else
        printf("test_backend_ops --backend cuda: skipped: %s\n", msg);
        return 77;
#endif
    }
    cpu = backend_cpu();
    if (gpu->alloc && gpu->free && gpu->upload && gpu->download && !test_sanitized()) {
        /* guarded memory (above) */
        unguarded = gpu;
        guarded = *gpu;
        guarded.alloc = guarded_alloc, guarded.free = guarded_free;
        gpu = &guarded;
    }
    EXPECT(strcmp(gpu->name, "cuda") == 0, "backend name is \"%s\", not \"cuda\"", gpu->name);
    /* the memory entries are not optional: without them nothing else can run */
    int mem_ok = gpu->alloc && gpu->free && gpu->upload && gpu->download && gpu->copy &&
                 gpu->zero && gpu->synchronize;
    EXPECT(mem_ok, "the cuda backend lacks a memory entry (alloc/free/upload/download/copy/zero/"
                   "synchronize)");
    if (!mem_ok) return test_report("test_backend_ops --backend cuda");
#ifndef TRAINER_SIMT
    vs_cpu_suite(1);
#else
    /* The emulated build: the whole suite under five thread/block schedules, the inputs drawn
     * identically each time; a race-free kernel gives the same bits under every schedule, so
     * every output must hash as under the first (docs/design.md §11). Under ASan (fibers switch by
     * swapcontext, about 10x slower) the first two (forward, random:1): that build looks for memory errors, the plain
     * one for races. TEST_SIMT_SCHEDULES=N runs the first N only (the TSan build: one schedule,
     * its blocks on several OS threads, TSan watching every emulated thread). */
    static const struct { int kind; unsigned long long seed; const char *name; } sched[] = {
        {SIMT_FORWARD, 0, "forward"}, {SIMT_RANDOM, 1, "random:1"}, {SIMT_REVERSE, 0, "reverse"},
        {SIMT_RANDOM, 2, "random:2"}, {SIMT_RANDOM, 3, "random:3"}};
    size_t n_ref = 0;
    uint64_t *ref = NULL;
    int nsched = test_sanitized() ? 2 : 5;
    const char *lim = getenv("TEST_SIMT_SCHEDULES"); /* fewer, e.g. 1 for the TSan run */
    if (lim && atoi(lim) >= 1 && atoi(lim) < nsched) nsched = atoi(lim);
    for (int s = 0; s < nsched; s++) {
        g_pass = s;
        simt_set_schedule(sched[s].kind, sched[s].seed);
        n_seen = 0;
        int failed_before = test_failures;
        double t0 = omp_get_wtime();
        vs_cpu_suite(s == 0);
        size_t differ = 0, first = 0;
        if (s == 0) {
            n_ref = n_seen;
            ref = malloc(n_ref * sizeof *ref + 1);
            if (!ref) exit(2);
            for (size_t i = 0; i < n_ref; i++) ref[i] = out_seen[i].hash;
        } else {
            for (size_t i = 0; i < n_seen && i < n_ref; i++)
                if (out_seen[i].hash != ref[i] && differ++ == 0) first = i;
            EXPECT(n_seen == n_ref, "schedule %s: %zu outputs, the forward schedule had %zu",
                   sched[s].name, n_seen, n_ref);
            EXPECT(differ == 0, "schedule %s: %zu of %zu outputs differ in bits from the forward "
                   "schedule's (a race or an uninitialised read), the first: %s", sched[s].name,
                   differ, n_seen, differ ? out_seen[first].what : "");
        }
        printf("schedule %-8s: %zu outputs, %s, %d failed checks, %.1f s\n", sched[s].name,
               n_seen, s == 0 ? "reference" : differ ? "BITS DIFFER" : "bit-identical",
               test_failures - failed_before, omp_get_wtime() - t0);
    }
    free(ref);
#endif
    free(out_seen);
    return test_report("test_backend_ops --backend cuda");
}

/* Marks the OpKinds named in list (comma-separated op_name names); 0, or -1 naming the first
 * unknown name on stderr. */
static int select_ops(const char *list) {
    ops_filtered = 1;
    const char *p = list;
    while (*p) {
        size_t n = strcspn(p, ",");
        int found = 0;
        for (int op = 0; op < OP_COUNT; op++)
            if (strlen(op_name((OpKind)op)) == n && strncmp(op_name((OpKind)op), p, n) == 0)
                op_selected[op] = found = 1;
        if (!found) {
            fprintf(stderr, "test_backend_ops: --ops: no op named '%.*s'\n", (int)n, p);
            return -1;
        }
        p += n + (p[n] == ',');
    }
    return 0;
}

int main(int argc, char **argv) {
    const char *backend = NULL;
    for (int op = 0; op < OP_COUNT; op++) op_selected[op] = 1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--backend") == 0 && i + 1 < argc && !backend) {
            backend = argv[++i];
        } else if (strcmp(argv[i], "--ops") == 0 && i + 1 < argc && !ops_filtered) {
            memset(op_selected, 0, sizeof op_selected);
            if (select_ops(argv[++i])) return 2;
        } else {
            fprintf(stderr, "usage: test_backend_ops [--backend cuda] [--ops NAME[,NAME...]]\n");
            return 2;
        }
    }
    return backend ? run_vs_cpu(backend) : run_cpu();
}
