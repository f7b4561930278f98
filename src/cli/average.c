/* average.c — `trainer average --out FILE CKPT...`: checkpoint averaging (Vaswani et al. 2017
 * §6.1), the parameters of several checkpoints of one model averaged element-wise into FILE
 * (train/checkpoint.h checkpoint_average: a weights-only checkpoint, with the config and training
 * state of the last CKPT). FILE is written atomically; `trainer eval --checkpoint FILE` then scores it.
 * Exit codes: 0 written (or --help: the usage on stdout); 1 a checkpoint that does not load,
 * checkpoints of different models, or a write error; 2 a bad command line. Source: — (fairseq's
 * scripts/average_checkpoints.py, the idea).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "train/checkpoint.h"

int cmd_average(int argc, char **argv) {
    const char *out = NULL;
    const char **paths = xcalloc((size_t)argc + 1, sizeof *paths);
    int n = 0;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage:\n");
            cli_average_usage(stdout);
            free(paths);
            return 0;
        }
        if (!strcmp(argv[i], "--out")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "trainer average: --out needs a file name\n");
                free(paths);
                return 2;
            }
            out = argv[++i];
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            fprintf(stderr, "trainer average: unknown option '%s'\n", argv[i]);
            cli_usage(stderr);
            free(paths);
            return 2;
        } else {
            paths[n++] = argv[i];
        }
    }
    if (!out || n < 1) {
        fprintf(stderr, "trainer average: give --out FILE and at least one checkpoint, e.g. "
                        "trainer average --out avg.ckpt run/epoch9.ckpt run/epoch10.ckpt (the "
                        "epoch checkpoints train.keep_checkpoints keeps)\n");
        free(paths);
        return 2;
    }
    for (int i = 0; i < n; i++)
        if (!strcmp(paths[i], out)) {
            fprintf(stderr, "trainer average: --out %s is also an input; write the average to "
                            "another file\n", out);
            free(paths);
            return 2;
        }
    Err err;
    if (checkpoint_average(paths, n, out, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        free(paths);
        return 1;
    }
    printf("trainer average: %s = mean of %d checkpoint%s\n", out, n, n == 1 ? "" : "s");
    free(paths);
    return 0;
}
