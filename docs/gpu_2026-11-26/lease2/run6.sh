#!/usr/bin/env bash
# the device call of 2026-11-26 (second lease): libraries, then scripts/gpu_check.sh, logs as one tarball
set -u
mkdir -p /tmp/l && tar xJf .gpu/libs.tar.xz -C /tmp/l
cu=$(dirname "$(find /usr/local /usr/lib /opt -name 'libcublas.so.13' 2>/dev/null | head -1)")
dn=$(dirname "$(find /usr/local /usr/lib /opt -name 'libcudnn.so.9' 2>/dev/null | head -1)")
export LD_LIBRARY_PATH=/tmp/l/lib:$cu:$dn:${LD_LIBRARY_PATH:-}
echo "cublas: $cu cudnn: $dn"; command -v compute-sanitizer; ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null
GPU_CHECK_NO_TESTS=1 GPU_CHECK_ROUNDS=3 GPU_CHECK_PRECISIONS= GPU_CHECK_MODELS=luong \
GPU_CHECK_TRAIN=luong GPU_CHECK_TRAIN_HOURS=0.03 \
GPU_CHECK_SANITIZE="racecheck synccheck initcheck" GPU_CHECK_SANITIZE_LIMIT=30 \
  timeout 300 bash scripts/gpu_check.sh .gpu/bin "$OUT/g" .gpu/spm.model
echo "gpu_check rc=$?"
tar czf "$OUT/g.tgz" -C "$OUT" g && rm -rf "$OUT/g"
