/* test_run_leftovers.c — what a run or a command leaves behind when it ends, cleanly or refused.
 *
 * Data: the first 2000 training and 100 validation pairs of Multi30k, tests/fixtures/tiny.ini,
 * one thread.
 *   - a run of 3 steps and a run of one epoch exit 0 and leave no train.lock in their folder
 *     (it exists only while a run trains); a second run in the first folder starts (the folder
 *     is free) and leaves none either;
 *   - a run refused at start-up leaves no train.lock: train.init_from with another
 *     model.hidden, data.spm_model of another piece count than data.vocab_size, and a
 *     SentencePiece training that fails (data.vocab_size = 50000 for 2000 pairs), which leaves
 *     no spm_train.txt either;
 *   - translate --attention-map into a folder that does not exist is refused (exit 1, naming the
 *     folder) before anything is translated: standard output stays empty.
 */
#include "trainer_run.h"

#define TIMEOUT 180.0

int main(void) {
    double t_start;
    const char *work = tr_begin("test_run_leftovers", &t_start), *log, *out, *err;
    const char *dA = test_strdup(tr_fmt("%s/A", work)), *dB = test_strdup(tr_fmt("%s/B", work));

    /* ---- clean ends ---- */
    int rc = tr_train(work, dA, TIMEOUT, NULL, "--set", "train.max_steps=3", NULL);
    EXPECT(rc == 0 && tr_exists(tr_fmt("%s/last.ckpt", dA)), "the 3-step run failed (exit %d)",
           rc);
    EXPECT(!tr_exists(tr_fmt("%s/train.lock", dA)),
           "a run that stopped at train.max_steps left %s/train.lock", dA);
    rc = tr_train(work, dA, TIMEOUT, NULL, "--set", "train.max_steps=5", "--resume", NULL);
    EXPECT(rc == 0 && !tr_exists(tr_fmt("%s/train.lock", dA)),
           "a resumed run in the same folder: exit %d, train.lock left: %d", rc,
           tr_exists(tr_fmt("%s/train.lock", dA)));
    rc = tr_train(work, dB, TIMEOUT, NULL, "--set", "train.max_epochs=1", NULL);
    EXPECT(rc == 0 && tr_exists(tr_fmt("%s/best.ckpt", dB)), "the one-epoch run failed (exit %d)",
           rc);
    EXPECT(!tr_exists(tr_fmt("%s/train.lock", dB)),
           "a run that finished its epochs left %s/train.lock", dB);

    /* ---- refused starts ---- */
    const char *dF = test_strdup(tr_fmt("%s/F", work));
    rc = tr_train(work, dF, TIMEOUT, &log, "--set", tr_fmt("train.init_from=%s/best.ckpt", dB),
                  "--set", "model.hidden=32", NULL);
    EXPECT(rc == 1 && tr_file_contains(log, "model.hidden"),
           "train.init_from with another model.hidden should be refused (exit %d)", rc);
    EXPECT(!tr_exists(tr_fmt("%s/train.lock", dF)), "a refused train.init_from left %s/train.lock",
           dF);
    const char *dG = test_strdup(tr_fmt("%s/G", work));
    rc = tr_train(work, dG, TIMEOUT, &log, "--set", tr_fmt("data.spm_model=%s/spm.model", dB),
                  "--set", "data.vocab_size=400", NULL);
    EXPECT(rc == 1 && tr_file_contains(log, "data.vocab_size = 500"),
           "a data.spm_model of 500 pieces with data.vocab_size = 400 should be refused "
           "(exit %d)", rc);
    EXPECT(!tr_exists(tr_fmt("%s/train.lock", dG)), "a refused data.spm_model left %s/train.lock",
           dG);
    const char *dS = test_strdup(tr_fmt("%s/S", work));
    rc = tr_train(work, dS, TIMEOUT, &log, "--set", "data.vocab_size=50000", NULL);
    EXPECT(rc == 1 && tr_file_contains(log, "SentencePiece"),
           "SentencePiece training of 50000 pieces on 2000 pairs should fail (exit %d)", rc);
    EXPECT(!tr_exists(tr_fmt("%s/spm_train.txt", dS)),
           "a failed SentencePiece training left %s/spm_train.txt", dS);
    EXPECT(!tr_exists(tr_fmt("%s/train.lock", dS)),
           "a failed SentencePiece training left %s/train.lock", dS);

    /* ---- --attention-map into a missing folder ---- */
    const char *src = test_strdup(tr_fmt("%s/val.de", work));
    const char *missing = test_strdup(tr_fmt("%s/no/such/folder", work));
    rc = tr_cmd(work, src, &out, &err, TIMEOUT, "translate", "--checkpoint",
                tr_fmt("%s/best.ckpt", dB), "--attention-map", tr_fmt("%s/a.png", missing),
                NULL);
    EXPECT(rc == 1 && tr_file_contains(err, missing) && tr_file_size(out) == 0,
           "--attention-map into a missing folder: exit %d, %ld bytes translated; want exit 1 "
           "naming the folder before any translation", rc, tr_file_size(out));
    return tr_finish("test_run_leftovers", t_start);
}
