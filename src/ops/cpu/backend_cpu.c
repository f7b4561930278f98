/* backend_cpu.c — the CPU backend (OpenBLAS + OpenMP), the reference (docs/design.md §2): its memory
 * functions, the table, which each op family fills through its cpu_register_<family> (one file
 * per family of ops.h's OP_FAMILIES, declared in cpu_internal.h; src/ops/cuda/ mirrors the same
 * files), and the choice of OpenBLAS kernels. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "core/common.h"
#include "core/sanitizers.h"
#include "ops/cpu/cpu_internal.h"

/* Under AddressSanitizer a buffer is exactly the bytes asked, so that a read or write one
 * element past it is reported; otherwise whole 64-byte lines. */

static void *cpu_alloc(size_t bytes) {
    void *p = NULL;
    size_t n = TRAINER_ASAN ? bytes : (bytes + 63) / 64 * 64;
    CHECK(posix_memalign(&p, 64, n ? n : 64) == 0, "out of host memory");
    memset(p, 0, n);
    return p;
}
static void cpu_free(void *p) { free(p); }
static void cpu_copy(void *dst, const void *src, size_t bytes) {
    if (bytes) memmove(dst, src, bytes);
}
/* memset; a large block (the gradients each step, 30 MB for configs/transformer.ini) in
 * 1 MiB pieces across the OpenMP threads */
static void cpu_zero(void *p, size_t bytes) {
    enum { PIECE = 1 << 20 };
    if (bytes < 4 * (size_t)PIECE) {
        if (bytes) memset(p, 0, bytes);
        return;
    }
    long n = (long)((bytes + PIECE - 1) / PIECE);
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++) {
        size_t off = (size_t)i * PIECE;
        memset((char *)p + off, 0, bytes - off < PIECE ? bytes - off : PIECE);
    }
}
static void cpu_sync(void) {}

static Backend g_cpu;
static pthread_once_t g_cpu_once = PTHREAD_ONCE_INIT;

/* Fills g_cpu: the memory functions, then every family's ops; aborts naming an op no family set
 * (the reference has every op: a family's register function that misses a field). */
static void build_table(void) {
    Backend b = {
        .name = "cpu",
        .host_memory = 1,
        .alloc = cpu_alloc,
        .free = cpu_free,
        .upload = cpu_copy,
        .download = cpu_copy,
        .copy = cpu_copy,
        .zero = cpu_zero,
        .synchronize = cpu_sync,
    };
#define CPU_REGISTER(f) cpu_register_##f(&b);
    OP_FAMILIES(CPU_REGISTER)
#undef CPU_REGISTER
    for (int op = 0; op < OP_COUNT; op++)
        if (!supports_op(&b, (OpKind)op)) {
            fprintf(stderr, "cpu backend: no %s: the cpu_register_<family> of its family "
                            "(ops/cpu/<family>.c) does not set it\n", op_name((OpKind)op));
            abort();
        }
    g_cpu = b;
}

const Backend *backend_cpu(void) {
    pthread_once(&g_cpu_once, build_table);
    return &g_cpu;
}

const char *backend_cpu_blas_warning(void) {
    static const char *const avx512_cores[] = {"skylakex", "cooperlake", "sapphirerapids"};
    const char *core = getenv("OPENBLAS_CORETYPE");
    if (!core) return NULL;
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx512f")) return NULL;
    for (size_t i = 0; i < sizeof avx512_cores / sizeof *avx512_cores; i++)
        if (!strcasecmp(core, avx512_cores[i])) return NULL;
    static char msg[192];
    snprintf(msg, sizeof msg, "OPENBLAS_CORETYPE=%.32s from the environment keeps OpenBLAS off "
             "its AVX-512 kernels on this CPU; unset it for faster attention products", core);
    return msg;
}

void backend_cpu_prefer_fast_blas(char **argv) {
    if (getenv("OPENBLAS_CORETYPE") || getenv("TRAINER_NO_REEXEC")) return;
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx512f")) return;
    setenv("OPENBLAS_CORETYPE", "SkylakeX", 1);
    setenv("TRAINER_NO_REEXEC", "1", 1);
    execv("/proc/self/exe", argv);
    /* exec failed: go on with the default kernels */
}
