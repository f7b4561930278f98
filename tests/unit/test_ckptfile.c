/* test_ckptfile.c — the checkpoint container: round trip, every truncation, every byte and bit
 * flip, 45 hand-made bad files (bad magic, future versions, absurd counts, sizes that overflow,
 * offsets past the end, overlapping records, gaps, duplicate and malformed names, bad dtypes and
 * shapes, CRC fields that lie, CRC-valid payloads that are not zlib or carry junk after the
 * stream, uncompressed sizes that lie, truncation at the table's end, records that would inflate
 * beyond the machine's memory), each refused with its own message, atomic replacement and write
 * failures. (Every system call of a save failing in turn: tests/slow/test_iofail.c.) */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "testutil.h"
#include "train/ckptfile.h"

static const char *g_dir;

static char *path_in(const char *name) {
    static char bufs[16][4096]; /* a ring, so that a few paths can be alive at once */
    static int k = 0;
    char *b = bufs[k++ & 15];
    snprintf(b, 4096, "%s/%s", g_dir, name);
    return b;
}

/* Number of entries (other than . and ..) in a folder; -1 if it cannot be opened. */
static int count_entries(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(d);
    return n;
}

/* True when a folder holds a file whose name contains ".tmp.". */
static int has_temp_file(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    int found = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strstr(e->d_name, ".tmp.")) found = 1;
    closedir(d);
    return found;
}

static CkptRecord rec(const char *name, CkptDType dt, int ndim, const int64_t *shape, void *data,
                      size_t nbytes) {
    CkptRecord r;
    memset(&r, 0, sizeof r);
    snprintf(r.name, sizeof r.name, "%s", name);
    r.dtype = dt;
    r.ndim = ndim;
    for (int i = 0; i < ndim && i < CKPT_MAX_NDIM; i++) r.shape[i] = shape[i];
    r.data = data;
    r.nbytes = nbytes;
    return r;
}

static int records_equal(const CkptRecord *a, const CkptRecord *b) {
    if (strcmp(a->name, b->name) || a->dtype != b->dtype || a->ndim != b->ndim ||
        a->nbytes != b->nbytes)
        return 0;
    for (int i = 0; i < a->ndim; i++)
        if (a->shape[i] != b->shape[i]) return 0;
    return a->nbytes == 0 || memcmp(a->data, b->data, a->nbytes) == 0;
}

/* Expects ckpt_read(path) to fail cleanly with a message that names the file. Returns 1 if so. */
static int read_fails(const char *path, const char *want_substr) {
    CkptRecord *recs = (CkptRecord *)&recs; /* poisoned: must be reset to NULL */
    int n = -7;
    Err err;
    err.msg[0] = 0;
    Status st = ckpt_read(path, &recs, &n, &err);
    int ok = st != STATUS_OK && recs == NULL && n == 0 && strstr(err.msg, path) != NULL &&
             (!want_substr || strstr(err.msg, want_substr) != NULL);
    if (!ok) {
        fprintf(stderr, "  read of %s: st=%d n=%d msg='%s' (wanted '%s')\n", path, st, n, err.msg,
                want_substr ? want_substr : "");
        if (st == STATUS_OK) ckpt_records_free(recs, n);
    } else if (getenv("CKPT_TEST_VERBOSE")) {
        fprintf(stderr, "  refused: %s\n", err.msg);
    }
    return ok;
}

/* ---- little-endian patch helpers for crafting bad files ---- */
static void put32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static void put64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static uint32_t get32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
/* Recomputes the header CRC after a deliberate edit of the header or table. */
static void fix_header_crc(uint8_t *f) {
    uint32_t count = get32(f + 12);
    put32(f + 16, 0);
    uLong c = crc32(0L, Z_NULL, 0);
    c = crc32(c, f, CKPT_HEADER_BYTES + count * CKPT_DESC_BYTES);
    put32(f + 16, (uint32_t)c);
}
static uint8_t *desc_at(uint8_t *f, int i) { return f + CKPT_HEADER_BYTES + i * CKPT_DESC_BYTES; }

/* ---------------------------------------------------------------------------------------------- */

