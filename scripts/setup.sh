#!/usr/bin/env bash
# Installs what trainer needs from Debian's packages (skips the install when all are present).
set -euo pipefail
# clang, libclang-rt-dev (libFuzzer, ASan, UBSan) and libomp-dev (OpenMP for clang): the
# sanitizer build and the fuzz targets (scripts/sanitize.sh, scripts/fuzz.sh). python3: the
# scripts of some tests (tests/simt/config_losses.sh reads metrics.jsonl). openmpi-bin and
# libopenmpi-dev: data parallelism over ranks (mpirun; CMake's find_package(MPI)) and the dist
# tests. libdnnl-dev: oneDNN, the CPU's products on AVX-512 CPUs and train.precision = bf16.
# libcjson-dev: cJSON, the JSON of metrics.jsonl and of run archives.
pkgs=(build-essential cmake pkg-config zlib1g-dev libopenblas-dev libopenblas-openmp-dev
      libsentencepiece-dev curl ca-certificates gnuplot-nox clang libclang-rt-dev libomp-dev
      python3 openmpi-bin libopenmpi-dev libdnnl-dev libcjson-dev)
missing=()
for p in "${pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all packages present"
  exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "setup: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
