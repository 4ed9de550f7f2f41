"""kernel-vvfat's reproducer template (vfz/oracles/repro.py): Linux in QEMU writes the ops on a `fat:rw:16:` vvfat disk of an empty host directory; what vvfat wrote back is listed on the host.

What a QEMU maintainer has is enough: qemu-system-x86_64, a Linux kernel
with its modules (the running one's /boot/vmlinuz and /lib/modules, or
VVFAT_KERNEL=PATH: Debian's 6.1 is the oracle's), busybox-static and cpio.
run.sh builds a small initramfs -- busybox, the modules the guest needs
(virtio_pci, virtio_blk, fat, vfat, nls_cp437, nls_ascii, with their
dependencies, in the order `modprobe --show-depends` gives), the ops' data
files and an /init that mounts the disk as the oracle does (MS_SYNCHRONOUS,
codepage=437,iocharset=ascii,utf8,shortname=mixed: every write reaches
vvfat before its syscall returns), runs the ops with busybox's mkdir, dd
(a create's or write's bytes in one write(2), as the oracle's agent), mv -T,
rm, rmdir, truncate, touch and fatattr (each exit status checked against
Linux's), lists the volume as the guest sees it, unmounts and
powers off -- then boots QEMU once with
`-blockdev driver=vvfat,dir=d,fat-type=16,rw=on` on a virtio-blk-pci
device (the oracle's hot-plugged drive, here at boot; TCG as the oracle,
VVFAT_ACCEL=kvm for KVM). The symptoms, on the host after QEMU ended:

  * QEMU aborted (an assertion in block/vvfat.c, or do_commit's "Error
    deleting" and abort()): its stderr line;
  * the host directory d/ is another tree than the guest kernel wrote
    (expected.txt: the model's, which is what the guest lists; a name Linux
    stores bare in 8.3 is expected lower-cased, vvfat's design:
    vvfat-downcase-short-names); a file whose bytes differ is dumped where
    it first differs.

The guest's own listing is printed beside it: when it is the expected tree
and d/ is not, vvfat's write-back lost or changed what the guest wrote.

A finding of kernel-vvfat-nodual or -nodual-v3 (the guest with the seed
patch's fat, vfat) is reproduced with those modules: they ride in data/
(built for the oracle's kernel, whose version run.sh then requires) in
place of the kernel's own, and the guest writes the writer's nodual_seed
before it mounts, so the dummies are the campaign's.
"""
import re

from vfz import oracles
from vfz.oracles.kernel.export import KSTEP
from vfz.oracles.repro import LIST_MOUNT, ExportError, posix_ops, q
from vfz.oracles.vvfat import hosttree
from vfz.oracles.vvfat.kernel_writer import patched_modules

PACKAGES = ["qemu-system-x86", "busybox-static", "cpio", "kmod"]
NEEDS = [("qemu-system-x86_64", "qemu-system-x86"), ("busybox", "busybox-static"), ("cpio", "cpio"),
         ("modprobe", "kmod"), ("find", "findutils"), ("sha256sum", "coreutils"), ("timeout", "coreutils")]
SIDES = ("reader", "writer")
SHA = True
LISTING = True
TOOL = "QEMU vvfat (fat:rw:16:, the host directory)"
STEPS = ("does not use it (vvfat makes its own disk from an empty host directory `d/`): it builds an "
         "initramfs (busybox, the kernel's virtio, fat and NLS modules, the data files, an /init that "
         "mounts the vvfat disk synchronous with the kernel oracle's options, applies the operations "
         "with mkdir, dd (each create's or write's bytes in one write(2)), mv -T, rm, rmdir, truncate, "
         "touch and fatattr, lists the volume, unmounts and "
         "powers off), boots `qemu-system-x86_64 -kernel ... -blockdev driver=vvfat,dir=d,fat-type=16,"
         "rw=on -device virtio-blk-pci` once, and lists what vvfat wrote back into `d/` with find, stat "
         "and sha256sum")
