#!/usr/bin/env bash
# ptxas_check.sh — the static check of the CUDA kernels (docs/gpu.md) and their resource table.
#
#   scripts/ptxas_check.sh           compile, check, write docs/cuda_kernels.md
#   scripts/ptxas_check.sh --check   the same, but fail if the committed docs/cuda_kernels.md
#                                    differs from the fresh table (CI: the table is kept current)
#   scripts/ptxas_check.sh --self-test  plants one bad kernel per failure class in a temporary
#                                    folder and requires each to fail with its message (and a
#                                    good one to pass): proof that the check can fail
# Environment: PTXAS_SRC (folder of the .cu/.cuh files, default src/ops/cuda), PTXAS_OUT (the
# table, default docs/cuda_kernels.md), NVCC.
#
# Every src/ops/cuda/*.cu is compiled with nvcc for sm_80 and sm_90, device code only, with
# -Xptxas -v,-warn-spills,-warn-lmem-usage,-Werror: a register spill or any local memory fails the
# build. From ptxas -v it reads each kernel's registers and static shared memory; from the PTX its
# threads per block (.maxntid, which only __launch_bounds__ produces); from the sources
# (src/ops/cuda/*.cu, *.cuh) each kernel's maximum dynamic shared memory, declared by a comment
#   // smem-max: <bytes>            (or /* smem-max: <bytes> */; add "optin" when the host code
#                                    raises cudaFuncAttributeMaxDynamicSharedMemorySize through a
#                                    pointer rather than naming the kernel)
# written before the kernel's body (its header comment or signature); see ops/cuda/kernel_api.h.
# A kernel without it has no dynamic shared memory; one that uses DYN_SHARED without it fails.
#
# Occupancy on an H100 (the figures are per SM): 65,536 registers allocated per warp in units of
# 256, 228 KiB of shared memory with 1 KiB reserved per block, 2,048 threads, 32 blocks. Both
# arches are rated against the H100 (the A100's limits differ slightly: 164 KiB shared memory).
#
# Fails (exit 1) when: nvcc fails (incl. spills/local memory); a kernel lacks __launch_bounds__;
# registers x threads > 65,536; static + dynamic shared memory > 227 KiB per block; more than
# 48 KiB of shared memory with dynamic memory and no cudaFuncSetAttribute(<kernel>, ...) in the
# sources (nor "optin"); DYN_SHARED without smem-max; no block fits on an SM.
# Without nvcc ($NVCC, else nvcc on PATH, else /usr/local/cuda/bin/nvcc): prints why and exits 0,
# unless PTXAS_REQUIRED=1 (then exit 1).
set -euo pipefail
cd "$(dirname "$0")/.."
mode=write
case "${1:-}" in
  "") ;;
  --check) mode=check ;;
  --self-test) mode=selftest ;;
  *) echo "usage: scripts/ptxas_check.sh [--check | --self-test]" >&2; exit 2 ;;
esac
src=${PTXAS_SRC:-src/ops/cuda}
shopt -s nullglob
dest=${PTXAS_OUT:-docs/cuda_kernels.md}

nvcc=${NVCC:-}
if [ -z "$nvcc" ]; then
  if command -v nvcc >/dev/null; then nvcc=nvcc
  elif [ -x /usr/local/cuda/bin/nvcc ]; then nvcc=/usr/local/cuda/bin/nvcc
  fi
fi
if [ -z "$nvcc" ] || ! command -v "$nvcc" >/dev/null; then
  echo "ptxas_check: nvcc not found (set NVCC=/path/to/nvcc or install the CUDA toolkit); skipped"
  [ "${PTXAS_REQUIRED:-0}" = 1 ] && exit 1
  exit 0
fi
command -v c++filt >/dev/null || { echo "ptxas_check: c++filt (binutils) is needed" >&2; exit 1; }

