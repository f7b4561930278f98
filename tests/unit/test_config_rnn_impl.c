/* test_config_rnn_impl.c — model.rnn_impl = own | cudnn: the key itself (default,
 * names, round trip through a checkpoint's config text, `trainer --help`), each refusal with the
 * key name and what to do (the config's: a Transformer, the cpu; the backend's: a build without
 * cuDNN, backend_can_run and backend_open, while the config validates in every build), the
 * model's own refusal on a backend without cuDNN, and backend_info against ops/cuda/cuda.h. Runs
 * on the CPU in every build: which refusal a build gives for "no cuDNN" depends on the build
 * (none, SIMT, cuDNN found), and a build with cuDNN must accept the combination instead.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/model.h"
#include "ops/cpu/cpu.h"
#include "ops/cuda/cuda.h"
#include "testutil.h"
#include "train/config.h"

/* Defaults with the given --set assignments applied (each must parse). */
static void config_with(Config *c, const char *const *sets, int n) {
    Err err;
    config_defaults(c);
    for (int i = 0; i < n; i++)
        EXPECT(config_set(c, sets[i], &err) == STATUS_OK, "--set %s: %s", sets[i], err.msg);
}

/* config_validate of sets must fail with a message containing every one of needles[]. */
static void expect_refused(const char *const *sets, int n, const char *const *needles, int k) {
    Config c;
    Err err;
    config_with(&c, sets, n);
    err.msg[0] = 0;
    int st = config_validate(&c, &err);
    EXPECT(st != STATUS_OK, "%s ... validated", sets[n - 1]);
    for (int i = 0; i < k && st != STATUS_OK; i++)
        EXPECT(strstr(err.msg, needles[i]) != NULL, "message lacks \"%s\": %s", needles[i],
               err.msg);
    printf("refused: %s\n", err.msg);
}

static void test_key(void) {
    Config c;
    Err err;
    config_defaults(&c);
    EXPECT(c.model.rnn_impl == RNN_IMPL_OWN, "default is not own");
    EXPECT(config_validate(&c, &err) == STATUS_OK, "defaults: %s", err.msg);
    EXPECT(config_set(&c, "model.rnn_impl=cudnn", &err) == STATUS_OK, "%s", err.msg);
    EXPECT(c.model.rnn_impl == RNN_IMPL_CUDNN, "cudnn not parsed");
    EXPECT(config_set(&c, "model.rnn_impl=cuda", &err) != STATUS_OK, "cuda accepted");
    EXPECT(strstr(err.msg, "model.rnn_impl") && strstr(err.msg, "own, cudnn"),
           "unknown name message: %s", err.msg);
    /* the checkpoint stores the config as text (config_to_ini): the key must come back */
    char *ini = config_to_ini(&c);
    EXPECT(strstr(ini, "rnn_impl = cudnn") != NULL, "config_to_ini lacks rnn_impl");
    Config back;
    EXPECT(config_load_string(&back, ini, "ckpt", &err) == STATUS_OK, "%s", err.msg);
    EXPECT(back.model.rnn_impl == RNN_IMPL_CUDNN, "rnn_impl lost in the round trip");
    free(ini);
    /* documented in the key list (trainer --help) */
    FILE *f = tmpfile();
    EXPECT(f != NULL, "tmpfile");
    if (f) {
        config_print_keys(f);
        long n = ftell(f);
        rewind(f);
        char *txt = calloc((size_t)n + 1, 1);
        if (fread(txt, 1, (size_t)n, f) != (size_t)n) txt[0] = 0;
        EXPECT(strstr(txt, "model.rnn_impl") && strstr(txt, "one of: own, cudnn") &&
                   strstr(txt, "keep own"),
               "--help lacks model.rnn_impl and its decoder rule");
        free(txt);
        fclose(f);
    }
}

static void test_refusals(void) {
    /* cudnn with a Transformer */
    const char *tf[] = {"model.type=transformer", "train.device=cuda", "model.rnn_impl=cudnn"};
    const char *tf_need[] = {"model.rnn_impl = cudnn", "model.type = transformer",
                             "remove model.rnn_impl"};
    expect_refused(tf, 3, tf_need, 3);
    /* cudnn on the cpu */
    const char *cpu[] = {"model.rnn_impl=cudnn"};
    const char *cpu_need[] = {"model.rnn_impl = cudnn", "train.device = cuda",
                              "model.rnn_impl = own"};
    expect_refused(cpu, 1, cpu_need, 3);
    /* cudnn on the GPU: a valid config in every build (validation asks nothing of the build);
     * a build without cuDNN (or the SIMT build) refuses it when the backend opens, before it
     * starts anything; a build with cuDNN accepts it there */
    const char *cuda[] = {"train.device=cuda", "model.rnn_impl=cudnn"};
    Config c;
    Err err;
    config_with(&c, cuda, 2);
    EXPECT(config_validate(&c, &err) == STATUS_OK, "cudnn on cuda did not validate: %s", err.msg);
    BackendOptions bo = config_backend_options(&c);
    bo.threads = BACKEND_KEEP;
    EXPECT(bo.rnn_cudnn == 1, "config_backend_options: rnn_cudnn %d", bo.rnn_cudnn);
    char why[512] = "";
    int can = backend_can_run(&bo, why, sizeof why);
    if (!backend_cuda_has_cudnn()) {
        const char *need[] = {"model.rnn_impl = cudnn", "no cuDNN", "set model.rnn_impl = own",
                              backend_cuda_emulated() ? "SIMT" : "rebuild"};
        const Backend *be = NULL;
        err.msg[0] = 0;
        Status st = backend_open(&bo, &be, NULL, 0, &err);
        EXPECT(!can && st != STATUS_OK && !be, "a build without cuDNN ran cudnn: %d %d", can,
               (int)st);
        for (int i = 0; i < 4 && !can && st != STATUS_OK; i++)
            EXPECT(strstr(why, need[i]) && strstr(err.msg, need[i]),
                   "message lacks \"%s\": %s | %s", need[i], why, err.msg);
        printf("refused by the backend: %s\n", err.msg);
    } else {
        EXPECT(can, "a build with cuDNN refused: %s", why);
    }
    /* own on the GPU: nothing for backend_can_run to refuse (whether a GPU is there is
     * backend_open's to find out) */
    config_with(&c, cuda, 1);
    bo = config_backend_options(&c);
    EXPECT(bo.rnn_cudnn == 0 && backend_can_run(&bo, why, sizeof why),
           "own on cuda: rnn_cudnn %d, %s", bo.rnn_cudnn, why);
    /* decoder with input feeding or bahdanau: not an error (the encoder uses cuDNN) */
    const char *bah[] = {"train.device=cuda", "model.rnn_impl=cudnn", "model.attention=bahdanau",
                         "model.input_feeding=false"};
    config_with(&c, bah, 4);
    EXPECT(config_validate(&c, &err) == STATUS_OK, "bahdanau + cudnn refused: %s", err.msg);
}