static void test_round_trip(void) {
    enum { NF = 3 * 5, NI = 2 * 3 * 4, NB = 300, NBIG = 200000 };
    float f[NF], f4[2 * 1 * 3 * 2];
    int32_t iv[NI];
    uint8_t blob[NB];
    uint64_t step = 123456789012345ull, rngst[2] = {0xdeadbeefcafef00dull, 17};
    float *big = malloc(NBIG * sizeof *big);
    for (int i = 0; i < NF; i++) f[i] = (float)i * 0.25f - 1.0f;
    for (int i = 0; i < 12; i++) f4[i] = -(float)i / 3.0f;
    for (int i = 0; i < NI; i++) iv[i] = i * 1000 - 7;
    for (int i = 0; i < NB; i++) blob[i] = (uint8_t)(i * 37 + 11);
    for (int i = 0; i < NBIG; i++) big[i] = (float)(i % 97) * 1e-3f;
    const char *cfg = "[model]\narch = rnn\nattention = luong_general\n";

    CkptRecord in[9];
    int k = 0;
    in[k++] = rec("config", CKPT_U8, 1, (int64_t[]){(int64_t)strlen(cfg)}, (void *)cfg, strlen(cfg));
    in[k++] = rec("enc.W", CKPT_F32, 2, (int64_t[]){3, 5}, f, sizeof f);
    in[k++] = rec("enc.conv", CKPT_F32, 4, (int64_t[]){2, 1, 3, 2}, f4, sizeof f4);
    in[k++] = rec("ids", CKPT_I32, 3, (int64_t[]){2, 3, 4}, iv, sizeof iv);
    in[k++] = rec("spm.model", CKPT_U8, 1, (int64_t[]){NB}, blob, sizeof blob);
    in[k++] = rec("step", CKPT_U64, 0, NULL, &step, sizeof step);
    in[k++] = rec("rng", CKPT_U64, 1, (int64_t[]){2}, rngst, sizeof rngst);
    in[k++] = rec("empty", CKPT_F32, 2, (int64_t[]){0, 7}, NULL, 0);
    in[k++] = rec("adam.m big", CKPT_F32, 1, (int64_t[]){NBIG}, big, NBIG * sizeof *big);

    int levels[] = {-1, 0, 1, 9};
    for (size_t li = 0; li < sizeof levels / sizeof *levels; li++) {
        const char *p = path_in("rt.ckpt");
        Err err = {{0}};
        Status st = ckpt_write_atomic(p, in, k, levels[li], &err);
        EXPECT(st == STATUS_OK, "write at level %d: %s", levels[li], err.msg);
        EXPECT(!has_temp_file(g_dir), "temp file left after a successful write");
        CkptRecord *out = NULL;
        int n = 0;
        st = ckpt_read(p, &out, &n, &err);
        EXPECT(st == STATUS_OK, "read at level %d: %s", levels[li], err.msg);
        EXPECT(n == k, "read %d records, wrote %d", n, k);
        for (int i = 0; st == STATUS_OK && i < k && i < n; i++) {
            EXPECT(records_equal(&in[i], &out[i]), "record %d ('%s') differs", i, in[i].name);
            EXPECT(out[i].data != NULL, "record '%s' has NULL data", out[i].name);
            const CkptRecord *fr = ckpt_find(out, n, in[i].name);
            EXPECT(fr == &out[i], "ckpt_find('%s')", in[i].name);
        }
        EXPECT(ckpt_find(out, n, "nope") == NULL, "ckpt_find of a missing name");
        if (st == STATUS_OK) {
            const CkptRecord *s = ckpt_find(out, n, "step");
            EXPECT(s && s->ndim == 0 && s->nbytes == 8 && *(uint64_t *)s->data == step,
                   "scalar step");
        }
        ckpt_records_free(out, n);
        unlink(p);
    }

    /* zero records */
    {
        const char *p = path_in("zero.ckpt");
        Err err = {{0}};
        EXPECT(ckpt_write_atomic(p, NULL, 0, 1, &err) == STATUS_OK, "%s", err.msg);
        CkptRecord *out = NULL;
        int n = -1;
        EXPECT(ckpt_read(p, &out, &n, &err) == STATUS_OK && n == 0, "%s", err.msg);
        ckpt_records_free(out, n);
        unlink(p);
    }
    free(big);
    EXPECT(count_entries(g_dir) == 0, "folder not empty after round trips");
}

/* Writes the small file used by the corruption tests; returns its bytes. */
static uint8_t *small_file(const char *p, size_t *size) {
    static float w[6] = {1, 2, 3, 4, 5, 6};
    static int32_t ids[3] = {7, 8, 9};
    static uint8_t blob[5] = {'h', 'e', 'l', 'l', 'o'};
    CkptRecord r[3] = {
        rec("w", CKPT_F32, 2, (int64_t[]){2, 3}, w, sizeof w),
        rec("ids", CKPT_I32, 1, (int64_t[]){3}, ids, sizeof ids),
        rec("blob", CKPT_U8, 1, (int64_t[]){5}, blob, sizeof blob),
    };
    Err err = {{0}};
    Status st = ckpt_write_atomic(p, r, 3, 9, &err);
    EXPECT(st == STATUS_OK, "small file: %s", err.msg);
    uint8_t *buf = (uint8_t *)test_read_file(p, size);
    EXPECT(buf != NULL, "cannot read back %s", p);
    return buf;
}

