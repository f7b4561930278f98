/* model/rnn.h — the RNN encoder–decoder with attention (Bahdanau et al. 2015; Luong et al. 2015).
 *
 * Legend: B batch, S source length, T target length, E embedding, H decoder hidden size
 * (the bidirectional encoder has H/2 per direction, so its output h̄_s is H wide), V vocabulary,
 * L layers, K beam size. The batch arrives batch-major (a TokenBatch in backend memory,
 * core/tokens.h: src [B,S], tgt_in/tgt_out [B,T]); the recurrences run time-major, so the RNN
 * transposes the ids and the source mask on the device ([S,B], [T,B]) before it embeds them.
 *
 * Cells: LSTM (gate order i, f, g, o) or GRU (Cho et al. 2014; r, z, n, as cuDNN).
 * Encoder: embedding → L bidirectional layers (padding steps keep their state, so the backward
 * direction starts at each sentence's true end); h̄_s = [→h_s; ←h_s].
 * Decoder: embedding → L layers initialised from the encoder's final states (layer l gets
 * [→h_final; ←h_final] (and c) of encoder layer l when the layer counts match, zeros otherwise).
 * Attention (model.attention; any kind of the attention table, attention.h, through mha.h's
 * RnnAttn: keys and values h̄, the kind's own query/key transforms; the multi-head kinds (the
 * rows' multi_head: sdp, flash, ...) score h_t W_q against h̄ W_k in model.heads heads, values
 * h̄; one head for the others):
 *  - every kind whose row's rnn_prev_state is 0 (Luong et al. 2015 §3.1: luong_dot,
 *    luong_general, luong_concat and the multi-head kinds; luong_local below):
 *    attention on the current top state h_t gives c_t; h̃_t = tanh(W_c [c_t; h_t]) (eq. 5).
 *    With input feeding (§3.3) layer 0 reads [y_{t−1}; h̃_{t−1}] and everything runs step by
 *    step; without it layer 0 reads y_{t−1}, the RNN runs first and the attention then runs
 *    once over all T positions (one batched call).
 *  - bahdanau (Bahdanau et al. 2015 §3.1, eq. 4–6): the previous top state s_{t−1} (the initial
 *    state at t = 0) scores the source; layer 0 reads [y_{t−1}; c_t]; the output layer reads
 *    c_t too: h̃_t = tanh(W_c [c_t; s_t]).
 *  - luong_local (Luong et al. 2015 §3.2; one head): as the Luong kinds, over the window
 *    [p_t − D, p_t + D], p_t = t (the decoding step; the model sets Attention.pos0 per step) or
 *    predicted from h_t (attention/local.c).
 *  - none (Sutskever et al. 2014 with a bidirectional encoder): h̃_t = tanh(W_c h_t).
 * p(y_t) = softmax(W_out dropout(h̃_t) + b_out) (Luong eq. 6). Dropout (inverted) on
 * embeddings, between layers and on h̃.
 * Errors: rnn_create returns a Status; the other functions CHECK their capacity and workspace
 * (programmer errors: "batch larger than rnn_reserve'd capacity", "attention workspace too
 * small: rnn_reserve after setting the thread count", "decode step before rnn_decode_begin").
 */
#ifndef TRAINER_RNN_H
#define TRAINER_RNN_H

#include "attention/mha.h"
#include "core/tokens.h"
#include "model/spec.h"
#include "ops/params.h"
#include "ops/ops.h"

typedef struct {
    int gru;              /* 0 LSTM, 1 GRU */
    int in, h, G;         /* input size, hidden size, gate blocks (LSTM 4, GRU 3) */
    Param W_ih, W_hh, b;  /* [G·h, in], [G·h, h], [G·h] (GRU: b is b_ih) */
    Param b_hh;           /* GRU only: [3h] */
    /* W_hhᵀ [h, G·h] and (decoder layers) W_ihᵀ [in, G·h], backend memory (rnn_reserve):
     * copies refreshed at the start of every pass (rnn.c, transpose_weights) for the per-step
     * products, whose few rows (B) run up to 2× faster on the CPU's GEMMs with the weight not
     * transposed. */
    float *W_hhT, *W_ihT;
} RnnLayer;

typedef struct RnnModel RnnModel;

/* Creates the model spec describes, for a vocabulary of V, and declares its parameters in ps
 * (not yet allocated). It reads spec's emb (E), hidden (H, even), enc_layers, dec_layers,
 * dropout, cell, input_feeding, attention, heads (used by the multi-head kinds) and attn_opt
 * (the kinds' options: model.linformer_*, model.local_*; {0}: linformer's defaults, refused by
 * luong_local); its rnn_impl is rnn_set_impl's, its Transformer fields are unread. Errors
 * (STATUS_ERR): odd H ("model.hidden = … must be even"), more than 8 layers, an attention kind
 * or size this model cannot use (attention_supports' message), input feeding with bahdanau or
 * none ("model.input_feeding = true applies to …; set model.input_feeding = false"). */
