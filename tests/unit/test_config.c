/* test_config.c — the strict INI config parser: good files, ~40 bad ones (each must name its line
 * and key), include, --set, validation, the exact to_ini → load round trip, and that each
 * configs/transformer_<kind>.ini differs from configs/transformer.ini only in its attention. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "testutil.h"
#include "train/config.h"

/* Parses text as "bad.ini" and expects an error that starts with "bad.ini:LINE: " and contains
 * each of the (up to two) substrings. */
static void expect_bad(int test_line, const char *text, int line, const char *s1, const char *s2) {
    Config c;
    Err err = {{0}};
    Status st = config_load_string(&c, text, "bad.ini", &err);
    char head[64];
    snprintf(head, sizeof head, "bad.ini:%d: ", line);
    EXPECT(st != STATUS_OK, "case at test line %d parsed but should fail", test_line);
    EXPECT(strncmp(err.msg, head, strlen(head)) == 0, "case at test line %d: want '%s...', got: %s",
           test_line, head, err.msg);
    EXPECT(!s1 || strstr(err.msg, s1), "case at test line %d: want '%s' in: %s", test_line, s1,
           err.msg);
    EXPECT(!s2 || strstr(err.msg, s2), "case at test line %d: want '%s' in: %s", test_line, s2,
           err.msg);
}
#define BAD(text, line, s1, s2) expect_bad(__LINE__, text, line, s1, s2)

static void expect_bad_set(int test_line, const char *arg, const char *s1, const char *s2) {
    Config c;
    config_defaults(&c);
    Config before = c;
    Err err = {{0}};
    EXPECT(config_set(&c, arg, &err) != STATUS_OK, "--set %s should fail", arg);
    EXPECT(strncmp(err.msg, "--set ", 6) == 0, "test line %d: want '--set ...', got: %s",
           test_line, err.msg);
    EXPECT(!s1 || strstr(err.msg, s1), "test line %d: want '%s' in: %s", test_line, s1, err.msg);
    EXPECT(!s2 || strstr(err.msg, s2), "test line %d: want '%s' in: %s", test_line, s2, err.msg);
    EXPECT(config_diff(&before, &c, NULL, 0) == 0, "failed --set %s changed the config", arg);
}
#define BAD_SET(arg, s1, s2) expect_bad_set(__LINE__, arg, s1, s2)

