"""Reproducer scripts for Linux's vfat (vfz.export.reproducer): a loop mount of the
image (as root) with the options the kernel oracle uses
(codepage=437,iocharset=ascii,utf8,shortname=mixed), then mkdir / dd / rename(2)
(perl's, or `mv -T` where there is no perl: both call rename(2) on one file
system) / rm / rmdir for the ops (writer side), and a listing made with
find, stat and sha256sum (both sides). Every command it uses is a busybox
applet too, so it also runs inside the kernel oracle's guest (vfz.export.vm:
how the suite runs it, this host's kernel having no vfat). Each command's exit status is checked
against the result Linux is expected to give; a failure where success
is expected is a symptom, and so is a success where an errno is expected
(the name of the errno is in the op line).

The oracle runs a Debian 6.1 kernel in QEMU; a maintainer runs this on
their own kernel, so the README's versions name the running kernel
(uname -r is printed by the script).
"""
from vfz.export.reproducer import q, op_data

PACKAGES = ["mount", "coreutils", "findutils"]
NEEDS = [("mount", "mount"), ("umount", "mount"), ("find", "findutils"), ("sha256sum", "coreutils"),
         ("dd", "coreutils")]
SIDES = ("reader", "writer")
SHA = True
LISTING = True
TOOL = "Linux vfat"
STEPS = ("mounts it with `mount -o loop` (root needed) and, for a writer bug, applies the "
         "operations with mkdir, dd, rename(2) (perl, else mv -T), rm and rmdir, checking each exit status; then lists "
         "the mounted tree with find, stat and sha256sum")
EXPECTED = ("the tree a correct implementation holds: `d PATH` for a directory, `f PATH SIZE "
            "SHA256` for a file.")
OPTIONS = "codepage=437,iocharset=ascii,utf8,shortname=mixed"
ELSEWHERE = "the kernel oracle's QEMU guest as root (vfz.export.vm: Debian's 6.1 kernel, busybox)"


def run_elsewhere(dirname, timeout):
    from vfz.export import vm as export_vm
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

LIST_MOUNT = r"""
echo "== listing of the mounted volume"
( cd "$M" && find . -mindepth 1 ) | sed 's/^\.//' | while IFS= read -r p; do
    if [ -d "$M$p" ]; then
        echo "d $p"
    elif [ -f "$M$p" ]; then
        echo "f $p $(stat -c %s "$M$p") $(sha256sum < "$M$p" | cut -d' ' -f1)"
    else
        echo "? $p (cannot stat: $(stat -c %s "$M$p" 2>&1 | tail -n 1))"
    fi
done > "$OUT/seen.unsorted"
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
        out.append(ops(case, data))
    out.append(LIST_MOUNT)
    out.append(r"""umount "$M" && trap - EXIT
cp "$IMG" "$OUT/after.img"
""")
    return "".join(out)


def ops(case, data):
    """kstep lines for the ops, on the volume mounted at $M."""
    lines = ['echo "== the operations"\n']
    for i, op in enumerate(case.ops):
        n = i + 1
        want = case.results[i] if case.results and i < len(case.results) else "ok"
        k = op.kind
        p = '"$M"' + q(op.path)
        if k == "mkdir":
            cmd = f"mkdir {p}"
        elif k == "create":
            f = op_data(data, i, op)
            # O_CREAT|O_EXCL as the op means it: refuse an existing name
            cmd = f'sh -c \'[ ! -e "$1" ] && [ ! -L "$1" ] || {{ echo "$1: exists"; exit 1; }}; ' \
                  f'cat "$2" > "$1"\' create {p} "$HERE/{f}"'
        elif k == "write":
            f = op_data(data, i, op)
            if op.args[2] == 0:       # pwrite of 0 bytes: the file must exist, nothing changes
                cmd = f"test -f {p}"
            else:
                cmd = (f'dd if="$HERE/{f}" of={p} bs=1 seek={op.args[1]} conv=notrunc '
                       'status=none')
        elif k == "unlink":
            cmd = f"rm {p}"
        elif k == "rmdir":
            cmd = f"rmdir {p}"
        elif k == "rename":
            cmd = f'ren {p} "$M"{q(op.args[1])}'
        else:
            continue
        lines.append(f"kstep {n} {want} {cmd}\n")
    return "".join(lines)
