/* encoded.c — encode sentence pairs with SentencePiece, cached on disk (format in encoded.h). */
#include "data/encoded.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

int encoded_last_was_cache_hit = 0;

static const char ENC_MAGIC[8] = {'T', 'R', 'N', 'E', 'N', 'C', '0', '1'};
#define ENC_VERSION 1u
#define ENC_HEADER_SIZE 56
#define ENC_HEADER_CRC_SPAN 48

/* ---- hashing ---------------------------------------------------------------------------------- */

typedef struct {
    uint64_t fnv;
    uLong crc;
} KeyHash;

static uLong crc_update(uLong crc, const void *p, size_t n) {
    const unsigned char *b = p;
    while (n > 0) { /* zlib's crc32 takes a uInt length */
        uInt chunk = n > (1u << 30) ? (1u << 30) : (uInt)n;
        crc = crc32(crc, b, chunk);
        b += chunk;
        n -= chunk;
    }
    return crc;
}

static void kh_update(KeyHash *h, const void *p, size_t n) {
    const unsigned char *b = p;
    uint64_t f = h->fnv;
    for (size_t i = 0; i < n; i++) {
        f ^= b[i];
        f *= 0x100000001b3ULL; /* FNV-1a 64 prime */
    }
    h->fnv = f;
    h->crc = crc_update(h->crc, p, n);
}

Status encoded_key(uint64_t *key, const char *const *src, const char *const *tgt, long n,
                   const Spm *s, Err *err) {
    uint64_t model = 0;
    if (spm_hash(s, &model, err) != STATUS_OK) return STATUS_ERR;
    KeyHash h = {0xcbf29ce484222325ULL /* FNV offset basis */, crc32(0L, Z_NULL, 0)};
    int64_t nn = n;
    kh_update(&h, &model, sizeof model);
    kh_update(&h, &nn, sizeof nn);
    for (long i = 0; i < n; i++) { /* each string with its terminating NUL as separator */
        kh_update(&h, src[i], strlen(src[i]) + 1);
        kh_update(&h, tgt[i], strlen(tgt[i]) + 1);
    }
    *key = h.fnv ^ ((uint64_t)(h.crc & 0xffffffffu) << 32);
    return STATUS_OK;
}

/* ---- free ------------------------------------------------------------------------------------- */

void encoded_free(Encoded *e) {
    if (!e) return;
    free(e->src_ids);
    free(e->src_off);
    free(e->tgt_ids);
    free(e->tgt_off);
    memset(e, 0, sizeof *e);
}

/* ---- load ------------------------------------------------------------------------------------- */

static int read_exact(FILE *f, void *p, size_t n) { return n == 0 || fread(p, 1, n, f) == n; }

/* Checks off[0..n] against n_ids and ids[0..n_ids) against vocab. Returns NULL or a reason. */
static const char *check_side(const int64_t *off, int64_t n, const int32_t *ids, int64_t n_ids,
                              int64_t vocab, int64_t *bad_at) {
    if (off[0] != 0) {
        *bad_at = 0;
        return "first offset is not 0";
    }
    for (int64_t i = 0; i < n; i++) {
        if (off[i + 1] < off[i]) {
            *bad_at = i + 1;
            return "offsets decrease";
        }
    }
    if (off[n] != n_ids) {
        *bad_at = n;
        return "last offset does not equal the id count";
    }
    for (int64_t i = 0; i < n_ids; i++) {
        if (ids[i] < 0 || ids[i] >= vocab) {
            *bad_at = i;
            return "id outside the vocabulary";
        }
    }
    return NULL;
}

