/* test_study.c — `trainer study` end to end (src/cli/study.c, with data.spm_model, `trainer
 * archive` and the report).
 *
 * A plan of two configs (each includes recipe.ini, tests/fixtures/tiny.ini on the 2000/100-pair
 * slices, and sets luong_general or luong_dot attention), two seeds each, one epoch, fp32, two
 * test sets (the 100 validation pairs, and their first 60 as a second set), beam 2, in a study
 * folder of the test's work folder:
 *  1. --status before anything: 4 runs missing, every config differing from its recipe in the
 *     attention alone (a table with its own seeds = 3 adds one run, dot_check_s3); a plan with an unknown key, or whose precision this machine cannot train
 *     (tf32 on the CPU), is refused (exit 2) naming the line or key, and so is one whose test_tgt
 *     does not exist, naming the plan's line, the key and the path (also by --status), and so
 *     is one with a table whose configs set data.concat 1 and 2 (also by --report), before
 *     anything trains;
 *  2. `trainer study --jobs 2` trains the shared SentencePiece model into the study folder,
 *     then the four runs, each loading it (data.spm_model; its run folder holds the same model),
 *     archives them (run.json, both test sets' translations) and writes README.md (a config row
 *     per attention over 2 seeds, the significance against the baseline in words, "Archived: 4 of 4
 *     runs", the attention alone, the checkpoint-scored rule), results.csv (4 rows) and
 *     significance.csv; each card records the study model's spm_hash and uncommitted_changes,
 *     and the start of training says what the configs change in their recipe;
 *  3. the plan's seeds become 1 and 3; general_s3 is started by hand with the study's own
 *     settings and stopped after 5 steps (train.max_steps), as an interrupted run: --status
 *     counts it running (and estimates the time left at as many runs at a time as the machine
 *     has CPUs); --only refuses a glob that matches no run and --report, --status --only '*_s3'
 *     lists seed 3's runs alone, and --only 'dot_s*' trains dot_s3 alone, leaving general_s3;
 *     then the study resumes general_s3 from its last.ckpt;
 *     the temporary folder of a killed archiving of dot_s3 (archive/dot_s3.tmp.<pid>, that pid
 *     dead) is removed when dot_s3 is archived;
 *  4. --status: every run archived; a second start trains nothing; --report rewrites the report;
 *     then seed 5 alone, one run at a time: an archive of general_s5 appears while it trains (as
 *     another machine's would, on a GPU), and the study keeps it, says so, and goes on to
 *     dot_s5; with seeds 1, 3 and 5 the report's cost table gives general a row for each
 *     machine; with a seed 7, --status estimates the CPU runs' time from the CPU's runs alone;
 *  4c. an archive whose card names another SentencePiece model is refused by --report and by
 *     the study before training (exit 1, naming the archive and both hashes), and so is a run
 *     folder to resume (a last.ckpt) whose spm.model is another model; as an older card (no
 *     spm_hash, no uncommitted_changes) whose start was built from uncommitted changes, the
 *     report counts it ("1 of 6 runs trained from a tree with uncommitted changes"), marks its
 *     revision and counts it among the archives without the model's hash;
 *  4d. an archive of a config edited since it was trained (dot.ini sets model.input_feeding =
 *     false) is marked by --status and refused by --report and by the study before training
 *     (exit 1), naming the archive and the key; with the config restored --prepare passes; a
 *     run folder to resume that began with another config is marked by --status and refused by
 *     the study before resuming;
 *  4e. a config that also sets model.input_feeding = false is named with that key by --status
 *     and the report (which no longer say "attention alone"); a config that includes no file is
 *     said to have no recipe;
 *  4f. two tables with x (x_label in [study]): the report opens, after its summary, with each
 *     attention's BLEU at each table's x (sorted by x, the seeds counted) and across.png; an x
 *     that is no number, an x without x_label and an x_label without an x are refused (exit 2);
 *  5. data.spm_model with another data.vocab_size is refused naming both.
 */
#include "data/spm.h"
#include "trainer_run.h"

#define TIMEOUT 600.0

static const char *g_work;

/* text without its lines that hold needle (in place); the lines removed. */
static int drop_lines(char *text, const char *needle) {
    int n = 0;
    for (char *at; (at = strstr(text, needle));) {
        char *start = at, *end = strchr(at, '\n');
        while (start > text && start[-1] != '\n') start--;
        end = end ? end + 1 : at + strlen(at);
        memmove(start, end, strlen(end) + 1);
        n++;
    }
    return n;
}

/* `trainer study plan` with the arguments args[0 .. n), its output in tag.out and tag.err. */
static int study_args(const char *tag, const char *plan, int n, const char *const *args) {
    TrArgv a = {{0}, 0};
    tr_arg(&a, "%s", tr_bin());
    tr_arg(&a, "study");
    tr_arg(&a, "%s", plan);
    for (int i = 0; i < n; i++) tr_arg(&a, "%s", args[i]);
    tr_print_argv(tag, a.v);
    const char *out = tr_fmt("%s/%s.out", g_work, tag), *err = tr_fmt("%s/%s.err", g_work, tag);
    int rc = tr_wait(tr_spawn2(a.v, out, err, 0, NULL), TIMEOUT);
    tr_argv_free(&a);
    printf("  -> exit %d\n", rc);
    return rc;
}

static int study(const char *tag, const char *plan, const char *a1, const char *a2) {
    const char *args[2] = {a1, a2};
    return study_args(tag, plan, a2 ? 2 : a1 ? 1 : 0, args);
}

