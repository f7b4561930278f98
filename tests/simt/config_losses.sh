#!/usr/bin/env bash
# config_losses.sh — the acceptance check in the emulated build: the real trainer on a real
# config trains the same with train.device = cuda (the CUDA backend's kernels under the SIMT
# emulation, cuBLAS on the host stand-in) as with train.device = cpu.
#
#   bash tests/simt/config_losses.sh BUILD_DIR CONFIG STEPS TOLERANCE [SECTION.KEY=VALUE]...
#
# Runs BUILD_DIR/trainer twice for STEPS optimizer steps on one thread (log_every = 1, its own
# save_dir in a temporary folder, the same seed), once per device, and compares the loss of every
# step from metrics.jsonl: passes when every step is present on both and the largest relative
# difference is below TOLERANCE. Prints each step's two losses. Each SECTION.KEY=VALUE is one
# more --set for both runs. The runs set
# train.warmup_steps = 1, so that every step updates the weights at the full learning rate (inside
# a warm-up of hundreds of steps they hardly move, and a wrong backward would not change the
# losses): the check fails unless the learning rate of the steps never rises (past the warm-up).
# Only the emulated build registers it, where the CUDA backend always exists: a trainer that
# cannot start it fails the check (it is never skipped).
set -euo pipefail
[ $# -ge 4 ] || { sed -n '2,18p' "$0"; exit 2; }
build=$1 config=$2 steps=$3 tol=$4
shift 4
extra=()
for kv in "$@"; do extra+=(--set "$kv"); done
tmp=$(mktemp -d /tmp/config_losses.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
for dev in cuda cpu; do # cuda first: a backend that does not start fails at once
  if ! "$build/trainer" --config "$config" --set train.device=$dev --set train.max_steps="$steps" \
      --set train.warmup_steps=1 --set train.log_every=1 --set train.threads=1 \
      --set train.save_dir="$tmp/$dev" --set data.cache_dir="$tmp/cache_$dev" "${extra[@]}" \
      > "$tmp/$dev.log" 2>&1; then
    tail -5 "$tmp/$dev.log"
    echo "config_losses.sh: training $config on $dev failed" >&2
    exit 1
  fi
done
grep -m1 -i "device" "$tmp/cuda.log" || true
python3 - "$tmp/cpu/metrics.jsonl" "$tmp/cuda/metrics.jsonl" "$steps" "$tol" <<'PY'
import json, sys
def train_lines(path):
    return {d["step"]: d for d in map(json.loads, open(path)) if d.get("type") == "train"}
cpu_l, cuda_l = train_lines(sys.argv[1]), train_lines(sys.argv[2])
cpu = {s: d["loss"] for s, d in cpu_l.items()}
cuda = {s: d["loss"] for s, d in cuda_l.items()}
steps, tol = int(sys.argv[3]), float(sys.argv[4])
lrs = [cpu_l[s]["lr"] for s in sorted(cpu_l)]
if any(b > a for a, b in zip(lrs, lrs[1:])):
    print(f"the learning rate rises over the steps ({lrs}): still inside the warm-up, where the "
          "weights hardly move and a wrong backward would not show")
    sys.exit(1)
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
