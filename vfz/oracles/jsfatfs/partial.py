"""The npm fatfs package's entry cut at the end of a full FAT12/16 root: its long-name slots left written, its cluster left allocated, ENOSPC answered (jsfatfs-enospc-partial-entry), recognised from the image: orphan_tail.

dir.js addFile allocates the new entry's cluster first (vol.allocateInFAT),
then writes its slots -- long-name slots, the 8.3 entry, an end marker --
in one dirChain.writeToPosition from the first free slot after the last
entry. A fixed root (FAT12/16) cannot grow: the write stops at the root's
last sector with NOSPC after the sectors before it were written, and
nothing is undone (dir.js: "TODO: if we get error, what/should we clean
up?"). Minimised on a 16-slot root: mkdir of a 256-unit name (20 long-name
slots + 1) answers ENOSPC, as Linux does, but leaves 16 long-name slots
filling the root and cluster 2 allocated, so the next `mkdir "/a"` is
ENOSPC too (Linux: ok); fsck.fat "Orphaned long file name part",
"Reclaimed 1 unused cluster". The same in a subdirectory that cannot
grow (no cluster left): its chain ends in the cut entry's long-name slots
(fsck.py orphan_tail_any).
"""
import struct

from vfz.fatimg import open_ro
from vfz.oracles import NamedException

PARTIAL = "jsfatfs-enospc-partial-entry"


def orphan_tail(image):
    """How many long-name slots end the image's fixed root (FAT12/16) with
    no 8.3 entry after them, their run starting with a last-part slot
    (ord | 0x40): the entry the package cut there. 0 when the root ends
    otherwise (a whole directory never ends in a long-name slot)."""
    try:
        fat = open_ro(image)
        if struct.unpack_from("<H", fat.b, 22)[0] == 0 or not fat.rootent:
            return 0            # a FAT32 boot sector: the root is a cluster chain
    except (OSError, ValueError, struct.error):
        return 0
    return tail_slots(fat, fat.dir_slots(None))


def tail_slots(fat, slots):
    """How many long-name slots end slots, their run starting with a last-part slot; else 0."""
    n = 0
    for off in reversed(slots):
        e = fat.b[off:off + 32]
        if e[11] != 0x0F or e[0] in (0, 0xE5):
            break
        n += 1
        if e[0] & 0x40:
            return n
    return 0


def in_root(op):
    return op.kind in ("create", "mkdir") and \
        len([c for c in op.path.split("/") if c and c not in (".", "..")]) == 1


def later_enospc(image, ops, got, want, i):
    """PARTIAL evidence for op i, answered ENOSPC where the model says ok:
    both in a FAT12/16 root, an earlier create or mkdir in the root answered
    ENOSPC by the package and the model alike, and the image's root ends in
    that cut entry's long-name slots (orphan_tail)."""
    if got[i] != "ENOSPC" or i >= len(want) or want[i] != "ok" or not in_root(ops[i]):
        return False
    if not any(in_root(op) and got[j] == "ENOSPC" and j < len(want) and want[j] == "ENOSPC"
               for j, op in enumerate(ops[:i])):
        return False
    return orphan_tail(image) > 0


EXCEPTIONS = [
    NamedException(
        PARTIAL, "jsfatfs", "writer",
        "dir.js addFile allocates the new entry's cluster, then writes its long-name slots, 8.3 "
        "entry and end marker in one write from the root's first free slot; in a FAT12/16 root "
        "too full for them the write stops at the root's end with ENOSPC and nothing is undone "
        "(dir.js: 'TODO: if we get error, what/should we clean up?'): the slots up to the root's "
        "end stay as orphaned long-name parts and the cluster stays allocated, so later entries "
        "that fit (Linux: ok) are ENOSPC too. Minimised on a 16-slot root: mkdir of a 256-unit "
        "name (ENOSPC, as Linux), then mkdir \"/a\": ENOSPC",
        "the image's fixed root ends in long-name slots that no 8.3 entry follows (orphan_tail), or "
        "a directory's cluster chain does (fsck.fat's complaints: fsck.orphan_tail_any); "
        "the first op the package answered otherwise is an ENOSPC in the root after an ENOSPC "
        "there both answered (known_failure), or fsck.fat's 'Orphaned long file name part' and "
        "'Reclaimed' (explain_checker)", bug=PARTIAL),
]