static void test_truncation_and_flips(void) {
    const char *good = path_in("small.ckpt");
    const char *bad = path_in("bad.ckpt");
    size_t size = 0;
    uint8_t *f = small_file(good, &size);
    if (!f) return;
    printf("small file: %zu bytes\n", size);

    int trunc_ok = 0;
    for (size_t len = 0; len < size; len++) {
        test_write_file(bad, f, len);
        trunc_ok += read_fails(bad, NULL);
    }
    EXPECT(trunc_ok == (int)size, "%d of %zu truncations refused", trunc_ok, size);

    /* Every byte of the file is covered (header+table: header CRC, payloads: payload CRC), so
     * every flip must be refused. */
    uint8_t *g = malloc(size);
    int byte_ok = 0, bit_ok = 0;
    for (size_t i = 0; i < size; i++) {
        memcpy(g, f, size);
        g[i] ^= 0xFF;
        test_write_file(bad, g, size);
        byte_ok += read_fails(bad, NULL);
    }
    EXPECT(byte_ok == (int)size, "%d of %zu byte flips refused", byte_ok, size);
    for (size_t i = 0; i < size * 8; i++) {
        memcpy(g, f, size);
        g[i / 8] ^= (uint8_t)(1u << (i % 8));
        test_write_file(bad, g, size);
        bit_ok += read_fails(bad, NULL);
    }
    EXPECT(bit_ok == (int)(size * 8), "%d of %zu bit flips refused", bit_ok, size * 8);

    /* an extra byte at the end */
    memcpy(g, f, size);
    {
        uint8_t *h = malloc(size + 1);
        memcpy(h, f, size);
        h[size] = 0;
        test_write_file(bad, h, size + 1);
        EXPECT(read_fails(bad, "after the last record"), "trailing byte");
        free(h);
    }

    /* the untouched file still reads */
    CkptRecord *out = NULL;
    int n = 0;
    Err err = {{0}};
    EXPECT(ckpt_read(good, &out, &n, &err) == STATUS_OK && n == 3, "%s", err.msg);
    ckpt_records_free(out, n);
    free(g);
    free(f);
    unlink(bad);
    unlink(good);
}

/* Applies an edit to a copy of the small file (recomputing the header CRC) and expects refusal
 * with a message containing want. */
static int g_crafted = 0, g_crafted_refused = 0;

static void crafted(const char *what, void (*edit)(uint8_t *f, size_t *size), const char *want) {
    const char *good = path_in("c.ckpt");
    const char *bad = path_in("cbad.ckpt");
    size_t size = 0;
    uint8_t *f = small_file(good, &size);
    if (!f) return;
    uint8_t *g = calloc(1, size + 4096);
    memcpy(g, f, size);
    edit(g, &size);
    test_write_file(bad, g, size);
    int ok = read_fails(bad, want);
    EXPECT(ok, "crafted file: %s", what);
    g_crafted++;
    g_crafted_refused += ok;
    free(g);
    free(f);
    unlink(good);
    unlink(bad);
}

