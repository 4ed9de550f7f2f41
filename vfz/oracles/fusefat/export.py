"""fusefat's reproducer template (vfz/oracles/repro.py): the image is mounted with
fusefat itself (`fusefat -f -s -o rw+` for a writer bug, `-o ro` for a
reader bug; FUSE, no root needed where /dev/fuse is usable), the ops run
as mkdir / dd / rename(2) (perl) / rm / rmdir on the mount (the kernel exporter's
commands: vfz.oracles.repro.posix_ops), the tree is listed with find, stat and
sha256sum, and `fusermount -u` ends fusefat, which writes its state back
to the image then. The symptoms: a failure where Linux succeeds, a success
where Linux fails, a failure with another errno than Linux's (the command's
message holds the C library's text of the errno: 'Directory not empty' for
ENOTEMPTY), and a listing other than the expected tree.

fusefat lists the root's volume label entry as an empty file (named
exception fusefat-label-as-file): the listing drops that line and says so,
so that each reproducer shows its own bug only; a case with extra
{"label": "bug"} reports it instead.

Knobs (Case.extra):
  "check": "fsck"   fsck.fat -n reads the image fusefat left after the
                    unmount (damage the mounted listing cannot show: a file
                    whose clusters are free in the FAT); any complaint is a
                    symptom
  "check": "fat1"   the reserved FAT entry FAT[1] of every FAT copy, before
                    the mount and after the unmount: on FAT16 and FAT32 its
                    top two bits are the volume's flags (clean shutdown, no
                    hard error) and the rest an end-of-chain mark (FAT
                    specification, fatgen103); the 'no hard error' bit or the
                    EOC bits cleared by the unmount are the symptom; mdir
                    (mtools, without mtools_skip_check) is run on the image
                    fusefat left when it is installed
  "label": "bug"    the label listed as a file is the symptom
  "hang": N         each op runs under `timeout -s KILL` (HANG_S=N seconds,
                    run.sh's environment may change it): an op with no answer
                    by then is the symptom; fusefat is killed, the mount
                    detached (fusermount -u -z) and run.sh ends there, since
                    a hung fusefat -s serves no further request
  "entry_timeout": N  fusefat mounts with -o entry_timeout=N: the kernel
                    keeps fusefat's names (dentries) N seconds instead of
                    libfuse's 1 s. For a bug that needs a cached name (the
                    stale /a of fusefat-stale-self-rename-hangs): with 1 s
                    the ops, each its own few processes, must all run within
                    1 s of the first, which a loaded machine misses (the
                    rename answered ENOENT instead of hanging in 4 of 6 runs
                    at load 8-9, 3 of 6 beside a CPU hog)

Hostile findings (hostile_body): fusefat mounts the volume read-only; a
hang is `ls -la` on each directory whose cluster chain loops, a listing
that does not end within HANG_S seconds (default 10) the symptom; a canary
is `cat` of the file the finding names, its contents compared with the
canary.
"""
import errno
import os

import struct

from vfz.oracles.repro import (CANARY_FN, LIST_MOUNT, Case, canary_path, fsck_check, looping_dirs, posix_ops, q,
                               strace_check)

PACKAGES = ["fusefat", "fuse"]
HOSTILE_PACKAGES = ["fusefat", "fuse"]
HOSTILE = "hang (ls of each looping directory; a writer's: ops.txt on a rw+ mount, an op with no answer), canary (cat), damage spread (the entries it names, before and after ops.txt), a hostile write past the volume or the image (ops.txt on a rw+ mount, then the image's size and the bytes past the declared end)"
NEEDS = [("fusefat", "fusefat"), ("fusermount", "fuse"), ("find", "findutils"),
         ("sha256sum", "coreutils"), ("dd", "coreutils"), ("perl", "perl-base"), ("od", "coreutils")]
