"""The named exceptions of QEMU's vvfat volumes and their recognition from the image: a FAT16 boot sector over 32-bit FAT entries (fat:32:), a FAT16 boot sector over too few clusters for FAT16 (fat:floppy:16:)."""
import struct

from vfz import fatimg, listing
from vfz.oracles import NamedException
from vfz.oracles.evidence import Evidence, ev_get as _get

TOO_BIG = "vvfat-too-big"
FAT32_BPB = "vvfat-fat32-fat16-bpb"
FLOPPY16 = "vvfat-floppy16-fat12"
BUG = "vvfat"                       # the anchor of vvfat's entry in reports/bugs.md
MAX_DEPTH = 64
MAX_ENTRIES = 20000


def _open(image):
    try:
        return fatimg.open_ro(image)
    except (OSError, ValueError, struct.error, TypeError):
        return None


def _fat16_bpb(fat):
    """A FAT12/16-shaped BPB: a 16-bit FAT size and a fixed root."""
    return struct.unpack_from("<H", fat.b, 22)[0] != 0 and fat.rootent != 0


def fat32_entries_under_fat16_bpb(fat):
    """vvfat fat:32: evidence: the boot sector is FAT12/16-shaped (16-bit
    sectors per FAT, a fixed root of rootent entries, type 'FAT16'), the
    spec's cluster count makes it FAT16 for every reader, yet the FAT
    starts with two 32-bit entries (media | 0x0FFFFF00, 0x0FFFFFFF)."""
    if fat is None or not _fat16_bpb(fat) or fat.bits != 16:
        return False
    f0, f1 = struct.unpack_from("<II", fat.b, fat.fat_off)
    return f0 == (0x0FFFFF00 | fat.b[21]) and f1 == 0x0FFFFFFF


def _fat16_type(fat):
    return bytes(fat.b[54:62]) == b"FAT16   "


def walk(fat, bits):
    """{path: (is_dir, first cluster, size)} of the volume as a reader
    that takes FAT entries `bits` wide sees its directories (the fixed
    root, long names as the listing spells them); bounded."""
    saved = fat.bits
    fat.bits = bits
    out = {}
    try:
        stack = [(None, "", 0)]
        seen = set()
        while stack and len(out) < MAX_ENTRIES:
            cl, path, depth = stack.pop()
            if cl is not None:
                if cl in seen:
                    continue
                seen.add(cl)
            slots = {off: e for off, e in fat.entries(cl)}
            for off, name11, attr, first, size, lfn in fat.short_entries(cl):
                if name11[:1] == b"." and name11[:2] in (b". ", b"..") and name11[2:].strip(b" ") == b"":
                    continue
                units = [u for s in reversed(lfn) for u in fatimg.lfn_units(slots[s])] if lfn else []
                if 0 in units:
                    units = units[:units.index(0)]
                name = (b"".join(u.to_bytes(2, "little") for u in units).decode("utf-16-le", "replace")
                        if units else fatimg.short_text(name11))
                p = f"{path}/{name}"
                is_dir = bool(attr & 0x10)
                out[p] = (is_dir, first, size)
                if is_dir and first and depth < MAX_DEPTH:
                    stack.append((first, p, depth + 1))
    finally:
        fat.bits = saved
    return out


def _chain(fat, bits, first, n):
    """(the chain from first, FAT entries `bits` wide, at most n clusters;
    whether the entry of its last cluster is an end of chain)."""
    saved = fat.bits
    fat.bits = bits
    try:
        out, c = [], first
        while len(out) < n and 2 <= c < fat.clusters + 2:
            out.append(c)
            c = fat.get(c)
            if fat.eoc(c):
                return out, True
        return out, False
    finally:
        fat.bits = saved


