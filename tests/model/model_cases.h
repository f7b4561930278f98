/* model_cases.h — the tiny models every model-level backend test runs (test_model_ops.c,
 * test_model_cuda.c): RNN cells × attention kinds and Transformer kinds per slot, and one fixed
 * batch of B sentences (source length S, target length T, vocabulary V) with padding.
 * Header-only (static functions): each test includes it once.
 */
#ifndef TRAINER_TEST_MODEL_CASES_H
#define TRAINER_TEST_MODEL_CASES_H

#include <assert.h>
#include <stdio.h>

#include "data/batch.h"
#include "model/spec.h"
#include "testutil.h"

/* MODEL_CASES_MAX: the fixed cases (at most MODEL_CASES_FIXED) and two for each kind of the
 * table without one of its own */
enum { B = 3, S = 5, T = 4, V = 23, MODEL_CASES_FIXED = 24 };
enum { MODEL_CASES_MAX = MODEL_CASES_FIXED + 2 * ATTN_KIND_COUNT };

typedef struct {
    const char *name;
    ModelSpec spec;
} Case;

static ModelSpec rnn_spec(AttentionKind kind, int gru, int feed) {
    ModelSpec s = {0};
    s.type = MODEL_RNN, s.cell = gru ? CELL_GRU : CELL_LSTM, s.attention = kind;
    s.emb = 6, s.hidden = 8, s.enc_layers = 2, s.dec_layers = 2, s.dropout = 0.1f;
    s.input_feeding = feed, s.heads = 2;
    return s;
}