SIDES = ("reader", "writer")
SHA = True
LISTING = True
TOOL = "fusefat"
STEPS = ("mounts it with fusefat (`-o rw+` to write, `-o ro` to read) and, for a writer bug, "
         "applies the operations with mkdir, dd, rename(2) (perl), rm and rmdir, checking each exit "
         "status and errno; then lists the mounted tree with find, stat and sha256sum and unmounts "
         "with fusermount")
EXPECTED = ("the tree a correct implementation holds: `d PATH` for a directory, `f PATH SIZE "
            "SHA256` for a file.")
EMPTY_SHA = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def shown(case, path):
    return path


# the op steps: Linux's result for each op, and the errno's message
STEP = r"""
ren() {   # rename(2) itself
    perl -e 'rename($ARGV[0], $ARGV[1]) or die "rename: $!\n"' "$1" "$2"
}
kstep() {   # N EXPECTED COMMAND...: one command on the mounted volume
    n=$1; want=$2; shift 2
    echo "op $n: $*"
    "$@" > "$OUT/op$n.txt" 2>&1
    rc=$?
    indent < "$OUT/op$n.txt"
    wmsg=$(errno_text "$want")
    echo "    exit $rc (Linux is expected to give: $want${wmsg:+, \"$wmsg\"})"
    if [ $rc -ne 0 ] && [ "$want" = ok ]; then
        bug "op $n: $1 failed where Linux succeeds: $(tail -n 1 "$OUT/op$n.txt")"
    elif [ $rc -eq 0 ] && [ "$want" != ok ]; then
        bug "op $n: $1 succeeded where Linux gives $want"
    elif [ $rc -ne 0 ] && [ -n "$wmsg" ] && ! grep -q "$wmsg" "$OUT/op$n.txt"; then
        bug "op $n: $1 failed with another error than Linux's $want ($wmsg): $(tail -n 1 "$OUT/op$n.txt")"
    fi
}
"""


# extra "hang": the same step, each command bounded by HANG_S seconds
HANG_STEP = r"""
need timeout coreutils
REN='rename($ARGV[0], $ARGV[1]) or die "rename: $!\n"'
kstep() {   # N EXPECTED COMMAND...: one command on the mounted volume, at most HANG_S seconds
    n=$1; want=$2; shift 2
    echo "op $n: $*"
    c=$1
    if [ "$c" = ren ]; then   # rename(2) itself, as a program timeout can run
        shift
        set -- perl -e "$REN" "$@"
    fi
    timeout -s KILL "$HANG_S" "$@" > "$OUT/op$n.txt" 2>&1
    rc=$?
    indent < "$OUT/op$n.txt"
    if [ $rc -eq 137 ]; then
        echo "    no answer within ${HANG_S}s: killed (Linux is expected to give: $want)"
        echo "    fusefat: state $(cut -d' ' -f3 /proc/$FPID/stat 2>/dev/null), waiting in $(cat /proc/$FPID/wchan 2>/dev/null), CPU ticks (user, system) $(cut -d' ' -f14,15 /proc/$FPID/stat 2>/dev/null)"
        kill -KILL $FPID 2>/dev/null
        wait $FPID 2>/dev/null
        fusermount -u -z "$M" 2>/dev/null
        trap - EXIT
        tail -n 5 "$OUT/fusefat.log" | indent
        bug "op $n: $c hangs: fusefat gives no answer within ${HANG_S}s (Linux gives $want) and serves no request after it"
        echo "REPRODUCED: $WHY"
        exit 0
    fi
    wmsg=$(errno_text "$want")
    echo "    exit $rc (Linux is expected to give: $want${wmsg:+, \"$wmsg\"})"
    if [ $rc -ne 0 ] && [ "$want" = ok ]; then
        bug "op $n: $c failed where Linux succeeds: $(tail -n 1 "$OUT/op$n.txt")"
    elif [ $rc -eq 0 ] && [ "$want" != ok ]; then
        bug "op $n: $c succeeded where Linux gives $want"
    elif [ $rc -ne 0 ] && [ -n "$wmsg" ] && ! grep -q "$wmsg" "$OUT/op$n.txt"; then
        bug "op $n: $c failed with another error than Linux's $want ($wmsg): $(tail -n 1 "$OUT/op$n.txt")"
    fi
}
"""


