/* test_rnn_torch.c — the whole tiny RNN model against a PyTorch fixture (DESIGN.md §9).
 *
 * The files tests/fixtures/rnn_tiny/NAME.txt are written by tests/reference/make_rnn_fixture.py (float64
 * PyTorch, no dropout; the format is documented there): parameters, a padded batch, the summed
 * label-smoothed loss (ε 0.1) and its gradient w.r.t. every parameter. The fixtures are committed,
 * so this test needs no PyTorch. For each case we build the same model with rnn_create (dropout 0,
 * input feeding), load the parameters by name (shapes checked, every declared tensor must be in
 * the fixture and vice versa), run rnn_forward_backward(train = 1, smoothing 0.1, grad_scale 1)
 * and compare:
 *   loss (train and eval pass)  |ours − ref| ≤ 1e-5·|ref|
 *   each gradient tensor        ‖ours − ref‖₂ / ‖ref‖₂ ≤ 1e-4, and elementwise
 *                               |ours − ref| ≤ 1e-4 + 1e-3·|ref|
 * The logits in the fixture are not compared (the model keeps them private); the out.W / out.b
 * gradients depend on them directly. Ours runs in float32, so these are float32 tolerances. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/rnn.h"
#include "testutil.h"

typedef struct {
    char name[96];
    int ndim, shape[2];
    size_t size;
    double *w, *g;
} FixParam;

typedef struct {
    int V, E, H, Le, Ld;
    char attention[32];
    double smoothing;
    int B, S, T;
    int *src, *src_len, *tgt_in, *tgt_out;
    double loss;
    int np;
    FixParam *p;
} Fixture;

static int expect_word(FILE *f, const char *w) {
    char buf[128];
    if (fscanf(f, "%127s", buf) != 1 || strcmp(buf, w)) {
        fprintf(stderr, "fixture: expected '%s', got '%s'\n", w, buf);
        return 0;
    }
    return 1;
}

static int read_ints(FILE *f, int *x, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (fscanf(f, "%d", &x[i]) != 1) return 0;
    return 1;
}

static int read_doubles(FILE *f, double *x, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (fscanf(f, "%lf", &x[i]) != 1) return 0;
    return 1;
}

/* Reads "param|grad NAME NDIM D0 [D1]" into p (name/shape checked against p when check). */
static int read_header(FILE *f, const char *kind, FixParam *p, int check) {
    char name[96];
    int ndim, s[2] = {0, 0};
    if (!expect_word(f, kind) || fscanf(f, "%95s %d", name, &ndim) != 2 || ndim < 1 || ndim > 2)
        return 0;
    for (int d = 0; d < ndim; d++)
        if (fscanf(f, "%d", &s[d]) != 1) return 0;
    if (check) {
        if (strcmp(name, p->name) || ndim != p->ndim || s[0] != p->shape[0] || s[1] != p->shape[1]) {
            fprintf(stderr, "fixture: grad %s does not follow param %s\n", name, p->name);
            return 0;
        }
        return 1;
    }
    snprintf(p->name, sizeof p->name, "%s", name);
    p->ndim = ndim, p->shape[0] = s[0], p->shape[1] = s[1];
    p->size = (size_t)s[0] * (ndim == 2 ? s[1] : 1);
    return 1;
}

