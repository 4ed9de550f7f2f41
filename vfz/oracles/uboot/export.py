"""U-Boot's reproducer template (vfz/oracles/repro.py): U-Boot's own
command list, typed at its prompt. The script boots Debian's qemu-x86
U-Boot (u-boot-qemu: /usr/lib/u-boot/qemu-x86/u-boot.rom; UBOOT_ROM=PATH
names another, e.g. a build of U-Boot's qemu-x86_defconfig) in
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
character beyond U+00FF, a control character, one of " $ \\ ` or a
byte 0xE8-0xEB (hush answers "syntax error" to those, measured) cannot
be typed (the oracle passes such names through `env import`): the
exporter refuses them. U-Boot 2023.01 has no FAT rename. Listing lines
carry names and sizes (no hash); fatls shows names as Latin-1 bytes,
turned into UTF-8 with iconv.

Hostile findings (hostile_body) boot a U-Boot of their own (CONSOLE). A
writer's hang, a reader's hang in a command run on a name passed by env
import or after earlier fatloads, and an out-of-bounds access replay the
oracle's whole command sequence, recorded at export (export_replay.py). Else a
hang is `fatls` of each directory whose cluster chain loops, typed at the
prompt, no prompt again within HANG_S seconds (default 10) the symptom; a
canary is `fatload` of the file the finding names and `md.b` of the bytes
it read, compared with the canary. Paths are typed as hush words
(uboot_word).
"""
import re

from vfz.oracles.repro import CANARY_FN, ExportError, canary_path, fsck_check, looping_dirs, op_data, q
from vfz.oracles.uboot import export_replay

PACKAGES = ["u-boot-qemu", "qemu-system-x86"]
HOSTILE_PACKAGES = ["u-boot-qemu", "qemu-system-x86"]
HOSTILE_STEPS_OPS = export_replay.STEPS_OPS      # a writer's hostile finding replays the oracle's sequence
HOSTILE = ("hang (fatls of each looping directory; or the oracle's recorded command sequence: "
           "export_replay), canary (fatload), out-of-bounds (the recorded sequence under QEMU's block trace)")
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
        if 0xE8 <= o <= 0xEB:
            raise ExportError(f"{path!r}: U-Boot 2023.01's hush answers 'syntax error' to a command line "
                              f"holding byte {o:#04x} (measured: 0xe8-0xeb; 'è', 'é', 'ê', 'ë'); the uboot "
                              "oracle passes such names through env import; no reproducer")
        if c == "%":
            out.append("%%")
        elif c == "'":
            out.append("'\\''")
        elif o >= 0x80:
            out.append("\\%03o" % o)
        else:
            out.append(c)
    return "".join(out)


HEAD = r"""
ROM=${UBOOT_ROM:-""" + ROM + r"""}     # UBOOT_ROM=PATH: another qemu-x86 u-boot.rom (make qemu-x86_defconfig)
[ -f "$ROM" ] || cannot "$ROM is missing (Debian package u-boot-qemu)"
echo "U-Boot: $(grep -a -o -m 1 'U-Boot 20[0-9.]*[^ ]*' "$ROM" | head -n 1)"
: > "$OUT/xfer.img"
{XFER}
truncate -s 1M "$OUT/xfer.img" 2>/dev/null || dd if=/dev/zero of="$OUT/xfer.img" bs=1 count=0 seek=1048576 2>/dev/null
"""

# boots a U-Boot of its own: QEMU's console log is $LOG; uboot_done ends it
BOOT = r"""
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
"""

# UBOOT_BOARD=DIR: a U-Boot already at its prompt (vfz/oracles/uboot/export_board.py,
# which tests/test_peer_bugs.py uses to replay every U-Boot reproducer on one
# board): DIR holds qemu.pid, its console FIFO console.in (QEMU's stdin) and
# log console.log (QEMU appends to it), its disk 0 slot.img and its transfer
# disk xfer.img; the image and the transfer bytes are copied over those in
# place (the files QEMU has open; U-Boot caches nothing between commands with
# its block cache off); QEMU gets SIGCONT once the image is in place and
# SIGSTOP when U-Boot's part is done (at its prompt U-Boot keeps a host CPU
# busy under TCG), and the board is left there
ATTACH = r"""
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
""" + BOOT.replace("\n", "\n    ").rstrip(" ") + r"""fi
"""

PROMPT = r"""
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
"""