Status encoded_load(Encoded *out, const char *cache_path, uint64_t expected_key, Err *err) {
    Status rc = STATUS_ERR;
    Encoded e = {0};
    FILE *f = NULL;
    const char *rebuild = "it will be rebuilt";
    memset(out, 0, sizeof *out);

    f = fopen(cache_path, "rb");
    if (!f) {
        err_set(err, "encoded cache '%s': cannot open: %s; %s", cache_path, strerror(errno), rebuild);
        goto cleanup;
    }
    struct stat stt;
    if (fstat(fileno(f), &stt) != 0 || !S_ISREG(stt.st_mode)) {
        err_set(err, "encoded cache '%s': not a regular file; %s", cache_path, rebuild);
        goto cleanup;
    }
    uint64_t fsize = (uint64_t)stt.st_size;
    if (fsize < ENC_HEADER_SIZE) {
        err_set(err, "encoded cache '%s': truncated (%llu bytes, smaller than the %d-byte header); %s",
                cache_path, (unsigned long long)fsize, ENC_HEADER_SIZE, rebuild);
        goto cleanup;
    }
    if (fsize > ((uint64_t)1 << 60)) {
        err_set(err, "encoded cache '%s': implausible size %llu; %s", cache_path,
                (unsigned long long)fsize, rebuild);
        goto cleanup;
    }
    unsigned char hdr[ENC_HEADER_SIZE];
    if (!read_exact(f, hdr, sizeof hdr)) {
        err_set(err, "encoded cache '%s': cannot read the header; %s", cache_path, rebuild);
        goto cleanup;
    }
    uint32_t version, vocab, hcrc, pcrc;
    uint64_t key;
    int64_t n, n_src, n_tgt;
    memcpy(&version, hdr + 8, 4);
    memcpy(&vocab, hdr + 12, 4);
    memcpy(&key, hdr + 16, 8);
    memcpy(&n, hdr + 24, 8);
    memcpy(&n_src, hdr + 32, 8);
    memcpy(&n_tgt, hdr + 40, 8);
    memcpy(&hcrc, hdr + 48, 4);
    memcpy(&pcrc, hdr + 52, 4);
    if (memcmp(hdr, ENC_MAGIC, sizeof ENC_MAGIC) != 0) {
        err_set(err, "encoded cache '%s': bad magic (not an encoded-corpus cache); %s", cache_path,
                rebuild);
        goto cleanup;
    }
    if (version != ENC_VERSION) {
        err_set(err, "encoded cache '%s': version %u, this build reads version %u; %s", cache_path,
                version, ENC_VERSION, rebuild);
        goto cleanup;
    }
    if ((uint32_t)crc_update(crc32(0L, Z_NULL, 0), hdr, ENC_HEADER_CRC_SPAN) != hcrc) {
        err_set(err, "encoded cache '%s': header CRC mismatch (corrupt file); %s", cache_path, rebuild);
        goto cleanup;
    }
    if (key != expected_key) {
        err_set(err,
                "encoded cache '%s': key %016llx does not match %016llx (built from a different "
                "corpus or SentencePiece model); %s",
                cache_path, (unsigned long long)key, (unsigned long long)expected_key, rebuild);
        goto cleanup;
    }
    if (vocab == 0 || vocab > (uint32_t)INT32_MAX) {
        err_set(err, "encoded cache '%s': invalid vocabulary size %u; %s", cache_path, vocab, rebuild);
        goto cleanup;
    }
    /* Bound every count by the file size before any arithmetic, so nothing below can overflow. */
    if (n < 0 || n_src < 0 || n_tgt < 0 || (uint64_t)n > fsize / 16 || (uint64_t)n_src > fsize / 4 ||
        (uint64_t)n_tgt > fsize / 4 || n > (int64_t)LONG_MAX - 1) {
        err_set(err, "encoded cache '%s': counts n=%lld src=%lld tgt=%lld do not fit the %llu-byte file; %s",
                cache_path, (long long)n, (long long)n_src, (long long)n_tgt,
                (unsigned long long)fsize, rebuild);
        goto cleanup;
    }
    uint64_t expect = ENC_HEADER_SIZE + 16 * ((uint64_t)n + 1) + 4 * ((uint64_t)n_src + (uint64_t)n_tgt);
    if (expect != fsize) {
        err_set(err, "encoded cache '%s': size %llu bytes, but its header implies %llu (%s); %s",
                cache_path, (unsigned long long)fsize, (unsigned long long)expect,
                fsize < expect ? "truncated" : "trailing bytes", rebuild);
        goto cleanup;
    }

    e.n = (long)n;
    e.src_off = xmalloc(((size_t)n + 1) * sizeof(int64_t));
    e.tgt_off = xmalloc(((size_t)n + 1) * sizeof(int64_t));
    e.src_ids = xmalloc((size_t)n_src * sizeof(int32_t));
    e.tgt_ids = xmalloc((size_t)n_tgt * sizeof(int32_t));
    struct {
        void *p;
        size_t bytes;
    } parts[4] = {{e.src_off, ((size_t)n + 1) * 8},
                  {e.tgt_off, ((size_t)n + 1) * 8},
                  {e.src_ids, (size_t)n_src * 4},
                  {e.tgt_ids, (size_t)n_tgt * 4}};
    uLong crc = crc32(0L, Z_NULL, 0);
    for (int i = 0; i < 4; i++) {
        if (!read_exact(f, parts[i].p, parts[i].bytes)) {
            err_set(err, "encoded cache '%s': read error or truncated payload; %s", cache_path, rebuild);
            goto cleanup;
        }
        crc = crc_update(crc, parts[i].p, parts[i].bytes);
    }
    if ((uint32_t)crc != pcrc) {
        err_set(err, "encoded cache '%s': payload CRC mismatch (corrupt file); %s", cache_path, rebuild);
        goto cleanup;
    }
    int64_t bad_at = 0;
    const char *why = check_side(e.src_off, n, e.src_ids, n_src, vocab, &bad_at);
    const char *side = "source";
    if (!why) {
        why = check_side(e.tgt_off, n, e.tgt_ids, n_tgt, vocab, &bad_at);
        side = "target";
    }
    if (why) {
        err_set(err, "encoded cache '%s': %s %s (at index %lld); %s", cache_path, side, why,
                (long long)bad_at, rebuild);
        goto cleanup;
    }
    *out = e;
    memset(&e, 0, sizeof e);
    rc = STATUS_OK;
cleanup:
    if (f) fclose(f);
    encoded_free(&e);
    return rc;
}

