/* attention.h — attention kinds, switchable from the config (DESIGN.md §4).
 *
 * Legend: B batch, NH heads, Tq query positions, Tk key positions, HS head size,
 * H decoder hidden size, Hk key/value size (the encoder output size).
 *
 * One calling convention for all kinds: queries q [B, NH, Tq, HS], keys k [B, NH, Tk, HS],
 * values v [B, NH, Tk, HS], key lengths (padding mask) and a causal flag; output [B, NH, Tq, HS],
 * weights [B, NH, Tq, Tk] optional. The RNN decoder calls with NH = 1 and Tq = 1 per step.
 */
#ifndef TRAINER_ATTENTION_H
#define TRAINER_ATTENTION_H

#include "common.h"

typedef enum AttentionKind {
    ATTN_NONE = 0,
    ATTN_BAHDANAU,       /* Bahdanau et al. 2015, additive: vᵀ tanh(W s + U h) */
    ATTN_LUONG_DOT,      /* Luong et al. 2015 eq. 8, dot: h_tᵀ h̄_s */
    ATTN_LUONG_GENERAL,  /* Luong et al. 2015 eq. 8, general: h_tᵀ W_a h̄_s */
    ATTN_LUONG_CONCAT,   /* Luong et al. 2015 eq. 8, concat: v_aᵀ tanh(W_a [h_t; h̄_s]) */
    ATTN_SDP,            /* Vaswani et al. 2017 §3.2.1, scaled dot-product, multi-head */
    ATTN_FLASH,          /* Dao et al. 2022, tiled exact attention */
    ATTN_LINEAR,         /* Katharopoulos et al. 2020, φ(x) = elu(x) + 1 */
    ATTN_EFFICIENT,      /* Shen et al. 2021, softmax over rows of Q and columns of K */
    ATTN_KIND_COUNT
} AttentionKind;

/* Config names, indexed by AttentionKind ("none", "bahdanau", "luong_dot", ...). */
extern const char *const attention_kind_names[ATTN_KIND_COUNT];

/* Parses a config name into *kind. Errors: unknown name → message listing the valid names. */
Status attention_kind_from_name(const char *name, AttentionKind *kind, Err *err);

#endif