# a U-Boot of its own (the hostile reproducers, hostile_body); body() below
# adds the UBOOT_BOARD branch
CONSOLE = HEAD + BOOT + PROMPT

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
uboot_done
cp "$IMG" "$OUT/after.img"
"""


# extra {"check": "fsck"}: after U-Boot ran, fsck.fat -n reads the image it
# left (vfz.export.reproducer.fsck_check), for a bug U-Boot's own listing cannot show
# (two equal 8.3 aliases: fatls lists the long names); its "Duplicate
# directory entry" (or any complaint, with "complaints": true) is the
# symptom, and the 8.3 names of the root are printed (mdir)
FSCK_NOTE = " (its own fatls shows the long names, not the 8.3 ones)"
FSCK_SHOW = r"""if command -v mdir >/dev/null 2>&1; then
    echo "== the 8.3 names beside the long ones (mdir, if mtools is there)"
    MTOOLS_SKIP_CHECK=1 mdir -i "$OUT/after.img" ::/ 2>&1 | indent
fi
"""
FSCK_VERDICT = r"""if grep -q "Duplicate directory entry" "$OUT/fsck.txt"; then
    bug "fsck.fat -n: $(grep -A 1 -m 1 'Duplicate directory entry' "$OUT/fsck.txt" | tr -s ' \n' ' ')"
elif [ "$rc" != 0 ] && [ "{ANY}" = 1 ]; then
    bug "fsck.fat -n complains (exit $rc): $(sed -n 2p "$OUT/fsck.txt")"
fi
"""


# extra {"check": "alias-bytes"} or {"check": "dates"}: after U-Boot ran, the
# 32-byte entries of the root directory of the image it left are read with od
# (a FAT12/16 root: a bug U-Boot's own fatls cannot show, as it lists long
# names and no dates) and printed, one 8.3 entry a line, with mdir's view if
# mtools is there; then the case's symptom is judged from those bytes:
#   alias-bytes: an 8.3 name holding a byte >= 0x80 that is not an upper-case
#     OEM (cp437) byte of a character of the long names written ({ALLOWED},
#     worked out when exported; '_' and ASCII are never flagged): U-Boot put
#     the Latin-1 byte it was typed in (uboot-alias-latin1);
#   dates: a DIR_WrtDate that is no date (month 0 or over 12, day 0): the
#     write date is mandatory in fatgen103 (creation and access dates may be
#     0, and are only printed) (uboot-zero-date).
ENTRIES = r"""
echo "== the 8.3 entries of the root directory U-Boot left (od of the image; fatls shows neither 8.3 names nor dates)"
need od coreutils
u16() { od -An -tu2 -j"$1" -N2 "$OUT/after.img" | tr -d ' '; }
u8() { od -An -tu1 -j"$1" -N1 "$OUT/after.img" | tr -d ' '; }
BPS=$(u16 11); RES=$(u16 14); NFATS=$(u8 16); NROOT=$(u16 17); FATSZ=$(u16 22)
[ "${FATSZ:-0}" -gt 0 ] && [ "${NROOT:-0}" -gt 0 ] && [ "${BPS:-0}" -gt 0 ] ||
    cannot "the image is no FAT12/16 volume (BPB: bytes/sector ${BPS:-?}, root entries ${NROOT:-?}, FAT size ${FATSZ:-?})"
ROOT=$(( (RES + NFATS * FATSZ) * BPS ))
od -An -v -tx1 -w32 -j$ROOT -N$((NROOT * 32)) "$OUT/after.img" | awk -v root=$ROOT -v check={CHECK} \
    -v allowed=" {ALLOWED} " -v notes={NOTES} '
function hex(s,   i, v) {
    v = 0
    for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
    return v
}
function day(d) { return sprintf("%04d-%02d-%02d", int(d / 512) + 1980, int(d / 32) % 16, d % 32) }
BEGIN { n = split(notes, kv, "|"); for (i = 1; i <= n; i++) note[substr(kv[i], 1, 2)] = substr(kv[i], 4) }
{
    off = root + (NR - 1) * 32
    if ($1 == "00") exit
    a = hex($12)
    if ($1 == "e5" || a == 15 || int(a / 8) % 2 == 1) next      # free, LFN slot, volume label
    name = ""
    for (i = 1; i <= 11; i++) name = name (i > 1 ? " " : "") $i
    c = hex($18 $17); ac = hex($20 $19); w = hex($26 $25)
    printf "    %08x  %s  attr %02x  created %s (0x%04x)  accessed %s (0x%04x)  written %s (0x%04x)\n",
        off, name, a, day(c), c, day(ac), ac, day(w), w
    if (check == "alias-bytes")
        for (i = 1; i <= 11; i++)
            if (hex($i) >= 128 && index(allowed, " " $i " ") == 0)
                printf "BUG\t8.3 entry at 0x%08x (%s) holds byte 0x%s: %s\n", off, name, $i,
                    ($i in note) ? note[$i] : "not an upper-case OEM byte of the long name"
    if (check == "dates" && (int(w / 32) % 16 == 0 || int(w / 32) % 16 > 12 || w % 32 == 0))
        printf "BUG\t8.3 entry at 0x%08x (%s): write date 0x%04x (DIR_WrtDate: %s, month %d, day %d) is no date; fatgen103 makes it mandatory, month 1-12, day 1-31\n",
            off, name, w, day(w), int(w / 32) % 16, w % 32
}' > "$OUT/entries.txt"
grep -v '^BUG' "$OUT/entries.txt"
if command -v mdir >/dev/null 2>&1; then
    echo "== mdir of the root (mtools, if it is there: 8.3 name, size, date, long name)"
    MTOOLS_SKIP_CHECK=1 mdir -i "$OUT/after.img" ::/ 2>&1 | indent
