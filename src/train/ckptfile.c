/* ckptfile.c — the checkpoint container: atomic writer and all-checking reader (format in
 * ckptfile.h, rules in docs/design.md §8). */
#include "train/ckptfile.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>
#include <zlib.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "ckptfile stores tensor elements as little-endian bytes; add byte swapping for this host"
#endif

static const uint8_t CKPT_MAGIC[8] = {0x89, 'T', 'R', 'C', 'K', 'P', 'T', '\n'};

#define CORRUPT "; the file is truncated or corrupt — use another checkpoint"

/* One record descriptor as stored in the table (see ckptfile.h). */
typedef struct {
    char name[CKPT_NAME_MAX];
    uint32_t dtype, ndim;
    uint64_t shape[CKPT_MAX_NDIM];
    uint64_t offset, csize, usize;
    uint32_t ucrc, ccrc;
} Desc;

/* ---- little-endian byte-by-byte serialisation ---- */

static void put_u32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static void put_u64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static uint32_t get_u32(const uint8_t *p) {
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) v |= (uint32_t)p[i] << (8 * i);
    return v;
}
static uint64_t get_u64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static void desc_encode(uint8_t *p, const Desc *d) {
    memset(p, 0, CKPT_DESC_BYTES);
    memcpy(p, d->name, strlen(d->name)); /* NUL padding from the memset */
    put_u32(p + 96, d->dtype);
    put_u32(p + 100, d->ndim);
    for (int i = 0; i < CKPT_MAX_NDIM; i++) put_u64(p + 104 + 8 * i, d->shape[i]);
    put_u64(p + 136, d->offset);
    put_u64(p + 144, d->csize);
    put_u64(p + 152, d->usize);
    put_u32(p + 160, d->ucrc);
    put_u32(p + 164, d->ccrc);
}

static void desc_decode(Desc *d, const uint8_t *p) {
    memcpy(d->name, p, CKPT_NAME_MAX);
    d->dtype = get_u32(p + 96);
    d->ndim = get_u32(p + 100);
    for (int i = 0; i < CKPT_MAX_NDIM; i++) d->shape[i] = get_u64(p + 104 + 8 * i);
    d->offset = get_u64(p + 136);
    d->csize = get_u64(p + 144);
    d->usize = get_u64(p + 152);
    d->ucrc = get_u32(p + 160);
    d->ccrc = get_u32(p + 164);
}

/* crc32 over a buffer of any size (zlib's crc32 takes a uInt length). */
static uint32_t crc_update(uint32_t crc, const uint8_t *p, uint64_t n) {
    uLong c = crc;
    while (n > 0) {
        uInt chunk = n > (1u << 30) ? (1u << 30) : (uInt)n;
        c = crc32(c, p, chunk);
        p += chunk;
        n -= chunk;
    }
    return (uint32_t)c;
}

/* crc32 of header (its CRC field taken as 0) followed by the table. */
static uint32_t header_crc(const uint8_t *hdr, const uint8_t *table, uint64_t table_bytes) {
    uint8_t h[CKPT_HEADER_BYTES];
    memcpy(h, hdr, sizeof h);
    put_u32(h + 16, 0);
    uint32_t c = crc_update((uint32_t)crc32(0L, Z_NULL, 0), h, sizeof h);
    return crc_update(c, table, table_bytes);
}

size_t ckpt_dtype_size(CkptDType dt) {
    switch (dt) {
    case CKPT_F32: return 4;
    case CKPT_I32: return 4;
    case CKPT_U8: return 1;
    case CKPT_U64: return 8;
    }
    return 0;
}

const char *ckpt_dtype_name(CkptDType dt) {
    switch (dt) {
    case CKPT_F32: return "f32";
    case CKPT_I32: return "i32";
    case CKPT_U8: return "u8";
    case CKPT_U64: return "u64";
    }
    return "?";
}

/* ---- shared checks of one record's description (writer and reader) ---- */

/* Checks name bytes (NUL-terminated within CKPT_NAME_MAX, non-empty, printable ASCII, and, when
 * pad_must_be_zero, NUL-padded). Writes a reason into why. */
