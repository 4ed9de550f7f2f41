#!/bin/sh
# fsck.fat calls a Linux-written 8.3 alias with 0x7F bad and renames it
# Reproducer exported by vfatfuzz; it needs none of vfatfuzz, only
# dosfstools, xz and coreutils.
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
need fsck.fat dosfstools
export LC_ALL=C.UTF-8 LANG=C.UTF-8
xz -dc "$HERE/image.img.xz" > "$OUT/image.img" || cannot "cannot unpack image.img.xz"
IMG="$OUT/image.img"
echo "work directory: $OUT"

echo "== fsck.fat -n -l (check only)"
fsck.fat -n -l "$IMG" > "$OUT/fsck-n.txt" 2>&1
rc=$?
indent < "$OUT/fsck-n.txt"
echo "    exit $rc"
[ $rc -lt 128 ] || bug "fsck.fat -n killed by signal $((rc - 128))"
if [ true = true ] && [ $rc -ne 0 ]; then
    bug "fsck.fat -n finds problems on an image Linux, mtools and the other readers read as written: $(grep -v -e '^fsck.fat ' -e '^Checking file ' -e '^Leaving filesystem' -e 'files, .* clusters$' "$OUT/fsck-n.txt" | head -n 2 | tr '\n' ' ')"
fi
cp "$IMG" "$OUT/repaired.img"
echo "== fsck.fat -a -w -l (automatic repair) on a copy"
fsck.fat -a -w -l "$OUT/repaired.img" > "$OUT/fsck-a.txt" 2>&1
rc=$?
indent < "$OUT/fsck-a.txt"
echo "    exit $rc"
[ $rc -lt 128 ] || bug "fsck.fat -a killed by signal $((rc - 128))"
echo "== fsck.fat -n -l on the repaired copy"
fsck.fat -n -l "$OUT/repaired.img" > "$OUT/fsck-after.txt" 2>&1
indent < "$OUT/fsck-after.txt"
# what is left: every listed path but the root, the volume label and the
# chains the repair recovered into FSCKnnnn.REC files
sed -n 's/^Checking file //p' "$OUT/fsck-after.txt" | sed 's/ ([^()]*)$//' \
    | grep -v -x -e / -e '/VFATFUZZ' | grep -v '^/FSCK[0-9]*\.REC$' \
    | LC_ALL=C sort > "$OUT/seen.txt"
left=$(wc -l < "$OUT/seen.txt" | tr -d ' ')
echo "== files and directories: 1 in the image, $left after the repair"
if [ "$left" -lt 1 ]; then
    bug "fsck.fat -a destroyed $((1 - left)) of the 1 files and directories (see seen.txt: what is left)"
fi

if [ "$BUGS" -gt 0 ]; then
    echo "REPRODUCED: $WHY"
    exit 0
fi
echo "NOT REPRODUCED"
exit 1
