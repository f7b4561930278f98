/* test_no_alloc.c — no allocation in the training step after the first batch (docs/design.md §6).
 *
 * Trains tiny models for 20 steps on length-bucketed batches of random pairs (B, S and T change
 * from step to step) with the trainer's step (train_step) — batch_fill into buffers sized once by
 * batch_bounds, zero gradients, model_loss (one upload, forward, backward), global norm, clip,
 * Adam, the EMA of the weights (train.ema_decay) — and counts every allocation in steps 2–20:
 * malloc, calloc, realloc, posix_memalign, aligned_alloc and memalign of the whole process
 * (this executable defines them and forwards to glibc's __libc_* functions), and the backend's
 * alloc. Any allocation of ours fails the test (those made inside libgomp, OpenBLAS and oneDNN
 * are reported apart, see below); each is printed with its call stack (those inside attention
 * ops, the first few), so a failure names the code that still allocates.
 * Models: RNN luong_general with input feeding (LSTM, 2 + 2 layers), bahdanau (LSTM), GRU with
 * luong_general batched over T; Transformer with sdp, flash and linear attention in every slot.
 * Under the sanitizer build (TRAINER_SANITIZE=1) ASan owns malloc: the test says so and exits 77.
 */
#include <dlfcn.h>
#include <execinfo.h>
#include <link.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/sanitizers.h"
#include "core/tokens.h"
#include "data/batch.h"
#include "model/model.h"
#include "ops/cpu/cpu.h"
#include "testutil.h"
#include "train/config.h"
#include "train/step.h"

/* ---- counting allocator ----
 * Three libraries allocate inside calls of ours, and that is their bookkeeping, not ours: the
 * OpenMP runtime (libgomp) allocates a team for a parallel region that runs on one thread (an
 * "if" clause false) and frees it at the region's end, OpenBLAS's small-matrix sgemm kernels
 * allocate a buffer per call on some CPUs, and oneDNN's dnnl_sgemm (the fp32 products on AVX-512
 * CPUs, src/ops/cpu/matmul.c) allocates its packing buffers per call, some through libstdc++'s
 * operator new or from its libgomp workers. An allocation called from inside libgomp or
 * OpenBLAS, or with libdnnl anywhere on its call stack (oneDNN never calls back into our code),
 * is counted apart and reported, not failed; every other one fails the test. */
enum { NKEEP = 4096, DEPTH = 14, NSHOW = 4, NLIBS = 3, DNNL = 2 };
static volatile int counting;
static long n_allocs, n_lib;                 /* ours; those of the libraries */
static void *stacks[NKEEP][DEPTH];           /* the call stacks of the first NKEEP of ours */
static int depths[NKEEP];
static __thread int inside;                  /* backtrace may allocate: no recursion */
static uintptr_t lib_lo[NLIBS], lib_hi[NLIBS]; /* loaded segments of each (0: not loaded) */
static const char *const libs[NLIBS] = {"libgomp", "libopenblas", "libdnnl"};

static int in_lib(const void *pc, int l) {
    return (uintptr_t)pc >= lib_lo[l] && (uintptr_t)pc < lib_hi[l];
}

static void note(void *caller) {
    if (!counting || inside) return;
    for (int l = 0; l < NLIBS; l++)
        if (in_lib(caller, l)) {
            __atomic_fetch_add(&n_lib, 1, __ATOMIC_RELAXED);
            return;
        }
    inside = 1;
    void *st[DEPTH];
    int d = backtrace(st, DEPTH);
    for (int i = 0; i < d && lib_hi[DNNL]; i++)
        if (in_lib(st[i], DNNL)) {
            __atomic_fetch_add(&n_lib, 1, __ATOMIC_RELAXED);
            inside = 0;
            return;
        }
    long i = __atomic_fetch_add(&n_allocs, 1, __ATOMIC_RELAXED);
    if (i < NKEEP) {
        memcpy(stacks[i], st, sizeof(void *) * (size_t)d);
        depths[i] = d;
    }
    inside = 0;
}

static int find_libs(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size, (void)data;
    for (int l = 0; l < NLIBS; l++) {
        if (!strstr(info->dlpi_name, libs[l])) continue;
        for (int i = 0; i < info->dlpi_phnum; i++) {
            const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
            if (ph->p_type != PT_LOAD) continue;
            uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
            if (!lib_lo[l] || lo < lib_lo[l]) lib_lo[l] = lo;
            if (hi > lib_hi[l]) lib_hi[l] = hi;
        }
    }
    return 0;
}

#if !TRAINER_ASAN
extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t n);
extern void *__libc_memalign(size_t align, size_t n);

