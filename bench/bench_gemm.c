/* bench_gemm.c — single-precision GEMM of several BLAS libraries on the shapes the models run
 * (the choice of the CPU's BLAS), each library loaded with dlopen so that one binary compares them
 * all and none is a build dependency:
 *   openblas-openmp  Debian's OpenBLAS 0.3.21, OpenMP build (what the trainer links)
 *   openblas-pthread the same, pthread build
 *   blis-openmp      BLIS 0.9 (libblis4-openmp; its cblas_sgemm)
 *   onednn           oneDNN 2.6 (libdnnl2; dnnl_sgemm, row-major)
 *   mkl              Intel oneMKL (PyPI's mkl: libmkl_rt.so.3, or the file BENCH_GEMM_MKL names;
 *                    its cblas_sgemm on the GNU OpenMP threading layer, MKL_THREADING_LAYER=GNU),
 *                    the BLAS of PyPI's PyTorch on x86
 * A library that is not installed is skipped with a note (apt-get install libblis4-openmp
 * libdnnl-dev; pip install mkl, with LD_LIBRARY_PATH holding its lib folder; bench/README.md).
 *
 *   bench_gemm [--threads T] [--reps R] [--min-seconds S] [--shape MxNxK[:TA:TB]]... [--model NAME]
 *
 * Shapes: C[M,N] = op(A)[M,K] op(B)[K,N], row-major, op = transpose when TA / TB is 1 (as the
 * trainer's matmul). Default: --model transformer and luong, the largest products of one training
 * step of configs/transformer.ini and configs/luong.ini at their batch size (from
 * `bench_train --profile`): see model_shapes below. For each shape the libraries take turns, R
 * rounds (default 5): each library runs the product repeatedly for at least S seconds (default
 * 0.1) after one untimed call; the report gives, per shape and library, the median GFLOP/s of
 * the rounds and its min–max, and the geometric mean of each library's ratio to openblas-openmp.
 * Threads: OMP_NUM_THREADS (every library here uses OpenMP's, or pthreads sized by
 * openblas_set_num_threads) = T, default 2; after each openblas-pthread run the program sleeps
 * 0.2 s, so that its spinning workers do not slow the next library.
 * Errors: bad arguments (exit 2); a library whose symbol is missing is skipped. Sources: the
 * CBLAS interface (cblas_sgemm, BLAS Technical Forum 2001) and oneDNN's dnnl_sgemm. */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { RowMajor = 101, NoTrans = 111, Trans = 112 }; /* the CBLAS enum values */
typedef void (*cblas_sgemm_fn)(int, int, int, int, int, int, float, const float *, int,
                               const float *, int, float, float *, int);
typedef int (*dnnl_sgemm_fn)(char, char, long, long, long, float, const float *, long,
                             const float *, long, float, float *, long);

typedef struct {
    const char *name, *path;
    void *handle;
    cblas_sgemm_fn cblas;
    dnnl_sgemm_fn dnnl;
} Lib;

static Lib g_libs[] = {
    {"openblas-openmp", "/usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblas.so.0", 0, 0, 0},
    {"openblas-pthread", "/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so.0", 0, 0, 0},
    {"blis-openmp", "/usr/lib/x86_64-linux-gnu/blis-openmp/libblis.so.4", 0, 0, 0},
    {"onednn", "libdnnl.so.2", 0, 0, 0},
    {"mkl", "libmkl_rt.so.3", 0, 0, 0},
};
#define NLIBS ((int)(sizeof g_libs / sizeof g_libs[0]))

typedef struct {
    int M, N, K, ta, tb;
    const char *what;
} Shape;

/* configs/transformer.ini (batch_tokens 4096: about 2200 target rows per batch, D 256, d_ff
 * 1024, V 8000) and configs/luong.ini (B ≈ 180 sentences, E 256, H 512, V 8000; the decoder runs
 * per step on B rows, its input projection and output layer on all B·T rows). */
