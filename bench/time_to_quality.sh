#!/usr/bin/env bash
# time_to_quality.sh — wall time to the best validation BLEU of two revisions of the trainer,
# trained side by side on the same config and seed: is the trainer faster to a given quality
# than it was at an earlier commit (time to quality)?
#
#   bash bench/time_to_quality.sh OLD_REV [NEW_REV] [--config FILE] [--own-config] [--threads T]
#                                 [--out DIR] [--set SECTION.KEY=VALUE]...
#                                 [--new-set SECTION.KEY=VALUE]...
#
# Builds OLD_REV and NEW_REV (default: the working tree's HEAD) in git worktrees under DIR
# (default /tmp/ttq), Release, target trainer only; then trains both at once, each with T threads
# (default 1) pinned to its own cores (taskset), the same config (default
# configs/transformer.ini; both read the working tree's copy, so a key a revision does not know
# stops it at start-up) and the --set overrides, each in DIR/old/run and DIR/new/run. Each run
# stops where the config says (train.max_hours, train.patience, train.epochs). --own-config
# makes each side read the config file as it is at its own revision instead ("the config before
# and after"; configs/transformer.ini gained train.ema_warmup after a89380a). --new-set
# overrides a key on the new side only (a recipe change such as train.ema_warmup, which the old
# revision may not know). Then prints, per side, every validation's epoch, BLEU and elapsed time,
# the best validation BLEU and the wall time at which it was first reached, the ratios new / old
# of those times and of the tokens/s, and the wall time at which the new side first reached the
# old side's best BLEU (time to a target quality, which stays meaningful when both runs were
# stopped by train.max_hours while still improving); with the CPU model and /proc/loadavg before
# and after. Both sides share the memory bus, so the figures are for two jobs at once; run
# nothing else meanwhile. The worktrees stay
# for inspection: `git worktree remove DIR/old/src DIR/new/src` (or delete DIR, then
# `git worktree prune`). Tested with tests/fixtures/tiny.ini --set train.max_epochs=2.
set -euo pipefail
cd "$(dirname "$0")/.."

[ $# -ge 1 ] && [[ $1 != --* ]] || { sed -n '2,20p' "$0"; exit 2; }
old_rev=$1
shift
new_rev=HEAD
if [ $# -gt 0 ] && [[ $1 != --* ]]; then new_rev=$1; shift; fi
config=configs/transformer.ini own_config=0 threads=1 out=/tmp/ttq sets=() new_sets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --config) config=$2; shift 2 ;;
    --own-config) own_config=1; shift ;;
    --threads) threads=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --set) sets+=(--set "$2"); shift 2 ;;
    --new-set) new_sets+=(--set "$2"); shift 2 ;;
    *) echo "time_to_quality.sh: unknown argument '$1' (see the top of this file)" >&2; exit 2 ;;
  esac
done
[ -r "$config" ] || { echo "time_to_quality.sh: cannot read the config '$config'" >&2; exit 2; }
ncpu=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)
if [ $((2 * threads)) -gt "$ncpu" ]; then
  echo "time_to_quality.sh: 2 x $threads threads on $ncpu CPUs would share cores; use --threads" \
       "$((ncpu / 2))" >&2
  exit 2
fi
command -v taskset >/dev/null || { echo "time_to_quality.sh: needs taskset (util-linux)" >&2; exit 2; }
here=$(pwd)
mkdir -p "$out"

build_rev() { # $1 side, $2 revision: a worktree at DIR/$1/src, built in DIR/$1/build
  local side=$1 rev=$2 src=$out/$1/src
  local commit
  commit=$(git rev-parse --verify "$rev^{commit}") ||
    { echo "time_to_quality.sh: '$rev' is not a commit" >&2; exit 2; }
  if [ -d "$src" ]; then git worktree remove --force "$src"; fi
  git worktree add --detach "$src" "$commit" >/dev/null
  echo "$side: $rev = $(git log -1 --format='%h %ad %s' --date=short "$commit" | cut -c1-100)"
  cmake -S "$src" -B "$out/$side/build" -DCMAKE_BUILD_TYPE=Release >"$out/$side/cmake.log" 2>&1
  cmake --build "$out/$side/build" --target trainer -j "$ncpu" >>"$out/$side/cmake.log" 2>&1 ||
    { tail -20 "$out/$side/cmake.log" >&2; echo "time_to_quality.sh: building $rev failed" >&2; exit 1; }
}
build_rev old "$old_rev"
build_rev new "$new_rev"

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
t0=$(date +%s)
pids=()
for i in 0 1; do
  side=$([ $i = 0 ] && echo old || echo new)
  run=$out/$side/run
  rm -rf "$run"
  cpus="$((i * threads))-$((i * threads + threads - 1))"
  side_sets=("${sets[@]}")
  [ "$side" = old ] || side_sets+=("${new_sets[@]}")
  # the trainer reads data/ relative to its working directory: run both from this checkout
  side_config=$config
  if [ $own_config = 1 ]; then
    side_config=$out/$side/src/$config
    [ -r "$side_config" ] ||
      { echo "time_to_quality.sh: --own-config: $config is not in the $side revision" >&2; exit 2; }
  fi
  (cd "$here" && exec taskset -c "$cpus" "$out/$side/build/trainer" --config "$side_config" \
     --set train.threads="$threads" --set train.save_dir="$run" \
     --set run.name="ttq_$side" "${side_sets[@]}") >"$out/$side/train.log" 2>&1 &
  pids+=($!)
