#!/usr/bin/env bash
# compare_losses.sh — do two builds of the trainer train identically? Runs each build's trainer
# for N optimizer steps (default 32) on one thread with the same config, then compares the loss
# of every step (metrics.jsonl, 17 significant digits): bit-identical steps and the largest
# relative difference.
#
#   bash bench/compare_losses.sh OLD_BUILD_DIR NEW_BUILD_DIR [--config FILE] [--steps N]
#
# A change that keeps the order of float operations must give "N of N bit-identical"; one that
# reorders sums should stay within about 1e-5 relative over 32 steps. Each run trains its own
# SentencePiece model (deterministic) in a temporary save_dir, removed afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { sed -n '2,12p' "$0"; exit 2; }
old=$1 new=$2
shift 2
config=configs/luong.ini steps=32
while [ $# -gt 0 ]; do
  case "$1" in
    --config) config=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    *) echo "compare_losses.sh: unknown argument '$1' (see the top of this file)" >&2; exit 2 ;;
  esac
done
tmp=$(mktemp -d /tmp/compare_losses.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
for side in old new; do
  dir=$old; [ $side = new ] && dir=$new
  "$dir/trainer" --config "$config" --set train.max_steps="$steps" --set train.log_every=1 \
    --set train.threads=1 --set train.save_dir="$tmp/$side" > "$tmp/$side.log" 2>&1 ||
    { tail "$tmp/$side.log"; echo "compare_losses.sh: the $side build failed" >&2; exit 1; }
done
python3 - "$tmp/old/metrics.jsonl" "$tmp/new/metrics.jsonl" <<'PY'
import json, sys
def losses(path):
    return {d["step"]: d["loss"] for d in map(json.loads, open(path)) if d.get("type") == "train"}
a, b = losses(sys.argv[1]), losses(sys.argv[2])
steps = sorted(set(a) & set(b))
same = sum(a[s] == b[s] for s in steps)
rel = max((abs(a[s] - b[s]) / abs(a[s]) for s in steps), default=float("nan"))
print(f"{len(steps)} common steps (old {len(a)}, new {len(b)}): {same} bit-identical, "
      f"max relative difference {rel:.3g}")
for s in steps:
    if a[s] != b[s]:
        print(f"  step {s}: {a[s]!r} vs {b[s]!r}")
sys.exit(0 if steps else 1)
PY
