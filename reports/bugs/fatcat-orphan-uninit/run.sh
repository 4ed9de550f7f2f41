#!/bin/sh
# fatcat -o hangs in some runs on a FAT16 volume whose FAT[1] is no end-of-chain mark (uninitialised read of cluster 1)
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

echo "== the first FAT's first entries (FAT[0], FAT[1], ...), offset 512"
od -A d -t x1 -j 512 -N 8 "$IMG" | indent
if command -v fsck.fat >/dev/null 2>&1; then
    echo "== fsck.fat -n"
    fsck.fat -n "$IMG" 2>&1 | indent
fi
RUNS=${ORPHAN_RUNS:-200}
echo "== fatcat -o (orphan search): up to $RUNS runs, each limited to ${HANG_S:-10} s"
i=0
HUNG=0
DONE=0
while [ $i -lt "$RUNS" ]; do
    i=$((i + 1))
    { timeout -k 2 "${HANG_S:-10}" fatcat "$IMG" -o 2>&1 >"$OUT/o.txt"; echo $? > "$OUT/o.rc"; } \
        | uniq -c > "$OUT/o.err"
    rc=$(cat "$OUT/o.rc")
    if [ $DONE -eq 0 ] || [ "$rc" -ne 0 ]; then
        echo "-- run $i: exit $rc; stdout:"
        indent < "$OUT/o.txt"
        echo "   stderr (uniq -c: count, line):"
        head -n 20 "$OUT/o.err" | indent
    fi
    if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
        HUNG=$i
        break
    fi
    if [ "$rc" -ge 128 ]; then
        bug "fatcat -o killed by signal $((rc - 128)) in run $i"
        break
    fi
    [ $DONE -gt 0 ] || echo "   (later runs are shown only when they do not end or fail)"
    DONE=$((DONE + 1))
done
if [ $HUNG -gt 0 ]; then
    n=$(awk '/Trying to read outside the disk/ { s += $1 } END { print s + 0 }' "$OUT/o.err")
    bug "fatcat -o did not end within ${HANG_S:-10} s in run $HUNG of up to $RUNS ($DONE runs before it ended); it read outside the disk $n times before it was killed"
else
    echo "    all $RUNS runs of fatcat -o ended"
fi

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
