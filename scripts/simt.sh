#!/usr/bin/env bash
# simt.sh — the emulated CUDA build's checks (docs/gpu.md), each phase timed:
#   1. build-simt       -DTRAINER_SIMT=ON (Release, the default compilers): the CUDA backend
#                       compiled as C++ against the SIMT emulation and the host stand-ins of the
#                       CUDA runtime and cuBLAS; runs `ctest -L simt` (the emulation's own tests,
#                       the stand-ins' test, every CUDA op against the CPU under five schedules)
#   2. build-simt-asan  the same under ASan + UBSan (clang, -DTRAINER_SANITIZE=ON), `ctest -L simt`
#                       but the whole-config trainer runs (test_simt_config_*) and the
#                       Transformer at 4,096 pieces (test_length_simt_long*)
#   3. tsan             scripts/simt_tsan.sh: the emulation's own tests under ThreadSanitizer (gcc)
#   4. tsan_ops         scripts/simt_tsan.sh --ops: every CUDA op against the CPU once, the whole
#                       emulated backend under ThreadSanitizer; any race report fails it
# Only the simt tests' executables are built (target simt_tests). Extra arguments go to ctest.
# SIMT_PHASES="plain asan tsan tsan_ops" (a subset) runs only those. Stops at the first failure.
set -euo pipefail
cd "$(dirname "$0")/.."
phases=${SIMT_PHASES:-plain asan tsan tsan_ops}
times=()
phase() {
  local name=$1
  shift
  case " $phases " in *" $name "*) ;; *) return 0 ;; esac
  echo "==== simt $name"
  local t0=$SECONDS
  "$@"
  times+=("$(printf '%-6s %5d s' "$name" $((SECONDS - t0)))")
}
plain() {
  cmake -S . -B build-simt -DCMAKE_BUILD_TYPE=Release -DTRAINER_SIMT=ON >/dev/null
  cmake --build build-simt -j2 --target simt_tests -- --no-print-directory >/dev/null
  ctest --test-dir build-simt -L simt --output-on-failure -j2 "$@"
}
asan() {
  local cc=${SANITIZE_CC:-clang} cxx=${SANITIZE_CXX:-clang++}
  if ! command -v "$cc" >/dev/null || ! command -v "$cxx" >/dev/null; then
    echo "simt: $cc / $cxx not found; run scripts/setup.sh" >&2
    return 1
  fi
  cmake -S . -B build-simt-asan -DCMAKE_BUILD_TYPE=Release -DTRAINER_SIMT=ON \
        -DTRAINER_SANITIZE=ON -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" >/dev/null
  cmake --build build-simt-asan -j2 --target simt_tests -- --no-print-directory >/dev/null
  # the whole-config runs (test_simt_config_*) and the Transformer at 4,096 pieces
  # (test_length_simt_long*; at 128 it runs here) are left to the plain phase: minutes under ASan
  ctest --test-dir build-simt-asan -L simt -E "test_simt_config|test_length_simt_long" \
    --output-on-failure -j2 "$@"
}
tsan() { bash scripts/simt_tsan.sh; }
tsan_ops() { bash scripts/simt_tsan.sh --ops; }
phase plain plain "$@"
phase asan asan "$@"
phase tsan tsan
phase tsan_ops tsan_ops
echo "==== simt: all phases passed:"
printf '  %s\n' "${times[@]}"
