/* runlog.c — metrics.jsonl read into a RunLog (runlog.h). */
#include "train/runlog.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

/* The number at key, or NaN when absent or not a number. */
static double num(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* The string at key into buf (n bytes; "" when absent). */
static void str(const cJSON *o, const char *key, char *buf, size_t n) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    snprintf(buf, n, "%s", cJSON_IsString(v) && v->valuestring ? v->valuestring : "");
}

/* A "val" or "avg" line into *v; 0 when a number it needs is missing. */
static int read_val(const cJSON *o, RunVal *v) {
    double e = num(o, "epoch"), ppl = num(o, "val_ppl"), bleu = num(o, "val_bleu");
    if (!isfinite(e) || !isfinite(ppl) || !isfinite(bleu)) return 0;
    double step = num(o, "step"), chrf = num(o, "val_chrf");
    *v = (RunVal){(int)e, isfinite(step) ? (long)step : 0, ppl, bleu,
                  isfinite(chrf) ? chrf : NAN, num(o, "elapsed"), num(o, "peak_rss_mb")};
    return 1;
}

Status runlog_read(const char *path, RunLog *log, Err *err) {
    memset(log, 0, sizeof *log);
    log->tok_s = NAN;
    FILE *f = fopen(path, "r");
    if (!f)
        return err_set(err, "%s: cannot read: %s; it is the metrics.jsonl that `trainer train` "
                       "writes into the run folder", path, strerror(errno));
    char *line = NULL;
    size_t cap = 0;
    int vcap = 0, scap = 0;
    double tok_sum = 0;
    long ntok = 0;
    while (getline(&line, &cap, f) != -1) {
        const char *p = line;
        while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n') p++;
        if (!*p) continue;
        log->lines++;
        cJSON *o = cJSON_Parse(p);
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "type");
        if (!cJSON_IsObject(o) || !cJSON_IsString(t)) {
            log->bad++;
            cJSON_Delete(o);
            continue;
        }
        double step = num(o, "step");
        if (isfinite(step) && (long)step > log->last_step) log->last_step = (long)step;
        const char *type = t->valuestring;
        if (!strcmp(type, "train")) {
            double v = num(o, "tok_s");
            log->ntrain++;
            if (isfinite(v)) tok_sum += v, ntok++;
        } else if (!strcmp(type, "val")) {
            if (log->nval == vcap) {
                vcap = vcap ? 2 * vcap : 16;
                log->val = xrealloc(log->val, sizeof *log->val * (size_t)vcap);
            }
            if (read_val(o, &log->val[log->nval])) log->nval++;
            else log->bad++;
        } else if (!strcmp(type, "avg")) {
            if (read_val(o, &log->avg)) log->has_avg = 1;
            else log->bad++;
        } else if (!strcmp(type, "start")) {
            if (log->nstarts == scap)
                log->starts = xrealloc(log->starts,
                                       sizeof *log->starts * (size_t)(scap = scap ? 2 * scap : 4));
            RunStart *s = &log->starts[log->nstarts++];
            memset(s, 0, sizeof *s);
            double e = num(o, "epoch"), th = num(o, "threads"), rk = num(o, "ranks");
            s->epoch = isfinite(e) ? (int)e : 0;
            s->step = isfinite(step) ? (long)step : 0;
            s->threads = isfinite(th) ? (int)th : 0;
            s->ranks = isfinite(rk) ? (int)rk : 1;
            str(o, "time", s->time, sizeof s->time);
            str(o, "revision", s->revision, sizeof s->revision);
            str(o, "cpu", s->cpu, sizeof s->cpu);
            str(o, "device", s->device, sizeof s->device);
            str(o, "gpu", s->gpu, sizeof s->gpu);
            str(o, "precision", s->precision, sizeof s->precision);
        }
        cJSON_Delete(o);
    }
    int rerr = ferror(f);
    free(line);
    fclose(f);
    if (rerr) {
        runlog_free(log);
        return err_set(err, "%s: read error: %s", path, strerror(errno));
    }
    if (ntok) log->tok_s = tok_sum / (double)ntok;
    return STATUS_OK;
}

double runlog_best_bleu(const RunLog *log, int *epoch) {
    double best = -1;
    int at = 0;
    for (int i = 0; i < log->nval; i++)
        if (log->val[i].val_bleu > best) best = log->val[i].val_bleu, at = log->val[i].epoch;
    if (epoch) *epoch = at;
    return best;
}

void runlog_free(RunLog *log) {
    if (!log) return;
    free(log->val);
    free(log->starts);
    memset(log, 0, sizeof *log);
}