static void test_bad_files(void) {
    /* structure */
    BAD("[model]\nemb = 1\n[foo]\n", 3, "unknown section [foo]", "[train]");
    BAD("[]\n", 1, "unknown section", NULL);
    BAD("[model\nemb = 1\n", 1, "unclosed section header", NULL);
    BAD("[model] # the model\n", 1, "text after the section header", NULL);
    BAD("[model]\nemb = 8\n[data]\n[model]\n", 4, "appears again (first at line 1)", NULL);
    BAD("emb = 256\n", 1, "'emb' is outside any section", "[section]");
    BAD("# c\n[model]\nemb 256\n", 3, "expected 'key = value'", "emb 256");
    BAD("[model]\n= 5\n", 2, "missing key", NULL);
    BAD("[model]\nembsize = 3\n", 2, "unknown key 'embsize' in [model]", "valid keys: type, cell");
    BAD("[model]\nlr = 0.1\n", 2, "unknown key 'lr'", "lr is a key of [train]");
    BAD("[model]\nEmb = 3\n", 2, "unknown key 'Emb'", NULL); /* keys are case-sensitive */
    BAD("[model]\nemb = 1\n\nemb = 2\n", 4, "duplicate key model.emb", "first at line 2");
    /* numbers */
    BAD("[model]\nemb =\n", 2, "model.emb has an empty value", "default 256");
    BAD("[model]\nemb = 256abc\n", 2, "model.emb = 256abc is not a whole number", "[1, 65536]");
    BAD("[model]\nemb = 65537\n", 2, "model.emb = 65537 is out of range", "[1, 65536]");
    BAD("[model]\nemb = 0\n", 2, "out of range", NULL);
    BAD("[model]\nemb = 99999999999999999999999\n", 2, "model.emb", "out of range");
    BAD("[model]\nemb = 2.5\n", 2, "not a whole number", NULL);
    BAD("[model]\nemb = 0x10\n", 2, "not a whole number", NULL);
    BAD("[model]\nemb = \"256\"\n", 2, "quotes are only for string values", NULL);
    BAD("[model]\nemb = 256 # size\n", 2, "not a whole number", "comments must be on a line");
    BAD("[model]\ndropout = nan\n", 2, "model.dropout", "NaN and infinity are not allowed");
    BAD("[train]\nlr = -inf\n", 2, "train.lr", "NaN and infinity");
    BAD("[train]\nlr = 0.1x\n", 2, "train.lr = 0.1x is not a number", NULL);
    BAD("[train]\nlr = 0x1p-3\n", 2, "train.lr = 0x1p-3 is not a number", NULL);
    BAD("[train]\nlr = 1e40\n", 2, "train.lr = 1e40 is out of range", NULL);
    BAD("[train]\nlr = 0\n", 2, "train.lr = 0 is out of range", "(0, 10]");
    BAD("[model]\ndropout = 1\n", 2, "model.dropout = 1 is out of range", "[0, 1)");
    BAD("[train]\nlr = 1e-3.5\n", 2, "not a number", NULL);
    BAD("[train]\nlr = .\n", 2, "not a number", NULL);
    BAD("[train]\nseed = -1\n", 2, "train.seed = -1 is not a non-negative", NULL);
    BAD("[train]\nseed = 18446744073709551616\n", 2, "train.seed", "out of range");
    BAD("[train]\nmax_steps = 1e5\n", 2, "train.max_steps = 1e5 is not a whole number", NULL);
    BAD("[train]\nmax_nonfinite = 0\n", 2, "train.max_nonfinite = 0 is out of range",
        "[1, 1000000]");
    BAD("[train]\n\nmax_nonfinite = ten\n", 3, "train.max_nonfinite = ten is not a whole number",
        NULL);
    /* bools, enums */
    BAD("[model]\ninput_feeding = maybe\n", 2, "model.input_feeding = maybe is not a bool",
        "true or false");
    BAD("[model]\ninput_feeding =\n", 2, "empty value", NULL);
    BAD("[model]\ntype = lstm\n", 2, "model.type = lstm is not a valid name", "rnn, transformer");
    BAD("[model]\nattention = dotty\n", 2, "model.attention = dotty",
        "none, bahdanau, luong_dot, luong_general");
    BAD("[model]\nattention = Luong_Dot\n", 2, "not a valid name", NULL);
    BAD("[train]\ndevice = gpu\n", 2, "train.device = gpu", "cpu, cuda");
    /* strings */
    BAD("[data]\ntrain_src = \"abc\n", 2, "data.train_src", "unterminated quote");
    BAD("[data]\ntrain_src = a.gz # the source\n", 2, "data.train_src", "trailing comment");
    /* bytes of the file */
    BAD("[data]\n\n\x01\n", 3, "control character 0x01", NULL);
    BAD("[data]\ncache_dir = a\rb\n", 2, "control character 0x0d", NULL);
    BAD("[data]\ncache_dir = caf\xc3\n", 2, "invalid UTF-8 at column 16", NULL);
    BAD("[data]\n\ncache_dir = \xc0\xaf\n", 3, "invalid UTF-8", NULL);       /* overlong */
    BAD("[data]\ncache_dir = \xed\xa0\x80\n", 2, "invalid UTF-8", NULL);      /* surrogate */
    BAD("[data]\ncache_dir = \xf4\x90\x80\x80\n", 2, "invalid UTF-8", NULL);  /* > U+10FFFF */
    BAD("[data]\ncache_dir = \x80\n", 2, "invalid UTF-8", NULL);              /* lone trail */

    /* a string that fits the line but not its 1024-byte field */
    char *t = malloc(3000);
    strcpy(t, "[data]\ntrain_src = ");
    memset(t + strlen(t), 'a', 1100);
    strcpy(t + strlen("[data]\ntrain_src = ") + 1100, "\n");
    BAD(t, 2, "data.train_src is 1100 bytes long", "1023-byte limit");

    /* over-long lines: refused with their line number, never split; 4096 bytes is still fine */
    char *big = malloc(6000);
    strcpy(big, "[data]\n# ok\n#");
    memset(big + strlen(big), 'x', 4999);
    strcpy(big + strlen("[data]\n# ok\n#") + 4999, "\ncache_dir = x\n");
    BAD(big, 3, "line is 5000 bytes long", "4096-byte limit");
    /* line 2 = "cache_dir = " + 4084 'y' = exactly 4096 bytes: accepted as a line, refused as a
     * value (1023-byte field); one more byte (with CRLF) and the line itself is refused */
    strcpy(big, "[data]\ncache_dir = ");
    size_t h = strlen(big), l2 = strlen("[data]\n");
    memset(big + h, 'y', l2 + 4096 - h);
    strcpy(big + l2 + 4096, "\n");
    Config c;
    Err err = {{0}};
    EXPECT(config_load_string(&c, big, "ok.ini", &err) != STATUS_OK &&
               strstr(err.msg, "ok.ini:2: data.cache_dir is 4084 bytes long"),
           "a 4096-byte line must reach the value check, got: %s", err.msg);
    big[l2 + 4096] = 'y';
    strcpy(big + l2 + 4097, "\r\n");
    BAD(big, 2, "line is 4097 bytes long", NULL);
    free(big);
    free(t);
}

static void test_files_on_disk(void) {
    const char *dir = test_tmpdir();
    char path[4200];
    Config c;
    Err err = {{0}};

    /* NUL byte: only a file can hold one */
    snprintf(path, sizeof path, "%s/nul.ini", dir);
    static const char nul[] = "[model]\nemb = 2\0 56\n";
    EXPECT(test_write_file(path, nul, sizeof nul - 1) == 0, "write %s", path);
    EXPECT(config_load(&c, path, &err) != STATUS_OK, "NUL byte accepted");
    char want[4300];
    snprintf(want, sizeof want, "%s:2: NUL byte at column 8", path);
    EXPECT(strstr(err.msg, want) == err.msg, "want '%s', got: %s", want, err.msg);

    /* a binary file (an executable's first bytes): refused at line 1, not parsed further */
    snprintf(path, sizeof path, "%s/binary.ini", dir);
    static const char elf[] = "\x7f" "ELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\x03\0>\0\n[model]\n";
    EXPECT(test_write_file(path, elf, sizeof elf - 1) == 0, "write %s", path);
    EXPECT(config_load(&c, path, &err) != STATUS_OK, "binary file accepted");
    snprintf(want, sizeof want, "%s:1: control character 0x7f at column 1", path);
    EXPECT(strstr(err.msg, want) == err.msg, "want '%s', got: %s", want, err.msg);

    /* a file over CONFIG_MAX_FILE bytes (all comments): refused as a whole, named */
    snprintf(path, sizeof path, "%s/huge.ini", dir);
    {
        size_t n = (size_t)CONFIG_MAX_FILE + 1;
        char *huge = malloc(n);
        for (size_t i = 0; i < n; i++) huge[i] = i % 64 == 63 ? '\n' : '#';
        EXPECT(test_write_file(path, huge, n) == 0, "write %s", path);
        free(huge);
    }
    EXPECT(config_load(&c, path, &err) != STATUS_OK && strstr(err.msg, path) &&
               strstr(err.msg, "config file is over 1048576 bytes"), "huge file: %s", err.msg);

    /* missing file: named, with strerror */
    snprintf(path, sizeof path, "%s/missing.ini", dir);
    EXPECT(config_load(&c, path, &err) != STATUS_OK, "missing file accepted");
    EXPECT(strstr(err.msg, path) && strstr(err.msg, "No such file or directory"), "got: %s",
           err.msg);

    /* a directory */
    EXPECT(config_load(&c, dir, &err) != STATUS_OK && strstr(err.msg, dir), "directory: %s",
           err.msg);

    /* the name comes from the file name; [run] name wins */
    snprintf(path, sizeof path, "%s/my_run.ini", dir);
    const char *txt = "\xef\xbb\xbf# BOM, CRLF\r\n[model]\r\nhidden = 64\r\n";
    EXPECT(test_write_file(path, txt, strlen(txt)) == 0, "write");
    EXPECT(config_load(&c, path, &err) == STATUS_OK, "%s", err.msg);
    EXPECT(strcmp(c.name, "my_run") == 0 && c.model.hidden == 64, "name '%s' hidden %d", c.name,
           c.model.hidden);
    char sd[2048];
    EXPECT(strcmp(config_save_dir(&c, sd, sizeof sd), "checkpoints/my_run") == 0, "%s", sd);

    /* line numbers in a file count every line, comments and blanks included */
    snprintf(path, sizeof path, "%s/lines.ini", dir);
    txt = "# 1\n\n[train]\n; 4\n\nlr = 0.001\nlr_decay = 2\n";
    EXPECT(test_write_file(path, txt, strlen(txt)) == 0, "write");
    EXPECT(config_load(&c, path, &err) != STATUS_OK, "lr_decay = 2 accepted");
    snprintf(want, sizeof want, "%s:7: train.lr_decay = 2 is out of range", path);
    EXPECT(strstr(err.msg, want) == err.msg, "want '%s', got: %s", want, err.msg);
}

