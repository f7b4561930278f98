/* test_rnn_torch.c — the whole tiny RNN model against a PyTorch fixture (docs/design.md §11).
 *
 * The files tests/fixtures/rnn_tiny/NAME.txt are written by tests/reference/make_rnn_fixture.py (float64
 * PyTorch, no dropout; the format is documented there): parameters, a padded batch, the summed
 * label-smoothed loss (ε 0.1) and its gradient w.r.t. every parameter. The fixtures are committed,
 * so this test needs no PyTorch. The cases: luong_general (2+2 and 1+2 layers), luong_dot, and sdp
 * with 2 heads (its learned W_q, W_k and the score scale 1/√(head size)). For each case we build
 * the same model with rnn_create (dropout 0, input feeding, the fixture's heads), load the parameters by name (shapes checked, every declared tensor must be in
 * the fixture and vice versa), run rnn_forward_backward(train = 1, smoothing 0.1, grad_scale 1)
 * and compare:
 *   loss (train and eval pass)  |ours − ref| ≤ 1e-5·|ref|
 *   each gradient tensor        ‖ours − ref‖₂ / ‖ref‖₂ ≤ 1e-4, and elementwise
 *                               |ours − ref| ≤ 1e-4 + 1e-3·|ref|
 * then a second training pass with grad_scale 0.5 and without zeroing must add half of every
 * gradient again (they accumulate, scaled: test_check_accumulated).
 * The logits in the fixture are not compared (the model keeps them private); the out.W / out.b
 * gradients depend on them directly. Ours runs in float32, so these are float32 tolerances.
 * The fixture reader is tests/torch_fixture.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/rnn.h"
#include "data/batch.h"
#include "ops/cpu/cpu.h"
#include "testutil.h"
#include "torch_fixture.h"

static void run(const char *path) {
    Fixture fx;
    if (!fixture_load(&fx, path, "rnn_fixture")) {
        EXPECT(0, "cannot load %s", path);
        return;
    }
    int V, E, H, Le, Ld, heads = 1; /* heads: 1 where the config line has none */
    char attention[32];
    double smoothing;
    int nf = sscanf(fx.config, "%d %d %d %d %d %31s %lf %d", &V, &E, &H, &Le, &Ld, attention,
                    &smoothing, &heads);
    EXPECT((nf == 7 || nf == 8) && V == fx.V && heads >= 1, "%s: bad config line: %s", path,
           fx.config);
    AttentionKind kind;
    if (!strcmp(attention, "luong_general")) kind = ATTN_LUONG_GENERAL;
    else if (!strcmp(attention, "luong_dot")) kind = ATTN_LUONG_DOT;
    else if (!strcmp(attention, "sdp")) kind = ATTN_SDP;
    else {
        EXPECT(0, "%s: unknown attention '%s'", path, attention);
        fixture_free(&fx);
        return;
    }
    const Backend *be = backend_cpu();
    ParamSet ps;
    params_init_set(&ps, be);
    RnnModel *m;
    Err err;
    /* LSTM, input feeding, no dropout; attn_opt {0}: the kinds' defaults */
    ModelSpec spec = {.type = MODEL_RNN, .cell = CELL_LSTM, .attention = kind, .emb = E,
                      .hidden = H, .enc_layers = Le, .dec_layers = Ld, .input_feeding = 1,
                      .heads = heads};
    if (rnn_create(&m, &ps, &spec, V, &err)) {
        EXPECT(0, "rnn_create: %s", err.msg);
        fixture_free(&fx);
        return;
    }
    params_allocate(&ps);
    fixture_set_params(&fx, &ps, path);

    int B = fx.B, S = fx.S, T = fx.T;
    TokenBatch batch; /* the fixture's arrays are time-major */
    test_token_batch(&batch, B, S, T, fx.src, fx.src_len, fx.tgt_in, fx.tgt_out);
    rnn_reserve(m, B, S, T, (long)B * S, (long)B * T);
    params_zero_grad(&ps);
    double loss = rnn_forward_backward(m, &batch, (float)smoothing, 1, 99, 1.0f);
    double loss_eval = rnn_forward_backward(m, &batch, (float)smoothing, 0, 0, 1.0f);
    double lrel = fabs(loss - fx.loss) / fabs(fx.loss);
    double lrel_eval = fabs(loss_eval - fx.loss) / fabs(fx.loss);
    printf("%s: Le %d Ld %d %s, %d head%s, %zu parameters\n", path, Le, Ld, attention, heads,
           heads > 1 ? "s" : "", ps.total);
    printf("  loss ours %.9f torch %.9f rel %.2e (eval pass %.9f rel %.2e)\n", loss, fx.loss, lrel,
           loss_eval, lrel_eval);
    EXPECT(lrel <= 1e-5, "%s: loss %.9f vs %.9f (rel %.2e)", path, loss, fx.loss, lrel);
    EXPECT(lrel_eval <= 1e-5, "%s: eval loss %.9f vs %.9f (rel %.2e)", path, loss_eval, fx.loss,
           lrel_eval);
    fixture_check_grads(&fx, &ps, path, 1e-4, 1e-4);
    float *g1 = test_grad_copy(&ps); /* the gradients accumulate (rnn.h) */
    rnn_forward_backward(m, &batch, (float)smoothing, 1, 99, 0.5f);
    test_check_accumulated(g1, &ps, path, 0.5);
    free(g1);
    batch_free(&batch);
    rnn_free(m);
    params_free(&ps);
    fixture_free(&fx);
}

int main(void) {
    run("tests/fixtures/rnn_tiny/general_2x2.txt");
    run("tests/fixtures/rnn_tiny/dot_1x1.txt");
    run("tests/fixtures/rnn_tiny/general_1x2.txt");
    run("tests/fixtures/rnn_tiny/sdp_2x2.txt");
    return test_report("test_rnn_torch");
}
