#!/usr/bin/env bash
# compare_peers.sh — the trainer beside its peers: decoding against CTranslate2 on the same
# weights, and training against OpenNMT-py on the same recipe, data and wall time.
#
#   bash bench/compare_peers.sh [--part decode|train|all] [OPTIONS]
#
# --part decode (the default with --checkpoint; needs it): the checkpoint CK of a Transformer
# run (sdp or flash attention) is exported once with tools/export_ctranslate2.py (float32),
# then each side translates the source on ONE thread, beam K, R rounds interleaved (round r
# starts at the r-th side and goes round the list, so that none always runs first):
#   trainer          build/trainer translate --checkpoint CK --beam K --len-penalty A
#                    --threads 1 --input SRC --output OUT (its own batching: --batch-tokens
#                    6000 padded target tokens, beam rows included, sentences sorted by length)
#   ct2-f32-b1       CTranslate2 float32, one sentence a batch
#   ct2-f32-b32      CTranslate2 float32, 32 sentences a batch (sorted by source length)
#   ct2-int8-b32     CTranslate2 int8 weights (quantized when loaded), 32 a batch
#   ct2-bf16-b32, ct2-int8bf16-b32   bfloat16 and int8_bfloat16, only where CTranslate2 reports
#                    the type for this CPU (ctranslate2.get_supported_compute_types("cpu"))
# CTranslate2 runs as bench/peers.py ct2: Translator(intra_threads=1, inter_threads=1),
# beam_size K, length_penalty A, the trainer's limit of 2·S + 10 steps per batch (S its longest
# source, counting </s>), min_decoding_length 0, </s> or <pad> ends a hypothesis, no start or end
# token on the source (docs/export.md).
# Options: --checkpoint CK; --src FILE --ref FILE (default data/multi30k/test_2016_flickr.de.gz
# and .en.gz; data/get_multi30k.sh fetches them); --lines N (the first N lines; default 0: all);
# --rounds R (3); --beam K (5); --len-penalty A (1.0, the trainer's default with a beam);
# --variants LIST (comma-separated; default all of the above that this CPU runs); --core C (the
# core every run is pinned to with taskset; default 0).
# Per side: wall seconds of the whole process (load, encode, decode, write), median and min–max;
# start-up seconds (the same process on an empty input, median); sentences/s and target
# tokens/s from the median wall; sacreBLEU's BLEU against --ref; the lines equal to the trainer's.
# Target tokens: each output line encoded with the checkpoint's SentencePiece model, its pieces
# counted, + 1 a line for </s> (the decoder's steps), the same count for every side.
# The length penalty: the trainer ranks a finished hypothesis by log p / ((5 + |Y|) / 6)^A
# (Wu et al. 2016 eq. 14), CTranslate2 by log p / |Y|^A (both |Y| counting </s>: CTranslate2 runs
# with return_end_token); with A = 0 both rank by log p and their searches are the same.
#
# --part train: OpenNMT-py 3.5.1 and the trainer train the config's model on its data at
# the same time, one core each (taskset, --cores A,B: trainer on A, OpenNMT-py on B; default
# 0,1), OMP/OpenBLAS/MKL threads 1, for the same wall time of training (--minutes M, default 25;
# each side's clock starts with its own training loop), then each translates the config's
# test_src greedily (--eval-beam K: beam K, length penalty 1 as Wu et al. on both sides) on its
# core and both are scored by sacreBLEU against test_tgt.
# Options: --config FILE (default configs/transformer.ini; a Transformer: pre-LN, sdp or flash,
# lr_schedule = inverse_sqrt; or an RNN: LSTM or GRU, luong_dot, luong_general or luong_concat
# attention with input feeding, as many encoder as decoder layers, lr_schedule = plateau, against
# OpenNMT-py's brnn encoder and input-feeding rnn decoder at a constant rate); --minutes M;
# --precision fp32|bf16 (the trainer's train.precision; OpenNMT-py stays float32 on the CPU);
# --spm FILE (the trainer's SentencePiece model; default: a one-step trainer run trains it first,
# as any run of the config would);
# --onmt-batch N (OpenNMT-py's batch_size in its tokens; default: the value whose batches per
# epoch are nearest the trainer's, see below); --log-every N (both sides' log window in steps;
# default the config's train.log_every); --cores A,B; --eval-beam K (default 1).
# OpenNMT-py: bench/.venv-onmt/bin/python, a virtual environment created on first use with
# `pip install OpenNMT-py==3.5.1 torch==2.2.2 "numpy<2"` (PyPI; OpenNMT-py 3.5 needs torch < 2.3;
# the wheel brings its CUDA libraries, several GB, though only the CPU is used); ONMT_PYTHON=...
# overrides it. Each side's tokens/s is the median (and min–max) over its log windows, the first
# (warm-up) left out, of the window's non-padding source + target tokens (targets with </s>) over
# its wall time: the trainer's "N tok/s" (its window leaves validations and saves out), and
# OpenNMT-py's "X/Y tok/s" summed (n_src_words / t and n_words / t of its window).
#
# Both parts: --build DIR (default build/; trainer is built if needed); --keep (keep the
# temporary folder with the logs, translations and checkpoints, and print its path).
# Python: PYTHON=... (default .venv/bin/python3 from scripts/setup.sh, with ctranslate2 and
# sentencepiece; sacrebleu is installed there on first use). The summary names the CPU, the date,
# the commit and the load: CPUs busy over the 3 s before, /proc/loadavg before and after, and a
# warning when the machine was not idle (more than 10% busy before, or a 1-minute load after above
# the threads the part runs + 0.5). Exit status: 0; 1 a failed step (its log is printed); 2 a bad
# command line.
set -euo pipefail
cd "$(dirname "$0")/.."
prog=compare_peers.sh

die2() { echo "$prog: $*" >&2; exit 2; }
die1() { echo "$prog: $*" >&2; exit 1; }
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }

