/* test_model_cuda.c — every model and attention kind on the CUDA backend against the CPU backend
 * (docs/design.md §11). In the emulated build (-DTRAINER_SIMT=ON) the CUDA backend's kernels
 * run under the SIMT emulation and its cuBLAS calls on a host stand-in, so this runs in CI; in a
 * native CUDA build it runs on the GPU; without either it exits 77 (skipped). In the emulated
 * build a backend that does not start is a failure (exit 1), never a skip.
 *
 * For each case (the cases of test_model_ops.c: RNN cells × attention kinds, Transformer kinds per
 * slot), the same tiny model is built on both backends from the same seed, and:
 *   1. loss and gradients: one training forward/backward (dropout on: the masks come from the same
 *      counter-based hash on both backends) — the loss to REL_LOSS relative, every parameter's
 *      gradient to REL_GRAD normwise relative error max|cuda − cpu| / max|cpu| (per tensor; a
 *      tensor whose CPU gradient is all zero must be zero within ABS_ZERO; a tensor whose gradient
 *      is zero in exact arithmetic — the attention key bias, by the softmax's shift invariance —
 *      holds rounding noise below NULL_REL of the largest gradient on both sides and is left out
 *      of the comparisons, see null_tensors);
 *   2. training: STEPS trainer steps (loss and gradients, norm, clipping, Adam) on both, the loss
 *      of each step to REL_LOSS_STEPS relative and the parameters after the last step to
 *      REL_PARAM normwise; 3 steps under a sanitizer (test_sanitized), which looks for memory
 *      errors, and in which each step costs several times more;
 *   3. decoding: greedy and beam search (K = 3) from the trained models give the same tokens;
 *   4. no op allocates (docs/design.md §2, §6; emulated build only, where the host stand-in of the
 *      runtime counts cudaMalloc calls, cuda_host_malloc_calls): after model_reserve, the training
 *      steps of 1 and 2 make no cudaMalloc at all, and decoding none but through the backend's
 *      alloc (its decoding buffers; counted by a wrapper, so the difference is the ops' own).
 * The CUDA side runs its output layer and loss in blocks of LOSS_ROWS target rows
 * (model_set_loss_rows), the CPU side in one block: 1–3 compare the blocked path against the whole.
 * Tolerances: float32 on both sides, the same formulas summed in another order (cuBLAS/kernels
 * against OpenBLAS/OpenMP loops); 20 Adam steps amplify rounding through the normalisation
 * m/√v of near-zero gradients, hence the looser parameter bound. Decoding ties are not expected
 * with random weights; a token difference is reported with both sequences.
 * Legend: B sentences, S source length, T target length, V vocabulary.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/batch.h"
#include "eval/decode.h"
#include "model/model.h"
#include "ops/cpu/cpu.h"
#include "ops/cuda/cuda.h"
#include "testutil.h"
#include "train/config.h"
#include "train/optim.h"
#include "model_cases.h"
#ifdef TRAINER_SIMT
unsigned long long cuda_host_malloc_calls(void); /* the runtime stand-in (cuda_runtime_api.h) */
#define MALLOC_CALLS() cuda_host_malloc_calls()
#else
#define MALLOC_CALLS() 0ULL /* a real device: not counted */
#endif

/* The CUDA backend with its alloc counted (part 4; test_alloc_hooked). */
static unsigned long long g_alloc_calls;
static void count_alloc(void *caller) {
    (void)caller;
    g_alloc_calls++;
}

enum { STEPS = 20, K_BEAM = 3, LOSS_ROWS = 4 };

static const double REL_LOSS = 1e-5, REL_GRAD = 1e-4, ABS_ZERO = 1e-7;
static const double REL_LOSS_STEPS = 1e-4, REL_PARAM = 1e-3, NULL_REL = 1e-6;


/* Every parameter tensor of buffers a (cuda) and b (cpu), laid out by the ParamSet ps, compared
 * normwise per tensor; returns the worst relative error. A tensor flagged in skip[] (its gradient
 * is zero in exact arithmetic, see null_tensors) is not compared. */
static double compare_tensors(const char *what, const char *name, const ParamSet *ps,
                              const float *a, const float *b, double tol, const char *skip) {
    double worst = 0.0;
    for (int i = 0; i < ps->n; i++) {
        if (skip && skip[i]) continue;
        const ParamSpec *sp = &ps->specs[i];
        double bmax = 0.0;
        double e = test_rel_err(a + sp->offset, b + sp->offset, sp->size, &bmax);
        int ok = bmax > 0.0 ? e < tol : e < ABS_ZERO;
        EXPECT(ok, "%s: %s of %s: error %.3g (max |cpu| %.3g, tolerance %.1g)", name, what,
               sp->name, e, bmax, tol);
        if (e > worst && bmax > 0.0) worst = e;
    }
    return worst;
}

