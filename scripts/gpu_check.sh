#!/usr/bin/env bash
# gpu_check.sh — everything that needs a real NVIDIA GPU, in one run: the `gpu` tests, the trainer
# on the real configs against the CPU, and the training speed against PyTorch on the same batches.
#
#   bash scripts/gpu_check.sh BUILD_DIR OUT_DIR [SPM_MODEL]
#
# BUILD_DIR: a native CUDA build (CMake found nvcc; docs/gpu.md) holding trainer,
#   test_backend_ops, test_model_cuda, test_rnn_cudnn and bench_train. Run from the repository
#   root, with data/multi30k fetched (bash data/get_multi30k.sh).
#   On a GPU host without this project's CPU libraries, scripts/gpu_pack.sh packs the build and
#   runs this script there.
# OUT_DIR: one log per step and summary.txt (the table printed last).
# SPM_MODEL (optional; e.g. save_dir/spm.model of any run of the configs): runs the benchmarks.
#   The trainer's first run of each batch size dumps its batches (bench_train --dump), and
#   PyTorch trains the same batches on the GPU (bench/bench_*_torch.py --device cuda --nonpad,
#   python3 with torch; eager only: torch.compile's compile time would dominate a short run):
#   the output layer and loss on the non-padding target positions only, as the trainer computes
#   them (and as the CPU comparisons run PyTorch), TF32 off for cuBLAS and cuDNN (both printed in
#   the torch_* logs), rounds interleaved (GPU_CHECK_ROUNDS, at least 5, default 5), at each
#   train.batch_tokens of
#   GPU_CHECK_BATCH_TOKENS (default "4096 8192": the configs' and twice it; Multi30k's epoch
#   holds 64 batches of 16384). Timings vary with the host: read the spread.
# GPU_CHECK_NO_CONFIGS=1 leaves out the cfg_* steps, GPU_CHECK_NO_TESTS=1 every test step,
#   GPU_CHECK_NO_BENCH=1 the benchmarks even with SPM_MODEL given.
# GPU_CHECK_PRECISIONS (default "tf32 bf16"): the extra bench_train runs of each model and size
#   ("" for none). GPU_CHECK_PROFILE=1: bench_train --profile of each model at the last size.
# GPU_CHECK_MODELS (default "transformer luong"): the configs the benchmarks run.
# GPU_CHECK_TRAIN="transformer luong" (configs; default none): trains each on the GPU for at
#   most GPU_CHECK_TRAIN_HOURS (default 0.05) or until the config stops it, then scores its
#   best.ckpt on the config's test set, greedy and beam 5 (`trainer eval --device cuda`).
#   M@P (e.g. transformer@bf16) trains at train.precision = P (steps train_M_P, test_M_P_*).
# GPU_CHECK_SANITIZE="memcheck racecheck synccheck initcheck" (compute-sanitizer's tools, or 1 for
#   memcheck): test_backend_ops --backend cuda under each (each at most GPU_CHECK_SANITIZE_LIMIT
#   seconds, default 240; exit 124 when it ran out).
# GPU_CHECK_BASELINE=DIR: the bench_train of another build (an older commit) runs in every round
#   at the last size beside this build's (base_*; and profile_base_<M> with GPU_CHECK_PROFILE):
#   a before/after ratio taken on one machine in one run.
#
# Steps, each logged to OUT_DIR/<step>.log and reported as pass/FAIL/skip in summary.txt:
#   ops            test_backend_ops --backend cuda  every CUDA op against the CPU op
#   models         test_model_cuda                  every model and attention kind against the CPU
#   cudnn          test_rnn_cudnn                   model.rnn_impl = cudnn against our own cells
#   cfg_<M>        tests/simt/config_losses.sh      trainer, 3 steps of configs/M.ini, cuda vs cpu
#   bench_<M>_<N>* bench_train, N batch tokens      tokens/s on the GPU (fp32, tf32, bf16)
#   torch_<M>_<N>* bench/bench_<M>_torch.py         PyTorch eager on the same batches
#   base_<M>_<N>*  GPU_CHECK_BASELINE's bench_train  the older build on the same batches
#   profile_<M>    bench_train --profile            time per op in a step (GPU_CHECK_PROFILE)
#   train_<M>      trainer --set train.device=cuda  a training run (GPU_CHECK_TRAIN; its
#                                                   train_<M>.metrics.jsonl beside), then
#   test_<M>_greedy, test_<M>_beam5                 trainer eval of its best.ckpt on test
#   sanitize_<T>   compute-sanitizer --tool T       every CUDA op (GPU_CHECK_SANITIZE)
# Exit status: 1 if a test step failed, else 0 (benchmarks never fail the run).
set -uo pipefail
[ $# -ge 2 ] || { awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0"; exit 2; }
build=$1 out=$2 spm=${3:-}
[ -z "${GPU_CHECK_NO_BENCH:-}" ] || spm=
rounds=${GPU_CHECK_ROUNDS:-5} sizes=${GPU_CHECK_BATCH_TOKENS:-4096 8192}
if ! [ "$rounds" -ge 5 ] 2>/dev/null; then
    echo "gpu_check.sh: GPU_CHECK_ROUNDS=$rounds: at least 5 interleaved rounds (the spread of" \
         "fewer says nothing)" >&2
    exit 2
fi
precisions=${GPU_CHECK_PRECISIONS-tf32 bf16} models=${GPU_CHECK_MODELS:-transformer luong}
mkdir -p "$out"
work=$(mktemp -d /tmp/gpu_check.XXXXXX) # dumps and the encoded-corpus cache
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/cache"
summary=$out/summary.txt
: > "$summary"
failed=0

step_limit=240 # seconds a step may run
step() { # step NAME COMMAND...: runs it (at most step_limit s), logs it; pass/FAIL/skip (77)
    local name=$1 t0 rc ms
    shift
    t0=$(date +%s%N)
    timeout "$step_limit" "$@" > "$out/$name.log" 2>&1
    rc=$?
    ms=$((($(date +%s%N) - t0) / 1000000))
    case $rc in
        0) printf '%-26s pass  %7d ms\n' "$name" "$ms" >> "$summary" ;;
        77) printf '%-26s skip  %7d ms\n' "$name" "$ms" >> "$summary" ;;
        *) printf '%-26s FAIL  %7d ms (exit %d; %s.log)\n' "$name" "$ms" "$rc" "$name" \
               >> "$summary"
           tail -20 "$out/$name.log"
           return 1 ;;
    esac
}

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv \
    > "$out/nvidia-smi.txt" 2>&1 || true