part="" checkpoint="" src="" ref="" lines=0 rounds=3 beam=5 len_penalty=1.0 variants_arg=""
core=0 config=configs/transformer.ini minutes=25 precision=fp32 spm_arg="" onmt_batch=""
log_every="" cores=0,1 eval_beam=1 build=build keep=0
while [ $# -gt 0 ]; do
  opt=$1
  case "$opt" in
    -h|--help) usage; exit 0 ;;
    --keep) keep=1; shift; continue ;;
    --part|--checkpoint|--src|--ref|--lines|--rounds|--beam|--len-penalty|--variants|--core|\
    --config|--minutes|--precision|--spm|--onmt-batch|--log-every|--cores|--eval-beam|--build)
      [ $# -ge 2 ] || die2 "$opt needs a value (see --help)"
      val=$2; shift 2 ;;
    *) die2 "unknown argument '$opt' (see --help)" ;;
  esac
  case "$opt" in
    --part) part=$val ;;
    --checkpoint) checkpoint=$val ;;
    --src) src=$val ;;
    --ref) ref=$val ;;
    --lines) lines=$val ;;
    --rounds) rounds=$val ;;
    --beam) beam=$val ;;
    --len-penalty) len_penalty=$val ;;
    --variants) variants_arg=$val ;;
    --core) core=$val ;;
    --config) config=$val ;;
    --minutes) minutes=$val ;;
    --precision) precision=$val ;;
    --spm) spm_arg=$val ;;
    --onmt-batch) onmt_batch=$val ;;
    --log-every) log_every=$val ;;
    --cores) cores=$val ;;
    --eval-beam) eval_beam=$val ;;
    --build) build=$val ;;
  esac
done

# ---- the command line, checked before anything runs
is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }
is_num() { [[ $1 =~ ^[0-9]+(\.[0-9]*)?$|^\.[0-9]+$ ]]; }
ncpu=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)
[ -n "$part" ] || part=$([ -n "$checkpoint" ] && echo decode || echo "")
case "$part" in
  decode|train|all) ;;
  "") die2 "give --part decode|train|all (decode needs --checkpoint CK; see --help)" ;;
  *) die2 "--part '$part': give decode, train or all" ;;
esac
run_decode=0 run_train=0
[ "$part" = train ] || run_decode=1
[ "$part" = decode ] || run_train=1
is_uint "$rounds" && [ "$rounds" -ge 1 ] || die2 "--rounds '$rounds': give a whole number >= 1"
is_uint "$lines" || die2 "--lines '$lines': give a whole number (0 = every line)"
is_uint "$beam" && [ "$beam" -ge 1 ] && [ "$beam" -le 64 ] || die2 "--beam '$beam': give 1 to 64"
is_uint "$eval_beam" && [ "$eval_beam" -ge 1 ] && [ "$eval_beam" -le 64 ] ||
  die2 "--eval-beam '$eval_beam': give 1 to 64"
is_num "$len_penalty" && awk -v a="$len_penalty" 'BEGIN { exit !(a <= 10) }' ||
  die2 "--len-penalty '$len_penalty': give a number from 0 to 10"
is_uint "$core" && [ "$core" -lt "$ncpu" ] || die2 "--core '$core': give a CPU from 0 to $((ncpu - 1))"
is_num "$minutes" && awk -v m="$minutes" 'BEGIN { exit !(m > 0) }' ||
  die2 "--minutes '$minutes': give a number of minutes > 0"
case "$precision" in fp32|bf16) ;; *) die2 "--precision '$precision': give fp32 or bf16" ;; esac
[ -z "$onmt_batch" ] || { is_uint "$onmt_batch" && [ "$onmt_batch" -ge 1 ]; } ||
  die2 "--onmt-batch '$onmt_batch': give a whole number of tokens >= 1"
[ -z "$log_every" ] || { is_uint "$log_every" && [ "$log_every" -ge 1 ]; } ||
  die2 "--log-every '$log_every': give a whole number of steps >= 1"
[[ $cores =~ ^([0-9]+),([0-9]+)$ ]] || die2 "--cores '$cores': give two CPUs, A,B (trainer, OpenNMT-py)"
core_tr=${BASH_REMATCH[1]} core_onmt=${BASH_REMATCH[2]}
if [ "$run_train" = 1 ]; then
  [ "$core_tr" != "$core_onmt" ] || die2 "--cores $cores: give two different CPUs"
  [ "$core_tr" -lt "$ncpu" ] && [ "$core_onmt" -lt "$ncpu" ] ||
    die2 "--cores $cores: this machine has CPUs 0 to $((ncpu - 1))"
