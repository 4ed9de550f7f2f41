"""U-Boot hostile findings replayed as the oracle sent them: the recorded command sequence in one QEMU run.

Part of the uboot oracle's reproducer template (export.py's hostile_body).
Some U-Boot findings show only after the commands before the one that hung:
a writer's fatwrite/fatmkdir/fatrm and its lookups, or a reader's fatls and
fatload of the files before it (the board's state after them matters; the
hung command alone returns). Their run.sh replays the whole sequence.

record(info, img) runs the oracle once more on a fresh board (the reader on
the volume, or the writer with the finding's ops.txt) with the board's
recording on (Board.record): every round trip's `env import -t` text on the
transfer disk (the commands as the variable s, and the names they use) and
every contents put there, in order. The sequence ends with the round trip
that hung. replay_body(info, record, data) turns it into run.sh: boot U-Boot
as the board does (the same ROM, memory, disks and setup line), then for each
step copy its text (data/uboot-K.env) or contents (data/uboot-K.bin) to the
transfer disk and type `run g` (or the long form for a text over 8 blocks,
as the board does); U-Boot not back at its prompt within HANG_S seconds is a
hang. An out-of-bounds finding runs QEMU with its block-layer trace (the
events vfz.iobounds reads) and lists the image's accesses past the declared
end (from the boot sector, as Linux computes it) after the sequence.

    record(info, img, timeout=None) -> (steps, error)
    replay_body(info, steps, data) -> (sh text, needs)
"""
import os
import re
import shutil
import tempfile

from vfz.oracles.repro import q
from vfz.oracles.uboot.board import ENV_ADDR, ENV_BLOCKS, MEM_MB, XFER_SIZE

NEEDS = [("qemu-system-i386", "qemu-system-x86"), ("mkfifo", "coreutils"), ("dd", "coreutils"),
         ("truncate", "coreutils")]
STEPS_OPS = ("boots U-Boot (qemu-x86) in qemu-system-i386 with the image as virtio disk 0 and types, "
             "round trip by round trip, the command scripts the uboot oracle sent for `ops.txt` "
             "(recorded when exported: data/uboot-K.env, the contents in data/uboot-K.bin, through "
             "the transfer disk as the oracle does); U-Boot not back at its prompt within HANG_S "
             "seconds (default 10) is the hang")


def record(info, img, timeout=None):
    """-> (steps, error): the round trips the oracle sends for this finding on a
    fresh board, and the error the oracle answered (a trap, for a hang)."""
    from vfz import opscript
    from vfz.oracles.uboot.board import Board
    from vfz.oracles.uboot.reader import UbootReader
    from vfz.oracles.uboot.writer import UbootWriter
    board = Board()
    board.record = []
    tmp = tempfile.mkdtemp(prefix="vfz-uboot-record-")
    try:
        path = os.path.join(tmp, "hostile.img")
        with open(path, "wb") as f:
            f.write(img)
        t = timeout or info.get("timeout") or 30.0
        if info.get("ops"):
            tool = UbootWriter(board=board)
            res = tool.apply(path, opscript.parse(info["ops"]), t)
        else:
            tool = UbootReader(board=board)
            res = tool.read(path, t)
        return board.record, res.error
    finally:
        board.kill()
        shutil.rmtree(tmp, ignore_errors=True)


def _commands(text):
    """The s= value of a round trip's env text, without the marker echoes, printable."""
    for line in text.rstrip(b"\0").split(b"\n"):
        if line.startswith(b"s="):
            parts = [p for p in line[2:].split(b"; ") if not p.startswith(b'echo "@@V""FZ')]
            s = "; ".join(p.decode("latin-1") for p in parts)
            return "".join(c if c.isprintable() else "?" for c in s)[:160]
    return "?"


MARK = re.compile(rb'echo "@@V""FZ(\d+)"(?: \S+)?')


