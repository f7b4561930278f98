/* train/run.h — one training run as train_run holds it (train.h), opened and closed: the backend
 * and its banner, the run folder and its lock (train/rundir.h), the corpora, the SentencePiece
 * model and the encoded splits (data/prepare.h), the model (new, fine-tuned from train.init_from,
 * or resumed from last.ckpt), the batch buffers, config.ini and metrics.jsonl (train/runlog.h).
 * With N ranks (dist/dist.h) rank 0 does the work of one process and the others take its
 * SentencePiece model, state and parameters (train/ranks.h); rank 0 alone holds the lock and
 * writes the files. Private to train/ (train.c's loop and this). Units: seconds. Host memory
 * except the model's (its backend's). Source: — (plain engineering). */
#ifndef TRAINER_TRAIN_RUN_H
#define TRAINER_TRAIN_RUN_H

#include <stdio.h>

#include "data/batch.h"
#include "data/corpus.h"
#include "data/encoded.h"
#include "data/spm.h"
#include "model/model.h"
#include "train/checkpoint.h"
#include "train/config.h"
#include "train/inject.h"

/* Everything one run holds; train_run's parts share it. */
typedef struct {
    Config cfg;
    char dir[1024], last[1100], best[1100], mpath[1100]; /* save_dir and its files */
    Corpus train, val;
    Encoded tenc, venc;
    Spm *spm;
    Model model;
    long *keep, nkeep;   /* the training pairs within data.max_len */
    BatchPlan plan;      /* the current epoch's batches */
    TokenBatch tb;       /* the current batch (host), sized once for the largest */
    FILE *metrics;       /* rank 0's metrics.jsonl, opened for appending; NULL on the others */
    int lock_fd;         /* rank 0's lock on save_dir (rundir_lock); -1 on the others */
    TrainState st;
    NonfiniteInjection inject; /* tests only: TRAINER_TEST_INJECT_NONFINITE (train/inject.h) */
    double t_start;      /* now_seconds() when the run's training time began */
    int rank, world;     /* dist_rank(), dist_size(); rank 0 (the lead) validates, logs, saves */
} Run;

/* Opens the run of cfg_in into *r (zeroed by the caller; cfg_in is copied): the backend of
 * train.device (one GPU per rank by local rank with NCCL between them on cuda with N ranks),
 * its line and the model's on stdout; save_dir, locked; the corpora; the model (new with its
 * SentencePiece model trained or loaded, from train.init_from, or with resume != 0 from
 * last.ckpt, whose config must match cfg_in but for the keys that may change on resume, and
 * whose later metrics.jsonl lines are trimmed); the encoded splits, checked against the model's
 * source length limit; the batch buffers; metrics.jsonl opened for appending and config.ini
 * written. Every rank calls it. Errors, on every rank (ranks_agree): the backend's, NCCL's, the
 * folder's and its lock's, the data's, SentencePiece's, the checkpoint's (no last.ckpt to resume,
 * another config), encoding's, a validation source too long for the model, the files'. The
 * caller calls run_close after either outcome. */
Status run_open(Run *r, const Config *cfg_in, int resume, Err *err);

/* Frees what run_open made, as far as it got, and releases the run folder. No errors. */
void run_close(Run *r);

#endif
