/* test_compare.c — `trainer compare` end to end (src/cli/compare.c, src/study/archive.h,
 * src/study/report.h, src/eval/plot.h).
 *
 * Data: the first 2000 training and 100 validation pairs of Multi30k, tests/fixtures/tiny.ini
 * (2 epochs), one thread; the 100 validation pairs double as the test set
 * (data.test_src/test_tgt). Two runs:
 *   general  trained here with `trainer train` (model.attention = luong_general) and given to
 *            compare as a run FOLDER;
 *   dot      model.attention = luong_dot, given to compare as a CONFIG .ini (written here with
 *            config_to_ini) whose folder has no best.ckpt yet, so compare trains it itself.
 * `trainer compare general dot.ini --out D --beam 2 --baseline general` must exit 0 and write:
 *   - D/archive/general and D/archive/dot, archives of the two runs (run.json, config.ini,
 *     metrics.jsonl, the test set's references and translations, attention.json; no checkpoint);
 *   - compare.csv: the header and one row per run, every numeric field a complete number,
 *     parameters > 0, epochs = 2, the attention names, BLEU and chrF in [0, 100];
 *   - significance.csv: dot against general, its Δ the difference of their beam BLEU; one seed a
 *     config, so no interval, p or verdict, only the sentences' p in (0, 1];
 *   - compare.md: the scores, cost and significance tables (no verdict from one seed a config),
 *     the runs' table and the line naming the machine; curves.png, tradeoff.png and
 *     attention_<run>_{0,1,2}.png, each starting with the PNG signature, the heatmaps on the page
 *     attention.md; the scores table on stdout.
 * From archives: `trainer compare D/archive/general D/archive/dot` into another folder writes
 * the same compare.md (but for its "Report written" line), compare.csv, significance.csv and
 * curves.png, byte for byte; it decodes nothing (no checkpoint is read). A run compared with a
 * copy of its own archive reads "identical", never better or worse.
 * A folder holding only last.ckpt and metrics.jsonl (no validation yet) is compared on last.ckpt,
 * and compare.md says so. Two such folders a/run and b/run are named by their config.ini's
 * run.name (alpha, beta), not "run" and "run_2". --seeds 3,4 --budget epochs=1 trains dot.ini
 * twice and reports one config "dot" with 2 seeds.
 * Refusals: an empty folder and a missing path as RUN exit 2 with a message naming the argument;
 * --seeds with a run folder and an unknown --baseline exit 2; a config without a test set exits
 * 1 naming data.test_src.
 * Needs the gnuplot program: without it the test FAILS (CI installs gnuplot), it does not skip.
 */
#include <math.h>

#include "train/config.h"
#include "trainer_run.h"

#define TIMEOUT 240.0

static const char *g_work;

/* Runs `trainer compare ARGS...` (NULL-terminated); stdout/stderr into tag.out / tag.err. */
static int compare(const char *tag, ...) {
    TrArgv a = {0};
    tr_arg(&a, "%s", tr_bin());
    tr_arg(&a, "compare");
    va_list ap;
    va_start(ap, tag);
    for (const char *s; (s = va_arg(ap, const char *)) != NULL;) tr_arg(&a, "%s", s);
    va_end(ap);
    tr_print_argv(tag, a.v);
    const char *out = tr_fmt("%s/%s.out", g_work, tag), *err = tr_fmt("%s/%s.err", g_work, tag);
    double t0 = tr_now();
    int rc = tr_wait(tr_spawn2(a.v, out, err, 0, NULL), TIMEOUT);
    tr_argv_free(&a);
    printf("  -> exit %d in %.1f s\n", rc, tr_now() - t0);
    return rc;
}

/* A config .ini: tiny.ini with the work slices, test set = val slice (test != 0) or none,
 * save_dir, and extra
 * "section.key=value" overrides (NULL-terminated). */
