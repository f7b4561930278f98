/* plot.c — PNG figures through the gnuplot program (see plot.h). */
#include "eval/plot.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const unsigned char PNG_SIGNATURE[8] = {0x89, 'P', 'N', 'G', 0x0d, 0x0a, 0x1a, 0x0a};

int plot_gnuplot_available(Err *err) {
    const char *path = getenv("PATH");
    if (!path || !*path) path = "/usr/local/bin:/usr/bin:/bin";
    const char *p = path;
    while (*p) {
        const char *q = strchr(p, ':');
        size_t len = q ? (size_t)(q - p) : strlen(p);
        char cand[4096];
        if (len == 0) snprintf(cand, sizeof cand, "./gnuplot");
        else snprintf(cand, sizeof cand, "%.*s/gnuplot", (int)len, p);
        struct stat sb;
        if (stat(cand, &sb) == 0 && S_ISREG(sb.st_mode) && access(cand, X_OK) == 0) return 1;
        if (!q) break;
        p = q + 1;
    }
    err_set(err, "the gnuplot program was not found on PATH; the PNG plots need it: install "
            "gnuplot (e.g. apt-get install gnuplot-nox) and try again");
    return 0;
}

/* Writes s as a double-quoted gnuplot string: \ and " escaped with a backslash, control
 * characters as spaces (the terminal is noenhanced, so @ ^ _ & { } are plain text). Not single
 * quotes: gnuplot 5.4 drops a single-quoted tic label that starts with '' (a piece "'s"). */
static void gp_str(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        if (*p == '"' || *p == '\\') fputc('\\', f), fputc(*p, f);
        else if (*p < 0x20 || *p == 0x7f) fputc(' ', f);
        else fputc(*p, f);
    }
    fputc('"', f);
}

/* Shell-quotes s for sh -c: '...' with ' written as '\''. */
static void sh_str(FILE *f, const char *s) {
    fputc('\'', f);
    for (const char *p = s; *p; p++) {
        if (*p == '\'') fputs("'\\''", f);
        else fputc(*p, f);
    }
    fputc('\'', f);
}

/* UTF-8 code points in s (continuation bytes not counted). */
static int utf8_len(const char *s) {
    int n = 0;
    for (const unsigned char *p = (const unsigned char *)s; p && *p; p++) n += (*p & 0xC0) != 0x80;
    return n;
}

static int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

/* The terminal lines: pngcairo when this gnuplot has it, else png (libgd). */
static void gp_terminal(FILE *f, int w, int h, const char *path) {
    fprintf(f, "set encoding utf8\n");
    fprintf(f, "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
               "  set terminal pngcairo noenhanced size %d,%d font 'DejaVu Sans,10'\n"
               "} else {\n"
               "  set terminal png noenhanced size %d,%d\n"
               "}\n", w, h, w, h);
    fprintf(f, "set output ");
    gp_str(f, path);
    fprintf(f, "\n");
}

/* The last at most n bytes of a text file into buf ("" if unreadable), without a trailing
 * newline. */
static void file_tail(const char *path, char *buf, size_t n) {
    buf[0] = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return;
    if (fseek(f, 0, SEEK_END) == 0) {
        long size = ftell(f);
        long from = size > (long)n - 1 ? size - (long)n + 1 : 0;
        if (fseek(f, from, SEEK_SET) == 0) {
            size_t r = fread(buf, 1, n - 1, f);
            buf[r] = 0;
            while (r > 0 && (buf[r - 1] == '\n' || buf[r - 1] == '\r')) buf[--r] = 0;
        }
    }
    fclose(f);
}

/* Pipes script (len bytes) to gnuplot, its stderr into "<path>.log"; then checks that path is a
 * PNG. On failure keeps the script in "<path>.gp" and says so. */
