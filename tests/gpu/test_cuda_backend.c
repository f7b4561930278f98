/* test_cuda_backend.c — every implemented entry of the CUDA backend against the CPU backend (the
 * reference) on the same random inputs (DESIGN.md §9, label gpu).
 *
 * Without a usable CUDA device (or in a build without CUDA) backend_cuda() returns NULL: the test
 * prints the reason and exits 77, which CTest reports as "not run" — never as passed.
 * Entries that the CUDA backend leaves NULL (not yet ported) are listed and skipped; an entry
 * that is present must match.
 *
 * Tolerances (normwise relative error max|gpu - cpu| / max|cpu|):
 *   memory ops: exact; matmul: < 1e-4 (FP32, different summation order);
 *   bias/axpy/scale: < 1e-6 (FMA contraction may differ); sumsq: < 1e-9 (both accumulate in
 *   double); all_finite: exact (same verdict).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"
#include "rng.h"
#include "testutil.h"

static const Backend *cpu;
static const Backend *gpu;
static Rng rng;

/* n floats uniform in [-1, 1) (malloc'd). */
static float *rand_floats(size_t n) {
    float *x = malloc(n * sizeof *x + 1);
    if (!x) {
        fprintf(stderr, "out of host memory\n");
        exit(2);
    }
    for (size_t i = 0; i < n; i++) x[i] = 2.0f * rng_uniform(&rng) - 1.0f;
    return x;
}

/* A buffer of be's memory holding a copy of host[n] floats. */
static float *to_backend(const Backend *be, const float *host, size_t n) {
    float *p = be->alloc(n * sizeof(float));
    be->upload(p, host, n * sizeof(float));
    return p;
}

/* Downloads n floats from be's memory into a fresh host buffer. */
static float *from_backend(const Backend *be, const float *p, size_t n) {
    float *h = malloc(n * sizeof *h + 1);
    if (!h) {
        fprintf(stderr, "out of host memory\n");
        exit(2);
    }
    be->download(h, p, n * sizeof(float));
    return h;
}

/* Normwise relative error max|got - ref| / max|ref| (absolute if ref is all zero). */
static double rel_err(const float *got, const float *ref, size_t n) {
    double dmax = 0.0, rmax = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - (double)ref[i]);
        if (!(d <= dmax)) dmax = d; /* NaN propagates */
        double r = fabs((double)ref[i]);
        if (r > rmax) rmax = r;
    }
    return rmax > 0.0 ? dmax / rmax : dmax;
}

/* Downloads a float tensor from both backends and compares them. */
static void compare(const char *what, const float *g_dev, const float *c_dev, size_t n,
                    double tol) {
    float *g = from_backend(gpu, g_dev, n);
    float *c = from_backend(cpu, c_dev, n);
    double e = rel_err(g, c, n);
    EXPECT(e < tol, "%s: relative error %.3g >= %.1g (n = %zu)", what, e, tol, n);
    free(g);
    free(c);
}

/* 1 if both backends have the entry; otherwise says which lacks it. */
static int both_have(const char *op, const void *cpu_fn, const void *gpu_fn) {
    if (!cpu_fn) {
        EXPECT(cpu_fn != NULL, "cpu backend lacks %s (the reference must have every op)", op);
        return 0;
    }
    if (!gpu_fn) {
        printf("  cuda backend has no %s yet: skipped\n", op);
        return 0;
    }
    return 1;
}
#define HAVE(op) both_have(#op, (const void *)cpu->op, (const void *)gpu->op)

/* alloc zero-fills; upload/download round-trips; copy and zero do what they say. */
static void test_memory(void) {
    size_t n = 10007;
    float *h = rand_floats(n);
    float *d = gpu->alloc(n * sizeof(float));
    float *back = from_backend(gpu, d, n);
    size_t nonzero = 0;
    for (size_t i = 0; i < n; i++) nonzero += back[i] != 0.0f;
    EXPECT(nonzero == 0, "alloc: %zu of %zu floats not zero", nonzero, n);
    free(back);

    gpu->upload(d, h, n * sizeof(float));
    back = from_backend(gpu, d, n);
    EXPECT(memcmp(back, h, n * sizeof(float)) == 0, "upload/download: bytes differ");
    free(back);

    float *d2 = gpu->alloc(n * sizeof(float));
    gpu->copy(d2, d, n * sizeof(float));
    back = from_backend(gpu, d2, n);
    EXPECT(memcmp(back, h, n * sizeof(float)) == 0, "copy: bytes differ");
    free(back);

    /* zero a middle range only: the bytes around it must survive */
    size_t lo = 100, len = 5000;
    gpu->zero(d2 + lo, len * sizeof(float));
    gpu->synchronize();
    back = from_backend(gpu, d2, n);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        float want = (i >= lo && i < lo + len) ? 0.0f : h[i];
        bad += memcmp(&back[i], &want, sizeof want) != 0;
    }
    EXPECT(bad == 0, "zero: %zu floats wrong", bad);
    free(back);

    gpu->free(d);
    gpu->free(d2);
    gpu->free(NULL);
    free(h);
}

