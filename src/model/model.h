/* model/model.h — a translation model as the trainer, evaluator and translator see it: the ModelSpec
 * it was built from (model/spec.h), its vocabulary size, backend, parameters and network, and the
 * backend buffers a batch is uploaded into. spec.type chooses the RNN encoder–decoder
 * (model/rnn.h) or the Transformer (model/transformer.h); everything here dispatches to the one
 * built. A model knows no config file, tokenizer or trainer (docs/design.md §1): the caller loads the
 * SentencePiece model and chooses the backend.
 *
 * Legend: B batch, S source length, T target length. A batch is a batch-major TokenBatch
 * (core/tokens.h), built on the host and uploaded once per call into the model's mirror of it
 * in backend memory, which the RNN and the Transformer read. Units: losses in nats (summed over
 * target tokens), sizes in tokens/sentences. Sources: rnn.h and transformer.h.
 * Errors: model_create / model_declare return a Status; the rest CHECK their capacity
 * ("batch larger than model_reserve'd capacity", the model's own decoding CHECKs) and have no
 * input errors.
 */
#ifndef TRAINER_MODEL_H
#define TRAINER_MODEL_H

#include "core/tokens.h"
#include "ops/params.h"
#include "model/rnn.h"
#include "model/spec.h"
#include "model/transformer.h"

typedef struct {
    ModelSpec spec;
    const Backend *be;
    int V;         /* vocabulary size (the SentencePiece model's) */
    ParamSet ps;
    RnnModel *rnn;   /* model.type = rnn */
    TfModel *tf;     /* model.type = transformer */
    TokenBatch dev;  /* the current batch in backend memory, sized by model_reserve */
} Model;

/* Builds the model spec describes over a vocabulary of V pieces on backend be (the caller's
 * choice: train.device, backend_open): declares and allocates parameters (zero; call
 * model_init_params or load a checkpoint). Errors (STATUS_ERR, message in err): those of
 * rnn_create / transformer_create (attention kind or sizes the slot cannot take, input feeding
 * without a current-state attention, too many layers, odd model.hidden), and an op the backend
 * lacks ("cuda backend: no …; use train.device = cpu", backend_require_ops); on error m is
 * left zeroed (nothing to free). */
Status model_create(Model *m, const ModelSpec *spec, int V, const Backend *be, Err *err);
/* model_create in two steps, for a loader that must check sizes before it allocates
 * (checkpoint_load, docs/design.md §8): model_declare does all of model_create except allocating the
 * parameter buffers — m->ps then holds every tensor's name and shape, and ps.total, while
 * ps.data is NULL — and model_allocate allocates them (zero). model_free works after either.
 * model_declare's errors are model_create's; model_allocate has none (be->alloc aborts). */
Status model_declare(Model *m, const ModelSpec *spec, int V, const Backend *be, Err *err);
void model_allocate(Model *m);
/* model_allocate for inference: the parameters alone (params_allocate_weights), without the
 * gradient and Adam buffers. Such a model runs model_loss with train = 0 and decodes; training
 * it CHECK-aborts ("model_loss(train) on a model allocated for inference"). No errors. */
void model_allocate_weights(Model *m);
/* Writes every backend op that training and decoding m call (its family's, its attention kinds',
 * those of every model, and the trainer's: clipping, Adam) to ops[] (room for 3·OP_COUNT; an op
 * may appear more than once) and returns their number. model_declare refuses a backend that
 * lacks one (backend_require_ops); tests/model/test_model_ops.c trains and decodes on a table
 * holding these ops alone. No errors. */
int model_ops_used(const Model *m, OpKind *ops);
/* Initialises parameters by their declared rule (RNN: uniform in [-0.1, 0.1]; Transformer:
 * Xavier-uniform matrices, unit layer-norm gains, zero biases) from a PRNG seeded by seed (the
 * trainer passes train.seed). Source: params.h (OpenNMT-py's param_init; Glorot & Bengio 2010).
 * No errors. */
void model_init_params(Model *m, uint64_t seed);
/* Reserves activations and the backend batch for batches within these bounds (see
 * rnn_reserve): B sentences, S source and T target positions, NS = B·S and NT = B·T tokens.
 * Grows only; model_loss then never allocates (model_decode_begin may, once, for the Transformer's
 * step buffers: model_reserve_decode). No errors. */
void model_reserve(Model *m, int B, int S, int T, long NS, long NT);
/* Bytes of backend memory model_reserve holds for training passes: the activations, what the
 * attentions save for backward and their workspace, the output layer's logits (not the
 * parameters, gradients, Adam state, the batch, the position table or a decoding state). The
 * plan of memory against length: an attention's extra memory is part of it. 0 before the first
 * model_reserve and after model_release. No errors. Source: — (memory layout only). */
