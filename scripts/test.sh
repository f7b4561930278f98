#!/usr/bin/env bash
# What CI runs, in named steps, each timed:
#   1. prepare   install the Debian packages, build (build/), fetch Multi30k   scripts/prepare.sh
#   2. tests     the whole CTest suite                                          build/
#   3. simt      the emulated CUDA build: ctest -L simt plain (every CUDA op    scripts/simt.sh
#                against the CPU under five thread schedules), under ASan+UBSan, and under
#                gcc's TSan (the emulation's tests, then every CUDA op once)
#   4. mutate    the sample of 10 mutants in tests/mutation/ci_sample.txt, each  scripts/mutate.sh
#                compiled into a copy of its test program (build/, build-simt/)  --sample
#                and killed by its tests (docs/mutation.md)
#   5. ptxas     nvcc/ptxas static check of the kernels (spills, local memory,  scripts/ptxas_check.sh
#                launch bounds, shared memory) and that docs/cuda_kernels.md     --self-test, --check
#                is current; skipped with a message when nvcc is absent
#   6. sanitize  the whole CTest suite again under ASan + UBSan (clang)         scripts/sanitize.sh
#   7. fuzz      every libFuzzer target for 16 s, two at a time on 2 CPUs        scripts/fuzz.sh
# Extra arguments go to the ctest runs. TEST_STEPS="prepare tests" (a subset, in this order)
# runs only those steps. Stops at the first step that fails.
set -euo pipefail
cd "$(dirname "$0")/.."
steps=${TEST_STEPS:-prepare tests simt mutate ptxas sanitize fuzz}
times=()
run_step() {
  local name=$1
  shift
  case " $steps " in *" $name "*) ;; *) return 0 ;; esac
  echo "==== step $name: $*"
  local t0=$SECONDS
  "$@"
  times+=("$(printf '%-9s %5d s' "$name" $((SECONDS - t0)))")
  echo "==== step $name: done in $((SECONDS - t0)) s"
}
run_step prepare bash scripts/prepare.sh
run_step tests ctest --test-dir build --output-on-failure -j2 "$@"
run_step simt bash scripts/simt.sh "$@"
run_step mutate bash scripts/mutate.sh --sample
ptxas_step() { bash scripts/ptxas_check.sh --self-test && bash scripts/ptxas_check.sh --check; }
run_step ptxas ptxas_step
run_step sanitize bash scripts/sanitize.sh "$@"
run_step fuzz bash scripts/fuzz.sh
echo "==== all steps passed:"
printf '  %s\n' "${times[@]}"
