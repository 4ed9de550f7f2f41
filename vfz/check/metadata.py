"""Whole-metadata comparison of two FAT images: the boot sector, the reserved sectors (FSInfo, FAT32's backups), every FAT copy and every directory slot, field by field, masked only where a kernel draws the time or randomness.

compare(a, b, jiffies=False) -> [Difference]: every field whose bytes
differ between image a and image b (paths), in image order. The regions:

    boot           sector 0, field by field (the BPB of its FAT type)
    fsinfo         FAT32's FSInfo sector (free count, next free, signatures)
    boot-backup    FAT32's backup boot sector and the sectors after it
    fsinfo-backup  (its FSInfo copy), whatever the kernel leaves there
    reserved       the other reserved sectors
    fat1, fat2...  every FAT copy, entry by entry (and the slack after the
                   last entry)
    root           FAT12/16's fixed root directory, slot by slot
    dir            every cluster of every directory reachable from the root
                   in either image (FAT32's root included), slot by slot,
                   past the end marker too; a slot of another kind in each
                   (LFN, short, free) is one difference, field "slot"

Not compared: the data area outside directories. File contents are the
readers' (their sha256); and the kernel writes a file's data only at
write-back, so the bytes of a file unlinked before the unmount never reach
its image (page-cache timing, not a format rule).

The masks: a difference is dropped only where the kernel draws the time or
randomness, each measured by running one kernel writer twice on the same
script and the same pristine image (vfz/check/metadata.py's test, and
docs/oracles.md, Twins):

CLOCK  the time fields of a short entry (live or deleted: bytes 13
       centiseconds, 14-15 create time, 16-17 create date, 18-19 access
       date, 22-23 modify time, 24-25 modify date), when both sides hold a
       valid FAT time or date there. The kernel stamps the guest's clock
       (two runs of one script differ in bytes 13, 14 and 22 of every
       entry they stamp); the core stamps a fixed 2009-06-27 05:19:32.
       An invalid value (month 0 or 13, hour 24, centiseconds 200...) is
       no clock and is reported.
JIFFIES (jiffies=True: a twin that is the stock kernel, whose fallback
       alias XXnnnn~D takes nnnn = jiffies & 0xffff in hex and D = '1' +
       (jiffies >> 16 & 7)) a short name whose two sides are both of that
       form and equal but for bytes 2-5 and 7, and the LFN checksums of
       the slots just before it when nothing else in them differs (the
       checksum sums those bytes); and the checksums of deleted LFN slots
       (0xE5 on both sides, nothing else differing) that no short entry of
       theirs follows: an add that found no cluster to grow into writes its
       slots in the free tail and marks them deleted (fat_add_entries'
       error_remove), so the alias they sum never reaches the disk (found
       on windowed volumes, issue 26). Seeded twins (the nodual kernels under
       nodual_seed) draw the core's stand-in for jiffies: no mask.

WRITEBACK  a deleted short entry (0xE5 on both sides) whose first cluster
       and size are vfat_add_entry's zeros on one side and, on the other,
       a data cluster (2 or more) with a size above 0: a file's inode
       written back before its unlink. The kernel writes an inode back at
       the unmount, or earlier when background write-back runs (more
       dirty data than the guest's dirty_background threshold, or the 30 s
       expiry under a slow TCG guest), so which of the two a deleted slot
       keeps is the kernel's timing, not a rule (measured: regression case
       fat32-root-growth-enospc, a 34 MB file written and unlinked:
       kernel-nodual-v3 kept cluster 3 and size 0x14af000 in one run, the
       other kernels and the core zeros). Only those three fields, and only
       both at once.

Nothing else is masked: FSInfo's free count and next-free hint, the backup
boot sector, every FAT copy and the slots past the end marker are
deterministic (two kernel runs write them alike) and compared.
"""
import mmap
import os
import struct
from dataclasses import dataclass

from vfz import fatimg

SHORT_FIELDS = (("name", 0, 11), ("attr", 11, 1), ("nt", 12, 1), ("ctime-cs", 13, 1),
                ("ctime", 14, 2), ("cdate", 16, 2), ("adate", 18, 2), ("cluster-hi", 20, 2),
                ("mtime", 22, 2), ("mdate", 24, 2), ("cluster-lo", 26, 2), ("size", 28, 4))
