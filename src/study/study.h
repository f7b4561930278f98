/* study/study.h — a study: a comparison that accumulates run by run, on whatever machines are
 * at hand, and reports from the runs' archives alone (archive.h, report.h; docs/design.md §10).
 *
 * The plan is an INI file; every path in it is relative to its folder:
 *
 *   [study]
 *   title = Attention kinds compared on Multi30k de-en     the report's heading
 *   epochs = 8                    the one budget: every run trains exactly this many epochs
 *                                 (train.max_epochs; max_steps, max_hours and patience lifted)
 *   precision = bf16              the one precision of every run (train.precision)
 *   seeds = 1 2 3                 every config is trained once per seed (train.seed)
 *   test_src = a.de.gz b.de.gz    the test sets, paired in order with test_tgt; each run's
 *   test_tgt = a.en.gz b.en.gz    archive holds their translations (greedy and beam); a file
 *                                 that cannot be read refuses the plan
 *   spm_model = spm.model         the SentencePiece model every run loads (data.spm_model),
 *                                 trained once from the first config's data when missing
 *                                 (default spm.model)
 *   beam = 5                      the beam search (default 5) and its length penalty
 *   len_penalty = 1.0             (default 1.0)
 *   sentences = 0 1 2             the attention heatmaps' test sentences (default 0 1 2)
 *   notes = notes.md              Markdown appended to the report (optional)
 *   x_label = example length      what the tables' x measure: with two or more tables of an
 *                                 x, the report gives each attention's BLEU against x
 *                                 (report.h; optional, and then some table must give x)
 *
 *   [table NAME]                  one table of the report per section, in order
 *   title = Transformer           its heading (default NAME)
 *   configs = a.ini b.ini         its configs (trainer configs; each run is named
 *                                 <config file name>_s<seed>)
 *   baseline = a                  the config every other is tested against (optional)
 *   x = 65                        the table's place on the x_label axis (a finite number;
 *                                 only with x_label)
 *
 * A run's folder is runs/<run> in the study's folder (its checkpoints; not meant to be kept)
 * and its archive archive/<run>. study_train trains every run that has no archive yet, N at a
 * time, each in a process of its own running this program's `train` command with one thread
 * (train.threads = 1), its output appended to runs/<run>.log; a run whose folder holds a
 * last.ckpt resumes from it; a run another trainer is training (its folder is locked) is left to
 * it. Each run is archived (this program's `archive` command) as soon as it ends. study_report
 * writes the report into the study's folder: README.md, results.csv, significance.csv and the
 * figures, from the archives there are. study_status lists the runs archived, running (a
 * last.ckpt or a lock) and missing, and estimates the time left from the runs' times so far.
 * study_load loads and validates every config with the plan's settings and asks whether this
 * machine runs it, so a machine that cannot run the plan's precision is refused with the reason
 * (config_validate, backend_can_run), and so is a plan whose configs do not share the training
 * data and vocabulary that one SentencePiece model needs. SIGINT or SIGTERM during study_train
 * stop the runs (each saves last.ckpt); the next start resumes them.
 * A config's recipe is the file it includes (`include = FILE`, train/config.h). study_load
 * compares each config's resolved keys with its recipe's, both with the plan's settings, and
 * sorts the keys that differ into the attention's (model.attention, self_attention,
 * dec_self_attention, cross_attention, the options only an attention reads: linformer_*,
 * local_*, and model.heads in an RNN) and the others; the report's introduction, --status and
 * the start of training say that every config differs from its recipe in the attention alone,
 * or name each config's other keys with their values, and name the configs without a recipe.
 * One SentencePiece model: study_train and study_report refuse an archive whose card records
 * another model than the plan's spm_model (spm_hash; cards without the record are accepted, and
 * the report says how many), and study_train a run folder to be resumed whose spm.model (the
 * model it began with) is another; the runs it starts take the plan's (data.spm_model).
 * Errors: the plan's (naming FILE:LINE and the key), a config's or its recipe's (config_load,
 * config_validate), a table whose configs set different data.concat (its runs would be scored
 * on differently joined test documents), the SentencePiece model's training, loading or hashing,
 * an archive or run folder of another SentencePiece model (naming it, both hashes and what to
 * do), the report's.
 * Host memory. Source: Clark et al. 2011 (why several seeds); docs/design.md §10.
 */
#ifndef TRAINER_STUDY_STUDY_H
#define TRAINER_STUDY_STUDY_H

#include <stdio.h>

#include "core/common.h"

typedef struct Study Study;

/* Reads and checks the plan in file (its test files readable), and compares each config with
 * its recipe; device >= 0 (a DeviceType) trains and decodes the missing runs there instead of
 * on their configs' train.device. *out: study_free it (also after an error). check = 0 skips
 * the configs' validation (for study_status). */
Status study_load(const char *file, int device, int check, Study **out, Err *err);

/* Restricts study_train and study_status to the runs whose names (<config>_s<seed>) match one
 * of patterns: shell globs (fnmatch(3), such as `*_k64_s1` or `flash_*`) separated by commas.
 * The report still covers every archive of the plan. Errors: a pattern that matches no run of
 * the plan (naming it, the plan and a run's name), patterns over 511 characters. */
Status study_only(Study *s, const char *patterns, Err *err);

/* Prints the runs archived, running and missing, what the configs change in their recipes, and
 * the time left at jobs runs at a time, to f: from the archived runs' times on the kind of
 * device the missing runs train on (the study's device, else the CPU) and the running runs'
 * epochs. No errors. */
void study_status(Study *s, int jobs, FILE *f);

/* Trains the shared SentencePiece model (spm_model) when missing, and checks that every archive
 * and every run folder to resume has that model (see the top): what study_train does before it
 * trains, for a machine that measures the plan's configs (bench/study_speed.sh) or packs it for
 * another. Errors: the SentencePiece model's (training, loading, hashing), an archive or run
 * folder of another model. */
Status study_prepare(Study *s, Err *err);

/* study_prepare, then prints what the configs change in their recipes, then trains every run without an archive, jobs at a time, archiving each; a run
 * whose archive appeared while it trained (another machine archived it) keeps that archive and
 * is not archived again. *failed: the runs that failed (each named on stderr with its log);
 * *stopped: 1 when a signal stopped the study. Errors: the SentencePiece model's (training,
 * loading, hashing), an archive or run folder of another model. */
Status study_train(Study *s, int jobs, int *failed, int *stopped, Err *err);

/* Writes the report from the archives there are; its introduction states the plan, what the
 * configs change in their recipes, the checkpoint scored (avg.ckpt when the run averaged its
 * last checkpoints and that average validates at least as well as best.ckpt, else best.ckpt)
 * and how many runs trained from a tree with uncommitted changes. Errors: no archive yet, an
 * archive of another SentencePiece model than the plan's, and report_write's. */
Status study_report(Study *s, Err *err);

void study_free(Study *s); /* NULL-safe; no errors */

#endif
