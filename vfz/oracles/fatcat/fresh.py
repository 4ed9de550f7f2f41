"""fatcat on a formatter's fresh volume: the sector size it refuses, and its one-FAT compare.

Part of the fatcat oracle (vfz/oracles/fatcat/). Measured with fatcat 1.1.0 by the formatter
sweep (reports/formatters.md):

- SECTOR_512 (fatcat-sector-512): a boot sector whose bytes per sector is not 512 makes fatcat
  print "WARNING: Bytes per sector is not 512 (N)" and fail ("! Failed to init the FAT
  filesystem", exit 1) for every command: volumes of 1024..4096-byte sectors are unreadable
  to it (mformat -M, f_mkfs on a 4Kn disk, mkfs.fat -S make them);
- ONE_FAT: `fatcat -2` on a volume of one FAT prints "ERROR: Compare is only suitable for 2
  fats (found 1)" on stderr and nothing on stdout, which the checker once took for a FAT
  difference ("fat-differ: "); nothing differs, so no complaint is made (the glue's own bug,
  fixed; FatFs makes one FAT by default).
"""
from vfz import geometry

SECTOR_512 = "fatcat-sector-512"
ONE_FAT = "Compare is only suitable for 2 fats"


def fresh_exceptions(geo, rr, image=None):
    """[(SECTOR_512, [rr.error])] when rr is fatcat's refusal of a sector size other than 512."""
    if not rr.error or not image or "Failed to init the FAT filesystem" not in rr.error:
        return []
    m = geometry.made(image)
    if m and m["sector"] != 512 and f"Bytes per sector is not 512 ({m['sector']})" in rr.raw:
        return [(SECTOR_512, [rr.error])]
    return []
