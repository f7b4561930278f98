#!/usr/bin/env bash
# The SIMT emulation under ThreadSanitizer (docs/gpu.md): configures build-simt-tsan with gcc
# (-DTRAINER_SIMT=ON -DTRAINER_SIMT_TSAN=ON; clang 14's TSan missed the races this must find),
# builds the tests of tests/simt and runs them (CTest label simt). Blocks run on several OS
# threads, each emulated thread is a TSan fiber, and only barriers, warp collectives, the launch
# and the grid end order memory, so a race between emulated threads is a TSan report:
#   test_simt, test_simt_c    correct kernels: must give no report (TSan's exit code 66 fails them)
#   test_simt_tsan_race       the planted racy "found" flag: passes only if TSan reports it
# (test_simt_reduce, registered with the label too, is left out here: it runs in scripts/simt.sh's
# plain and ASan phases, and under TSan its five schedules of every reduction take minutes.)
# Extra arguments go to ctest.
#
#   scripts/simt_tsan.sh --ops   instead: every CUDA op of the backend under TSan, once
#       (build-simt-tsan-ops: the whole emulated CUDA backend instrumented; test_backend_ops
#       --backend cuda with one schedule, OMP_NUM_THREADS=1 so that the CPU reference's
#       uninstrumented OpenMP runtime starts no thread). Fails on any TSan report (exit 66) or
#       failed check. In CI as scripts/simt.sh's phase tsan_ops (each emulated thread is a TSan
#       fiber: minutes on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/.."
cc=${SIMT_TSAN_CC:-gcc}
cxx=${SIMT_TSAN_CXX:-g++}
if ! command -v "$cc" >/dev/null || ! command -v "$cxx" >/dev/null; then
  echo "simt_tsan: $cc / $cxx not found (set SIMT_TSAN_CC / SIMT_TSAN_CXX to gcc's)" >&2
  exit 1
fi
if [ "${1:-}" = --ops ]; then
  cmake -S . -B build-simt-tsan-ops -DCMAKE_BUILD_TYPE=Release -DTRAINER_SIMT=ON \
        -DTRAINER_SIMT_TSAN=ON -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" >/dev/null
  cmake --build build-simt-tsan-ops -j2 --target test_backend_ops -- --no-print-directory >/dev/null
  OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 TEST_SIMT_SCHEDULES=1 \
    build-simt-tsan-ops/test_backend_ops --backend cuda
  exit $?
fi
cmake -S . -B build-simt-tsan -DCMAKE_BUILD_TYPE=Release -DTRAINER_SIMT=ON -DTRAINER_SIMT_TSAN=ON \
      -DTRAINER_NO_CUDA=ON -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" >/dev/null
cmake --build build-simt-tsan -j2 --target test_simt test_simt_c test_simt_tsan_race \
      -- --no-print-directory >/dev/null
ctest --test-dir build-simt-tsan -L simt -E test_simt_reduce --output-on-failure "$@"
