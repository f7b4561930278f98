/* replay.c — the main() of fuzz_replay_<name>: feeds files through a fuzz target's
 * LLVMFuzzerTestOneInput without libFuzzer, so that CTest re-checks the seed corpus and every
 * past finding with any compiler (tests/fuzz/fuzz_util.h).
 *
 * Usage: fuzz_replay_<name> PATH...   (a PATH is a file or a folder; a folder's files are replayed
 * in name order, skipping names that start with '.' and README*; a missing folder is skipped).
 * Exit code: 0 when at least one input was replayed and none crashed (a crash aborts the
 * program, which is the test's failure); 1 when no input was found (a misconfigured test must
 * not pass).
 * Memory: an input that makes the code allocate without bound must fail the test, not exhaust
 * the machine: without AddressSanitizer the address space is limited to REPLAY_MAX_GIB; under
 * ASan (which reserves terabytes of shadow memory) set ASAN_OPTIONS=max_allocation_size_mb=...
 * instead, as CMake does for the sanitizer build. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "core/sanitizers.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
__attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv);

#define REPLAY_MAX_GIB 8

static long g_replayed;

static void replay_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        exit(1);
    }
    size_t cap = 4096, n = 0, r;
    uint8_t *buf = malloc(cap);
    while ((r = fread(buf + n, 1, cap - n, f)) > 0) {
        n += r;
        if (n == cap) buf = realloc(buf, cap *= 2);
    }
    fclose(f);
    /* An exact-size copy, so that ASan catches a read one byte past the input. */
    uint8_t *exact = malloc(n ? n : 1);
    memcpy(exact, buf, n);
    free(buf);
    fprintf(stderr, "replay %s (%zu bytes)\n", path, n);
    LLVMFuzzerTestOneInput(exact, n);
    free(exact);
    g_replayed++;
}

static int skip_name(const char *name) {
    return name[0] == '.' || strncmp(name, "README", 6) == 0;
}

static void replay_path(const char *path) {
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "replay: %s does not exist; skipped\n", path);
        return;
    }
    if (!S_ISDIR(st.st_mode)) {
        replay_file(path);
        return;
    }
    struct dirent **list = NULL;
    int n = scandir(path, &list, NULL, alphasort);
    if (n < 0) {
        perror(path);
        exit(1);
    }
    for (int i = 0; i < n; i++) {
        if (!skip_name(list[i]->d_name)) {
            char full[4096];
            snprintf(full, sizeof full, "%s/%s", path, list[i]->d_name);
            struct stat fs;
            if (stat(full, &fs) == 0 && S_ISREG(fs.st_mode)) replay_file(full);
        }
        free(list[i]);
    }
    free(list);
}

int main(int argc, char **argv) {
#if !TRAINER_ASAN
    struct rlimit lim = {(rlim_t)REPLAY_MAX_GIB << 30, (rlim_t)REPLAY_MAX_GIB << 30};
    struct rlimit old;
    if (getrlimit(RLIMIT_AS, &old) == 0 && (old.rlim_cur == RLIM_INFINITY ||
                                            old.rlim_cur > lim.rlim_cur)) {
        if (old.rlim_max != RLIM_INFINITY && old.rlim_max < lim.rlim_max)
            lim.rlim_max = old.rlim_max;
        if (lim.rlim_cur > lim.rlim_max) lim.rlim_cur = lim.rlim_max;
        setrlimit(RLIMIT_AS, &lim);
    }
#endif
    if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
    for (int i = 1; i < argc; i++) replay_path(argv[i]);
    fprintf(stderr, "%s: %ld inputs replayed without a crash\n", argv[0], g_replayed);
    if (g_replayed == 0) {
        fprintf(stderr, "FAIL: no inputs found in the given paths\n");
        return 1;
    }
    return 0;
}