static bool name_ok(const char *name, bool pad_must_be_zero, char *why, size_t whyn) {
    size_t len = 0;
    while (len < CKPT_NAME_MAX && name[len] != '\0') len++;
    if (len == CKPT_NAME_MAX) {
        snprintf(why, whyn, "is not NUL-terminated within %d bytes", CKPT_NAME_MAX);
        return false;
    }
    if (len == 0) {
        snprintf(why, whyn, "is empty");
        return false;
    }
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)name[i];
        if (c < 0x20 || c > 0x7e) {
            snprintf(why, whyn, "contains the non-printable byte 0x%02x at position %zu", c, i);
            return false;
        }
    }
    if (pad_must_be_zero) {
        for (size_t i = len; i < CKPT_NAME_MAX; i++) {
            if (name[i] != '\0') {
                snprintf(why, whyn, "has non-zero bytes after its terminating NUL");
                return false;
            }
        }
    }
    return true;
}

/* Checks dtype, ndim and shape, and computes the byte size (overflow-safe, capped at
 * CKPT_MAX_RECORD_BYTES). Returns false with a reason in why. */
static bool shape_bytes(uint32_t dtype, uint32_t ndim, const uint64_t shape[CKPT_MAX_NDIM],
                        uint64_t *bytes, char *why, size_t whyn) {
    size_t esz = ckpt_dtype_size((CkptDType)dtype);
    if (esz == 0) {
        snprintf(why, whyn, "has the unknown dtype %u (known: 1 f32, 2 i32, 3 u8, 4 u64)", dtype);
        return false;
    }
    if (ndim > CKPT_MAX_NDIM) {
        snprintf(why, whyn, "has %u dimensions (at most %d)", ndim, CKPT_MAX_NDIM);
        return false;
    }
    uint64_t b = esz;
    bool zero = false;
    for (uint32_t i = 0; i < ndim; i++) {
        if (shape[i] > (uint64_t)INT64_MAX) {
            snprintf(why, whyn, "has the negative dimension %lld at axis %u",
                     (long long)(int64_t)shape[i], i);
            return false;
        }
        if (shape[i] == 0) zero = true;
    }
    for (uint32_t i = ndim; i < CKPT_MAX_NDIM; i++) {
        if (shape[i] != 0) {
            snprintf(why, whyn, "has the non-zero unused dimension %llu at axis %u",
                     (unsigned long long)shape[i], i);
            return false;
        }
    }
    if (zero) {
        b = 0;
    } else {
        for (uint32_t i = 0; i < ndim; i++) {
            if (shape[i] > CKPT_MAX_RECORD_BYTES / b) {
                snprintf(why, whyn, "has a shape whose size exceeds the %llu-byte record limit",
                         (unsigned long long)CKPT_MAX_RECORD_BYTES);
                return false;
            }
            b *= shape[i];
        }
    }
    *bytes = b;
    return true;
}

static void shape_str(char *buf, size_t n, uint32_t ndim, const uint64_t *shape) {
    size_t at = (size_t)snprintf(buf, n, "[");
    for (uint32_t i = 0; i < ndim && i < CKPT_MAX_NDIM && at < n; i++)
        at += (size_t)snprintf(buf + at, n - at, i ? ", %lld" : "%lld", (long long)shape[i]);
    if (at < n) snprintf(buf + at, n - at, "]");
}

/* ---- low-level I/O ---- */

/* Writes all n bytes (at offset off when off >= 0, else at the file position), retrying short
 * writes and EINTR; returns 0, or -1 with errno set. */
static int write_fully(int fd, const void *buf, size_t n, off_t off) {
    const uint8_t *p = buf;
    while (n > 0) {
        size_t chunk = n > ((size_t)1 << 30) ? ((size_t)1 << 30) : n;
        ssize_t w = off >= 0 ? pwrite(fd, p, chunk, off) : write(fd, p, chunk);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        if (w == 0) {
            errno = EIO;
            return -1;
        }
        p += w;
        n -= (size_t)w;
        if (off >= 0) off += w;
    }
    return 0;
}

static int write_all(int fd, const void *buf, size_t n) { return write_fully(fd, buf, n, -1); }

static int pwrite_all(int fd, const void *buf, size_t n, off_t off) {
    return write_fully(fd, buf, n, off);
}