/* matmul: all four transpose combinations, non-square M, Nc, K, beta 0 and 1. */
static void test_matmul(void) {
    if (!HAVE(matmul)) return;
    static const int shapes[][3] = {{37, 53, 71}, {1, 29, 130}, {64, 1, 17}, {5, 300, 1}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int M = shapes[s][0], Nc = shapes[s][1], K = shapes[s][2];
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++)
                for (int bi = 0; bi < 2; bi++) {
                    float beta = (float)bi, alpha = 0.75f;
                    size_t na = (size_t)M * K, nb = (size_t)K * Nc, nc = (size_t)M * Nc;
                    float *ha = rand_floats(na), *hb = rand_floats(nb), *hc = rand_floats(nc);
                    float *ga = to_backend(gpu, ha, na), *gb = to_backend(gpu, hb, nb);
                    float *gc = to_backend(gpu, hc, nc);
                    float *ca = to_backend(cpu, ha, na), *cb = to_backend(cpu, hb, nb);
                    float *cc = to_backend(cpu, hc, nc);
                    gpu->matmul(gc, ga, gb, M, Nc, K, ta, tb, alpha, beta);
                    cpu->matmul(cc, ca, cb, M, Nc, K, ta, tb, alpha, beta);
                    char what[128];
                    snprintf(what, sizeof what,
                             "matmul M=%d Nc=%d K=%d transA=%d transB=%d beta=%g", M, Nc, K, ta,
                             tb, (double)beta);
                    compare(what, gc, cc, nc, 1e-4);
                    gpu->free(ga), gpu->free(gb), gpu->free(gc);
                    cpu->free(ca), cpu->free(cb), cpu->free(cc);
                    free(ha), free(hb), free(hc);
                }
    }
}

/* bias_forward adds a row vector; bias_backward accumulates column sums into dbias. */
static void test_bias(void) {
    static const int shapes[][2] = {{129, 67}, {1, 5}, {1000, 1}, {3, 1031}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int N = shapes[s][0], C = shapes[s][1];
        size_t n = (size_t)N * C;
        char what[96];
        if (HAVE(bias_forward)) {
            float *hout = rand_floats(n), *hb = rand_floats((size_t)C);
            float *go = to_backend(gpu, hout, n), *gbias = to_backend(gpu, hb, (size_t)C);
            float *co = to_backend(cpu, hout, n), *cbias = to_backend(cpu, hb, (size_t)C);
            gpu->bias_forward(go, gbias, N, C);
            cpu->bias_forward(co, cbias, N, C);
            snprintf(what, sizeof what, "bias_forward N=%d C=%d", N, C);
            compare(what, go, co, n, 1e-6);
            gpu->free(go), gpu->free(gbias), cpu->free(co), cpu->free(cbias);
            free(hout), free(hb);
        }
        if (HAVE(bias_backward)) {
            float *hd = rand_floats(n), *hdb = rand_floats((size_t)C); /* dbias: accumulates */
            float *gd = to_backend(gpu, hd, n), *gdb = to_backend(gpu, hdb, (size_t)C);
            float *cd = to_backend(cpu, hd, n), *cdb = to_backend(cpu, hdb, (size_t)C);
            gpu->bias_backward(gdb, gd, N, C);
            cpu->bias_backward(cdb, cd, N, C);
            snprintf(what, sizeof what, "bias_backward N=%d C=%d", N, C);
            compare(what, gdb, cdb, (size_t)C, 1e-5);
            gpu->free(gd), gpu->free(gdb), cpu->free(cd), cpu->free(cdb);
            free(hd), free(hdb);
        }
    }
}

