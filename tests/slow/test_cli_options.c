/* test_cli_options.c — the options every command shares: --help, --threads, --device cuda without
 * a GPU, and --len-penalty without a beam search.
 *
 * Data: the first 2000 training and 100 validation pairs of Multi30k, tests/fixtures/tiny.ini,
 * one thread; the checkpoint is the last.ckpt of a run of 3 steps (the options, not the model,
 * are under test).
 *   - `trainer train --help` and `trainer average --help` print their usage (train's with every
 *     config key) on stdout and exit 0, as eval's and translate's do, which list --threads;
 *   - eval --threads 1 --json reports "threads": 1; translate --threads 1 translates; --threads
 *     0 or abc is refused by both (exit 2, naming --threads);
 *   - translate --device cuda, where no CUDA device is usable (checked here with backend_open;
 *     with a GPU the check is skipped), exits 1 saying that no usable GPU was found, and does
 *     not call the checkpoint corrupt;
 *   - --len-penalty with greedy decoding is refused by translate and eval (exit 2, naming --beam),
 *     as with --sample; with --beam 2 it is taken;
 *   - every key of eval --json (one model, and an ensemble of two) and of score --json is named
 *     in that command's --help.
 */
#include <ctype.h>

#include "trainer_run.h"

#include "ops/ops.h"

#define TIMEOUT 120.0

/* The keys of the JSON object `line` that the --json paragraph of the help text in the file
 * `help` (from "--json" to the next line that starts an option) does not name as a word, written
 * comma-separated into `missing`; returns their count (0: all documented), -1 when the help has
 * no --json. */
static int undocumented_keys(const char *line, const char *help, char *missing, size_t n) {
    char *all = test_read_file(help, NULL), *text = all ? strstr(all, "\n      --json ") : NULL;
    char *next = text ? strstr(text + 1, "\n      -") : NULL;
    if (next) *next = 0;
    int count = 0;
    missing[0] = 0;
    for (const char *p = line; text && (p = strchr(p, '"'));) {
        const char *q = strchr(p + 1, '"');
        if (!q) break;
        const char *after = q + 1;
        while (*after == ' ') after++;
        if (*after == ':') { /* a key, not a string value */
            char key[64];
            size_t len = (size_t)(q - p - 1) < sizeof key - 1 ? (size_t)(q - p - 1)
                                                                 : sizeof key - 1;
            memcpy(key, p + 1, len);
            key[len] = 0;
            int found = 0;
            for (const char *h = text; !found && (h = strstr(h, key)); h += len) {
                int left = h == text || !(isalnum((unsigned char)h[-1]) || h[-1] == '_');
                int right = !(isalnum((unsigned char)h[len]) || h[len] == '_');
                found = left && right;
            }
            if (!found) {
                size_t used = strlen(missing);
                snprintf(missing + used, n - used, "%s%s", count ? ", " : "", key);
                count++;
            }
        }
        p = q + 1;
    }
    free(all);
    return text ? count : -1;
}

