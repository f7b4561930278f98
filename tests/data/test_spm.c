/* test_spm.c — SentencePiece C API (src/data/spm.*) and the encoded-corpus cache
 * (src/data/encoded.*): training, special ids, round trips, (de)serialisation, the hash of what
 * decides segmentation (equal for one vocabulary trained in two folders), error paths, cache hit
 * / corruption / truncation / key mismatch. */
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "data/encoded.h"
#include "data/spm.h"
#include "testutil.h"

#define N_LINES 2000

/* Reads up to max lines of a gzip text file (without '\n'); returns the count (0 if missing). */
static int read_gz_lines(const char *path, char **lines, int max) {
    gzFile g = gzopen(path, "rb");
    if (!g) return 0;
    char buf[4096];
    int n = 0;
    while (n < max && gzgets(g, buf, sizeof buf)) {
        size_t len = strlen(buf);
        while (len && (buf[len - 1] == '\n' || buf[len - 1] == '\r')) buf[--len] = '\0';
        lines[n++] = xstrdup(buf);
    }
    gzclose(g);
    return n;
}

/* Deterministic made-up sentences when the corpus is not there. */
static int gen_lines(char **lines, int max, int lang) {
    static const char *en[] = {"a", "man", "woman", "dog", "is", "running", "on", "the", "street",
                               "two", "children", "play", "in", "park", "with", "red", "ball",
                               "blue", "shirt", "walking", "near", "water", "people", "sitting"};
    static const char *de[] = {"ein", "Mann", "Frau", "Hund", "läuft", "auf", "der", "Straße",
                               "zwei", "Kinder", "spielen", "im", "Park", "mit", "rotem", "Ball",
                               "blauem", "Hemd", "geht", "nahe", "Wasser", "Leute", "sitzen", "über"};
    const char **w = lang ? de : en;
    int nw = 24;
    uint32_t st = 12345u + (uint32_t)lang;
    for (int i = 0; i < max; i++) {
        char buf[512] = "";
        int words = 5 + i % 9;
        for (int k = 0; k < words; k++) {
            st = st * 1664525u + 1013904223u;
            if (k) strcat(buf, " ");
            strcat(buf, w[(st >> 16) % (uint32_t)nw]);
        }
        strcat(buf, ".");
        lines[i] = xstrdup(buf);
    }
    return max;
}

/* SentencePiece's nmt_nfkc normalisation trims and collapses runs of spaces, so a round trip
 * gives the text with that done. */
static char *squeeze_spaces(const char *t) {
    char *o = xmalloc(strlen(t) + 1), *p = o;
    while (*t == ' ') t++;
    for (; *t; t++) {
        if (*t == ' ' && (t[1] == ' ' || t[1] == '\0')) continue;
        *p++ = *t;
    }
    *p = '\0';
    return o;
}

static int write_lines(const char *path, char **lines, int n) {
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    for (int i = 0; i < n; i++) fprintf(f, "%s\n", lines[i]);
    return fclose(f);
}

static int file_exists(const char *p) {
    struct stat st;
    return stat(p, &st) == 0;
}

static int encoded_equal(const Encoded *a, const Encoded *b) {
    if (a->n != b->n) return 0;
    if (memcmp(a->src_off, b->src_off, (size_t)(a->n + 1) * 8) != 0) return 0;
    if (memcmp(a->tgt_off, b->tgt_off, (size_t)(a->n + 1) * 8) != 0) return 0;
    if (memcmp(a->src_ids, b->src_ids, (size_t)a->src_off[a->n] * 4) != 0) return 0;
    if (memcmp(a->tgt_ids, b->tgt_ids, (size_t)a->tgt_off[a->n] * 4) != 0) return 0;
    return 1;
}

