#!/usr/bin/python3
"""fsck.fat -a as a transformer on a v1 image whose long-name set crosses
into a non-adjacent cluster: the repair wipes the clusters in between
(fsck-v1-lfn-cross, catalogued for the dosfsck reader), and the readers of
the repaired image see more than its renames. Named from the image before
the repair (fsck.fat's scan simulated: live_crossings), as the dosfsck
reader names it (campaign seed 10102, finding fb7defcd65a4: 20 ops filed
unnamed as 'fatfs:renamed'; minimised with the name to the 3 ops here).
Real tools: the core's v1 writer, fsck.fat -a, mtools as the reader.
"""
import os
import shutil
import sys
import unittest

REPO = os.environ.get("VFAT_SRC") or os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, REPO)

from vfz import opscript
from vfz.check import checker# noqa: E402
from vfz.oracles import fsck_repair  # noqa: E402

LONG = "y" * 255
# FAT32 with 512-byte clusters: the root's first cluster holds /a's entry
# and 14 slots of the 20-slot set; /a and /a/A take clusters 3 and 4, so
# the root's second cluster is 5 and the set crosses clusters 3-4 (live)
CROSSING = f'mkdir "/a"\nmkdir "/a/A"\ncreate "/{LONG}" 100 1\n'
# the same names, the long one first: it fits in the root's first cluster
NO_CROSSING = f'create "/{LONG}" 100 1\nmkdir "/a"\nmkdir "/a/A"\n'


def tx(res):
    return sorted(d.fields["kind"] for d in res.divs.values() if d.fields["role"] == "transformer")


@unittest.skipUnless(shutil.which("fsck.fat") and shutil.which("mdir"), "needs dosfstools and mtools")
class FsckRepairCrossTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.ck = checker.Checker(["mtools"], ["core-v1"], transformers=["fsck-repair"])

    @classmethod
    def tearDownClass(cls):
        cls.ck.close()

    def test_crossing_is_named(self):
        r = self.ck.check(opscript.parse(CROSSING), "fat32")
        self.assertEqual(tx(r), [fsck_repair.CROSS], r.details)
        self.assertTrue(fsck_repair.live_crossings(r.images["core-v1"]))
        self.assertIn("FSCK0000.REC", r.details["core-v1>fsck-repair"]["mtools"])

    def test_renames_alone_stay_renamed(self):
        r = self.ck.check(opscript.parse(NO_CROSSING), "fat32")
        self.assertEqual(tx(r), [fsck_repair.RENAMED], r.details)
        self.assertEqual(fsck_repair.live_crossings(r.images["core-v1"]), [])


if __name__ == "__main__":
    unittest.main()
