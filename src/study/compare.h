/* study/compare.h — `trainer compare`'s work: the RUNs resolved (archives, run folders, configs),
 * the configs trained, the run folders archived, and the report written from the archives
 * (archive.h, report.h). The CLI (cli/compare.c, whose top comment describes the command)
 * parses the arguments into CompareOpts.
 * Errors: compare_prepare's are the command line's (a RUN that is none of the three, a
 * --budget or --seeds given a RUN that is already trained, an unknown baseline); compare_write's
 * are failures of training, archiving, decoding, gnuplot or the files. Host memory. Source: —.
 */
#ifndef TRAINER_STUDY_COMPARE_H
#define TRAINER_STUDY_COMPARE_H

#include <stdio.h>

#include "study/archive.h"

enum { BUDGET_NONE, BUDGET_STEPS, BUDGET_EPOCHS, BUDGET_HOURS };
#define COMPARE_MAX_SEEDS 16

typedef struct {
    const char *const *runs;         /* the RUN arguments */
    int nruns;
    const char *out_dir;
    DecodeOpts beam;
    int device;                      /* a DeviceType to decode on, or -1: each checkpoint's */
    const int *sentences;            /* the heatmaps' test sentences */
    int nsentences;
    const ArchiveTestSpec *tests;    /* --test-src/--test-tgt, or none: each run's own */
    int ntests;
    const char *baseline;            /* a config's name, or NULL */
    int budget_kind;                 /* BUDGET_* */
    double budget;                   /* its N or H */
    char budget_tag[64];             /* "epochs8": folder suffix and report text */
    const unsigned long long *seeds; /* each config RUN once per seed */
    int nseeds;
    FILE *echo;                      /* where the scores tables are printed too, or NULL */
} CompareOpts;

typedef struct Compare Compare;

/* Resolves o's RUNs (names, folders, seeds and budget) into *out (compare_free it, also after
 * an error); o must outlive it. Trains and decodes nothing. */
Status compare_prepare(const CompareOpts *o, Compare **out, Err *err);
/* Trains the config RUNs that need it, archives the run folders into out_dir/archive and
 * writes the report. */
Status compare_write(Compare *c, Err *err);
void compare_free(Compare *c); /* NULL-safe; no errors */

#endif