done
echo "training both (logs: $out/old/train.log, $out/new/train.log) ..."
status=0
for p in "${pids[@]}"; do wait "$p" || status=1; done
[ $status = 0 ] || {
  grep -h "unknown key" "$out"/*/train.log >&2 &&
    echo "time_to_quality.sh: one revision does not know a key of $config; see --own-config" >&2
  echo "time_to_quality.sh: a run failed; see the logs" >&2; exit 1; }
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

summary() { # $1 side: every validation, then "BEST side bleu seconds epoch tok_s" on the last line
  awk -v side="$1" '
    function field(name,   v) {
      if (!match($0, "\"" name "\": [0-9.eE+-]+")) return ""
      v = substr($0, RSTART, RLENGTH); sub(/^[^:]*: /, "", v); return v + 0
    }
    /"type": "train"/ { tps += field("tok_s"); ntps++ }
    /"type": "val"/ {
      e = field("epoch"); b = field("val_bleu"); t = field("elapsed")
      printf "  %s epoch %3d  val BLEU %6.2f  at %6.1f min\n", side, e, b, t / 60
      if (!seen || b > best) { best = b; best_t = t; best_e = e; seen = 1 }
    }
    END {
      if (!seen) { print "time_to_quality.sh: " side ": no validation ran" > "/dev/stderr"; exit 1 }
      printf "BEST %s %.2f %.1f %d %.1f\n", side, best, best_t, best_e, ntps ? tps / ntps : 0
    }' "$out/$1/run/metrics.jsonl"
}
echo "== time to quality =="
echo "machine: $ncpu CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "config: $config$([ $own_config = 0 ] || echo ' (each revision'"'"'s own copy)') ${sets[*]}${new_sets[*]:+ (new side only: ${new_sets[*]})}; $threads thread(s) per side, both at once, $(awk -v s=$(( $(date +%s) - t0 )) 'BEGIN { printf "%.1f", s / 60 }') min in all"
echo "load average before: $load_before; after: $load_after"
old_sum=$(summary old) new_sum=$(summary new)
grep -v '^BEST' <<<"$old_sum"
grep -v '^BEST' <<<"$new_sum"
read -r _ _ old_b old_t old_e old_tps <<<"$(grep '^BEST' <<<"$old_sum")"
read -r _ _ new_b new_t new_e new_tps <<<"$(grep '^BEST' <<<"$new_sum")"
# "12.3% less wall time" for a ratio r below 1, "12.3% more wall time" above it
wall_awk='function wall_change(r) { return sprintf("%.1f%% %s wall time", 100 * (r < 1 ? 1 - r : r - 1), r < 1 ? "less" : "more") }'
printf 'old (%s): best val BLEU %s at epoch %s, %.1f min; %s tokens/s (mean of the progress lines)\n' \
  "$old_rev" "$old_b" "$old_e" "$(awk -v t="$old_t" 'BEGIN { print t / 60 }')" "$old_tps"
printf 'new (%s): best val BLEU %s at epoch %s, %.1f min; %s tokens/s\n' \
  "$new_rev" "$new_b" "$new_e" "$(awk -v t="$new_t" 'BEGIN { print t / 60 }')" "$new_tps"
awk -v ob="$old_b" -v nb="$new_b" -v ot="$old_t" -v nt="$new_t" -v os="$old_tps" -v ns="$new_tps" "$wall_awk"'
  BEGIN {
    printf "time to the best: new / old = %.3f (%s); BLEU new - old = %+.2f; " \
           "tokens/s new / old = %.3f\n", nt / ot, wall_change(nt / ot), nb - ob, (os > 0 ? ns / os : 0)
  }'
# time to the old side's best (a target quality): the first new validation at or above it
grep -v '^BEST' <<<"$new_sum" |
  awk -v ob="$old_b" -v ot="$old_t" "$wall_awk"'
    { b = $6; t = $8 * 60
      if (b + 0 >= ob + 0) {
        printf "time to the old best (%.2f): new reached %.2f at epoch %d, %.1f min: new / old = " \
               "%.3f (%s)\n", ob, b, $3, t / 60, t / ot, wall_change(t / ot)
        found = 1; exit
      } }
    END { if (!found) printf "time to the old best (%.2f): the new side never reached it\n", ob }'
