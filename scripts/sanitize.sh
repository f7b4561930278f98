#!/usr/bin/env bash
# Builds everything with AddressSanitizer + UndefinedBehaviorSanitizer (clang, CMake
# -DTRAINER_SANITIZE=ON) in build-asan/ and runs the whole CTest suite there; extra arguments go
# to ctest. Any sanitizer report fails the test that caused it (UBSan does not recover; ASan's
# LeakSanitizer reports leaks at exit). Suppressions, for third-party libraries only, are in
# tests/sanitizers/. A test that cannot run under ASan says why and exits 77 (CTest: not run),
# seeing TRAINER_SANITIZE=1 in its environment.
set -euo pipefail
cd "$(dirname "$0")/.."
cc=${SANITIZE_CC:-clang}
cxx=${SANITIZE_CXX:-clang++}
if ! command -v "$cc" >/dev/null || ! command -v "$cxx" >/dev/null; then
  echo "sanitize: $cc / $cxx not found; run scripts/setup.sh" >&2
  exit 1
fi
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Release -DTRAINER_SANITIZE=ON -DTRAINER_NO_CUDA=ON \
      -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" >/dev/null
cmake --build build-asan -j2 -- --no-print-directory >/dev/null
ctest --test-dir build-asan --output-on-failure -j2 "$@"
