/* fuzz_spm_encode.c — fuzz target of the SentencePiece C API's text side (src/data/spm.cc):
 * spm_encode, spm_decode and spm_piece on any text, with the small real model committed as the
 * seed of fuzz_spm (tests/fuzz/corpus/spm/tiny.model, trained by tests/fuzz/make_seeds.c).
 *
 * Input: text (any bytes; the C API takes a NUL-terminated string, so the input is cut at its
 * first NUL). The model is found at $TRAINER_FUZZ_SPM_MODEL, else at
 * tests/fuzz/corpus/spm/tiny.model relative to the working folder (the repository root, as
 * scripts/fuzz.sh and CTest run it).
 * Invariants checked: spm_encode succeeds on any text; every id lies in [0, vocab); spm_decode of
 * them succeeds; encoding the decoded text again gives ids in range too. */
#include <string.h>

#include "data/spm.h"
#include "fuzz_util.h"

static Spm *g_spm;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    const char *path = getenv("TRAINER_FUZZ_SPM_MODEL");
    if (!path || !*path) path = "tests/fuzz/corpus/spm/tiny.model";
    Err err;
    if (spm_load(&g_spm, path, &err) != STATUS_OK) {
        fprintf(stderr, "fuzz_spm_encode: %s (run from the repository root or set "
                "TRAINER_FUZZ_SPM_MODEL)\n", err.msg);
        exit(1);
    }
    return 0;
}

static void encode_checked(const char *text, char **decoded) {
    int V = spm_vocab_size(g_spm), *ids = NULL, n = 0;
    Err err;
    Status st = spm_encode(g_spm, text, &ids, &n, &err);
    FUZZ_ASSERT(st == STATUS_OK && ids, "spm_encode failed: %s", err.msg);
    for (int i = 0; i < n; i++) {
        FUZZ_ASSERT(ids[i] >= 0 && ids[i] < V, "spm_encode: id %d outside [0, %d)", ids[i], V);
        FUZZ_ASSERT(spm_piece(g_spm, ids[i]) != NULL, "spm_piece NULL");
    }
    st = spm_decode(g_spm, ids, n, decoded, &err);
    FUZZ_ASSERT(st == STATUS_OK && *decoded, "spm_decode of encoded ids failed: %s", err.msg);
    free(ids);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size + 1);
    memcpy(text, data, size);
    text[size] = 0;
    char *once = NULL, *twice = NULL;
    encode_checked(text, &once);
    encode_checked(once, &twice);
    free(twice);
    free(once);
    free(text);
    return 0;
}
