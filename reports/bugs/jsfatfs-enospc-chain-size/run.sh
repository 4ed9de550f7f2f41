#!/bin/sh
# fatfs (npm) 0.10.8: a write that runs out of clusters answers ENOSPC but records the whole size over the short chain
# Reproducer exported by vfatfuzz; it needs none of vfatfuzz, only
# nodejs, xz and coreutils.
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
export LC_ALL=C.UTF-8 LANG=C.UTF-8
xz -dc "$HERE/image.img.xz" > "$OUT/image.img" || cannot "cannot unpack image.img.xz"
IMG="$OUT/image.img"
echo "work directory: $OUT"

mkdir -p "$OUT/npm-fatfs"
cp "$HERE/npm-fatfs/package.json" "$HERE/npm-fatfs/package-lock.json" "$HERE/npm-fatfs/repro.js" "$OUT/npm-fatfs/"
if [ -n "${VFZ_NPM_FATFS:-}" ] && [ -d "$VFZ_NPM_FATFS/fatfs" ]; then
    ln -s "$VFZ_NPM_FATFS" "$OUT/npm-fatfs/node_modules"
else
    need npm npm
    echo "== npm ci (fatfs 0.10.8)"
    ( cd "$OUT/npm-fatfs" && npm ci --no-audit --no-fund ) > "$OUT/npm.log" 2>&1 \
        || cannot "npm ci failed: $(tail -n 2 "$OUT/npm.log")"
fi
echo "fatfs $(sed -n 's/.*"version": *"\([^"]*\)".*/\1/p' "$OUT/npm-fatfs/node_modules/fatfs/package.json" | head -n 1)"

echo "== node npm-fatfs/repro.js: the operations as calls of the package, its listing, the image's FAT structures"
HANG_S=${HANG_S:-10}
export HANG_S
( cd "$OUT" && node npm-fatfs/repro.js "$IMG" "$HERE/npm-fatfs/ops.json" > repro.txt 2> repro.err )
rc=$?
grep -v '^[df] ' "$OUT/repro.txt" | indent
[ $rc -lt 128 ] || bug "node npm-fatfs/repro.js killed by signal $((rc - 128))"
[ $rc = 0 ] || cannot "node npm-fatfs/repro.js failed (exit $rc): $(tail -n 2 "$OUT/repro.err") $(grep '^error ' "$OUT/repro.txt" | head -n 1)"
cp "$IMG" "$OUT/after.img"
grep '^throw ' "$OUT/repro.txt" > "$OUT/throws.txt"
while IFS= read -r line; do
    bug "op $(echo "$line" | cut -d' ' -f2): the package threw outside its callback (the callback is never called): $(echo "$line" | cut -d' ' -f3-)"
done < "$OUT/throws.txt"
grep -q '^stuck ' "$OUT/repro.txt" && bug "after the throw the instance never answers again: $(sed -n 's/^stuck [0-9]* //p' "$OUT/repro.txt") within $(sed -n 's/^stuck \([0-9]*\) .*/\1/p' "$OUT/repro.txt") s"
grep -q '^hang ' "$OUT/repro.txt" && bug "op $(sed -n 's/^hang \([0-9]*\) .*/\1/p' "$OUT/repro.txt"): no callback within $HANG_S s"
cat > "$OUT/want.txt" <<'WANT'
1 ENOSPC
WANT
while read -r n w; do
    got=$(sed -n "s/^result $n \([^ ]*\).*/\1/p" "$OUT/repro.txt")
    [ "$got" = NOTRUN ] && continue
    call=$(sed -n "s/^result $n [^ ]* //p" "$OUT/repro.txt")
    [ "$got" = "$w" ] || bug "op $n: $call answers $got where Linux gives $w"
done < "$OUT/want.txt"
for c in size; do
    grep "^symptom $c " "$OUT/repro.txt" > "$OUT/symptom.$c"
    [ -s "$OUT/symptom.$c" ] && bug "$(head -n 1 "$OUT/symptom.$c" | cut -d' ' -f3-)"
done
grep -q '^complaint ' "$OUT/repro.txt" && bug "the package cannot read what it lists: $(grep '^complaint ' "$OUT/repro.txt" | head -n 1 | cut -c11-)"
grep '^[df] ' "$OUT/repro.txt" > "$OUT/seen.unsorted"

LC_ALL=C sort "$OUT/seen.unsorted" > "$OUT/seen.txt"
echo "== expected listing vs what fatfs (npm) shows (- expected, + seen)"
if diff -u "$HERE/expected.txt" "$OUT/seen.txt" > "$OUT/listing.diff"; then
    echo "    (same)"
else
    tail -n +3 "$OUT/listing.diff" | indent
    bug "fatfs (npm) shows another tree than expected ($(grep -c '^[-+][^-+]' "$OUT/listing.diff") lines differ)"
fi

if [ "$BUGS" -gt 0 ]; then
    echo "REPRODUCED: $WHY"
    exit 0
fi
echo "NOT REPRODUCED"
exit 1