LFN_FIELDS = (("order", 0, 1), ("name1", 1, 10), ("attr", 11, 1), ("type", 12, 1),
              ("checksum", 13, 1), ("name2", 14, 12), ("cluster", 26, 2), ("name3", 28, 4))
_BPB = (("jump", 0, 3), ("oem", 3, 8), ("bytes-per-sector", 11, 2), ("sectors-per-cluster", 13, 1),
        ("reserved-sectors", 14, 2), ("fats", 16, 1), ("root-entries", 17, 2), ("total16", 19, 2),
        ("media", 21, 1), ("fat-sectors16", 22, 2), ("sectors-per-track", 24, 2), ("heads", 26, 2),
        ("hidden-sectors", 28, 4), ("total32", 32, 4))
BOOT16_FIELDS = _BPB + (("drive", 36, 1), ("state", 37, 1), ("boot-signature", 38, 1),
                        ("volume-id", 39, 4), ("label", 43, 11), ("fs-type", 54, 8),
                        ("boot-code", 62, 448), ("signature", 510, 2))
BOOT32_FIELDS = _BPB + (("fat-sectors32", 36, 4), ("ext-flags", 40, 2), ("version", 42, 2),
                        ("root-cluster", 44, 4), ("fsinfo-sector", 48, 2), ("backup-sector", 50, 2),
                        ("reserved", 52, 12), ("drive", 64, 1), ("state", 65, 1),
                        ("boot-signature", 66, 1), ("volume-id", 67, 4), ("label", 71, 11),
                        ("fs-type", 82, 8), ("boot-code", 90, 420), ("signature", 510, 2))
FSINFO_FIELDS = (("lead-signature", 0, 4), ("reserved", 4, 480), ("struct-signature", 484, 4),
                 ("free-count", 488, 4), ("next-free", 492, 4), ("reserved2", 496, 12),
                 ("trail-signature", 508, 4))
CLOCK_FIELDS = frozenset({"ctime-cs", "ctime", "cdate", "adate", "mtime", "mdate"})
ATTR_LFN = 0x0F


@dataclass(frozen=True)
class Difference:
    region: str         # boot | fsinfo | boot-backup | fsinfo-backup | reserved | fatN | root | dir
    offset: int         # the field's first byte in the image
    field: str          # the field's name ("free-count", "entry", "size", ...)
    mine: str           # the field's bytes in image a (hex; a FAT entry's value)
    theirs: str         # ... in image b
    where: str = ""     # "cluster N" (FAT), "/path slot I" (directories), "sector N"
    path: str = None    # the entry a directory slot belongs to (or its directory)

    @property
    def kind(self):
        """region-field: what a finding's signature names (no numbers)."""
        return f"{self.region}-{self.field}"

    def __str__(self):
        w = f" {self.where}" if self.where else ""
        return f"{self.region}{w} {self.field} @0x{self.offset:x}: {self.mine} vs {self.theirs}"


class Unusable(ValueError):
    """An image whose boot sector cannot be compared (too short, no geometry)."""


def _open(path):
    """A read-only map of the image at path (or path itself: bytes)."""
    if isinstance(path, (bytes, bytearray)):
        if len(path) < 512:
            raise Unusable("image shorter than a sector")
        return path
    with open(path, "rb") as f:
        if os.fstat(f.fileno()).st_size < 512:
            raise Unusable(f"{path}: shorter than a sector")
        return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)


def _geometry(m):
    try:
        f = fatimg.Fat(m, copy=False)
    except struct.error as e:
        raise Unusable(f"no boot sector: {e}")
    if not f.bps or not f.spc or not f.spf or f.bps & (f.bps - 1) or f.bps < 512:
        raise Unusable(f"no FAT geometry (bytes per sector {f.bps}, sectors per cluster "
                       f"{f.spc}, FAT sectors {f.spf})")
    return f


def _fields_diff(region, base, x, y, table, where="", path=None):
    """Differences between two equal-length byte strings laid out by table."""
    out, seen = [], set()
    for name, off, n in table:
        seen.update(range(off, off + n))
        if off + n <= len(x) and x[off:off + n] != y[off:off + n]:
            out.append(Difference(region, base + off, name, x[off:off + n].hex(), y[off:off + n].hex(),
                                  where, path))
    rest = [i for i in range(len(x)) if i not in seen and x[i] != y[i]] if x != y else []
    if rest:
        lo, hi = rest[0], rest[-1] + 1
        out.append(Difference(region, base + lo, "rest", x[lo:hi].hex(), y[lo:hi].hex(), where, path))
    return out