static Status run_gnuplot(const char *script, size_t len, const char *path, const char *what,
                          Err *err) {
    Status rc = STATUS_ERR;
    char logp[4200], gpp[4200];
    char *cmd = NULL;
    size_t cmdlen = 0;
    int failed_run = 0;
    struct sigaction old_pipe, ign;
    snprintf(logp, sizeof logp, "%s.log", path);
    snprintf(gpp, sizeof gpp, "%s.gp", path);
    if (!plot_gnuplot_available(err)) return err_prefix(err, "%s %s", what, path);
    if (unlink(path) != 0 && errno != ENOENT)
        return err_set(err, "%s %s: cannot replace the existing file: %s; check the folder's "
                       "permissions", what, path, strerror(errno));
    unlink(gpp);
    FILE *lf = fopen(logp, "w"); /* also checks that the folder is writable */
    if (!lf)
        return err_set(err, "%s %s: cannot write in that folder (%s: %s); create it or choose "
                       "another output folder", what, path, logp, strerror(errno));
    fclose(lf);

    FILE *cf = open_memstream(&cmd, &cmdlen);
    CHECK(cf != NULL, "open_memstream failed (out of memory)");
    fputs("gnuplot 2>", cf);
    sh_str(cf, logp);
    fclose(cf);

    /* gnuplot may exit early on an error: a write into the closed pipe must not kill us */
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    sigemptyset(&ign.sa_mask);
    sigaction(SIGPIPE, &ign, &old_pipe);
    fflush(stdout);
    fflush(stderr);
    FILE *gp = popen(cmd, "w");
    if (!gp) {
        err_set(err, "%s %s: cannot start gnuplot (popen: %s)", what, path, strerror(errno));
        goto cleanup;
    }
    size_t wrote = fwrite(script, 1, len, gp);
    int ferr = fflush(gp);
    int st = pclose(gp);
    if (st == -1) {
        err_set(err, "%s %s: waiting for gnuplot failed: %s", what, path, strerror(errno));
        failed_run = 1;
        goto cleanup;
    }
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        char tail[800];
        file_tail(logp, tail, sizeof tail);
        failed_run = 1;
        if (WIFEXITED(st) && WEXITSTATUS(st) == 127)
            err_set(err, "%s %s: the shell could not run gnuplot (exit 127: %s); install gnuplot "
                    "(e.g. apt-get install gnuplot-nox)", what, path, tail);
        else if (WIFEXITED(st))
            err_set(err, "%s %s: gnuplot failed (exit status %d): %s [script kept in %s, "
                    "gnuplot's messages in %s]", what, path, WEXITSTATUS(st), tail, gpp, logp);
        else
            err_set(err, "%s %s: gnuplot was killed by signal %d [script kept in %s]", what,
                    path, WTERMSIG(st), gpp);
        goto cleanup;
    }
    if (wrote != len || ferr != 0) {
        failed_run = 1;
        err_set(err, "%s %s: could not send the whole script to gnuplot [script kept in %s]",
                what, path, gpp);
        goto cleanup;
    }
    FILE *f = fopen(path, "rb");
    if (!f) {
        char tail[800];
        file_tail(logp, tail, sizeof tail);
        failed_run = 1;
        err_set(err, "%s %s: gnuplot exited 0 but wrote no file (%s)%s%s; check that the "
                "folder is writable and that gnuplot has the pngcairo or png terminal "
                "(gnuplot -e 'set terminal')", what, path, strerror(errno), *tail ? ": " : "",
                tail);
        goto cleanup;
    }
    unsigned char sig[8];
    size_t r = fread(sig, 1, 8, f);
    fclose(f);
    if (r != 8 || memcmp(sig, PNG_SIGNATURE, 8) != 0) {
        failed_run = 1;
        err_set(err, "%s %s: gnuplot wrote a file that is not a PNG image (%s); check gnuplot's "
                "png/pngcairo terminal (gnuplot -e 'set terminal')", what, path,
                r < 8 ? "shorter than the PNG signature" : "no PNG signature");
        goto cleanup;
    }
    unlink(logp);
    rc = STATUS_OK;
cleanup:
    sigaction(SIGPIPE, &old_pipe, NULL);
    if (failed_run) {
        FILE *s = fopen(gpp, "wb");
        if (s) {
            fwrite(script, 1, len, s);
            fclose(s);
        }
    }
    free(cmd);
    return rc;
}