cat "$out/nvidia-smi.txt"

export TRAINER_BIN=$build/trainer TRAINER_BUILD_DIR=$build OPENBLAS_NUM_THREADS=1
if [ -z "${GPU_CHECK_NO_TESTS:-}" ]; then
    step ops "$build/test_backend_ops" --backend cuda || failed=1
    step models "$build/test_model_cuda" || failed=1
    step cudnn "$build/test_rnn_cudnn" || failed=1
    if [ -z "${GPU_CHECK_NO_CONFIGS:-}" ]; then
        for m in luong transformer luong_local; do
            step "cfg_$m" bash tests/simt/config_losses.sh "$build" "configs/$m.ini" 3 1e-4 ||
                failed=1
        done
    fi
fi

if [ -n "$spm" ]; then
    # bench RUN_NAME MODEL BATCH_TOKENS [--set ...]: the trainer's tokens/s on the GPU; the first
    # run of a (model, batch) also dumps its batches for PyTorch
    base=${GPU_CHECK_BASELINE:-}
    bench() {
        local name=$1 m=$2 bt=$3 dump=$work/$2_$3.dump bin=$build/bench_train
        shift 3
        local extra=()
        [ -f "$dump" ] || extra=(--dump "$dump")
        case $name in *base_*) bin=$base/bench_train ;; esac
        step "$name" "$bin" --config "configs/$m.ini" --spm "$spm" \
            --batches 60 --warmup 10 --threads 1 --set train.device=cuda \
            --set train.batch_tokens="$bt" --set data.cache_dir="$work/cache" "${extra[@]}" "$@" ||
            true
    }
    torch_eager() { # torch_eager RUN_NAME MODEL BATCH_TOKENS
        # without LD_LIBRARY_PATH: PyTorch loads the cuDNN it was built with, not the one this
        # build found (on one GPU host a cuDNN 9.14 made torch 2.11, built against 9.19, refuse
        # nn.LSTM)
        step "$1" env -u LD_LIBRARY_PATH PYTHONUNBUFFERED=1 python3 "bench/bench_${2/luong/rnn}_torch.py" \
            "$work/$2_$3.dump" --device cuda --nonpad --threads 1 || true
    }
    for bt in $sizes; do
        for m in $models; do
            for r in $(seq "$rounds"); do # interleaved: trainer, PyTorch, trainer, PyTorch...
                bench "bench_${m}_${bt}_r$r" $m "$bt"
                [ -z "$base" ] || [ "$bt" != "${sizes##* }" ] ||
                    bench "base_${m}_${bt}_r$r" $m "$bt"
                torch_eager "torch_${m}_${bt}_r$r" $m "$bt"
            done
            for p in $precisions; do
                bench "bench_${m}_${bt}_$p" $m "$bt" --set train.precision=$p
            done
        done
    done
    if [ -n "${GPU_CHECK_PROFILE:-}" ]; then
        for m in $models; do
            bench "profile_$m" $m "${sizes##* }" --profile
            [ -z "$base" ] || bench "profile_base_$m" $m "${sizes##* }" --profile
        done
    fi