/* Reads exactly n bytes at off. Returns 0, or -1 with errno set (0 for a short file). */
static int pread_all(int fd, void *buf, size_t n, uint64_t off) {
    uint8_t *p = buf;
    while (n > 0) {
        ssize_t r = pread(fd, p, n > ((size_t)1 << 30) ? ((size_t)1 << 30) : n, (off_t)off);
        if (r < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        if (r == 0) {
            errno = 0;
            return -1;
        }
        p += r;
        n -= (size_t)r;
        off += (uint64_t)r;
    }
    return 0;
}

static Status read_error(Err *err, const char *path, const char *what, uint64_t off) {
    if (errno == 0)
        return err_set(err, "checkpoint %s: the file ended while reading %s at offset %llu; it "
                       "changed while being read, or is truncated — use another checkpoint",
                       path, what, (unsigned long long)off);
    return err_set(err, "checkpoint %s: cannot read %s at offset %llu: %s", path, what,
                   (unsigned long long)off, strerror(errno));
}

/* ---- reading and validating the header and table ---- */

static int cmp_name_ptr(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* A name used twice among n names (sorting a copy of the pointers), or NULL. */
static const char *find_duplicate(const char **names, size_t n) {
    if (n < 2) return NULL;
    qsort(names, n, sizeof *names, cmp_name_ptr);
    for (size_t i = 1; i < n; i++)
        if (strcmp(names[i - 1], names[i]) == 0) return names[i];
    return NULL;
}

/* Reads and checks the header and the whole table of the open file fd against its size. On
 * success *descs (malloc'd, *count entries) describe payloads that lie inside the file,
 * contiguously, with valid names, dtypes and shapes; *hcrc is the verified header CRC. */
static Status load_table(const char *path, int fd, uint64_t fsize, Desc **descs_out,
                         uint32_t *count_out, uint32_t *hcrc_out, Err *err) {
    Status st = STATUS_ERR;
    uint8_t hdr[CKPT_HEADER_BYTES];
    uint8_t *table = NULL;
    Desc *descs = NULL;
    const char **names = NULL;
    char why[256];

    if (fsize < CKPT_HEADER_BYTES) {
        err_set(err, "checkpoint %s: the file is %llu bytes long, shorter than the %d-byte "
                "header" CORRUPT, path, (unsigned long long)fsize, CKPT_HEADER_BYTES);
        goto cleanup;
    }
    if (pread_all(fd, hdr, sizeof hdr, 0) != 0) {
        read_error(err, path, "the header", 0);
        goto cleanup;
    }
    if (memcmp(hdr, CKPT_MAGIC, sizeof CKPT_MAGIC) != 0) {
        err_set(err, "checkpoint %s: not a trainer checkpoint (the first 8 bytes are not the "
                "checkpoint magic number); give the path of a .ckpt file written by trainer",
                path);
        goto cleanup;
    }
    uint32_t version = get_u32(hdr + 8);
    if (version > CKPT_FORMAT_VERSION) {
        err_set(err, "checkpoint %s: format version %u was written by a newer trainer (this build "
                "reads versions up to %u); use a newer build of trainer to read it", path,
                version, CKPT_FORMAT_VERSION);
        goto cleanup;
    }
    if (version == 0) {
        err_set(err, "checkpoint %s: format version 0 does not exist" CORRUPT, path);
        goto cleanup;
    }
    uint32_t count = get_u32(hdr + 12);
    uint32_t stored_hcrc = get_u32(hdr + 16);
    if (get_u32(hdr + 20) != 0) {
        err_set(err, "checkpoint %s: the reserved header field is not zero" CORRUPT, path);
        goto cleanup;
    }
    if (count > CKPT_MAX_RECORDS) {
        err_set(err, "checkpoint %s: the header claims %u records (at most %d)" CORRUPT, path,
                count, CKPT_MAX_RECORDS);
        goto cleanup;
    }
    /* count <= 1e5, so this cannot overflow 64 bits. */
    uint64_t table_bytes = (uint64_t)count * CKPT_DESC_BYTES;
    uint64_t table_end = CKPT_HEADER_BYTES + table_bytes;
    if (table_end > fsize) {
        err_set(err, "checkpoint %s: the record table (%u records, %llu bytes) ends at offset "
                "%llu but the file is %llu bytes long" CORRUPT, path, count,
                (unsigned long long)table_bytes, (unsigned long long)table_end,
                (unsigned long long)fsize);
        goto cleanup;
    }
    table = xmalloc((size_t)table_bytes); /* bounded by the file size checked above */
    if (pread_all(fd, table, (size_t)table_bytes, CKPT_HEADER_BYTES) != 0) {
        read_error(err, path, "the record table", CKPT_HEADER_BYTES);
        goto cleanup;
    }
    uint32_t hcrc = header_crc(hdr, table, table_bytes);
    if (hcrc != stored_hcrc) {
        err_set(err, "checkpoint %s: header checksum mismatch (stored %08x, computed %08x); the "
                "header or record table is corrupt — use another checkpoint", path, stored_hcrc,
                hcrc);
        goto cleanup;
    }

    descs = xcalloc(count ? count : 1, sizeof *descs);
    uint64_t expect_off = table_end, total = 0;
    for (uint32_t i = 0; i < count; i++) {
        Desc *d = &descs[i];
        desc_decode(d, table + (size_t)i * CKPT_DESC_BYTES);
        if (!name_ok(d->name, true, why, sizeof why)) {
            d->name[CKPT_NAME_MAX - 1] = '\0';
            err_set(err, "checkpoint %s: the name of record %u %s" CORRUPT, path, i, why);
            goto cleanup;
        }
        uint64_t bytes = 0;
        if (!shape_bytes(d->dtype, d->ndim, d->shape, &bytes, why, sizeof why)) {
            err_set(err, "checkpoint %s: record '%s' %s" CORRUPT, path, d->name, why);
            goto cleanup;
        }
        if (bytes != d->usize) {
            char sh[160];
            shape_str(sh, sizeof sh, d->ndim, d->shape);
            err_set(err, "checkpoint %s: record '%s' (%s %s) should hold %llu bytes but declares "
                    "%llu" CORRUPT, path, d->name, ckpt_dtype_name((CkptDType)d->dtype), sh,
                    (unsigned long long)bytes, (unsigned long long)d->usize);
            goto cleanup;
        }
        if (d->offset > fsize || d->csize > fsize - d->offset) {
            err_set(err, "checkpoint %s: record '%s' claims %llu bytes at offset %llu but the "
                    "file is %llu bytes long" CORRUPT, path, d->name,
                    (unsigned long long)d->csize, (unsigned long long)d->offset,
                    (unsigned long long)fsize);
            goto cleanup;
        }
        if (d->offset != expect_off) {
            err_set(err, "checkpoint %s: record '%s' starts at offset %llu but should start at "
                    "%llu (%s)" CORRUPT, path, d->name, (unsigned long long)d->offset,
                    (unsigned long long)expect_off,
                    d->offset < expect_off ? "it overlaps the table or the record before it"
                                           : "a gap of unaccounted bytes before it");
            goto cleanup;
        }
        /* deflate cannot compress better than about 1032:1 */
        if (d->usize / 1032 > d->csize) {
            err_set(err, "checkpoint %s: record '%s' claims %llu bytes from only %llu compressed "
                    "bytes, more than zlib can produce" CORRUPT, path, d->name,
                    (unsigned long long)d->usize, (unsigned long long)d->csize);
            goto cleanup;
        }
        total += d->usize; /* each <= 8 GiB, at most 1e5 of them: no overflow */
        if (total > CKPT_MAX_TOTAL_BYTES) {
            err_set(err, "checkpoint %s: the records add up to more than %llu bytes (limit)"
                    CORRUPT, path, (unsigned long long)CKPT_MAX_TOTAL_BYTES);
            goto cleanup;
        }
        expect_off = d->offset + d->csize;
    }
    /* a file within every limit may still inflate to more than this machine holds (deflate
     * packs up to ~1032:1): say so, instead of failing somewhere in the middle */
    long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page_size > 0 && total > (uint64_t)pages * (uint64_t)page_size) {
        err_set(err, "checkpoint %s: the records need %llu bytes once decompressed, more than "
                "this machine's %llu bytes of memory; load it on a larger machine (or the file is "
                "corrupt)", path, (unsigned long long)total,
                (unsigned long long)pages * (unsigned long long)page_size);
        goto cleanup;
    }
    if (expect_off != fsize) {
        err_set(err, "checkpoint %s: %llu unexpected bytes after the last record (the file is "
                "%llu bytes long, the records end at %llu)" CORRUPT, path,
                (unsigned long long)(fsize - expect_off), (unsigned long long)fsize,
                (unsigned long long)expect_off);
        goto cleanup;
    }
    /* duplicate names */
    if (count > 1) {
        names = xmalloc(count * sizeof *names);
        for (uint32_t i = 0; i < count; i++) names[i] = descs[i].name;
        const char *dup = find_duplicate(names, count);
        if (dup) {
            err_set(err, "checkpoint %s: the name '%s' is used by two records" CORRUPT, path, dup);
            goto cleanup;
        }
    }
    *descs_out = descs;
    descs = NULL;
    *count_out = count;
    *hcrc_out = hcrc;
    st = STATUS_OK;
cleanup:
    free(names);
    free(descs);
    free(table);
    return st;
}

/* Opens path for reading and gets its size (a regular file). */
static Status open_for_read(const char *path, int *fd_out, uint64_t *size_out, Err *err) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return err_set(err, "checkpoint %s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        close(fd);
        return err_set(err, "checkpoint %s: cannot stat: %s", path, strerror(e));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        return err_set(err, "checkpoint %s: not a regular file; give the path of a checkpoint "
                       "file", path);
    }
    *fd_out = fd;
    *size_out = (uint64_t)sb.st_size;
    return STATUS_OK;
}

