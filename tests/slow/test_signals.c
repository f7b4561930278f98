/* test_signals.c — SIGTERM and SIGINT finish the current step, save last.ckpt and exit with
 * status 0 and a message; `--resume` then continues exactly; a second signal stops at once.
 *
 * Tiny config, 2000/100 Multi30k pairs, one thread, log_every = 1.
 *   0. A reference run, uninterrupted, to train.max_steps = 60 (save_every = 0).
 *   1. For SIGTERM and for SIGINT: a fresh run (save_every = 0, so only the signal saves) is sent
 *      the signal once metrics.jsonl shows step 5. It must exit 0 within 60 s, its last line
 *      "<SIGNAL>: finished step N, saved <run>/last.ckpt; continue with --resume", last.ckpt must
 *      load at step N (the last step logged), no temporary file may be left. `--resume` to
 *      max_steps = N + 8 must say "resumed from ... step N", exit 0, and log steps N+1..N+8 with
 *      the reference run's losses bit for bit; every step 1..N+8 logged exactly once (for
 *      SIGINT, after a cut-short line was appended to metrics.jsonl, which the resume drops).
 *   2. Two SIGINTs in a row (save_every = 5, sent after step 12): the second stops the process at
 *      once (status 128 + SIGINT) unless the save of the first was already done (status 0);
 *      either way last.ckpt loads (step >= 10) and --resume continues to step 25.
 *   3. SIGTERM right after the last step of epoch 1 lands in its validation: the run finishes
 *      the validation, saves the epoch's checkpoints, exits 0 ("SIGTERM: finished epoch 1 (step
 *      NB), saved ..."), and --resume starts epoch 2 at batch 0 (a signal that comes later, in
 *      epoch 2, is accepted too, with the step message).
 */
#include "trainer_run.h"
#include "train/checkpoint.h"

#define TIMEOUT 120.0
#define REF_STEPS 60

static const char *g_work;

static void train_argv(TrArgv *a, const char *dir, int save_every, long max_steps, int resume) {
    tr_train_argv(a, g_work, dir);
    tr_set(a, "train.save_every=%d", save_every);
    tr_set(a, "train.max_steps=%ld", max_steps);
    tr_set(a, "train.max_epochs=10");
    if (resume) tr_arg(a, "--resume");
}

/* The highest step in metrics.jsonl (0 if none). */
static long last_logged_step(const char *dir) {
    TrMetrics m;
    long top = 0;
    if (tr_metrics_read(tr_fmt("%s/metrics.jsonl", dir), &m) == 0) {
        for (long i = 0; i < m.n; i++)
            if (m.steps[i].step > top) top = m.steps[i].step;
        tr_metrics_free(&m);
    }
    return top;
}

/* Starts a run and returns its pid once metrics.jsonl shows at least step `at` (-1 if the run
 * ended or timed out first). */
