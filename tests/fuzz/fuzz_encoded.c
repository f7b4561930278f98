/* fuzz_encoded.c — fuzz target of the encoded-corpus cache loader, encoded_load
 * (src/data/encoded.c).
 *
 * Input: the bytes of a cache file (format in encoded.h). Each input is loaded twice:
 *  1. as it is, expecting the key stored in the file (a mismatch is tested by the unit tests);
 *  2. with the header CRC and the payload CRC recomputed, so that mutated counts, offsets and ids
 *     reach the checks behind the CRCs.
 * Invariants checked after a successful load: offsets start at 0, never decrease and end at the
 * id counts; every id lies in [0, vocab) of the header; encoded_save of the result and a second
 * encoded_load give the same arrays. */
#include <string.h>
#include <zlib.h>

#include "data/encoded.h"
#include "fuzz_util.h"

enum { HDR = 56, HDR_CRC_SPAN = 48 };

static void check_side(const int64_t *off, const int32_t *ids, long n, uint32_t vocab) {
    FUZZ_ASSERT(off[0] == 0, "first offset %lld", (long long)off[0]);
    for (long i = 0; i < n; i++) {
        FUZZ_ASSERT(off[i + 1] >= off[i], "offsets decrease at %ld", i);
        for (int64_t k = off[i]; k < off[i + 1]; k++)
            FUZZ_ASSERT(ids[k] >= 0 && (uint32_t)ids[k] < vocab, "id %d outside [0, %u)", ids[k],
                        vocab);
    }
}

static void load_and_check(const char *path, const uint8_t *hdr) {
    uint64_t key = fuzz_get_u64(hdr + 16);
    uint32_t vocab = fuzz_get_u32(hdr + 12);
    Encoded e, e2;
    Err err;
    if (encoded_load(&e, path, key, &err) != STATUS_OK) {
        FUZZ_ASSERT(e.n == 0 && !e.src_ids && !e.src_off && !e.tgt_ids && !e.tgt_off,
                    "encoded_load failed but left data");
        FUZZ_ASSERT(strstr(err.msg, path) != NULL, "the message does not name the file: %s",
                    err.msg);
        return;
    }
    FUZZ_ASSERT(e.n >= 0, "negative pair count");
    check_side(e.src_off, e.src_ids, e.n, vocab);
    check_side(e.tgt_off, e.tgt_ids, e.n, vocab);
    const char *again = fuzz_tmp_path("again.cache");
    Status st = encoded_save(&e, again, key, (int)vocab, &err);
    FUZZ_ASSERT(st == STATUS_OK, "a loaded cache cannot be saved: %s", err.msg);
    st = encoded_load(&e2, again, key, &err);
    FUZZ_ASSERT(st == STATUS_OK, "a re-saved cache does not load: %s", err.msg);
    FUZZ_ASSERT(e2.n == e.n, "pair count changed on re-save");
    size_t no = ((size_t)e.n + 1) * sizeof(int64_t);
    FUZZ_ASSERT(memcmp(e.src_off, e2.src_off, no) == 0 && memcmp(e.tgt_off, e2.tgt_off, no) == 0,
                "offsets changed on re-save");
    FUZZ_ASSERT(memcmp(e.src_ids, e2.src_ids, sizeof(int32_t) * (size_t)e.src_off[e.n]) == 0 &&
                    memcmp(e.tgt_ids, e2.tgt_ids, sizeof(int32_t) * (size_t)e.tgt_off[e.n]) == 0,
                "ids changed on re-save");
    encoded_free(&e2);
    encoded_free(&e);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint8_t hdr[HDR] = {0}; /* the header, zero-filled when the input is shorter */
    memcpy(hdr, data, size < HDR ? size : HDR);
    const char *path = fuzz_tmp_path("input.cache");
    fuzz_write_file(path, data, size);
    load_and_check(path, hdr);
    if (size < HDR) return 0;

    uint8_t *fixed = malloc(size);
    memcpy(fixed, data, size);
    fuzz_put_u32(fixed + 48, (uint32_t)crc32(0L, fixed, HDR_CRC_SPAN));
    uLong c = crc32(0L, Z_NULL, 0);
    if (size > HDR) c = crc32(c, fixed + HDR, (uInt)(size - HDR));
    fuzz_put_u32(fixed + 52, (uint32_t)c);
    if (memcmp(fixed, data, size) != 0) {
        fuzz_write_file(path, fixed, size);
        load_and_check(path, fixed);
    }
    free(fixed);
    return 0;
}
