/* test_concurrent_eval.c — `trainer eval` on a run's last.ckpt, over and over while the run
 * replaces that file every second step, never fails to load it (docs/design.md §8: a checkpoint is
 * replaced by rename, so a reader sees the old file or the new one, never a mixture).
 *
 * Tiny config, 2000/100 Multi30k pairs, one thread, train.save_every = 2, max_steps = 1000 (an
 * upper bound). Once last.ckpt exists, the test alternates: `trainer eval --checkpoint last.ckpt
 * --src <20 val lines> --ref ... --json` (must exit 0 with a JSON last line), and an in-process
 * checkpoint_load of the same path (must succeed, its step never going backwards). After 8 of
 * each it stops the run with SIGTERM (the run finishes its step, saves last.ckpt and exits 0), so
 * the test lasts as long as its loads on any machine, not as long as a fixed run. It requires 8
 * of each while the run was saving; finally the run must have exited 0 and last.ckpt must hold
 * its last step: at least the last one seen, or 1000 when the run ended by itself first.
 */
#include "trainer_run.h"
#include "train/checkpoint.h"

#define MAX_STEPS 1000 /* an upper bound: the test stops the run once it has WANT loads */
#define WANT 8

static char *work; /* the test's folder (tr_begin) */

int main(void) {
    double t_start;
    work = tr_begin("test_concurrent_eval", &t_start);
    const char *dir = test_strdup(tr_fmt("%s/run", work));
    const char *last = test_strdup(tr_fmt("%s/last.ckpt", dir));
    const char *src = test_strdup(tr_fmt("%s/eval.de", work)), *ref = test_strdup(tr_fmt("%s/eval.en", work));
    EXPECT(tr_gz_head(TR_DATA "/val.de.gz", src, 20) == 20 &&
               tr_gz_head(TR_DATA "/val.en.gz", ref, 20) == 20, "cannot write the eval slice");

    TrArgv a;
    tr_train_argv(&a, work, dir);
    tr_set(&a, "train.save_every=2");
    tr_set(&a, "train.max_steps=%d", MAX_STEPS);
    tr_set(&a, "train.max_epochs=10");
    const char *tlog = test_strdup(tr_fmt("%s/train.log", work));
    pid_t trainer = tr_spawn(a.v, tlog, 0, NULL);
    tr_argv_free(&a);

    int trainer_rc = -100, evals = 0, evals_ok = 0, loads = 0, loads_ok = 0, second = 0;
    long prev_step = 0, first_step = -1, top_step = 0;
    int stopped = 0; /* SIGTERM sent */
    double t_end = tr_now() + 300;
    while (tr_now() < t_end) {
        int status;
        if (waitpid(trainer, &status, WNOHANG) == trainer) {
            trainer_rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
            break;
        }
        if (!tr_exists(last)) {
            tr_sleep(0.01);
            continue;
        }
        if (!second++) { /* a second run in the same folder is refused while this one trains */
            TrArgv a2;
            tr_train_argv(&a2, work, dir);
            const char *l2 = test_strdup(tr_fmt("%s/second.log", work));
            int rc2 = tr_run(a2.v, l2, NULL, 60);
            tr_argv_free(&a2);
            EXPECT(rc2 == 1 && tr_file_contains(l2, "is already training in") &&
                       tr_file_contains(l2, "set another train.save_dir"),
                   "a second trainer in the same folder: exit %d, expected 1 and a message "
                   "naming the folder", rc2);
            if (rc2 != 1) tr_print_tail(l2, 6);
            else printf("a second trainer in the same folder was refused: %s\n", tr_last_line(l2));
        }
        /* in process */
        Model m;
        Config cfg;
        Spm *spm;
        TrainState st;
        Err err;
        loads++;
        if (checkpoint_load(last, &m, &cfg, &spm, &st, -1, &err) == STATUS_OK) {
            loads_ok++;
            EXPECT(st.step >= prev_step, "last.ckpt went back from step %ld to %ld", prev_step,
                   st.step);
            prev_step = st.step;
            if (first_step < 0) first_step = st.step;
            top_step = st.step;
            model_free(&m), spm_free(spm);
        } else {
            EXPECT(0, "in-process load %d of %s failed: %s", loads, last, err.msg);
        }
        /* a trainer eval process */
        TrArgv e = {0};
        tr_eval_argv(&e, last, src, ref);
        const char *elog = tr_fmt("%s/eval%03d.log", work, evals);
        int rc = tr_run(e.v, elog, NULL, 60);
        tr_argv_free(&e);
        evals++;
        static const char *const keys[] = {"bleu", "chrf", "ppl", "sentences", NULL};
        char why[512] = "";
        int ok = rc == 0 && tr_json_object_has_numbers(tr_last_line(elog), keys, why, sizeof why);
        EXPECT(ok, "eval %d: exit %d %s", evals, rc, why);
        if (!ok) tr_print_tail(elog, 6);
        evals_ok += ok;
        if (evals == WANT) kill(trainer, SIGTERM), stopped = 1; /* loads ≥ evals: one each per turn */
    }
    if (trainer_rc == -100) {
        kill(trainer, SIGKILL);
        waitpid(trainer, NULL, 0);
        EXPECT(0, "the run did not end within 300 s");
    }
    printf("while the run saved every 2 steps (steps %ld..%ld seen): %d/%d trainer eval loads "
           "succeeded, %d/%d in-process loads\n", first_step, top_step, evals_ok, evals, loads_ok,
           loads);
    EXPECT(trainer_rc == 0, "the run exited %d", trainer_rc);
    if (trainer_rc != 0) tr_print_tail(tlog, 10);
    EXPECT(evals >= WANT && loads >= WANT, "too few loads during the run (%d evals, %d loads): "
           "its %d steps ended first", evals, loads, MAX_STEPS);
    Model m;
    Config cfg;
    Spm *spm;
    TrainState st;
    Err err;
    err.msg[0] = 0;
    st.step = -1;
    int loaded = checkpoint_load(last, &m, &cfg, &spm, &st, -1, &err) == STATUS_OK;
    EXPECT(loaded && (stopped ? st.step >= top_step && st.step <= MAX_STEPS : st.step == MAX_STEPS),
           "final last.ckpt: step %ld (last seen %ld, %s) %s", st.step, top_step,
           stopped ? "stopped by SIGTERM" : "not stopped", err.msg);
    if (loaded) model_free(&m), spm_free(spm);
    return tr_finish("test_concurrent_eval", t_start);
}
