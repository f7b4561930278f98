/* train.c — `trainer [train] --config FILE [--set section.key=value]... [--resume]`: loads and
 * validates the config, then runs train_run (train/train.h). Under mpirun (`mpirun -np N
 * trainer train ...`) it starts the world of ranks first (dist/dist.h) and ends it after the
 * run; an error ends the rank without MPI_Finalize (mpirun then ends the job), its message
 * prefixed with the rank. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "core/revision.h"
#include "dist/dist.h"
#include "train/config.h"
#include "train/train.h"

static int train_main(int argc, char **argv, const char **who);

int cmd_train(int argc, char **argv) {
    Err err;
    if (dist_init(&argc, &argv, &err)) return fprintf(stderr, "trainer: %s\n", err.msg), 1;
    char who[64] = "trainer";
    if (dist_size() > 1) snprintf(who, sizeof who, "trainer (rank %d)", dist_rank());
    const char *w = who;
    int rc = train_main(argc, argv, &w);
    fflush(stdout);
    if (rc == 0) dist_finalize();
    else if (dist_size() > 1) _exit(rc); /* no MPI_Finalize: the others may still wait */
    return rc;
}

static int train_main(int argc, char **argv, const char **who) {
    const char *config = NULL;
    int resume = 0;
    Err err;
    Config cfg;
    config_defaults(&cfg);
    const char *sets[256];
    int nsets = 0;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--config") && i + 1 < argc) config = argv[++i];
        else if (!strcmp(argv[i], "--set") && i + 1 < argc) {
            if (nsets == 256) return fprintf(stderr, "trainer: too many --set\n"), 2;
            sets[nsets++] = argv[++i];
        } else if (!strncmp(argv[i], "--set=", 6)) sets[nsets++] = argv[i] + 6;
        else if (!strcmp(argv[i], "--resume")) resume = 1;
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            if (dist_rank() == 0) {
                cli_usage(stdout);
                config_print_keys(stdout);
            }
            return 0;
        } else {
            fprintf(stderr, "trainer train: unknown or incomplete argument '%s'\n", argv[i]);
            cli_usage(stderr);
            return 2;
        }
    }
    if (!config) {
        fprintf(stderr, "trainer train: --config FILE is required (e.g. configs/luong.ini)\n");
        return 2;
    }
    if (config_load(&cfg, config, &err)) return fprintf(stderr, "%s: %s\n", *who, err.msg), 2;
    for (int i = 0; i < nsets; i++)
        if (config_set(&cfg, sets[i], &err)) return fprintf(stderr, "%s: %s\n", *who, err.msg), 2;
    if (config_validate(&cfg, &err)) return fprintf(stderr, "%s: %s: %s\n", *who, config, err.msg), 2;
    if (dist_rank() == 0) printf("trainer %s, config %s\n", trainer_revision(), config);
    if (train_run(&cfg, resume, &err)) return fprintf(stderr, "%s: %s\n", *who, err.msg), 1;
    return 0;
}