def _errno_fn(case):
    """sh function errno_text NAME -> the C library's message of that errno
    (strerror, the text rmdir, mkdir, dd and perl print), for the errnos the
    case's ops expect."""
    names = sorted({r for r in case.results or [] if r != "ok" and hasattr(errno, r)})
    arms = "".join(f'    {n}) echo {q(os.strerror(getattr(errno, n)))} ;;\n' for n in names)
    return "errno_text() {\n    case $1 in\n" + arms + "    *) echo '' ;;\n    esac\n}\n"


def fat1_layout(image):
    """(fat bits, [byte offset of FAT[1] in each FAT copy]) of an image."""
    from vfz import fatimg
    with open(image, "rb") as f:
        v = fatimg.Fat(f.read(), copy=False)
    width = {12: 0, 16: 2, 32: 4}[v.bits]
    return v.bits, [v.fat_off + k * v.spf * v.bps + width for k in range(v.nfats)]


def _fat1_check(case):
    """sh text of extra check=fat1 (see the module's docstring)."""
    bits, offs = fat1_layout(case.image)
    if bits == 12:
        return 'echo "== FAT[1]: a FAT12 volume has no flag bits in FAT[1]: nothing to check"\n'
    n = bits // 8
    # hard error flag (1 = no error) and the EOC bits below the two flags
    hard, eoc = (0x4000, 0x3FFF) if bits == 16 else (0x04000000, 0x03FFFFFF)
    return (r"""
echo "== FAT[1] (the reserved entry holding the volume's flags) of each FAT copy, before and after"
fat1() {   # IMAGE OFFSET -> the FAT[1] value as a decimal number
    od -An -tu""" + str(n) + r""" -j "$2" -N """ + str(n) + r""" "$1" | tr -d ' '
}
k=1
for off in """ + " ".join(str(o) for o in offs) + r"""; do
    b=$(fat1 "$OUT/pristine.img" $off); a=$(fat1 "$OUT/after.img" $off)
    printf '    FAT %d (byte %d): 0x%0""" + str(2 * n) + r"""x before the mount, 0x%0""" + str(2 * n) + r"""x after the unmount\n' $k $off $b $a
    if [ $((b & """ + str(hard) + r""")) -ne 0 ] && [ $((a & """ + str(hard) + r""")) -eq 0 ]; then
        bug "FAT[1] of FAT $k is $(printf 0x%0""" + str(2 * n) + r"""x $a) after the unmount (was $(printf 0x%0""" + str(2 * n) + r"""x $b)): the 'no hard error' bit cleared: the volume now claims a disk I/O error"
    elif [ $((b & """ + str(eoc) + r""")) -eq """ + str(eoc) + r""" ] && [ $((a & """ + str(eoc) + r""")) -ne """ + str(eoc) + r""" ]; then
        bug "FAT[1] of FAT $k is $(printf 0x%0""" + str(2 * n) + r"""x $a) after the unmount (was $(printf 0x%0""" + str(2 * n) + r"""x $b)): no longer an end-of-chain mark"
    fi
    k=$((k + 1))
done
if command -v mdir >/dev/null 2>&1; then
    echo "== mdir (mtools, its default checks) on the image fusefat left"
    MTOOLSRC=/dev/null mdir -i "$OUT/after.img" ::/ > "$OUT/mdir.txt" 2>&1
    echo "    mdir exit $?"
    indent < "$OUT/mdir.txt"
fi
""")