/* Flags (null[i] = 1) the tensors whose gradient is zero in exact arithmetic and only rounding
 * noise in float: below NULL_REL of the largest gradient anywhere on both backends, and not
 * reproduced to REL_GRAD (a real but small gradient agrees and stays compared). The
 * key bias of softmax attention is one (adding q·b_k to every score of a row leaves the softmax
 * unchanged). Such a tensor's gradient is checked to be noise on both sides, and it is left out
 * of the comparison after training (Adam turns noise into steps of size lr). Returns the count. */
static int null_tensors(const ParamSet *ps, const float *a, const float *b, char *null,
                        const char *name) {
    double gmax = 0.0;
    for (size_t j = 0; j < ps->total; j++)
        if (fabs((double)b[j]) > gmax) gmax = fabs((double)b[j]);
    int n = 0;
    for (int i = 0; i < ps->n; i++) {
        const ParamSpec *sp = &ps->specs[i];
        double am = 0.0, bm = 0.0;
        for (size_t j = sp->offset; j < sp->offset + sp->size; j++) {
            if (fabs((double)a[j]) > am) am = fabs((double)a[j]);
            if (fabs((double)b[j]) > bm) bm = fabs((double)b[j]);
        }
        double e = test_rel_err(a + sp->offset, b + sp->offset, sp->size, NULL);
        /* noise: tiny on the cpu and not reproduced by cuda (a real small gradient agrees) */
        null[i] = bm <= NULL_REL * gmax && !(e < REL_GRAD);
        if (null[i]) {
            n++;
            printf("  %s: %s: gradient %.3g on cpu, %.3g on cuda: rounding noise (largest "
                   "gradient %.3g)\n", name, sp->name, bm, am, gmax);
            EXPECT(am <= NULL_REL * gmax, "%s: gradient of %s is %.3g on cuda but noise (%.3g) on "
                   "cpu", name, sp->name, am, bm);
        }
    }
    return n;
}

typedef struct {
    Model m;
    int ok;
} Side;

static int side_create(Side *s, const Case *c, const Backend *be, int loss_rows) {
    Err err;
    s->ok = 0;
    if (model_create(&s->m, &c->spec, V, be, &err)) {
        EXPECT(0, "%s on %s: %s", c->name, be->name, err.msg);
        return 1;
    }
    model_init_params(&s->m, 7);
    model_set_loss_rows(&s->m, loss_rows);
    model_reserve(&s->m, B * K_BEAM, S, 2 * S + 10, (long)B * K_BEAM * S,
                  (long)B * K_BEAM * (2 * S + 10));
    s->ok = 1;
    return 0;
}

/* One trainer step on side s: zero, loss and gradients, norm, clip, Adam (step t >= 1). */
static double side_step(Side *s, const TokenBatch *tb, const Config *cfg, int t, int update) {
    params_zero_grad(&s->m.ps);
    double loss = model_loss(&s->m, tb, 0.1f, 1, 99 + (uint64_t)t, 1.0f / (float)tb->tgt_tokens);
    if (update) {
        double norm = optim_grad_norm(&s->m.ps);
        optim_clip(&s->m.ps, norm, 0.5f);
        optim_adam(&s->m.ps, cfg, 1e-3, t);
    }
    return loss;
}

