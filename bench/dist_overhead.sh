#!/usr/bin/env bash
# dist_overhead.sh — training tokens/s of one process against N MPI ranks on this machine, on the
# same config, interleaved: what data parallelism costs.
#
#   bash bench/dist_overhead.sh [--config FILE] [--runs R] [--steps S] [--log-every L]
#                               [--ranks N] [--build DIR]
#
# Alternates (R times each, default 3): `trainer train` as 1 process × N threads, then
# `mpirun -np N` × 1 thread (default N = 2: the cores of this machine, so the two sides use the
# same cores), then the same ranks with dist.overlap = true (the gradient sum by buckets of
# dist.bucket_mb, default 4 MiB, started while backward runs), each for S optimizer steps (default 60) with a progress line every L steps
# (default 20) into a fresh run folder under a temporary directory. From each run's
# metrics.jsonl it takes the train lines after the first (the first window holds the warm-up)
# and reports per side the median and min–max tokens/s, and for the ranks the median compute
# and all-reduce milliseconds per step (rank 0's; with overlap, "compute" holds the bucket sums
# started during backward and "all-reduce" the wait after it). It prints the CPU model and /proc/loadavg
# before and after, and warns when the 1-minute load was above 0.5 before it started. Needs a
# build with MPI (CMake found it) and mpirun; sets OpenMPI's run-as-root variables only when
# run as root, for this benchmark's own mpirun.
set -euo pipefail
cd "$(dirname "$0")/.."
config=configs/transformer.ini runs=3 steps=60 every=20 ranks=2 build=build
while [ $# -gt 0 ]; do
  case "$1" in
    --config) config=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --log-every) every=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    *) sed -n '2,17p' "$0"; exit 2 ;;
  esac
done
bin=$build/trainer
[ -x "$bin" ] || { echo "dist_overhead: $bin not built (cmake --build $build)" >&2; exit 1; }
command -v mpirun >/dev/null || { echo "dist_overhead: mpirun not found (scripts/setup.sh)" >&2; exit 1; }
if [ "$(id -u)" -eq 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
tmp=$(mktemp -d /tmp/dist_overhead.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) cores"
load0=$(cut -d' ' -f1-3 /proc/loadavg)
echo "load before: $load0"
awk -v l="${load0%% *}" 'BEGIN { exit !(l > 0.5) }' &&
  echo "WARNING: the machine was not idle (1-minute load ${load0%% *}): the figures say little"

sets=(--set train.max_steps="$steps" --set train.log_every="$every" --set train.save_every=0
      --set data.cache_dir="$tmp/cache")
one() { # side run -> appends "tok_s compute_ms allreduce_ms" lines of its steady windows
  local side=$1 i=$2 dir="$tmp/$1_$2"
  if [ "$side" = single ]; then
    "$bin" train --config "$config" "${sets[@]}" --set train.threads="$ranks" \
      --set train.save_dir="$dir" >"$dir.log" 2>&1
  elif [ "$side" = overlap ]; then
    mpirun --oversubscribe -np "$ranks" "$bin" train --config "$config" "${sets[@]}" \
      --set train.threads=1 --set dist.overlap=true --set train.save_dir="$dir" >"$dir.log" 2>&1
  else
    mpirun --oversubscribe -np "$ranks" "$bin" train --config "$config" "${sets[@]}" \
      --set train.threads=1 --set train.save_dir="$dir" >"$dir.log" 2>&1
  fi
  python3 - "$dir/metrics.jsonl" >>"$tmp/$side.txt" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if '"type": "train"' in l]
for r in rows[1:]:
    print(r["tok_s"], 1e3 * r.get("compute_s", 0), 1e3 * r.get("allreduce_s", 0))
EOF
  echo "  $side run $i: $(tail -n +2 "$dir/metrics.jsonl" | grep -c '"type": "train"') steady windows"
}
for i in $(seq 1 "$runs"); do
  one single "$i"
  one ranks "$i"
  one overlap "$i"
done
python3 - "$tmp" "$ranks" <<'EOF'
import statistics as st, sys
tmp, n = sys.argv[1], sys.argv[2]
def load(side):
    return [tuple(map(float, l.split())) for l in open(f"{tmp}/{side}.txt")]
s, r, o = load("single"), load("ranks"), load("overlap")
def line(name, v, unit):
    print(f"{name}: median {st.median(v):.1f} {unit}, min {min(v):.1f}, max {max(v):.1f} "
          f"({len(v)} windows)")
line(f"1 process x {n} threads", [x[0] for x in s], "tok/s")
line(f"{n} ranks x 1 thread", [x[0] for x in r], "tok/s")
line("  rank 0 compute per step", [x[1] for x in r], "ms")
line("  rank 0 all-reduce per step", [x[2] for x in r], "ms")
line(f"{n} ranks x 1 thread, dist.overlap", [x[0] for x in o], "tok/s")
line("  rank 0 compute (with the overlapped sums) per step", [x[1] for x in o], "ms")
line("  rank 0 wait for the buckets after backward per step", [x[2] for x in o], "ms")
print(f"ratio of medians (ranks / single): {st.median([x[0] for x in r]) / st.median([x[0] for x in s]):.3f}")
print(f"ratio of medians (overlap / ranks): {st.median([x[0] for x in o]) / st.median([x[0] for x in r]):.3f}")
EOF
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