/* luong_local (Luong et al. 2015 §3.2) with window D, mode and score */
static ModelSpec local_spec(int gru, int feed, int D, LocalMode mode, LocalScore score) {
    ModelSpec s = rnn_spec(ATTN_LUONG_LOCAL, gru, feed);
    s.attn_opt = (AttentionOptions){.local_window = D, .local_mode = mode, .local_score = score};
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

/* luong_local (predictive, concat, D = 2) in the encoder self-attention and the cross-attention */
static ModelSpec tf_local_spec(void) {
    ModelSpec s = tf_spec(ATTN_LUONG_LOCAL, ATTN_SDP, ATTN_LUONG_LOCAL);
    s.attn_opt = (AttentionOptions){
        .local_window = 2, .local_mode = LOCAL_PREDICTIVE, .local_score = LOCAL_SCORE_CONCAT};
    return s;
}

/* s with the kinds' options opt (model.linformer_*). */
static ModelSpec with_opt(ModelSpec s, AttentionOptions opt) {
    s.attn_opt = opt;
    return s;
}

/* Writes the cases into out[MODEL_CASES_MAX]; returns their count. */
static int model_cases(Case *out) {
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
        {"rnn gru taylor", rnn_spec(ATTN_TAYLOR, 1, 0)},
        {"rnn lstm luong_local predictive general input feeding",
         local_spec(0, 1, 1, LOCAL_PREDICTIVE, LOCAL_SCORE_GENERAL)},
        {"rnn gru luong_local monotonic dot batched",
         local_spec(1, 0, 1, LOCAL_MONOTONIC, LOCAL_SCORE_DOT)},
        {"rnn lstm luong_local predictive concat batched",
         local_spec(0, 0, 2, LOCAL_PREDICTIVE, LOCAL_SCORE_CONCAT)},
        {"transformer sdp", tf_spec(ATTN_SDP, ATTN_NONE, ATTN_SDP)},
        {"transformer flash / linear / luong_general",
         tf_spec(ATTN_FLASH, ATTN_LINEAR, ATTN_LUONG_GENERAL)},
        {"transformer efficient / sdp / bahdanau", tf_spec(ATTN_EFFICIENT, ATTN_SDP, ATTN_BAHDANAU)},
        {"transformer taylor / taylor / sdp", tf_spec(ATTN_TAYLOR, ATTN_TAYLOR, ATTN_SDP)},
        {"rnn lstm linformer", rnn_spec(ATTN_LINFORMER, 0, 1)}, /* defaults: r 32, n 128 */
        {"transformer linformer / sdp / linformer headwise r4 n8",
         with_opt(tf_spec(ATTN_LINFORMER, ATTN_SDP, ATTN_LINFORMER),
                  (AttentionOptions){.linformer_k = 4, .linformer_max_len = 8,
                                     .linformer_share = LINFORMER_SHARE_HEADWISE})},
        {"transformer luong_local / sdp / luong_local", tf_local_spec()},
        {"transformer luong_concat / sdp / luong_dot",
         tf_spec(ATTN_LUONG_CONCAT, ATTN_SDP, ATTN_LUONG_DOT)},
    };
    static_assert(sizeof cases / sizeof cases[0] <= MODEL_CASES_FIXED,
                  "model_cases: raise MODEL_CASES_FIXED (the callers' Case arrays)");
    int n = (int)(sizeof cases / sizeof cases[0]);
    for (int i = 0; i < n; i++) out[i] = cases[i];
    int rnn[ATTN_KIND_COUNT] = {0}, tf[ATTN_KIND_COUNT] = {0};
    for (int i = 0; i < n; i++) {
        const ModelSpec *m = &cases[i].spec;
        if (m->type == MODEL_RNN) rnn[m->attention] = 1;
        else tf[m->self_attention] = tf[m->dec_self_attention] = tf[m->cross_attention] = 1;
    }
    /* every other kind of the table, from its row: in the RNN (the u-th such kind: LSTM with
     * input feeding for even u, GRU batched for odd), and in every Transformer slot it allows
     * (the j-th of w such kinds in the encoder and cross slots, the next one, or itself, or
     * sdp in the causal decoder slot, by their causal forms) */
    static char names[2 * ATTN_KIND_COUNT][96];
    int nn = 0, w = 0;
    AttentionKind tfk[ATTN_KIND_COUNT];
    for (int k = 1, u = 0; k < ATTN_KIND_COUNT; k++) {
        if (!rnn[k]) {
            int gru = u++ & 1;
            snprintf(names[nn], sizeof names[nn], "rnn %s %s %s", gru ? "gru" : "lstm",
                     attention_kind_names[k], gru ? "batched" : "input feeding");
            out[n++] = (Case){names[nn++], rnn_spec((AttentionKind)k, gru, !gru)};
        }
        if (!tf[k]) tfk[w++] = (AttentionKind)k;
    }
    for (int j = 0; j < w; j++) {
        AttentionKind next = tfk[(j + 1) % w], dec = attention_row(next)->causal_ok ? next
                                                  : attention_row(tfk[j])->causal_ok ? tfk[j]
                                                                                      : ATTN_SDP;
        snprintf(names[nn], sizeof names[nn], "transformer %s / %s / %s",
                 attention_kind_names[tfk[j]], attention_kind_names[dec],
                 attention_kind_names[tfk[j]]);
        out[n++] = (Case){names[nn++], tf_spec(tfk[j], dec, tfk[j])};
    }
    /* every kind of the attention table in an RNN case and, but none, in a Transformer's slot */
    for (int i = 0; i < n; i++) {
        const ModelSpec *m = &out[i].spec;
        if (m->type == MODEL_RNN) rnn[m->attention] = 1;
        else tf[m->self_attention] = tf[m->dec_self_attention] = tf[m->cross_attention] = 1;
    }
    for (int k = 0; k < ATTN_KIND_COUNT; k++)
        EXPECT(rnn[k] && (k == ATTN_NONE || tf[k]), "model_cases: attention kind %s has no RNN "
               "case (%d) or no Transformer case (%d): add one", attention_kind_names[k], rnn[k],
               tf[k]);
    return n;
}

/* The training batch tb (B sentences, padded sources and targets) and the same sources alone,
 * sb, for decoding (test_token_batch lays the time-major fixtures out batch-major). */
static void model_case_batches(TokenBatch *tb, TokenBatch *sb) {
    int src_len[B] = {5, 3, 4}, tgt_len[B] = {4, 2, 3}; /* tgt_len: BOS + words */
    int src[S * B], tin[T * B], tout[T * B];
    for (int t = 0; t < S; t++)
        for (int b = 0; b < B; b++)
            src[t * B + b] = t < src_len[b] ? 4 + (7 * t + 5 * b) % (V - 4) : TOKEN_PAD;
    for (int t = 0; t < T; t++)
        for (int b = 0; b < B; b++) {
            tin[t * B + b] = t == 0 ? TOKEN_BOS
                           : t < tgt_len[b] ? 4 + (3 * t + 11 * b) % (V - 4)
                                            : TOKEN_PAD;
            tout[t * B + b] = t + 1 < tgt_len[b] ? 4 + (3 * (t + 1) + 11 * b) % (V - 4)
                            : t + 1 == tgt_len[b] ? TOKEN_EOS
                                                  : TOKEN_PAD;
        }
    test_token_batch(tb, B, S, T, src, src_len, tin, tout);
    test_token_batch(sb, B, S, 0, src, src_len, NULL, NULL);
}

#endif
