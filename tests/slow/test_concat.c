/* test_concat.c — data.concat: document-level examples of k consecutive sentence pairs, through
 * `trainer train`, eval and translate.
 *
 * Data: the first 2000 training and 100 validation pairs of Multi30k, tests/fixtures/tiny.ini,
 * one thread.
 *   - A run with data.concat = 3 (20 steps) joins 2000 training pairs into 667 examples and 100
 *     validation pairs into 34 (the log says so), trains a SentencePiece model holding <sep> as
 *     one piece, and validates;
 *   - eval of its checkpoint joins the test lines as the model was trained (34 examples, JSON
 *     "concat": 3, split_mismatches within 0..34); --concat 1 scores the 100 lines one by one
 *     (no "concat" key); translate and score refuse --concat (exit 2, naming it), and take a
 *     line of 3 joined sentences over data.max_line_bytes but within 3 times it and the
 *     separators (1,220 bytes; 3,100 refused naming the 3,014-byte limit and data.concat);
 *   - its archive holds 34 documents a file, without <sep>, and run.json says concat 3, 100
 *     lines, 34 documents and the split scores; `trainer compare` of the archive reports the
 *     card's documents split wrong (of 34) and puts the split columns in compare.csv;
 *   - data.concat = 2 with data.spm_model = a model without <sep> (a data.concat = 1 run's) is
 *     refused naming <sep> and data.concat;
 *   - data.concat = 2 over a training text that holds "<sep>" is refused naming the sentence;
 *     data.concat = 1 trains on that text.
 */
#include "trainer_run.h"

#include "data/spm.h"

#define TIMEOUT 240.0