if [ "$mode" = selftest ]; then
  st=$(mktemp -d)
  trap 'rm -rf "$st"' EXIT
  hdr='#include "ops/cuda/kernel_api.h"'
  plant() { # name, expected message (grep -E), kernel source
    mkdir -p "$st/$1"
    printf '%s\n%s\n' "$hdr" "$3" > "$st/$1/k.cu"
    local rc=0
    PTXAS_SRC="$st/$1" PTXAS_OUT="$st/$1/out.md" NVCC="$nvcc" bash "$0" > "$st/$1/log" 2>&1 || rc=$?
    if [ "$2" = PASS ]; then
      if [ $rc -ne 0 ]; then echo "self-test: the good kernel failed:"; cat "$st/$1/log"; return 1; fi
    elif [ $rc -eq 0 ] || ! grep -Eq "$2" "$st/$1/log"; then
      echo "self-test: planted '$1' was not caught (exit $rc, want /$2/):"; cat "$st/$1/log"; return 1
    fi
    echo "self-test: $1: ok"
  }
  ok=0
  plant good PASS '__global__ void __launch_bounds__(128) k_good(float *x) { x[threadIdx.x] = 1.0f; }' || ok=1
  plant no_bounds 'has no __launch_bounds__' '__global__ void k_nb(float *x) { x[threadIdx.x] = 1.0f; }' || ok=1
  plant local_memory 'fails ptxas' '__global__ void __launch_bounds__(64) k_lm(float *x, const int *idx, int n) {
  float acc[64];
  for (int i = 0; i < 64; i++) acc[i] = 0.0f;
  for (int i = 0; i < n; i++) acc[idx[i] & 63] += x[i];
  for (int i = 0; i < 64; i++) x[threadIdx.x * 64 + i] = acc[i]; }' || ok=1
  plant dyn_no_comment 'no .// smem-max' '__global__ void __launch_bounds__(128) k_dyn(float *x) {
  DYN_SHARED(float, s); s[threadIdx.x] = x[threadIdx.x]; __syncthreads(); x[threadIdx.x] = s[127 - threadIdx.x]; }' || ok=1
  plant dyn_over_48k 'without cudaFuncSetAttribute' '// smem-max: 65536
__global__ void __launch_bounds__(128) k_big(float *x) {
  DYN_SHARED(float, s); s[threadIdx.x] = x[threadIdx.x]; __syncthreads(); x[threadIdx.x] = s[127 - threadIdx.x]; }' || ok=1
  plant over_227k '> 227 KiB' '// smem-max: 240000 optin
__global__ void __launch_bounds__(128) k_huge(float *x) {
  DYN_SHARED(float, s); s[threadIdx.x] = x[threadIdx.x]; __syncthreads(); x[threadIdx.x] = s[127 - threadIdx.x]; }' || ok=1
  [ $ok -eq 0 ] && echo "ptxas_check self-test: every planted kernel caught" || echo "ptxas_check self-test: FAILED"
  exit $ok
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
arches="80 90"
fail=0