/* ---- save ------------------------------------------------------------------------------------- */

Status encoded_save(const Encoded *e, const char *path, uint64_t key, int vocab, Err *err) {
    Status rc = STATUS_ERR;
    FILE *f = NULL;
    char *tmp = temp_path_for(path);
    int64_t n = e->n, n_src = e->src_off[e->n], n_tgt = e->tgt_off[e->n];
    struct {
        const void *p;
        size_t bytes;
    } parts[4] = {{e->src_off, ((size_t)n + 1) * 8},
                  {e->tgt_off, ((size_t)n + 1) * 8},
                  {e->src_ids, (size_t)n_src * 4},
                  {e->tgt_ids, (size_t)n_tgt * 4}};
    uLong pcrc = crc32(0L, Z_NULL, 0);
    for (int i = 0; i < 4; i++) pcrc = crc_update(pcrc, parts[i].p, parts[i].bytes);

    unsigned char hdr[ENC_HEADER_SIZE];
    uint32_t version = ENC_VERSION, v = (uint32_t)vocab;
    memcpy(hdr, ENC_MAGIC, 8);
    memcpy(hdr + 8, &version, 4);
    memcpy(hdr + 12, &v, 4);
    memcpy(hdr + 16, &key, 8);
    memcpy(hdr + 24, &n, 8);
    memcpy(hdr + 32, &n_src, 8);
    memcpy(hdr + 40, &n_tgt, 8);
    uint32_t hcrc = (uint32_t)crc_update(crc32(0L, Z_NULL, 0), hdr, ENC_HEADER_CRC_SPAN);
    uint32_t pc = (uint32_t)pcrc;
    memcpy(hdr + 48, &hcrc, 4);
    memcpy(hdr + 52, &pc, 4);

    f = fopen(tmp, "wb");
    if (!f) {
        err_set(err, "writing encoded cache '%s': cannot create '%s': %s", path, tmp, strerror(errno));
        goto cleanup;
    }
    int ok = fwrite(hdr, 1, sizeof hdr, f) == sizeof hdr;
    for (int i = 0; ok && i < 4; i++) {
        ok = parts[i].bytes == 0 || fwrite(parts[i].p, 1, parts[i].bytes, f) == parts[i].bytes;
    }
    ok = ok && fflush(f) == 0 && fsync(fileno(f)) == 0;
    int saved_errno = errno;
    ok = (fclose(f) == 0) && ok;
    f = NULL;
    if (!ok) {
        err_set(err, "writing encoded cache '%s': write to '%s' failed: %s", path, tmp,
                strerror(saved_errno));
        unlink(tmp);
        goto cleanup;
    }
    if (rename(tmp, path) != 0) {
        err_set(err, "writing encoded cache '%s': rename from '%s' failed: %s", path, tmp,
                strerror(errno));
        unlink(tmp);
        goto cleanup;
    }
    fsync_parent_dir(path); /* best effort: the file itself is already durable */
    rc = STATUS_OK;
cleanup:
    if (f) {
        fclose(f);
        unlink(tmp);
    }
    free(tmp);
    return rc;
}

/* ---- build ------------------------------------------------------------------------------------ */