static int load_fixture(Fixture *fx, const char *path) {
    memset(fx, 0, sizeof *fx);
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "cannot open %s (run from the repository root)\n", path);
        return 0;
    }
    int c;
    while ((c = fgetc(f)) == '#') /* comment lines at the top */
        while ((c = fgetc(f)) != EOF && c != '\n') {}
    ungetc(c, f);
    int ok = expect_word(f, "rnn_fixture") && expect_word(f, "1") && expect_word(f, "config") &&
             fscanf(f, "%d %d %d %d %d %31s %lf", &fx->V, &fx->E, &fx->H, &fx->Le, &fx->Ld,
                    fx->attention, &fx->smoothing) == 7 &&
             expect_word(f, "batch") && fscanf(f, "%d %d %d", &fx->B, &fx->S, &fx->T) == 3;
    if (ok) {
        size_t SB = (size_t)fx->S * fx->B, TB = (size_t)fx->T * fx->B;
        fx->src = xmalloc(sizeof(int) * SB), fx->src_len = xmalloc(sizeof(int) * fx->B);
        fx->tgt_in = xmalloc(sizeof(int) * TB), fx->tgt_out = xmalloc(sizeof(int) * TB);
        ok = expect_word(f, "src") && read_ints(f, fx->src, SB) && expect_word(f, "src_len") &&
             read_ints(f, fx->src_len, fx->B) && expect_word(f, "tgt_in") &&
             read_ints(f, fx->tgt_in, TB) && expect_word(f, "tgt_out") &&
             read_ints(f, fx->tgt_out, TB) && expect_word(f, "loss") &&
             fscanf(f, "%lf", &fx->loss) == 1;
    }
    if (ok) { /* logits: read past them */
        int T = 0, B = 0, V = 0;
        ok = expect_word(f, "logits") && fscanf(f, "%d %d %d", &T, &B, &V) == 3 && T == fx->T &&
             B == fx->B && V == fx->V;
        if (ok) { /* T, B and V are set (and checked) only when the header read */
            double *tmp = xmalloc(sizeof(double) * (size_t)T * B * V);
            ok = read_doubles(f, tmp, (size_t)T * B * V);
            free(tmp);
        }
    }
    ok = ok && expect_word(f, "nparams") && fscanf(f, "%d", &fx->np) == 1 && fx->np > 0;
    if (ok) {
        fx->p = xcalloc(fx->np, sizeof *fx->p);
        for (int i = 0; ok && i < fx->np; i++) {
            FixParam *p = &fx->p[i];
            ok = read_header(f, "param", p, 0);
            if (ok) p->w = xmalloc(sizeof(double) * p->size), p->g = xmalloc(sizeof(double) * p->size);
            ok = ok && read_doubles(f, p->w, p->size);
        }
        for (int i = 0; ok && i < fx->np; i++)
            ok = read_header(f, "grad", &fx->p[i], 1) && read_doubles(f, fx->p[i].g, fx->p[i].size);
        ok = ok && expect_word(f, "end");
    }
    fclose(f);
    if (!ok) fprintf(stderr, "%s: malformed fixture\n", path);
    return ok;
}

static void free_fixture(Fixture *fx) {
    for (int i = 0; i < fx->np; i++) free(fx->p[i].w), free(fx->p[i].g);
    free(fx->p), free(fx->src), free(fx->src_len), free(fx->tgt_in), free(fx->tgt_out);
}

