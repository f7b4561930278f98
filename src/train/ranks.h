/* train/ranks.h — what train_run's ranks (dist/dist.h; docs/distributed.md) settle together
 * beyond the step's sums: a verdict after a part every rank ran, a flag raised on any rank,
 * rank 0's state after its validation, and at start-up rank 0's SentencePiece model, training
 * state and parameters. Rank 0 validates, logs and saves; the others wait for its verdict and
 * take its state, so that every rank goes on (or stops) with the same one. With one rank each
 * call exchanges nothing. Faults of the exchange end the rank (dist/dist.h). Source: — (plain
 * engineering). */
#ifndef TRAINER_TRAIN_RANKS_H
#define TRAINER_TRAIN_RANKS_H

#include "core/common.h"
#include "data/spm.h"
#include "model/model.h"
#include "train/checkpoint.h"
#include "train/config.h"

/* After a part every rank ran, each with its own status s (what names the part in messages):
 * STATUS_OK when every rank passed; otherwise STATUS_ERR on every rank, those that passed with
 * err naming the first rank that failed and its host (its own message is on its stderr). One
 * rank: s. */
Status ranks_agree(Status s, const char *what, Err *err);

/* 1 when v is non-zero on any rank (a sum over the ranks; what names it in fault messages),
 * else 0; one rank: v != 0. */
int ranks_any(int v, const char *what);

/* After rank 0 validated and saved (its status s; the other ranks pass STATUS_OK): ranks_agree,
 * then rank 0's training state *st and early-stopping decision *stop to every rank. Errors:
 * ranks_agree's (nothing is sent then). */
Status ranks_follow_lead(Status s, TrainState *st, int *stop, Err *err);

/* Start-up with N > 1 ranks: rank 0's SentencePiece model (*spm), training state (*st),
 * parameters, Adam moments and, with train.ema_decay, EMA weights to every rank; rank 0 has
 * built or loaded *m, the others build it here from cfg (dist_check_ranks found the configs
 * equal), and *spm and *m are theirs to free. be is the backend of m: device memory goes through
 * a host copy (the MPI need not be CUDA-aware). Errors, on every rank: rank 0's model cannot be
 * serialized, or a rank cannot load it or build the model (ranks_agree's message). A rank whose
 * model has another parameter count than rank 0's aborts (CHECK). */
Status ranks_share_start(const Config *cfg, const Backend *be, Spm **spm, TrainState *st,
                         Model *m, Err *err);

#endif
