/* train/train.h — the training loop: label smoothing, the optimiser of train/optim.h (gradient-norm
 * clipping, Adam, warm-up + plateau decay or inverse_sqrt), gradient accumulation
 * (train.accum_steps), validation at each epoch's end or every train.valid_every steps, early
 * stopping, checkpoints, metrics; a run may start from a checkpoint's weights (train.init_from,
 * train/finetune.h). Each optimizer step is train/step.h's (train_step_accum).
 *
 * lr_scale starts at 1 and is multiplied by lr_decay after every validation whose score
 * (train.early_stop_metric: BLEU, chrF or perplexity) did not improve on the best (plateau;
 * optim_decay, optim_lr). Training stops after max_epochs, max_steps, max_hours, or patience
 * validations without improvement. A run that reaches max_hours validates its last weights
 * before it ends (best.ckpt if better; within an epoch, or at its end as every epoch's end),
 * unless train.valid_every has just done so; one that reaches max_steps does not (a run resumed
 * with a larger max_steps goes on as if it had never stopped).
 *
 * Outputs in save_dir (the run folder, train/rundir.h): last.ckpt (every save_every steps, each
 * epoch end and each validation), best.ckpt (best validation score), config.ini (every key the
 * model reads, as resolved), spm.model (trained, or a copy of data.spm_model; data/prepare.h),
 * metrics.jsonl (a "start" line at each start or resume, a "train" line every train.log_every
 * steps, a "val" line each validation, an "avg" line for avg.ckpt: train/runlog.h); with
 * train.keep_checkpoints = K, epoch<N>.ckpt of the last K epochs (older ones deleted once the new
 * one is committed); with train.average_last = K, avg.ckpt at the end of a run that was not
 * stopped by a signal: the mean parameters of the last K epoch checkpoints (checkpoint_average;
 * Vaswani et al. 2017 §6.1), validated (the "avg" line) and its BLEU printed next to best's;
 * fewer than K written (a run stopped early) are averaged all the same, and the log and the
 * "avg" line (averaged against average_last) say so.
 *
 * train.ema_decay = d > 0: ema = d·ema + (1 − d)·θ after every applied optimizer step
 * (params_ema_update; Polyak & Juditsky 1992), starting from the initial weights, stored in every
 * checkpoint ("ema/" records) and restored on resume exactly; validation uses the EMA weights
 * (swapped in and back), and best.ckpt holds them as its parameters.
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
 * With N ranks (dist/dist.h; mpirun -np N) every rank calls it: every global batch is split by
 * batch_shard, rank 0 alone validates, logs, writes metrics.jsonl and saves (the others wait
 * for its decision), and a resumed run may have another N (the data position is the batch,
 * not the rank). At start-up the ranks compare their config text, binary and training files
 * (size + CRC32) with rank 0's and refuse to start on a difference (naming rank and item).
 * Errors (STATUS_ERR): data, SentencePiece, model, checkpoint or I/O problems, with the file and
 * a remedy; train.max_nonfinite non-finite steps in a row (naming the steps). */
Status train_run(const Config *cfg, int resume, Err *err);

/* The joint SentencePiece model that train_run would train for cfg (data.vocab_size pieces on
 * the training text of data.train_src/train_tgt, one thread: deterministic), written as
 * dir/spm.model (and spm.vocab); dir is created. For runs that share one model (data.spm_model).
 * Errors: the corpus's (corpus_load), SentencePiece's, the folder's. */
Status train_spm_model(const Config *cfg, const char *dir, Err *err);

#endif
