#!/bin/sh
# FatFs cannot open a long name holding DEL (FR_INVALID_NAME)
# Reproducer exported by vfatfuzz; it needs none of vfatfuzz, only
# nodejs, npm, xz and coreutils.
# Usage: sh run.sh [WORKDIR]
# Ends with one line and exit status:
#   REPRODUCED: <why>  (0)   NOT REPRODUCED  (1)   CANNOT RUN: <why>  (2)
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${1:-$(mktemp -d "${TMPDIR:-/tmp}/repro.XXXXXX")}
mkdir -p "$OUT" || exit 2
cannot() { echo "CANNOT RUN: $*"; exit 2; }
need() { command -v "$1" >/dev/null 2>&1 || cannot "$1 not found (Debian package $2)"; }
BUGS=0
WHY=""
bug() { echo "BUG: $*"; BUGS=$((BUGS + 1)); [ -n "$WHY" ] || WHY="$*"; }
indent() { sed 's/^/    /'; }
need xz xz-utils
need node nodejs
need npm npm
export LC_ALL=C.UTF-8 LANG=C.UTF-8
xz -dc "$HERE/image.img.xz" > "$OUT/image.img" || cannot "cannot unpack image.img.xz"
IMG="$OUT/image.img"
echo "work directory: $OUT"

mkdir -p "$OUT/fatfs"
cp "$HERE/fatfs/server.js" "$HERE/fatfs/package.json" "$HERE/fatfs/package-lock.json" "$OUT/fatfs/"
if [ -n "${VFZ_JS_FATFS:-}" ] && [ -d "$VFZ_JS_FATFS/js-fatfs" ]; then
    ln -s "$VFZ_JS_FATFS" "$OUT/fatfs/node_modules"
else
    echo "== npm ci (js-fatfs 0.2.1)"
    ( cd "$OUT/fatfs" && npm ci --no-audit --no-fund ) > "$OUT/npm.log" 2>&1 \
        || cannot "npm ci failed: $(tail -n 2 "$OUT/npm.log")"
fi

echo "== node fatfs/server.js"
( cd "$OUT" && node fatfs/server.js < "$HERE/fatfs/requests.jsonl" > answers.jsonl 2> server.err )
rc=$?
[ $rc -lt 128 ] || bug "node fatfs/server.js killed by signal $((rc - 128))"
node "$HERE/fatfs/format.js" "$OUT/answers.jsonl" > "$OUT/answers.txt" || cannot "cannot read the answers"
grep -v '^[df] ' "$OUT/answers.txt" | indent
grep '^error ' "$OUT/answers.txt" > /dev/null && bug "FatFs failed: $(grep '^error ' "$OUT/answers.txt" | head -n 1)"
grep '^complaint ' "$OUT/answers.txt" > /dev/null && bug "FatFs cannot read what it lists: $(grep '^complaint ' "$OUT/answers.txt" | head -n 1 | cut -c11-)"

cat > "$OUT/want.txt" <<'WANT'
WANT
while read -r n w; do
    got=$(sed -n "s/^result $n \([^ ]*\) .*/\1/p" "$OUT/answers.txt")
    if [ "$got" != "$w" ]; then
        bug "op $n: FatFs gives $got where Linux gives $w"
    fi
done < "$OUT/want.txt"
grep '^[df] ' "$OUT/answers.txt" > "$OUT/seen.unsorted"

LC_ALL=C sort "$OUT/seen.unsorted" > "$OUT/seen.txt"
echo "== expected listing vs what FatFs shows (- expected, + seen)"
if diff -u "$HERE/expected.txt" "$OUT/seen.txt" > "$OUT/listing.diff"; then
    echo "    (same)"
else
    tail -n +3 "$OUT/listing.diff" | indent
    bug "FatFs shows another tree than expected ($(grep -c '^[-+][^-+]' "$OUT/listing.diff") lines differ)"
fi

if [ "$BUGS" -gt 0 ]; then
    echo "REPRODUCED: $WHY"
    exit 0
fi
echo "NOT REPRODUCED"
exit 1
