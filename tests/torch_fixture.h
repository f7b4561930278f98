/* torch_fixture.h — reader of the PyTorch fixtures written by tests/reference/make_*_fixture.py
 * (the format is documented in make_rnn_fixture.py): a model's parameters, a padded batch, the
 * logits, the summed label-smoothed loss and the gradient of that loss w.r.t. every parameter,
 * all in float64. Shared by test_rnn_torch.c and test_transformer_torch.c. */
#ifndef TRAINER_TORCH_FIXTURE_H
#define TRAINER_TORCH_FIXTURE_H

#include <stddef.h>

#include "ops/params.h"

typedef struct {
    char name[96];
    int ndim, shape[2];
    size_t size;
    double *w, *g; /* the parameter and its gradient */
} FixParam;

typedef struct {
    char config[512];     /* the words after "config", for the test to parse */
    int V;                /* the logits' last dimension */
    int B, S, T;
    int *src, *src_len, *tgt_in, *tgt_out; /* time-major [S,B], [B], [T,B], [T,B] */
    double loss;
    double *logits;       /* [T,B,V] */
    int np;
    FixParam *p;
} Fixture;

/* Reads path; magic is the first word ("rnn_fixture", "transformer_fixture"). Returns 1, or 0
 * with a message on stderr. */
int fixture_load(Fixture *fx, const char *path, const char *magic);
void fixture_free(Fixture *fx);
/* Copies every fixture parameter into ps by name (EXPECT: every declared tensor is in the
 * fixture with the same shape, and every fixture tensor is declared). Returns the count. */
int fixture_set_params(const Fixture *fx, ParamSet *ps, const char *path);
/* Compares ps's gradients with the fixture's, tensor by tensor (EXPECT: ‖ours − ref‖₂ /
 * max(‖ref‖₂, 0.1) <= rel_tol and every |ours − ref| <= abs_tol + 10·rel_tol·|ref|); prints one
 * line per tensor and returns the worst relative error. */
double fixture_check_grads(const Fixture *fx, const ParamSet *ps, const char *path,
                           double rel_tol, double abs_tol);
/* A host copy of ps's whole gradient buffer (ps->total floats; the caller frees it). */
float *fixture_grad_copy(const ParamSet *ps);
/* The contract that a training pass accumulates its gradients scaled by grad_scale (model.h,
 * rnn.h, transformer.h): before, a copy of ps's gradients after one pass from zero with
 * grad_scale 1, and ps now after a second, identical pass without zeroing with grad_scale =
 * scale, must hold (1 + scale)·before (a backward that overwrote a gradient instead of adding to
 * it leaves scale·before, one that ignored grad_scale 2·before). EXPECT per tensor:
 * max |g − (1 + scale)·before| <= 1e-5 · max |(1 + scale)·before| (the second pass adds each
 * term again, so the sums round in another order), naming the tensor. */
void fixture_check_accumulated(const float *before, const ParamSet *ps, const char *path,
                               double scale);

#endif
