/* cli/cli.h — what the command files of `trainer` share (src/cli/: main.c dispatches to train.c,
 * eval.c, translate.c, compare.c, average.c; args.c holds the argument helpers below).
 *
 * The CLI is the top of the dependency graph (docs/design.md §1): it loads configs and checkpoints,
 * chooses the backend, and hands models to train and eval. Every cmd_* function returns the
 * process exit code — 0 success, 1 a failure of the run, 2 a bad command line — and only these
 * files turn a Status into an exit code. Every cmd_* prints its own messages on stderr.
 * Source: — (plain engineering: the command line).
 */
#ifndef TRAINER_CLI_H
#define TRAINER_CLI_H

#include <stdio.h>

#include "eval/decode.h"
#include "study/archive.h"

/* Prints the usage text of every command to f (for --help and after a bad command line). No
 * errors. */
void cli_usage(FILE *f);

/* "--device cpu|cuda" → *dev = DEVICE_CPU or DEVICE_CUDA; 0, or 2 with "trainer[ cmd]: --device
 * must be cpu or cuda, not 'X'" on stderr (cmd NULL: no command in the message). */
int cli_device_arg(const char *s, int *dev, const char *cmd);

/* A list of whole numbers in [0, limit] separated by commas or blanks ("0,1,2", "1 2 3") into
 * out[0..*n), at most max, each at most once. Returns 0, or 2 with "trainer: WHAT S: ..." on
 * stderr. */
int cli_parse_numbers(const char *s, unsigned long long *out, int max, int *n,
                      unsigned long long limit, const char *what);

/* Test sets given as --test-src FILE --test-tgt FILE, repeatable, paired in order. */
#define CLI_MAX_TESTS ARCHIVE_MAX_TESTS
typedef struct {
    ArchiveTestSpec spec[CLI_MAX_TESTS];
    int nsrc, ntgt;
} CliTests;

/* 1 when argv[*i] is --test-src or --test-tgt (its file taken into t, *i moved past it), 0 when
 * it is another argument, 2 on a missing file or too many (message naming cmd on stderr). */
int cli_test_arg(int argc, char **argv, int *i, CliTests *t, const char *cmd);
/* 0 when the --test-src and --test-tgt given pair up, else 2 with a message. */
int cli_tests_done(const CliTests *t, const char *cmd);

/* The arguments of `trainer eval` and `trainer translate` (each refuses the other's). */
typedef struct {
    const char *checkpoint, *src, *ref, *attention_map;
    int json, device, len_penalty_set; /* device: a DeviceType, or -1 = the checkpoint's */
    DecodeOpts dec;
} EvalArgs;

/* Parses argv[0..argc) of eval or translate (cmd names it in messages). Returns 0, or 2 on an
 * unknown or incomplete argument or a missing --checkpoint (message and usage on stderr). */
int cli_parse_eval_args(int argc, char **argv, EvalArgs *a, const char *cmd);

/* trainer [train] --config FILE [--set section.key=value]... [--resume] (cli/train.c): 2 for a
 * bad command line, config or --set (config_load / config_set / config_validate's message);
 * 1 when train_run fails. */
int cmd_train(int argc, char **argv);

/* trainer eval --checkpoint FILE --src FILE --ref FILE [--beam K] [--len-penalty A] [--json]
 *              [--device cpu|cuda] (cli/eval.c): 2 for a bad command line; 1 when the
 *              checkpoint, the files, decoding or scoring fail. */
int cmd_eval(int argc, char **argv);
/* trainer translate --checkpoint FILE [--beam K] [--len-penalty A] [--attention-map PNG]
 *                   [--device cpu|cuda] < input > output (cli/translate.c): 2 for a bad
 *                   command line; 1 when the checkpoint, reading, translating or the map fail. */
int cmd_translate(int argc, char **argv);
/* trainer compare RUN... [options] (cli/compare.c, whose top comment describes it): 1 also for a
 * training, checkpoint, metrics, test-set, decoding, gnuplot or output failure; 2 also for a
 * RUN that is neither a run folder with best.ckpt and metrics.jsonl nor a loadable config. */
int cmd_compare(int argc, char **argv);
/* trainer archive RUN_DIR --out DIR [options] (cli/archive.c, whose top comment describes it):
 * 2 for a bad command line, 1 when the run cannot be archived (archive_run's errors). */
int cmd_archive(int argc, char **argv);
/* trainer study STUDY.ini [--jobs N] [--status] [--report] [--device cpu|cuda] (cli/study.c,
 * whose top comment describes it): 2 for a bad command line or plan, 1 when a run fails to
 * train or archive or the report fails. */
int cmd_study(int argc, char **argv);
/* trainer average --out FILE CKPT... (cli/average.c): checkpoint_average of the CKPTs into FILE;
 * 2 for a bad command line, 1 when a checkpoint does not load, the models differ or the write
 * fails. */
int cmd_average(int argc, char **argv);

#endif