fi
all_variants="trainer ct2-f32-b1 ct2-f32-b32 ct2-int8-b32 ct2-bf16-b32 ct2-int8bf16-b32"
for v in ${variants_arg//,/ }; do
  [[ " $all_variants " == *" $v "* ]] || die2 "--variants: '$v' is not one of: $all_variants"
done
if [ "$run_decode" = 1 ]; then
  [ -n "$checkpoint" ] || die2 "--part $part: give --checkpoint CK (a Transformer run's .ckpt)"
  [ -r "$checkpoint" ] && [ -f "$checkpoint" ] || die2 "--checkpoint '$checkpoint': no such readable file"
fi
if [ "$run_train" = 1 ]; then
  [ -r "$config" ] || die2 "--config '$config': cannot read it"
  [ -z "$spm_arg" ] || [ -r "$spm_arg" ] || die2 "--spm '$spm_arg': cannot read it"
fi
have_taskset=0
command -v taskset >/dev/null && have_taskset=1
[ "$have_taskset" = 1 ] || [ "$run_train" = 0 ] ||
  die1 "taskset (util-linux) is needed to give each side its own core"
# pin CORE CMD...: runs CMD on CORE with one thread of every runtime. "${pinned[@]}" CORE CMD &
# does the same in the background, with $! the command's own process (env and taskset exec it),
# so that the clean-up at exit can end it.
pinned=(env OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 taskset -c)
pin() {
  local c=$1; shift
  if [ "$have_taskset" = 1 ]; then "${pinned[@]}" "$c" "$@"
  else env OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 "$@"; fi
}

# ---- the temporary folder and the processes this script starts, removed and ended at exit
tmp=$(mktemp -d /tmp/compare_peers.XXXXXX)
bg_pids=()
cleanup() {
  local p
  for p in "${bg_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${bg_pids[@]}"; do wait "$p" 2>/dev/null || true; done
  if [ "$keep" = 1 ]; then echo "$prog: kept $tmp" >&2; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
fail_log() { # fail_log LOG MESSAGE: the log's last lines, then exit 1
  tail -n 30 "$1" >&2 || true
  die1 "$2 (log above)"
}

# ---- the tools: the trainer's build, the Python environments
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
if ! cmake --build "$build" --target trainer -j "${JOBS:-$ncpu}" >"$tmp/build.log" 2>&1; then
  fail_log "$tmp/build.log" "building trainer failed"
fi
trainer=$build/trainer
python=${PYTHON:-.venv/bin/python3}
"$python" -c 'import ctranslate2, sentencepiece' 2>/dev/null ||
  die1 "$python cannot import ctranslate2 and sentencepiece: run bash scripts/setup.sh (or give PYTHON=...)"
if ! "$python" -c 'import sacrebleu' 2>/dev/null; then
  [ -z "${PYTHON:-}" ] || die1 "$python cannot import sacrebleu (pip install sacrebleu)"
  echo "$prog: installing sacrebleu into .venv (pip, once)" >&2
  "$python" -m pip install -q --disable-pip-version-check sacrebleu==2.6.0
fi
peers() { "$python" bench/peers.py "$@"; }
onmt_py=${ONMT_PYTHON:-bench/.venv-onmt/bin/python}
if [ "$run_train" = 1 ] && ! "$onmt_py" -c 'import onmt, torch' 2>/dev/null; then
  [ -z "${ONMT_PYTHON:-}" ] || die1 "$onmt_py cannot import onmt and torch"
  echo "$prog: creating bench/.venv-onmt with OpenNMT-py 3.5.1 and torch 2.2.2 (pip; several GB, once)" >&2
  python3 -m venv bench/.venv-onmt
  bench/.venv-onmt/bin/pip install -q --disable-pip-version-check --upgrade pip
  bench/.venv-onmt/bin/pip install -q --disable-pip-version-check OpenNMT-py==3.5.1 torch==2.2.2 "numpy<2"
  "$onmt_py" -c 'import onmt, torch' || die1 "bench/.venv-onmt cannot import onmt and torch"
fi

# ---- load and statistics
# shellcheck source=bench/lib.sh
source bench/lib.sh  # busy_percent

load_line() { # load_line BUSY_BEFORE LOAD_BEFORE THREADS: the load line of the summary
  local after idle="idle"
  after=$(cut -d' ' -f1-3 /proc/loadavg)
  if awk -v b="$1" -v a="${after%% *}" -v t="$3" 'BEGIN { exit !(b > 10 || a > t + 0.5) }'; then
    idle="WARNING: the machine was not idle (other work ran beside the runs): the figures are lower bounds on speed and the ratios are less certain"
  fi
  echo "CPUs busy in the 3 s before: $1%; load average before: $2; after: $after -> $idle"
}
stats() { # "median min max" of the numbers on stdin (format $1, default %.2f)
  sort -g | awk -v f="${1:-%.2f}" '{ a[NR] = $1 } END {
    if (!NR) { print "- - -"; exit }
    m = NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2
    printf f " " f " " f "\n", m, a[1], a[NR] }'
}
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.3f", b - a }'; }
wait_two() { # wait_two T0 PID_A PID_B: rc_a, rc_b their exit statuses, end_a, end_b their ends (s after T0)
  local p="" rc=0 other
  wait -n -p p "$2" "$3" || rc=$?
  if [ "$p" = "$3" ]; then rc_b=$rc end_b=$(since "$1"); other=$2
  else rc_a=$rc end_a=$(since "$1"); other=$3; fi
  rc=0
  wait "$other" || rc=$?
  if [ "$other" = "$2" ]; then rc_a=$rc end_a=$(since "$1"); else rc_b=$rc end_b=$(since "$1"); fi
}
machine_line() {
  echo "machine: $ncpu CPUs, $(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)" \
    "(family $(awk -F': ' '/^cpu family/ {print $2; exit}' /proc/cpuinfo)," \
    "model $(awk -F': ' '/^model[ \t]*:/ {print $2; exit}' /proc/cpuinfo));" \
    "$(date -u '+%Y-%m-%d %H:%M UTC'); commit $(git describe --always --dirty 2>/dev/null || echo unknown)"
}
summary=()

# ============================================================================ decode
if [ "$run_decode" = 1 ]; then
  if [ -z "$src" ] || [ -z "$ref" ]; then
    [ -f data/multi30k/test_2016_flickr.de.gz ] || bash data/get_multi30k.sh >&2
    src=${src:-data/multi30k/test_2016_flickr.de.gz}
    ref=${ref:-data/multi30k/test_2016_flickr.en.gz}
  fi
  [ -r "$src" ] || die2 "--src '$src': cannot read it"
  [ -r "$ref" ] || die2 "--ref '$ref': cannot read it"
  d=$tmp/decode
  mkdir -p "$d/out"
  cat_any() { if [ "$(head -c2 "$1" | od -An -tx1 | tr -d ' ')" = 1f8b ]; then zcat "$1"; else cat "$1"; fi; }
  if [ "$lines" -gt 0 ]; then
    (set +o pipefail; cat_any "$src" | head -n "$lines") >"$d/src.txt"
    (set +o pipefail; cat_any "$ref" | head -n "$lines") >"$d/ref.txt"
  else
    cat_any "$src" >"$d/src.txt"
    cat_any "$ref" >"$d/ref.txt"
  fi
  : >"$d/empty.txt"
  nsent=$(wc -l <"$d/src.txt")
  [ "$nsent" -gt 0 ] || die2 "--src '$src' has no lines"
  [ "$nsent" = "$(wc -l <"$d/ref.txt")" ] || die2 "--src and --ref have different numbers of lines"
  peers spm-extract --checkpoint "$checkpoint" --out "$d/spm.model" || die1 "reading the checkpoint failed"
  "$python" tools/export_ctranslate2.py --checkpoint "$checkpoint" --out "$d/ct2" >"$d/export.log" 2>&1 ||
    fail_log "$d/export.log" "exporting $checkpoint to CTranslate2 failed"
  ct2_types=$("$python" -c 'import ctranslate2; print(" ".join(sorted(ctranslate2.get_supported_compute_types("cpu"))))')
  ct2_version=$("$python" -c 'import ctranslate2; print(ctranslate2.__version__)')
  variant_type() { # the CTranslate2 compute type of a variant, or "" for the trainer
    case "$1" in
      ct2-f32-*) echo float32 ;; ct2-int8-*) echo int8 ;; ct2-bf16-*) echo bfloat16 ;;
      ct2-int8bf16-*) echo int8_bfloat16 ;; *) echo "" ;;
    esac
  }
  variants=()
  for v in $all_variants; do
    t=$(variant_type "$v")
    if [ -n "$variants_arg" ]; then
      [[ ",$variants_arg," == *",$v,"* ]] || continue
      [ -z "$t" ] || [[ " $ct2_types " == *" $t "* ]] ||
        die2 "--variants $v: CTranslate2 $ct2_version cannot run $t on this CPU (it runs: $ct2_types)"
    elif [ -n "$t" ] && [[ " $ct2_types " != *" $t "* ]]; then
      continue
    fi
    variants+=("$v")
  done
  decode_cmd() { # decode_cmd VARIANT INPUT OUTPUT: the side's command, pinned to the core
    local t b
    if [ "$1" = trainer ]; then
      local lp=()
      [ "$beam" = 1 ] || lp=(--len-penalty "$len_penalty")
      pin "$core" "$trainer" translate --checkpoint "$checkpoint" --beam "$beam" "${lp[@]}" \
        --threads 1 --input "$2" --output "$3"
    else
      t=$(variant_type "$1"); b=${1##*-b}
      pin "$core" "$python" bench/peers.py ct2 --model "$d/ct2" --spm "$d/spm.model" \
        --input "$2" --output "$3" --batch "$b" --compute-type "$t" --beam "$beam" \
        --length-penalty "$len_penalty"
    fi
  }
  declare -A wall=() startup=()
  nv=${#variants[@]}
  busy_before=$(busy_percent)
  load_before=$(cut -d' ' -f1-3 /proc/loadavg)
  for ((r = 0; r < rounds; r++)); do
    for ((j = 0; j < nv; j++)); do
      v=${variants[$(((r + j) % nv))]}
      t0=$(now)
      decode_cmd "$v" "$d/empty.txt" "$d/out/empty.$v.txt" >"$d/run.log" 2>&1 ||
        fail_log "$d/run.log" "$v on an empty input failed"
      startup[$v]+="$(since "$t0") "
      t0=$(now)
      decode_cmd "$v" "$d/src.txt" "$d/out/$v.txt" >"$d/run.log" 2>&1 ||
        fail_log "$d/run.log" "$v failed"
      s=$(since "$t0")
      wall[$v]+="$s "
      echo "== round $((r + 1))/$rounds: $v $s s ($nsent sentences) $(grep -o '"translate_s": [0-9.]*' "$d/run.log" || true)"
      cp "$d/out/$v.txt" "$d/out/$v.round$((r + 1)).txt"
    done
  done
  load_line_decode=$(load_line "$busy_before" "$load_before" 1)
  # every round of a side gives the same translations (a check of determinism), and the scores
  for v in "${variants[@]}"; do
    for ((r = 2; r <= rounds; r++)); do
      cmp -s "$d/out/$v.round1.txt" "$d/out/$v.round$r.txt" ||
        echo "$prog: warning: $v translated differently in round $r than in round 1" >&2
    done
  done
  hyps=()
  for v in "${variants[@]}"; do hyps+=("$v=$d/out/$v.txt"); done
  base=""
  [[ " ${variants[*]} " == *" trainer "* ]] && base=trainer
  peers score --spm "$d/spm.model" --ref "$d/ref.txt" --base "$base" "${hyps[@]}" >"$d/score.txt" ||
    die1 "scoring failed"
  summary+=("-- decode: $checkpoint; $nsent sentences of $src$([ "$lines" = 0 ] || echo " (its first $lines lines)"); beam $beam, length penalty $len_penalty; one thread on CPU $core; $rounds rounds interleaved --")
  summary+=("$(printf '%-18s %-26s %9s %9s %10s %7s %s' side 'wall s median [min-max]' start-up sent/s 'tok/s' BLEU 'equal to trainer')")
  for v in "${variants[@]}"; do
    read -r med mn mx <<<"$(tr ' ' '\n' <<<"${wall[$v]}" | grep . | stats %.2f)"
    read -r smed _ _ <<<"$(tr ' ' '\n' <<<"${startup[$v]}" | grep . | stats %.2f)"
    sc=$(grep "^$v " "$d/score.txt")
    bleu=$(sed -n 's/.* bleu=\([^ ]*\).*/\1/p' <<<"$sc")
    toks=$(sed -n 's/.* tokens=\([^ ]*\).*/\1/p' <<<"$sc")
    eq=$(sed -n 's/.* equal=\([^ ]*\).*/\1/p' <<<"$sc")
    [ "$eq" = - ] || [ -z "$base" ] || eq="$eq of $nsent"
    [ -n "$base" ] || eq="(no trainer run)"
    summary+=("$(awk -v v="$v" -v med="$med" -v mn="$mn" -v mx="$mx" -v s="$smed" -v n="$nsent" \
      -v t="$toks" -v b="$bleu" -v e="$eq" 'BEGIN {
        printf "%-18s %-26s %9s %9.1f %10.0f %7s %s", v, med " [" mn "-" mx "]", s, n / med, t / med, b, e }')")
  done
  if [ -n "$base" ]; then
    read -r tmed _ _ <<<"$(tr ' ' '\n' <<<"${wall[trainer]}" | grep . | stats %.4f)"
    for v in "${variants[@]}"; do
      [ "$v" = trainer ] && continue
      read -r vmed _ _ <<<"$(tr ' ' '\n' <<<"${wall[$v]}" | grep . | stats %.4f)"
      summary+=("$(awk -v v="$v" -v a="$tmed" -v b="$vmed" 'BEGIN {
        printf "trainer / %s sentences/s, ratio of medians: %.3f", v, b / a }')")
    done
  fi
  summary+=("wall: the whole process (load, encode, decode, write); start-up: the same process on an empty input (median); sent/s and tok/s: from the median wall; tok/s counts each output line's SentencePiece pieces + 1 (</s>); BLEU: sacreBLEU $("$python" -c 'import sacrebleu; print(sacrebleu.__version__)') (13a, exp smoothing)")
  summary+=("CTranslate2 $ct2_version, compute types on this CPU: $ct2_types; trainer: $(pin "$core" "$trainer" --version | sed -n 's/^cpu: //p')")
  summary+=("length penalty: trainer log p / ((5 + |Y|) / 6)^$len_penalty (Wu et al. 2016), CTranslate2 log p / |Y|^$len_penalty, |Y| with </s> on both: the one difference of the searches (--len-penalty 0 removes it); batches: trainer by 6000 padded target tokens (beam rows included), CTranslate2 by 1 or 32 sentences; both sort by source length and stop a batch at 2 * S + 10 steps")
  summary+=("$load_line_decode")
fi

# ============================================================================ train
if [ "$run_train" = 1 ]; then
  t=$tmp/train
  mkdir -p "$t/onmt"
  ini() { # ini SECTION KEY: a key of the resolved config (config_to_ini of the prep run)
    awk -v s="[$1]" -v k="$2" '
      /^\[/ { in_s = ($0 == s); next }
      in_s { split($0, kv, " = "); if (kv[1] == k) { v = substr($0, length(k) + 4);
        gsub(/^"|"$/, "", v); print v; exit } }' "$t/prep/config.ini"
  }
  for f in train_src train_tgt test_src test_tgt; do
    p=$(awk -v k="$f" '$1 == k { sub(/^[^=]*=[ \t]*/, ""); gsub(/"/, ""); print; exit }' "$config")
    if [[ ${p:-data/multi30k/} == data/multi30k/* ]] && [ ! -f "${p:-data/multi30k/x}" ]; then
      bash data/get_multi30k.sh >&2; break
    fi
  done
  # the prep run: one step of the config, which resolves every key (its config.ini), trains the
  # SentencePiece model (or copies --spm) and encodes the corpus into the cache both runs use
  prep_set=(--set train.max_steps=1 --set train.threads=1 --set "train.save_dir=$t/prep"
            --set "data.cache_dir=$t/cache" --set run.name=peers --set "train.precision=$precision")
  [ -z "$spm_arg" ] || prep_set+=(--set "data.spm_model=$spm_arg")
  [ -z "$log_every" ] || prep_set+=(--set "train.log_every=$log_every")
  echo "== prep: the config resolved, the SentencePiece model, the encoded corpus (one step) =="
  t0=$(now)
  pin "$core_tr" "$trainer" train --config "$config" "${prep_set[@]}" >"$t/prep.log" 2>&1 ||
    fail_log "$t/prep.log" "the trainer's one-step run of $config failed"
  echo "prep: $(since "$t0") s"
  spm=$t/prep/spm.model
  mtype=$(ini model type)
  D=$(ini model d_model) warm=$(ini train warmup_steps) lr=$(ini train lr) sched=$(ini train lr_schedule)
  tied=$(ini model tie_embeddings) ema=$(ini train ema_decay) clip=$(ini train clip_norm)
  bt=$(ini train batch_tokens) max_len=$(ini data max_len) every=$(ini train log_every)
  case "$mtype" in
  transformer)
    for k in self_attention dec_self_attention cross_attention; do
      a=$(ini model $k)
      [[ $a == sdp || $a == flash || ($k == dec_self_attention && $a == same) ]] ||
        die2 "--config $config: model.$k = $a; OpenNMT-py's Transformer has scaled dot-product attention only (sdp, flash)"
    done
    [ "$(ini model norm)" = pre ] || die2 "--config $config: model.norm = $(ini model norm); OpenNMT-py 3.5's Transformer is pre-LN only"
    [ "$sched" = inverse_sqrt ] ||
      die2 "--config $config: train.lr_schedule = $sched; OpenNMT-py has no plateau decay: compare an inverse_sqrt config"
    [ "$warm" -ge 1 ] || die2 "--config $config: train.warmup_steps = 0; the noam schedule needs a warm-up"
    onmt_lr=$(awk -v lr="$lr" -v d="$D" -v w="$warm" 'BEGIN { printf "%.9g", lr * sqrt(d * w) }') ;;
  rnn)
    cell=$(ini model cell) rattn=$(ini model attention) feed=$(ini model input_feeding)
    [ "$cell" = lstm ] || [ "$cell" = gru ] || die2 "--config $config: model.cell = $cell; give lstm or gru"
    case "$rattn" in
      luong_dot) onmt_attn=dot ;; luong_general) onmt_attn=general ;; luong_concat) onmt_attn=mlp ;;
      *) die2 "--config $config: model.attention = $rattn; OpenNMT-py's RNN decoder has Luong's global attention only (luong_dot, luong_general, luong_concat)" ;;
    esac
    [ "$feed" = true ] || die2 "--config $config: model.input_feeding = $feed; OpenNMT-py's RNN decoder is compared with input feeding (its input_feed 1)"
    [ "$sched" = plateau ] || die2 "--config $config: train.lr_schedule = $sched; the RNN is compared with a constant learning rate (plateau)"
    [ "$(ini model enc_layers)" = "$(ini model dec_layers)" ] ||
      die2 "--config $config: model.enc_layers != model.dec_layers; OpenNMT-py passes the encoder's final states to the decoder layer by layer" ;;
  *) die2 "--config $config: model.type = $mtype; OpenNMT-py is compared on a transformer or an rnn" ;;
  esac

  # OpenNMT-py's data: the trainer's pairs, encoded with its SentencePiece model and filtered as
  # it filters them; its vocabulary; its batch size (the trainer's batches per epoch)
  peers onmt-data --spm "$spm" --src "$(ini data train_src)" --tgt "$(ini data train_tgt)" \
    --max-len "$max_len" --batch-tokens "$bt" --out-src "$t/onmt/train.src" \
    --out-tgt "$t/onmt/train.tgt" --vocab "$t/onmt/vocab.txt" | tee "$t/onmt-data.log"
  [ -n "$onmt_batch" ] || onmt_batch=$(sed -n 's/.*onmt_batch_size=\([0-9]*\).*/\1/p' "$t/onmt-data.log")
  npairs=$(sed -n 's/^onmt-data: \([0-9]*\) of .*/\1/p' "$t/onmt-data.log")
  peers encode --spm "$spm" --input "$(ini data test_src)" --output "$t/onmt/test.src"
  shared=false
  [ "$tied" = true ] && shared=true
  avg=0
  awk -v e="$ema" 'BEGIN { exit !(e > 0) }' && avg=$(awk -v e="$ema" 'BEGIN { printf "%.9g", 1 - e }')
  if [ "$mtype" = transformer ]; then
    model_yaml() { cat <<EOF
encoder_type: transformer
decoder_type: transformer
enc_layers: $(ini model enc_layers)
dec_layers: $(ini model dec_layers)
hidden_size: $D
word_vec_size: $D
heads: $(ini model heads)
transformer_ff: $(ini model d_ff)
dropout: [$(ini model dropout)]
attention_dropout: [0.0]
dropout_steps: [0]
position_encoding: true
position_encoding_type: SinusoidalInterleaved
max_relative_positions: 0
layer_norm: standard
norm_eps: 1e-5
pos_ffn_activation_fn: relu
add_qkvbias: true
add_ffnbias: true
share_embeddings: $shared
share_decoder_embeddings: $shared
param_init: 0.0
param_init_glorot: true
EOF
    }
    lr_yaml() { printf 'learning_rate: %s\ndecay_method: noam\nwarmup_steps: %s' "$onmt_lr" "$warm"; }
  else
    model_yaml() { cat <<EOF
encoder_type: brnn
decoder_type: rnn
rnn_type: $(tr a-z A-Z <<<"$cell")
enc_layers: $(ini model enc_layers)
dec_layers: $(ini model dec_layers)
hidden_size: $(ini model hidden)
word_vec_size: $(ini model emb)
bridge: false
input_feed: 1
global_attention: $onmt_attn
global_attention_function: softmax
coverage_attn: false
copy_attn: false
dropout: [$(ini model dropout)]
dropout_steps: [0]
share_embeddings: false
share_decoder_embeddings: false
param_init: 0.1
param_init_glorot: false
EOF
    }
    # a constant rate: no decay before step 10^9 (the trainer's plateau decay halves it only after
    # a validation without a better score)
    lr_yaml() { printf 'learning_rate: %s\ndecay_method: none\nstart_decay_steps: 1000000000' "$lr"; }
  fi
  cat >"$t/onmt/config.yaml" <<EOF
# OpenNMT-py 3.5.1: $config's recipe (compare_peers.sh)
save_model: $t/onmt/model
data:
  corpus_1:
    path_src: $t/onmt/train.src
    path_tgt: $t/onmt/train.tgt
src_vocab: $t/onmt/vocab.txt
share_vocab: true
vocab_size_multiple: 1
skip_empty_level: silent
seed: $(ini train seed)
$(model_yaml)
optim: adam
adam_beta1: $(ini train adam_beta1)
adam_beta2: $(ini train adam_beta2)
$(lr_yaml)
max_grad_norm: $clip
label_smoothing: $(ini train label_smoothing)
normalization: tokens
batch_type: tokens
batch_size: $onmt_batch
batch_size_multiple: 1
# one bucket = one pass over the pairs, sorted by length and cut into batches: an epoch, as the
# trainer plans one (the default of 262144 examples would hold 9 passes of Multi30k)
bucket_size: $npairs
accum_count: [$(ini train accum_steps)]
average_decay: $avg
average_every: 1
train_steps: 1000000000
save_checkpoint_steps: 0
keep_checkpoint: -1
report_every: $every
num_workers: 0
world_size: 1
gpu_ranks: []
model_dtype: fp32
EOF
  tr_set=(--set train.threads=1 --set "train.max_hours=$(awk -v m="$minutes" 'BEGIN { printf "%.9g", m / 60 }')"
          --set "train.save_dir=$t/trainer" --set "data.cache_dir=$t/cache" --set run.name=peers
          --set "data.spm_model=$spm" --set "train.precision=$precision")
  [ -z "$log_every" ] || tr_set+=(--set "train.log_every=$log_every")
  busy_before=$(busy_percent)
  load_before=$(cut -d' ' -f1-3 /proc/loadavg)
  echo "== training: trainer on CPU $core_tr, OpenNMT-py on CPU $core_onmt, $minutes minutes each (logs: $t/trainer.log, $t/onmt.log) =="
  t0=$(now)
  "${pinned[@]}" "$core_tr" "$trainer" train --config "$config" "${tr_set[@]}" >"$t/trainer.log" 2>&1 &
  pid_tr=$!
  bg_pids+=("$pid_tr")
  "${pinned[@]}" "$core_onmt" "$onmt_py" bench/peers.py onmt-train --minutes "$minutes" -- \
    -config "$t/onmt/config.yaml" >"$t/onmt.log" 2>&1 &
  pid_onmt=$!
  bg_pids+=("$pid_onmt")
  wait_two "$t0" "$pid_tr" "$pid_onmt"
  rc_tr=$rc_a wall_tr=$end_a rc_onmt=$rc_b wall_onmt=$end_b
  bg_pids=()
  load_line_train=$(load_line "$busy_before" "$load_before" 2)
  [ "$rc_tr" = 0 ] || fail_log "$t/trainer.log" "the trainer's run failed (exit $rc_tr)"
  [ "$rc_onmt" = 0 ] || fail_log "$t/onmt.log" "OpenNMT-py's run failed (exit $rc_onmt)"
  echo "trainer: process $wall_tr s; OpenNMT-py: process $wall_onmt s"
  wall_tr=$(printf '%.0f' "$wall_tr") wall_onmt=$(printf '%.0f' "$wall_onmt")

  # test translations, both sides at once on their cores, scored by sacreBLEU
  ck_tr=$t/trainer/best.ckpt
  [ -f "$ck_tr" ] || ck_tr=$t/trainer/last.ckpt
  ck_onmt=$(ls -t "$t"/onmt/model_step_*.pt 2>/dev/null | head -n 1)
  [ -n "$ck_onmt" ] || fail_log "$t/onmt.log" "OpenNMT-py saved no checkpoint"
  beam_tr=() beam_onmt=(-beam_size "$eval_beam")
  [ "$eval_beam" = 1 ] || { beam_tr=(--beam "$eval_beam" --len-penalty 1); beam_onmt+=(-length_penalty wu -alpha 1.0); }
  echo "== test: $(ini data test_src), $([ "$eval_beam" = 1 ] && echo greedy || echo "beam $eval_beam") =="
  t0=$(now)
  "${pinned[@]}" "$core_tr" "$trainer" translate --checkpoint "$ck_tr" "${beam_tr[@]}" --threads 1 \
    --input "$(ini data test_src)" --output "$t/test.trainer.txt" >"$t/test.trainer.log" 2>&1 &
  pid_tr=$!
  bg_pids+=("$pid_tr")
  "${pinned[@]}" "$core_onmt" "$onmt_py" -m onmt.bin.translate -model "$ck_onmt" -src "$t/onmt/test.src" \
    -output "$t/test.onmt.pieces" -gpu -1 -batch_size 32 -batch_type sents "${beam_onmt[@]}" \
    >"$t/test.onmt.log" 2>&1 &
  pid_onmt=$!
  bg_pids+=("$pid_onmt")
  wait_two "$t0" "$pid_tr" "$pid_onmt"
  rc_tr=$rc_a test_tr=$end_a rc_onmt=$rc_b test_onmt=$end_b
  bg_pids=()
  [ "$rc_tr" = 0 ] || fail_log "$t/test.trainer.log" "the trainer's test translation failed"
  [ "$rc_onmt" = 0 ] || fail_log "$t/test.onmt.log" "OpenNMT-py's test translation failed"
  peers decode --spm "$spm" --input "$t/test.onmt.pieces" --output "$t/test.onmt.txt"
  peers score --spm "$spm" --ref "$(ini data test_tgt)" trainer="$t/test.trainer.txt" \
    opennmt-py="$t/test.onmt.txt" >"$t/score.txt" || die1 "scoring failed"

  # the logs: window tokens/s (the first window left out), steps, validations
  tps_tr=$(sed -n 's/^epoch [0-9]* step [0-9]* .*| \([0-9.]*\) tok\/s |.*/\1/p' "$t/trainer.log")
  tps_onmt=$(sed -n 's/.*Step [0-9]*\/ *[0-9]*; .* \([0-9.]*\)\/ *\([0-9.]*\) tok\/s;.*/\1 \2/p' "$t/onmt.log" |
    awk '{ print $1 + $2 }')
  bsz_onmt=$(sed -n 's/.*; bsz: *\([0-9.]*\)\/ *\([0-9.]*\)\/ *[0-9.]*;.*/\1 \2/p' "$t/onmt.log" |
    awk '{ s += $1 + $2 } END { if (NR) printf "%.0f", s / NR; else print "-" }')
  windows() { # the windows' figures less the first, or the one there is
    awk 'NR > 1 { print; n++ } NR == 1 { f = $0 } END { if (!n && NR) print f }'
  }
  read -r tr_med tr_min tr_max <<<"$(windows <<<"$tps_tr" | grep . | stats %.0f)"
  read -r on_med on_min on_max <<<"$(windows <<<"$tps_onmt" | grep . | stats %.0f)"
  nw_tr=$(grep -c . <<<"$tps_tr" || true) nw_onmt=$(grep -c . <<<"$tps_onmt" || true)
  steps_tr=$(sed -n 's/^training done: \([0-9]*\) steps.*/\1/p' "$t/trainer.log")
  epoch_line=$(sed -n 's/^epoch \([0-9]*\) step [0-9]* ([0-9]*\/\([0-9]*\)).*/\1 \2/p' "$t/trainer.log" | tail -n 1)
  read -r epochs_tr nb_tr <<<"${epoch_line:-- -}"
  steps_onmt=$(sed -n 's/^onmt-train: stopped after step \([0-9]*\) .*/\1/p' "$t/onmt.log")
  secs_onmt=$(sed -n 's/^onmt-train: stopped after step [0-9]* at \([0-9.]*\) s .*/\1/p' "$t/onmt.log")
  vals=$(sed -n 's/.*| validation \([0-9.]*\) s |.*/\1/p' "$t/trainer.log" |
    awk '{ s += $1; n++ } END { printf "%d validation%s, %.0f s in all", n, n == 1 ? "" : "s", s }')
  stop_tr=$(grep -m1 '^reached train\.\|^early stopping' "$t/trainer.log" || echo "(no stop line)")
  best_step=$(grep 'new best' "$t/trainer.log" | tail -n 1 | sed -n 's/^step \([0-9]*\) (epoch.*/step \1/p; s/^epoch \([0-9]*\) done.*/the end of epoch \1/p')
  bleu_of() { sed -n "s/^$1 bleu=\([^ ]*\).*/\1/p" "$t/score.txt"; }
  par_tr=$(sed -n 's/^model: .*, \([0-9]*\) parameters,.*/\1/p' "$t/trainer.log" | head -n 1)
  par_onmt=$(sed -n 's/.* number of parameters: \([0-9]*\).*/\1/p' "$t/onmt.log" | head -n 1)
  # OpenNMT-py's LSTM cells (torch's) have two bias vectors, b_ih and b_hh; the trainer's one:
  # 4·h more a cell (the encoder's 2·L cells of H/2, the decoder's L of H). Its GRU has both too.
  extra=0
  [ "$mtype" = rnn ] && [ "$cell" = lstm ] && extra=$(( 4 * ($(ini model enc_layers) * $(ini model hidden) + $(ini model dec_layers) * $(ini model hidden)) ))
  par_same=DIFFER
  if [ -n "$par_tr" ] && [ -n "$par_onmt" ]; then
    if [ "$par_tr" = "$par_onmt" ]; then par_same=match
    elif [ "$extra" -gt 0 ] && [ $((par_onmt - par_tr)) = "$extra" ]; then
      par_same="match but for OpenNMT-py's second LSTM bias vectors ($extra)"
    fi
  fi
  tok_step_tr=$(sed -n 's/.*trainer_tokens_per_step=\([0-9.]*\).*/\1/p' "$t/onmt-data.log")
  summary+=("-- train: $config, $minutes minutes of training each, at the same time; trainer on CPU $core_tr ($precision), OpenNMT-py 3.5.1 on CPU $core_onmt (fp32); one thread each --")
  summary+=("$(printf '%-11s %-28s %8s %-22s %s' side 'tokens/s median [min-max]' steps 'test BLEU (checkpoint)' 'windows')")
  summary+=("$(printf '%-11s %-28s %8s %-22s %s' trainer "$tr_med [$tr_min-$tr_max]" "$steps_tr" "$(bleu_of trainer) (${ck_tr##*/})" "$nw_tr of ${log_every:-$every} steps")")
  summary+=("$(printf '%-11s %-28s %8s %-22s %s' opennmt-py "$on_med [$on_min-$on_max]" "$steps_onmt" "$(bleu_of opennmt-py) (${ck_onmt##*/})" "$nw_onmt of ${log_every:-$every} steps")")
  [ "$tr_med" = - ] || [ "$on_med" = - ] || summary+=("$(awk -v a="$tr_med" -v b="$on_med" 'BEGIN {
    printf "trainer / OpenNMT-py tokens/s, ratio of medians: %.3f", a / b }')")
  summary+=("trainer: $stop_tr; epoch $epochs_tr (${nb_tr} batches an epoch, $tok_step_tr non-padding tokens a step); $vals (each epoch's inside its budget, the one at the stop after it); best.ckpt from ${best_step:-(none: last.ckpt)}; process $wall_tr s, test translation $(printf '%.0f' "$test_tr") s")
  summary+=("OpenNMT-py: stopped after step $steps_onmt at $secs_onmt s of training; batch_size $onmt_batch (mean non-padding tokens a step over its log windows: $bsz_onmt); process $wall_onmt s, test translation $(printf '%.0f' "$test_onmt") s")
  summary+=("test: $(ini data test_src) against $(ini data test_tgt), $([ "$eval_beam" = 1 ] && echo "greedy" || echo "beam $eval_beam, length penalty ((5 + |Y|) / 6)^1 on both (OpenNMT-py -length_penalty wu -alpha 1)"), one thread each; sacreBLEU $("$python" -c 'import sacrebleu; print(sacrebleu.__version__)')")
  summary+=("tokens/s: per log window (the first, warm-up, left out unless it is the only one), non-padding source + target tokens (targets with </s>) over the window's wall time: the trainer's 'tok/s' (validations and saves not in its windows), OpenNMT-py's 'src/tgt tok/s' summed")
  summary+=("parameters: trainer ${par_tr:-?}, OpenNMT-py ${par_onmt:-?} -> $par_same")
  if [ "$mtype" = transformer ]; then
    summary+=("learning rate: trainer $lr * min(s / $warm, sqrt($warm / s)); OpenNMT-py noam: learning_rate * $D^-0.5 * min(s^-0.5, s * $warm^-1.5) with learning_rate = $lr * sqrt($D * $warm) = $onmt_lr: the same value at every step s")
    summary+=("matched: layers $(ini model enc_layers)+$(ini model dec_layers), d_model $D, $(ini model heads) heads, d_ff $(ini model d_ff), dropout $(ini model dropout) (none on the attention weights), pre-LN (eps 1e-5), $([ "$shared" = true ] && echo "one embedding for source, target and output (with an output bias)" || echo "separate embeddings and output layer"), sinusoidal positions (interleaved sin/cos, x sqrt(d_model)), label smoothing $(ini train label_smoothing), Adam betas $(ini train adam_beta1)/$(ini train adam_beta2) eps 1e-8, clip norm $clip, moving average $ema with warm-up min(d, (1 + n) / (10 + n)) (OpenNMT-py average_decay $avg), the trainer's SentencePiece model and pairs (1 to $max_len pieces a side), seed $(ini train seed)")
  else
    summary+=("learning rate: trainer $lr after a linear warm-up of $warm steps, x $(ini train lr_decay) after a validation without a better score (plateau); OpenNMT-py $lr from the first step (decay_method none, no decay before step 10^9)")
    summary+=("matched: a bidirectional $(ini model enc_layers)-layer $cell encoder of $(( $(ini model hidden) / 2 )) a direction (brnn), a $(ini model dec_layers)-layer $cell decoder of $(ini model hidden) started from the encoder's final states (both directions joined; no bridge), embeddings $(ini model emb) (source and target separate), input feeding, Luong et al.'s $onmt_attn attention (model.attention = $rattn) and h~ = tanh(W_c [c; h]) $([ "$onmt_attn" = mlp ] && echo "(OpenNMT-py's mlp with a bias there and in its query projection, the trainer's without: the parameter counts then differ)" || echo "without a bias"), softmax(W_out h~ + b_out), dropout $(ini model dropout) on the embeddings, between layers and on h~, uniform +-0.1 initialisation, label smoothing $(ini train label_smoothing), Adam betas $(ini train adam_beta1)/$(ini train adam_beta2) eps 1e-8, clip norm $clip, moving average $ema (OpenNMT-py average_decay $avg), the trainer's SentencePiece model and pairs (1 to $max_len pieces a side), seed $(ini train seed)")
  fi
  diffs=("batches: trainer B * (S + T) <= $bt padded tokens (T with </s>); OpenNMT-py B * max(S, T + 2) <= batch_size (T + 2: <s> and </s>), and a source twice in one batch dropped; batch_size $onmt_batch gives the trainer's number of batches an epoch (onmt-data above), not its exact batches"
         "loss scale: both sum the smoothed loss over the targets with </s>; the trainer divides by those tokens, OpenNMT-py by the tokens without </s> (a gradient about (n + 1) / n larger, which Adam's normalisation removes but for eps and the clip threshold)"
         "validation: the trainer validates (greedy BLEU and perplexity on the validation set) at every epoch's end and saves checkpoints within its $minutes minutes ($vals); OpenNMT-py trains without validation; the test uses the trainer's best.ckpt (the weights, or their moving average, at its best validation) and OpenNMT-py's last checkpoint (those at its stop)"
         "the clock: each side's training loop; OpenNMT-py reads and batches its first epoch inside it, the trainer encodes and plans before it; both are stopped at the first step that ends after $minutes minutes"
         "test decoding: the trainer stops a batch at 2 * S + 10 pieces, OpenNMT-py at its -max_length 250; batches: the trainer's 6000 padded target tokens, OpenNMT-py 32 sentences")
  if [ "$mtype" = transformer ]; then
    diffs+=("initialisation: both Xavier-uniform per matrix and zero biases, but OpenNMT-py also draws the embedding Xavier-uniform (variance 2 / (V + d_model)) where the trainer draws it with variance 1 / d_model; the random streams (weights, dropout, batch order) differ")
  else
    diffs+=("initialisation: both uniform +-0.1, but OpenNMT-py's LSTM cells add a second bias vector (b_ih + b_hh, each +-0.1); the random streams (weights, dropout, batch order) differ"
            "learning rate: the trainer's warm-up over its first $warm steps (OpenNMT-py has no warm-up without a decay schedule); its plateau decay halves the rate only after a validation that does not improve")
  fi
  [ "$precision" = fp32 ] || diffs+=("precision: the trainer trains with train.precision = $precision (bf16 products, fp32 accumulation); OpenNMT-py in float32 (its CPU path has no bf16 training)")
  summary+=("recipe differences that remain:")
  for x in "${diffs[@]}"; do summary+=("  - $x"); done
  summary+=("$load_line_train")
fi

echo "== summary =="
machine_line
printf '%s\n' "${summary[@]}"