/* axpy and scale over sizes that are not multiples of any block size. */
static void test_axpy_scale(void) {
    static const size_t sizes[] = {1, 255, 100003, 3000017};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        size_t n = sizes[s];
        char what[64];
        if (HAVE(axpy)) {
            float *hy = rand_floats(n), *hx = rand_floats(n);
            float *gy = to_backend(gpu, hy, n), *gx = to_backend(gpu, hx, n);
            float *cy = to_backend(cpu, hy, n), *cx = to_backend(cpu, hx, n);
            gpu->axpy(gy, -0.37f, gx, n);
            cpu->axpy(cy, -0.37f, cx, n);
            snprintf(what, sizeof what, "axpy n=%zu", n);
            compare(what, gy, cy, n, 1e-6);
            gpu->free(gy), gpu->free(gx), cpu->free(cy), cpu->free(cx);
            free(hy), free(hx);
        }
        if (HAVE(scale)) {
            float *hx = rand_floats(n);
            float *gx = to_backend(gpu, hx, n), *cx = to_backend(cpu, hx, n);
            gpu->scale(gx, 1.7f, n);
            cpu->scale(cx, 1.7f, n);
            snprintf(what, sizeof what, "scale n=%zu", n);
            compare(what, gx, cx, n, 1e-6);
            gpu->free(gx), cpu->free(cx);
            free(hx);
        }
    }
}

/* sumsq (double accumulation on both sides) and all_finite (same verdicts, incl. NaN/Inf at the
 * first, a middle and the last position). */
static void test_reductions(void) {
    static const size_t sizes[] = {1, 1000, 262145, 5000011};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        size_t n = sizes[s];
        float *hx = rand_floats(n);
        float *gx = to_backend(gpu, hx, n), *cx = to_backend(cpu, hx, n);
        if (HAVE(sumsq)) {
            double g = gpu->sumsq(gx, n), c = cpu->sumsq(cx, n);
            double e = fabs(g - c) / (c > 0 ? c : 1.0);
            EXPECT(e < 1e-9, "sumsq n=%zu: gpu %.17g cpu %.17g (relative error %.3g)", n, g, c,
                   e);
        }
        if (HAVE(all_finite)) {
            int g = gpu->all_finite(gx, n), c = cpu->all_finite(cx, n);
            EXPECT(g == 1 && c == 1, "all_finite n=%zu on finite data: gpu %d cpu %d", n, g, c);
            const float bad_values[] = {NAN, INFINITY, -INFINITY};
            const size_t where[] = {0, n / 2, n - 1};
            for (int v = 0; v < 3; v++)
                for (int w = 0; w < 3; w++) {
                    size_t i = where[w];
                    gpu->upload(gx + i, &bad_values[v], sizeof(float));
                    cpu->upload(cx + i, &bad_values[v], sizeof(float));
                    g = gpu->all_finite(gx, n);
                    c = cpu->all_finite(cx, n);
                    EXPECT(g == 0 && c == 0, "all_finite n=%zu with %g at %zu: gpu %d cpu %d", n,
                           (double)bad_values[v], i, g, c);
                    gpu->upload(gx + i, &hx[i], sizeof(float));
                    cpu->upload(cx + i, &hx[i], sizeof(float));
                }
        }
        gpu->free(gx), cpu->free(cx);
        free(hx);
    }
}

int main(void) {
    char msg[1024] = "";
    gpu = backend_cuda(msg, sizeof msg);
    if (!gpu) {
        printf("test_cuda_backend: skipped: %s\n", msg);
        return 77;
    }
    cpu = backend_cpu();
    EXPECT(cpu != NULL, "backend_cpu() returned NULL");
    EXPECT(strcmp(gpu->name, "cuda") == 0, "backend name is \"%s\", not \"cuda\"", gpu->name);
    if (!cpu) return test_report("test_cuda_backend");
    /* the memory entries are not optional: without them nothing else can run */
    int mem_ok = gpu->alloc && gpu->free && gpu->upload && gpu->download && gpu->copy &&
                 gpu->zero && gpu->synchronize;
    EXPECT(mem_ok, "the cuda backend lacks a memory entry (alloc/free/upload/download/copy/zero/"
                   "synchronize)");
    if (!mem_ok) return test_report("test_cuda_backend");

    rng_seed(&rng, 20240601u, 7u);
    test_memory();
    test_matmul();
    test_bias();
    test_axpy_scale();
    test_reductions();
    gpu->synchronize();
    return test_report("test_cuda_backend");
}
