#!/bin/sh
# FatFs: f_rename moves a directory into its own subtree and answers FR_OK: the subtree is cut off the tree
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

cp "$HERE/fatfs/direct.js" "$OUT/fatfs/"
echo "== node fatfs/direct.js: the operations as FatFs calls, no POSIX layer"
( cd "$OUT" && node fatfs/direct.js "$IMG" "$HERE/fatfs/ops.json" > direct.txt 2> direct.err )
rc=$?
indent < "$OUT/direct.txt"
[ $rc -lt 128 ] || bug "node fatfs/direct.js killed by signal $((rc - 128))"
[ $rc = 0 ] || cannot "node fatfs/direct.js failed (exit $rc): $(tail -n 2 "$OUT/direct.err")"
cat > "$OUT/want.txt" <<'WANT'
1 ok
2 ok
3 EINVAL
WANT
while read -r n w; do
    fr=$(sed -n "s/^result $n \([^ ]*\) .*/\1/p" "$OUT/direct.txt")
    call=$(sed -n "s/^result $n [^ ]* //p" "$OUT/direct.txt")
    if [ "$fr" = FR_OK ] && [ "$w" != ok ]; then
        bug "op $n: $call answers FR_OK where Linux refuses the operation ($w)"
    elif [ "$fr" != FR_OK ] && [ "$w" = ok ]; then
        bug "op $n: $call answers $fr where Linux succeeds"
    fi
done < "$OUT/want.txt"
cp "$IMG" "$OUT/after.img"
if command -v fsck.fat >/dev/null 2>&1; then
    echo "== fsck.fat -n of the image FatFs left (for the record)"
    fsck.fat -n "$OUT/after.img" 2>&1 | indent
fi

echo "== node fatfs/server.js"
( cd "$OUT" && node fatfs/server.js < "$HERE/fatfs/requests.jsonl" > answers.jsonl 2> server.err )
rc=$?
[ $rc -lt 128 ] || bug "node fatfs/server.js killed by signal $((rc - 128))"
node "$HERE/fatfs/format.js" "$OUT/answers.jsonl" > "$OUT/answers.txt" || cannot "cannot read the answers"
grep -v '^[df] ' "$OUT/answers.txt" | indent
grep '^error ' "$OUT/answers.txt" > /dev/null && bug "FatFs failed: $(grep '^error ' "$OUT/answers.txt" | head -n 1)"
grep '^complaint ' "$OUT/answers.txt" > /dev/null && bug "FatFs cannot read what it lists: $(grep '^complaint ' "$OUT/answers.txt" | head -n 1 | cut -c11-)"
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
