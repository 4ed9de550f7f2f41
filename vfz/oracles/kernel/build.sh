#!/bin/sh
# Build the kernel oracle's guest: vmlinux (decompressed from Debian's
# installed bzImage, booted by QEMU through the PVH note) and an initramfs
# holding busybox-static, the static agent (PID 1) and the modules it needs.
#   vfz/oracles/kernel/build.sh [BUILD_DIR]     (default <repo>/build/kernel)
# Idempotent: each step is skipped when its output is newer than its inputs.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../../.." && pwd)
OUT=${1:-$REPO/build/kernel}
PY=/usr/bin/python3
CC=${CC:-gcc}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
# one build at a time per BUILD_DIR (ctest -j, several oracles starting at once)
if command -v flock >/dev/null 2>&1; then
    exec 9>"$OUT/.build.lock"
    flock 9
fi

# newest installed Debian 6.1 kernel
VMLINUZ=$(ls /boot/vmlinuz-6.1.0-*-amd64 2>/dev/null | sort -V | tail -n 1 || true)
if [ -z "$VMLINUZ" ]; then
    echo "build.sh: no /boot/vmlinuz-6.1.0-*-amd64 installed (apt-get install linux-image-amd64)" >&2
    exit 2
fi
KVER=${VMLINUZ#/boot/vmlinuz-}
MODDIR=/lib/modules/$KVER
echo "kernel: $VMLINUZ ($KVER)"

# newer_than OUT IN...: true when OUT exists and is newer than every IN
uptodate() {
    o=$1; shift
    [ -e "$o" ] || return 1
    for i in "$@"; do
        [ "$i" -nt "$o" ] && return 1
    done
    return 0
}

if uptodate "$OUT/vmlinux" "$VMLINUZ" "$HERE/mkimage.py"; then
    echo "vmlinux: up to date"
else
    "$PY" "$HERE/mkimage.py" vmlinux "$VMLINUZ" "$OUT/vmlinux"
fi

# the agent hashes file contents with the core's SHA-256 (one implementation
# for every listing)
SHA="$REPO/core/src/sha256.c"
if uptodate "$OUT/agent" "$HERE/agent.c" "$SHA" "$REPO/core/src/sha256.h"; then
    echo "agent: up to date"
else
    $CC -std=c11 -static -O2 -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes \
        -I"$REPO/core/src" -o "$OUT/agent.tmp" "$HERE/agent.c" "$SHA"
    mv "$OUT/agent.tmp" "$OUT/agent"
    echo "agent: built"
fi

BUSYBOX=/bin/busybox
[ -x "$BUSYBOX" ] || { echo "build.sh: busybox-static missing (apt-get install busybox-static)" >&2; exit 2; }

# boot-time modules: the transport (virtio-serial over PCI), loop, the NLS
# tables; the stock fat/vfat are loaded at boot too and replaced per request;
# virtio_blk for the drive the I/O-bounds trace puts the image on (trace.py).
BOOTMODS="virtio_pci virtio_console virtio_blk loop nls_cp437 nls_ascii nls_utf8 fat vfat"
MODS=$("$PY" "$HERE/mkimage.py" moddeps "$MODDIR" $BOOTMODS)
MODFILES=""
for m in $MODS; do MODFILES="$MODFILES $MODDIR/$m"; done

INITRD="$OUT/initramfs.cpio"
if uptodate "$INITRD" "$OUT/agent" "$BUSYBOX" "$HERE/mkimage.py" "$HERE/build.sh" $MODFILES; then
    echo "initramfs: up to date"
else
    ROOT="$OUT/root"
    rm -rf "$ROOT"
    mkdir -p "$ROOT/bin" "$ROOT/lib/modules" "$ROOT/proc" "$ROOT/sys" "$ROOT/tmp" "$ROOT/mnt"
    cp "$OUT/agent" "$ROOT/init"
    cp "$BUSYBOX" "$ROOT/bin/busybox"
    ln -s busybox "$ROOT/bin/sh"
    : > "$ROOT/modules.list"
    for m in $MODS; do
        b=$(basename "$m")
        case "$m" in
            *.ko.xz) xz -dc "$MODDIR/$m" > "$ROOT/lib/modules/${b%.xz}"; b=${b%.xz} ;;
            *) cp "$MODDIR/$m" "$ROOT/lib/modules/$b" ;;
        esac
        echo "/lib/modules/$b" >> "$ROOT/modules.list"
    done
    echo "$KVER" > "$ROOT/kernel-version"
    "$PY" "$HERE/mkimage.py" initramfs "$INITRD" "$ROOT"
fi
# stock modules for per-request loading, and the version the host uses
mkdir -p "$OUT/stock"
for m in fat vfat; do
    f=$(ls "$MODDIR"/kernel/fs/fat/$m.ko* | head -n 1)
    case "$f" in
        *.xz) uptodate "$OUT/stock/$m.ko" "$f" || xz -dc "$f" > "$OUT/stock/$m.ko" ;;
        *) uptodate "$OUT/stock/$m.ko" "$f" || cp "$f" "$OUT/stock/$m.ko" ;;
    esac
done
echo "$KVER" > "$OUT/kernel-version.tmp"
cmp -s "$OUT/kernel-version.tmp" "$OUT/kernel-version" 2>/dev/null && rm "$OUT/kernel-version.tmp" || mv "$OUT/kernel-version.tmp" "$OUT/kernel-version"
echo "kernel oracle build: $OUT"
