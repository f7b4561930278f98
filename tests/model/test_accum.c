/* test_accum.c — train.accum_steps: one optimizer step over several batches (train_step_accum,
 * train/step.h) is the step over their union, up to float rounding, with dropout 0.
 *
 * For the RNN (LSTM, luong_general, input feeding) and the Transformer (sdp, pre-norm), two
 * copies of one model (the same initial weights) take the same batches of random pairs:
 *  1. copy A a train_step on a batch of 12 pairs, copy B a train_step_accum over its two halves
 *     of 6 pairs (the gradients scaled by 1 / the target tokens of both halves): the summed loss
 *     within 1e-6 relative, every gradient (clipping off, so ps->grad holds it after the step)
 *     within 1e-5 of the largest, one optimizer step each (step and adam_t 1); then 3 more such
 *     steps on further batches with train.clip_norm = 1 and an EMA: the updates of the weights
 *     and of the EMA within 1e-4 (Euclidean, relative; the attention key biases left out, whose
 *     gradient is rounding noise), step and adam_t 4 (the schedule, clipping and EMA count
 *     optimizer steps);
 *  2. controls that must fail the tolerance: each half as a step of its own, normalised by its
 *     own tokens (the gradient of the second half alone differs), and the halves accumulated but
 *     each scaled by its own tokens (twice the gradient).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/batch.h"
#include "model/model.h"
#include "ops/cpu/cpu.h"
#include "testutil.h"
#include "train/config.h"
#include "train/step.h"

enum { V = 40, MAXLEN = 10, NPAIRS = 200, HALF = 6, STEPS = 4 };

/* Two halves of a batch for train_step_accum. */
typedef struct {
    TokenBatch *half[2];
} Halves;
static const TokenBatch *halves_at(void *ctx, int j) { return ((Halves *)ctx)->half[j]; }

static float *host(const ParamSet *ps, const float *buf) {
    float *h = xmalloc(sizeof(float) * ps->total);
    ps->be->download(h, buf, sizeof(float) * ps->total);
    return h;
}

/* ||(a − w0) − (b − w0)|| / ||b − w0|| over the tensors of ps but the attention key biases
 * b_k, whose gradient is 0 in exact arithmetic and which Adam moves by rounding noise alone (as
 * tests/dist/test_dist_equiv.c: lr·g / (|g| + eps) with |g| ~ 1e-9) */
static double update_diff(const ParamSet *ps, const float *a, const float *b, const float *w0) {
    double d = 0, u = 0;
    for (int k = 0; k < ps->n; k++) {
        const ParamSpec *sp = &ps->specs[k];
        size_t len = strlen(sp->name);
        if (len >= 4 && !strcmp(sp->name + len - 4, ".b_k")) continue;
        for (size_t i = sp->offset; i < sp->offset + sp->size; i++) {
            double ua = (double)a[i] - w0[i], ub = (double)b[i] - w0[i];
            d += (ua - ub) * (ua - ub), u += ub * ub;
        }
    }
    return u > 0 ? sqrt(d / u) : sqrt(d);
}

/* max |a − b| / max |b| over n floats */
static double rel_diff(const float *a, const float *b, size_t n) {
    double d = 0, m = 0;
    for (size_t i = 0; i < n; i++) {
        d = fmax(d, fabs((double)a[i] - b[i]));
        m = fmax(m, fabs((double)b[i]));
    }
    return m > 0 ? d / m : d;
}