/* Writes text to dir/name; the path into path. */
static void write_ini(char *path, size_t n, const char *dir, const char *name, const char *text) {
    snprintf(path, n, "%s/%s", dir, name);
    EXPECT(test_write_file(path, text, strlen(text)) == 0, "write %s", path);
}

/* include = FILE: the included file's keys first, the including file's over them. */
static void test_include(void) {
    const char *dir = test_tmpdir();
    char path[4200], sub[4300], want[9000];
    Config c;
    Err err = {{0}};
    snprintf(sub, sizeof sub, "%s/inc", dir);
    EXPECT(mkdir(sub, 0755) == 0, "mkdir %s", sub);

    /* a base and a variant in another folder: the path is relative to the including file */
    write_ini(path, sizeof path, sub, "base.ini",
              "[model]\nhidden = 64\nemb = 32\n[train]\nlr = 0.002\nseed = 7\n");
    write_ini(path, sizeof path, dir, "variant.ini",
              "# a variant\ninclude = inc/base.ini\n[model]\nemb = 48\n[train]\nlr = 0.001\n");
    EXPECT(config_load(&c, path, &err) == STATUS_OK, "%s", err.msg);
    EXPECT(c.model.hidden == 64 && c.model.emb == 48 && c.lr == 0.001f && c.seed == 7,
           "include: hidden %d (want 64) emb %d (48) lr %g (0.001) seed %llu (7)", c.model.hidden,
           c.model.emb, (double)c.lr, (unsigned long long)c.seed);
    EXPECT(strcmp(c.name, "variant") == 0, "the run is named after the top file: '%s'", c.name);

    /* two levels; the middle file's path is relative to its own folder */
    write_ini(path, sizeof path, sub, "middle.ini", "include = base.ini\n[model]\nhidden = 96\n");
    write_ini(path, sizeof path, dir, "top.ini", "include = inc/middle.ini\n");
    EXPECT(config_load(&c, path, &err) == STATUS_OK, "%s", err.msg);
    EXPECT(c.model.hidden == 96 && c.model.emb == 32 && c.lr == 0.002f,
           "two levels: hidden %d (want 96) emb %d (32) lr %g (0.002)", c.model.hidden,
           c.model.emb, (double)c.lr);

    /* an error inside the included file names both files and lines */
    write_ini(path, sizeof path, sub, "broken.ini", "[model]\n\nemb = x\n");
    write_ini(path, sizeof path, dir, "uses_broken.ini", "include = inc/broken.ini\n");
    EXPECT(config_load(&c, path, &err) != STATUS_OK, "broken include accepted");
    snprintf(want, sizeof want, "%s:1: in the file it includes: %s/broken.ini:3: model.emb = x",
             path, sub);
    EXPECT(strstr(err.msg, want) == err.msg, "want '%s', got: %s", want, err.msg);

    /* a missing file, a cycle, a second include, include after a section, an empty path */
    write_ini(path, sizeof path, dir, "missing.ini", "include = nowhere.ini\n");
    EXPECT(config_load(&c, path, &err) != STATUS_OK && strstr(err.msg, "nowhere.ini") &&
               strstr(err.msg, "No such file"), "missing include: %s", err.msg);
    write_ini(path, sizeof path, dir, "self.ini", "include = self.ini\n");
    EXPECT(config_load(&c, path, &err) != STATUS_OK && strstr(err.msg, "cycle"), "cycle: %s",
           err.msg);
    write_ini(path, sizeof path, dir, "two.ini", "include = inc/base.ini\ninclude = inc/base.ini\n");
    EXPECT(config_load(&c, path, &err) != STATUS_OK && strstr(err.msg, ":2: a second include"),
           "two includes: %s", err.msg);
    write_ini(path, sizeof path, dir, "late.ini", "[model]\ninclude = inc/base.ini\n");
    EXPECT(config_load(&c, path, &err) != STATUS_OK && strstr(err.msg, ":2: unknown key 'include'"),
           "include inside a section: %s", err.msg);
    write_ini(path, sizeof path, dir, "empty.ini", "include =\n");
    EXPECT(config_load(&c, path, &err) != STATUS_OK && strstr(err.msg, "include needs a path"),
           "empty include: %s", err.msg);

    /* an included file may not name the run: two variants would share one run folder */
    write_ini(path, sizeof path, sub, "named.ini", "[run]\nname = shared\n");
    write_ini(path, sizeof path, dir, "uses_named.ini", "include = inc/named.ini\n");
    EXPECT(config_load(&c, path, &err) != STATUS_OK && strstr(err.msg, "run.name in an included"),
           "run.name in an included file: %s", err.msg);
    write_ini(path, sizeof path, sub, "saves.ini", "[train]\nsave_dir = /tmp/x\n");
    write_ini(path, sizeof path, dir, "uses_saves.ini", "include = inc/saves.ini\n");
    EXPECT(config_load(&c, path, &err) != STATUS_OK &&
               strstr(err.msg, "train.save_dir in an included"), "save_dir: %s", err.msg);

    /* text cannot include */
    BAD("include = configs/luong.ini\n[model]\n", 1, "only config files include", NULL);
}

