/* train.c — train_run, the training loop (train.h): epochs of planned batches, each optimizer
 * step (step.c) on this rank's shard of its batches, the progress and "train" metrics lines,
 * validations with early stopping and the checkpoints at their times, the limits (train.max_epochs,
 * max_steps, max_hours, patience, max_nonfinite) and the stop signals. The run is opened and
 * closed by run.c (run.h); its folder is rundir.h's, its metrics.jsonl runlog.h's. With N ranks
 * (dist/dist.h) every rank runs the loop on its shard of each batch, and rank 0 alone validates,
 * logs and saves while the others wait for its verdict (ranks.h). */
#include "train/train.h"

#include <fcntl.h>
#include <math.h>
#include <omp.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "core/machine.h"
#include "core/revision.h"
#include "dist/dist.h"
#include "dist/dist_nccl.h"
#include "eval/metrics.h"
#include "eval/translate.h"
#include "train/dist_check.h"
#include "train/optim.h"
#include "train/ranks.h"
#include "train/run.h"
#include "train/rundir.h"
#include "train/runlog.h"
#include "train/step.h"

/* SIGINT/SIGTERM: the loop finishes its step, saves last.ckpt and returns. A second signal
 * while that is pending stops the process at once (the default action; nothing is saved, the
 * last complete checkpoint stays). */