Status ckpt_read(const char *path, CkptRecord **recs_out, int *n_out, Err *err) {
    return ckpt_read_some(path, NULL, NULL, recs_out, n_out, err);
}

Status ckpt_read_some(const char *path, int (*keep)(const char *name, void *ctx), void *ctx,
                      CkptRecord **recs_out, int *n_out, Err *err) {
    Status st = STATUS_ERR;
    int fd = -1;
    uint64_t fsize = 0;
    Desc *descs = NULL;
    uint32_t count = 0, hcrc = 0;
    CkptRecord *recs = NULL;
    uint8_t *cbuf = NULL;
    size_t cbuf_cap = 0;

    if (recs_out) *recs_out = NULL;
    if (n_out) *n_out = 0;
    CHECK(path && recs_out && n_out, "ckpt_read: NULL argument");
    if (open_for_read(path, &fd, &fsize, err) != STATUS_OK) goto cleanup;
    if (load_table(path, fd, fsize, &descs, &count, &hcrc, err) != STATUS_OK) goto cleanup;

    recs = xcalloc(count ? count : 1, sizeof *recs);
    for (uint32_t i = 0; i < count; i++) {
        const Desc *d = &descs[i];
        CkptRecord *r = &recs[i];
        /* csize lies inside the file (checked), so this allocation is bounded by the file. */
        if (d->csize > cbuf_cap) {
            free(cbuf);
            cbuf_cap = (size_t)d->csize;
            cbuf = malloc(cbuf_cap);
            if (!cbuf) {
                cbuf_cap = 0;
                err_set(err, "checkpoint %s: out of memory reading %llu bytes of record '%s'",
                        path, (unsigned long long)d->csize, d->name);
                goto cleanup;
            }
        }
        if (pread_all(fd, cbuf, (size_t)d->csize, d->offset) != 0) {
            read_error(err, path, "a record", d->offset);
            goto cleanup;
        }
        uint32_t ccrc = crc_update((uint32_t)crc32(0L, Z_NULL, 0), cbuf, d->csize);
        if (ccrc != d->ccrc) {
            err_set(err, "checkpoint %s: record '%s': checksum mismatch in its %llu stored bytes "
                    "at offset %llu (stored %08x, computed %08x)" CORRUPT, path, d->name,
                    (unsigned long long)d->csize, (unsigned long long)d->offset, d->ccrc, ccrc);
            goto cleanup;
        }
        if (d->usize > (uint64_t)SIZE_MAX || d->usize > (uint64_t)ULONG_MAX ||
            d->csize > (uint64_t)ULONG_MAX) {
            err_set(err, "checkpoint %s: record '%s' (%llu bytes) is too large for this machine",
                    path, d->name, (unsigned long long)d->usize);
            goto cleanup;
        }
        memcpy(r->name, d->name, CKPT_NAME_MAX);
        r->dtype = (CkptDType)d->dtype;
        r->ndim = (int)d->ndim;
        for (int k = 0; k < CKPT_MAX_NDIM; k++) r->shape[k] = (int64_t)d->shape[k];
        r->nbytes = (size_t)d->usize;
        if (keep && !keep(r->name, ctx)) continue; /* stored bytes checked; data stays NULL */
        /* one spare byte: a stream that inflates to more than usize is caught, even usize 0 */
        r->data = malloc(r->nbytes + 1);
        if (!r->data) {
            err_set(err, "checkpoint %s: out of memory allocating %zu bytes for record '%s'", path,
                    r->nbytes, d->name);
            goto cleanup;
        }
        uLongf got = (uLongf)d->usize + 1;
        uLong used = (uLong)d->csize; /* in: bytes given; out: bytes the zlib stream took */
        int zr = uncompress2(r->data, &got, cbuf, &used);
        if (got > (uLongf)d->usize) {
            err_set(err, "checkpoint %s: record '%s' decompresses to more than its declared %llu "
                    "bytes" CORRUPT, path, d->name, (unsigned long long)d->usize);
            goto cleanup;
        }
        if (zr != Z_OK) {
            err_set(err, "checkpoint %s: record '%s' cannot be decompressed (zlib: %s)" CORRUPT,
                    path, d->name, zr == Z_MEM_ERROR ? "out of memory" : zError(zr));
            goto cleanup;
        }
        if (used != (uLong)d->csize) {
            err_set(err, "checkpoint %s: record '%s': its zlib stream ends after %llu of its %llu "
                    "stored bytes (junk after the compressed data)" CORRUPT, path, d->name,
                    (unsigned long long)used, (unsigned long long)d->csize);
            goto cleanup;
        }
        if (got != (uLongf)d->usize) {
            err_set(err, "checkpoint %s: record '%s' decompresses to %llu bytes but declares %llu"
                    CORRUPT, path, d->name, (unsigned long long)got,
                    (unsigned long long)d->usize);
            goto cleanup;
        }
        uint32_t ucrc = crc_update((uint32_t)crc32(0L, Z_NULL, 0), r->data, d->usize);
        if (ucrc != d->ucrc) {
            err_set(err, "checkpoint %s: record '%s': checksum mismatch in its data (stored %08x, "
                    "computed %08x)" CORRUPT, path, d->name, d->ucrc, ucrc);
            goto cleanup;
        }
    }
    *recs_out = recs;
    *n_out = (int)count;
    recs = NULL;
    st = STATUS_OK;
cleanup:
    if (recs) ckpt_records_free(recs, (int)count);
    free(cbuf);
    free(descs);
    if (fd >= 0) close(fd);
    return st;
}

