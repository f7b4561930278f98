/* test_attention_table.c — the attention table (src/attention/attention.h, ATTENTION_KINDS) is
 * whole: every kind has a unique config name that parses back to it, a row (but none) whose kind
 * is its own, ops the CPU backend implements, a causal-form reason where it has no causal form,
 * properties in range (weights an AttentionWeights, fd_eps 0 or in (0, 1e-2]), and a row in
 * docs/attention.md's table of kinds ("## The kinds"). The rest of a kind's coverage is checked
 * where its cases run, each failing by the kind's name: a gradient case (test_rnn_grad, finite
 * differences and batched against step by step; test_transformer), a decoding case
 * (test_decode; test_transformer's cached decoding), a case on every backend (model_cases.h:
 * test_model_ops, test_model_cuda), and a case for every op it calls (test_backend_ops: every
 * OpKind). Those tests generate the cases of a kind that has none of its own from its row. Run
 * from the repository root. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention/attention.h"
#include "ops/cpu/cpu.h"
#include "testutil.h"

int main(void) {
    char *doc = test_read_file("docs/attention.md", NULL);
    EXPECT(doc != NULL, "cannot read docs/attention.md (run from the repository root)");
    const char *from = doc ? strstr(doc, "\n## The kinds") : NULL, *to = NULL;
    EXPECT(from != NULL, "docs/attention.md has no section \"## The kinds\"");
    if (from) to = strstr(from + 1, "\n## ");
    for (int k = 0; k < ATTN_KIND_COUNT; k++) {
        const char *name = attention_kind_names[k];
        AttentionKind back = ATTN_KIND_COUNT;
        Err err;
        EXPECT(name && name[0] && attention_kind_from_name(name, &back, &err) == STATUS_OK &&
                   back == (AttentionKind)k,
               "kind %d: its name '%s' does not parse back to it", k, name ? name : "(null)");
        for (int j = 0; j < k; j++)
            EXPECT(strcmp(name, attention_kind_names[j]), "kinds %d and %d share the name %s", j,
                   k, name);
        const AttentionOps *r = attention_row((AttentionKind)k);
        if (k == ATTN_NONE) {
            EXPECT(r == NULL, "none has a row");
        } else {
            EXPECT(r && r->kind == (AttentionKind)k && r->forward && r->backward,
                   "%s: no row, a row of another kind, or no forward/backward", name);
            if (r) {
                EXPECT(r->causal_ok || (r->no_causal && r->no_causal[0]),
                       "%s has no causal form and no reason for attention_supports' message",
                       name);
                EXPECT(r->weights >= ATTN_WEIGHTS_SUM_1 && r->weights <= ATTN_WEIGHTS_NONNEG,
                       "%s: weights %d is not an AttentionWeights", name, (int)r->weights);
                EXPECT(r->fd_eps == 0 || (r->fd_eps > 0 && r->fd_eps <= 1e-2f),
                       "%s: fd_eps %g is neither 0 (the tests' own) nor a step in (0, 1e-2]",
                       name, (double)r->fd_eps);
                Err e;
                EXPECT(backend_require_ops(backend_cpu(), r->ops, r->nops, &e) == STATUS_OK,
                       "%s: the CPU backend lacks an op it calls: %s", name, e.msg);
            }
        }
        char cell[80];
        snprintf(cell, sizeof cell, "`%s`", name);
        const char *hit = from ? strstr(from, cell) : NULL;
        EXPECT(hit && (!to || hit < to), "docs/attention.md: the table of kinds has no row for "
               "%s: add one (formula, source, notes)", name);
    }
    printf("%d attention kinds, each with a name, a row, CPU ops and a documented row\n",
           ATTN_KIND_COUNT);
    free(doc);
    return test_report("test_attention_table");
}
