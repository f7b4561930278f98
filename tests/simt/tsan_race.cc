/* tests/simt/tsan_race.cc — planted bug for the TSan build: p_racy_flag stores a non-atomic
 * "found" flag from many threads of several blocks (the same value: still a data race in CUDA's
 * memory model). The test passes only if ThreadSanitizer reports a data race (CTest's
 * PASS_REGULAR_EXPRESSION). */
#include <cmath>
#include <cstdio>
#include <vector>

#include "kernels.cuh"
#include "planted.cuh"

int main() {
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
