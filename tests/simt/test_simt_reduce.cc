/* tests/simt/test_simt_reduce.cc — the reductions every row kernel is built on, tested directly
 * under the SIMT emulation: block_sum (float and double), block_max, warp_sum and col_tree_sum of
 * src/ops/cuda/block_reduce.cuh, and the argmax tree of softmax_xent.cuh's k_argmax.
 *
 * For each block size the kernels use (block_sum / block_max: 32, 64, 128, 256; warp_sum: a
 * warp; col_tree_sum: 1 to COL_TY row lanes; k_argmax: rows of 1 to 600 values), every lane
 * position of the extreme is tried: block p of a launch puts the outstanding value (a sum's
 * large term, the maximum, the argmax) at lane p, so a tree that skips a lane, a level or a
 * partner gives a wrong answer for some p. The values are small integers, so every exact result
 * is representable and compared with ==. Every thread's return value is checked (the functions
 * return the total to all threads), and each kernel calls its reduction twice in a row on the
 * same shared buffer (the contract: the functions begin and end with a barrier, so the buffer
 * may be reused at once). Every launch runs under the five schedules of test_simt.cc (forward,
 * reverse, random 1–3); the results must be equal bit for bit.
 * Maxima: a large value in an odd lane (the case a tree over even lanes misses), all lanes
 * negative, −inf in all lanes but one (masked keys), all lanes equal. Argmax: ties go to the
 * smallest index; an all-equal row gives 0, as ops/ops.h's argmax (first on ties) and the CPU,
 * and so does a row with NaN in column 0.
 * Exit 0 when every check passes, 1 otherwise; with TEST_FAIL_FAST=1 the first failure exits 1.
 */
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "kernels.cuh"
#include "ops/cuda/block_reduce.cuh"
#include "ops/cuda/softmax_xent.cuh"
#include "simt_check.h"

/* ---- kernels: one block per lane position, NT values each ------------------------------- */

/* out[b·NT + x] = block_sum of block b's values as thread x sees it, then (out2) the sum of the
 * values times 3 through the same buffer at once. */
template <int NT, class T>
__global__ void __launch_bounds__(NT) k_t_sum(const T *v, T *out, T *out2) {
    __shared__ T buf[NT];
    size_t i = (size_t)blockIdx.x * NT + threadIdx.x;
    out[i] = block_sum<NT, T>(v[i], buf);
    out2[i] = block_sum<NT, T>(3 * v[i], buf);
}

/* out = block_max of the values, then out2 = block_max of their negations through the same
 * buffer (the max of −v: minus the minimum). */
template <int NT> __global__ void __launch_bounds__(NT) k_t_max(const float *v, float *out,
                                                                float *out2) {
    __shared__ float buf[NT];
    size_t i = (size_t)blockIdx.x * NT + threadIdx.x;
    out[i] = block_max<NT>(v[i], buf);
    out2[i] = block_max<NT>(-v[i], buf);
}

/* out[i] = warp_sum over the warp of lane i (blocks of 128: four warps, each its own sum). */
__global__ void __launch_bounds__(128) k_t_warp(const float *v, float *out) {
    size_t i = (size_t)blockIdx.x * 128 + threadIdx.x;
    out[i] = warp_sum(v[i]);
}

/* Block dim3(COL_TX, ty): out[b·COL_TX + x] = Σ_y v[b][y][x] by col_tree_sum, read by lane y = 0
 * (part[0][x] after the call); out2 the same for 3v through the same buffer, called at once as
 * layernorm.cuh's column kernel does (only lane 0 reads row 0, which only lane 0 writes). */
__global__ void __launch_bounds__(COL_TX *COL_TY) k_t_col(const float *v, float *out,
                                                            float *out2) {
    __shared__ float part[COL_TY][COL_TX];
    const int ty = (int)blockDim.y;
    size_t i = ((size_t)blockIdx.x * ty + threadIdx.y) * COL_TX + threadIdx.x;
    col_tree_sum(v[i], part);
    float s = threadIdx.y == 0 ? part[0][threadIdx.x] : 0.0f;
    col_tree_sum(3 * v[i], part);
    if (threadIdx.y == 0) {
        out[blockIdx.x * COL_TX + threadIdx.x] = s;
        out2[blockIdx.x * COL_TX + threadIdx.x] = part[0][threadIdx.x];
    }
}

/* ---- tests ------------------------------------------------------------------------------ */