static void e_magic(uint8_t *f, size_t *s) { (void)s; f[1] = 'X'; }
static void e_future(uint8_t *f, size_t *s) { (void)s; put32(f + 8, CKPT_FORMAT_VERSION + 1); }
static void e_future_crc(uint8_t *f, size_t *s) { e_future(f, s); fix_header_crc(f); }
static void e_version0(uint8_t *f, size_t *s) { (void)s; put32(f + 8, 0); fix_header_crc(f); }
static void e_many(uint8_t *f, size_t *s) { (void)s; put32(f + 12, 100001); }
static void e_table_past_end(uint8_t *f, size_t *s) { (void)s; put32(f + 12, 1000); }
static void e_dup(uint8_t *f, size_t *s) {
    (void)s;
    /* record 1 "ids" -> "w" (record 0's name) */
    memset(desc_at(f, 1), 0, CKPT_NAME_MAX);
    desc_at(f, 1)[0] = 'w';
    fix_header_crc(f);
}
static void e_name_unterminated(uint8_t *f, size_t *s) {
    (void)s;
    memset(desc_at(f, 0), 'a', CKPT_NAME_MAX);
    fix_header_crc(f);
}
static void e_name_unprintable(uint8_t *f, size_t *s) {
    (void)s;
    desc_at(f, 0)[0] = 0x07;
    fix_header_crc(f);
}
static void e_dtype(uint8_t *f, size_t *s) { (void)s; put32(desc_at(f, 0) + 96, 9); fix_header_crc(f); }
static void e_ndim(uint8_t *f, size_t *s) { (void)s; put32(desc_at(f, 0) + 100, 5); fix_header_crc(f); }
static void e_negdim(uint8_t *f, size_t *s) {
    (void)s;
    put64(desc_at(f, 0) + 104, (uint64_t)(int64_t)-2);
    fix_header_crc(f);
}
static void e_overflow(uint8_t *f, size_t *s) {
    /* 2^62 * 2^62 * 4 wraps around 64 bits */
    (void)s;
    put64(desc_at(f, 0) + 104, (uint64_t)1 << 62);
    put64(desc_at(f, 0) + 112, (uint64_t)1 << 62);
    put64(desc_at(f, 0) + 152, 0);
    fix_header_crc(f);
}
static void e_shape_mismatch(uint8_t *f, size_t *s) {
    (void)s;
    put64(desc_at(f, 0) + 104, 3); /* [3,3] f32 = 36 bytes, declared 24 */
    fix_header_crc(f);
}
static void e_over_cap(uint8_t *f, size_t *s) {
    (void)s;
    uint8_t *d = desc_at(f, 2); /* blob u8 [5] -> [9 GiB] */
    put64(d + 104, (uint64_t)9 << 30);
    put64(d + 152, (uint64_t)9 << 30);
    fix_header_crc(f);
}
static void e_ratio(uint8_t *f, size_t *s) {
    (void)s;
    uint8_t *d = desc_at(f, 2); /* blob u8 [5] -> [1 GiB] from ~13 compressed bytes */
    put64(d + 104, (uint64_t)1 << 30);
    put64(d + 152, (uint64_t)1 << 30);
    fix_header_crc(f);
}
static void e_size_smaller(uint8_t *f, size_t *s) {
    (void)s;
    uint8_t *d = desc_at(f, 2); /* blob decompresses to 5 bytes, declare 4 */
    put64(d + 104, 4);
    put64(d + 152, 4);
    fix_header_crc(f);
}
static void e_size_larger(uint8_t *f, size_t *s) {
    (void)s;
    uint8_t *d = desc_at(f, 2); /* declare 6 */
    put64(d + 104, 6);
    put64(d + 152, 6);
    fix_header_crc(f);
}
static void e_offset_past_end(uint8_t *f, size_t *s) {
    (void)s;
    put64(desc_at(f, 2) + 136, 1000000);
    fix_header_crc(f);
}
static void e_csize_huge(uint8_t *f, size_t *s) {
    (void)s;
    put64(desc_at(f, 2) + 144, UINT64_MAX - 3); /* offset + csize wraps */
    fix_header_crc(f);
}
static void e_overlap(uint8_t *f, size_t *s) {
    (void)s;
    uint8_t *d1 = desc_at(f, 1), *d0 = desc_at(f, 0);
    memcpy(d1 + 136, d0 + 136, 8); /* record 1 points at record 0's payload */
    fix_header_crc(f);
}
static void e_into_table(uint8_t *f, size_t *s) {
    (void)s;
    put64(desc_at(f, 0) + 136, 8);
    fix_header_crc(f);
}
static void e_payload_and_crc(uint8_t *f, size_t *s) {
    /* change a payload byte AND fix its payload CRC: the zlib stream or the data CRC catch it */
    uint8_t *d = desc_at(f, 2);
    uint64_t off = 0, cs = 0;
    for (int i = 0; i < 8; i++) off |= (uint64_t)d[136 + i] << (8 * i);
    for (int i = 0; i < 8; i++) cs |= (uint64_t)d[144 + i] << (8 * i);
    f[off + cs / 2] ^= 0x10;
    put32(d + 164, (uint32_t)crc32(crc32(0L, Z_NULL, 0), f + off, (uInt)cs));
    fix_header_crc(f);
    (void)s;
}

