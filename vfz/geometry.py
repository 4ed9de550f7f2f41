"""Volume geometry: what a formatter is asked to make, written as one spec string a finding records.

A spec is the old `fatN[:SIZE[:CLUSTER]]` (what --fs and findings always took) with optional
`key=value` fields and a formatter after `@`:

    fat16:4M:512                                   mkfs.fat's FAT16, 4 MiB, 512-byte clusters
    fat12:1200K:1024:sector=4096:fats=1@vfat       the core's mkfs, 4 KiB sectors, one FAT
    fat32:33M:512:reserved=8@busybox-mkdosfs

Keys: sector (bytes per sector, 512..4096), fats (1 or 2), reserved (reserved sectors),
root (root directory entries, FAT12/16), and a free window: free (clusters left free) and at
(the first of them, default 2). With free=N the fresh volume, once formatted, has every free
cluster outside [at, at+N) marked bad in every FAT copy (FSInfo's free count follows): a
volume of any FAT type and size that fills, wraps its allocation and runs out of space
within a short script, as a volume whose other clusters are taken would (Linux and the core
skip bad clusters as they skip used ones; bad marks are in no chain, so no reader lists
them). wrap=K (with free=N) keeps K more clusters free, the lowest free ones of the data
area, below the window: a window that straddles the wrap point of next-fit allocation.
Linux (fat_alloc_clusters) searches from prev_free + 1 and wraps to cluster 2 at the end;
prev_free is 2 at mount on FAT12/16, so its first allocation skips cluster 2, which it
reaches only after passing the window's end; on FAT32 it is FSInfo's next-free hint, which
wrap sets to at - 1 (the window's first cluster is searched first, the low run after the
wrap). Writers that allocate otherwise (first fit from cluster 2, or their own hint) take the
low clusters first: only capacity differs, and every model counts clusters, not places.
apply_window does it; the formatter never sees these three keys. A field left out is the formatter's own default, so
the spec says exactly what was asked and replay asks the same. No `@`: the checker's default
formatter (mkfs.fat, or the core's with --formatter vfat), as before geometries existed.

Cluster-count classes (`count_class`): the FAT type follows from the cluster count alone
(Microsoft's rule, which Linux, fsck.fat and mtools follow): < 4085 is FAT12, < 65525 FAT16.
The boundaries 4084/4085 and 65524/65525 are where readers that decide otherwise diverge.
"""
import struct
from dataclasses import dataclass, replace

from vfz.errors import UsageError

KEYS = ("sector", "fats", "reserved", "root", "free", "at", "wrap")
FAT12_MAX, FAT16_MAX = 4084, 65524        # the largest cluster counts of FAT12 and FAT16


@dataclass(frozen=True)
class Geometry:
    fat: int                    # 12 | 16 | 32
    size: int                   # bytes of the image
    cluster: int = 0            # bytes per cluster; 0: the formatter's default
    sector: int = 0             # bytes per sector; 0: 512 (every formatter's default)
    fats: int = 0               # FAT copies; 0: the formatter's default (2)
    reserved: int = 0           # reserved sectors; 0: the formatter's default
    root: int = 0               # root directory entries (FAT12/16); 0: the formatter's default
    formatter: str = None       # registry name of the formatter; None: the checker's default
    free: int = 0               # clusters left free (the window); 0: all, no bad marks
    at: int = 0                 # the window's first cluster; 0: the first data cluster (2)
    wrap: int = 0               # free clusters kept below the window (the lowest free ones)

    def spec(self):
        s = f"fat{self.fat}:{_size_text(self.size)}"
        if self.cluster or any(getattr(self, k) for k in KEYS):
            s += f":{self.cluster}"
        for k in KEYS:
            if getattr(self, k):
                s += f":{k}={getattr(self, k)}"
        return s + (f"@{self.formatter}" if self.formatter else "")

    @property
    def bytes_per_sector(self):
        return self.sector or 512

    def with_formatter(self, name):
        return replace(self, formatter=name)


