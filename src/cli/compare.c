/* compare.c — `trainer compare`: one report comparing several runs, from their archives.
 *
 *   trainer compare RUN... [--out DIR] [--beam K] [--len-penalty A] [--sentences i,j,k]
 *                          [--test-src FILE --test-tgt FILE]... [--device cpu|cuda]
 *                          [--baseline CONFIG] [--budget steps=N|epochs=N|hours=H]
 *                          [--seeds s1,s2,...]
 *
 * RUN is either
 *  - an archive folder (study/archive.h: written by `trainer archive`, `trainer study` or an
 *    earlier compare); it is read as it is, nothing is decoded;
 *  - a run folder written by `trainer train` (its train.save_dir, e.g. checkpoints/luong); or
 *  - a config .ini file: its run folder is config_save_dir() of the loaded (and validated)
 *    config. If that folder has no best.ckpt yet, the run is trained first (train_run); if it
 *    holds a last.ckpt, training resumes from it first (an interrupted run is completed; one that
 *    had reached its limits trains nothing).
 * Every run folder (given, or a config's) is archived into DIR/archive/<run> (archive_run: the
 * test sets translated greedily and with beam K, default 5, α default 1.0; the attention of the
 * --sentences, default 0,1,2), and the report is written from the archives alone
 * (study/report.h): DIR/compare.md, compare.csv, significance.csv (with --baseline), the curves,
 * the trade-off plot and the heatmaps. Comparing those archives again gives the same report, byte
 * for byte, but for the line naming the date and machine.
 *
 * A run's name: an archive's own; a run folder's last component, or, where several RUN folders
 * share that component (a/run, b/run), the run.name of its config.ini; a config's run.name.
 * Names are reduced to [A-Za-z0-9._-] and made unique ("name_2"). Runs whose names differ only by a trailing _s<seed> and whose configs agree
 * but for the seed (report.h) are one config, reported as mean ± sd over its seeds.
 *
 * The test sets: --test-src/--test-tgt pairs (repeatable), else each run's own: an archive's, or
 * the config's data.test_src/test_tgt; every run must have those of the first run. --baseline
 * CONFIG tests every other config against it (seed-aware paired bootstrap, report.h).
 * --budget steps=N | epochs=N | hours=H gives every config RUN the same training budget
 * (train.max_steps, max_epochs or max_hours set to it, the other two limits lifted, and no early
 * stopping: train.patience = 0) and a run folder of its own, <save_dir>_<budget> (steps2000,
 * epochs8, hours1.5), so that a run trained under another budget is never reused. --seeds
 * s1,s2,... (up to 16) trains every config RUN once per seed (train.seed), as runs
 * named <name>_s<seed> in <save_dir>[_<budget>]_s<seed>. Both need config RUNs: a run folder or an
 * archive is already trained (usage error, exit 2).
 *
 * Needs the gnuplot program (checked before any training or decoding).
 */

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "study/compare.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: trainer compare RUN... [--out DIR] [--beam K] [--len-penalty A]\n"
            "                       [--sentences i,j,k] [--test-src FILE --test-tgt FILE]...\n"
            "                       [--device cpu|cuda] [--baseline CONFIG]\n"
            "                       [--budget steps=N|epochs=N|hours=H] [--seeds s1,s2,...]\n"
            "  RUN: an archive folder (trainer archive, study or compare wrote it), a run folder\n"
            "       (with best.ckpt and metrics.jsonl, e.g. checkpoints/luong) or a config .ini\n"
            "       (trained first when its folder has no best.ckpt yet)\n"
            "  --out DIR          output folder (default: compare); run folders are archived\n"
            "                     into DIR/archive/<run>\n"
            "  --beam K           beam size of the second decoding (1..64, default 5)\n"
            "  --len-penalty A    length penalty alpha for the beam (0..10, default 1.0)\n"
            "  --sentences i,j,k  0-based test sentences for the attention maps (default 0,1,2)\n"
            "  --test-src/--test-tgt  a test set, repeatable (default: each run's "
            "data.test_src/test_tgt)\n"
            "  --device cpu|cuda  device to decode on (default: each checkpoint's)\n"
            "  --baseline CONFIG  seed-aware paired bootstrap of every config against CONFIG\n"
            "  --budget steps=N|epochs=N|hours=H  the same training budget for every config RUN\n"
            "  --seeds s1,s2,...  train every config RUN once per seed (mean ± sd in the report)\n"
            "writes DIR/compare.md, compare.csv, significance.csv, curves.png, tradeoff.png,\n"
            "attention_<config>_<i>.png and DIR/archive/\n");
}