/* backend_info, the way code above ops/ asks about the CUDA backend, says what cuda.h does. */
static void test_backend_info(void) {
    BackendInfo cu = backend_info(BACKEND_DEVICE_CUDA), cpu = backend_info(BACKEND_DEVICE_CPU);
    EXPECT(cu.cudnn == backend_cuda_has_cudnn() && cu.emulated == backend_cuda_emulated() &&
               cu.gpu_index == backend_cuda_device_index() &&
               !strcmp(cu.gpu_name, backend_cuda_device_name()),
           "backend_info(cuda) {%d, %d, %d, %s} differs from cuda.h's", cu.emulated, cu.cudnn,
           cu.gpu_index, cu.gpu_name);
    EXPECT(!cpu.cudnn && !cpu.emulated && cpu.gpu_index == -1 && !strcmp(cpu.gpu_name, ""),
           "backend_info(cpu) {%d, %d, %d, %s}", cpu.emulated, cpu.cudnn, cpu.gpu_index,
           cpu.gpu_name);
}

/* The model refuses cudnn on a backend without the cuDNN entries (the cpu backend here), by
 * the key's name; own builds as always. */
static void test_model_refusal(void) {
    ModelSpec s = {0};
    s.type = MODEL_RNN, s.cell = CELL_LSTM, s.attention = ATTN_LUONG_GENERAL;
    s.emb = 6, s.hidden = 8, s.enc_layers = 1, s.dec_layers = 1, s.dropout = 0.1f;
    s.input_feeding = 0, s.heads = 2, s.rnn_impl = RNN_IMPL_CUDNN;
    Model m;
    Err err;
    int st = model_create(&m, &s, 23, backend_cpu(), &err);
    EXPECT(st != STATUS_OK, "cudnn on the cpu backend built a model");
    if (st == STATUS_OK) model_free(&m);
    else
        EXPECT(strstr(err.msg, "model.rnn_impl = cudnn") && strstr(err.msg, "cpu backend") &&
                   strstr(err.msg, "set model.rnn_impl = own"),
               "model refusal message: %s", err.msg);
    printf("model refused: %s\n", err.msg);
    s.rnn_impl = RNN_IMPL_OWN;
    EXPECT(model_create(&m, &s, 23, backend_cpu(), &err) == STATUS_OK, "own: %s", err.msg);
    model_free(&m);
    /* the emulated cuda backend (SIMT build) has no cuDNN entries either */
    char why[512] = "";
    const Backend *cu = backend_cuda(why, sizeof why);
    if (cu && !backend_cuda_has_cudnn()) {
        s.rnn_impl = RNN_IMPL_CUDNN;
        st = model_create(&m, &s, 23, cu, &err);
        EXPECT(st != STATUS_OK && strstr(err.msg, "cuda backend has no cuDNN") &&
                   strstr(err.msg, "this build has no cuDNN"),
               "cudnn on a cuda backend without cuDNN: %s", st ? err.msg : "built");
        if (st == STATUS_OK) model_free(&m);
        else printf("model refused on cuda: %s\n", err.msg);
    }
    /* a Transformer with cudnn is refused by the model too */
    ModelSpec t = {0};
    t.type = MODEL_TRANSFORMER, t.d_model = 8, t.heads = 2, t.d_ff = 16, t.enc_layers = 1;
    t.dec_layers = 1, t.self_attention = ATTN_SDP, t.cross_attention = ATTN_SDP;
    t.rnn_impl = RNN_IMPL_CUDNN;
    st = model_create(&m, &t, 23, backend_cpu(), &err);
    EXPECT(st != STATUS_OK && strstr(err.msg, "model.type = transformer"),
           "transformer + cudnn: %s", st ? err.msg : "built");
    if (st == STATUS_OK) model_free(&m);
}

int main(void) {
    test_key();
    test_refusals();
    test_model_refusal();
    test_backend_info();
    return test_report("test_config_rnn_impl");
}