Status plot_attention_png(const AttnMap *a, const char *path, const char *title, Err *err) {
    CHECK(a != NULL && path != NULL, "plot_attention_png: NULL map or path");
    if (a->S < 1 || a->T < 1)
        return err_set(err, "attention plot %s: the map is empty (%d target × %d source pieces); "
                       "nothing to draw", path, a->T, a->S);
    CHECK(a->w != NULL && a->src != NULL && a->tgt != NULL, "plot_attention_png: map arrays");
    int S = a->S, T = a->T, src_chars = 1, tgt_chars = 1;
    for (int s = 0; s < S; s++) {
        int n = utf8_len(a->src[s]);
        if (n > src_chars) src_chars = n;
    }
    for (int t = 0; t < T; t++) {
        int n = utf8_len(a->tgt[t]);
        if (n > tgt_chars) tgt_chars = n;
    }
    if (src_chars > 40) src_chars = 40;
    if (tgt_chars > 40) tgt_chars = 40;
    /* ~22 px a cell, ~8 px a label character, room for the colour box and the title */
    int w = clampi(200 + 22 * S + 8 * tgt_chars, 480, 4000);
    int h = clampi(140 + 22 * T + 8 * src_chars, 360, 4000);

    char *script = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&script, &len);
    CHECK(f != NULL, "open_memstream failed (out of memory)");
    gp_terminal(f, w, h, path);
    if (title) {
        fprintf(f, "set title ");
        gp_str(f, title);
        fprintf(f, "\n");
    }
    fprintf(f, "unset key\n"
               "set tics scale 0\n"
               "set cbrange [0:1]\n"
               "set cblabel 'attention weight'\n"
               /* viridis, sampled at 5 points */
               "set palette defined (0 '#440154', 0.25 '#3b528b', 0.5 '#21918c', "
               "0.75 '#5ec962', 1 '#fde725')\n"
               "set xrange [-0.5:%g]\n"
               "set yrange [%g:-0.5]\n" /* reversed: the first target piece at the top */
               "set xlabel 'source pieces'\n"
               "set ylabel 'target pieces'\n"
               "set xtics rotate by 90 right\n",
            S - 0.5, T - 0.5);
    fprintf(f, "set xtics (");
    for (int s = 0; s < S; s++) {
        if (s) fputs(", ", f);
        gp_str(f, a->src[s]);
        fprintf(f, " %d", s);
    }
    fprintf(f, ")\nset ytics (");
    for (int t = 0; t < T; t++) {
        if (t) fputs(", ", f);
        gp_str(f, a->tgt[t]);
        fprintf(f, " %d", t);
    }
    fprintf(f, ")\n$map << EOD\n");
    for (int t = 0; t < T; t++) {
        for (int s = 0; s < S; s++) {
            float v = a->w[(size_t)t * S + s];
            fprintf(f, "%s%.5g", s ? " " : "", isfinite(v) ? (double)v : 0.0);
        }
        fputc('\n', f);
    }
    fprintf(f, "EOD\nplot $map matrix with image\nunset output\n");
    fclose(f);
    Status rc = run_gnuplot(script, len, path, "attention plot", err);
    free(script);
    return rc;
}

/* One data block $<prefix><i> of run i's (epoch, value) pairs, or (hours, BLEU) when by_time;
 * returns the rows written. ppl != 0: perplexities, keeping only positive finite ones (log
 * scale). */
static int curve_block(FILE *f, const char *prefix, int i, const CurvePoint *p, int n, int ppl,
                       int by_time) {
    int rows = 0;
    fprintf(f, "$%s%d << EOD\n", prefix, i);
    for (int k = 0; k < n; k++) {
        double v = ppl ? p[k].val_ppl : p[k].val_bleu;
        if (!isfinite(v) || (ppl && v <= 0) || (by_time && !isfinite(p[k].hours))) continue;
        if (by_time) fprintf(f, "%.17g %.17g\n", p[k].hours, v);
        else fprintf(f, "%d %.17g\n", p[k].epoch, v);
        rows++;
    }
    fprintf(f, "EOD\n");
    return rows;
}