def _size_text(n):
    for unit, mult in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n % mult == 0 and n >= mult:
            return f"{n // mult}{unit}"
    return str(n)


def parse_size(s):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(s[-1:].upper(), 1)
    body = s[:-1] if mult > 1 else s
    if not body.isdigit() or int(body) == 0:
        raise UsageError(f"bad size {s!r} (N, NK, NM or NG)")
    return int(body) * mult


DEFAULT_SIZE = {12: 2 << 20, 16: 4 << 20, 32: 34 << 20}


def parse(spec):
    """A spec string -> Geometry; bad input is one UsageError line."""
    body, _, formatter = spec.partition("@")
    parts = body.split(":")
    if parts[0] not in ("fat12", "fat16", "fat32"):
        raise UsageError(f"bad --fs {spec!r}: fat12, fat16 or fat32[:SIZE[:CLUSTER]][:key=N...][@FORMATTER]")
    fat = int(parts[0][3:])
    pos = [p for p in parts[1:] if "=" not in p]
    kv = [p for p in parts[1:] if "=" in p]
    if len(pos) > 2:
        raise UsageError(f"bad --fs {spec!r}: at most SIZE and CLUSTER before the key=N fields")
    size = parse_size(pos[0]) if pos and pos[0] else DEFAULT_SIZE[fat]
    cluster = 0
    if len(pos) > 1 and pos[1] not in ("", "0"):
        if not pos[1].isdigit() or int(pos[1]) & (int(pos[1]) - 1) or not 512 <= int(pos[1]) <= 1 << 16:
            raise UsageError(f"bad cluster size in {spec!r}: a power of two, 512..65536 bytes")
        cluster = int(pos[1])
    fields = {}
    for p in kv:
        k, _, v = p.partition("=")
        if k not in KEYS or not v.isdigit():
            raise UsageError(f"bad field {p!r} in {spec!r} (known: {', '.join(k + '=N' for k in KEYS)})")
        fields[k] = int(v)
    g = Geometry(fat, size, cluster, formatter=formatter or None, **fields)
    if g.sector and (g.sector & (g.sector - 1) or not 512 <= g.sector <= 4096):
        raise UsageError(f"bad sector size in {spec!r}: 512, 1024, 2048 or 4096")
    if g.fats and g.fats not in (1, 2):
        raise UsageError(f"bad fats in {spec!r}: 1 or 2")
    if g.cluster and g.cluster < g.bytes_per_sector:
        raise UsageError(f"bad cluster size in {spec!r}: smaller than a sector")
    if g.wrap and not g.free:
        raise UsageError(f"bad field wrap in {spec!r}: it needs a window (free=N)")
    return g


def count_class(clusters, fat):
    """The geometry class of a volume by its cluster count: the boundary it sits at or near,
    else small (< 512 clusters: volumes that fill within a script) or plain."""
    for edge, name in ((FAT12_MAX, "fat12/16"), (FAT16_MAX, "fat16/32")):
        if clusters == edge:
            return f"{name}:at-max"        # the largest count of the smaller type
        if clusters == edge + 1:
            return f"{name}:at-min"        # the smallest count of the larger type
        if edge - 16 <= clusters < edge:
            return f"{name}:below"
        if edge + 1 < clusters <= edge + 17:
            return f"{name}:above"
    if fat == 32 and clusters < FAT16_MAX + 1:
        return "fat32:few-clusters"        # a FAT32 BPB over a count Microsoft calls FAT16 or less
    if clusters < 512:
        return "small"
    return "plain"


