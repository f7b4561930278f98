#!/usr/bin/env bash
# compare_torch.sh — training tokens/s of the trainer against the same model in PyTorch, on the
# same batches, with the same thread count, in one invocation; prints the ratio.
#
#   bash bench/compare_torch.sh [--config FILE] [--batches N] [--warmup W] [--threads T]
#                               [--dump FILE] [--build DIR] [--torch-variants K]
#
# Defaults: configs/luong.ini, 20 timed batches after 3 warm-up ones, all cores (nproc), a
# temporary dump file, build folder build/. Builds bench_train if needed (cmake), runs it (it
# writes the batches and the config), then the PyTorch script of the config's model.type with
# Debian's /usr/bin/python3 on that dump: bench/bench_rnn_torch.py for rnn,
# bench/bench_transformer_torch.py for transformer.
#
# Both programs get the same OMP_NUM_THREADS / OPENBLAS_NUM_THREADS = T. On AVX-512 CPUs the
# trainer runs with OPENBLAS_CORETYPE=SkylakeX (src/cli/main.c); PyTorch here links the same Debian
# OpenBLAS (libblas.so.3), so the script exports that setting for both runs, unless you set the
# variable yourself.
#
# So that PyTorch is not handicapped, it is run once per variant and the FASTEST variant is used
# for the ratio (every variant is reported). Variants: TORCH_VARIANTS, a ';'-separated list of
# environment settings for the PyTorch run ("" = as installed). Default: "" (Debian's torch 1.13
# as installed: ATen's AVX2 kernels, the pthread build of OpenBLAS); on CPUs with AVX-512
# F/BW/VL/DQ "ATEN_CPU_CAPABILITY=avx512"; and, when installed, the OpenMP build of OpenBLAS that
# the trainer links (LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp, plus the AVX-512
# setting where it applies). --torch-variants K runs only the first K.
set -euo pipefail
cd "$(dirname "$0")/.."

# nproc honours OMP_NUM_THREADS: count the CPUs without it
ncpu=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)
config=configs/luong.ini
batches=20
warmup=3
threads=$ncpu
max_variants=99
dump=""
build=build
python=${PYTHON:-/usr/bin/python3}
while [ $# -gt 0 ]; do
  case "$1" in
    --config) config=$2; shift 2 ;;
    --batches) batches=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --dump) dump=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --torch-variants) max_variants=$2; shift 2 ;;
    -h|--help) sed -n '2,25p' "$0"; exit 0 ;;
    *) echo "compare_torch.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

# the PyTorch script of the config's model.type (the [model] section's "type = ..."; default rnn)
[ -r "$config" ] || { echo "compare_torch.sh: cannot read the config '$config'" >&2; exit 2; }
model_type=$(awk '
  /^[ \t]*[#;]/ { next }
  /^[ \t]*\[/ { gsub(/[][ \t\r]/, ""); section = $0; next }
  section == "model" && /^[ \t]*type[ \t]*=/ {
    sub(/^[^=]*=[ \t]*/, ""); sub(/[ \t\r]*$/, ""); print; exit }' "$config")
model_type=${model_type:-rnn}
case "$model_type" in
  rnn) torch_script=bench/bench_rnn_torch.py ;;
  transformer) torch_script=bench/bench_transformer_torch.py ;;
  *) echo "compare_torch.sh: $config: model.type = '$model_type'; expected rnn or transformer" >&2
     exit 2 ;;
esac

if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
blog=$(mktemp /tmp/bench_train.build.XXXXXX.log)
if ! cmake --build "$build" --target bench_train -j "${JOBS:-$ncpu}" >"$blog" 2>&1; then
  cat "$blog" >&2
  rm -f "$blog"
  echo "compare_torch.sh: building bench_train failed" >&2
  exit 1
fi
rm -f "$blog"

keep_dump=1
if [ -z "$dump" ]; then
  dump=$(mktemp /tmp/bench_train.XXXXXX.bin)
  keep_dump=0
fi
tlog=$(mktemp /tmp/bench_train.trainer.XXXXXX.log)
plog=$(mktemp /tmp/bench_train.torch.XXXXXX.log)
cleanup() { rm -f "$tlog" "$plog"; if [ "$keep_dump" = 0 ]; then rm -f "$dump"; fi; }
trap cleanup EXIT

