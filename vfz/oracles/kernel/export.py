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
mount is the symptom.
"""
from vfz import opscript
from vfz.oracles.repro import LIST_MOUNT, Case, posix_ops

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
HOSTILE = "a writer's trap (its ops through the loop mount, then the kernel log)"
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
    (the commands above), then the kernel log; else None."""
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
