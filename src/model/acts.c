/* acts.c — a model's activation buffers (acts.h). */
#include "model/acts.h"

#include "core/common.h"

void *acts_alloc(Acts *a, const Backend *be, size_t bytes) {
    CHECK(a->n < ACTS_MAX, "too many activation buffers: raise ACTS_MAX");
    void *p = be->alloc(bytes ? bytes : 4);
    a->p[a->n++] = p;
    a->bytes += bytes ? bytes : 4;
    return p;
}

void acts_free(Acts *a, const Backend *be) {
    for (int i = 0; i < a->n; i++) be->free(a->p[i]);
    a->n = 0;
    a->bytes = 0;
}
