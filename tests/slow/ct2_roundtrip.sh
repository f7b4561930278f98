#!/usr/bin/env bash
# ct2_roundtrip.sh — tools/export_ctranslate2.py end to end: trained Transformers exported to
# CTranslate2 translate as the trainer does. In a temporary folder, on 10000 training and 100
# validation pairs of Multi30k:
#   1. a pre-LN Transformer with tied embeddings and sdp attention (tests/fixtures/
#      tiny_transformer.ini at 2 + 2 layers of 64, 4 heads, FFN 128) trains 600 steps; its
#      best.ckpt is exported, and the greedy translations of the first 200 lines of
#      data/multi30k/test_2016_flickr.de.gz by `trainer translate` and by CTranslate2
#      (beam_size=1) must be equal on every line (tests/slow/ct2_compare.py);
#   2. the same with a post-LN Transformer with separate embeddings and output matrix, flash
#      attention in the encoder, sdp in the decoder, and train.ema_decay, exported from its
#      last.ckpt (whose "ema/" records the export skips, as translate does);
#   3. refusals, each exit 1 naming the key and the value, with no output folder: an RNN
#      checkpoint (model.type = rnn), a linear-attention Transformer (model.self_attention =
#      linear), and a checkpoint with one corrupted byte (a checksum).
#
#   bash tests/slow/ct2_roundtrip.sh TRAINER     (from the repository root, data/multi30k fetched)
#
# Python: $CT2_PYTHON, else .venv/bin/python3 (scripts/setup.sh installs ctranslate2 and
# sentencepiece there), else python3. Exit 0 pass, 1 a failed check, 2 missing data, 77 (CTest:
# not run) when that Python lacks ctranslate2, sentencepiece or numpy, or under a sanitizer
# (TRAINER_SANITIZE=1, scripts/sanitize.sh).
set -uo pipefail
trainer=$(realpath "$1")
if [ "${TRAINER_SANITIZE:-}" = 1 ]; then
    # the sanitized build's translate and checkpoint reading run in test_decode_cli and the fuzz
    # replays; this test's two 600-step trainings are minutes there and add nothing to them
    echo "ct2_roundtrip: not run under a sanitizer (TRAINER_SANITIZE=1); the plain build runs it"
    exit 77
fi
py=${CT2_PYTHON:-}
if [ -z "$py" ]; then
    if [ -x .venv/bin/python3 ]; then py=.venv/bin/python3; else py=python3; fi
fi
if ! "$py" -c 'import ctranslate2, sentencepiece, numpy' 2>/dev/null; then
    echo "ct2_roundtrip: $py lacks ctranslate2, sentencepiece or numpy (bash scripts/setup.sh" \
         "installs them into .venv/); skipped"
    exit 77
fi
w=$(mktemp -d /tmp/ct2_roundtrip.XXXXXX)
trap 'rm -rf "$w"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

for l in de en; do
    (set +o pipefail; zcat "data/multi30k/train.$l.gz" | head -10000 > "$w/train.$l")
    (set +o pipefail; zcat "data/multi30k/val.$l.gz" | head -100 > "$w/val.$l")
    [ -s "$w/train.$l" ] && [ -s "$w/val.$l" ] || { echo "ct2_roundtrip: no data/multi30k" >&2; exit 2; }
done
(set +o pipefail; zcat data/multi30k/test_2016_flickr.de.gz | head -200 > "$w/test.de")

train() { # name config --set options...: trains into $w/name, its log in $w/name.log
    local name=$1 config=$2
    shift 2
    local sets=() s
    for s in "data.train_src=$w/train.de" "data.train_tgt=$w/train.en" "data.val_src=$w/val.de" \
             "data.val_tgt=$w/val.en" "train.save_dir=$w/$name" "data.cache_dir=$w/$name/cache" \
             train.threads=1 train.max_epochs=100 "$@"; do
        sets+=(--set "$s")
    done
    "$trainer" train --config "$config" "${sets[@]}" > "$w/$name.log" 2>&1 ||
        { tail -20 "$w/$name.log"; fail "training $name"; }
    echo "trained $name: $(tail -1 "$w/$name.log")"
}
export_to() { # ckpt out: the export's exit code, its output in out.log
    "$py" tools/export_ctranslate2.py --checkpoint "$1" --out "$2" > "$2.log" 2>&1
}
compare() { # ckpt ct2_dir
    "$py" tests/slow/ct2_compare.py "$trainer" "$1" "$2" "$w/test.de" 200 > "$2.cmp" 2>&1
    local rc=$?
    head -40 "$2.cmp"
    [ $rc -eq 0 ] || fail "$1: CTranslate2's greedy translations differ from the trainer's"
}
small=(model.enc_layers=2 model.dec_layers=2 model.d_model=64 model.heads=4 model.d_ff=128
       train.max_steps=600 train.log_every=100)

# 1. pre-LN, tied, sdp
train pre tests/fixtures/tiny_transformer.ini "${small[@]}"
export_to "$w/pre/best.ckpt" "$w/ct2_pre" || { cat "$w/ct2_pre.log"; fail "export of pre"; }
cat "$w/ct2_pre.log"
compare "$w/pre/best.ckpt" "$w/ct2_pre"
echo "1. pre-LN, tied embeddings, sdp: equal"

# 2. post-LN, separate embeddings, flash / sdp / sdp, EMA records in last.ckpt
train post tests/fixtures/tiny_transformer.ini "${small[@]}" model.norm=post \
    model.tie_embeddings=false model.self_attention=flash model.dec_self_attention=sdp \
    train.ema_decay=0.99
export_to "$w/post/last.ckpt" "$w/ct2_post" || { cat "$w/ct2_post.log"; fail "export of post"; }
cat "$w/ct2_post.log"
compare "$w/post/last.ckpt" "$w/ct2_post"
echo "2. post-LN, separate embeddings, flash and sdp: equal"

# 3. refusals
refused() { # ckpt out regex
    export_to "$1" "$2"
    local rc=$?
    cat "$2.log"
    [ $rc -eq 1 ] && grep -Eq -- "$3" "$2.log" && [ ! -e "$2" ] ||
        fail "$1: export exited $rc, wanted 1, a message matching '$3' and no $2"
}
train rnn tests/fixtures/tiny.ini train.max_steps=1
refused "$w/rnn/last.ckpt" "$w/ct2_rnn" "model\.type = rnn"
train linear tests/fixtures/tiny_transformer.ini train.max_steps=1 model.self_attention=linear \
    model.cross_attention=linear
refused "$w/linear/last.ckpt" "$w/ct2_linear" "model\.self_attention = linear"
"$py" - "$w/pre/best.ckpt" "$w/bad.ckpt" <<'EOF' || fail "corrupting a copy"
import sys
d = bytearray(open(sys.argv[1], "rb").read())
d[len(d) // 2] ^= 0x55
open(sys.argv[2], "wb").write(d)
EOF
refused "$w/bad.ckpt" "$w/ct2_bad" "fail their checksum"
echo "3. an RNN, linear attention and a corrupt file are refused"
echo "ct2_roundtrip: pass"
