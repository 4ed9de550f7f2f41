"""A vvfat volume from a model tree: the tree materialised as a host directory, `qemu-img convert` of vvfat's disk, its FAT partition cut out of the MBR disk."""
import os
import shutil
import struct
import tempfile

from vfz import lifeline
from vfz.proc import run

QEMU_IMG = "qemu-img"
STAMP = 1246406400          # 2009-07-01 00:00 UTC: every host file's times (same tree, same bytes)
ROOT_SLOTS = 512            # vvfat's root: 0x20 * 16 sectors per cluster entries, any FAT type
PART_TYPES = {0x01, 0x04, 0x06, 0x0B, 0x0C, 0x0E}

# registry name -> (the fat: options of its drive, in --image-opts form)
VARIANTS = {
    "vvfat-12": {"fat-type": "12"},                          # 32 MB disk (64 cylinders)
    "vvfat-16": {"fat-type": "16"},                          # 504 MB disk
    "vvfat-32": {"fat-type": "32"},                          # 504 MB disk, "not tested"
    "vvfat-floppy": {"floppy": "on"},                        # 2.88 MB floppy, FAT12
    "vvfat-floppy-16": {"floppy": "on", "fat-type": "16"},   # 2.88 MB floppy, FAT16 boot sector
}


# clusters (8 KiB each) of each variant's volume, measured from the BPBs qemu-img 7.2 writes;
# vvfat refuses a tree that needs more ("Directory does not fit in FAT12 (capacity 2.88 MB)":
# 354 files of 8192 bytes in one subdirectory of 3 clusters fit the floppy, 355 do not)
CLUSTERS = {"vvfat-12": 4024, "vvfat-16": 64474, "vvfat-32": 64443, "vvfat-floppy": 357,
            "vvfat-floppy-16": 357}
CLUSTER = 8192


def clusters_needed(root):
    """Data clusters vvfat gives model tree root: each file its bytes, each
    directory but the root (a fixed area) its '.', '..' and every entry's
    long-name slots and short entry, at least one cluster."""
    from vfz.model.tree import slots_needed
    n, stack = 0, [(root, True)]
    while stack:
        d, is_root = stack.pop()
        if not is_root:
            slots = 2 + sum(slots_needed(k.name, "lfn") for k in d.kids.values())
            n += max(1, -(-slots * 32 // CLUSTER))
        for k in d.kids.values():
            if k.is_dir:
                stack.append((k, False))
            else:
                n += -(-len(k.data) // CLUSTER)
    return n


def spec(name):
    """The fat: drive string a user writes for the variant (reports, raw)."""
    o = VARIANTS[name]
    parts = ["fat"] + (["floppy"] if o.get("floppy") else []) + ([o["fat-type"]] if "fat-type" in o else [])
    return ":".join(parts) + ":DIR"


def available():
    """(qemu-img runs, why not)."""
    if shutil.which(QEMU_IMG) is None:
        return False, "qemu-img not installed (Debian qemu-utils)"
    return True, ""


def _enc(name):
    return name.encode("utf-8", "surrogatepass")


def materialise(root, top):
    """Write model tree root (vfz.model.Node) under host directory top:
    directories, files with their bytes, every time set to STAMP. Created
    relative to each parent's descriptor, so no host path limit applies
    here (vvfat's own stat of each full path still does)."""
    stack = [(root, os.open(top, os.O_RDONLY | os.O_DIRECTORY))]
    fds = []
    try:
        while stack:
            node, dfd = stack.pop()
            fds.append(dfd)
            for k in node.kids.values():
                n = _enc(k.name)
                if k.is_dir:
                    os.mkdir(n, dir_fd=dfd)
                    stack.append((k, os.open(n, os.O_RDONLY | os.O_DIRECTORY, dir_fd=dfd)))
                else:
                    fd = os.open(n, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644, dir_fd=dfd)
                    try:
                        os.write(fd, bytes(k.data))
                        os.utime(fd, (STAMP, STAMP))
                    finally:
                        os.close(fd)
        # directories last: writing into one sets its mtime
        for dfd in fds:
            os.utime(dfd, (STAMP, STAMP))
    finally:
        for dfd in fds:
            os.close(dfd)
        for _, dfd in stack:
            os.close(dfd)


def partition(disk):
    """(byte offset, byte length) of the FAT volume in vvfat's disk image:
    the first MBR partition entry (hard-disk geometries), or the whole
    image when sector 0 is the boot sector itself (floppies)."""
    size = os.path.getsize(disk)
    with open(disk, "rb") as f:
        s0 = f.read(512)
    if len(s0) < 512 or s0[0] in (0xEB, 0xE9) or s0[510:512] != b"\x55\xaa":
        return 0, size
    ptype = s0[0x1BE + 4]
    start, length = struct.unpack_from("<II", s0, 0x1BE + 8)
    if ptype not in PART_TYPES or not start or start * 512 + length * 512 > size:
        raise ValueError(f"vvfat disk: MBR partition 1 unusable (type {ptype:#x}, start {start}, "
                         f"length {length}, disk {size} bytes)")
    return start * 512, length * 512


def copy_range(src, dst, off, length):
    """Bytes [off, off+length) of src into a new sparse file dst: only the
    data regions (SEEK_DATA/SEEK_HOLE) are read."""
    with open(src, "rb") as f, open(dst, "wb") as g:
        g.truncate(length)
        fd = f.fileno()
        pos, end = off, off + length
        while pos < end:
            try:
                d = os.lseek(fd, pos, os.SEEK_DATA)
            except OSError:          # ENXIO: no data past pos
                break
            if d >= end:
                break
            h = min(os.lseek(fd, d, os.SEEK_HOLE), end)
            f.seek(d)
            g.seek(d - off)
            left = h - d
            while left:
                b = f.read(min(left, 1 << 20))
                if not b:
                    break
                g.write(b)
                left -= len(b)
            pos = h


def make_volume(name, root, image, timeout=60.0):
    """The vvfat volume of variant name holding model tree root, written
    atomically over image. -> (raw text, error or None)."""
    work = lifeline.scratch(tempfile.mkdtemp(prefix="vfz-vvfat-"))
    try:
        top = os.path.join(work, "d")
        os.mkdir(top)
        materialise(root, top)
        disk = os.path.join(work, "disk.img")
        opts = ",".join(f"{k}={v}" for k, v in VARIANTS[name].items())
        argv = [QEMU_IMG, "convert", "--image-opts", f"driver=vvfat,dir=d,{opts}", "-O", "raw", disk]
        # cwd: the tree's host paths are vvfat's d/<path>, as short as they go
        p = run(argv, timeout=timeout, cwd=work)
        raw = p.raw()
        if p.error or p.rc != 0:
            return raw, f"qemu-img convert: {p.error or 'exit %s' % p.rc}: " \
                        f"{(p.errtext or p.text).strip().splitlines()[-1:]}"
        off, length = partition(disk)
        raw += f"# FAT volume at byte {off}, {length} bytes\n"
        tmp = image + ".vvfat-tmp"
        copy_range(disk, tmp, off, length)
        os.replace(tmp, image)
        return raw, None
    finally:
        shutil.rmtree(work, ignore_errors=True)
        lifeline.unscratch(work)