static void write_config(const char *path, const char *name, const char *save_dir, int test, ...) {
    Config c;
    Err err;
    int ok = config_load(&c, TR_CONFIG, &err) == 0;
    const char *sets[] = {
        tr_fmt("run.name=%s", name),
        tr_fmt("data.train_src=%s/train.de", g_work),
        tr_fmt("data.train_tgt=%s/train.en", g_work),
        tr_fmt("data.val_src=%s/val.de", g_work),
        tr_fmt("data.val_tgt=%s/val.en", g_work),
        tr_fmt("data.test_src=%s", test ? tr_fmt("%s/val.de", g_work) : ""),
        tr_fmt("data.test_tgt=%s", test ? tr_fmt("%s/val.en", g_work) : ""),
        tr_fmt("data.cache_dir=%s/cache", save_dir),
        tr_fmt("train.save_dir=%s", save_dir),
        "train.threads=1",
    };
    for (size_t i = 0; ok && i < sizeof sets / sizeof *sets; i++)
        ok = config_set(&c, sets[i], &err) == 0;
    va_list ap;
    va_start(ap, test);
    for (const char *s; ok && (s = va_arg(ap, const char *)) != NULL;)
        ok = config_set(&c, s, &err) == 0;
    va_end(ap);
    if (ok) ok = config_validate(&c, &err) == 0;
    if (!ok) {
        fprintf(stderr, "FAIL: cannot build the config %s: %s\n", path, err.msg);
        exit(1);
    }
    char *text = config_to_ini(&c);
    test_write_text(path, text);
    free(text);
}

/* A complete number (strtod takes all of it). */
static int num(const char *s, double *v) {
    char *end;
    if (!*s) return 0;
    *v = strtod(s, &end);
    return *end == 0 && isfinite(*v);
}

/* Splits a CSV line (no quoted fields expected) in place; returns the field count. */
static int split_csv(char *line, char **f, int max) {
    int n = 0;
    char *p = line;
    for (;;) {
        if (n == max) return max + 1;
        f[n++] = p;
        char *c = strchr(p, ',');
        if (!c) break;
        *c = 0;
        p = c + 1;
    }
    size_t len = strlen(f[n - 1]);
    while (len && (f[n - 1][len - 1] == '\r')) f[n - 1][--len] = 0;
    return n;
}

static double g_beam[2]; /* general's and dot's beam BLEU (compare.csv) */

static void check_csv(const char *path) {
    static const char *const header =
        "table,config,run,seed,model,attention,parameters,precision,epochs,train_seconds,tok_s,"
        "peak_mib,best_val_ppl,best_val_bleu,checkpoint,checkpoint_val_bleu,val_bleu_greedy,"
        "val_chrf_greedy,val_bleu_beam,val_chrf_beam";
    static const char *const names[2] = {"general", "dot"};
    static const char *const attn[2] = {"luong_general", "luong_dot"};
    char *t = test_read_file(path, NULL);
    EXPECT(t != NULL, "cannot read %s", path);
    if (!t) return;
    char *save = NULL, *lines[8];
    int nl = 0;
    for (char *l = strtok_r(t, "\n", &save); l && nl < 8; l = strtok_r(NULL, "\n", &save))
        lines[nl++] = l;
    EXPECT(nl == 3, "%s: %d lines, expected the header and 2 rows", path, nl);
    if (nl >= 1) EXPECT(!strcmp(lines[0], header), "%s header: '%s'", path, lines[0]);
    for (int r = 0; r < 2 && r + 1 < nl; r++) {
        char *f[24];
        int nf = split_csv(lines[r + 1], f, 23);
        EXPECT(nf == 20, "%s row %d: %d fields, expected 20", path, r + 1, nf);
        if (nf != 20) continue;
        EXPECT(!strcmp(f[1], names[r]) && !strcmp(f[2], names[r]),
               "row %d: config '%s' run '%s', expected '%s'", r + 1, f[1], f[2], names[r]);
        EXPECT(!strcmp(f[4], "rnn") && !strcmp(f[5], attn[r]) && !strcmp(f[7], "fp32") &&
                   !strcmp(f[14], "best.ckpt"),
               "row %d: model '%s' attention '%s' precision '%s' checkpoint '%s'", r + 1, f[4],
               f[5], f[7], f[14]);
        double v[20];
        static const int numeric[] = {3, 6, 8, 9, 10, 11, 12, 13, 15, 16, 17, 18, 19};
        for (size_t k = 0; k < sizeof numeric / sizeof *numeric; k++)
            EXPECT(num(f[numeric[k]], &v[numeric[k]]), "row %d field %d ('%s') is not a number",
                   r + 1, numeric[k] + 1, f[numeric[k]]);
        printf("%s: params %s epochs %s time %s s tok/s %s peak %s MiB val ppl %s val BLEU %s "
               "test BLEU/chrF greedy %s/%s beam %s/%s\n", f[2], f[6], f[8], f[9], f[10], f[11],
               f[12], f[13], f[16], f[17], f[18], f[19]);
        EXPECT(v[6] > 1000 && v[6] == floor(v[6]), "row %d: parameters %s", r + 1, f[6]);
        EXPECT(v[8] == 2, "row %d: epochs %s, expected 2", r + 1, f[8]);
        EXPECT(v[9] > 0 && v[10] > 0 && v[11] > 0, "row %d: time %s, tok/s %s, peak %s", r + 1,
               f[9], f[10], f[11]);
        EXPECT(v[12] > 1, "row %d: best validation perplexity %s", r + 1, f[12]);
        EXPECT(v[15] == v[13], "row %d: the checkpoint scored (best.ckpt) has val BLEU %s, the "
               "best validation %s", r + 1, f[15], f[13]);
        for (int k = 16; k < 20; k++)
            EXPECT(v[k] >= 0 && v[k] <= 100, "row %d field %d: %s not in [0, 100]", r + 1, k + 1,
                   f[k]);
        g_beam[r] = v[18];
    }
    free(t);
}

