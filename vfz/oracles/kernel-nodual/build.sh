#!/bin/bash
# build.sh [OUT_DIR] - build the "no dual names" fat.ko/vfat.ko for the
# installed Debian kernel (linux-image-amd64), out of tree, in three variants:
#   OUT_DIR/v1/{fat.ko,vfat.ko}   the June 2009 seed patch  (VFAT_NODUAL=1)
#   OUT_DIR/v3/{fat.ko,vfat.ko}   the July 2009 revision, writer and reader
#                                 (VFAT_NODUAL=3 VFAT_NO83NAME=1)
#   OUT_DIR/no83/{fat.ko,vfat.ko} stock 6.1 with the July reader side only
#                                 (VFAT_NODUAL=0 VFAT_NO83NAME=1)
# OUT_DIR defaults to <repo>/build/kernel-nodual. fs/fat comes from
# /usr/src/linux-source-6.1.tar.xz, nodual.patch (next to this script) is
# applied to it, and the modules are built with
#   make -C /lib/modules/<ver>/build M=<dir> VFAT_NODUAL=<0|1|3> \
#        VFAT_NO83NAME=<0|1> modules
# Nothing is installed on the host. The build is cached: when the patch,
# this script, the source tarball and the headers are unchanged and the
# modules are present, nothing is rebuilt.
#
# Environment (optional): LINUX_SOURCE_TARBALL (default above),
# KERNEL_VERSION (default: the version linux-image-amd64 depends on),
# JOBS (default 2).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../../.." && pwd)
OUT=${1:-$REPO/build/kernel-nodual}
PATCH=$HERE/nodual.patch
TARBALL=${LINUX_SOURCE_TARBALL:-/usr/src/linux-source-6.1.tar.xz}
JOBS=${JOBS:-2}
# name:VFAT_NODUAL:VFAT_NO83NAME
VARIANTS="v1:1:0 v3:3:1 no83:0:1"

die() { echo "build.sh: $*" >&2; exit 1; }
log() { echo "build.sh: $*" >&2; }

# --- what we need -------------------------------------------------------
for tool in make gcc tar xz patch modinfo sha256sum strip flock; do
	command -v "$tool" >/dev/null 2>&1 ||
		die "missing tool '$tool' (apt-get install build-essential xz-utils patch kmod)"
done
[ -f "$PATCH" ] || die "missing $PATCH"

if [ -z "${KERNEL_VERSION:-}" ]; then
	deps=$(dpkg-query -W -f='${Depends}' linux-image-amd64 2>/dev/null) ||
		die "linux-image-amd64 is not installed (apt-get install linux-image-amd64 linux-headers-amd64)"
	KERNEL_VERSION=$(printf '%s\n' "$deps" | tr ',|' '\n\n' |
		sed -n 's/^ *linux-image-\([0-9][^ ]*\).*/\1/p' | head -n1)
	KERNEL_VERSION=${KERNEL_VERSION%-unsigned}
	[ -n "$KERNEL_VERSION" ] ||
		die "cannot tell the kernel version from linux-image-amd64's Depends: '$deps'"
fi
KVER=$KERNEL_VERSION
KBUILD=/lib/modules/$KVER/build
[ -f "$KBUILD/Makefile" ] && [ -f "$KBUILD/Module.symvers" ] ||
	die "missing kernel headers for $KVER ($KBUILD): apt-get install linux-headers-amd64 (linux-headers-$KVER)"
[ -f "$TARBALL" ] ||
	die "missing kernel source $TARBALL: apt-get install linux-source-6.1"

# vermagic the installed kernel expects: that of its own fat.ko when
# present, else the release string of the headers.
STOCK_FAT=$(ls /lib/modules/"$KVER"/kernel/fs/fat/fat.ko* 2>/dev/null | head -n1 || true)
if [ -n "$STOCK_FAT" ]; then
	WANT_VERMAGIC=$(modinfo -F vermagic "$STOCK_FAT")
else
	WANT_VERMAGIC=""
fi

mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

# one build at a time per OUT_DIR
exec 9>"$OUT/.lock"
flock 9

