/* model/output_loss.h — the output layer and its loss, shared by the RNN and the Transformer:
 * logits = x W_outᵀ + b_out, then the label-smoothed cross-entropy and, in training, its
 * backward into W_out, b_out and x, over R target rows taken a block of rows at a time, so that
 * the [R, V] logits and their gradient are never held whole (the largest activation of a
 * translation model: R·V floats each, 1 GiB at R = 8192 and V = 32000).
 *
 * Legend: R target rows (non-padding positions, or all of them), H the rows' width (the model's
 * hidden size), V vocabulary. Units: losses in nats, summed over the counted rows. Source: Luong
 * et al. 2015 eq. 5–6, Vaswani et al. 2017 §3.4, §5.4 (label smoothing: Szegedy et al. 2016 §7);
 * the blocked evaluation is ours and changes only the order of the sums in dW_out and db_out.
 * Errors: none (capacity is a CHECK, as everywhere in model/).
 */
#ifndef TRAINER_OUTPUT_LOSS_H
#define TRAINER_OUTPUT_LOSS_H

#include <stddef.h>

#include "ops/ops.h"
#include "ops/params.h"

/* Bytes of one [rows, V] float buffer the automatic block height aims at. CPU: 32 MiB (at the
 * shipped configs, V = 8000 and up to 4096 target rows, blocks of 1048 rows). CUDA: 256 MiB, so
 * that the shipped configs run in one block (each block's loss is one download, a device
 * synchronisation) and only larger vocabularies or batches are cut. */
#define OUTPUT_LOSS_BLOCK_BYTES_CPU ((size_t)32 << 20)
#define OUTPUT_LOSS_BLOCK_BYTES_CUDA ((size_t)256 << 20)

typedef struct {
    int rows;               /* block height: the most rows one call of the loss takes */
    int V;                  /* vocabulary */
    float *logits, *dlogits; /* backend memory, [rows, V] each */
    float *work;            /* backend memory, xent_workspace(rows, V) floats */
    int last_blocks;        /* blocks the last output_loss ran in (transformer_logits' check) */
} OutputLoss;

/* The block height for at most R_cap rows of V logits on backend be: max_rows when > 0 (a test's
 * or a benchmark's choice), else as many rows as fit be's OUTPUT_LOSS_BLOCK_BYTES_*; never more
 * than R_cap, at least 1. No errors. Source: — (memory layout only). */
int output_loss_rows(const Backend *be, long R_cap, int V, int max_rows);

/* The caller reserves the buffers: o->rows = output_loss_rows(...), o->V = V, o->logits and
 * o->dlogits of rows·V floats each and o->work of be->xent_workspace(rows, V) floats, all
 * backend memory. */

/* Returns the loss summed over the rows of targets[R] that are not TOKEN_PAD (nats), for
 * logits = x[R,H] W[V,H]ᵀ + b[V] with label smoothing `smoothing`; x, targets and dx are backend
 * memory. With train != 0 also accumulates grad_scale · d(loss) into W->g [V,H] and b->g [V],
 * and WRITES dx[R,H] = grad_scale · d(loss)/dx (overwritten); dx may be x itself (each block's
 * rows of dx are written after its rows of x were last read). train = 0: W->g, b->g and dx are
 * not touched (dx may be NULL). The rows run in n = ceil(R / o->rows) blocks of ceil(R / n)
 * rows (the last one shorter): each is one matmul_bias_forward, one xent_forward_backward and,
 * in training, two matmuls and a bias_backward. CHECKs R >= 1. Source: Luong et al. 2015
 * eq. 5–6, Vaswani et al. 2017 §3.4 (the output layer), Szegedy et al. 2016 §7 (smoothing). */
double output_loss(const Backend *be, OutputLoss *o, float *dx, const float *x, const int *targets,
                   int R, int H, const Param *W, const Param *b, float smoothing, int train,
                   float grad_scale);

#endif
