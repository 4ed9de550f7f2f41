"""Boundary values from the volume's own layout: the mutator "bound" (issue 28).

The other mutators pick "interesting" numbers (0, 1, all ones, old +- 1);
this one computes, from the seed's geometry, the numbers where a reader's
arithmetic or range checks change their answer. Each value is one patch
set named "<field>=<value kind>", so a finding says which boundary it hit.
With the seed's layout L (bps bytes per sector, spc sectors per cluster,
res reserved sectors, nfats FATs of spf sectors, N data clusters, so the
last cluster is N+1; FAT type by L.bits):

clusters (value kinds used wherever a cluster number goes: a used chain's
FAT entry, a file's or directory's first cluster, FAT32's root cluster and
FSInfo next-free):
    past-last       N+2, N+3: just past the last cluster; the FAT may still
                    have room for their entries (it is sized in whole sectors)
    fat-end         the first number whose entry lies past the FAT
                    (spf*bps*8/bits) and the one after: a reader that checks
                    against the FAT's size, not the cluster count, follows it
    type-max        the largest cluster number the type allows
                    (0xFF6 / 0xFFF6 / 0x0FFFFFF6: the reserved range's edge)
    reserved        0x?FF0 (the first reserved value), bad 0x?FF7,
                    end of chain 0x?FF8 (the first) and all ones (the last),
                    at this volume's width
    other-width     the reserved/EOC values of the other FAT types
                    (0xFF8 on FAT16, 0xFFF8 on FAT32): a mid-range number
                    that a reader treating the volume as the wrong type
                    takes for end of chain
    high-nibble     FAT32: a valid next cluster with the top four bits set
                    (they are reserved; a reader must mask them)
    wrap-bytes      FAT32: c + 2^32 / (bytes per cluster) for a used cluster
                    c: (c-2) * cluster size wraps in 32 bits to c's offset
    wrap-sectors    FAT32, spc > 16: c + 2^32 / spc: the sector number wraps

32-bit products (BPB fields):
    fat-size x count   FAT32 fat_size32 + 2^32 / nfats (nfats a power of
                    two): res + nfats * spf wraps to the seed's own data
                    start, so a reader computing in 32 bits sees a valid
                    volume and one in 64 bits one far past the image
    fat-bytes       fat_size32 + 2^32 / bps: the FAT's size in bytes wraps
                    to the seed's; FAT12/16: nfats 255 with fat_size16
                    65535 (255 * 65535 * bps > 2^32)
    total-bytes     total_sectors32 + 2^32 / bps: the volume's size in bytes
                    wraps to the seed's; and 0xFFFFFFFF

cluster counts (total sectors set so that the data region holds exactly
that many clusters, the FAT left as it is; the cluster halved as often as
the image needs to hold them, so a 2 MiB FAT16 seed reaches 4085 inside its
image; a seed smaller than the count declares a volume past its image):
    count-4084 / 4085   the last FAT12 count and the first FAT16 one
    count-65524 / 65525 the last FAT16 count and the first FAT32 one
    (each +- 1 too: 4083, 4086, 65523, 65526)
"""
import struct

from vfz.hostile.layout import Patch, eoc

COUNTS = (4083, 4084, 4085, 4086, 65523, 65524, 65525, 65526)