static uint64_t get64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}
/* Recomputes record i's payload CRC (over its csize stored bytes) and the header CRC. */
static void fix_payload_crc(uint8_t *f, int i) {
    uint8_t *d = desc_at(f, i);
    uint64_t off = get64(d + 136), cs = get64(d + 144);
    put32(d + 164, (uint32_t)crc32(crc32(0L, Z_NULL, 0), f + off, (uInt)cs));
    fix_header_crc(f);
}
static void e_version_max(uint8_t *f, size_t *s) { (void)s; put32(f + 8, 0xFFFFFFFFu); fix_header_crc(f); }
static void e_reserved(uint8_t *f, size_t *s) { (void)s; put32(f + 20, 1); fix_header_crc(f); }
static void e_header_crc(uint8_t *f, size_t *s) { (void)s; f[16] ^= 0x01; }
static void e_table_byte(uint8_t *f, size_t *s) { (void)s; desc_at(f, 1)[130] ^= 0x40; }
static void e_short_header(uint8_t *f, size_t *s) { (void)f; *s = 10; }
static void e_zero_length(uint8_t *f, size_t *s) { (void)f; *s = 0; }
static void e_name_empty(uint8_t *f, size_t *s) {
    (void)s;
    memset(desc_at(f, 2), 0, CKPT_NAME_MAX);
    fix_header_crc(f);
}
static void e_name_padding(uint8_t *f, size_t *s) {
    (void)s;
    desc_at(f, 2)[CKPT_NAME_MAX - 1] = 'z'; /* "blob\0...z" */
    fix_header_crc(f);
}
static void e_unused_dim(uint8_t *f, size_t *s) {
    (void)s;
    put64(desc_at(f, 1) + 104 + 8 * 3, 7); /* ids is 1-D: axis 3 must be 0 */
    fix_header_crc(f);
}
static void e_payload_crc_field(uint8_t *f, size_t *s) {
    (void)s;
    put32(desc_at(f, 1) + 164, get32(desc_at(f, 1) + 164) ^ 0x1000u);
    fix_header_crc(f);
}
static void e_data_crc_field(uint8_t *f, size_t *s) {
    (void)s;
    put32(desc_at(f, 0) + 160, get32(desc_at(f, 0) + 160) + 1);
    fix_header_crc(f);
}
static void e_not_zlib(uint8_t *f, size_t *s) {
    (void)s;
    uint8_t *d = desc_at(f, 1);
    memset(f + get64(d + 136), 0xAA, (size_t)get64(d + 144)); /* not a zlib header */
    fix_payload_crc(f, 1);
}
static void e_junk_after_stream(uint8_t *f, size_t *s) {
    /* the last record's compressed bytes grow by 3 bytes of junk after its zlib stream; its
     * payload CRC and the header CRC are recomputed, so only the stream's own end betrays it */
    uint8_t *d = desc_at(f, 2);
    memcpy(f + *s, "JNK", 3);
    *s += 3;
    put64(d + 144, get64(d + 144) + 3);
    fix_payload_crc(f, 2);
}
static void e_gap(uint8_t *f, size_t *s) {
    /* one byte inserted between records 0 and 1; offsets of 1 and 2 moved along */
    uint64_t at = get64(desc_at(f, 1) + 136);
    memmove(f + at + 1, f + at, *s - at);
    f[at] = 0;
    *s += 1;
    put64(desc_at(f, 1) + 136, at + 1);
    put64(desc_at(f, 2) + 136, get64(desc_at(f, 2) + 136) + 1);
    fix_header_crc(f);
}
static void e_count_low(uint8_t *f, size_t *s) { (void)s; put32(f + 12, 2); fix_header_crc(f); }
static void e_count_zero(uint8_t *f, size_t *s) { (void)s; put32(f + 12, 0); fix_header_crc(f); }
static void e_cut_after_table(uint8_t *f, size_t *s) {
    (void)f;
    *s = CKPT_HEADER_BYTES + 3 * CKPT_DESC_BYTES; /* the payloads are gone */
}
static void e_cut_in_last(uint8_t *f, size_t *s) { (void)f; *s -= 2; }
static void e_swap_offsets(uint8_t *f, size_t *s) {
    /* records 1 and 2 exchange their offsets: each then points at the other's bytes */
    (void)s;
    uint8_t a[8], b[8];
    memcpy(a, desc_at(f, 1) + 136, 8);
    memcpy(b, desc_at(f, 2) + 136, 8);
    memcpy(desc_at(f, 1) + 136, b, 8);
    memcpy(desc_at(f, 2) + 136, a, 8);
    fix_header_crc(f);
}
static void e_dtype_zero(uint8_t *f, size_t *s) { (void)s; put32(desc_at(f, 1) + 96, 0); fix_header_crc(f); }
static void e_size_zero_lie(uint8_t *f, size_t *s) {
    /* blob claims shape [0] and 0 bytes, but its (CRC-valid) stream inflates to 5 bytes */
    (void)s;
    uint8_t *d = desc_at(f, 2);
    put64(d + 104, 0);
    put64(d + 152, 0);
    fix_header_crc(f);
}

