/* params.c — the parameter table (params.h): declaration, the four flat buffers (parameters,
 * gradients, Adam m and v), initialisation on the host and upload. */
#include "ops/params.h"

#include <math.h>
#include <string.h>

void params_init_set(ParamSet *ps, const Backend *be) {
    memset(ps, 0, sizeof *ps);
    ps->be = be;
}

void params_declare(ParamSet *ps, Param *bind, const char *name, ParamInit init, int ndim, int d0,
                    int d1) {
    CHECK(ndim == 1 || ndim == 2, "parameters are vectors or matrices");
    for (int i = 0; i < ps->n; i++) CHECK(strcmp(ps->specs[i].name, name) != 0, name);
    if (ps->n == ps->cap) {
        ps->cap = ps->cap ? 2 * ps->cap : 64;
        ps->specs = xrealloc(ps->specs, sizeof(ParamSpec) * ps->cap);
    }
    ParamSpec *s = &ps->specs[ps->n++];
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "%s", name);
    s->ndim = ndim;
    s->shape[0] = d0;
    s->shape[1] = ndim == 2 ? d1 : 1;
    s->size = (size_t)d0 * (ndim == 2 ? (size_t)d1 : 1);
    s->offset = ps->total;
    /* keep each tensor 16-float aligned (64 bytes) */
    ps->total += (s->size + 15) / 16 * 16;
    s->init = init;
    s->bind = bind;
}

/* data, and with train the gradient and Adam buffers; binds every declared Param. */
static void allocate(ParamSet *ps, int train) {
    size_t bytes = ps->total * sizeof(float);
    ps->data = ps->be->alloc(bytes);
    if (train) {
        ps->grad = ps->be->alloc(bytes);
        ps->m = ps->be->alloc(bytes);
        ps->v = ps->be->alloc(bytes);
    }
    for (int i = 0; i < ps->n; i++) {
        ps->specs[i].bind->w = ps->data + ps->specs[i].offset;
        ps->specs[i].bind->g = train ? ps->grad + ps->specs[i].offset : NULL;
    }
}

void params_allocate(ParamSet *ps) { allocate(ps, 1); }

void params_allocate_weights(ParamSet *ps) { allocate(ps, 0); }

void params_allocate_ema(ParamSet *ps) {
    CHECK(ps->data, "params_allocate_ema before params_allocate");
    if (ps->ema) return;
    size_t bytes = ps->total * sizeof(float);
    ps->ema = ps->be->alloc(bytes);
    ps->be->copy(ps->ema, ps->data, bytes);
}

void params_ema_update(ParamSet *ps, float decay) {
    CHECK(ps->ema, "params_ema_update without params_allocate_ema");
    ps->be->scale(ps->ema, decay, ps->total);
    ps->be->axpy(ps->ema, 1.0f - decay, ps->data, ps->total);
}

void params_swap_ema(ParamSet *ps) {
    CHECK(ps->ema && ps->grad, "params_swap_ema without params_allocate_ema or params_allocate");
    size_t bytes = ps->total * sizeof(float);
    /* the gradient buffer is the scratch: every step zeroes it before use */
    ps->be->copy(ps->grad, ps->data, bytes);
    ps->be->copy(ps->data, ps->ema, bytes);
    ps->be->copy(ps->ema, ps->grad, bytes);
}

void params_initialise(ParamSet *ps, Rng *rng, float scale) {
    float *host = xcalloc(ps->total, sizeof(float));
    for (int i = 0; i < ps->n; i++) {
        ParamSpec *s = &ps->specs[i];
        float bound = scale, d0 = (float)s->shape[0], d1 = (float)s->shape[1];
        if (s->init == INIT_XAVIER) bound = sqrtf(6.0f / (d0 + d1));
        if (s->init == INIT_EMB) bound = sqrtf(3.0f / d1);
        if (s->init == INIT_ONE)
            for (size_t j = 0; j < s->size; j++) host[s->offset + j] = 1.0f;
        else if (s->init != INIT_ZERO)
            for (size_t j = 0; j < s->size; j++)
                host[s->offset + j] = (2.0f * rng_uniform(rng) - 1.0f) * bound;
    }
    ps->be->upload(ps->data, host, ps->total * sizeof(float));
    free(host);
}

void params_zero_grad(ParamSet *ps) {
    CHECK(ps->grad, "params_zero_grad on weights for inference (params_allocate_weights)");
    ps->be->zero(ps->grad, ps->total * sizeof(float));
}

void params_free(ParamSet *ps) {
    if (ps->data) {
        float *bufs[] = {ps->data, ps->grad, ps->m, ps->v, ps->ema};
        for (int i = 0; i < 5; i++)
            if (bufs[i]) ps->be->free(bufs[i]);
    }
    free(ps->specs);
    memset(ps, 0, sizeof *ps);
}