def _sectors_diff(region, a, b, first, count, bps, table=None):
    out = []
    for s in range(first, first + count):
        o = s * bps
        x, y = a[o:o + bps], b[o:o + bps]
        if x == y:
            continue
        if table:
            out += _fields_diff(region, o, x, y, table, f"sector {s}")
        else:
            out += _fields_diff(region, o, x, y, (), f"sector {s}")
    return out


def _reserved(fa, a, b):
    """The boot sector and the reserved sectors after it."""
    bps, res = fa.bps, fa.res
    if fa.bits == 32:
        out = _sectors_diff("boot", a, b, 0, 1, bps, BOOT32_FIELDS)
        fsi = struct.unpack_from("<H", a, 48)[0]
        bk = struct.unpack_from("<H", a, 50)[0]
        for s in range(1, res):
            if s == fsi:
                out += _sectors_diff("fsinfo", a, b, s, 1, bps, FSINFO_FIELDS)
            elif s == bk:
                out += _sectors_diff("boot-backup", a, b, s, 1, bps, BOOT32_FIELDS)
            elif fsi and bk and s == bk + fsi:
                out += _sectors_diff("fsinfo-backup", a, b, s, 1, bps, FSINFO_FIELDS)
            else:
                out += _sectors_diff("reserved", a, b, s, 1, bps)
        return out
    return (_sectors_diff("boot", a, b, 0, 1, bps, BOOT16_FIELDS)
            + _sectors_diff("reserved", a, b, 1, res - 1, bps))


