#include "attention/attention.h"

#include <assert.h>
#include <string.h>

const char *const attention_kind_names[ATTN_KIND_COUNT] = {
    "none", "bahdanau", "luong_dot", "luong_general", "luong_concat",
    "sdp",  "flash",    "linear",    "efficient",
};
static_assert(sizeof attention_kind_names / sizeof attention_kind_names[0] == ATTN_KIND_COUNT,
              "attention_kind_names must name every AttentionKind");

Status attention_kind_from_name(const char *name, AttentionKind *kind, Err *err) {
    for (int i = 0; i < ATTN_KIND_COUNT; i++) {
        if (strcmp(name, attention_kind_names[i]) == 0) {
            *kind = (AttentionKind)i;
            return STATUS_OK;
        }
    }
    char list[512] = "";
    for (int i = 0; i < ATTN_KIND_COUNT; i++) {
        strcat(list, i ? ", " : "");
        strcat(list, attention_kind_names[i]);
    }
    return err_set(err, "unknown attention kind '%s' (valid: %s)", name, list);
}
