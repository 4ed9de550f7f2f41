"""Structure-aware mutation of FAT volumes for the hostile campaign (issue 19).

A mutation is a list of Patch(offset, bytes, field): byte ranges written
over a copy of a well-formed seed image, each named after the on-disk field
it hits ("bpb.sectors_per_cluster", "fat[17]", "dir /DOCUME~1 slot 3 .cluster",
"fsinfo.next_free", ...). The layout is read from the seed (a valid volume),
so fields are found where the seed has them, whatever the mutation makes
of them. Every choice comes from the random.Random passed in (the campaign
seeds it from --seed and the image number: one image is replayable alone).

Mutators (one concern each; mutate() applies 1 to 4 of them):
    bpb        a boot-sector field: bytes/sector, sectors/cluster, reserved,
               FAT count, root entries, total sectors (16/32), FAT size,
               media, FAT32 root cluster, ext flags, FSInfo and backup
               sector numbers, the 0x55AA signature
    fat        FAT entries: free, bad, EOC, 1, out of range, self-loop,
               cross-link into another chain, cycle back into its own chain;
               in the first FAT only or in all of them
    dir        a directory slot: attributes, first cluster (0, 1, itself,
               its parent, out of range), size, first name byte (0x00, 0x05,
               0xE5, '.', ' '), LFN ordinal and checksum, LFN cluster field,
               "." / ".." names
    fsinfo     FAT32 FSInfo signatures, free count, next free
    backup     FAT32: the backup boot sector's fields, or the primary's
               signature broken so that readers that fall back use it
    bound      boundary values computed from the seed's own layout (vfz.hostile.boundary,
               whose docstring lists each value): cluster numbers past the last
               cluster, past what the FAT covers, up to the reserved and end-of-chain
               range of each FAT type; 32-bit products that wrap (FAT size x FAT
               count, sectors x bytes per sector, cluster number x cluster size);
               cluster counts at the FAT12/16 and FAT16/32 boundaries
    canary     declares fewer sectors than the image holds, fills what lies
               past the declared end with a canary pattern (and appends
               canary clusters) and points a file at a cluster out there:
               a reader that returns those bytes read past the volume
               (see vfz.hostile.verdict.canary_hits)
"""
import struct

from vfz.hostile import boundary
from vfz.hostile.layout import Layout, Patch, SeedError, eoc as _eoc, geometry_problem  # noqa: F401


BPB = {  # name: (offset, size)
    "bytes_per_sector": (11, 2), "sectors_per_cluster": (13, 1), "reserved_sectors": (14, 2),
    "fat_count": (16, 1), "root_entries": (17, 2), "total_sectors16": (19, 2), "media": (21, 1),
    "fat_size16": (22, 2), "total_sectors32": (32, 4),
}
BPB32 = {"fat_size32": (36, 4), "ext_flags": (40, 2), "fs_version": (42, 2), "root_cluster": (44, 4),
         "fsinfo_sector": (48, 2), "backup_boot_sector": (50, 2)}
CANARY_PERIOD = 32


def canary_pattern(rng):
    """32 bytes, random but never all one value: the period of the canary fill."""
    return b"VFZ!" + bytes(rng.randrange(256) for _ in range(CANARY_PERIOD - 4))


def _interesting(rng, old, size):
    top = (1 << (8 * size)) - 1
    return rng.choice([0, 1, 2, top, top >> 1, old + 1, max(old - 1, 0), old * 2, old // 2,
                       1 << rng.randrange(8 * size), rng.randrange(top + 1)]) & top


