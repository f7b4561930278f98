#!/usr/bin/env bash
# compare_torch.sh — training tokens/s of the trainer against the same model in PyTorch (the
# current PyPI wheel, eager and torch.compile), on the same batches and thread count, each side
# run several times interleaved; prints every run, the median and min–max of each side, and the
# ratio of the trainer's median to the fastest PyTorch variant's median.
#
#   bash bench/compare_torch.sh [--config FILE] [--threads LIST] [--rounds R] [--batches N]
#                               [--warmup W] [--build DIR] [--variants LIST] [--precision P]
#
# Defaults: configs/luong.ini, threads "2" (a comma-separated list, e.g. 1,2: each count is a
# separate comparison), 5 rounds, 20 timed batches after 3 warm-up ones, build folder build/.
# One round runs the trainer (build/bench_train, which also writes the batches to a dump file)
# and then every PyTorch variant on that dump, in this order, so that the sides alternate.
#
# PyTorch: bench/.venv/bin/python, a virtual environment this script creates on first use with
# `pip install torch numpy` (PyPI's current wheel: MKL and oneDNN inside; several GB with its
# CUDA libraries; never needed by CI or the trainer); PYTHON=... overrides it. Variants
# (--variants, comma-separated; default: all of the model's):
#   eager        output layer + loss on all B·T target positions
#   nonpad       eager, output layer + loss on the non-padding positions only (the shortcut the
#                trainer takes in both models)
#   compile      with the shortcut: the Transformer's forward + loss through
#                torch.compile(dynamic=True), the RNN's decoder step
#   debian       Debian's /usr/bin/python3 torch, with the shortcut (only when installed)
# A variant that fails (no tokens/s line) is left out of the later rounds, and the summary says
# FAILED with the last line of its output; the other variants go on.
# --precision bf16 (default fp32): the trainer runs train.precision = bf16 (bf16 inputs to its
# products, fp32 accumulation; CPUs with AVX512_BF16) and PyTorch torch.autocast(cpu, bfloat16)
# around forward and loss (bench_dump.py reads the precision from the dump's config).
# The ratio is taken against the fastest variant, whatever work it does (the eager Transformer
# computes its output layer on the padding too, and is still sometimes the fastest; the summary
# marks it).
#
# Both sides get OMP_NUM_THREADS = OPENBLAS_NUM_THREADS = MKL_NUM_THREADS = T. The summary
# records the CPU, /proc/loadavg before and after, and warns when the machine was not idle: more
# than 10% of the CPUs busy over the 3 s before the first run (/proc/stat; the load average
# would still count a run that just ended), or a 1-minute load above T + 0.5 after the last.
set -euo pipefail
cd "$(dirname "$0")/.."

config=configs/luong.ini
threads_list=2
rounds=5
batches=20
warmup=3
build=build
want_variants=""
precision=fp32
while [ $# -gt 0 ]; do
  case "$1" in
    --config) config=$2; shift 2 ;;
    --threads) threads_list=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --batches) batches=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --variants) want_variants=$2; shift 2 ;;
    --precision) precision=$2; shift 2 ;;
    -h|--help) sed -n '2,39p' "$0"; exit 0 ;;
    *) echo "compare_torch.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
ncpu=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)

# the config's model.type (the [model] section's "type = ..."; default rnn)
[ -r "$config" ] || { echo "compare_torch.sh: cannot read the config '$config'" >&2; exit 2; }
model_type=$(awk '
  /^[ \t]*[#;]/ { next }
  /^[ \t]*\[/ { gsub(/[][ \t\r]/, ""); section = $0; next }
  section == "model" && /^[ \t]*type[ \t]*=/ {
    sub(/^[^=]*=[ \t]*/, ""); sub(/[ \t\r]*$/, ""); print; exit }' "$config")
model_type=${model_type:-rnn}
case "$model_type" in
  rnn) script=bench/bench_rnn_torch.py ;;
  transformer) script=bench/bench_transformer_torch.py ;;
  *) echo "compare_torch.sh: $config: model.type = '$model_type'; expected rnn or transformer" >&2
     exit 2 ;;
esac
all_variants="eager nonpad compile debian" same_work="nonpad compile debian"

# PyTorch from PyPI in bench/.venv (created on demand)
python=${PYTHON:-bench/.venv/bin/python}
if [ -z "${PYTHON:-}" ] && ! "$python" -c 'import torch' 2>/dev/null; then
  echo "compare_torch.sh: creating bench/.venv with PyPI's torch (pip; several GB, once)" >&2
  python3 -m venv bench/.venv
  bench/.venv/bin/pip install -q --upgrade pip
  bench/.venv/bin/pip install -q torch numpy
fi
"$python" -c 'import torch' || { echo "compare_torch.sh: $python cannot import torch" >&2; exit 1; }

variants=()
for v in ${want_variants//,/ }; do
  [[ " $all_variants " == *" $v "* ]] ||
    { echo "compare_torch.sh: --variants: '$v' is not one of: $all_variants" >&2; exit 2; }
done
for v in $all_variants; do
  [ -n "$want_variants" ] && [[ ",$want_variants," != *",$v,"* ]] && continue
  if [ "$v" = debian ] && ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then continue; fi
  variants+=("$v")
done
[ ${#variants[@]} -gt 0 ] || { echo "compare_torch.sh: no PyTorch variant to run" >&2; exit 2; }

variant_cmd() { # the PyTorch command line of variant $1 on dump $2 with $3 threads
  local py=$python flags=""
  case "$1" in
    nonpad) flags="--nonpad" ;;
    compile) flags="--compile --nonpad" ;;
    debian) py=/usr/bin/python3; flags="--nonpad" ;;
  esac
  echo "$py -u $script $2 --threads $3 $flags"
}

