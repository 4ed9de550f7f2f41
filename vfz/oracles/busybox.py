"""BusyBox's mkdosfs as a formatter: FAT32 only, its own cluster size, a NUL-padded label.

`busybox mkdosfs [-n LABEL] FILE [KBYTES]` makes a FAT32 volume whatever the size, so small
images get a FAT32 BPB over far fewer than 65 525 clusters (what Microsoft calls FAT12 or
FAT16): the "few clusters" geometry class, which readers that decide the FAT type by the
cluster count read as another type. It takes no cluster, sector, FAT-count, reserved or
root-entry option; a geometry asking for one is refused as unsupported.

Measured (BusyBox 1.35.0, Debian 12): the label is copied into the boot sector and into the
root directory's volume-label entry padded with NULs, not spaces ("VFATFUZZ\0\0\0"), and
without -n the boot sector's field is 11 NULs; fsck.fat 4.2 reports "Volume label 'VFATFUZZ'
stored in root directory is not valid." and "Label '' stored in boot sector is not valid."
(busybox-label-nul; the FAT specification pads names with spaces); a 1 MiB image gets 2 010
clusters, and fsck.fat warns "Filesystem is FAT32 according to fat_length and fat32_length
fields, but has only 2010 clusters" (a design choice of BusyBox; the warning is the dosfsck
oracle's fsck-fat32-few-clusters, as for mkfs.fat -F 32 on a small volume).
"""
import shutil

from vfz.oracles import Entry, Formatter, NamedException
from vfz.proc import run

LABEL_NUL = "busybox-label-nul"


def binary():
    return shutil.which("busybox") or "/bin/busybox"


class MkdosfsFormatter(Formatter):
    accepts = frozenset()
    fats_types = frozenset({32})

    def __init__(self, name="busybox-mkdosfs", **_):
        self.name = name

    def _format(self, image, geo, timeout, r):
        r.argv = [binary(), "mkdosfs", "-n", "VFATFUZZ", image]
        p = run(r.argv, timeout=timeout)
        r.raw = p.text + p.errtext
        if p.rc != 0:
            r.error = f"busybox mkdosfs failed: {(p.errtext or p.text or p.error or '').strip()[-200:]}"

    @staticmethod
    def fresh_exceptions(geo, rr, image=None):
        """fsck.fat's words on the NUL-padded label BusyBox writes, line by line."""
        label = [c for c in rr.complaints or () if "abel" in c and "is not valid" in c]
        return [(LABEL_NUL, label)] if label else []


ENTRIES = [
    Entry("busybox-mkdosfs", "busybox", formatter="vfz.oracles.busybox:MkdosfsFormatter",
          needs=("busybox-static",), label="busybox mkdosfs"),
]

EXCEPTIONS = [
    NamedException(LABEL_NUL, "busybox", "formatter",
                   "BusyBox mkdosfs pads the volume label with NULs, in the boot sector and in the "
                   "root directory's label entry (11 NULs in the boot sector without -n); fsck.fat "
                   "4.2 reports such a label as not valid",
                   "fsck.fat's complaints on the fresh volume are only '... label ... is not valid'"),
]
