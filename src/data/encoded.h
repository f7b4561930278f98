/* data/encoded.h — sentence pairs encoded to SentencePiece ids, with an on-disk cache so that a second
 * run skips encoding (docs/design.md §1, §8).
 *
 * Cache file format (host byte order; little-endian on every machine we run on), version 1:
 *   offset  size  field
 *        0     8  magic "TRNENC01"
 *        8     4  uint32 version (= 1)
 *       12     4  uint32 vocab size (every id is in [0, vocab))
 *       16     8  uint64 key (encoded_key: model bytes + all input text)
 *       24     8  int64  n        (sentence pairs)
 *       32     8  int64  n_src    (total source ids)
 *       40     8  int64  n_tgt    (total target ids)
 *       48     4  uint32 crc32 of bytes [0, 48)
 *       52     4  uint32 crc32 of the payload
 *       56        payload: int64 src_off[n+1], int64 tgt_off[n+1], int32 src_ids[n_src],
 *                 int32 tgt_ids[n_tgt]
 * The file size must be exactly 56 + 16(n+1) + 4(n_src + n_tgt). Sizes in bytes; ids are int32
 * SentencePiece ids. Everything is host memory. Source: — (our own format; CRC32 is zlib's). */
#ifndef TRAINER_DATA_ENCODED_H
#define TRAINER_DATA_ENCODED_H

#include <stdint.h>

#include "core/common.h"
#include "data/spm.h"

typedef struct {
    long n;           /* sentence pairs */
    int32_t *src_ids; /* all source ids concatenated (no BOS/EOS) */
    int64_t *src_off; /* [n+1] offsets into src_ids; sentence i is src_ids[src_off[i] .. src_off[i+1]) */
    int32_t *tgt_ids; /* all target ids concatenated (no BOS/EOS) */
    int64_t *tgt_off; /* [n+1] */
} Encoded;

/* Set by encoded_build: 1 when the last call loaded its result from the cache, else 0.
 * (For tests and the start-up log; not thread-safe.) */
extern int encoded_last_was_cache_hit;

/* The cache key: a 64-bit combination of FNV-1a-64 and CRC32 over the model's spm_hash (its
 * vocabulary and normaliser, not the paths it was trained at: one vocabulary trained in two
 * folders shares a cache) and all input text (n, then every src[i] and tgt[i] with separators).
 * Errors: spm_hash's. */
Status encoded_key(uint64_t *key, const char *const *src, const char *const *tgt, long n,
                   const Spm *s, Err *err);

/* Encodes pairs (src[i], tgt[i]) with s, or loads them from cache_path when that file exists, is
 * valid, its key matches, it holds n pairs and all its ids are below s's vocabulary size.
 * Otherwise encodes and (re)writes the cache atomically (temp file in the same folder, fflush,
 * fsync, rename, fsync of the folder). An invalid cache is reported with a
 * one-line note on stderr and rebuilt; failing to write the cache is a warning on stderr, not an
 * error. cache_path may be NULL (no cache). Fails only when encoding fails ("encoding source
 * sentence i: <SentencePiece's message>", or encoded_key's error). */
Status encoded_build(Encoded *out, const char *const *src, const char *const *tgt, long n,
                     const Spm *s, const char *cache_path, Err *err);

/* Loads cache_path and validates everything (sizes against the file size before allocating,
 * offsets, id range, CRCs, key == expected_key). Any failure is an error naming the file, what
 * is wrong (truncated, bad magic, version, CRC mismatch, ...) and that it will be rebuilt. */
Status encoded_load(Encoded *out, const char *cache_path, uint64_t expected_key, Err *err);

/* Writes e to path atomically (lower level; used by encoded_build); vocab: the id bound stored in
 * the header. Errors: the temporary cannot be created, written or renamed (path, temp and
 * strerror named). */
Status encoded_save(const Encoded *e, const char *path, uint64_t key, int vocab, Err *err);

void encoded_free(Encoded *e); /* frees and zeroes e; no errors */

#endif