def floppy16_lost(fat):
    """vvfat fat:floppy:16: evidence -> the paths whose chains a reader
    taking the FAT as FAT12 (the spec: fewer than 4085 clusters) follows
    elsewhere than vvfat wrote them with 16-bit entries; None when the
    evidence does not hold: the boot sector says 'FAT16', the cluster count
    says FAT12, and read with 16-bit entries every chain ends and every
    file's has exactly the clusters its size needs (vvfat's own FAT is
    consistent). A chain is moved when FAT12 reading gives other clusters
    or no end after its last one (a one-cluster file too: 7-Zip then calls
    it a data error)."""
    if fat is None or not _fat16_type(fat) or fat.bits != 12:
        return None
    tree = walk(fat, 16)
    lost = set()
    for p, (is_dir, first, size) in tree.items():
        if not first:
            continue
        want = (size + fat.csize - 1) // fat.csize if not is_dir else fat.clusters
        c16 = _chain(fat, 16, first, want)
        if not c16[1] or (not is_dir and len(c16[0]) != want):
            return None
        if _chain(fat, 12, first, len(c16[0])) != c16:
            lost.add(p)
    return lost


def floppy16_orphans(fat):
    """Clusters a FAT12 reading of a fat:floppy:16: FAT sees allocated
    that no chain of vvfat's tree holds (fsck.fat reclaims them)."""
    tree = walk(fat, 16)
    held = set()
    for is_dir, first, size in tree.values():
        if first:
            held.update(_chain(fat, 12, first, fat.clusters)[0])
    saved = fat.bits
    fat.bits = 12
    try:
        return {c for c in range(2, fat.clusters + 2) if fat.get(c) and c not in held}
    finally:
        fat.bits = saved


def known_failure(ev):
    """vvfat refused the tree ('Directory does not fit'): the first op
    after which the model's tree needs more clusters than the variant's
    volume holds (volume.clusters_needed) -> (its index, TOO_BIG); the
    readers check the script cut there. None when the tree fits by that
    count (then the refusal is a finding)."""
    from vfz import model, oracles
    from vfz.oracles.vvfat.volume import CLUSTERS, clusters_needed
    wr, ops = _get(ev, "wr"), _get(ev, "ops") or []
    if wr is None or not wr.error or "does not fit" not in wr.error:
        return None
    name = _get(ev, "writer")
    e = oracles.entry(name)
    root = e.profile["root"](None) if "root" in e.profile else None
    m = model.Model(e.profile, e.names, root=root, rule=e.shortname)
    for i, op in enumerate(ops):
        m.apply_one(op)
        if clusters_needed(m.root) > CLUSTERS[name]:
            return i, TOO_BIG
    return None


def _diff_paths(ev):
    d = _get(ev, "diff")
    if d is None:
        return []
    return [e["path"] for e in d.missing + d.extra] + [a["path"] for a, _ in d.changed] + \
        [p for _, p, _ in (getattr(d, "ambiguous", None) or [])]


def _has_clusters(entries):
    return any(e["type"] == "dir" or e.get("size") for e in entries or ())


def explain_read(ev):
    """A reader's divergence on a vvfat volume, from the image: fat:32:'s
    FAT16 boot sector over 32-bit entries (every reader then follows every
    chain wrong: any divergence, the tree holding a cluster); fat:floppy:16:'s
    FAT16 boot sector over a FAT12 cluster count (a listing's differences
    all at or under paths whose chain FAT12 reading moves; a checker's
    complaints or a failure when such a path, or a cluster FAT12 reading
    sees allocated outside every chain, exists)."""
    fat = _open(_get(ev, "image"))
    if fat is None:
        return None
    listed = _get(ev, "verdict") == "differs"
    if fat32_entries_under_fat16_bpb(fat):
        # a checker sees the 32-bit head as FAT16 entries even on an empty
        # tree (FAT[1] 0x0FFF: the dirty bit; clusters 2, 3 allocated)
        return FAT32_BPB if not listed or _has_clusters(_get(ev, "entries")) else None
    lost = floppy16_lost(fat)
    if lost is None:
        return None
    if not listed:
        return FLOPPY16 if lost or floppy16_orphans(fat) else None
    paths = _diff_paths(ev)
    if not paths or not lost or not any(listing.under(p, lost) for p in paths):
        return None
    # a file the reader could not read at all (no size) once its read of a
    # moved chain failed (mtools: one mcopy for every file, aborted by 'Fat
    # problem while decoding') goes with them
    unread = {b["path"] for a, b in _get(ev, "diff").changed if b.get("size") is None}
    if all(listing.under(p, lost) or p in unread for p in paths):
        return FLOPPY16
    rest = _reader_explains_rest(ev, lost)
    return sorted({FLOPPY16} | set(rest)) if rest else None


