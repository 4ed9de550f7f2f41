"""What fusefat's data-losing writes leave in an image, read from its bytes.

The evidence of two writer exceptions: WRITE_GAP (write_gap_cut predicts
the clusters fat_seek cuts off, gap_evidence finds them as a lost chain)
and ERASE_OVERRUN (erase_overrun_evidence finds the orphaned tail of an
entry fat_real_delete erased in one piece).
"""
import struct

from vfz.fatimg import lfn_checksum, lfn_units


def _dir_clusters(fat):
    """First clusters of every subdirectory reachable from the root."""
    out, todo, seen = [], [None], set()
    while todo:
        d = todo.pop()
        if d in seen:
            continue
        seen.add(d)
        if d is not None:
            out.append(d)
        for _off, name, attr, cl, _size, _lfn in fat.short_entries(d):
            if attr & 0x10 and cl >= 2 and name not in (b".          ", b"..         "):
                todo.append(cl)
    return out


def _live_short(e):
    """Is directory entry e a live short entry (not free, not a long-name
    slot, not the volume label)?"""
    return e[0] not in (0, 0xE5) and e[11] != 0x0F and not e[11] & 0x08


def orphan_tail(fat, c, prev):
    """The UTF-16 code units of the long-name slots a directory cluster c
    begins with when they are the tail of an entry cut off from its head:
    slots of order j, j-1, .., 1 (none marked last, 0x40) followed by a live
    short entry whose checksum they carry, while the last slot of prev (the
    cluster before c in the directory's chain) is not the live slot of order
    j+1 with that checksum (an entry that merely spans the two clusters);
    else None."""
    base = fat.cluster_off(c)
    slots = [bytes(fat.b[base + 32 * k:base + 32 * k + 32]) for k in range(fat.csize // 32)]
    first = slots[0]
    if first[11] != 0x0F or first[0] in (0, 0xE5) or first[0] & 0x40 or not 1 <= first[0] <= 20:
        return None
    j = first[0]
    if len(slots) <= j:
        return None
    run, sfn = slots[:j], slots[j]
    if [e[0] for e in run] != list(range(j, 0, -1)) or any(e[11] != 0x0F for e in run):
        return None
    if not _live_short(sfn):
        return None
    if any(e[13] != lfn_checksum(sfn[:11]) for e in run):
        return None
    end = fat.cluster_off(prev) + fat.csize - 32
    last = bytes(fat.b[end:end + 32])
    if last[11] == 0x0F and last[0] & 0x3F == j + 1 and last[13] == run[0][13]:
        return None
    units = []
    for e in reversed(run):                 # order 1 holds the name's first 13 units
        units += lfn_units(e)
    return units


def erase_overrun_evidence(fat, leaf):
    """Does a FAT12/16 image hold the tail of entry `leaf` cut off by
    fusefat's delete? fat_real_delete (libfat.c) erases an entry's slots
    with one lseek + write from its first slot on FAT12/16 (a path meant for
    the fixed root directory): in a subdirectory whose entry runs into the
    directory's next cluster, the slots there stay live and their erased
    copies (0xE5, or 0x00 for the directory's last entry) land in the
    cluster physically after the first one. The evidence: a
    subdirectory's cluster that does not follow its predecessor on disk
    begins with an orphan_tail spelling the first 13*j units of leaf (case
    folded), or, when the tail is the short entry alone (j = 0), with an
    orphan_short whose erased head in the cluster before spells all of leaf."""
    if fat.bits not in (12, 16):
        return False
    want = leaf.encode("utf-16-le")
    want = [int.from_bytes(want[k:k + 2], "little") for k in range(0, len(want), 2)]
    for d in _dir_clusters(fat):
        chain = fat.chain(d)
        for prev, c in zip(chain, chain[1:]):
            if c == prev + 1:
                continue
            units = orphan_tail(fat, c, prev)
            if units and len(want) > len(units) and \
                    "".join(map(chr, units)).lower() == "".join(map(chr, want[:len(units)])).lower():
                return True
            units = orphan_short(fat, c, prev)
            if units and _spelled(units, want):
                return True
    return False


def orphan_short(fat, c, prev):
    """The tail of an entry cut off from its head when the tail is the short
    entry alone (j = 0 in erase_overrun_evidence): directory cluster c
    begins with a live short entry, and prev (the cluster before c in the
    chain) ends with erased long-name slots (first byte 0xE5, or 0x00 when
    the entry was the directory's last) of orders 1, 2, .. counted back
    from its end that carry that entry's checksum. -> the UTF-16 code units
    those slots still hold, order 1's first; else None. When the slots are
    0xE5, a reader takes that short entry for a file of its own (the deleted
    file stays, under its '~N' alias); when they are 0x00 the directory ends
    before it, and the erased copy over the cluster after prev is what shows
    (tests/test_fusefat_erase_overrun.py: fsck.fat's dots-missing)."""
    base = fat.cluster_off(c)
    sfn = bytes(fat.b[base:base + 32])
    if not _live_short(sfn):
        return None
    csum = lfn_checksum(sfn[:11])
    end = fat.cluster_off(prev) + fat.csize
    units = []
    for k in range(1, fat.csize // 32 + 1):
        e = bytes(fat.b[end - 32 * k:end - 32 * k + 32])
        if e[0] not in (0, 0xE5) or e[11] != 0x0F or e[13] != csum:
            break
        units += lfn_units(e)
    return units or None


def _spelled(units, want):
    """Do a long name's code units (0x0000-terminated, 0xFFFF-padded) spell
    want, case folded?"""
    if 0 in units:
        units = units[:units.index(0)]
    elif len(units) != len(want):
        return False
    return "".join(map(chr, units)).lower() == "".join(map(chr, want)).lower()


def _open_fat(image):
    """A read-only vfz.fatimg.Fat of image, or False when it is no FAT
    volume this code can read (no evidence then)."""
    from vfz.fatimg import open_ro
    try:
        fat = open_ro(image)
        return fat if fat.csize and fat.clusters > 0 else False
    except (OSError, ValueError, struct.error):
        return False


def write_gap_cut(m, op, csize):
    """What fusefat cuts off when it applies write op to model m's tree
    (fusefat_seek_relinks), or None: (n-1, the file's bytes csize..S) for a
    write of at least one byte to a regular file of S bytes spanning
    n = ceil(S/csize) >= 2 clusters that starts at or past the end of its
    last cluster (offset >= n*csize)."""
    path, off, size = op.args[0], op.args[1], op.args[2]
    node, err = m._walk([c for c in path.split("/") if c])
    if err or node is None or node is m.root or node.is_dir or size <= 0:
        return None
    if not fusefat_seek_relinks(len(node.data), off, csize):
        return None
    return -(-len(node.data) // csize) - 1, bytes(node.data[csize:])


def fusefat_seek_relinks(S, off, csize):
    """Does fusefat 0.1a cut a file of S bytes at a write (the first of an
    open) starting at off? fat_seek (libfat.c) walks the chain from the
    first cluster to reach off; when it meets the end of the chain inside
    its `while (newoff >= clustersz)` loop it links the new cluster to
    F->CurClus, the cluster the walk started from (the first), instead of
    to the last cluster it read. That happens when the walk passes at least
    one cluster of the chain before meeting its end: S spans n >= 2
    clusters and off >= n*csize (measured on FAT12/16/32, 512-, 2048- and
    4096-byte clusters: tests/test_fusefat_write_gap.py, reports/bugs.md)."""
    n = -(-S // csize)
    return n >= 2 and off >= n * csize


def lost_chains(fat):
    """The chains of clusters that the FAT marks in use and no directory
    entry reaches (from the root down): [[cluster, ...]], each from a
    cluster no other lost one links to, in FAT order."""
    reach = set()
    todo = [None]
    if fat.bits == 32:
        reach.update(fat.chain(fat.root_cluster))
    seen = set()
    while todo:
        d = todo.pop()
        if d in seen:
            continue
        seen.add(d)
        for _off, name, attr, cl, _size, _lfn in fat.short_entries(d):
            if name in (b".          ", b"..         ") or cl < 2:
                continue
            reach.update(fat.chain(cl))
            if attr & 0x10:
                todo.append(cl)
    bad = {12: 0xFF7, 16: 0xFFF7, 32: 0x0FFFFFF7}[fat.bits]
    used = [c for c in range(2, fat.clusters + 2) if fat.get(c) not in (0, bad)]
    lost = {c for c in used if c not in reach}
    linked = {fat.get(c) for c in lost}
    out = []
    for c in sorted(lost - linked):
        chain, on = [], set()
        while c in lost and c not in on:
            chain.append(c)
            on.add(c)
            nxt = fat.get(c)
            if fat.eoc(nxt):
                break
            c = nxt
        out.append(chain)
    return out


def gap_evidence(fat, cut, tail):
    """Does the image hold, as a lost chain (lost_chains), exactly the cut
    clusters of a write_gap_cut: `cut` clusters whose first len(tail)
    bytes are the file's bytes from its second cluster on (tail)?"""
    for chain in lost_chains(fat):
        if len(chain) != cut:
            continue
        got = b"".join(bytes(fat.b[fat.cluster_off(c):fat.cluster_off(c) + fat.csize]) for c in chain)
        if got[:len(tail)] == tail:
            return True
    return False
