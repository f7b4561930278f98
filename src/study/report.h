/* study/report.h — the report comparing runs, written from their archives alone (archive.h):
 * the Markdown page, a CSV of every run, a CSV of the significance tests and the figures. Both
 * `trainer compare` and `trainer study` write it; the same archives give the same report, byte
 * for byte, except the one line that names the date and machine it was written on.
 *
 * Runs are grouped into configs: a run's group is the name given for it, or else its name without
 * a trailing _s<seed> when every run of that stem has the same config apart from the keys that do
 * not change what is trained (run.name, train.seed, train.save_dir, data.cache_dir,
 * data.spm_model's path, train.threads, train.device, train.log_every, train.save_every,
 * train.max_nonfinite, dist.*); otherwise its own name. A group's figures are the mean and the
 * sample standard deviation over its runs (its seeds).
 *
 * Per table (a heading each): a scores table (per config: parameters, seeds, best validation
 * BLEU, and per test set the BLEU greedy, BLEU and chrF with beam K, mean ± sd), a cost table
 * (epochs, runs, training time, tokens/s, peak memory, where it trained: a row per config and
 * machine, so that no time is averaged across machines), the significance of every
 * config against the table's baseline on every test set (paired bootstrap over the test
 * sentences scoring every seed's beam translations in each resample, Clark et al. 2011 §4 with
 * Koehn 2004; eval/significance.h, 1000 resamples, seed 12345): Δ of the seed-averaged BLEU, its
 * 95% interval, p, the seeds' standard deviations ("—" for one seed), and a sentence in words
 * per config (significant at 0.05 or not; a Δ that rounds to 0.00 is never better or worse;
 * identical translations are called identical), the validation curves (mean over seeds per
 * epoch: curves[_TAG].png), test
 * BLEU against parameters and training time (tradeoff[_TAG].png; the times in both figures are
 * those of the runs on the table's reference machine, the one on which most configs have a run)
 * and the attention heatmaps of
 * the first run of each config (attention_<config>_<i>.png). Then one table of every run (the
 * checkpoint scored, where and by which revision it trained, its archive), the line naming the
 * date and machine, and the notes file, verbatim.
 *
 * Errors: runs of one table whose test sets differ (their references), a run without a test set
 * the report names, a baseline that is no config of its table, gnuplot's failures (eval/plot.h),
 * a file that cannot be written. Host memory. Sources: Koehn 2004; Clark et al. 2011; sacreBLEU
 * (Post 2018) for BLEU and chrF.
 */
#ifndef TRAINER_STUDY_REPORT_H
#define TRAINER_STUDY_REPORT_H

#include "study/archive.h"

/* One table of the report: its runs and their baseline. */
typedef struct {
    const char *title;          /* the section's heading */
    const char *tag;            /* "" or a name for its figures' files (curves_TAG.png) */
    const char *baseline;       /* the config (group) every other is tested against, or NULL */
    const char *baseline_due;   /* baseline NULL: the plan's baseline, which has no run yet (the
                                 * report says so where the significance will be), or NULL */
    const Archive *const *runs; /* nruns archives (not owned) */
    const char *const *groups;  /* the config of each run, or NULL: derived (above) */
    int nruns;
} ReportTable;

typedef struct {
    const char *out_dir;        /* created if missing */
    const char *md_file;        /* "compare.md", "README.md" */
    const char *csv_file;       /* one row per run, e.g. "compare.csv" */
    const char *title;          /* the page's "# " heading */
    const char *intro;          /* Markdown after the heading, or NULL */
    const char *notes_file;     /* a Markdown file appended verbatim, or NULL */
    const char *const *tests;   /* the test sets (names) of the score columns, in order */
    int ntests;
    const int *sentences;       /* the heatmaps' sentences (of the first test set) */
    int nsentences;
    FILE *echo;                 /* NULL, or where the scores tables are also written (stdout) */
} ReportOpts;

/* Writes the report (see the top of this file) into o->out_dir: md_file, csv_file,
 * significance.csv (when a table has a baseline) and the PNG figures. Errors: see the top. */
Status report_write(const ReportOpts *o, const ReportTable *tables, int ntables, Err *err);

/* The config name of a run without a given one: its name without a trailing "_s<digits>" into
 * buf (n bytes). No errors. */
void report_stem(const char *name, char *buf, size_t n);

#endif
