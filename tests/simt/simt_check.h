/* tests/simt/simt_check.h — what the emulation's C++ tests (test_simt.cc, test_simt_reduce.cc)
 * share: CHECK, the five schedules every launch runs under, and under_all, which runs one launch
 * under each of them and requires the same bits.
 *
 * CHECK(cond, printf format, ...) counts a check; a false cond is printed to stderr as
 * "FAIL file:line: cond: message" and counted as failed, and the test goes on, or exits 1 at once
 * when TEST_FAIL_FAST=1 is in the environment (as tests/testutil.h's EXPECT). check_report prints
 * the counts and returns the exit code. Header-only (static): each test includes it once.
 */
#ifndef TRAINER_TESTS_SIMT_CHECK_H
#define TRAINER_TESTS_SIMT_CHECK_H

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "ops/cuda/simt/simt.h"

static int g_fail = 0, g_checks = 0;

/* Called after a failed CHECK: exits 1 when TEST_FAIL_FAST is set to 1, else returns. */
static void failed_now() {
    if (getenv("TEST_FAIL_FAST") && strcmp(getenv("TEST_FAIL_FAST"), "1") == 0) exit(1);
}
#define CHECK(cond, ...)                                                                       \
    do {                                                                                       \
        g_checks++;                                                                            \
        if (!(cond)) {                                                                         \
            g_fail++;                                                                          \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                    \
            fprintf(stderr, __VA_ARGS__);                                                      \
            fprintf(stderr, "\n");                                                             \
            failed_now();                                                                      \
        }                                                                                      \
    } while (0)

/* Prints "name: N checks, M failed"; returns 1 when a check failed, else 0. */
static int check_report(const char *name) {
    printf("%s: %d checks, %d failed\n", name, g_checks, g_fail);
    return g_fail ? 1 : 0;
}

/* The schedules (simt_set_schedule): forward first, then reverse and random with seeds 1-3. */
struct Sched {
    int kind;
    unsigned long long seed;
    const char *name;
};
static const Sched kScheds[] = {{SIMT_FORWARD, 0, "forward"},
                                {SIMT_REVERSE, 0, "reverse"},
                                {SIMT_RANDOM, 1, "random:1"},
                                {SIMT_RANDOM, 2, "random:2"},
                                {SIMT_RANDOM, 3, "random:3"}};
static const int kNSched = (int)(sizeof kScheds / sizeof kScheds[0]);

/* a and b have the same length and the same bits. */
template <class T> static bool same_bits(const std::vector<T> &a, const std::vector<T> &b) {
    return a.size() == b.size() && memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

/* Runs run() (returning a std::vector<T> of results) under every schedule of kScheds; each
 * result must equal the forward one bit for bit (a CHECK naming what and the schedule). Leaves
 * the forward schedule set and returns the forward result. */
template <class T, class F> static std::vector<T> under_all(const char *what, F run) {
    std::vector<T> first;
    for (int s = 0; s < kNSched; s++) {
        simt_set_schedule(kScheds[s].kind, kScheds[s].seed);
        std::vector<T> r = run();
        if (s == 0) first = r;
        else
            CHECK(same_bits(first, r), "%s: schedule %s differs from forward", what,
                  kScheds[s].name);
    }
    simt_set_schedule(SIMT_FORWARD, 0);
    return first;
}

#endif
