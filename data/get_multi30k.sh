#!/usr/bin/env bash
# get_multi30k.sh — put Multi30k task 1 (German–English, raw, gzip) into data/multi30k/.
#
# Files: {train,val,test_2016_flickr,test_2017_flickr}.{de,en}.gz, checked with `gzip -t` and
# their line counts (train 29000, val 1014, test_2016_flickr 1000, test_2017_flickr 1000).
# Works from any current directory; the destination is <repo root>/data/multi30k.
#
# Where each file comes from, first match wins:
#   1. $MULTI30K_DIR, if set (the file must be there: an explicit choice is never overridden);
#   2. <repo root>/../shared/data/multi30k, if it holds the file;
#   3. https://raw.githubusercontent.com/multi30k/dataset/master/data/task1/raw/ (curl or wget).
# A file already present and valid is left alone; one present but invalid is replaced.
# Exit status: 0 when all 8 files are present and valid, 1 otherwise (messages on stderr).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEST="$ROOT/data/multi30k"
SHARED="$ROOT/../shared/data/multi30k"
URL_BASE="${MULTI30K_URL:-https://raw.githubusercontent.com/multi30k/dataset/master/data/task1/raw}"

declare -A LINES=([train]=29000 [val]=1014 [test_2016_flickr]=1000 [test_2017_flickr]=1000)
SPLITS=(train val test_2016_flickr test_2017_flickr)

die() { echo "get_multi30k.sh: error: $*" >&2; exit 1; }

# check FILE EXPECTED_LINES -> prints nothing and returns 0 if valid, else prints why, returns 1.
check() {
    local f="$1" want="$2" got
    if [[ ! -s "$f" ]]; then echo "missing or empty"; return 1; fi
    if ! gzip -t "$f" 2>/dev/null; then echo "not a valid gzip file (gzip -t failed)"; return 1; fi
    got="$(gzip -dc "$f" | wc -l | tr -d ' ')"
    if [[ "$got" != "$want" ]]; then
        echo "wrong line count: expected $want lines, found $got"; return 1
    fi
    return 0
}

fetch_url() {
    local url="$1" out="$2"
    if command -v curl >/dev/null 2>&1; then
        curl -fsSL --retry 3 --connect-timeout 20 -o "$out" "$url"
    elif command -v wget >/dev/null 2>&1; then
        wget -q --tries=3 --timeout=20 -O "$out" "$url"
    else
        die "neither curl nor wget is installed; install one, or set MULTI30K_DIR to a folder" \
            "holding the files"
    fi
}

mkdir -p "$DEST"
for split in "${SPLITS[@]}"; do
    want="${LINES[$split]}"
    for lang in de en; do
        name="$split.$lang.gz"
        dst="$DEST/$name"
        if [[ -e "$dst" ]]; then
            if why="$(check "$dst" "$want")"; then
                echo "$name: present and valid ($want lines), skipped"
                continue
            fi
            echo "$name: present but $why; fetching it again"
        fi

        tmp="$dst.tmp.$$"
        trap 'rm -f "$tmp"' EXIT
        if [[ -n "${MULTI30K_DIR:-}" ]]; then
            [[ -f "$MULTI30K_DIR/$name" ]] || die "$name not found in MULTI30K_DIR=$MULTI30K_DIR"
            src="$MULTI30K_DIR/$name"
            how="copied"
            cp "$src" "$tmp"
        elif [[ -f "$SHARED/$name" ]]; then
            src="$(cd "$SHARED" && pwd)/$name"
            how="copied"
            cp "$src" "$tmp"
        else
            src="$URL_BASE/$name"
            how="downloaded"
            fetch_url "$src" "$tmp" || die "download of $src failed; check the network, or set" \
                "MULTI30K_DIR to a folder holding the files"
        fi
        if ! why="$(check "$tmp" "$want")"; then
            rm -f "$tmp"
            die "$name (from $src): $why"
        fi
        mv -f "$tmp" "$dst"
        trap - EXIT
        echo "$name: $how from $src ($want lines)"
    done
done
echo "Multi30k ready in $DEST"