fi
while IFS='	' read -r tag why; do
    [ "$tag" = BUG ] && bug "$why"
done < "$OUT/entries.txt"
"""


def alias_bytes(case):
    """(allowed, notes) for the alias-bytes check: the hex of the bytes an
    8.3 alias may hold for the non-ASCII characters of the names the ops
    write (cp437, the OEM code page, of each one's upper case, as Linux
    writes it; of itself when it has no single upper case), and for each
    such character's Latin-1 byte that is not allowed, what it is."""
    chars = sorted({c for op in case.ops for a in op.args if isinstance(a, str)
                    for c in a.rpartition("/")[2] if 0x80 <= ord(c) <= 0xFF})
    allowed, notes = set(), {}
    for c in chars:
        up = c.upper() if len(c.upper()) == 1 else c
        try:
            allowed.add(up.encode("cp437")[0])
            want = f"'{up}' = 0x{up.encode('cp437')[0]:02x} in cp437, as Linux writes"
        except UnicodeEncodeError:
            want = "none: cp437 has no such letter"
        notes[ord(c)] = (f"the Latin-1 byte of '{c}' as typed{', lower case' if c != up else ''} "
                         f"(cp437, the OEM code page, reads it as '{bytes([ord(c)]).decode('cp437')}'); "
                         f"the upper-case OEM byte ({want}) or '_' (U-Boot's str2fat: no byte above "
                         f"0x7f) was expected")
    for b in allowed:
        notes.pop(b, None)
    return (" ".join(f"{b:02x}" for b in sorted(allowed)),
            "|".join(f"{b:02x}={t}" for b, t in sorted(notes.items())))


def entries_check(case, check):
    if case.fat_bits == 32:
        raise ExportError(f"the {check} check reads a FAT12/16 root directory; this case is FAT32")
    allowed, notes = alias_bytes(case)
    return (ENTRIES.replace("{CHECK}", q(check)).replace("{ALLOWED}", allowed)
            .replace("{NOTES}", q(notes)))


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
        tail = fsck_check("U-Boot", note=FSCK_NOTE, show=FSCK_SHOW, verdict=FSCK_VERDICT.replace(
            "{ANY}", "1" if case.extra.get("complaints") else "0"))
    check = (case.extra or {}).get("check")
    if check in ("alias-bytes", "dates"):
        tail = entries_check(case, check)
    elif check not in (None, "fsck"):
        raise ExportError(f"unknown U-Boot check {check!r} (fsck, alias-bytes, dates)")
    head = (HEAD + ATTACH + PROMPT).replace("{XFER}", "\n".join(xfer))
    return head + "".join(ops) + LIST + tail


def uboot_word(path):
    """path as one word of U-Boot's hush, unquoted: every character but
    letters, digits and / . _ - after a backslash (a name holding a quote
    cannot be typed inside quotes)."""
    typed(path)       # refuses what U-Boot's prompt cannot take at all
    return "".join(c if c.isalnum() and ord(c) < 0x80 or c in "/._-" else "\\" + c for c in path)


def hostile_body(info, img, data, regions):
    """A hostile finding's run.sh body and needs, or None (see the docstring)."""
    if replays_sequence(info, img):
        steps, _ = export_replay.record(info, img)
        try:
            return export_replay.replay_body(info, steps, data)
        except ValueError as e:
            raise ExportError(f"U-Boot's command sequence: {e}")
    if info["kind"] == "hang":
        cmd = hung_command(info)
        if cmd and not looping_dirs(img):
            return CONSOLE.replace("{XFER}", "") + HUNG.replace("{CMD}", q(cmd)), NEEDS
        words = " ".join(q(uboot_word(d)) for d in looping_dirs(img) or ["/"])
        return CONSOLE.replace("{XFER}", "") + HANG.replace("{DIRS}", words), NEEDS
    if info["kind"] == "canary":
        path = canary_path(info)
        body = (CONSOLE.replace("{XFER}", "") + CANARY_FN.replace("{CANARY}", info["canary"])
                + CANARY.replace("{PATH}", q(uboot_word(path))))
        return body, NEEDS + [("od", "coreutils")]
    return None

