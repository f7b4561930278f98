/* ops.c — the backend-independent part of the op layer (ops.h): the OpKind name table, the map
 * from each OpKind to its Backend field, supports_op and backend_require_ops. The backends
 * themselves live in ops/cpu/ and ops/cuda/, one file per op family of OP_FAMILIES (ops.h). */
#include "ops/ops.h"

#include <assert.h>
#include <stddef.h>
#include <string.h>

/* One row per OpKind (ops.h's OP_KINDS): its name, which is the Backend field's, and where that
 * field sits. */
#define OP_ROW(E, field) [OP_##E] = {#field, offsetof(Backend, field)},
static const struct {
    const char *name;
    size_t offset;
} OP_TABLE[] = {OP_KINDS(OP_ROW)};
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
