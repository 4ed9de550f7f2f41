"""fsck.fat's complaints about an image the npm fatfs package wrote, each recognised as one of its named exceptions (exceptions.py) from the image: explain_checker."""
import re
import struct

from vfz.fatimg import open_ro
from vfz.oracles.busybox import LABEL_NUL
from vfz.oracles.evidence import label_nul_padded
from vfz.oracles.jsfatfs.fewclusters import package_tree, package_view
from vfz.oracles.jsfatfs.partial import PARTIAL, orphan_tail, tail_slots
from vfz.oracles.jsfatfs.exceptions import (BAD_CHARS, DIR_SPELLINGS, DOTDOT, EMPTY_CLUSTER, FSINFO,
                                            GAP_SIZE, LFN_CROSS, ONE_FAT, SHORT_BAD, _comps,
                                            _core_clusters, _get, gap_entries, read_ops,
                                            respelled_dirs)

# dosfstools lfn.c prints a UTF-16 unit it cannot convert (a surrogate of a
# character beyond the BMP) as ':' and three digits of this alphabet, high first
_ESC = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz+-"
_ESC_RX = re.compile(r":([%s]{3})" % re.escape(_ESC))


def fsck_path(path):
    """fsck.fat's spelling of a path -> the name's: each pair of escaped
    surrogates (':DX0:DmB' for U+2000B) decoded; anything else as printed."""
    if not path or ":" not in path:
        return path

    def unit(m):
        a, b, c = (_ESC.index(ch) for ch in m.group(1))
        return (a << 12) | (b << 6) | c

    def pair(m):
        hi, lo = unit(_ESC_RX.match(m.group(1))), unit(_ESC_RX.match(m.group(2)))
        if 0xD800 <= hi < 0xDC00 and 0xDC00 <= lo < 0xE000:
            return chr(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00))
        return m.group(0)
    return re.sub(r"(:[%s]{3})(:[%s]{3})" % (re.escape(_ESC), re.escape(_ESC)), pair, path)


_FSCK = [   # fsck.fat message -> exception, when its evidence holds
    (re.compile(r"FATs differ"), ONE_FAT),
    (re.compile(r"^Using first FAT\.$"), ONE_FAT),
    (re.compile(r"Free cluster summary wrong \((\d+) vs\. really (\d+)\)"), FSINFO),
    (re.compile(r"Invalid '\.\.' entry in the second slot"), DOTDOT),
    (re.compile(r"File size is 0 bytes, cluster chain length is > 0 bytes"), EMPTY_CLUSTER),
    (re.compile(r"Bad short file name \((.*)\)\."), BAD_CHARS),
    (re.compile(r"File size is (\d+) bytes, cluster chain length is > (\d+) bytes"), GAP_SIZE),
    (re.compile(r"Has a large number of bad entries\."), BAD_CHARS),
    (re.compile(r"Reclaimed \d+ unused clusters? \("), DIR_SPELLINGS),
    # an entry made through one spelling over another's long-name slots: the slots left
    (re.compile(r"Long filename fragment .* found outside a LFN sequence"), DIR_SPELLINGS),
    (re.compile(r"^\(Maybe the start bit is missing on the last fragment\)"), DIR_SPELLINGS),
    (re.compile(r"Reclaimed \d+ unused clusters? \("), PARTIAL),      # its cluster, allocated first
    (re.compile(r"Orphaned long file name part"), PARTIAL),
    # the formatter's, not the package's: BusyBox's mkdosfs pads the label with NULs
    (re.compile(r"[Ll]abel '.*' stored in (root directory|boot sector) is not valid"), LABEL_NUL),
]


def orphan_tail_any(image):
    """partial.orphan_tail, or the same at the end of a directory's cluster chain
    (the package's view: a subdirectory, a FAT32 root) that could not grow
    for the slots (run 3202's 5111662145ee: a 255-unit mkdir in a full
    FAT16's subdirectory)."""
    n = orphan_tail(image)
    if n:
        return n
    try:
        view = package_view(image)
        dirs = [c for c, is_dir, _ in package_tree(view).values() if is_dir and c >= 2]
        return max([tail_slots(view, view.dir_slots(c)) for c in dirs] or [0])
    except (OSError, ValueError, struct.error, IndexError, UnicodeDecodeError, TypeError):
        return 0


_RENAMED = re.compile(r"Renamed to (FSCK\d{4}\.\d{3})")


