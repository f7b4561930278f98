/* fuzz_ckpt.c — fuzz target of the checkpoint container reader, ckpt_read (src/train/ckptfile.c).
 *
 * Input: the bytes of a checkpoint file (format in ckptfile.h). Each input is read twice:
 *  1. as it is — mutations mostly break a CRC, which exercises the checksum paths;
 *  2. with every CRC recomputed (header CRC; each payload's CRC where its offset and size lie in
 *     the file; each data CRC where the payload inflates to its declared size, up to 1 MiB), so
 *     that mutated sizes, offsets, shapes, names and zlib streams reach the deeper checks.
 * Invariants checked after a successful read: every record has a valid, unique, NUL-terminated
 * name, a known dtype, 0..4 dims, nbytes == prod(shape) * dtype size and non-NULL data; writing
 * the records back with ckpt_write_atomic and reading them again gives the same records. */
#include <string.h>
#include <zlib.h>

#include "fuzz_util.h"
#include "train/ckptfile.h"

static void check_records(const CkptRecord *r, int n) {
    for (int i = 0; i < n; i++) {
        FUZZ_ASSERT(memchr(r[i].name, 0, CKPT_NAME_MAX) && r[i].name[0], "record %d: bad name", i);
        size_t esz = ckpt_dtype_size(r[i].dtype);
        FUZZ_ASSERT(esz > 0, "record '%s': unknown dtype %d accepted", r[i].name, r[i].dtype);
        FUZZ_ASSERT(r[i].ndim >= 0 && r[i].ndim <= CKPT_MAX_NDIM, "record '%s': ndim %d",
                    r[i].name, r[i].ndim);
        uint64_t elems = 1;
        for (int d = 0; d < r[i].ndim; d++) {
            FUZZ_ASSERT(r[i].shape[d] >= 0, "record '%s': negative dim", r[i].name);
            elems *= (uint64_t)r[i].shape[d];
        }
        FUZZ_ASSERT(elems * esz == r[i].nbytes, "record '%s': nbytes %zu != shape size",
                    r[i].name, r[i].nbytes);
        FUZZ_ASSERT(r[i].data != NULL, "record '%s': NULL data", r[i].name);
        for (int j = 0; j < i; j++)
            FUZZ_ASSERT(strcmp(r[i].name, r[j].name) != 0, "duplicate name '%s'", r[i].name);
        /* touch every byte, so that ASan sees a short allocation */
        volatile uint8_t sink = 0;
        for (size_t b = 0; b < r[i].nbytes; b++) sink ^= ((const uint8_t *)r[i].data)[b];
        (void)sink;
    }
}

static void read_and_check(const char *path) {
    CkptRecord *recs = NULL;
    int n = 0;
    Err err;
    if (ckpt_read(path, &recs, &n, &err) != STATUS_OK) {
        FUZZ_ASSERT(recs == NULL && n == 0, "ckpt_read failed but returned records");
        FUZZ_ASSERT(err.msg[0] && strstr(err.msg, path), "error message does not name the file");
        return;
    }
    check_records(recs, n);
    const char *again = fuzz_tmp_path("again.ckpt");
    Status st = ckpt_write_atomic(again, recs, n, 1, &err);
    FUZZ_ASSERT(st == STATUS_OK, "records read back cannot be written again: %s", err.msg);
    CkptRecord *recs2 = NULL;
    int n2 = 0;
    st = ckpt_read(again, &recs2, &n2, &err);
    FUZZ_ASSERT(st == STATUS_OK, "a rewritten checkpoint does not read: %s", err.msg);
    FUZZ_ASSERT(n2 == n, "rewritten checkpoint: %d records, expected %d", n2, n);
    for (int i = 0; i < n; i++) {
        FUZZ_ASSERT(strcmp(recs[i].name, recs2[i].name) == 0 && recs[i].dtype == recs2[i].dtype &&
                        recs[i].ndim == recs2[i].ndim && recs[i].nbytes == recs2[i].nbytes &&
                        memcmp(recs[i].shape, recs2[i].shape, sizeof recs[i].shape) == 0 &&
                        memcmp(recs[i].data, recs2[i].data, recs[i].nbytes) == 0,
                    "record %d differs after a rewrite", i);
    }
    ckpt_records_free(recs2, n2);
    ckpt_records_free(recs, n);
}

/* Recomputes the CRCs of a checkpoint image in place (see the top of this file). */
static void fix_crcs(uint8_t *p, size_t n) {
    if (n < CKPT_HEADER_BYTES) return;
    uint64_t count = fuzz_get_u32(p + 12);
    uint64_t room = (n - CKPT_HEADER_BYTES) / CKPT_DESC_BYTES;
    uint64_t fixable = count < room ? count : room;
    for (uint64_t i = 0; i < fixable; i++) {
        uint8_t *d = p + CKPT_HEADER_BYTES + i * CKPT_DESC_BYTES;
        uint64_t off = fuzz_get_u64(d + 136), csize = fuzz_get_u64(d + 144);
        uint64_t usize = fuzz_get_u64(d + 152);
        if (off > n || csize > n - off || csize > UINT32_MAX) continue;
        fuzz_put_u32(d + 164, (uint32_t)crc32(0L, p + off, (uInt)csize));
        if (usize > ((uint64_t)1 << 20)) continue;
        uint8_t *buf = malloc(usize ? usize : 1);
        uLongf got = (uLongf)usize;
        if (uncompress(buf, &got, p + off, (uLong)csize) == Z_OK && got == usize)
            fuzz_put_u32(d + 160, (uint32_t)crc32(0L, buf, (uInt)usize));
        free(buf);
    }
    if (count > room) return; /* the table does not fit: the reader stops before the CRC */
    fuzz_put_u32(p + 16, 0);
    uLong c = crc32(0L, p, CKPT_HEADER_BYTES);
    c = crc32(c, p + CKPT_HEADER_BYTES, (uInt)(count * CKPT_DESC_BYTES));
    fuzz_put_u32(p + 16, (uint32_t)c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_tmp_path("input.ckpt");
    fuzz_write_file(path, data, size);
    read_and_check(path);

    uint8_t *fixed = malloc(size ? size : 1);
    memcpy(fixed, data, size);
    fix_crcs(fixed, size);
    if (memcmp(fixed, data, size) != 0) {
        fuzz_write_file(path, fixed, size);
        read_and_check(path);
    }
    free(fixed);
    return 0;
}
