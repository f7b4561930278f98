/* test_dist_equiv.c — N data-parallel ranks = one process on the same global batch (docs/design.md §11,
 * §12). Run under mpirun (tests/dist/run_mpi.sh; `mpirun -np 2`, optionally with
 * `--mca btl tcp,self`); every rank
 *   - builds the same model twice from the same seed (dropout 0: the masks are keyed by the
 *     shard's layout, so only dropout 0 makes N ranks and one process the same step), and the
 *     same synthetic batches (sentences of varied lengths, as the batcher cuts them);
 *   - steps the reference copy as one process does (train_step on the whole batch), and the other
 *     copy on its own shard (batch_shard, train_step_shard: gradient sum over the ranks);
 *   - compares after every step: the loss, the global gradient norm, the summed gradient after
 *     clipping and the parameters after Adam, to the stated tolerances (float sums in another
 *     order); each step starts both copies from the reference's parameters, Adam moments and
 *     step count, so that what is compared is one step from one state (see TOL_PARAM), once without clipping (train.clip_norm = 0) and once with a clip_norm of CLIP_NORM,
 *     below every step's gradient norm, so that each step's gradient is scaled by its own factor
 *     (checked: the test fails if a step's norm does not exceed it);
 *   - checks that every rank holds bit-identical parameters (CRC32 of the flat buffer, gathered);
 *   - runs the same comparison with the last rank's shard dropped (an empty shard) and requires
 *     that it FAILS the tolerances: they are tight enough to see one rank's missing gradient.
 * Both model families are covered (RNN with input feeding, Transformer). With one rank the shards
 * would be the whole batch and nothing would be tested: the test refuses to run (exit 1, "needs
 * 2 or more ranks"); ctest runs it with 2, and test_dist_equiv_one_rank checks the refusal.
 * Exit 0 = pass on this rank.
 *
 * dist.overlap: the CPU comparison runs twice, without and with the overlapped sum (buckets of
 * 1 KiB, so that every model is cut into several; MPI_Iallreduce started from the models'
 * GradReady hook while backward runs), to the same tolerances (measured: the same differences
 * as without overlap — with 2 ranks each element is one float addition either way, so the
 * step is in fact bit-identical). Before that, each model's GradReady contract is checked on
 * one process: the offsets never grow, the last is 0, and the region grad[lo..) reported final
 * is bit for bit the gradient at the end of the pass (nothing writes to it after its call).
 *
 * train.accum_steps: every CPU comparison runs again with each step summing the gradients of
 * two batches (train_step_accum: the shards of both, one sum over the ranks; with dist.overlap
 * the buckets start during the second batch's backward), to the same tolerances. (The
 * accumulation is the same host code on every backend; the CUDA run keeps to one batch a step,
 * within its time limit under emulation.)
 *
 * `--backend cuda`: both copies on the CUDA backend (each rank on the GPU of its local rank), so
 * that the gradient sum is dist_nccl.h's ncclAllReduce — on a GPU with NCCL, and in the emulated
 * build (-DTRAINER_SIMT=ON) on the NCCL stand-in (ctest: test_dist_equiv_cuda, labels dist and
 * simt or gpu). Same tolerances and the same dropped-shard check, with clip_norm CLIP_NORM only
 * (one batch a step, no overlap: the host code those vary is the CPU run's); under a sanitizer
 * (test_sanitized), which looks for memory errors, the RNN and the tied pre-LN Transformer
 * without the dropped-shard runs (the tolerances' arithmetic, checked in the plain build). Exit
 * 77 (skipped)
 * without a CUDA device or without NCCL in the build; in the emulated build, where both always
 * exist, that is a failure (exit 1).
 */
#include <math.h>
#include <string.h>
#include <zlib.h>

#include "data/batch.h"
#include "dist/dist.h"
#include "dist/dist_nccl.h"
#ifdef TRAINER_SIMT
#include <nccl.h> /* the emulated build's stand-in (src/ops/cuda/simt/include/nccl.h) */
#endif
#include "model/model.h"
#include "ops/cpu/cpu.h"
#include "ops/cuda/cuda.h"
#include "testutil.h"
#include "train/config.h"
#include "train/step.h"

