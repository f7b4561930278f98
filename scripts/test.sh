#!/usr/bin/env bash
# Installs, builds, fetches Multi30k and runs the whole CTest suite (extra arguments go to ctest).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/prepare.sh
ctest --test-dir build --output-on-failure -j2 "$@"