def m_bpb(L, rng):
    table = dict(BPB, **(BPB32 if L.bits == 32 else {}))
    if rng.random() < 0.05:
        return [Patch(510, bytes([rng.randrange(256), 0xAA]), "boot.signature")]
    name = rng.choice(sorted(table))
    off, size = table[name]
    old = int.from_bytes(L.data[off:off + size], "little")
    if name == "bytes_per_sector":
        val = rng.choice([0, 1, 128, 256, 511, 1024, 2048, 4096, 8192, 32768, old * 2, old + 1])
    elif name == "sectors_per_cluster":
        val = rng.choice([0, 3, 64, 128, 255, old * 2, old * 4])
    elif name == "fat_count":
        val = rng.choice([0, 1, 3, 255])
    else:
        val = _interesting(rng, old, size)
    return [Patch(off, (val & ((1 << 8 * size) - 1)).to_bytes(size, "little"), "bpb." + name)]


def m_fat(L, rng):
    used = [c for ch in L.chains.values() for c in ch]
    n = rng.choice(used) if used and rng.random() < 0.8 else rng.randrange(L.max_cluster + 3)
    chain = next((ch for ch in L.chains.values() if n in ch), [n])
    others = [c for c in used if c not in chain]
    top = _eoc(L.bits)
    kind = rng.choice(["free", "bad", "eoc", "one", "range", "self", "cross", "cycle", "random"])
    val = {"free": 0, "bad": top - 8, "eoc": top, "one": 1,
           "range": rng.choice([L.max_cluster + 1, L.max_cluster + 2, top - 9, L.max_cluster * 2 + 7]),
           "self": n,
           "cross": rng.choice(others) if others else n,
           "cycle": rng.choice(chain[:chain.index(n) + 1]) if n in chain else n,
           "random": rng.randrange(top + 1)}[kind]
    ps = L.fat_entry_patches(n, val, rng.random() < 0.7)
    for p in ps:
        p.field += f"={kind}"
    return ps


def _slot_name(L, off, path):
    e = L.data[off:off + 32]
    if e[11] == 0x0F:
        return f"dir {path} lfn#{e[0] & 0x3F}"
    return f"dir {path} {e[:11].decode('latin-1').rstrip()!r}"


def m_dir(L, rng):
    used = L.used_slots()
    if not used:
        return []
    off, path, dcl = rng.choice(used)
    e = L.data[off:off + 32]
    tag = _slot_name(L, off, path)
    if e[11] == 0x0F:
        k = rng.choice(["ordinal", "checksum", "cluster", "attr", "name"])
        if k == "ordinal":
            return [Patch(off, bytes([rng.choice([0, 0x40, 0x41, 0x7F, 0x54, 0x14, e[0] ^ 0x40,
                                                  (e[0] & 0x40) | ((e[0] & 0x3F) + 1)])]), tag + ".ordinal")]
        if k == "checksum":
            return [Patch(off + 13, bytes([rng.randrange(256)]), tag + ".checksum")]
        if k == "cluster":
            return [Patch(off + 26, struct.pack("<H", rng.choice([1, 2, 0xFFFF])), tag + ".cluster")]
        if k == "attr":
            return [Patch(off + 11, bytes([rng.choice([0x10, 0x20, 0x3F, 0x1F])]), tag + ".attr")]
        return [Patch(off + 1 + 2 * rng.randrange(5), bytes([rng.randrange(256), rng.randrange(256)]),
                      tag + ".name")]
    k = rng.choice(["attr", "cluster", "cluster", "size", "first", "dotname", "hicluster"])
    if k == "attr":
        return [Patch(off + 11, bytes([rng.choice([0x00, 0x08, 0x0F, 0x10, 0x18, 0x30, 0x3F, 0xFF,
                                                   e[11] ^ 0x10])]), tag + ".attr")]
    if k in ("cluster", "hicluster"):
        here = dcl or 0
        parent = next((c for o, p, c in L.slots if c != dcl), 0) or 0
        val = rng.choice([0, 1, here, parent, L.max_cluster, L.max_cluster + 1, L.max_cluster + 50,
                          0xFFFF, rng.randrange(2, L.max_cluster + 1)])
        ps = [Patch(off + 26, struct.pack("<H", val & 0xFFFF), tag + ".cluster")]
        if L.bits == 32 or k == "hicluster":
            ps.append(Patch(off + 20, struct.pack("<H", (val >> 16) if k == "cluster"
                                                   else rng.choice([1, 0x0FFF, 0xFFFF])), tag + ".cluster_hi"))
        return ps
    if k == "size":
        old = struct.unpack_from("<I", e, 28)[0]
        val = rng.choice([0, 1, 0xFFFFFFFF, 0x7FFFFFFF, old + 1, old * 16 + 4096, L.fat.csize * 3 + 1])
        return [Patch(off + 28, struct.pack("<I", val & 0xFFFFFFFF), tag + ".size")]
    if k == "first":
        return [Patch(off, bytes([rng.choice([0x00, 0x05, 0xE5, 0x2E, 0x20, 0xFF])]), tag + ".name[0]")]
    return [Patch(off, rng.choice([b".          ", b"..         ", b"...        ", b"/          "]),
                  tag + ".name")]


