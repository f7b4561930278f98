/* ops.c — the backend-independent part of the op layer (ops.h): the OpKind name table, the map
 * from each OpKind to its Backend field, supports_op and backend_require_ops. The backends
 * themselves live in ops/cpu/ and ops/cuda/, one file per op family of OP_FAMILIES (ops.h). */
#include "ops/ops.h"

#include <assert.h>
#include <stddef.h>
#include <string.h>

/* One row per OpKind: its name, which is the Backend field's, and where that field sits. */
#define OP_ROW(kind, field) [kind] = {#field, offsetof(Backend, field)}
static const struct {
    const char *name;
    size_t offset;
} OP_TABLE[] = {
    OP_ROW(OP_MATMUL, matmul),
    OP_ROW(OP_MATMUL_BIAS_FORWARD, matmul_bias_forward),
    OP_ROW(OP_BIAS_FORWARD, bias_forward),
    OP_ROW(OP_BIAS_BACKWARD, bias_backward),
    OP_ROW(OP_AXPY, axpy),
    OP_ROW(OP_SCALE, scale),
    OP_ROW(OP_SUMSQ, sumsq),
    OP_ROW(OP_ALL_FINITE, all_finite),
    OP_ROW(OP_CONCAT2_FORWARD, concat2_forward),
    OP_ROW(OP_CONCAT2_BACKWARD, concat2_backward),
    OP_ROW(OP_TRANSPOSE01_FORWARD, transpose01_forward),
    OP_ROW(OP_TRANSPOSE01_BACKWARD, transpose01_backward),
    OP_ROW(OP_TANH_FORWARD, tanh_forward),
    OP_ROW(OP_TANH_BACKWARD, tanh_backward),
    OP_ROW(OP_DROPOUT_FORWARD, dropout_forward),
    OP_ROW(OP_DROPOUT_BACKWARD, dropout_backward),
    OP_ROW(OP_LAYERNORM_FORWARD, layernorm_forward),
    OP_ROW(OP_LAYERNORM_BACKWARD, layernorm_backward),
    OP_ROW(OP_BIAS_RELU_DROPOUT_FORWARD, bias_relu_dropout_forward),
    OP_ROW(OP_RELU_DROPOUT_BACKWARD, relu_dropout_backward),
    OP_ROW(OP_PERMUTE0213_FORWARD, permute0213_forward),
    OP_ROW(OP_PERMUTE0213_BACKWARD, permute0213_backward),
    OP_ROW(OP_WRITE_STEP, write_step),
    OP_ROW(OP_GATHER_ROWS_STRIDED, gather_rows_strided),
    OP_ROW(OP_EMBEDDING_FORWARD, embedding_forward),
    OP_ROW(OP_EMBEDDING_BACKWARD, embedding_backward),
    OP_ROW(OP_LSTM_CELL_FORWARD, lstm_cell_forward),
    OP_ROW(OP_LSTM_CELL_BACKWARD, lstm_cell_backward),
    OP_ROW(OP_GRU_CELL_FORWARD, gru_cell_forward),
    OP_ROW(OP_GRU_CELL_BACKWARD, gru_cell_backward),
    OP_ROW(OP_ADDITIVE_ATTN_FORWARD, additive_attn_forward),
    OP_ROW(OP_ADDITIVE_ATTN_BACKWARD, additive_attn_backward),
    OP_ROW(OP_FLASH_ATTN_FORWARD, flash_attn_forward),
    OP_ROW(OP_FLASH_ATTN_BACKWARD, flash_attn_backward),
    OP_ROW(OP_LINEAR_ATTN_FORWARD, linear_attn_forward),
    OP_ROW(OP_LINEAR_ATTN_BACKWARD, linear_attn_backward),
    OP_ROW(OP_LINEAR_ATTN_STEP, linear_attn_step),
    OP_ROW(OP_LINEAR_ATTN_SUMMARY, linear_attn_summary),
    OP_ROW(OP_LINEAR_ATTN_READ, linear_attn_read),
    OP_ROW(OP_LINEAR_ATTN_READ_BACKWARD, linear_attn_read_backward),
    OP_ROW(OP_LINEAR_ATTN_SUMMARY_BACKWARD, linear_attn_summary_backward),
    OP_ROW(OP_L2FEATURE_FORWARD, l2feature_forward),
    OP_ROW(OP_L2FEATURE_BACKWARD, l2feature_backward),
    OP_ROW(OP_LINFORMER_PROJ_FORWARD, linformer_proj_forward),
    OP_ROW(OP_LINFORMER_PROJ_BACKWARD, linformer_proj_backward),
    OP_ROW(OP_EFFICIENT_ATTN_FORWARD, efficient_attn_forward),
    OP_ROW(OP_EFFICIENT_ATTN_BACKWARD, efficient_attn_backward),
    OP_ROW(OP_EFFICIENT_ATTN_SUMMARY, efficient_attn_summary),
    OP_ROW(OP_EFFICIENT_ATTN_READ, efficient_attn_read),
    OP_ROW(OP_EFFICIENT_ATTN_READ_BACKWARD, efficient_attn_read_backward),
    OP_ROW(OP_EFFICIENT_ATTN_SUMMARY_BACKWARD, efficient_attn_summary_backward),
    OP_ROW(OP_GATHER_ROWS, gather_rows),
    OP_ROW(OP_ATTN_FORWARD, attn_forward),
    OP_ROW(OP_ATTN_BACKWARD, attn_backward),
    OP_ROW(OP_ATTN_WORKSPACE, attn_workspace),
    OP_ROW(OP_ATTN_FORWARD_MERGED, attn_forward_merged),
    OP_ROW(OP_ATTN_BACKWARD_MERGED, attn_backward_merged),
    OP_ROW(OP_FLASH_ATTN_WORKSPACE, flash_attn_workspace),
    OP_ROW(OP_LINEAR_ATTN_WORKSPACE, linear_attn_workspace),
    OP_ROW(OP_EFFICIENT_ATTN_WORKSPACE, efficient_attn_workspace),
    OP_ROW(OP_ADDITIVE_ATTN_WORKSPACE, additive_attn_workspace),
    OP_ROW(OP_LOCAL_ATTN_FORWARD, local_attn_forward),
    OP_ROW(OP_LOCAL_ATTN_BACKWARD, local_attn_backward),
    OP_ROW(OP_LOCAL_ATTN_WORKSPACE, local_attn_workspace),
    OP_ROW(OP_XENT_FORWARD_BACKWARD, xent_forward_backward),
    OP_ROW(OP_XENT_WORKSPACE, xent_workspace),
    OP_ROW(OP_LOG_SOFTMAX, log_softmax),
    OP_ROW(OP_ARGMAX, argmax),
    OP_ROW(OP_ADAM_UPDATE, adam_update),
    OP_ROW(OP_POINTWISE_ATTN_FORWARD, pointwise_attn_forward),
    OP_ROW(OP_POINTWISE_ATTN_BACKWARD, pointwise_attn_backward),
    OP_ROW(OP_POINTWISE_ATTN_WORKSPACE, pointwise_attn_workspace),
    OP_ROW(OP_HEAD_RMSNORM_FORWARD, head_rmsnorm_forward),
    OP_ROW(OP_HEAD_RMSNORM_BACKWARD, head_rmsnorm_backward),
};
#undef OP_ROW
static_assert(sizeof OP_TABLE / sizeof OP_TABLE[0] == OP_COUNT,
              "OP_TABLE needs one row per OpKind");

