#define _XOPEN_SOURCE 700 /* nftw */
#include "testutil.h"

#include <dirent.h>
#include <ftw.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "data/batch.h"

int test_failures = 0;
int test_checks = 0;

void test_failed_now(void) {
    static int fast = -1;
    if (fast < 0) {
        const char *e = getenv("TEST_FAIL_FAST");
        fast = e && strcmp(e, "1") == 0;
    }
    if (fast) {
        fprintf(stderr, "TEST_FAIL_FAST: stopping at the first failed check\n");
        exit(1);
    }
}

int test_report(const char *name) {
    printf("%s: %d checks, %d failed\n", name, test_checks, test_failures);
    return test_failures ? 1 : 0;
}

/* The directories test_tmpdir made, removed at exit by the process that made them (a forked
 * child that calls exit() must not remove its parent's files) unless a check failed. */
static char *tmpdirs[64];
static int n_tmpdirs;
static pid_t tmpdir_owner;

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    return remove(path) == 0 ? 0 : (perror(path), 0);
}

static void remove_tmpdirs(void) {
    if (getpid() != tmpdir_owner) return;
    for (int i = 0; i < n_tmpdirs; i++) {
        if (test_failures)
            fprintf(stderr, "kept %s for inspection (a check failed)\n", tmpdirs[i]);
        else
            nftw(tmpdirs[i], remove_entry, 16, FTW_DEPTH | FTW_PHYS);
        free(tmpdirs[i]);
    }
    n_tmpdirs = 0;
}

const char *test_tmpdir(void) {
    static char buf[4096];
    const char *base = getenv("TMPDIR");
    snprintf(buf, sizeof buf, "%s/trainer-test-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(buf)) {
        perror("mkdtemp");
        exit(2);
    }
    if (n_tmpdirs < (int)(sizeof tmpdirs / sizeof *tmpdirs)) {
        if (n_tmpdirs == 0 && getpid() != tmpdir_owner) {
            tmpdir_owner = getpid();
            atexit(remove_tmpdirs);
        }
        tmpdirs[n_tmpdirs++] = strdup(buf);
    }
    return buf;
}

int test_write_file(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t w = fwrite(data, 1, n, f);
    int rc = fclose(f);
    return (w == n && rc == 0) ? 0 : -1;
}

char *test_read_file(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap + 1);
    size_t r;
    while ((r = fread(buf + len, 1, cap - len, f)) > 0) {
        len += r;
        if (len == cap) {
            cap *= 2;
            buf = realloc(buf, cap + 1);
        }
    }
    fclose(f);
    buf[len] = 0;
    if (n) *n = len;
    return buf;
}

void test_write_text(const char *path, const char *text) {
    if (test_write_file(path, text, strlen(text)) != 0) {
        fprintf(stderr, "FAIL: cannot write %s\n", path);
        exit(1);
    }
}

int test_files_equal(const char *a, const char *b) {
    size_t na = 0, nb = 0;
    char *x = test_read_file(a, &na), *y = test_read_file(b, &nb);
    int same = x && y && na == nb && memcmp(x, y, na) == 0;
    free(x);
    free(y);
    return same;
}

int test_count_temp_files(const char *dir, int unlink_them) {
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL)
        if (strstr(e->d_name, ".tmp.")) {
            n++;
            if (unlink_them) {
                char path[4096];
                snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
                unlink(path);
            }
        }
    if (d) closedir(d);
    return n;
}

long test_grad_mismatches(const float *a, const float *ref, size_t n, double atol, double rtol,
                          double *worst) {
    long bad = 0;
    *worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)ref[i]);
        if (!(d <= atol + rtol * fabs((double)ref[i]))) bad++;
        if (d > *worst) *worst = d;
    }
    return bad;
}

void *test_calloc(size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size);
    if (!p) {
        perror("calloc");
        exit(2);
    }
    return p;
}

double *test_dnew(size_t n) { return test_calloc(n, sizeof(double)); }

const char *test_strdup(const char *s) {
    static char **kept;
    static size_t n, cap;
    if (n == cap) {
        cap = cap ? 2 * cap : 64;
        kept = realloc(kept, cap * sizeof *kept);
        if (!kept) abort();
    }
    size_t len = strlen(s) + 1;
    char *d = malloc(len);
    if (!d) abort();
    memcpy(d, s, len);
    kept[n++] = d;
    return d;
}

int test_sanitized(void) {
    const char *v = getenv("TRAINER_SANITIZE");
    return v && strcmp(v, "1") == 0;
}

int test_fd_samples(int n) { return test_sanitized() && n > 8 ? 8 : n; }