def made(image):
    """The layout a formatter made, read back from the boot sector: {fat, sector, cluster,
    fats, reserved, root, total, clusters, bpb32 (the FAT32 fields: 16-bit FAT size 0),
    fs_type (the 8-byte type string, None without the extended signature)}, or None when it
    holds no usable BPB. fat is what
    the formatter wrote: 32 for a FAT32 BPB (16-bit FAT size 0), else the file-system type
    string when it names FAT12 or FAT16, else the width of the fresh FAT's entries -- never
    the cluster count's type: a formatter that writes FAT12 over 4 085 clusters (which the
    count calls FAT16) made FAT12, and the readers judge that, not this."""
    with open(image, "rb") as f:
        b = f.read(512)
        if len(b) < 512:
            return None
        bps, spc, res, nfats, root = struct.unpack_from("<HBHBH", b, 11)
        f.seek(res * bps)
        head = f.read(4)
    tot = struct.unpack_from("<H", b, 19)[0] or struct.unpack_from("<I", b, 32)[0]
    spf16 = struct.unpack_from("<H", b, 22)[0]
    spf = spf16 or struct.unpack_from("<I", b, 36)[0]
    if not bps or not spc:
        return None
    clusters = (tot - res - nfats * spf - (root * 32 + bps - 1) // bps) // spc
    named = {b"FAT12   ": 12, b"FAT16   ": 16}.get(bytes(b[54:62])) if b[38] == 0x29 else None
    if not named and len(head) == 4:
        # FatFs names both "FAT": the width of the entries it wrote says which. A fresh FAT's
        # entry 1 is an end mark: its high byte is byte 3 on FAT16 (0xFF); on FAT12 byte 3
        # is the free cluster 2's
        named = 16 if head[3] else 12
    fat = 32 if spf16 == 0 else named or (12 if clusters <= FAT12_MAX else 16)
    tsig = 66 if spf16 == 0 else 38
    fs_type = bytes(b[tsig + 16:tsig + 24]).decode("latin-1") if b[tsig] == 0x29 else None
    return dict(fat=fat, sector=bps, cluster=bps * spc, fats=nfats, reserved=res, root=root,
                total=tot, clusters=clusters, bpb32=spf16 == 0, fs_type=fs_type)


def unlike(image, geo):
    """How the volume in image differs from what geo asked (FAT type, sector size, total
    sectors, and each field geo names): ["cluster 4096 for 1024", ...]; [] when it is geo."""
    m = made(image)
    if m is None:
        return ["no readable boot sector"]
    want = {"fat": geo.fat, "sector": geo.bytes_per_sector, "total": geo.size // geo.bytes_per_sector}
    # the layout fields a formatter writes (a free window is marked after formatting)
    want.update({k: getattr(geo, k) for k in ("cluster",) + KEYS[1:] if getattr(geo, k) and k in m})
    return [f"{k} {m[k]} for {v}" for k, v in want.items() if m[k] != v]


BAD = {12: 0xFF7, 16: 0xFFF7, 32: 0x0FFFFFF7}


def apply_window(image, g):
    """Mark every free cluster of a fresh volume outside g's window [at, at+free) and its
    low run (wrap: the lowest g.wrap free clusters below at) bad, in every FAT copy; set
    FAT32's FSInfo free count to what is left and, with a low run, its next-free hint to
    at - 1. -> (free clusters, bad marks) or None when g has no window. The FAT type is the
    BPB's (FAT32 when its 16-bit FAT size is 0, else by the cluster count), as Linux
    decides it."""
    if not g.free:
        return None
    import mmap
    from vfz.fatimg import Fat
    with open(image, "r+b") as f, mmap.mmap(f.fileno(), 0) as mm:
        fat = Fat(mm, copy=False)
        lo, hi = max(2, g.at or 2), max(2, g.at or 2) + g.free
        free = bad = 0
        low = g.wrap
        for c in range(2, fat.clusters + 2):
            if fat.get(c) != 0:
                continue
            if lo <= c < hi or (low and c < lo):
                free += 1
                low -= not lo <= c < hi
            else:
                fat.set(c, BAD[fat.bits])
                bad += 1
        if fat.bits == 32:
            fsi = struct.unpack_from("<H", mm, 48)[0] * fat.bps
            if 0 < fsi < len(mm) - 512 and mm[fsi:fsi + 4] == b"RRaA":
                struct.pack_into("<I", mm, fsi + 488, free)
                if g.wrap:          # next-fit starts at the window: the low run waits for the wrap
                    struct.pack_into("<I", mm, fsi + 492, lo - 1)
        mm.flush()
    return free, bad
