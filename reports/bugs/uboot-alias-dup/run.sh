#!/bin/sh
# U-Boot fatwrite gives two long names the same 8.3 alias
# Reproducer exported by vfatfuzz; it needs none of vfatfuzz, only
# coreutils, libc-bin, qemu-system-x86, xz and coreutils.
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
need qemu-system-i386 qemu-system-x86
need iconv libc-bin
need mkfifo coreutils
export LC_ALL=C.UTF-8 LANG=C.UTF-8
xz -dc "$HERE/image.img.xz" > "$OUT/image.img" || cannot "cannot unpack image.img.xz"
IMG="$OUT/image.img"
echo "work directory: $OUT"

ROM=${UBOOT_ROM:-/usr/lib/u-boot/qemu-x86/u-boot.rom}     # UBOOT_ROM=PATH: another qemu-x86 u-boot.rom (make qemu-x86_defconfig)
[ -f "$ROM" ] || cannot "$ROM is missing (Debian package u-boot-qemu)"
echo "U-Boot: $(grep -a -o -m 1 'U-Boot 20[0-9.]*[^ ]*' "$ROM" | head -n 1)"
: > "$OUT/xfer.img"
dd if="$HERE/data/op1.bin" of="$OUT/xfer.img" bs=512 seek=0 conv=notrunc 2>/dev/null
dd if="$HERE/data/op2.bin" of="$OUT/xfer.img" bs=512 seek=1 conv=notrunc 2>/dev/null
truncate -s 1M "$OUT/xfer.img" 2>/dev/null || dd if=/dev/zero of="$OUT/xfer.img" bs=1 count=0 seek=1048576 2>/dev/null

if [ -n "${UBOOT_BOARD:-}" ]; then
    B=$UBOOT_BOARD
    QPID=$(cat "$B/qemu.pid" 2>/dev/null)
    { [ -p "$B/console.in" ] && [ -n "$QPID" ] && kill -0 "$QPID" 2>/dev/null; } ||
        cannot "UBOOT_BOARD=$B: no running board there"
    [ "$(wc -c < "$IMG")" = "$(wc -c < "$B/slot.img")" ] ||
        cannot "UBOOT_BOARD=$B: its disk 0 is not of the image's size ($(wc -c < "$IMG") bytes)"
    { cat "$IMG" > "$B/slot.img" && cat "$OUT/xfer.img" > "$B/xfer.img"; } ||
        cannot "cannot copy the image to $B"
    IMG=$B/slot.img
    LOG=$B/console.log
    : > "$LOG"
    exec 3> "$B/console.in"
    kill -CONT "$QPID"
    echo "board: UBOOT_BOARD=$B (QEMU $QPID, already at the prompt)"
    uboot_done() { kill -STOP "$QPID" 2>/dev/null; }
else

    LOG=$OUT/console.log
    mkfifo "$OUT/console.in" || cannot "mkfifo failed"
    qemu-system-i386 -bios "$ROM" -display none -serial stdio -monitor none -nic none -vga none \
        -m 512 -no-reboot -drive file="$IMG",format=raw,if=virtio \
        -drive file="$OUT/xfer.img",format=raw,if=virtio \
        < "$OUT/console.in" > "$LOG" 2>&1 &
    QPID=$!
    exec 3> "$OUT/console.in"
    trap 'kill $QPID 2>/dev/null' EXIT
    uboot_done() { kill $QPID 2>/dev/null; wait $QPID 2>/dev/null; trap - EXIT; }
fi

waitfor() {   # PATTERN TENTHS-OF-A-SECOND (polled every 20 ms: U-Boot answers most commands in less)
    i=0
    while ! grep -q -- "$1" "$LOG"; do
        i=$((i + 1))
        [ $i -le $(($2 * 5)) ] && kill -0 $QPID 2>/dev/null || return 1
        sleep 0.02
    done
}
if [ "$LOG" = "$OUT/console.log" ]; then      # a U-Boot of its own: stop its autoboot
    waitfor "Hit any key" 1200 || cannot "U-Boot did not start: $(tail -n 3 "$LOG")"
    printf ' ' >&3
