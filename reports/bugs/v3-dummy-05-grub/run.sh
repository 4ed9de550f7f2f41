#!/bin/sh
# GRUB drops the long name (and the file) when the 8.3 entry starts with 0x05
# Reproducer exported by vfatfuzz; it needs none of vfatfuzz, only
# grub-common, xz and coreutils.
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
need grub-fstest grub-common
export LC_ALL=C.UTF-8 LANG=C.UTF-8
xz -dc "$HERE/image.img.xz" > "$OUT/image.img" || cannot "cannot unpack image.img.xz"
IMG="$OUT/image.img"
echo "work directory: $OUT"

GW=0
grub_walk() {   # DIR ("" for the root) SCRATCH: listing lines of DIR and below
    grub-fstest "$IMG" -- ls -la "(loop0)$1/" > "$OUT/ls.txt" 2>> "$OUT/grub.err"
    rc=$?
    { echo "ls (loop0)$1/ -> exit $rc"; indent < "$OUT/ls.txt"; } >> "$OUT/grub.log"
    [ $rc -lt 128 ] || echo "signal $rc $1" >> "$OUT/grub.crash"
    sed -n -e 's/^DIR[[:space:]]*[0-9]\{14\} \(.*\)\/$/d \1/p' \
           -e 's/^\([0-9][0-9]*\)[[:space:]]*[0-9]\{14\} \(.*\)$/f \1 \2/p' "$OUT/ls.txt" \
        > "$2"
    while IFS= read -r l; do
        case "$l" in
            "d ."|"d ..") ;;
            d\ *) n=${l#d }; echo "d $1/$n"; GW=$((GW + 1)); grub_walk "$1/$n" "$OUT/ls.$GW" ;;
            f\ *) r=${l#f }; size=${r%% *}; n=${r#* }; echo "f $1/$n $size" ;;
        esac
    done < "$2"
}
echo "== grub-fstest ls -la, every directory"
: > "$OUT/grub.log"
grub-fstest "$IMG" -- ls -l "(loop0)" 2>&1 | indent
grub_walk "" "$OUT/ls.0" > "$OUT/seen.unsorted"
indent < "$OUT/grub.log"
[ ! -s "$OUT/grub.err" ] || { echo "stderr:"; indent < "$OUT/grub.err"; }
[ ! -f "$OUT/grub.crash" ] || bug "grub-fstest killed by a signal: $(head -n 1 "$OUT/grub.crash")"

LC_ALL=C sort "$OUT/seen.unsorted" > "$OUT/seen.txt"
echo "== expected listing vs what grub-fstest shows (- expected, + seen)"
if diff -u "$HERE/expected.txt" "$OUT/seen.txt" > "$OUT/listing.diff"; then
    echo "    (same)"
else
    tail -n +3 "$OUT/listing.diff" | indent
    bug "grub-fstest shows another tree than expected ($(grep -c '^[-+][^-+]' "$OUT/listing.diff") lines differ)"
fi

if [ "$BUGS" -gt 0 ]; then
    echo "REPRODUCED: $WHY"
    exit 0
fi
echo "NOT REPRODUCED"
exit 1
