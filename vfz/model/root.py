"""Directory slots: how many an entry takes (slots_needed), and the FAT12/16 fixed root that can fill (FixedRoot).

The fixed root of FAT12 and FAT16 holds as many 32-byte slots as the boot
sector says, some taken before a script runs (the volume label), and
fat_add_entries takes the first run of free slots long enough for a new
entry or fails with ENOSPC; FAT32's root grows like any directory.
"""
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

    def alloc(self, n):
        """First-fit run of n free slots, as fat_add_entries scans for it
        -> its first index, or None (ENOSPC)."""
        run = 0
        for i, u in enumerate(self.used):
            run = 0 if u else run + 1
            if run == n:
                for j in range(i - n + 1, i + 1):
                    self.used[j] = True
                return i - n + 1
        return None

    def free(self, slots):
        first, n = slots
        for j in range(first, first + n):
            self.used[j] = False


def root_for(profile, image):
    """The FixedRoot a model of profile starts from on image: the kernel
    profile (Linux and the core) fills a FAT12/16 root slot by slot; the
    mtools profile has its own slot rules and keeps an unbounded root."""
    return None if profile_knobs(profile).get("unbounded_root") else fixed_root_of(image)


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
