#!/usr/bin/env bash
# Installs, builds, fetches Multi30k and trains configs/luong.ini (extra arguments go to the
# trainer), then scores best.ckpt on test_2016_flickr.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/prepare.sh
./build/trainer --config configs/luong.ini "$@"
./build/trainer eval --checkpoint checkpoints/luong/best.ckpt \
  --src data/multi30k/test_2016_flickr.de.gz --ref data/multi30k/test_2016_flickr.en.gz