EXPECTED = ("the tree Linux wrote (what the guest lists, and what vvfat must write back): `d PATH` for a "
            "directory, `f PATH SIZE SHA256` for a file; a name Linux stores bare in 8.3 is expected in "
            "lower case (vvfat's downcase_short_names, a design choice)")
START_IMAGE = False
GUEST_MODULES = "virtio_pci virtio_blk nls_cp437 nls_ascii fat vfat"
OPTIONS = "sync,codepage=437,iocharset=ascii,utf8,shortname=mixed"


def volume_note(case):
    return ("vvfat's own, `-blockdev driver=vvfat,dir=d,fat-type=16,rw=on` (`-drive file=fat:rw:16:d`) "
            "of an empty directory; image.img.xz is not used")


def shown(case, path):
    """vvfat names a host file after a bare 8.3 entry in lower case."""
    return hosttree.downcased(path)


def one_write(text):
    """posix_ops' creates (cat) and writes (dd bs=1) as one write(2) each, as
    the oracle's agent does them (one pwrite): on a synchronous mount vvfat
    sees each write(2) as its own commit, and `create /big 20000 9` aborts
    QEMU when written at once and passes when cat writes it in pieces."""
    return (text.replace('cat "$2" > "$1"', 'dd if="$2" of="$1" bs=16M status=none')
            .replace(" bs=1 seek=", " bs=16M oflag=seek_bytes seek="))


def body(case, data):
    ops = one_write(posix_ops(case, data))
    swap, seed = nodual_modules(case, data)
    guest = (GUEST_HEAD.replace("{OPTIONS}", OPTIONS).replace("{SEED}\n", seed)
             + KSTEP.split("kstep()")[0] + GUEST_KSTEP + ops + GUEST_LIST.replace("{LIST}", LIST_MOUNT))
    return (BUILD.replace("{MODULES}", GUEST_MODULES) + swap
            + "cat > \"$R/init\" <<'VFZ_INIT_END'\n" + guest + "VFZ_INIT_END\n" + RUN)


def variant_of(case):
    """v1 or v3 when the case's writer (its template's name, or the reader's
    writer) ran the seed patch's modules (its class's variant), else None."""
    for name in (case.impl, case.writer):
        try:
            v = getattr(oracles.oracle_class(name, "writer"), "variant", "stock")
        except KeyError:
            continue
        if v != "stock":
            return v
    return None


def nodual_modules(case, data):
    """(build lines, guest line): the patched fat.ko and vfat.ko put in
    data/ and swapped for the kernel's own in the module list, and the
    nodual_seed write; ("", "") for the stock guest."""
    v = variant_of(case)
    if v is None:
        return "", ""
    blobs = {}
    for m, path in patched_modules(v):
        try:
            with open(path, "rb") as f:
                blobs[m] = f.read()
        except OSError as e:
            raise ExportError(f"the seed patch's {m}.ko ({v}) is not built: {path}: {e.strerror} "
                              "(run vfz/oracles/kernel-nodual/build.sh)")
    found = re.search(rb"vermagic=(\S+)", blobs["vfat"])
    kver = found.group(1).decode() if found else ""
    names = {m: data.add(f"{m}-{v}.ko", b) for m, b in blobs.items()}
    swap = (f"# the seed patch's fat and vfat ({v}), built for {kver}, in place of the kernel's own\n"
            f'[ "$KVER" = {q(kver)} ] || cannot "data/ holds the seed patch\'s modules built for {kver}, '
            f'not $KVER (set VVFAT_KERNEL to that kernel)"\n'
            f"sed -i 's#^/mod/fat\\.ko$#/{names['fat']}#; s#^/mod/vfat\\.ko$#/{names['vfat']}#' "
            '"$R/modules.list"\n'
            'grep -q "^/data/" "$R/modules.list" || cannot "no fat/vfat in the module list to swap"\n'
            'echo "seed patch modules: $(grep \'^/data/\' "$R/modules.list" | tr \'\\n\' \' \')"\n')
    seed = "" if case.seed is None else \
        f"echo {int(case.seed)} > /sys/module/vfat/parameters/nodual_seed || cannot \"cannot set nodual_seed\"\n"
    return swap, seed


