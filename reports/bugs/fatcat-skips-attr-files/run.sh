#!/bin/sh
# fatcat does not list a file whose attributes are read-only, hidden or system without archive
# Reproducer exported by vfatfuzz; it needs none of vfatfuzz, only
# coreutils, fatcat, findutils, libc-bin, xz and coreutils.
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
need fatcat fatcat
need iconv libc-bin
need sha256sum coreutils
need find findutils
export LC_ALL=C.UTF-8 LANG=C.UTF-8
xz -dc "$HERE/image.img.xz" > "$OUT/image.img" || cannot "cannot unpack image.img.xz"
IMG="$OUT/image.img"
echo "work directory: $OUT"

echo "== fatcat -l /"
fatcat "$IMG" -l / > "$OUT/l.txt" 2>&1
rc=$?
indent < "$OUT/l.txt" | iconv -f latin1 -t utf-8
echo "    exit $rc"
[ $rc -lt 128 ] || bug "fatcat -l / killed by signal $((rc - 128))"
echo "== fatcat -x"
X="$OUT/x"
rm -rf "$X"
mkdir -p "$X"
fatcat "$IMG" -x "$X" > "$OUT/x.txt" 2>&1
rc=$?
grep -a '^Extracting' "$OUT/x.txt" | sed "s|$X||" | indent | iconv -f latin1 -t utf-8
echo "    exit $rc"
[ $rc -lt 128 ] || bug "fatcat -x killed by signal $((rc - 128))"
( cd "$X" && find . -mindepth 1 ) | sed 's/^\.//' | while IFS= read -r p; do
    if [ -d "$X$p" ]; then
        echo "d $p"
    else
        echo "f $p $(stat -c %s "$X$p") $(sha256sum < "$X$p" | cut -d' ' -f1)"
    fi
done | iconv -f latin1 -t utf-8 > "$OUT/seen.unsorted"

LC_ALL=C sort "$OUT/seen.unsorted" > "$OUT/seen.txt"
echo "== expected listing vs what fatcat shows (- expected, + seen)"
if diff -u "$HERE/expected.txt" "$OUT/seen.txt" > "$OUT/listing.diff"; then
    echo "    (same)"
else
    tail -n +3 "$OUT/listing.diff" | indent
    bug "fatcat shows another tree than expected ($(grep -c '^[-+][^-+]' "$OUT/listing.diff") lines differ)"
fi

if [ "$BUGS" -gt 0 ]; then
    echo "REPRODUCED: $WHY"
    exit 0
fi
echo "NOT REPRODUCED"
exit 1
