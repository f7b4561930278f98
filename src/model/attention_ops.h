/* attention_ops.h — the backend ops each attention kind calls (through attention/mha.c,
 * luong.c, additive.c), so that a model can list every op it needs before training starts
 * (backend_require_ops, ops.h). To become a column of the attention table (DESIGN.md §4). */
#ifndef TRAINER_ATTENTION_OPS_H
#define TRAINER_ATTENTION_OPS_H

#include "attention/attention.h"
#include "ops/ops.h"

/* Writes the ops kind's forward, backward and decoding step call to ops[] (room for 4) and
 * returns their number (0 for ATTN_NONE). The projections' matmul/bias/permute ops are the
 * caller's to list. */
int attention_ops_used(AttentionKind kind, OpKind *ops);

#endif
