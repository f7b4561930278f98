/* model/spec.h — ModelSpec: what a model is, exactly the [model] section of a config (docs/design.md §1: a
 * model receives a ModelSpec, never a config file, tokenizer or trainer).
 *
 * train/config.h embeds it (Config.model) and its key table parses, validates, prints and
 * serialises these fields (model.type, model.hidden, ...); model_create (model/model.h) builds
 * the network it describes. Defaults and ranges are those of the key table in train/config_keys.c.
 * Legend: E embedding, H hidden, D model width, NH heads, F feed-forward width.
 */
#ifndef TRAINER_MODEL_SPEC_H
#define TRAINER_MODEL_SPEC_H

#include "attention/attention.h"

typedef enum { MODEL_RNN, MODEL_TRANSFORMER } ModelType;   /* names: rnn, transformer */
typedef enum { CELL_LSTM, CELL_GRU } CellType;             /* names: lstm, gru */
typedef enum { NORM_PRE, NORM_POST } NormPlace;            /* names: pre, post */
/* names: own, cudnn. Who runs the RNN's LSTM/GRU layers whose whole input is known (the encoder;
 * decoder layers without input feeding and without bahdanau): our cell kernels (own, the
 * verified default) or cuDNN on the GPU (cudnn; ops.h rnn_seq_forward). */
typedef enum { RNN_IMPL_OWN, RNN_IMPL_CUDNN } RnnImpl;

typedef struct ModelSpec {
    ModelType type;          /* model.type = rnn | transformer (default rnn) */
    CellType cell;           /* model.cell = lstm | gru (default lstm; rnn only) */
    AttentionKind attention; /* model.attention, a name of attention_kind_names (luong_general) */
    int emb;                 /* model.emb: embedding size E (256, 1..65536) */
    int hidden;              /* model.hidden: decoder hidden size H; the bidirectional encoder uses
                                H/2 per direction (512, 2..65536, even) */
    int enc_layers;          /* model.enc_layers (1, 1..16) */
    int dec_layers;          /* model.dec_layers (1, 1..16) */
    float dropout;           /* model.dropout: drop probability (0.3, [0, 1)) */
    int input_feeding;       /* model.input_feeding bool, 0/1 (true; needs an attention) */
    RnnImpl rnn_impl;        /* model.rnn_impl = own | cudnn (own; rnn only, train.device = cuda,
                                a build with cuDNN) */
    /* Transformer (model.type = transformer) */
    int d_model;             /* model.d_model: model width D (256, 2..65536) */
    int heads;               /* model.heads: attention heads NH, dividing d_model (4, 1..256) */
    int d_ff;                /* model.d_ff: feed-forward width F (1024, 1..1048576) */
    NormPlace norm;          /* model.norm = pre | post: layer norm before or after each
                                sub-layer's residual (pre) */
    int tie_embeddings;      /* model.tie_embeddings bool: one matrix for the source and target
                                embeddings and the output layer (true) */
    AttentionKind self_attention;     /* model.self_attention (sdp): encoder self-attention,
                                         and the decoder's unless dec_self_attention is set */
    AttentionKind dec_self_attention; /* model.dec_self_attention: "same" (ATTN_NONE) = as
                                         self_attention, else a kind with a causal form */
    AttentionKind cross_attention;    /* model.cross_attention (sdp) */
    /* the kinds' options: model.linformer_k (r, 32, 1..4096), model.linformer_max_len (n, 128,
     * 1..100000), model.linformer_share = none | headwise | kv | layerwise (none; layerwise is
     * refused) — used where a slot (or the RNN's model.attention) is linformer; luong_local
     * (Luong et al. 2015 §3.2): model.local_window = D (10, 1..1000), model.local_mode =
     * monotonic | predictive (predictive), model.local_score = dot | general | concat |
     * scaled_dot (general) */
    AttentionOptions attn_opt;
} ModelSpec;

/* The decoder self-attention's kind: dec_self_attention, or self_attention when "same".
 * No errors. Source: —. */
static inline AttentionKind spec_dec_self_attention(const ModelSpec *s) {
    return s->dec_self_attention == ATTN_NONE ? s->self_attention : s->dec_self_attention;
}

#endif
