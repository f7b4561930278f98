/* test_runlog.c — metrics.jsonl stays JSON when a perplexity overflows, and the console says
 * "> 1e6" instead of hundreds of digits.
 *
 * A run's lines are written with runlog_write_train (a loss of 800 nats: ppl = exp(800), +inf in
 * a double), runlog_write_val (val_ppl +inf) and runlog_write_avg (val_ppl 1e230, finite), then:
 *   - no line holds a bare inf, nan or infinity token outside a string, and every line parses as
 *     one object with cJSON (cJSON_ParseWithOpts, nothing after it); python3's json module, when
 *     there is one, parses every line too, with parse_constant refusing Infinity and NaN;
 *   - runlog_read takes the file without a bad line: its val_ppl is +inf (null read back as
 *     infinite), the avg line's 1e230;
 *   - metrics_ppl_text prints 12.25 as "12.25" (2 decimals), and 1e230 and +inf as "> 1e6".
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "eval/metrics.h"
#include "testutil.h"
#include "train/runlog.h"

/* 1 when line holds, outside strings, a word that starts like inf, nan or infinity. */
static int bare_nonfinite(const char *line) {
    int in_str = 0;
    for (const char *p = line; *p; p++) {
        if (in_str) {
            if (*p == '\\' && p[1]) p++;
            else if (*p == '"') in_str = 0;
            continue;
        }
        if (*p == '"') in_str = 1;
        else if (!strncasecmp(p, "inf", 3) || !strncasecmp(p, "nan", 3)) return 1;
    }
    return 0;
}

int main(void) {
    char path[4096];
    snprintf(path, sizeof path, "%s/metrics.jsonl", test_tmpdir());
    FILE *f = fopen(path, "w");
    EXPECT(f != NULL, "cannot write %s", path);
    if (!f) return test_report("test_runlog");
    runlog_write_train(f, &(RunTrain){.epoch = 1, .step = 3, .loss = 800.0, .lr = 1e-3,
                                      .tok_s = 1000, .elapsed = 1.5, .ranks = 1});
    runlog_write_val(f, &(RunVal){.epoch = 1, .step = 3, .val_ppl = INFINITY, .val_bleu = 0,
                                  .val_chrf = 1.5, .elapsed = 2, .peak_mib = NAN},
                     1e-3);
    runlog_write_avg(f, &(RunVal){.epoch = 1, .step = 3, .val_ppl = 1e230, .val_bleu = 0,
                                  .val_chrf = 1}, 1, 1);
    EXPECT(fclose(f) == 0, "cannot close %s", path);

    size_t n = 0;
    char *text = test_read_file(path, &n), *save = NULL;
    int lines = 0;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        lines++;
        EXPECT(!bare_nonfinite(line), "line %d holds a bare inf or nan: %s", lines, line);
        const char *end = NULL;
        cJSON *o = cJSON_ParseWithOpts(line, &end, 1);
        EXPECT(cJSON_IsObject(o), "line %d is not one JSON object: %s", lines, line);
        cJSON_Delete(o);
    }
    free(text);
    EXPECT(lines == 3, "%d lines written, want 3", lines);

    if (system("python3 -c 'import json' >/dev/null 2>&1") == 0) {
        char cmd[8192];
        snprintf(cmd, sizeof cmd, "python3 -c 'import json, sys\n"
                 "def bad(c): raise ValueError(c)\n"
                 "for l in open(sys.argv[1]): json.loads(l, parse_constant=bad)' '%s'", path);
        EXPECT(system(cmd) == 0, "python3's json refuses a line of %s", path);
    } else {
        printf("no python3 with json here: the C checks alone\n");
    }

    RunLog log;
    Err err;
    EXPECT(runlog_read(path, &log, &err) == STATUS_OK, "runlog_read: %s", err.msg);
    EXPECT(log.bad == 0 && log.nval == 1 && log.ntrain == 1 && log.has_avg,
           "runlog_read: %ld bad lines, %d val, %ld train, avg %d", log.bad, log.nval,
           log.ntrain, log.has_avg);
    EXPECT(log.nval == 1 && isinf(log.val[0].val_ppl) && log.val[0].val_ppl > 0,
           "the val line's null perplexity should read as +inf, not %g",
           log.nval ? log.val[0].val_ppl : 0.0);
    EXPECT(log.has_avg && log.avg.val_ppl == 1e230, "the avg line's perplexity: %g",
           log.avg.val_ppl);
    runlog_free(&log);

    char buf[32];
    EXPECT(!strcmp(metrics_ppl_text(buf, sizeof buf, 12.25, 2), "12.25"), "12.25: %s", buf);
    EXPECT(!strcmp(metrics_ppl_text(buf, sizeof buf, 1e230, 2), "> 1e6"), "1e230: %s", buf);
    EXPECT(!strcmp(metrics_ppl_text(buf, sizeof buf, INFINITY, 3), "> 1e6"), "inf: %s", buf);
    return test_report("test_runlog");
}
