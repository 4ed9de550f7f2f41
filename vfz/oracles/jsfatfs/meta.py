"""The npm fatfs package's bugs in the second grammar (truncate, chmod, utimes) and their recognition from evidence.

Measured with the jsfatfs writer (server.js: fs.truncate, fs.chmod,
fs.utimes) on mkfs.fat FAT12/16/32 volumes, read in index.js and dir.js:
  * SHRINK: fs.ftruncate to fewer clusters (chains.js truncate) writes
    prefix + 0 (0xF00, 0xFF00, 0x0FFFFF00) into every freed cluster's FAT
    entry instead of 0, and the kept last cluster still links to the first
    freed one: fsck.fat "Cluster N out of range (65280 > 8096)", "File size
    is 10 bytes, cluster chain length is > 512 bytes", the core's `vfat ls`
    reads EIO. A shrink within the same cluster count changes no FAT entry
    (the package keeps a cluster even for size 0: jsfatfs-empty-file-cluster).
  * DIR_VOLUME: fs.chmod of a directory (dir.js _updateEntry: volume_id =
    mode has no S_IFREG) sets ATTR_VOLUME on it: attribute 0x18 | bits, so
    the directory and everything under it vanish from every reader (a label
    entry) and fsck.fat takes it for a second label.
  * TIME_WRAP: fs.utimes stores Date's year - 1980 in the 7-bit field with
    no clamp (1970 -> 2098, 2108 -> 1980, as mtools does), and a time past
    JavaScript's Date range (8.64e15 ms) as date 0 (read as 1980-01-01).
known_failure names SHRINK and DIR_VOLUME at the op they start at (the
readers check the script cut before it); explain names TIME_WRAP.
"""
import copy
import dataclasses
import math
import struct

from vfz import model
from vfz.oracles.jsfatfs.fewclusters import package_view
from vfz.oracles import NamedException
from vfz.oracles.evidence import FAT_MIN_SEC, time_wrap_holds
from vfz.oracles.jsfatfs.profile import PROFILE

SHRINK = "jsfatfs-truncate-ff00"
DIR_VOLUME = "jsfatfs-chmod-dir-volume"
TIME_WRAP = "jsfatfs-time-wrap"
FREED = {12: 0xF00, 16: 0xFF00, 32: 0x0FFFFF00}     # what the package writes into a freed entry


def _fat(image):
    """The image as the package reads it (its FAT width by the count, the
    root from BPB_RootClus: on a FAT32 volume of few clusters it is the
    view its marks are in, fewclusters.PackageView)."""
    try:
        return package_view(image)
    except (OSError, ValueError, struct.error, TypeError):
        return None


def freed_marks(fat):
    """How many FAT entries hold the package's freed-cluster value."""
    v = FREED[fat.bits]
    return sum(1 for n in range(2, fat.clusters + 2) if fat.get(n) == v)


def dir_volumes(fat, limit=4096):
    """Entries marked both directory and volume label (attr & 0x18 == 0x18,
    not an LFN slot), found walking every directory from the root: their
    (11-byte name, attr)."""
    out, seen, todo = [], set(), [None]
    while todo and len(seen) < limit:
        c = todo.pop()
        if c in seen:
            continue
        seen.add(c)
        try:
            ents = fat.entries(c)
        except (IndexError, struct.error):
            continue
        for _, e in ents:
            if e[0] == 0xE5 or e[11] == 0x0F or e[:2] in (b". ", b".."):
                continue
            if e[11] & 0x10:
                cl = struct.unpack_from("<H", e, 26)[0] | (struct.unpack_from("<H", e, 20)[0] << 16
                                                           if fat.bits == 32 else 0)
                if cl >= 2:
                    todo.append(cl)
                if e[11] & 0x08:
                    out.append((bytes(e[:11]), e[11]))
    return out


