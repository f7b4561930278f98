/* data/prepare.h — a run's corpora turned into what training reads: the joint SentencePiece
 * model, trained on the training text or loaded from a file (either way kept in the run folder as
 * spm.model), and each split encoded to ids through the cache folder (data/encoded.h).
 *
 * The caller passes the config's values (data.vocab_size, data.spm_model, data.cache_dir,
 * run.name) as plain arguments, so this layer needs no Config; its messages name those keys.
 * Each function prints one line on stdout on success: what it did, in how many seconds, where
 * the result is. Host memory only. Source: Kudo & Richardson 2018 (SentencePiece, data/spm.h). */
#ifndef TRAINER_DATA_PREPARE_H
#define TRAINER_DATA_PREPARE_H

#include "core/common.h"
#include "data/corpus.h"
#include "data/encoded.h"
#include "data/spm.h"

/* Writes the training text of train (both languages, one sentence a line) to dir/spm_train.txt,
 * trains the joint unigram model of vocab_size pieces on it as dir/spm.model (and spm.vocab; one
 * thread: deterministic), removes the text (whether the training succeeded or not) and loads the
 * model into *spm (the caller frees it with spm_free). dir must exist. Errors: the text file
 * cannot be written (strerror; the part written is removed); SentencePiece's, prefixed
 * "SentencePiece training on the training text"; spm_load's. */
Status prepare_spm_train(const Corpus *train, int vocab_size, const char *dir, Spm **spm,
                         Err *err);
/* prepare_spm_train for joined examples (data.concat > 1) when sep is 1: the model is trained
 * on their sentences, one a line (split at CORPUS_SEP: SentencePiece skips lines over 4192
 * bytes, and the vocabulary is then the one of the sentences), and also holds CORPUS_SEP as
 * one user-defined piece. Errors: prepare_spm_train's. */
Status prepare_spm_train_sep(const Corpus *train, int vocab_size, int sep, const char *dir,
                             Spm **spm, Err *err);

/* data.spm_model = path: the model of that file into *spm, which must have vocab_size pieces,
 * and a copy of it written atomically as dir/spm.model (the run folder keeps the model it was
 * trained with). Errors: spm_load's, prefixed "data.spm_model"; another piece count (the message
 * says which data.vocab_size to set); spm_serialize's or the copy's write. */
Status prepare_spm_load(const char *path, int vocab_size, const char *dir, Spm **spm, Err *err);

/* For joined examples (concat > 1): an error unless spm holds CORPUS_SEP as a piece; what names
 * the model in the message (e.g. "data.spm_model = m.model"). concat = 1: STATUS_OK. */
Status prepare_check_sep(const Spm *spm, int concat, const char *what, Err *err);

/* The pairs of c encoded with spm into *e (the caller frees it with encoded_free), through the
 * cache file cache_dir/<name>.<what>.enc (encoded_build: loaded when valid, else built and
 * written); cache_dir is created. what names the split in the messages and the cache file
 * ("train", "val"). Errors: the folder's, prefixed "data.cache_dir"; encoded_build's, prefixed
 * "encoding <what>". */
Status prepare_encode(const Corpus *c, const Spm *spm, const char *cache_dir, const char *name,
                      const char *what, Encoded *e, Err *err);

#endif