/* Tolerances, relative: |loss_N - loss_1| <= TOL_LOSS * |loss_1|; max |g_N - g_1| <= TOL_GRAD *
 * max |g_1| (every step); ||u_N - u_1|| <= TOL_PARAM * ||u_1|| for the parameters' updates
 * u = w_after - w_before of each step (Euclidean norms over every step's). The updates are compared as a whole,
 * not element by element: Adam's step lr * g / (|g| + eps) turns a rounding difference of a
 * gradient element near 0 (|g| ~ adam_eps = 1e-8) into a difference of up to about lr in that
 * element, which no elementwise tolerance below lr could take (measured: 0.84 lr in one element
 * of the Transformer). Such elements are those of the attention key biases (mha.c b_k): their
 * gradient is 0 in exact arithmetic (b_k adds q·b_k to every score of a row, and softmax is
 * shift-invariant), so both runs move them by rounding noise alone (measured |g| ~ 1e-9); they are
 * left out of the comparison, by name. Carried into the next step, that noise changes its
 * gradients far beyond rounding wherever a unit sits within lr of a ReLU's kink (with OpenBLAS's
 * sgemm, 2.7e-3 in the untied post-LN Transformer's second step, starting at the first encoder
 * layer's ffn.W1), so every step starts both copies from the reference's state and the updates
 * compared are each step's. Measured here (2 ranks): loss 4e-11 / 9e-9, gradient 1.3e-7 /
 * 2.4e-7, updates 4e-7 / 1.1e-6 (RNN / Transformer); with the last shard dropped the
 * same numbers are 0.5 to 0.9, so the tolerances sit about 100x above rounding and far below a
 * missing shard. */
#define TOL_LOSS 1e-6
#define TOL_GRAD 1e-5
#define TOL_PARAM 1e-4
/* train.clip_norm of the clipped runs: below the global gradient norm of every step of these
 * models and batches (0.13 and more measured; the loss is a sum over tokens scaled by 1 / tokens),
 * so that clipping scales every step's gradient (optim_clip); the test checks it does. */
#define CLIP_NORM 0.05f

enum { NSENT = 23, V = 40, STEPS = 3 };

/* A synthetic encoded corpus: NSENT pairs of 1..12 source and 1..10 target tokens. */
static void make_corpus(Encoded *e) {
    memset(e, 0, sizeof *e);
    e->n = NSENT;
    e->src_off = xmalloc(sizeof(int64_t) * (NSENT + 1));
    e->tgt_off = xmalloc(sizeof(int64_t) * (NSENT + 1));
    e->src_ids = xmalloc(sizeof(int32_t) * NSENT * 12);
    e->tgt_ids = xmalloc(sizeof(int32_t) * NSENT * 10);
    e->src_off[0] = e->tgt_off[0] = 0;
    for (int i = 0; i < NSENT; i++) {
        int s = 1 + (i * 7) % 12, t = 1 + (i * 5 + 3) % 10;
        for (int k = 0; k < s; k++) e->src_ids[e->src_off[i] + k] = 4 + (i * 13 + k * 7) % (V - 4);
        for (int k = 0; k < t; k++) e->tgt_ids[e->tgt_off[i] + k] = 4 + (i * 11 + k * 3) % (V - 4);
        e->src_off[i + 1] = e->src_off[i] + s;
        e->tgt_off[i + 1] = e->tgt_off[i] + t;
    }
}

static double max_abs_diff(const float *a, const float *b, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; i++) m = fmax(m, fabs((double)a[i] - (double)b[i]));
    return m;
}

static double max_abs(const float *a, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; i++) m = fmax(m, fabs((double)a[i]));
    return m;
}

typedef struct {
    double loss, grad, param; /* the worst relative errors over the steps (param: of the
                               * updates over all steps); grad also holds the norm's */
    double max_param;         /* the largest difference of one update, in units of lr */
    int identical;            /* parameters bit-identical on every rank after every step */
    int clipped;              /* steps whose gradient norm (both runs) exceeded clip_norm */
    double min_norm;          /* the smallest gradient norm of the reference's steps */
} Errors;

#ifdef TRAINER_SIMT
/* The NCCL stand-in's refusals (emulated build, 2+ ranks): ncclCommInitRank with another id on
 * each rank, or with two ranks claiming the same rank, is ncclInvalidUsage on every rank; a
 * rank outside [0, nranks) is ncclInvalidArgument. Returns the number of failed checks. */
