#!/usr/bin/env bash
# gpu_study.sh — scripts/gpu_pack.sh's study mode, on the CPU (GPU_STUDY_DEVICE=cpu): a tiny plan
# (tests/fixtures/tiny.ini on 400 training pairs, one epoch, two configs) in a temporary folder,
# a bundle holding the given trainer and an empty library archive. Checks:
#   1. the first call trains both runs and packs their archives (run.json and the test
#      translations of each) into OUT/archives.tar.gz, exit 0;
#   2. a second call, with every run archived, exits 1 and says that no run was archived;
#   3. a call stopped by its time limit (seed 2 alone, 500 epochs so that no run can end in time,
#      0.02 min; the seed-1 archives, of 1 epoch, are not the plan's) ends the runner by SIGTERM
#      (study.log says the runs resume from last.ckpt) and exits 1 without a tarball.
#
#   bash tests/slow/gpu_study.sh TRAINER        (from the repository root, data/multi30k fetched)
set -uo pipefail
trainer=$(realpath "$1")
w=$(mktemp -d /tmp/gpu_study.XXXXXX)
trap 'rm -rf "$w"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

mkdir -p "$w/study/configs" "$w/bundle/bin" "$w/bundle/lib" || exit 2
for l in de en; do
    (set +o pipefail; zcat "data/multi30k/train.$l.gz" | head -400 > "$w/train.$l")
    (set +o pipefail; zcat "data/multi30k/val.$l.gz" | head -40 > "$w/val.$l")
    [ -s "$w/train.$l" ] && [ -s "$w/val.$l" ] || { echo "gpu_study: no data/multi30k" >&2; exit 2; }
done
grep -v '^name = tiny' tests/fixtures/tiny.ini > "$w/base.ini"
for k in general dot; do
    printf 'include = ../../base.ini\n[model]\nattention = luong_%s\n[data]\ntrain_src = %s\ntrain_tgt = %s\nval_src = %s\nval_tgt = %s\ncache_dir = %s\n' \
        "$k" "$w/train.de" "$w/train.en" "$w/val.de" "$w/val.en" "$w/cache" > "$w/study/configs/$k.ini"
done
plan() { # seeds, epochs
    printf '[study]\ntitle = tiny\nepochs = %s\nprecision = fp32\nseeds = %s\ntest_src = ../val.de\ntest_tgt = ../val.en\nbeam = 2\n[table rnn]\ntitle = RNN\nbaseline = general\nconfigs = configs/general.ini configs/dot.ini\n' \
        "$2" "$1" > "$w/study/study.ini"
}
ln -s "$trainer" "$w/bundle/bin/trainer" && tar cJf "$w/bundle/libs.tar.xz" -C "$w/bundle" lib || exit 2
study() { GPU_STUDY_DEVICE=cpu GPU_STUDY_JOBS=2 GPU_STUDY_MINUTES=$1 \
    bash scripts/gpu_pack.sh study "$w/bundle" "$w/study/study.ini" "$w/$2" > "$w/$2.out" 2>&1; }

# 1. both runs trained, archived and packed
plan 1 1
study 3 out1; rc=$?
[ $rc -eq 0 ] || { cat "$w/out1.out" "$w/out1/study.log"; fail "first call: exit $rc"; }
list=$(tar tzf "$w/out1/archives.tar.gz") || fail "no archives.tar.gz"
for r in general_s1 dot_s1; do
    for f in run.json test/val.greedy test/val.beam2; do
        grep -qx "$r/$f" <<< "$list" || fail "archives.tar.gz lacks $r/$f"
    done
done
echo "1. two runs archived and packed"

# 2. nothing missing: exit 1, no run archived
study 3 out2; rc=$?
[ $rc -eq 1 ] && grep -q "no run was archived" "$w/out2.out" ||
    { cat "$w/out2.out"; fail "second call: exit $rc, expected 1 saying no run was archived"; }
echo "2. a call with nothing to train exits 1"

# 3. stopped by the time limit
plan 2 500
study 0.02 out3; rc=$?
[ $rc -eq 1 ] && [ ! -e "$w/out3/archives.tar.gz" ] &&
    grep -q "stopped by a signal" "$w/out3/study.log" ||
    { cat "$w/out3.out" "$w/out3/study.log"; fail "time limit: exit $rc"; }
echo "3. a call past its time stops the runner by SIGTERM"
echo "gpu_study: pass"
