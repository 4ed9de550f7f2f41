"""Reproducer scripts for U-Boot's FAT code (vfz.export): U-Boot's own
command list, typed at its prompt. The script boots Debian's qemu-x86
U-Boot (u-boot-qemu: /usr/lib/u-boot/qemu-x86/u-boot.rom) in
qemu-system-i386 with the image as virtio disk 0 and a transfer disk as
virtio disk 1 (the bytes each create/write puts down, 512-byte aligned),
talks to its serial console through a FIFO, and runs one command line at
a time, each followed by `echo "@@V""FZ<n>" $?` so the script knows when
it is done and how it ended:

    virtio read ADDR BLOCK COUNT          (transfer disk: a write's bytes)
    fatwrite virtio 0:0 ADDR "PATH" SIZE [OFFSET]
    fatmkdir virtio 0:0 "PATH"    fatrm virtio 0:0 "PATH"
    fatls virtio 0:0 "DIR"                (every directory, for the listing)

U-Boot's command line holds bytes and its FAT writer makes one UTF-16
unit of each, so names are typed as Latin-1 bytes; a name with a
character beyond U+00FF, a control character or one of " $ \\ ` cannot
be typed (the oracle passes such names through `env import`): the
exporter refuses them. U-Boot 2023.01 has no FAT rename. Listing lines
carry names and sizes (no hash); fatls shows names as Latin-1 bytes,
turned into UTF-8 with iconv.
"""
from vfz.export import ExportError, op_data

PACKAGES = ["u-boot-qemu", "qemu-system-x86"]
NEEDS = [("qemu-system-i386", "qemu-system-x86"), ("iconv", "libc-bin"), ("mkfifo", "coreutils")]
SIDES = ("reader", "writer")
SHA = False
LISTING = True
TOOL = "U-Boot fatls"
STEPS = ("boots U-Boot (qemu-x86, Debian u-boot-qemu) in qemu-system-i386 with the image as "
         "virtio disk 0 and, for a writer bug, types the operations at its prompt (fatmkdir, "
         "fatwrite from the transfer disk, fatrm), checking each command's $?; then lists every "
         "directory with `fatls`")
EXPECTED = ("the tree a correct implementation holds: `d PATH` for a directory, `f PATH SIZE` for "
            "a file.")
ROM = "/usr/lib/u-boot/qemu-x86/u-boot.rom"
ADDR = 0x02000000
BAD = set('"$\\`')


def shown(case, path):
    return path


def typed(path):
    """path as printf format text of its Latin-1 bytes (octal escapes)."""
    out = []
    for c in path:
        o = ord(c)
        if o > 0xFF or o < 0x20 or o == 0x7F or c in BAD:
            raise ExportError(f"{path!r}: U-Boot's prompt cannot take {c!r} (the uboot oracle passes "
                              "such names through env import; no reproducer)")
        if c == "%":
            out.append("%%")
        elif c == "'":
            out.append("'\\''")
        elif o >= 0x80:
            out.append("\\%03o" % o)
        else:
            out.append(c)
    return "".join(out)