def _fat_entry(buf, off, bits, n):
    if bits == 12:
        v = struct.unpack_from("<H", buf, off + n * 3 // 2)[0]
        return (v >> 4) if n & 1 else (v & 0xFFF)
    if bits == 16:
        return struct.unpack_from("<H", buf, off + n * 2)[0]
    return struct.unpack_from("<I", buf, off + n * 4)[0]


def _fats(fa, a, b):
    """Every FAT copy, entry by entry (FAT32's top four bits included: the
    kernel keeps them), then the slack after the last entry."""
    out = []
    size = fa.spf * fa.bps
    nent = fa.clusters + 2
    used = (nent * fa.bits + 7) // 8
    for k in range(fa.nfats):
        off = fa.fat_off + k * size
        x, y = a[off:off + size], b[off:off + size]
        if x == y:
            continue
        region = f"fat{k + 1}"
        for lo in range(0, min(used, size), 4096):
            if x[lo:lo + 4096] == y[lo:lo + 4096]:
                continue
            first = lo * 8 // fa.bits
            last = min(nent, (min(lo + 4096, used) * 8 + fa.bits - 1) // fa.bits + 1)
            for n in range(first, last):
                if (n * fa.bits + fa.bits + 7) // 8 > size:
                    break
                u, v = _fat_entry(a, off, fa.bits, n), _fat_entry(b, off, fa.bits, n)
                if u != v:
                    out.append(Difference(region, off + n * fa.bits // 8, "entry", f"0x{u:x}", f"0x{v:x}",
                                          f"cluster {n}"))
        if used < size and x[used:] != y[used:]:
            d = [i for i in range(used, size) if x[i] != y[i]]
            out.append(Difference(region, off + d[0], "slack", x[d[0]:d[-1] + 1].hex(),
                                  y[d[0]:d[-1] + 1].hex(), f"byte {d[0]}"))
    return out


# ---------------------------------------------------------------- directories
def _slot_name(m, offs, i):
    """The long name of the LFN set ending before slot i (checksum-valid), else None."""
    j, units = i - 1, []
    ck = fatimg.lfn_checksum(m[offs[i]:offs[i] + 11])
    while j >= 0:
        s = m[offs[j]:offs[j] + 32]
        if s[11] != ATTR_LFN or s[0] in (0, 0xE5) or s[13] != ck:
            return None
        units += fatimg.lfn_units(s)
        if s[0] & 0x40:
            break
        j -= 1
    else:
        return None
    u = []
    for c in units:
        if c in (0, 0xFFFF):
            break
        u.append(c)
    try:
        return b"".join(struct.pack("<H", c) for c in u).decode("utf-16-le")
    except UnicodeDecodeError:
        return None


def _walk(f, m, names=None):
    """{directory key: (path, [slot offsets])} of every directory reachable
    from the root (key None: FAT12/16's fixed root; else its first
    cluster); names, when given, gets {short slot offset: entry path}."""
    dirs = {}
    todo = [(None if f.bits != 32 else f.root_cluster, "/")]
    while todo:
        key, path = todo.pop(0)
        if key in dirs or (key is not None and not 2 <= key < f.clusters + 2):
            continue
        offs = [o for o in f.dir_slots(key) if o + 32 <= len(m)]
        dirs[key] = (path, offs)
        for i, o in enumerate(offs):
            s = m[o:o + 32]
            if s[0] == 0:
                break
            if s[0] == 0xE5 or s[11] == ATTR_LFN or s[11] & 0x08:
                continue
            isdir = s[11] & 0x10 and s[:11] not in (b".          ", b"..         ")
            if names is None and not isdir:
                continue
            full = path.rstrip("/") + "/" + (_slot_name(m, offs, i) or fatimg.short_text(s[:11]))
            if names is not None:
                names[o] = full
            if isdir:
                cl = struct.unpack_from("<H", s, 26)[0] | (struct.unpack_from("<H", s, 20)[0] << 16
                                                         if f.bits == 32 else 0)
                todo.append((cl, full))
    return dirs


def _same_dirs(f, dirs, a, b):
    """Every directory of dirs holds the same bytes in a and b (whole
    clusters, or the fixed root at once)."""
    for key in dirs:
        if key is None:
            o, n = f.data_sec * f.bps - f.rootent * 32, f.rootent * 32
            if a[o:o + n] != b[o:o + n]:
                return False
            continue
        for c in f.chain(key):
            o = f.cluster_off(c)
            if a[o:o + f.csize] != b[o:o + f.csize]:
                return False
    return True


def _kind(s):
    """free (end marker), lfn or short (a deleted one keeps its kind)."""
    return "free" if s[0] == 0 else "lfn" if s[11] == ATTR_LFN else "short"


def _is_short(s):
    return s[0] != 0 and s[11] != ATTR_LFN


def _valid_clock(field, v):
    x = int.from_bytes(v, "little")
    if field == "ctime-cs":
        return x <= 199
    if field in ("ctime", "mtime"):
        return (x & 0x1F) <= 29 and (x >> 5 & 0x3F) <= 59 and (x >> 11) <= 23
    return 1 <= (x >> 5 & 0xF) <= 12 and (x & 0x1F) >= 1     # a date


def _hex_tail(n):
    """Linux's fallback alias XXnnnn~D: nnnn = jiffies & 0xffff in hex,
    D = '1' + (jiffies >> 16 & 7) (vfat_create_shortname)."""
    return (len(n) == 11 and n[6:7] == b"~" and all(chr(c) in "0123456789ABCDEF" for c in n[2:6])
            and 0x31 <= n[7] <= 0x38)


def _jiffies_only(x, y):
    """Two short names that differ only in what a hex tail takes from jiffies."""
    return _hex_tail(x[:11]) and _hex_tail(y[:11]) and x[:2] == y[:2] and x[8:11] == y[8:11]


WRITEBACK_FIELDS = frozenset({"cluster-hi", "cluster-lo", "size"})


def _start_size(s):
    return (s[20] | s[21] << 8) << 16 | s[26] | s[27] << 8, int.from_bytes(s[28:32], "little")


def _writeback(x, y, ds):
    """The differences of two deleted short slots the WRITEBACK mask takes:
    their start and size, when one side holds zeros and the other a data
    cluster and a size above 0 (the inode written back before the unlink)."""
    if x[0] != 0xE5 or y[0] != 0xE5 or not {d.field for d in ds} & WRITEBACK_FIELDS:
        return []
    a, b = _start_size(x), _start_size(y)
    if not ((a == (0, 0) and b[0] >= 2 and b[1] > 0) or (b == (0, 0) and a[0] >= 2 and a[1] > 0)):
        return []
    return [d for d in ds if d.field in WRITEBACK_FIELDS]


def _dir_diff(region, key, path, offs, a, b, names, jiffies, masked):
    out, pending, dead = [], [], set()       # dead: pending checksums of deleted LFN slots

    def flush():
        """The pending checksum differences, those of deleted slots masked (JIFFIES)."""
        gone = [d for d in pending if id(d) in dead] if jiffies else []
        masked.extend(("JIFFIES", d) for d in gone)
        return [d for d in pending if d not in gone]
    where = path if key is None else f"{path} (cluster {key})"
    for i, o in enumerate(offs):
        x, y = a[o:o + 32], b[o:o + 32]
        if x == y:
            if _is_short(x):
                out += flush()
                pending = []
            continue
        p = names.get(o, path)
        w = f"{where} slot {i}"
        if _kind(x) != _kind(y):
            # an LFN slot in one, a short entry (or free) in the other:
            # one difference, its fields mean different things
            out += flush() + [Difference(region, o, "slot", x.hex(), y.hex(), w, p)]
            pending = []
            continue
        if x[11] == ATTR_LFN and y[11] == ATTR_LFN and x[0] != 0 and y[0] != 0:
            ds = _fields_diff(region, o, x, y, LFN_FIELDS, w, p)
            if [d.field for d in ds] == ["checksum"]:
                pending += ds                  # decided by the short entry after them
                if x[0] == y[0] == 0xE5:
                    dead.update(id(d) for d in ds)
            else:
                out += flush() + ds
                pending = []
            continue
        ds = _fields_diff(region, o, x, y, SHORT_FIELDS, w, p)
        if _is_short(x) and _is_short(y):
            clock = [d for d in ds if d.field in CLOCK_FIELDS and _valid_clock(d.field, bytes.fromhex(d.mine))
                     and _valid_clock(d.field, bytes.fromhex(d.theirs))]
            masked += [("CLOCK", d) for d in clock]
            ds = [d for d in ds if d not in clock]
            wb = _writeback(x, y, ds)
            masked += [("WRITEBACK", d) for d in wb]
            ds = [d for d in ds if d not in wb]
            if jiffies and x[0] == y[0] and _jiffies_only(x, y):
                masked += [("JIFFIES", d) for d in pending + ds if d.field in ("name", "checksum")]
                ds = [d for d in ds if d.field != "name"]
                pending = []
        out += flush() + ds
        pending = []
    return out + flush()


def compare(a_path, b_path, jiffies=False, masked=None):
    """[Difference] between the metadata of the images at a_path and b_path
    (or two images' bytes)
    (the geometry is a's; images of another size or geometry differ in the
    boot sector first). jiffies: b (or a) is a writer whose fallback aliases
    take their hex digits from jiffies (the JIFFIES mask). masked: a list
    that gets (mask name, Difference) for every difference a mask dropped.
    Raises Unusable."""
    masked = [] if masked is None else masked
    a = _open(a_path)
    try:
        b = _open(b_path)
    except BaseException:
        if isinstance(a, mmap.mmap):
            a.close()
        raise
    try:
        fa = _geometry(a)
        end = fa.data_sec * fa.bps
        if len(a) < end or len(b) < end:
            raise Unusable(f"images shorter than their metadata ({len(a)}, {len(b)} < {end} bytes)")
        out = []
        same_meta = a[:end] == b[:end]
        if same_meta and _same_dirs(fa, _walk(fa, a), a, b):
            return out           # the usual case, fast: the same FATs, so the same directories
        if not same_meta:
            out += _reserved(fa, a, b) + _fats(fa, a, b)
        names = {}
        fb = _geometry(b)
        if (fb.bps, fb.spc, fb.res, fb.nfats, fb.spf, fb.rootent) == (fa.bps, fa.spc, fa.res, fa.nfats,
                                                                      fa.spf, fa.rootent):
            db = _walk(fb, b, names)
        else:
            db = {}
        da = _walk(fa, a, names)          # a's names win
        for key in sorted(set(da) | set(db), key=lambda k: (-1 if k is None else k)):
            path, offs = da.get(key) or db[key]
            offs = [o for o in offs if o + 32 <= min(len(a), len(b))]
            region = "root" if key is None else "dir"
            out += _dir_diff(region, key, path, offs, a, b, names, jiffies, masked)
        return out
    finally:
        for m in (a, b):
            if isinstance(m, mmap.mmap):
                m.close()
