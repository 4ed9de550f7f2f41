"""GRUB's reproducer template (vfz/oracles/repro.py), reader side:
`grub-fstest IMAGE -- ls -la (loop0)/DIR/` for every directory (lines
"SIZE|DIR  YYYYMMDDhhmmss NAME", a directory's name ending in '/'),
walked recursively by the script. Every path is given with its device:
GRUB reads a path up to its first ')' as a device name. Names and sizes
only (no hash).

Hostile findings (hostile_body): a hang is `grub-fstest IMG ls -la` of
each directory whose cluster chain loops, bounded by HANG_S seconds
(default 10) and 1 MiB of output; a canary is the file the finding names
copied out with `grub-fstest cp`, its contents compared with the canary; a
read past the declared volume is `grub-fstest cp` of the file whose first
cluster lies past the declared end (found in the minimised volume: its path
there, which may differ from the one the campaign typed) under strace, a read
that starts past the end the symptom (GRUB's own reads near the end of every
disk, its traits grub-disk-end-probe and grub-disk-cache-32k, start before it).
"""
import struct

from vfz import fatimg
from vfz.oracles.repro import CANARY_FN, CAP, canary_path, lfn_text, looping_dirs, q, strace_check

PACKAGES = ["grub-common"]
HOSTILE_PACKAGES = ["grub-common"]
HOSTILE = ("hang (ls of each looping directory), canary (cp), a read past the declared volume (cp of "
           "the file whose first cluster lies past it, under strace)")
NEEDS = [("grub-fstest", "grub-common")]
SIDES = ("reader",)
SHA = False
LISTING = True
TOOL = "grub-fstest"
STEPS = "lists every directory with `grub-fstest IMAGE -- ls -la (loop0)/DIR/`"
EXPECTED = ("the tree the image holds, as Linux, fsck.fat and mtools read it: `d PATH` for a "
            "directory, `f PATH SIZE` for a file.")


def shown(case, path):
    return path


def body(case, data):
    return r"""
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
"""


def hostile_body(info, img, data, regions):
    """A hostile finding's run.sh body and needs, or None (see the docstring)."""
    if info["kind"] == "hang":
        words = " ".join(q(d) for d in looping_dirs(img) or ["/"])
        return HANG.replace("{DIRS}", words), [("grub-fstest", "grub-common"), ("timeout", "coreutils")]
    if info["kind"] == "out-of-bounds" and " read past volume" in info["message"]:
        files = past_end_files(img)
        if files:
            end = declared_end(img)
            return (BOUNDS.replace("{PATH}", q(files[0])).replace("{END}", str(end))
                    + strace_check("read", "past volume", end, 0, "grub-fstest", start=end)), \
                [("grub-fstest", "grub-common"), ("strace", "strace"), ("timeout", "coreutils")]
    if info["kind"] == "canary":
        path = canary_path(info)
        return (CANARY_FN.replace("{CANARY}", info["canary"]) + CANARY.replace("{PATH}", q(path)),
                [("grub-fstest", "grub-common"), ("od", "coreutils")])
    return None


CANARY = r"""
P={PATH}
echo "== grub-fstest image.img -- cp '(loop0)$P' file.bin"
timeout -k 2 ${HANG_S:-10} grub-fstest "$IMG" -- cp "(loop0)$P" "$OUT/file.bin" > "$OUT/err.txt" 2>&1
rc=$?
indent < "$OUT/err.txt"
echo "    exit $rc, $(wc -c < "$OUT/file.bin" 2>/dev/null || echo 0) bytes"
[ -f "$OUT/file.bin" ] && has_canary "$OUT/file.bin" && bug "GRUB read bytes from past the declared volume end (the canary) for $P"
"""

HANG = r"""
for d in {DIRS}; do
    echo "== grub-fstest image.img -- ls -la '(loop0)$d/' (limit ${HANG_S:-10} s, 1 MiB of output)"
    { timeout -k 2 ${HANG_S:-10} grub-fstest "$IMG" -- ls -la "(loop0)$d/" 2>&1; echo $? > "$OUT/rc"; } \
        | head -c """ + str(CAP) + r""" > "$OUT/ls.txt"
    rc=$(cat "$OUT/rc")
    n=$(wc -c < "$OUT/ls.txt")
    head -c 300 "$OUT/ls.txt" | indent
    echo
    echo "    exit $rc, $n bytes of output"
    if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
        bug "grub-fstest ls of $d did not end within ${HANG_S:-10} s"
    elif [ "$n" -ge """ + str(CAP) + r""" ]; then
        bug "grub-fstest ls of $d printed more than 1 MiB (endless listing)"
    fi
done
"""


def declared_end(img):
    """The volume's declared bytes: total sectors x bytes per sector."""
    bps = struct.unpack_from("<H", img, 11)[0]
    return bps * (struct.unpack_from("<H", img, 19)[0] or struct.unpack_from("<I", img, 32)[0])


def past_end_files(img):
    """Paths of the files whose first cluster starts at or past the declared end."""
    fat = fatimg.Fat(img)
    end = declared_end(img)
    out, seen, todo = [], set(), [("", None)]
    while todo and len(seen) < 10000:
        path, cl = todo.pop(0)
        try:
            ents = fat.short_entries(cl)
        except (struct.error, IndexError, ValueError):
            continue
        for off, name11, attr, first, size, lfn in ents:
            if name11[:1] == b"." or first < 2 or attr & 0x08:
                continue
            p = f"{path}/{lfn_text(fat, lfn) if lfn else fatimg.short_text(name11)}"
            if attr & 0x10:
                if first not in seen and first < fat.clusters + 2:
                    seen.add(first)
                    todo.append((p, first))
            elif fat.cluster_off(first) >= end:
                out.append(p)
    return out


BOUNDS = r"""
P={PATH}
echo "== strace of grub-fstest image.img -- cp '(loop0)$P' file.bin (limit ${HANG_S:-10} s): its reads that start past the declared end ({END})"
timeout -k 2 ${HANG_S:-10} strace -f -y -s 0 -e trace=execve,read,pread64,write,pwrite64,lseek -e signal=none \
    -o "$OUT/strace.txt" grub-fstest "$IMG" -- cp "(loop0)$P" "$OUT/file.bin" > "$OUT/out.txt" 2>&1
echo "    exit $?, $(wc -c < "$OUT/file.bin" 2>/dev/null || echo 0) bytes"
head -n 5 "$OUT/out.txt" | cut -c1-200 | indent
"""
