/* attention_ops.c — the backend ops of each attention kind (attention_ops.h). */
#include "model/attention_ops.h"

int attention_ops_used(AttentionKind kind, OpKind *ops) {
    int n = 0;
    switch (kind) {
    case ATTN_NONE:
    case ATTN_KIND_COUNT:
        break;
    case ATTN_SDP:
    case ATTN_LUONG_DOT:
    case ATTN_LUONG_GENERAL:
        ops[n++] = OP_ATTN_FORWARD;
        ops[n++] = OP_ATTN_BACKWARD;
        break;
    case ATTN_BAHDANAU:
    case ATTN_LUONG_CONCAT:
        ops[n++] = OP_ADDITIVE_ATTN_FORWARD;
        ops[n++] = OP_ADDITIVE_ATTN_BACKWARD;
        break;
    case ATTN_FLASH:
        ops[n++] = OP_FLASH_ATTN_FORWARD;
        ops[n++] = OP_FLASH_ATTN_BACKWARD;
        break;
    case ATTN_LINEAR:
        ops[n++] = OP_LINEAR_ATTN_FORWARD;
        ops[n++] = OP_LINEAR_ATTN_BACKWARD;
        ops[n++] = OP_LINEAR_ATTN_STEP; /* incremental decoding (causal self-attention) */
        break;
    case ATTN_EFFICIENT:
        ops[n++] = OP_EFFICIENT_ATTN_FORWARD;
        ops[n++] = OP_EFFICIENT_ATTN_BACKWARD;
        break;
    }
    return n;
}