def body(case, data):
    mode = "rw+" if case.side == "writer" else "ro"
    extra = case.extra or {}
    if extra.get("entry_timeout") is not None:
        mode += f",entry_timeout={float(extra['entry_timeout']):g}"
    out = [r"""
cp "$IMG" "$OUT/pristine.img"
M="$OUT/mnt"
mkdir -p "$M"
fusefat -f -s -o """ + mode + r""" "$IMG" "$M" > "$OUT/fusefat.log" 2>&1 &
FPID=$!
i=0
until grep -q " $M fuse" /proc/mounts; do
    i=$((i + 1))
    if [ $i -gt 100 ] || ! kill -0 $FPID 2>/dev/null; then
        cannot "fusefat did not mount the image: $(tail -n 2 "$OUT/fusefat.log")"
    fi
    sleep 0.1
done
trap 'fusermount -u -z "$M" 2>/dev/null' EXIT
""", _errno_fn(case),
           (f"HANG_S=${{HANG_S:-{int(extra['hang'])}}}\n" + HANG_STEP) if extra.get("hang") else STEP]
    if case.side == "writer":
        out.append(posix_ops(case, data))
    out.append(LIST_MOUNT)
    if case.label:
        line = f"f /{case.label} 0 {EMPTY_SHA}"
        if extra.get("label") == "bug":
            out.append(r"""if grep -aqxF """ + q(line) + r""" "$OUT/seen.unsorted"; then
    bug "fusefat lists the volume label """ + case.label + r""" (attribute 0x08, not a file) as an empty file /""" + case.label + r""""
fi
""")
        else:
            out.append(r"""if grep -aqxF """ + q(line) + r""" "$OUT/seen.unsorted"; then
    echo "    (the volume label """ + case.label + r""" listed as an empty file: fusefat-label-as-file, another bug; left out of the listing below)"
    grep -avxF """ + q(line) + r""" "$OUT/seen.unsorted" > "$OUT/seen.tmp"
    mv "$OUT/seen.tmp" "$OUT/seen.unsorted"
fi
""")
    out.append(r"""fusermount -u "$M" && trap - EXIT
wait $FPID
echo "fusefat exit $?"
tail -n 20 "$OUT/fusefat.log" | indent
cp "$IMG" "$OUT/after.img"
""")
    if extra.get("check") == "fsck":
        out.append(fsck_check("fusefat"))
    elif extra.get("check") == "fat1":
        out.append(_fat1_check(case))
    return "".join(out)


def hostile_body(info, img, data, regions):
    """A hostile finding's run.sh body and needs, or None (see the docstring)."""
    if info.get("ops") and info["kind"] == "out-of-bounds" and " write past " in info["message"]:
        return hostile_write(info, img, data), [("fusefat", "fusefat"), ("fusermount", "fuse"),
                                                ("timeout", "coreutils"), ("cmp", "diffutils")]
    if info.get("ops") and info["kind"] == "spread" and info.get("spread"):
        return hostile_spread(info, data), [("fusefat", "fusefat"), ("fusermount", "fuse"),
                                            ("timeout", "coreutils")]
    if info["kind"] == "out-of-bounds" and info["message"].startswith("fusefat "):
        return hostile_traced(info, img, data), [("fusefat", "fusefat"), ("fusermount", "fuse"),
                                                 ("strace", "strace"), ("timeout", "coreutils")]
    if info.get("ops") and info["kind"] == "hang":
        from vfz.oracles.fusefat.export_hang import hostile_write_hang
        return hostile_write_hang(info, data), [("fusefat", "fusefat"), ("fusermount", "fuse"), ("timeout", "coreutils")]
    if info["kind"] == "hang":
        words = " ".join(q(d) for d in looping_dirs(img) or ["/"])
        return HANG.replace("{DIRS}", words), [("fusefat", "fusefat"), ("fusermount", "fuse"),
                                              ("timeout", "coreutils")]
    if info["kind"] == "canary":
        path = canary_path(info)
        return (CANARY_FN.replace("{CANARY}", info["canary"]) + CANARY.replace("{PATH}", q(path)),
                [("fusefat", "fusefat"), ("fusermount", "fuse"), ("od", "coreutils")])
    return None

