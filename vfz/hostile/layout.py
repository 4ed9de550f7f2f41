"""A seed volume's layout for the mutators: geometry, directory slots, chains, FAT entry patches.

Patch(offset, data, field) is one byte range a mutation writes, named after
the on-disk field it hits. Layout(data) reads a well-formed seed once: its
geometry (vfz.fatimg.Fat; FAT32 by its BPB as Linux decides), every
directory slot with its directory's path and cluster, every chain; a seed
whose boot sector gives no layout (a fuzz input already broken: bytes per
sector 0, no FAT, metadata past the volume) raises SeedError with the
reason, which the campaign logs as one line.
"""
import struct
from dataclasses import dataclass

from vfz.fatimg import Fat


@dataclass
class Patch:
    offset: int
    data: bytes
    field: str


class SeedError(ValueError):
    """A seed whose boot sector gives no layout to mutate (already broken)."""


def geometry_problem(data):
    """Why the boot sector of data gives no usable layout, or None."""
    if len(data) < 512:
        return "shorter than a sector"
    bps, spc, res, nfats, rootent = struct.unpack_from("<HBHBH", data, 11)
    total = struct.unpack_from("<H", data, 19)[0] or struct.unpack_from("<I", data, 32)[0]
    spf = struct.unpack_from("<H", data, 22)[0] or struct.unpack_from("<I", data, 36)[0]
    for bad, what in ((bps not in (512, 1024, 2048, 4096), f"bytes per sector {bps}"),
                      (spc == 0 or spc & (spc - 1), f"sectors per cluster {spc}"),
                      (res == 0, "no reserved sector"), (nfats == 0, "no FAT"), (spf == 0, "FAT size 0"),
                      (total == 0, "total sectors 0")):
        if bad:
            return what
    data_sec = res + nfats * spf + (rootent * 32 + bps - 1) // bps
    if data_sec + spc > total or res * bps + nfats * spf * bps > len(data):
        return f"metadata ({data_sec} sectors) past the volume ({total} sectors) or the image"
    return None


class Layout:
    """The seed's geometry and its directory slots, read once per seed."""

    def __init__(self, data):
        self.data = bytes(data)
        why = geometry_problem(self.data)
        if why:
            raise SeedError(f"its boot sector gives no layout to mutate: {why}")
        self.fat = Fat(data)
        f = self.fat
        if struct.unpack_from("<H", data, 22)[0] == 0:     # FAT32 by its BPB (as Linux decides),
            f.bits = 32                                     # whatever its cluster count
            f.root_cluster = struct.unpack_from("<I", data, 44)[0]
        self.bits = f.bits
        self.max_cluster = f.clusters + 1
        self.fat_size = f.spf * f.bps
        # (slot offset, path of its directory, cluster of its directory or None=root)
        self.slots = []
        self.chains = {}          # first cluster -> chain, of every file and directory
        self._walk(None, "", 0, set())
        if f.bits == 32:
            self.chains.setdefault(f.root_cluster, f.chain(f.root_cluster))

    def _walk(self, cluster, path, depth, seen):
        if depth > 8 or cluster in seen:
            return
        seen.add(cluster)
        for off in self.fat.dir_slots(cluster):
            self.slots.append((off, path or "/", cluster))
        for off, name11, attr, cl, size, lfns in self.fat.short_entries(cluster):
            if name11[:1] == b"." or attr & 0x08 or not 2 <= cl <= self.max_cluster:
                continue
            self.chains[cl] = self.fat.chain(cl)
            if attr & 0x10:
                self._walk(cl, path + "/" + name11.decode("latin-1").strip(), depth + 1, seen)

    def used_slots(self):
        return [s for s in self.slots if self.data[s[0]] not in (0, 0xE5)]

    def fat_entry_patches(self, n, value, all_fats):
        """Patches writing FAT entry n (the seed's bytes around it kept)."""
        f, out = self.fat, []
        for k in range(f.nfats if all_fats else 1):
            base = f.fat_off + k * self.fat_size
            tag = f"fat{k}[{n}]" if all_fats else f"fat[{n}]"
            if f.bits == 12:
                p = base + n * 3 // 2
                if p + 2 > base + self.fat_size:
                    continue
                v = struct.unpack_from("<H", self.data, p)[0]
                v = ((v & 0x000F) | ((value & 0xFFF) << 4)) if n & 1 else ((v & 0xF000) | (value & 0xFFF))
                out.append(Patch(p, struct.pack("<H", v), tag))
            elif f.bits == 16:
                if base + n * 2 + 2 <= base + self.fat_size:
                    out.append(Patch(base + n * 2, struct.pack("<H", value & 0xFFFF), tag))
            else:
                p = base + n * 4
                if p + 4 <= base + self.fat_size:
                    hi = self.data[p + 3] & 0xF0
                    out.append(Patch(p, struct.pack("<I", (value & 0x0FFFFFFF) | hi << 24), tag))
        return out


def eoc(bits):
    return {12: 0xFFF, 16: 0xFFFF, 32: 0x0FFFFFFF}[bits]
