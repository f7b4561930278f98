#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz/fuzz_*.c) with clang, ASan and UBSan in build-fuzz/ and
# runs each for FUZZ_SECONDS seconds (default 16: the seven targets take under 2 minutes).
# Exits non-zero if any target finds a crash, a leak, a sanitizer error, a timeout or an
# out-of-memory; the input that caused it is saved as build-fuzz/findings/<target>/crash-*
# (leak-*, timeout-*, oom-*). Prints the executions per target at the end.
#
#   bash scripts/fuzz.sh                         all targets, 16 s each
#   FUZZ_SECONDS=600 bash scripts/fuzz.sh ckpt   one target, 10 minutes
#   build-fuzz/fuzz_config -help=1               libFuzzer's own options (run from the repo root)
#
# New inputs that reach new code are kept in build-fuzz/corpus/<target>/ (git-ignored), so
# repeated runs go on from where the last one stopped; the committed seeds are read from
# tests/fuzz/corpus/<target>/ and past findings from tests/fuzz/regressions/<target>/.
# A finding becomes a regression test: fix the code, then copy the input into
# tests/fuzz/regressions/<target>/ (CTest's fuzz_replay_<target> replays it in every build).
set -euo pipefail
cd "$(dirname "$0")/.."

secs=${FUZZ_SECONDS:-16}
all=(config ckpt checkpoint encoded corpus spm spm_encode)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")

cc=${FUZZ_CC:-clang}
cxx=${FUZZ_CXX:-clang++}
if ! command -v "$cc" >/dev/null || ! command -v "$cxx" >/dev/null; then
  echo "fuzz: $cc / $cxx not found; run scripts/setup.sh (Debian packages clang, libclang-rt-dev," \
       "libomp-dev)" >&2
  exit 1
fi
cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Release -DTRAINER_FUZZ=ON -DTRAINER_NO_CUDA=ON \
      -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" >/dev/null
cmake --build build-fuzz -j2 -- --no-print-directory >/dev/null

# libFuzzer's own options; leaks are errors (ASan's LeakSanitizer), and so is any input that
# takes over 10 s or makes the process use over 2 GiB.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:strict_string_checks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
export LSAN_OPTIONS="suppressions=$PWD/tests/sanitizers/lsan.supp:print_suppressions=0"
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1

failed=()
summary=()
for t in "${targets[@]}"; do
  bin=build-fuzz/fuzz_$t
  [ -x "$bin" ] || { echo "fuzz: no target '$t' (have: ${all[*]})" >&2; exit 2; }
  mkdir -p "build-fuzz/corpus/$t" "build-fuzz/findings/$t"
  log=build-fuzz/findings/$t.log
  dirs=("build-fuzz/corpus/$t" "tests/fuzz/corpus/$t")
  [ -d "tests/fuzz/regressions/$t" ] && dirs+=("tests/fuzz/regressions/$t")
  dict=()
  if [ -f "tests/fuzz/$t.dict" ]; then
    # the committed words, and for the config parser the attention kinds' names, from the
    # table's rows X(ENUM, name) in src/attention/attention.h
    cp "tests/fuzz/$t.dict" "build-fuzz/$t.dict"
    if [ "$t" = config ]; then
      sed -n 's/^ *X([A-Z0-9_]*, *\([a-z0-9_]*\)).*/"\1"/p' src/attention/attention.h \
        >>"build-fuzz/$t.dict"
      grep -q '^"sdp"$' "build-fuzz/$t.dict" \
        || { echo "fuzz: no attention kinds read from src/attention/attention.h" >&2; exit 2; }
    fi
    dict=(-dict="build-fuzz/$t.dict")
  fi
  echo "fuzz: $t for ${secs} s"
  rc=0
  "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
         -artifact_prefix="build-fuzz/findings/$t/" "${dict[@]}" "${dirs[@]}" >"$log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  cov=$(grep -Eo 'cov: [0-9]+' "$log" | tail -1 | cut -d' ' -f2)
  if [ "$rc" -ne 0 ]; then
    failed+=("$t")
    echo "fuzz: $t FAILED (exit $rc); the log is $log:" >&2
    grep -E 'ERROR|FUZZ_ASSERT|CHECK failed|SUMMARY|runtime error|Test unit written' "$log" \
      | head -20 >&2 || true
    summary+=("$(printf '%-11s %10s executions  coverage %5s  FAILED' "$t" "${execs:-?}" "${cov:-?}")")
  else
    summary+=("$(printf '%-11s %10s executions  coverage %5s  ok' "$t" "${execs:-?}" "${cov:-?}")")
  fi
done
echo "fuzz: ${secs} s per target"
printf '  %s\n' "${summary[@]}"
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: findings in: ${failed[*]} (inputs under build-fuzz/findings/)" >&2
  exit 1
fi
echo "fuzz: no findings"