def _fsck_holds(name, m, c, fat, img, clusters, ops):
    if name == ONE_FAT:
        # every FAT entry where the copies differ is free in the second, or
        # ends there a chain the first grew: the package wrote the first only
        if fat.nfats < 2:
            return False
        size = fat.spf * fat.bps
        a = fat.b[fat.fat_off:fat.fat_off + size]
        b = fat.b[fat.fat_off + size:fat.fat_off + 2 * size]
        if a == b:
            return False
        width = {12: None, 16: 2, 32: 4}[fat.bits]
        if width is None:
            return True         # FAT12 entries straddle bytes: the copies differing is the evidence
        mask = 0x0FFFFFFF if width == 4 else 0xFFFF

        def second(n):
            return int.from_bytes(b[n * width:(n + 1) * width], "little") & mask

        def grown(i):
            # a chain the package grew (a directory's, a file's): the first FAT links its old
            # last cluster to a new one, the second still ends the chain there and has the
            # new cluster free
            v = int.from_bytes(a[i:i + width], "little") & mask
            return second(i // width) >= (mask & ~7) and 2 <= v < fat.clusters + 2 and second(v) == 0
        return all(b[i:i + width] == bytes(width) or grown(i) for i in range(0, size, width)
                   if a[i:i + width] != b[i:i + width])
    if name == FSINFO:
        if fat.bits != 32:
            return False
        sec = struct.unpack_from("<H", fat.b, 48)[0]
        stored = struct.unpack_from("<I", fat.b, sec * fat.bps + 488)[0]
        return int(m.group(1)) == stored and stored != int(m.group(2))
    if name == DIR_SPELLINGS:
        return bool(respelled_dirs(ops))     # an entry overwritten: its clusters orphaned
    if name == LABEL_NUL:
        return label_nul_padded(img)
    if name == PARTIAL:
        return orphan_tail_any(img) > 0
    path = fsck_path(c.get("path"))
    if not path or not path.startswith("/"):
        return False
    ent = clusters.get(path.upper())
    if name == DOTDOT:
        if fat.bits != 32 or len(_comps(path)) != 1 or not ent or ent[2] != "dir":
            return False
        slots = fat.entries(ent[0])
        return len(slots) > 1 and slots[1][1][:2] == b".." and \
            (struct.unpack_from("<H", slots[1][1], 26)[0] | struct.unpack_from("<H", slots[1][1], 20)[0] << 16) \
            == fat.root_cluster
    if name == EMPTY_CLUSTER:
        if ent is None and re.fullmatch(r"FSCK\d{4}\.\d{3}", path.rpartition("/")[2]):
            # fsck.fat renamed a bad short name first (BAD_CHARS): any empty
            # file with a cluster in that directory
            par = path.rpartition("/")[0].upper()
            return any(p.rpartition("/")[0] == par and e[2] == "file" and e[1] == 0 and e[0]
                       for p, e in clusters.items())
        return bool(ent) and ent[2] == "file" and ent[1] == 0 and ent[0] != 0
    if name == BAD_CHARS:
        if m.re.pattern.startswith("Has a large"):
            # the directory holds an 8.3 name with one of those characters
            key = (path.rstrip("/") if path != "/" else "").upper()
            return any(p.rpartition("/")[0] == key and e[3] and any(chr(b) in SHORT_BAD for b in e[3])
                       for p, e in clusters.items())
        return bool(ent) and any(ch in SHORT_BAD for ch in m.group(1))
    if name == GAP_SIZE:
        g = gap_entries(ops).get(path)
        return bool(ent) and g is not None and g.get("size") == int(m.group(1)) == ent[1]
    return False


def lfn_cross_left(image, cs):
    """fsck.fat 4.2's own bug fsck-v1-lfn-cross on the package's image:
    renaming a bad 8.3 name (BAD_CHARS), its LFN deletion ran over live
    clusters of other files (FsckSim finds the crossing), and fsck.fat said
    what the simulation of its broken deletion says (dots missing, what it
    then misreads, but for a 'Reclaimed' the simulation may count where
    fsck.fat first truncated the package's empty files with a cluster) ->
    (fsck.fat's complaints beyond the simulation's, left to explain; the
    simulated ones), else None. Its repair then destroys data (the dosfsck
    oracle's entry, reports/bugs.md)."""
    from collections import Counter
    from vfz.oracles.dosfsck.sim import FsckSim
    try:
        broken = FsckSim(image).run()
    except Exception:       # an image the simulation cannot scan: not this evidence
        return None
    if not any(x["live"] for x in broken.crossings):
        return None

    def key(c):
        return c["kind"], fsck_path(c.get("path"))
    sim = Counter(map(key, broken.complaints))
    if any(k[0] != "reclaimed" for k in sim - Counter(map(key, cs))):
        return None
    left, simulated = [], []
    for c in cs:
        if sim[key(c)]:
            sim[key(c)] -= 1
            simulated.append(c)
        else:
            left.append(c)
    return left, simulated


def explain_checker(ev):
    """fsck.fat's complaints about an image the package wrote, each one a
    catalogued defect whose evidence is in the image -> the sorted names,
    else None (one complaint unexplained, or the repair probe lost data)."""
    rr = _get(ev, "rr")
    cs = (rr.extra.get("complaints") if rr is not None else None) or []
    rep = (rr.extra.get("repair") or {}) if rr is not None else {}
    if not cs or rep.get("gave_up"):
        return None
    try:
        fat = open_ro(_get(ev, "image"))
        clusters = _core_clusters(_get(ev, "image"))
    except (OSError, ValueError, struct.error, TypeError):
        return None
    names = set()
    cross = lfn_cross_left(_get(ev, "image"), cs)
    simulated = set()       # complaints the crossing's simulation made: no rule of ours needed
    if cross is not None:
        simulated = {id(c) for c in cross[1]}
        names.add(LFN_CROSS)
    elif rep.get("data_lost"):
        return None
    ops = read_ops(ev)
    renamed = {}            # fsck.fat's new name of an entry it renamed -> the entry's path
    for c in cs:            # in fsck.fat's order: its renames first, then what lies under them
        strict = id(c) not in simulated
        p = fsck_path(c.get("path"))
        for new_, old_ in renamed.items():          # in the order fsck.fat renamed
            if p and (p == new_ or p.startswith(new_ + "/")):
                p = old_ + p[len(new_):]
                c = dict(c, path=p)
        r = _RENAMED.search(c.get("action") or "")
        if r and p:
            renamed[p.rpartition("/")[0] + "/" + r.group(1)] = p
        for rx, name in _FSCK:
            m = rx.search(c.get("message", ""))
            if m and _fsck_holds(name, m, c, fat, _get(ev, "image"), clusters, ops):
                names.add(name)
                break
        else:
            if strict:
                return None
    return sorted(names)