key=$( {
	sha256sum "$PATCH" "$HERE/build.sh"
	stat -c '%n %s %Y' "$TARBALL"
	echo "$KVER"
	sha256sum "$KBUILD/Module.symvers" "$KBUILD/include/generated/utsrelease.h" 2>/dev/null || true
} | sha256sum | cut -d' ' -f1)

check_vermagic() {	# ko
	local got
	got=$(modinfo -F vermagic "$1") || die "modinfo failed on $1"
	case "$got" in
	"$KVER "*) ;;
	*) die "$1: vermagic '$got' does not match kernel $KVER" ;;
	esac
	if [ -n "$WANT_VERMAGIC" ] && [ "$got" != "$WANT_VERMAGIC" ]; then
		die "$1: vermagic '$got' differs from the installed $STOCK_FAT ('$WANT_VERMAGIC')"
	fi
}

up_to_date() {
	[ -f "$OUT/stamp" ] && [ "$(cat "$OUT/stamp")" = "$key" ] || return 1
	for spec in $VARIANTS; do
		v=${spec%%:*}
		[ -f "$OUT/$v/fat.ko" ] && [ -f "$OUT/$v/vfat.ko" ] || return 1
	done
}

if up_to_date; then
	log "up to date: $OUT/v1 $OUT/v3 $OUT/no83 (kernel $KVER)"
	exit 0
fi
rm -f "$OUT/stamp"

# --- pristine fs/fat, extracted once per tarball ---------------------------
src_key=$(stat -c '%n %s %Y' "$TARBALL" | sha256sum | cut -d' ' -f1)
PRISTINE=$OUT/src/pristine
if [ ! -f "$PRISTINE/.key" ] || [ "$(cat "$PRISTINE/.key")" != "$src_key" ]; then
	log "extracting fs/fat from $TARBALL"
	rm -rf "$PRISTINE" "$PRISTINE.tmp"
	mkdir -p "$PRISTINE.tmp"
	tar -xJf "$TARBALL" -C "$PRISTINE.tmp" --wildcards --strip-components=1 \
		'*/fs/fat/*' || die "cannot extract fs/fat from $TARBALL"
	[ -f "$PRISTINE.tmp/fs/fat/namei_vfat.c" ] ||
		die "$TARBALL has no fs/fat/namei_vfat.c"
	echo "$src_key" >"$PRISTINE.tmp/.key"
	mv "$PRISTINE.tmp" "$PRISTINE"
fi

# --- patch and build each variant ---------------------------------------------
for spec in $VARIANTS; do
	IFS=: read -r v nodual no83 <<<"$spec"
	work=$OUT/src/$v
	rm -rf "$work"
	mkdir -p "$work"
	cp -r "$PRISTINE/fs" "$work/"
	patch -p1 -s --no-backup-if-mismatch -d "$work" <"$PATCH" ||
		die "nodual.patch does not apply to fs/fat of $TARBALL"
	log "building $v (VFAT_NODUAL=$nodual VFAT_NO83NAME=$no83) against $KBUILD"
	make -s -C "$KBUILD" M="$work/fs/fat" VFAT_NODUAL="$nodual" \
		VFAT_NO83NAME="$no83" -j"$JOBS" modules >"$work/build.log" 2>&1 || {
		cat "$work/build.log" >&2
		die "build of $v failed"
	}
	# gcc warnings are errors here: the port must build cleanly
	if grep -E 'warning:' "$work/build.log" >&2; then
		die "build of $v has compiler warnings"
	fi
	for m in fat vfat; do
		check_vermagic "$work/fs/fat/$m.ko"
	done
	rm -rf "$OUT/$v.tmp"
	mkdir -p "$OUT/$v.tmp"
	cp "$work/fs/fat/fat.ko" "$work/fs/fat/vfat.ko" "$OUT/$v.tmp/"
	# debug info only makes the initrd of the VM bigger
	strip --strip-debug "$OUT/$v.tmp/fat.ko" "$OUT/$v.tmp/vfat.ko"
	rm -rf "$OUT/$v"
	mv "$OUT/$v.tmp" "$OUT/$v"
done

echo "$key" >"$OUT/stamp"
log "built $OUT/v1, $OUT/v3 and $OUT/no83 for kernel $KVER ($(modinfo -F vermagic "$OUT/v1/vfat.ko"))"
