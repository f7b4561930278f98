/* test_e2e.c — the whole program end to end on a slice of Multi30k: train, eval, translate.
 *
 * tests/fixtures/tiny.ini (E 32, H 64, V 500, 2 epochs) on the first 2000 training and 100
 * validation pairs, one thread (~220 steps, a few seconds). Checks:
 *   - training exits 0; metrics.jsonl logs steps 1..N once each (log_every = 1) and one
 *     validation line per epoch with finite numbers; the training loss falls (mean of the last 10
 *     step losses < 0.8 × the mean of the first 10) and the validation perplexity falls from
 *     epoch 1 to epoch 2; best.ckpt, last.ckpt and spm.model exist; config.ini holds the run's
 *     config (its --set values too), loads, validates and writes back as the same text;
 *   - `trainer eval --checkpoint best.ckpt --src val.de --ref val.en --json` exits 0 and its last
 *     line is a JSON object with numbers bleu, chrf, ppl, sentences (= 100), seconds;
 *   - the same eval on the first val_max_sentences (50) pairs agrees with the validation line of
 *     the best epoch in metrics.jsonl (perplexity and BLEU: the same model on the same text);
 *   - `trainer translate --checkpoint best.ckpt` on 5 lines prints 5 lines;
 *   - a run with train.max_steps = 5 (it stops before its first validation) exits 0, says it
 *     reached train.max_steps (and names no other limit), says that no validation ran and names
 *     no best.ckpt, and leaves last.ckpt but no best.ckpt.
 */
#include <math.h>

#include "train/config.h"
#include "trainer_run.h"

#define TIMEOUT 180.0

static const char *g_work;

static double mean_loss(const TrMetrics *m, long from, long n) {
    double s = 0;
    for (long i = from; i < from + n; i++) s += strtod(m->steps[i].loss, NULL);
    return s / (double)n;
}

/* Runs eval --json; returns the exit code and copies the last stdout line into line. */
static int run_eval(const char *ckpt, const char *src, const char *ref, const char *tag,
                    char *line, size_t n) {
    TrArgv a = {0};
    tr_eval_argv(&a, ckpt, src, ref);
    tr_print_argv(tag, a.v);
    const char *out = tr_fmt("%s/%s.out", g_work, tag), *err = tr_fmt("%s/%s.err", g_work, tag);
    int rc = tr_wait(tr_spawn2(a.v, out, err, 0, NULL), TIMEOUT);
    tr_argv_free(&a);
    snprintf(line, n, "%s", tr_last_line(out));
    printf("  -> exit %d, last line: %s\n", rc, line);
    if (rc != 0) tr_print_tail(err, 10);
    return rc;
}

