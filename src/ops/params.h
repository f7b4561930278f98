/* ops/params.h — parameters carved from one table (docs/design.md §6). It sits in src/ops (it was
 * model/params.h) so that attention kinds can declare their own parameters without knowing a model.
 *
 * A model declares each tensor once — name, shape, initialisation — with params_declare(); then
 * params_allocate() carves parameters, gradients and the Adam moments m and v out of four flat
 * buffers of the same layout, and binds every declared Param to its slices. The same table drives
 * initialisation, checkpoint save/load (by name and shape) and the parameter count printed at
 * start-up; the optimiser and gradient clipping run over the flat buffers. With train.ema_decay
 * a fifth buffer of the same layout, ema, holds the weights' moving average.
 *
 * Shapes: a parameter is a vector [d0] or a matrix [d0, d1] (row-major); total = Σ of the sizes,
 * each rounded up to 16 floats (64 bytes). Every buffer lives in the backend's memory.
 * Errors: none are input errors; misuse CHECK-aborts (below). Source: — (llm.c's size table).
 */
#ifndef TRAINER_PARAMS_H
#define TRAINER_PARAMS_H

#include "core/common.h"
#include "ops/ops.h"
#include "core/rng.h"

typedef struct {
    float *w; /* the parameter, in backend memory */
    float *g; /* its gradient (same shape), in backend memory */
} Param;

typedef enum {
    INIT_UNIFORM, /* uniform in [-scale, scale], scale given to params_initialise (RNN) */
    INIT_ZERO,
    INIT_ONE,     /* layer-norm gains */
    INIT_XAVIER,  /* uniform in ±√(6 / (d0 + d1)) (Glorot & Bengio 2010 eq. 16), matrices [d0,d1] */
    INIT_EMB      /* uniform in ±√(3 / d1): variance 1/d1, embeddings [V, d1] scaled by √d1 */
} ParamInit;

typedef struct {
    char name[96];
    int ndim;
    int shape[4];
    size_t offset; /* in floats, into the flat buffers */
    size_t size;   /* elements */
    ParamInit init;
    Param *bind;   /* where the model keeps its pointers */
} ParamSpec;

typedef struct {
    ParamSpec *specs;
    int n, cap;
    size_t total; /* elements over all parameters */
    const Backend *be;
    float *data, *grad, *m, *v; /* [total] each, backend memory */
    float *ema; /* [total], backend memory: the weights' moving average (params_allocate_ema);
                 * NULL when train.ema_decay = 0 */
} ParamSet;

/* An empty set whose buffers will live in be's memory. No errors. */
void params_init_set(ParamSet *ps, const Backend *be);
/* Declares a parameter of shape [d0] (ndim 1, d1 ignored) or [d0, d1] (ndim 2) named name, bound
 * to *bind at params_allocate. CHECKs: ndim is 1 or 2 ("parameters are vectors or matrices"),
 * the name is new (the hint is the name). */
void params_declare(ParamSet *ps, Param *bind, const char *name, ParamInit init, int ndim,
                    int d0, int d1);
/* Allocates the four flat buffers data, grad, m, v ([total] floats each, zeroed, backend memory;
 * be->alloc aborts on failure) and points every bound Param's w and g into them. */
void params_allocate(ParamSet *ps);
/* For inference: allocates data alone ([total] floats, zeroed, backend memory) and points every
 * bound Param's w into it, with g = NULL; grad, m and v stay NULL (a quarter of
 * params_allocate's memory). Nothing that trains (a backward pass, Adam, params_zero_grad,
 * params_swap_ema) may run on such a set. */
void params_allocate_weights(ParamSet *ps);
/* Allocates the EMA buffer ema ([total] floats, backend memory, same layout as data) and sets it
 * to the current parameters (the average starts at θ_0). Called once at start-up, after the
 * parameters are allocated and set, never in the training step (docs/design.md §6); a second call
 * does nothing. CHECKs: data is allocated. Source: Polyak & Juditsky 1992 (averaging of the
 * iterates), in its exponential form. */
void params_allocate_ema(ParamSet *ps);
/* One EMA step over the flat buffers: ema[i] = decay·ema[i] + (1 − decay)·data[i] for every i <
 * total (be->scale, then be->axpy; float arithmetic). decay in [0, 1). CHECKs: ema allocated.
 * Source: Polyak & Juditsky 1992, exponential moving average of the iterates. */
void params_ema_update(ParamSet *ps, float decay);
/* Exchanges the contents of data and ema ([total] floats each), through grad as scratch (the
 * gradients are lost: call it only between steps, which zero grad first). Called twice, it
 * restores both buffers bit for bit. CHECKs: ema allocated. */
void params_swap_ema(ParamSet *ps);
/* Fills parameters by their init rule (ParamInit; INIT_UNIFORM: [-scale, scale], OpenNMT-py's
 * param_init; INIT_XAVIER Glorot & Bengio 2010 eq. 16), drawing from rng in declaration order
 * (generated in a [total] host buffer, then uploaded). No errors. */
void params_initialise(ParamSet *ps, Rng *rng, float scale);
/* Zeroes the flat gradient buffer grad [total]. No errors. */
void params_zero_grad(ParamSet *ps);
/* Frees the buffers allocated (data, grad, m, v, and ema) and the table and zeroes *ps (safe on
 * a set never allocated). */
void params_free(ParamSet *ps);

/* A hook a model's backward pass calls each time a block of it (embedding, a layer, the output
 * layer) has finished: fn(ctx, lo) says that the gradient elements grad[lo .. total) are final
 * for this pass — no later op of the pass adds to them — so that they can be sent while the
 * backward pass goes on (dist.overlap: the trainer's bucketed all-reduce). lo is in floats, an
 * offset into the flat buffers, and never grows within a pass; the last call of a pass has lo =
 * 0. Parameters are declared encoder-first and backward finishes the output layer first, so the
 * final region grows from the end of the buffer towards its start. fn NULL: no hook (the
 * default). Called on the thread that runs the pass. No errors. Source: — (PyTorch DDP's
 * gradient buckets, Li et al. 2020, "PyTorch Distributed", §3.2.3). */
typedef struct {
    void (*fn)(void *ctx, size_t lo);
    void *ctx;
} GradReady;

/* Calls h's fn when set. */
static inline void grad_ready(const GradReady *h, size_t lo) {
    if (h->fn) h->fn(h->ctx, lo);
}

#endif