/* The plan, with extra lines in [study]. */
static void write_plan(const char *path, const char *extra) {
    test_write_text(path, tr_fmt("[study]\n"
                                 "title = tiny study\n"
                                 "epochs = 1\n"
                                 "precision = fp32\n"
                                 "seeds = 1 2\n"
                                 "test_src = ../val.de ../val2.de\n"
                                 "test_tgt = ../val.en ../val2.en\n"
                                 "beam = 2\n"
                                 "%s\n"
                                 "[table rnn]\n"
                                 "title = RNN\n"
                                 "baseline = general\n"
                                 "configs = configs/general.ini configs/dot.ini\n",
                                 extra));
}

int main(void) {
    double t_start;
    g_work = tr_begin("test_study", &t_start);
    const char *w = g_work, *dir = test_strdup(tr_fmt("%s/study", w));
    const char *plan = test_strdup(tr_fmt("%s/study.ini", dir));
    Err err;
    EXPECT(make_dirs(tr_fmt("%s/configs", dir), &err) == STATUS_OK, "%s", err.msg);
    for (int i = 0; i < 2; i++) { /* the second test set: the first 60 validation pairs */
        const char *l = i ? "en" : "de";
        EXPECT(tr_gz_head(tr_fmt(TR_DATA "/val.%s.gz", l), tr_fmt("%s/val2.%s", w, l), 60) == 60,
               "cannot write val2.%s", l);
    }
    /* tiny.ini without its run.name (an included file may not set it), on the slices */
    char *tiny = test_read_file(TR_CONFIG, NULL);
    EXPECT(tiny != NULL, "cannot read %s", TR_CONFIG);
    if (!tiny) return tr_finish("test_study", t_start);
    char *name = strstr(tiny, "name = tiny\n");
    if (name) memset(name, ' ', strlen("name = tiny"));
    test_write_text(tr_fmt("%s/base.ini", w), tiny);
    free(tiny);
    /* the configs' recipe: base.ini on the slices; each config changes its attention alone */
    test_write_text(tr_fmt("%s/recipe.ini", w),
                    tr_fmt("include = base.ini\n[data]\ntrain_src = %s/train.de\n"
                           "train_tgt = %s/train.en\nval_src = %s/val.de\nval_tgt = %s/val.en\n"
                           "cache_dir = %s/cache\n", w, w, w, w, w));
    static const char *const kinds[2] = {"general", "dot"};
    for (int i = 0; i < 2; i++)
        test_write_text(tr_fmt("%s/configs/%s.ini", dir, kinds[i]),
                        tr_fmt("include = ../../recipe.ini\n[model]\nattention = luong_%s\n",
                               kinds[i]));
    write_plan(plan, "");

    /* 1. status and refusals */
    int rc = study("status0", plan, "--status", NULL);
    EXPECT(rc == 0 && tr_file_contains(tr_fmt("%s/status0.out", w), "archived 0, running 0, "
                                                                   "missing 4"),
           "--status before anything (exit %d) does not list 4 missing runs", rc);
    EXPECT(tr_file_contains(tr_fmt("%s/status0.out", w), "time left: unknown: no run of this plan"),
           "--status before anything gives a time left, though no run has a measured time");
    EXPECT(tr_file_contains(tr_fmt("%s/status0.out", w),
                            tr_fmt("Every config differs from its recipe (the file it includes: "
                                   "%s/recipe.ini) in the attention alone.", w)),
           "--status does not say that the configs differ from their recipe in the attention "
           "alone");
    /* a table with its own seeds trains those alone */
    const char *own = test_strdup(tr_fmt("%s/own.ini", dir));
    test_write_text(tr_fmt("%s/configs/dot_check.ini", dir),
                    "include = ../../recipe.ini\n[model]\nattention = luong_dot\n");
    write_plan(own, "");
    char *text = test_read_file(own, NULL);
    if (text) {
        test_write_text(own, tr_fmt("%s[table check]\nseeds = 3\nbaseline = dot_check\n"
                                    "configs = configs/dot_check.ini\n", text));
        free(text);
    }
    rc = study("own_seeds", own, "--status", NULL);
    const char *os = tr_fmt("%s/own_seeds.out", w);
    EXPECT(rc == 0 && tr_file_contains(os, "5 runs (3 configs x 2 seeds; table check: 1 seed)") &&
               tr_file_contains(os, "s3 missing") && !tr_file_contains(os, "dot_check_s1"),
           "a table with seeds = 3 should add one run, dot_check_s3 (exit %d)", rc);
    const char *bad = test_strdup(tr_fmt("%s/bad.ini", dir));
    write_plan(bad, "epoch = 3");
    rc = study("bad_key", bad, NULL, NULL);
    EXPECT(rc == 2 && tr_file_contains(tr_fmt("%s/bad_key.err", w), "bad.ini:9: unknown key "
                                                                    "'epoch' in [study]"),
           "a plan with an unknown key: exit %d, expected 2 naming the line", rc);
    test_write_text(bad, tr_fmt("[study]\nepochs = 1\nprecision = tf32\nseeds = 1\n"
                                "test_src = ../val.de\ntest_tgt = ../val.en\n[table t]\n"
                                "configs = configs/general.ini\n"));
    rc = study("bad_precision", bad, NULL, NULL);
    EXPECT(rc == 2 && tr_file_contains(tr_fmt("%s/bad_precision.err", w),
                                       "train.precision = tf32 needs train.device = cuda"),
           "a plan of a precision this machine cannot train: exit %d, expected 2 with the reason",
           rc);
    /* a test set that does not exist: refused before anything trains, naming the key and path */
    test_write_text(bad, tr_fmt("[study]\nepochs = 1\nprecision = fp32\nseeds = 1\n"
                                "test_src = ../val.de\ntest_tgt = ../no_such_test.en\n"
                                "[table t]\nconfigs = configs/general.ini\n"));
    for (int i = 0; i < 2; i++) {
        const char *tag = i ? "no_test_status" : "no_test";
        rc = study(tag, bad, i ? "--status" : NULL, NULL);
        EXPECT(rc == 2 && tr_file_contains(tr_fmt("%s/%s.err", w, tag),
                                           tr_fmt("bad.ini:6: test_tgt: cannot read "
                                                  "%s/no_such_test.en", w)),
               "a plan whose test_tgt does not exist%s: exit %d, expected 2 naming the plan's "
               "line, the key and the path", i ? " (--status)" : "", rc);
    }
    /* a table whose configs join the test sets two ways (data.concat 1 and 2): refused by the
     * report, too, before anything trains, naming the table and both configs */
    test_write_text(tr_fmt("%s/configs/dot_k2.ini", dir),
                    "include = ../../recipe.ini\n[data]\nconcat = 2\n[model]\n"
                    "attention = luong_dot\n");
    test_write_text(bad, "[study]\nepochs = 1\nprecision = fp32\nseeds = 1\n"
                         "test_src = ../val.de\ntest_tgt = ../val.en\n[table mixed]\n"
                         "configs = configs/general.ini configs/dot_k2.ini\n");
    for (int i = 0; i < 2; i++) {
        const char *tag = i ? "mixed_concat_report" : "mixed_concat";
        rc = study(tag, bad, i ? "--report" : NULL, NULL);
        EXPECT(rc == 2 && tr_file_contains(tr_fmt("%s/%s.err", w, tag),
                                           "table mixed joins its test sets two ways: "
                                           "data.concat = 1 in ") &&
                   tr_file_contains(tr_fmt("%s/%s.err", w, tag),
                                    tr_fmt("2 in %s/configs/dot_k2.ini; a table compares", dir)),
               "a table of data.concat 1 and 2%s: exit %d, expected 2 naming the table and "
               "both configs", i ? " (--report)" : "", rc);
    }
    remove(tr_fmt("%s/configs/dot_k2.ini", dir));
    EXPECT(!tr_exists(tr_fmt("%s/runs", dir)) && !tr_exists(tr_fmt("%s/spm.model", dir)),
           "a refused plan started a run or trained its SentencePiece model");

    /* 2. the study: the shared SentencePiece model (--prepare: that alone), then the 4 runs, 2
     * at a time */
    const char *spm = test_strdup(tr_fmt("%s/spm.model", dir));
    rc = study("prepare", plan, "--prepare", NULL);
    EXPECT(rc == 0 && tr_exists(spm) && !tr_exists(tr_fmt("%s/runs", dir)) &&
               !tr_exists(tr_fmt("%s/archive", dir)),
           "--prepare (exit %d) should train %s and no run", rc, spm);
    if (!rc) unlink(spm); /* the study trains it again, as below checks */
    rc = study("study", plan, "--jobs", "2");
    EXPECT(rc == 0, "trainer study failed (exit %d)", rc);
    if (rc) tr_print_tail(tr_fmt("%s/study.err", w), 20);
    EXPECT(tr_file_contains(tr_fmt("%s/study.out", w), "training the shared SentencePiece model") &&
               tr_exists(spm) && !tr_exists(tr_fmt("%s/spm.vocab", dir)),
           "the study did not train its SentencePiece model %s", spm);
    static const char *const runs[6] = {"general_s1", "dot_s1", "general_s2", "dot_s2",
                                        "general_s3", "dot_s3"};
    for (int i = 0; i < 4; i++) {
        const char *a = tr_fmt("%s/archive/%s", dir, runs[i]);
        EXPECT(tr_exists(tr_fmt("%s/run.json", a)) && tr_exists(tr_fmt("%s/test/val.beam2", a)) &&
                   tr_exists(tr_fmt("%s/test/val2.greedy", a)),
               "%s is not a complete archive", a);
        size_t n1 = 0, n2 = 0;
        char *m1 = test_read_file(spm, &n1);
        char *m2 = test_read_file(tr_fmt("%s/runs/%s/spm.model", dir, runs[i]), &n2);
        EXPECT(m1 && m2 && n1 == n2 && !memcmp(m1, m2, n1),
               "run %s did not train with the study's SentencePiece model", runs[i]);
        free(m1), free(m2);
        EXPECT(tr_file_contains(tr_fmt("%s/config.ini", a), "study/spm.model\""),
               "the archive's config of %s does not name data.spm_model", runs[i]);
    }
    /* each card records the study's model (spm_hash) and whether its build had uncommitted
     * changes */
    {
        Spm *m = NULL;
        uint64_t h = 0;
        EXPECT(spm_load(&m, spm, &err) == STATUS_OK && spm_hash(m, &h, &err) == STATUS_OK,
               "hashing %s: %s", spm, err.msg);
        spm_free(m);
        for (int i = 0; i < 4; i++) {
            const char *card = tr_fmt("%s/archive/%s/run.json", dir, runs[i]);
            EXPECT(tr_file_contains(card, tr_fmt("\"spm_hash\":\t\"%016llx\"",
                                                 (unsigned long long)h)) &&
                       tr_file_contains(card, "\"uncommitted_changes\":\t"),
                   "%s does not record spm_hash %016llx and uncommitted_changes", card,
                   (unsigned long long)h);
        }
    }
    EXPECT(tr_file_contains(tr_fmt("%s/study.out", w), "in the attention alone"),
           "the start of training does not say what the configs change in their recipe");
    const char *md = tr_fmt("%s/README.md", dir);
    EXPECT(tr_file_contains(md, "in the attention alone.") &&
               tr_file_contains(md, "The checkpoint scored is a run's `avg.ckpt` when the run "
                                    "averaged its last checkpoints") &&
               tr_file_contains(md, "here `best.ckpt` for every run"),
           "%s does not say that the configs change the attention alone, or which checkpoint "
           "is scored", md);
    EXPECT(tr_file_contains(md, "# tiny study") && tr_file_contains(md, "**Archived: 4 of 4 "
                                                                        "runs**") &&
               tr_file_contains(md, "| general (baseline) | luong_general |") &&
               tr_file_contains(md, "| dot | luong_dot |") &&
               tr_file_contains(md, "### Significance against general") &&
               tr_file_contains(md, "adjusted p | verdict |") &&
               tr_file_contains(md, "| val2 | dot | 2 |") &&
               tr_file_contains(md, "(the minimum detectable effect)") &&
               tr_file_contains(md, "- Seed control: each config's seeds split in two") &&
               !tr_file_contains(md, "Documents split into sentences"),
           "%s lacks the rows, the significance (adjusted p, minimum detectable effect, seed "
           "control) or the progress line, or splits documents it has not joined", md);
    {
        char *text = test_read_file(md, NULL);
        const char *sum = text ? strstr(text, "## Summary") : NULL;
        const char *scores = text ? strstr(text, "### Scores") : NULL;
        EXPECT(sum && scores && sum < scores && strstr(sum, "| dot |") &&
                   strstr(sum, " | speed | memory |"),
               "%s does not open with the summary (before the scores, with a row for dot and "
               "the speed and memory columns)", md);
        free(text);
    }
    EXPECT(tr_file_contains(md, "](attention.md") &&
               tr_file_contains(tr_fmt("%s/attention.md", dir), "](attention_dot_0.png)") &&
               !tr_file_contains(md, "](attention_dot_0.png)"),
           "the heatmaps are not in the gallery attention.md, linked from %s", md);
    /* the baseline's runs set aside: the report says the significance waits for them */
    for (int i = 0; i < 4; i += 2)
        EXPECT(rename(tr_fmt("%s/archive/%s", dir, runs[i]), tr_fmt("%s/%s.aside", w, runs[i])) ==
                   0, "cannot set %s aside", runs[i]);
    rc = study("no_baseline", plan, "--report", NULL);
    EXPECT(rc == 0 && tr_file_contains(md, "### Significance against general") &&
               tr_file_contains(md, "general, the baseline, has no archived run yet") &&
               !tr_file_contains(md, "adjusted p | verdict |"),
           "a report without the baseline's runs (exit %d) must say that the significance "
           "waits for them", rc);
    for (int i = 0; i < 4; i += 2)
        EXPECT(rename(tr_fmt("%s/%s.aside", w, runs[i]), tr_fmt("%s/archive/%s", dir, runs[i])) ==
                   0, "cannot put %s back", runs[i]);
    rc = study("report_again", plan, "--report", NULL);
    EXPECT(rc == 0 && tr_file_contains(md, "adjusted p | verdict |"), "the report with the "
           "baseline back failed (exit %d)", rc);
    EXPECT(tr_count_lines(tr_fmt("%s/results.csv", dir)) == 5 &&
               tr_count_lines(tr_fmt("%s/significance.csv", dir)) == 7,
           "results.csv should have 4 rows and significance.csv 6 (per test set: dot against "
           "general, and each config's seed control)");
    { /* a config of the plan with no run yet: the summary names it */
        const char *plan3 = test_strdup(tr_fmt("%s/pending.ini", dir));
        test_write_text(tr_fmt("%s/configs/concat.ini", dir),
                        "include = ../../recipe.ini\n[model]\nattention = luong_concat\n");
        char *p3 = test_read_file(plan, NULL), *cf = p3 ? strstr(p3, "configs/dot.ini") : NULL;
        if (cf) {
            cf[strlen("configs/dot.ini")] = 0;
            test_write_text(plan3, tr_fmt("%s configs/concat.ini\n", p3));
        }
        free(p3);
        rc = study("pending", plan3, "--report", NULL);
        EXPECT(rc == 0 && tr_file_contains(md, "- Not trained yet (no run archived): concat."),
               "a report (exit %d) does not name the config of the plan that has no run yet", rc);
        remove(plan3);
        remove(tr_fmt("%s/configs/concat.ini", dir));
    }

    /* 3. a third seed; general_s3 started by hand with the study's settings and stopped after 5
     * steps (train.max_steps), as an interrupted run: the study resumes it */
    write_plan(plan, "");
    char *p3 = test_read_file(plan, NULL);
    char *sd = p3 ? strstr(p3, "seeds = 1 2\n") : NULL;
    EXPECT(sd != NULL, "the plan has no seeds line");
    if (sd) {
        memcpy(sd, "seeds = 1 3\n", 12); /* seed 2 stays archived: not in the plan now */
        test_write_text(plan, p3);
    }
    free(p3);
    const char *r3 = test_strdup(tr_fmt("%s/runs/general_s3", dir));
    TrArgv a = {{0}, 0};
    tr_arg(&a, "%s", tr_bin());
    tr_arg(&a, "train");
    tr_arg(&a, "--config");
    tr_arg(&a, "%s/configs/general.ini", dir);
    const char *sets[] = {"run.name=general_s3", tr_fmt("train.save_dir=%s", r3),
                          "train.seed=3", "train.max_epochs=1", "train.max_steps=5",
                          "train.max_hours=0", "train.patience=0", "train.precision=fp32",
                          "train.threads=1", tr_fmt("data.spm_model=%s", spm)};
    for (size_t i = 0; i < sizeof sets / sizeof *sets; i++) {
        tr_set(&a, "%s", sets[i]);
    }
    rc = tr_run(a.v, tr_fmt("%s/by_hand.log", w), NULL, TIMEOUT);
    tr_argv_free(&a);
    EXPECT(rc == 0 && tr_exists(tr_fmt("%s/last.ckpt", r3)),
           "the run started by hand (exit %d) left no last.ckpt", rc);
    rc = study("status1", plan, "--status", NULL);
    EXPECT(rc == 0 && tr_file_contains(tr_fmt("%s/status1.out", w), "archived 2, running 1, "
                                                                   "missing 1"),
           "--status with an interrupted run (exit %d): not 2 archived, 1 running, 1 missing",
           rc);
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    EXPECT(tr_file_contains(tr_fmt("%s/status1.out", w),
                            tr_fmt("with --jobs %ld)", ncpu < 1 ? 1 : ncpu > 64 ? 64 : ncpu)),
           "--status without --jobs does not estimate the time left at the machine's %ld CPUs",
           ncpu);
    /* an archive of dot_s3 whose archiving process was killed: its temporary folder goes */
    const char *stale = test_strdup(tr_fmt("%s/archive/dot_s3.tmp.2147483646", dir));
    EXPECT(system(tr_fmt("mkdir -p %s/test && echo x > %s/test/t.greedy && echo {} > %s/run.json",
                         stale, stale, stale)) == 0,
           "mkdir %s", stale);
    /* --only: a glob that matches no run, or with --report, is refused; --status --only lists
     * the runs it keeps; the study trains dot_s3 alone and leaves general_s3 as it is */
    {
        static const char *const none[] = {"--only", "dot_s3,nosuch_*"};
        rc = study_args("only_none", plan, 2, none);
        EXPECT(rc == 2 && tr_file_contains(tr_fmt("%s/only_none.err", w),
                                           "--only 'nosuch_*' matches no run of"),
               "--only with a glob that matches no run: exit %d, expected 2 naming it", rc);
        static const char *const rep[] = {"--report", "--only", "dot_*"};
        rc = study_args("only_report", plan, 3, rep);
        EXPECT(rc == 2 && tr_file_contains(tr_fmt("%s/only_report.err", w),
                                           "--report covers the whole plan"),
               "--only with --report: exit %d, expected 2", rc);
        static const char *const st[] = {"--status", "--only", "*_s3"};
        rc = study_args("only_status", plan, 3, st);
        const char *so = tr_fmt("%s/only_status.out", w);
        EXPECT(rc == 0 && tr_file_contains(so, "--only *_s3: 2 of the 4 runs") &&
                   tr_file_contains(so, "archived 0, running 1, missing 1") &&
                   !tr_file_contains(so, "s1 archived"),
               "--status --only '*_s3' (exit %d) does not list seed 3's runs alone", rc);
        static const char *const one[] = {"--only", "dot_s*", "--jobs", "1", "--only", "no*"};
        rc = study_args("only_bad2", plan, 6, one);
        EXPECT(rc == 2 && tr_file_contains(tr_fmt("%s/only_bad2.err", w), "--only 'no*'"),
               "a second --only that matches no run: exit %d, expected 2", rc);
        rc = study_args("only_dot", plan, 4, one);
        const char *od = tr_fmt("%s/only_dot.out", w);
        EXPECT(rc == 0 && tr_exists(tr_fmt("%s/archive/dot_s3/run.json", dir)) &&
                   !tr_exists(tr_fmt("%s/archive/general_s3", dir)) &&
                   !tr_file_contains(od, "general_s3") && tr_file_contains(od, "training dot_s3"),
               "--only 'dot_s*' (exit %d) did not train dot_s3 alone", rc);
    }
    rc = study("study3", plan, "--jobs", "2");
    EXPECT(rc == 0, "trainer study with seed 3 failed (exit %d)", rc);
    EXPECT(tr_file_contains(tr_fmt("%s/study3.out", w), "study: resuming general_s3") &&
               tr_file_contains(tr_fmt("%s/runs/general_s3.log", dir), "resumed from "),
           "the interrupted run was not resumed from its last.ckpt");
    EXPECT(tr_exists(tr_fmt("%s/archive/dot_s3/run.json", dir)) &&
               tr_exists(tr_fmt("%s/archive/general_s3/run.json", dir)) &&
               !tr_file_contains(tr_fmt("%s/study3.out", w), "training general_s1"),
           "the third seed's runs are not archived, or an archived run was trained again");
    EXPECT(!tr_exists(stale) &&
               tr_file_contains(tr_fmt("%s/runs/dot_s3.log", dir),
                                "left by an interrupted archive"),
           "the temporary folder of a killed archiving (%s) is still there, or unannounced", stale);

    /* 4. nothing left */
    rc = study("status2", plan, "--status", NULL);
    EXPECT(rc == 0 && tr_file_contains(tr_fmt("%s/status2.out", w), "every run is archived"),
           "--status after the study (exit %d) does not say every run is archived", rc);
    rc = study("again", plan, NULL, NULL);
    EXPECT(rc == 0 && !tr_file_contains(tr_fmt("%s/again.out", w), "study: training") &&
               tr_file_contains(tr_fmt("%s/again.out", w), "report written"),
           "a second start (exit %d) trained again or wrote no report", rc);
    rc = study("report", plan, "--report", NULL);
    EXPECT(rc == 0, "--report exited %d", rc);

    /* 4b. a run that another machine archives while it trains here keeps that archive: seed 5
     * alone, one run at a time; once general_s5 trains, an archive of it appears (general_s1's,
     * renamed, moved in at once) */
    {
        char *p5 = test_read_file(plan, NULL), *sd5 = p5 ? strstr(p5, "seeds = 1 3\n") : NULL;
        EXPECT(sd5 != NULL, "the plan has no seeds line");
        if (sd5) {
            memcpy(sd5, "seeds = 5  \n", 12);
            test_write_text(plan, p5);
        }
        free(p5);
        TrArgv s5 = {{0}, 0};
        tr_arg(&s5, "%s", tr_bin());
        tr_arg(&s5, "study");
        tr_arg(&s5, "%s", plan);
        tr_arg(&s5, "--jobs");
        tr_arg(&s5, "1");
        tr_print_argv("study5", s5.v);
        const char *out5 = tr_fmt("%s/study5.out", w);
        pid_t pid = tr_spawn2(s5.v, out5, tr_fmt("%s/study5.err", w), 0, NULL);
        tr_argv_free(&s5);
        for (int i = 0; i < 3000 && !tr_file_contains(out5, "training general_s5"); i++)
            usleep(20000);
        const char *a1 = test_strdup(tr_fmt("%s/archive/general_s1", dir));
        const char *a5 = test_strdup(tr_fmt("%s/archive/general_s5", dir));
        EXPECT(system(tr_fmt("cp -r %s %s.copy && sed -i 's/general_s1/general_s5/' "
                             "%s.copy/run.json && sed -i "
                             "-e 's/\"gpu\":\"\"/\"gpu\":\"TestGPU 9\"/' "
                             "-e 's/\"elapsed\": [0-9.]*/\"elapsed\": 360000/' "
                             "%s.copy/metrics.jsonl && mv %s.copy %s",
                             a1, a5, a5, a5, a5, a5)) == 0,
               "copying an archive into %s", a5);
        char *card5 = test_read_file(tr_fmt("%s/run.json", a5), NULL);
        rc = tr_wait(pid, TIMEOUT);
        printf("  -> exit %d\n", rc);
        char *card5_after = test_read_file(tr_fmt("%s/run.json", a5), NULL);
        EXPECT(rc == 0 && tr_file_contains(out5, "general_s5 was archived meanwhile") &&
                   card5 && card5_after && !strcmp(card5, card5_after) &&
                   tr_exists(tr_fmt("%s/archive/dot_s5/run.json", dir)),
               "a run archived elsewhere while it trained (exit %d): its archive was replaced, "
               "or unannounced, or the next run was not archived", rc);
        /* that archive says it trained on a GPU: with seeds 1, 3 and 5, general's cost has a
         * row for its two runs on the CPU and one for its run on the GPU */
        char *p135 = test_read_file(plan, NULL);
        char *sd135 = p135 ? strstr(p135, "seeds = 5  \n") : NULL;
        if (sd135) {
            memcpy(sd135, "seeds=1 3 5\n", 12);
            test_write_text(plan, p135);
        }
        free(p135);
        rc = study("report135", plan, "--report", NULL);
        const char *md = tr_fmt("%s/README.md", dir);
        EXPECT(rc == 0 && tr_file_contains(md, "| general | rnn | 1 | 2 | ") &&
                   tr_file_contains(md, "| general | rnn | 1 | 1 | ") &&
                   tr_file_contains(md, "| TestGPU 9 |") &&
                   tr_file_contains(md, "never averaged across machines"),
               "the cost table of general's runs on two machines (exit %d, %s) has not a row per "
               "machine", rc, md);
        /* a seed 7 to train on the CPU: its time is estimated from the CPU's runs alone, not
         * from general_s5's 100 hours on the GPU */
        char *p7 = test_read_file(plan, NULL), *sd7 = p7 ? strstr(p7, "seeds=1 3 5\n") : NULL;
        if (sd7) {
            *sd7 = 0;
            test_write_text(plan, tr_fmt("%sseeds=1 3 5 7\n%s", p7, sd7 + 12));
        }
        free(p7);
        rc = study("status7", plan, "--status", NULL);
        EXPECT(rc == 0 && tr_file_contains(tr_fmt("%s/status7.out", w), "missing 2") &&
                   tr_file_contains(tr_fmt("%s/status7.out", w), "time left: about 0 min of "
                                    "training on one thread each"),
               "--status for runs to train on the CPU (exit %d) counts a GPU run's time or "
               "misses the runs", rc);
        free(card5), free(card5_after);
    }

    /* 4c. provenance, with seeds 1, 3, 5 and 7 (6 runs archived): dot_s1's card names another
     * SentencePiece model; then it is an older card, without spm_hash and uncommitted_changes,
     * whose start was built from uncommitted changes (every other card says it was not) */
    {
        const char *card = test_strdup(tr_fmt("%s/archive/dot_s1/run.json", dir));
        const char *key = "\"spm_hash\":\t\"";
        char *text = test_read_file(card, NULL), *at = text ? strstr(text, key) : NULL;
        EXPECT(at && strlen(at) > strlen(key) + 16, "%s has no spm_hash", card);
        if (at) {
            char ours[17];
            snprintf(ours, sizeof ours, "%.16s", at + strlen(key));
            memcpy(at + strlen(key), "0123456789abcdef", 16);
            test_write_text(card, text);
            rc = study("other_model", plan, "--report", NULL);
            const char *e = tr_fmt("%s/other_model.err", w);
            EXPECT(rc == 1 && tr_file_contains(e, "archive/dot_s1/run.json: the run was trained "
                                                  "with the SentencePiece model of hash "
                                                  "0123456789abcdef") &&
                       tr_file_contains(e, tr_fmt("has hash %s", ours)),
                   "--report with an archive of another SentencePiece model: exit %d, expected "
                   "1 naming the archive and both hashes", rc);
            rc = study("other_model_train", plan, NULL, NULL);
            e = tr_fmt("%s/other_model_train.err", w);
            EXPECT(rc == 1 && tr_file_contains(e, "0123456789abcdef") &&
                       !tr_file_contains(tr_fmt("%s/other_model_train.out", w), "study: training"),
                   "a study with an archive of another SentencePiece model: exit %d, expected 1 "
                   "before training anything", rc);
            EXPECT(drop_lines(text, key) == 1 && drop_lines(text, "\"uncommitted_changes\"") == 1,
                   "%s: no uncommitted_changes", card);
            test_write_text(card, text);
        }
        free(text);
        /* a run folder to resume (a last.ckpt) that began with another model: refused too */
        const char *r7 = test_strdup(tr_fmt("%s/runs/general_s7", dir));
        const char *files[2] = {tr_fmt("%s/train.de", w), tr_fmt("%s/train.en", w)};
        EXPECT(make_dirs(r7, &err) == STATUS_OK &&
                   spm_train(files, 2, 300, tr_fmt("%s/spm", r7), 1, &err) == STATUS_OK,
               "training a SentencePiece model into %s: %s", r7, err.msg);
        test_write_text(tr_fmt("%s/last.ckpt", r7), "a checkpoint\n");
        rc = study("other_model_resume", plan, NULL, NULL);
        EXPECT(rc == 1 &&
                   tr_file_contains(tr_fmt("%s/other_model_resume.err", w),
                                    "runs/general_s7/spm.model: run general_s7 began with the "
                                    "SentencePiece model of hash") &&
                   !tr_file_contains(tr_fmt("%s/other_model_resume.out", w), "study: resuming"),
               "a run folder to resume with another SentencePiece model: exit %d, expected 1 "
               "before resuming it", rc);
        EXPECT(system(tr_fmt("rm -r %s", r7)) == 0, "rm -r %s", r7);
        EXPECT(system(tr_fmt("sed -i 's/\"uncommitted_changes\":\ttrue/\"uncommitted_changes\":"
                             "\tfalse/' %s/archive/*/run.json && sed -i -E 's/\"revision\":"
                             "\"[^\"]*\"/\"revision\":\"abc1234-dirty\"/' "
                             "%s/archive/dot_s1/metrics.jsonl", dir, dir)) == 0,
               "editing the cards");
        rc = study("provenance", plan, "--report", NULL);
        const char *md = tr_fmt("%s/README.md", dir);
        EXPECT(rc == 0 &&
                   tr_file_contains(md, "1 of 6 runs trained from a tree with uncommitted "
                                        "changes; git cannot rebuild them.") &&
                   tr_file_contains(md, "| abc1234-dirty (uncommitted changes) |") &&
                   tr_file_contains(md, "1 of these 6 archives do not record their "
                                        "SentencePiece model's hash"),
               "the report (exit %d) does not count and mark the run built from uncommitted "
               "changes, or the archive without spm_hash", rc);
    }

    /* 4d. a config edited after its runs were archived: --status marks its archives, --report
     * and the study (before training) refuse them, naming the archive and the key */
    {
        const char *dot = test_strdup(tr_fmt("%s/configs/dot.ini", dir));
        char *was = test_read_file(dot, NULL);
        test_write_text(dot, "include = ../../recipe.ini\n[model]\nattention = luong_dot\n"
                             "input_feeding = false\n");
        rc = study("edited_status", plan, "--status", NULL);
        const char *o = tr_fmt("%s/edited_status.out", w);
        EXPECT(rc == 0 && tr_file_contains(o, "s1 archived (config differs)") &&
                   tr_file_contains(o, "trained with another config than"),
               "--status with an archive of a config edited since (exit %d) does not mark it", rc);
        rc = study("edited_report", plan, "--report", NULL);
        const char *e = tr_fmt("%s/edited_report.err", w);
        EXPECT(rc == 1 && tr_file_contains(e, "archive/dot_s1/config.ini: the run was trained "
                                              "with a config that differs from the plan's") &&
                   tr_file_contains(e, "model.input_feeding: true -> false"),
               "--report with an archive of a config edited since (exit %d) is not refused "
               "naming the archive and the key", rc);
        rc = study("edited_train", plan, NULL, NULL);
        EXPECT(rc == 1 && tr_file_contains(tr_fmt("%s/edited_train.err", w),
                                           "model.input_feeding: true -> false") &&
                   !tr_file_contains(tr_fmt("%s/edited_train.out", w), "study: training"),
               "a study with an archive of a config edited since: exit %d, expected 1 before "
               "training anything", rc);
        if (was) test_write_text(dot, was);
        free(was);
        rc = study("restored", plan, "--prepare", NULL);
        EXPECT(rc == 0, "--prepare with the config restored: exit %d", rc);
        /* a run folder to resume (a last.ckpt) that began with another config: --status marks
         * it, and the study refuses it before resuming, naming the folder and the key */
        const char *r7 = test_strdup(tr_fmt("%s/runs/dot_s7", dir));
        EXPECT(system(tr_fmt("mkdir -p %s && sed 's/= luong_dot$/= luong_general/' "
                             "%s/archive/dot_s1/config.ini > %s/config.ini", r7, dir, r7)) == 0 &&
                   tr_file_contains(tr_fmt("%s/config.ini", r7), "= luong_general"),
               "writing %s/config.ini", r7);
        test_write_text(tr_fmt("%s/last.ckpt", r7), "a checkpoint\n");
        rc = study("edited_dir_status", plan, "--status", NULL);
        o = tr_fmt("%s/edited_dir_status.out", w);
        EXPECT(rc == 0 && tr_file_contains(o, "s7 running (epoch 0 of 1 done; config differs)") &&
                   tr_file_contains(o, "1 run folder began with another config than"),
               "--status with a run folder begun with another config (exit %d) does not mark "
               "it", rc);
        rc = study("edited_dir_train", plan, NULL, NULL);
        e = tr_fmt("%s/edited_dir_train.err", w);
        EXPECT(rc == 1 &&
                   tr_file_contains(e, "runs/dot_s7/config.ini: run dot_s7 began with a config "
                                       "that differs from the plan's") &&
                   tr_file_contains(e, "model.attention: luong_general -> luong_dot") &&
                   !tr_file_contains(tr_fmt("%s/edited_dir_train.out", w), "study: resuming"),
               "a study with a run folder begun with another config: exit %d, expected 1 "
               "before resuming it, naming the folder and the key", rc);
        EXPECT(system(tr_fmt("rm -r %s", r7)) == 0, "rm -r %s", r7);
    }

    /* 4e. a config that changes another key than the attention's is named with it; a config
     * that includes no file has no recipe */
    {
        test_write_text(tr_fmt("%s/configs/nofeed.ini", dir),
                        "include = ../../recipe.ini\n[model]\nattention = luong_dot\n"
                        "input_feeding = false\n");
        test_write_text(tr_fmt("%s/configs/plain.ini", dir), "[model]\nattention = luong_dot\n");
        const char *head = "[study]\nepochs = 1\nprecision = fp32\nseeds = 1\n"
                           "test_src = ../val.de ../val2.de\ntest_tgt = ../val.en ../val2.en\n"
                           "beam = 2\n[table rnn]\n";
        const char *plan2 = test_strdup(tr_fmt("%s/recipes.ini", dir));
        test_write_text(plan2, tr_fmt("%sconfigs = configs/general.ini configs/nofeed.ini\n",
                                      head));
        rc = study("recipes_status", plan2, "--status", NULL);
        const char *out = tr_fmt("%s/recipes_status.out", w);
        EXPECT(rc == 0 && tr_file_contains(out, "nofeed also sets model.input_feeding = false.") &&
                   !tr_file_contains(out, "attention alone"),
               "--status (exit %d) does not name the key other than the attention's that nofeed "
               "changes", rc);
        rc = study("recipes_report", plan2, "--report", NULL);
        const char *md = tr_fmt("%s/README.md", dir);
        EXPECT(rc == 0 &&
                   tr_file_contains(md, "in the attention and, for some, in other keys: nofeed "
                                        "also sets `model.input_feeding = false`.") &&
                   !tr_file_contains(md, "attention alone"),
               "the report (exit %d) does not name the key other than the attention's that "
               "nofeed changes", rc);
        test_write_text(plan2, tr_fmt("%sconfigs = configs/plain.ini configs/general.ini\n",
                                      head));
        rc = study("no_recipe", plan2, "--status", NULL);
        EXPECT(rc == 0 && tr_file_contains(tr_fmt("%s/no_recipe.out", w),
                                           "plain includes no file, so it has no recipe to "
                                           "compare with; every other config differs from its "
                                           "recipe"),
               "--status (exit %d) does not say that plain has no recipe", rc);
    }

    /* 4f. tables at points of one quantity: the report's BLEU against x */
    {
        const char *head = "[study]\nepochs = 1\nprecision = fp32\nseeds = 1 2\n"
                           "test_src = ../val.de ../val2.de\ntest_tgt = ../val.en ../val2.en\n"
                           "beam = 2\n";
        const char *px = test_strdup(tr_fmt("%s/across.ini", dir));
        test_write_text(px, tr_fmt("%sx_label = example length\n[table a]\nx = 20\n"
                                   "configs = configs/general.ini\n[table b]\nx = 10\n"
                                   "configs = configs/dot.ini\n", head));
        rc = study("across", px, "--report", NULL);
        const char *md = tr_fmt("%s/README.md", dir), *png = tr_fmt("%s/across.png", dir);
        char *text = test_read_file(md, NULL);
        const char *sec = text ? strstr(text, "## BLEU against example length") : NULL;
        const char *first = text ? strstr(text, "## a") : NULL; /* table a's section */
        EXPECT(rc == 0 && sec && first && sec < first &&
                   strstr(sec, "| val | 10 (b) | 20 (a) |") &&
                   strstr(sec, "| luong_general | \xe2\x80\x94 | ") &&
                   strstr(sec, "| luong_dot | ") && strstr(sec, " (2) |") &&
                   strstr(sec, "| val2 | 10 (b) | 20 (a) |") && tr_file_is_png(png),
               "the report (exit %d) of two tables with x lacks the section of BLEU against x "
               "(before the tables, sorted by x, a row per attention, the seeds counted) or "
               "%s", rc, png);
        free(text);
        test_write_text(px, tr_fmt("%sx_label = example length\n[table a]\nx = long\n"
                                   "configs = configs/general.ini\n", head));
        rc = study("bad_x", px, "--status", NULL);
        EXPECT(rc == 2 && tr_file_contains(tr_fmt("%s/bad_x.err", w), "x = long in [table a]: "
                                                                      "give a number"),
               "x = long: exit %d, expected 2 naming the key", rc);
        test_write_text(px, tr_fmt("%s[table a]\nx = 20\nconfigs = configs/general.ini\n",
                                   head));
        rc = study("x_no_label", px, "--status", NULL);
        EXPECT(rc == 2 && tr_file_contains(tr_fmt("%s/x_no_label.err", w), "has no x_label"),
               "x without x_label: exit %d, expected 2", rc);
        test_write_text(px, tr_fmt("%sx_label = length\n[table a]\n"
                                   "configs = configs/general.ini\n", head));
        rc = study("label_no_x", px, "--status", NULL);
        EXPECT(rc == 2 && tr_file_contains(tr_fmt("%s/label_no_x.err", w), "nothing reads it"),
               "x_label without an x: exit %d, expected 2", rc);
    }

    /* 5. data.spm_model of another size */
    TrArgv t;
    tr_train_argv(&t, w, tr_fmt("%s/vocab", w));
    tr_set(&t, "data.spm_model=%s", spm);
    tr_set(&t, "data.vocab_size=400");
    rc = tr_run(t.v, tr_fmt("%s/vocab.log", w), NULL, TIMEOUT);
    tr_argv_free(&t);
    EXPECT(rc == 1 && tr_file_contains(tr_fmt("%s/vocab.log", w), "has 500 pieces, but "
                                                                  "data.vocab_size = 400"),
           "data.spm_model with another data.vocab_size: exit %d, not refused naming both", rc);
    return tr_finish("test_study", t_start);
}