int main(void) {
    double t_start;
    g_work = tr_begin("test_e2e", &t_start);
    const char *dir = test_strdup(tr_fmt("%s/run", g_work));

    /* ---- train ---- */
    TrArgv a;
    tr_train_argv(&a, g_work, dir);
    tr_print_argv("train", a.v);
    const char *log = tr_fmt("%s/train.log", g_work);
    double t0 = tr_now();
    int rc = tr_run(a.v, log, NULL, TIMEOUT);
    tr_argv_free(&a);
    printf("  -> exit %d in %.1f s\n", rc, tr_now() - t0);
    EXPECT(rc == 0, "training failed (exit %d)", rc);
    if (rc != 0) {
        tr_print_tail(log, 20);
        return test_report("test_e2e");
    }
    static const char *files[] = {"best.ckpt", "last.ckpt", "spm.model", "metrics.jsonl",
                                  "config.ini"};
    for (int i = 0; i < 5; i++)
        EXPECT(tr_exists(tr_fmt("%s/%s", dir, files[i])), "%s/%s missing", dir, files[i]);
    /* config.ini: every key of the run, the --set ones included, as a config that loads,
     * validates and writes back the same text */
    Config rc_cfg;
    Err cerr = {{0}};
    const char *ini_path = tr_fmt("%s/config.ini", dir);
    if (config_load(&rc_cfg, ini_path, &cerr) || config_validate(&rc_cfg, &cerr)) {
        EXPECT(0, "%s does not load as a config: %s", ini_path, cerr.msg);
    } else {
        char *again = config_to_ini(&rc_cfg), *text = test_read_file(ini_path, NULL);
        EXPECT(text && !strcmp(again, text), "%s does not write back as itself", ini_path);
        EXPECT(!strcmp(rc_cfg.save_dir, dir) && rc_cfg.threads == 1 &&
                   !strcmp(rc_cfg.train_src, tr_fmt("%s/train.de", g_work)),
               "%s: save_dir '%s', threads %d, train_src '%s': not the run's --set values",
               ini_path, rc_cfg.save_dir, rc_cfg.threads, rc_cfg.train_src);
        free(again), free(text);
    }
    EXPECT(tr_file_contains(log, "best validation BLEU") && tr_file_contains(log, "/best.ckpt in"),
           "the last line of %s should name the best validation BLEU and best.ckpt", log);

    TrMetrics m;
    EXPECT(tr_metrics_read(tr_fmt("%s/metrics.jsonl", dir), &m) == 0, "cannot read metrics");
    EXPECT(m.bad_lines == 0, "metrics.jsonl: %ld malformed lines", m.bad_lines);
    int consecutive = m.n > 0;
    for (long i = 0; i < m.n; i++) consecutive &= m.steps[i].step == i + 1;
    EXPECT(consecutive, "metrics.jsonl should log steps 1..%ld once each", m.n);
    EXPECT(m.n >= 40, "only %ld training steps", m.n);
    if (m.n >= 40) {
        double first = mean_loss(&m, 0, 10), last = mean_loss(&m, m.n - 10, 10);
        printf("training: %ld steps, mean loss of the first 10 steps %.4f, of the last 10 %.4f "
               "(ratio %.3f)\n", m.n, first, last, last / first);
        EXPECT(last < 0.8 * first, "the training loss did not fall enough: %.4f -> %.4f", first,
               last);
    }
    EXPECT(m.nval == 2, "expected one validation line per epoch (2), got %ld", m.nval);
    long best = -1;
    double best_bleu = -1;
    for (long i = 0; i < m.nval; i++) {
        double ppl = strtod(m.vals[i].ppl, NULL), bleu = strtod(m.vals[i].bleu, NULL),
               chrf = strtod(m.vals[i].chrf, NULL);
        printf("validation epoch %d (step %ld): ppl %s BLEU %s chrF %s\n", m.vals[i].epoch,
               m.vals[i].step, m.vals[i].ppl, m.vals[i].bleu, m.vals[i].chrf);
        EXPECT(isfinite(ppl) && ppl > 1 && bleu >= 0 && bleu <= 100 && chrf >= 0 && chrf <= 100,
               "validation %ld: implausible numbers ppl %s bleu %s chrf %s", i, m.vals[i].ppl,
               m.vals[i].bleu, m.vals[i].chrf);
        EXPECT(m.vals[i].epoch == i + 1, "validation line %ld is for epoch %d", i,
               m.vals[i].epoch);
        if (bleu > best_bleu) best_bleu = bleu, best = i;
    }
    if (m.nval == 2)
        EXPECT(strtod(m.vals[1].ppl, NULL) < strtod(m.vals[0].ppl, NULL),
               "validation perplexity did not fall: %s -> %s", m.vals[0].ppl, m.vals[1].ppl);

    /* ---- eval on the validation slice ---- */
    const char *bestck = test_strdup(tr_fmt("%s/best.ckpt", dir));
    static const char *const keys[] = {"bleu", "chrf", "ppl", "sentences", "seconds", NULL};
    char line[8192], why[512] = "";
    rc = run_eval(bestck, tr_fmt("%s/val.de", g_work), tr_fmt("%s/val.en", g_work), "eval100",
                  line, sizeof line);
    EXPECT(rc == 0, "eval --json failed (exit %d)", rc);
    EXPECT(tr_json_object_has_numbers(line, keys, why, sizeof why), "eval --json last line: %s",
           why);
    double v = 0;
    EXPECT(tr_json_number(line, "sentences", &v) && v == 100, "eval: sentences %g, expected 100",
           v);

    /* the same text as the trainer's validation (val_max_sentences = 50) gives the same numbers */
    char src50[4096], ref50[4096];
    snprintf(src50, sizeof src50, "%s/val50.de", g_work);
    snprintf(ref50, sizeof ref50, "%s/val50.en", g_work);
    EXPECT(tr_gz_head(tr_fmt("%s/val.de", g_work), src50, 50) == 50 &&
               tr_gz_head(tr_fmt("%s/val.en", g_work), ref50, 50) == 50,
           "cannot write the 50-line validation slice");
    rc = run_eval(bestck, src50, ref50, "eval50", line, sizeof line);
    EXPECT(rc == 0, "eval --json on 50 lines failed (exit %d)", rc);
    double eppl = 0, ebleu = 0;
    if (rc == 0 && best >= 0 && tr_json_number(line, "ppl", &eppl) &&
        tr_json_number(line, "bleu", &ebleu)) {
        double vppl = strtod(m.vals[best].ppl, NULL), vbleu = strtod(m.vals[best].bleu, NULL);
        printf("best epoch %d: validation ppl %.4f BLEU %.4f; eval of best.ckpt on the same 50 "
               "pairs: ppl %.4f BLEU %.4f\n", m.vals[best].epoch, vppl, vbleu, eppl, ebleu);
        EXPECT(fabs(eppl - vppl) <= 1e-3 * vppl + 1e-4,
               "eval perplexity %.4f differs from the validation perplexity %.4f of best.ckpt's "
               "epoch", eppl, vppl);
        EXPECT(fabs(ebleu - vbleu) <= 0.01, "eval BLEU %.4f differs from the validation BLEU %.4f "
               "of best.ckpt's epoch", ebleu, vbleu);
    }

    /* ---- translate ---- */
    const char *in5 = test_strdup(tr_fmt("%s/in5.de", g_work));
    EXPECT(tr_gz_head(tr_fmt("%s/val.de", g_work), in5, 5) == 5, "cannot write %s", in5);
    TrArgv t = {0};
    tr_arg(&t, "%s", tr_bin());
    tr_arg(&t, "translate");
    tr_arg(&t, "--checkpoint");
    tr_arg(&t, "%s", bestck);
    tr_print_argv("translate (stdin: 5 lines)", t.v);
    const char *out = test_strdup(tr_fmt("%s/translate.out", g_work));
    const char *err = test_strdup(tr_fmt("%s/translate.err", g_work));
    rc = tr_wait(tr_spawn2(t.v, out, err, 0, in5), TIMEOUT);
    tr_argv_free(&t);
    long nl = tr_count_lines(out);
    char *text = test_read_file(out, NULL);
    printf("  -> exit %d, %ld lines:\n%s", rc, nl, text ? text : "");
    EXPECT(rc == 0, "translate failed (exit %d)", rc);
    if (rc != 0) tr_print_tail(err, 10);
    EXPECT(nl == 5, "translate printed %ld lines for 5 input lines", nl);
    int nonempty = 0;
    for (char *p = text; p && *p; p++) nonempty += p[0] != '\n' && (p[1] == '\n' || !p[1]);
    EXPECT(nonempty > 0, "translate printed only empty lines");
    free(text);

    /* ---- a run that ends before its first validation ---- */
    const char *sdir = test_strdup(tr_fmt("%s/short", g_work));
    const char *slog = test_strdup(tr_fmt("%s/short.log", g_work));
    tr_train_argv(&a, g_work, sdir);
    tr_set(&a, "train.max_steps=5");
    tr_print_argv("train (5 steps)", a.v);
    rc = tr_run(a.v, slog, NULL, TIMEOUT);
    tr_argv_free(&a);
    printf("  -> exit %d\n", rc);
    tr_print_tail(slog, 2);
    EXPECT(rc == 0, "the 5-step run failed (exit %d)", rc);
    EXPECT(tr_file_contains(slog, "reached train.max_steps = 5;") &&
               !tr_file_contains(slog, "max_hours"),
           "%s should name train.max_steps as the limit reached, and no other", slog);
    EXPECT(tr_file_contains(slog, "no validation ran") && !tr_file_contains(slog, "best.ckpt") &&
               !tr_file_contains(slog, "best validation BLEU"),
           "%s should say that no validation ran and name no best.ckpt", slog);
    EXPECT(tr_exists(tr_fmt("%s/last.ckpt", sdir)) && !tr_exists(tr_fmt("%s/best.ckpt", sdir)),
           "the 5-step run should leave last.ckpt and no best.ckpt in %s", sdir);

    tr_metrics_free(&m);
    return tr_finish("test_e2e", t_start);
}
