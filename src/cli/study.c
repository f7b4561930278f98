/* study.c — `trainer study STUDY.ini`: a comparison that accumulates run by run, on whatever
 * machines are at hand, and reports from the runs' archives alone (study/study.h: the
 * plan's format, what runs where, and what is written).
 *
 *   trainer study STUDY.ini [--jobs N] [--only GLOBS] [--status] [--report] [--prepare]
 *                           [--device cpu|cuda]
 *
 * --jobs N runs N at a time (default 1), one thread each; --only GLOBS trains, or lists with
 * --status, only the runs whose names (<config>_s<seed>) match one of the comma-separated shell
 * globs (repeatable; study_only), and the report still covers every archive; --status lists the
 * runs archived, running and missing, what the configs change in their recipes, and the time
 * left with N at a time (default: this machine's CPUs); --report writes the report from the
 * archives there are, training nothing; --prepare trains the plan's shared SentencePiece model
 * when it is missing and checks the plan, training no run; --device cuda trains and decodes the
 * missing runs on the GPU.
 * Exit codes: 2 for a bad command line (--only with --report or --prepare, a glob that matches
 * no run) or plan (a config that does not validate with the plan's settings included, a table
 * whose configs set different data.concat, a test file that cannot be read), 1 when an archive
 * or a run folder to resume holds another SentencePiece model than the plan's, a run fails to
 * train or archive or the report fails, 0 otherwise.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "study/study.h"

static void usage(FILE *f) {
    fprintf(f, "usage: trainer study STUDY.ini [--jobs N] [--only GLOBS] [--status] [--report] "
               "[--prepare] [--device cpu|cuda]\n"
               "  trains every run of the plan that has no archive yet (N at a time, one thread "
               "each),\n"
               "  archives each as it ends, then writes the report (README.md) in the plan's "
               "folder\n"
               "  --jobs N           runs at a time (default 1)\n"
               "  --only GLOBS       train (or, with --status, list) only the runs whose names\n"
               "                     (<config>_s<seed>) match a comma-separated shell glob,\n"
               "                     e.g. '*_k64_s1,flash_*'; repeatable; the report still\n"
               "                     covers every archive\n"
               "  --status           list the runs archived, running and missing, and the time "
               "left\n"
               "                     at --jobs N (default: this machine's CPUs)\n"
               "  --report           write the report from the archives there are; train "
               "nothing\n"
               "  --prepare          train the plan's shared SentencePiece model if it is "
               "missing,\n"
               "                     check the plan and its archives; train no run\n"
               "  --device cpu|cuda  where the missing runs train (default: their configs')\n"
               "the plan's format: src/study/study.h, or docs/study.md\n");
}

int cmd_study(int argc, char **argv) {
    const char *file = NULL;
    int jobs = 0, only_status = 0, only_report = 0, only_prepare = 0, device = -1;
    char only[512] = "";
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--jobs") && i + 1 < argc) {
            char *end;
            long j = strtol(argv[++i], &end, 10);
            if (*end || j < 1 || j > 64) {
                fprintf(stderr, "trainer study: --jobs %s: give 1 to 64\n", argv[i]);
                return 2;
            }
            jobs = (int)j;
        } else if (!strcmp(argv[i], "--only") && i + 1 < argc) {
            size_t have = strlen(only);
            if (snprintf(only + have, sizeof only - have, "%s%s", have ? "," : "", argv[++i]) >=
                (int)(sizeof only - have)) {
                fprintf(stderr, "trainer study: --only: the globs are longer than %zu "
                        "characters\n", sizeof only - 1);
                return 2;
            }
        } else if (!strcmp(argv[i], "--status")) {
            only_status = 1;
        } else if (!strcmp(argv[i], "--report")) {
            only_report = 1;
        } else if (!strcmp(argv[i], "--prepare")) {
            only_prepare = 1;
        } else if (!strcmp(argv[i], "--device") && i + 1 < argc) {
            if (cli_device_arg(argv[++i], &device, "study")) return 2;
        } else if (argv[i][0] == '-' || file) {
            fprintf(stderr, "trainer study: unknown or incomplete argument '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        } else {
            file = argv[i];
        }
    }
    if (!file) {
        fprintf(stderr, "trainer study: give the plan, e.g. experiments/attention-multi30k/"
                "study.ini\n");
        usage(stderr);
        return 2;
    }
    if (only[0] && (only_report || only_prepare)) {
        fprintf(stderr, "trainer study: --only chooses the runs to train or list; %s covers "
                "the whole plan, so give it without --only\n",
                only_report ? "--report" : "--prepare");
        return 2;
    }
    Study *s = NULL;
    Err err;
    int rc = 2, failed = 0, stopped = 0;
    if (study_load(file, device, !only_status, &s, &err)) goto fail;
    if (only[0] && study_only(s, only, &err)) goto fail;
    if (only_status) {
        if (!jobs) { /* the estimate for as many runs at a time as the machine has CPUs */
            long n = sysconf(_SC_NPROCESSORS_ONLN);
            jobs = n < 1 ? 1 : n > 64 ? 64 : (int)n;
        }
        study_status(s, jobs, stdout);
        rc = 0;
        goto done;
    }
    rc = 1;
    if (only_prepare) {
        if (study_prepare(s, &err)) goto fail;
        rc = 0;
        goto done;
    }
    if (!only_report && study_train(s, jobs ? jobs : 1, &failed, &stopped, &err)) goto fail;
    if (stopped) {
        fprintf(stderr, "trainer study: stopped by a signal; the runs resume from their "
                "last.ckpt at the next start\n");
        goto done;
    }
    if (failed) fprintf(stderr, "trainer study: %d run(s) failed (above)\n", failed);
    if (study_report(s, &err)) goto fail;
    rc = failed ? 1 : 0;
    goto done;
fail:
    fprintf(stderr, "trainer study: %s\n", err.msg);
done:
    study_free(s);
    return rc;
}