def _by_marker(text):
    """"N<TAB>command" lines of a round trip: the command each marker N ends (the text
    before N's first echo), printable; run.sh names the first one whose marker never came."""
    for line in text.rstrip(b"\0").split(b"\n"):
        if line.startswith(b"s="):
            out, pos = {}, 2
            for m in MARK.finditer(line):
                n = int(m.group(1))
                if n not in out:
                    # (the fi's closing the if before it dropped)
                    cmd = re.sub(r"^(fi; )+", "", line[pos:m.start()].decode("latin-1").strip(" ;"))
                    out[n] = "".join(c if c.isprintable() else "?" for c in cmd)[:200] or "(start)"
                pos = m.end()
            return "".join(f"{n}\t{c}\n" for n, c in out.items()).encode("utf-8")
    return b""


def replay_body(info, steps, data):
    """run.sh's body for the recorded steps (see the module doc)."""
    if not steps:
        raise ValueError("no round trip was recorded")
    bounds = info["kind"] == "out-of-bounds"
    out = [BOOT.replace("{XFER_SIZE}", str(XFER_SIZE)).replace("{MEM}", str(MEM_MB))
           .replace("{TRACE}", TRACE_ARGS if bounds else "")
           .replace("{SETUP}", f"setenv g 'virtio read {ENV_ADDR:#x} 0 8 && env import -t {ENV_ADDR:#x} "
                               "&& run s'")]
    n = sum(1 for s in steps if s[0] == "script")
    k = 0
    for i, st in enumerate(steps):
        if st[0] == "data":
            f = data.add(f"uboot-{i + 1}", st[1])
            out.append(f'put "$HERE/{f}"\n')
            continue
        _, text, last = st
        k += 1
        f = f"data/uboot-{i + 1}.env"
        data.files[f] = text
        data.files[f.replace(".env", ".cmds")] = _by_marker(text)
        blocks = (len(text) + 511) // 512
        line = "run g" if len(text) <= 8 * 512 else \
            f"virtio read {ENV_ADDR:#x} 0 {blocks:#x} && env import -t {ENV_ADDR:#x} {len(text):#x} && run s"
        # the round trips before the last one came back when recorded: a long limit (a slow
        # machine is no hang); the last one is the finding's
        limit = "${HANG_S:-10}" if k == n else "${SLOW_S:-120}"
        out.append(f'step {k} {n} "$HERE/{f}" {last} {q(line)} {q(_commands(text))} {limit}\n')
    out.append("exit_replay\n")
    if bounds:
        out.append(BOUNDS)
    needs = NEEDS + ([("awk", "mawk"), ("od", "coreutils")] if bounds else [])
    return "".join(out), needs


TRACE_ARGS = '-d trace:bdrv_open_common,trace:blk_co_preadv,trace:blk_co_pwritev -D "$OUT/qemu.log"'