/* --budget steps=N | epochs=N | hours=H; returns 0, or 2 with a message. */
static int parse_budget(const char *s, CompareOpts *c) {
    static const struct { const char *key; int kind; } kinds[] = {
        {"steps=", BUDGET_STEPS}, {"epochs=", BUDGET_EPOCHS}, {"hours=", BUDGET_HOURS}};
    for (int k = 0; k < 3; k++) {
        size_t kl = strlen(kinds[k].key);
        if (strncmp(s, kinds[k].key, kl)) continue;
        char *end;
        errno = 0;
        double v = strtod(s + kl, &end);
        int whole = kinds[k].kind != BUDGET_HOURS;
        if (end == s + kl || *end || errno || !(v > 0) || v > 1e9 || (whole && v != floor(v)))
            break;
        c->budget_kind = kinds[k].kind;
        c->budget = v;
        snprintf(c->budget_tag, sizeof c->budget_tag, "%.*s%g", (int)kl - 1, kinds[k].key, v);
        return 0;
    }
    fprintf(stderr, "trainer compare: --budget %s: give steps=N or epochs=N (a positive whole "
            "number) or hours=H (a positive number)\n", s);
    return 2;
}

int cmd_compare(int argc, char **argv) {
    CompareOpts o;
    CliTests tests;
    Err err;
    Compare *c = NULL;
    unsigned long long sent[ARCHIVE_MAX_MAPS] = {0, 1, 2}, seeds[COMPARE_MAX_SEEDS];
    int sentences[ARCHIVE_MAX_MAPS], nsent = 3, rc = 2, alpha_set = 0;
    memset(&o, 0, sizeof o);
    memset(&tests, 0, sizeof tests);
    o.out_dir = "compare";
    o.device = -1;
    o.beam = (DecodeOpts){.beam = 5, .len_penalty = 1.0f};
    o.echo = stdout;
    const char **args = xcalloc((size_t)(argc > 0 ? argc : 1), sizeof(char *));
    for (int i = 0; i < argc; i++) {
        int d = parse_decode_arg(argc, argv, &i, &o.beam, &alpha_set, "compare");
        if (d == 2) goto done;
        if (d == 1) continue;
        d = cli_test_arg(argc, argv, &i, &tests, "compare");
        if (d == 2) goto done;
        if (d == 1) continue;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            rc = 0;
            goto done;
        } else if (!strcmp(argv[i], "--out") && i + 1 < argc) {
            o.out_dir = argv[++i];
            if (!*o.out_dir) {
                fprintf(stderr, "trainer compare: --out needs a folder name\n");
                goto done;
            }
        } else if (!strcmp(argv[i], "--sentences") && i + 1 < argc) {
            if (cli_parse_numbers(argv[++i], sent, ARCHIVE_MAX_MAPS, &nsent, 100000000,
                                  "compare --sentences"))
                goto done;
        } else if (!strcmp(argv[i], "--device") && i + 1 < argc) {
            if (cli_device_arg(argv[++i], &o.device, "compare")) goto done;
        } else if (!strcmp(argv[i], "--baseline") && i + 1 < argc) {
            o.baseline = argv[++i];
        } else if (!strcmp(argv[i], "--budget") && i + 1 < argc) {
            if (parse_budget(argv[++i], &o)) goto done;
        } else if (!strcmp(argv[i], "--seeds") && i + 1 < argc) {
            if (cli_parse_numbers(argv[++i], seeds, COMPARE_MAX_SEEDS, &o.nseeds, UINT64_MAX,
                                  "compare --seeds"))
                goto done;
            o.seeds = seeds;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "trainer compare: unknown or incomplete argument '%s'\n", argv[i]);
            usage(stderr);
            goto done;
        } else {
            args[o.nruns++] = argv[i];
        }
    }
    if (!alpha_set) o.beam.len_penalty = 1.0f; /* the documented default, also for --beam 1 */
    if (o.nruns == 0) {
        fprintf(stderr, "trainer compare: give at least one RUN (an archive, a run folder or a "
                "config .ini)\n");
        usage(stderr);
        goto done;
    }
    if (cli_tests_done(&tests, "compare")) goto done;
    for (int k = 0; k < nsent; k++) sentences[k] = (int)sent[k];
    o.runs = args, o.sentences = sentences, o.nsentences = nsent;
    o.tests = tests.spec, o.ntests = tests.nsrc;
    if (compare_prepare(&o, &c, &err)) goto fail; /* exit 2: the command line's */
    rc = 1; /* from here on a problem is a failure */
    if (compare_write(c, &err)) goto fail;
    printf("wrote %s/compare.md, %s/compare.csv and the plots in %s; the runs' archives are in "
           "%s/archive\n", o.out_dir, o.out_dir, o.out_dir, o.out_dir);
    rc = 0;
    goto done;
fail:
    fprintf(stderr, "trainer compare: %s\n", err.msg);
done:
    compare_free(c);
    free(args);
    return rc;
}