static void check_case(const Case *c, const Backend *gpu, const TokenBatch *tb,
                       const TokenBatch *src) {
    Side cu, cp;
    if (side_create(&cu, c, gpu, LOSS_ROWS)) return;
    if (side_create(&cp, c, backend_cpu(), 0)) {
        model_free(&cu.m);
        return;
    }
    Config cfg;
    config_defaults(&cfg);
    size_t total = cp.m.ps.total;
    EXPECT(cu.m.ps.total == total, "%s: %zu parameters on cuda, %zu on cpu", c->name,
           cu.m.ps.total, total);

    /* the same initial parameters (initialised on the host, uploaded) */
    float *wa = test_to_host(gpu, cu.m.ps.data, total);
    float *wb = test_to_host(backend_cpu(), cp.m.ps.data, total);
    EXPECT(memcmp(wa, wb, sizeof(float) * total) == 0, "%s: initial parameters differ", c->name);
    free(wa), free(wb);

    /* 1. loss and every gradient (part 4: cudaMalloc calls counted from here) */
    unsigned long long mc0 = MALLOC_CALLS(), ac0 = g_alloc_calls;
    double la = side_step(&cu, tb, &cfg, 1, 0), lb = side_step(&cp, tb, &cfg, 1, 0);
    double el = fabs(la - lb) / fabs(lb);
    EXPECT(isfinite(la) && el < REL_LOSS, "%s: loss %.9g on cuda, %.9g on cpu (rel %.3g)", c->name,
           la, lb, el);
    float *ga = test_to_host(gpu, cu.m.ps.grad, total);
    float *gb = test_to_host(backend_cpu(), cp.m.ps.grad, total);
    char *null = xcalloc((size_t)cp.m.ps.n + 1, 1);
    int nnull = null_tensors(&cp.m.ps, ga, gb, null, c->name);
    double eg = compare_tensors("gradient", c->name, &cp.m.ps, ga, gb, REL_GRAD, null);
    free(ga), free(gb);

    /* 2. STEPS training steps (3 under a sanitizer) */
    double worst_step = 0.0;
    const int steps = test_sanitized() ? 3 : STEPS;
    for (int t = 1; t <= steps; t++) {
        la = side_step(&cu, tb, &cfg, t, 1);
        lb = side_step(&cp, tb, &cfg, t, 1);
        double e = fabs(la - lb) / fabs(lb);
        if (!(e <= worst_step)) worst_step = e;
        EXPECT(isfinite(la) && e < REL_LOSS_STEPS, "%s: step %d loss %.9g on cuda, %.9g on cpu",
               c->name, t, la, lb);
    }
    unsigned long long mc1 = MALLOC_CALLS(), ac1 = g_alloc_calls;
    EXPECT(mc1 == mc0 && ac1 == ac0, "%s: %llu cudaMalloc calls (%llu through the backend's "
           "alloc) in %d training steps after model_reserve; an op allocates (docs/design.md §2)",
           c->name, mc1 - mc0, ac1 - ac0, steps + 1);
    wa = test_to_host(gpu, cu.m.ps.data, total);
    wb = test_to_host(backend_cpu(), cp.m.ps.data, total);
    double ep =
        compare_tensors("parameters after training", c->name, &cp.m.ps, wa, wb, REL_PARAM, null);
    free(null);
    free(wa), free(wb);

    /* 3. decoding */
    int maxT = 2 * S + 10;
    size_t nids = (size_t)2 * B * maxT;
    int *ia = xcalloc(nids, sizeof(int)), *ib = xcalloc(nids, sizeof(int));
    float *attn = xmalloc(sizeof(float) * B * maxT * S);
    mc0 = MALLOC_CALLS(), ac0 = g_alloc_calls;
    decode_greedy(&cu.m, src, maxT, ia, model_has_attention(&cu.m) ? attn : NULL);
    decode_beam(&cu.m, src, K_BEAM, 1.0f, maxT, ia + B * maxT, NULL);
    mc1 = MALLOC_CALLS(), ac1 = g_alloc_calls;
#ifdef TRAINER_SIMT /* on a real device cudaMalloc is not counted (MALLOC_CALLS is 0) */
    EXPECT(mc1 - mc0 == ac1 - ac0, "%s: decoding made %llu cudaMalloc calls, %llu of them "
           "through the backend's alloc: an op allocates (docs/design.md §2)", c->name, mc1 - mc0,
           ac1 - ac0);
#endif
    decode_greedy(&cp.m, src, maxT, ib, model_has_attention(&cp.m) ? attn : NULL);
    decode_beam(&cp.m, src, K_BEAM, 1.0f, maxT, ib + B * maxT, NULL);
    for (int half = 0; half < 2; half++)
        for (int b = 0; b < B; b++) {
            const int *x = ia + (size_t)(half * B + b) * maxT, *y = ib + (size_t)(half * B + b) * maxT;
            if (memcmp(x, y, sizeof(int) * maxT) != 0) {
                char sa[256] = "", sb[256] = "";
                for (int t = 0; t < maxT && t < 20; t++) {
                    snprintf(sa + strlen(sa), sizeof sa - strlen(sa), " %d", x[t]);
                    snprintf(sb + strlen(sb), sizeof sb - strlen(sb), " %d", y[t]);
                }
                EXPECT(0, "%s: %s decoding of sentence %d: cuda%s | cpu%s", c->name,
                       half ? "beam" : "greedy", b, sa, sb);
            }
        }
    free(ia), free(ib), free(attn);
    printf("%s: loss rel %.2g, gradients rel <= %.2g (%d tensors with no gradient in exact "
           "arithmetic: noise on both sides), %d steps: loss rel <= %.2g, parameters rel <= %.2g; "
           "greedy and beam compared\n",
           c->name, el, eg, nnull, steps, worst_step, ep);
    model_free(&cu.m);
    model_free(&cp.m);
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    char msg[512] = "";
    const Backend *real = backend_cuda(msg, sizeof msg);
    if (!real) {
#ifdef TRAINER_SIMT /* the emulated backend always exists: not starting is a failure */
        fprintf(stderr, "test_model_cuda: FAIL: the emulated CUDA backend did not start: %s\n",
                msg);
        return 1;
#else
        printf("test_model_cuda: skipped: %s\n", msg);
        return 77;
#endif
    }
    const Backend *gpu = test_alloc_hooked(real, count_alloc);
    TokenBatch tb, sb;
    model_case_batches(&tb, &sb);

    Case cases[MODEL_CASES_MAX];
    int ncases = model_cases(cases);
    /* a kind the backend cannot run is refused by model_create: a failure here, since every
     * kind must run on cuda */
    for (int i = 0; i < ncases; i++) check_case(&cases[i], gpu, &tb, &sb);
    batch_free(&tb);
    batch_free(&sb);
    return test_report("test_model_cuda");
}