def known_failure(ops, results, image):
    """The first op of ops (with the model's results) that starts SHRINK (a
    truncate that frees a cluster, the image holding freed marks) or
    DIR_VOLUME (a chattr of a directory, the image holding a directory
    marked as a label) -> (index, name), else None."""
    fat = _fat(image)
    if fat is None:
        return None
    shrink = dirvol = None
    m = model.Model(PROFILE, "nodual", rule="lfn")
    for i, op in enumerate(ops):
        if op.kind == "truncate" and i < len(results) and results[i] == "ok":
            node, err = m._walk(m._split(op.path))
            if not err and not node.is_dir:
                old = max(1, math.ceil(len(node.data) / fat.csize))
                if max(1, math.ceil(op.args[1] / fat.csize)) < old:
                    if shrink is None:
                        shrink = freed_marks(fat) > 0
                    if shrink:
                        return i, SHRINK
        if op.kind == "chattr" and i < len(results) and results[i] == "ok":
            node, err = m._walk(m._split(op.path))
            if not err and node.is_dir and node is not m.root:
                if dirvol is None:
                    dirvol = bool(dir_volumes(fat))
                if dirvol:
                    return i, DIR_VOLUME
        m.apply_one(op)
    return None


def explain(ev):
    """TIME_WRAP from a reader's divergence on the package's image."""
    return TIME_WRAP if time_wrap_holds(ev, invalid=FAT_MIN_SEC) else None


TIMES = {"mtime", "atime"}


def explain_split(ev, explain_rest):
    """A listing whose entries differ in times only (TIME_WRAP, explain)
    and otherwise (explain_rest: exceptions.explain_write, which compares
    no times), each part explained -> the sorted names, else None (run
    3201, b887fdf2a9d3: a gap write's size and a wrapped access date)."""
    d = ev.diff if ev.verdict == "differs" else None
    if d is None or d.ambiguous:
        return None
    times = [(a, b) for a, b in d.changed if {k for k in set(a) | set(b) if a.get(k) != b.get(k)} <= TIMES]
    rest = [p for p in d.changed if p not in times]
    if not times or not (rest or d.missing or d.extra):
        return None
    dt, dr = copy.copy(d), copy.copy(d)
    dt.changed, dt.missing, dt.extra, dt.label = times, [], [], None
    dr.changed = rest
    first = explain(dataclasses.replace(ev, diff=dt))
    other = explain_rest(dataclasses.replace(ev, diff=dr))
    if not first or not other:
        return None
    return sorted({first, *([other] if isinstance(other, str) else other)})


BUG = "jsfatfs"
EXCEPTIONS = [
    NamedException(SHRINK, "jsfatfs", "writer",
                   "fs.truncate (ftruncate to fewer clusters) writes prefix + 0 (0xF00, 0xFF00, "
                   "0x0FFFFF00) into every freed cluster's FAT entry instead of 0 and leaves the "
                   "kept last cluster's link to them: fsck.fat 'Cluster N out of range', a chain "
                   "longer than the size, the core reads EIO; measured on FAT12/16/32 (create "
                   "20000 bytes, truncate to 10); a shrink within the same cluster count is clean",
                   "a truncate of the script that needs fewer clusters than the file had (the "
                   "package keeps one for size 0), and FAT entries in the image holding the "
                   "freed-cluster value", bug=SHRINK),
    NamedException(DIR_VOLUME, "jsfatfs", "writer",
                   "fs.chmod of a directory sets ATTR_VOLUME on its entry (dir.js _updateEntry: "
                   "volume_id is 'mode has no S_IFREG'): chattr \"/D\" h stores 0x1a, and the "
                   "directory with its subtree vanishes from every reader",
                   "a chattr of a directory in the script, and an entry marked directory and "
                   "label (attr & 0x18 == 0x18) in the image", bug=DIR_VOLUME),
    NamedException(TIME_WRAP, "jsfatfs", "writer",
                   "fs.utimes stores the year - 1980 in FAT's 7-bit field without clamping "
                   "(1970 -> 2098, 2108 -> 1980) and a time past JavaScript's Date range as date "
                   "0 (1980-01-01); Linux clamps to 1980-01-01 .. 2107-12-31 23:59:58; measured "
                   "with touch to 0, 7664162256 and 9223372036854775807",
                   "every difference of the listing is a modify time or access date shown as the "
                   "wrapped form of an out-of-range touch time of the script", bug=TIME_WRAP),
]
