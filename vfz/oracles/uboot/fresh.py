"""U-Boot on a formatter's fresh volume: the two boot sectors its FAT code refuses whole.

Part of the uboot oracle (vfz/oracles/uboot/); the catalogue entries are in exceptions.py.
Read in U-Boot 2023.01's fs/fat/fat.c and measured by the formatter sweep
(reports/formatters.md):

- FS_TYPE (uboot-fs-type-string): read_bootsectandvi takes a boot sector whose 16-bit FAT size
  is not 0 as FAT12 or FAT16 only when the type string at offset 54 is exactly "FAT12   " or
  "FAT16   ", else "broken fs_type sign" and every command fails without a word (a debug
  message). The FAT specification calls that field informational and allows "FAT     ", which
  FatFs R0.15's f_mkfs writes on every FAT12/16 volume: U-Boot reads none of them;
- SECTOR_SIZE (uboot-sector-size): get_fs_info refuses a volume whose bytes per sector differ
  from the block device's ("FAT sector size mismatch (fs=4096, dev=512)"): the virtio disk of
  the QEMU board has 512-byte blocks, so every 1024..4096-byte-sector volume is unreadable.
"""
from vfz import geometry
from vfz.oracles.uboot.exceptions import FS_TYPE, SECTOR_SIZE


def fresh_exceptions(geo, rr, image=None):
    """[(name, [rr.error])] when rr is U-Boot's failure on one of those boot sectors."""
    if not rr.error or not image:
        return []
    m = geometry.made(image)
    if m is None:
        return []
    if "FAT sector size mismatch (fs=" in rr.error and m["sector"] != 512:
        return [(SECTOR_SIZE, [rr.error])]
    if not m["bpb32"] and m["fs_type"] not in ("FAT12   ", "FAT16   ") and rr.error.startswith("fatls /:"):
        return [(FS_TYPE, [rr.error])]
    return []