CONSOLE = r"""
ROM=""" + ROM + r"""
[ -f "$ROM" ] || cannot "$ROM is missing (Debian package u-boot-qemu)"
echo "U-Boot: $(grep -a -o -m 1 'U-Boot 20[0-9.]*[^ ]*' "$ROM" | head -n 1)"
: > "$OUT/xfer.img"
{XFER}
truncate -s 1M "$OUT/xfer.img" 2>/dev/null || dd if=/dev/zero of="$OUT/xfer.img" bs=1 count=0 seek=1048576 2>/dev/null
mkfifo "$OUT/console.in" || cannot "mkfifo failed"
qemu-system-i386 -bios "$ROM" -display none -serial stdio -monitor none -nic none -vga none \
    -m 512 -no-reboot -drive file="$IMG",format=raw,if=virtio \
    -drive file="$OUT/xfer.img",format=raw,if=virtio \
    < "$OUT/console.in" > "$OUT/console.log" 2>&1 &
QPID=$!
exec 3> "$OUT/console.in"
trap 'kill $QPID 2>/dev/null' EXIT
waitfor() {   # PATTERN TENTHS-OF-A-SECOND
    i=0
    while ! grep -q -- "$1" "$OUT/console.log"; do
        i=$((i + 1))
        [ $i -le $2 ] && kill -0 $QPID 2>/dev/null || return 1
        sleep 0.1
    done
}
waitfor "Hit any key" 1200 || cannot "U-Boot did not start: $(tail -n 3 "$OUT/console.log")"
printf ' ' >&3
N=0
ucmd() {   # PRINTF-FORMAT: type one command line, wait for it; its output in $OUT/cmd.txt, $? in URC
    N=$((N + 1))
    printf "$1"'; echo "@@V""FZ%d" $?\n' $N >&3
    waitfor "@@VFZ$N " 1200 || cannot "U-Boot stopped answering: $(tail -n 3 "$OUT/console.log")"
    tr -d '\r' < "$OUT/console.log" | awk -v n="$N" '
        index($0, "@@VFZ" (n - 1) " ") == 1 { go = 1; next }
        index($0, "@@VFZ" n " ") == 1 { exit }
        go' | sed 1d > "$OUT/cmd.txt"
    URC=$(tr -d '\r' < "$OUT/console.log" | sed -n "s/^@@VFZ$N \([0-9]*\)\$/\1/p" | tail -n 1)
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
"""

LIST = r"""
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
kill $QPID 2>/dev/null
wait $QPID 2>/dev/null
trap - EXIT
cp "$IMG" "$OUT/after.img"
"""


# extra {"check": "fsck"}: after U-Boot ran, fsck.fat -n reads the image it
# left, for a bug U-Boot's own listing cannot show (two equal 8.3 aliases:
# fatls lists the long names); its "Duplicate directory entry" (or any
# complaint, with "complaints": true) is the symptom, and the 8.3 names of
# the root are printed from the image's bytes
FSCK = r"""
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
elif [ "$rc" != 0 ] && [ "{ANY}" = 1 ]; then
    bug "fsck.fat -n complains (exit $rc): $(sed -n 2p "$OUT/fsck.txt")"
fi
"""


def body(case, data):
    xfer, ops = [], []
    block = 0
    if case.side == "writer":
        ops.append('echo "== the operations"\n')
        for i, op in enumerate(case.ops):
            n = i + 1
            want = case.results[i] if case.results and i < len(case.results) else "ok"
            k = op.kind
            p = typed(op.path)
            if k == "rename":
                ops.append(f"echo 'op {n}: rename: U-Boot 2023.01 has no FAT rename; not run'\n")
                continue
            if k == "mkdir":
                cmd = f'fatmkdir virtio 0:0 "{p}"'
            elif k in ("unlink", "rmdir"):
                cmd = f'fatrm virtio 0:0 "{p}"'
            else:
                size = op.args[1] if k == "create" else op.args[2]
                f = op_data(data, i, op)
                nblk = max(1, (size + 511) // 512)
                xfer.append(f'dd if="$HERE/{f}" of="$OUT/xfer.img" bs=512 seek={block} conv=notrunc '
                            '2>/dev/null')
                read = f"virtio read {ADDR:#x} {block:#x} {nblk:#x}; "
                block += nblk
                if k == "create":
                    cmd = f'{read}fatwrite virtio 0:0 {ADDR:#x} "{p}" {size:#x}'
                else:
                    cmd = f'{read}fatwrite virtio 0:0 {ADDR:#x} "{p}" {size:#x} {op.args[1]:#x}'
            ops.append(f"ustep {n} {want} '{cmd}'\n")
    if block * 512 > (1 << 20):
        raise ExportError("the writes' bytes exceed the 1 MiB transfer disk")
    tail = ""
    if (case.extra or {}).get("check") == "fsck":
        tail = FSCK.replace("{ANY}", "1" if case.extra.get("complaints") else "0")
    return CONSOLE.replace("{XFER}", "\n".join(xfer)) + "".join(ops) + LIST + tail
