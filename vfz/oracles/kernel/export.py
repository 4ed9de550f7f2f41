"""Linux vfat's reproducer template (vfz/oracles/repro.py): a loop mount of the
image (as root) with the options the kernel oracle uses
(codepage=437,iocharset=ascii,utf8,shortname=mixed), then mkdir / dd / rename(2)
(perl's, or `mv -T` where there is no perl: both call rename(2) on one file
system) / rm / rmdir for the ops (writer side), and a listing made with
find, stat and sha256sum (both sides). Every command it uses is a busybox
applet too, so it also runs inside the kernel oracle's guest (export_vm here:
how the suite runs it, this host's kernel having no vfat). Each command's exit status is checked
against the result Linux is expected to give; a failure where success
is expected is a symptom, and so is a success where an errno is expected
(the name of the errno is in the op line).

The oracle runs a Debian 6.1 kernel in QEMU; a maintainer runs this on
their own kernel, so the README's versions name the running kernel
(uname -r is printed by the script).

Hostile findings (hostile_body): a writer's finding (its ops) is replayed
through the loop mount with the same commands, any answer allowed; a
WARNING, BUG, Oops or general protection fault in the kernel log since the
mount is the symptom. An out-of-bounds finding (an access past the volume the
boot sector declares, seen by QEMU's block trace in the oracle) is shown in two
mounts: the image cut at the declared end (a partition exactly as big as the
volume says it is) is mounted and listed, and the kernel's "attempt to access
beyond end of device" is the read past the end; then the whole image is mounted,
the ops applied, and a byte changed past the declared end is the write past it.
"""
import re

from vfz import opscript
from vfz.oracles.repro import LIST_MOUNT, Case, ExportError, posix_ops

PACKAGES = ["mount", "coreutils", "findutils"]
NEEDS = [("mount", "mount"), ("umount", "mount"), ("find", "findutils"), ("sha256sum", "coreutils"),
         ("dd", "coreutils")]
SIDES = ("reader", "writer")
SHA = True
LISTING = True
TOOL = "Linux vfat"
STEPS = ("mounts it with `mount -o loop` (root needed) and, for a writer bug, applies the "
         "operations with mkdir, dd, rename(2) (perl, else mv -T), rm and rmdir (truncate -s, "
         "touch -m/-a and the FAT attribute ioctl through perl or fatattr (a busybox applet too) for "
         "the second grammar), "
         "checking each exit status; then lists the mounted tree with find, stat and sha256sum")
EXPECTED = ("the tree a correct implementation holds: `d PATH` for a directory, `f PATH SIZE "
            "SHA256` for a file.")
OPTIONS = "codepage=437,iocharset=ascii,utf8,shortname=mixed"
ELSEWHERE = "the kernel oracle's QEMU guest as root (vfz.oracles.kernel.export_vm: Debian's 6.1 kernel, busybox)"
HOSTILE = ("a writer's trap (its ops through the loop mount, then the kernel log); out-of-bounds (the image "
           "cut at the declared end mounted: the kernel log; the whole image with the ops: the bytes past the end)")
HOSTILE_STEPS_OPS = ("mounts it with `mount -o loop` (root needed), applies `ops.txt` with mkdir, dd, "
                     "rename(2), rm and rmdir, and reads the kernel log (dmesg) for WARNING, BUG or Oops")


def run_elsewhere(dirname, timeout):
    from vfz.oracles.kernel import export_vm
    return export_vm.run_in_vm(dirname, timeout=min(timeout, 300.0))


def shown(case, path):
    return path