def _reader_explains_rest(ev, lost):
    """The reader's own named exceptions for the differences that do not
    lie at or under a path FAT12 reading moved (mtools shows a name beyond
    the BMP as '__': mtools-astral-read) -> names, else None."""
    import dataclasses
    from vfz import oracles
    d = _get(ev, "diff")
    if not isinstance(ev, Evidence) or not _get(ev, "reader"):
        return None
    keep = lambda p: not listing.under(p, lost)             # noqa: E731
    rest = dataclasses.replace(d, missing=[e for e in d.missing if keep(e["path"])],   # a ListingDiff
                               extra=[e for e in d.extra if keep(e["path"])],
                               changed=[(a, b) for a, b in d.changed if keep(a["path"])])
    kinds = oracles.oracle_class(ev.reader, "reader").explain(dataclasses.replace(ev, diff=rest))
    if isinstance(kinds, tuple):
        return None
    return [kinds] if isinstance(kinds, str) else kinds


EXCEPTIONS = [
    NamedException(
        TOO_BIG, "vvfat", "writer",
        "design: a vvfat volume has the size of its geometry (2.88 MB floppy: 357 clusters of "
        "8 KiB; fat:12: 4024; fat:16: 64474) and qemu-img refuses a directory that needs more "
        "('Directory does not fit in FAT12 (capacity 2.88 MB)'); the op-script was meant for "
        "another volume",
        "vvfat refused the tree, and the model's tree after some op needs more clusters than the "
        "variant holds (known_failure: the readers check the script cut before that op)"),
    NamedException(
        FAT32_BPB, "vvfat", "writer",
        "fat:32: ('FAT32 has not been tested') writes a FAT12/16 boot sector (16-bit sectors per FAT, "
        "a 512-entry fixed root, type 'FAT16   ', no FAT32 fields) over a FAT of 32-bit entries with "
        "start clusters numbered for that FAT: the cluster count makes it FAT16 for every reader, "
        "which follows every chain through the halves of 32-bit entries (fsck.fat: bad start "
        "clusters, 7-Zip: files empty, mtools: cannot read the FAT)",
        "the image's boot sector is FAT16-shaped and FAT16 by cluster count, its FAT starts with the "
        "32-bit entries media|0x0FFFFF00, 0x0FFFFFFF, and the tree holds a cluster (explain_read)",
        bug=BUG),
    NamedException(
        FLOPPY16, "vvfat", "writer",
        "fat:floppy:16: makes a 2.88 MB floppy with 8 KiB clusters (357 of them), a boot sector "
        "typed 'FAT16   ' and a FAT of 16-bit entries; FAT12/16 is decided by the cluster count "
        "(fewer than 4085: FAT12), so every reader takes the FAT as FAT12 and a chain through it "
        "goes elsewhere: files of more than one cluster (and directories) are lost or garbled",
        "the image's boot sector says FAT16, its cluster count FAT12, its FAT read with 16-bit "
        "entries gives every file exactly its clusters, and each path a listing shows otherwise is "
        "at or under one whose chain FAT12 reading moves; a checker's complaints or a failure: "
        "such a path, or a cluster FAT12 reading sees allocated outside every chain (explain_read)",
        bug=BUG),
]


def explain_dir(ev):
    """A divergence of the kernel-vvfat host directory: recognised by
    rw.explain (vfz/oracles/vvfat/rw.py)."""
    from vfz.oracles.vvfat import rw
    return rw.explain(ev)


def result_exception(op, expected, actual):
    from vfz.oracles.vvfat import rw
    return rw.result_exception(op, expected, actual)