CANARY = r"""
P={PATH}
M="$OUT/mnt"
mkdir -p "$M"
fusefat -f -s -o ro "$IMG" "$M" > "$OUT/fusefat.log" 2>&1 &
FPID=$!
i=0
until grep -q " $M fuse" /proc/mounts; do
    i=$((i + 1))
    if [ $i -gt 100 ] || ! kill -0 $FPID 2>/dev/null; then
        cannot "fusefat did not mount the image: $(tail -n 2 "$OUT/fusefat.log")"
    fi
    sleep 0.1
done
trap 'kill -9 $FPID 2>/dev/null; fusermount -u -z "$M" 2>/dev/null' EXIT
echo "== cat on the fusefat mount: $P"
timeout -k 2 ${HANG_S:-10} cat "$M$P" > "$OUT/file.bin" 2> "$OUT/err.txt"
rc=$?
indent < "$OUT/err.txt"
echo "    exit $rc, $(wc -c < "$OUT/file.bin") bytes"
has_canary "$OUT/file.bin" && bug "fusefat returned bytes from past the declared volume end (the canary) for $P"
fusermount -u "$M" 2>/dev/null
"""

HANG = r"""
M="$OUT/mnt"
mkdir -p "$M"
fusefat -f -s -o ro "$IMG" "$M" > "$OUT/fusefat.log" 2>&1 &
FPID=$!
i=0
until grep -q " $M fuse" /proc/mounts; do
    i=$((i + 1))
    if [ $i -gt 100 ] || ! kill -0 $FPID 2>/dev/null; then
        cannot "fusefat did not mount the image: $(tail -n 2 "$OUT/fusefat.log")"
    fi
    sleep 0.1
done
trap 'kill -9 $FPID 2>/dev/null; fusermount -u -z "$M" 2>/dev/null' EXIT
for d in {DIRS}; do
    echo "== ls -la on the fusefat mount: $d (limit ${HANG_S:-10} s)"
    ls -la "$M$d/" > "$OUT/ls.txt" 2>&1 &
    LPID=$!
    end=$(($(date +%s) + ${HANG_S:-10}))
    while kill -0 $LPID 2>/dev/null && [ "$(date +%s)" -le $end ]; do
        sleep 0.2
    done
    if kill -0 $LPID 2>/dev/null; then
        # ls waits in the kernel for fusefat's answer: only ending fusefat frees it
        st=$(ps -o stat=,time= -p $FPID 2>/dev/null)
        kill -9 $FPID 2>/dev/null
        fusermount -u -z "$M" 2>/dev/null
        kill -9 $LPID 2>/dev/null
        wait $LPID 2>/dev/null
        bug "readdir of $d on the fusefat mount did not end within ${HANG_S:-10} s (fusefat state, CPU time: $st)"
        break
    fi
    wait $LPID
    rc=$?
    head -c 300 "$OUT/ls.txt" | indent
    echo "    exit $rc"
    kill -0 $FPID 2>/dev/null || { bug "fusefat died: $(tail -n 1 "$OUT/fusefat.log")"; break; }
done
"""