/* Re-reads a freshly written file: header, table (structure and header CRC, which must equal
 * expect_hcrc) and the CRC of every compressed payload — no decompression. */
static Status verify_written(const char *path, uint32_t expect_hcrc, uint32_t expect_count,
                             Err *err) {
    Status st = STATUS_ERR;
    int fd = -1;
    uint64_t fsize = 0;
    Desc *descs = NULL;
    uint32_t count = 0, hcrc = 0;
    size_t chunk_cap = (size_t)1 << 20;
    uint8_t *chunk = NULL;

    if (open_for_read(path, &fd, &fsize, err) != STATUS_OK) goto cleanup;
    if (load_table(path, fd, fsize, &descs, &count, &hcrc, err) != STATUS_OK) goto cleanup;
    if (hcrc != expect_hcrc || count != expect_count) {
        err_set(err, "checkpoint %s: the header read back differs from the one written", path);
        goto cleanup;
    }
    chunk = xmalloc(chunk_cap);
    for (uint32_t i = 0; i < count; i++) {
        uint32_t c = (uint32_t)crc32(0L, Z_NULL, 0);
        uint64_t off = descs[i].offset, left = descs[i].csize;
        while (left > 0) {
            size_t k = left < chunk_cap ? (size_t)left : chunk_cap;
            if (pread_all(fd, chunk, k, off) != 0) {
                read_error(err, path, "a record", off);
                goto cleanup;
            }
            c = crc_update(c, chunk, k);
            off += k;
            left -= k;
        }
        if (c != descs[i].ccrc) {
            err_set(err, "checkpoint %s: record '%s' read back differs from what was written",
                    path, descs[i].name);
            goto cleanup;
        }
    }
    st = STATUS_OK;
cleanup:
    free(chunk);
    free(descs);
    if (fd >= 0) close(fd);
    return st;
}