static void test_crafted(void) {
    crafted("bad magic", e_magic, "not a trainer checkpoint");
    crafted("future version", e_future, "written by a newer trainer");
    crafted("future version, CRC fixed", e_future_crc, "written by a newer trainer");
    crafted("version 0", e_version0, "version 0");
    crafted("too many records", e_many, "100001 records");
    crafted("table past end", e_table_past_end, "record table");
    crafted("duplicate names", e_dup, "used by two records");
    crafted("unterminated name", e_name_unterminated, "NUL-terminated");
    crafted("unprintable name", e_name_unprintable, "non-printable");
    crafted("unknown dtype", e_dtype, "unknown dtype 9");
    crafted("ndim 5", e_ndim, "5 dimensions");
    crafted("negative dimension", e_negdim, "negative dimension -2");
    crafted("shape overflow", e_overflow, "record limit");
    crafted("shape vs size", e_shape_mismatch, "should hold 36 bytes but declares 24");
    crafted("record over 8 GiB", e_over_cap, "record limit");
    crafted("impossible ratio", e_ratio, "more than zlib can produce");
    crafted("size smaller than data", e_size_smaller, "more than its declared 4 bytes");
    crafted("size larger than data", e_size_larger, "decompresses to 5 bytes but declares 6");
    crafted("offset past end", e_offset_past_end, "claims");
    crafted("offset+size wraps", e_csize_huge, "claims");
    crafted("overlapping records", e_overlap, "should start at");
    crafted("record inside the table", e_into_table, "should start at");
    crafted("payload changed, payload CRC fixed", e_payload_and_crc, "record 'blob'");
    crafted("version 2^32-1", e_version_max, "format version 4294967295 was written by a newer");
    crafted("reserved field set", e_reserved, "reserved header field is not zero");
    crafted("header CRC field changed", e_header_crc, "header checksum mismatch");
    crafted("table byte changed, CRC not fixed", e_table_byte, "header checksum mismatch");
    crafted("10-byte file", e_short_header, "is 10 bytes long, shorter than the 24-byte header");
    crafted("empty file", e_zero_length, "is 0 bytes long");
    crafted("empty name", e_name_empty, "the name of record 2 is empty");
    crafted("garbage after the name's NUL", e_name_padding, "non-zero bytes after its");
    crafted("unused dimension set", e_unused_dim, "non-zero unused dimension 7 at axis 3");
    crafted("payload CRC field wrong", e_payload_crc_field, "record 'ids': checksum mismatch in "
            "its");
    crafted("data CRC field wrong", e_data_crc_field, "record 'w': checksum mismatch in its data");
    crafted("payload not zlib, CRC fixed", e_not_zlib, "record 'ids' cannot be decompressed");
    crafted("junk after the zlib stream", e_junk_after_stream, "junk after the compressed data");
    crafted("a gap between records", e_gap, "a gap of unaccounted bytes");
    crafted("count too low", e_count_low, "should start at 360 (a gap");
    crafted("count zero", e_count_zero, "the records end at 24)");
    crafted("cut right after the table", e_cut_after_table, "but the file is 528 bytes long");
    crafted("cut inside the last record", e_cut_in_last, "record 'blob' claims");
    crafted("offsets swapped", e_swap_offsets, "record 'ids' claims 17 bytes at offset 571");
    crafted("dtype 0", e_dtype_zero, "unknown dtype 0");
    crafted("zero size, data inflates", e_size_zero_lie, "more than its declared 0 bytes");

    /* more than this machine's memory once inflated, though within every limit of the format:
     * records of 8 GiB from 8.3 MB each (just above deflate's 1032:1), as many as needed */
    {
        long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
        uint64_t mem = (uint64_t)pages * (uint64_t)psz, rec_u = (uint64_t)8 << 30;
        uint64_t nrec = mem / rec_u + 1, rec_c = rec_u / 1032 + 1;
        if (pages > 0 && psz > 0 && nrec * rec_u <= ((uint64_t)64 << 30)) {
            size_t head = CKPT_HEADER_BYTES + (size_t)nrec * CKPT_DESC_BYTES;
            size_t size = head + (size_t)(nrec * rec_c);
            uint8_t *f = calloc(1, size);
            memcpy(f, "\x89TRCKPT\n", 8);
            put32(f + 8, CKPT_FORMAT_VERSION);
            put32(f + 12, (uint32_t)nrec);
            for (uint64_t i = 0; i < nrec; i++) {
                uint8_t *d = desc_at(f, (int)i);
                snprintf((char *)d, CKPT_NAME_MAX, "big%llu", (unsigned long long)i);
                put32(d + 96, CKPT_U8);
                put32(d + 100, 1);
                put64(d + 104, rec_u);
                put64(d + 136, head + i * rec_c);
                put64(d + 144, rec_c);
                put64(d + 152, rec_u);
            }
            fix_header_crc(f);
            const char *bomb = path_in("bomb.ckpt");
            test_write_file(bomb, f, size);
            int ok = read_fails(bomb, "once decompressed, more than this machine's");
            EXPECT(ok, "%llu records of 8 GiB (%zu-byte file) on a machine of %llu bytes",
                   (unsigned long long)nrec, size, (unsigned long long)mem);
            g_crafted++;
            g_crafted_refused += ok;
            unlink(bomb);
            free(f);
        } else {
            printf("this machine has 64 GiB of memory or more: the inflate-beyond-memory case "
                   "is skipped\n");
        }
    }

    /* not a file, not there, a folder */
    EXPECT(read_fails(path_in("missing.ckpt"), "cannot open"), "missing file");
    EXPECT(read_fails(g_dir, "not a regular file"), "a folder");
    printf("crafted files: %d of %d refused with their own message\n", g_crafted_refused,
           g_crafted);
}

