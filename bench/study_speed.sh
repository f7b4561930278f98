#!/usr/bin/env bash
# study_speed.sh — training tokens/s of every config of a study plan, measured in one sitting on
# one machine, so that the configs' speeds compare even where their runs trained elsewhere.
#
#   bash bench/study_speed.sh [PLAN] [--rounds R] [--warmup W] [--batches N] [--threads T]
#                             [--precision P] [--out FILE.md] [--build DIR] [--only NAME,...]
#                             [--clock wall|cpu] [--set SECTION.KEY=VALUE]... [--replot]
#
# PLAN: a study plan (src/study/study.h; default experiments/attention-multi30k/study.ini). Its
# configs are the `configs =` lines of its [table NAME] sections, paths relative to the plan's
# folder; each config is named by its file name without .ini, as the study names its runs.
# Each config runs BUILD/bench_train (default build/bench_train) with the settings the study's
# runs train with: train.precision = the plan's `precision` (--precision P overrides it, e.g.
# fp32 to time a CPU without AVX512_BF16 at its float32 speed), T threads (default 1, as the study trains: train.threads
# and bench_train --threads), the plan's SentencePiece model (`spm_model`, default spm.model in
# the plan's folder; `trainer study PLAN --prepare` makes it), and train.seed = the first seed
# of the config's table (its `seeds =`, else the plan's), so that each config times the first
# W + N batches (defaults 3 and 20) of its first run's first epoch. --set passes an override to every config (e.g. train.device=cuda).
#
# R rounds (default 5), interleaved: each round runs every config once, round r starting at the
# (r−1)-th config of the list (mod its length) and going round it, so that every config meets
# the same conditions and no config always runs first or after the same neighbour. A config's
# figure is bench_train's "trainer: X tokens/s" (non-padding source + target tokens of the N
# timed steps over their wall time; bench/README.md "What is measured").
#
# Prints and writes, for each table of the plan: config, attention kinds (as bench_train names
# them: the Transformer's encoder self / decoder self / cross, the RNN's one), parameters, the
# median tokens/s over the R rounds, min–max, and the ratio of the median to the table's
# baseline config's median (the table's `baseline =`; "—" where it has none), and the peak
# memory (bench_train's "peak resident memory", the largest over the rounds); above the tables
# a header with the date (UTC), the machine (/proc/cpuinfo model name, cpu family, model; CPUs),
# threads, batches, rounds, precision, /proc/loadavg before and after, the commit (git describe)
# and the exact command. It warns where the 1-minute load was above 0.5 before it started
# (another job shares the cores). Files: FILE.md (default speed.md in the plan's folder), FILE.csv
# (one row per config: the table's columns) and FILE.runs.csv (one row per run, in the order
# run). --only NAME,... measures those configs alone (a quick look; ratios need the baseline).
# --clock cpu (with --threads 1): bench_train times the steps by the process's CPU time, for a
# machine other jobs share (docs/performance.md, "Rules for a fair comparison"); no load warning.
# Where the plan's tables give x (and [study] x_label: docs/study.md), FILE.png draws each
# attention's median tokens/s against x, with bars from min to max (gnuplot); --replot redraws it
# from an existing FILE.csv and measures nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
shq() { if [[ $1 =~ ^[A-Za-z0-9_./=,:+@%-]+$ ]]; then printf ' %s' "$1"; else printf ' %q' "$1"; fi; }
cmdline="bash bench/study_speed.sh$(for a in "$@"; do shq "$a"; done)"
die() { echo "study_speed.sh: $*" >&2; exit 2; }

plan=experiments/attention-multi30k/study.ini rounds=5 warmup=3 batches=20 threads=1
precision="" out="" build=build only="" sets=() clock=wall replot=0
need() { [ $# -ge 2 ] && [ -n "$2" ] || die "$1 needs a value (see the top of bench/study_speed.sh)"; }
posint() { [[ $2 =~ ^[0-9]+$ ]] && [ "$2" -ge "$3" ] || die "$1 $2: give a whole number, $3 or more"; }
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) need "$@"; posint "$1" "$2" 1; rounds=$2; shift 2 ;;
    --warmup) need "$@"; posint "$1" "$2" 0; warmup=$2; shift 2 ;;
    --batches) need "$@"; posint "$1" "$2" 1; batches=$2; shift 2 ;;
    --threads) need "$@"; posint "$1" "$2" 1; threads=$2; shift 2 ;;
    --precision) need "$@"; precision=$2; shift 2 ;;
    --out) need "$@"; out=$2; shift 2 ;;
    --build) need "$@"; build=$2; shift 2 ;;
    --only) need "$@"; only=$2; shift 2 ;;
    --clock) need "$@"; [[ $2 =~ ^(wall|cpu)$ ]] || die "--clock $2: give wall or cpu"; clock=$2; shift 2 ;;
    --set) need "$@"; sets+=(--set "$2"); shift 2 ;;
    --replot) replot=1; shift ;;
    -h|--help) sed -n '2,39p' "$0"; exit 0 ;;
    -*) die "unknown option '$1' (see the top of bench/study_speed.sh)" ;;
    *) plan=$1; shift ;;
  esac
