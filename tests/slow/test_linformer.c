/* test_linformer.c — `trainer` with the linformer attention (src/attention/linformer.c) end to
 * end, on the tiny Transformer (tests/fixtures/tiny_transformer.ini, 2000 training and 100
 * validation pairs of Multi30k, a 500-piece vocabulary) with linformer in the encoder's
 * self-attention and the cross-attention (sdp in the decoder's self-attention):
 *  1. it trains 3 steps (exit 0, the log names the kinds) and translates a short line;
 *  2. sources longer than model.linformer_max_len = n are refused with the key and the length:
 *     `trainer translate` on a line of more than n = 128 subword tokens (exit 1, "input line 2:
 *     a source of L subword tokens is longer than model.linformer_max_len = 128"), and a
 *     training run with n = 12 whose validation set holds a longer source (exit 1 at start-up,
 *     naming the validation pair and data.val_src);
 *  3. config refusals (exit 2): data.max_len > model.linformer_max_len, linformer in the decoder's
 *     self-attention ("no causal form"), model.linformer_share = layerwise;
 *  4. `trainer translate --attention-map` refuses a linformer cross-attention (no weights to
 *     draw) with a message that says so. */
#include "trainer_run.h"

#define TIMEOUT 300.0

static const char *g_work;
static int g_run = 0;

/* `trainer train` on the slices with the small linformer Transformer and extra --set options
 * (NULL-terminated); returns the exit code and the log in *log. */
static int train(const char **log, const char *const *extra) {
    TrArgv a;
    const char *dir = tr_fmt("%s/run%02d", g_work, ++g_run);
    tr_train_argv_config(&a, "tests/fixtures/tiny_transformer.ini", g_work, dir);
    static const char *const sets[] = {
        "model.self_attention=linformer", "model.dec_self_attention=sdp",
        "model.cross_attention=linformer", "model.linformer_k=8", "model.linformer_max_len=128",
        "train.max_steps=3"};
    for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++) {
        tr_set(&a, "%s", sets[i]);
    }
    for (int i = 0; extra && extra[i]; i++) {
        tr_set(&a, "%s", extra[i]);
    }
    *log = test_strdup(tr_fmt("%s/run%02d.log", g_work, g_run));
    int rc = tr_run(a.v, *log, NULL, TIMEOUT);
    tr_argv_free(&a);
    printf("run %d: exit %d: %s\n", g_run, rc, tr_last_line(*log));
    return rc;
}

/* `trainer translate --checkpoint ckpt [--attention-map png]` on the lines of in; exit code. */
static int translate(const char *ckpt, const char *in, const char *png, const char *log) {
    TrArgv a = {{0}, 0};
    tr_arg(&a, "%s", tr_bin());
    tr_arg(&a, "translate");
    tr_arg(&a, "--checkpoint");
    tr_arg(&a, "%s", ckpt);
    if (png) {
        tr_arg(&a, "--attention-map");
        tr_arg(&a, "%s", png);
    }
    int rc = tr_run(a.v, log, in, TIMEOUT);
    tr_argv_free(&a);
    printf("translate%s: exit %d: %s\n", png ? " --attention-map" : "", rc, tr_last_line(log));
    return rc;
}

int main(void) {
    double t_start;
    char *work = tr_begin("test_linformer", &t_start);
    g_work = work;
    const char *log = NULL;

    /* 1. trains a few steps */
    int rc = train(&log, NULL);
    EXPECT(rc == 0 && tr_file_contains(log, "attention linformer/sdp/linformer"),
           "the linformer Transformer should train 3 steps (exit %d)", rc);
    if (rc != 0) tr_print_tail(log, 10);
    const char *ckpt = test_strdup(tr_fmt("%s/run01/last.ckpt", g_work));

    /* 2. a line longer than n = 128 subword tokens (and shorter than data.max_line_bytes):
     * refused by translate, naming the key */
    const char *in = test_strdup(tr_fmt("%s/in.txt", g_work));
    {
        char text[4096];
        size_t n = (size_t)snprintf(text, sizeof text, "Ein Hund läuft.\n");
        for (int i = 0; i < 30; i++) /* 900 bytes */
            n += (size_t)snprintf(text + n, sizeof text - n, "Zwei Hunde spielen im Schnee. ");
        text[n - 1] = '\n';
        EXPECT(test_write_file(in, text, n) == 0, "cannot write %s", in);
    }
    const char *tlog = test_strdup(tr_fmt("%s/translate.log", g_work));
    rc = translate(ckpt, in, NULL, tlog);
    EXPECT(rc == 1 && strstr(tr_last_line(tlog), "input line 2: a source of ") &&
               strstr(tr_last_line(tlog), "is longer than model.linformer_max_len = 128"),
           "translate of a long line: exit %d, '%s'", rc, tr_last_line(tlog));
    const char *in1 = test_strdup(tr_fmt("%s/in1.txt", g_work));
    EXPECT(test_write_file(in1, "Ein Hund läuft.\n", 17) == 0, "cannot write %s", in1);
    rc = translate(ckpt, in1, NULL, tlog);
    EXPECT(rc == 0, "translate of a short line: exit %d, %s", rc, tr_last_line(tlog));
    /* 4. no attention map for a linformer cross-attention */
    rc = translate(ckpt, in1, tr_fmt("%s/map.png", g_work), tlog);
    EXPECT(rc == 1 && strstr(tr_last_line(tlog), "has no attention weights") &&
               strstr(tr_last_line(tlog), "model.cross_attention = linformer"),
           "--attention-map: exit %d, '%s'", rc, tr_last_line(tlog));

    /* 2. a validation source longer than n: refused at start-up */
    const char *const val_long[] = {"model.linformer_max_len=12", "data.max_len=12", NULL};
    rc = train(&log, val_long);
    EXPECT(rc == 1 && strstr(tr_last_line(log), "validation pair ") &&
               strstr(tr_last_line(log), "of data.val_src = ") &&
               strstr(tr_last_line(log), "is longer than model.linformer_max_len = 12"),
           "a long validation source: exit %d, '%s'", rc, tr_last_line(log));

    /* 3. config refusals (exit 2, as every config error) */
    const char *const too_short[] = {"model.linformer_max_len=40", NULL};
    rc = train(&log, too_short);
    EXPECT(rc == 2 && strstr(tr_last_line(log), "up to 50 tokens (data.max_len = 50") &&
               strstr(tr_last_line(log), "model.linformer_max_len = 40"),
           "data.max_len > n: exit %d, '%s'", rc, tr_last_line(log));
    const char *const causal[] = {"model.dec_self_attention=linformer", NULL};
    rc = train(&log, causal);
    EXPECT(rc == 2 && strstr(tr_last_line(log), "model.dec_self_attention = linformer") &&
               strstr(tr_last_line(log), "no causal form"),
           "linformer decoder self-attention: exit %d, '%s'", rc, tr_last_line(log));
    const char *const layerwise[] = {"model.linformer_share=layerwise", NULL};
    rc = train(&log, layerwise);
    EXPECT(rc == 2 && strstr(tr_last_line(log), "model.linformer_share = layerwise"),
           "layerwise: exit %d, '%s'", rc, tr_last_line(log));
    return tr_finish("test_linformer", t_start);
}