static void test_writer_validation(void) {
    const char *p = path_in("v.ckpt");
    float x[4] = {0};
    Err err;
    CkptRecord r;
    struct {
        const char *what;
        CkptRecord r;
        const char *want;
    } cases[] = {
        {"nbytes", rec("a", CKPT_F32, 1, (int64_t[]){4}, x, 12), "should hold 16 bytes"},
        {"dtype", rec("a", (CkptDType)7, 1, (int64_t[]){4}, x, 16), "unknown dtype"},
        {"ndim", rec("a", CKPT_F32, 5, (int64_t[]){1, 1, 1, 4}, x, 16), "ndim 5"},
        {"negative", rec("a", CKPT_F32, 2, (int64_t[]){-1, -4}, x, 16), "negative"},
        {"empty name", rec("", CKPT_F32, 1, (int64_t[]){4}, x, 16), "empty"},
        {"no data", rec("a", CKPT_F32, 1, (int64_t[]){4}, NULL, 16), "no data"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        err.msg[0] = 0;
        Status st = ckpt_write_atomic(p, &cases[i].r, 1, 1, &err);
        EXPECT(st != STATUS_OK && strstr(err.msg, p) && strstr(err.msg, cases[i].want),
               "writer case %s: '%s'", cases[i].what, err.msg);
    }
    r = rec("a", CKPT_F32, 1, (int64_t[]){4}, x, 16);
    memset(r.name, 'n', sizeof r.name); /* not NUL-terminated */
    EXPECT(ckpt_write_atomic(p, &r, 1, 1, &err) != STATUS_OK && strstr(err.msg, "NUL"),
           "long name: %s", err.msg);
    CkptRecord two[2] = {rec("same", CKPT_F32, 1, (int64_t[]){4}, x, 16),
                         rec("same", CKPT_F32, 1, (int64_t[]){4}, x, 16)};
    EXPECT(ckpt_write_atomic(p, two, 2, 1, &err) != STATUS_OK &&
               strstr(err.msg, "used by two records"), "duplicate: %s", err.msg);
    EXPECT(ckpt_write_atomic(p, two, 1, 12, &err) != STATUS_OK && strstr(err.msg, "level 12"),
           "level: %s", err.msg);
    EXPECT(count_entries(g_dir) == 0, "writer validation left files behind");
}

static void test_write_failures(void) {
    float x[4] = {1, 2, 3, 4};
    CkptRecord r = rec("x", CKPT_F32, 1, (int64_t[]){4}, x, sizeof x);
    Err err;

    /* a folder that does not exist */
    {
        const char *p = path_in("no/such/folder/a.ckpt");
        err.msg[0] = 0;
        Status st = ckpt_write_atomic(p, &r, 1, 1, &err);
        EXPECT(st != STATUS_OK, "write into a missing folder succeeded");
        EXPECT(strstr(err.msg, p) && strstr(err.msg, strerror(ENOENT)), "message: %s", err.msg);
        EXPECT(count_entries(g_dir) == 0, "something was left behind");
    }
    /* a "folder" that is a file */
    {
        const char *file = path_in("plainfile");
        test_write_file(file, "x", 1);
        char p[4200];
        snprintf(p, sizeof p, "%s/a.ckpt", file);
        err.msg[0] = 0;
        EXPECT(ckpt_write_atomic(p, &r, 1, 1, &err) != STATUS_OK && strstr(err.msg, p) &&
                   strstr(err.msg, strerror(ENOTDIR)), "folder is a file: %s", err.msg);
        unlink(file);
        EXPECT(count_entries(g_dir) == 0, "something was left behind");
    }

    /* overwriting replaces the old file */
    const char *p = path_in("main.ckpt");
    float oldv[4] = {9, 9, 9, 9}, newv[4] = {5, 6, 7, 8};
    CkptRecord ro = rec("x", CKPT_F32, 1, (int64_t[]){4}, oldv, sizeof oldv);
    CkptRecord rn = rec("x", CKPT_F32, 1, (int64_t[]){4}, newv, sizeof newv);
    EXPECT(ckpt_write_atomic(p, &ro, 1, 1, &err) == STATUS_OK, "%s", err.msg);
    size_t old_size = 0;
    char *old_bytes = test_read_file(p, &old_size);
    EXPECT(ckpt_write_atomic(p, &rn, 1, 1, &err) == STATUS_OK, "overwrite: %s", err.msg);
    {
        CkptRecord *out = NULL;
        int n = 0;
        EXPECT(ckpt_read(p, &out, &n, &err) == STATUS_OK && n == 1 &&
                   memcmp(out[0].data, newv, sizeof newv) == 0, "overwrite content: %s", err.msg);
        ckpt_records_free(out, n);
        EXPECT(count_entries(g_dir) == 1, "exactly one file after overwrite");
    }
    /* put the old bytes back for the failure cases */
    test_write_file(p, old_bytes, old_size);

    /* a big incompressible record for failing writes */
    size_t nbig = 1 << 20;
    uint8_t *big = malloc(nbig);
    uint32_t s = 12345;
    for (size_t i = 0; i < nbig; i++) {
        s = s * 1664525u + 1013904223u;
        big[i] = (uint8_t)(s >> 24);
    }
    CkptRecord rb = rec("big", CKPT_U8, 1, (int64_t[]){(int64_t)nbig}, big, nbig);

    /* failure in the middle of writing: a file-size limit (works as root too) */
    {
        struct rlimit old, lim;
        getrlimit(RLIMIT_FSIZE, &old);
        lim = old;
        lim.rlim_cur = 64 * 1024;
        void (*prev)(int) = signal(SIGXFSZ, SIG_IGN);
        if (setrlimit(RLIMIT_FSIZE, &lim) == 0) {
            err.msg[0] = 0;
            Status st = ckpt_write_atomic(p, &rb, 1, 0, &err);
            setrlimit(RLIMIT_FSIZE, &old);
            EXPECT(st != STATUS_OK, "write beyond RLIMIT_FSIZE succeeded");
            EXPECT(strstr(err.msg, p) && strstr(err.msg, strerror(EFBIG)), "message: %s",
                   err.msg);
            size_t n = 0;
            char *now = test_read_file(p, &n);
            EXPECT(now && n == old_size && memcmp(now, old_bytes, n) == 0,
                   "old checkpoint changed by a failed write");
            free(now);
            EXPECT(!has_temp_file(g_dir) && count_entries(g_dir) == 1, "temp file left behind");
        } else {
            printf("setrlimit failed (%s): file-size-limit subcase skipped\n", strerror(errno));
        }
        signal(SIGXFSZ, prev);
    }

    /* failure at the rename: the target is a folder */
    {
        const char *dp = path_in("isdir.ckpt");
        mkdir(dp, 0755);
        char inner[4200];
        snprintf(inner, sizeof inner, "%s/isdir.ckpt/keep", g_dir);
        test_write_file(inner, "k", 1);
        err.msg[0] = 0;
        EXPECT(ckpt_write_atomic(dp, &r, 1, 1, &err) != STATUS_OK && strstr(err.msg, dp) &&
                   strstr(err.msg, "rename"), "rename onto a folder: %s", err.msg);
        EXPECT(!has_temp_file(g_dir), "temp file left after a failed rename");
        unlink(inner);
        rmdir(dp);
    }

    /* read-only folder (not meaningful as root, who may write anyway) */
    if (geteuid() != 0) {
        chmod(g_dir, 0555);
        err.msg[0] = 0;
        Status st = ckpt_write_atomic(p, &rn, 1, 1, &err);
        chmod(g_dir, 0755);
        EXPECT(st != STATUS_OK && strstr(err.msg, p) && strstr(err.msg, strerror(EACCES)),
               "read-only folder: %s", err.msg);
        size_t n = 0;
        char *now = test_read_file(p, &n);
        EXPECT(now && n == old_size && memcmp(now, old_bytes, n) == 0,
               "old checkpoint changed by a failed write");
        free(now);
    } else {
        printf("running as root: read-only-folder subcase skipped (covered by the file-size "
               "limit and rename failures)\n");
    }

    /* a validation failure leaves the old file alone too */
    CkptRecord badr = rec("x", CKPT_F32, 1, (int64_t[]){4}, newv, 3);
    EXPECT(ckpt_write_atomic(p, &badr, 1, 1, &err) != STATUS_OK, "bad record written");
    {
        CkptRecord *out = NULL;
        int n = 0;
        EXPECT(ckpt_read(p, &out, &n, &err) == STATUS_OK && n == 1 &&
                   memcmp(out[0].data, oldv, sizeof oldv) == 0, "old content: %s", err.msg);
        ckpt_records_free(out, n);
    }
    EXPECT(count_entries(g_dir) == 1, "only the checkpoint remains");
    unlink(p);
    free(big);
    free(old_bytes);
}

int main(void) {
    g_dir = test_tmpdir();
    test_round_trip();
    test_truncation_and_flips();
    test_crafted();
    test_writer_validation();
    test_write_failures();
    rmdir(g_dir);
    return test_report("test_ckptfile");
}