def cluster_values(L):
    """[(kind, value)] of cluster numbers at this layout's boundaries."""
    f, bits = L.fat, L.bits
    last = L.max_cluster
    cover = L.fat_size * 8 // bits
    top = eoc(bits)
    out = [("past-last", last + 1), ("past-last", last + 2),
           ("fat-end", cover), ("fat-end", cover + 1),
           ("type-max", top - 9), ("reserved", top - 15), ("bad", top - 8),
           ("eoc-first", top - 7), ("eoc-last", top)]
    for w in (12, 16, 32):
        if w != bits and eoc(w) < (1 << bits):
            out.append(("other-width", eoc(w) - 7))
    used = sorted(c for ch in L.chains.values() for c in ch if 2 <= c <= last)
    if bits == 32 and used:
        c = used[0]
        out.append(("high-nibble", 0xF0000000 | c))
        wrap = (1 << 32) // f.csize
        if c + wrap < 0x0FFFFFF0:
            out.append(("wrap-bytes", c + wrap))
        if f.spc > 16 and c + (1 << 32) // f.spc < 0x0FFFFFF0:
            out.append(("wrap-sectors", c + (1 << 32) // f.spc))
    return out


def _dir_cluster(L, off, val, tag):
    ps = [Patch(off + 26, struct.pack("<H", val & 0xFFFF), tag)]
    if L.bits == 32 or val > 0xFFFF:
        ps.append(Patch(off + 20, struct.pack("<H", (val >> 16) & 0xFFFF), tag.replace(".cluster", ".cluster_hi")))
    return ps


def cluster_patches(L, rng):
    kind, val = rng.choice(cluster_values(L))
    used = [c for ch in L.chains.values() for c in ch]
    where = rng.choice(["fat", "dir", "dir"] + (["root", "next_free"] if L.bits == 32 else []))
    if where == "fat" and used:
        n = rng.choice(used)
        ps = L.fat_entry_patches(n, val, rng.random() < 0.7)
        if L.bits == 32 and kind == "high-nibble":       # fat_entry_patches keeps the seed's top bits
            ps = [Patch(p.offset, struct.pack("<I", val), p.field) for p in ps]
        for p in ps:
            p.field += f"={kind}"
        return ps
    if where == "root":
        return [Patch(44, struct.pack("<I", val & 0xFFFFFFFF), f"bpb.root_cluster={kind}")]
    if where == "next_free":
        sec = struct.unpack_from("<H", L.data, 48)[0]
        if 0 < sec < L.fat.res and (sec + 1) * L.fat.bps <= len(L.data):
            return [Patch(sec * L.fat.bps + 492, struct.pack("<I", val & 0xFFFFFFFF), f"fsinfo.next_free={kind}")]
    slots = [s for s in L.used_slots() if L.data[s[0] + 11] != 0x0F and L.data[s[0]] != 0x2E]
    if not slots:
        return []
    off, path, _ = rng.choice(slots)
    name = L.data[off:off + 11].decode("latin-1").rstrip()
    return _dir_cluster(L, off, val, f"dir {path} {name!r}.cluster={kind}")


def product_patches(L, rng):
    f = L.fat
    total16 = struct.unpack_from("<H", L.data, 19)[0]
    opts = []
    if L.bits == 32:
        if f.nfats & (f.nfats - 1) == 0:
            opts.append(("fat_size32", f.spf + (1 << 32) // f.nfats, "fat-size-x-count"))
        opts.append(("fat_size32", f.spf + (1 << 32) // f.bps, "fat-bytes"))
    else:
        opts.append(("fat16x255", None, "fat-bytes"))
    if not total16:
        opts.append(("total_sectors32", f.total + (1 << 32) // f.bps, "total-bytes"))
    opts.append(("total_sectors32", 0xFFFFFFFF, "total-max"))
    field, val, kind = rng.choice(opts)
    if field == "fat16x255":
        return [Patch(16, b"\xff", "bpb.fat_count=fat-bytes"), Patch(22, b"\xff\xff", "bpb.fat_size16=fat-bytes")]
    ps = [Patch({"fat_size32": 36, "total_sectors32": 32}[field], struct.pack("<I", val & 0xFFFFFFFF),
                f"bpb.{field}={kind}")]
    if field == "total_sectors32" and total16:
        ps.append(Patch(19, b"\0\0", f"bpb.total_sectors16={kind}"))   # so total_sectors32 counts
    return ps


def count_patches(L, rng):
    """Total sectors (and, where the image is too small for n clusters of the
    seed's size, a smaller power-of-two cluster that fits them) for exactly n
    data clusters; a seed too small even for one-sector clusters declares a
    volume past its image."""
    f = L.fat
    n = rng.choice(COUNTS)
    room = len(L.data) // f.bps - f.data_sec
    spc = f.spc
    while spc > 1 and n * spc > room:
        spc //= 2
    total = f.data_sec + n * spc
    ps = [] if spc == f.spc else [Patch(13, bytes([spc]), f"bpb.sectors_per_cluster=count-{n}")]
    if total < 0x10000 and struct.unpack_from("<H", L.data, 19)[0]:
        return ps + [Patch(19, struct.pack("<H", total), f"bpb.total_sectors16=count-{n}")]
    return ps + [Patch(19, b"\0\0", f"bpb.total_sectors16=count-{n}"),
                 Patch(32, struct.pack("<I", total), f"bpb.total_sectors32=count-{n}")]


def m_bound(L, rng):
    """One boundary value of the module doc's three families."""
    fam = rng.choices([cluster_patches, product_patches, count_patches], [5, 2, 2])[0]
    return fam(L, rng)