static void run_case(const char *name, ModelType type) {
    Rng rng;
    rng_seed(&rng, 11, 5);
    Encoded e;
    test_random_encoded(&e, &rng, NPAIRS, MAXLEN, V);
    Config cfg;
    config_defaults(&cfg);
    cfg.model.type = type;
    if (type == MODEL_RNN) {
        cfg.model.attention = ATTN_LUONG_GENERAL;
        cfg.model.emb = 8, cfg.model.hidden = 8;
    } else {
        cfg.model.d_model = 8, cfg.model.heads = 2, cfg.model.d_ff = 16;
    }
    cfg.model.dropout = 0.0f;
    cfg.seed = 3, cfg.lr = 1e-2f, cfg.warmup_steps = 2, cfg.clip_norm = 0.0f;
    Err err;
    Model a, b;
    if (model_create(&a, &cfg.model, V, backend_cpu(), &err) ||
        model_create(&b, &cfg.model, V, backend_cpu(), &err)) {
        EXPECT(0, "%s: model_create: %s", name, err.msg);
        return;
    }
    model_init_params(&a, cfg.seed);
    model_init_params(&b, cfg.seed);
    int B = 2 * HALF, S = MAXLEN, T = MAXLEN + 1;
    TokenBatch whole, h0, h1;
    batch_alloc(&whole, B, S, T, (long)B * S, (long)B * T);
    batch_alloc(&h0, HALF, S, T, (long)HALF * S, (long)HALF * T);
    batch_alloc(&h1, HALF, S, T, (long)HALF * S, (long)HALF * T);
    model_reserve(&a, B, S, T, (long)B * S, (long)B * T);
    model_reserve(&b, B, S, T, (long)B * S, (long)B * T);
    Halves hv = {{&h0, &h1}};
    TrainState sa = {.epoch = 1, .lr_scale = 1.0, .best_score = -1.0}, sb = sa;
    size_t n = a.ps.total;
    float *w0 = host(&a.ps, a.ps.data);
    for (int step = 0; step < STEPS; step++) {
        if (step == 1) { /* from here on: clipping and the EMA, counted in optimizer steps */
            cfg.clip_norm = 1.0f, cfg.ema_decay = 0.9f;
            params_allocate_ema(&a.ps);
            params_allocate_ema(&b.ps);
        }
        long idx[2 * HALF];
        for (int i = 0; i < B; i++) idx[i] = (long)step * B + i;
        batch_fill(&whole, &e, idx, B);
        batch_fill(&h0, &e, idx, HALF);
        batch_fill(&h1, &e, idx + HALF, HALF);
        CHECK(h0.tgt_tokens + h1.tgt_tokens == whole.tgt_tokens, "halves' tokens");
        StepResult ra = train_step(&a, &cfg, &whole, &sa, NULL);
        StepResult rb = train_step_accum(&b, &cfg, 2, halves_at, &hv, whole.tgt_tokens, &sb, NULL,
                                         NULL);
        EXPECT(ra.finite && rb.finite, "%s step %d: non-finite", name, step + 1);
        EXPECT(fabs(ra.loss - rb.loss) <= 1e-6 * fabs(ra.loss), "%s step %d: loss %.9g whole, "
               "%.9g accumulated", name, step + 1, ra.loss, rb.loss);
        if (step == 0) {
            float *ga = host(&a.ps, a.ps.grad), *gb = host(&b.ps, b.ps.grad);
            double d = rel_diff(gb, ga, n);
            printf("%s: gradient of two accumulated halves against the whole batch: %.3g of the "
                   "largest\n", name, d);
            EXPECT(d <= 1e-5, "%s: accumulated gradient differs by %.3g", name, d);
            free(ga), free(gb);
        }
    }
    EXPECT(sa.step == STEPS && sb.step == STEPS && sb.adam_t == STEPS,
           "%s: optimizer steps %ld and %ld, adam_t %d; want %d", name, sa.step, sb.step,
           sb.adam_t, STEPS);
    float *wa = host(&a.ps, a.ps.data), *wb = host(&b.ps, b.ps.data);
    float *ea = host(&a.ps, a.ps.ema), *eb = host(&b.ps, b.ps.ema);
    double dw = update_diff(&a.ps, wb, wa, w0), de = update_diff(&a.ps, eb, ea, w0);
    printf("%s: after %d steps, the updates of the weights %.3g and of the EMA %.3g apart "
           "(relative, Euclidean)\n", name, STEPS, dw, de);
    EXPECT(dw <= 1e-4 && de <= 1e-4, "%s: weights %.3g, EMA %.3g apart after %d steps", name, dw,
           de, STEPS);
    free(wa), free(wb), free(ea), free(eb), free(w0);

    /* 2. controls: the tolerance above tells these apart */
    cfg.clip_norm = 0.0f, cfg.ema_decay = 0.0f;
    long idx[2 * HALF];
    for (int i = 0; i < B; i++) idx[i] = (long)STEPS * B + i;
    batch_fill(&whole, &e, idx, B);
    batch_fill(&h0, &e, idx, HALF);
    batch_fill(&h1, &e, idx + HALF, HALF);
    train_step(&a, &cfg, &whole, &sa, NULL);
    float *ga = host(&a.ps, a.ps.grad);
    TrainState sc = sb;
    train_step(&b, &cfg, &h1, &sc, NULL); /* the second half alone, its own normalisation */
    float *gc = host(&b.ps, b.ps.grad);
    double d1 = rel_diff(gc, ga, n);
    train_step_accum(&b, &cfg, 2, halves_at, &hv, h0.tgt_tokens, &sc, NULL, NULL);
    float *gd = host(&b.ps, b.ps.grad); /* normalised by the first half's tokens only */
    double d2 = rel_diff(gd, ga, n);
    printf("%s: controls: one half as a step %.3g, halves summed over one half's tokens %.3g\n",
           name, d1, d2);
    EXPECT(d1 > 1e-2 && d2 > 1e-2, "%s: the controls should differ (%.3g, %.3g)", name, d1, d2);
    free(ga), free(gc), free(gd);
    batch_free(&whole), batch_free(&h0), batch_free(&h1);
    model_free(&a), model_free(&b);
    encoded_free(&e);
}

int main(void) {
    run_case("rnn", MODEL_RNN);
    run_case("transformer", MODEL_TRANSFORMER);
    return test_report("test_accum");
}
