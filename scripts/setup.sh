#!/usr/bin/env bash
# Installs what trainer needs: Debian's packages (skips the install when all are present), then
# the Python packages of the tools and tests that need PyPI, in the virtual environment .venv/ at
# the repository's root (git-ignored; every pip install of the project is here, bench/'s PyTorch
# aside): ctranslate2 and sentencepiece for tools/export_ctranslate2.py and its test
# tests/slow/ct2_roundtrip.sh, pinned so that CI exports with the version the docs describe.
# Errors: a failed apt-get or pip install ends the script with its status (pip needs PyPI).
set -euo pipefail
cd "$(dirname "$0")/.."
# clang, libclang-rt-dev (libFuzzer, ASan, UBSan) and libomp-dev (OpenMP for clang): the
# sanitizer build and the fuzz targets (scripts/sanitize.sh, scripts/fuzz.sh). python3: the
# scripts of some tests (tests/simt/config_losses.sh reads metrics.jsonl). openmpi-bin and
# libopenmpi-dev: data parallelism over ranks (mpirun; CMake's find_package(MPI)) and the dist
# tests. libdnnl-dev: oneDNN, the CPU's products on AVX-512 CPUs and train.precision = bf16.
# libcjson-dev: cJSON, the JSON of metrics.jsonl and of run archives. python3-venv: .venv/ below.
pkgs=(build-essential cmake pkg-config zlib1g-dev libopenblas-dev libopenblas-openmp-dev
      libsentencepiece-dev curl ca-certificates gnuplot-nox clang libclang-rt-dev libomp-dev
      python3 python3-venv openmpi-bin libopenmpi-dev libdnnl-dev libcjson-dev)
missing=()
for p in "${pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all packages present"
else
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# PyPI's packages, pinned (pip does nothing when they are there)
py_pkgs=(ctranslate2==4.8.5 sentencepiece==0.2.3)
[ -x .venv/bin/python3 ] || python3 -m venv .venv
.venv/bin/python3 -m pip install -q --disable-pip-version-check "${py_pkgs[@]}"
echo "setup: .venv has ${py_pkgs[*]}"
