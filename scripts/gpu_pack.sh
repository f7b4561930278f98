#!/usr/bin/env bash
# gpu_pack.sh — run scripts/gpu_check.sh on a GPU host that has the CUDA libraries and PyTorch
# but none of this project's CPU libraries (docs/gpu.md, "Run this first on a GPU"): pack a
# native CUDA build with the shared libraries it loads on the build machine, then unpack and run
# it on the GPU host.
#
#   bash scripts/gpu_pack.sh pack BUILD_DIR BUNDLE [BASELINE_BUILD_DIR]     (on the build machine)
#   bash scripts/gpu_pack.sh run BUNDLE OUT_DIR                             (on the GPU host)
#   bash scripts/gpu_pack.sh study BUNDLE PLAN OUT_DIR                      (on the GPU host)
#
# pack: BUILD_DIR is a native CUDA build (cmake -DCMAKE_CUDA_ARCHITECTURES=90
#   -DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON -DTRAINER_NO_NCCL=ON when the GPU host has no MPI).
#   BUNDLE (a folder of the checkout that git ignores, e.g. .gpu listed in .git/info/exclude)
#   gets bin/ (trainer, test_backend_ops, test_model_cuda, test_rnn_cudnn, bench_train), base/
#   (BASELINE_BUILD_DIR's bench_train, for GPU_CHECK_BASELINE), spm.model (SentencePiece on
#   configs/transformer.ini's corpus, trained by a one-step run: bench_train needs one) and
#   libs.tar.xz: every shared library the programs load except the C library's, the C++
#   runtime's and CUDA's (cudart, cuBLAS, cuBLASLt, cuDNN, NCCL), which the GPU host has.
#   Errors: a missing program or library exits 1 naming it.
# run: unpacks the libraries, finds the host's cuBLAS (libcublas.so.13) and cuDNN
#   (libcudnn.so.9) and runs scripts/gpu_check.sh BUNDLE/bin OUT_DIR BUNDLE/spm.model with the
#   GPU_CHECK_* variables of the environment (GPU_CHECK_BASELINE defaults to BUNDLE/base when it
#   exists). The checkout, BUNDLE and data/multi30k must be on the GPU host. Exit status:
#   gpu_check's.
# study: unpacks the libraries as run does, then trains the missing runs of the study plan PLAN
#   (docs/study.md) on the GPU: `BUNDLE/bin/trainer study PLAN --device cuda --jobs J`
#   (GPU_STUDY_JOBS, default 4: runs at a time on the one GPU; with GPU_STUDY_ONLY=GLOBS also
#   `--only GLOBS`, the runs it may take, e.g. '*_k64_*'), sent SIGTERM after
#   GPU_STUDY_MINUTES (default 8) so that it ends inside a time limit (the runs in progress save
#   their last.ckpt and stop; the finished ones are archived). OUT_DIR gets study.log (the
#   runner's output) and archives.tar.gz: the archive folders this call wrote, relative to the
#   plan's archive/ folder (unpack there, `trainer study PLAN --report`, commit). Exit status:
#   1 when no archive was written, else 0. GPU_STUDY_DEVICE=cpu runs the same on the CPU (a
#   check of this script on a machine without a GPU).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
usage() { awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0"; exit 2; }
[ $# -ge 3 ] || usage

pack() {
    local build=$1 dest=$2 base=${3:-} p libs=()
    rm -rf "$dest" && mkdir -p "$dest/bin" || exit 1
    for p in trainer test_backend_ops test_model_cuda test_rnn_cudnn bench_train; do
        [ -x "$build/$p" ] || { echo "gpu_pack: $build/$p missing (build it first)" >&2; exit 1; }
        cp "$build/$p" "$dest/bin/"
    done
    if [ -n "$base" ]; then
        [ -x "$base/bench_train" ] || { echo "gpu_pack: $base/bench_train missing" >&2; exit 1; }
        mkdir -p "$dest/base" && cp "$base/bench_train" "$dest/base/"
    fi
    # the shared libraries, less what every GPU host has
    while read -r p; do libs+=("$p"); done < <(
        for f in "$dest"/bin/* "$dest"/base/* ; do [ -f "$f" ] && ldd "$f"; done |
        awk '$2 == "=>" && $3 ~ /^\// { print $3 } $2 == "=>" && $3 == "not" { print "MISSING " $1 }' |
        sort -u | grep -v -E '/(libc|libm|libdl|libpthread|librt|ld-linux[^/]*|libstdc\+\+|libgcc_s|libcuda|libcudart|libcublas|libcublasLt|libcudnn[^/]*|libnccl)\.so')
    for p in "${libs[@]}"; do
        case $p in MISSING*) echo "gpu_pack: ${p#MISSING } not found by ldd" >&2; exit 1 ;; esac
    done
    mkdir -p "$dest/lib" && cp -L "${libs[@]}" "$dest/lib/" || exit 1
    tar cJf "$dest/libs.tar.xz" -C "$dest" lib || exit 1
    rm -rf "${dest:?}/lib"
    local run; run=$(mktemp -d /tmp/gpu_pack.XXXXXX)
    if ! "$build/trainer" --config configs/transformer.ini --set train.max_steps=1 \
        --set train.save_dir="$run/run" --set data.cache_dir="$run/cache" > "$run/log" 2>&1 ||
        ! cp "$run/run/spm.model" "$dest/"; then
        cat "$run/log" >&2; rm -rf "$run"
        echo "gpu_pack: the SentencePiece run failed" >&2; exit 1
    fi
    rm -rf "$run"
    echo "gpu_pack: $dest holds $(du -sh "$dest" | cut -f1): ${#libs[@]} libraries"
    printf '  %s\n' "${libs[@]##*/}"
}

run() {
    local bundle=$1 out=$2 cu dn
    mkdir -p /tmp/gpu_pack_lib && tar xJf "$bundle/libs.tar.xz" -C /tmp/gpu_pack_lib || exit 1
    cu=$(dirname "$(find /usr/local /usr/lib /opt -name 'libcublas.so.13' 2>/dev/null | head -1)")
    dn=$(dirname "$(find /usr/local /usr/lib /opt -name 'libcudnn.so.9' 2>/dev/null | head -1)")
    echo "gpu_pack: cuBLAS from $cu, cuDNN from $dn"
    export LD_LIBRARY_PATH=/tmp/gpu_pack_lib/lib:$cu:$dn:${LD_LIBRARY_PATH:-}
    [ -d "$bundle/base" ] && export GPU_CHECK_BASELINE=${GPU_CHECK_BASELINE:-$bundle/base}
    bash scripts/gpu_check.sh "$bundle/bin" "$out" "$bundle/spm.model"
}

study() {
    local bundle=$1 plan=$2 out=$3 cu dn archive marker new=()
    local minutes=${GPU_STUDY_MINUTES:-8} jobs=${GPU_STUDY_JOBS:-4} dev=${GPU_STUDY_DEVICE:-cuda}
    [ -f "$plan" ] || { echo "gpu_pack: no study plan $plan" >&2; exit 1; }
    archive=$(dirname "$plan")/archive
    mkdir -p "$out" "$archive" && marker=$(mktemp /tmp/gpu_study.XXXXXX) || exit 1
    mkdir -p /tmp/gpu_pack_lib && tar xJf "$bundle/libs.tar.xz" -C /tmp/gpu_pack_lib || exit 1
    cu=$(dirname "$(find /usr/local /usr/lib /opt -name 'libcublas.so.13' 2>/dev/null | head -1)")
    dn=$(dirname "$(find /usr/local /usr/lib /opt -name 'libcudnn.so.9' 2>/dev/null | head -1)")
    echo "gpu_pack: cuBLAS from $cu, cuDNN from $dn; $jobs runs at a time for $minutes min"
    export LD_LIBRARY_PATH=/tmp/gpu_pack_lib/lib:$cu:$dn:${LD_LIBRARY_PATH:-}
    local only=()
    [ -n "${GPU_STUDY_ONLY:-}" ] && only=(--only "$GPU_STUDY_ONLY")
    timeout -s TERM -k 60 "${minutes}m" "$bundle/bin/trainer" study "$plan" --device "$dev" \
        --jobs "$jobs" "${only[@]}" > "$out/study.log" 2>&1
    echo "gpu_pack: trainer study ended with status $?"
    while read -r f; do new+=("$(basename "$(dirname "$f")")"); done < <(
        find "$archive" -mindepth 2 -maxdepth 2 -name run.json -newer "$marker" | sort)
    rm -f "$marker"
    [ ${#new[@]} -gt 0 ] || { echo "gpu_pack: no run was archived (study.log)" >&2; exit 1; }
    tar czf "$out/archives.tar.gz" -C "$archive" "${new[@]}" || exit 1
    echo "gpu_pack: ${#new[@]} archives in $out/archives.tar.gz: ${new[*]}"
}

case $1 in
    pack) shift; pack "$@" ;;
    run) shift; run "$@" ;;
    study) shift; [ $# -ge 3 ] || usage; study "$@" ;;
    *) usage ;;
esac
