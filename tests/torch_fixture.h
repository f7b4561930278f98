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

#endif
