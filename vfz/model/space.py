"""Data clusters: how many are free, what a file's bytes take, and what Linux keeps when they run out.

A model given a Space (Model(space=space_of(image))) predicts ENOSPC part-way through a
write, a create or a truncate growth as Linux 6.1 answers it (and as the core does since it
follows Linux, core/src/namei.c short_write_end): the write goes page by page (4 KiB), the
zero-filled gap before a write past the end first, and when a page cannot get its clusters
the file is cut back to the size reached -- the largest page boundary the file's clusters
plus every free one can hold, or the write's offset when the gap got that far, never less
than before -- the clusters past it are freed, and the op answers ENOSPC. A new directory
takes one cluster (ENOSPC, no entry, when none is free); unlink and rmdir free theirs.

A directory that runs out of slots grows by whole clusters taken from the same count
(vfz.model.root.DirTable: a subdirectory, and a FAT32 root whose clusters and slots in use
the Space reads from the image); rmdir frees all of a directory's clusters. Without a
Space (studies, tests) capacity is unbounded, as before.
"""
import functools
import os
import struct

from vfz.opscript import content

PAGE = 4096


class Space:
    def __init__(self, free, cluster, root=None, block=512):
        self.free = free          # free data clusters
        self.cs = cluster         # bytes per cluster
        self.bs = block           # bytes per block: the sector (fat_get_block maps sectors)
        self.root = root          # FAT32: (root's clusters, slots in use, label slot), else None

    def clusters(self, nbytes):
        return (nbytes + self.cs - 1) // self.cs

    def kept(self, size, off, end, data_at_off, mapped):
        """What a file of size bytes whose mmu_private is mapped keeps when a write (or,
        data_at_off False, a truncate growth) to end runs out of clusters (short_write_end's
        rule)."""
        room = (self.clusters(size) + self.free) * self.cs
        if end <= room:
            return end
        # cont_expand_zero fills a gap only past mmu_private (mapped): an offset at or
        # before it expands nothing (kept: the old size)
        # i_size reaches a page's end only at its write_end: a page zero-filled from
        # mmu_private's page on, or one the write copies into from the offset's page on
        first = min(mapped // PAGE, off // PAGE) if data_at_off else mapped // PAGE
        page = room // PAGE * PAGE
        k = max(size, page if page >= (first + 1) * PAGE else 0)
        if data_at_off and size < off <= room and off > k and off > mapped:
            k = off
        return k

    def data_end(self, size, off, end):
        """Where the data of a write that runs out of clusters stops: the pages before the
        first that gets no cluster are copied (generic_perform_write), inside the old size
        too; off when none is."""
        page = (self.clusters(size) + self.free) * self.cs // PAGE * PAGE
        return min(end, page) if page > off else off

    @staticmethod
    def mmu(node):
        """node's mmu_private: how far fat_get_block has mapped its blocks, where
        cont_expand_zero starts a gap's zero-fill. fat_fill_inode starts it at the size
        (None); a write or growth past it maps whole blocks to its end (mapped_to); a
        truncate that does not grow and fat_write_failed after ENOSPC set it to the size,
        exact (core/src/inode.c says the same for the core)."""
        return len(node.data) if node.mmu is None else node.mmu

    def mapped_to(self, node, m, end):
        """Set node's mmu_private after a write or growth to end that fits, from m
        before it."""
        node.mmu = -(-end // self.bs) * self.bs if end > m else m

    def grow(self, old, new):
        """Take the clusters a file growing from old to new bytes needs (all fit)."""
        self.free -= max(0, self.clusters(new) - self.clusters(old))

    def release(self, nbytes):
        self.free += self.clusters(nbytes)


class SpaceOps:
    """The model's writes under a Space (mixed into vfz.model.tree.Model)."""

    def _fill(self, node, off, size, seed):
        """Write size bytes of seed at off into node under the Space: ok, or ENOSPC with
        what Linux keeps (vfz.model.space)."""
        d, s, end = node.data, len(node.data), off + size
        m = self.space.mmu(node)
        k = self.space.kept(s, off, end, True, m)
        node.mtime = None          # file_update_time: the writer's clock
        if k >= end:               # it all fits
            node.attr |= 0x20      # fat_write_end
            if len(d) < off:
                d.extend(b"\0" * (off - len(d)))
            d[off:end] = content(seed, size)
            self.space.grow(s, max(s, end))
            self.space.mapped_to(node, m, end)
            return "ok"
        w = self.space.data_end(s, off, end)
        if s or self.space.free:
            # the failed write_begin ends in fat_free, which sets ATTR_ARCH on a file
            # with a first cluster: one it had, or one it got before the volume ran out
            node.attr |= 0x20
        if k > s or w > off:
            node.attr |= 0x20      # fat_write_end
            if len(d) < min(off, k):
                d.extend(b"\0" * (min(off, k) - len(d)))
            if w > off:
                d[off:w] = content(seed, size)[:w - off]
            self.space.grow(s, max(s, k))
        node.mmu = len(d)          # fat_write_failed: truncated to the size kept
        node.mtime = None          # file_update_time: the writer's clock
        return "ok" if k >= end else "ENOSPC"


@functools.lru_cache(maxsize=64)
def _free_count(path, size, mtime):
    with open(path, "rb") as f:
        boot = f.read(512)
        bps, spc, res, nfats, rootent = struct.unpack_from("<HBHBH", boot, 11)
        tot = struct.unpack_from("<H", boot, 19)[0] or struct.unpack_from("<I", boot, 32)[0]
        spf16 = struct.unpack_from("<H", boot, 22)[0]
        spf = spf16 or struct.unpack_from("<I", boot, 36)[0]
        if not bps or not spc or not spf:
            return None
        data = res + nfats * spf + (rootent * 32 + bps - 1) // bps
        count = (tot - data) // spc
        bits = 32 if spf16 == 0 else 12 if count < 4085 else 16
        f.seek(res * bps)
        fat = f.read(spf * bps)
        root = _fat32_root(f, boot, fat, bps * spc, data * bps, count) if bits == 32 else None
    free = 0
    for n in range(2, count + 2):
        if bits == 12:
            o = n * 3 // 2
            if o + 2 > len(fat):
                break
            v = struct.unpack_from("<H", fat, o)[0]
            v = v >> 4 if n & 1 else v & 0xFFF
        elif bits == 16:
            if 2 * n + 2 > len(fat):
                break
            v = struct.unpack_from("<H", fat, 2 * n)[0]
        else:
            if 4 * n + 4 > len(fat):
                break
            v = struct.unpack_from("<I", fat, 4 * n)[0] & 0x0FFFFFFF
        free += v == 0
    return free, bps * spc, root, bps


def _fat32_root(f, boot, fat, cs, data_start, count):
    """(clusters, slots in use, label slot) of a FAT32 root from its chain,
    or None when the chain is not one a writer would extend."""
    from vfz.model.inode import label_slot
    n, seen, raw = struct.unpack_from("<I", boot, 44)[0], set(), b""
    while 2 <= n < count + 2 and n not in seen and 4 * n + 4 <= len(fat):
        seen.add(n)
        f.seek(data_start + (n - 2) * cs)
        raw += f.read(cs)
        n = struct.unpack_from("<I", fat, 4 * n)[0] & 0x0FFFFFFF
    if not seen or n < 0x0FFFFFF8:
        return None
    used = tuple(i for i in range(len(raw) // 32) if raw[i * 32] not in (0, 0xE5))
    return len(seen), used, label_slot(raw)


def space_of(image):
    """The Space of an image file (its free clusters as its FAT says), or None."""
    try:
        st = os.stat(image)
        r = _free_count(os.path.abspath(image), st.st_size, st.st_mtime_ns)
    except (OSError, struct.error):
        return None
    return Space(*r) if r else None


def space_for(profile, image):
    """The Space a model of profile starts from on image: Linux's rules (the kernel profile,
    whose writers are Linux and the core; a profile may claim them with the knob
    "linux_capacity"), else None (a peer's own behaviour on a full volume is not modelled)."""
    from vfz.model.profiles import profile_knobs
    knobs = profile_knobs(profile)
    return space_of(image) if knobs.get("linux_capacity", not knobs) else None
