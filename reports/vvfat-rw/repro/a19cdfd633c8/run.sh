#!/bin/sh
# role=writer oracle=vvfat verdict=result kind=vvfat-abort-cluster-count op=- cls=- | writer kernel-vvfat on fat32 | 4 ops: mkdir "/字"; create "/字/å" 1 100; rmdir "/字" ...
# Reproducer exported by vfatfuzz; it needs none of vfatfuzz, only
# busybox-static, coreutils, cpio, findutils, kmod, qemu-system-x86, xz and coreutils.
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
need qemu-system-x86_64 qemu-system-x86
need busybox busybox-static
need cpio cpio
need modprobe kmod
need find findutils
need sha256sum coreutils
need timeout coreutils
export LC_ALL=C.UTF-8 LANG=C.UTF-8
xz -dc "$HERE/image.img.xz" > "$OUT/image.img" || cannot "cannot unpack image.img.xz"
IMG="$OUT/image.img"
echo "work directory: $OUT"

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
for m in virtio_pci virtio_blk nls_cp437 nls_ascii fat vfat; do
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
cat > "$R/init" <<'VFZ_INIT_END'
#!/bin/sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
for m in $(cat /modules.list); do insmod "$m" 2>/dev/null; done
i=0
while [ ! -b /dev/vda1 ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
cannot() { echo "@@guest-cannot $*"; poweroff -f; }
bug() { echo "@@guest-bug $*"; }
indent() { sed 's/^/    /'; }
HERE=/
OUT=/tmp
M=/mnt
mount -t vfat -o sync,codepage=437,iocharset=ascii,utf8,shortname=mixed /dev/vda1 "$M" || cannot "the guest cannot mount /dev/vda1"
echo "@@guest mounted /dev/vda1 (sync,codepage=437,iocharset=ascii,utf8,shortname=mixed)"

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
echo "== the operations"
kstep 1 ok mkdir "$M"'/字'
kstep 2 ok sh -c '[ ! -e "$1" ] && [ ! -L "$1" ] || { echo "$1: exists"; exit 1; }; dd if="$2" of="$1" bs=16M status=none' create "$M"'/字/å' "$HERE/data/op2.bin"
kstep 3 ENOTEMPTY rmdir "$M"'/字'
kstep 4 ok ren "$M"'/字/å' "$M"'/Kẹ́a­aé͞BΩaß'

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
sed 's/^/@@guest-list /' /tmp/seen.unsorted
umount "$M" && echo "@@guest unmounted" || echo "@@guest-bug the unmount failed"
echo "@@guest done"
poweroff -f
VFZ_INIT_END
chmod +x "$R/init"
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

# where a host file's bytes first differ from what the guest wrote
while IFS= read -r l; do
    case "$l" in "f "*) ;; *) continue ;; esac
    want=${l##* }; rest=${l% *}; size=${rest##* }; hp=${rest% *}; hp=${hp#f }
    [ -f "$M$hp" ] || continue
    have=$(sha256sum < "$M$hp" | cut -d' ' -f1)
    [ "$have" = "$want" ] && continue
    echo "$hp: size $(stat -c %s "$M$hp") (expected $size), bytes not the guest's; its first 64 bytes and bytes 4096-4159:"
    od -Ax -tx1 -N 64 "$M$hp" | indent
    od -Ax -tx1 -j 4096 -N 64 "$M$hp" | indent
done < "$HERE/expected.txt"

LC_ALL=C sort "$OUT/seen.unsorted" > "$OUT/seen.txt"
echo "== expected listing vs what QEMU vvfat (fat:rw:16:, the host directory) shows (- expected, + seen)"
if diff -u "$HERE/expected.txt" "$OUT/seen.txt" > "$OUT/listing.diff"; then
    echo "    (same)"
else
    tail -n +3 "$OUT/listing.diff" | indent
    bug "QEMU vvfat (fat:rw:16:, the host directory) shows another tree than expected ($(grep -c '^[-+][^-+]' "$OUT/listing.diff") lines differ)"
fi

if [ "$BUGS" -gt 0 ]; then
    echo "REPRODUCED: $WHY"
    exit 0
fi
echo "NOT REPRODUCED"
exit 1
