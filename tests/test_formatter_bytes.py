#!/usr/bin/python3
"""The formatter byte check (vfz.check.bootbytes) against the real `vfat mkfs` and mkfs.fat:
the core's fresh volumes equal mkfs.fat's of the same layout outside the masks, every byte
outside the masks that is flipped is seen (and named by its field), a masked one is not,
and a `vfat mkfs` whose volume lacks its 0xAA is a formatter finding of the checker.
"""
import os
import shutil
import stat
import struct
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from util_images import vfat_bin  # noqa: E402
from vfz import geometry, oracles  # noqa: E402
from vfz.check import bootbytes  # noqa: E402
from vfz.check.checker import Checker  # noqa: E402

HEAD = 1 << 20
SPECS = ["fat12:2M@vfat", "fat16:4M:512@vfat", "fat32:34M@vfat", "fat12:2M:4096:sector=2048:fats=1@vfat"]


class BootBytesTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.vfat = vfat_bin()
        cls.tmp = tempfile.mkdtemp(prefix="vfz-bootbytes-")
        cls.vols = {}
        for spec in SPECS:
            p = os.path.join(cls.tmp, spec.split("@")[0].replace(":", "_") + ".img")
            r = oracles.get_formatter("vfat", vfat=cls.vfat).format(p, geometry.parse(spec))
            assert not r.error, r.error
            argv, ref, why = bootbytes.reference(p)
            assert ref is not None, why
            with open(p, "rb") as f:     # the first MiB holds every region compared
                cls.vols[spec] = (f.read(HEAD), ref[:HEAD], geometry.made(p)["fat"])

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_core_equals_mkfs_fat_outside_masks(self):
        for spec, (ours, ref, fat) in self.vols.items():
            with self.subTest(spec=spec):
                self.assertEqual(bootbytes.compare_images(ours, ref, fat), [])

    def test_every_unmasked_boot_byte_is_seen(self):
        for spec, (ours, ref, fat) in self.vols.items():
            masks = bootbytes.BOOT_MASKS[fat]
            ss = struct.unpack_from("<H", ours, 11)[0]
            seen_masked = []
            for off in range(ss):
                if off in (11, 12, 13, 14, 15, 16, 22, 23) or (fat == 32 and off in (36, 37, 38, 39, 44, 48, 50)):
                    continue   # layout fields: a flip makes another volume, checked below
                bad = bytearray(ours)
                bad[off] ^= 0x01
                d = bootbytes.compare_images(bytes(bad), ref, fat)
                if bootbytes.masked(masks, off):
                    if d:
                        seen_masked.append(off)
                    continue
                with self.subTest(spec=spec, off=off):
                    self.assertEqual([x[:2] for x in d][:1],
                                     [("boot", bootbytes.field_of(bootbytes.BOOT_FIELDS[fat], off)[2])])
            self.assertEqual(seen_masked, [], spec)

    def test_fat32_fsinfo_backup_and_reserved_entries(self):
        ours, ref, fat = self.vols["fat32:34M@vfat"]
        res = struct.unpack_from("<H", ours, 14)[0]
        spf = struct.unpack_from("<I", ours, 36)[0]
        cases = {512 + 510: "FSInfo", 6 * 512 + 511: "backup boot", 7 * 512 + 0: "backup FSInfo",
                 2 * 512 + 100: "reserved sector 2", res * 512 + 0: "FAT1 reserved entries",
                 (res + spf) * 512 + 7: "FAT2 reserved entries"}
        for off, region in cases.items():
            bad = bytearray(ours)
            bad[off] ^= 0x40
            with self.subTest(region=region):
                self.assertEqual([x[0] for x in bootbytes.compare_images(bytes(bad), ref, fat)], [region])
        bad = bytearray(ours)
        bad[512 + 488] ^= 0x01       # the free count: masked (it follows the FAT size)
        self.assertEqual(bootbytes.compare_images(bytes(bad), ref, fat), [])
        bad[res * 512 + 8] = 0xF8     # the root's end mark 0x0FFFFFF8: still an end mark
        self.assertEqual(bootbytes.compare_images(bytes(bad), ref, fat), [])

    def test_checker_files_a_formatter_without_0xaa(self):
        # a `vfat mkfs` that drops the signature's 0xAA: the real one, then byte 511 zeroed
        fake = os.path.join(self.tmp, "vfat-no-aa")
        with open(fake, "w") as f:
            f.write(f'#!/bin/sh\n"{self.vfat}" "$@" || exit $?\n'
                    f'[ "$1" = mkfs ] && printf "\\000" | dd of="$2" bs=1 seek=511 conv=notrunc 2>/dev/null\n'
                    'exit 0\n')
        os.chmod(fake, os.stat(fake).st_mode | stat.S_IXUSR)
        for vfat, want in ((self.vfat, []), (fake, ["boot: signature 0x55AA"])):
            ck = Checker(["vfat-check-own"], ["core-dual"], vfat=vfat, notes=[])
            try:
                res = ck.check([], "fat16:4M:512@vfat")
                got = [d.fields["kind"] for d in res.divs.values()
                       if d.fields["role"] == "formatter" and d.fields["verdict"] == "bytes"]
                self.assertEqual(got, want, vfat)
            finally:
                ck.close()


if __name__ == "__main__":
    unittest.main()
