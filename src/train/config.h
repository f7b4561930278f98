/* train/config.h — the run configuration: a strict INI file → one typed struct (docs/design.md §1, §7).
 *
 * Every key is declared ONCE, in the table of config_keys.c: {section, key, type, field,
 * default, range or valid names, help}. That table drives the defaults, parsing, --set overrides,
 * per-key validation, `trainer --help` and serialising back to INI text. To add a key: add a field
 * here (a [model] key: to ModelSpec, model/spec.h, which Config embeds as .model) and one row
 * there; nothing else. config.c parses files and --set overrides and validates (config_load ..
 * config_validate); config_render.c writes a config and the key reference (config_to_ini ..
 * config_backend_options); config_keys.h, private to the three, holds the table's types.
 *
 * File grammar (UTF-8 text, lines of at most CONFIG_MAX_LINE bytes, LF or CRLF endings):
 *
 *     # a comment (a line whose first non-blank character is '#' or ';')
 *     [model]                 a section header: [run], [model], [data], [train] or [dist]
 *     emb = 256               key = value; whitespace around key and value is trimmed
 *     train_src = "a b.gz"    string values may be wrapped in double quotes (kept verbatim inside)
 *
 * A file may begin (before its first section) with `include = PATH`: PATH (relative to the
 * including file's folder unless absolute) is loaded first and this file's keys then override
 * its values, so that a variant states only what it changes (configs/transformer_flash.ini:
 * configs/transformer.ini with other attention). One include per file; an included file may
 * include another, up to 8 files deep (a cycle is caught there). An included file may not set
 * run.name or train.save_dir (every file including it would share one run folder); the run is
 * named after the file given to config_load. Errors inside an included file name both files.
 * config_load_string refuses include (text has no folder).
 *
 * Comments are FULL-LINE ONLY: `emb = 256  # size` is an error (the value is "256  # size"), and
 * the message says so. A leading UTF-8 byte-order mark is skipped. Everything else is refused,
 * with "FILE:LINE: what was wrong; what to do": unknown section or key (the valid ones are
 * listed), a key before any section, a line without '=', a repeated key or section, an empty
 * value for a number/bool/enum, a bad number (trailing garbage, out of range, NaN, inf, hex),
 * a bad bool (accepted, case-insensitive: true/false/yes/no/on/off/1/0), a bad enum name (the
 * valid names are listed), quotes around a non-string value, a string longer than its field,
 * a line longer than CONFIG_MAX_LINE bytes (never split), a NUL byte, a control character other
 * than tab, invalid UTF-8, an unreadable or missing file (named, with strerror).
 *
 * Per-key ranges are checked while parsing; cross-key rules (hidden even, min_lr <= lr, ...)
 * only in config_validate, which the caller runs once after the file and all --set overrides.
 * Everything is host memory. Source: — (Marian's one-declaration option table).
 */
#ifndef TRAINER_CONFIG_H
#define TRAINER_CONFIG_H

#include <stdint.h>
#include <stdio.h>

#include "attention/attention.h"
#include "core/common.h"
#include "model/spec.h"
#include "ops/ops.h"

#define CONFIG_MAX_LINE 4096          /* bytes per line, without the line ending */
#define CONFIG_MAX_FILE (1 << 20)     /* bytes per config file */
#define CONFIG_MAX_KEYS 96            /* room for a flag per key (Config.given) */

/* names: cpu, cuda; the values are ops.h's BACKEND_DEVICE_* */
typedef enum { DEVICE_CPU, DEVICE_CUDA } DeviceType;
typedef enum { LR_PLATEAU, LR_INVERSE_SQRT } LrSchedule;   /* names: plateau, inverse_sqrt */
/* names: bleu, chrf, ppl */
typedef enum { STOP_BLEU, STOP_CHRF, STOP_PPL } EarlyStopMetric;
/* names: fp32, tf32, bf16; the values are ops.h's BACKEND_PRECISION_* */
typedef enum { PRECISION_FP32, PRECISION_TF32, PRECISION_BF16 } Precision;

extern const char *const model_type_names[2];
extern const char *const cell_type_names[2];
extern const char *const device_type_names[2];
extern const char *const norm_place_names[2];
extern const char *const lr_schedule_names[2];
extern const char *const early_stop_metric_names[3];
extern const char *const precision_names[3];
extern const char *const rnn_impl_names[2];
/* model.dec_self_attention names: attention_kind_names with "same" in place of "none" */
extern const char *const dec_self_attention_names[ATTN_KIND_COUNT];