static void test_fixtures(void) {
    Config c;
    Err err = {{0}};
    EXPECT(config_load(&c, "tests/fixtures/configs/luong.ini", &err) == STATUS_OK, "%s", err.msg);
    EXPECT(strcmp(c.name, "luong") == 0, "name %s", c.name);
    EXPECT(c.model.type == MODEL_RNN && c.model.cell == CELL_LSTM &&
               c.model.attention == ATTN_LUONG_GENERAL,
           "enums");
    EXPECT(c.model.emb == 256 && c.model.hidden == 512 && c.model.enc_layers == 2 &&
               c.model.dec_layers == 2,
           "sizes");
    EXPECT(c.model.dropout == 0.3f && c.model.input_feeding == 1, "dropout %g",
           (double)c.model.dropout);
    EXPECT(strcmp(c.train_src, "data/multi30k/train.de.gz") == 0, "quoted %s", c.train_src);
    EXPECT(strcmp(c.train_tgt, "data/multi30k/train.en.gz") == 0, "plain %s", c.train_tgt);
    EXPECT(c.max_len == 80 && c.vocab_size == 8000 && c.seed == 42, "data/train ints");
    EXPECT(c.lr == 1e-3f && c.clip_norm == 5.0f && c.label_smoothing == 0.1f, "floats");
    EXPECT(strcmp(c.val_src, "data/multi30k/val.de.gz") == 0, "default kept: %s", c.val_src);
    EXPECT(config_validate(&c, &err) == STATUS_OK, "%s", err.msg);

    EXPECT(config_load(&c, "tests/fixtures/configs/transformer_small.ini", &err) == STATUS_OK,
           "%s", err.msg);
    EXPECT(strcmp(c.name, "tf_small") == 0, "[run] name wins over the file name: %s", c.name);
    EXPECT(c.model.type == MODEL_TRANSFORMER && c.model.self_attention == ATTN_FLASH &&
               c.model.cross_attention == ATTN_FLASH && c.model.dec_self_attention == ATTN_NONE &&
               spec_dec_self_attention(&c.model) == ATTN_FLASH && c.model.norm == NORM_PRE &&
               c.model.d_model == 256 && c.model.heads == 4 && c.model.d_ff == 1024 &&
               c.device == DEVICE_CUDA,
           "enums/bool");
    EXPECT(c.max_steps == 100000 && c.warmup_steps == 4000 && c.adam_eps == 1e-9f, "train");
    char sd[2048];
    EXPECT(strcmp(config_save_dir(&c, sd, sizeof sd), "checkpoints/tf small") == 0, "%s", sd);
    EXPECT(config_validate(&c, &err) == STATUS_OK, "%s", err.msg);
}

static void test_good_strings(void) {
    Config c, d;
    Err err = {{0}};
    /* the empty text gives the defaults */
    EXPECT(config_load_string(&c, "", "empty", &err) == STATUS_OK, "%s", err.msg);
    config_defaults(&d);
    EXPECT(memcmp(&c, &d, sizeof c) == 0, "empty text != defaults");
    EXPECT(strcmp(c.name, "default") == 0 && c.model.emb == 256 && c.model.hidden == 512 &&
               c.lr == 1e-3f && c.adam_beta2 == 0.999f && c.batch_tokens == 4096 && c.seed == 1 &&
               c.model.attention == ATTN_LUONG_GENERAL && c.save_dir[0] == 0 &&
               c.model.input_feeding == 1 &&
               c.max_nonfinite == 10,
           "defaults");
    EXPECT(strcmp(c.test_src, "data/multi30k/test_2016_flickr.de.gz") == 0, "%s", c.test_src);
    EXPECT(config_validate(&c, &err) == STATUS_OK, "defaults must validate: %s", err.msg);

    /* bool spellings, whitespace, tabs, signs, quotes kept verbatim inside */
    static const char *const yes[] = {"true", "YES", "On", "1"}, *const no[] = {"false", "no",
                                                                               "OFF", "0"};
    for (int i = 0; i < 4; i++) {
        char txt[128];
        snprintf(txt, sizeof txt, "[model]\ninput_feeding = %s\n", yes[i]);
        EXPECT(config_load_string(&c, txt, "b", &err) == STATUS_OK && c.model.input_feeding == 1,
               "%s", yes[i]);
        snprintf(txt, sizeof txt, "[model]\ninput_feeding=%s", no[i]); /* no final newline */
        EXPECT(config_load_string(&c, txt, "b", &err) == STATUS_OK && c.model.input_feeding == 0,
               "%s", no[i]);
    }
    EXPECT(config_load_string(&c,
                              "\t[ train ]\t\n  seed\t=  18446744073709551615  \n"
                              "max_steps = +7\nmin_lr = 0\nlr = 2.5E-4\n"
                              "[data]\ncache_dir = \"  spaced \"quoted\" # not a comment \"\n"
                              "val_src = caf\xc3\xa9 \xf0\x9f\x98\x80.gz\n",
                              "s", &err) == STATUS_OK,
           "%s", err.msg);
    EXPECT(c.seed == UINT64_MAX && c.max_steps == 7 && c.min_lr == 0 && c.lr == 2.5e-4f,
           "numbers");
    EXPECT(strcmp(c.cache_dir, "  spaced \"quoted\" # not a comment ") == 0, "[%s]", c.cache_dir);
    EXPECT(strcmp(c.val_src, "caf\xc3\xa9 \xf0\x9f\x98\x80.gz") == 0, "utf8 %s", c.val_src);
    /* empty string values are allowed (save_dir = "" means the default folder) */
    EXPECT(config_load_string(&c, "[train]\nsave_dir =\n[data]\ntest_src = \"\"\ntest_tgt=\n",
                              "s", &err) == STATUS_OK &&
               c.save_dir[0] == 0 && c.test_src[0] == 0 && c.test_tgt[0] == 0,
           "%s", err.msg);
    EXPECT(config_validate(&c, &err) == STATUS_OK, "no test set is fine: %s", err.msg);
    /* every attention name parses */
    for (int i = 0; i < ATTN_KIND_COUNT; i++) {
        char txt[128];
        snprintf(txt, sizeof txt, "[model]\nattention = %s\n", attention_kind_names[i]);
        EXPECT(config_load_string(&c, txt, "a", &err) == STATUS_OK && (int)c.model.attention == i,
               "%s: %s", attention_kind_names[i], err.msg);
    }
}

