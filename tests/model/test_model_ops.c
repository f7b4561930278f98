/* test_model_ops.c — a model's list of backend ops (model_ops_used) is complete and enforced.
 *
 * For each model (RNN cells and attention kinds, Transformer kinds per slot):
 *  1. complete: on a copy of the CPU backend in which every op NOT in model_ops_used(m) is NULL,
 *     the model trains (forward, backward, clipping, Adam: the trainer's calls, train/optim.h),
 *     decodes greedily and with a beam of 3, and draws attention maps — a NULL op would crash, so
 *     reaching the end proves the list holds every op those paths call; the losses and tokens
 *     must equal those of the full CPU table;
 *  2. enforced: with one op of the list removed, model_create refuses, naming that op.
 * Legend: B sentences, S source length, T target length, V vocabulary.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "data/batch.h"
#include "eval/decode.h"
#include "model/model.h"
#include "ops/cpu/cpu.h"
#include "testutil.h"
#include "train/config.h"
#include "train/optim.h"
#include "model_cases.h"



/* The CPU table with every op outside ops[0..n) set to NULL (memory functions kept). */
static Backend minimal_backend(const OpKind *ops, int n) {
    Backend be = *backend_cpu();
    for (int op = 0; op < OP_COUNT; op++) {
        int used = 0;
        for (int i = 0; i < n && !used; i++) used = ops[i] == (OpKind)op;
        if (used) continue;
        void (*none)(void) = NULL;
        memcpy((char *)&be + op_offset((OpKind)op), &none, sizeof none);
    }
    be.name = "minimal";
    return be;
}

/* Two training steps (the trainer's: loss and gradients, norm, clip, Adam), then greedy and beam
 * decoding with attention maps; the losses and decoded ids are written to loss[2] and ids. */
static int run(const Case *c, const Backend *be, const TokenBatch *tb, const TokenBatch *src,
               double *loss, int *ids) {
    Model m;
    Err err;
    if (model_create(&m, &c->spec, V, be, &err)) {
        EXPECT(0, "%s on %s: %s", c->name, be->name, err.msg);
        return 1;
    }
    model_init_params(&m, 7);
    model_reserve(&m, B * 3, S, 2 * S + 10, (long)B * 3 * S, (long)B * 3 * (2 * S + 10));
    Config cfg;
    config_defaults(&cfg);
    for (int step = 1; step <= 2; step++) {
        params_zero_grad(&m.ps);
        loss[step - 1] = model_loss(&m, tb, 0.1f, 1, 99 + step, 1.0f / (float)tb->tgt_tokens);
        double norm = optim_grad_norm(&m.ps);
        optim_clip(&m.ps, norm, 0.5f);
        optim_adam(&m.ps, &cfg, 1e-3, step);
    }
    int maxT = 2 * S + 10;
    float *attn = xmalloc(sizeof(float) * B * maxT * S);
    float *maps = model_has_attention(&m) ? attn : NULL; /* none: no map to draw */
    decode_greedy(&m, src, maxT, ids, maps);
    decode_beam(&m, src, 3, 1.0f, maxT, ids + B * maxT, maps);
    free(attn);
    model_free(&m);
    return 0;
}

static void check_case(const Case *c, const TokenBatch *tb, const TokenBatch *src) {
    Model probe;
    Err err;
    if (model_declare(&probe, &c->spec, V, backend_cpu(), &err)) {
        EXPECT(0, "%s: %s", c->name, err.msg);
        return;
    }
    OpKind ops[3 * OP_COUNT];
    int n = model_ops_used(&probe, ops);
    model_free(&probe);

    /* 1. complete: the same results on the table that holds the listed ops alone */
    Backend be = minimal_backend(ops, n);
    int maxT = 2 * S + 10, nops = 0;
    for (int op = 0; op < OP_COUNT; op++) nops += supports_op(&be, (OpKind)op);
    double loss_full[2] = {0, 0}, loss_min[2] = {0, 0};
    int *ids_full = xcalloc((size_t)2 * B * maxT, sizeof(int));
    int *ids_min = xcalloc((size_t)2 * B * maxT, sizeof(int));
    if (run(c, backend_cpu(), tb, src, loss_full, ids_full) == 0 &&
        run(c, &be, tb, src, loss_min, ids_min) == 0) {
        EXPECT(loss_full[0] == loss_min[0] && loss_full[1] == loss_min[1] && isfinite(loss_min[1]),
               "%s: losses %.9g %.9g on the full table, %.9g %.9g on the minimal one", c->name,
               loss_full[0], loss_full[1], loss_min[0], loss_min[1]);
        EXPECT(memcmp(ids_full, ids_min, sizeof(int) * 2 * B * maxT) == 0,
               "%s: decoded tokens differ on the minimal table", c->name);
    }
    printf("%s: trains and decodes with %d of %d ops (loss %.6f -> %.6f)\n", c->name, nops,
           (int)OP_COUNT, loss_min[0] / tb->tgt_tokens, loss_min[1] / tb->tgt_tokens);
    free(ids_full);
    free(ids_min);

    /* 2. enforced: without any one listed op, model_create refuses and names it */
    for (int i = 0; i < n; i++) {
        Backend less = be;
        void (*none)(void) = NULL;
        memcpy((char *)&less + op_offset(ops[i]), &none, sizeof none);
        Model m;
        Status st = model_create(&m, &c->spec, V, &less, &err);
        char want[96];
        snprintf(want, sizeof want, "no %s", op_name(ops[i]));
        EXPECT(st != STATUS_OK && strstr(err.msg, want),
               "%s without %s: %s", c->name, op_name(ops[i]),
               st == STATUS_OK ? "accepted" : err.msg);
        if (st == STATUS_OK) model_free(&m);
    }
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    TokenBatch tb, sb;
    model_case_batches(&tb, &sb);

    Case cases[MODEL_CASES_MAX];
    int ncases = model_cases(cases);
    for (int i = 0; i < ncases; i++) check_case(&cases[i], &tb, &sb);
    batch_free(&tb);
    batch_free(&sb);
    return test_report("test_model_ops");
}
