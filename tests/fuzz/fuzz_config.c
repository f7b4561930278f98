/* fuzz_config.c — fuzz target of the config parser (src/train/config.c, config_keys.c):
 * config_load_string, config_load on a file (the raw bytes, NULs included), config_set,
 * config_validate, config_to_ini and config_diff.
 *
 * Input: any bytes, read as an INI file; then each line is also tried as a --set argument.
 * Invariants checked (config.h): whatever config_load_string / config_set accept, config_to_ini
 * writes a text that config_load_string accepts and that gives back exactly the Config less the
 * keys its model does not read (config_diff against config_drop_unread of it == 0: config_to_ini
 * leaves those keys out, so they load back as their defaults); config_load and
 * config_load_string agree on input without NUL bytes or an include line (config_load_string
 * refuses include; config_load follows it). */
#include <string.h>

#include "fuzz_util.h"
#include "train/config.h"

/* config_to_ini(c) must load back to exactly config_drop_unread(c): every key the model reads
 * as in c, the others at their defaults. */
static void check_round_trip(const Config *c, const char *what) {
    Config want = *c;
    config_drop_unread(&want);
    char *ini = config_to_ini(c);
    Config back;
    Err err;
    Status st = config_load_string(&back, ini, "round trip", &err);
    FUZZ_ASSERT(st == STATUS_OK, "config_to_ini after %s wrote text that does not load: %s\n%s",
                what, err.msg, ini);
    char diff[1024];
    int nd = config_diff(&want, &back, diff, sizeof diff);
    FUZZ_ASSERT(nd == 0, "config_to_ini after %s does not round-trip: %s", what, diff);
    free(ini);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > CONFIG_MAX_FILE) return 0;
    char *text = malloc(size + 1);
    memcpy(text, data, size);
    text[size] = 0;
    Err err;
    Config c, f;

    /* the string parser */
    Status st = config_load_string(&c, text, "fuzz", &err);
    if (st == STATUS_OK) {
        check_round_trip(&c, "config_load_string");
        (void)config_validate(&c, &err);
        char dir[1100];
        config_save_dir(&c, dir, sizeof dir);
    }

    /* the file reader: same verdict when the bytes hold no NUL (strlen stops the string parser) */
    const char *path = fuzz_tmp_path("config.ini");
    fuzz_write_file(path, data, size);
    Status fst = config_load(&f, path, &err);
    if (!memchr(data, 0, size) && !strstr(text, "include"))
        FUZZ_ASSERT((fst == STATUS_OK) == (st == STATUS_OK),
                    "config_load and config_load_string disagree (file %d, string %d): %s", fst,
                    st, err.msg);
    if (fst == STATUS_OK) check_round_trip(&f, "config_load");

    /* every line as a --set override, applied in turn to one config */
    Config s;
    config_defaults(&s);
    int any = 0;
    for (char *line = text, *next; line; line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = 0;
        any |= config_set(&s, line, &err) == STATUS_OK;
    }
    if (any) check_round_trip(&s, "config_set");
    free(text);
    return 0;
}
