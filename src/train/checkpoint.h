/* train/checkpoint.h — self-contained training checkpoints (docs/design.md §8) on top of ckptfile.
 *
 * A checkpoint holds: the config text it was trained with ("config"), the SentencePiece model
 * ("spm"), every parameter ("param/<name>") and — in a full checkpoint (checkpoint_save: a run's
 * last.ckpt, which --resume needs) but not in a weights-only one (checkpoint_save_weights:
 * best.ckpt, epoch<N>.ckpt, the average, a third of the size) — its Adam moments
 * ("adam_m/<name>", "adam_v/<name>") with their shapes and, when the model has one (ParamSet.ema,
 * train.ema_decay > 0), the moving average of every parameter ("ema/<name>"; Polyak & Juditsky
 * 1992), and the training
 * state ("train_state": step, epoch, batch
 * position in the epoch, the epoch's shuffling RNG, the Adam step, learning-rate scale, best
 * validation score of train.early_stop_metric, validations without improvement, elapsed
 * seconds). Written atomically and verified
 * (ckpt_write_atomic); loading checks every tensor's name and shape against the model built from
 * the stored config and refuses a missing, extra or misshapen tensor or a non-finite value.
 * Parameters and moments are downloaded from / uploaded to the model's backend; shapes are the
 * ParamSet's ([d0] or [d0, d1] floats). Units: elapsed in seconds, BLEU in points (0..100).
 * Source: — (docs/design.md §8, our own format).
 */
#ifndef TRAINER_CHECKPOINT_H
#define TRAINER_CHECKPOINT_H

#include "data/spm.h"
#include "model/model.h"
#include "core/rng.h"
#include "train/config.h"

typedef struct {
    long step;            /* optimizer steps done */
    int epoch;            /* current epoch, 1-based */
    long batch_in_epoch;  /* batches of this epoch already done */
    Rng epoch_rng;        /* the shuffling RNG as it was before this epoch's plan */
    int adam_t;           /* Adam's step counter */
    double lr_scale;      /* plateau decay factor so far (1, lr_decay, lr_decay², ...) */
    double best_score;    /* best validation score of train.early_stop_metric so far (-1 = none
                           * yet) */
    int bad_epochs;       /* validations since the best (epochs, validating at each epoch's
                           * end; train.valid_every) */
    double elapsed;       /* training seconds so far */
    int weights_only;     /* set by checkpoint_load: 1 when the file held no Adam moments
                           * (checkpoint_save_weights; they load as zero), else 0; not stored */
} TrainState;

/* Saves m's parameters, Adam moments (and "ema/" records when m->ps.ema is set), cfg (the run's
 * config; cfg->model is m's spec), the SentencePiece model spm and st to path atomically.
 * Errors: I/O (path and strerror), or a non-finite parameter, moment or EMA value (nothing is
 * written). */
Status checkpoint_save(const char *path, const Model *m, const Config *cfg, const Spm *spm,
                       const TrainState *st, Err *err);
/* checkpoint_save without the Adam moments and the EMA: the config, the SentencePiece model, the
 * parameters and st — what eval, translate, score, average, train.init_from and the study's
 * archives read (checkpoint_load_weights), a third of a full checkpoint's size. m may be a model
 * loaded for inference. Errors: checkpoint_save's. */
Status checkpoint_save_weights(const char *path, const Model *m, const Config *cfg,
                               const Spm *spm, const TrainState *st, Err *err);
/* Loads path into three separate outputs the caller then owns: a new model *m (model_free), the
 * stored config *cfg (cfg->model is the model's spec) and its SentencePiece model *spm
 * (spm_free); and st (may be NULL). A weights-only checkpoint (no "adam_m/" and "adam_v/"
 * records: both or neither) loads with zero moments and st->weights_only = 1. A checkpoint with "ema/" records (all of them, or it is an
 * error like any missing tensor) gives a model with ps.ema allocated and loaded; one without
 * (every older checkpoint) gives ps.ema = NULL. device_override: a DeviceType to build the model
 * on, or -1 for the device in the stored config (cfg->device says which was used). A stored
 * model.rnn_impl = cudnn comes back as own (and the model runs our kernels) where the device is
 * not cuda or the build has no cuDNN: the parameters are the same. All-or-nothing: on
 * error *m is left all zero and *spm NULL (nothing to free; whatever they held before is not
 * freed either), and *st is not written.
 * Errors (message names the file): unreadable or corrupt file (ckpt_read), a config, spm or
 * train_state record missing or of the wrong type or size, a training state out of range (step,
 * epoch, batch, Adam step, RNG increment, lr scale, best BLEU, bad epochs, elapsed time), a
 * stored config that does not parse or validate (or holds a NUL byte), a SentencePiece model that
 * does not load, a device without a backend (backend_open), a tensor missing, extra (named), of
 * another shape or type, or holding a non-finite value. Every tensor's name and shape is checked
 * against the model declared from the stored config before its buffers are allocated, so a
 * config asking for a huge model is an error, not an allocation. */
Status checkpoint_load(const char *path, Model *m, Config *cfg, Spm **spm, TrainState *st,
                       int device_override, Err *err);
/* checkpoint_load for inference (trainer eval, translate, compare; the average's other
 * checkpoints): the same checks of every record's name, shape and type, and of the file's every
 * stored byte (its payload CRC), but only the "param/" tensors are decompressed, checked for
 * non-finite values and loaded, into a model allocated by model_allocate_weights (no gradient,
 * Adam moments or EMA buffers, and the file's Adam and EMA records are not held either). Such a
 * model evaluates and decodes; it cannot be trained or saved. No training state is returned.
 * Errors: checkpoint_load's, except that the Adam and EMA values are not checked for non-finite
 * ones (a corrupt Adam or EMA record is still refused, as a checksum mismatch of its stored
 * bytes). */
Status checkpoint_load_weights(const char *path, Model *m, Config *cfg, Spm **spm,
                               int device_override, Err *err);

/* Checkpoint averaging (Vaswani et al. 2017 §6.1: "averaging the last 5 checkpoints"; fairseq's
 * average_checkpoints): writes to out a weights-only checkpoint (checkpoint_save_weights) whose
 * every parameter is the element-wise mean of that parameter over paths[0..n) (n >= 1; summed in
 * double, in argument order), with the config, SentencePiece model and training state of the
 * LAST path (no Adam moments or EMA: it is evaluated, decoded or fine-tuned from, not resumed). train_run calls it for train.average_last (avg.ckpt; Polyak & Juditsky 1992 on
 * averaging iterates). Every checkpoint is
 * loaded on the CPU and must have the same tensors (names and shapes) as the last one.
 * Errors (message names the file): any checkpoint_load error; a checkpoint of another model
 * ("A has tensor T of shape [..], B [..]: average checkpoints of one model"); n < 1; a write
 * error (out is written atomically, so a failure leaves an existing out untouched). */
Status checkpoint_average(const char *const *paths, int n, const char *out, Err *err);

#endif
