/* train/optim.h — the optimiser over the flat buffers of a ParamSet (docs/design.md §6): global
 * gradient-norm clipping, the Adam step and the learning-rate schedules, as train_run calls them
 * once per step (bench/bench_train.c too).
 *
 * ps->data, ps->grad, ps->m, ps->v are [ps->total] floats each in the memory of ps->be; these
 * functions run on that backend (be->sumsq, be->scale, be->adam_update). Learning rates are per
 * optimizer step; a gradient norm is the L2 norm over every float of ps->grad.
 * Errors: none (no Status, no CHECK); a non-finite gradient is the caller's to detect (its norm).
 */
#ifndef TRAINER_OPTIM_H
#define TRAINER_OPTIM_H

#include "ops/params.h"
#include "train/config.h"

/* The global gradient norm sqrt(Σ_i grad[i]²) over ps->grad [ps->total] (be->sumsq accumulates
 * in double). Non-finite (NaN or Inf) when any gradient is. */
double optim_grad_norm(const ParamSet *ps);

/* Global norm clipping (Pascanu et al. 2013, §3.2, Algorithm 1): when max_norm > 0 and
 * norm > max_norm, scales ps->grad by max_norm / norm, so that its norm becomes max_norm;
 * otherwise leaves it alone. norm: optim_grad_norm(ps), finite. */
void optim_clip(ParamSet *ps, double norm, float max_norm);

/* One Adam step over every parameter (Kingma & Ba 2015, Algorithm 1, bias-corrected, see
 * ops.h adam_update): updates ps->m, ps->v and ps->data from ps->grad in place, with learning
 * rate lr (optim_lr), train.adam_beta1/adam_beta2/adam_eps of cfg, and t the 1-based count of
 * Adam steps including this one. */
void optim_adam(ParamSet *ps, const Config *cfg, double lr, int t);

/* The learning rate of optimizer step `step` (1-based: the step about to be taken):
 * linear warm-up over train.warmup_steps to train.lr (w = min(1, step / warmup_steps), 1 when
 * warmup_steps = 0), then
 *  - plateau: train.lr · w · lr_scale, floored at train.min_lr once decayed (lr_scale < 1);
 *  - inverse_sqrt: train.lr · √(warmup_steps / step) after the warm-up (Vaswani et al. 2017
 *    §5.3, eq. 3, with the peak given as train.lr instead of d_model^-0.5 · warmup^-0.5).
 * lr_scale: the plateau decay so far (1, lr_decay, lr_decay², ...; optim_decay). */
double optim_lr(const Config *cfg, long step, double lr_scale);

/* lr_scale after an epoch whose validation BLEU did not improve on the best: lr_scale ·
 * train.lr_decay under lr_schedule = plateau, unchanged under inverse_sqrt. */
double optim_decay(const Config *cfg, double lr_scale);

#endif
