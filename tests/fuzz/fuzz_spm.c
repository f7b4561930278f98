/* fuzz_spm.c — fuzz target of the SentencePiece C API's model loading (src/data/spm.cc):
 * spm_load_from_bytes (the model stored in a checkpoint) and spm_load (a .model file), then
 * encoding, decoding, spm_piece and spm_serialize with whatever model loads.
 *
 * Input: the bytes of a serialized SentencePiece ModelProto (a .model file).
 * Invariants checked when a model loads: both loaders agree; the vocabulary has more than 4
 * pieces (pad 0, unk 1, bos 2, eos 3 are required); every id from spm_encode lies in [0, vocab);
 * spm_decode of those ids succeeds; spm_serialize gives bytes that load again to the same
 * vocabulary size. */
#include <string.h>

#include "data/spm.h"
#include "fuzz_util.h"

static const char *const texts[] = {
    "Ein Mann mit einem orangefarbenen Hut, der etwas anstarrt.",
    "A little girl climbing into a wooden playhouse.",
    "  zwei   Leerzeichen\tund ein Tab  ",
    "Größe, Straße, café, naïve — “quotes” … ½ 😀",
    "\xff\xfe invalid \xc3 UTF-8 \xed\xa0\x80",
    "",
};

static void use_model(const Spm *s) {
    int V = spm_vocab_size(s);
    FUZZ_ASSERT(V > TOKEN_EOS, "a model with %d pieces was accepted", V);
    Err err;
    for (size_t t = 0; t < sizeof texts / sizeof texts[0]; t++) {
        int *ids = NULL, n = 0;
        if (spm_encode(s, texts[t], &ids, &n, &err) != STATUS_OK) continue;
        FUZZ_ASSERT(ids != NULL && n >= 0, "spm_encode: NULL ids");
        for (int i = 0; i < n; i++)
            FUZZ_ASSERT(ids[i] >= 0 && ids[i] < V, "spm_encode: id %d outside [0, %d)", ids[i], V);
        char *text = NULL;
        Status st = spm_decode(s, ids, n, &text, &err);
        FUZZ_ASSERT(st == STATUS_OK && text, "spm_decode of encoded ids failed: %s", err.msg);
        free(text);
        free(ids);
    }
    for (int id = -1; id <= V; id++) FUZZ_ASSERT(spm_piece(s, id) != NULL, "spm_piece NULL");
    int bad = V;
    char *text = NULL;
    FUZZ_ASSERT(spm_decode(s, &bad, 1, &text, &err) != STATUS_OK, "decoded an id out of range");
    void *bytes = NULL;
    size_t nb = 0;
    if (spm_serialize(s, &bytes, &nb, &err) == STATUS_OK) {
        Spm *again = NULL;
        Status st = spm_load_from_bytes(&again, bytes, nb, &err);
        FUZZ_ASSERT(st == STATUS_OK, "a serialized model does not load again: %s", err.msg);
        FUZZ_ASSERT(spm_vocab_size(again) == V, "vocabulary size changed on re-load");
        spm_free(again);
        free(bytes);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    Spm *a = NULL, *b = NULL;
    Err err;
    Status sa = spm_load_from_bytes(&a, data, size, &err);
    FUZZ_ASSERT((sa == STATUS_OK) == (a != NULL), "spm_load_from_bytes: status and model disagree");
    const char *path = fuzz_tmp_path("input.model");
    fuzz_write_file(path, data, size);
    Status sb = spm_load(&b, path, &err);
    FUZZ_ASSERT((sb == STATUS_OK) == (b != NULL), "spm_load: status and model disagree");
    FUZZ_ASSERT(sa == sb, "spm_load_from_bytes (%d) and spm_load (%d) disagree: %s", sa, sb,
                err.msg);
    if (a) use_model(a);
    spm_free(a);
    spm_free(b);
    return 0;
}