static int check_nccl_stand_in(void) {
    int rank = dist_rank(), world = dist_size(), bad = 0;
    if (world < 2) return 0;
    ncclUniqueId id;
    ncclComm_t comm = NULL;
    CHECK(ncclGetUniqueId(&id) == ncclSuccess, "ncclGetUniqueId");
    /* each rank its own random id */
    ncclResult_t r = ncclCommInitRank(&comm, world, id, rank);
    bad += r != ncclInvalidUsage || comm != NULL;
    /* the same id, every rank claiming rank 0 */
    dist_bcast(&id, sizeof id, 0, "the test id");
    r = ncclCommInitRank(&comm, world, id, 0);
    bad += r != ncclInvalidUsage || comm != NULL;
    bad += ncclCommInitRank(&comm, world, id, world) != ncclInvalidArgument;
    /* and right: the same id, ranks in reverse order (the communicator follows NCCL's ranks) */
    r = ncclCommInitRank(&comm, world, id, world - 1 - rank);
    bad += r != ncclSuccess;
    if (r == ncclSuccess) {
        int v = world - 1 - rank, sum = 0;
        bad += ncclAllReduce(&v, &sum, 1, ncclInt32, ncclSum, comm, 0) != ncclSuccess ||
               sum != world * (world - 1) / 2;
        ncclResult_t a = ncclInternalError;
        bad += ncclCommGetAsyncError(comm, &a) != ncclSuccess || a != ncclSuccess;
        bad += ncclCommDestroy(comm) != ncclSuccess;
    }
    if (rank == 0)
        printf("NCCL stand-in: other ids, a rank twice, a rank out of range refused; a "
               "reordered communicator sums: %s\n", bad ? "FAIL" : "ok");
    return bad;
}
#endif

/* The GradReady contract (ops/params.h) of one model on backend be, on the first batch: returns
 * the number of hook calls, or -1 (with a message) when an offset grew, the last was not 0, or
 * the gradient grad[lo..) changed after the call that declared it final. */
enum { MAX_READY = 64 };
typedef struct {
    const Backend *be;
    const float *grad;
    size_t total;
    int n;
    size_t lo[MAX_READY];
    float *snap[MAX_READY]; /* host copies of grad[lo..total) at each call */
} ReadyLog;

static void log_ready(void *ctx, size_t lo) {
    ReadyLog *L = ctx;
    CHECK(L->n < MAX_READY, "more GradReady calls than this test keeps");
    L->lo[L->n] = lo;
    L->snap[L->n] = test_to_host(L->be, L->grad + lo, L->total - lo);
    L->n++;
}

static int check_grad_ready(const Backend *be, const ModelSpec *spec, const Config *cfg,
                            const Encoded *e, const BatchPlan *plan, const char *name) {
    Model m;
    Err err;
    CHECK(model_create(&m, spec, V, be, &err) == STATUS_OK, err.msg);
    model_init_params(&m, 11);
    int bB, bS, bT;
    batch_bounds(cfg->batch_tokens, cfg->max_len, &bB, &bS, &bT);
    TokenBatch tb;
    batch_alloc(&tb, bB, bS, bT, cfg->batch_tokens, cfg->batch_tokens);
    model_reserve(&m, bB, bS, bT, cfg->batch_tokens, cfg->batch_tokens);
    batch_fill(&tb, e, plan->idx + plan->start[0], (int)(plan->start[1] - plan->start[0]));
    ReadyLog L = {be, m.ps.grad, m.ps.total, 0, {0}, {NULL}};
    params_zero_grad(&m.ps);
    model_set_grad_ready(&m, (GradReady){log_ready, &L});
    model_loss(&m, &tb, cfg->label_smoothing, 1, 7, 1.0f / (float)tb.tgt_tokens);
    model_set_grad_ready(&m, (GradReady){NULL, NULL});
    float *g = test_to_host(be, m.ps.grad, m.ps.total);
    int bad = L.n == 0 || L.lo[L.n - 1] != 0;
    for (int k = 0; k < L.n; k++) {
        if (k && L.lo[k] > L.lo[k - 1]) bad = 1;
        if (memcmp(L.snap[k], g + L.lo[k], sizeof(float) * (m.ps.total - L.lo[k])) != 0) {
            printf("%s: GradReady call %d declared grad[%zu..%zu) final, but it changed later\n",
                   name, k, L.lo[k], m.ps.total);
            bad = 1;
        }
        free(L.snap[k]);
    }
    if (dist_rank() == 0) {
        printf("%s on %s: GradReady %d calls, offsets", name, be->name, L.n);
        for (int k = 0; k < L.n; k++) printf(" %zu", L.lo[k]);
        printf(" of %zu: %s\n", m.ps.total, bad ? "FAIL" : "ok");
    }
    free(g);
    batch_free(&tb);
    model_free(&m);
    return bad ? -1 : L.n;
}

