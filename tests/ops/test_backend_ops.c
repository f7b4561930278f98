/* test_backend_ops.c — the op layer (src/ops/ops.h): OpKind, supports_op, backend_require_ops. */
#include <string.h>

#include "ops/ops.h"
#include "testutil.h"

/* A copy of the CPU table with one op removed is refused before training, by name. */
static void test_require_ops(void) {
    Backend crippled = *backend_cpu();
    crippled.name = "cuda";
    crippled.lstm_cell_forward = NULL;
    crippled.flash_attn_backward = NULL;
    EXPECT(!supports_op(&crippled, OP_LSTM_CELL_FORWARD), "lstm_cell_forward still supported");
    EXPECT(supports_op(&crippled, OP_LSTM_CELL_BACKWARD), "lstm_cell_backward lost");
    const OpKind ops[] = {OP_MATMUL, OP_LSTM_CELL_FORWARD, OP_FLASH_ATTN_BACKWARD,
                          OP_LSTM_CELL_FORWARD};
    Err err = {0};
    EXPECT(backend_require_ops(&crippled, ops, 4, &err) != STATUS_OK, "missing ops accepted");
    EXPECT(strcmp(err.msg, "cuda backend: no lstm_cell_forward, flash_attn_backward; use "
                           "train.device = cpu") == 0,
           "message: %s", err.msg);
    EXPECT(backend_require_ops(backend_cpu(), ops, 4, &err) == STATUS_OK, "cpu refused");
    for (int op = 0; op < OP_COUNT; op++)
        EXPECT(supports_op(backend_cpu(), (OpKind)op), "cpu lacks %s", op_name((OpKind)op));
    EXPECT(strcmp(op_name(OP_FLASH_ATTN_BACKWARD), "flash_attn_backward") == 0, "op_name");
}

int main(void) {
    test_require_ops();
    return test_report("test_backend_ops");
}
