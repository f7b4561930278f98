/* inject.c — TRAINER_TEST_INJECT_NONFINITE (see inject.h). */
#include "train/inject.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_names[] = {"nan", "inf", "grad-nan", "grad-inf"};

/* Reads a step number (1 .. 1e15) at *p; advances *p. Returns 0 on failure. */
static int read_step(const char **p, long *out) {
    if (**p < '0' || **p > '9') return 0;
    errno = 0;
    char *end = NULL;
    long long v = strtoll(*p, &end, 10);
    if (errno || v < 1 || v > 1000000000000000LL) return 0;
    *p = end;
    *out = (long)v;
    return 1;
}

Status inject_parse(NonfiniteInjection *inj, const char *spec, Err *err) {
    memset(inj, 0, sizeof *inj);
    if (!spec || !*spec) return STATUS_OK;
    const char *p = spec;
    while (*p) {
        const char *item = p;
        size_t item_len = strcspn(item, ",");
        if (inj->n == INJECT_MAX_ITEMS)
            return err_set(err, "%s: more than %d items; merge steps into ranges (FIRST-LAST)",
                           INJECT_ENV, INJECT_MAX_ITEMS);
        long from = 0, to = 0;
        int ok = read_step(&p, &from);
        to = from;
        if (ok && *p == '-') {
            p++;
            ok = read_step(&p, &to) && to >= from;
        }
        InjectKind kind = INJ_LOSS_NAN;
        if (ok && *p == ':') {
            p++;
            size_t len = strcspn(p, ",");
            ok = 0;
            for (int k = 0; k < 4; k++)
                if (strlen(kind_names[k]) == len && !strncmp(p, kind_names[k], len)) {
                    kind = (InjectKind)k;
                    ok = 1;
                }
            p += len;
        }
        if (!ok || (*p && *p != ',') || (*p == ',' && !p[1]))
            return err_set(err, "%s: cannot read the item '%.*s' of '%s'; write "
                           "STEP[-LAST][:KIND] items separated by commas, KIND one of nan, inf, "
                           "grad-nan, grad-inf (steps count from 1)", INJECT_ENV,
                           (int)item_len, item, spec);
        inj->from[inj->n] = from;
        inj->to[inj->n] = to;
        inj->kind[inj->n] = kind;
        inj->n++;
        if (*p == ',') p++;
    }
    return STATUS_OK;
}

const char *inject_apply(const NonfiniteInjection *inj, long step, const Backend *be, float *grad,
                         double *loss) {
    for (int i = 0; i < inj->n; i++) {
        if (step < inj->from[i] || step > inj->to[i]) continue;
        float v = inj->kind[i] == INJ_LOSS_NAN || inj->kind[i] == INJ_GRAD_NAN ? NAN : INFINITY;
        if (inj->kind[i] == INJ_LOSS_NAN || inj->kind[i] == INJ_LOSS_INF) *loss = v;
        else be->upload(grad, &v, sizeof v);
        return kind_names[inj->kind[i]];
    }
    return NULL;
}