def m_fsinfo(L, rng):
    if L.bits != 32:
        return m_bpb(L, rng)
    sec = struct.unpack_from("<H", L.data, 48)[0]
    base = sec * L.fat.bps
    if not 0 < sec < L.fat.res or base + 512 > len(L.data):
        return m_bpb(L, rng)
    k = rng.choice(["lead_sig", "struct_sig", "free_count", "next_free", "next_free"])
    off = {"lead_sig": 0, "struct_sig": 484, "free_count": 488, "next_free": 492}[k]
    if k.endswith("sig"):
        return [Patch(base + off, bytes(rng.randrange(256) for _ in range(4)), "fsinfo." + k)]
    val = rng.choice([0, 1, 2, L.max_cluster, L.max_cluster + 1, 0xFFFFFFFE, 0x0FFFFFFF, 0xFFFFFFFF,
                      rng.randrange(1 << 32)])
    return [Patch(base + off, struct.pack("<I", val), "fsinfo." + k)]


def m_backup(L, rng):
    if L.bits != 32:
        return m_bpb(L, rng)
    sec = struct.unpack_from("<H", L.data, 50)[0]
    base = sec * L.fat.bps
    if not 0 < sec < L.fat.res or base + 512 > len(L.data):
        return m_bpb(L, rng)
    if rng.random() < 0.4:       # primary broken, backup intact: who falls back, and how?
        ps = [Patch(510, b"\x00\x00", "boot.signature")]
        return ps + [Patch(base + p.offset, p.data, "backup." + p.field) for p in m_bpb(L, rng)
                     if rng.random() < 0.5]
    return [Patch(base + p.offset, p.data, "backup." + p.field) for p in m_bpb(L, rng)]


