#!/usr/bin/env bash
# expect_fail.sh — runs a command that must fail in a stated way, for the tests of refusals (a
# program that must neither pass nor be skipped in some setting).
#
#   bash tests/expect_fail.sh [--status N] REGEX COMMAND [ARGS...]
#
# Passes (exit 0) when COMMAND exits with a status other than 0 and 77 (CTest's "skipped"), or
# with exactly N when --status N is given, and its output, stdout and stderr together, matches
# the extended regular expression REGEX; otherwise prints the status and the output's last lines
# and exits 1.
set -uo pipefail
want=""
if [ "${1:-}" = "--status" ]; then want=$2; shift 2; fi
[ $# -ge 2 ] || { sed -n '2,11p' "$0"; exit 2; }
regex=$1
shift
out=$("$@" 2>&1)
rc=$?
if [ -n "$want" ]; then status_ok=$([ "$rc" -eq "$want" ] && echo 1 || echo 0)
else status_ok=$([ "$rc" -ne 0 ] && [ "$rc" -ne 77 ] && echo 1 || echo 0); fi
if [ "$status_ok" = 1 ] && grep -Eq -- "$regex" <<<"$out"; then
  echo "expect_fail.sh: $1 exited $rc as expected (output matches '$regex')"
  exit 0
fi
echo "expect_fail.sh: $* exited $rc; wanted ${want:-a status other than 0 and 77} and output" \
     "matching '$regex'. Its last lines:" >&2
tail -15 <<<"$out" >&2
exit 1
