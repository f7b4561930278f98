/* eval/plot.h — PNG figures drawn by the gnuplot program (no image code of our own).
 *
 * Every function writes a gnuplot script into memory and pipes it to `gnuplot` (popen; the data
 * goes inline as `$name << EOD` data blocks, so no temporary data files), with gnuplot's
 * standard error in "<path>.log" next to the PNG. Terminal: pngcairo when gnuplot has it, else
 * png (libgd); text is drawn `noenhanced` and every string (pieces, titles, run names) is a
 * double-quoted gnuplot string with " and \ escaped by a backslash, so quotes, backslashes,
 * @ ^ _ & { } in pieces are drawn as they are. Control characters are drawn as spaces.
 *
 * Success means: gnuplot exited 0 and `path` exists and starts with the 8-byte PNG signature
 * 89 50 4E 47 0D 0A 1A 0A. Then the .log file is removed. On failure the script is kept in
 * "<path>.gp" and the .log too, and the message names them.
 *
 * Errors (Status, Err; docs/design.md §7): gnuplot not found on PATH ("install gnuplot, e.g.
 * apt-get install gnuplot-nox"), gnuplot failing (its exit status and the last lines of its
 * error output), the PNG missing or not a PNG, an output folder that cannot be written.
 * Programmer errors (NULL arrays, negative sizes) are CHECKs. Source: — (gnuplot's own
 * language). Everything is host memory.
 */
#ifndef TRAINER_EVAL_PLOT_H
#define TRAINER_EVAL_PLOT_H

#include "core/common.h"
#include "eval/translate.h"

/* One validation point of a run (one "val" line of metrics.jsonl). */
typedef struct {
    int epoch;       /* 1-based epoch the validation followed */
    double val_bleu; /* validation BLEU, percent 0..100 */
    double val_ppl;  /* validation perplexity (> 0; non-positive or non-finite points are left
                        out of the perplexity panel, which is log-scaled) */
    double hours;    /* training time (hours, validation included) at that point; NaN if the
                        log does not say: left out of the by-time panel */
} CurvePoint;

/* 1 if an executable `gnuplot` is on PATH; otherwise 0 and err says to install it ("install
 * gnuplot, e.g. apt-get install gnuplot-nox"). */
int plot_gnuplot_available(Err *err);

/* Attention heatmap of a (AttnMap from translate.h: w[T,S], rows = target pieces, columns =
 * source pieces, each weight in 0..1) into the PNG file path. Source pieces label the x axis
 * (below, rotated 90°), target pieces the y axis, the first target piece at the top; colour
 * scale fixed to [0, 1] (viridis-like perceptual palette, with a colour box). Image size grows
 * with the number of pieces: about 22 px per piece plus room for the labels, from 480×360 up to
 * 4000×4000 px. title may be NULL (no title).
 * Errors: a->S or a->T < 1 (nothing to draw), see the top of this file. */
Status plot_attention_png(const AttnMap *a, const char *path, const char *title, Err *err);

/* Validation curves of nruns runs into ONE PNG file path with three panels side by side
 * (multiplot): validation BLEU (percent) by epoch; validation perplexity by epoch on a
 * log-scaled y axis; validation BLEU by training time in hours (runs of different speeds or
 * budgets compared at equal time). One line with points per run, names[i] in the legend; run i has
 * npts[i] >= 0 points pts[i][0..npts[i]) (any order; drawn in the given order). A run without
 * (usable) points is left out of that panel; a panel with nothing to draw says "no validation
 * data". x axis: one tic per epoch up to 20 epochs. Size 1950×560 px. title may be NULL.
 * Errors: nruns < 1; see the top of this file. */
/* One config in the trade-off plot: its test BLEU against its size and its cost. */
typedef struct {
    const char *name;
    double bleu;    /* test BLEU, percent 0..100 (the mean over its seeds) */
    double bleu_sd; /* the seeds' sample standard deviation, percent; NaN: one seed, no bar */
    double params;  /* parameters (floats) */
    double hours;   /* training time in hours; NaN: unknown, left out of that panel */
} RunPoint;

/* Test BLEU against parameters (millions) and against training time (hours): two panels, one
 * point per config with an error bar of ± one seed standard deviation, each config its own colour
 * and symbol, named in the legend right of the second panel (the trade-offs a comparison of
 * attention kinds is read by). The size axis is log-scaled only where the sizes span more than a
 * factor of 10. Size 1400×560 px. title may be NULL. Errors: n < 1; see the top of this file. */
Status plot_tradeoff_png(const char *path, const char *title, const RunPoint *runs, int n,
                         Err *err);

Status plot_curves_png(const char *path, const char *title, int nruns, const char *const *names,
                       const CurvePoint *const *pts, const int *npts, Err *err);

/* One series of plot_series_png: n points at x[0..n) (ascending), in each panel p the value
 * y[p·n + i] ± sd[p·n + i] (y NaN: no point there; sd NaN: no bar). */
typedef struct {
    const char *name; /* the legend's entry */
    int n;
    const double *x, *y, *sd;
} PlotSeries;

/* Values against a quantity, npanels panels side by side (one per test set, say), panel p titled
 * panel_titles[p]: each series a line through its points with bars of ± sd, its own colour and
 * symbol, named in the legend right of the last panel. The x axis is log-scaled where every x
 * is positive and they span more than a factor of 10; the y axis starts at 0 where no value is
 * negative. Size (420·npanels + 240)×520 px. title may be NULL. Errors: npanels < 1 or ns < 1;
 * see the top of this file. */
Status plot_series_png(const char *path, const char *title, const char *xlabel,
                       const char *ylabel, const char *const *panel_titles, int npanels,
                       const PlotSeries *s, int ns, Err *err);

/* A figure of the caller's own: body is gnuplot commands (data blocks and plot commands, any
 * multiplot closed) that draw into the PNG file path, w×h px; this function puts the terminal
 * lines (as above) before it and `unset output` after it. The caller quotes its own strings
 * (text is drawn noenhanced). what names the figure in messages ("timing plot").
 * Errors: see the top of this file. */
Status plot_script_png(const char *path, int w, int h, const char *body, const char *what,
                       Err *err);

#endif
