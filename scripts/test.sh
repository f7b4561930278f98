#!/usr/bin/env bash
# Installs, builds, fetches Multi30k and runs the whole CTest suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j2
bash data/get_multi30k.sh
ctest --test-dir build --output-on-failure -j2 "$@"
