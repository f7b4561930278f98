#!/usr/bin/env bash
# check_deps.sh — the dependency rules of docs/design.md §1, checked on every #include "..." in src/.
#
#   tests/check_deps.sh [ROOT]        check ROOT/src (default: the repository this script is in)
#   tests/check_deps.sh --self-test   plant a forbidden and a missing include in a temporary copy
#                                     of src/ and expect both to be reported (exit 0 when they are)
#
# A file's layer is its folder under src/ (src/model/rnn.c → model); a file at the top of src/
# belongs to no layer and is reported. Each layer may include only these (its own folder too):
#   cli       → anything
#   study     → train, model, attention, ops, data, eval, core   (archives, plans, reports)
#   train     → model, attention, ops, data, eval, dist, core
#   dist      → ops, core                      (ranks sum the flat gradient buffer)
#   eval      → model, data, core              (never train: the CLI hands eval a model)
#   model     → attention, ops, core           (never data, train: a model gets a ModelSpec)
#   attention → ops, core                      (attention kinds know no model)
#   ops       → core                           (ops know no model, attention or training)
#   data      → core                           (data knows no model)
#   core      → nothing
# An include is looked up as src/PATH, then next to the including file; one that names no
# existing file is an error too. Angle-bracket includes (system headers) are not checked.
# Every offending line is listed as FILE:LINE: the include and the rule it breaks; exit 1 if any.
set -u

allowed() { # allowed LAYER → the layers it may include
    case $1 in
    cli) echo "cli study train eval model attention ops data core" ;;
    study) echo "study train model attention ops data eval core" ;;
    train) echo "train model attention ops data eval dist core" ;;
    dist) echo "dist ops core" ;;
    eval) echo "eval model data core" ;;
    model) echo "model attention ops core" ;;
    attention) echo "attention ops core" ;;
    ops) echo "ops core" ;;
    data) echo "data core" ;;
    core) echo "core" ;;
    *) echo "" ;;
    esac
}

layer_of() { # layer_of PATH-RELATIVE-TO-src
    case $1 in
    */*) echo "${1%%/*}" ;;
    *) echo top ;;
    esac
}

check() { # check ROOT → prints violations, returns 1 if any
    local root=$1 bad=0 file rel line inc target tl fl
    [ -d "$root/src" ] || { echo "check_deps: $root/src is not a folder" >&2; return 2; }
    while IFS= read -r file; do
        rel=${file#"$root/src/"}
        fl=$(layer_of "$rel")
        while IFS=: read -r line inc; do
            [ -n "$inc" ] || continue
            if [ -f "$root/src/$inc" ]; then
                target=$inc
            elif [ -f "$(dirname "$file")/$inc" ]; then
                target=$(realpath -m --relative-to="$root/src" "$(dirname "$file")/$inc")
            else
                echo "src/$rel:$line: #include \"$inc\" names no file (looked in src/ and next" \
                     "to the file); fix the path or remove the include"
                bad=1
                continue
            fi
            tl=$(layer_of "$target")
            case " $(allowed "$fl") " in
            *" $tl "*) continue ;;
            esac
            if [ "$fl" = cli ]; then continue; fi
            if [ -z "$(allowed "$fl")" ]; then
                echo "src/$rel:$line: $( [ "$fl" = top ] && echo "a file at the top of src/" ||
                    echo "the folder src/$fl") is in no layer of docs/design.md §1; move the file"
            else
                echo "src/$rel:$line: #include \"$inc\": $fl → $tl is forbidden by docs/design.md §1" \
                     "($fl may include: $(allowed "$fl" | sed 's/ /, /g'))"
            fi
            bad=1
        done < <(grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$file" |
                 sed 's/^\([0-9]*\):[^"]*"\([^"]*\)".*/\1:\2/')
    done < <(find "$root/src" -type f \( -name '*.c' -o -name '*.h' -o -name '*.cc' -o -name '*.cu' \
             -o -name '*.cuh' \) | sort)
    return $bad
}

self_test() {
    local here tmp out rc
    here=$(cd "$(dirname "$0")/.." && pwd)
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' RETURN
    cp -r "$here/src" "$tmp/src"
    if ! out=$(check "$tmp"); then
        echo "check_deps --self-test: the unchanged copy of src/ already fails:"; echo "$out"
        return 1
    fi
    printf '#include "model/model.h"\n' >> "$tmp/src/ops/ops.h"
    printf '#include "train/config.h"\n' >> "$tmp/src/eval/decode.c"
    printf '#include "data/no_such_header.h"\n' >> "$tmp/src/data/batch.c"
    out=$(check "$tmp"); rc=$?
    echo "$out"
    local ok=1
    [ $rc -eq 1 ] || { echo "check_deps --self-test: exit $rc, expected 1"; ok=0; }
    grep -q '^src/ops/ops.h:[0-9]*: .*ops → model is forbidden' <<<"$out" ||
        { echo "check_deps --self-test: the planted ops → model include was not reported"; ok=0; }
    grep -q '^src/eval/decode.c:[0-9]*: .*eval → train is forbidden' <<<"$out" ||
        { echo "check_deps --self-test: the planted eval → train include was not reported"; ok=0; }
    grep -q '^src/data/batch.c:[0-9]*: #include "data/no_such_header.h" names no file' <<<"$out" ||
        { echo "check_deps --self-test: the include of a missing file was not reported"; ok=0; }
    [ "$(wc -l <<<"$out")" -eq 3 ] ||
        { echo "check_deps --self-test: expected exactly 3 reports"; ok=0; }
    [ $ok -eq 1 ] && echo "check_deps --self-test: the three planted problems were reported"
    [ $ok -eq 1 ]
}

if [ "${1:-}" = --self-test ]; then
    self_test
    exit $?
fi
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
out=$(check "$root"); rc=$?
[ $rc -eq 2 ] && exit 2
if [ $rc -ne 0 ]; then
    echo "$out"
    echo "check_deps: $(grep -c . <<<"$out") include(s) break the layering of docs/design.md §1"
    exit 1
fi
echo "check_deps: every #include \"...\" in $root/src follows docs/design.md §1"