void test_token_batch(TokenBatch *tb, int B, int S, int T, const int *src, const int *src_len,
                      const int *tgt_in, const int *tgt_out) {
    if (!tgt_in) T = 1;
    batch_alloc(tb, B, S, T, (long)B * S, (long)B * T);
    tb->B = B, tb->S = S, tb->T = T;
    tb->src_tokens = tb->tgt_tokens = 0;
    for (int b = 0; b < B; b++) {
        tb->src_len[b] = src_len[b];
        tb->src_tokens += src_len[b];
        for (int s = 0; s < S; s++) {
            tb->src[b * S + s] = src[s * B + b];
            tb->src_mask[b * S + s] = s < src_len[b] ? 1.0f : 0.0f;
        }
        tb->tgt_len[b] = 0;
        for (int t = 0; t < T; t++) {
            int in = tgt_in ? tgt_in[t * B + b] : TOKEN_BOS;
            int out = tgt_out ? tgt_out[t * B + b] : TOKEN_PAD;
            tb->tgt_in[b * T + t] = in, tb->tgt_out[b * T + t] = out;
            if (in != TOKEN_PAD) tb->tgt_len[b] = t + 1;
            if (out != TOKEN_PAD) {
                tb->tgt_row[tb->tgt_tokens] = b * T + t;
                tb->tgt_row_tm[tb->tgt_tokens] = t * B + b;
                tb->tgt_row_id[tb->tgt_tokens++] = out;
            }
        }
    }
}

/* One central difference of loss at x[i] with step eps; x[i] restored. */
static double fd_central(float *x, size_t i, float eps, FdLoss loss, void *ctx) {
    float x0 = x[i], xp = x0 + eps, xm = x0 - eps;
    x[i] = xp;
    double lp = loss(ctx);
    x[i] = xm;
    double lm = loss(ctx);
    x[i] = x0;
    return (lp - lm) / ((double)xp - (double)xm);
}

static int fd_agrees(double an, double num, const FdOptions *o) {
    return fabs(an - num) <= o->atol + o->rtol * fabs(num);
}

FdResult fd_compare(const char *what, float *x, size_t n, size_t stride, const float *analytic,
                    FdLoss loss, void *ctx, const FdOptions *opt) {
    FdResult r = {0, 0, 0, 0.0, 0.0, 0.0, 0.0};
    for (size_t i = 0; i < n; i += stride ? stride : 1) {
        double an = analytic[i], num = fd_central(x, i, opt->eps, loss, ctx);
        double d = fabs(an - num);
        r.n++;
        r.diff2 += (an - num) * (an - num), r.num2 += num * num;
        if (isnan(d)) d = INFINITY;
        if (d > r.max_abs) r.max_abs = d;
        if (fabs(num) >= opt->rel_floor && d / fabs(num) > r.max_rel) r.max_rel = d / fabs(num);
        if (fd_agrees(an, num, opt)) continue;
        int ok = 0;
        if (opt->retry_eps[0] > 0) r.retried++;
        for (int k = 0; k < 2 && !ok; k++)
            if (opt->retry_eps[k] > 0)
                ok = fd_agrees(an, fd_central(x, i, opt->retry_eps[k], loss, ctx), opt);
        if (ok) continue;
        if (r.bad++ < 6)
            fprintf(stderr, "  %s[%zu]: analytic %.9g, numeric %.9g (diff %.3g)\n", what, i, an,
                    num, fabs(an - num));
    }
    return r;
}

void test_random_encoded(Encoded *e, Rng *rng, long n, int maxlen, int V) {
    memset(e, 0, sizeof *e);
    e->n = n;
    e->src_off = xmalloc(sizeof(int64_t) * (n + 1));
    e->tgt_off = xmalloc(sizeof(int64_t) * (n + 1));
    e->src_ids = xmalloc(sizeof(int32_t) * n * maxlen);
    e->tgt_ids = xmalloc(sizeof(int32_t) * n * maxlen);
    e->src_off[0] = e->tgt_off[0] = 0;
    for (long i = 0; i < n; i++) {
        int s = 1 + (int)rng_below(rng, maxlen), t = 1 + (int)rng_below(rng, maxlen);
        for (int k = 0; k < s; k++) e->src_ids[e->src_off[i] + k] = 4 + (int)rng_below(rng, V - 4);
        for (int k = 0; k < t; k++) e->tgt_ids[e->tgt_off[i] + k] = 4 + (int)rng_below(rng, V - 4);
        e->src_off[i + 1] = e->src_off[i] + s;
        e->tgt_off[i + 1] = e->tgt_off[i] + t;
    }
}