static const Shape model_shapes[] = {
    {2200, 256, 256, 0, 1, "transformer: attention projection, forward"},
    {2200, 256, 256, 0, 0, "transformer: attention projection, input gradient"},
    {256, 256, 2200, 1, 0, "transformer: attention projection, weight gradient"},
    {2200, 1024, 256, 0, 1, "transformer: FFN W1, forward"},
    {2200, 256, 1024, 0, 1, "transformer: FFN W2, forward"},
    {1024, 256, 2200, 1, 0, "transformer: FFN W1, weight gradient"},
    {2200, 8000, 256, 0, 1, "transformer: output layer, forward"},
    {2200, 256, 8000, 0, 0, "transformer: output layer, input gradient"},
    {8000, 256, 2200, 1, 0, "transformer: output layer, weight gradient"},
    {180, 2048, 512, 0, 1, "luong: decoder LSTM recurrent product, one step"},
    {180, 512, 2048, 0, 0, "luong: decoder LSTM recurrent input gradient, one step"},
    {4000, 2048, 768, 0, 1, "luong: decoder input projection, all steps"},
    {4000, 8000, 512, 0, 1, "luong: output layer, forward"},
    {8000, 512, 4000, 1, 0, "luong: output layer, weight gradient"},
};

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static void run(const Lib *l, const Shape *s, const float *A, const float *B, float *C) {
    int lda = s->ta ? s->M : s->K, ldb = s->tb ? s->K : s->N;
    if (l->cblas)
        l->cblas(RowMajor, s->ta ? Trans : NoTrans, s->tb ? Trans : NoTrans, s->M, s->N, s->K,
                 1.0f, A, lda, B, ldb, 0.0f, C, s->N);
    else
        l->dnnl(s->ta ? 'T' : 'N', s->tb ? 'T' : 'N', s->M, s->N, s->K, 1.0f, A, lda, B, ldb, 0.0f,
                C, s->N);
}