/* Block p: 1 in every lane but lane p, which holds 1000 (double: 2^40, past float's 24 bits). */
template <int NT, class T> static void test_sum(T big, const char *tname) {
    std::vector<T> v((size_t)NT * NT, (T)1);
    for (int p = 0; p < NT; p++) v[(size_t)p * NT + p] = big;
    char what[64];
    snprintf(what, sizeof what, "block_sum<%d, %s>", NT, tname);
    auto r = under_all<T>(what, [&]() {
        std::vector<T> out((size_t)2 * NT * NT, (T)-7);
        const T *pv = v.data();
        T *po = out.data(), *po2 = po + (size_t)NT * NT;
        auto k = k_t_sum<NT, T>;
        TLAUNCH(k, NT, NT, 0, pv, po, po2);
        return out;
    });
    const T want = big + (T)(NT - 1);
    int bad = 0, bad2 = 0, first = -1;
    for (int p = 0; p < NT; p++)
        for (int x = 0; x < NT; x++) {
            size_t i = (size_t)p * NT + x;
            if (r[i] != want && bad++ == 0) first = p;
            bad2 += r[(size_t)NT * NT + i] != 3 * want;
        }
    CHECK(bad == 0, "%s: %d of %d thread results wrong, the first with the large value in lane "
          "%d: %.17g, not %.17g", what, bad, NT * NT, first,
          (double)r[(size_t)first * NT + 0], (double)want);
    CHECK(bad2 == 0, "%s: the second call on the same buffer: %d of %d results wrong", what,
          bad2, NT * NT);
}

/* For each lane p: the maximum in lane p over four kinds of rows (kinds × NT blocks):
 *   0: lane p = 100, the others small in [−4, 4];     1: all negative, lane p = −0.5;
 *   2: −inf everywhere but lane p = −3 (masked keys); 3: all lanes 2.5 (the maximum everywhere).
 * The second call gives the maximum of −v: minus the minimum of the row. */
template <int NT> static void test_max() {
    const int kinds = 4;
    std::vector<float> v((size_t)kinds * NT * NT), want(kinds * NT), want2(kinds * NT);
    unsigned s = 12345;
    for (int kd = 0; kd < kinds; kd++)
        for (int p = 0; p < NT; p++) {
            float *row = &v[((size_t)kd * NT + p) * NT];
            for (int x = 0; x < NT; x++) {
                s = s * 1664525u + 1013904223u;
                float u = (float)((s >> 8) % 17) * 0.5f - 4.0f; /* [−4, 4] in halves */
                row[x] = kd == 0 ? u : kd == 1 ? -1.0f - (float)((s >> 8) % 9) : kd == 2 ? -INFINITY : 2.5f;
            }
            row[p] = kd == 0 ? 100.0f : kd == 1 ? -0.5f : kd == 2 ? -3.0f : 2.5f;
            float mx = -INFINITY, mn = INFINITY;
            for (int x = 0; x < NT; x++) mx = row[x] > mx ? row[x] : mx, mn = row[x] < mn ? row[x] : mn;
            want[kd * NT + p] = mx, want2[kd * NT + p] = -mn;
        }
    char what[64];
    snprintf(what, sizeof what, "block_max<%d>", NT);
    auto r = under_all<float>(what, [&]() {
        std::vector<float> out((size_t)2 * kinds * NT * NT, -7.0f);
        const float *pv = v.data();
        float *po = out.data(), *po2 = po + (size_t)kinds * NT * NT;
        auto k = k_t_max<NT>;
        TLAUNCH(k, kinds * NT, NT, 0, pv, po, po2);
        return out;
    });
    static const char *kname[] = {"100 among [-4, 4]", "all negative", "-inf but one",
                                  "all equal"};
    for (int kd = 0; kd < kinds; kd++) {
        int bad = 0, bad2 = 0, first = -1;
        for (int p = 0; p < NT; p++)
            for (int x = 0; x < NT; x++) {
                size_t i = ((size_t)kd * NT + p) * NT + x;
                if (!(r[i] == want[kd * NT + p]) && bad++ == 0) first = p;
                bad2 += !(r[(size_t)kinds * NT * NT + i] == want2[kd * NT + p]);
            }
        CHECK(bad == 0, "%s, rows %s: %d of %d thread results wrong, the first with the maximum "
              "in lane %d: %g, not %g", what, kname[kd], bad, NT * NT, first,
              first >= 0 ? (double)r[((size_t)kd * NT + first) * NT] : 0.0,
              first >= 0 ? (double)want[kd * NT + first] : 0.0);
        CHECK(bad2 == 0, "%s, rows %s: the second call on the same buffer: %d of %d results "
              "wrong", what, kname[kd], bad2, NT * NT);
    }
}

/* Warp w of the launch (32 warps, 4 per block) puts 1000 in lane w and 1 elsewhere. */
static void test_warp() {
    const int nw = 32, n = nw * 32;
    std::vector<float> v(n, 1.0f);
    for (int w = 0; w < nw; w++) v[w * 32 + w] = 1000.0f;
    auto r = under_all<float>("warp_sum", [&]() {
        std::vector<float> out(n, -7.0f);
        const float *pv = v.data();
        float *po = out.data();
        TLAUNCH(k_t_warp, n / 128, 128, 0, pv, po);
        return out;
    });
    int bad = 0, first = -1;
    for (int i = 0; i < n; i++)
        if (r[i] != 1031.0f && bad++ == 0) first = i;
    CHECK(bad == 0, "warp_sum: %d of %d lane results wrong, the first in warp %d (large value in "
          "lane %d), lane %d: %g, not 1031", bad, n, first / 32, first / 32, first % 32,
          first >= 0 ? (double)r[first] : 0.0);
}

