#!/usr/bin/env bash
# Installs, builds, fetches Multi30k and trains configs/luong.ini, then scores best.ckpt on
# test_2016_flickr.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j2
bash data/get_multi30k.sh
./build/trainer --config configs/luong.ini "$@"
./build/trainer eval --checkpoint checkpoints/luong/best.ckpt \
  --src data/multi30k/test_2016_flickr.de.gz --ref data/multi30k/test_2016_flickr.en.gz