/* GFLOP/s of one library on one shape: repeated for at least min_s seconds. */
static double rate(const Lib *l, const Shape *s, const float *A, const float *B, float *C,
                   double min_s) {
    run(l, s, A, B, C);
    long reps = 0;
    double t0 = now(), dt;
    do {
        run(l, s, A, B, C);
        reps++;
    } while ((dt = now() - t0) < min_s);
    return 2.0 * s->M * s->N * s->K * reps / dt * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int usage(void) {
    fprintf(stderr, "usage: bench_gemm [--threads T] [--reps R] [--min-seconds S] "
                    "[--shape MxNxK[:TA:TB]]...\n");
    return 2;
}

int main(int argc, char **argv) {
    int threads = 2, reps = 5, nshapes = 0;
    double min_s = 0.1;
    Shape shapes[64];
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--min-seconds") && i + 1 < argc) min_s = atof(argv[++i]);
        else if (!strcmp(argv[i], "--shape") && i + 1 < argc && nshapes < 64) {
            Shape s = {0, 0, 0, 0, 0, "--shape"};
            if (sscanf(argv[++i], "%dx%dx%d:%d:%d", &s.M, &s.N, &s.K, &s.ta, &s.tb) < 3 ||
                s.M < 1 || s.N < 1 || s.K < 1)
                return usage();
            shapes[nshapes++] = s;
        } else return usage();
    }
    if (threads < 1 || reps < 1 || min_s <= 0) return usage();
    if (!nshapes) {
        nshapes = (int)(sizeof model_shapes / sizeof model_shapes[0]);
        memcpy(shapes, model_shapes, sizeof model_shapes);
    }
    char tbuf[16];
    snprintf(tbuf, sizeof tbuf, "%d", threads);
    setenv("OMP_NUM_THREADS", tbuf, 1), setenv("OPENBLAS_NUM_THREADS", tbuf, 1);
    setenv("BLIS_NUM_THREADS", tbuf, 1), setenv("MKL_NUM_THREADS", tbuf, 1);
    setenv("MKL_THREADING_LAYER", "GNU", 1);
    if (getenv("BENCH_GEMM_MKL")) g_libs[NLIBS - 1].path = getenv("BENCH_GEMM_MKL");

    int nl = 0;
    for (int i = 0; i < NLIBS; i++) {
        Lib *l = &g_libs[i];
        l->handle = dlopen(l->path, RTLD_NOW | RTLD_LOCAL);
        if (!l->handle) {
            printf("bench_gemm: %s not found (%s): skipped\n", l->name, l->path);
            continue;
        }
        l->cblas = (cblas_sgemm_fn)dlsym(l->handle, "cblas_sgemm");
        if (!strcmp(l->name, "onednn"))
            l->cblas = NULL, l->dnnl = (dnnl_sgemm_fn)dlsym(l->handle, "dnnl_sgemm");
        if (!l->cblas && !l->dnnl) {
            printf("bench_gemm: %s has no sgemm symbol: skipped\n", l->name);
            l->handle = NULL;
            continue;
        }
        void (*set)(int) = (void (*)(int))dlsym(l->handle, "openblas_set_num_threads");
        if (set) set(threads);
        set = (void (*)(int))dlsym(l->handle, "bli_thread_set_num_threads");
        if (set) set(threads);
        nl++;
    }
    if (!nl) {
        fprintf(stderr, "bench_gemm: no BLAS library found\n");
        return 1;
    }

    size_t maxa = 0, maxb = 0, maxc = 0;
    for (int s = 0; s < nshapes; s++) {
        size_t a = (size_t)shapes[s].M * shapes[s].K, b = (size_t)shapes[s].K * shapes[s].N,
               c = (size_t)shapes[s].M * shapes[s].N;
        maxa = a > maxa ? a : maxa, maxb = b > maxb ? b : maxb, maxc = c > maxc ? c : maxc;
    }
    float *A = malloc(sizeof(float) * maxa), *B = malloc(sizeof(float) * maxb),
          *C = malloc(sizeof(float) * maxc);
    if (!A || !B || !C) {
        fprintf(stderr, "bench_gemm: out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < maxa; i++) A[i] = (float)((i * 7919u) % 17) / 17.0f - 0.5f;
    for (size_t i = 0; i < maxb; i++) B[i] = (float)((i * 104729u) % 13) / 13.0f - 0.5f;

    printf("bench_gemm: %d threads, %d rounds of ≥ %.2f s per library and shape, interleaved\n\n",
           threads, reps, min_s);
    printf("| shape M×N×K (TA, TB) | what |");
    for (int i = 0; i < NLIBS; i++)
        if (g_libs[i].handle) printf(" %s GFLOP/s |", g_libs[i].name);
    printf("\n|---|---|");
    for (int i = 0; i < NLIBS; i++)
        if (g_libs[i].handle) printf("---:|");
    printf("\n");
    double logratio[NLIBS] = {0};
    double *r = malloc(sizeof(double) * NLIBS * reps);
    for (int s = 0; s < nshapes; s++) {
        for (int k = 0; k < reps; k++)
            for (int i = 0; i < NLIBS; i++)
                if (g_libs[i].handle) {
                    r[i * reps + k] = rate(&g_libs[i], &shapes[s], A, B, C, min_s);
                    /* OpenBLAS's pthread workers spin for a while after a call: let them sleep
                     * before the next library runs on the same cores */
                    if (strstr(g_libs[i].name, "pthread")) usleep(200000);
                }
        printf("| %d×%d×%d (%c, %c) | %s |", shapes[s].M, shapes[s].N, shapes[s].K,
               shapes[s].ta ? 'T' : 'N', shapes[s].tb ? 'T' : 'N', shapes[s].what);
        double base = 0;
        for (int i = 0; i < NLIBS; i++) {
            if (!g_libs[i].handle) continue;
            qsort(r + i * reps, reps, sizeof(double), cmp_double);
            double med = reps % 2 ? r[i * reps + reps / 2]
                                  : 0.5 * (r[i * reps + reps / 2 - 1] + r[i * reps + reps / 2]);
            if (!base) base = med;
            logratio[i] += log(med / base);
            printf(" %.1f (%.1f–%.1f) |", med, r[i * reps], r[i * reps + reps - 1]);
        }
        printf("\n");
    }
    printf("\ngeometric mean of the ratio to %s:", g_libs[0].handle ? g_libs[0].name : "the first");
    for (int i = 0; i < NLIBS; i++)
        if (g_libs[i].handle) printf(" %s %.3f;", g_libs[i].name, exp(logratio[i] / nshapes));
    printf("\n");
    free(r), free(A), free(B), free(C);
    return 0;
}
