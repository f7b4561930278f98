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
#include "testutil.h"
#include "train/config.h"
#include "train/optim.h"

enum { B = 3, S = 5, T = 4, V = 23 };

typedef struct {
    const char *name;
    ModelSpec spec;
} Case;

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

static ModelSpec rnn_spec(AttentionKind kind, int gru, int feed) {
    ModelSpec s = {0};
    s.type = MODEL_RNN, s.cell = gru ? CELL_GRU : CELL_LSTM, s.attention = kind;
    s.emb = 6, s.hidden = 8, s.enc_layers = 2, s.dec_layers = 2, s.dropout = 0.1f;
    s.input_feeding = feed, s.heads = 2;
    return s;
}

static ModelSpec tf_spec(AttentionKind self, AttentionKind dec_self, AttentionKind cross) {
    ModelSpec s = {0};
    s.type = MODEL_TRANSFORMER, s.d_model = 8, s.heads = 2, s.d_ff = 16;
    s.enc_layers = 2, s.dec_layers = 2, s.dropout = 0.1f, s.norm = NORM_PRE;
    s.tie_embeddings = 1, s.self_attention = self, s.dec_self_attention = dec_self;
    s.cross_attention = cross;
    return s;
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    /* time-major fixtures (test_token_batch lays them out batch-major) */
    int src_len[B] = {5, 3, 4}, tgt_len[B] = {4, 2, 3}; /* tgt_len: BOS + words */
    int src[S * B], tin[T * B], tout[T * B];
    for (int t = 0; t < S; t++)
        for (int b = 0; b < B; b++) src[t * B + b] = t < src_len[b] ? 4 + (7 * t + 5 * b) % (V - 4) : TOKEN_PAD;
    for (int t = 0; t < T; t++)
        for (int b = 0; b < B; b++) {
            tin[t * B + b] = t == 0 ? TOKEN_BOS : t < tgt_len[b] ? 4 + (3 * t + 11 * b) % (V - 4) : TOKEN_PAD;
            tout[t * B + b] = t + 1 < tgt_len[b] ? 4 + (3 * (t + 1) + 11 * b) % (V - 4)
                            : t + 1 == tgt_len[b] ? TOKEN_EOS : TOKEN_PAD;
        }
    TokenBatch tb, sb;
    test_token_batch(&tb, B, S, T, src, src_len, tin, tout);
    test_token_batch(&sb, B, S, 0, src, src_len, NULL, NULL);

    const Case cases[] = {
        {"rnn lstm none", rnn_spec(ATTN_NONE, 0, 0)},
        {"rnn lstm luong_general input feeding", rnn_spec(ATTN_LUONG_GENERAL, 0, 1)},
        {"rnn gru luong_dot batched", rnn_spec(ATTN_LUONG_DOT, 1, 0)},
        {"rnn gru bahdanau", rnn_spec(ATTN_BAHDANAU, 1, 0)},
        {"rnn lstm luong_concat", rnn_spec(ATTN_LUONG_CONCAT, 0, 1)},
        {"rnn lstm sdp", rnn_spec(ATTN_SDP, 0, 1)},
        {"rnn lstm flash", rnn_spec(ATTN_FLASH, 0, 0)},
        {"rnn gru linear", rnn_spec(ATTN_LINEAR, 1, 1)},
        {"rnn lstm efficient", rnn_spec(ATTN_EFFICIENT, 0, 0)},
        {"transformer sdp", tf_spec(ATTN_SDP, ATTN_NONE, ATTN_SDP)},
        {"transformer flash / linear / luong_general", tf_spec(ATTN_FLASH, ATTN_LINEAR, ATTN_LUONG_GENERAL)},
        {"transformer efficient / sdp / bahdanau", tf_spec(ATTN_EFFICIENT, ATTN_SDP, ATTN_BAHDANAU)},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_case(&cases[i], &tb, &sb);
    batch_free(&tb);
    batch_free(&sb);
    return test_report("test_model_ops");
}