const char *op_name(OpKind op) {
    return op >= 0 && op < OP_COUNT && OP_TABLE[op].name ? OP_TABLE[op].name : "?";
}

size_t op_offset(OpKind op) {
    CHECK(op >= 0 && op < OP_COUNT, "op_offset: not an OpKind");
    return OP_TABLE[op].offset;
}

int supports_op(const Backend *be, OpKind op) {
    CHECK(op >= 0 && op < OP_COUNT, "supports_op: OpKind out of range");
    void (*fn)(void);
    memcpy(&fn, (const char *)be + OP_TABLE[op].offset, sizeof fn);
    return fn != NULL;
}

int op_list_append(OpKind *ops, int n, const OpKind *more, int count) {
    for (int i = 0; i < count; i++) ops[n + i] = more[i];
    return n + count;
}

Status backend_require_ops(const Backend *be, const OpKind *ops, int n, Err *err) {
    char missing[1024] = "";
    size_t len = 0;
    int nmissing = 0;
    for (int i = 0; i < n; i++) {
        if (supports_op(be, ops[i])) continue;
        int dup = 0; /* a model may list an op twice (two attention slots of one kind) */
        for (int j = 0; j < i; j++) dup |= ops[j] == ops[i];
        if (dup) continue;
        int w = snprintf(missing + len, sizeof missing - len, "%s%s", nmissing ? ", " : "",
                         op_name(ops[i]));
        if (w > 0) len += (size_t)w < sizeof missing - len ? (size_t)w : sizeof missing - len - 1;
        nmissing++;
    }
    if (!nmissing) return STATUS_OK;
    return err_set(err, "%s backend: no %s; use train.device = cpu", be->name, missing);
}