/* ---- writing ---- */

static Status validate_records(const char *path, const CkptRecord *recs, int n, int level,
                               Err *err) {
    char why[256];
    if (n < 0 || n > CKPT_MAX_RECORDS)
        return err_set(err, "checkpoint %s: cannot write %d records (0..%d)", path, n,
                       CKPT_MAX_RECORDS);
    if (n > 0 && !recs)
        return err_set(err, "checkpoint %s: no records given", path);
    if (level < -1 || level > 9)
        return err_set(err, "checkpoint %s: compression level %d is not in -1..9", path, level);
    uint64_t total = 0;
    for (int i = 0; i < n; i++) {
        const CkptRecord *r = &recs[i];
        if (!name_ok(r->name, false, why, sizeof why))
            return err_set(err, "checkpoint %s: cannot write record %d: its name %s", path, i,
                           why);
        if (r->ndim < 0 || r->ndim > CKPT_MAX_NDIM)
            return err_set(err, "checkpoint %s: record '%s' has ndim %d (0..%d)", path, r->name,
                           r->ndim, CKPT_MAX_NDIM);
        uint64_t shape[CKPT_MAX_NDIM] = {0};
        for (int k = 0; k < r->ndim; k++) shape[k] = (uint64_t)r->shape[k];
        uint64_t bytes = 0;
        if (!shape_bytes((uint32_t)r->dtype, (uint32_t)r->ndim, shape, &bytes, why, sizeof why))
            return err_set(err, "checkpoint %s: cannot write record '%s': it %s", path, r->name,
                           why);
        if (bytes != (uint64_t)r->nbytes) {
            char sh[160];
            shape_str(sh, sizeof sh, (uint32_t)r->ndim, shape);
            return err_set(err, "checkpoint %s: record '%s' (%s %s) should hold %llu bytes but "
                           "nbytes is %zu", path, r->name, ckpt_dtype_name(r->dtype), sh,
                           (unsigned long long)bytes, r->nbytes);
        }
        if (r->nbytes > 0 && !r->data)
            return err_set(err, "checkpoint %s: record '%s' has no data", path, r->name);
        total += bytes;
        if (total > CKPT_MAX_TOTAL_BYTES)
            return err_set(err, "checkpoint %s: the records add up to more than %llu bytes",
                           path, (unsigned long long)CKPT_MAX_TOTAL_BYTES);
    }
    if (n > 1) {
        const char **names = xmalloc((size_t)n * sizeof *names);
        for (int i = 0; i < n; i++) names[i] = recs[i].name;
        const char *dup = find_duplicate(names, (size_t)n);
        if (dup) {
            err_set(err, "checkpoint %s: the name '%s' is used by two records; names must be "
                    "unique", path, dup);
            free(names);
            return STATUS_ERR;
        }
        free(names);
    }
    return STATUS_OK;
}

