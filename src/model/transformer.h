/* model/transformer.h — the Transformer encoder–decoder (Vaswani et al. 2017) with switchable
 * attention in each slot (attention/mha.h).
 *
 * Legend: B batch, S source length, T target length, D model width (model.d_model), NH heads,
 * HS = D/NH, F feed-forward width (model.d_ff), V vocabulary, L layers, K beam size.
 * Activations are batch-major, [B,S,D] and [B,T,D], as is the batch (a TokenBatch in backend
 * memory, core/tokens.h), which the model reads as it is.
 *
 *   x_0 = dropout(E[y] · √D + PE)                 sinusoidal positions (§3.5), embeddings (§3.4)
 *   encoder layer: self-attention (model.self_attention, source padding masked), FFN
 *   decoder layer: causal self-attention (model.dec_self_attention), cross-attention on the
 *                  encoder output (model.cross_attention, source padding masked), FFN
 *   FFN(a) = W_2 dropout(relu(W_1 a + b_1)) + b_2  (eq. 2; the inner dropout as in PyTorch's
 *            nn.TransformerEncoderLayer)
 *   each sub-layer f with residual dropout (§5.4):
 *     pre-LN (default):  x ← x + dropout(f(LN(x)))       final LN after each stack
 *     post-LN (§3.1):    x ← LN(x + dropout(f(x)))
 *   p(y_t) = softmax(y_t W_outᵀ + b_out); with tied embeddings one matrix E [V,D] serves the
 *   source and target embeddings and W_out (§3.4, shared SentencePiece vocabulary).
 * No dropout on attention weights (flash and linear attention never form them).
 * Training lives in transformer.c, incremental decoding in transformer_decode.c (both share
 * transformer_internal.h). Errors: transformer_create returns a Status; the rest CHECK their
 * capacity ("batch larger than transformer_reserve'd capacity", "decoding past
 * transformer_decode_begin's max_T") — programmer errors.
 */
#ifndef TRAINER_TRANSFORMER_H
#define TRAINER_TRANSFORMER_H

#include "attention/mha.h"
#include "core/tokens.h"
#include "model/spec.h"
#include "ops/params.h"
#include "ops/ops.h"

typedef struct TfModel TfModel;

/* The spec m was created with (its kinds and their options). No errors. */
const ModelSpec *transformer_spec(const TfModel *m);

/* Creates the model spec describes, for a vocabulary of V, and declares its parameters in ps
 * (not yet allocated). It reads spec's d_model (D), heads (NH), d_ff (F), enc_layers,
 * dec_layers, dropout, norm, tie_embeddings, self_attention, dec_self_attention ("same": as
 * self_attention; spec_dec_self_attention), cross_attention and attn_opt (the kinds' options:
 * model.linformer_*, model.local_*); its RNN fields are unread. Errors: a kind that cannot
 * serve in its slot (efficient in the causal decoder self-attention, none), heads that do not
 * divide D, more than 16 layers — each with the config key to change (STATUS_ERR). */
Status transformer_create(TfModel **out, ParamSet *ps, const ModelSpec *spec, int V,
                          Err *err);
/* Ensures activation memory for batches of up to B sentences, S source and T target positions,
 * NS source and NT target tokens (padding included). Grows only; no allocation after it in
 * the training step. Positions beyond max(S, T) are not supported. No errors. */
void transformer_reserve(TfModel *m, int B, int S, int T, long NS, long NT);
/* Bytes of backend memory transformer_reserve holds for training passes: every activation, the
 * attention ops' saved tensors and workspace, the output layer's. No errors. */
size_t transformer_activation_bytes(const TfModel *m);
/* The part of transformer_activation_bytes that depends on the attention kinds: what every
 * attention saves for its backward (attention_save_floats: sdp's weights, NH·N·Tk floats; a local
 * window's 2W + 2 a query; flash's row statistics) and the attention ops' shared workspace (the
 * largest any layer's call asks for), in bytes; the queries, keys, values and outputs, the same
 * for every kind, are not counted. A kind's extra memory against length. 0 before the first
 * transformer_reserve and after transformer_release. No errors. Source: — (memory layout only). */
size_t transformer_attention_bytes(const TfModel *m);
/* Frees what transformer_reserve allocated (the training activations), keeping the parameters,
 * the positions and decoding's step buffers; capacity is zero again, so the next
 * transformer_reserve allocates for its own bounds, and until then a pass or a decode_begin
 * CHECK-aborts (capacity). No errors. Source: — (memory layout only). */