BUILD = r"""
# the guest kernel: VVFAT_KERNEL, else the running one's, else the newest in /boot
KERNEL=${VVFAT_KERNEL:-/boot/vmlinuz-$(uname -r)}
[ -n "${VVFAT_KERNEL:-}" ] || [ -r "$KERNEL" ] || KERNEL=$(ls /boot/vmlinuz-* 2>/dev/null | sort -V | tail -n 1)
[ -r "$KERNEL" ] || cannot "no readable kernel $KERNEL (set VVFAT_KERNEL=/path/to/vmlinuz)"
KVER=${VVFAT_KVER:-$(basename "$KERNEL" | sed 's/^vmlinuz-//')}
[ -d "/lib/modules/$KVER" ] || cannot "no /lib/modules/$KVER for $KERNEL (set VVFAT_KVER)"
BB=$(command -v busybox)
ldd "$BB" >/dev/null 2>&1 && cannot "$BB is linked dynamically: the initramfs needs busybox-static"
echo "kernel: $KERNEL ($KVER)"
qemu-system-x86_64 --version | head -n 1 | indent
R="$OUT/initramfs"
rm -rf "$R" "$OUT/d" && mkdir -p "$R/bin" "$R/proc" "$R/sys" "$R/dev" "$R/mnt" "$R/tmp" "$R/mod" "$OUT/d" \
    || cannot "cannot make $R"
cp "$BB" "$R/bin/busybox" && ln -s busybox "$R/bin/sh" || cannot "cannot copy busybox"
[ ! -d "$HERE/data" ] || cp -r "$HERE/data" "$R/data" || cannot "cannot copy data/"
: > "$R/modules.list"
for m in {MODULES}; do
    modprobe -S "$KVER" --show-depends "$m" 2>/dev/null | sed -n 's/^insmod \([^ ]*\).*/\1/p'
done | awk '!seen[$0]++' | while read -r ko; do
    b=$(basename "$ko")
    case "$ko" in
        *.xz) xz -dc "$ko" > "$R/mod/${b%.xz}"; b=${b%.xz} ;;
        *.zst) zstd -qdc "$ko" > "$R/mod/${b%.zst}"; b=${b%.zst} ;;
        *) cp "$ko" "$R/mod/$b" ;;
    esac
    echo "/mod/$b" >> "$R/modules.list"
done
echo "guest modules: $(sed 's#.*/##' "$R/modules.list" | tr '\n' ' ')"
"""

GUEST_HEAD = r"""#!/bin/sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
for m in $(cat /modules.list); do insmod "$m" 2>/dev/null; done
i=0
while [ ! -b /dev/vda1 ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
cannot() { echo "@@guest-cannot $*"; poweroff -f; }
bug() { echo "@@guest-bug $*"; }
indent() { sed 's/^/    /'; }
{SEED}
HERE=/
OUT=/tmp
M=/mnt
mount -t vfat -o {OPTIONS} /dev/vda1 "$M" || cannot "the guest cannot mount /dev/vda1"
echo "@@guest mounted /dev/vda1 ({OPTIONS})"
"""

GUEST_KSTEP = r"""
kstep() {   # N EXPECTED COMMAND...: one command on the vvfat volume, its exit status against Linux's
    n=$1; want=$2; shift 2
    echo "op $n: $*"
    "$@" > /tmp/op.txt 2>&1
    rc=$?
    indent < /tmp/op.txt
    echo "    exit $rc (Linux is expected to give: $want)"
    if [ $rc -ne 0 ] && [ "$want" = ok ]; then
        bug "op $n: $1 failed where Linux succeeds: $(tail -n 1 /tmp/op.txt)"
    elif [ $rc -eq 0 ] && [ "$want" != ok ]; then
        bug "op $n: $1 succeeded where Linux gives $want"
    fi
}
"""

