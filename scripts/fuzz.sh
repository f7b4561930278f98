#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz/fuzz_*.c) with clang, ASan and UBSan in build-fuzz/ and
# runs each for FUZZ_SECONDS seconds (default 16), FUZZ_JOBS targets at once (default the CPUs, at
# most 4: on 2 CPUs the seven targets take about a minute).
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
all=(config ckpt checkpoint encoded corpus spm spm_encode study)
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

# one target: its log in build-fuzz/findings/T.log, libFuzzer's exit code in build-fuzz/findings/T.rc
fuzz_one() {
  local t=$1 bin=build-fuzz/fuzz_$1
  mkdir -p "build-fuzz/corpus/$t" "build-fuzz/findings/$t"
  local dirs=("build-fuzz/corpus/$t" "tests/fuzz/corpus/$t") dict=() rc=0
  [ -d "tests/fuzz/regressions/$t" ] && dirs+=("tests/fuzz/regressions/$t")
  [ -f "build-fuzz/$t.dict" ] && dict=(-dict="build-fuzz/$t.dict")
  "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
         -artifact_prefix="build-fuzz/findings/$t/" "${dict[@]}" "${dirs[@]}" \
         >"build-fuzz/findings/$t.log" 2>&1 || rc=$?
  echo "$rc" >"build-fuzz/findings/$t.rc"
}

# FUZZ_JOBS targets at once (default: the CPUs, at most 4), each libFuzzer on one thread
jobs=${FUZZ_JOBS:-$(nproc)}
[[ $jobs =~ ^[1-9][0-9]*$ ]] || { echo "fuzz: FUZZ_JOBS=$jobs: give a whole number, 1 or more" >&2; exit 2; }
[ "$jobs" -le 4 ] || jobs=4
for t in "${targets[@]}"; do
  [ -x "build-fuzz/fuzz_$t" ] || { echo "fuzz: no target '$t' (have: ${all[*]})" >&2; exit 2; }
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
  else
    rm -f "build-fuzz/$t.dict"
  fi
  rm -f "build-fuzz/findings/$t.rc"
done
running=0
for t in "${targets[@]}"; do
  if [ "$running" -ge "$jobs" ]; then wait -n || true; running=$((running - 1)); fi
  echo "fuzz: $t for ${secs} s"
  fuzz_one "$t" &
  running=$((running + 1))
done
wait || true

failed=()
summary=()
for t in "${targets[@]}"; do
  log=build-fuzz/findings/$t.log
  rc=$(cat "build-fuzz/findings/$t.rc" 2>/dev/null || echo "?")
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  cov=$(grep -Eo 'cov: [0-9]+' "$log" | tail -1 | cut -d' ' -f2 || true)
  if [ "$rc" != 0 ]; then
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