static void curve_panel(FILE *f, const char *prefix, int nruns, const char *const *names,
                        const int *rows, int ppl) {
    int drawn = 0;
    fprintf(f, "set title '%s'\nset ylabel '%s'\n",
            ppl ? "validation perplexity by epoch"
                : strcmp(prefix, "hours") ? "validation BLEU by epoch"
                                          : "validation BLEU by training time",
            ppl ? "perplexity (log scale)" : "BLEU (%)");
    if (ppl) fprintf(f, "set logscale y\n");
    else fprintf(f, "unset logscale y\n");
    for (int i = 0; i < nruns; i++) drawn += rows[i] > 0;
    if (!drawn) {
        fprintf(f, "unset key\nset label 1 'no validation data' at graph 0.5, graph 0.5 center\n"
                   "plot [1:2] [%s] %s notitle\nunset label 1\n", ppl ? "1:10" : "0:1",
                ppl ? "100" : "2");
        return;
    }
    fprintf(f, "plot ");
    int first = 1;
    for (int i = 0; i < nruns; i++) {
        if (rows[i] == 0) continue;
        /* the terminal's 8 colours, then again dashed with squares: series i looks the same in
         * every panel and no two of up to 16 look alike */
        int again = (i / 8) % 2;
        fprintf(f, "%s$%s%d using 1:2 with linespoints lw 2 lt %d dt %d pt %d ps 0.8 title ",
                first ? "" : ", ", prefix, i, i % 8 + 1, again ? 2 : 1, again ? 5 : 7);
        gp_str(f, names[i]);
        first = 0;
    }
    fprintf(f, "\n");
}

#define KEY_STYLE "Left reverse width 2 samplen 2" /* the curves' legends (below) */

Status plot_curves_png(const char *path, const char *title, int nruns, const char *const *names,
                       const CurvePoint *const *pts, const int *npts, Err *err) {
    CHECK(path != NULL && names != NULL && pts != NULL && npts != NULL,
          "plot_curves_png: NULL argument");
    if (nruns < 1) return err_set(err, "curves plot %s: no runs to draw", path);
    int max_epoch = 1;
    for (int i = 0; i < nruns; i++) {
        CHECK(npts[i] >= 0 && (npts[i] == 0 || pts[i] != NULL), "plot_curves_png: points");
        for (int k = 0; k < npts[i]; k++)
            if (pts[i][k].epoch > max_epoch) max_epoch = pts[i][k].epoch;
    }
    int *rows_b = xcalloc((size_t)nruns, sizeof(int)), *rows_p = xcalloc((size_t)nruns, sizeof(int));
    int *rows_h = xcalloc((size_t)nruns, sizeof(int));
    char *script = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&script, &len);
    CHECK(f != NULL, "open_memstream failed (out of memory)");
    gp_terminal(f, 1950, 560, path);
    for (int i = 0; i < nruns; i++) {
        rows_b[i] = curve_block(f, "bleu", i, pts[i], npts[i], 0, 0);
        rows_p[i] = curve_block(f, "ppl", i, pts[i], npts[i], 1, 0);
        rows_h[i] = curve_block(f, "hours", i, pts[i], npts[i], 0, 1);
    }
    fprintf(f, "set multiplot layout 1,3");
    if (title) {
        fprintf(f, " title ");
        gp_str(f, title);
    }
    /* the legends: text left-aligned after the sample, with 2 characters to spare (right-aligned,
     * gnuplot's estimate of a name's width let long names, of wide letters or underscores, run
     * past the box's left edge and the panel's) */
    fprintf(f, "\nset grid\nset key top left box opaque " KEY_STYLE "\nset xlabel 'epoch'\n");
    if (max_epoch <= 20) fprintf(f, "set xtics 1\nset xrange [0.8:%g]\n", max_epoch + 0.2);
    curve_panel(f, "bleu", nruns, names, rows_b, 0);
    fprintf(f, "set key top right box opaque " KEY_STYLE "\n");
    curve_panel(f, "ppl", nruns, names, rows_p, 1);
    fprintf(f, "set key bottom right box opaque " KEY_STYLE "\n"
               "set xtics autofreq\nset autoscale x\n"
               "set xlabel 'training time (hours)'\n");
    curve_panel(f, "hours", nruns, names, rows_h, 0);
    fprintf(f, "unset multiplot\nunset output\n");
    fclose(f);
    Status rc = run_gnuplot(script, len, path, "curves plot", err);
    free(script);
    free(rows_b);
    free(rows_p);
    free(rows_h);
    return rc;
}

