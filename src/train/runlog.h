/* train/runlog.h — a run's metrics.jsonl: its format, its one writer (rank 0 of train_run) and
 * its one reader, which sums a file up for archives, reports and compare.
 *
 * One JSON object a line, by "type":
 *   start  each start or resume of the run: epoch, step, time (UTC), revision (core/revision.h),
 *          cpu (core/machine.h), device, gpu (the GPU's name on cuda, else ""), threads, ranks,
 *          precision;
 *   train  every train.log_every steps: epoch, step, loss (nats per target token), ppl, lr,
 *          tok_s (source + target tokens per second), elapsed (s); with ranks, compute_s and
 *          allreduce_s;
 *   val    each validation: epoch, step (the optimizer steps done), val_ppl, val_bleu, val_chrf,
 *          lr, elapsed, peak_rss_mb;
 *   avg    the validation of avg.ckpt at the end: epoch (the last averaged), step, averaged (how
 *          many epoch checkpoints), average_last (how many train.average_last asked: more than
 *          averaged when fewer epoch checkpoints were written), val_ppl, val_bleu, val_chrf.
 * A number that is not finite (a perplexity past exp(709.78), which overflows a double) is
 * written as null, since JSON has no inf or NaN, and numbers from 1e15 on in %.17g; the reader
 * takes a null val_ppl as +inf.
 * The writer appends to a FILE the trainer opened, one flushed line a call; a resumed run first
 * trims the lines past its checkpoint's step (runlog_trim), so that a file that was trimmed and
 * continued reads as one history. The reader parses lines with cJSON: a line that is not an
 * object with a "type" string, or a train/val/avg line without its numbers, is counted in bad and
 * skipped; unknown types are skipped silently (a later trainer may add some).
 * Units: seconds, tokens per second, MiB, nats, BLEU and chrF in points. Host memory. Source: —. */
#ifndef TRAINER_TRAIN_RUNLOG_H
#define TRAINER_TRAIN_RUNLOG_H

#include <stdio.h>

#include <cjson/cJSON.h>

#include "core/common.h"

/* One "val" line (or the "avg" line): a validation, after an epoch or train.valid_every steps. */
typedef struct {
    int epoch;
    long step;
    double val_ppl, val_bleu, val_chrf; /* val_ppl +inf when it overflowed (null in the file) */
    double elapsed;  /* training time in seconds at that point, validation included; NaN if
                        absent */
    double peak_mib; /* the process's peak resident set so far; NaN if absent */
} RunVal;

/* One "start" line: where one start (or resume) of the run trained. */
typedef struct {
    int epoch;
    long step;
    char time[32], revision[64], cpu[256], device[16], gpu[256], precision[16];
    int threads, ranks;
} RunStart;

typedef struct {
    RunVal *val;        /* the "val" lines in file order */
    int nval;
    int has_avg;        /* an "avg" line was read (the last one counts) */
    RunVal avg;
    RunStart *starts;   /* the "start" lines in file order (none in files of older trainers) */
    int nstarts;
    long ntrain;        /* "train" lines */
    double tok_s;       /* the mean tok_s of the train lines (NaN without any) */
    long last_step;     /* the highest step of any line */
    long lines, bad;    /* lines read, and lines skipped as malformed */
} RunLog;

/* ---- reading ---- */

/* Reads path into *log (zeroed first). Errors: the file cannot be opened or read (named, with
 * strerror and what writes it). Malformed lines are not errors (log->bad). */
Status runlog_read(const char *path, RunLog *log, Err *err);

/* The best validation BLEU (max val_bleu, -1 without any "val" line), and the epoch it came
 * from in *epoch (may be NULL). */
double runlog_best_bleu(const RunLog *log, int *epoch);

void runlog_free(RunLog *log); /* frees and zeroes; NULL-safe; no errors */

/* ---- writing ---- */

/* One "train" line: the steps since the previous one. */
typedef struct {
    int epoch;
    long step;
    double loss;        /* mean over their target tokens (nats); ppl is written as exp(loss) */
    double lr;          /* the learning rate of the next step */
    double tok_s;       /* source + target tokens per second, all ranks together */
    double elapsed;     /* seconds of training so far */
    int ranks;          /* > 1: ranks, compute_s and allreduce_s are written too */
    double compute_s;   /* rank 0's seconds of forward + backward per step */
    double allreduce_s; /* rank 0's seconds of the sums over the ranks per step */
} RunTrain;

/* On resume: drops the lines of path that a killed run wrote after `step` (a "step" larger than
 * it), so that every step appears once, and a last line the kill cut short (no newline); the
 * file is rewritten atomically (write_file_atomic) and the count dropped printed on stdout. A
 * missing file is no error (nothing logged yet). Errors: write_file_atomic's. */
Status runlog_trim(const char *path, long step, Err *err);

/* s's time, revision, cpu, device, gpu, threads, ranks and precision added to the JSON object o,
 * in that order: the fields of a "start" line after its epoch and step (an archive's card lists
 * them too). No errors. */
void runlog_add_start_fields(cJSON *o, const RunStart *s);

/* The writers below append one line to f (metrics.jsonl, opened for appending) and flush it.
 * No errors: a failed write shows at the file's close. */

/* A "start" line from s. */
void runlog_write_start(FILE *f, const RunStart *s);

/* A "train" line from t; ranks, compute_s and allreduce_s only when t->ranks > 1. */
void runlog_write_train(FILE *f, const RunTrain *t);

/* A "val" line from v (peak_mib written as peak_rss_mb) with lr, the learning rate of the next
 * step. */
void runlog_write_val(FILE *f, const RunVal *v, double lr);

/* The "avg" line: v's epoch (the last averaged), step and scores, `averaged`, the number of
 * epoch checkpoints averaged into avg.ckpt, and `asked`, train.average_last's. */
void runlog_write_avg(FILE *f, const RunVal *v, int averaged, int asked);

#endif
