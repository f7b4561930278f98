/* archive.c — `trainer archive RUN_DIR --out DIR`: a trained run's archive (study/archive.h), the
 * small folder from which `trainer compare` and `trainer study` report on the run without its
 * checkpoints.
 *
 *   trainer archive RUN_DIR --out DIR [--test-src FILE --test-tgt FILE]... [--beam K]
 *                   [--len-penalty A] [--sentences i,j,k] [--device cpu|cuda] [--threads N]
 *                   [--config FILE] [--name NAME]
 *
 * RUN_DIR is a run folder written by `trainer train` (its train.save_dir). The test sets are
 * the pairs of --test-src/--test-tgt, or the run config's data.test_src/test_tgt; each is
 * translated greedily and with beam K (default 5, α default 1.0). --sentences (default 0,1,2)
 * names the sentences of the first test set whose attention the archive keeps. --threads
 * (default: the run's train.threads) and --device (default: the checkpoint's) choose where it
 * decodes. --config names the config file the run was trained from, for its card; --name
 * replaces the run's name (run.name) in the card.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "study/archive.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: trainer archive RUN_DIR --out DIR [--test-src FILE --test-tgt FILE]...\n"
            "                       [--beam K] [--len-penalty A] [--sentences i,j,k]\n"
            "                       [--device cpu|cuda] [--threads N] [--config FILE] "
            "[--name NAME]\n"
            "  RUN_DIR            a run folder written by trainer train (its train.save_dir)\n"
            "  --out DIR          the archive folder (an archive already there is replaced)\n"
            "  --test-src/--test-tgt  a test set to translate, repeatable (default: the run's\n"
            "                     data.test_src and data.test_tgt)\n"
            "  --beam K           beam size of the second decoding (1..64, default 5)\n"
            "  --len-penalty A    length penalty alpha for the beam (0..10, default 1.0)\n"
            "  --sentences i,j,k  sentences of the first test set whose attention is kept\n"
            "                     (default 0,1,2)\n"
            "  --device cpu|cuda  device to decode on (default: the checkpoint's)\n"
            "  --threads N        CPU threads to decode with (default: the run's train.threads)\n"
            "  --config FILE      the config file the run was trained from, for its run card\n"
            "  --name NAME        the run's name in the archive (default: its run.name)\n"
            "writes DIR/run.json, config.ini, metrics.jsonl, test/NAME.{ref,greedy,beamK} and\n"
            "attention.json; no checkpoint\n");
}

int cmd_archive(int argc, char **argv) {
    const char *run = NULL, *out = NULL;
    CliTests tests = {0};
    ArchiveOpts o = {0};
    unsigned long long sent[ARCHIVE_MAX_MAPS] = {0, 1, 2};
    int nsent = 3, alpha_set = 0;
    o.beam = (DecodeOpts){.beam = 5, .len_penalty = 1.0f};
    o.device = -1;
    for (int i = 0; i < argc; i++) {
        int d = parse_decode_arg(argc, argv, &i, &o.beam, &alpha_set, "archive");
        if (d == 2) return 2;
        if (d == 1) continue;
        d = cli_test_arg(argc, argv, &i, &tests, "archive");
        if (d == 2) return 2;
        if (d == 1) continue;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--out") && i + 1 < argc) {
            out = argv[++i];
        } else if (!strcmp(argv[i], "--sentences") && i + 1 < argc) {
            if (cli_parse_numbers(argv[++i], sent, ARCHIVE_MAX_MAPS, &nsent, 100000000,
                                  "--sentences"))
                return 2;
        } else if (!strcmp(argv[i], "--device") && i + 1 < argc) {
            if (cli_device_arg(argv[++i], &o.device, "archive")) return 2;
        } else if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
            char *end;
            long t = strtol(argv[++i], &end, 10);
            if (*end || t < 1 || t > 4096) {
                fprintf(stderr, "trainer archive: --threads %s: give 1 to 4096\n", argv[i]);
                return 2;
            }
            o.threads = (int)t;
        } else if (!strcmp(argv[i], "--config") && i + 1 < argc) {
            o.config_file = argv[++i];
        } else if (!strcmp(argv[i], "--name") && i + 1 < argc) {
            o.name = argv[++i];
        } else if (argv[i][0] == '-' || run) {
            fprintf(stderr, "trainer archive: unknown or incomplete argument '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        } else {
            run = argv[i];
        }
    }
    if (!alpha_set) o.beam.len_penalty = 1.0f;
    if (!run || !out || !*out) {
        fprintf(stderr, "trainer archive: give the run folder and --out DIR\n");
        usage(stderr);
        return 2;
    }
    if (cli_tests_done(&tests, "archive")) return 2;
    int sentences[ARCHIVE_MAX_MAPS];
    for (int k = 0; k < nsent; k++) sentences[k] = (int)sent[k];
    o.tests = tests.spec, o.ntests = tests.nsrc;
    o.sentences = sentences, o.nsentences = nsent;
    Err err;
    if (archive_run(run, out, &o, &err)) {
        fprintf(stderr, "trainer archive: %s\n", err.msg);
        return 1;
    }
    printf("archived %s into %s\n", run, out);
    return 0;
}