float *test_to_host(const Backend *be, const float *p, size_t n) {
    float *h = xmalloc(sizeof(float) * (n ? n : 1));
    be->download(h, p, sizeof(float) * n);
    return h;
}

float *test_grad_copy(const ParamSet *ps) { return test_to_host(ps->be, ps->grad, ps->total); }

double test_rel_err(const float *a, const float *b, size_t n, double *bmax_out) {
    double dmax = 0.0, bmax = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        dmax = test_max_nan(dmax, d);
        if (fabs((double)b[i]) > bmax) bmax = fabs((double)b[i]);
    }
    if (bmax_out) *bmax_out = bmax;
    return bmax > 0.0 ? dmax / bmax : dmax;
}

static Backend hooked_be;
static void *(*hooked_alloc_of)(size_t bytes);
static void (*alloc_hook)(void *caller);

static void *hooked_alloc(size_t bytes) {
    alloc_hook(__builtin_return_address(0));
    return hooked_alloc_of(bytes);
}

const Backend *test_alloc_hooked(const Backend *be, void (*hook)(void *caller)) {
    hooked_be = *be;
    hooked_alloc_of = be->alloc;
    alloc_hook = hook;
    hooked_be.alloc = hooked_alloc;
    return &hooked_be;
}

void test_check_accumulated(const float *before, const ParamSet *ps, const char *path,
                            double scale) {
    float *g = test_grad_copy(ps);
    int bad = 0;
    /* a tensor whose gradient is 0 in exact arithmetic (a key bias under softmax) holds rounding
     * residue that another summation order changes wholesale: its floor is the model's scale */
    double top = 0;
    for (size_t k = 0; k < ps->total; k++) top = fmax(top, fabs((1.0 + scale) * before[k]));
    for (int i = 0; i < ps->n; i++) {
        const ParamSpec *s = &ps->specs[i];
        double dmax = 0, ref = 0;
        for (size_t k = s->offset; k < s->offset + s->size; k++) {
            double want = (1.0 + scale) * before[k];
            dmax = fmax(dmax, fabs(g[k] - want));
            ref = fmax(ref, fabs(want));
        }
        double tol = 1e-5 * fmax(ref, 1e-3 * top);
        EXPECT(dmax <= tol, "%s: after a second training pass with grad_scale %g and no "
               "zeroing, the gradient of %s is not %g times the first's (max |g - want| %.3g, "
               "max |want| %.3g, of the model %.3g): a backward that overwrites, or ignores "
               "grad_scale", path, scale, s->name, 1.0 + scale, dmax, ref, top);
        bad += !(dmax <= tol);
    }
    printf("  a second pass (grad_scale %g) without zeroing adds %g times every gradient: %s\n",
           scale, scale, bad ? "FAIL" : "ok");
    free(g);
}

int test_random_corpus(TestCorpus *c, Rng *rng, long n, int maxlen, int V, int budget) {
    memset(c, 0, sizeof *c);
    test_random_encoded(&c->e, rng, n, maxlen, V);
    c->nkeep = batch_filter(&c->e, maxlen, &c->keep);
    Err err;
    if (batch_plan(&c->plan, &c->e, c->keep, c->nkeep, budget, rng, &err)) {
        EXPECT(0, "batch_plan: %s", err.msg);
        return 1;
    }
    return 0;
}

void test_random_corpus_free(TestCorpus *c) {
    batch_plan_free(&c->plan);
    free(c->keep);
    encoded_free(&c->e);
    memset(c, 0, sizeof *c);
}

void test_random_src(int *ids, int T, int B, const int *len, int V, Rng *rng) {
    for (int t = 0; t < T; t++)
        for (int b = 0; b < B; b++)
            ids[t * B + b] = t < len[b] ? 4 + (int)rng_below(rng, V - 4) : TOKEN_PAD;
}

void test_random_tgt(int *tin, int *tout, int T, int B, const int *len, int V, Rng *rng) {
    for (int t = 0; t < T; t++)
        for (int b = 0; b < B; b++)
            tin[t * B + b] = t == 0         ? TOKEN_BOS
                             : t < len[b]   ? 4 + (int)rng_below(rng, V - 4)
                                            : TOKEN_PAD;
    for (int t = 0; t < T; t++)
        for (int b = 0; b < B; b++)
            tout[t * B + b] = t + 1 < len[b]    ? tin[(t + 1) * B + b]
                              : t + 1 == len[b] ? TOKEN_EOS
                                                : TOKEN_PAD;
}