def replays_sequence(info, img):
    """Does the finding need the oracle's whole command sequence (export_replay)? A
    writer's hang (the board's state after its earlier commands matters), a reader's
    hang in no FAT command on a typed path and no looping directory (a name passed by
    env import, a virtio write after the fatloads), and an out-of-bounds access (QEMU's
    trace sees it, in whichever command)."""
    if info["kind"] == "out-of-bounds":
        return True
    if info["kind"] != "hang":
        return False
    return bool(info.get("ops")) or not hung_command(info) and not looping_dirs(img)


CANARY = r"""
P={PATH}
echo "== U-Boot: fatload virtio 0:0 0x02000000 $P; md.b the bytes it read"
ucmd "fatload virtio 0:0 0x02000000 $P"
indent < "$OUT/cmd.txt"
n=$(sed -n 's/^\([0-9][0-9]*\) bytes read.*/\1/p' "$OUT/cmd.txt" | tail -n 1)
if [ "$URC" = 0 ] && [ -n "$n" ]; then
    [ "$n" -le 65536 ] || n=65536
    ucmd "md.b 0x02000000 $(printf '%x' "$n")"
    hx=$(tr -d '\r' < "$OUT/cmd.txt" | sed -n 's/^[0-9a-f]*: \(\([0-9a-f][0-9a-f] \)*\).*/\1/p' | tr -d ' \n')
    echo "    $n bytes read, $((${#hx} / 2)) dumped: $(printf '%s' "$hx" | cut -c1-64)..."
    canary_hex "$hx" && bug "U-Boot fatload read bytes from past the declared volume end (the canary) for $P"
else
    echo "    fatload: \$? $URC"
fi
kill $QPID 2>/dev/null
wait $QPID 2>/dev/null
trap - EXIT
"""

HANG = r"""
for d in {DIRS}; do
    echo "== U-Boot: fatls virtio 0:0 $d (limit ${HANG_S:-10} s)"
    N=$((N + 1))
    printf 'fatls virtio 0:0 %s; echo "@@V""FZ%d" $?\n' "$d" $N >&3
    end=$(($(date +%s) + ${HANG_S:-10}))
    while ! grep -q "@@VFZ$N " "$OUT/console.log" && kill -0 $QPID 2>/dev/null \
            && [ "$(date +%s)" -le $end ]; do
        sleep 0.2
    done
    if grep -q "@@VFZ$N " "$OUT/console.log"; then
        echo "    fatls returned"
    elif ! kill -0 $QPID 2>/dev/null; then
        cannot "QEMU ended: $(tail -n 3 "$OUT/console.log")"
    else
        tr -d '\r' < "$OUT/console.log" | tail -n 6 | indent
        bug "U-Boot fatls of $d did not return to the prompt within ${HANG_S:-10} s"
        break
    fi
done
kill $QPID 2>/dev/null
wait $QPID 2>/dev/null
trap - EXIT
"""


HUNG_RE = re.compile(r"\b((?:fat\w+|size|ls|load)) virtio 0:0 ('[^'$\\]*'|/[^\s;'\"$\\]*)")


def hung_command(info):
    """The FAT command a hang was found in (the board's error: "no prompt within the
    time limit (CMD; ...)"), when its path is literal: "size virtio 0:0 /x"; else None
    (a name passed through env import)."""
    m = HUNG_RE.search((info.get("error") or "").split("; console:")[0])
    if not m:
        return None
    path = m.group(2).strip("'")
    try:
        return f"{m.group(1)} virtio 0:0 {uboot_word(path or '/')}"
    except ExportError:
        return None


# a hang in one FAT command, found with a literal path: that command alone, bounded
HUNG = r"""
C={CMD}
echo "== U-Boot: $C (limit ${HANG_S:-10} s)"
N=$((N + 1))
printf '%s; echo "@@V""FZ%d" $?\n' "$C" $N >&3
end=$(($(date +%s) + ${HANG_S:-10}))
while ! grep -q "@@VFZ$N " "$OUT/console.log" && kill -0 $QPID 2>/dev/null \
        && [ "$(date +%s)" -le $end ]; do
    sleep 0.2
done
if grep -q "@@VFZ$N " "$OUT/console.log"; then
    echo "    returned"
elif ! kill -0 $QPID 2>/dev/null; then
    cannot "QEMU ended: $(tail -n 3 "$OUT/console.log")"
else
    tr -d '\r' < "$OUT/console.log" | tail -n 6 | indent
    bug "U-Boot $C did not return to the prompt within ${HANG_S:-10} s"
fi
kill $QPID 2>/dev/null
wait $QPID 2>/dev/null
trap - EXIT
"""
