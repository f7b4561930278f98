/* rnn_attention.c — the table of RNN attention kinds (rnn_attention.h): one row per kind, each
 * defined next to its mathematics (luong.c, additive.c). */
#include <stdio.h>

#include "attention/rnn_attention.h"

extern const RnnAttentionOps rnn_attention_luong_dot, rnn_attention_luong_general,
    rnn_attention_luong_concat, rnn_attention_bahdanau;

const RnnAttentionOps *rnn_attention_ops(AttentionKind kind, int Hq, int Hk, char *why,
                                         size_t why_len) {
    static const RnnAttentionOps *const rows[] = {&rnn_attention_luong_dot,
                                                  &rnn_attention_luong_general,
                                                  &rnn_attention_luong_concat,
                                                  &rnn_attention_bahdanau};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        if (rows[i]->kind == kind)
            return rows[i]->supports(Hq, Hk, why, why_len) ? rows[i] : NULL;
    snprintf(why, why_len, "attention '%s' is not an RNN decoder attention (choose none, "
             "bahdanau, luong_dot, luong_general or luong_concat)", attention_kind_names[kind]);
    return NULL;
}
