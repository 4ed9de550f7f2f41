#!/bin/sh
# 7-Zip drops the long name when the 8.3 entry starts with 0x05
# Reproducer exported by vfatfuzz; it needs none of vfatfuzz, only
# p7zip-full, xz and coreutils.
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
need 7z p7zip-full
export LC_ALL=C.UTF-8 LANG=C.UTF-8
xz -dc "$HERE/image.img.xz" > "$OUT/image.img" || cannot "cannot unpack image.img.xz"
IMG="$OUT/image.img"
echo "work directory: $OUT"

echo "== 7z l -slt -tFAT"
7z l -slt -tFAT "$IMG" > "$OUT/7z.txt" 2>&1
rc=$?
indent < "$OUT/7z.txt"
echo "    exit $rc"
[ $rc -lt 128 ] || bug "7z killed by signal $((rc - 128))"
# one record per entry after the "----------" line; a blank line ends it
awk 'BEGIN { go = 0 }
     /^----------$/ { go = 1; next }
     !go { next }
     /^Path = / { p = substr($0, 8); next }
     /^Folder = / { f = substr($0, 10); next }
     /^Size = / { s = substr($0, 8); next }
     /^$/ { if (p != "") { if (f == "+") print "d /" p; else print "f /" p " " s }
            p = ""; f = ""; s = "" }
     END { if (p != "") { if (f == "+") print "d /" p; else print "f /" p " " s } }' \
    "$OUT/7z.txt" > "$OUT/seen.unsorted"

LC_ALL=C sort "$OUT/seen.unsorted" > "$OUT/seen.txt"
echo "== expected listing vs what 7z shows (- expected, + seen)"
if diff -u "$HERE/expected.txt" "$OUT/seen.txt" > "$OUT/listing.diff"; then
    echo "    (same)"
else
    tail -n +3 "$OUT/listing.diff" | indent
    bug "7z shows another tree than expected ($(grep -c '^[-+][^-+]' "$OUT/listing.diff") lines differ)"
fi

if [ "$BUGS" -gt 0 ]; then
    echo "REPRODUCED: $WHY"
    exit 0
fi
echo "NOT REPRODUCED"
exit 1
