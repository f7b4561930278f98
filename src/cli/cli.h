/* cli/cli.h — what the command files of `trainer` share (src/cli/: main.c dispatches to train.c,
 * eval.c, translate.c, compare.c, average.c; args.c holds the argument helpers below, usage.c
 * the usage texts).
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

#include "data/spm.h"
#include "eval/decode.h"
#include "eval/metrics.h"
#include "model/model.h"
#include "study/archive.h"
#include "train/config.h"

/* Prints the usage text of every command to f (for --help and after a bad command line;
 * cli/usage.c, as the per-command texts below). No errors. */
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
#define CLI_MAX_MODELS 8 /* checkpoints of an ensemble */
typedef struct {
    const char *checkpoint;   /* --checkpoint: one file, or an ensemble's files a.ckpt,b.ckpt */
    const char *src, *attention_map, *out;
    const char *refs[METRICS_MAX_REFS]; /* --ref, repeatable (eval) */
    int nrefs;
    int json, device, len_penalty_set; /* device: a DeviceType, or -1 = the checkpoint's */
    int help;                 /* --help or -h: print the command's usage, exit 0 */
    int seed_set;             /* --seed was given */
    int threads;              /* --threads N (1..4096); 0: the checkpoint's train.threads */
    int crop_long;            /* --crop-long (eval, translate, score): source lines over
                               * data.max_line_bytes, or over the tokens the model can read,
                               * cut (refused without it) */
    int stream;               /* --stream (translate): each line translated as it arrives */
    int alignment;            /* --alignment (translate): " ||| i-j ..." after each line */
    int normalize;            /* --normalize (score): the mean log-probability per token */
    int concat;               /* --concat K (eval): lines joined K at a time; 0 = the
                               * checkpoint's data.concat */
    const char *input, *output; /* --input FILE, --output FILE (translate): instead of
                               * standard input / output */
    DecodeOpts dec;           /* --beam, --len-penalty, --nbest, --sample, --seed,
                               * --batch-tokens, --batch-size */
} EvalArgs;

/* "--threads N" → *threads = N, a whole number from 1 to 4096 (CPU threads); 0, or 2 with
 * "trainer CMD: --threads S: give 1 to 4096" on stderr. */
int cli_threads_arg(const char *s, int *threads, const char *cmd);

/* Parses argv[0..argc) of eval, translate or score (cmd names it in messages). Returns 0
 * (a->help set when --help or -h came: nothing else is checked), or 2 on an unknown or
 * incomplete argument, a bad --nbest K (1..64), --sample (topk:K with K >= 1, topp:P with
 * 0 < P <= 1, or temp:T with T > 0), --batch-tokens or --batch-size (1..10^8), --seed or
 * --threads (cli_threads_arg), --len-penalty without a beam search (greedy decoding, or
 * sampling, ranks no hypotheses), more than METRICS_MAX_REFS --ref, or a missing --checkpoint
 * (message on stderr). */
int cli_parse_eval_args(int argc, char **argv, EvalArgs *a, const char *cmd);

/* The models of list, a checkpoint or comma-separated checkpoints (an ensemble of up to
 * CLI_MAX_MODELS), loaded for inference (checkpoint_load_weights) on device (a DeviceType, or
 * -1: each its stored one) into models[0..*n); *cfg gets the first one's config and *spm its
 * SentencePiece model. Returns 0, or 1 with a message naming cmd and the file on stderr (nothing
 * then to free): device = DEVICE_CUDA where no GPU is usable (said before any checkpoint is
 * read: "--device cuda: no usable GPU (CUDA device) was found ..."), a checkpoint that does not
 * load, more than CLI_MAX_MODELS, an empty name, a SentencePiece model other than the first
 * checkpoint's (an ensemble decodes one vocabulary), or models on different devices. Then opens
 * their backend (backend_open) with threads CPU threads (0: the first config's train.threads),
 * leaving the precision of the products as it is. Free with cli_free_models. */