typedef struct Config {
    /* [run] */
    char name[256];          /* run.name: config_load sets it to the file's basename without .ini
                                (configs/luong.ini → "luong") unless the file sets run.name;
                                default "default". Default save_dir is checkpoints/<name>. */
    /* [model]: the model's spec (model/spec.h); the key table points into it */
    ModelSpec model;
    /* [data] — paths are relative to the working directory */
    char train_src[1024], train_tgt[1024]; /* data/multi30k/train.{de,en}.gz */
    char val_src[1024], val_tgt[1024];     /* data/multi30k/val.{de,en}.gz */
    char test_src[1024], test_tgt[1024];   /* data/multi30k/test_2016_flickr.{de,en}.gz;
                                              both "" = no test set */
    int vocab_size;          /* data.vocab_size: joint SentencePiece vocabulary (8000, 100..1e6);
                                with spm_model, the run sets it to that model's size */
    char spm_model[1024];    /* data.spm_model: a SentencePiece model file used instead of one
                                trained on the training text; "" = train one (the default) */
    int max_len;             /* data.max_len: max subword tokens per side of a training pair
                                (100, 1..100000); longer pairs are skipped */
    int max_line_bytes;      /* data.max_line_bytes: longer raw lines are skipped (1000, 1..1<<20) */
    int concat;              /* data.concat: consecutive sentence pairs joined into one example,
                                CORPUS_SEP between sentences (1 = none, 1..4096) */
    char cache_dir[1024];    /* data.cache_dir (data/cache) */
    /* [train] */
    DeviceType device;       /* train.device = cpu | cuda (cpu) */
    Precision precision;     /* train.precision = fp32 | tf32 | bf16 (fp32): the matmuls'
                                input rounding (ops.h BACKEND_PRECISION_*, set by backend_open);
                                weights, Adam state and accumulation stay fp32; cpu: fp32, or
                                bf16 in a build with oneDNN */
    uint64_t seed;           /* train.seed: any 64-bit value (1) */
    int max_epochs;          /* train.max_epochs (30, 1..1000000) */
    long max_steps;          /* train.max_steps: optimizer steps; 0 = no limit (0) */
    float max_hours;         /* train.max_hours: training time budget in hours (elapsed, as
                                logged, validation included); the run saves and stops after the
                                step that exceeds it; 0 = no limit (0, [0, 1e6]) */
    int batch_tokens;        /* train.batch_tokens: source+target tokens per batch (4096);
                                must be >= 2 * data.max_len so the longest pair fits */
    float lr;                /* train.lr: peak learning rate (1e-3, (0, 10]) */
    LrSchedule lr_schedule;  /* train.lr_schedule = plateau (warm-up, then constant, decayed by
                                lr_decay after a validation without a better score) |
                                inverse_sqrt (warm-up, then lr·√(warmup/step), Vaswani et al.
                                2017 §5.3) (plateau) */
    int warmup_steps;        /* train.warmup_steps: linear warm-up (500, >= 0) */
    float lr_decay;          /* train.lr_decay: factor applied when the validation score does
                                not improve (0.5, (0, 1]) */
    float min_lr;            /* train.min_lr: decay floor (1e-5, [0, lr]) */
    float adam_beta1, adam_beta2, adam_eps; /* 0.9, 0.999 in [0, 1); 1e-8 in (0, 1] */
    float clip_norm;         /* train.clip_norm: global gradient-norm clip; 0 = off (5.0) */
    int max_nonfinite;       /* train.max_nonfinite: a step whose loss or gradient is NaN/Inf is
                                skipped; this many in a row end the run (10, 1..1000000) */
    float label_smoothing;   /* train.label_smoothing (0.1, [0, 1)) */
    int patience;            /* train.patience: validations (at epoch ends unless valid_every)
                                without a better score before stopping; 0 = never (5) */
    int log_every;           /* train.log_every: steps between log lines (100, >= 1) */
    int save_every;          /* train.save_every: steps between checkpoints, plus one at each
                                epoch end; 0 = epoch ends only (500) */
    int keep_checkpoints;    /* train.keep_checkpoints: also write epoch<N>.ckpt at each epoch
                                end and keep the last K; 0 = off (0) */
    int average_last;        /* train.average_last: avg.ckpt of the last K epoch checkpoints at
                                the end of the run; <= keep_checkpoints; 0 = off (0) */
    float ema_decay;         /* train.ema_decay: EMA of the weights, d in [0, 1); 0 = off (0) */
    int ema_warmup;          /* train.ema_warmup: the decay after n updates is
                                min(ema_decay, (1 + n) / (10 + n)) (false) */
    char save_dir[1024];     /* train.save_dir: "" = checkpoints/<name> (see config_save_dir) */
    int threads;             /* train.threads: CPU threads; 0 = all cores (0, 0..4096) */
    int val_max_sentences;   /* train.val_max_sentences: 0 = the whole validation set (0) */
    int valid_every;         /* train.valid_every: optimizer steps between validations (each
                                one: best.ckpt, the plateau decay, patience); 0 = at each
                                epoch's end (0, 0..1e9) */
    EarlyStopMetric early_stop_metric; /* train.early_stop_metric = bleu | chrf | ppl (bleu):
                                the validation score that picks best.ckpt and counts patience
                                and the plateau decay (ppl: lower is better) */
    int accum_steps;         /* train.accum_steps: batches whose gradients one optimizer step
                                sums, the loss normalised by their target tokens together; the
                                last step of an epoch takes what is left (1, 1..1e6) */
    char init_from[1024];    /* train.init_from: a checkpoint whose weights start a new run (a
                                fresh optimizer, schedule and step count; the same [model] keys
                                but model.dropout and model.rnn_impl, and its SentencePiece
                                model); "" = initialise from train.seed (the default) */
    char init_from_crc[16];  /* train.init_from_crc: the CRC-32 of the init_from file as 8 hex
                                digits; the run writes it into config.ini, and a start with it
                                given refuses a file with another CRC; "" = not checked */
    /* [dist] — data parallelism over MPI ranks (dist/dist.h; mpirun -np N) */
    float dist_timeout;      /* dist.timeout: seconds a rank waits for the others in one
                                collective once training has begun (a step's sums, or rank 0's
                                validation and saving) before it exits naming the dead or
                                stopped ranks it finds; start-up has no limit; 0 = wait for
                                ever (300, [0, 1e6]) */
    int dist_overlap;        /* dist.overlap bool: the gradient sum by buckets, started while
                                backward goes on (MPI_Iallreduce; CPU only) (false) */
    float dist_bucket_mb;    /* dist.bucket_mb: MiB of gradient per bucket with dist.overlap
                                (4, (0, 1e6]) */
    /* 1 for each key a file (config_load) or config_set gave, in the order of the key table;
     * config_load_string leaves none given (a stored config). config_validate refuses a given
     * key that the model does not read. */
    unsigned char given[CONFIG_MAX_KEYS];
} Config;

