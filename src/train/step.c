/* step.c — one optimizer step (step.h): the gradient of its micro-batches, their sum over the
 * ranks (MPI, dist.overlap's buckets or NCCL), gradient-norm clipping, Adam and the EMA of the
 * weights (optim.h). */
#include "train/step.h"

#include <math.h>

#include "dist/dist.h"
#include "dist/dist_nccl.h"
#include "train/optim.h"

size_t train_bucket_floats(const Config *cfg) {
    size_t size = (size_t)((double)cfg->dist_bucket_mb * 1048576.0 / sizeof(float));
    return size < 1 ? 1 : size;
}

/* dist.overlap's buckets over a gradient buffer (made on first use, remade when the buffer or
 * the bucket size changes; one buffer at a time: the trainer has one model). */
static DistBuckets *g_buckets;
static const float *g_buckets_buf;
static size_t g_buckets_n, g_buckets_size;

static DistBuckets *buckets_for(ParamSet *ps, const Config *cfg) {
    size_t size = train_bucket_floats(cfg);
    if (!g_buckets || g_buckets_buf != ps->grad || g_buckets_n != ps->total ||
        g_buckets_size != size) {
        dist_buckets_free(g_buckets);
        g_buckets = dist_buckets_new(ps->grad, ps->total, size);
        g_buckets_buf = ps->grad, g_buckets_n = ps->total, g_buckets_size = size;
    }
    return g_buckets;
}

float train_ema_decay(const Config *cfg, long n) {
    float d = cfg->ema_decay;
    if (cfg->ema_warmup && n >= 0) {
        float w = (float)((1.0 + (double)n) / (10.0 + (double)n));
        if (w < d) d = w;
    }
    return d;
}

/* The model's GradReady hook with dist.overlap: the buckets within grad[lo..) start. */
static void on_grad_ready(void *ctx, size_t lo) { dist_buckets_ready(ctx, lo); }

StepResult train_step_accum(Model *m, const Config *cfg, int n, MicroBatchFn batch, void *ctx,
                            long global_tgt_tokens, TrainState *st,
                            const NonfiniteInjection *inject, StepSync *sync) {
    ParamSet *ps = &m->ps;
    StepResult r = {0, 0, 0, NULL};
    params_zero_grad(ps);
    uint64_t key = rng_hash(cfg->seed, (uint64_t)st->step);
    double t0 = sync ? now_seconds() : 0;
    int shared = sync && dist_size() > 1;
    /* dist.overlap (host memory: the CPU): buckets of the gradient start summing as backward
     * finishes them */
    DistBuckets *bk = shared && cfg->dist_overlap && m->be->host_memory
                          ? buckets_for(ps, cfg) : NULL;
    char what[96];
    snprintf(what, sizeof what, "the gradient sum of step %ld", st->step + 1);
    long tgt = 0, src = 0;
    for (int j = 0; j < n; j++) {
        const TokenBatch *tb = batch(ctx, j);
        int last = j == n - 1; /* its backward completes the gradient: the buckets start there */
        if (bk && last) {
            dist_buckets_begin(bk, what);
            model_set_grad_ready(m, (GradReady){on_grad_ready, bk});
        }
        /* batch 0 keeps the step's dropout key; each later one takes a key of its own */
        uint64_t kj = j ? rng_hash(key, (uint64_t)j) : key;
        if (tb->B > 0) /* an empty shard adds zeros to the sums */
            r.loss += model_loss(m, tb, cfg->label_smoothing, 1, kj,
                                 1.0f / (float)global_tgt_tokens);
        if (bk && last) model_set_grad_ready(m, (GradReady){NULL, NULL});
        tgt += tb->tgt_tokens, src += tb->src_tokens;
    }
    if (sync) {
        sync->tgt_tokens = tgt;
        sync->src_tokens = src;
        double t1 = now_seconds();
        sync->t_compute = t1 - t0;
        if (shared) {
            if (bk) /* the buckets backward did not start, then the wait for all */
                dist_buckets_finish(bk);
            else if (!m->be->host_memory) /* device memory: NCCL between the GPUs */
                dist_nccl_sum_float(ps->grad, ps->total, what);
            else
                dist_sum_float(ps->grad, ps->total, what);
            double v[5] = {r.loss, (double)tgt, (double)src, sync->flags[0], sync->flags[1]};
            dist_sum_double(v, 5, what);
            r.loss = v[0];
            sync->tgt_tokens = (long)v[1];
            sync->src_tokens = (long)v[2];
            sync->flags[0] = v[3], sync->flags[1] = v[4];
        }
        sync->t_sum = now_seconds() - t1;
    }
    if (inject && inject->n)
        r.injected = inject_apply(inject, st->step + 1, m->be, ps->grad, &r.loss);
    r.norm = optim_grad_norm(ps);
    if (shared) { /* rank 0's norm: one clipping decision and factor on every rank */
        double t2 = now_seconds();
        dist_bcast(&r.norm, sizeof r.norm, 0, "the gradient norm");
        sync->t_sum += now_seconds() - t2;
    }
    r.finite = isfinite(r.norm) && isfinite(r.loss);
    if (r.finite) {
        optim_clip(ps, r.norm, cfg->clip_norm);
        st->adam_t++;
        optim_adam(ps, cfg, optim_lr(cfg, st->step + 1, st->lr_scale), st->adam_t);
        if (cfg->ema_decay > 0 && ps->ema)
            params_ema_update(ps, train_ema_decay(cfg, st->adam_t - 1));
    }
    st->step++;
    return r;
}

/* MicroBatchFn of a step on one batch: the batch itself. */
static const TokenBatch *one_batch(void *ctx, int j) {
    (void)j;
    return ctx;
}

StepResult train_step_shard(Model *m, const Config *cfg, const TokenBatch *tb,
                            long global_tgt_tokens, TrainState *st,
                            const NonfiniteInjection *inject, StepSync *sync) {
    return train_step_accum(m, cfg, 1, one_batch, (void *)tb, global_tgt_tokens, st, inject,
                            sync);
}

StepResult train_step(Model *m, const Config *cfg, const TokenBatch *tb, TrainState *st,
                      const NonfiniteInjection *inject) {
    return train_step_shard(m, cfg, tb, tb->tgt_tokens, st, inject, NULL);
}
