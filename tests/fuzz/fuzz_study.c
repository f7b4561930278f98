/* fuzz_study.c — fuzz target of the study plan's parser (src/study/study.c): study_load on a
 * plan file (the raw bytes, NULs included), then study_status.
 *
 * Input: any bytes, written as plan.ini into a folder of this process that also holds two
 * configs (a.ini includes r.ini, the recipe; b.ini includes none) and a test pair (t.de, t.en),
 * so that a plan may name them (`configs = a.ini b.ini`, `test_src = t.de`). study_load runs
 * with check = 0 (no config validation: --status's way), so nothing trains and no model is
 * loaded. Checked: no crash, leak or undefined behaviour, and an error always has a message. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz_util.h"
#include "study/study.h"

static char g_dir[64];

static void put(const char *name, const char *text) {
    char path[128];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    fuzz_write_file(path, text, strlen(text));
}

static void remove_dir(void) {
    static const char *const names[] = {"plan.ini", "a.ini", "b.ini", "r.ini", "t.de", "t.en"};
    char path[128];
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        snprintf(path, sizeof path, "%s/%s", g_dir, names[i]);
        unlink(path);
    }
    rmdir(g_dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    snprintf(g_dir, sizeof g_dir, "/tmp/trainer-fuzz-study-XXXXXX");
    if (!mkdtemp(g_dir)) {
        perror("fuzz_study: mkdtemp");
        abort();
    }
    atexit(remove_dir);
    put("r.ini", "[model]\ntype = rnn\nattention = luong_general\n[train]\nmax_epochs = 1\n");
    put("a.ini", "include = r.ini\n[model]\nattention = luong_dot\n");
    put("b.ini", "[model]\nattention = bahdanau\n");
    put("t.de", "ein Hund\n");
    put("t.en", "a dog\n");
    fuzz_quiet_stdout();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 1 << 16) return 0;
    char path[128];
    snprintf(path, sizeof path, "%s/plan.ini", g_dir);
    fuzz_write_file(path, data, size);
    Study *s = NULL;
    Err err = {{0}};
    Status st = study_load(path, -1, 0, &s, &err);
    if (st == STATUS_OK) {
        FILE *null = fopen("/dev/null", "w");
        FUZZ_ASSERT(null != NULL, "cannot open /dev/null");
        study_status(s, 2, null);
        fclose(null);
    } else {
        FUZZ_ASSERT(err.msg[0] != 0, "study_load failed without a message");
    }
    study_free(s);
    return 0;
}