static void test_set(void) {
    Config c;
    Err err = {{0}};
    EXPECT(config_load(&c, "tests/fixtures/configs/luong.ini", &err) == STATUS_OK, "%s", err.msg);
    EXPECT(config_set(&c, "model.hidden=1024", &err) == STATUS_OK && c.model.hidden == 1024, "%s",
           err.msg);
    EXPECT(config_set(&c, " train.lr = 0.002 ", &err) == STATUS_OK && c.lr == 0.002f, "%s",
           err.msg);
    EXPECT(config_set(&c, "model.attention=bahdanau", &err) == STATUS_OK &&
               c.model.attention == ATTN_BAHDANAU, "%s", err.msg);
    EXPECT(config_set(&c, "data.cache_dir=/tmp/a=b", &err) == STATUS_OK &&
               strcmp(c.cache_dir, "/tmp/a=b") == 0, "value may contain '=': %s", c.cache_dir);
    EXPECT(config_set(&c, "train.save_dir=\"out dir\"", &err) == STATUS_OK &&
               strcmp(c.save_dir, "out dir") == 0, "%s", c.save_dir);
    EXPECT(config_set(&c, "run.name=exp1", &err) == STATUS_OK && strcmp(c.name, "exp1") == 0,
           "%s", err.msg);
    EXPECT(config_set(&c, "model.input_feeding=no", &err) == STATUS_OK && !c.model.input_feeding,
           "b");
    EXPECT(c.model.emb == 256 && c.model.enc_layers == 2, "other keys kept");
    BAD_SET("model.hidden", "expected section.key=value", NULL);
    BAD_SET("hidden=3", "name the section", NULL);
    BAD_SET("modle.hidden=3", "unknown section [modle]", "[model]");
    BAD_SET("model.hiden=3", "unknown key 'hiden' in [model]", "hidden");
    BAD_SET("model.hidden=abc", "--set model.hidden: model.hidden = abc is not a whole number",
            NULL);
    BAD_SET("model.hidden=", "--set model.hidden: model.hidden has an empty value", NULL);
    BAD_SET("train.dropout=0.1", "unknown key 'dropout' in [train]", NULL);
    BAD_SET("model.type=cnn", "--set model.type: model.type = cnn", "rnn, transformer");
    /* found by fuzzing (tests/fuzz/regressions/config/set_invalid_utf8_string): a --set string
     * that is not UTF-8 was accepted, and config_to_ini then wrote a config that cannot load */
    BAD_SET("data.train_src=a\xff.gz", "--set data.train_src: data.train_src is not valid UTF-8",
            NULL);
    BAD_SET("run.name=\"\xed\xa0\x80\"", "run.name is not valid UTF-8", NULL);
}