Status ckpt_write_atomic(const char *path, const CkptRecord *recs, int n, int compress_level,
                         Err *err) {
    Status st = STATUS_ERR;
    char *tmp = NULL;
    int fd = -1;
    bool tmp_exists = false;
    uint8_t *table = NULL, *cbuf = NULL;
    Desc *descs = NULL;
    const char *op = "writing"; /* what failed, for the message at write_failed */

    CHECK(path != NULL, "ckpt_write_atomic: NULL path");
    if (validate_records(path, recs, n, compress_level, err) != STATUS_OK) goto cleanup;

    tmp = temp_path_for(path);

    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        err_set(err, "checkpoint %s: cannot create the temporary file %s: %s; check that the "
                "folder exists and is writable", path, tmp, strerror(errno));
        goto cleanup;
    }
    tmp_exists = true;

    /* Header and table go first; they are written as zeros now and filled in at the end. */
    size_t table_bytes = (size_t)n * CKPT_DESC_BYTES;
    size_t head_bytes = CKPT_HEADER_BYTES + table_bytes;
    table = xcalloc(1, head_bytes);
    if (write_all(fd, table, head_bytes) != 0) goto write_failed;

    descs = xcalloc(n ? (size_t)n : 1, sizeof *descs);
    uint64_t off = head_bytes;
    size_t cbuf_cap = 0;
    for (int i = 0; i < n; i++) {
        const CkptRecord *r = &recs[i];
        Desc *d = &descs[i];
        memcpy(d->name, r->name, strlen(r->name) + 1); /* validated: < CKPT_NAME_MAX */
        d->dtype = (uint32_t)r->dtype;
        d->ndim = (uint32_t)r->ndim;
        for (int k = 0; k < r->ndim; k++) d->shape[k] = (uint64_t)r->shape[k];
        d->usize = r->nbytes;
        static const uint8_t empty = 0;
        const uint8_t *src = r->nbytes ? r->data : &empty;
        d->ucrc = crc_update((uint32_t)crc32(0L, Z_NULL, 0), src, r->nbytes);
        uLong bound = compressBound((uLong)r->nbytes);
        if (bound > cbuf_cap) {
            free(cbuf);
            cbuf_cap = bound;
            cbuf = xmalloc(cbuf_cap);
        }
        uLongf clen = bound;
        int zr = compress2(cbuf, &clen, src, (uLong)r->nbytes, compress_level);
        if (zr != Z_OK) {
            err_set(err, "checkpoint %s: compressing record '%s' failed (zlib: %s)", path,
                    r->name, zError(zr));
            goto cleanup;
        }
        d->offset = off;
        d->csize = clen;
        d->ccrc = crc_update((uint32_t)crc32(0L, Z_NULL, 0), cbuf, clen);
        if (write_all(fd, cbuf, clen) != 0) goto write_failed;
        off += clen;
    }
    free(cbuf);
    cbuf = NULL;

    uint8_t *hdr = table;
    memcpy(hdr, CKPT_MAGIC, sizeof CKPT_MAGIC);
    put_u32(hdr + 8, CKPT_FORMAT_VERSION);
    put_u32(hdr + 12, (uint32_t)n);
    put_u32(hdr + 20, 0);
    for (int i = 0; i < n; i++)
        desc_encode(table + CKPT_HEADER_BYTES + (size_t)i * CKPT_DESC_BYTES, &descs[i]);
    uint32_t hcrc = header_crc(hdr, table + CKPT_HEADER_BYTES, table_bytes);
    put_u32(hdr + 16, hcrc);
    if (pwrite_all(fd, table, head_bytes, 0) != 0) goto write_failed;
    op = "flushing (fsync)";
    if (fsync(fd) != 0) goto write_failed;
    op = "closing";
    {
        int rc = close(fd); /* on Linux the descriptor is gone even when close fails */
        fd = -1;
        if (rc != 0) goto write_failed;
    }

    /* Verify what reached the file before it replaces anything. */
    if (verify_written(tmp, hcrc, (uint32_t)n, err) != STATUS_OK) {
        err_prefix(err, "checkpoint %s: verifying the temporary file failed; nothing was "
                   "replaced", path);
        goto cleanup;
    }

    if (rename(tmp, path) != 0) {
        err_set(err, "checkpoint %s: cannot rename %s over it: %s; the previous file (if any) is "
                "untouched", path, tmp, strerror(errno));
        goto cleanup;
    }
    tmp_exists = false;

    if (fsync_parent_dir(path) != 0) {
        err_set(err, "checkpoint %s: written, but syncing its folder failed: %s; the new "
                "checkpoint may not survive a crash", path, strerror(errno));
        goto cleanup;
    }
    st = STATUS_OK;
    goto cleanup;