Status encoded_build(Encoded *out, const char *const *src, const char *const *tgt, long n,
                     const Spm *s, const char *cache_path, Err *err) {
    Status rc = STATUS_ERR;
    uint64_t key = 0;
    int **ids = NULL; /* [2n]: source i at 2i, target i at 2i+1 */
    int *lens = NULL; /* [2n] */
    signed char *bad = NULL;
    Encoded e = {0};
    encoded_last_was_cache_hit = 0;
    memset(out, 0, sizeof *out);
    if (n < 0) return err_set(err, "encoding corpus: negative sentence count %ld", n);

    if (cache_path) {
        if (encoded_key(&key, src, tgt, n, s, err) != STATUS_OK) return STATUS_ERR;
        if (access(cache_path, F_OK) == 0) {
            Err lerr;
            if (encoded_load(out, cache_path, key, &lerr) == STATUS_OK) {
                /* The key is a checksum, not a signature: a crafted file can match it. What the
                 * callers rely on — one entry per pair, ids within this model's vocabulary (they
                 * index embedding tables) — is checked against the model, not the file. */
                long bad = out->n != n ? 0 : -1;
                int V = spm_vocab_size(s);
                for (int64_t i = 0; bad < 0 && i < out->src_off[out->n]; i++)
                    if (out->src_ids[i] >= V) bad = 1;
                for (int64_t i = 0; bad < 0 && i < out->tgt_off[out->n]; i++)
                    if (out->tgt_ids[i] >= V) bad = 1;
                if (bad < 0) {
                    encoded_last_was_cache_hit = 1;
                    return STATUS_OK;
                }
                snprintf(lerr.msg, sizeof lerr.msg, "encoded cache '%s': %s; it will be rebuilt",
                         cache_path, bad == 0 ? "its pair count differs from the corpus"
                                              : "it holds ids outside the model's vocabulary");
                encoded_free(out);
            }
            fprintf(stderr, "note: %s\n", lerr.msg);
        }
    }

    int vocab = spm_vocab_size(s);
    ids = xcalloc((size_t)(2 * n) + 1, sizeof *ids);
    lens = xcalloc((size_t)(2 * n) + 1, sizeof *lens);
    bad = xcalloc((size_t)(2 * n) + 1, 1);
    /* SentencePiece's Encode is const and thread-safe; each sentence is independent. */
#pragma omp parallel for schedule(dynamic, 256)
    for (long j = 0; j < 2 * n; j++) {
        const char *text = (j & 1) ? tgt[j / 2] : src[j / 2];
        if (spm_encode(s, text, &ids[j], &lens[j], NULL) != STATUS_OK) bad[j] = 1;
    }
    int64_t tot[2] = {0, 0};
    for (long j = 0; j < 2 * n; j++) {
        if (bad[j]) { /* re-run serially for the message */
            Err lerr;
            int *tmp_ids = NULL, tmp_n = 0;
            spm_encode(s, (j & 1) ? tgt[j / 2] : src[j / 2], &tmp_ids, &tmp_n, &lerr);
            free(tmp_ids);
            err_set(err, "encoding %s sentence %ld: %s", (j & 1) ? "target" : "source", j / 2,
                    lerr.msg);
            goto cleanup;
        }
        for (int k = 0; k < lens[j]; k++) {
            CHECK(ids[j][k] >= 0 && ids[j][k] < vocab, "SentencePiece returned an id outside the vocabulary");
        }
        tot[j & 1] += lens[j];
    }
    e.n = n;
    e.src_off = xmalloc(((size_t)n + 1) * sizeof(int64_t));
    e.tgt_off = xmalloc(((size_t)n + 1) * sizeof(int64_t));
    e.src_ids = xmalloc((size_t)tot[0] * sizeof(int32_t));
    e.tgt_ids = xmalloc((size_t)tot[1] * sizeof(int32_t));
    e.src_off[0] = e.tgt_off[0] = 0;
    for (long i = 0; i < n; i++) {
        int64_t so = e.src_off[i], to = e.tgt_off[i];
        for (int k = 0; k < lens[2 * i]; k++) e.src_ids[so + k] = ids[2 * i][k];
        for (int k = 0; k < lens[2 * i + 1]; k++) e.tgt_ids[to + k] = ids[2 * i + 1][k];
        e.src_off[i + 1] = so + lens[2 * i];
        e.tgt_off[i + 1] = to + lens[2 * i + 1];
    }

    if (cache_path) {
        Err werr;
        if (encoded_save(&e, cache_path, key, vocab, &werr) != STATUS_OK) {
            fprintf(stderr, "warning: %s (continuing without a cache)\n", werr.msg);
        }
    }
    *out = e;
    memset(&e, 0, sizeof e);
    rc = STATUS_OK;
cleanup:
    if (ids) {
        for (long j = 0; j < 2 * n; j++) free(ids[j]);
    }
    free(ids);
    free(lens);
    free(bad);
    encoded_free(&e);
    return rc;
}