# 1. The sources' annotations: "kernel uses_dyn smem_max optin" per kernel, and the kernels named
#    in a cudaFuncSetAttribute call.
awk '
  function flush_sig(   s, name) {
    s = sig
    gsub(/__launch_bounds__[ \t]*\([^)]*\)/, "", s)
    if (index(s, "(") == 0) return 0
    s = substr(s, 1, index(s, "(") - 1)
    gsub(/<.*$/, "", s)                       # template arguments of a specialisation
    n = split(s, w, /[^A-Za-z0-9_]+/)
    name = ""
    for (i = n; i >= 1; i--) if (w[i] != "") { name = w[i]; break }
    cur = name; insig = 0
    smem[cur] = (pending == "" ? "" : pending); optin[cur] = pending_optin
    dyn[cur] = dyn[cur] + 0; order[++nk] = cur
    pending = ""; pending_optin = 0
    return 1
  }
  /smem-max:/ {
    t = $0; sub(/.*smem-max:[ \t]*/, "", t)
    if (match(t, /^[0-9]+/)) pending = substr(t, RSTART, RLENGTH)
    else { printf "BAD %s:%d: smem-max needs a number of bytes\n", FILENAME, FNR; }
    pending_optin = (t ~ /optin/)
  }
  /__global__/ && !/^[ \t]*(\/\/|\/\*|\*)/ { insig = 1; sig = "" }
  insig { sig = sig " " $0; flush_sig() ; next }
  /DYN_SHARED[ \t]*\(/ { if (cur != "") dyn[cur] = 1 }
  END { for (i = 1; i <= nk; i++) { k = order[i]; print k, dyn[k], (smem[k] == "" ? "-" : smem[k]), optin[k] } }
' "$src"/*.cu "$src"/*.cuh /dev/null > "$tmp/annot" || true
if grep -q '^BAD' "$tmp/annot"; then grep '^BAD' "$tmp/annot" | sed 's/^BAD /ptxas_check: /' >&2; fail=1; fi
grep -v '^BAD' "$tmp/annot" > "$tmp/annot2" || true
grep -ho 'cudaFuncSetAttribute[ \t]*([ \t]*[A-Za-z_][A-Za-z0-9_]*' "$src"/*.cu "$src"/*.cuh /dev/null |
  sed 's/.*(\s*//' | sort -u > "$tmp/optin" || true

# 2. Compile every .cu for every arch: PTX (.maxntid) and cubin (ptxas -v).
: > "$tmp/rows"
for cu in "$src"/*.cu; do
  base=$(basename "$cu" .cu)
  for a in $arches; do
    if ! "$nvcc" -std=c++17 -arch=sm_$a -Isrc -ptx -o "$tmp/$base.$a.ptx" "$cu" 2> "$tmp/$base.$a.ptxerr"; then
      echo "ptxas_check: nvcc -ptx failed for $cu (sm_$a):" >&2; cat "$tmp/$base.$a.ptxerr" >&2; fail=1; continue
    fi
    if ! "$nvcc" -std=c++17 -arch=sm_$a -Isrc -cubin -o "$tmp/$base.$a.cubin" \
         -Xptxas -v,-warn-spills,-warn-lmem-usage,-Werror "$cu" > "$tmp/$base.$a.v" 2>&1; then
      echo "ptxas_check: $cu (sm_$a) fails ptxas (a spill, local memory or an error):" >&2
      grep -v 'Compile time\|bytes gmem' "$tmp/$base.$a.v" | grep -i 'error\|warn\|lmem\|spill\|local' >&2 || cat "$tmp/$base.$a.v" >&2
      fail=1; continue
    fi
    # entry -> threads per block (product of .maxntid), or 0 without __launch_bounds__
    awk '/\.entry/ { e = $0; sub(/.*\.entry[ \t]+/, "", e); sub(/\(.*/, "", e); t[e] = 0; ord[++n] = e; cur = e }
         /\.maxntid/ { s = $0; sub(/.*\.maxntid[ \t]+/, "", s); gsub(/[ \t;]/, "", s); k = split(s, d, ","); p = 1; for (i = 1; i <= k; i++) p *= d[i]; t[cur] = p }
         END { for (i = 1; i <= n; i++) print ord[i], t[ord[i]] }' "$tmp/$base.$a.ptx" > "$tmp/$base.$a.ntid"
    # entry -> registers, static smem
    awk '/Compiling entry function/ { e = $0; sub(/.*function .\x27?/, "", e); sub(/\x27.*/, "", e); gsub(/[\x27"]/, "", e); cur = e }
         /Used [0-9]+ registers/ { r = $0; sub(/.*Used /, "", r); sub(/ registers.*/, "", r);
            s = 0; if ($0 ~ /bytes smem/) { s = $0; sub(/ bytes smem.*/, "", s); sub(/.*, /, "", s) }
            print cur, r, s }' "$tmp/$base.$a.v" > "$tmp/$base.$a.res"
    while read -r mangled threads; do
      regs=0 ssmem=0 udyn=0 dmax=- oin=0
      read -r regs ssmem < <(awk -v m="$mangled" '$1 == m { print $2, $3 }' "$tmp/$base.$a.res") || true
      demangled=$(echo "$mangled" | c++filt)
      name=${demangled%%(*}; name=${name##* }; short=${name%%<*}
      read -r udyn dmax oin < <(awk -v k="$short" '$1 == k { print $2, $3, $4; exit }' "$tmp/annot2") || true
      udyn=${udyn:-0}; dmax=${dmax:--}; oin=${oin:-0}
      echo "$base.cu $name $a ${threads:-0} ${regs:-0} ${ssmem:-0} $udyn $dmax $oin" >> "$tmp/rows"
    done < "$tmp/$base.$a.ntid"
  done
done

# 3. Checks and the table.
out="$tmp/cuda_kernels.md"
{
  echo "# CUDA kernels: resources and occupancy"
  echo
  echo "Written by \`scripts/ptxas_check.sh\` (do not edit; \`--check\` in CI fails when it is stale)."
  echo "Per kernel and arch: threads per block from \`__launch_bounds__\`, registers per thread and"
  echo "static shared memory from \`ptxas -v\`, the maximum dynamic shared memory from the kernel's"
  echo "\`smem-max\` comment, and what that implies on an H100 SM (65,536 registers in units of 256"
  echo "per warp, 228 KiB shared memory with 1 KiB reserved per block, 2,048 threads, 32 blocks):"
  echo "resident blocks, occupancy (resident threads / 2,048) and the limiting resource. Every"
  echo "kernel compiles with no spills and no local memory (\`-warn-spills,-warn-lmem-usage,-Werror\`)."
  echo
  echo "| file | kernel | arch | threads | registers | static smem (B) | dynamic smem max (B) | blocks/SM | occupancy | limited by |"
  echo "|---|---|---|---:|---:|---:|---:|---:|---:|---|"
} > "$out"
sort -k1,1 -k2,2 -k3,3n "$tmp/rows" > "$tmp/rows.sorted"
while read -r file name arch threads regs ssmem udyn dmax oin; do
  where="$file: $name (sm_$arch)"
  if [ "$threads" -eq 0 ]; then
    echo "ptxas_check: $where has no __launch_bounds__ (kernel_api.h: every kernel declares it)" >&2
    fail=1; continue
  fi
  if [ "$udyn" = 1 ] && [ "$dmax" = "-" ]; then
    echo "ptxas_check: $where uses DYN_SHARED but has no '// smem-max: <bytes>' comment" >&2
    fail=1
  fi
  dyn=0; [ "$dmax" != "-" ] && dyn=$dmax
  optin=0
  if [ "$oin" = 1 ] || grep -qx "${name%%<*}" "$tmp/optin"; then optin=1; fi
  if [ $((regs * threads)) -gt 65536 ]; then
    echo "ptxas_check: $where: $regs registers x $threads threads > 65,536: the launch would fail" >&2
    fail=1
  fi
  total=$((ssmem + dyn))
  if [ "$total" -gt $((227 * 1024)) ]; then
    echo "ptxas_check: $where: $total bytes of shared memory > 227 KiB per block" >&2
    fail=1
  fi
  if [ "$dyn" -gt 0 ] && [ "$total" -gt $((48 * 1024)) ] && [ "$optin" = 0 ]; then
    echo "ptxas_check: $where: $total bytes of shared memory > 48 KiB without" \
         "cudaFuncSetAttribute(${name%%<*}, cudaFuncAttributeMaxDynamicSharedMemorySize, ...)" >&2
    fail=1
  fi
  warps=$(((threads + 31) / 32))
  rpw=$(((regs * 32 + 255) / 256 * 256))
  by_regs=32; [ "$rpw" -gt 0 ] && by_regs=$(((65536 / rpw) / warps))
  by_smem=$(((228 * 1024) / (total + 1024)))
  by_threads=$((2048 / (warps * 32)))
  blocks=32; lim="blocks"
  if [ "$by_threads" -lt "$blocks" ]; then blocks=$by_threads; lim="threads"; fi
  if [ "$by_regs" -lt "$blocks" ]; then blocks=$by_regs; lim="registers"; fi
  if [ "$by_smem" -lt "$blocks" ]; then blocks=$by_smem; lim="shared memory"; fi
  if [ "$blocks" -le 0 ]; then
    echo "ptxas_check: $where: no block fits on an SM" >&2
    fail=1
  fi
  occ=$(awk -v b="$blocks" -v w="$warps" 'BEGIN { printf "%.0f%%", 100 * b * w * 32 / 2048 }')
  echo "| $file | \`$name\` | sm_$arch | $threads | $regs | $ssmem | $dyn | $blocks | $occ | $lim |" >> "$out"
done < "$tmp/rows.sorted"
nk=$(wc -l < "$tmp/rows.sorted")
echo >> "$out"
echo "$nk kernel builds ($(echo $arches | wc -w) arches)." >> "$out"

if [ "$fail" != 0 ]; then
  echo "ptxas_check: FAILED (see above)" >&2
  exit 1
fi
if [ "$mode" = check ]; then
  if ! diff -u "$dest" "$out"; then
    echo "ptxas_check: $dest is stale: run scripts/ptxas_check.sh and commit it" >&2
    exit 1
  fi
  echo "ptxas_check: $nk kernel builds pass; $dest is current"
else
  mkdir -p "$(dirname "$dest")"
  cp "$out" "$dest"
  echo "ptxas_check: $nk kernel builds pass; wrote $dest"
fi