# A hostile write that reached past the volume or the image (the I/O-bounds oracle's
# "fusefat write past ..."): the ops on a rw+ mount, any answer allowed, each bounded by
# HANG_S; then the file's size (a write past the image grows it) and the bytes past the
# declared end (a write past the volume changes them) against the copy taken before
HOSTILE_WRITE = r"""
cp "$IMG" "$OUT/pristine.img"
M="$OUT/mnt"
mkdir -p "$M"
fusefat -f -s -o rw+ "$IMG" "$M" > "$OUT/fusefat.log" 2>&1 &
FPID=$!
i=0
until grep -q " $M fuse" /proc/mounts; do
    i=$((i + 1))
    if [ $i -gt 100 ] || ! kill -0 $FPID 2>/dev/null; then
        cannot "fusefat did not mount the image: $(tail -n 2 "$OUT/fusefat.log")"
    fi
    sleep 0.1
done
trap 'fusermount -u -z "$M" 2>/dev/null' EXIT
ren() {   # rename(2) itself
    perl -e 'rename($ARGV[0], $ARGV[1]) or die "rename: $!\n"' "$1" "$2"
}
kstep() {   # N ANY COMMAND...: on a hostile volume any answer is allowed; the image is the test
    n=$1; shift 2
    echo "op $n: $*"
    timeout -s KILL ${HANG_S:-10} "$@" > "$OUT/op$n.txt" 2>&1
    echo "    exit $?"
    head -n 5 "$OUT/op$n.txt" | indent
}
{OPS}
fusermount -u "$M" && trap - EXIT
wait $FPID
echo "fusefat exit $?"
END={END}
size0=$(wc -c < "$OUT/pristine.img")
size1=$(wc -c < "$IMG")
echo "== the image: $size0 bytes before, $size1 after; the declared volume ends at byte $END"
[ "$size1" -le "$size0" ] || bug "fusefat grew the image from $size0 to $size1 bytes: it wrote past the image's end"
if [ "$END" -lt "$size0" ]; then
    tail -c +$((END + 1)) "$OUT/pristine.img" > "$OUT/past.before"
    tail -c +$((END + 1)) "$IMG" | head -c $((size0 - END)) > "$OUT/past.after"
    cmp -s "$OUT/past.before" "$OUT/past.after" \
        || bug "fusefat changed bytes past the declared volume end (byte $END): $(cmp "$OUT/past.before" "$OUT/past.after" | head -n 1)"
fi
"""


def hostile_write(info, img, data):
    from vfz import opscript
    ops = opscript.parse(info["ops"])
    case = Case(impl="fusefat", side="writer", ops=ops, fs="?", image="", results=["any"] * len(ops))
    bps = struct.unpack_from("<H", img, 11)[0]
    tot = struct.unpack_from("<H", img, 19)[0] or struct.unpack_from("<I", img, 32)[0]
    end = bps * tot if bps and tot else len(img)
    return HOSTILE_WRITE.replace("{OPS}", posix_ops(case, data)).replace("{END}", str(end))


# Any other out-of-bounds access of fusefat (a read past the volume or the image; a write
# its read-only mount attempts and the kernel refuses: EBADF, nothing changes on disk):
# fusefat under strace, the volume walked (ls -R, every file read) or, for a writer's
# finding, ops.txt applied; then its accesses of the image (STRACE_CHECK)
HOSTILE_TRACED = r"""
command -v strace >/dev/null 2>&1 || cannot "strace not found (Debian package strace)"
M="$OUT/mnt"
mkdir -p "$M"
strace -f -y -s 0 -e trace=execve,read,pread64,write,pwrite64,lseek -e signal=none -o "$OUT/strace.txt" \
    fusefat -f -s -o {MODE} "$IMG" "$M" > "$OUT/fusefat.log" 2>&1 &
FPID=$!
i=0
until grep -q " $M fuse" /proc/mounts; do
    i=$((i + 1))
    if [ $i -gt 150 ] || ! kill -0 $FPID 2>/dev/null; then
        cannot "fusefat did not mount the image: $(tail -n 2 "$OUT/fusefat.log")"
    fi
    sleep 0.1
done
trap 'fusermount -u -z "$M" 2>/dev/null' EXIT
ren() {   # rename(2) itself
    perl -e 'rename($ARGV[0], $ARGV[1]) or die "rename: $!\n"' "$1" "$2"
}
kstep() {   # N ANY COMMAND...: any answer is allowed; fusefat's accesses are the test
    n=$1; shift 2
    echo "op $n: $*"
    timeout -s KILL ${HANG_S:-10} "$@" > "$OUT/op$n.txt" 2>&1
    echo "    exit $?"
}
{WORK}
fusermount -u -z "$M" && trap - EXIT
kill $FPID 2>/dev/null
wait $FPID 2>/dev/null
echo "== fusefat's {OP}s of the image (strace)"
"""

WALK = r"""echo "== ls -laR and every file read, each bounded by ${HANG_S:-10} s"
timeout -s KILL ${HANG_S:-10} ls -laR "$M" > "$OUT/ls.txt" 2>&1
echo "    ls exit $?"
timeout -s KILL ${HANG_S:-10} find "$M" -type f -exec cat {} + > /dev/null 2>&1
echo "    cat exit $?"
"""


