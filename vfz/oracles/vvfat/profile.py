"""The model profile of the vvfat writers: the tree is Linux's (the model's names and results), the root is vvfat's own: 512 slots, the volume label in the first, a long name for every entry."""
from vfz.model.tree import FixedRoot
from vfz.oracles.vvfat.volume import ROOT_SLOTS


def _root(image):
    """vvfat's root, whatever image the script was meant for: ROOT_SLOTS
    slots (0x20 per sector of its 16-sector clusters; FAT32 too), slot 0
    the 'QEMU VVFAT' label. Every entry takes its long-name slots and a
    short one (the Entry's shortname rule "lfn"); vvfat refuses a tree
    whose root needs more ("Too many entries in root directory", measured:
    255 one-character files fit, 256 do not), so the model answers ENOSPC
    where that tree would start (first fit, as the kernel profile)."""
    return FixedRoot(ROOT_SLOTS, taken=(0,))


# Knobs of vfz.model (see the knob comments in vfz/model/profiles.py).
# label: vvfat writes "QEMU VVFAT" in the boot sector and the root's label entry (measured
# with `vfat label` on its volumes), whatever the image the script was meant for
PROFILE = {"root": _root, "label": {"boot": "QEMU VVFAT", "root": "QEMU VVFAT"}}

# kernel-vvfat: Linux writes (the kernel profile's rules, dual names) into vvfat's
# root (the same 512 slots and label entry: vvfat makes its disk from an empty host
# directory). Its 504 MB (64474 clusters of 8 KiB) are not modelled: no Linux capacity
# (the pristine image of the script's --fs is not the volume written)
KERNEL_PROFILE = {"root": _root}
