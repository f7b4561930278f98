/* train/runlog.h — reading a run's metrics.jsonl (the line types train.h lists: start, train,
 * val, avg) into one summary, for archives, reports and compare. The trainer writes the file
 * (train.c); this is its one reader.
 *
 * Lines are JSON objects (cJSON). A line that is not an object with a "type" string, or a
 * train/val/avg line without its numbers, is counted in bad and skipped; unknown types are
 * skipped silently (a later trainer may add some). A file that a resumed run trimmed and
 * continued reads as one history: train_run trims the lines past the resumed step first.
 * Units: seconds, tokens per second, MiB, BLEU and chrF in points. Host memory. Source: —. */
#ifndef TRAINER_TRAIN_RUNLOG_H
#define TRAINER_TRAIN_RUNLOG_H

#include "core/common.h"

/* One "val" line (or the "avg" line): the validation after an epoch. */
typedef struct {
    int epoch;
    long step;
    double val_ppl, val_bleu, val_chrf;
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

/* Reads path into *log (zeroed first). Errors: the file cannot be opened or read (named, with
 * strerror and what writes it). Malformed lines are not errors (log->bad). */
Status runlog_read(const char *path, RunLog *log, Err *err);

/* The best validation BLEU (max val_bleu, -1 without any "val" line), and the epoch it came
 * from in *epoch (may be NULL). */
double runlog_best_bleu(const RunLog *log, int *epoch);

void runlog_free(RunLog *log); /* frees and zeroes; NULL-safe; no errors */

#endif
