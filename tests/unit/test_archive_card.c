/* test_archive_card.c — the run card's provenance as archive_read and archive_spm_hash read it
 * (src/study/archive.h), on archives of experiments/attention-multi30k/archive, which predate
 * "uncommitted_changes" and "spm_hash":
 *  - tf_sdp_s2 (a start at revision 50f5fda148f9-dirty) reads as trained with uncommitted
 *    changes, tf_sdp_s3 (one clean start) as not; neither records its SentencePiece model, and
 *    both read (the hash unknown, never an error);
 *  - a copy of tf_sdp_s3 whose card says "uncommitted_changes": true and "spm_hash":
 *    "0123456789abcdef" reads them back (the card's flag over the start lines');
 *  - a "spm_hash" that is not 16 hex digits, and an "uncommitted_changes" that is not a boolean,
 *    are refused naming run.json. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "study/archive.h"
#include "testutil.h"

#define ARCHIVES "experiments/attention-multi30k/archive"

/* The copy's run.json: the original card with extra keys after its "format". */
static void write_card(const char *copy, const char *card, const char *extra) {
    const char *at = strstr(card, "\"name\"");
    char path[1200];
    snprintf(path, sizeof path, "%s/run.json", copy);
    size_t n = strlen(card) + strlen(extra) + 8;
    char *text = malloc(n);
    snprintf(text, n, "%.*s%s,\n\t%s", (int)(at - card), card, extra, at);
    test_write_text(path, text);
    free(text);
}

int main(void) {
    Archive a;
    Err err = {0};
    int known = 1;
    uint64_t hash = 1;

    Status st = archive_read(ARCHIVES "/tf_sdp_s2", &a, &err);
    EXPECT(st == STATUS_OK, "archive_read tf_sdp_s2: %s", err.msg);
    EXPECT(a.uncommitted_changes == 1 && a.spm_hash_known == 0 && a.spm_hash == 0,
           "tf_sdp_s2 (a -dirty start, no spm_hash): uncommitted %d, hash known %d",
           a.uncommitted_changes, a.spm_hash_known);
    archive_free(&a);
    st = archive_read(ARCHIVES "/tf_sdp_s3", &a, &err);
    EXPECT(st == STATUS_OK, "archive_read tf_sdp_s3: %s", err.msg);
    EXPECT(a.uncommitted_changes == 0 && a.spm_hash_known == 0,
           "tf_sdp_s3 (one clean start): uncommitted %d, hash known %d", a.uncommitted_changes,
           a.spm_hash_known);
    archive_free(&a);
    EXPECT(archive_spm_hash(ARCHIVES "/tf_sdp_s3", &known, &hash, &err) == STATUS_OK &&
               known == 0 && hash == 0,
           "archive_spm_hash of a card without it: %s (known %d)", err.msg, known);

    /* a copy whose card records both */
    const char *copy = test_strdup(test_tmpdir());
    char cmd[2400], path[1200];
    snprintf(cmd, sizeof cmd, "cp -r " ARCHIVES "/tf_sdp_s3/. %s/", copy);
    EXPECT(system(cmd) == 0, "%s", cmd);
    snprintf(path, sizeof path, "%s/run.json", copy);
    char *card = test_read_file(path, NULL);
    EXPECT(card && strstr(card, "\"name\""), "cannot read %s", path);
    if (!card) return test_report("test_archive_card");
    write_card(copy, card, "\"uncommitted_changes\": true, \"spm_hash\": \"0123456789abcdef\"");
    st = archive_read(copy, &a, &err);
    EXPECT(st == STATUS_OK && a.uncommitted_changes == 1 && a.spm_hash_known == 1 &&
               a.spm_hash == 0x0123456789abcdefull,
           "the card's uncommitted_changes and spm_hash not read back (%s): %d, %d, %016llx",
           st ? err.msg : "read", a.uncommitted_changes, a.spm_hash_known,
           (unsigned long long)a.spm_hash);
    archive_free(&a);
    EXPECT(archive_spm_hash(copy, &known, &hash, &err) == STATUS_OK && known == 1 &&
               hash == 0x0123456789abcdefull,
           "archive_spm_hash: %s (known %d, %016llx)", err.msg, known, (unsigned long long)hash);

    /* malformed values are refused, naming the card */
    static const char *const bad[] = {"\"spm_hash\": \"0123456789abcdeg\"", "\"spm_hash\": 12",
                                      "\"spm_hash\": \"0123\"", "\"uncommitted_changes\": \"yes\""};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        write_card(copy, card, bad[i]);
        err.msg[0] = 0;
        st = archive_read(copy, &a, &err);
        EXPECT(st != STATUS_OK && strstr(err.msg, "run.json"),
               "a card with %s: not refused naming run.json (%s)", bad[i], err.msg);
        archive_free(&a);
        if (i < 3) {
            err.msg[0] = 0;
            EXPECT(archive_spm_hash(copy, &known, &hash, &err) != STATUS_OK &&
                       strstr(err.msg, "spm_hash"),
                   "archive_spm_hash of a card with %s: not refused (%s)", bad[i], err.msg);
        }
    }
    free(card);
    return test_report("test_archive_card");
}
