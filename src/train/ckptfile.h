/* train/ckptfile.h — a self-validating container of named records (docs/design.md §8).
 *
 * The model layer stores a checkpoint as a list of records: the config text, the SentencePiece
 * model bytes, every parameter tensor, Adam m and v, step / epoch / RNG state, and so on. This
 * module knows nothing of models; it writes such a list atomically and reads it back after checking
 * every byte of the file.
 *
 * File format, version 1 (all integers little-endian, serialised byte by byte):
 *
 *   header, CKPT_HEADER_BYTES = 24 bytes
 *     0   magic          8 bytes  89 54 52 43 4B 50 54 0A  ("\x89TRCKPT\n")
 *     8   version        u32      CKPT_FORMAT_VERSION
 *     12  record count   u32      <= CKPT_MAX_RECORDS
 *     16  header CRC     u32      crc32 of the 24 header bytes (this field taken as 0)
 *                                 followed by the whole record table
 *     20  reserved       u32      0
 *   record table, count × CKPT_DESC_BYTES = 168 bytes each
 *     0   name           96 bytes printable ASCII, NUL-terminated, NUL-padded, unique
 *     96  dtype          u32      CkptDType
 *     100 ndim           u32      0..4
 *     104 shape[4]       u64 × 4  dims >= 0; unused dims 0
 *     136 offset         u64      where the compressed payload starts
 *     144 csize          u64      compressed size in bytes
 *     152 usize          u64      uncompressed size == prod(shape) * dtype size
 *     160 data CRC       u32      crc32 of the uncompressed bytes
 *     164 payload CRC    u32      crc32 of the compressed bytes
 *   payloads: zlib streams (compress2), contiguous, in table order, starting right after the
 *   table; the file ends exactly where the last payload ends.
 *
 * Every byte of the file is covered: the header and table by the header CRC, each payload by its
 * payload CRC (and, end to end, by the data CRC of what it decompresses to). Tensor elements are
 * stored as little-endian bytes (the build refuses big-endian hosts). Everything is host memory;
 * sizes are bytes. Source: — (our own format; CRC32 and compress2 are zlib's).
 */
#ifndef TRAINER_CKPTFILE_H
#define TRAINER_CKPTFILE_H

#include <stddef.h>
#include <stdint.h>

#include "core/common.h"

typedef enum { CKPT_F32 = 1, CKPT_I32 = 2, CKPT_U8 = 3, CKPT_U64 = 4 } CkptDType;

#define CKPT_NAME_MAX 96          /* bytes in a name, NUL included */
#define CKPT_MAX_NDIM 4
#define CKPT_MAX_RECORDS 100000
#define CKPT_FORMAT_VERSION 1u
#define CKPT_HEADER_BYTES 24
#define CKPT_DESC_BYTES 168
#define CKPT_MAX_RECORD_BYTES ((uint64_t)8 << 30)  /* 8 GiB uncompressed per record */
#define CKPT_MAX_TOTAL_BYTES ((uint64_t)64 << 30)  /* 64 GiB uncompressed per file */

typedef struct {
    char name[CKPT_NAME_MAX]; /* NUL-terminated, unique in a file */
    CkptDType dtype;
    int ndim;                 /* 0..4 */
    int64_t shape[CKPT_MAX_NDIM]; /* nbytes == prod(shape[0..ndim)) * dtype size (ndim 0: 1 elem);
                                     U8 blobs use ndim 1 */
    void *data;               /* reader: malloc'd (never NULL on success); writer: the caller's */
    size_t nbytes;
} CkptRecord;

/* Bytes per element of a dtype; 0 for an unknown one. No errors (nor for the next two). */
size_t ckpt_dtype_size(CkptDType dt);
/* "f32", "i32", "u8", "u64" or "?". */
const char *ckpt_dtype_name(CkptDType dt);

/* Writes n records to path atomically: a temporary file path + ".tmp.<pid>" (temp_path_for) is
 * written, fsync'ed, re-read and verified (header CRC and every payload CRC), renamed over path,
 * and the folder is fsync'ed. compress_level: zlib level -1..9 (1 is fast, 0 stores).
 * The records are validated first (names, dtypes, shapes against nbytes, uniqueness, limits).
 * On failure before the rename, the temporary file is removed and any existing file at path is
 * left untouched; the message names the path and the system error. A failure to fsync the folder
 * after the rename is reported too (the new file is then in place but may not survive a crash). */
Status ckpt_write_atomic(const char *path, const CkptRecord *recs, int n, int compress_level,
                         Err *err);

/* Reads a checkpoint written by ckpt_write_atomic. Every size, offset, name, shape and CRC is
 * checked against the file before anything is allocated or trusted; records that would inflate to
 * more than the machine's physical memory are refused up front, and each record's zlib stream
 * must fill its stored bytes exactly and inflate to exactly its declared size. All-or-nothing:
 * on success *recs is a malloc'd array of *n records (free with ckpt_records_free); on error
 * *recs = NULL, *n = 0, and err names the file and the problem. */
Status ckpt_read(const char *path, CkptRecord **recs, int *n, Err *err);
/* ckpt_read, keeping the data of only the records for which keep(name, ctx) is nonzero (keep
 * NULL: all of them). Every record is listed, with its name, dtype, shape and nbytes, and every
 * stored byte is read and checked against its payload CRC; a record not kept is not
 * decompressed, so its data CRC is not checked, and its data is NULL. Used to load a model for
 * inference without its Adam moments (checkpoint_load_weights). Errors: ckpt_read's. */
Status ckpt_read_some(const char *path, int (*keep)(const char *name, void *ctx), void *ctx,
                      CkptRecord **recs, int *n, Err *err);

/* The record called name among recs[0..n), or NULL. */
const CkptRecord *ckpt_find(const CkptRecord *recs, int n, const char *name);

/* Frees what ckpt_read returned (each record's data and the array). NULL is fine. */
void ckpt_records_free(CkptRecord *recs, int n);

/* The size in bytes and the CRC-32 (zlib's crc32) of the whole file at path, read in blocks of
 * 1 MiB: train.init_from's record of its checkpoint, the ranks' start-up check of their files.
 * Returns 0, or the errno of a file that cannot be opened or read (*size and *crc then hold what
 * was read). */
int file_crc32(const char *path, int64_t *size, uint32_t *crc);

#endif
