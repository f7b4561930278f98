#!/usr/bin/env bash
# compare_builds.sh — training tokens/s of two builds of the trainer on the same batches,
# interleaved: is a change faster or slower than before it?
#
#   bash bench/compare_builds.sh OLD_BUILD_DIR NEW_BUILD_DIR [--config FILE] [--runs R]
#                                [--batches N] [--warmup W] [--threads T] [--spm MODEL]
#                                [--old-set SECTION.KEY=VALUE]... [--new-set SECTION.KEY=VALUE]...
#
# Runs OLD_BUILD_DIR/bench_train and NEW_BUILD_DIR/bench_train alternately (old, new, old, new,
# …) R times each (default 5) on the config (default configs/luong.ini) with N timed batches
# after W warm-up ones (defaults 20 and 3) and T threads (default: all cores), both on the same
# SentencePiece model (--spm MODEL, else bench_train's choice: <save_dir>/spm.model if it exists,
# else one trained the trainer's deterministic way for each run), so both time the same batches.
# Prints each run's tokens/s, then per build the median and the min–max, and the ratio of the
# medians (new / old), with the CPU model and /proc/loadavg before and after; it warns when the
# 1-minute load was above 0.5 before it started (another job shares the cores: the figures then
# say little). Build each folder first (cmake --build DIR --target bench_train).
# --old-set / --new-set pass a config override to one side only, so that one build can be
# compared with itself under two settings (an override of the data or batching keys gives that
# side other batches), e.g. float32 against bf16:
#   bash bench/compare_builds.sh build build --config configs/transformer.ini \
#     --new-set train.precision=bf16
set -euo pipefail
cd "$(dirname "$0")/.."

[ $# -ge 2 ] || { sed -n '2,23p' "$0"; exit 2; }
old=$1 new=$2
shift 2
config=configs/luong.ini runs=5 batches=20 warmup=3 spm="" old_sets=() new_sets=()
threads=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)
while [ $# -gt 0 ]; do
  case "$1" in
    --config) config=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --batches) batches=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --spm) spm=$2; shift 2 ;;
    --old-set) old_sets+=(--set "$2"); shift 2 ;;
    --new-set) new_sets+=(--set "$2"); shift 2 ;;
    *) echo "compare_builds.sh: unknown argument '$1' (see the top of this file)" >&2; exit 2 ;;
  esac
done
for b in "$old" "$new"; do
  [ -x "$b/bench_train" ] || { echo "compare_builds.sh: no $b/bench_train; build it first" >&2; exit 2; }
done

tmp=$(mktemp -d /tmp/compare_builds.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
spm_arg=()
[ -z "$spm" ] || spm_arg=(--spm "$spm")

load0=$(cat /proc/loadavg)
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
echo "config: $config; batches: $warmup warm-up + $batches timed; threads: $threads; runs: $runs each, interleaved"
[ ${#old_sets[@]} -eq 0 ] || echo "old side: ${old_sets[*]}"
[ ${#new_sets[@]} -eq 0 ] || echo "new side: ${new_sets[*]}"
echo "loadavg before: $load0"
awk -v l="${load0%% *}" 'BEGIN { exit !(l > 0.5) }' &&
  echo "WARNING: the machine was not idle (1-minute load ${load0%% *}); another job shares the cores"
declare -a t_old t_new
for ((r = 1; r <= runs; r++)); do
  for side in old new; do
    dir=$old sets=("${old_sets[@]}")
    [ $side = new ] && dir=$new sets=("${new_sets[@]}")
    "$dir/bench_train" --config "$config" --batches "$batches" --warmup "$warmup" \
      --threads "$threads" "${spm_arg[@]}" "${sets[@]}" --dump "$tmp/$side.bin" > "$tmp/$side.log" 2>&1 ||
      { cat "$tmp/$side.log"; exit 1; }
    tps=$(sed -n 's/^trainer: \([0-9.]*\) tokens\/s.*/\1/p' "$tmp/$side.log" | tail -1)
    [ -n "$tps" ] || { cat "$tmp/$side.log"; echo "compare_builds.sh: no tokens/s line" >&2; exit 1; }
    if [ $side = old ]; then t_old+=("$tps"); else t_new+=("$tps"); fi
    echo "run $r $side: $tps tokens/s"
  done
done
echo "loadavg after: $(cat /proc/loadavg)"
stats() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END {
  m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
  printf "%.1f %.1f %.1f\n", m, v[1], v[NR] }'; }
read -r mo lo ho <<<"$(stats "${t_old[@]}")"
read -r mn ln hn <<<"$(stats "${t_new[@]}")"
echo "old ($old): median $mo tokens/s (min $lo, max $ho)"
echo "new ($new): median $mn tokens/s (min $ln, max $hn)"
awk -v a="$mn" -v b="$mo" 'BEGIN { printf "new/old ratio of medians: %.3f\n", a / b }'
