/* tests/simt/test_simt_c.c — the SIMT emulation's C API compiles and links from C11 and behaves
 * as simt_c.h says before any launch: no recorded error, a zero thread counter, a switch name. */
#include <stdio.h>
#include <string.h>

#include "ops/cuda/simt/simt_c.h"

int main(void) {
    int fail = 0;
    char msg[64] = "untouched";
    simt_set_schedule(SIMT_RANDOM, 42);
    simt_set_fail_mode(1);
    if (simt_take_error(msg, sizeof msg) != 0 || strcmp(msg, "untouched") != 0) {
        fprintf(stderr, "FAIL: an error recorded before any launch: %s\n", msg);
        fail = 1;
    }
    if (simt_threads_run() != 0) {
        fprintf(stderr, "FAIL: %llu threads run before any launch\n", simt_threads_run());
        fail = 1;
    }
    const char *k = simt_switch_kind();
    if (strcmp(k, "asm") != 0 && strcmp(k, "ucontext") != 0) {
        fprintf(stderr, "FAIL: switch kind '%s'\n", k);
        fail = 1;
    }
    simt_set_fail_mode(0);
    simt_set_schedule(SIMT_FORWARD, 0);
    printf("simt C API: switch %s, static shared poisoned %d: %s\n", k,
           simt_static_shared_poisoned(), fail ? "FAIL" : "ok");
    return fail;
}