/* significance.csv: dot against general, Δ = their beam BLEU's difference inside its interval */
static void check_sig(const char *path) {
    char *t = test_read_file(path, NULL);
    EXPECT(t != NULL, "cannot read %s", path);
    if (!t) return;
    char *nl = strchr(t, '\n'), *f[24];
    int nf = nl ? split_csv(nl + 1, f, 23) : 0;
    EXPECT(nf == 22 && !strcmp(f[1], "val") && !strcmp(f[2], "baseline") &&
               !strcmp(f[3], "dot") && !strcmp(f[4], "general"),
           "%s: expected one row, dot against general on the test set val", path);
    double d = NAN, ps = NAN; /* NaN fails the checks below */
    if (nf == 22) {
        EXPECT(num(f[9], &d) && num(f[17], &ps), "%s: delta '%s' and the sentences' p '%s' are "
               "not numbers", path, f[9], f[17]);
        EXPECT(!*f[10] && !*f[11] && !*f[14] && !*f[16],
               "%s: one seed a side and no seed variance in the table, so the interval and p "
               "are not measured and must be empty, not '%s' '%s' '%s' '%s'", path, f[10],
               f[11], f[14], f[16]);
        char *end = strchr(f[21], '\n');
        if (end) *end = 0;
        printf("dot vs general: %+.2f BLEU, the sentences' p = %.4f (%s)\n", d, ps, f[21]);
        EXPECT(!strcmp(f[21], "no verdict: one seed a config") || !strcmp(f[21], "no difference"),
               "%s: verdict '%s' from one seed a config", path, f[21]);
    }
    EXPECT(ps > 0 && ps <= 1, "the sentences' p %g", ps);
    EXPECT(fabs(d - (g_beam[1] - g_beam[0])) < 2e-4,
           "delta %g is not dot's beam BLEU %g minus general's %g", d, g_beam[1], g_beam[0]);
    free(t);
}

/* 1 when files a and b hold the same bytes; with skip, lines starting with it are left out. */
static int same_file(const char *a, const char *b, const char *skip) {
    char *x = test_read_file(a, NULL), *y = test_read_file(b, NULL);
    int same = x && y;
    if (same && skip) {
        char *xs = strstr(x, skip), *ys = strstr(y, skip);
        if (xs) *xs = 0;
        if (ys) *ys = 0;
        if (xs && ys) same = !strcmp(strchr(xs + 1, '\n') ? strchr(xs + 1, '\n') : "",
                                     strchr(ys + 1, '\n') ? strchr(ys + 1, '\n') : "");
    }
    same = same && !strcmp(x, y);
    if (!same && x && y) {
        size_t i = 0;
        while (x[i] && x[i] == y[i]) i++;
        printf("%s and %s differ at byte %zu: '%.60s' against '%.60s'\n", a, b, i, x + i, y + i);
    }
    free(x), free(y);
    return same;
}

