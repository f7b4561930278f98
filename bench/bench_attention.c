/* bench_attention.c — forward + backward time and extra memory of each attention kind against
 * sequence length, on the CPU backend (a benchmark, not a test).
 *
 *   bench_attention [--threads N] [--max-len 4096] [--heads 8] [--head-size 64] [--causal]
 *
 * Self-attention of one sequence: q, k, v [1, NH, T, HS], all T keys visible (causal with
 * --causal; efficient attention has no causal form and is left out then), T = 16, 32, …, max-len.
 * Kinds: sdp (the materialised attn_forward/attn_backward, weights [NH, T, T]), flash
 * (flash_attn_*), linear (linear_attn_*), efficient (efficient_attn_*).
 * Time: the median of several forward + backward passes after a warm-up (fewer repetitions at long
 * lengths). Memory: each (kind, T) runs in a forked child; "extra MiB" is the child's peak
 * resident set (getrusage ru_maxrss) after the passes minus its peak after allocating and touching
 * the inputs, outputs and gradients — what the kind needs beyond its arguments (weights for sdp,
 * lse for flash, running states for linear). Page granularity: 4 KiB.
 * The last line names the shortest length at which linear attention's forward + backward is
 * faster than flash's.
 */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/common.h"
#include "core/rng.h"
#include "ops/ops.h"
#include "train/train.h"

enum { K_SDP, K_FLASH, K_LINEAR, K_EFFICIENT, NKINDS };
static const char *const kind_names[NKINDS] = {"sdp", "flash", "linear", "efficient"};

typedef struct {
    double ms, extra_mib;
} Result;