GUEST_LIST = r"""{LIST}sed 's/^/@@guest-list /' /tmp/seen.unsorted
umount "$M" && echo "@@guest unmounted" || echo "@@guest-bug the unmount failed"
echo "@@guest done"
poweroff -f
"""

RUN = r"""chmod +x "$R/init"
( cd "$R" && find . | cpio -o -H newc 2>/dev/null ) > "$OUT/initrd.cpio" || cannot "cpio failed"
echo "== Linux in QEMU writes the operations on a vvfat disk of the empty directory d/"
# TCG unless VVFAT_ACCEL says otherwise (kvm: a KVM that works here; this project's machines
# have a /dev/kvm whose guests never start); --foreground keeps QEMU in run.sh's process group
timeout --foreground 900 qemu-system-x86_64 -machine pc,accel=${VVFAT_ACCEL:-tcg} -m 256 -nodefaults \
    -no-reboot -display none -monitor none -serial file:"$OUT/console.txt" \
    -kernel "$KERNEL" -initrd "$OUT/initrd.cpio" \
    -append "console=ttyS0 panic=-1 quiet mitigations=off nokaslr tsc=reliable no_timer_check" \
    -blockdev "driver=vvfat,node-name=vv,dir=$OUT/d,fat-type=16,rw=on" \
    -device virtio-blk-pci,drive=vv > "$OUT/qemu.txt" 2>&1
qrc=$?
tr -d '\r' < "$OUT/console.txt" > "$OUT/guest.txt"
grep -v '^@@guest-list ' "$OUT/guest.txt" | grep -v '^\[' | indent
echo "qemu-system-x86_64 exit $qrc; its stderr:"
grep -v 'accel\|KVM\|kvm' "$OUT/qemu.txt" | indent
if grep -q 'Assertion\|^Error deleting\|^Error handling\|^Fatal: error while committing' "$OUT/qemu.txt"; then
    bug "QEMU aborted in vvfat: $(grep -m 1 'Assertion\|^Error deleting\|^Error handling\|^Fatal: error' "$OUT/qemu.txt")"
elif [ $qrc = 124 ]; then
    cannot "QEMU did not end within 900 s"
elif ! grep -q '^@@guest done' "$OUT/guest.txt"; then
    grep -q '^@@guest-cannot' "$OUT/guest.txt" && cannot "$(sed -n 's/^@@guest-cannot //p' "$OUT/guest.txt" | head -n 1)"
    bug "the guest did not finish (QEMU exit $qrc)"
fi
sed -n 's/^@@guest-bug //p' "$OUT/guest.txt" | while IFS= read -r l; do echo "BUG: in the guest: $l"; done
n=$(grep -c '^@@guest-bug ' "$OUT/guest.txt")
[ "$n" = 0 ] || bug "$n of the guest's operations did not give Linux's result"
echo "== the guest kernel's own listing of the volume before it unmounted"
sed -n 's/^@@guest-list //p' "$OUT/guest.txt" | LC_ALL=C sort | indent
M="$OUT/d"
echo "== what vvfat wrote back to the host directory d/"
""" + LIST_MOUNT + r"""
# where a host file's bytes first differ from what the guest wrote
while IFS= read -r l; do
    case "$l" in "f "*) ;; *) continue ;; esac
    want=${l##* }; rest=${l% *}; size=${rest##* }; hp=${rest% *}; hp=${hp#f }
    [ -f "$M$hp" ] || continue
    have=$(sha256sum < "$M$hp" | cut -d' ' -f1)
    [ "$have" = "$want" ] && continue
    have_size=$(stat -c %s "$M$hp")
    echo "$hp: size $have_size (expected $size), bytes not the guest's; its first 64 bytes (and 64 from 4096):"
    od -Ax -tx1 -N 64 "$M$hp" | indent
    [ "$have_size" -le 4096 ] || od -Ax -tx1 -j 4096 -N 64 "$M$hp" | indent
done < "$HERE/expected.txt"
"""
