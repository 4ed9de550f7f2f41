#!/bin/sh
# ASan + UBSan builds of the peers' readers from their Debian source
# packages (issue 19): mtools (mdir, mcopy, mtype) and dosfstools (fsck.fat).
#
#   nice scripts/build-asan-peers.sh [OUT]      (default OUT: build-asan-peers)
#
# The machine's apt sources carry no deb-src lines, so the source packages
# come through a private apt state under OUT/apt (its own sources list,
# lists and cache: the system's apt configuration is not touched). Debian's
# patches are applied (dpkg-source -x), then each is configured with
# -fsanitize=address,undefined and built; the binaries land in OUT/bin.
# Use them as the oracles' commands:
#   vfatfuzz hostile --asan-peers OUT   (mtools: mdir/mcopy; dosfsck: fsck.fat)
set -eu
OUT=$(realpath -m "${1:-build-asan-peers}")
SUITE=${SUITE:-bookworm}
mkdir -p "$OUT/apt/lists/partial" "$OUT/apt/cache/archives/partial" "$OUT/src" "$OUT/bin"
echo "deb-src http://deb.debian.org/debian $SUITE main" > "$OUT/apt/sources.list"
APT="-o Dir::Etc::sourcelist=$OUT/apt/sources.list -o Dir::Etc::sourceparts=/nonexistent
     -o Dir::State::Lists=$OUT/apt/lists -o Dir::Cache=$OUT/apt/cache"
# shellcheck disable=SC2086
apt-get -qq $APT update
cd "$OUT/src"
# shellcheck disable=SC2086
apt-get -qq $APT source --download-only mtools dosfstools
CFLAGS="-g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined"
LDFLAGS="-fsanitize=address,undefined"
export CFLAGS LDFLAGS

build() {       # $1: package name
	dsc=$(ls "$1"_*.dsc | head -1)
	rm -rf "$1"
	dpkg-source -q -x "$dsc" "$1" >/dev/null
	(cd "$1" && ./configure -q --disable-dependency-tracking >/dev/null && make -s -j"${JOBS:-1}" >/dev/null)
}

build mtools
cp mtools/mtools "$OUT/bin/mtools"
for t in mdir mcopy mtype; do ln -sf mtools "$OUT/bin/$t"; done
build dosfstools
cp dosfstools/src/fsck.fat "$OUT/bin/fsck.fat"
"$OUT/bin/fsck.fat" --help >/dev/null 2>&1 || true
echo "ASan peers in $OUT/bin: $(ls "$OUT/bin" | tr '\n' ' ')"