done
[ -f "$plan" ] && [ -r "$plan" ] || die "cannot read the plan '$plan'"
planfile=$(realpath "$plan")
plandir=$(dirname "$planfile")
bench="$build/bench_train"
[ $replot = 1 ] || [ -x "$bench" ] ||
  die "no $bench; build it first: cmake --build $build --target bench_train"

# The plan, read as src/study/study.c reads it: '#' and ';' start comment lines, sections
# [study] and [table NAME], key = value. Out: one "study<TAB>key<TAB>value" line per [study] key
# and one "table<TAB>NAME<TAB>key<TAB>value" line per table key, in the file's order.
parsed=$(awk '
  function trim(s) { sub(/^[ \t\r]+/, "", s); sub(/[ \t\r]+$/, "", s); return s }
  { line = trim($0) }
  line == "" || line ~ /^[#;]/ { next }
  line ~ /^\[/ {
    name = line; sub(/^\[[ \t]*/, "", name); sub(/[ \t]*\][ \t]*$/, "", name)
    if (name == "study") { sec = "study"; next }
    if (name ~ /^table[ \t]+/) { sub(/^table[ \t]+/, "", name); sec = "table\t" name
      print "table\t" name "\t\t"; next }
    printf "%s:%d: unknown section [%s]\n", FILENAME, NR, name > "/dev/stderr"; bad = 1; exit
  }
  {
    eq = index(line, "=")
    if (!eq || sec == "") { printf "%s:%d: expected key = value under [study] or [table NAME]\n",
                            FILENAME, NR > "/dev/stderr"; bad = 1; exit }
    print sec "\t" trim(substr(line, 1, eq - 1)) "\t" trim(substr(line, eq + 1))
  }
  END { exit bad }' "$planfile") || die "cannot read the plan $plan (above)"

# 0 if $1 is one of the other arguments (no pipe: `grep -q` closing it early would make the
# writer's SIGPIPE fail the pipeline under pipefail)
in_list() { local x=$1 e; shift; for e in "$@"; do [ "$e" != "$x" ] || return 0; done; return 1; }
study_key() { awk -F'\t' -v k="$1" '$1 == "study" && $2 == k { v = $3 } END { print v }' <<<"$parsed"; }
plan_precision=$(study_key precision)
seeds=$(study_key seeds)
spm_rel=$(study_key spm_model)
[ -n "$precision" ] || precision=$plan_precision
[ -n "$precision" ] || die "$plan: no 'precision =' in [study]; add one or pass --precision"
case "$precision" in fp32|tf32|bf16) ;; *) die "precision '$precision': give fp32, tf32 or bf16" ;; esac
seed=${seeds%% *}
[ -n "$seed" ] || die "$plan: no 'seeds =' in [study]"
[[ $seed =~ ^[0-9]+$ ]] || die "$plan: seeds = $seeds: the first seed '$seed' is not a whole number"
# a path of the plan: relative to its folder unless absolute
in_plan() { case "$1" in /*) echo "$1" ;; *) echo "$plandir/$1" ;; esac; }
spm=$(in_plan "${spm_rel:-spm.model}")
[ -f "$spm" ] || die "the plan's SentencePiece model $spm is missing; 'trainer study $plan --prepare' trains it"

# Tables: names in order; per table its title, baseline and configs (name<TAB>path lines).
declare -a tnames=() cnames=() cpaths=() ctable=()
declare -A ttitle=() tbase=() tseed=() tx=()
while IFS=$'\t' read -r kind tname key val; do
  [ "$kind" = table ] || continue
  if [ -z "$key" ]; then tnames+=("$tname"); ttitle[$tname]=$tname; tbase[$tname]=""; continue; fi
  case "$key" in
    title) ttitle[$tname]=$val ;;
    baseline) tbase[$tname]=$val ;;
    seeds)
      tseed[$tname]=${val%% *}
      [[ ${tseed[$tname]} =~ ^[0-9]+$ ]] || die "$plan: [table $tname]: seeds = $val: the first seed is not a whole number" ;;
    configs)
      for c in $val; do
        name=$(basename "$c" .ini)
        for prev in "${cnames[@]}"; do
          [ "$prev" != "$name" ] || die "$plan: two configs are called $name; their runs would share a name"
        done
        path=$(in_plan "$c")
        [ -f "$path" ] || die "$plan: [table $tname]: config $path does not exist"
        cnames+=("$name"); cpaths+=("$path"); ctable+=("$tname")
      done ;;
    x) [[ $val =~ ^[0-9.eE+-]+$ ]] || die "$plan: [table $tname]: x = $val: give a number"
       tx[$tname]=$val ;;
    *) die "$plan: unknown key '$key' in [table $tname]; valid keys: title, configs, baseline," \
           "seeds, x" ;;
  esac
done <<<"$parsed"
[ ${#tnames[@]} -gt 0 ] || die "$plan: no [table NAME] section"
[ ${#cnames[@]} -gt 0 ] || die "$plan: its tables list no configs"
for t in "${tnames[@]}"; do
  in_list "$t" "${ctable[@]}" || die "$plan: [table $t] has no configs"
  b=${tbase[$t]}
  [ -z "$b" ] || in_list "$b" "${cnames[@]}" ||
    die "$plan: [table $t]: baseline = $b is none of its configs (a config's file name without .ini)"
done

# --only: the subset, in the plan's order
declare -a pick=()
for i in "${!cnames[@]}"; do
  if [ -z "$only" ] || [[ ",$only," == *",${cnames[$i]},"* ]]; then pick+=("$i"); fi
done
if [ -n "$only" ]; then
  IFS=, read -ra wanted <<<"$only"
  for w in "${wanted[@]}"; do
    in_list "$w" "${cnames[@]}" || die "--only: $w is none of the plan's configs"
  done
fi
n=${#pick[@]}

[ -n "$out" ] || out="$plandir/speed.md"
base=${out%.md}
csv="$base.csv" runs_csv="$base.runs.csv" png="$base.png"
x_label=$(study_key x_label)

# FILE.png from FILE.csv: each attention's median tokens/s (bars min–max) at its table's x;
# nothing where fewer than two tables have an x and a row.
plot_speed() {
  [ -n "$x_label" ] || return 0
  local rows="" t
  while IFS=, read -r t _ at _ _ _ _ _ _ m lo hi _; do
    [ "$t" != table ] && [ -n "${tx[$t]:-}" ] && [ -n "$m" ] || continue
    rows+="${at}"$'\t'"${tx[$t]}"$'\t'"$m"$'\t'"$lo"$'\t'"$hi"$'\n'
  done <"$csv"
  local nx
  nx=$(printf '%s' "$rows" | cut -f2 | sort -u | grep -c . || true)
  [ "$nx" -ge 2 ] || return 0
  command -v gnuplot >/dev/null || die "gnuplot is missing for $png (apt-get install gnuplot-nox)"
  local q=${x_label//\\/\\\\}
  q=${q//\"/\\\"}
  {
    echo "set encoding utf8"
    echo "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {"
    echo "  set terminal pngcairo noenhanced size 900,520 font 'DejaVu Sans,10'"
    echo "} else { set terminal png noenhanced size 900,520 }"
    echo "set output \"$png\""
    echo "set grid; set bars small; set key outside right top vertical Left reverse"
    echo "set offsets graph 0.05, graph 0.05, graph 0.1, 0; set yrange [0:*]"
    printf '%s' "$rows" | cut -f2 | sort -g |
      awk 'NR == 1 { lo = $1 } { hi = $1 } END { if (lo > 0 && hi > 10 * lo) print "set logscale x" }'
    echo "set xlabel \"$q\"; set ylabel \"tokens/s (median; bars: min to max)\""
    echo "set title \"training tokens/s, $threads thread(s), $precision\""
    local plot="plot" i=0 a
    while read -r a; do
      echo "\$d$i << EOD"
      printf '%s' "$rows" | awk -F'\t' -v a="$a" '$1 == a { print $2, $3, $4, $5 }' | sort -g
      echo "EOD"
      plot+="$([ $i = 0 ] || echo ,) \$d$i using 1:2:3:4 with yerrorlines"
      plot+=" pt $((4 + i % 11)) ps 1.3 title \"$a\""
      i=$((i + 1))
    done < <(printf '%s' "$rows" | cut -f1 | awk '!seen[$0]++')
    echo "$plot"
  } >"$tmp/speed.gp"
  gnuplot "$tmp/speed.gp" 2>"$tmp/speed.gp.log" ||
    { cat "$tmp/speed.gp.log" >&2; die "gnuplot failed on $png (above)"; }
  echo "wrote $png"
}
if [ $replot = 1 ]; then
  [ -f "$csv" ] || die "--replot: no $csv to draw from"
  tmp=$(mktemp -d /tmp/study_speed.XXXXXX)
  trap 'rm -rf "$tmp"' EXIT
  threads=$(awk -F, 'NR == 2 { print $6 }' "$csv")
  precision=$(awk -F, 'NR == 2 { print $5 }' "$csv")
  plot_speed
  exit 0
fi
mkdir -p "$(dirname "$out")" || die "cannot create the folder of $out"
: >"$out" 2>/dev/null || die "cannot write $out"
tmp=$(mktemp -d /tmp/study_speed.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

cpu() { awk -F': *' -v k="$1" '$1 ~ "^" k "[ \t]*$" { print $2; exit }' /proc/cpuinfo; }
machine="$(cpu 'model name') (family $(cpu 'cpu family'), model $(cpu model)), $(nproc) CPUs"
commit=$(git describe --always --dirty --tags 2>/dev/null || echo "unknown (not a git checkout)")
date_utc=$(date -u '+%Y-%m-%d %H:%M UTC')
load0=$(cat /proc/loadavg)

echo "study_speed: $n configs of $plan, $rounds rounds interleaved, $warmup warm-up + $batches timed batches, $threads thread(s), precision $precision"
echo "machine: $machine; load average before: $load0"
echo "round,position,table,config,tokens_per_s,utc" >"$runs_csv"
declare -A tps_list=() params=() attn=() mem=()
for ((r = 1; r <= rounds; r++)); do
  for ((j = 0; j < n; j++)); do
    i=${pick[$(((j + r - 1) % n))]}
    name=${cnames[$i]} log="$tmp/${cnames[$i]}.log"
    if ! OMP_NUM_THREADS=$threads "$bench" --config "${cpaths[$i]}" --batches "$batches" \
        --warmup "$warmup" --threads "$threads" --spm "$spm" --clock "$clock" \
        --set "train.precision=$precision" --set "train.threads=$threads" \
        --set "data.spm_model=$spm" --set "train.seed=${tseed[${ctable[$i]}]:-$seed}" "${sets[@]}" >"$log" 2>&1; then
      cat "$log" >&2
      [ "$precision" != bf16 ] ||
        echo "study_speed.sh: where the CPU lacks bf16 (above), pass --precision fp32 (the header then names it)" >&2
      die "bench_train failed on ${cpaths[$i]} (its output above)"
    fi
    tps=$(sed -n 's/^trainer: \([0-9.]*\) tokens\/s.*/\1/p' "$log" | tail -1)
    [ -n "$tps" ] || { cat "$log" >&2; die "no 'trainer: X tokens/s' line from bench_train on ${cpaths[$i]}"; }
    tps_list[$name]+="$tps "
    m=$(sed -n 's/^bench_train: peak resident memory \([0-9.]*\) MiB.*/\1/p' "$log" | tail -1)
    [ -z "$m" ] || mem[$name]=$(awk -v a="${mem[$name]:-0}" -v b="$m" 'BEGIN { printf "%.0f", (a + 0 > b + 0 ? a : b) }')
    params[$name]=$(sed -n 's/.*; \([0-9]*\) parameters;.*/\1/p' "$log" | tail -1)
    attn[$name]=$(sed -n 's/.* attention \([a-z_/]*\)[ ,].*/\1/p' "$log" | tail -1)
    echo "$r,$((j + 1)),${ctable[$i]},$name,$tps,$(date -u '+%Y-%m-%dT%H:%M:%SZ')" >>"$runs_csv"
    printf 'round %d/%d  %-24s %10.1f tokens/s\n' "$r" "$rounds" "$name" "$tps"
  done
done
load1=$(cat /proc/loadavg)

# median, min, max of a list of numbers
stats() { printf '%s\n' $1 | sort -g | awk '{ v[NR] = $1 } END {
  m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
  printf "%.1f %.1f %.1f\n", m, v[1], v[NR] }'; }
declare -A med=() lo=() hi=()
for i in "${pick[@]}"; do
  read -r med[${cnames[$i]}] lo[${cnames[$i]}] hi[${cnames[$i]}] <<<"$(stats "${tps_list[${cnames[$i]}]}")"
done

{
  echo "# Training speed of the configs of $plan"
  echo
  echo "- date: $date_utc"
  echo "- machine: $machine"
  prec_note=""; [ "$precision" = "$plan_precision" ] || prec_note=" (not the plan's ${plan_precision:-unset}: --precision)"
  echo "- measured: \`bench_train\`, $threads thread(s), precision $precision$prec_note, $warmup warm-up + $batches timed batches per run (the first batches of the first epoch of each table's first seed: $seed unless the table sets its own), $rounds rounds interleaved (round r starts at the r-th config), timed by the $([ "$clock" = cpu ] && echo "process's CPU time (--clock cpu)" || echo "wall clock")"
  echo "- SentencePiece model: $spm"
  echo "- load average (1, 5, 15 min; running/total; last pid) before: $load0; after: $load1"
  [ "$clock" = cpu ] || ! awk -v l="${load0%% *}" 'BEGIN { exit !(l > 0.5) }' ||
    echo "- **WARNING**: the machine was not idle before the measurement (1-minute load ${load0%% *}): another job shared the cores, and the figures say less than an idle machine's would"
  echo "- commit: $commit"
  echo "- command: \`$cmdline\`"
  echo
  echo "Tokens/s: non-padding source + target tokens of the timed steps over their $([ "$clock" = cpu ] && echo "CPU time" || echo "wall time") (bench/README.md). Ratio: the config's median over the table's baseline's median. Peak memory: the largest resident set of bench_train's process over the rounds (model, optimizer state, buffers sized for the largest batch the config admits, the corpus)."
  for t in "${tnames[@]}"; do
    b=${tbase[$t]}
    rows=0
    for i in "${pick[@]}"; do [ "${ctable[$i]}" != "$t" ] || rows=$((rows + 1)); done
    [ $rows -gt 0 ] || continue
    echo
    echo "## ${ttitle[$t]} (table $t${b:+, baseline $b})"
    echo
    echo "| config | attention | parameters | median tokens/s | min–max | ratio to ${b:-baseline} | peak memory (MiB) |"
    echo "|---|---|---:|---:|---:|---:|---:|"
    for i in "${pick[@]}"; do
      [ "${ctable[$i]}" = "$t" ] || continue
      c=${cnames[$i]}
      ratio="—"
      [ -z "$b" ] || [ -z "${med[$b]:-}" ] || ratio=$(awk -v a="${med[$c]}" -v b="${med[$b]}" 'BEGIN { printf "%.3f", a / b }')
      mark=""; [ "$c" != "$b" ] || mark=" (baseline)"
      echo "| $c$mark | ${attn[$c]:-?} | ${params[$c]:-?} | ${med[$c]} | ${lo[$c]}–${hi[$c]} | $ratio | ${mem[$c]:-?} |"
    done
  done
} >"$tmp/table.md"
cp "$tmp/table.md" "$out"
{
  echo "table,config,attention,parameters,precision,threads,warmup,batches,rounds,median_tokens_per_s,min_tokens_per_s,max_tokens_per_s,ratio_to_baseline,peak_rss_mib"
  for i in "${pick[@]}"; do
    c=${cnames[$i]} t=${ctable[$i]} b=${tbase[${ctable[$i]}]}
    ratio=""
    [ -z "$b" ] || [ -z "${med[$b]:-}" ] || ratio=$(awk -v a="${med[$c]}" -v b="${med[$b]}" 'BEGIN { printf "%.4f", a / b }')
    echo "$t,$c,${attn[$c]:-},${params[$c]:-},$precision,$threads,$warmup,$batches,$rounds,${med[$c]},${lo[$c]},${hi[$c]},$ratio,${mem[$c]:-}"
  done
} >"$csv"
echo
cat "$out"
echo
echo "wrote $out, $csv, $runs_csv"
plot_speed