/* ---- Parsing and validation (config.c; the defaults and one value's parsing: config_keys.c) */

/* Fills *c with every key's default (and name "default"). Never fails. */
void config_defaults(Config *c);

/* Defaults, then the file at path. Sets c->name from the path's basename without ".ini" unless
 * the file sets run.name. Errors: "PATH: <strerror>; ..." for an unreadable file, "PATH:LINE: ..."
 * for any grammar or value error (see the top of this file). Does NOT run config_validate.
 * On error *c holds the defaults plus the lines before the bad one. */
Status config_load(Config *c, const char *path, Err *err);

/* Defaults, then the same parser on a NUL-terminated string; source_name replaces the file name
 * in messages ("SOURCE:LINE: ..."). Leaves c->name "default" unless the text sets run.name. */
Status config_load_string(Config *c, const char *text, const char *source_name, Err *err);

/* One command-line override "section.key=value" (value trimmed, quotes allowed for strings, an
 * empty value allowed only for strings; a string must be valid UTF-8 without control characters,
 * as in a file, so that config_to_ini of the result loads back). Errors name "--set section.key"
 * (or "--set ARG" when the argument itself is malformed) and say what to do. */
Status config_set(Config *c, const char *assignment, Err *err);

/* Every key's range/enum again (the struct may have been edited in code), then cross-key rules:
 * rnn hidden even, transformer needs an attention, input_feeding needs an attention,
 * min_lr <= lr, batch_tokens >= 2 * max_len, train/val paths non-empty, test paths both set or
 * both empty, name usable as a folder name ([A-Za-z0-9._-], not "." or ".."), the attention
 * kinds attention_supports accepts, model.rnn_impl = cudnn only for an RNN on train.device =
 * cuda, train.precision one the device has (backend_precision_valid: tf32 on cuda only). Asks
 * nothing of this machine or build: what they cannot run (cuDNN, bf16 on a CPU without it, no
 * GPU) is refused by backend_open (backend_can_run) when the run starts. Errors: the first rule
 * broken, naming the key(s) and what to set. */
