#!/bin/sh
# fatsort dies by SIGSEGV when a long name's slot set reaches into a third 512-byte cluster
# Reproducer exported by vfatfuzz; it needs none of vfatfuzz, only
# fatsort, xz and coreutils.
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
need fatsort fatsort
export LC_ALL=C.UTF-8 LANG=C.UTF-8
xz -dc "$HERE/image.img.xz" > "$OUT/image.img" || cannot "cannot unpack image.img.xz"
IMG="$OUT/image.img"
echo "work directory: $OUT"

FSCK=
command -v fsck.fat >/dev/null 2>&1 && FSCK=fsck.fat
if [ -n "$FSCK" ]; then
    echo "== fsck.fat -n of the image fatsort is given"
    fsck.fat -n "$IMG" 2>&1 | indent
fi
cp "$IMG" "$OUT/after.img" || cannot "cannot copy the image"
echo "== fatsort -f after.img"
fatsort -f "$OUT/after.img" > "$OUT/fatsort.txt" 2>&1
rc=$?
indent < "$OUT/fatsort.txt"
echo "    exit $rc"
if [ $rc -ge 128 ]; then
    bug "fatsort killed by signal $((rc - 128))"
elif [ $rc -ne 0 ]; then
    bug "fatsort ended with status $rc"
fi
if [ -n "$FSCK" ]; then
    echo "== fsck.fat -n of the image fatsort left"
    fsck.fat -n "$OUT/after.img" 2>&1 | indent
fi

if [ "$BUGS" -gt 0 ]; then
    echo "REPRODUCED: $WHY"
    exit 0
fi
echo "NOT REPRODUCED"
exit 1
