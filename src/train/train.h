/* train/train.h — the training loop: label smoothing, the optimiser of train/optim.h (gradient-norm
 * clipping, Adam, warm-up + plateau decay or inverse_sqrt), per-epoch validation, early
 * stopping, checkpoints, metrics.
 *
 * lr_scale starts at 1 and is multiplied by lr_decay after every epoch whose validation BLEU did
 * not improve on the best (plateau; optim_decay, optim_lr). Training stops after max_epochs,
 * max_steps, max_hours, or patience epochs without improvement.
 *
 * Outputs in save_dir: last.ckpt (every save_every steps and each epoch end), best.ckpt (best
 * validation BLEU), metrics.jsonl (one JSON object per log line and per validation), spm.model.
 *
 * Faults: a step with a non-finite loss or gradient skips its update (logged on stderr with the
 * step); train.max_nonfinite in a row end the run with an error. SIGINT/SIGTERM finish the step
 * (or the epoch's validation), save last.ckpt and return STATUS_OK; a second signal kills the
 * process at once. Tests may poison steps through TRAINER_TEST_INJECT_NONFINITE (train/inject.h).
 * Units: losses logged in nats per target token, learning rates per step, max_hours in hours,
 * elapsed time in seconds, BLEU/chrF in points. Sources: train/optim.h (Kingma & Ba 2015 Alg. 1,
 * Pascanu et al. 2013, Vaswani et al. 2017 §5.3), label smoothing Szegedy et al. 2016 §7,
 * validation BLEU eval/metrics.h (Papineni et al. 2002 / sacreBLEU).
 */
#ifndef TRAINER_TRAIN_H
#define TRAINER_TRAIN_H

#include "train/config.h"

/* Trains as cfg says; resume != 0 continues from save_dir/last.ckpt exactly where it stopped.
 * Errors (STATUS_ERR): data, SentencePiece, model, checkpoint or I/O problems, with the file and
 * a remedy; train.max_nonfinite non-finite steps in a row (naming the steps). */
Status train_run(const Config *cfg, int resume, Err *err);

/* Sets OpenMP and OpenBLAS thread counts (threads <= 0: all cores). No errors. */
void set_threads(int threads);

#endif
