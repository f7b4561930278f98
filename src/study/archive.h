/* study/archive.h — a run's archive: everything a report needs from a trained run, without its
 * checkpoints, in a folder small enough to keep in a repository (a few hundred KB), so that runs
 * trained on different machines are compared afterwards from their archives alone.
 *
 * An archive folder holds:
 *   run.json       the run card (below);
 *   config.ini     the scored checkpoint's config (config_to_ini: every key the model reads);
 *   metrics.jsonl  the run's metrics.jsonl as the trainer wrote it (train/runlog.h);
 *   test/NAME.ref, test/NAME.greedy, test/NAME.beamK
 *                  per test set NAME: the references, the greedy translations and the beam-K
 *                  translations, one sentence a line, in the test set's order (the pairs that
 *                  corpus_load keeps);
 *   attention.json the greedy translations' attention of a few test sentences (absent when the
 *                  model has none): [{"test": NAME, "sentence": i, "src": [pieces],
 *                  "tgt": [pieces], "weights": [[w_ts]]}], weights rounded to 1e-4.
 * run.json: {"format": 1, "name", "config" (the config file it was trained from, or ""),
 *   "seed", "model", "attention" (config_attention_text), "parameters", "precision",
 *   "checkpoint" (the file scored: best.ckpt, avg.ckpt or last.ckpt), "checkpoint_val_bleu",
 *   "epochs", "steps", "training_seconds", "tokens_per_second", "peak_memory_mib",
 *   "trained_on": [the "start" lines of metrics.jsonl: time, revision, cpu, device, gpu,
 *   threads, ranks, precision, epoch, step], "uncommitted_changes" (true when a start's revision
 *   ends in "-dirty": that binary was built from a tree with uncommitted changes, which git
 *   cannot rebuild), "spm_hash" (spm_hash of the checkpoint's SentencePiece model, the one the
 *   run was trained and decoded with, as 16 lowercase hex digits), "archived": {time, revision,
 *   cpu},
 *   "decoding": {"beam", "len_penalty", "max_length": "2S+10"},
 *   "tests": [{"name", "src", "tgt", "sentences", "bleu_greedy", "chrf_greedy", "bleu_beam",
 *   "chrf_beam", and for a model of data.concat = k > 1, whose test lines are documents of k
 *   sentences: "concat" (k), "lines" (the sentences before joining), "bleu_split_greedy" and
 *   "bleu_split_beam" (the sentence BLEU of the documents whose translation splits at <sep>
 *   into k sentences; null when none does), "split_mismatches_greedy" and
 *   "split_mismatches_beam" (the documents that do not)}]}. The scores in the card are for a
 *   reader; reports score the files again, but for the split scores, which need the
 *   separators that the archived documents lack and are read from the card.
 *
 * The checkpoint scored: avg.ckpt when the run wrote one (train.average_last) and its validation
 * BLEU ("avg" line) is at least best.ckpt's, else best.ckpt, else last.ckpt (a run stopped before
 * its first validation; the card says so).
 * Errors are input errors (Status): a run folder without metrics.jsonl or any checkpoint, a
 * checkpoint that does not load, a test set that does not load or translate, a write that fails
 * (the archive is written into DIR.tmp.<pid> and renamed over DIR, so a failure leaves DIR as it
 * was; a DIR.tmp.<pid> folder left by an archiving process that was killed, one whose pid no
 * longer runs, is removed first); an archive that does not read back (each message names the
 * file and what to do).
 * Host memory. Source: — (plain engineering; Clark et al. 2011 §4 on why a comparison keeps
 * every seed's translations).
 */
#ifndef TRAINER_STUDY_ARCHIVE_H
#define TRAINER_STUDY_ARCHIVE_H

#include "eval/decode.h"
#include "eval/translate.h"
#include "train/config.h"
#include "train/runlog.h"

#define ARCHIVE_MAX_TESTS 8
#define ARCHIVE_MAX_MAPS 16

