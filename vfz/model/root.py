"""Directory slots: how many an entry takes (slots_needed), the FAT12/16 fixed root that can fill (FixedRoot), and a directory that grows by clusters (DirTable).

The fixed root of FAT12 and FAT16 holds as many 32-byte slots as the boot
sector says, some taken before a script runs (the volume label), and
fat_add_entries takes the first run of free slots long enough for a new
entry or fails with ENOSPC. FAT32's root and every subdirectory grow
instead: when no run is long enough, the free slots at the directory's end
are used and as many new clusters as the rest needs are added (one
fat_alloc_clusters call: all or none, ENOSPC when the volume has too few),
up to FAT_MAX_DIR_ENTRIES slots. Deleted and never-used slots are alike
free; a directory never shrinks.
"""
import math
from vfz.model.names import short_only, utf16_len
from vfz.model.profiles import profile_knobs
from vfz.model.inode import label_slot


def slots_needed(name, rule="win95"):
    """Directory slots Linux writes for name (vfat_build_slots): a bare 8.3
    entry, or one LFN slot per 13 UTF-16 units and the short entry (alias
    or dummy: the same count in dual and nodual modes). rule: short_only's
    (winnt for the v3 patch, which stores "abc.txt" bare)."""
    return 1 if short_only(name, rule) else (utf16_len(name) + 12) // 13 + 1


class FixedRoot:
    """The slots of a FAT12/16 root: a fixed array (BPB root entry count),
    some taken before the script runs (the volume label)."""

    def __init__(self, count, taken=(), label_slot=None):
        self.used = [False] * count
        self.label_slot = label_slot      # the volume label's entry, if any
        for i in taken:
            if 0 <= i < count:
                self.used[i] = True

    def alloc(self, n, space=None):
        """First-fit run of n free slots, as fat_add_entries scans for it
        -> its first index, or None (ENOSPC)."""
        first, _ = _first_fit(self.used, n)
        return first

    def free(self, slots):
        first, n = slots
        for j in range(first, first + n):
            self.used[j] = False


FAT_MAX_DIR_ENTRIES = 65536


class DirTable:
    """The slots of a directory that grows by whole clusters of per slots
    each (a subdirectory: '.' and '..' in its first two; a FAT32 root)."""

    def __init__(self, per, clusters=1, taken=(), label_slot=None):
        self.per = per
        self.used = [False] * (per * clusters)
        self.label_slot = label_slot
        for i in taken:
            if 0 <= i < len(self.used):
                self.used[i] = True

    @classmethod
    def new_dir(cls, cluster_bytes):
        """A new subdirectory's table: one cluster, '.' and '..' taken."""
        return cls(max(cluster_bytes // 32, 1), 1, (0, 1))

    @property
    def clusters(self):
        return len(self.used) // self.per

    def alloc(self, n, space=None):
        """First-fit run of n free slots, else the free slots at the end and
        the clusters the rest needs (taken from space, when bounded) -> the
        first slot's index, or None (ENOSPC: nothing taken)."""
        first, tail = _first_fit(self.used, n)
        if first is not None:
            return first
        k = math.ceil((n - tail) / self.per)
        if len(self.used) + k * self.per > FAT_MAX_DIR_ENTRIES:
            return None
        if space is not None:
            if space.free < k:
                return None
            space.free -= k
        first = len(self.used) - tail
        self.used.extend([False] * (k * self.per))
        for j in range(first, first + n):
            self.used[j] = True
        return first

    free = FixedRoot.free


def _first_fit(used, n):
    """(first index of the first run of n free slots, taken; None) or
    (None, the length of the free run at the end)."""
    run = 0
    for i, u in enumerate(used):
        run = 0 if u else run + 1
        if run == n:
            for j in range(i - n + 1, i + 1):
                used[j] = True
            return i - n + 1, run
    return None, run


def root_for(profile, image):
    """The FixedRoot a model of profile starts from on image: the kernel
    profile (Linux and the core) fills a FAT12/16 root slot by slot; the
    mtools profile has its own slot rules and keeps an unbounded root; a
    profile with a "root" knob says what its writer's root holds (vvfat: a
    512-slot root of its own, whatever the image)."""
    knobs = profile_knobs(profile)
    if "root" in knobs:
        return knobs["root"](image)
    return None if knobs.get("unbounded_root") else fixed_root_of(image)


def fixed_root_of(image):
    """FixedRoot of a FAT12/16 image file (its root's size and the slots in
    use), or None for FAT32 (a root that grows like any directory)."""
    with open(image, "rb") as f:
        boot = f.read(512)
        bps = int.from_bytes(boot[11:13], "little")
        count = int.from_bytes(boot[17:19], "little")
        if not count or not bps:
            return None
        reserved = int.from_bytes(boot[14:16], "little")
        fat_secs = int.from_bytes(boot[22:24], "little")
        f.seek((reserved + boot[16] * fat_secs) * bps)
        raw = f.read(count * 32)
    taken = [i for i in range(len(raw) // 32) if raw[i * 32] not in (0, 0xE5)]
    label = label_slot(raw)
    return FixedRoot(count, taken, label)