static double peak_mib(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss / 1024.0;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One (kind, T) measurement; runs in the child. */
static Result measure(int kind, int T, int NH, int HS, int causal) {
    const Backend *be = backend_cpu();
    size_t n = (size_t)NH * T * HS;
    float *q = xmalloc(sizeof(float) * n), *k = xmalloc(sizeof(float) * n);
    float *v = xmalloc(sizeof(float) * n), *o = xmalloc(sizeof(float) * n);
    float *g = xmalloc(sizeof(float) * n), *dq = xcalloc(n, sizeof(float));
    float *dk = xcalloc(n, sizeof(float)), *dv = xcalloc(n, sizeof(float));
    Rng rng;
    rng_seed(&rng, 1, (uint64_t)T);
    for (size_t i = 0; i < n; i++) {
        q[i] = rng_uniform(&rng) - 0.5f, k[i] = rng_uniform(&rng) - 0.5f;
        v[i] = rng_uniform(&rng) - 0.5f, g[i] = rng_uniform(&rng) - 0.5f, o[i] = 0;
    }
    int len = T;
    float scale = 1.0f / sqrtf((float)HS);
    double base = peak_mib();
    float *w = NULL, *lse = NULL;
    int reps = T <= 256 ? 9 : T <= 1024 ? 5 : 3;
    double t[9];
    for (int r = -1; r < reps; r++) { /* r = -1: warm-up */
        double t0 = now_seconds();
        size_t nw = kind == K_SDP     ? be->attn_workspace(1, NH, T, T, HS, HS)
                    : kind == K_FLASH ? be->flash_attn_workspace(1, NH, T, T, HS, HS)
                    : kind == K_LINEAR ? be->linear_attn_workspace(1, NH, T, T, HS, HS)
                                       : be->efficient_attn_workspace(1, NH, T, T, HS, HS);
        float *work = xmalloc(sizeof(float) * (nw + 1)); /* counted in the peak, as before */
        switch (kind) {
        case K_SDP: /* the weights live as long as the backward needs them */
            w = xmalloc(sizeof(float) * (size_t)NH * T * T);
            be->attn_forward(o, w, q, k, v, &len, scale, causal, 1, NH, T, T, HS, HS);
            be->attn_backward(dq, dk, dv, g, q, k, v, w, scale, 1, NH, T, T, HS, HS, work);
            free(w);
            break;
        case K_FLASH: {
            int lens[1] = {T};
            lse = xmalloc(sizeof(float) * (size_t)NH * T);
            be->flash_attn_forward(o, lse, q, k, v, lens, scale, causal, 1, NH, T, T, HS, HS,
                                   work);
            be->flash_attn_backward(dq, dk, dv, g, q, k, v, o, lse, lens, scale, causal, 1, NH, T,
                                    T, HS, HS, work);
            free(lse);
            break;
        }
        case K_LINEAR:
            be->linear_attn_forward(o, q, k, v, &len, causal, LINEAR_PHI_ELU1, 1, NH, T, T, HS,
                                    HS, work);
            be->linear_attn_backward(dq, dk, dv, g, q, k, v, &len, causal, LINEAR_PHI_ELU1, 1, NH,
                                     T, T, HS, HS, work);
            break;
        case K_EFFICIENT:
            be->efficient_attn_forward(o, q, k, v, &len, 1, NH, T, T, HS, HS, work);
            be->efficient_attn_backward(dq, dk, dv, g, q, k, v, &len, 1, NH, T, T, HS, HS, work);
            break;
        }
        free(work);
        if (r >= 0) t[r] = now_seconds() - t0;
    }
    qsort(t, reps, sizeof(double), cmp_double);
    Result res = {1e3 * t[reps / 2], peak_mib() - base};
    free(q), free(k), free(v), free(o), free(g), free(dq), free(dk), free(dv);
    return res;
}

/* Runs measure() in a child so that each figure's peak memory is its own. */
static int run_child(int kind, int T, int NH, int HS, int causal, Result *out) {
    int fd[2];
    if (pipe(fd)) return -1;
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        close(fd[0]);
        Result r = measure(kind, T, NH, HS, causal);
        ssize_t wr = write(fd[1], &r, sizeof r);
        _exit(wr == (ssize_t)sizeof r ? 0 : 1);
    }
    close(fd[1]);
    ssize_t got = read(fd[0], out, sizeof *out);
    close(fd[0]);
    int st;
    waitpid(pid, &st, 0);
    return got == (ssize_t)sizeof *out && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

int main(int argc, char **argv) {
    backend_cpu_prefer_fast_blas(argv);
    int threads = 0, max_len = 4096, NH = 8, HS = 64, causal = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--max-len") && i + 1 < argc) max_len = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--heads") && i + 1 < argc) NH = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--head-size") && i + 1 < argc) HS = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--causal")) causal = 1;
        else {
            fprintf(stderr, "usage: bench_attention [--threads N] [--max-len L] [--heads NH] "
                    "[--head-size HS] [--causal]\n");
            return 2;
        }
    }
    set_threads(threads);
    printf("attention forward + backward, one sequence, %d heads of %d, %s, %d threads\n", NH, HS,
           causal ? "causal" : "not causal", omp_get_max_threads());
    printf("%6s", "T");
    for (int k = 0; k < NKINDS; k++) printf(" | %9s ms %9s MiB", kind_names[k], "extra");
    printf("\n");
    int crossover = 0;
    for (int T = 16; T <= max_len; T *= 2) {
        Result r[NKINDS];
        printf("%6d", T);
        for (int k = 0; k < NKINDS; k++) {
            if (k == K_EFFICIENT && causal) {
                printf(" | %12s %13s", "—", "—");
                continue;
            }
            if (run_child(k, T, NH, HS, causal, &r[k])) {
                printf(" | %12s %13s", "failed", "");
                r[k].ms = -1;
                continue;
            }
            printf(" | %12.3f %13.2f", r[k].ms, r[k].extra_mib);
        }
        printf("\n");
        fflush(stdout);
        if (!crossover && r[K_LINEAR].ms > 0 && r[K_FLASH].ms > 0 && r[K_LINEAR].ms < r[K_FLASH].ms)
            crossover = T;
    }
    if (crossover) printf("linear attention is faster than flash from T = %d on\n", crossover);
    else printf("linear attention was not faster than flash at any length up to %d\n", max_len);
    return 0;
}
