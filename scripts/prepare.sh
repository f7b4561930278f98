#!/usr/bin/env bash
# Installs the Debian packages, builds (build/) and fetches Multi30k (data/multi30k/).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j2
bash data/get_multi30k.sh