def hostile_traced(info, img, data):
    from vfz import opscript
    parts = info["message"].split(" [")[0].split(" ", 2)
    op, where = parts[1], parts[2]
    bps = struct.unpack_from("<H", img, 11)[0]
    tot = struct.unpack_from("<H", img, 19)[0] or struct.unpack_from("<I", img, 32)[0]
    declared = bps * tot if bps and tot else len(img)
    end = declared if where == "past volume" else len(img)
    lo = len(img) if where == "past image inside volume" else 0
    if info.get("ops"):
        ops = opscript.parse(info["ops"])
        work = posix_ops(Case(impl="fusefat", side="writer", ops=ops, fs="?", image="",
                              results=["any"] * len(ops)), data)
    else:
        work = WALK
    return (HOSTILE_TRACED.replace("{MODE}", "rw+" if info.get("ops") else "ro").replace("{WORK}", work)
            .replace("{OP}", op) + strace_check(op, where, end, lo, parts[0]))


# Damage spread of a hostile write (vfz/hostile/writes.py): the entries no op named that
# the strict reader saw appear or vanish, looked at with mtools' mdir -/ (a second reader:
# fusefat's own view may hide what its writes left, as it hid the 8.3 entry its unlink left
# behind) before and after ops.txt on a rw+ mount
SPREAD = r"""
command -v mdir >/dev/null 2>&1 || cannot "mdir not found (Debian package mtools)"
M="$OUT/mnt"
mkdir -p "$M"
listing() { MTOOLS_SKIP_CHECK=1 mdir -i "$IMG" -/ -b ::/ 2>/dev/null; }
state() {   # LISTING PATH -> present / absent
    if grep -qxF "::$2" "$1"; then echo present; else echo absent; fi
}
ren() {   # rename(2) itself
    perl -e 'rename($ARGV[0], $ARGV[1]) or die "rename: $!\n"' "$1" "$2"
}
kstep() {   # N ANY COMMAND...: on a hostile volume any answer is allowed
    n=$1; shift 2
    echo "op $n: $*"
    timeout -s KILL ${HANG_S:-10} "$@" > "$OUT/op$n.txt" 2>&1
    echo "    exit $?"
    head -n 3 "$OUT/op$n.txt" | indent
}
listing > "$OUT/before.txt"
fusefat -f -s -o rw+ "$IMG" "$M" > "$OUT/fusefat.log" 2>&1 &
FPID=$!
i=0
until grep -q " $M fuse" /proc/mounts; do
    i=$((i + 1))
    if [ $i -gt 150 ] || ! kill -0 $FPID 2>/dev/null; then
        cannot "fusefat did not mount the image: $(tail -n 2 "$OUT/fusefat.log")"
    fi
    sleep 0.1
done
trap 'fusermount -u -z "$M" 2>/dev/null' EXIT
{OPS}
fusermount -u -z "$M" && trap - EXIT
wait $FPID 2>/dev/null
listing > "$OUT/after.txt"
echo "== the entries no op names, before and after (mdir -/)"
{CHECK}
"""


def hostile_spread(info, data):
    from vfz import opscript
    ops = opscript.parse(info["ops"])
    case = Case(impl="fusefat", side="writer", ops=ops, fs="?", image="", results=["any"] * len(ops))
    check = []
    for k, (what, path, *_rest) in enumerate(info["spread"][:20]):
        if what not in ("appeared", "lost"):
            continue
        check.append(f'b=$(state "$OUT/before.txt" {q(path)}); a=$(state "$OUT/after.txt" {q(path)})\n'
                     f'echo "    {path}: $b -> $a"\n'
                     f'[ "$b" = "$a" ] || bug {q(what + ": " + path + ", which no op names, ")}"$b -> $a"')
    return SPREAD.replace("{OPS}", posix_ops(case, data)).replace("{CHECK}", "\n".join(check) or ":")