/* The micro-batches of a step (train_step_accum): batch (first + j) of the plan, whole or this
 * rank's shard (drop: the last rank's shard empty). */
typedef struct {
    TokenBatch *tb;
    const Encoded *e;
    const BatchPlan *plan;
    long first;
    int shard, drop;
} Micro;

static const TokenBatch *micro_at(void *ctx, int j) {
    Micro *m = ctx;
    long bi = (m->first + j) % m->plan->nbatches;
    const long *idx = m->plan->idx + m->plan->start[bi];
    int nb = (int)(m->plan->start[bi + 1] - m->plan->start[bi]), lo = 0, hi = nb;
    if (m->shard) batch_shard(m->e, idx, nb, dist_rank(), dist_size(), &lo, &hi);
    if (m->shard && m->drop && dist_rank() == dist_size() - 1) lo = hi;
    batch_fill(m->tb, m->e, idx + lo, hi - lo);
    return m->tb;
}

/* STEPS steps on the plan's batches: the reference (one process) against the shards (drop: the
 * last rank trains an empty shard), both on backend be; with cfg->accum_steps = K each step sums
 * the gradients of K consecutive batches (train_step_accum, one sum over the ranks). */
static Errors run(const Backend *be, const ModelSpec *spec, const Config *cfg, const Encoded *e,
                  const BatchPlan *plan, int drop) {
    int rank = dist_rank(), world = dist_size();
    Model ref, par;
    Err err;
    CHECK(model_create(&ref, spec, V, be, &err) == STATUS_OK, err.msg);
    CHECK(model_create(&par, spec, V, be, &err) == STATUS_OK, err.msg);
    model_init_params(&ref, 11);
    model_init_params(&par, 11);
    int bB, bS, bT;
    batch_bounds(cfg->batch_tokens, cfg->max_len, &bB, &bS, &bT);
    TokenBatch full, shard;
    batch_alloc(&full, bB, bS, bT, cfg->batch_tokens, cfg->batch_tokens);
    batch_alloc(&shard, bB, bS, bT, cfg->batch_tokens, cfg->batch_tokens);
    model_reserve(&ref, bB, bS, bT, cfg->batch_tokens, cfg->batch_tokens);
    model_reserve(&par, bB, bS, bT, cfg->batch_tokens, cfg->batch_tokens);
    TrainState s1 = {.step = 0, .epoch = 1, .lr_scale = 1}, s2 = s1;
    Errors out = {0, 0, 0, 0, 1, 0, INFINITY};
    size_t n = ref.ps.total;
    double du = 0, u = 0;
    int K = cfg->accum_steps;
    for (int k = 0; k < STEPS; k++) {
        /* both copies start the step from the reference's state (see TOL_PARAM) */
        be->copy(par.ps.data, ref.ps.data, sizeof(float) * n);
        be->copy(par.ps.m, ref.ps.m, sizeof(float) * n);
        be->copy(par.ps.v, ref.ps.v, sizeof(float) * n);
        s2 = s1;
        float *w0 = test_to_host(be, ref.ps.data, n);
        long total = 0, full_src = 0;
        for (int j = 0; j < K; j++) {
            long bi = ((long)k * K + j) % plan->nbatches;
            const long *idx = plan->idx + plan->start[bi];
            int nb = (int)(plan->start[bi + 1] - plan->start[bi]), lo, hi;
            batch_fill(&full, e, idx, nb);
            long t = batch_shard(e, idx, nb, rank, world, &lo, &hi);
            CHECK(t == full.tgt_tokens, "batch_shard's total is batch_fill's tgt_tokens");
            total += t, full_src += full.src_tokens;
        }
        Micro mf = {&full, e, plan, (long)k * K, 0, 0}, ms = {&shard, e, plan, (long)k * K, 1, drop};
        StepResult r1 = train_step_accum(&ref, cfg, K, micro_at, &mf, total, &s1, NULL, NULL);
        StepSync sync = {{0, 0}, 0, 0, 0, 0};
        /* the gradients compared below are the summed ones after clipping (optim_clip scales
         * them in place; Adam reads but does not change them) */
        StepResult r2 = train_step_accum(&par, cfg, K, micro_at, &ms, total, &s2, NULL, &sync);
        CHECK(r1.finite && r2.finite, "finite steps");
        out.loss = fmax(out.loss, fabs(r2.loss - r1.loss) / fabs(r1.loss));
        out.grad = fmax(out.grad, fabs(r2.norm - r1.norm) / r1.norm);
        out.clipped += r1.norm > cfg->clip_norm && r2.norm > cfg->clip_norm;
        out.min_norm = fmin(out.min_norm, r1.norm);
        float *g1 = test_to_host(be, ref.ps.grad, n), *g2 = test_to_host(be, par.ps.grad, n);
        out.grad = fmax(out.grad, max_abs_diff(g2, g1, n) / max_abs(g1, n));
        free(g1);
        free(g2);
        if (!drop)
            CHECK(sync.src_tokens == full_src && sync.tgt_tokens == total,
                  "the shards' tokens add up to the batch's");
        float *w1 = test_to_host(be, ref.ps.data, n), *w2 = test_to_host(be, par.ps.data, n);
        uint32_t crc = (uint32_t)crc32(0L, (const Bytef *)w2, (uInt)(n * sizeof(float)));
        uint32_t all[64];
        CHECK(world <= 64, "at most 64 ranks in this test");
        dist_allgather(&crc, all, sizeof crc, "the parameters' CRC32");
        for (int q = 0; q < world; q++) out.identical &= all[q] == all[0];
        for (int q = 0; q < ref.ps.n; q++) {
            const ParamSpec *ps = &ref.ps.specs[q];
            size_t len = strlen(ps->name);
            if (len >= 4 && !strcmp(ps->name + len - 4, ".b_k")) continue; /* see TOL_PARAM */
            for (size_t i = ps->offset; i < ps->offset + ps->size; i++) {
                double a = (double)w1[i] - w0[i], b = (double)w2[i] - w0[i];
                du += (a - b) * (a - b), u += a * a;
                out.max_param = fmax(out.max_param, fabs(a - b) / cfg->lr);
            }
        }
        free(w0);
        free(w1);
        free(w2);
    }
    out.param = sqrt(du / u);
    batch_free(&full);
    batch_free(&shard);
    model_free(&ref);
    model_free(&par);
    return out;
}