if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
blog=$(mktemp /tmp/bench_train.build.XXXXXX.log)
if ! cmake --build "$build" --target bench_train -j "${JOBS:-$ncpu}" >"$blog" 2>&1; then
  cat "$blog" >&2; rm -f "$blog"
  echo "compare_torch.sh: building bench_train failed" >&2
  exit 1
fi
rm -f "$blog"

dump=$(mktemp /tmp/bench_train.XXXXXX.bin)
log=$(mktemp /tmp/bench_train.run.XXXXXX.log)
trap 'rm -f "$dump" "$log"' EXIT

if [ -z "${OPENBLAS_CORETYPE:-}" ] && grep -qw avx512f /proc/cpuinfo; then
  export OPENBLAS_CORETYPE=SkylakeX  # what the trainer sets for itself on AVX-512 CPUs
fi

# shellcheck source=bench/lib.sh
source bench/lib.sh  # busy_percent

stats() { # "median min max" of the numbers on stdin
  sort -g | awk '{ a[NR] = $1 } END { m = NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2;
                                     printf "%.1f %.1f %.1f", m, a[1], a[NR] }'
}

summary=()
for threads in ${threads_list//,/ }; do
  export OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads MKL_NUM_THREADS=$threads
  busy_before=$(busy_percent)
  load_before=$(cut -d' ' -f1-3 /proc/loadavg)
  declare -A runs=() failed=()
  for ((r = 1; r <= rounds; r++)); do
    echo "== round $r/$rounds, $threads threads: trainer =="
    "$build/bench_train" --config "$config" --batches "$batches" --warmup "$warmup" \
      --threads "$threads" --dump "$dump" --set "train.precision=$precision" | tee "$log"
    tps=$(awk '/^trainer: [0-9.]+ tokens\/s/ {print $2}' "$log")
    [ -n "$tps" ] || { echo "compare_torch.sh: no tokens/s figure from bench_train" >&2; exit 1; }
    runs[trainer]+="$tps "
    for v in "${variants[@]}"; do
      [ -n "${failed[$v]:-}" ] && continue
      echo "== round $r/$rounds, $threads threads: pytorch $v =="
      # shellcheck disable=SC2046
      $(variant_cmd "$v" "$dump" "$threads") 2>&1 | tee "$log" || true
      tps=$(awk '/^pytorch: [0-9.]+ tokens\/s/ {print $2}' "$log")
      if [ -z "$tps" ]; then  # a variant that fails is left out of the rest, not the sitting
        failed[$v]="round $r: $(grep -v '^[[:space:]]*$' "$log" | tail -n 1 | cut -c1-160)"
        echo "compare_torch.sh: PyTorch $v gave no tokens/s figure; left out (${failed[$v]})" >&2
        continue
      fi
      runs[$v]+="$tps "
    done
  done
  load_after=$(cut -d' ' -f1-3 /proc/loadavg)
  read -r tmed tmin tmax <<<"$(tr ' ' '\n' <<<"${runs[trainer]}" | grep . | stats)"
  lines=("trainer            median $tmed  min-max $tmin-$tmax  (${runs[trainer]% })")
  best=""; best_med=0
  for v in "${variants[@]}"; do
    if [ -n "${failed[$v]:-}" ]; then
      lines+=("$(printf 'pytorch %-10s FAILED (%s)%s' "$v" "${failed[$v]}" \
        "${runs[$v]:+; its earlier runs: ${runs[$v]% }}")")
      continue
    fi
    read -r med mn mx <<<"$(tr ' ' '\n' <<<"${runs[$v]}" | grep . | stats)"
    tag=""
    if awk -v a="$med" -v b="$best_med" 'BEGIN { exit !(a > b) }'; then best=$v; best_med=$med; fi
    [[ " $same_work " == *" $v "* ]] || tag="  [more work: output layer on the padding too]"
    lines+=("$(printf 'pytorch %-10s median %s  min-max %s-%s  (%s)%s' "$v" "$med" "$mn" "$mx" \
      "${runs[$v]% }" "$tag")")
  done
  idle="idle"
  if awk -v b="$busy_before" -v a="${load_after%% *}" -v t="$threads" \
       'BEGIN { exit !(b > 10 || a > t + 0.5) }'; then
    idle="WARNING: the machine was not idle (other work ran beside the runs): the figures are lower bounds on speed and the ratio is less certain"
  fi
  summary+=("-- $threads threads, precision $precision, $rounds rounds interleaved, $warmup warm-up + $batches timed batches each --")
  summary+=("${lines[@]}")
  if [ -n "$best" ]; then
    summary+=("$(awk -v a="$tmed" -v b="$best_med" -v v="$best" \
      'BEGIN { printf "trainer / fastest PyTorch (%s) tokens/s, ratio of medians: %.3f", v, a / b }')")
  fi
  summary+=("CPUs busy in the 3 s before: $busy_before%; load average before: $load_before; after: $load_after -> $idle")
  unset runs failed
done

torch_info=$("$python" -c 'import torch
cap = [l.strip() for l in torch.__config__.show().splitlines() if "CPU capability usage" in l]
print(f"torch {torch.__version__} (PyPI), MKL {torch.backends.mkl.is_available()}, oneDNN "
      f"{torch.backends.mkldnn.is_available()}, " + (cap[0].lstrip("- ") if cap else "CPU capability unknown"))')
echo "== summary =="
echo "machine: $ncpu CPUs, $(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo); $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "config: $config (model.type $model_type; PyTorch: $script); $torch_info"
echo "OPENBLAS_CORETYPE: ${OPENBLAS_CORETYPE:-unset}"
printf '%s\n' "${summary[@]}"