static void test_validate(void) {
    static const struct {
        const char *set, *want;
    } cases[] = {
        {"model.hidden=511", "model.hidden = 511 is odd"},
        {"model.type=transformer\nmodel.self_attention=none", "needs an attention in every slot"},
        {"model.type=transformer\nmodel.cross_attention=none", "needs an attention in every slot"},
        {"model.type=transformer\nmodel.self_attention=efficient", "has no causal form"},
        {"model.type=transformer\nmodel.dec_self_attention=efficient", "has no causal form"},
        {"model.type=transformer\nmodel.heads=3", "model.heads = 3 does not divide"},
        {"model.attention=none", "model.input_feeding = true belongs to the Luong attentions"},
        {"model.attention=bahdanau", "already feeds its context"},
        {"model.attention=sdp\nmodel.heads=3", "model.heads = 3 does not divide model.hidden"},
        {"model.type=transformer\nmodel.dec_self_attention=efficient",
         "model.dec_self_attention = efficient"},
        {"train.min_lr=0.01", "train.min_lr = 0.01 is above train.lr = 0.001"},
        {"train.batch_tokens=100", "train.batch_tokens = 100 cannot hold"},
        {"data.train_src=", "must all be set"},
        {"data.test_tgt=", "both be set or both be empty"},
        {"run.name=a/b", "run.name 'a/b' cannot name a folder"},
        {"run.name=..", "cannot name a folder"},
        {"run.name=", "cannot name a folder"},
        {"train.precision=tf32", "train.precision = tf32 needs train.device = cuda"},
        /* linformer (Wang et al. 2020): no causal form; its n bounds the training sources;
         * layerwise sharing is not supported */
        {"model.type=transformer\nmodel.self_attention=linformer", "has no causal form"},
        {"model.type=transformer\nmodel.dec_self_attention=linformer",
         "model.dec_self_attention = linformer: linformer attention"},
        {"model.type=transformer\nmodel.self_attention=linformer\nmodel.dec_self_attention=sdp\n"
         "model.linformer_max_len=64", "training sources of up to 100 tokens (data.max_len = "
         "100, data.concat = 1) reach the linformer attention, whose projections span "
         "model.linformer_max_len = 64"},
        {"model.type=transformer\nmodel.self_attention=linformer\nmodel.dec_self_attention=sdp\n"
         "model.linformer_max_len=400\ndata.concat=4", "up to 406 tokens"},
        {"model.type=transformer\nmodel.cross_attention=linformer\nmodel.linformer_max_len=99",
         "set model.linformer_max_len >= 100 or lower data.max_len"},
        {"model.attention=linformer\nmodel.linformer_share=layerwise",
         "model.linformer_share = layerwise"},
        {"model.type=transformer\nmodel.dec_self_attention=luong_local",
         "model.dec_self_attention = luong_local: local attention (Luong et al. 2015 §3.2)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        Config c;
        Err err = {{0}};
        config_defaults(&c);
        char buf[256];
        snprintf(buf, sizeof buf, "%s", cases[i].set);
        for (char *tok = strtok(buf, "\n"); tok; tok = strtok(NULL, "\n"))
            EXPECT(config_set(&c, tok, &err) == STATUS_OK, "%s: %s", tok, err.msg);
        EXPECT(config_validate(&c, &err) != STATUS_OK, "%s validated", cases[i].set);
        EXPECT(strstr(err.msg, cases[i].want), "want '%s', got: %s", cases[i].want, err.msg);
    }
    /* transformer with an odd hidden is not the RNN's business; per-key ranges are re-checked */
    Config c;
    Err err = {{0}};
    config_defaults(&c);
    c.model.dropout = NAN;
    EXPECT(config_validate(&c, &err) != STATUS_OK && strstr(err.msg, "model.dropout"), "%s",
           err.msg);
    config_defaults(&c);
    c.model.attention = ATTN_KIND_COUNT;
    EXPECT(config_validate(&c, &err) != STATUS_OK && strstr(err.msg, "model.attention"), "%s",
           err.msg);
    config_defaults(&c);
    c.model.emb = 0;
    EXPECT(config_validate(&c, &err) != STATUS_OK && strstr(err.msg, "model.emb"), "%s", err.msg);
    /* linformer: the defaults (r 32, n 128, none) take the default data.max_len = 100, in the
     * encoder and cross slots and the RNN; headwise and kv too */
    static const char *const lf_ok[] = {
        ("model.type=transformer\nmodel.self_attention=linformer\nmodel.dec_self_attention=sdp\n"
         "model.cross_attention=linformer"),
        "model.type=transformer\nmodel.cross_attention=linformer\nmodel.linformer_share=kv",
        "model.attention=linformer\nmodel.linformer_share=headwise\nmodel.linformer_k=4",
    };
    for (size_t i = 0; i < sizeof lf_ok / sizeof lf_ok[0]; i++) {
        config_defaults(&c);
        char buf[256];
        snprintf(buf, sizeof buf, "%s", lf_ok[i]);
        for (char *tok = strtok(buf, "\n"); tok; tok = strtok(NULL, "\n"))
            EXPECT(config_set(&c, tok, &err) == STATUS_OK, "%s: %s", tok, err.msg);
        EXPECT(config_validate(&c, &err) == STATUS_OK, "%s: %s", lf_ok[i], err.msg);
    }
    /* the committed config loads and validates as documented */
    EXPECT(config_load(&c, "configs/transformer_linformer.ini", &err) == STATUS_OK &&
               config_validate(&c, &err) == STATUS_OK,
           "configs/transformer_linformer.ini: %s", err.msg);
    EXPECT(c.model.type == MODEL_TRANSFORMER && c.model.self_attention == ATTN_LINFORMER &&
               c.model.dec_self_attention == ATTN_SDP && c.model.cross_attention == ATTN_SDP &&
               c.model.attn_opt.linformer_k == 32 && c.model.attn_opt.linformer_max_len == 128 &&
               c.model.attn_opt.linformer_share == LINFORMER_SHARE_NONE && c.max_len <= 128,
           "configs/transformer_linformer.ini holds other values");
    config_defaults(&c);
    EXPECT(c.model.attn_opt.linformer_k == 32 && c.model.attn_opt.linformer_max_len == 128 &&
               c.model.attn_opt.linformer_share == LINFORMER_SHARE_NONE,
           "linformer defaults %d %d %d", c.model.attn_opt.linformer_k,
           c.model.attn_opt.linformer_max_len, (int)c.model.attn_opt.linformer_share);
    /* train.precision: fp32 by default; tf32/bf16 with device = cuda; an unknown name is refused
     * naming the key and the valid values */
    config_defaults(&c);
    EXPECT(c.precision == PRECISION_FP32, "default precision %d", (int)c.precision);
    EXPECT(config_set(&c, "train.device=cuda", &err) == STATUS_OK &&
               config_set(&c, "train.precision=bf16", &err) == STATUS_OK &&
               config_validate(&c, &err) == STATUS_OK && c.precision == PRECISION_BF16,
           "cuda + bf16: %s", err.msg);
    EXPECT(config_set(&c, "train.precision=fp16", &err) != STATUS_OK &&
               strstr(err.msg, "train.precision") && strstr(err.msg, "fp32, tf32, bf16"),
           "fp16: %s", err.msg);
    /* luong_local's keys: defaults (the paper's D = 10, local-p, general), names and ranges */
    config_defaults(&c);
    EXPECT(c.model.attn_opt.local_window == 10 &&
               c.model.attn_opt.local_mode == LOCAL_PREDICTIVE &&
               c.model.attn_opt.local_score == LOCAL_SCORE_GENERAL,
           "luong_local defaults %d %d %d", c.model.attn_opt.local_window,
           (int)c.model.attn_opt.local_mode, (int)c.model.attn_opt.local_score);
    EXPECT(config_set(&c, "model.local_mode=predictve", &err) != STATUS_OK &&
               strstr(err.msg, "model.local_mode") && strstr(err.msg, "monotonic, predictive"),
           "local_mode typo: %s", err.msg);
    EXPECT(config_set(&c, "model.local_score=additive", &err) != STATUS_OK &&
               strstr(err.msg, "model.local_score") && strstr(err.msg, "dot, general, concat"),
           "local_score: %s", err.msg);
    EXPECT(config_set(&c, "model.local_window=0", &err) != STATUS_OK &&
               strstr(err.msg, "model.local_window = 0 is out of range") &&
               config_set(&c, "model.local_window=1001", &err) != STATUS_OK &&
               strstr(err.msg, "[1, 1000]"), "local_window: %s", err.msg);
    /* configs/luong_local.ini: the paper's best local model, valid */
    EXPECT(config_load(&c, "configs/luong_local.ini", &err) == STATUS_OK, "%s", err.msg);
    EXPECT(c.model.attention == ATTN_LUONG_LOCAL && c.model.attn_opt.local_window == 10 &&
               c.model.attn_opt.local_mode == LOCAL_PREDICTIVE &&
               c.model.attn_opt.local_score == LOCAL_SCORE_GENERAL && c.model.input_feeding,
           "configs/luong_local.ini");
    EXPECT(config_validate(&c, &err) == STATUS_OK, "configs/luong_local.ini: %s", err.msg);
}

/* config_to_ini → config_load_string gives back every key the model reads, exactly, and the
 * defaults in the others (config_drop_unread) */
static void roundtrip(const Config *c, const char *what) {
    char *ini = config_to_ini(c);
    Config d, want = *c;
    Err err = {{0}};
    char diff[2048];
    config_drop_unread(&want);
    EXPECT(config_load_string(&d, ini, "roundtrip", &err) == STATUS_OK, "%s: %s\n%s", what,
           err.msg, ini);
    EXPECT(config_diff(&want, &d, diff, sizeof diff) == 0, "%s: %s", what, diff);
    EXPECT(memcmp(&want, &d, sizeof d) == 0, "%s: structs differ byte-wise", what);
    free(ini);
}

static void test_roundtrip(void) {
    Config c;
    Err err = {{0}};
    config_defaults(&c);
    roundtrip(&c, "defaults");
    char *ini = config_to_ini(&c);
    EXPECT(strstr(ini, "[run]\nname = \"default\"\n") && strstr(ini, "\nlr = 0.001\n") &&
               strstr(ini, "\nadam_eps = 1e-08\n") && strstr(ini, "\ninput_feeding = true\n"),
           "readable output:\n%s", ini);
    free(ini);

    EXPECT(config_load(&c, "tests/fixtures/configs/transformer_small.ini", &err) == STATUS_OK,
           "%s", err.msg);
    roundtrip(&c, "transformer_small");

    static const char *const sets[] = {
        "run.name=x-1.y_z", "model.type=transformer", "model.cell=gru", "model.attention=linear",
        "model.dec_self_attention=linear", "model.norm=post", "train.lr_schedule=inverse_sqrt",
        "model.dropout=0.123456789", "train.lr=3.4e-7", "train.adam_eps=1.17549435e-38",
        "train.clip_norm=999999.9", "train.seed=18446744073709551615",
        "train.max_steps=1000000000000000", "data.cache_dir=\" a \"b\" #c ;d \"",
        "data.train_src=\xe2\x82\xac.gz", "train.device=cuda", "train.save_dir=",
        "model.input_feeding=false", "train.label_smoothing=0.99999994",
        "model.linformer_k=7", "model.linformer_max_len=300", "model.linformer_share=kv",
    };
    config_defaults(&c);
    for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++)
        EXPECT(config_set(&c, sets[i], &err) == STATUS_OK, "%s: %s", sets[i], err.msg);
    roundtrip(&c, "odd values");

    /* many random floats in every float key's range survive the shortest-digits printing */
    uint32_t s = 12345;
    for (int i = 0; i < 2000; i++) {
        s = s * 1664525u + 1013904223u;
        float u = (float)(s >> 8) / 16777216.0f; /* [0, 1) */
        c.model.dropout = u;
        c.adam_beta1 = u * 0.5f;
        c.lr = ldexpf(u + 0.5f, -(int)(s % 20)); /* (0, 1] */
        c.min_lr = c.lr * u;
        roundtrip(&c, "random floats");
    }
    config_defaults(&c);
    Config d = c;
    d.model.hidden = 128;
    d.lr = 0.01f;
    char diff[512];
    EXPECT(config_diff(&c, &d, diff, sizeof diff) == 2 &&
               strcmp(diff, "model.hidden: 512 -> 128; train.lr: 0.001 -> 0.01") == 0,
           "diff: %s", diff);
}

