/* op_harness.c — the harness of test_backend_ops (op_harness.h): guarded memory, workspaces, the
 * comparison with the cpu (emit), the rows' runs (run_shape, run_row) and the cpu's own checks
 * (cpu_checks), the memory and table-wide checks, and the driver (op_harness_main: options, the
 * case table, the thread schedules of the emulated build). */
#include "op_harness.h"

#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "ops/cpu/cpu.h"
#include "ops/cuda/cuda.h"
#include "testutil.h"
#ifdef TRAINER_SIMT
#include "ops/cuda/simt/simt_c.h" /* the emulated build: thread schedules */
#endif

/* The case table and the row tables of the program (op_harness_main). */
static const OpCase *CASES;
static const RowTable *TABLES;
static int NTABLES;

/* --ops: the OpKinds whose cases run (all when no --ops was given) */
static int op_selected[OP_COUNT];
static int ops_filtered;

/* ========================================================================================== */
/* another backend against the CPU                                                            */

const Backend *cpu, *gpu; /* reference and backend under test (--backend) */

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

float *frand_pm1(size_t n) { return frand(n, -1, 1); }

float *to_backend(const Backend *be, const float *host, size_t n) {
    float *p = be->alloc(n * sizeof(float));
    be->upload(p, host, n * sizeof(float));
    return p;
}

static void record_output(const char *what, const float *g, size_t n);

/* The schedule pass of run_vs_cpu (0: the first, and the only one outside the emulated build), and
 * whether the downloads from the backend under test are left out of the schedule check (a row's
 * shapes past the element-wise grid, EW_GRID, run in the first pass only). */
static int g_pass, g_quiet;
/* 1 once the row being run has run a shape past SANITIZE_ONCE (op_harness.h) */
static int g_big_ran;

/* a row's shape past EW_GRID (op_harness.h) is left out under TSan */
#ifdef __SANITIZE_THREAD__
#define TSAN_BUILD 1
#else
#define TSAN_BUILD 0
#endif
/* Downloads n floats from be's memory into a fresh host buffer; every download from the backend
 * under test is recorded (hashed) for the schedule check of run_vs_cpu, unless g_quiet. */
float *from_backend(const Backend *be, const float *p, size_t n) {
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

void relabel_last_output(const char *what) {
    if (n_seen > 0) snprintf(out_seen[n_seen - 1].what, sizeof out_seen[0].what, "%s", what);
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

int both_have(const char *op, const void *cpu_fn, const void *gpu_fn) {
    EXPECT(cpu_fn != NULL, "cpu backend lacks %s (the reference must have every op)", op);
    return cpu_fn && gpu_fn;
}


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
/* the rows' runs                                                                              */

static int dim(const Row *r, const int *d, char c) {
    const char *p = strchr(r->dims, c);
    return p ? d[p - r->dims] : 1;
}
static size_t esz(const Buf *b) { return b->role == RET ? sizeof(double) : 4; } /* bytes */
size_t buf_len(const Row *r, const int *d, int i) {
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
void emit(const char *what, const void *p, size_t n, double tol, double floor) {
    emit_as(OUT, what, p, n, tol, floor);
}
void emit_mid(const Row *r, const int *d, void **p, int i, const char *when) {
    char what[300];
    snprintf(what, sizeof what, "%s: %s (%s)", g_nm, r->b[i].name, when);
    emit(what, p[i], buf_len(r, d, i), 1e-5, 0);
}
int fd_never(const int *d) { return (void)d, 0; }
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
    if (gpu && (test_sanitized() || TSAN_BUILD) && big > SANITIZE_ONCE) {
        if (g_big_ran) return;
        g_big_ran = 1;
    }
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
    g_big_ran = 0;
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
/* the driver                                                                                 */

/* The row of that name and its index across the tables (*index), or NULL. */
static const Row *row_find(const char *name, int *index) {
    for (int t = 0, base = 0; name && t < NTABLES; base += TABLES[t++].n)
        for (int i = 0; i < TABLES[t].n; i++)
            if (strcmp(TABLES[t].rows[i].name, name) == 0) {
                if (index) *index = base + i;
                return &TABLES[t].rows[i];
            }
    return NULL;
}
const Row *row_named(const char *name) { return row_find(name, NULL); }

/* 1 if what (a row name or a function) already ran for an earlier selected OpKind. */
static int ran_before(int op, const void *what, int kind) {
    for (int j = 0; j < op; j++) {
        const void *w = kind == 0 ? (const void *)CASES[j].row : kind == 1 ? (const void *)CASES[j].cpu
                                                                            : (const void *)CASES[j].vs_cpu;
        if (op_selected[j] && w && (kind == 0 ? strcmp(w, what) == 0 : w == what)) return 1;
    }
    return 0;
}

/* Every OpKind has a case, named as op_name says, its row (if any) in the tables naming it. */
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
    double t0 = omp_get_wtime();
    int ri = 0;
    const Row *r = row_find(CASES[op].row, &ri);
    if (r && !ran_before(op, CASES[op].row, 0)) run_row(r, ri);
    void (*fn)(void) = cross ? CASES[op].vs_cpu : CASES[op].cpu;
    /* each function's inputs are its own: the same whether or not --ops left others out */
    rng_seed(&optest_rng, cross ? 20240601u : 20240611u, 100 + (uint64_t)op);
    g_quiet = 0;
    if (fn && !ran_before(op, (const void *)fn, 1 + cross)) fn();
    if (getenv("TEST_OP_TIMES")) /* each case's wall time, to see where a run's time goes */
        printf("  %-28s %8.2f s\n", op_name((OpKind)op), omp_get_wtime() - t0);
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

int op_harness_main(int argc, char **argv, const OpCase *cases, const RowTable *tables, int ntables) {
    CASES = cases, TABLES = tables, NTABLES = ntables;
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
