/* train/step.h — one optimizer step (step.c), as train_run (train.h) takes it: the gradient of
 * a batch or of its micro-batches (train.accum_steps), their sum over the ranks (MPI,
 * dist.overlap's buckets, or NCCL on the CUDA backend), global gradient-norm clipping
 * (Pascanu et al. 2013), an Adam step (Kingma & Ba 2015 Alg. 1) at the learning rate of
 * train/optim.h and the EMA of the weights (train.ema_decay). A step whose loss or gradient
 * norm is not finite changes no parameter and says so in its result; nothing here returns an
 * error. Units: losses in nats summed over target tokens; gradient norms of the loss per target
 * token (the gradients are scaled by 1 / target tokens).
 */
#ifndef TRAINER_TRAIN_STEP_H
#define TRAINER_TRAIN_STEP_H

#include "core/tokens.h"
#include "model/model.h"
#include "train/checkpoint.h"
#include "train/config.h"
#include "train/inject.h"

/* What one train_step did. */
typedef struct {
    double loss;          /* summed label-smoothed cross-entropy over the batch's target tokens
                           * (nats), after any test injection */
    double norm;          /* global gradient norm before clipping (optim_grad_norm) */
    int finite;           /* 1: loss and norm finite, the update was applied; 0: skipped */
    const char *injected; /* the test injection applied to this step ("nan", …), or NULL */
} StepResult;

/* One optimizer step, as train_run takes it: zero the gradients; forward and backward on tb
 * (a host TokenBatch, uploaded by model_loss) with dropout keyed by rng_hash(train.seed,
 * st->step), label smoothing train.label_smoothing and gradients scaled by 1 / tb->tgt_tokens;
 * the global gradient norm; when loss and norm are finite, norm clipping to train.clip_norm
 * (Pascanu et al. 2013) and an Adam step (Kingma & Ba 2015 Alg. 1; st->adam_t + 1) at
 * optim_lr(cfg, st->step + 1, st->lr_scale), then with train.ema_decay the EMA of the weights
 * at train_ema_decay(cfg, n), n the updates before this one; a non-finite step changes no
 * parameter. Then st->step + 1. inject (NULL: none) poisons the step for the fault tests (train/inject.h).
 * Allocates nothing once the model has run a batch of this size (docs/design.md §6). No errors:
 * a skipped step is reported through the result. */
StepResult train_step(Model *m, const Config *cfg, const TokenBatch *tb, TrainState *st,
                      const NonfiniteInjection *inject);

/* The EMA decay of the update after n earlier ones: train.ema_decay, or with train.ema_warmup
 * min(ema_decay, (1 + n) / (10 + n)) (the warm-up of Marian's exponential smoothing and of
 * TensorFlow's ExponentialMovingAverage with num_updates; 0.1 for the first update, ema_decay
 * from n = (10·d − 1) / (1 − d) on: 8,991 updates for 0.999). No errors. */
float train_ema_decay(const Config *cfg, long n);

/* A data-parallel step's exchange (docs/distributed.md), beyond the gradient. */
typedef struct {
    double flags[2];   /* in: this rank's values to sum over the ranks with the step's loss (the
                        * trainer's stop signal and rank 0's elapsed time); out: their sums */
    long src_tokens;   /* out: the source tokens of all shards */
    long tgt_tokens;   /* out: the target tokens of all shards (global_tgt_tokens unless the
                        * ranks' shards do not make up the same batch) */
    double t_compute;  /* out: seconds of this rank's forward and backward (with dist.overlap
                        * including the bucket sums started during backward) */
    double t_sum;      /* out: seconds of the sums over the ranks (gradient, loss, flags, norm;
                        * with dist.overlap the wait for the buckets after backward) */
} StepSync;

/* The floats of one dist.overlap bucket: dist.bucket_mb MiB of floats, at least 1. No errors. */
size_t train_bucket_floats(const Config *cfg);

/* One optimizer step on this rank's shard tb (B = 0: an empty shard, no forward) of a global
 * batch of global_tgt_tokens target tokens: gradients scaled by 1 / global_tgt_tokens, summed
 * over the ranks (on the CPU dist_sum_float over the flat gradient buffer, one MPI_Allreduce,
 * or with cfg->dist_overlap dist.h's buckets, MPI_Iallreduce started from the model's
 * GradReady hook as backward finishes blocks; on the CUDA backend dist_nccl_sum_float, one
 * ncclAllReduce after backward, which needs dist_nccl_init), so that
 * every rank holds the one-process gradient of the global batch up to the order of the float
 * sums; the loss, token counts and sync->flags summed in one more (doubles); the gradient norm
 * is rank 0's (broadcast: one clipping decision everywhere); then clipping and Adam exactly as
 * train_step. The returned loss is the global batch's. Dropout is keyed per element of the
 * shard's own layout (rng_hash(train.seed, step), the element's position in the shard), so with
 * dropout > 0 N ranks draw other masks than one process (as valid a sample, not the same one);
 * with dropout 0 the step is the one-process step up to rounding. With one rank (or sync NULL
 * and tb the whole batch) nothing is exchanged and the step is train_step's, bit for bit.
 * Faults of the exchange end the rank (dist/dist.h). */
StepResult train_step_shard(Model *m, const Config *cfg, const TokenBatch *tb,
                            long global_tgt_tokens, TrainState *st,
                            const NonfiniteInjection *inject, StepSync *sync);

/* The micro-batches of one optimizer step: the function fills batch j (0 <= j < n; host
 * memory, this rank's shard) and returns it; ctx is the caller's. Each batch is filled after the
 * previous one's backward pass, so one buffer serves them all. */
typedef const TokenBatch *(*MicroBatchFn)(void *ctx, int j);

/* One optimizer step over n >= 1 micro-batches (train.accum_steps; gradient accumulation as in
 * Ott et al. 2018, "Scaling Neural Machine Translation"): train_step_shard's step with the
 * gradients of every micro-batch summed before the exchange, clipping and Adam — each scaled by
 * 1 / global_tgt_tokens, the target tokens of all n batches over all ranks, so the gradient is
 * that of their summed loss over their tokens together — and one gradient sum over the ranks
 * (with dist.overlap, started during the last batch's backward). Micro-batch 0 takes the step's
 * dropout key, batch j > 0 rng_hash(that key, j). The returned loss is the sum over the n
 * batches (and the ranks); sync (may be NULL) gets their tokens. With n = 1 it is
 * train_step_shard, bit for bit. Faults: train_step_shard's. */
StepResult train_step_accum(Model *m, const Config *cfg, int n, MicroBatchFn batch, void *ctx,
                            long global_tgt_tokens, TrainState *st,
                            const NonfiniteInjection *inject, StepSync *sync);

#endif