static void test_print_keys(void) {
    const char *dir = test_tmpdir();
    char path[4200];
    snprintf(path, sizeof path, "%s/help.txt", dir);
    FILE *f = fopen(path, "w");
    EXPECT(f != NULL, "fopen");
    if (!f) return;
    config_print_keys(f);
    fclose(f);
    char *txt = test_read_file(path, NULL);
    EXPECT(txt && strstr(txt, "model.emb") && strstr(txt, "default 256") &&
               strstr(txt, "range [1, 65536]") && strstr(txt, "luong_general") &&
               strstr(txt, "[0, 1)") && strstr(txt, "train.val_max_sentences") &&
               strstr(txt, "train.max_nonfinite") && strstr(txt, "this many in a row end the run") &&
               strstr(txt, "run.name") && strstr(txt, "recurrent cell [rnn]") &&
               strstr(txt, "Transformer width D [transformer]") && strstr(txt, "data.spm_model"),
           "help:\n%s", txt ? txt : "(null)");
    free(txt);
}

/* Each configs/transformer_<kind>.ini, for every kind of the attention table that has one, is
 * configs/transformer.ini with other attention: every key agrees, except the run's name, the
 * attention keys and the options of the kind. (The attention variants had lacked
 * transformer.ini's EMA lines for three days while their comments said "the same training".) */