int main(void) {
    double t_start;
    const char *work = tr_begin("test_cli_options", &t_start), *out, *err;
    int rc = tr_cmd(work, NULL, &out, &err, TIMEOUT, "train", "--help", NULL);
    EXPECT(rc == 0 && tr_file_contains(out, "usage:") && tr_file_contains(out, "train.lr"),
           "train --help: exit %d (want 0, the usage and the config keys on stdout)", rc);
    rc = tr_cmd(work, NULL, &out, &err, TIMEOUT, "train", "--config", TR_CONFIG, "-h", NULL);
    EXPECT(rc == 0 && tr_file_contains(out, "usage:"), "train --config F -h: exit %d", rc);
    rc = tr_cmd(work, NULL, &out, &err, TIMEOUT, "average", "--help", NULL);
    EXPECT(rc == 0 && tr_file_contains(out, "usage:") &&
               tr_file_contains(out, "trainer average --out FILE"),
           "average --help: exit %d (want 0 and its usage on stdout)", rc);
    rc = tr_cmd(work, NULL, &out, &err, TIMEOUT, "eval", "--help", NULL);
    EXPECT(rc == 0 && tr_file_contains(out, "--threads N"), "eval --help should list --threads");
    rc = tr_cmd(work, NULL, &out, &err, TIMEOUT, "translate", "--help", NULL);
    EXPECT(rc == 0 && tr_file_contains(out, "--threads N"),
           "translate --help should list --threads");

    const char *dir = test_strdup(tr_fmt("%s/A", work));
    EXPECT(tr_train(work, dir, TIMEOUT, NULL, "--set", "train.max_steps=3", NULL) == 0,
           "the training run failed");
    const char *ck = test_strdup(tr_fmt("%s/last.ckpt", dir));
    const char *src = test_strdup(tr_fmt("%s/val.de", work));
    const char *ref = test_strdup(tr_fmt("%s/val.en", work));

    /* ---- --threads ---- */
    rc = tr_cmd(work, NULL, &out, &err, TIMEOUT, "eval", "--checkpoint", ck, "--src", src,
                "--ref", ref, "--json", "--threads", "1", NULL);
    double th = 0;
    EXPECT(rc == 0 && tr_json_number(tr_last_line(out), "threads", &th) && th == 1,
           "eval --threads 1 --json: exit %d, \"threads\" %g in %s", rc, th, tr_last_line(out));
    rc = tr_cmd(work, src, &out, &err, TIMEOUT, "translate", "--checkpoint", ck, "--threads",
                "1", NULL);
    EXPECT(rc == 0 && tr_count_lines(out) == 100, "translate --threads 1: exit %d, %ld lines",
           rc, tr_count_lines(out));
    static const char *const bad[] = {"0", "abc", "5000"};
    for (int i = 0; i < 3; i++) {
        rc = tr_cmd(work, NULL, &out, &err, TIMEOUT, "eval", "--checkpoint", ck, "--src", src,
                    "--ref", ref, "--threads", bad[i], NULL);
        EXPECT(rc == 2 && tr_file_contains(err, "--threads"),
               "eval --threads %s should be refused naming --threads (exit %d)", bad[i], rc);
        rc = tr_cmd(work, src, &out, &err, TIMEOUT, "translate", "--checkpoint", ck,
                    "--threads", bad[i], NULL);
        EXPECT(rc == 2 && tr_file_contains(err, "--threads"),
               "translate --threads %s should be refused naming --threads (exit %d)", bad[i], rc);
    }

    /* ---- --device cuda without a GPU ---- */
    BackendOptions bo = {.device = BACKEND_DEVICE_CUDA, .precision = BACKEND_KEEP,
                         .threads = BACKEND_KEEP, .ordinal = BACKEND_KEEP};
    const Backend *be;
    Err e;
    if (backend_open(&bo, &be, NULL, 0, &e) == STATUS_OK) {
        printf("a CUDA device is usable here: the message of --device cuda without one is not "
               "checked\n");
    } else {
        rc = tr_cmd(work, src, &out, &err, TIMEOUT, "translate", "--checkpoint", ck, "--device",
                    "cuda", NULL);
        EXPECT(rc == 1 && tr_file_contains(err, "no usable GPU") &&
                   !tr_file_contains(err, "corrupt") && tr_count_lines(out) <= 0,
               "translate --device cuda without a GPU: exit %d; want 1 and 'no usable GPU', "
               "never 'corrupt'", rc);
        rc = tr_cmd(work, NULL, &out, &err, TIMEOUT, "eval", "--checkpoint", ck, "--src", src,
                    "--ref", ref, "--device", "cuda", NULL);
        EXPECT(rc == 1 && tr_file_contains(err, "no usable GPU") &&
                   !tr_file_contains(err, "corrupt"),
               "eval --device cuda without a GPU: exit %d; want 1 and 'no usable GPU'", rc);
    }

    /* ---- --len-penalty needs a beam search ---- */
    rc = tr_cmd(work, src, &out, &err, TIMEOUT, "translate", "--checkpoint", ck, "--len-penalty",
                "0.6", NULL);
    EXPECT(rc == 2 && tr_file_contains(err, "--len-penalty") && tr_file_contains(err, "--beam"),
           "translate --len-penalty without --beam should be refused (exit %d)", rc);
    rc = tr_cmd(work, NULL, &out, &err, TIMEOUT, "eval", "--checkpoint", ck, "--src", src,
                "--ref", ref, "--len-penalty", "0.6", NULL);
    EXPECT(rc == 2 && tr_file_contains(err, "--beam"),
           "eval --len-penalty without --beam should be refused (exit %d)", rc);
    rc = tr_cmd(work, src, &out, &err, TIMEOUT, "translate", "--checkpoint", ck, "--sample",
                "topk:3", "--len-penalty", "1", NULL);
    EXPECT(rc == 2 && tr_file_contains(err, "--len-penalty"),
           "translate --sample with --len-penalty should be refused (exit %d)", rc);
    rc = tr_cmd(work, src, &out, &err, TIMEOUT, "translate", "--checkpoint", ck, "--beam", "2",
                "--len-penalty", "0.6", NULL);
    EXPECT(rc == 0 && tr_count_lines(out) == 100,
           "translate --beam 2 --len-penalty 0.6 should translate (exit %d)", rc);

    /* ---- every --json key is in the help ---- */
    const char *help = test_strdup(tr_fmt("%s/eval_help.txt", work));
    rc = tr_cmd(work, NULL, &out, &err, TIMEOUT, "eval", "--help", NULL);
    EXPECT(rc == 0 && rename(out, help) == 0, "eval --help: exit %d", rc);
    const char *ens = test_strdup(tr_fmt("%s,%s", ck, ck));
    const char *models[] = {ck, ens};
    char missing[512];
    for (int i = 0; i < 2; i++) {
        rc = tr_cmd(work, NULL, &out, &err, TIMEOUT, "eval", "--checkpoint", models[i], "--src",
                    src, "--ref", ref, "--json", NULL);
        int m = rc == 0 ? undocumented_keys(tr_last_line(out), help, missing, sizeof missing)
                        : -1;
        EXPECT(m == 0, "eval --json%s (exit %d): keys missing from eval --help: %s",
               i ? " of an ensemble" : "", rc, m > 0 ? missing : "(no JSON)");
    }
    rc = tr_cmd(work, NULL, &out, &err, TIMEOUT, "score", "--help", NULL);
    EXPECT(rc == 0 && rename(out, help) == 0, "score --help: exit %d", rc);
    rc = tr_cmd(work, NULL, &out, &err, TIMEOUT, "score", "--checkpoint", ck, "--src", src,
                "--ref", ref, "--json", NULL);
    int m = rc == 0 ? undocumented_keys(tr_last_line(out), help, missing, sizeof missing) : -1;
    EXPECT(m == 0, "score --json (exit %d): keys missing from score --help: %s", rc,
           m > 0 ? missing : "(no JSON)");
    return tr_finish("test_cli_options", t_start);
}