/* one block per panel: a row "x y sd" per run, NaN x for a run without one (gnuplot skips it),
 * so that row i is run i in both panels; the number of runs drawn */
/* Ten strong colours (Tableau's), shared by the figures with one colour per config. */
static const char *const series_colour[10] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728",
                                              "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
                                              "#bcbd22", "#17becf"};

static int tradeoff_block(FILE *f, const char *name, const RunPoint *runs, int n, int by_time) {
    int rows = 0;
    fprintf(f, "$%s << EOD\n", name);
    for (int i = 0; i < n; i++) {
        double x = by_time ? runs[i].hours : runs[i].params / 1e6;
        int ok = isfinite(x) && isfinite(runs[i].bleu) && (by_time || x > 0);
        double sd = isfinite(runs[i].bleu_sd) ? runs[i].bleu_sd : 0.0;
        if (ok) fprintf(f, "%.17g %.17g %.17g\n", x, runs[i].bleu, sd), rows++;
        else fprintf(f, "NaN NaN 0\n");
    }
    fprintf(f, "EOD\n");
    return rows;
}

Status plot_tradeoff_png(const char *path, const char *title, const RunPoint *runs, int n,
                         Err *err) {
    CHECK(path != NULL && (n == 0 || runs != NULL), "plot_tradeoff_png: NULL argument");
    if (n < 1) return err_set(err, "trade-off plot %s: no runs to draw", path);
    char *script = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&script, &len);
    CHECK(f != NULL, "open_memstream failed (out of memory)");
    gp_terminal(f, 1400, 560, path);
    int rp = tradeoff_block(f, "params", runs, n, 0), rt = tradeoff_block(f, "hours", runs, n, 1);
    double lo = INFINITY, hi = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(runs[i].params) && runs[i].params > 0)
            lo = fmin(lo, runs[i].params), hi = fmax(hi, runs[i].params);
    int logx = hi > 10 * lo;
    fprintf(f, "set multiplot layout 1,2");
    if (title) {
        fprintf(f, " title ");
        gp_str(f, title);
    }
    fprintf(f, "\nset grid\nset ylabel 'test BLEU (%%)'\nset offsets graph 0.08, graph "
               "0.08, graph 0.1, graph 0.1\nset bars small\n");
    static const char *const names[2] = {"params", "hours"};
    const char *xl[2] = {logx ? "parameters (millions, log scale)" : "parameters (millions)",
                         "training time (hours)"};
    static const char *const tl[2] = {"test BLEU by model size", "test BLEU by training time"};
    int rows[2] = {rp, rt};
    for (int k = 0; k < 2; k++) {
        fprintf(f, "set title '%s'\nset xlabel '%s'\n%s", tl[k], xl[k],
                k == 0 && logx ? "set logscale x\n" : "unset logscale x\n");
        if (k == 0) fprintf(f, "unset key\n");
        else fprintf(f, "set key outside right top vertical Left reverse samplen 1\n");
        if (!rows[k]) {
            fprintf(f, "set label 1 'no data' at graph 0.5, graph 0.5 center\nplot [1:2] [0:1] 2 "
                       "notitle\nunset label 1\n");
            continue;
        }
        /* ten colours and point types 4–14, open and filled symbols in turn: a pair of its
         * own for each of up to 110 configs */
        fprintf(f, "plot ");
        for (int i = 0; i < n; i++) {
            fprintf(f, "%s$%s every ::%d::%d using 1:2:3 with yerrorbars lc rgb '%s' pt %d ps 1.5 "
                       "title ", i ? ", " : "", names[k], i, i, series_colour[i % 10], 4 + i % 11);
            gp_str(f, runs[i].name);
        }
        fprintf(f, "\n");
    }
    fprintf(f, "unset multiplot\nunset output\n");
    fclose(f);
    Status rc = run_gnuplot(script, len, path, "trade-off plot", err);
    free(script);
    return rc;
}