static volatile sig_atomic_t g_stop_signal = 0;
static void on_signal(int sig) {
    if (g_stop_signal) {
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    g_stop_signal = sig;
}

/* Installs on_signal for SIGINT and SIGTERM, run on an alternate stack (SA_ONSTACK): pushed onto
 * the stack of the code it interrupts, the handler's frame overwrote data that oneDNN's JIT
 * products keep below the stack pointer, and a SIGTERM that arrived during one corrupted the heap
 * (test_concurrent_eval under load: 4 runs in 30, none in 12 with TRAINER_CPU_GEMM=openblas).
 * Process-directed signals go to the main thread, which calls this. Errors: none (a failing
 * sigaltstack leaves the handler on the normal stack). */
static void install_stop_signals(void) {
    static void *alt; /* kept for the life of the process */
    if (!alt) {
        size_t n = 1 << 16;
        alt = xmalloc(n);
        stack_t ss = {.ss_sp = alt, .ss_size = n, .ss_flags = 0};
        sigaltstack(&ss, NULL);
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_ONSTACK | SA_RESTART;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

static const char *signal_name(int sig) {
    return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "a signal";
}

/* s seconds as "12m05s", or from an hour on "3h07m", into buf (n bytes). */
static void fmt_time(char *buf, size_t n, double s) {
    long t = (long)(s + 0.5);
    if (t >= 3600) snprintf(buf, n, "%ldh%02ldm", t / 3600, t / 60 % 60);
    else snprintf(buf, n, "%ldm%02lds", t / 60, t % 60);
}

/* Validation: teacher-forced perplexity and greedy BLEU/chrF on (up to val_max_sentences of)
 * the validation set; its examples joined (concat > 1) are scored as documents, the
 * separators left out of hypothesis and reference. */
static Status validate(Model *m, const Spm *spm, int max_sentences, int concat,
                       const Corpus *val, const Encoded *venc, double *ppl, double *bleu,
                       double *chrf, Err *err) {
    long n = val->n;
    if (max_sentences > 0 && max_sentences < n) n = max_sentences;
    Encoded sub = *venc;
    sub.n = n;
    if (eval_perplexity(m, &sub, ppl, NULL, err)) return STATUS_ERR;
    char **hyp = NULL;
    DecodeOpts greedy = {.beam = 1, .len_penalty = 0.0f};
    if (translate_lines(m, spm, (const char *const *)val->src, n, &greedy, &hyp, NULL, err))
        return STATUS_ERR;
    char **ref = val->tgt;
    if (concat > 1) { /* documents: the separators out of both sides */
        ref = xmalloc((size_t)n * sizeof *ref);
        for (long i = 0; i < n; i++) {
            int parts;
            char *doc = corpus_split_joined(hyp[i], &parts, NULL, 0);
            free(hyp[i]);
            hyp[i] = doc;
            ref[i] = corpus_split_joined(val->tgt[i], &parts, NULL, 0);
        }
    }
    BleuScore b = bleu_corpus((const char *const *)hyp, (const char *const *)ref, n);
    *bleu = b.score;
    *chrf = chrf_corpus((const char *const *)hyp, (const char *const *)ref, n);
    if (ref != val->tgt) free_lines(ref, n);
    printf("  e.g. src: %s\n       hyp: %s\n       ref: %s\n", val->src[0], hyp[0], val->tgt[0]);
    free_lines(hyp, n);
    return STATUS_OK;
}

/* Progress since the last log line. */
typedef struct {
    double loss, t; /* summed loss of the finite steps (nats); when the interval began, moved
                     * later by the time validations and checkpoints took within it */
    long tok, tokens_all, steps; /* their target tokens; every step's source + target tokens */
    double t_compute, t_sum; /* seconds of rank 0's forward + backward, and of the sums */
    long batches;        /* the steps' batches (train.accum_steps a step) */
} LogWindow;

/* Batch bi of the epoch's plan: this rank's shard [*lo, *hi) of its sentences (lo, hi may be
 * NULL) and the whole batch's target tokens. */
static long shard_of(Run *r, long bi, int *lo, int *hi) {
    int l, h;
    const long *bidx = r->plan.idx + r->plan.start[bi];
    int nb = (int)(r->plan.start[bi + 1] - r->plan.start[bi]);
    long tokens = batch_shard(&r->tenc, bidx, nb, r->rank, r->world, &l, &h);
    if (lo) *lo = l, *hi = h;
    return tokens;
}

/* MicroBatchFn of the loop (ctx: the Run): this rank's shard of batch batch_in_epoch + j. */
static const TokenBatch *fill_batch(void *ctx, int j) {
    Run *r = ctx;
    long bi = r->st.batch_in_epoch + j;
    int lo, hi;
    shard_of(r, bi, &lo, &hi);
    batch_fill(&r->tb, &r->tenc, r->plan.idx + r->plan.start[bi] + lo, hi - lo);
    return &r->tb;
}

/* The "start" line of metrics.jsonl (runlog.h): where and how this start of the run trains. */
static void write_start_record(const Run *r) {
    const Config *cfg = &r->cfg;
    RunStart rs = {.epoch = r->st.epoch, .step = r->st.step, .threads = omp_get_max_threads(),
                   .ranks = r->world};
    machine_utc_now(rs.time, sizeof rs.time);
    snprintf(rs.revision, sizeof rs.revision, "%s", trainer_revision());
    machine_cpu(rs.cpu, sizeof rs.cpu);
    snprintf(rs.device, sizeof rs.device, "%s", device_type_names[cfg->device]);
    snprintf(rs.gpu, sizeof rs.gpu, "%s",
             cfg->device == DEVICE_CUDA ? backend_info(BACKEND_DEVICE_CUDA).gpu_name : "");
    snprintf(rs.precision, sizeof rs.precision, "%s", precision_names[cfg->precision]);
    runlog_write_start(r->metrics, &rs);
}

/* The error that ends a run after train.max_nonfinite skipped steps in a row, the last being
 * the step just taken (r->st.step). */
static Status nonfinite_stop(const Run *r, int in_a_row, Err *err) {
    int saved = access(r->last, F_OK) == 0;
    return err_set(err, "steps %ld to %ld: train.max_nonfinite = %d steps in a row had a "
                   "non-finite loss or gradient, so training stopped; %s%s — lower train.lr, "
                   "set train.clip_norm, or check the data%s", r->st.step + 1 - in_a_row,
                   r->st.step, r->cfg.max_nonfinite,
                   saved ? r->last : "no checkpoint was written yet",
                   saved ? " holds the last saved state" : "", saved ? ", then --resume" : "");
}

/* Logs a skipped step (non-finite loss or gradient) on stderr. */
static void log_nonfinite(const Run *r, const StepResult *s, int in_a_row) {
    char what[128];
    if (!isfinite(s->loss) && !isfinite(s->norm))
        snprintf(what, sizeof what, "loss (%g) and gradient norm (%g)", s->loss, s->norm);
    else if (!isfinite(s->loss)) snprintf(what, sizeof what, "loss (%g)", s->loss);
    else snprintf(what, sizeof what, "gradient norm (%g)", s->norm);
    fprintf(stderr, "step %ld: non-finite %s%s%s%s; update skipped (%d in a row; "
            "train.max_nonfinite = %d)\n", r->st.step, what, s->injected ? " [injected: " : "",
            s->injected ? s->injected : "", s->injected ? "]" : "", in_a_row,
            r->cfg.max_nonfinite);
}

/* Writes the progress line (stdout) and the "train" metrics line of the window, whose last step
 * ended at batch `done` of the epoch, and opens a new window. */
static void log_progress(Run *r, LogWindow *w, long done) {
    const Config *cfg = &r->cfg;
    const TrainState *st = &r->st;
    double now = now_seconds(), el = now - r->t_start;
    double tps = w->tokens_all / (now - w->t);
    double spb = (now - w->t) / w->batches; /* seconds a batch */
    char e1[32], e2[32];
    fmt_time(e1, sizeof e1, el);
    fmt_time(e2, sizeof e2, spb * (r->plan.nbatches - done));
    double l = w->loss / w->tok, lr = optim_lr(cfg, st->step + 1, st->lr_scale);
    char ranks[128] = "";
    if (r->world > 1) /* rank 0's times per step: its forward + backward, the sums (allreduce) */
        snprintf(ranks, sizeof ranks, " | %d ranks: compute %.1f ms, allreduce %.1f ms per step",
                 r->world, 1e3 * w->t_compute / w->steps, 1e3 * w->t_sum / w->steps);
    char ppl[32];
    printf("epoch %d step %ld (%ld/%ld) | loss %.4f ppl %s | lr %.2e | %.0f tok/s | "
           "elapsed %s, epoch ETA %s%s\n", st->epoch, st->step, done, r->plan.nbatches, l,
           metrics_ppl_text(ppl, sizeof ppl, exp(l), 2), lr, tps, e1, e2, ranks);
    runlog_write_train(r->metrics, &(RunTrain){st->epoch, st->step, l, lr, tps, el, r->world,
                                               w->t_compute / w->steps, w->t_sum / w->steps});
    fflush(stdout);
    *w = (LogWindow){0, now, 0, 0, 0, 0, 0, 0};
}

/* The score of train.early_stop_metric among a validation's, and whether it improves on best
 * (-1: no validation yet). */
static double stop_score(const Config *cfg, double ppl, double bleu, double chrf) {
    return cfg->early_stop_metric == STOP_PPL ? ppl : cfg->early_stop_metric == STOP_CHRF ? chrf
                                                                                         : bleu;
}
static int score_improves(const Config *cfg, double v, double best) {
    /* a perplexity that overflowed improves on nothing (and is never a best score) */
    return cfg->early_stop_metric == STOP_PPL ? isfinite(v) && (best < 0 || v < best) : v > best;
}
static const char *const stop_metric_text[] = {"BLEU", "chrF", "perplexity"};

/* A validation (rank 0), at the end of an epoch, or after step st->step (train.valid_every, or
 * train.max_hours reached within an epoch: pos->batch_in_epoch > 0):
 * perplexity, BLEU and chrF, the best score of train.early_stop_metric and the validations
 * without a better one (r->st and *pos, the state the checkpoints hold: where training goes on),
 * the plateau decay, the printed line and the "val" metrics line, best.ckpt when improved.
 * With early_stop_metric = bleu, a validation of BLEU 0 before any scored above 0 is not
 * counted (patience, decay) and replaces best.ckpt. *early_stop = 1 when train.patience
 * validations passed without a better score. */
static Status validate_now(Run *r, TrainState *pos, int *early_stop, Err *err) {
    const Config *cfg = &r->cfg;
    TrainState *st = &r->st;
    double vppl, vbleu, vchrf, t0 = now_seconds();
    ParamSet *ps = &r->model.ps;
    int ema = cfg->ema_decay > 0 && ps->ema, by_step = cfg->valid_every > 0;
    if (ema) params_swap_ema(ps); /* validate (and save best.ckpt) with the EMA weights */
    Status vs = validate(&r->model, r->spm, cfg->val_max_sentences, cfg->concat, &r->val,
                         &r->venc, &vppl, &vbleu, &vchrf, err);
    if (vs) {
        if (ema) params_swap_ema(ps);
        return STATUS_ERR;
    }
    double v = stop_score(cfg, vppl, vbleu, vchrf);
    int improved = score_improves(cfg, v, st->best_score);
    /* BLEU 0 while no validation has scored above 0: the model translates nothing yet, and its
     * perplexity may still be falling. Such a validation counts neither for train.patience nor
     * for the plateau decay; its weights, the later at the same score, become best.ckpt. */
    int uncounted = !improved && cfg->early_stop_metric == STOP_BLEU && v <= 0.0 &&
                    st->best_score <= 0.0;
    if (improved) st->best_score = v, st->bad_epochs = 0;
    else if (!uncounted) st->bad_epochs++, st->lr_scale = optim_decay(cfg, st->lr_scale);
    st->elapsed = now_seconds() - r->t_start;
    pos->best_score = st->best_score, pos->bad_epochs = st->bad_epochs;
    pos->lr_scale = st->lr_scale, pos->elapsed = st->elapsed;
    char e1[32], best[48] = "", ppl[32];
    fmt_time(e1, sizeof e1, st->elapsed);
    if (cfg->early_stop_metric != STOP_BLEU)
        snprintf(best, sizeof best, "%s ", stop_metric_text[cfg->early_stop_metric]);
    if (by_step || pos->batch_in_epoch > 0) /* not at an epoch's end (train.max_hours too) */
        printf("step %ld (epoch %d)", st->step, st->epoch);
    else printf("epoch %d done", st->epoch);
    printf(" | val ppl %s | val BLEU %.2f chrF %.2f (best %s%.2f)%s%s | validation %.1f s | "
           "elapsed %s\n", metrics_ppl_text(ppl, sizeof ppl, vppl, 2), vbleu, vchrf, best,
           st->best_score, improved ? " new best" : uncounted ? " not counted (BLEU 0)" : "",
           !ema                    ? ""
           : improved || uncounted ? " | EMA weights (train.ema_decay), saved as best.ckpt"
                                   : " | EMA weights (train.ema_decay)",
           now_seconds() - t0, e1);
    runlog_write_val(r->metrics, &(RunVal){st->epoch, st->step, vppl, vbleu, vchrf, st->elapsed,
                                           machine_peak_rss_mb()},
                     optim_lr(cfg, st->step + 1, st->lr_scale));
    fflush(stdout);
    Status bs = STATUS_OK;
    if (improved || uncounted) {
        /* weights only (no Adam moments; last.ckpt keeps them for --resume); with EMA the EMA
         * weights are its parameters (the swapped-out buffer now holds the raw weights) */
        bs = checkpoint_save_weights(r->best, &r->model, cfg, r->spm, pos, err);
    }
    if (ema) params_swap_ema(ps); /* back to the raw weights, bit for bit */
    *early_stop = cfg->patience > 0 && st->bad_epochs >= cfg->patience;
    if (*early_stop)
        printf("early stopping: validation %s has not improved for %d %s\n",
               stop_metric_text[cfg->early_stop_metric], st->bad_epochs,
               by_step ? "validations" : "epochs");
    return bs;
}

/* The end of an epoch whose shuffling RNG is now rng: the validation (validate_now) unless
 * train.valid_every sets another rhythm, last.ckpt at the start of the next epoch, and with
 * train.keep_checkpoints epoch<N>.ckpt. *early_stop as validate_now's (0 without one). */
static Status end_epoch(Run *r, Rng rng, int *early_stop, Err *err) {
    const Config *cfg = &r->cfg;
    TrainState *st = &r->st;
    batch_plan_free(&r->plan);
    TrainState next = *st;
    next.epoch = st->epoch + 1;
    next.batch_in_epoch = 0;
    next.epoch_rng = rng;
    *early_stop = 0;
    if (cfg->valid_every == 0) {
        if (validate_now(r, &next, early_stop, err)) return STATUS_ERR;
    } else {
        next.elapsed = st->elapsed = now_seconds() - r->t_start;
    }
    if (checkpoint_save(r->last, &r->model, cfg, r->spm, &next, err)) return STATUS_ERR;
    if (cfg->keep_checkpoints > 0) {
        char path[1200];
        rundir_epoch_ckpt(path, sizeof path, r->dir, st->epoch);
        /* weights only: train.average_last averages them; last.ckpt resumes */
        if (checkpoint_save_weights(path, &r->model, cfg, r->spm, &next, err)) return STATUS_ERR;
        rundir_prune_epochs(r->dir, st->epoch, cfg->keep_checkpoints);
    }
    st->epoch_rng = rng;
    st->batch_in_epoch = 0;
    return STATUS_OK;
}

/* train.valid_every = N after step st->step (a multiple of N), the step's batches ending at
 * batch `done` of the epoch: validate_now, then last.ckpt at the next batch. */
static Status validate_at_step(Run *r, long done, int *early_stop, Err *err) {
    TrainState pos = r->st;
    pos.batch_in_epoch = done;
    if (validate_now(r, &pos, early_stop, err)) return STATUS_ERR;
    return checkpoint_save(r->last, &r->model, &r->cfg, r->spm, &pos, err);
}

/* train.average_last = K at the end of a run (rank 0): avg.ckpt (out: save_dir/avg.ckpt) of the
 * last K epoch checkpoints up to the current epoch (rundir_average), then its validation printed
 * next to best's and the "avg" metrics line. Nothing when K = 0 or no epoch checkpoint exists.
 * Errors: rundir_average's, checkpoint_load_weights's, validation's, a parameter count other
 * than the run's model's. */
static Status average_at_end(Run *r, const char *out, Err *err) {
    const Config *cfg = &r->cfg;
    if (cfg->average_last <= 0) return STATUS_OK;
    /* training is over: its activations go before the averaging loads checkpoints beside the
     * model (otherwise the run's peak memory); the validation below reserves its own, smaller */
    model_release(&r->model);
    int k, last;
    if (rundir_average(r->dir, r->st.epoch, cfg->average_last, out, &k, &last, err))
        return STATUS_ERR;
    if (k == 0) return STATUS_OK;
    /* validated in the run's own model, its weights replaced by avg.ckpt's (training is over, its
     * checkpoints are written): its activations serve, where a second model would reserve its
     * own as large */
    Model m = {0};
    Config c;
    Spm *spm = NULL;
    if (checkpoint_load_weights(out, &m, &c, &spm, (int)cfg->device, err)) return STATUS_ERR;
    spm_free(spm);
    size_t total = m.ps.total;
    if (total == r->model.ps.total)
        r->model.be->copy(r->model.ps.data, m.ps.data, sizeof(float) * total);
    model_free(&m);
    if (total != r->model.ps.total)
        return err_set(err, "%s: %zu parameters, the run's model has %zu; the epoch checkpoints "
                       "in %s are not all this run's", out, total, r->model.ps.total, r->dir);
    RunVal v = {.epoch = last, .step = r->st.step};
    Status rc = validate(&r->model, r->spm, cfg->val_max_sentences, cfg->concat, &r->val,
                         &r->venc, &v.val_ppl, &v.val_bleu, &v.val_chrf, err);
    if (rc) return rc;
    char best[48] = "", ppl[32], fewer[128] = "";
    if (cfg->early_stop_metric != STOP_BLEU)
        snprintf(best, sizeof best, "%s ", stop_metric_text[cfg->early_stop_metric]);
    if (k < cfg->average_last)
        snprintf(fewer, sizeof fewer, " | the mean of %d epoch checkpoints, not the %d "
                 "train.average_last asks", k, cfg->average_last);
    printf("avg.ckpt: val ppl %s | val BLEU %.2f chrF %.2f (best.ckpt %s%.2f)%s\n",
           metrics_ppl_text(ppl, sizeof ppl, v.val_ppl, 2), v.val_bleu, v.val_chrf, best,
           r->st.best_score, fewer);
    runlog_write_avg(r->metrics, &v, k, cfg->average_last);
    return STATUS_OK;
}

/* The closing line: the best checkpoint, or that no validation ran and which file holds the
 * last state (only files that exist are named). */
static void print_done(const Run *r) {
    if (r->st.best_score >= 0) /* a validation ran (-1: none yet), so best.ckpt was written */
        printf("training done: %ld steps, best validation %s %.2f, %s in %s\n", r->st.step,
               stop_metric_text[r->cfg.early_stop_metric], r->st.best_score, r->best, r->dir);
    else if (access(r->last, F_OK) == 0)
        printf("training done: %ld steps; no validation ran (the run stopped before the end of "
               "its first epoch), so there is no best checkpoint; the last state is %s\n",
               r->st.step, r->last);
    else
        printf("training done: %ld steps; no validation ran and no checkpoint was written\n",
               r->st.step);
}

/* The step or time limit a run has reached after `step` steps and `elapsed` seconds of
 * training: "train.max_steps" or "train.max_hours" (steps first), NULL when neither (0 = no
 * limit). */
static const char *limit_reached(const Config *cfg, long step, double elapsed) {
    if (cfg->max_steps > 0 && step >= cfg->max_steps) return "train.max_steps";
    if (cfg->max_hours > 0 && elapsed >= 3600.0 * cfg->max_hours) return "train.max_hours";
    return NULL;
}

Status train_run(const Config *cfg_in, int resume, Err *err) {
    Status rc = STATUS_ERR;
    Run run = {0}, *r = &run;
    const Config *cfg = &r->cfg;
    TrainState *st = &r->st;
    if (dist_size() > 1) {
        /* no time limit during start-up (rank 0 may train SentencePiece for long while the
         * others wait): only dead ranks on this host are caught; dist.timeout from the loop on */
        dist_set_timeout(0);
        if (dist_rank() != 0) { /* rank 0 alone logs (stdout); errors still go to stderr */
            fflush(stdout);
            int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
            if (fd >= 0) dup2(fd, STDOUT_FILENO), close(fd);
        }
        if (dist_check_ranks(cfg_in, err)) return STATUS_ERR;
    }
    if (run_open(r, cfg_in, resume, err)) goto cleanup;
    if (r->world > 1) dist_set_timeout(cfg->dist_timeout);
    install_stop_signals();
    int lead = r->rank == 0, many = r->world > 1;

    r->t_start = now_seconds() - st->elapsed;
    LogWindow win = {0, now_seconds(), 0, 0, 0, 0, 0, 0};
    int nonfinite_run = 0, stop = 0;
    int hours_at_epoch_end = 0; /* train.max_hours reached on an epoch's last batch */
    /* A resumed run that already reached one of its limits trains nothing more (max_epochs is
     * the loop's own condition): resuming a finished run is a no-op, as `trainer compare` relies
     * on to complete interrupted runs. */
    const char *reached = limit_reached(cfg, st->step, st->elapsed);
    if (!reached && cfg->patience > 0 && st->bad_epochs >= cfg->patience)
        reached = "train.patience (early stopping)";
    if (reached) {
        printf("%s had already reached %s: nothing left to train\n", r->last, reached);
        stop = 1;
    } else if (lead) {
        write_start_record(r); /* a resume that trains nothing leaves metrics.jsonl as it was */
    }
    for (; st->epoch <= cfg->max_epochs && !stop; st->epoch++) {
        Rng rng = st->epoch_rng;
        if (batch_plan(&r->plan, &r->tenc, r->keep, r->nkeep, cfg->batch_tokens, &rng, err))
            goto cleanup;
        long group = 1; /* the batches of this optimizer step (train.accum_steps) */
        for (; st->batch_in_epoch < r->plan.nbatches; st->batch_in_epoch += group) {
            group = r->plan.nbatches - st->batch_in_epoch;
            if (group > cfg->accum_steps) group = cfg->accum_steps;
            long global_tgt = 0, done = st->batch_in_epoch + group;
            for (long j = 0; j < group; j++)
                global_tgt += shard_of(r, st->batch_in_epoch + j, NULL, NULL);
            /* what the ranks agree on with the step's sums: a stop signal on any rank, and
             * rank 0's clock for train.max_hours */
            StepSync sync = {{g_stop_signal ? 1.0 : 0.0, lead ? now_seconds() - r->t_start : 0},
                             0, 0, 0, 0};
            StepResult s = train_step_accum(&r->model, cfg, (int)group, fill_batch, r,
                                            global_tgt, st, &r->inject, &sync);
            CHECK(sync.tgt_tokens == global_tgt, "the ranks' shards do not add up to the global "
                  "batch: do all ranks plan the same batches?");
            int stop_signal = many ? sync.flags[0] > 0 : g_stop_signal != 0;
            if (!s.finite) { /* the same on every rank: the loss and norm are global */
                ++nonfinite_run;
                if (lead) log_nonfinite(r, &s, nonfinite_run);
                if (nonfinite_run >= cfg->max_nonfinite) {
                    nonfinite_stop(r, nonfinite_run, err);
                    goto cleanup;
                }
            } else {
                nonfinite_run = 0;
                win.loss += s.loss; /* a skipped step leaves no NaN in the logged mean */
                win.tok += global_tgt;
            }
            win.tokens_all += global_tgt + sync.src_tokens;
            win.steps++, win.batches += group;
            win.t_compute += sync.t_compute, win.t_sum += sync.t_sum;
            int last_batch = done == r->plan.nbatches;
            if (lead && st->step % cfg->log_every == 0 && win.tok > 0) log_progress(r, &win, done);
            /* train.valid_every: a validation after every N steps (none while a signal stops
             * the run: it saves at once) */
            if (cfg->valid_every > 0 && st->step % cfg->valid_every == 0 && !stop_signal) {
                Status vs = STATUS_OK; /* rank 0 validates and saves; the others wait */
                double t0 = now_seconds();
                if (lead) vs = validate_at_step(r, done, &stop, err);
                if (ranks_follow_lead(vs, st, &stop, err)) goto cleanup;
                win.t += now_seconds() - t0; /* tok/s and the ETA count training alone */
                if (stop) break; /* early stopping: last.ckpt is written */
            }
            /* the limit that ends the run after this step, if any (named in the message) */
            const char *limit = limit_reached(cfg, st->step,
                                              many ? sync.flags[1] : now_seconds() - r->t_start);
            /* the time budget validates the last weights before the run ends (best.ckpt if
             * better): on an epoch's last batch through end_epoch's validation, otherwise here,
             * unless train.valid_every has just validated them */
            int hours = limit && !strcmp(limit, "train.max_hours") && !stop_signal;
            if (hours && last_batch && cfg->valid_every == 0) {
                hours_at_epoch_end = 1;
            } else if (limit || stop_signal ||
                       (cfg->save_every > 0 && st->step % cfg->save_every == 0 && !last_batch)) {
                TrainState pos = *st; /* the position to resume at: the next batch */
                pos.batch_in_epoch = done;
                pos.elapsed = now_seconds() - r->t_start;
                int validate = hours && !(cfg->valid_every > 0 &&
                                          st->step % cfg->valid_every == 0);
                Status sv = STATUS_OK; /* rank 0 validates and saves; the others wait */
                if (lead && validate) {
                    int patience_out; /* the run ends here all the same */
                    sv = validate_now(r, &pos, &patience_out, err);
                }
                double t0 = now_seconds();
                if (lead && !sv) sv = checkpoint_save(r->last, &r->model, cfg, r->spm, &pos, err);
                if (ranks_agree(sv, validate ? "rank 0's validation and checkpoint"
                                             : "rank 0's checkpoint", err))
                    goto cleanup;
                win.t += now_seconds() - t0;
                if (stop_signal) {
                    printf("%s: finished step %ld, saved %s; continue with --resume\n",
                           g_stop_signal ? signal_name(g_stop_signal) : "a signal (on another "
                           "rank)", st->step, r->last);
                    rc = STATUS_OK;
                    goto cleanup;
                }
                if (limit) {
                    if (strcmp(limit, "train.max_steps") == 0)
                        printf("reached train.max_steps = %ld; saved %s\n", cfg->max_steps,
                               r->last);
                    else
                        printf("reached train.max_hours = %g; %ssaved %s\n",
                               (double)cfg->max_hours, validate ? "validated the last weights, "
                               : "", r->last);
                    stop = 1;
                    break;
                }
            }
        }
        if (stop) break;
        Status es = STATUS_OK; /* rank 0 validates and saves; the others wait for its state */
        double t0 = now_seconds();
        if (lead) es = end_epoch(r, rng, &stop, err);
        else batch_plan_free(&r->plan);
        if (ranks_follow_lead(es, st, &stop, err)) goto cleanup;
        win.t += now_seconds() - t0;
        if (stop) break; /* early stopping */
        if (hours_at_epoch_end) { /* end_epoch validated and saved */
            printf("reached train.max_hours = %g at the end of epoch %d; saved %s\n",
                   (double)cfg->max_hours, st->epoch, r->last);
            break;
        }
        int signalled = ranks_any(g_stop_signal != 0, "the stop signals after validation");
        if (signalled && st->epoch < cfg->max_epochs) { /* came during the validation */
            printf("%s: finished epoch %d (step %ld), saved %s; continue with --resume\n",
                   g_stop_signal ? signal_name(g_stop_signal) : "a signal (on another rank)",
                   st->epoch, st->step, r->last);
            rc = STATUS_OK;
            goto cleanup;
        }
    }
    Status as = STATUS_OK; /* rank 0 averages; the others wait for its verdict */
    char avg[1200];
    snprintf(avg, sizeof avg, "%.1100s/avg.ckpt", r->dir);
    if (lead && !(reached && access(avg, F_OK) == 0)) /* a finished run keeps its average */
        as = average_at_end(r, avg, err);
    if (ranks_agree(as, "rank 0's checkpoint averaging", err)) goto cleanup;
    print_done(r);
    rc = STATUS_OK;
cleanup:
    run_close(r);
    dist_nccl_finalize(rc == STATUS_OK);
    return rc;
}
