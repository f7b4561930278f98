/* tests/simt/tsan_race.cc — planted bugs for the TSan build: p_racy_flag stores a non-atomic
 * "found" flag from many threads of several blocks (the same value: still a data race in CUDA's
 * memory model), and p_missing_barrier reads shared memory without the barrier. The test passes
 * only if ThreadSanitizer reports a data race (CTest's PASS_REGULAR_EXPRESSION).
 *   test_simt_tsan_race blocks   instead: p_racy_blocks alone, a race between blocks and never
 *                                within one (test_simt_tsan_race_blocks: the report must name it)
 */
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "kernels.cuh"
#include "planted.cuh"

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "blocks") == 0) {
        int count = 0;
        int *pc = &count;
        TLAUNCH(p_racy_blocks, 64, 64, 0, pc);
        printf("count = %d of 64 blocks (a report above means the race was caught)\n", count);
        return 0;
    }
    const int n = 8 * 64;
    std::vector<float> x(n, 1.0f);
    for (int i = 0; i < n; i += 37) x[i] = NAN; /* non-finite values in every block */
    int found = 0;
    const float *px = x.data();
    int *pf = &found;
    TLAUNCH(p_racy_flag, 8, 64, 0, px, pf, n);
    printf("found = %d (a report above means the race was caught)\n", found);
    /* the missing barrier of planted.cuh is a data race too */
    std::vector<float> y(4 * 256, 1.0f), out(4);
    const float *py = y.data();
    float *po = out.data();
    TLAUNCH(p_missing_barrier, 4, 256, 0, py, po);
    return found == 1 ? 0 : 1;
}