KSTEP = r"""
ren() {   # rename(2) itself (mv without -T would move into a directory TO)
    if command -v perl >/dev/null 2>&1; then
        perl -e 'rename($ARGV[0], $ARGV[1]) or die "rename: $!\n"' "$1" "$2"
    else
        mv -T "$1" "$2"
    fi
}
setattr() {   # PATH BYTE: FAT_IOCTL_SET_ATTRIBUTES (_IOW('r', 0x11, __u32)): perl, else fatattr (busybox has it)
    if command -v perl >/dev/null 2>&1; then
        perl -e 'open(my $f, "<", $ARGV[0]) or die "open: $!\n";
                 ioctl($f, 0x40047211, pack("L", $ARGV[1])) or die "ioctl: $!\n"' "$1" "$2"
    elif command -v fatattr >/dev/null 2>&1; then
        fatattr $(for b in 1:r 2:h 4:s 32:a; do
                      [ $(( $2 & ${b%%:*} )) -ne 0 ] && echo "+${b#*:}" || echo "-${b#*:}"; done) "$1"
    else
        cannot "setting FAT attributes needs perl or fatattr"
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
"""

def body(case, data):
    out = [r"""
[ "$(id -u)" = 0 ] || cannot "a loop mount needs root"
echo "kernel: $(uname -r)"
M="$OUT/mnt"
mkdir -p "$M"
mount -t vfat -o loop,""" + OPTIONS + r""" "$IMG" "$M" 2> "$OUT/mount.err" \
    || cannot "mount failed: $(cat "$OUT/mount.err")"
trap 'umount "$M" 2>/dev/null' EXIT
""", KSTEP]
    if case.side == "writer":
        out.append(posix_ops(case, data))
    out.append(LIST_MOUNT)
    out.append(r"""umount "$M" && trap - EXIT
cp "$IMG" "$OUT/after.img"
""")
    return "".join(out)


def hostile_body(info, img, data, regions):
    """A writer's hostile finding: the op-script through the loop mount
    (the commands above), then the kernel log; an out-of-bounds one: the two
    mounts of the docstring; else None."""
    if info["kind"] == "out-of-bounds":
        return bounds_body(info, data)
    if not info.get("ops"):
        return None
    ops = opscript.parse(info["ops"])
    case = Case(impl="kernel", side="writer", ops=ops, fs="?", image="", results=["any"] * len(ops))
    body = (HOSTILE_OPS.replace("{OPTIONS}", OPTIONS) + KSTEP.split("kstep()")[0]
            + posix_ops(case, data) + HOSTILE_LOG)
    return body, [("mount", "mount"), ("dmesg", "util-linux")]


HOSTILE_OPS = r"""
[ "$(id -u)" = 0 ] || cannot "a loop mount needs root"
command -v dmesg >/dev/null 2>&1 || cannot "dmesg not found (util-linux)"
echo "kernel: $(uname -r)"
M="$OUT/mnt"
mkdir -p "$M"
BEFORE=$(dmesg | wc -l)
mount -t vfat -o loop,{OPTIONS} "$IMG" "$M" 2> "$OUT/mount.err" \
    || cannot "mount failed: $(cat "$OUT/mount.err")"
trap 'umount "$M" 2>/dev/null' EXIT
kstep() {   # N ANY COMMAND...: run it; on a hostile volume any answer is allowed, the kernel log is the test
    n=$1; shift 2
    echo "op $n: $*"
    "$@" > "$OUT/op$n.txt" 2>&1
    rc=$?
    indent < "$OUT/op$n.txt"
    echo "    exit $rc"
}
"""

HOSTILE_LOG = r"""
umount "$M" && trap - EXIT
echo "== kernel messages since the mount"
dmesg | tail -n +$((BEFORE + 1)) > "$OUT/dmesg.txt"
indent < "$OUT/dmesg.txt" | head -n 60
if grep -q 'WARNING:\|BUG:\|Oops\|general protection' "$OUT/dmesg.txt"; then
    bug "kernel: $(grep -m 1 'WARNING:\|BUG:\|Oops\|general protection' "$OUT/dmesg.txt" | sed 's/^\[[ 0-9.]*\] //')"
fi
"""


def declared_end(info):
    """The declared volume's size in bytes, as the I/O-bounds evidence says it."""
    m = re.search(r"declared volume (\d+) bytes", info.get("evidence", ""))
    if not m:
        raise ExportError("an out-of-bounds finding whose evidence names no declared volume size")
    return int(m.group(1))


