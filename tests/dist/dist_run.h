/* dist_run.h — helpers of the tests that start the trainer under mpirun (tests/dist/test_*.c,
 * label dist): the mpirun command line around tr_train_argv (tests/trainer_run.h), and reading
 * rank pids from the trainer's start-up line. Header-only (static functions).
 *
 * $MPIEXEC is the launcher (CTest sets it to CMake's MPIEXEC_EXECUTABLE), else "mpirun". CTest
 * also sets OpenMPI's allow-run-as-root variables for these tests only. Every rank runs one
 * thread (train.threads = 1, as tr_train_argv sets).
 */
#ifndef TRAINER_TESTS_DIST_RUN_H
#define TRAINER_TESTS_DIST_RUN_H

#include "trainer_run.h"

/* A path kept across many tr_fmt calls (tr_fmt's buffers are a ring of 32): char var[4096]. */
#define DR_PATH(var, ...)      \
    char var[4096];            \
    snprintf(var, sizeof var, __VA_ARGS__)

static __attribute__((unused)) const char *dr_mpiexec(void) {
    const char *m = getenv("MPIEXEC");
    return m && *m ? m : "mpirun";
}

/* argv of `mpirun --oversubscribe [extra...] -np N trainer train <tiny config on work's slices,
 * save_dir>`; extra is a NULL-terminated list of mpirun options (or NULL). Append more trainer
 * options with tr_arg. */
static __attribute__((unused)) void dr_train_argv(TrArgv *a, int np, const char *const *extra,
                                                  const char *work, const char *save_dir) {
    TrArgv t = {{0}, 0};
    tr_train_argv(&t, work, save_dir);
    a->n = 0;
    tr_arg(a, "%s", dr_mpiexec());
    tr_arg(a, "--oversubscribe");
    for (int i = 0; extra && extra[i]; i++) tr_arg(a, "%s", extra[i]);
    tr_arg(a, "-np");
    tr_arg(a, "%d", np);
    for (int i = 0; i < t.n; i++) tr_arg(a, "%s", t.v[i]);
    tr_argv_free(&t);
}

/* The pid of rank r in the trainer's start-up line ("world: 2 ranks on 1 host: vm [0: pid 12,
 * 1: pid 13]; ..."), or -1 when the log has no such line yet. */
static __attribute__((unused)) long dr_rank_pid(const char *log, int r) {
    char *t = test_read_file(log, NULL);
    if (!t) return -1;
    long pid = -1;
    const char *w = strstr(t, "world: ");
    if (w) {
        char pat[32];
        snprintf(pat, sizeof pat, "%d: pid ", r);
        const char *eol = strchr(w, '\n');
        for (const char *p = w; (p = strstr(p, pat)) && (!eol || p < eol); p++)
            if (p[-1] == '[' || p[-1] == ' ') {
                pid = strtol(p + strlen(pat), NULL, 10);
                break;
            }
    }
    free(t);
    return pid;
}

#endif