int main(void) {
    double t_start;
    const char *work = tr_begin("test_concat", &t_start), *log, *out, *err;
    const char *dA = test_strdup(tr_fmt("%s/A", work));
    int rc = tr_train(work, dA, TIMEOUT, &log, "--set", "data.concat=3", "--set",
                      "train.max_steps=20", "--set", "train.valid_every=20", NULL);
    EXPECT(rc == 0, "the data.concat = 3 run failed (exit %d)", rc);
    EXPECT(tr_file_contains(log, "data.concat = 3: train 2000 pairs joined into 667 examples, "
                                 "val 100 into 34"),
           "the log should say how the pairs were joined");
    EXPECT(tr_file_contains(log, "val BLEU"), "the run should validate");
    Spm *spm = NULL;
    Err e;
    if (spm_load(&spm, tr_fmt("%s/spm.model", dA), &e) == STATUS_OK) {
        EXPECT(spm_piece_id(spm, "<sep>") > 3, "the run's SentencePiece model lacks <sep>");
        int *ids, n;
        if (spm_encode(spm, "a <sep> b", &ids, &n, &e) == STATUS_OK) {
            int seps = 0;
            for (int i = 0; i < n; i++) seps += ids[i] == spm_piece_id(spm, "<sep>");
            EXPECT(seps == 1, "'a <sep> b' should hold the piece <sep> once (%d)", seps);
            free(ids);
        }
        spm_free(spm);
    } else {
        EXPECT(0, "%s/spm.model: %s", dA, e.msg);
    }

    const char *ck = test_strdup(tr_fmt("%s/last.ckpt", dA));
    const char *src = test_strdup(tr_fmt("%s/val.de", work));
    const char *ref = test_strdup(tr_fmt("%s/val.en", work));
    rc = tr_cmd(work, NULL, &out, &err, TIMEOUT, "eval", "--checkpoint", ck, "--src", src,
                "--ref", ref, "--json", NULL);
    double k = 0, sent = 0, mism = -1;
    const char *js = tr_last_line(out);
    EXPECT(rc == 0 && tr_json_number(js, "concat", &k) && k == 3 &&
               tr_json_number(js, "sentences", &sent) && sent == 34 &&
               tr_json_number(js, "split_mismatches", &mism) && mism >= 0 && mism <= 34,
           "eval of a data.concat = 3 model: exit %d, concat %g, %g examples (want 34), %g "
           "mismatches: %s", rc, k, sent, mism, js);
    rc = tr_cmd(work, NULL, &out, &err, TIMEOUT, "eval", "--checkpoint", ck, "--src", src,
                "--ref", ref, "--json", "--concat", "1", NULL);
    js = tr_last_line(out);
    EXPECT(rc == 0 && tr_json_number(js, "sentences", &sent) && sent == 100 &&
               !strstr(js, "\"concat\""),
           "eval --concat 1: exit %d, %g sentences (want 100, no concat key)", rc, sent);
    rc = tr_cmd(work, src, &out, &err, TIMEOUT, "translate", "--checkpoint", ck, "--concat", "2",
                NULL);
    EXPECT(rc == 2 && tr_file_contains(err, "--concat"), "translate --concat: exit %d", rc);
    rc = tr_cmd(work, NULL, &out, &err, TIMEOUT, "score", "--checkpoint", ck, "--src", src,
                "--ref", ref, "--concat", "2", NULL);
    EXPECT(rc == 2 && tr_file_contains(err, "--concat"), "score --concat: exit %d", rc);

    /* a line that joins 3 sentences may hold 3 x data.max_line_bytes and the separators
     * (config_line_bytes: 3014 bytes): one of 1,220 bytes is translated and scored, one of
     * 3,100 refused naming the limit and data.concat */
    const char *joined = test_strdup(tr_fmt("%s/joined.de", work));
    const char *jref = test_strdup(tr_fmt("%s/joined.en", work));
    const char *over = test_strdup(tr_fmt("%s/over.de", work));
    FILE *fj = fopen(joined, "w"), *fr = fopen(jref, "w"), *fo = fopen(over, "w");
    for (int snt = 0; snt < 3; snt++) { /* 402 bytes a sentence, " <sep> " between */
        fprintf(fj, "%s", snt ? " <sep> " : ""), fprintf(fr, "%s", snt ? " <sep> " : "");
        for (int w = 0; w < 44; w++) fprintf(fj, "Ein Hund "), fprintf(fr, "A dog ");
        fprintf(fj, "bellt."), fprintf(fr, "barks.");
    }
    for (int w = 0; w < 310; w++) fprintf(fo, "Ein Hund. ");
    fprintf(fj, "\n"), fprintf(fr, "\n"), fprintf(fo, "\n");
    fclose(fj), fclose(fr), fclose(fo);
    rc = tr_cmd(work, joined, &out, &err, TIMEOUT, "translate", "--checkpoint", ck, NULL);
    EXPECT(rc == 0 && tr_count_lines(out) == 1,
           "translate of a 3-sentence line of 1,220 bytes: exit %d", rc);
    rc = tr_cmd(work, NULL, &out, &err, TIMEOUT, "score", "--checkpoint", ck, "--src", joined,
                "--ref", jref, NULL);
    EXPECT(rc == 0 && tr_count_lines(out) == 1,
           "score of a 3-sentence line of 1,220 bytes: exit %d", rc);
    rc = tr_cmd(work, over, &out, &err, TIMEOUT, "translate", "--checkpoint", ck, NULL);
    EXPECT(rc == 1 && tr_file_contains(err, "3100 bytes") &&
               tr_file_contains(err, "the 3014 bytes the model reads") &&
               tr_file_contains(err, "data.concat = 3") && tr_file_contains(err, "--crop-long"),
           "translate of a 3,100-byte line: exit %d, want 1 naming 3014 bytes and data.concat",
           rc);

    /* the archive of a joined run holds documents, and says so */
    const char *arch = test_strdup(tr_fmt("%s/arch", work));
    rc = tr_cmd(work, NULL, &out, &err, TIMEOUT, "archive", dA, "--out", arch, "--test-src",
                src, "--test-tgt", ref, "--beam", "2", NULL);
    char *card = rc == 0 ? test_read_file(tr_fmt("%s/run.json", arch), NULL) : NULL;
    double lines = 0, docs = 0, cc = 0;
    EXPECT(card && tr_json_number(card, "concat", &cc) && cc == 3 &&
               tr_json_number(card, "lines", &lines) && lines == 100 &&
               tr_json_number(card, "sentences", &docs) && docs == 34 &&
               strstr(card, "\"split_mismatches_beam\""),
           "archive of a data.concat = 3 run: exit %d, concat %g, %g lines in %g documents",
           rc, cc, lines, docs);
    double mis_b = -1;
    EXPECT(card && tr_json_number(card, "split_mismatches_beam", &mis_b) && mis_b >= 0,
           "run.json lacks split_mismatches_beam");
    free(card);
    /* the report of the archive gives the card's split scores */
    const char *cmp = test_strdup(tr_fmt("%s/cmp", work));
    rc = tr_cmd(work, NULL, &out, &err, TIMEOUT, "compare", arch, "--out", cmp, NULL);
    const char *cmd = tr_fmt("%s/compare.md", cmp), *ccsv = tr_fmt("%s/compare.csv", cmp);
    EXPECT(rc == 0 && tr_file_contains(cmd, "### Documents split into sentences") &&
               tr_file_contains(cmd, tr_fmt("| %g of 34 |", mis_b)) &&
               tr_file_contains(ccsv, ",val_concat,val_split_mismatches_beam,val_bleu_split_beam"),
           "compare of the archive: exit %d; compare.md should give %g of 34 documents split "
           "wrong, compare.csv the split columns", rc, mis_b);
    const char *refs = tr_fmt("%s/test/val.ref", arch);
    EXPECT(tr_count_lines(refs) == 34 && !tr_file_contains(refs, "<sep>"),
           "the archived references should be 34 documents without <sep> (%ld lines)",
           tr_count_lines(refs));

    /* a SentencePiece model without the separator */
    const char *dB = test_strdup(tr_fmt("%s/B", work));
    rc = tr_train(work, dB, TIMEOUT, NULL, "--set", "train.max_steps=1", NULL);
    EXPECT(rc == 0, "the data.concat = 1 run failed (exit %d)", rc);
    rc = tr_train(work, tr_fmt("%s/C", work), TIMEOUT, &log, "--set", "data.concat=2", "--set",
                  tr_fmt("data.spm_model=%s/spm.model", dB), "--set", "train.max_steps=1",
                  NULL);
    EXPECT(rc != 0 && tr_file_contains(log, "<sep>") && tr_file_contains(log, "data.concat"),
           "data.concat = 2 with a model lacking <sep> should be refused naming both (exit %d)",
           rc);

    /* a training text holding the separator: the first 300 pairs, " <sep> hier" added to the
     * 42nd source */
    FILE *f = fopen(tr_fmt("%s/sep.de", work), "w"), *g = fopen(tr_fmt("%s/sep.en", work), "w");
    char *de = test_read_file(tr_fmt("%s/train.de", work), NULL);
    char *en = test_read_file(tr_fmt("%s/train.en", work), NULL);
    char *pd = de, *pe = en;
    for (int i = 0; f && g && pd && pe && i < 300; i++) {
        char *nd = strchr(pd, '\n'), *ne = strchr(pe, '\n');
        if (!nd || !ne) break;
        fprintf(f, "%.*s%s\n", (int)(nd - pd), pd, i == 41 ? " <sep> hier" : "");
        fprintf(g, "%.*s\n", (int)(ne - pe), pe);
        pd = nd + 1, pe = ne + 1;
    }
    free(de), free(en);
    if (f) fclose(f);
    if (g) fclose(g);
    const char *sets[] = {"data.concat=2", "data.concat=1"};
    for (int i = 0; i < 2; i++) {
        rc = tr_train(work, tr_fmt("%s/D%d", work, i), TIMEOUT, &log, "--set", sets[i], "--set",
                      tr_fmt("data.train_src=%s/sep.de", work), "--set",
                      tr_fmt("data.train_tgt=%s/sep.en", work), "--set", "train.max_steps=1",
                      "--set", "data.vocab_size=300", NULL);
        if (i == 0)
            EXPECT(rc != 0 && tr_file_contains(log, "source sentence 42") &&
                       tr_file_contains(log, "<sep>"),
                   "data.concat = 2 over a text holding <sep> should be refused naming sentence "
                   "42 (exit %d)", rc);
        else
            EXPECT(rc == 0, "data.concat = 1 over a text holding <sep> should train (exit %d)",
                   rc);
    }
    return tr_finish("test_concat", t_start);
}
