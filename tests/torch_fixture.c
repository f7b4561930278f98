/* torch_fixture.c — see torch_fixture.h. */
#include "torch_fixture.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

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

int fixture_load(Fixture *fx, const char *path, const char *magic) {
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
    int ok = expect_word(f, magic) && expect_word(f, "1") && expect_word(f, "config") &&
             fgets(fx->config, sizeof fx->config, f) && expect_word(f, "batch") &&
             (fx->config[strcspn(fx->config, "\n")] = 0, 1) &&
             fscanf(f, "%d %d %d", &fx->B, &fx->S, &fx->T) == 3;
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
    if (ok) {
        int T, B;
        ok = expect_word(f, "logits") && fscanf(f, "%d %d %d", &T, &B, &fx->V) == 3 &&
             T == fx->T && B == fx->B && fx->V > 0;
        if (ok) fx->logits = xmalloc(sizeof(double) * (size_t)T * B * fx->V);
        ok = ok && read_doubles(f, fx->logits, (size_t)T * B * fx->V);
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

void fixture_free(Fixture *fx) {
    for (int i = 0; i < fx->np; i++) free(fx->p[i].w), free(fx->p[i].g);
    free(fx->p), free(fx->src), free(fx->src_len), free(fx->tgt_in), free(fx->tgt_out);
    free(fx->logits);
    memset(fx, 0, sizeof *fx);
}

static const FixParam *find(const Fixture *fx, const char *name) {
    for (int j = 0; j < fx->np; j++)
        if (!strcmp(fx->p[j].name, name)) return &fx->p[j];
    return NULL;
}

int fixture_set_params(const Fixture *fx, ParamSet *ps, const char *path) {
    int loaded = 0;
    for (int i = 0; i < ps->n; i++) {
        ParamSpec *s = &ps->specs[i];
        const FixParam *p = find(fx, s->name);
        if (!p) {
            EXPECT(0, "%s: parameter %s is not in the fixture", path, s->name);
            continue;
        }
        int same = s->size == p->size && s->ndim == p->ndim && s->shape[0] == p->shape[0] &&
                   (s->ndim < 2 || s->shape[1] == p->shape[1]);
        EXPECT(same, "%s: %s has shape [%d,%d] (%zu) here, [%d,%d] in the fixture", path,
               s->name, s->shape[0], s->ndim > 1 ? s->shape[1] : 0, s->size, p->shape[0],
               p->shape[1]);
        if (!same) continue;
        float *h = xmalloc(sizeof(float) * s->size);
        for (size_t k = 0; k < s->size; k++) h[k] = (float)p->w[k];
        ps->be->upload(ps->data + s->offset, h, sizeof(float) * s->size);
        free(h);
        loaded++;
    }
    EXPECT(loaded == ps->n && loaded == fx->np, "%s: loaded %d of %d tensors (fixture has %d)",
           path, loaded, ps->n, fx->np);
    return loaded;
}

double fixture_check_grads(const Fixture *fx, const ParamSet *ps, const char *path,
                           double rel_tol, double abs_tol) {
    double worst = 0;
    for (int i = 0; i < ps->n; i++) {
        const ParamSpec *s = &ps->specs[i];
        const FixParam *p = find(fx, s->name);
        if (!p || p->size != s->size) continue;
        float *g = xmalloc(sizeof(float) * s->size);
        ps->be->download(g, ps->grad + s->offset, sizeof(float) * s->size);
        double dn = 0, rn = 0, maxabs = 0;
        size_t bad = 0, firstbad = 0;
        for (size_t k = 0; k < s->size; k++) {
            double d = (double)g[k] - p->g[k];
            dn += d * d, rn += p->g[k] * p->g[k];
            if (fabs(d) > maxabs) maxabs = fabs(d);
            if (fabs(d) > abs_tol + 10 * rel_tol * fabs(p->g[k]) && !bad++) firstbad = k;
        }
        /* a tensor whose true gradient is ~0 (a key bias under softmax attention: every score
         * of a row moves by the same q·b_k) is compared on a floor of 0.1 */
        double rel = sqrt(dn) / fmax(sqrt(rn), 0.1);
        if (rel > worst) worst = rel;
        printf("  %-22s %5zu  |ref| %.3e  rel %.2e  max abs %.2e%s\n", s->name, s->size, sqrt(rn),
               rel, maxabs, rel > rel_tol || bad ? "  FAIL" : "");
        EXPECT(rel <= rel_tol, "%s: gradient of %s: relative error %.2e", path, s->name, rel);
        EXPECT(bad == 0, "%s: gradient of %s: %zu elements off, first [%zu] ours %.8g torch %.8g",
               path, s->name, bad, firstbad, g[firstbad], p->g[firstbad]);
        free(g);
    }
    printf("  worst gradient relative error %.2e\n", worst);
    return worst;
}
