/* tests/simt/asan_overrun.cc — planted bug for the ASan build: p_dyn_overrun writes 64 floats into
 * 32 floats of dynamic shared memory; the test passes only if AddressSanitizer reports a
 * heap-buffer-overflow (CTest's PASS_REGULAR_EXPRESSION). */
#include <cstdio>
#include <vector>

#include "kernels.cuh"
#include "planted.cuh"

int main() {
    std::vector<float> out(64);
    float *po = out.data();
    TLAUNCH(p_dyn_overrun, 1, 64, 32 * sizeof(float), po);
    printf("NOT CAUGHT: the overrun of dynamic shared memory went unreported\n");
    return 1;
}