def bounds_body(info, data):
    """sh text of an out-of-bounds finding: the cut device's mount (reads past the
    declared end), then the whole image's mount with the ops (writes past it)."""
    ops = opscript.parse(info.get("ops") or "")
    case = Case(impl="kernel", side="writer", ops=ops, fs="?", image="", results=["any"] * len(ops))
    body = (BOUNDS_CUT.replace("{END}", str(declared_end(info))).replace("{OPTIONS}", OPTIONS)
            + KSTEP.split("kstep()")[0] + posix_ops(case, data) + BOUNDS_WRITES)
    return body, [("mount", "mount"), ("dmesg", "util-linux"), ("dd", "coreutils"), ("cmp", "diffutils")]


BOUNDS_CUT = r"""
[ "$(id -u)" = 0 ] || cannot "a loop mount needs root"
command -v dmesg >/dev/null 2>&1 || cannot "dmesg not found (util-linux)"
echo "kernel: $(uname -r)"
le() {   # OFFSET SIZE: the little-endian unsigned field of the boot sector
    od -An -tu$2 -j$1 -N$2 "$IMG" | tr -d ' '
}
TS=$(le 19 2)
[ "$TS" != 0 ] || TS=$(le 32 4)
END=$((TS * $(le 11 2)))
echo "the boot sector declares a volume of $END bytes (when found: {END}); the image holds $(wc -c < "$IMG")"
M="$OUT/mnt"
mkdir -p "$M"
echo "== 1. the image cut at the declared end (a partition as big as the volume says), mounted and listed"
dd if="$IMG" of="$OUT/cut.img" bs=512 count=$(((END + 511) / 512)) 2>/dev/null || cannot "dd failed"
BEFORE=$(dmesg | wc -l)
if mount -t vfat -o loop,ro,{OPTIONS} "$OUT/cut.img" "$M" 2> "$OUT/mount.err"; then
    echo "    mounted"
    ls -la "$M" 2>&1 | head -n 12 | indent
    umount "$M"
else
    echo "    mount failed: $(cat "$OUT/mount.err")"
fi
dmesg | tail -n +$((BEFORE + 1)) > "$OUT/dmesg-cut.txt"
indent < "$OUT/dmesg-cut.txt" | head -n 20
# the device ends where the volume says it does: a read past it fails (bread) or is refused (bio)
if grep -q 'beyond end of device\|bread(block [0-9]*) failed' "$OUT/dmesg-cut.txt"; then
    bug "Linux read past the volume's declared end ($END bytes): $(grep -m 1 'beyond end of device\|bread(block [0-9]*) failed' "$OUT/dmesg-cut.txt" | sed 's/^\[[ 0-9.]*\] //')"
fi
echo "== 2. the whole image: the bytes past the declared end saved, mounted, the ops applied"
tail -c +$((END + 1)) "$IMG" > "$OUT/past.before"
BEFORE=$(dmesg | wc -l)
mount -t vfat -o loop,{OPTIONS} "$IMG" "$M" 2> "$OUT/mount.err" \
    || cannot "mount failed: $(cat "$OUT/mount.err")"
trap 'umount "$M" 2>/dev/null' EXIT
kstep() {   # N ANY COMMAND...: run it; any answer is allowed, the bytes past the end are the test
    n=$1; shift 2
    echo "op $n: $*"
    "$@" > "$OUT/op$n.txt" 2>&1
    rc=$?
    indent < "$OUT/op$n.txt"
    echo "    exit $rc"
}
"""

BOUNDS_WRITES = r"""
umount "$M" && trap - EXIT
dmesg | tail -n +$((BEFORE + 1)) | indent | head -n 20
tail -c +$((END + 1)) "$IMG" > "$OUT/past.after"
n=$(cmp -l "$OUT/past.before" "$OUT/past.after" 2>/dev/null | wc -l)
echo "== bytes past the declared end changed by the mount and the ops: $n"
if [ "$n" -gt 0 ]; then
    first=$(cmp "$OUT/past.before" "$OUT/past.after" | sed -n 's/.*differ: [a-z]* \([0-9]*\),.*/\1/p')
    bug "Linux wrote $n bytes past the volume's declared end ($END bytes), the first at image offset $((END + first - 1))"
fi
"""