def m_canary(L, rng, pattern):
    """-> (patches, tail bytes appended): see the module doc. The canary
    byte at image offset x is pattern[x % 32] (clusters start on sector
    boundaries, so a cluster out there reads as the pattern from its start)."""
    f = L.fat
    files = []
    for off, path, dcl in L.used_slots():
        e = L.data[off:off + 32]
        if e[11] != 0x0F and not e[11] & 0x18 and struct.unpack_from("<I", e, 28)[0] > 0:
            files.append((off, struct.unpack_from("<I", e, 28)[0]))
    if not files:
        return [], b""
    k = rng.choice([1, 2, 4])                          # clusters cut off the declared volume
    new_total = f.total - k * f.spc
    if new_total <= f.data_sec + 2 * f.spc:
        return [], b""
    ps = []
    if struct.unpack_from("<H", L.data, 19)[0]:
        ps.append(Patch(19, struct.pack("<H", new_total), "bpb.total_sectors16=canary"))
    else:
        ps.append(Patch(32, struct.pack("<I", new_total), "bpb.total_sectors32=canary"))
    end = new_total * f.bps
    if end < len(L.data):
        ps.append(Patch(end, canary_bytes(pattern, end, len(L.data)), "canary fill past the declared end"))
    extra = 2 * f.csize                                 # two more canary clusters
    tail = canary_bytes(pattern, len(L.data), len(L.data) + extra)
    first = 2 + max(0, -(-(end // f.bps - f.data_sec) // f.spc))   # first cluster wholly past the end
    target = first + rng.randrange(2)
    if f.cluster_off(target) + f.csize > len(L.data) + extra:
        target = first
    if f.cluster_off(target) + f.csize > len(L.data) + extra:
        return [], b""
    off, size = rng.choice(files)
    tag = _slot_name(L, off, "")
    ps.append(Patch(off + 26, struct.pack("<H", target & 0xFFFF), tag + ".cluster=canary"))
    if f.bits == 32:
        ps.append(Patch(off + 20, struct.pack("<H", target >> 16), tag + ".cluster_hi=canary"))
    ps.append(Patch(off + 28, struct.pack("<I", min(size, f.csize)), tag + ".size=canary"))
    ps += L.fat_entry_patches(target, _eoc(L.bits), True)
    return ps, tail


def canary_bytes(pattern, start, stop):
    """The canary bytes of image offsets start..stop (phase by offset)."""
    n = stop - start
    ph = start % CANARY_PERIOD
    return (pattern * (n // CANARY_PERIOD + 2))[ph:ph + n]


def declared_end(image):
    """Bytes of the volume its boot sector declares (total sectors x bytes
    per sector), or None when the fields are unusable."""
    if len(image) < 512:
        return None
    bps = struct.unpack_from("<H", image, 11)[0]
    tot = struct.unpack_from("<H", image, 19)[0] or struct.unpack_from("<I", image, 32)[0]
    return bps * tot if bps and tot else None


MUTATORS = {"bpb": (m_bpb, 2), "fat": (m_fat, 4), "dir": (m_dir, 5), "fsinfo": (m_fsinfo, 1),
            "backup": (m_backup, 1), "bound": (boundary.m_bound, 3)}


def mutate(L, rng, canary=None):
    """-> (patches, tail, kinds): 1-4 mutators' patches, the bytes appended
    (canary clusters) and the mutator names used. canary: the pattern, when
    this image is a canary image (then the canary mutator comes first)."""
    kinds, patches, tail = [], [], b""
    if canary is not None:
        ps, tail = m_canary(L, rng, canary)
        if ps:
            kinds.append("canary")
            patches += ps
    names = sorted(n for n in MUTATORS if not (kinds and n in ("bpb", "backup", "fsinfo", "bound")))
    weights = [MUTATORS[n][1] for n in names]
    for _ in range(rng.choice([1, 1, 2, 2, 3, 4]) - (1 if kinds else 0)):
        n = rng.choices(names, weights)[0]
        ps = MUTATORS[n][0](L, rng)
        if ps:
            kinds.append(n)
            patches += ps
    return patches, tail, kinds


def apply(seed, patches, tail=b""):
    """The hostile image: the seed with the patches written over it, tail appended."""
    b = bytearray(seed)
    for p in patches:
        if p.offset < len(b):
            n = min(len(p.data), len(b) - p.offset)
            b[p.offset:p.offset + n] = p.data[:n]
    return bytes(b) + tail


def byte_ranges(seed, image, chunk=4096):
    """[(offset, length)] where image differs from seed (a tail past the
    seed's end is one range); equal chunks are skipped whole."""
    out, n = [], min(len(seed), len(image))
    a, b = memoryview(seed), memoryview(image)
    start = None
    for c in range(0, n, chunk):
        if start is None and a[c:c + chunk] == b[c:c + chunk]:
            continue
        for i in range(c, min(c + chunk, n)):
            if seed[i] != image[i]:
                if start is None:
                    start = i
            elif start is not None:
                out.append((start, i - start))
                start = None
    if start is not None:
        out.append((start, n - start))
    if len(image) > len(seed):
        out.append((len(seed), len(image) - len(seed)))
    return out
