/* train/inject.h — fault injection for the tests of the training loop (tests/slow/test_nonfinite.c).
 *
 * The environment variable TRAINER_TEST_INJECT_NONFINITE, read once when training starts, lists
 * steps (1-based, the numbers of the log and metrics.jsonl) whose loss or gradient is made
 * non-finite after the backward pass, so that the loop's handling of a diverging step can be
 * tested without a diverging model:
 *
 *     TRAINER_TEST_INJECT_NONFINITE = ITEM[,ITEM]...     ITEM = STEP[-LAST][:KIND]
 *     KIND = nan (the loss, default) | inf (the loss) | grad-nan | grad-inf (the first gradient
 *            element, so the gradient norm becomes NaN / Inf)
 *
 * e.g. "3,5:grad-inf,10-30:nan". Unset or empty: nothing is injected and the loop runs exactly
 * as without this module. It is for tests only; a malformed value is an error naming the
 * variable, so that a typo cannot silently disable a test. Source: —.
 */
#ifndef TRAINER_TRAIN_INJECT_H
#define TRAINER_TRAIN_INJECT_H

#include "core/common.h"
#include "ops/ops.h"

#define INJECT_ENV "TRAINER_TEST_INJECT_NONFINITE"
#define INJECT_MAX_ITEMS 64

typedef enum { INJ_LOSS_NAN, INJ_LOSS_INF, INJ_GRAD_NAN, INJ_GRAD_INF } InjectKind;

typedef struct {
    int n;                       /* items; 0 = inject nothing */
    long from[INJECT_MAX_ITEMS]; /* first step of item i (1-based) */
    long to[INJECT_MAX_ITEMS];   /* last step of item i, >= from */
    InjectKind kind[INJECT_MAX_ITEMS];
} NonfiniteInjection;

/* Parses spec (the variable's value; NULL or "" = nothing) into *inj.
 * Errors name INJECT_ENV, the bad item and the grammar. */
Status inject_parse(NonfiniteInjection *inj, const char *spec, Err *err);

/* If step is listed, makes *loss (host scalar) or grad[0] (backend memory, written through
 * be->upload) NaN or Inf as the item says and returns the kind's name ("nan", "inf", "grad-nan",
 * "grad-inf"); else changes nothing and returns NULL. No errors. */
const char *inject_apply(const NonfiniteInjection *inj, long step, const Backend *be, float *grad,
                         double *loss);

#endif
