/* runlog.c — metrics.jsonl (runlog.h): read into a RunLog, trimmed on resume, and its lines
 * written. */
#include "train/runlog.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

/* The number at key, or NaN when absent or not a number. */
static double num(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* A perplexity at key: its number, +inf for null (the writer's overflow), NaN when absent. */
static double ppl_num(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNull(v) ? INFINITY : num(o, key);
}

/* The string at key into buf (n bytes; "" when absent). */
static void str(const cJSON *o, const char *key, char *buf, size_t n) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    snprintf(buf, n, "%s", cJSON_IsString(v) && v->valuestring ? v->valuestring : "");
}

/* A "val" or "avg" line into *v; 0 when a number it needs is missing. */
static int read_val(const cJSON *o, RunVal *v) {
    double e = num(o, "epoch"), ppl = ppl_num(o, "val_ppl"), bleu = num(o, "val_bleu");
    if (!isfinite(e) || isnan(ppl) || !isfinite(bleu)) return 0; /* ppl may be +inf */
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

Status runlog_trim(const char *path, long step, Err *err) {
    FILE *in = fopen(path, "r");
    if (!in) return STATUS_OK; /* nothing logged yet */
    char *line = NULL, *kept = NULL;
    size_t cap = 0, n = 0, kcap = 0;
    long dropped = 0;
    ssize_t len;
    while ((len = getline(&line, &cap, in)) > 0) {
        const char *k = strstr(line, "\"step\": ");
        if (line[len - 1] != '\n' || (k && strtol(k + 8, NULL, 10) > step)) {
            /* a line cut short by the crash, or one the resumed run will write again */
            dropped++;
            continue;
        }
        if (n + (size_t)len > kcap) kcap = 2 * (n + (size_t)len), kept = xrealloc(kept, kcap);
        memcpy(kept + n, line, (size_t)len);
        n += (size_t)len;
    }
    free(line);
    fclose(in);
    Status s = write_file_atomic(path, kept ? kept : "", n, err);
    free(kept);
    if (!s && dropped)
        printf("metrics: dropped %ld lines logged after step %ld by the interrupted run\n",
               dropped, step);
    return s;
}

void runlog_add_start_fields(cJSON *o, const RunStart *s) {
    cJSON_AddStringToObject(o, "time", s->time);
    cJSON_AddStringToObject(o, "revision", s->revision);
    cJSON_AddStringToObject(o, "cpu", s->cpu);
    cJSON_AddStringToObject(o, "device", s->device);
    cJSON_AddStringToObject(o, "gpu", s->gpu);
    cJSON_AddNumberToObject(o, "threads", s->threads);
    cJSON_AddNumberToObject(o, "ranks", s->ranks);
    cJSON_AddStringToObject(o, "precision", s->precision);
}

void runlog_write_start(FILE *f, const RunStart *s) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "type", "start");
    cJSON_AddNumberToObject(o, "epoch", s->epoch);
    cJSON_AddNumberToObject(o, "step", (double)s->step);
    runlog_add_start_fields(o, s);
    char *line = cJSON_PrintUnformatted(o);
    fprintf(f, "%s\n", line);
    fflush(f);
    cJSON_free(line);
    cJSON_Delete(o);
}

/* ", " (unless first) and "key": v to f: v in fmt (a printf format of one double), in %.17g
 * from 1e15 on (fmt's digits would run to hundreds), and null when v is not finite — JSON has
 * no inf or NaN, and a reader takes null as infinite (runlog_read). */
static void put_num(FILE *f, int first, const char *key, const char *fmt, double v) {
    fprintf(f, "%s\"%s\": ", first ? "" : ", ", key);
    if (!isfinite(v)) fprintf(f, "null");
    else fprintf(f, fabs(v) >= 1e15 ? "%.17g" : fmt, v);
}

void runlog_write_train(FILE *f, const RunTrain *t) {
    fprintf(f, "{\"type\": \"train\", \"epoch\": %d, \"step\": %ld", t->epoch, t->step);
    put_num(f, 0, "loss", "%.17g", t->loss);
    put_num(f, 0, "ppl", "%.4f", exp(t->loss)); /* inf past a loss of 709.78 nats: null */
    put_num(f, 0, "lr", "%.6g", t->lr);
    put_num(f, 0, "tok_s", "%.1f", t->tok_s);
    put_num(f, 0, "elapsed", "%.1f", t->elapsed);
    if (t->ranks > 1) {
        fprintf(f, ", \"ranks\": %d", t->ranks);
        put_num(f, 0, "compute_s", "%.6f", t->compute_s);
        put_num(f, 0, "allreduce_s", "%.6f", t->allreduce_s);
    }
    fprintf(f, "}\n");
    fflush(f);
}

void runlog_write_val(FILE *f, const RunVal *v, double lr) {
    fprintf(f, "{\"type\": \"val\", \"epoch\": %d, \"step\": %ld", v->epoch, v->step);
    put_num(f, 0, "val_ppl", "%.4f", v->val_ppl);
    put_num(f, 0, "val_bleu", "%.4f", v->val_bleu);
    put_num(f, 0, "val_chrf", "%.4f", v->val_chrf);
    put_num(f, 0, "lr", "%.6g", lr);
    put_num(f, 0, "elapsed", "%.1f", v->elapsed);
    put_num(f, 0, "peak_rss_mb", "%.1f", v->peak_mib);
    fprintf(f, "}\n");
    fflush(f);
}

void runlog_write_avg(FILE *f, const RunVal *v, int averaged, int asked) {
    fprintf(f, "{\"type\": \"avg\", \"epoch\": %d, \"step\": %ld, \"averaged\": %d, "
            "\"average_last\": %d", v->epoch, v->step, averaged, asked);
    put_num(f, 0, "val_ppl", "%.4f", v->val_ppl);
    put_num(f, 0, "val_bleu", "%.4f", v->val_bleu);
    put_num(f, 0, "val_chrf", "%.4f", v->val_chrf);
    fprintf(f, "}\n");
    fflush(f);
}
