/* ops/cuda/simt/simt_c.h — the SIMT emulation's controls, callable from C and C++ (tests and
 * benches of the emulated build; docs/design.md §11). Implemented in simt.cc.
 *
 * Schedules: the order in which runnable emulated threads are resumed (after each barrier or warp
 * collective) and blocks are run. Unless simt_set_schedule was called, the first launch reads the
 * environment variable SIMT_SCHEDULE = forward | reverse | random:SEED (unset: forward; anything
 * else: exit with a message naming SIMT_SCHEDULE). Source: — (our own test device).
 */
#ifndef TRAINER_SIMT_C_H
#define TRAINER_SIMT_C_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { SIMT_FORWARD = 0, SIMT_REVERSE = 1, SIMT_RANDOM = 2 };

/* Sets the schedule for the following launches: kind SIMT_FORWARD, SIMT_REVERSE or SIMT_RANDOM
 * (seeded by seed; the same seed and launch sequence give the same orders). Another kind aborts. */
void simt_set_schedule(int kind, unsigned long long seed);

/* record = 0 (default): an emulation error prints its message and aborts. record = 1: the error
 * ends the launch (the remaining threads and blocks do not run) and is kept for simt_take_error. */
void simt_set_fail_mode(int record);

/* 1 and the message (NUL-terminated, cut to len bytes) if an error was recorded since the last
 * call, else 0 (msg untouched). msg may be NULL when len is 0. */
int simt_take_error(char *msg, size_t len);

/* Emulated threads run since start (a counter for tests and benches). */
unsigned long long simt_threads_run(void);

/* 1 when static __shared__ memory is filled with 0xFF bytes at every block start in this build
 * (the plain build); 0 under ASan or TSan (see simt.h). */
int simt_static_shared_poisoned(void);

/* How many blocks run at once: 2 in the TSan build (one per worker OS thread), else 1. */
int simt_concurrent_blocks(void);

/* The fiber switch of this build: "asm" (hand-written x86-64 register switch) or "ucontext". */
const char *simt_switch_kind(void);

#ifdef __cplusplus
}
#endif

#endif
