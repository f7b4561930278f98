/* model/acts.h — a model's activation buffers: backend memory allocated once (by the model's
 * reserve) and freed together. The RNN and the Transformer keep their activations in one Acts
 * each (the Transformer's decoding state in a second). Errors: CHECK-aborts past ACTS_MAX
 * buffers (a model declares a bounded number) or when the backend's allocation fails.
 * Source: — (plain engineering; docs/design.md §6). */
#ifndef TRAINER_MODEL_ACTS_H
#define TRAINER_MODEL_ACTS_H

#include <stddef.h>

#include "ops/ops.h"

#define ACTS_MAX 512

typedef struct {
    void *p[ACTS_MAX];
    int n;
    size_t bytes; /* the sum of the sizes asked of acts_alloc since the last acts_free */
} Acts;

/* bytes (0 counts as 4) of backend memory from be, remembered in a (and added to a->bytes). */
void *acts_alloc(Acts *a, const Backend *be, size_t bytes);

/* n floats (0 counts as 1): acts_alloc of 4·n bytes. */
static inline float *acts_floats(Acts *a, const Backend *be, size_t n) {
    return (float *)acts_alloc(a, be, sizeof(float) * n);
}

/* Frees every buffer of a (with be, which allocated them) and empties it (bytes = 0). */
void acts_free(Acts *a, const Backend *be);

#endif
