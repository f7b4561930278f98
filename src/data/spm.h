/* data/spm.h — SentencePiece behind a small C API (docs/design.md §1). The implementation (spm.cc) is the
 * only C++ in the project: every C++ exception is caught and every non-OK SentencePiece status is
 * returned as a Status with the library's message in Err (docs/design.md §7).
 *
 * The project uses ONE joint unigram model for German and English. Its special ids are fixed:
 * pad 0, unk 1, bos 2, eos 3; spm_load refuses a model with other ids.
 *
 * Thread safety: spm_encode / spm_decode / spm_piece / spm_vocab_size / spm_serialize / spm_hash
 * may be called concurrently on one Spm (SentencePiece's Encode/Decode are const). spm_train
 * changes process-wide SentencePiece settings (log level, random seed) and must not run
 * concurrently with another spm_train.
 *
 * Everything is host memory; ids are int32 SentencePiece ids, lengths are counts of ids or bytes.
 * Source: Kudo & Richardson 2018 (SentencePiece), Kudo 2018 (the unigram language model). */
#ifndef TRAINER_DATA_SPM_H
#define TRAINER_DATA_SPM_H

#include <stddef.h>
#include <stdint.h>

#include "core/common.h"
#include "core/tokens.h" /* TOKEN_PAD, TOKEN_UNK, TOKEN_BOS, TOKEN_EOS */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct Spm Spm;

/* Trains a unigram model on text_files[0..n_files) (plain UTF-8, one sentence per line) and writes
 * <model_prefix>.model and <model_prefix>.vocab (the folder must exist). character_coverage 1.0,
 * at most 2,000,000 input sentences (randomly sampled beyond that), nmt_nfkc normalisation,
 * num_threads worker threads (<= 0 means 1). Deterministic: the same files, vocab_size and
 * num_threads give the same model, also when called several times in one process; a different
 * num_threads can change it, so pass a fixed value, not the machine's core count (see spm.cc).
 * The model records the prefix and input names. File names must not contain ','. Errors: no
 * files, an empty prefix or file name, a ',' in a name, vocab_size too small, and SentencePiece's
 * own failures (each message names the prefix or file and the library's reason). */
Status spm_train(const char *const *text_files, int n_files, int vocab_size,
                 const char *model_prefix, int num_threads, Err *err);
/* spm_train with user-defined symbols: user_symbols (NULL or "": none) is a comma-separated list
 * of pieces that the model holds whole and that the encoder never splits (SentencePiece's
 * user_defined_symbols), e.g. CORPUS_SEP for joined examples. Errors: spm_train's. */
Status spm_train_symbols(const char *const *text_files, int n_files, int vocab_size,
                         const char *model_prefix, int num_threads, const char *user_symbols,
                         Err *err);

/* Loads a model file (<prefix>.model). Both loaders refuse a model whose normalisation tables
 * (precompiled character maps) would make SentencePiece read out of bounds (see spm.cc).
 * Errors: unreadable or invalid file, a corrupt normalisation table, too few pieces, special ids
 * other than pad 0, unk 1, bos 2, eos 3 — each naming the file and what to do. */
Status spm_load(Spm **out, const char *model_path, Err *err);
/* Loads a serialized ModelProto (n bytes at data; as stored in our checkpoints, from
 * spm_serialize). Errors as spm_load's. */
Status spm_load_from_bytes(Spm **out, const void *data, size_t n, Err *err);
/* The serialized ModelProto as malloc'd bytes (*data, *n bytes; freed by the caller with free()).
 * Errors: SentencePiece's serialisation failure. */
Status spm_serialize(const Spm *s, void **data, size_t *n, Err *err);

int spm_vocab_size(const Spm *s); /* pieces in the model (ids 0 .. size-1); no errors */

/* A 64-bit FNV-1a hash (offset basis 0xcbf29ce484222325, prime 0x100000001b3) of what decides
 * the model's segmentation, so that two models hash equal exactly when they split every text
 * alike: the vocabulary size, then per piece in id order its string, score (IEEE-754 bits) and
 * type; the normalizer and denormalizer specs (presence, name, precompiled character map,
 * add_dummy_prefix, remove_extra_whitespaces, escape_whitespaces, normalization rules); and of
 * the trainer spec only the options the encoder and decoder read (model_type,
 * treat_whitespace_as_suffix, allow_whitespace_only_pieces, byte_fallback, unk_surface). Absent
 * fields count as their protobuf defaults; integers are hashed as 4 little-endian bytes, strings
 * as their length (4 bytes) and bytes. The rest of the trainer spec (the input files and
 * model_prefix it was trained with, its sizes and thresholds) is left out, so the same
 * vocabulary trained in two folders hashes equal. Errors: SentencePiece's serialisation failure,
 * a model that does not re-serialise to well-formed protobuf. */
Status spm_hash(const Spm *s, uint64_t *hash, Err *err);
/* *same = 1 when a and b segment alike (equal spm_hash), else 0. Errors: spm_hash's. */
Status spm_same(const Spm *a, const Spm *b, int *same, Err *err);

/* Encodes text into malloc'd ids (*ids, *n; *ids is non-NULL even when *n == 0). No BOS/EOS.
 * Errors: SentencePiece's (the message quotes it). */
Status spm_encode(const Spm *s, const char *text, int **ids, int *n, Err *err);
/* Decodes ids into malloc'd detokenised text. PAD/BOS/EOS ids are skipped; an id outside
 * [0, vocab) is an error. */
Status spm_decode(const Spm *s, const int *ids, int n, char **text, Err *err);

/* The piece string of id (for plots/debugging); valid while s lives. "<out-of-range>" for a bad
 * id. No errors. */
const char *spm_piece(const Spm *s, int id);
/* The id of the piece string `piece`, or -1 when the model has no such piece. No errors. */
int spm_piece_id(const Spm *s, const char *piece);

void spm_free(Spm *s); /* NULL is fine; no errors */

#ifdef __cplusplus
}
#endif

#endif
