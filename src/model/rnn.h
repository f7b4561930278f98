/* rnn.h — the RNN encoder–decoder with attention (Luong et al. 2015).
 *
 * Legend: B batch, S source length, T target length, E embedding, H decoder hidden size
 * (the bidirectional encoder has H/2 per direction, so its output h̄_s is H wide), V vocabulary,
 * L layers. Token arrays are time-major: src[S,B], tgt_in[T,B], tgt_out[T,B].
 *
 * Encoder: embedding → L bidirectional LSTM layers (padding steps keep their state, so the
 * backward direction starts at each sentence's true end); h̄_s = [→h_s; ←h_s].
 * Decoder: embedding → L LSTM layers initialised from the encoder's final states (layer l gets
 * [→h_final; ←h_final] of encoder layer l when the layer counts match, zeros otherwise); input
 * feeding (§3.3): layer 0 reads [y_{t-1}; h̃_{t-1}]; attention on the top state h_t gives c_t;
 * h̃_t = tanh(W_c [c_t; h_t]) (eq. 5); p(y_t) = softmax(W_out dropout(h̃_t) + b_out) (eq. 6).
 * Dropout (inverted) on embeddings, between layers and on h̃.
 */
#ifndef TRAINER_RNN_H
#define TRAINER_RNN_H

#include "attention/rnn_attention.h"
#include "model/params.h"
#include "ops/ops.h"

typedef struct {
    Param W_ih, W_hh, b; /* [4h, in], [4h, h], [4h] */
    int in, h;
} LstmLayer;

typedef struct {
    int B, S, T;
    const int *src;       /* [S,B] backend memory */
    const int *src_len;   /* [B] backend memory */
    const float *src_mask; /* [S,B] backend memory: 1 real token, 0 padding */
    const int *tgt_in;    /* [T,B] backend memory: BOS y_1 .. y_n, pad */
    const int *tgt_out;   /* [T,B] backend memory: y_1 .. y_n EOS, pad */
} RnnBatch;

typedef struct RnnModel RnnModel;

/* Creates the model and declares its parameters in ps (not yet allocated). Errors: a cell,
 * attention kind or size this model cannot use, with the reason. */
Status rnn_create(RnnModel **out, ParamSet *ps, int V, int E, int H, int enc_layers,
                  int dec_layers, float dropout, int input_feeding, AttentionKind attention,
                  Err *err);
/* Ensures activation memory for batches of up to B sentences, S source and T target positions,
 * NS = B·S source tokens and NT = B·T target tokens (padding included). Grows only: the trainer
 * calls it once with the batcher's bounds, so the training step never allocates. */
void rnn_reserve(RnnModel *m, int B, int S, int T, long NS, long NT);
/* Teacher-forced forward pass; with train != 0 also dropout (keyed by dropout_key) and the
 * backward pass, accumulating into the parameter gradients scaled by grad_scale.
 * Returns the summed label-smoothed cross-entropy over non-pad targets (nats). */
double rnn_forward_backward(RnnModel *m, const RnnBatch *b, float smoothing, int train,
                            uint64_t dropout_key, float grad_scale);
/* Greedy decoding of a batch (b->tgt_* unused): out_ids[B * max_T] (host) receives each
 * sentence's ids up to and including EOS (then PAD). attn_out (host, may be NULL) receives
 * weights [B, max_T, S]. */
void rnn_greedy(RnnModel *m, const RnnBatch *b, int max_T, int *out_ids, float *attn_out);
void rnn_free(RnnModel *m);

#endif
