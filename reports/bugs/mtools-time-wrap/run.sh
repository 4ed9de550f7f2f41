#!/bin/sh
# mcopy -m stores a time before 1980 or after 2107 with its year modulo 128: 1970-01-01 becomes 2098-01-01
# Reproducer exported by vfatfuzz; it needs none of vfatfuzz, only
# coreutils, mtools, xz and coreutils.
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
need mdir mtools
need mtype mtools
need mmd mtools
need mcopy mtools
need mmove mtools
need mdel mtools
need mrd mtools
need sha256sum coreutils
export LC_ALL=C.UTF-8 LANG=C.UTF-8
xz -dc "$HERE/image.img.xz" > "$OUT/image.img" || cannot "cannot unpack image.img.xz"
IMG="$OUT/image.img"
echo "work directory: $OUT"

printf '%s' 'mtools_skip_check=1
mtools_no_vfat=0
default_codepage=437
' > "$OUT/mtoolsrc"
export MTOOLSRC="$OUT/mtoolsrc" MTOOLS_SKIP_CHECK=1 TZ=UTC0
if [ -n "${MTOOLS_SAN:-}" ]; then
    [ -x "$MTOOLS_SAN" ] || cannot "MTOOLS_SAN=$MTOOLS_SAN is not an executable"
    mkdir -p "$OUT/san"
    for c in mmd mcopy mmove mdel mrd mdir mtype; do ln -sf "$MTOOLS_SAN" "$OUT/san/$c"; done
    PATH="$OUT/san:$PATH"
    export ASAN_OPTIONS=detect_leaks=0
    echo "mtools commands from the sanitizer build $MTOOLS_SAN"
fi
cp "$IMG" "$OUT/pristine.img"
step() {   # N EXPECTED COMMAND...: run one mtools command, check its exit status
    n=$1; want=$2; shift 2
    echo "op $n: $*"
    "$@" > "$OUT/op$n.txt" 2>&1
    rc=$?
    indent < "$OUT/op$n.txt"
    if grep -q 'ERROR: AddressSanitizer' "$OUT/op$n.txt"; then
        bug "op $n: $1: $(grep -m 1 -o 'AddressSanitizer: [a-z-]*' "$OUT/op$n.txt") in $(sed -n '/ERROR: AddressSanitizer/,$p' "$OUT/op$n.txt" | grep -m 1 '#0 ' | sed 's/.* in //; s/ .*\/src\/mtools\// /')"
    fi
    if [ $rc -ge 128 ]; then
        bug "op $n: $1 killed by signal $((rc - 128)) ($(tail -n 1 "$OUT/op$n.txt"))"
    elif [ $rc -ne 0 ] && [ "$want" = ok ]; then
        bug "op $n: $1 failed (exit $rc) where Linux succeeds: $(tail -n 1 "$OUT/op$n.txt")"
    else
        echo "    exit $rc"
    fi
}
mtools_listing() {   # IMAGE -> "d PATH" / "f PATH SIZE SHA256" lines
    mdir -i "$1" -/ -b -a ::/ > "$OUT/mdir.txt" 2> "$OUT/mdir.err"
    echo "mdir exit $?: $(head -c 300 "$OUT/mdir.err")" >&2
    while IFS= read -r line; do
        case "$line" in
            ::/) echo "? (an entry mdir prints with an empty name)" ;;
            ::/*/) p=${line#::}; echo "d ${p%/}" ;;
            ::/*)
                p=${line#::}
                e=$(printf '%s' "$p" | sed 's/[][*?\\]/\\&/g')
                if mtype -i "$1" "::$e" > "$OUT/file.bin" 2> "$OUT/mtype.err"; then
                    echo "f $p $(wc -c < "$OUT/file.bin" | tr -d ' ') $(sha256sum < "$OUT/file.bin" | cut -d' ' -f1)"
                else
                    echo "f $p ? (mtype failed: $(head -n 1 "$OUT/mtype.err"))"
                fi ;;
        esac
    done < "$OUT/mdir.txt"
}
echo "== the operations"
step 1 ok mcopy -i "$IMG" -D s "$HERE/data/op1.bin" '::/A'
rm -f "$OUT/w.bin"; mcopy -i "$IMG" -n '::/A' "$OUT/w.bin"
touch -d @0 "$OUT/w.bin"
step 2 ok mcopy -i "$IMG" -D o -m "$OUT/w.bin" '::/A'
cp "$IMG" "$OUT/after.img"
echo "== the modify date mdir shows for each touched file, and Linux's"
d=$(mdir -i "$IMG" '::/A' 2>&1 | grep -o '[0-9]\{4\}-[0-9][0-9]-[0-9][0-9]' | head -n 1)
echo "    /A: $d (Linux: 1980-01-01)"
[ "$d" = 1980-01-01 ] || bug '/A'" dated $d where Linux stores 1980-01-01 (touch to 0)"
echo "== listing: mdir -/ -b -a ::/ and mtype"
mtools_listing "$IMG" > "$OUT/seen.unsorted" 2> "$OUT/listing.err"
indent < "$OUT/listing.err"

LC_ALL=C sort "$OUT/seen.unsorted" > "$OUT/seen.txt"
echo "== expected listing vs what mdir/mtype shows (- expected, + seen)"
if diff -u "$HERE/expected.txt" "$OUT/seen.txt" > "$OUT/listing.diff"; then
    echo "    (same)"
else
    tail -n +3 "$OUT/listing.diff" | indent
    bug "mdir/mtype shows another tree than expected ($(grep -c '^[-+][^-+]' "$OUT/listing.diff") lines differ)"
fi

if [ "$BUGS" -gt 0 ]; then
    echo "REPRODUCED: $WHY"
    exit 0
fi
echo "NOT REPRODUCED"
exit 1