Status config_validate(const Config *c, Err *err);

/* ---- Rendering (config_render.c) */

/* malloc'd (free()) INI text of every key the model reads (config_drop_unread: the [model] keys
 * of the other model type and the options of unused attentions are left out), including [run]
 * name. config_load_string of it gives back *c in every key written, exactly (floats are written
 * with the fewest digits, at most 9, that read back to the same float), and the defaults in the
 * others. No errors (xmalloc aborts on out-of-memory). */
char *config_to_ini(const Config *c);

/* Sets every key that c's model does not read (the [model] keys of the other model type, the
 * options of attentions the model does not use) to its default and marks no key given: what
 * config_load_string(config_to_ini(c)) gives back. No errors. */
void config_drop_unread(Config *c);

/* Prints every key with its type, default, range or valid names, and help to f (for `trainer
 * --help`). No errors. */
void config_print_keys(FILE *f);

/* Prints every key as Markdown (docs/configuration.md: a table per section with type, default,
 * values, the models that read it and help) to f (for `trainer --config-reference`). No
 * errors. */
void config_print_markdown(FILE *f);

/* c->save_dir, or "checkpoints/<name>" when it is empty; written to buf (n bytes, truncated
 * if needed) and returned. No errors. */
const char *config_save_dir(const Config *c, char *buf, size_t n);

/* Number of keys whose values differ between a and b (floats compared bit for bit); if buf is
 * non-NULL, a "section.key: A -> B; ..." summary is written there (truncated to n bytes).
 * For checking a resumed run against its checkpoint's config. No errors. */
int config_diff(const Config *a, const Config *b, char *buf, size_t n);

/* config_diff over the keys that change what a run trains: without run.name, train.save_dir,
 * data.cache_dir, data.spm_model (a path; compare the model by its spm_hash), train.seed,
 * train.threads, train.device, train.log_every, train.save_every, train.max_nonfinite and
 * dist.timeout, overlap and bucket_mb. For telling whether two runs (of any seeds, on any
 * machines) are of one config. No errors. */
int config_diff_trained(const Config *a, const Config *b, char *buf, size_t n);

/* config_diff of start, the config a run began with (its checkpoint's), against now, the config
 * it is to be resumed with, over the keys a resumed run keeps: all but train.max_epochs,
 * max_steps, patience, max_hours, log_every, save_every, threads, val_max_sentences, device,
 * max_nonfinite, keep_checkpoints, average_last and save_dir, and dist.timeout, overlap and
 * bucket_mb (and train.init_from's recorded CRC where now has none). For `trainer train
 * --resume`, and a study's check of a run folder before it resumes it. No errors. */
int config_diff_resume(const Config *start, const Config *now, char *buf, size_t n);

/* The most subword tokens a side of a training example may hold: data.max_len for each of its
 * data.concat sentences and two a separator (CORPUS_SEP and the word boundary before it):
 * concat · max_len + 2 (concat − 1). No errors. */
int config_example_len(const Config *c);

/* The most bytes a source line given to translate or score may hold: data.max_line_bytes for
 * each of the data.concat sentences a joined line holds, and " " CORPUS_SEP " " between them:
 * concat · max_line_bytes + (concat − 1) · 7 (a model trained on examples of k sentences reads
 * lines of k joined). No errors. Source: — (the reader's limits). */
long config_line_bytes(const Config *c);

/* No errors. The model's attention in words, into buf (n bytes) and returned: the RNN's model.attention,
 * or the Transformer's kind when all three slots agree, else "ENC/DEC/CROSS" (encoder
 * self-attention / decoder self-attention / cross-attention, e.g. "efficient/sdp/efficient"). */
const char *config_attention_text(const Config *c, char *buf, size_t n);

/* backend_open's options for c (ops.h): train.device, train.precision and train.threads,
 * rnn_cudnn for model.rnn_impl = cudnn; ordinal BACKEND_KEEP (the caller picks the GPU of a
 * rank). No errors. */
BackendOptions config_backend_options(const Config *c);

#endif