void *malloc(size_t n) {
    note(__builtin_return_address(0));
    return __libc_malloc(n);
}
void *calloc(size_t n, size_t size) {
    note(__builtin_return_address(0));
    return __libc_calloc(n, size);
}
void *realloc(void *p, size_t n) {
    note(__builtin_return_address(0));
    return __libc_realloc(p, n);
}
int posix_memalign(void **p, size_t align, size_t n) {
    note(__builtin_return_address(0));
    *p = __libc_memalign(align, n);
    return *p ? 0 : 12 /* ENOMEM */;
}
void *aligned_alloc(size_t align, size_t n) {
    note(__builtin_return_address(0));
    return __libc_memalign(align, n);
}
void *memalign(size_t align, size_t n) {
    note(__builtin_return_address(0));
    return __libc_memalign(align, n);
}
#endif

/* The CPU backend with its alloc counted too (it may not go through malloc): test_alloc_hooked
 * calls note with the caller of alloc. */
static const Backend *counted_be;

/* The name of the function holding address a ("?" if none is exported; the test is linked with
 * -rdynamic so that the core's functions are). */
static const char *fn_name(void *a) {
    Dl_info info;
    return dladdr(a, &info) && info.dli_sname ? info.dli_sname : "?";
}

/* The attention ops whose per-call scratch the attention workspace change removes. */
static int in_attention_op(int i) {
    static const char *ops[] = {"cpu_flash", "cpu_linear_attn", "cpu_attn_"};
    for (int f = 0; f < depths[i]; f++)
        for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++)
            if (!strncmp(fn_name(stacks[i][f]), ops[k], strlen(ops[k]))) return 1;
    return 0;
}

/* ---- the models ---- */
enum { V = 40, MAXLEN = 12, BUDGET = 120, NPAIRS = 300, STEPS = 20 };

typedef struct {
    const char *name;
    int tf;                 /* 0 RNN, 1 Transformer */
    AttentionKind kind;
    int gru, feed, layers;  /* RNN */
} Case;

/* The kinds' options (each kind reads its own): luong_local local-p, concat, D = 3; linformer's
 * defaults */
static const AttentionOptions attn_opt = {
    .local_window = 3, .local_mode = LOCAL_PREDICTIVE, .local_score = LOCAL_SCORE_CONCAT};

static int build(Model *m, const Case *c) {
    Err err;
    memset(m, 0, sizeof *m);
    m->be = counted_be;
    m->V = V;
    params_init_set(&m->ps, m->be);
    Status rc;
    if (c->tf) {
        ModelSpec tc = {.type = MODEL_TRANSFORMER, .d_model = 8, .heads = 2, .d_ff = 16,
                        .enc_layers = 2, .dec_layers = 2, .dropout = 0.1f, .norm = NORM_PRE,
                        .tie_embeddings = 1, .self_attention = c->kind,
                        .dec_self_attention = c->kind, .cross_attention = c->kind,
                        .attn_opt = attn_opt};
        rc = transformer_create(&m->tf, &m->ps, &tc, V, &err);
    } else {
        ModelSpec rs = {.type = MODEL_RNN, .cell = c->gru ? CELL_GRU : CELL_LSTM,
                        .attention = c->kind, .emb = 8, .hidden = 8, .enc_layers = c->layers,
                        .dec_layers = c->layers, .dropout = 0.1f, .input_feeding = c->feed,
                        .heads = 1, .attn_opt = attn_opt};
        rc = rnn_create(&m->rnn, &m->ps, &rs, V, &err);
    }
    if (rc) {
        EXPECT(0, "%s: %s", c->name, err.msg);
        return 1;
    }
    params_allocate(&m->ps);
    Rng rng;
    rng_seed(&rng, 5, 5);
    params_initialise(&m->ps, &rng, 0.1f);
    return 0;
}

/* The trainer's step (train_step, train/step.h) on batch k of the plan, after batch_fill:
 * returns the loss per target token. */
static double step(Model *m, const Config *cfg, TrainState *st, TokenBatch *tb, const Encoded *e,
                   const BatchPlan *p, long k) {
    batch_fill(tb, e, p->idx + p->start[k], (int)(p->start[k + 1] - p->start[k]));
    StepResult r = train_step(m, cfg, tb, st, NULL);
    EXPECT(r.finite, "step %ld: non-finite loss or gradient", st->step);
    return r.loss / (double)tb->tgt_tokens;
}