static void test_transformer_variants(void) {
    Config base, c;
    Err err;
    int n = 0;
    EXPECT(config_load(&base, "configs/transformer.ini", &err) == STATUS_OK, "%s", err.msg);
    for (int k = 1; k < ATTN_KIND_COUNT; k++) {
        char path[64], diff[2048];
        struct stat st;
        snprintf(path, sizeof path, "configs/transformer_%s.ini", attention_kind_names[k]);
        if (stat(path, &st) != 0) continue;
        n++;
        if (config_load(&c, path, &err) != STATUS_OK || config_validate(&c, &err) != STATUS_OK) {
            EXPECT(0, "%s: %s", path, err.msg);
            continue;
        }
        memcpy(c.name, base.name, sizeof c.name);
        c.model.self_attention = base.model.self_attention;
        c.model.dec_self_attention = base.model.dec_self_attention;
        c.model.cross_attention = base.model.cross_attention;
        c.model.attn_opt = base.model.attn_opt;
        EXPECT(config_diff(&base, &c, diff, sizeof diff) == 0,
               "%s is not configs/transformer.ini with other attention: %s", path, diff);
    }
    EXPECT(n > 0, "no configs/transformer_<kind>.ini found (run from the repository root)");
}

/* A key given to a model that does not read it is refused, naming the key, the model type and
 * what it takes instead; the same key is fine where it is read, and at its default anywhere. */
static void test_unread_keys(void) {
    static const struct { const char *sets, *needles[3]; } bad[] = {
        {"model.type=transformer\nmodel.attention=bahdanau",
         {"model.attention = bahdanau", "a Transformer", "model.self_attention"}},
        {"model.type=transformer\nmodel.cell=gru", {"model.cell = gru", "a Transformer", ""}},
        {"model.type=transformer\nmodel.hidden=63", {"model.hidden = 63", "model.d_model", ""}},
        {"model.type=transformer\nmodel.input_feeding=false", {"model.input_feeding", "", ""}},
        {"model.self_attention=flash", {"model.self_attention = flash", "an RNN",
                                        "takes model.attention"}},
        {"model.d_ff=512", {"model.d_ff = 512", "an RNN", "model.hidden"}},
        {"model.heads=8", {"model.heads = 8", "luong_general", "one head"}},
        {"model.linformer_share=layerwise", {"model.linformer_share", "linformer", ""}},
        {"model.type=transformer\nmodel.local_window=5", {"model.local_window = 5",
                                                          "luong_local", "sdp"}},
    };
    static const char *const good[] = {
        "model.attention=sdp\nmodel.heads=8", "model.type=transformer\nmodel.heads=8",
        "model.attention=luong_local\nmodel.local_window=5",
        "model.type=transformer\nmodel.cross_attention=luong_local\nmodel.local_mode=monotonic",
        "model.type=transformer\nmodel.d_ff=512",
    };
    Config c;
    Err err;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0] + sizeof good / sizeof good[0]; i++) {
        int is_bad = i < sizeof bad / sizeof bad[0];
        const char *sets = is_bad ? bad[i].sets : good[i - sizeof bad / sizeof bad[0]];
        char buf[256];
        snprintf(buf, sizeof buf, "%s", sets);
        config_defaults(&c);
        for (char *tok = strtok(buf, "\n"); tok; tok = strtok(NULL, "\n"))
            EXPECT(config_set(&c, tok, &err) == STATUS_OK, "%s: %s", tok, err.msg);
        Status st = config_validate(&c, &err);
        if (!is_bad) {
            EXPECT(st == STATUS_OK, "%s: %s", sets, err.msg);
            continue;
        }
        EXPECT(st != STATUS_OK, "%s: validated", sets);
        for (int k = 0; k < 3 && st != STATUS_OK; k++)
            EXPECT(strstr(err.msg, bad[i].needles[k]), "%s: the message lacks '%s': %s", sets,
                   bad[i].needles[k], err.msg);
    }
    /* in a file too, and the key at its default in a stored config (no key given) is fine */
    const char *dir = test_tmpdir();
    char path[4200];
    snprintf(path, sizeof path, "%s/tf_bahdanau.ini", dir);
    FILE *f = fopen(path, "w");
    EXPECT(f != NULL, "fopen");
    if (!f) return;
    fputs("[model]\ntype = transformer\nattention = bahdanau\n", f);
    fclose(f);
    EXPECT(config_load(&c, path, &err) == STATUS_OK && config_validate(&c, &err) != STATUS_OK &&
               strstr(err.msg, "model.attention = bahdanau"), "file: %s", err.msg);
    EXPECT(config_load_string(&c, "[model]\ntype = transformer\ncell = lstm\n", "stored", &err)
               == STATUS_OK && config_validate(&c, &err) == STATUS_OK, "stored: %s", err.msg);
    char *ini = config_to_ini(&c);
    EXPECT(!strstr(ini, "cell =") && !strstr(ini, "\nattention =") && strstr(ini, "d_model ="),
           "config_to_ini writes keys a Transformer does not read:\n%s", ini);
    free(ini);
}

int main(void) {
    test_bad_files();
    test_files_on_disk();
    test_include();
    test_fixtures();
    test_good_strings();
    test_set();
    test_validate();
    test_roundtrip();
    test_print_keys();
    test_transformer_variants();
    test_unread_keys();
    return test_report("test_config");
}
