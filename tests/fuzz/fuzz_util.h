/* fuzz_util.h — shared helpers of the fuzz targets in tests/fuzz/ (docs/robustness.md).
 *
 * Every fuzz_<name>.c defines LLVMFuzzerTestOneInput (and maybe LLVMFuzzerInitialize). It is
 * linked two ways:
 *  - with libFuzzer (-fsanitize=fuzzer, CMake -DTRAINER_FUZZ=ON, clang only) into fuzz_<name>,
 *    which scripts/fuzz.sh runs;
 *  - with tests/fuzz/replay.c into fuzz_replay_<name>, a normal CTest test (label unit) that feeds
 *    every file of tests/fuzz/corpus/<name>/ and tests/fuzz/regressions/<name>/ through the same
 *    entry point, so any compiler (and the ASan build) re-checks every past finding.
 * A harness reports a broken invariant of the code under test with FUZZ_ASSERT, which aborts: to
 * libFuzzer that is a crash (the input is saved), to the replay test a failed test.
 */
#ifndef TRAINER_FUZZ_UTIL_H
#define TRAINER_FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define FUZZ_ASSERT(cond, ...)                                                               \
    do {                                                                                     \
        if (!(cond)) {                                                                       \
            fprintf(stderr, "FUZZ_ASSERT failed: %s at %s:%d: ", #cond, __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                                                    \
            fprintf(stderr, "\n");                                                           \
            abort();                                                                         \
        }                                                                                    \
    } while (0)

/* A path private to this process for the file called tag: "<dir>/trainer-fuzz-<pid>-<tag>",
 * dir = /dev/shm when it is a writable folder (fast: targets write a file per input), else
 * $TMPDIR or /tmp. The same tag gives the same path; the file is removed at exit. At most 16
 * tags per process. */
const char *fuzz_tmp_path(const char *tag);

/* Writes n bytes to path, replacing it. A failure is a harness error: message and abort(). */
void fuzz_write_file(const char *path, const void *data, size_t n);

/* Little-endian reads and writes (file formats of ckptfile.h and encoded.h). */
uint32_t fuzz_get_u32(const uint8_t *p);
uint64_t fuzz_get_u64(const uint8_t *p);
void fuzz_put_u32(uint8_t *p, uint32_t v);

/* Sends stdout to /dev/null for the rest of the process (the code under test prints progress
 * lines; libFuzzer's own reports go to stderr). */
void fuzz_quiet_stdout(void);

#endif