int main(int argc, char **argv) {
    Err err;
    if (dist_init(&argc, &argv, &err)) {
        fprintf(stderr, "FAIL: %s\n", err.msg);
        return 1;
    }
    dist_set_timeout(60);
    int rank = dist_rank(), world = dist_size(), fails = 0;
    if (world < 2) { /* one rank: shards = the batch, the comparison would prove nothing */
        fprintf(stderr, "FAIL: test_dist_equiv needs 2 or more ranks (run it under mpiexec -n 2); "
                        "with one rank it would compare a process with itself\n");
        dist_finalize();
        return 1;
    }
    const Backend *be = backend_cpu();
    if (argc > 2 && !strcmp(argv[1], "--backend") && !strcmp(argv[2], "cuda")) {
        /* every rank decides alike (a skip on one rank and a run on the other would hang) */
        char why[512] = "";
        backend_cuda_use_device(dist_local_rank());
        be = backend_cuda(why, sizeof why);
#ifdef TRAINER_SIMT /* the emulated backend and NCCL stand-in always exist: a failure, not a skip */
        const char *verdict = "FAIL";
        const int absent = 1;
#else
        const char *verdict = "SKIP";
        const int absent = 77;
#endif
        if (!be && rank == 0) printf("%s: %s\n", verdict, why);
        if (dist_first_failed(be != NULL, "the CUDA backend") >= 0) {
            dist_finalize();
            return absent;
        }
        if (!dist_nccl_available()) {
            if (rank == 0) printf("%s: this build has no NCCL\n", verdict);
            dist_finalize();
            return absent;
        }
#ifdef TRAINER_SIMT
        fails += check_nccl_stand_in();
#endif
        CHECK(dist_nccl_init(&err) == STATUS_OK, err.msg);
        if (rank == 0)
            printf("backend cuda (%s), GPU %d, gradient sum on NCCL: %s\n",
                   backend_cuda_device_name(), backend_cuda_device_index(),
                   dist_nccl_ready() ? "yes" : "no (one rank)");
    } else if (argc > 1) {
        fprintf(stderr, "usage: test_dist_equiv [--backend cuda]\n");
        return 2;
    }
    Config cfg;
    config_defaults(&cfg);
    cfg.lr = 1e-3f, cfg.warmup_steps = 0, cfg.label_smoothing = 0.1f;
    cfg.batch_tokens = 120, cfg.max_len = 12;
    Encoded e;
    make_corpus(&e);
    long *keep;
    long nkeep = batch_filter(&e, cfg.max_len, &keep);
    Rng rng;
    rng_seed(&rng, 5, 1);
    BatchPlan plan;
    CHECK(batch_plan(&plan, &e, keep, nkeep, cfg.batch_tokens, &rng, &err) == STATUS_OK, err.msg);

    ModelSpec specs[3] = {{0}, {0}, {0}};
    specs[0].type = MODEL_RNN, specs[0].cell = CELL_LSTM, specs[0].attention = ATTN_LUONG_GENERAL;
    specs[0].emb = 8, specs[0].hidden = 12, specs[0].enc_layers = 2, specs[0].dec_layers = 1;
    specs[0].input_feeding = 1, specs[0].heads = 2;
    specs[1].type = MODEL_TRANSFORMER, specs[1].d_model = 8, specs[1].heads = 2;
    specs[1].d_ff = 16, specs[1].enc_layers = 2, specs[1].dec_layers = 2;
    specs[1].norm = NORM_PRE, specs[1].tie_embeddings = 1, specs[1].self_attention = ATTN_SDP;
    specs[1].dec_self_attention = ATTN_NONE, specs[1].cross_attention = ATTN_SDP;
    specs[2] = specs[1]; /* the other layout: untied embeddings, post-LN (no final norms) */
    specs[2].tie_embeddings = 0, specs[2].norm = NORM_POST;
    const char *names[3] = {"rnn lstm luong_general", "transformer sdp",
                            "transformer sdp untied post-LN"};
    for (int c = 0; c < 3; c++) fails += check_grad_ready(be, &specs[c], &cfg, &e, &plan,
                                                          names[c]) < 0;
    int cpu = be == backend_cpu(), brief = !cpu && test_sanitized();
    for (int c = 0; c < (brief ? 2 : 3); c++) {
        /* on the CUDA backend (minutes under emulation) with clipping only: a clipped step
         * scales the summed gradient by its norm, so a wrong sum shows there as well */
        for (int acc = 1; acc <= (cpu ? 2 : 1); acc++)
        for (int clip = cpu ? 0 : 1; clip < 2; clip++)
        for (int ov = 0; ov < (cpu ? 2 : 1); ov++)
        for (int drop = 0; drop < (brief ? 1 : 2); drop++) {
            cfg.clip_norm = clip ? CLIP_NORM : 0.0f;
            cfg.dist_overlap = ov, cfg.dist_bucket_mb = 1.0f / 1024; /* 1 KiB: 256 floats */
            cfg.accum_steps = acc;
            Errors x = run(be, &specs[c], &cfg, &e, &plan, drop);
            int within = x.loss <= TOL_LOSS && x.grad <= TOL_GRAD && x.param <= TOL_PARAM;
            int clipped = !clip || x.clipped == STEPS; /* clipping ran in every step */
            int ok = x.identical && clipped && (drop ? !within : within);
            if (rank == 0)
                printf("%s on %s, %d ranks%s%s%s%s: relative differences: loss %.3g, gradient "
                       "%.3g, updates %.3g [tolerances %.0e, %.0e, %.0e] (largest in one "
                       "parameter: %.3g lr); gradient norms >= %.3g%s; parameters %s on every "
                       "rank: %s\n",
                       names[c], be->name, world, acc > 1 ? ", accum_steps 2" : "",
                       clip ? ", clip_norm 0.05" : ", no clipping",
                       ov ? ", dist.overlap (1 KiB buckets)" : "",
                       drop ? ", last rank's shard DROPPED" : "", x.loss, x.grad, x.param,
                       TOL_LOSS, TOL_GRAD, TOL_PARAM, x.max_param, x.min_norm,
                       clip ? (clipped ? ", every step clipped" : ", NOT every step clipped")
                            : "",
                       x.identical ? "identical" : "NOT identical",
                       !clipped ? "FAIL: clip_norm did not clip every step"
                       : ok ? (drop ? "ok (fails the tolerances, as it must)" : "ok")
                            : (drop ? "FAIL: the tolerances do not see a dropped shard" : "FAIL"));
            fails += !ok;
        }
    }
    batch_plan_free(&plan);
    free(keep);
    encoded_free(&e);
    int bad = dist_first_failed(fails == 0, "the verdict");
    if (rank == 0) printf("%s\n", bad < 0 ? "PASS" : "FAIL");
    dist_nccl_finalize(1);
    dist_finalize();
    return bad < 0 ? 0 : 1;
}
