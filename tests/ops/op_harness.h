/* op_harness.h — the harness of test_backend_ops (tests/ops/test_backend_ops.c; docs/design.md
 * §3, §11): op cases as rows, and the program's driver.
 *
 * An op family is a Row: its dims and shapes, its buffers with their roles, value ranges and
 * tolerances, and the calls fwd and bwd that run it on a given Backend with given buffers.
 * run_shape draws the buffers from a stream of the row's shape (seeded by the row's index in the
 * tables and the shape's), runs the calls on every backend of the mode (the CPU; and the backend
 * under test), and
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
 *
 * The backend under test runs with guarded memory (its alloc puts guards around every buffer and
 * its free checks them) and workspaces of exactly the size their function declares (at an odd
 * float offset, NaN-filled, guarded). In the emulated build the whole suite runs under five
 * thread/block schedules and every output downloaded from the backend under test must hash as
 * under the first. Failures are EXPECTs (tests/testutil.h), counted as checks; allocation
 * failures exit 2. */
#ifndef TRAINER_TESTS_OP_HARNESS_H
#define TRAINER_TESTS_OP_HARNESS_H

#include <stddef.h>

#include "ops/ops.h"
#include "optest.h"

/* The reference backend (backend_cpu()) and the backend under test (--backend; NULL in the cpu
 * mode), set by op_harness_main. */
extern const Backend *cpu, *gpu;

/* Element-wise kernels launch at most CUDA_EW_MAX_BLOCKS × CUDA_EW_THREADS = 4096 × 256 threads
 * (src/ops/cuda/cuda_internal.h); their grid-stride loops take a second turn only past EW_GRID
 * elements, so each such family has one case past it, where a wrong stride or bound of that loop
 * shows. No thread of those kernels reads what another wrote, so the thread order cannot change
 * their result: a row's shape past it runs in the first schedule pass only, unrecorded for the
 * schedule check, and not under the sanitizers (ASan, TSan: each of a million emulated threads
 * costs there). */
#define EW_GRID ((size_t)4096 * 256)

/* Under the sanitizers (ASan, TSan) a row runs one shape whose largest buffer holds more than
 * SANITIZE_ONCE elements, its first such shape in its first variant (the first value of each of
 * its enumerated dims): the big shapes share the kernel's launch, blocks, barriers and loop
 * turns, where the memory errors and races those builds look for live, while each emulated
 * thread costs there. The plain emulated build and the CPU run every shape. */
#define SANITIZE_ONCE ((size_t)1 << 16)

/* n floats uniform in [-1, 1) from optest_rng (frand). */
float *frand_pm1(size_t n);
/* A buffer of be's memory holding a copy of host[n] floats. */
float *to_backend(const Backend *be, const float *host, size_t n);
/* Downloads n floats from be's memory into a fresh host buffer (the caller frees it); every
 * download from the backend under test is recorded (hashed) for the schedule check. */
float *from_backend(const Backend *be, const float *p, size_t n);
/* Names the last recorded download what (the schedule check's message). */
void relabel_last_output(const char *what);
/* 1 if both backends have the entry op (a cpu without it fails; a missing cuda entry is
 * reported by the driver). */
int both_have(const char *op, const void *cpu_fn, const void *gpu_fn);
#define HAVE(op) both_have(#op, (const void *)cpu->op, (const void *)gpu->op)

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

/* The length of row r's buffer i at dims d (the product of the dims its size names). */
size_t buf_len(const Row *r, const int *d, int i);
/* Downloads n floats of be's memory (the backend of the current run) and compares them: the
 * cpu's are kept, another backend's compared with the cpu's, the one emitted at the same place
 * in the row's calls (tol normwise against max(max|cpu|, floor); 0: bit for bit; < 0:
 * element-wise |g − c| <= |tol| max(1 + |c|, floor)) and recorded for the schedule check. */
void emit(const char *what, const void *p, size_t n, double tol, double floor);
/* Emits (compares) an intermediate value of row r's buffer i, within 1e-5, before the row's
 * later calls change it; named by the current shape and when. */
void emit_mid(const Row *r, const int *d, void **p, int i, const char *when);
/* The row of that name in the program's tables, or NULL. */
const Row *row_named(const char *name);
/* A Row's fd that turns finite differences off: 0. */
int fd_never(const int *d);

/* A row's buffers in its calls (p: the backend's) and hooks (h: the host copies). */
#define F(i) ((float *)p[i])
#define I(i) ((int *)p[i])
#define HF(i) ((float *)h[i])
#define HI(i) ((int *)h[i])

/* The rows of one file: n of them. */
typedef struct {
    const Row *rows;
    int n;
} RowTable;

/* The attention ops' rows (rows_attention.c). */
extern const RowTable ROWS_ATTENTION;

/* One entry per OpKind: its row of the harness, and the special checks the rows do not express
 * (the cpu's, and those of another backend against the cpu; NULL: none). A row or function that
 * serves several OpKinds runs once. Each function's inputs are its own (optest_rng is seeded
 * before it), the same whether or not --ops left others out. */
typedef struct {
    const char *name;
    const char *row; /* the name of its row, or NULL */
    void (*cpu)(void);
    void (*vs_cpu)(void);
} OpCase;

/* The program: argv as test_backend_ops's usage (see test_backend_ops.c); cases[OP_COUNT], and
 * the row tables (ntables) whose rows they name, indexed in order across the tables (a row's
 * index seeds its inputs). Returns the exit code: 0 passed, 1 failed, 2 a usage error, 77
 * skipped (no CUDA backend outside the emulated build). */
int op_harness_main(int argc, char **argv, const OpCase *cases, const RowTable *tables, int ntables);

#endif
