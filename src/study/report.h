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
 * The page opens with a summary per table with a baseline: each config's Δ BLEU per test set
 * with its verdict and its training speed and peak memory relative to the baseline (its runs'
 * own, on the table's reference machine), then the configs grouped by
 * verdict, the minimum detectable effect and the seed control's count. Per table (a heading
 * each): a scores table (per config: parameters, seeds, best validation BLEU, and per test set
 * the BLEU greedy, BLEU and chrF with beam K, mean ± sd), for a table whose test sets are
 * joined documents (data.concat > 1) the documents whose beam translation does not split at <sep>
 * into their source's sentences and the sentence BLEU of those that do (the cards' figures,
 * archive.h; mean ± sd over seeds), a cost table (epochs, runs, training
 * time, tokens/s, peak memory, where it trained: a row per config and machine, so that no time
 * is averaged across machines), the significance of every config against the table's baseline
 * on every test set over its training runs (eval/significance.h, seed_test: the seeds' variance
 * pooled over the table's configs plus the test set's, from a paired bootstrap of 2,000
 * resamples, seed 12345, grown ×4 up to 32,000 while p's Monte Carlo error could change a
 * verdict): Δ of the seed-averaged BLEU, its 95% interval, p ± its Monte Carlo error, p adjusted
 * by Holm's method over the table's comparisons (configs × test sets), and the verdict at 0.05
 * (better, worse or not significant; a Δ that rounds to 0.00 is never better or worse; identical
 * translations are called identical; no verdict when no config of the table has two seeds);
 * per test set the pooled seed deviation and the minimum detectable effect (80% power at 0.05,
 * and at 0.05 over the comparisons); the seed control (each config's first ⌊m/2⌋ seeds against
 * the rest, uncorrected, and how many are significant); the validation curves (mean over seeds
 * per epoch: curves[_TAG].png), test BLEU against parameters and training time
 * (tradeoff[_TAG].png; the times in both figures are those of the runs on the table's reference
 * machine, the one on which most configs have a run) and how peaked each config's attention is.
 * Where x_label is given and two or more tables have an x, a section after the summary gives
 * each attention (config_attention_text: the tables' configs of one attention form one series;
 * where two configs of a table share an attention, the first in the plan stands for it) its
 * BLEU with beam K on every test set at each table's x, mean ± sd over the seeds, as a table and
 * a figure (across.png: a panel per test set, BLEU against x).
 * The attention heatmaps of the first run of each config (attention_<config>_<i>.png) are on a
 * page of their own, attention.md, that the report links. Then one table of every run (the
 * checkpoint scored, where and by which revision it trained, its archive), the line naming the
 * date and machine, and the notes file, verbatim.
 *
 * Errors: runs of one table whose test sets differ (their references), a run without a test set
 * the report names, a baseline that is no config of its table, gnuplot's failures (eval/plot.h),
 * a file that cannot be written. Host memory. Sources: Koehn 2004; Clark et al. 2011; Dror et
 * al. 2018; Bouthillier et al. 2021; Holm 1979; sacreBLEU (Post 2018) for BLEU and chrF.
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
    const char *pending;        /* the plan's configs with no run archived yet, comma-separated
                                 * (the summary names them), or NULL */
    int has_x;                  /* 1: the table stands at x on the across-tables axis */
    double x;                   /* (ReportOpts.x_label), e.g. its examples' mean length */
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
    const char *x_label;        /* the quantity the tables' x measure (the across-tables
                                 * section), or NULL */
} ReportOpts;

/* Writes the report (see the top of this file) into o->out_dir: md_file, csv_file (a row per
 * run: its card's facts and per test set BLEU and chrF, greedy and beam; where some table's
 * tests are joined documents, also per test set its concat, split_mismatches_beam and
 * bleu_split_beam, empty where the card has none), significance.csv (when a table has a
 * baseline: a row per config and test set against the baseline, and one per seed control),
 * attention.md and the PNG figures. Errors: see the top. */
Status report_write(const ReportOpts *o, const ReportTable *tables, int ntables, Err *err);

/* The config name of a run without a given one: its name without a trailing "_s<digits>" into
 * buf (n bytes). No errors. */
void report_stem(const char *name, char *buf, size_t n);

#endif