void transformer_release(TfModel *m);
/* The hook transformer_loss's backward calls after the output layer, the decoder's final layer
 * norm, each decoder layer (top first), the target embedding (untied), the encoder's final layer
 * norm and each encoder layer, and last with 0 (ops/params.h GradReady). No errors. */
void transformer_set_grad_ready(TfModel *m, GradReady h);
/* Runs the teacher-forced pass over b (arrays in backend memory): returns the summed
 * label-smoothed cross-entropy over non-pad targets (nats); train != 0 adds dropout (keyed by
 * dropout_key) and accumulates the parameter gradients scaled by grad_scale. The output layer
 * runs on b's tgt_row positions only. Source: Vaswani et al. 2017 §3, §5.4 (label smoothing,
 * Szegedy et al. 2016 §7). CHECKs b within transformer_reserve. */
double transformer_loss(TfModel *m, const TokenBatch *b, float smoothing, int train,
                        uint64_t dropout_key, float grad_scale);
/* Backend pointer to the last transformer_loss's logits [R,V] (tests): the output layer runs
 * only on the target positions whose tgt_out is not padding, so when the batch has some (and
 * at least one real target) R is their number and the rows are those positions in (b, t)
 * order; else R = B·T, batch-major [B,T,V]. *rows receives R. CHECKs that the last loss ran in
 * one block of rows (transformer_set_loss_rows). */
const float *transformer_logits(const TfModel *m, int *rows);
/* The output layer and loss run on at most rows target rows at a time (model/output_loss.h;
 * 0, the default: as many as fit OUTPUT_LOSS_BLOCK_BYTES_CPU, or _CUDA, of logits). Same
 * mathematics; the sums into dW_out and db_out run in another order. Call it before
 * transformer_reserve (a CHECK). No errors. Source: — (memory layout only). */
void transformer_set_loss_rows(TfModel *m, int rows);

/* ---- incremental decoding (eval/decode.c drives these through model.h) ----
 * decode_begin encodes b's sources (backend memory; at most max_T steps will follow), projects
 * every decoder layer's cross-attention keys and values once, and sets up K rows per sentence (row i·K + k reads sentence i); then for
 * t = 0, 1, …: decode_step feeds ids[B·K] (backend memory; BOS at t = 0), appends each
 * layer's self-attention key and value to its cache (or, for linear self-attention, adds them
 * to the running state: O(1) per token) and returns [B·K, V] scores for y_t (log-probabilities
 * if log_probs, else logits); the cost of step t is O(t) (O(1) for linear), not O(t²).
 * decode_reorder makes row r continue from row parent[r] (backend memory; parents within the
 * same sentence's K rows) after step t; decode_attention returns step t's cross-attention
 * weights of the last decoder layer, averaged over heads, [B·K, S] (backend memory). Steps
 * beyond max_T are a programmer error (CHECK "decoding past transformer_decode_begin's max_T").
 * decode_begin allocates its caches (grow-only); the steps allocate nothing. Source: Vaswani et
 * al. 2017 §3 (decoder), Katharopoulos et al. 2020 §3.4 (linear's recurrent form). */
void transformer_decode_begin(TfModel *m, const TokenBatch *b, int K, int max_T);
/* Plans a later transformer_decode_begin of B sentences, K rows each, S source positions and
 * max_T steps: grows the decoding buffers' sizes without allocating, so that the next
 * decode_begin allocates once for every batch planned (each buffer at the largest size any of
 * them needs). No errors. Source: — (memory layout only). */
void transformer_decode_plan(TfModel *m, int B, int K, int S, int max_T);
const float *transformer_decode_step(TfModel *m, int t, const int *ids, int log_probs);
void transformer_decode_reorder(TfModel *m, int t, const int *parent);
const float *transformer_decode_attention(TfModel *m, int t);
/* Writes the backend ops the Transformer calls beyond those every model calls (model.c lists
 * those): layer norm, the FFN, head permutes, decoding caches and the attention kind of each
 * slot (an op may appear more than once), to ops[] (room for 2·OP_COUNT); returns their
 * number. No errors. */
int transformer_ops_used(const TfModel *m, OpKind *ops);
/* Frees activations, decoding caches and the model (NULL: nothing); parameters belong to the
 * ParamSet. */
void transformer_free(TfModel *m);

#endif