size_t model_activation_bytes(const Model *m);
/* Frees what model_reserve allocated: the activations and the backend batch (not the parameters,
 * gradients or Adam state). Capacity is zero again: the next model_reserve (or
 * model_reserve_decode) allocates for its own bounds, and until then model_loss and
 * model_decode_begin CHECK-abort. The trainer calls it when training is over, before averaging
 * checkpoints, so that the validation after it holds only what validation needs. No errors.
 * Source: — (memory layout only). */
void model_release(Model *m);
/* The output layer and its loss run on at most rows target rows at a time, so that their
 * [rows, V] logits and gradient are all the memory they take (model/output_loss.h); 0, the
 * default: as many rows as fit OUTPUT_LOSS_BLOCK_BYTES_CPU, or _CUDA, of logits. The same
 * mathematics, with the sums into the output layer's weight gradients in another order. Tests
 * and bench_train --loss-rows set it; call it before model_reserve (a CHECK). No errors.
 * Source: — (memory layout only). */
void model_set_loss_rows(Model *m, int rows);
/* Reserves for decoding (model_decode_begin, targets T = 1) the n batches[i]: B sentences, S
 * source positions, T = the batch's max_T steps, NS = B·S, NT = B·max_T; K rows a sentence. The
 * RNN keeps a step's states in its training buffers, two steps at a time (rnn_decode_begin):
 * model_reserve(B·K, S, 2, NS·K, 2·B·K) over the batches' union. The Transformer reserves here
 * only its encoder's (B, S, NS), and plans its step buffers and caches per batch
 * (transformer_decode_plan), each at the largest size one batch needs; its next
 * model_decode_begin allocates them. Neither takes the decoder's training activations for max_T
 * steps or the output layer's [NT, V] logits. No errors. Source: — (memory layout only). */
void model_reserve_decode(Model *m, int K, const BatchBounds *batches, long n);
/* Uploads tb (host) into the model's backend batch and runs the teacher-forced pass: returns
 * the summed loss (nats) over target tokens; train != 0 adds dropout (keyed) and accumulates
 * gradients scaled by grad_scale (Luong et al. 2015 eq. 6 / Vaswani et al. 2017 §5.4 with label
 * smoothing, Szegedy et al. 2016 §7). CHECKs tb within model_reserve ("batch larger than
 * model_reserve'd capacity"). */
double model_loss(Model *m, const TokenBatch *tb, float smoothing, int train, uint64_t key,
                  float grad_scale);
/* The hook model_loss's backward pass calls as blocks of the model finish (ops/params.h
 * GradReady; rnn_set_grad_ready, transformer_set_grad_ready); h.fn NULL removes it. No errors. */
void model_set_grad_ready(Model *m, GradReady h);
/* Incremental decoding of tb's sources (uploaded as by model_loss; targets unused) with K rows
 * per sentence, at most max_T steps (rnn.h rnn_decode_*, transformer.h transformer_decode_*):
 * ids and parent are backend memory [B·K]; the returned scores [B·K, V] (log-probabilities in
 * nats if log_probs, else logits) and attention weights [B·K, S] (NULL without attention) are
 * backend memory, valid until the next call. model_reserve_decode (or a model_reserve for B·K
 * sentences and 2·B·K target tokens) must allow the batch: beyond it the model CHECK-aborts (a
 * programmer error); max_T is not bounded by the reserve. */
void model_decode_begin(Model *m, const TokenBatch *tb, int K, int max_T);
const float *model_decode_step(Model *m, int t, const int *ids, int log_probs);
void model_decode_reorder(Model *m, int t, const int *parent);
const float *model_decode_attention(Model *m, int t);
/* 1 if the model has an attention to show (RNN: model.attention != none; Transformer: the last
 * decoder layer's cross-attention), i.e. its kind has host weights or saves its weights
 * (luong_local); linformer has neither (0). No errors. */
int model_has_attention(const Model *m);
/* The longest source (in tokens, the sentence-end included) the model can read, or 0 for no
 * limit: model.linformer_max_len when an attention over the source (the encoder's
 * self-attention, the cross-attention, the RNN's attention) is linformer, whose projections
 * span that many positions. Callers refuse longer sources before model_loss /
 * model_decode_begin, naming the key (the model CHECK-aborts on them). No errors. */
int model_max_source_len(const Model *m);
/* STATUS_OK if a source of S tokens fits model_max_source_len, else STATUS_ERR with "a source of
 * S subword tokens is longer than model.linformer_max_len = n, ...; shorten it, or train with
 * model.linformer_max_len >= S" (callers prefix where: the line, the pair, the file). */
Status model_check_source_len(const Model *m, int S, Err *err);
/* Frees everything and zeroes *m; safe after a failed model_create / model_declare. */
void model_free(Model *m);

#endif