int main(void) {
    const char *tmp = test_tmpdir();
    char path_en[1024], path_de[1024], prefix[1024], model[1100];
    snprintf(path_en, sizeof path_en, "%s/train.en.txt", tmp);
    snprintf(path_de, sizeof path_de, "%s/train.de.txt", tmp);
    snprintf(prefix, sizeof prefix, "%s/spm", tmp);
    snprintf(model, sizeof model, "%s.model", prefix);

    static char *en[N_LINES], *de[N_LINES];
    int n_en = read_gz_lines("data/multi30k/train.en.gz", en, N_LINES);
    int n_de = read_gz_lines("data/multi30k/train.de.gz", de, N_LINES);
    int corpus = 1;
    if (n_en < N_LINES || n_de < N_LINES) {
        corpus = 0;
        for (int i = 0; i < n_en; i++) free(en[i]);
        for (int i = 0; i < n_de; i++) free(de[i]);
        fprintf(stderr, "note: Multi30k not found, using generated text\n");
        n_en = gen_lines(en, N_LINES, 0);
        n_de = gen_lines(de, N_LINES, 1);
    }
    EXPECT(write_lines(path_en, en, n_en) == 0, "write %s", path_en);
    EXPECT(write_lines(path_de, de, n_de) == 0, "write %s", path_de);
    int n = n_en < n_de ? n_en : n_de;

    /* --- training ------------------------------------------------------------------------ */
    const int V = corpus ? 400 : 120; /* the generated text supports at most ~135 pieces */
    const char *files[2] = {path_de, path_en};
    Err err = {{0}};
    Status st = spm_train(files, 2, V, prefix, 2, &err);
    EXPECT(st == STATUS_OK, "spm_train: %s", err.msg);
    EXPECT(file_exists(model), "model file %s", model);

    /* Determinism: the same input trains the same bytes, also a second time in one process.
     * (The model proto records model_prefix and the input names, so retrain to the same prefix.) */
    {
        size_t n1 = 0, n2 = 0;
        char *b1 = test_read_file(model, &n1);
        st = spm_train(files, 2, V, prefix, 2, &err);
        EXPECT(st == STATUS_OK, "spm_train 2: %s", err.msg);
        char *b2 = test_read_file(model, &n2);
        EXPECT(b1 && b2 && n1 == n2 && memcmp(b1, b2, n1) == 0,
               "two trainings on the same input differ (%zu vs %zu bytes)", n1, n2);
        free(b1);
        free(b2);
    }

    Spm *s = NULL;
    st = spm_load(&s, model, &err);
    EXPECT(st == STATUS_OK && s, "spm_load: %s", err.msg);
    if (!s) return test_report("test_spm");
    EXPECT(spm_vocab_size(s) == V, "vocab %d", spm_vocab_size(s));

    /* --- special ids ------------------------------------------------------------------------ */
    EXPECT(strcmp(spm_piece(s, TOKEN_PAD), "<pad>") == 0, "pad piece '%s'", spm_piece(s, 0));
    EXPECT(strcmp(spm_piece(s, TOKEN_UNK), "<unk>") == 0, "unk piece '%s'", spm_piece(s, 1));
    EXPECT(strcmp(spm_piece(s, TOKEN_BOS), "<s>") == 0, "bos piece '%s'", spm_piece(s, 2));
    EXPECT(strcmp(spm_piece(s, TOKEN_EOS), "</s>") == 0, "eos piece '%s'", spm_piece(s, 3));
    EXPECT(strcmp(spm_piece(s, V), "<out-of-range>") == 0, "piece of id V");
    EXPECT(strcmp(spm_piece(s, -1), "<out-of-range>") == 0, "piece of id -1");

    /* --- round trip ------------------------------------------------------------------------- */
    int mismatches = 0, out_of_range = 0, specials = 0, checked = 0;
    for (int i = 0; i < n; i += 5) {
        for (int side = 0; side < 2; side++) {
            const char *text = side ? en[i] : de[i];
            int *ids = NULL, m = 0;
            char *back = NULL;
            EXPECT(spm_encode(s, text, &ids, &m, &err) == STATUS_OK, "encode: %s", err.msg);
            for (int k = 0; k < m; k++) {
                if (ids[k] < 0 || ids[k] >= V) out_of_range++;
                if (ids[k] == TOKEN_PAD || ids[k] == TOKEN_BOS || ids[k] == TOKEN_EOS) specials++;
            }
            EXPECT(spm_decode(s, ids, m, &back, &err) == STATUS_OK, "decode: %s", err.msg);
            char *want = squeeze_spaces(text);
            int differs = !back || strcmp(back, want) != 0;
            free(want);
            if (differs) {
                if (mismatches < 3) fprintf(stderr, "round trip: '%s' -> '%s'\n", text, back ? back : "(null)");
                mismatches++;
            }
            checked++;
            free(ids);
            free(back);
        }
    }
    EXPECT(checked > 100 && mismatches == 0, "%d of %d sentences do not round-trip", mismatches, checked);
    EXPECT(out_of_range == 0, "%d ids out of range", out_of_range);
    EXPECT(specials == 0, "%d pad/bos/eos ids produced by encode", specials);

    const char *hand[] = {corpus ? "A man in a blue shirt is walking his dog." : en[1],
                          corpus ? "Zwei Kinder spielen im Park mit einem roten Ball." : de[1], "", "e"};
    for (int h = 0; h < 4; h++) {
        int *ids = NULL, m = -1;
        char *back = NULL;
        EXPECT(spm_encode(s, hand[h], &ids, &m, &err) == STATUS_OK && ids, "encode '%s'", hand[h]);
        EXPECT(spm_decode(s, ids, m, &back, &err) == STATUS_OK, "decode: %s", err.msg);
        EXPECT(back && strcmp(back, hand[h]) == 0, "'%s' -> '%s'", hand[h], back ? back : "");
        if (h == 0 && m > 0) { /* PAD/BOS/EOS are skipped when decoding */
            int *w = xmalloc((size_t)(m + 4) * sizeof(int));
            w[0] = TOKEN_BOS;
            memcpy(w + 1, ids, (size_t)m * sizeof(int));
            w[m + 1] = TOKEN_EOS;
            w[m + 2] = TOKEN_PAD;
            w[m + 3] = TOKEN_PAD;
            char *back2 = NULL;
            EXPECT(spm_decode(s, w, m + 4, &back2, &err) == STATUS_OK, "decode w/ specials: %s", err.msg);
            EXPECT(back2 && strcmp(back2, hand[0]) == 0, "with specials: '%s'", back2 ? back2 : "");
            free(back2);
            w[1] = V; /* out of range id */
            back2 = NULL;
            err.msg[0] = '\0';
            EXPECT(spm_decode(s, w, m + 4, &back2, &err) != STATUS_OK && !back2 && err.msg[0],
                   "decode of an out-of-range id must fail");
            free(w);
        }
        free(ids);
        free(back);
    }
    { /* unknown characters map to UNK */
        int *ids = NULL, m = 0, has_unk = 0;
        EXPECT(spm_encode(s, "\xe4\xb8\xad\xe6\x96\x87", &ids, &m, &err) == STATUS_OK, "encode cjk");
        for (int k = 0; k < m; k++) has_unk |= ids[k] == TOKEN_UNK;
        EXPECT(has_unk, "unseen characters should give <unk>");
        free(ids);
    }

    /* --- serialize / load_from_bytes --------------------------------------------------------- */
    void *bytes = NULL;
    size_t nbytes = 0;
    EXPECT(spm_serialize(s, &bytes, &nbytes, &err) == STATUS_OK && bytes && nbytes > 0, "serialize: %s",
           err.msg);
    {
        size_t fn = 0;
        char *fb = test_read_file(model, &fn);
        EXPECT(fb && fn == nbytes && memcmp(fb, bytes, fn) == 0, "serialized bytes == model file");
        free(fb);
    }
    Spm *s2 = NULL;
    EXPECT(spm_load_from_bytes(&s2, bytes, nbytes, &err) == STATUS_OK && s2, "load_from_bytes: %s",
           err.msg);
    if (s2) {
        EXPECT(spm_vocab_size(s2) == V, "vocab2");
        int diff = 0;
        for (int i = 0; i < n; i += 37) {
            int *a = NULL, *b = NULL, na = 0, nb = 0;
            spm_encode(s, en[i], &a, &na, &err);
            spm_encode(s2, en[i], &b, &nb, &err);
            if (na != nb || memcmp(a, b, (size_t)na * sizeof(int)) != 0) diff++;
            free(a);
            free(b);
        }
        EXPECT(diff == 0, "%d encodings differ after load_from_bytes(serialize)", diff);
        uint64_t h1 = 0, h2 = 1;
        EXPECT(spm_hash(s, &h1, &err) == STATUS_OK && spm_hash(s2, &h2, &err) == STATUS_OK &&
                   h1 == h2 && h1 != 0,
               "spm_hash of a model and of its serialisation differ (%016llx, %016llx)",
               (unsigned long long)h1, (unsigned long long)h2);
        spm_free(s2);
    }
    free(bytes);

    /* --- spm_hash: the same vocabulary trained in another folder hashes equal, though its file
     * differs (the trainer spec records model_prefix), and so does its corpus cache key; another
     * vocabulary size does not -------------------------------------------------------------- */
    {
        char dir2[1100], prefix2[1200], model2[1300], prefix3[1200], model3[1300];
        snprintf(dir2, sizeof dir2, "%s/elsewhere", tmp);
        snprintf(prefix2, sizeof prefix2, "%s/spm", dir2);
        snprintf(model2, sizeof model2, "%s.model", prefix2);
        snprintf(prefix3, sizeof prefix3, "%s/spm_small", tmp);
        snprintf(model3, sizeof model3, "%s.model", prefix3);
        EXPECT(mkdir(dir2, 0755) == 0, "mkdir %s", dir2);
        EXPECT(spm_train(files, 2, V, prefix2, 2, &err) == STATUS_OK, "spm_train in %s: %s", dir2,
               err.msg);
        EXPECT(spm_train(files, 2, V - 20, prefix3, 2, &err) == STATUS_OK, "spm_train V-20: %s",
               err.msg);
        size_t n1 = 0, n2 = 0;
        char *b1 = test_read_file(model, &n1), *b2 = test_read_file(model2, &n2);
        EXPECT(b1 && b2 && (n1 != n2 || memcmp(b1, b2, n1) != 0),
               "the models trained in two folders are byte-identical: the test proves nothing");
        free(b1);
        free(b2);
        Spm *m2 = NULL, *m3 = NULL;
        uint64_t h1 = 0, h2 = 0, h3 = 0;
        EXPECT(spm_load(&m2, model2, &err) == STATUS_OK && spm_load(&m3, model3, &err) ==
                   STATUS_OK, "spm_load: %s", err.msg);
        if (m2 && m3) {
            EXPECT(spm_hash(s, &h1, &err) == STATUS_OK && spm_hash(m2, &h2, &err) == STATUS_OK &&
                       spm_hash(m3, &h3, &err) == STATUS_OK, "spm_hash: %s", err.msg);
            EXPECT(h1 == h2, "one vocabulary trained in two folders hashes %016llx and %016llx",
                   (unsigned long long)h1, (unsigned long long)h2);
            EXPECT(h3 != h1, "vocabularies of %d and %d pieces hash equal (%016llx)", V, V - 20,
                   (unsigned long long)h1);
            /* the corpus cache's key follows the hash: one cache for both, another for m3 */
            const char *ks[1] = {"ein Hund"}, *kt[1] = {"a dog"};
            uint64_t k1 = 0, k2 = 0, k3 = 0;
            EXPECT(encoded_key(&k1, ks, kt, 1, s, &err) == STATUS_OK &&
                       encoded_key(&k2, ks, kt, 1, m2, &err) == STATUS_OK &&
                       encoded_key(&k3, ks, kt, 1, m3, &err) == STATUS_OK, "encoded_key: %s",
                   err.msg);
            EXPECT(k1 == k2 && k1 != k3, "cache keys: one vocabulary in two folders %016llx and "
                   "%016llx (want equal), another vocabulary %016llx (want different)",
                   (unsigned long long)k1, (unsigned long long)k2, (unsigned long long)k3);
        }
        spm_free(m2);
        spm_free(m3);
    }

    /* --- error paths ------------------------------------------------------------------------- */
    {
        char p[1100];
        Spm *bad = NULL;
        snprintf(p, sizeof p, "%s/does-not-exist.model", tmp);
        err.msg[0] = '\0';
        EXPECT(spm_load(&bad, p, &err) != STATUS_OK && !bad && strstr(err.msg, "does-not-exist"),
               "missing model: '%s'", err.msg);
        snprintf(p, sizeof p, "%s/garbage.model", tmp);
        const char junk[] = "this is not a sentencepiece model \x01\x02\x03\xff\xfe";
        test_write_file(p, junk, sizeof junk);
        err.msg[0] = '\0';
        EXPECT(spm_load(&bad, p, &err) != STATUS_OK && !bad && err.msg[0], "garbage model: '%s'", err.msg);
        err.msg[0] = '\0';
        EXPECT(spm_load_from_bytes(&bad, junk, sizeof junk, &err) != STATUS_OK && !bad && err.msg[0],
               "garbage bytes: '%s'", err.msg);
        err.msg[0] = '\0';
        EXPECT(spm_load_from_bytes(&bad, "", 0, &err) != STATUS_OK && !bad && err.msg[0],
               "empty bytes: '%s'", err.msg);
        /* a directory instead of a file */
        err.msg[0] = '\0';
        EXPECT(spm_load(&bad, tmp, &err) != STATUS_OK && !bad && err.msg[0], "dir as model: '%s'", err.msg);

        /* training on a missing file, and with a vocabulary too large for the text */
        snprintf(p, sizeof p, "%s/no-such-input.txt", tmp);
        const char *missing[1] = {p};
        char pre[1100];
        snprintf(pre, sizeof pre, "%s/bad", tmp);
        err.msg[0] = '\0';
        EXPECT(spm_train(missing, 1, 100, pre, 1, &err) != STATUS_OK && err.msg[0],
               "train on missing input: '%s'", err.msg);
        char small[1100];
        snprintf(small, sizeof small, "%s/small.txt", tmp);
        test_write_file(small, "a b c\nb c d\n", 12);
        const char *smallf[1] = {small};
        err.msg[0] = '\0';
        EXPECT(spm_train(smallf, 1, 5000, pre, 1, &err) != STATUS_OK && err.msg[0],
               "train with vocab too large: '%s'", err.msg);
        fprintf(stderr, "(expected) errors: %s\n", err.msg);
    }

    /* --- encoded cache ----------------------------------------------------------------------- */
    {
        int np = 500;
        char cache[1100];
        snprintf(cache, sizeof cache, "%s/enc.bin", tmp);
        Encoded e0, e1, e2;
        const char *const *srcp = (const char *const *)de, *const *tgtp = (const char *const *)en;

        EXPECT(encoded_build(&e0, srcp, tgtp, np, s, NULL, &err) == STATUS_OK, "build no cache: %s", err.msg);
        EXPECT(encoded_last_was_cache_hit == 0, "no cache -> no hit");
        EXPECT(e0.n == np && e0.src_off[0] == 0 && e0.tgt_off[0] == 0, "shape");
        { /* matches spm_encode */
            int *ids = NULL, m = 0;
            spm_encode(s, de[7], &ids, &m, &err);
            EXPECT(e0.src_off[8] - e0.src_off[7] == m &&
                       memcmp(e0.src_ids + e0.src_off[7], ids, (size_t)m * 4) == 0,
                   "encoded sentence 7 == spm_encode");
            free(ids);
        }

        EXPECT(encoded_build(&e1, srcp, tgtp, np, s, cache, &err) == STATUS_OK, "build 1: %s", err.msg);
        EXPECT(encoded_last_was_cache_hit == 0, "first build is a miss");
        EXPECT(file_exists(cache), "cache written");
        EXPECT(encoded_equal(&e0, &e1), "cached build == uncached build");
        EXPECT(encoded_build(&e2, srcp, tgtp, np, s, cache, &err) == STATUS_OK, "build 2: %s", err.msg);
        EXPECT(encoded_last_was_cache_hit == 1, "second build must load the cache");
        EXPECT(encoded_equal(&e1, &e2), "loaded == encoded");
        encoded_free(&e2);

        uint64_t key = 0;
        EXPECT(encoded_key(&key, srcp, tgtp, np, s, &err) == STATUS_OK, "key");
        EXPECT(encoded_load(&e2, cache, key, &err) == STATUS_OK, "load: %s", err.msg);
        encoded_free(&e2);
        err.msg[0] = '\0';
        EXPECT(encoded_load(&e2, cache, key ^ 1, &err) != STATUS_OK && strstr(err.msg, cache) &&
                   strstr(err.msg, "rebuilt") && e2.src_ids == NULL,
               "key mismatch: '%s'", err.msg);

        size_t fn = 0;
        char *orig = test_read_file(cache, &fn);
        EXPECT(orig && fn > 100, "read cache");
        /* corrupt single bytes: in the header, in the offsets, in the ids */
        size_t where[] = {3, 20, 30, 50, 60, fn / 2, fn - 1};
        for (size_t w = 0; orig && w < sizeof where / sizeof *where; w++) {
            char *c = xmalloc(fn);
            memcpy(c, orig, fn);
            c[where[w]] ^= 0x40;
            test_write_file(cache, c, fn);
            err.msg[0] = '\0';
            EXPECT(encoded_load(&e2, cache, key, &err) != STATUS_OK && strstr(err.msg, cache),
                   "corrupt byte %zu accepted", where[w]);
            EXPECT(e2.src_ids == NULL && e2.n == 0, "out zeroed on failure");
            if (w == 0 || w == 5) fprintf(stderr, "(expected) %s\n", err.msg);
            free(c);
        }
        /* build rebuilds a corrupt cache and rewrites it */
        EXPECT(encoded_build(&e2, srcp, tgtp, np, s, cache, &err) == STATUS_OK, "rebuild: %s", err.msg);
        EXPECT(encoded_last_was_cache_hit == 0, "corrupt cache is not a hit");
        EXPECT(encoded_equal(&e1, &e2), "rebuilt == original");
        encoded_free(&e2);
        {
            size_t fn2 = 0;
            char *now = test_read_file(cache, &fn2);
            EXPECT(now && fn2 == fn && memcmp(now, orig, fn) == 0, "rewritten cache == original");
            free(now);
        }
        /* truncated caches */
        size_t cuts[] = {0, 10, 56, 57, fn - 4, fn - 1};
        for (size_t c = 0; orig && c < sizeof cuts / sizeof *cuts; c++) {
            test_write_file(cache, orig, cuts[c]);
            err.msg[0] = '\0';
            EXPECT(encoded_load(&e2, cache, key, &err) != STATUS_OK && strstr(err.msg, cache),
                   "truncated to %zu accepted", cuts[c]);
        }
        fprintf(stderr, "(expected) %s\n", err.msg);
        /* trailing bytes */
        if (orig) {
            char *c = xmalloc(fn + 8);
            memcpy(c, orig, fn);
            memset(c + fn, 0, 8);
            test_write_file(cache, c, fn + 8);
            EXPECT(encoded_load(&e2, cache, key, &err) != STATUS_OK, "trailing bytes accepted");
            free(c);
        }
        /* a huge count in a header with a valid CRC must be refused before allocating */
        if (orig) {
            char *c = xmalloc(fn);
            memcpy(c, orig, fn);
            int64_t huge = (int64_t)1 << 61;
            memcpy(c + 24, &huge, 8);
            uint32_t hc = (uint32_t)crc32(crc32(0L, Z_NULL, 0), (const Bytef *)c, 48);
            memcpy(c + 48, &hc, 4);
            test_write_file(cache, c, fn);
            err.msg[0] = '\0';
            EXPECT(encoded_load(&e2, cache, key, &err) != STATUS_OK && strstr(err.msg, "do not fit"),
                   "huge count: '%s'", err.msg);
            free(c);
        }
        /* out-of-range id with valid CRCs (written through encoded_save) */
        {
            Encoded bad = e1;
            int32_t *ids = xmalloc((size_t)e1.src_off[e1.n] * 4);
            memcpy(ids, e1.src_ids, (size_t)e1.src_off[e1.n] * 4);
            ids[5] = V + 3;
            bad.src_ids = ids;
            EXPECT(encoded_save(&bad, cache, key, V, &err) == STATUS_OK, "save: %s", err.msg);
            err.msg[0] = '\0';
            EXPECT(encoded_load(&e2, cache, key, &err) != STATUS_OK && strstr(err.msg, "vocabulary"),
                   "id out of range: '%s'", err.msg);
            free(ids);
        }
        /* the same id, but the file claims a vocabulary that holds it and has the right key and
         * CRCs: encoded_load accepts the file; encoded_build must check the ids against the
         * model (they index its embedding tables), refuse the cache and rebuild it */
        {
            Encoded bad = e1;
            int32_t *ids = xmalloc((size_t)e1.src_off[e1.n] * 4);
            memcpy(ids, e1.src_ids, (size_t)e1.src_off[e1.n] * 4);
            ids[5] = V + 3;
            bad.src_ids = ids;
            EXPECT(encoded_save(&bad, cache, key, V + 10, &err) == STATUS_OK, "save: %s", err.msg);
            EXPECT(encoded_build(&e2, srcp, tgtp, np, s, cache, &err) == STATUS_OK,
                   "rebuild: %s", err.msg);
            EXPECT(encoded_last_was_cache_hit == 0, "a cache with ids >= vocab was used");
            EXPECT(encoded_equal(&e1, &e2), "rebuilt after ids >= vocab == original");
            encoded_free(&e2);
            free(ids);
        }
        /* key mismatch (changed corpus) -> build re-encodes */
        EXPECT(encoded_build(&e2, srcp, tgtp, np, s, cache, &err) == STATUS_OK, "restore cache");
        encoded_free(&e2);
        char *saved = de[3];
        de[3] = "Ein ganz anderer Satz.";
        Encoded e3;
        EXPECT(encoded_build(&e3, srcp, tgtp, np, s, cache, &err) == STATUS_OK, "build changed: %s", err.msg);
        EXPECT(encoded_last_was_cache_hit == 0, "changed corpus must not hit the cache");
        EXPECT(e3.src_off[4] - e3.src_off[3] != e1.src_off[4] - e1.src_off[3] ||
                   memcmp(e3.src_ids + e3.src_off[3], e1.src_ids + e1.src_off[3],
                          (size_t)(e1.src_off[4] - e1.src_off[3]) * 4) != 0,
               "changed sentence re-encoded");
        encoded_free(&e3);
        EXPECT(encoded_build(&e3, srcp, tgtp, np, s, cache, &err) == STATUS_OK, "build changed 2");
        EXPECT(encoded_last_was_cache_hit == 1, "rewritten cache hits");
        encoded_free(&e3);
        de[3] = saved;

        /* empty corpus */
        char cache0[1100];
        snprintf(cache0, sizeof cache0, "%s/enc0.bin", tmp);
        EXPECT(encoded_build(&e3, srcp, tgtp, 0, s, cache0, &err) == STATUS_OK && e3.n == 0, "empty");
        encoded_free(&e3);
        EXPECT(encoded_build(&e3, srcp, tgtp, 0, s, cache0, &err) == STATUS_OK && encoded_last_was_cache_hit,
               "empty cached");
        encoded_free(&e3);

        /* unwritable cache folder: build still succeeds */
        char nodir[1100];
        snprintf(nodir, sizeof nodir, "%s/no/such/dir/enc.bin", tmp);
        EXPECT(encoded_build(&e3, srcp, tgtp, 10, s, nodir, &err) == STATUS_OK, "unwritable cache");
        encoded_free(&e3);

        free(orig);
        encoded_free(&e0);
        encoded_free(&e1);
    }

    spm_free(s);
    for (int i = 0; i < n_en; i++) free(en[i]);
    for (int i = 0; i < n_de; i++) free(de[i]);
    return test_report("test_spm");
}