Status plot_series_png(const char *path, const char *title, const char *xlabel,
                       const char *ylabel, const char *const *panel_titles, int npanels,
                       const PlotSeries *s, int ns, Err *err) {
    CHECK(path != NULL && xlabel != NULL && ylabel != NULL && (ns == 0 || s != NULL) &&
              (npanels <= 0 || panel_titles != NULL),
          "plot_series_png: NULL argument");
    if (npanels < 1 || ns < 1) return err_set(err, "plot %s: nothing to draw", path);
    char *script = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&script, &len);
    CHECK(f != NULL, "open_memstream failed (out of memory)");
    gp_terminal(f, 420 * npanels + 240, 520, path);
    double lo = INFINITY, hi = -INFINITY;
    for (int j = 0; j < ns; j++)
        for (int i = 0; i < s[j].n; i++) lo = fmin(lo, s[j].x[i]), hi = fmax(hi, s[j].x[i]);
    int logx = lo > 0 && hi > 10 * lo, nonneg = 1; /* nonneg: every value >= 0, y from 0 */
    for (int j = 0; j < ns; j++)
        for (int i = 0; i < npanels * s[j].n; i++) nonneg &= !(s[j].y[i] < 0);
    int *rows = xcalloc((size_t)npanels * (size_t)ns, sizeof *rows);
    for (int p = 0; p < npanels; p++)
        for (int j = 0; j < ns; j++) {
            fprintf(f, "$s%d_%d << EOD\n", p, j);
            for (int i = 0; i < s[j].n; i++) {
                double y = s[j].y[p * s[j].n + i], sd = s[j].sd[p * s[j].n + i];
                if (!isfinite(y) || !isfinite(s[j].x[i])) continue;
                fprintf(f, "%.17g %.17g %.17g\n", s[j].x[i], y, isfinite(sd) ? sd : 0.0);
                rows[p * ns + j]++;
            }
            fprintf(f, "EOD\n");
        }
    fprintf(f, "set multiplot layout 1,%d", npanels);
    if (title) {
        fprintf(f, " title ");
        gp_str(f, title);
    }
    fprintf(f, "\nset grid\nset bars small\nset offsets graph 0.05, graph 0.05, graph 0.1, "
               "%s\n%s\nset xlabel ", nonneg ? "0\nset yrange [0:*]" : "graph 0.1",
            logx ? "set logscale x" : "unset logscale x");
    gp_str(f, xlabel);
    fprintf(f, "\nset ylabel ");
    gp_str(f, ylabel);
    fprintf(f, "\n");
    for (int p = 0; p < npanels; p++) {
        fprintf(f, "set title ");
        gp_str(f, panel_titles[p]);
        fprintf(f, "\n%s\n", p + 1 < npanels ? "unset key"
                                               : "set key outside right top vertical Left reverse");
        int any = 0;
        for (int j = 0; j < ns; j++) any |= rows[p * ns + j] > 0;
        if (!any) {
            fprintf(f, "set label 1 'no data' at graph 0.5, graph 0.5 center\nplot [1:2] [0:1] 2 "
                       "notitle\nunset label 1\n");
            continue;
        }
        fprintf(f, "plot ");
        for (int j = 0, first = 1; j < ns; j++) {
            if (!rows[p * ns + j]) continue;
            fprintf(f, "%s$s%d_%d using 1:2:3 with yerrorlines lc rgb '%s' pt %d ps 1.3 title ",
                    first ? "" : ", ", p, j, series_colour[j % 10], 4 + j % 11);
            gp_str(f, s[j].name);
            first = 0;
        }
        fprintf(f, "\n");
    }
    fprintf(f, "unset multiplot\nunset output\n");
    fclose(f);
    free(rows);
    Status rc = run_gnuplot(script, len, path, "plot", err);
    free(script);
    return rc;
}

Status plot_script_png(const char *path, int w, int h, const char *body, const char *what,
                       Err *err) {
    CHECK(path != NULL && body != NULL && what != NULL && w > 0 && h > 0,
          "plot_script_png: NULL argument or empty size");
    char *script = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&script, &len);
    CHECK(f != NULL, "open_memstream failed (out of memory)");
    gp_terminal(f, w, h, path);
    fputs(body, f);
    fprintf(f, "\nunset output\n");
    fclose(f);
    Status rc = run_gnuplot(script, len, path, what, err);
    free(script);
    return rc;
}
