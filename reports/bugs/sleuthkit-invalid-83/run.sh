#!/bin/sh
# fls gives a long name to the wrong 8.3 entry (no LFN checksum check)
# Reproducer exported by vfatfuzz; it needs none of vfatfuzz, only
# sleuthkit, xz and coreutils.
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
need fls sleuthkit
export LC_ALL=C.UTF-8 LANG=C.UTF-8
xz -dc "$HERE/image.img.xz" > "$OUT/image.img" || cannot "cannot unpack image.img.xz"
IMG="$OUT/image.img"
echo "work directory: $OUT"

echo "== fls -r -p -l"
fls -r -p -l "$IMG" > "$OUT/fls.txt" 2> "$OUT/fls.err"
rc=$?
cut -f 1,2,6 "$OUT/fls.txt" | indent
indent < "$OUT/fls.err"
echo "    exit $rc"
[ $rc -lt 128 ] || bug "fls killed by signal $((rc - 128))"
awk -F '\t' '
    $1 ~ /\*/ || $1 ~ /^[vV]\// { next }
    $2 ~ /\(Volume Label Entry\)$/ { next }
    $1 ~ /^d\/d / { print "d /" $2; next }
    { print "f /" $2 " " $(NF - 2) }' "$OUT/fls.txt" > "$OUT/seen.unsorted"

LC_ALL=C sort "$OUT/seen.unsorted" > "$OUT/seen.txt"
echo "== expected listing vs what fls shows (- expected, + seen)"
if diff -u "$HERE/expected.txt" "$OUT/seen.txt" > "$OUT/listing.diff"; then
    echo "    (same)"
else
    tail -n +3 "$OUT/listing.diff" | indent
    bug "fls shows another tree than expected ($(grep -c '^[-+][^-+]' "$OUT/listing.diff") lines differ)"
fi

if [ "$BUGS" -gt 0 ]; then
    echo "REPRODUCED: $WHY"
    exit 0
fi
echo "NOT REPRODUCED"
exit 1