int main(void) {
    double t_start;
    g_work = tr_begin("test_compare", &t_start);
    EXPECT(system("command -v gnuplot >/dev/null 2>&1") == 0,
           "the gnuplot program is not installed (apt-get install gnuplot-nox); trainer compare "
           "needs it for its PNG plots");

    /* ---- run 1: trained here, compared as a folder ---- */
    const char *general = test_strdup(tr_fmt("%s/general", g_work));
    TrArgv a;
    tr_train_argv(&a, g_work, general);
    tr_set(&a, "model.attention=luong_general");
    tr_set(&a, "data.test_src=%s/val.de", g_work);
    tr_set(&a, "data.test_tgt=%s/val.en", g_work);
    tr_print_argv("train general", a.v);
    const char *log = tr_fmt("%s/train_general.log", g_work);
    double t0 = tr_now();
    int rc = tr_run(a.v, log, NULL, TIMEOUT);
    tr_argv_free(&a);
    printf("  -> exit %d in %.1f s\n", rc, tr_now() - t0);
    EXPECT(rc == 0, "training the luong_general run failed (exit %d)", rc);
    if (rc != 0) {
        tr_print_tail(log, 20);
        return test_report("test_compare");
    }

    /* ---- run 2: a config whose folder is empty; compare trains it ---- */
    const char *dot_ini = test_strdup(tr_fmt("%s/dot.ini", g_work));
    const char *dot_dir = test_strdup(tr_fmt("%s/dot", g_work));
    write_config(dot_ini, "dot", dot_dir, 1, "model.attention=luong_dot", NULL);

    const char *out = test_strdup(tr_fmt("%s/cmp", g_work));
    rc = compare("compare", general, dot_ini, "--out", out, "--beam", "2", "--baseline",
                 "general", NULL);
    EXPECT(rc == 0, "trainer compare failed (exit %d)", rc);
    if (rc != 0) {
        tr_print_tail(tr_fmt("%s/compare.err", g_work), 20);
        tr_print_tail(tr_fmt("%s/compare.out", g_work), 10);
    }
    EXPECT(tr_exists(tr_fmt("%s/best.ckpt", dot_dir)), "compare did not train %s into %s",
           dot_ini, dot_dir);

    /* ---- outputs ---- */
    const char *csv = tr_fmt("%s/compare.csv", out);
    const char *md = test_strdup(tr_fmt("%s/compare.md", out));
    EXPECT(tr_exists(csv), "%s missing", csv);
    EXPECT(tr_exists(md), "%s missing", md);
    check_csv(csv);
    check_sig(tr_fmt("%s/significance.csv", out));
    static const char *const runs[2] = {"general", "dot"};
    for (int r = 0; r < 2; r++) {
        static const char *const files[] = {"run.json", "config.ini", "metrics.jsonl",
                                            "attention.json", "test/val.ref", "test/val.greedy",
                                            "test/val.beam2"};
        for (size_t k = 0; k < sizeof files / sizeof *files; k++)
            EXPECT(tr_exists(tr_fmt("%s/archive/%s/%s", out, runs[r], files[k])),
                   "the archive of %s lacks %s", runs[r], files[k]);
        EXPECT(!tr_exists(tr_fmt("%s/archive/%s/best.ckpt", out, runs[r])),
               "the archive of %s holds a checkpoint", runs[r]);
        EXPECT(tr_count_lines(tr_fmt("%s/archive/%s/test/val.beam2", out, runs[r])) ==
                   tr_count_lines(tr_fmt("%s/val.en", g_work)),
               "the archive of %s does not hold one translation per test sentence", runs[r]);
    }
    char *mdt = test_read_file(md, NULL);
    if (mdt) {
        EXPECT(strstr(mdt, "### Significance against general") &&
                   strstr(mdt, "| general (baseline) | luong_general |") &&
                   strstr(mdt, "| val | dot | 1 | ") &&
                   (strstr(mdt, "| no verdict: one seed a config |") ||
                    strstr(mdt, "| no difference |")) &&
                   strstr(mdt, "‡ No config of this table has two seeds"),
               "%s: no significance section against the baseline, or a verdict from one seed "
               "a config", md);
        EXPECT(strstr(mdt, "| dot | luong_dot |") && strstr(mdt, "| general | rnn | 2 |") &&
                   strstr(mdt, "| dot | rnn | 2 |"),
               "%s lacks a scores and a cost row for each run", md);
        EXPECT(strstr(mdt, "| general | general | 7 | best.ckpt (") &&
                   strstr(mdt, "| dot | dot | 7 | best.ckpt ("),
               "%s: the runs' table lacks a run, its seed or the checkpoint scored", md);
        EXPECT(strstr(mdt, "Report written ") && strstr(mdt, " by trainer "),
               "%s: no line naming the date and machine", md);
        EXPECT(strstr(mdt, "K = 2"), "%s: the decoding settings (beam 2) are not named", md);
        for (int r = 0; r < 2; r++) { /* how peaked the weights are: a row per config */
            const char *row = strstr(mdt, tr_fmt("\n| %s | ", runs[r]));
            const char *sharp = strstr(mdt, "| config | rows | entropy (nats) | uniform (nats) |");
            while (row && sharp && row < sharp) row = strstr(row + 1, tr_fmt("\n| %s | ", runs[r]));
            int rows = 0;
            double h = NAN, u = NAN, mx = NAN;
            int nf = row ? sscanf(row + strlen(runs[r]) + 5, "%d | %lf | %lf | %lf |", &rows, &h,
                                  &u, &mx)
                         : 0;
            EXPECT(sharp && nf == 4 && rows > 0 && h >= 0 && h <= u + 1e-9 && u > 0 &&
                       mx > 0 && mx <= 1 && mx >= exp(-u) - 0.01,
                   "%s: the table of how peaked the weights are lacks a plausible row for %s "
                   "(rows %d, entropy %g, uniform %g, largest weight %g)", md, runs[r], rows, h,
                   u, mx);
        }
        char *gal = test_read_file(tr_fmt("%s/attention.md", out), NULL);
        EXPECT(strstr(mdt, "](curves.png)") && strstr(mdt, "](tradeoff.png)") &&
                   strstr(mdt, "](attention.md)") && gal &&
                   strstr(gal, "](attention_general_0.png)") &&
                   strstr(gal, "](attention_dot_2.png)"),
               "%s: image links missing (the heatmaps in attention.md)", md);
        free(gal);
    }
    free(mdt);
    EXPECT(tr_file_contains(tr_fmt("%s/compare.out", g_work), "| general (baseline) |"),
           "the scores table was not printed on stdout");
    const char *pngs[8] = {"curves.png", "tradeoff.png"};
    int np = 2;
    for (int r = 0; r < 2; r++)
        for (int i = 0; i < 3; i++)
            pngs[np++] = test_strdup(tr_fmt("attention_%s_%d.png", runs[r], i));
    for (int i = 0; i < np; i++) {
        const char *p = tr_fmt("%s/%s", out, pngs[i]);
        EXPECT(tr_file_is_png(p), "%s is missing or not a PNG (size %ld)", p, tr_file_size(p));
    }

    /* ---- the same report from the archives alone ---- */
    const char *out2 = test_strdup(tr_fmt("%s/cmp_archives", g_work));
    rc = compare("archives", tr_fmt("%s/archive/general", out), tr_fmt("%s/archive/dot", out),
                 "--out", out2, "--baseline", "general", NULL);
    EXPECT(rc == 0, "trainer compare of the archives failed (exit %d)", rc);
    EXPECT(same_file(md, tr_fmt("%s/compare.md", out2), "Report written "),
           "compare.md from the archives differs from the one from the run folders");
    static const char *const same[] = {"compare.csv", "significance.csv", "curves.png",
                                       "tradeoff.png", "attention_dot_1.png"};
    for (size_t k = 0; k < sizeof same / sizeof *same; k++)
        EXPECT(test_files_equal(tr_fmt("%s/%s", out, same[k]), tr_fmt("%s/%s", out2, same[k])),
               "%s from the archives differs from the one from the run folders", same[k]);
    EXPECT(!tr_file_contains(tr_fmt("%s/archives.err", g_work), "archiving"),
           "compare of archives decoded again (it archived a run)");
    /* a run against a copy of its own archive: identical, never better or worse */
    const char *copy = test_strdup(tr_fmt("%s/general_copy", g_work));
    EXPECT(system(tr_fmt("cp -r %s/archive/general %s", out, copy)) == 0, "cp -r");
    EXPECT(system(tr_fmt("sed -i 's/\"name\":\\t\"general\"/\"name\":\\t\"general_copy\"/' "
                         "%s/run.json", copy)) == 0, "sed");
    rc = compare("self", tr_fmt("%s/archive/general", out), copy, "--out",
                 tr_fmt("%s/cmp_self", g_work), "--baseline", "general", NULL);
    const char *mself = tr_fmt("%s/cmp_self/compare.md", g_work);
    EXPECT(rc == 0 && tr_file_contains(mself, "| identical translations |") &&
               !tr_file_contains(mself, "| better") && !tr_file_contains(mself, "| worse"),
           "a run against a copy of itself (exit %d) is not reported identical", rc);

    /* ---- refusals ---- */
    const char *empty = test_strdup(tr_fmt("%s/empty_run", g_work));
    mkdir(empty, 0755);
    rc = compare("bad_empty", general, empty, "--out", tr_fmt("%s/cmp_bad", g_work), NULL);
    EXPECT(rc == 2, "compare with an empty folder as RUN exited %d, expected 2", rc);
    EXPECT(tr_file_contains(tr_fmt("%s/bad_empty.err", g_work), empty) &&
               tr_file_contains(tr_fmt("%s/bad_empty.err", g_work), "best.ckpt"),
           "the message does not name the empty folder %s and best.ckpt", empty);
    /* a run folder with no best.ckpt yet (stopped before validation): compared on last.ckpt */
    const char *lastonly = test_strdup(tr_fmt("%s/lastonly", g_work));
    mkdir(lastonly, 0755);
    static const char *const copied[2] = {"last.ckpt", "metrics.jsonl"};
    for (int i = 0; i < 2; i++) {
        size_t n = 0;
        char *bytes = test_read_file(tr_fmt("%s/%s", general, copied[i]), &n);
        EXPECT(bytes && test_write_file(tr_fmt("%s/%s", lastonly, copied[i]), bytes, n) == 0,
               "cannot copy %s/%s", general, copied[i]);
        free(bytes);
    }
    const char *out_last = test_strdup(tr_fmt("%s/cmp_last", g_work));
    rc = compare("lastonly", lastonly, "--out", out_last, "--beam", "2", "--sentences", "0", NULL);
    EXPECT(rc == 0, "compare of a folder with only last.ckpt exited %d, expected 0", rc);
    EXPECT(tr_file_contains(tr_fmt("%s/compare.md", out_last), "| last.ckpt (no validation had "
                                                                "run) |"),
           "compare.md does not say that run lastonly was compared on its last.ckpt");
    /* two run folders with the same last component (a/run, b/run): each is named by the
     * run.name of its config.ini (here "alpha" and "beta", copies of general's run) */
    static const char *const side[2] = {"alpha", "beta"};
    const char *twin[2];
    Config tc;
    Err terr = {{0}};
    EXPECT(config_load(&tc, tr_fmt("%s/config.ini", general), &terr) == STATUS_OK,
           "%s/config.ini: %s", general, terr.msg);
    for (int k = 0; k < 2; k++) {
        twin[k] = test_strdup(tr_fmt("%s/%s_folder/run", g_work, side[k]));
        EXPECT(make_dirs(twin[k], &terr) == STATUS_OK, "%s", terr.msg);
        for (int i = 0; i < 2; i++) {
            size_t n = 0;
            char *bytes = test_read_file(tr_fmt("%s/%s", general, copied[i]), &n);
            EXPECT(bytes && test_write_file(tr_fmt("%s/%s", twin[k], copied[i]), bytes, n) == 0,
                   "cannot copy %s/%s", general, copied[i]);
            free(bytes);
        }
        snprintf(tc.name, sizeof tc.name, "%s", side[k]);
        char *ini = config_to_ini(&tc);
        EXPECT(test_write_file(tr_fmt("%s/config.ini", twin[k]), ini, strlen(ini)) == 0,
               "cannot write %s/config.ini", twin[k]);
        free(ini);
    }
    const char *out_twin = test_strdup(tr_fmt("%s/cmp_twin", g_work));
    rc = compare("twin", twin[0], twin[1], "--out", out_twin, "--beam", "1", "--sentences", "0",
                 NULL);
    EXPECT(rc == 0 && tr_file_contains(tr_fmt("%s/compare.md", out_twin), "| alpha | rnn |") &&
               tr_file_contains(tr_fmt("%s/compare.md", out_twin), "| beta | rnn |"),
           "compare of %s and %s (exit %d): their rows are not named by run.name (alpha, beta)",
           twin[0], twin[1], rc);
    const char *missing = tr_fmt("%s/no_such_run", g_work);
    if (getenv("TEST_SHOW_MD")) tr_print_tail(md, 80);

    /* ---- --seeds and --budget: dot.ini once per seed, one epoch each, in folders of their own;
     * the report's Seeds table ---- */
    const char *out_seeds = test_strdup(tr_fmt("%s/cmp_seeds", g_work));
    rc = compare("seeds", dot_ini, "--seeds", "3,4", "--budget", "epochs=1", "--beam", "1",
                 "--sentences", "0", "--out", out_seeds, NULL);
    EXPECT(rc == 0, "compare --seeds 3,4 --budget epochs=1 exited %d", rc);
    if (rc != 0) tr_print_tail(tr_fmt("%s/seeds.err", g_work), 20);
    const char *s3 = test_strdup(tr_fmt("%s_epochs1_s3/best.ckpt", dot_dir));
    const char *s4 = test_strdup(tr_fmt("%s_epochs1_s4/best.ckpt", dot_dir));
    EXPECT(tr_exists(s3) && tr_exists(s4), "--seeds 3,4 --budget epochs=1 did not train %s and %s",
           s3, s4);
    {
        size_t n3 = 0, n4 = 0;
        char *b3 = test_read_file(s3, &n3), *b4 = test_read_file(s4, &n4);
        EXPECT(b3 && b4 && (n3 != n4 || memcmp(b3, b4, n3) != 0),
               "the runs of seeds 3 and 4 wrote identical checkpoints");
        free(b3), free(b4);
    }
    EXPECT(tr_count_lines(tr_fmt("%s_epochs1_s3/metrics.jsonl", dot_dir)) > 0 &&
               !tr_file_contains(tr_fmt("%s_epochs1_s3/metrics.jsonl", dot_dir), "\"epoch\": 2"),
           "the budget of one epoch was not kept (metrics.jsonl shows epoch 2)");
    const char *mds = tr_fmt("%s/compare.md", out_seeds);
    EXPECT(tr_file_contains(mds, "| dot | luong_dot | ") && tr_file_contains(mds, " | 2 | ") &&
               tr_file_contains(mds, "Budget: every config trained with epochs1") &&
               tr_file_contains(mds, "| dot_s3 | dot | 3 |") &&
               tr_file_contains(mds, "| dot_s4 | dot | 4 |"),
           "%s: no config row over 2 seeds, budget line or per-seed rows", mds);
    rc = compare("bad_seeds_folder", general, "--seeds", "1,2", "--out",
                 tr_fmt("%s/cmp_bad", g_work), NULL);
    EXPECT(rc == 2 && tr_file_contains(tr_fmt("%s/bad_seeds_folder.err", g_work),
                                       "is already trained"),
           "compare --seeds with a run folder exited %d (expected 2 with a message)", rc);
    rc = compare("bad_budget", dot_ini, "--budget", "epochs=1.5", "--out",
                 tr_fmt("%s/cmp_bad", g_work), NULL);
    EXPECT(rc == 2 && tr_file_contains(tr_fmt("%s/bad_budget.err", g_work), "--budget epochs=1.5"),
           "compare --budget epochs=1.5 exited %d (expected 2 with a message)", rc);
    rc = compare("bad_seeds", dot_ini, "--seeds", "1,1", "--out", tr_fmt("%s/cmp_bad", g_work),
                 NULL);
    EXPECT(rc == 2, "compare --seeds 1,1 exited %d, expected 2", rc);
    rc = compare("bad_baseline", general, dot_ini, "--baseline", "nosuch", "--out",
                 tr_fmt("%s/cmp_bad", g_work), NULL);
    EXPECT(rc == 2, "compare --baseline with an unknown run exited %d, expected 2", rc);
    EXPECT(tr_file_contains(tr_fmt("%s/bad_baseline.err", g_work), "--baseline nosuch is not one "
                            "of the configs (general, dot)"),
           "compare --baseline nosuch: the message does not name the runs");
    rc = compare("bad_missing", missing, "--out", tr_fmt("%s/cmp_bad", g_work), NULL);
    EXPECT(rc == 2, "compare with a missing path as RUN exited %d, expected 2", rc);
    EXPECT(tr_file_contains(tr_fmt("%s/bad_missing.err", g_work), missing),
           "the message does not name %s", missing);
    const char *notest = test_strdup(tr_fmt("%s/notest.ini", g_work));
    /* same folder as "general" (has best.ckpt: no training), but the .ini has no test set */
    write_config(notest, "notest", general, 0, "model.attention=luong_general", NULL);
    rc = compare("bad_notest", notest, "--out", tr_fmt("%s/cmp_bad", g_work), NULL);
    EXPECT(rc == 1, "compare with a config without a test set exited %d, expected 1", rc);
    EXPECT(tr_file_contains(tr_fmt("%s/bad_notest.err", g_work), "data.test_src"),
           "the message does not name data.test_src");

    return tr_finish("test_compare", t_start);
}