write_failed:
    err_set(err, "checkpoint %s: %s the temporary file %s failed: %s; check free disk space and "
            "permissions — the previous checkpoint (if any) is untouched", path, op, tmp,
            strerror(errno));
cleanup:
    if (fd >= 0) close(fd);
    if (tmp_exists) unlink(tmp);
    free(descs);
    free(cbuf);
    free(table);
    free(tmp);
    return st;
}

const CkptRecord *ckpt_find(const CkptRecord *recs, int n, const char *name) {
    if (!recs || !name) return NULL;
    for (int i = 0; i < n; i++)
        if (strcmp(recs[i].name, name) == 0) return &recs[i];
    return NULL;
}

void ckpt_records_free(CkptRecord *recs, int n) {
    if (!recs) return;
    for (int i = 0; i < n; i++) free(recs[i].data);
    free(recs);
}

int file_crc32(const char *path, int64_t *size, uint32_t *crc) {
    *size = 0, *crc = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return errno ? errno : EIO;
    unsigned char *buf = xmalloc(1 << 20);
    uLong c = crc32(0L, Z_NULL, 0);
    size_t n;
    while ((n = fread(buf, 1, 1 << 20, f)) > 0) {
        c = crc32(c, buf, (uInt)n);
        *size += (int64_t)n;
    }
    int e = ferror(f) ? (errno ? errno : EIO) : 0;
    fclose(f);
    free(buf);
    *crc = (uint32_t)c;
    return e;
}