static void run(const char *path) {
    Fixture fx;
    if (!load_fixture(&fx, path)) {
        EXPECT(0, "cannot load %s", path);
        return;
    }
    AttentionKind kind;
    if (!strcmp(fx.attention, "luong_general")) kind = ATTN_LUONG_GENERAL;
    else if (!strcmp(fx.attention, "luong_dot")) kind = ATTN_LUONG_DOT;
    else {
        EXPECT(0, "%s: unknown attention '%s'", path, fx.attention);
        free_fixture(&fx);
        return;
    }
    const Backend *be = backend_cpu();
    ParamSet ps;
    params_init_set(&ps, be);
    RnnModel *m;
    Err err;
    if (rnn_create(&m, &ps, fx.V, fx.E, fx.H, fx.Le, fx.Ld, 0.0f, 0, 1, kind, &err)) {
        EXPECT(0, "rnn_create: %s", err.msg);
        free_fixture(&fx);
        return;
    }
    params_allocate(&ps);
    /* parameters by name: every declared tensor must be in the fixture, with the same shape */
    int loaded = 0;
    char *used = xcalloc(fx.np, 1);
    for (int i = 0; i < ps.n; i++) {
        ParamSpec *s = &ps.specs[i];
        int j = 0;
        while (j < fx.np && strcmp(fx.p[j].name, s->name)) j++;
        if (j == fx.np) {
            EXPECT(0, "%s: parameter %s is not in the fixture", path, s->name);
            continue;
        }
        FixParam *p = &fx.p[j];
        int same = s->size == p->size && s->ndim == p->ndim && s->shape[0] == p->shape[0] &&
                   (s->ndim < 2 || s->shape[1] == p->shape[1]);
        EXPECT(same, "%s: %s has shape [%d,%d] (%zu) here, [%d,%d] in the fixture", path,
               s->name, s->shape[0], s->ndim > 1 ? s->shape[1] : 0, s->size, p->shape[0],
               p->shape[1]);
        if (!same) continue;
        for (size_t k = 0; k < s->size; k++) ps.data[s->offset + k] = (float)p->w[k];
        used[j] = 1, loaded++;
    }
    for (int j = 0; j < fx.np; j++)
        EXPECT(used[j], "%s: fixture tensor %s is not a parameter of our model", path, fx.p[j].name);
    EXPECT(loaded == ps.n && loaded == fx.np, "%s: loaded %d of %d tensors (fixture has %d)", path,
           loaded, ps.n, fx.np);

    int B = fx.B, S = fx.S, T = fx.T;
    float *mask = xmalloc(sizeof(float) * S * B);
    for (int t = 0; t < S; t++)
        for (int b = 0; b < B; b++) mask[t * B + b] = t < fx.src_len[b] ? 1.0f : 0.0f;
    RnnBatch batch = {B, S, T, fx.src, fx.src_len, mask, fx.tgt_in, fx.tgt_out};
    rnn_reserve(m, B, S, T, (long)B * S, (long)B * T);
    params_zero_grad(&ps);
    double loss = rnn_forward_backward(m, &batch, (float)fx.smoothing, 1, 99, 1.0f);
    double loss_eval = rnn_forward_backward(m, &batch, (float)fx.smoothing, 0, 0, 1.0f);
    double lrel = fabs(loss - fx.loss) / fabs(fx.loss);
    double lrel_eval = fabs(loss_eval - fx.loss) / fabs(fx.loss);
    printf("%s: Le %d Ld %d %s, %zu parameters\n", path, fx.Le, fx.Ld, fx.attention, ps.total);
    printf("  loss ours %.9f torch %.9f rel %.2e (eval pass %.9f rel %.2e)\n", loss, fx.loss, lrel,
           loss_eval, lrel_eval);
    EXPECT(lrel <= 1e-5, "%s: loss %.9f vs %.9f (rel %.2e)", path, loss, fx.loss, lrel);
    EXPECT(lrel_eval <= 1e-5, "%s: eval loss %.9f vs %.9f (rel %.2e)", path, loss_eval, fx.loss,
           lrel_eval);

    double worst = 0;
    for (int i = 0; i < ps.n; i++) {
        ParamSpec *s = &ps.specs[i];
        int j = 0;
        while (j < fx.np && strcmp(fx.p[j].name, s->name)) j++;
        if (j == fx.np || fx.p[j].size != s->size) continue;
        const double *ref = fx.p[j].g;
        const float *g = ps.grad + s->offset;
        double dn = 0, rn = 0, maxabs = 0;
        size_t bad = 0, firstbad = 0;
        for (size_t k = 0; k < s->size; k++) {
            double d = (double)g[k] - ref[k];
            dn += d * d, rn += ref[k] * ref[k];
            if (fabs(d) > maxabs) maxabs = fabs(d);
            if (fabs(d) > 1e-4 + 1e-3 * fabs(ref[k]) && !bad++) firstbad = k;
        }
        double rel = rn > 0 ? sqrt(dn) / sqrt(rn) : sqrt(dn);
        if (rel > worst) worst = rel;
        printf("  %-18s %5zu  |ref| %.3e  rel %.2e  max abs %.2e%s\n", s->name, s->size, sqrt(rn),
               rel, maxabs, rel > 1e-4 || bad ? "  FAIL" : "");
        EXPECT(rel <= 1e-4, "%s: gradient of %s: relative error %.2e", path, s->name, rel);
        EXPECT(bad == 0, "%s: gradient of %s: %zu elements off, first [%zu] ours %.8g torch %.8g",
               path, s->name, bad, firstbad, g[firstbad], ref[firstbad]);
    }
    printf("  worst gradient relative error %.2e\n", worst);
    free(used);
    free(mask);
    rnn_free(m);
    params_free(&ps);
    free_fixture(&fx);
}

int main(void) {
    run("tests/fixtures/rnn_tiny/general_2x2.txt");
    run("tests/fixtures/rnn_tiny/dot_1x1.txt");
    run("tests/fixtures/rnn_tiny/general_1x2.txt");
    return test_report("test_rnn_torch");
}