fi
N=0
ucmd() {   # PRINTF-FORMAT: type one command line, wait for it; its output in $OUT/cmd.txt, $? in URC
    N=$((N + 1))
    printf "$1"'; echo "@@V""FZ%d" $?\n' $N >&3
    waitfor "@@VFZ$N " 1200 || cannot "U-Boot stopped answering: $(tail -n 3 "$LOG")"
    tr -d '\r' < "$LOG" | awk -v n="$N" '
        index($0, "@@VFZ" (n - 1) " ") == 1 { go = 1; next }
        index($0, "@@VFZ" n " ") == 1 { exit }
        go' | sed 1d > "$OUT/cmd.txt"
    URC=$(tr -d '\r' < "$LOG" | sed -n "s/^@@VFZ$N \([0-9]*\)\$/\1/p" | tail -n 1)
}
ucmd 'blkcache configure 0 0; virtio scan; virtio dev 1'
[ "$URC" = 0 ] || cannot "virtio scan failed: $(tail -n 3 "$OUT/cmd.txt")"
ustep() {   # N EXPECTED PRINTF-FORMAT: one operation
    n=$1; want=$2
    ucmd "$3"
    echo "op $n: $(printf "$3" | iconv -f latin1 -t utf-8)"
    indent < "$OUT/cmd.txt"
    echo "    \$? $URC (Linux is expected to give: $want)"
    if [ "$URC" != 0 ] && [ "$want" = ok ]; then
        bug "op $n failed where Linux succeeds: $(tail -n 1 "$OUT/cmd.txt" | iconv -f latin1 -t utf-8)"
    elif [ "$URC" = 0 ] && [ "$want" != ok ]; then
        bug "op $n succeeded where Linux gives $want"
    fi
}
echo "== the operations"
ustep 1 ok 'virtio read 0x2000000 0x0 0x1; fatwrite virtio 0:0 0x2000000 "/abcdefgh.c" 0x3'
ustep 2 ok 'virtio read 0x2000000 0x1 0x1; fatwrite virtio 0:0 0x2000000 "/abcdefgx.c" 0x4'

echo "== fatls of every directory"
echo / > "$OUT/dirs.todo"
: > "$OUT/seen.latin1"
while [ -s "$OUT/dirs.todo" ]; do
    d=$(head -n 1 "$OUT/dirs.todo")
    sed -i 1d "$OUT/dirs.todo"
    ucmd "fatls virtio 0:0 \"$(printf '%s' "$d" | sed 's/\\/\\\\/g; s/%/%%/g')\""
    { echo "fatls $d -> \$? $URC"; indent < "$OUT/cmd.txt"; } | iconv -f latin1 -t utf-8
    [ "$URC" = 0 ] || { bug "fatls $d failed: $(tail -n 1 "$OUT/cmd.txt" | iconv -f latin1 -t utf-8)"; continue; }
    p=${d%/}
    # "   SIZE   NAME" for a file, "            NAME/" for a directory
    while IFS= read -r l; do
        case "$l" in
            *" file(s), "*|"") ;;
            *[!/]/)
                n=$(printf '%s' "$l" | LC_ALL=C sed 's/^ *//; s/\/$//')
                case "$n" in .|..) ;; *) echo "d $p/$n" >> "$OUT/seen.latin1"; echo "$p/$n/" >> "$OUT/dirs.todo" ;; esac ;;
            *)
                s=$(printf '%s' "$l" | LC_ALL=C sed -n 's/^ *\([0-9][0-9]*\)   .*/\1/p')
                n=$(printf '%s' "$l" | LC_ALL=C sed 's/^ *[0-9][0-9]*   //')
                [ -n "$s" ] && echo "f $p/$n $s" >> "$OUT/seen.latin1" ;;
        esac
    done < "$OUT/cmd.txt"
done
iconv -f latin1 -t utf-8 < "$OUT/seen.latin1" > "$OUT/seen.unsorted"
uboot_done
cp "$IMG" "$OUT/after.img"

echo "== fsck.fat -n of the image U-Boot left (its own fatls shows the long names, not the 8.3 ones)"
command -v fsck.fat >/dev/null 2>&1 || cannot "fsck.fat not found (Debian package dosfstools): needed to see this bug"
fsck.fat -n "$OUT/after.img" > "$OUT/fsck.txt" 2>&1
rc=$?
indent < "$OUT/fsck.txt"
echo "    exit $rc"
if command -v mdir >/dev/null 2>&1; then
    echo "== the 8.3 names beside the long ones (mdir, if mtools is there)"
    MTOOLS_SKIP_CHECK=1 mdir -i "$OUT/after.img" ::/ 2>&1 | indent
fi
if grep -q "Duplicate directory entry" "$OUT/fsck.txt"; then
    bug "fsck.fat -n: $(grep -A 1 -m 1 'Duplicate directory entry' "$OUT/fsck.txt" | tr -s ' \n' ' ')"
elif [ "$rc" != 0 ] && [ "0" = 1 ]; then
    bug "fsck.fat -n complains (exit $rc): $(sed -n 2p "$OUT/fsck.txt")"
fi

LC_ALL=C sort "$OUT/seen.unsorted" > "$OUT/seen.txt"
echo "== expected listing vs what U-Boot fatls shows (- expected, + seen)"
if diff -u "$HERE/expected.txt" "$OUT/seen.txt" > "$OUT/listing.diff"; then
    echo "    (same)"
else
    tail -n +3 "$OUT/listing.diff" | indent
    bug "U-Boot fatls shows another tree than expected ($(grep -c '^[-+][^-+]' "$OUT/listing.diff") lines differ)"
fi

if [ "$BUGS" -gt 0 ]; then
    echo "REPRODUCED: $WHY"
    exit 0
fi
echo "NOT REPRODUCED"
exit 1
