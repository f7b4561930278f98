/* test_rnn_cudnn.c — model.rnn_impl = cudnn against own on a real GPU: cuDNN cannot be
 * emulated (docs/design.md §11), so this is the only check of src/ops/cuda/rnn_cudnn.cu. Exit 77
 * (skipped) without a CUDA device, and in a build without cuDNN (nothing to compare; the SIMT
 * build is one); a build with cuDNN whose cuDNN does not start fails.
 *
 * For each case (LSTM and GRU; decoders that run through cuDNN — no input feeding, luong or none
 * — and decoders that keep our cells — input feeding, bahdanau — so the encoder alone uses
 * cuDNN; equal and unequal layer counts), two tiny models are built on the GPU from the same
 * seed, one with rnn_impl = own and one with cudnn, and on the padded batch of model_cases.h:
 *   1. one training forward/backward (dropout on: the same masks on both): the loss to REL_LOSS
 *      relative, every parameter gradient to REL_GRAD normwise relative error
 *      max|cudnn − own| / max|own| per tensor (a tensor whose gradient is only rounding noise
 *      on both sides — below NULL_REL of the largest gradient, e.g. the attention key bias —
 *      is reported and left out);
 *   2. the evaluation loss (train = 0: cuDNN's inference mode) to REL_LOSS;
 *   3. STEPS Adam steps on both, each step's loss to REL_LOSS_STEPS;
 *   4. greedy decoding from the trained models (the encoder through cuDNN in inference mode,
 *      decoding steps through our cells on both) gives the same tokens.
 * Tolerances: both sides are float32 on the same GPU with fp32 products (train.precision = fp32:
 * cuBLAS without tensor cores, cuDNN with CUDNN_FMA_MATH); only the order of the sums differs,
 * hence the bounds of tests/model/test_model_cuda.c (CUDA against CPU): 1e-5 for the loss, 1e-4
 * for gradients, 1e-4 for losses after training steps.
 * Legend: B sentences, S source length, T target length, V vocabulary (model_cases.h).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/batch.h"
#include "eval/decode.h"
#include "model/model.h"
#include "model/model_cases.h"
#include "ops/cuda/cuda.h"
#include "testutil.h"
#include "train/config.h"
#include "train/optim.h"

enum { STEPS = 5 };
static const double REL_LOSS = 1e-5, REL_GRAD = 1e-4, REL_LOSS_STEPS = 1e-4, NULL_REL = 1e-6;

static double loss_step(Model *m, const TokenBatch *tb, const Config *cfg, int t, int train,
                        int update) {
    params_zero_grad(&m->ps);
    double loss = model_loss(m, tb, 0.1f, train, 99 + (uint64_t)t, 1.0f / (float)tb->tgt_tokens);
    if (update) {
        optim_clip(&m->ps, optim_grad_norm(&m->ps), 0.5f);
        optim_adam(&m->ps, cfg, 1e-3, t);
    }
    return loss;
}

static void check_case(const char *name, ModelSpec spec, const Backend *gpu, const TokenBatch *tb,
                       const TokenBatch *sb) {
    Model own, cud;
    Err err;
    spec.rnn_impl = RNN_IMPL_OWN;
    if (model_create(&own, &spec, V, gpu, &err)) {
        EXPECT(0, "%s own: %s", name, err.msg);
        return;
    }
    spec.rnn_impl = RNN_IMPL_CUDNN;
    if (model_create(&cud, &spec, V, gpu, &err)) {
        EXPECT(0, "%s cudnn: %s", name, err.msg);
        model_free(&own);
        return;
    }
    Model *ms[2] = {&own, &cud};
    for (int i = 0; i < 2; i++) {
        model_init_params(ms[i], 7);
        model_reserve(ms[i], B, S, 2 * S + 10, (long)B * S, (long)B * (2 * S + 10));
    }
    Config cfg;
    config_defaults(&cfg);
    const ParamSet *ps = &own.ps;
    size_t total = ps->total;

    /* 1. loss and every gradient */
    double lo = loss_step(&own, tb, &cfg, 1, 1, 0), lc = loss_step(&cud, tb, &cfg, 1, 1, 0);
    double el = fabs(lc - lo) / fabs(lo);
    EXPECT(isfinite(lc) && el < REL_LOSS, "%s: training loss %.9g cudnn, %.9g own (rel %.3g)",
           name, lc, lo, el);
    float *go = test_to_host(gpu, own.ps.grad, total), *gc = test_to_host(gpu, cud.ps.grad, total);
    double gmax = 0.0, worst = 0.0;
    for (size_t j = 0; j < total; j++)
        if (fabs((double)go[j]) > gmax) gmax = fabs((double)go[j]);
    for (int i = 0; i < ps->n; i++) {
        const ParamSpec *sp = &ps->specs[i];
        double dmax = 0.0, omax = 0.0, cmax = 0.0;
        for (size_t j = sp->offset; j < sp->offset + sp->size; j++) {
            double d = fabs((double)gc[j] - (double)go[j]);
            dmax = test_max_nan(dmax, d);
            if (fabs((double)go[j]) > omax) omax = fabs((double)go[j]);
            if (fabs((double)gc[j]) > cmax) cmax = fabs((double)gc[j]);
        }
        if (omax <= NULL_REL * gmax && cmax <= NULL_REL * gmax) {
            printf("  %s: %s: gradient %.3g own, %.3g cudnn: rounding noise, not compared\n", name,
                   sp->name, omax, cmax);
            continue;
        }
        double e = omax > 0.0 ? dmax / omax : dmax;
        EXPECT(e < REL_GRAD, "%s: gradient of %s: error %.3g (max |own| %.3g, tolerance %.1g)",
               name, sp->name, e, omax, REL_GRAD);
        if (!(e <= worst)) worst = e;
    }
    free(go), free(gc);

    /* 2. evaluation loss (inference mode) */
    double vo = loss_step(&own, tb, &cfg, 1, 0, 0), vc = loss_step(&cud, tb, &cfg, 1, 0, 0);
    double ev = fabs(vc - vo) / fabs(vo);
    EXPECT(isfinite(vc) && ev < REL_LOSS, "%s: evaluation loss %.9g cudnn, %.9g own", name, vc,
           vo);

    /* 3. training steps */
    double worst_step = 0.0;
    for (int t = 1; t <= STEPS; t++) {
        lo = loss_step(&own, tb, &cfg, t, 1, 1);
        lc = loss_step(&cud, tb, &cfg, t, 1, 1);
        double e = fabs(lc - lo) / fabs(lo);
        if (!(e <= worst_step)) worst_step = e;
        EXPECT(isfinite(lc) && e < REL_LOSS_STEPS, "%s: step %d loss %.9g cudnn, %.9g own", name,
               t, lc, lo);
    }

    /* 4. greedy decoding */
    int maxT = 2 * S + 10;
    int *io = xcalloc((size_t)B * maxT, sizeof(int)), *ic = xcalloc((size_t)B * maxT, sizeof(int));
    decode_greedy(&own, sb, maxT, io, NULL);
    decode_greedy(&cud, sb, maxT, ic, NULL);
    EXPECT(memcmp(io, ic, sizeof(int) * (size_t)B * maxT) == 0, "%s: greedy tokens differ", name);
    free(io), free(ic);
    printf("%s: loss rel %.2g, gradients rel <= %.2g, eval loss rel %.2g, %d steps: loss rel "
           "<= %.2g; greedy compared\n", name, el, worst, ev, STEPS, worst_step);
    model_free(&cud);
    model_free(&own);
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    char msg[512] = "";
    const Backend *gpu = backend_cuda(msg, sizeof msg);
    if (!gpu) {
        printf("test_rnn_cudnn: skipped: %s\n", msg);
        return 77;
    }
    if (!backend_cuda_has_cudnn()) {
        printf("test_rnn_cudnn: skipped: this build has no cuDNN (%s)\n",
               backend_cuda_emulated() ? "the SIMT emulation" : "not found at build time");
        return 77;
    }
    EXPECT(gpu->rnn_seq_forward && gpu->rnn_seq_backward && gpu->rnn_seq_sizes,
           "built with cuDNN, but cuDNN did not start on this GPU");
    if (!gpu->rnn_seq_forward) return test_report("test_rnn_cudnn");
    (void)model_cases; /* model_cases.h's table: the Transformer cases do not apply here */
    TokenBatch tb, sb;
    model_case_batches(&tb, &sb);
    struct {
        const char *name;
        ModelSpec spec;
    } cases[] = {
        {"lstm none (encoder + decoder cudnn)", rnn_spec(ATTN_NONE, 0, 0)},
        {"lstm luong_general batched (encoder + decoder cudnn)",
         rnn_spec(ATTN_LUONG_GENERAL, 0, 0)},
        {"gru luong_dot batched (encoder + decoder cudnn)", rnn_spec(ATTN_LUONG_DOT, 1, 0)},
        {"lstm luong_general input feeding (encoder cudnn)", rnn_spec(ATTN_LUONG_GENERAL, 0, 1)},
        {"gru bahdanau (encoder cudnn)", rnn_spec(ATTN_BAHDANAU, 1, 0)},
        {"gru flash batched (encoder + decoder cudnn)", rnn_spec(ATTN_FLASH, 1, 0)},
        {"lstm efficient, 2 encoder / 1 decoder layers", rnn_spec(ATTN_EFFICIENT, 0, 0)},
    };
    int n = (int)(sizeof cases / sizeof cases[0]);
    cases[n - 1].spec.dec_layers = 1; /* unequal counts: zero initial decoder state */
    for (int i = 0; i < n; i++) check_case(cases[i].name, cases[i].spec, gpu, &tb, &sb);
    batch_free(&tb);
    batch_free(&sb);
    return test_report("test_rnn_cudnn");
}
