/* train/rundir.h — the run folder (train.save_dir) as train_run keeps it: one training run at a
 * time (an flock on dir/train.lock, which exists while a run holds it), no temporary file left by
 * a killed write, and the epoch
 * checkpoints epoch<N>.ckpt of train.keep_checkpoints, pruned as new ones are committed and
 * averaged into avg.ckpt at the end (train.average_last). The checkpoints themselves are
 * train/checkpoint.h's; metrics.jsonl is train/runlog.h's. Paths are at most about 1 KiB (the
 * folder as config_save_dir gives it). Source: — (plain engineering). */
#ifndef TRAINER_TRAIN_RUNDIR_H
#define TRAINER_TRAIN_RUNDIR_H

#include <stddef.h>

#include "core/common.h"

/* One training run per folder: takes an exclusive flock on dir/train.lock (dir must exist;
 * the file is created), held until the descriptor is closed or the process ends (the kernel
 * releases it on any exit, SIGKILL included, so it never goes stale: a killed run leaves the
 * file, which the next run takes over), and writes the holder's pid into the file for the
 * message of the next one. A lock taken on a file that rundir_unlock deleted meanwhile does not
 * count: the new file is locked instead. Then removes the temporary files that a killed atomic
 * write left in dir (<name>.tmp.<pid>, temp_path_for's names, whose process no longer runs),
 * each named on stdout. Returns the descriptor (release it with rundir_unlock), or -1 with err
 * set: another process holds the lock (its pid and a remedy named: two runs would overwrite each
 * other's checkpoints), or the file cannot be opened or locked (strerror). */
int rundir_lock(const char *dir, Err *err);

/* Releases the folder rundir_lock(dir) locked as fd: deletes dir/train.lock, then closes fd, so
 * that the file exists only while a run holds it. fd < 0: nothing. A file that cannot be deleted
 * is named on stderr (the folder is released all the same); no error. */
void rundir_unlock(const char *dir, int fd);

/* 1 when a trainer is training in the run folder dir now (it holds dir/train.lock), else 0. No
 * errors. */
int rundir_busy(const char *dir);

/* dir/epoch<epoch>.ckpt into buf (n bytes, truncated to fit). */
void rundir_epoch_ckpt(char *buf, size_t n, const char *dir, int epoch);

/* After epoch<epoch>.ckpt was committed: deletes the epoch checkpoints of dir beyond the last
 * keep of those up to epoch, and any of a later epoch (left by an earlier run in this folder,
 * which this run has overwritten up to epoch). Only names of exactly the form epoch<N>.ckpt
 * count. A file that cannot be deleted is named on stderr; no error. */
void rundir_prune_epochs(const char *dir, int epoch, int keep);

/* train.average_last = k > 0 at the end of a run: writes out (dir/avg.ckpt) as
 * checkpoint_average of the last k epoch checkpoints of dir up to epoch (fewer when fewer exist,
 * which the printed line says), and sets *averaged to their count and *last to the last one's
 * epoch. With none, prints that no avg.ckpt is made and sets *averaged = 0. Errors:
 * checkpoint_average's (out is written atomically: a failure leaves an older file as it was). */
Status rundir_average(const char *dir, int epoch, int k, const char *out, int *averaged,
                      int *last, Err *err);

#endif