/* One test set of an archive. */
typedef struct {
    char name[128];              /* archive_test_name of tgt, unless given */
    char src[1024], tgt[1024];   /* the files as given when archived */
    long n;                      /* sentence pairs */
    char **ref, **greedy, **beam; /* [n] lines each */
    double bleu_g, chrf_g, bleu_b, chrf_b; /* recomputed by archive_read from the lines */
    int concat;                  /* the card's "concat": sentences a document (1: not joined) */
    long split_mismatch_b;       /* the card's "split_mismatches_beam"; -1 when it has none */
    double split_bleu_b;         /* the card's "bleu_split_beam"; NaN when null or absent */
} ArchiveTest;

/* One attention map of an archive: the greedy translation of a test sentence. */
typedef struct {
    char test[128];
    int sentence; /* 0-based, in the test set's kept pairs */
    AttnMap map;
} ArchiveMap;

typedef struct {
    char dir[1024];              /* the folder read */
    char name[256], config_file[1024], checkpoint[16];
    double checkpoint_val_bleu;  /* NaN for last.ckpt */
    long params;
    DecodeOpts beam;
    char archived_time[32], archived_revision[64], archived_cpu[256];
    int uncommitted_changes;     /* 1 when a start of the run was built from a tree with
                                    uncommitted changes: run.json's "uncommitted_changes", or in
                                    cards without it a start revision ending in "-dirty" */
    int spm_hash_known;          /* 1 when run.json records "spm_hash" (older cards do not) */
    uint64_t spm_hash;           /* its SentencePiece model's spm_hash when known, else 0 */
    Config cfg;                  /* config.ini (config_load_string: no key given) */
    RunLog log;                  /* metrics.jsonl */
    ArchiveTest tests[ARCHIVE_MAX_TESTS];
    int ntests;
    ArchiveMap maps[ARCHIVE_MAX_MAPS];
    int nmaps;
} Archive;

/* A test set to translate: name (NULL: archive_test_name of tgt), source and reference files. */
typedef struct {
    const char *name, *src, *tgt;
} ArchiveTestSpec;

typedef struct {
    const ArchiveTestSpec *tests; /* ntests (1..ARCHIVE_MAX_TESTS) test sets, or 0: the config's
                                     data.test_src / data.test_tgt */
    int ntests;
    DecodeOpts beam;              /* the second decoding: beam K >= 1, length penalty α */
    const int *sentences;         /* attention maps of these sentences of the first test set
                                     (indices beyond it are left out), at most ARCHIVE_MAX_MAPS */
    int nsentences;
    int device;                   /* a DeviceType to decode on, or -1: the checkpoint's */
    int threads;                  /* CPU threads to decode with; 0: the config's train.threads */
    const char *config_file;      /* recorded in the card; NULL: "" */
    const char *name;             /* the run's name in the card; NULL: its run.name */
} ArchiveOpts;

/* Writes the archive of the trained run in run_dir (its train.save_dir) into out_dir (created;
 * an archive already there is replaced, anything else there is refused). Prints one line per
 * decoding on stderr. Errors: see the top of this file. */
Status archive_run(const char *run_dir, const char *out_dir, const ArchiveOpts *o, Err *err);

/* Reads the archive in dir into *a (zeroed first; archive_free it, also after an error). Scores
 * every test set's translations against its references (BLEU and chrF, greedy and beam).
 * Errors: a missing or malformed file, a "spm_hash" that is not 16 hex digits, test files of
 * different line counts (each named). */
Status archive_read(const char *dir, Archive *a, Err *err);

/* Reads only the card (run.json) of the archive in dir: *known = 1 and *hash its "spm_hash"
 * when it records one, else *known = 0 and *hash = 0 (cards of older trainers). Errors: run.json
 * missing or not JSON, a "spm_hash" that is not 16 hex digits (each naming the file). */
Status archive_spm_hash(const char *dir, int *known, uint64_t *hash, Err *err);

void archive_free(Archive *a); /* NULL-safe; no errors */

/* 1 when dir holds an archive (a run.json file), else 0. No errors. */
int archive_is(const char *dir);

/* The test set called name in a, or NULL. */
const ArchiveTest *archive_test(const Archive *a, const char *name);

/* A test set's name from its reference file: the file name without its folder, a ".gz" and the
 * language suffix (data/multi30k/test_2016_flickr.en.gz → test_2016_flickr), reduced to
 * [A-Za-z0-9._-]. Into buf (n bytes). No errors. */
void archive_test_name(const char *tgt, char *buf, size_t n);

#endif