Status rnn_create(RnnModel **out, ParamSet *ps, const ModelSpec *spec, int V, Err *err);
/* model.rnn_impl: cudnn != 0 runs the LSTM/GRU layers whose whole input is known through the
 * backend's cuDNN entries (ops.h rnn_seq_*): every encoder layer (both directions in one call),
 * and the decoder layers when the model has no input feeding and no bahdanau attention (their
 * layer 0 reads h̃_{t−1} or c_t, known only step by step), in the teacher-forced pass
 * (rnn_forward_backward; not with rnn_set_stepwise). Decoding steps always use our cells (one step
 * at a time; the same parameters). cudnn = 0 (own, the default) leaves every path as it was.
 * Call it after rnn_create and before rnn_reserve. Errors (STATUS_ERR): the backend has no cuDNN
 * entries ("model.rnn_impl = cudnn: the cpu backend has no cuDNN …; set model.rnn_impl = own"). */
Status rnn_set_impl(RnnModel *m, int cudnn, Err *err);
/* Ensures activation memory for batches of up to B sentences, S source and T target positions,
 * NS = B·S source tokens and NT = B·T target tokens (padding included). Grows only: the trainer
 * calls it once with the batcher's bounds, so the training step never allocates. Sizes the
 * attention workspace for the current thread count. No errors (be->alloc aborts). */
void rnn_reserve(RnnModel *m, int B, int S, int T, long NS, long NT);
/* Bytes of backend memory rnn_reserve holds (activations, the attention's saved tensors and
 * workspace, the output layer's). No errors. */
size_t rnn_activation_bytes(const RnnModel *m);
/* Frees what rnn_reserve allocated (the activations), keeping the parameters; capacity is zero
 * again, so the next rnn_reserve allocates for its own bounds, and until then a pass
 * CHECK-aborts (capacity). No errors. Source: — (memory layout only). */
void rnn_release(RnnModel *m);
/* Teacher-forced forward pass over b (arrays in backend memory); with train != 0 also dropout
 * (keyed by dropout_key) and the backward pass, accumulating into the parameter gradients scaled
 * by grad_scale. Returns the summed label-smoothed cross-entropy over non-pad targets (nats;
 * Szegedy et al. 2016 §7); the output layer and the loss run on b's tgt_row_tm positions only
 * (the non-padding targets, whose rows alone carry a gradient). CHECKs b within rnn_reserve and
 * the attention workspace. */
double rnn_forward_backward(RnnModel *m, const TokenBatch *b, float smoothing, int train,
                            uint64_t dropout_key, float grad_scale);
/* Test switch: with on != 0 the Luong attention without input feeding and the output layer run
 * step by step (as in decoding) instead of batched over all T positions; same mathematics.
 * No errors. */
void rnn_set_stepwise(RnnModel *m, int on);
/* The output layer and loss run on at most rows target rows at a time (model/output_loss.h;
 * 0, the default: as many as fit OUTPUT_LOSS_BLOCK_BYTES_CPU, or _CUDA, of logits). Same
 * mathematics; the sums into dW_out and db_out run in another order. Call it before
 * rnn_reserve (a CHECK). No errors. Source: — (memory layout only). */
void rnn_set_loss_rows(RnnModel *m, int rows);
/* The hook rnn_forward_backward's backward calls once the decoder, its attention and the output
 * layer are done (after the target embedding), after each encoder layer (top first), and last
 * with 0 (ops/params.h GradReady). No errors. */
void rnn_set_grad_ready(RnnModel *m, GradReady h);

/* ---- incremental decoding (eval/decode.c drives these through model.h) ----
 * rnn_decode_begin encodes b (b->tgt_* unused) and sets up K rows per sentence, row i·K + k
 * (K = 1 for greedy); needs rnn_reserve'd room for B·K sentences and 2·B·K target positions
 * (NT): a step keeps its states in one of two slots, t mod 2, as it reads only the step before,
 * so max_T is unbounded. Then for t = 0, 1, …:
 * rnn_decode_step feeds ids[B·K] (backend memory; BOS at t = 0) and returns the backend pointer
 * to [B·K, V] scores for y_t: log-probabilities if log_probs, else logits.
 * rnn_decode_reorder makes row r continue from row parent[r] (backend memory) after step t.
 * rnn_decode_attention returns the backend pointer to step t's weights [B·K, S] (averaged over
 * heads; recomputed on the host for the kinds that keep none; NULL without attention).
 * Source: Luong et al. 2015 §3.3 / Bahdanau et al. 2015 §3.1 (one step of the decoder above).
 * CHECKs: B·K rows, 2·B·K positions and S within rnn_reserve ("decode batch larger than
 * rnn_reserve'd capacity"); a step after a training pass and before the next decode_begin
 * ("decode step before rnn_decode_begin"). */
void rnn_decode_begin(RnnModel *m, const TokenBatch *b, int K);
const float *rnn_decode_step(RnnModel *m, int t, const int *ids, int log_probs);
void rnn_decode_reorder(RnnModel *m, int t, const int *parent);
const float *rnn_decode_attention(RnnModel *m, int t);
/* 1 if the model has an attention (model.attention != none). No errors. */
int rnn_has_attention(const RnnModel *m);
/* The decoder's attention (its kind, options and parameters), or NULL without one. No errors. */
const Attention *rnn_attention(const RnnModel *m);
/* Writes the backend ops the RNN calls beyond those every model calls (model.c lists those):
 * its cell's, its attention kind's and its shape ops, for training and decoding, to ops[]
 * (host, room for OP_COUNT); returns their number. No errors. */
int rnn_ops_used(const RnnModel *m, OpKind *ops);
/* Frees the model's activations and the model (NULL: nothing); parameters belong to the
 * ParamSet. */
void rnn_free(RnnModel *m);

#endif
