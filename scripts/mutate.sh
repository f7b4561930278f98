#!/usr/bin/env bash
# mutate.sh — mutation testing of the CUDA kernels (under the SIMT emulation), the CPU ops and
# the handwritten backward passes: each mutant of tests/mutation/mutants.tsv is one edit of one
# line, compiled into a copy of the test program that covers its file and run against the tests
# that tests/mutation/plans.txt names for it (killed, survived, failed to build). The working tree
# and the build folders are left as they are; everything goes to build-mutate/. docs/mutation.md
# has the campaign's results and how to read them; tests/mutation/mutate.py documents the rest.
#
#   bash scripts/mutate.sh                                   every mutant (about an hour)
#   bash scripts/mutate.sh --files 'src/ops/cuda/flash.cuh'  one file's mutants
#   bash scripts/mutate.sh --ids cuda/block_reduce.12        one mutant
#   bash scripts/mutate.sh --show cuda/block_reduce.12       what a mutant changes
#   bash scripts/mutate.sh --sample                          the CI sample (tests/mutation/ci_sample.txt):
#                                                            exit 1 unless every one is killed
#   bash scripts/mutate.sh --report build-mutate/results.tsv the per-file table
#
# Needs the builds it compiles against, configured and built: build/ (cmake -S . -B build) for
# src/ops/cpu, src/attention and src/model, build-simt/ (SIMT_PHASES=plain bash scripts/simt.sh)
# for src/ops/cuda; --cpu-build DIR / --simt-build DIR name others. Python 3, no packages.
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 tests/mutation/mutate.py "$@"