static pid_t start_and_wait(TrArgv *a, const char *dir, const char *log, long at) {
    pid_t pid = tr_spawn(a->v, log, 0, NULL);
    double t_end = tr_now() + 60;
    while (tr_now() < t_end) {
        int status;
        if (waitpid(pid, &status, WNOHANG) == pid) {
            EXPECT(0, "the run ended (status 0x%x) before step %ld", status, at);
            tr_print_tail(log, 10);
            return -1;
        }
        if (last_logged_step(dir) >= at) return pid;
        tr_sleep(0.002);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    EXPECT(0, "step %ld not reached within 60 s", at);
    return -1;
}

int main(void) {
    double t_start;
    char *work = tr_begin("test_signals", &t_start);
    g_work = work;

    /* 0. reference losses */
    const char *ref_dir = test_strdup(tr_fmt("%s/ref", g_work));
    TrArgv a;
    train_argv(&a, ref_dir, 0, REF_STEPS, 0);
    int rc = tr_run(a.v, tr_fmt("%s/ref.log", g_work), NULL, TIMEOUT);
    tr_argv_free(&a);
    EXPECT(rc == 0, "reference run: exit %d", rc);
    TrMetrics ref;
    EXPECT(tr_metrics_read(tr_fmt("%s/metrics.jsonl", ref_dir), &ref) == 0 && ref.n == REF_STEPS,
           "reference metrics: %ld steps", ref.n);

    /* 1. one signal */
    static const int sigs[] = {SIGTERM, SIGINT};
    static const char *const names[] = {"SIGTERM", "SIGINT"};
    for (int k = 0; k < 2; k++) {
        const char *dir = test_strdup(tr_fmt("%s/%s", g_work, names[k]));
        const char *last = test_strdup(tr_fmt("%s/last.ckpt", dir));
        const char *log = test_strdup(tr_fmt("%s/%s.log", g_work, names[k]));
        train_argv(&a, dir, 0, 0, 0);
        pid_t pid = start_and_wait(&a, dir, log, 5);
        tr_argv_free(&a);
        if (pid < 0) continue;
        double t0 = tr_now();
        kill(pid, sigs[k]);
        rc = tr_wait(pid, 60);
        long n = tr_ckpt_step(last, NULL, 0);
        long logged = last_logged_step(dir);
        const char *want = tr_fmt("%s: finished step %ld, saved %s; continue with --resume",
                                  names[k], n, last);
        printf("%s: exit %d after %.2f s, last.ckpt at step %ld, metrics to step %ld: %s\n",
               names[k], rc, tr_now() - t0, n, logged, tr_last_line(log));
        EXPECT(rc == 0, "%s: exit %d, expected 0", names[k], rc);
        EXPECT(n >= 5 && n == logged, "%s: last.ckpt at step %ld, last logged step %ld",
               names[k], n, logged);
        EXPECT(!strcmp(tr_last_line(log), want), "%s: last line '%s', expected '%s'", names[k],
               tr_last_line(log), want);
        EXPECT(test_count_temp_files(dir, 0) == 0, "%s: a temporary file was left", names[k]);
        if (rc != 0 || n < 5) {
            tr_print_tail(log, 10);
            continue;
        }
        long target = n + 8;
        EXPECT(target <= REF_STEPS, "%s: stopped too late (step %ld)", names[k], n);
        if (sigs[k] == SIGINT) { /* a line cut short (as by a crash): the resume must drop it */
            FILE *f = fopen(tr_fmt("%s/metrics.jsonl", dir), "a");
            EXPECT(f && fputs("{\"type\": \"train\", \"epoch\": 1, \"st", f) >= 0 &&
                       fclose(f) == 0, "cannot append to metrics.jsonl");
        }
        train_argv(&a, dir, 0, target, 1);
        const char *rlog = tr_fmt("%s/%s_resume.log", g_work, names[k]);
        rc = tr_run(a.v, rlog, NULL, TIMEOUT);
        tr_argv_free(&a);
        EXPECT(rc == 0 && tr_file_contains(rlog, tr_fmt("resumed from %s: epoch 1, step %ld",
                                                         last, n)),
               "%s: --resume: exit %d", names[k], rc);
        EXPECT(tr_ckpt_step(last, NULL, 0) == target,
               "%s: after --resume last.ckpt should be at step %ld", names[k], target);
        TrMetrics m;
        EXPECT(tr_metrics_read(tr_fmt("%s/metrics.jsonl", dir), &m) == 0 && m.bad_lines == 0,
               "%s: metrics.jsonl", names[k]);
        long same = 0, once = 0;
        for (long s = 1; s <= target; s++) {
            long seen = 0;
            for (long i = 0; i < m.n; i++) seen += m.steps[i].step == s;
            once += seen == 1;
            const TrStep *x = tr_metrics_step(&m, s), *y = tr_metrics_step(&ref, s);
            same += x && y && !strcmp(x->loss, y->loss);
        }
        printf("%s: resumed to step %ld: %ld of %ld steps logged once, %ld with the reference "
               "loss\n", names[k], target, once, target, same);
        EXPECT(once == target && same == target, "%s: %ld steps logged once, %ld equal to the "
               "reference, of %ld", names[k], once, same, target);
        tr_metrics_free(&m);
    }

    /* 2. two signals in a row */
    {
        const char *dir = test_strdup(tr_fmt("%s/twice", g_work));
        const char *last = test_strdup(tr_fmt("%s/last.ckpt", dir));
        const char *log = test_strdup(tr_fmt("%s/twice.log", g_work));
        train_argv(&a, dir, 5, 0, 0);
        pid_t pid = start_and_wait(&a, dir, log, 12);
        tr_argv_free(&a);
        if (pid > 0) {
            kill(pid, SIGINT);
            tr_sleep(0.003); /* two signals sent at once would merge into one */
            kill(pid, SIGINT);
            rc = tr_wait(pid, 60);
            long n = tr_ckpt_step(last, NULL, 0);
            printf("two SIGINTs: exit %d, last.ckpt at step %ld, %d temporary file(s): %s\n", rc, n,
                   test_count_temp_files(dir, 0), tr_last_line(log));
            EXPECT(rc == 128 + SIGINT || rc == 0, "two SIGINTs: exit %d", rc);
            EXPECT(n >= 10, "two SIGINTs: last.ckpt at step %ld", n);
            train_argv(&a, dir, 5, 25, 1);
            rc = tr_run(a.v, tr_fmt("%s/twice_resume.log", g_work), NULL, TIMEOUT);
            tr_argv_free(&a);
            EXPECT(rc == 0 && tr_ckpt_step(last, NULL, 0) == 25 &&
                       test_count_temp_files(dir, 0) == 0,
                   "two SIGINTs: --resume to 25: exit %d", rc);
        }
    }
    /* 3. SIGTERM during the validation at the end of epoch 1 */
    {
        const char *dir = test_strdup(tr_fmt("%s/val", g_work));
        const char *last = test_strdup(tr_fmt("%s/last.ckpt", dir));
        const char *log = test_strdup(tr_fmt("%s/val.log", g_work));
        train_argv(&a, dir, 0, 0, 0);
        pid_t pid = start_and_wait(&a, dir, log, 1);
        tr_argv_free(&a);
        long nb = 0;
        if (pid > 0) { /* batches per epoch, from "epoch 1 step 1 (1/NB)" */
            char *t = test_read_file(log, NULL);
            const char *p = t ? strstr(t, "(1/") : NULL;
            nb = p ? strtol(p + 3, NULL, 10) : 0;
            free(t);
            EXPECT(nb > 1, "cannot read the number of batches from %s", log);
        }
        if (pid > 0 && nb > 1) {
            const char *end_line = tr_fmt("(%ld/%ld)", nb, nb);
            double t_end = tr_now() + 60;
            while (!tr_file_contains(log, end_line) && tr_now() < t_end) tr_sleep(0.002);
            kill(pid, SIGTERM);
            rc = tr_wait(pid, 60);
            long n = tr_ckpt_step(last, NULL, 0);
            const char *ll = tr_last_line(log);
            int in_val = strstr(ll, tr_fmt("SIGTERM: finished epoch 1 (step %ld), saved %s", nb,
                                           last)) != NULL;
            printf("SIGTERM after the last step of epoch 1 (%ld): exit %d, last.ckpt at step "
                   "%ld, %s: %s\n", nb, rc, n, in_val ? "during the validation" : "later", ll);
            EXPECT(rc == 0 && (in_val || strstr(ll, "SIGTERM: finished step")),
                   "SIGTERM at the epoch's end: exit %d, '%s'", rc, ll);
            EXPECT(!in_val || (n == nb && tr_file_contains(log, "epoch 1 done")),
                   "a stop during the validation should save step %ld after it (got %ld)", nb, n);
            train_argv(&a, dir, 0, nb + 5, 1);
            const char *rlog = tr_fmt("%s/val_resume.log", g_work);
            rc = tr_run(a.v, rlog, NULL, TIMEOUT);
            tr_argv_free(&a);
            EXPECT(rc == 0 && tr_ckpt_step(last, NULL, 0) == nb + 5 &&
                       (!in_val || tr_file_contains(rlog, tr_fmt("epoch 2, step %ld, batch 0",
                                                                 nb))),
                   "--resume after a stop at the epoch's end: exit %d", rc);
        }
    }
    tr_metrics_free(&ref);
    return tr_finish("test_signals", t_start);
}