coretype_note="unset"
if [ -n "${OPENBLAS_CORETYPE:-}" ]; then
  coretype_note="$OPENBLAS_CORETYPE (set by the caller), both runs"
elif grep -qw avx512f /proc/cpuinfo; then
  export OPENBLAS_CORETYPE=SkylakeX
  coretype_note="SkylakeX (AVX-512 CPU: what the trainer sets for itself), both runs"
else
  coretype_note="unset (no AVX-512: OpenBLAS picks its kernels), both runs"
fi
export OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads

echo "== trainer (bench_train) =="
"$build/bench_train" --config "$config" --batches "$batches" --warmup "$warmup" \
  --threads "$threads" --dump "$dump" | tee "$tlog"
if [ -z "${TORCH_VARIANTS+set}" ]; then
  TORCH_VARIANTS=""   # 1: as installed
  omp_blas=/usr/lib/x86_64-linux-gnu/openblas-openmp
  flags=" $(grep -m1 '^flags' /proc/cpuinfo) "
  avx512=""
  if [[ $flags == *" avx512f "* && $flags == *" avx512bw "* && $flags == *" avx512vl "* &&
        $flags == *" avx512dq "* ]]; then
    avx512="ATEN_CPU_CAPABILITY=avx512"
    TORCH_VARIANTS+=";$avx512"   # 2: ATen's AVX-512 kernels
  fi
  if [ -e "$omp_blas/libopenblas.so.0" ]; then
    # 3: the OpenMP build of OpenBLAS, the one the trainer links (one thread pool with ATen's)
    TORCH_VARIANTS+=";${avx512:+$avx512 }LD_LIBRARY_PATH=$omp_blas"
  fi
fi
IFS=';' read -r -a variants <<<"$TORCH_VARIANTS"
[ ${#variants[@]} -eq 0 ] && variants=("")
torch_tps=""
torch_best=""
torch_report=()
for ((i = 0; i < ${#variants[@]} && i < max_variants; i++)); do
  v=${variants[$i]}
  echo "== pytorch ($torch_script)${v:+ with $v} =="
  # shellcheck disable=SC2086
  env $v "$python" -u "$torch_script" "$dump" --threads "$threads" | tee "$plog"
  tps=$(awk '/^pytorch: [0-9.]+ tokens\/s/ {print $2}' "$plog")
  [ -n "$tps" ] || { echo "compare_torch.sh: no tokens/s figure from PyTorch${v:+ ($v)}" >&2; exit 1; }
  torch_report+=("pytorch${v:+ [$v]}: $tps tokens/s")
  if [ -z "$torch_tps" ] || awk -v a="$tps" -v b="$torch_tps" 'BEGIN { exit !(a > b) }'; then
    torch_tps=$tps
    torch_best=${v:-default environment}
  fi
  params_line=$(awk '/parameters/ {print; exit}' "$plog")
done

trainer_tps=$(awk '/^trainer: [0-9.]+ tokens\/s/ {print $2}' "$tlog")
if [ -z "$trainer_tps" ]; then
  echo "compare_torch.sh: could not read the trainer's tokens/s figure" >&2
  exit 1
fi
torch_info=$("$python" -c 'import torch
cap = [l.strip() for l in torch.__config__.show().splitlines() if "CPU capability usage" in l]
print(f"torch {torch.__version__}, mkldnn (oneDNN) available {torch.backends.mkldnn.is_available()}, default "
      + (cap[0].lstrip("- ") if cap else "CPU capability unknown"))')
blas=$(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3 2>/dev/null || echo unknown)

echo "== summary =="
echo "machine: $ncpu CPUs, $(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)"
echo "config: $config (model.type $model_type; PyTorch: $torch_script)"
echo "batches: $warmup warm-up + $batches timed; threads: $threads"
echo "OPENBLAS_CORETYPE: $coretype_note"
echo "pytorch: $torch_info; BLAS as installed $blas"
echo "$params_line"
echo "trainer: $trainer_tps tokens/s"
printf '%s\n' "${torch_report[@]}"
echo "pytorch: $torch_tps tokens/s (best variant: $torch_best)"
awk -v a="$trainer_tps" -v b="$torch_tps" \
  'BEGIN { printf "trainer/pytorch tokens/s ratio: %.3f\n", a / b }'
