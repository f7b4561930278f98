#!/usr/bin/env bash
# expect_fail.sh — runs a command that must fail in a stated way, for the tests of refusals (a
# program that must neither pass nor be skipped in some setting).
#
#   bash tests/expect_fail.sh REGEX COMMAND [ARGS...]
#
# Passes (exit 0) when COMMAND exits with a status other than 0 and 77 (CTest's "skipped") and its
# output, stdout and stderr together, matches the extended regular expression REGEX; otherwise
# prints the status and the output's last lines and exits 1.
set -uo pipefail
[ $# -ge 2 ] || { sed -n '2,9p' "$0"; exit 2; }
regex=$1
shift
out=$("$@" 2>&1)
rc=$?
if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ] && grep -Eq -- "$regex" <<<"$out"; then
  echo "expect_fail.sh: $1 failed as expected (exit $rc, output matches '$regex')"
  exit 0
fi
echo "expect_fail.sh: $* exited $rc; wanted a status other than 0 and 77 and output matching" \
     "'$regex'. Its last lines:" >&2
tail -15 <<<"$out" >&2
exit 1
