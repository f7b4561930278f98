/* test_translate_stream.c — `trainer translate` driven line by line through a pipe, as another
 * program drives it.
 *
 * Data: the first 2000 training and 100 validation pairs of Multi30k, tests/fixtures/tiny.ini,
 * one thread, one epoch (A/best.ckpt).
 *   - translate with standard input and output on pipes: a line written (stdin still open) is
 *     answered by its translation within 60 s, then an empty line by an empty line, then a third
 *     line; closing stdin ends the program with exit 0; the three translations are those of the
 *     same lines read from a file (decoded together in one batch);
 *   - the same with --sample topk:5 --seed 3: each line drawn as from the file (the draws are
 *     keyed by the line's number, not by its place in a batch);
 *   - --stream with a regular file translates it as without (every line, the same output);
 *   - gzip data on a stream is refused, naming gzip and what to do.
 * Every wait has a timeout, so that a trainer that holds its output back fails the test instead
 * of hanging it.
 */
#include <poll.h>

#include "trainer_run.h"

#define TIMEOUT 180.0
#define LINE_WAIT_MS 60000

static const char *const g_lines[3] = {"Ein Hund rennt durch den Schnee.", "",
                                        "Zwei Männer stehen vor einem Haus."};

/* Reads one line (up to '\n', without it) from fd into buf (n bytes) within ms milliseconds.
 * Returns 1, or 0 on timeout, end of file or error. */
static int read_line_within(int fd, char *buf, size_t n, int ms) {
    size_t k = 0;
    double t_end = tr_now() + ms / 1000.0;
    while (k + 1 < n) {
        int left = (int)((t_end - tr_now()) * 1000);
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (left <= 0 || poll(&p, 1, left) <= 0) return 0;
        char c;
        ssize_t got = read(fd, &c, 1);
        if (got <= 0) return 0;
        if (c == '\n') break;
        buf[k++] = c;
    }
    buf[k] = 0;
    return 1;
}

/* `trainer translate --checkpoint ck [extra...]` on pipes: each of g_lines written, then its
 * translation read back before the next is written (stdin open all along), into out (a file, one
 * line each); then stdin closed. Returns 1 when every line came back in time and the program
 * exited 0. */
static int drive(const char *ck, const char *out, const char *extra1, const char *extra2,
                 const char *extra3, const char *extra4) {
    int in[2], res[2];
    if (pipe(in) || pipe(res)) return 0;
    TrArgv a = {.n = 0};
    tr_arg(&a, "%s", tr_bin());
    tr_arg(&a, "translate");
    tr_arg(&a, "--checkpoint");
    tr_arg(&a, "%s", ck);
    const char *extra[4] = {extra1, extra2, extra3, extra4};
    for (int i = 0; i < 4 && extra[i]; i++) tr_arg(&a, "%s", extra[i]);
    tr_print_argv("translate on pipes", a.v);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(in[0], 0);
        dup2(res[1], 1);
        close(in[0]), close(in[1]), close(res[0]), close(res[1]);
        execv(a.v[0], a.v);
        _exit(127);
    }
    close(in[0]), close(res[1]);
    tr_argv_free(&a);
    FILE *f = fopen(out, "w");
    int ok = pid > 0 && f;
    for (int i = 0; ok && i < 3; i++) {
        char line[4096];
        size_t len = strlen(g_lines[i]);
        ok = write(in[1], g_lines[i], len) == (ssize_t)len && write(in[1], "\n", 1) == 1;
        double t0 = tr_now();
        ok = ok && read_line_within(res[0], line, sizeof line, LINE_WAIT_MS);
        printf("  line %d: %s after %.2f s: '%s'\n", i + 1, ok ? "answered" : "NOT answered",
               tr_now() - t0, ok ? line : "");
        if (ok) fprintf(f, "%s\n", line);
    }
    close(in[1]); /* the end of the input: the program ends */
    int rc = pid > 0 ? tr_wait(pid, 60) : -1;
    close(res[0]);
    if (f) fclose(f);
    printf("  exit %d\n", rc);
    return ok && rc == 0;
}

int main(void) {
    double t_start;
    signal(SIGPIPE, SIG_IGN); /* a trainer that died: a failed write, not a killed test */
    const char *work = tr_begin("test_translate_stream", &t_start), *out, *err;
    const char *dir = test_strdup(tr_fmt("%s/A", work));
    EXPECT(tr_train(work, dir, TIMEOUT, NULL, "--set", "train.max_epochs=1", NULL) == 0,
           "the training run failed");
    const char *ck = test_strdup(tr_fmt("%s/best.ckpt", dir));
    const char *three = test_strdup(tr_fmt("%s/three.de", work));
    FILE *f = fopen(three, "w");
    for (int i = 0; f && i < 3; i++) fprintf(f, "%s\n", g_lines[i]);
    EXPECT(f && fclose(f) == 0, "cannot write %s", three);

    /* ---- greedy, line by line ---- */
    const char *piped = test_strdup(tr_fmt("%s/piped.en", work));
    EXPECT(drive(ck, piped, NULL, NULL, NULL, NULL),
           "translate on a pipe should answer each line before its input ends");
    int rc = tr_cmd(work, three, &out, &err, TIMEOUT, "translate", "--checkpoint", ck, NULL);
    EXPECT(rc == 0 && tr_count_lines(out) == 3 && test_files_equal(out, piped),
           "the piped translations should be those of the file (exit %d)", rc);

    /* ---- sampling, line by line ---- */
    EXPECT(drive(ck, piped, "--sample", "topk:5", "--seed", "3"),
           "translate --sample on a pipe should answer each line before its input ends");
    rc = tr_cmd(work, three, &out, &err, TIMEOUT, "translate", "--checkpoint", ck, "--sample",
                "topk:5", "--seed", "3", NULL);
    EXPECT(rc == 0 && test_files_equal(out, piped),
           "the piped draws should be those of the file: line i draws from (seed, i) (exit %d)",
           rc);

    /* ---- --stream with a file ---- */
    const char *src = test_strdup(tr_fmt("%s/val.de", work));
    const char *whole, *streamed;
    rc = tr_cmd(work, src, &whole, &err, TIMEOUT, "translate", "--checkpoint", ck, NULL);
    rc |= tr_cmd(work, src, &streamed, &err, TIMEOUT, "translate", "--checkpoint", ck,
                 "--stream", NULL);
    EXPECT(rc == 0 && tr_count_lines(streamed) == 100 && test_files_equal(whole, streamed),
           "--stream of a file should write what translate writes without it (exit %d)", rc);

    /* ---- gzip on a stream ---- */
    rc = tr_cmd(work, TR_DATA "/val.de.gz", &out, &err, TIMEOUT, "translate", "--checkpoint", ck,
                "--stream", NULL);
    EXPECT(rc == 1 && tr_file_contains(err, "gzip") && tr_file_contains(err, "zcat"),
           "gzip data on a stream should be refused, naming gzip (exit %d)", rc);
    return tr_finish("test_translate_stream", t_start);
}