/* For ty = 1, 2, 4, ..., COL_TY row lanes: block p puts 1000 + x in row lane p of column x and
 * 1 elsewhere. */
static void test_col() {
    for (int ty = 1; ty <= COL_TY; ty <<= 1) {
        std::vector<float> v((size_t)ty * ty * COL_TX, 1.0f);
        for (int p = 0; p < ty; p++)
            for (int x = 0; x < COL_TX; x++) v[((size_t)p * ty + p) * COL_TX + x] = 1000.0f + x;
        char what[64];
        snprintf(what, sizeof what, "col_tree_sum ty=%d", ty);
        auto r = under_all<float>(what, [&]() {
            std::vector<float> out((size_t)2 * ty * COL_TX, -7.0f);
            const float *pv = v.data();
            float *po = out.data(), *po2 = po + (size_t)ty * COL_TX;
            TLAUNCH(k_t_col, ty, dim3(COL_TX, ty), 0, pv, po, po2);
            return out;
        });
        int bad = 0, first = -1;
        for (int p = 0; p < ty; p++)
            for (int x = 0; x < COL_TX; x++) {
                float want = 1000.0f + x + (float)(ty - 1);
                if ((r[p * COL_TX + x] != want || r[(size_t)ty * COL_TX + p * COL_TX + x] != 3 * want) &&
                    bad++ == 0)
                    first = p;
            }
        CHECK(bad == 0, "%s: %d of %d column sums wrong, the first with the large value in row "
              "lane %d", what, bad, ty * COL_TX, first);
    }
}

/* k_argmax over rows of V values: row p (p < V) has its maximum 100 at column p, the rest in
 * [−4, 4]; then rows with a tie (the maximum at two columns: the smaller wins), an all-equal
 * row (0), a row of −inf but one, a row whose maximum is in the last column, and a row with NaN
 * in column 0 (0, as the CPU's argmax: its running maximum is then NaN, equal to nothing). */
static void test_argmax(int V) {
    std::vector<float> x;
    std::vector<int> want;
    unsigned s = 777u + (unsigned)V;
    auto noise = [&]() {
        s = s * 1664525u + 1013904223u;
        return (float)((s >> 8) % 17) * 0.5f - 4.0f;
    };
    for (int p = 0; p < V; p++) {
        for (int c = 0; c < V; c++) x.push_back(c == p ? 100.0f : noise());
        want.push_back(p);
    }
    for (int p = 0; p < V && V > 1; p += 1 + V / 40) { /* ties: 9 at columns p and q */
        int q = (p * 7 + 3) % V;
        if (q == p) q = (p + 1) % V;
        for (int c = 0; c < V; c++) x.push_back(c == p || c == q ? 9.0f : noise());
        want.push_back(p < q ? p : q);
    }
    for (int c = 0; c < V; c++) x.push_back(1.5f); /* all equal */
    want.push_back(0);
    for (int c = 0; c < V; c++) x.push_back(c == V / 2 ? -2.0f : -INFINITY);
    want.push_back(V / 2);
    for (int c = 0; c < V; c++) x.push_back(c == V - 1 ? 5.0f : noise());
    want.push_back(V - 1);
    for (int c = 0; c < V; c++) x.push_back(c == 0 ? NAN : c == V / 2 ? 7.0f : noise());
    want.push_back(0);
    const int N = (int)want.size();
    char what[64];
    snprintf(what, sizeof what, "k_argmax V=%d", V);
    auto r = under_all<int>(what, [&]() {
        std::vector<int> ids(N, -7);
        const float *px = x.data();
        int *pi = ids.data();
        TLAUNCH(k_argmax, N, SX_THREADS, 0, pi, px, V);
        return ids;
    });
    int bad = 0, first = -1;
    for (int n = 0; n < N; n++)
        if (r[n] != want[n] && bad++ == 0) first = n;
    CHECK(bad == 0, "%s: %d of %d rows wrong, the first row %d: %d, not %d", what, bad, N, first,
          first >= 0 ? r[first] : 0, first >= 0 ? want[first] : 0);
}

int main() {
    test_sum<32, float>(1000.0f, "float");
    test_sum<64, float>(1000.0f, "float");
    test_sum<128, float>(1000.0f, "float");
    test_sum<256, float>(1000.0f, "float");
    test_sum<64, double>(1099511627776.0, "double");
    test_sum<128, double>(1099511627776.0, "double");
    test_sum<256, double>(1099511627776.0, "double");
    test_max<32>();
    test_max<64>();
    test_max<128>();
    test_max<256>();
    test_warp();
    test_col();
    for (int V : {1, 2, 31, 32, 33, 255, 256, 257, 600}) test_argmax(V);
    return check_report("test_simt_reduce");
}