static void run(const Case *c, const Encoded *e, const BatchPlan *p) {
    Model m;
    if (build(&m, c)) return;
    int bB, bS, bT;
    batch_bounds(BUDGET, MAXLEN, &bB, &bS, &bT);
    TokenBatch tb;
    batch_alloc(&tb, bB, bS, bT, BUDGET, BUDGET);
    model_reserve(&m, bB, bS, bT, BUDGET, BUDGET);
    n_allocs = n_lib = 0;
    memset(depths, 0, sizeof depths);
    double first = 0, last = 0;
    int shapes = 0, pB = 0, pS = 0, pT = 0;
    Config cfg; /* the training settings of the step */
    config_defaults(&cfg);
    cfg.seed = 7, cfg.label_smoothing = 0.1f, cfg.clip_norm = 1.0f, cfg.lr = 1e-3f;
    cfg.warmup_steps = 0, cfg.adam_beta2 = 0.98f, cfg.adam_eps = 1e-9f;
    cfg.ema_decay = 0.999f; /* the EMA update is part of the step; its buffer is made here */
    params_allocate_ema(&m.ps);
    TrainState st = {.step = 0, .epoch = 1, .lr_scale = 1.0, .best_score = -1.0};
    for (int t = 1; t <= STEPS; t++) {
        counting = t >= 2;
        double l = step(&m, &cfg, &st, &tb, e, p, t - 1);
        counting = 0;
        shapes += tb.B != pB || tb.S != pS || tb.T != pT;
        pB = tb.B, pS = tb.S, pT = tb.T;
        if (t == 1) first = l;
        last = l;
    }
    long n = n_allocs, kept = n < NKEEP ? n : NKEEP, attn = 0, shown = 0;
    printf("%s: loss %.4f -> %.4f per token over %d steps (%d batch shapes); %ld allocations "
           "in steps 2-%d", c->name, first, last, STEPS, shapes, n, STEPS);
    for (int i = 0; i < kept; i++) {
        int a = in_attention_op(i);
        attn += a;
        if (a && shown++ >= NSHOW) continue; /* show every other one, a few of these */
        fprintf(stderr, "  %s allocation, from:", a ? "attention-op" : "OTHER");
        for (int f = 1; f < depths[i]; f++) fprintf(stderr, " %s", fn_name(stacks[i][f]));
        fprintf(stderr, "\n");
    }
    printf(" (of the first %ld, %ld in the per-call scratch of attention ops, %ld elsewhere); "
           "%ld inside libgomp, OpenBLAS or oneDNN (not counted)\n", kept, attn, kept - attn, n_lib);
    EXPECT(n == 0, "%s: %ld allocations in training steps 2-%d", c->name, n, STEPS);
    EXPECT(shapes > 5 && isfinite(last), "%s: %d batch shapes, last loss %g", c->name, shapes,
           last);
    batch_free(&tb);
    model_free(&m);
}

int main(void) {
    if (test_sanitized()) {
        printf("test_no_alloc: skipped in the sanitizer build: AddressSanitizer owns malloc, so "
               "this test cannot count allocations there\n");
        return 77;
    }
    omp_set_num_threads(2);
    dl_iterate_phdr(find_libs, NULL);
    EXPECT(lib_hi[0] && lib_hi[1], "libgomp or libopenblas not found among the loaded objects");
    void *prime[2];
    backtrace(prime, 2); /* loads libgcc's unwinder now, not while counting */
    counted_be = test_alloc_hooked(backend_cpu(), note);

    /* random pairs of 1..MAXLEN tokens a side, ids 4..V-1 */
    Rng rng;
    rng_seed(&rng, 11, 11);
    TestCorpus corpus;
    if (test_random_corpus(&corpus, &rng, NPAIRS, MAXLEN, V, BUDGET))
        return test_report("test_no_alloc");
    long nbatches = corpus.plan.nbatches;
    EXPECT(nbatches >= STEPS, "only %ld batches", nbatches);
    const Case cases[] = {
        {"rnn luong_general, input feeding, lstm, 2+2 layers", 0, ATTN_LUONG_GENERAL, 0, 1, 2},
        {"rnn bahdanau, lstm", 0, ATTN_BAHDANAU, 0, 0, 1},
        {"rnn luong_general batched, gru", 0, ATTN_LUONG_GENERAL, 1, 0, 1},
        {"rnn luong_local (local-p, concat), input feeding, gru", 0, ATTN_LUONG_LOCAL, 1, 1, 1},
        {"transformer sdp", 1, ATTN_SDP, 0, 0, 0},
        {"transformer flash", 1, ATTN_FLASH, 0, 0, 0},
        {"transformer linear", 1, ATTN_LINEAR, 0, 0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0] && nbatches >= STEPS; i++)
        run(&cases[i], &corpus.e, &corpus.plan);
    test_random_corpus_free(&corpus);
    return test_report("test_no_alloc");
}
