/* tests/simt/asan_static_overrun.cc — planted bug for the ASan+UBSan build: p_static_overrun
 * writes 33 floats into a static __shared__ array of 32, in a kernel that also has 33 floats of
 * dynamic shared memory; the test passes only if the sanitizers report the static array's
 * overrun (CTest's PASS_REGULAR_EXPRESSION: UBSan's bounds check, or ASan's global redzone). */
#include <cstdio>
#include <vector>

#include "kernels.cuh"
#include "planted.cuh"

int main() {
    std::vector<float> out(33);
    float *po = out.data();
    TLAUNCH(p_static_overrun, 1, 33, 33 * sizeof(float), po);
    printf("NOT CAUGHT: the overrun of static shared memory went unreported\n");
    return 1;
}
