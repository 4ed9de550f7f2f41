#!/usr/bin/python3
"""Build helpers for the kernel oracle (called by build.sh).

    mkimage.py vmlinux BZIMAGE OUT        decompress the ELF kernel out of a bzImage
    mkimage.py initramfs OUT MODDIR ROOT  cpio newc archive of directory ROOT
    mkimage.py moddeps MODDIR NAME...     print the module files NAME needs, in load order

Our own code: the compressed payload of a bzImage is found by its
compression magic and inflated with the standard library (xz/lzma/gzip/
bzip2); the first candidate that inflates to an ELF image wins.
"""
import bz2
import lzma
import os
import stat
import sys
import zlib

MAGICS = [
    (b"\xfd7zXZ\x00", "xz"),
    (b"\x1f\x8b\x08", "gzip"),
    (b"\x5d\x00\x00", "lzma"),
    (b"BZh", "bzip2"),
]


def _inflate(blob, kind):
    if kind == "xz":
        d = lzma.LZMADecompressor(format=lzma.FORMAT_XZ)
        return d.decompress(blob)
    if kind == "lzma":
        d = lzma.LZMADecompressor(format=lzma.FORMAT_ALONE)
        return d.decompress(blob)
    if kind == "gzip":
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        return d.decompress(blob)
    if kind == "bzip2":
        return bz2.BZ2Decompressor().decompress(blob)
    raise ValueError(kind)


def extract_vmlinux(bzimage):
    with open(bzimage, "rb") as f:
        data = f.read()
    if data[:4] == b"\x7fELF":
        return data
    for magic, kind in MAGICS:
        pos = data.find(magic)
        while pos >= 0:
            try:
                out = _inflate(data[pos:], kind)
            except (lzma.LZMAError, zlib.error, OSError, EOFError, ValueError):
                out = b""
            if out[:4] == b"\x7fELF":
                return out
            pos = data.find(magic, pos + 1)
    raise SystemExit(f"mkimage: no compressed ELF kernel found in {bzimage}")


def _cpio_entry(name, mode, data=b"", ino=1, nlink=1, rdev=(0, 0)):
    nb = name.encode() + b"\0"
    hdr = "070701" + "".join("%08X" % v for v in (
        ino, mode, 0, 0, nlink, 0, len(data), 0, 0, rdev[0], rdev[1], len(nb), 0))
    out = hdr.encode() + nb
    out += b"\0" * (-len(out) % 4)
    out += data
    out += b"\0" * (-len(out) % 4)
    return out


def write_initramfs(out, root):
    """cpio newc of ROOT (regular files, dirs, symlinks), owned by root."""
    parts = []
    ino = 1
    # device nodes the kernel needs before devtmpfs is mounted
    parts.append(_cpio_entry("dev", stat.S_IFDIR | 0o755, ino=ino)); ino += 1
    parts.append(_cpio_entry("dev/console", stat.S_IFCHR | 0o600, ino=ino, rdev=(5, 1))); ino += 1
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        rel = os.path.relpath(dirpath, root)
        for n in sorted(dirnames) + sorted(filenames):
            full = os.path.join(dirpath, n)
            name = n if rel == "." else os.path.join(rel, n)
            if name == "dev":
                continue
            st = os.lstat(full)
            if stat.S_ISLNK(st.st_mode):
                parts.append(_cpio_entry(name, stat.S_IFLNK | 0o777,
                                         os.readlink(full).encode(), ino=ino))
            elif stat.S_ISDIR(st.st_mode):
                parts.append(_cpio_entry(name, stat.S_IFDIR | 0o755, ino=ino))
            else:
                with open(full, "rb") as f:
                    parts.append(_cpio_entry(name, stat.S_IFREG | (st.st_mode & 0o777),
                                             f.read(), ino=ino))
            ino += 1
    parts.append(_cpio_entry("TRAILER!!!", 0, ino=0, nlink=1))
    blob = b"".join(parts)
    blob += b"\0" * (-len(blob) % 512)
    tmp = out + ".tmp"
    with open(tmp, "wb") as f:
        f.write(blob)
    os.replace(tmp, out)


def moddeps(moddir, names):
    """Module files (relative to MODDIR) for NAMES with dependencies, deps first."""
    deps = {}
    with open(os.path.join(moddir, "modules.dep")) as f:
        for line in f:
            mod, _, rest = line.partition(":")
            deps[mod] = rest.split()
    byname = {}
    for mod in deps:
        base = os.path.basename(mod).split(".ko")[0]
        byname[base] = mod
        byname[base.replace("-", "_")] = mod
    order = []

    def visit(mod):
        if mod in order:
            return
        for d in deps.get(mod, []):
            visit(d)
        order.append(mod)

    for n in names:
        if n not in byname:
            raise SystemExit(f"mkimage: module {n} not in {moddir}/modules.dep")
        visit(byname[n])
    return order


def main(argv):
    if len(argv) >= 4 and argv[1] == "vmlinux":
        data = extract_vmlinux(argv[2])
        tmp = argv[3] + ".tmp"
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, argv[3])
        print(f"vmlinux: {len(data)} bytes -> {argv[3]}")
        return 0
    if len(argv) == 4 and argv[1] == "initramfs":
        write_initramfs(argv[2], argv[3])
        print(f"initramfs: {os.path.getsize(argv[2])} bytes -> {argv[2]}")
        return 0
    if len(argv) >= 3 and argv[1] == "moddeps":
        for m in moddeps(argv[2], argv[3:]):
            print(m)
        return 0
    print("usage: mkimage.py vmlinux BZIMAGE OUT | initramfs OUT ROOT | moddeps MODDIR NAME...",
          file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
