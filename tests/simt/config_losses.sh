#!/usr/bin/env bash
# config_losses.sh — the acceptance check in the emulated build: the real trainer on a real
# config trains the same with train.device = cuda (the CUDA backend's kernels under the SIMT
# emulation, cuBLAS on the host stand-in) as with train.device = cpu.
#
#   bash tests/simt/config_losses.sh BUILD_DIR CONFIG STEPS TOLERANCE
#
# Runs BUILD_DIR/trainer twice for STEPS optimizer steps on one thread (log_every = 1, its own
# save_dir in a temporary folder, the same seed), once per device, and compares the loss of every
# step from metrics.jsonl: passes when every step is present on both and the largest relative
# difference is below TOLERANCE. Prints each step's two losses. Exit 77 (skipped) when the
# build has no CUDA backend.
set -euo pipefail
[ $# -eq 4 ] || { sed -n '2,13p' "$0"; exit 2; }
build=$1 config=$2 steps=$3 tol=$4
tmp=$(mktemp -d /tmp/config_losses.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
for dev in cpu cuda; do
  if ! "$build/trainer" --config "$config" --set train.device=$dev --set train.max_steps="$steps" \
      --set train.log_every=1 --set train.threads=1 --set train.save_dir="$tmp/$dev" \
      --set data.cache_dir="$tmp/cache_$dev" > "$tmp/$dev.log" 2>&1; then
    tail -5 "$tmp/$dev.log"
    if grep -q "no CUDA backend\|no CUDA device" "$tmp/$dev.log"; then exit 77; fi
    echo "config_losses.sh: training $config on $dev failed" >&2
    exit 1
  fi
done
grep -m1 -i "device" "$tmp/cuda.log" || true
python3 - "$tmp/cpu/metrics.jsonl" "$tmp/cuda/metrics.jsonl" "$steps" "$tol" <<'PY'
import json, sys
def losses(path):
    return {d["step"]: d["loss"] for d in map(json.loads, open(path)) if d.get("type") == "train"}
cpu, cuda = losses(sys.argv[1]), losses(sys.argv[2])
steps, tol = int(sys.argv[3]), float(sys.argv[4])
worst = 0.0
for s in range(1, steps + 1):
    if s not in cpu or s not in cuda:
        print(f"step {s}: missing (cpu {s in cpu}, cuda {s in cuda})")
        sys.exit(1)
    rel = abs(cpu[s] - cuda[s]) / abs(cpu[s])
    worst = max(worst, rel)
    print(f"step {s}: cpu {cpu[s]:.9f} cuda {cuda[s]:.9f} rel {rel:.2e}")
print(f"{steps} steps: largest relative difference {worst:.3g} (tolerance {tol:g})")
sys.exit(0 if worst < tol else 1)
PY