fi

# ini FILE KEY: a value of the run's resolved config (config.ini in its save_dir: the configs may
# include others, and strings are quoted there)
ini() { awk -F' *= *' -v k="$2" '$1 == k { gsub(/^"|"$/, "", $2); print $2; exit }' "$1"; }
for run in ${GPU_CHECK_TRAIN:-}; do
    m=${run%@*} prec=() # M or M@PRECISION
    [ "$m" = "$run" ] || { prec=(--set train.precision="${run#*@}"); m=${m}_${run#*@}; }
    dir=$work/train_$m
    step_limit=$(awk -v h="${GPU_CHECK_TRAIN_HOURS:-0.05}" 'BEGIN { print int(h * 3600) + 120 }')
    step "train_$m" "$build/trainer" --config "configs/${run%@*}.ini" --set train.device=cuda \
        --set train.save_dir="$dir" --set data.cache_dir="$work/cache" "${prec[@]}" \
        --set train.max_hours="${GPU_CHECK_TRAIN_HOURS:-0.05}" || failed=1
    cp "$dir"/metrics* "$out/" 2>/dev/null
    for f in "$out"/metrics*; do [ -f "$f" ] && mv "$f" "$out/train_$m.${f##*/}"; done
    step_limit=240
    src=$(ini "$dir/config.ini" test_src) ref=$(ini "$dir/config.ini" test_tgt)
    step "test_${m}_greedy" "$build/trainer" eval --checkpoint "$dir/best.ckpt" --src "$src" \
        --ref "$ref" --device cuda || failed=1
    step "test_${m}_beam5" "$build/trainer" eval --checkpoint "$dir/best.ckpt" --src "$src" \
        --ref "$ref" --device cuda --beam 5 || failed=1
done

if [ -n "${GPU_CHECK_SANITIZE:-}" ]; then
    cs=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null |
         head -1)
    if [ -n "$cs" ]; then
        step_limit=${GPU_CHECK_SANITIZE_LIMIT:-240}
        tools=$GPU_CHECK_SANITIZE
        [ "$tools" != 1 ] || tools=memcheck
        for t in $tools; do
            step "sanitize_$t" "$cs" --tool "$t" --error-exitcode 9 "$build/test_backend_ops" \
                --backend cuda || failed=1
        done
    else
        echo "sanitize                   skip  (no compute-sanitizer)" >> "$summary"
    fi
fi

if [ -n "$spm" ]; then
    python3 - "$out" >> "$summary" <<'PY'
import glob, os, re, statistics, sys
runs = {}
for f in sorted(glob.glob(os.path.join(sys.argv[1], "*.log"))):
    name = os.path.basename(f)[:-4]
    if not name.startswith(("bench_", "torch_", "base_")):
        continue
    m = re.findall(r"([0-9.]+) tokens/s", open(f).read())
    if m:
        runs.setdefault(re.sub(r"_r[0-9]+$", "", name), []).append(float(m[-1]))
print("tokens/s (source + target, non-padding; 60 timed steps after 10 warm-up): median "
      "[min-max] (runs)")
for name, v in runs.items():
    print(f"  {name:28s} {statistics.median(v):10.0f} [{min(v):.0f}-{max(v):.0f}] ({len(v)})")
for name, a in runs.items():
    b = runs.get(name.replace("bench_", "torch_", 1))
    if name.startswith("bench_") and b:
        print(f"  {name[6:]}: trainer / PyTorch eager = "
              f"{statistics.median(a) / statistics.median(b):.2f}")
    b = runs.get(name.replace("bench_", "base_", 1))
    if name.startswith("bench_") and b:
        print(f"  {name[6:]}: this build / GPU_CHECK_BASELINE = "
              f"{statistics.median(a) / statistics.median(b):.3f}")
PY
fi
echo "== summary"
cat "$summary"
exit $failed
