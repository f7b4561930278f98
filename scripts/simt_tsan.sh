#!/usr/bin/env bash
# The SIMT emulation under ThreadSanitizer (DESIGN.md §11): configures build-simt-tsan with gcc
# (-DTRAINER_SIMT=ON -DTRAINER_SIMT_TSAN=ON; clang 14's TSan missed the races this must find),
# builds the tests of tests/simt and runs them (CTest label simt). Blocks run on several OS
# threads, each emulated thread is a TSan fiber, and only barriers, warp collectives, the launch
# and the grid end order memory, so a race between emulated threads is a TSan report:
#   test_simt, test_simt_c    correct kernels: must give no report (TSan's exit code 66 fails them)
#   test_simt_tsan_race       the planted racy "found" flag: passes only if TSan reports it
# Extra arguments go to ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
cc=${SIMT_TSAN_CC:-gcc}
cxx=${SIMT_TSAN_CXX:-g++}
if ! command -v "$cc" >/dev/null || ! command -v "$cxx" >/dev/null; then
  echo "simt_tsan: $cc / $cxx not found (set SIMT_TSAN_CC / SIMT_TSAN_CXX to gcc's)" >&2
  exit 1
fi
cmake -S . -B build-simt-tsan -DCMAKE_BUILD_TYPE=Release -DTRAINER_SIMT=ON -DTRAINER_SIMT_TSAN=ON \
      -DTRAINER_NO_CUDA=ON -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" >/dev/null
cmake --build build-simt-tsan -j2 --target test_simt test_simt_c test_simt_tsan_race \
      -- --no-print-directory >/dev/null
ctest --test-dir build-simt-tsan -L simt --output-on-failure "$@"
