#!/bin/sh
# Linux cannot open the entries mtools stored with trailing dots
# Reproducer exported by vfatfuzz; it needs none of vfatfuzz, only
# coreutils, findutils, mount, xz and coreutils.
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
need mount mount
need umount mount
need find findutils
need sha256sum coreutils
need dd coreutils
export LC_ALL=C.UTF-8 LANG=C.UTF-8
xz -dc "$HERE/image.img.xz" > "$OUT/image.img" || cannot "cannot unpack image.img.xz"
IMG="$OUT/image.img"
echo "work directory: $OUT"

[ "$(id -u)" = 0 ] || cannot "a loop mount needs root"
echo "kernel: $(uname -r)"
M="$OUT/mnt"
mkdir -p "$M"
mount -t vfat -o loop,codepage=437,iocharset=ascii,utf8,shortname=mixed "$IMG" "$M" 2> "$OUT/mount.err" \
    || cannot "mount failed: $(cat "$OUT/mount.err")"
trap 'umount "$M" 2>/dev/null' EXIT

ren() {   # rename(2) itself (mv without -T would move into a directory TO)
    if command -v perl >/dev/null 2>&1; then
        perl -e 'rename($ARGV[0], $ARGV[1]) or die "rename: $!\n"' "$1" "$2"
    else
        mv -T "$1" "$2"
    fi
}
kstep() {   # N EXPECTED COMMAND...: one command on the mounted volume
    n=$1; want=$2; shift 2
    echo "op $n: $*"
    "$@" > "$OUT/op$n.txt" 2>&1
    rc=$?
    indent < "$OUT/op$n.txt"
    echo "    exit $rc (Linux is expected to give: $want)"
    if [ $rc -ne 0 ] && [ "$want" = ok ]; then
        bug "op $n: $1 failed where Linux succeeds: $(tail -n 1 "$OUT/op$n.txt")"
    elif [ $rc -eq 0 ] && [ "$want" != ok ]; then
        bug "op $n: $1 succeeded where Linux gives $want"
    fi
}

echo "== listing of the mounted volume"
( cd "$M" && find . -mindepth 1 ) | sed 's/^\.//' | while IFS= read -r p; do
    if [ -d "$M$p" ]; then
        echo "d $p"
    elif [ -f "$M$p" ]; then
        echo "f $p $(stat -c %s "$M$p") $(sha256sum < "$M$p" | cut -d' ' -f1)"
    else
        echo "? $p (cannot stat: $(stat -c %s "$M$p" 2>&1 | tail -n 1))"
    fi
done > "$OUT/seen.unsorted"
umount "$M" && trap - EXIT
cp "$IMG" "$OUT/after.img"

LC_ALL=C sort "$OUT/seen.unsorted" > "$OUT/seen.txt"
echo "== expected listing vs what Linux vfat shows (- expected, + seen)"
if diff -u "$HERE/expected.txt" "$OUT/seen.txt" > "$OUT/listing.diff"; then
    echo "    (same)"
else
    tail -n +3 "$OUT/listing.diff" | indent
    bug "Linux vfat shows another tree than expected ($(grep -c '^[-+][^-+]' "$OUT/listing.diff") lines differ)"
fi

if [ "$BUGS" -gt 0 ]; then
    echo "REPRODUCED: $WHY"
    exit 0
fi
echo "NOT REPRODUCED"
exit 1