BOOT = r"""
ROM=${UBOOT_ROM:-/usr/lib/u-boot/qemu-x86/u-boot.rom}     # UBOOT_ROM=PATH: another qemu-x86 u-boot.rom
[ -f "$ROM" ] || cannot "$ROM is missing (Debian package u-boot-qemu)"
echo "U-Boot: $(grep -a -o -m 1 'U-Boot 20[0-9.]*[^ ]*' "$ROM" | head -n 1)"
XFER=$OUT/xfer.img      # the transfer disk: the scripts' text at block 0, contents at block {ENV_BLOCKS}
: > "$XFER"
truncate -s {XFER_SIZE} "$XFER" || cannot "cannot make the transfer disk"
LOG=$OUT/console.log
mkfifo "$OUT/console.in" || cannot "mkfifo failed"
qemu-system-i386 -bios "$ROM" -display none -serial stdio -monitor none -nic none -vga none \
    -m {MEM} -no-reboot -drive file="$IMG",format=raw,if=virtio \
    -drive file="$XFER",format=raw,if=virtio {TRACE} \
    < "$OUT/console.in" > "$LOG" 2>&1 &
QPID=$!
exec 3> "$OUT/console.in"
trap 'kill $QPID 2>/dev/null' EXIT
waitfor() {   # PATTERN TENTHS-OF-A-SECOND
    i=0
    while ! grep -q -- "$1" "$LOG"; do
        i=$((i + 1))
        [ $i -le $(($2 * 5)) ] && kill -0 $QPID 2>/dev/null || return 1
        sleep 0.02
    done
}
prompts() { grep -o '=> ' "$LOG" | wc -l; }
waitfor "Hit any key" 1200 || cannot "U-Boot did not start: $(tail -n 3 "$LOG")"
printf ' ' >&3
waitfor "=> " 1200 || cannot "U-Boot gave no prompt: $(tail -n 3 "$LOG")"
# the board's setup: block cache off, the disks scanned, the transfer disk current, g
printf '%s; echo "@@V""FZ0" $?\n' "blkcache configure 0 0; virtio scan; virtio dev 1; {SETUP}" >&3
waitfor "@@VFZ0 0" 1200 || cannot "setup failed: $(tail -n 3 "$LOG")"
echo "== the oracle's round trips, replayed (each: its text to the transfer disk, then run; limit ${HANG_S:-10} s)"
put() {   # FILE: contents to the transfer disk's data area (a fatwrite's bytes)
    [ -z "$STOP" ] || return 0
    dd if="$1" of="$XFER" bs=512 seek={ENV_BLOCKS} conv=notrunc 2>/dev/null || cannot "dd failed"
}
STOP=
step() {   # K N FILE LAST LINE SHOWN LIMIT: round trip K of N; done at marker LAST or a new prompt
    [ -z "$STOP" ] || return 0
    dd if="$3" of="$XFER" conv=notrunc 2>/dev/null || cannot "dd failed"
    p=$(prompts)
    printf '%s\n' "$5" >&3
    end=$(($(date +%s) + $7))
    echo "round trip $1/$2: $6"
    while ! grep -q "@@VFZ$4 " "$LOG" && [ "$(prompts)" -le "$p" ] && kill -0 $QPID 2>/dev/null \
            && [ "$(date +%s)" -le $end ]; do
        sleep 0.1
    done
    if grep -q "@@VFZ$4 " "$LOG" || [ "$(prompts)" -gt "$p" ]; then
        return 0
    fi
    tr -d '\r' < "$LOG" | tail -n 6 | LC_ALL=C tr -c '[:print:]\n' '?' | indent
    # the command that did not end: the first whose marker never came
    seen=$(tr -d '\r' < "$LOG" | sed -n 's/^@@VFZ\([0-9]*\) [0-9]*$/\1/p' | tail -n 1)
    c=$(awk -F '\t' -v n="${seen:-0}" '$1 + 0 > n + 0 { print $2; exit }' "${3%.env}.cmds")
    if ! kill -0 $QPID 2>/dev/null; then
        bug "QEMU ended during round trip $1 of $2, in: $c"
    else
        bug "U-Boot did not come back to its prompt within $7 s in round trip $1 of $2, in: $c"
    fi
    STOP=1
}
exit_replay() {
    kill $QPID 2>/dev/null
    wait $QPID 2>/dev/null
    trap - EXIT
}
""".replace("{ENV_BLOCKS}", str(ENV_BLOCKS))

BOUNDS = r"""
le() {   # OFFSET SIZE: a little-endian unsigned field of the boot sector
    od -An -tu$2 -j$1 -N$2 "$IMG" | tr -d ' '
}
TS=$(le 19 2)
[ "$TS" != 0 ] || TS=$(le 32 4)
END=$((TS * $(le 11 2)))
echo "== QEMU's block trace: the image's accesses past the declared volume ($END bytes; the first 4 KiB, where a tool learns the volume, not judged)"
awk -v img="$(basename "$IMG")" -v end="$END" '
$1 == "bdrv_open_common" { f = $5; gsub(/"/, "", f); n = split(f, p, "/"); if (p[n] == img) node[$3] = 1; next }
($1 == "blk_co_preadv" || $1 == "blk_co_pwritev") && ($5 in node) {
    off = $7 + 0; len = $9 + 0
    if (off + len > end && off >= 4096)
        printf "%s of %d bytes at offset %d (sector %d)\n", ($1 == "blk_co_preadv") ? "read" : "write", len, off, off / 512
}' "$OUT/qemu.log" > "$OUT/outside.txt"
n=$(wc -l < "$OUT/outside.txt")
head -n 8 "$OUT/outside.txt" | indent
[ "$n" -eq 0 ] || bug "U-Boot made $n access(es) of the image past the declared volume end (byte $END): $(head -n 1 "$OUT/outside.txt")"
"""