int cli_load_models(const char *list, int device, int threads, Model *models, int *n,
                    Config *cfg, Spm **spm, const char *cmd);
void cli_free_models(Model *models, int n, Spm *spm);

/* The usage of `trainer eval` and of `trainer translate` to f (their --help; cli_usage prints
 * both). No errors. */
void cli_eval_usage(FILE *f);
void cli_translate_usage(FILE *f);
void cli_score_usage(FILE *f);

/* The source lines src[0..n) (of the file named what, for messages) against limit bytes
 * (<= 0: none): the model's data.max_line_bytes (concat 1), or its config_line_bytes for lines
 * that join concat > 1 sentences. A longer line is refused ("WHAT, line N: B bytes, longer than
 * the L bytes the model reads a line (data.max_line_bytes ...); ... give --crop-long") unless
 * crop, which cuts it to limit bytes at a character boundary (corpus_utf8_crop) and adds it to
 * *cropped. Returns STATUS_OK or STATUS_ERR with err set. first: the number (from 0) of src[0]
 * in the input. */
Status cli_check_long_lines(char **src, long n, long first, long limit, int concat, int crop,
                            const char *what, long *cropped, Err *err);
/* The usage of `trainer average` to f (its --help; cli_usage prints it too). No errors. */
void cli_average_usage(FILE *f);

/* trainer [train] --config FILE [--set section.key=value]... [--resume] (cli/train.c): 0 also
 * for --help or -h (the usage and every config key on stdout); 2 for a bad command line, config
 * or --set (config_load / config_set / config_validate's message); 1 when train_run fails. */
int cmd_train(int argc, char **argv);

/* trainer eval --checkpoint FILE --src FILE --ref FILE [--beam K] [--len-penalty A] [--json]
 *              [--device cpu|cuda] (cli/eval.c): 2 for a bad command line; 1 when the
 *              checkpoint, the files, decoding or scoring fail. */
int cmd_eval(int argc, char **argv);
/* trainer translate --checkpoint FILE [--beam K] [--len-penalty A] [--attention-map PNG]
 *                   [--device cpu|cuda] < input > output (cli/translate.c): 2 for a bad
 *                   command line; 1 when the checkpoint, reading, translating or the map fail. */
int cmd_translate(int argc, char **argv);
/* trainer score --checkpoint FILE[,FILE...] --src FILE --ref FILE [--normalize] [--json]
 *               (cli/score.c): log p(ref | src) per line; 2 for a bad command line, 1 when the
 *               checkpoint, the files or scoring fail. */
int cmd_score(int argc, char **argv);
/* trainer compare RUN... [options] (cli/compare.c, whose top comment describes it): 1 also for a
 * training, checkpoint, metrics, test-set, decoding, gnuplot or output failure; 2 also for a
 * RUN that is neither a run folder with best.ckpt and metrics.jsonl nor a loadable config. */
int cmd_compare(int argc, char **argv);
/* trainer archive RUN_DIR --out DIR [options] (cli/archive.c, whose top comment describes it):
 * 2 for a bad command line, 1 when the run cannot be archived (archive_run's errors). */
int cmd_archive(int argc, char **argv);
/* trainer study STUDY.ini [--jobs N] [--only GLOBS] [--status] [--report] [--prepare]
 * [--device cpu|cuda] (cli/study.c, whose top comment describes it): 2 for a bad command line
 * (an --only glob that matches no run) or plan, 1 when a run fails to train or archive or the
 * report fails. */
int cmd_study(int argc, char **argv);
/* trainer average --out FILE CKPT... (cli/average.c): checkpoint_average of the CKPTs into FILE;
 * 0 also for --help or -h (its usage on stdout); 2 for a bad command line, 1 when a checkpoint
 * does not load, the models differ or the write fails. */
int cmd_average(int argc, char **argv);

#endif
