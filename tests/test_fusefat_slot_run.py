#!/usr/bin/python3
"""fusefat-slot-run-offset-wraps against the real fusefat 0.1a: a new long
name whose run of reused (deleted) slots starts in one cluster of a
directory and reaches the end of a later cluster is refused with EPERM:
fusefat computes the run's offset in the later cluster, a negative number
('findlfnslots: found 20 slots at clus:7, off:4294967200', 'Offset too
big'). Campaign seed 11102, finding 137188933897 (7 ops on FAT32).

Through the checker as a campaign files it (Checker(["dosfsck", "fatfs"],
["fusefat"]), 512-byte clusters): the FAT32 root and a FAT16 subdirectory
are one writer finding of that name from the refused op, the readers agree
on the script cut before it; near misses -- the run ends inside the next
cluster (39 characters first), the FAT16 root (one contiguous region), the
run is not a reused one (nothing deleted first) -- are made, no finding.
About 10 s."""
import os
import shutil
import sys
import unittest

REPO = os.environ.get("VFAT_SRC") or os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, REPO)

from vfz import opscript
from vfz.check import checker# noqa: E402
from vfz.oracles import fusefat  # noqa: E402

LONG = "x" * 255          # 20 long-name slots + '~N': 21 slots


def script(first, parent="", again="create"):
    """A first name of `first` characters, then the 255-character one made,
    deleted and made again in parent (fusefat gives every name long-name
    slots: 130 characters take 11 of a cluster's 16 slots)."""
    head = f'mkdir "{parent}"\n' if parent else ""
    a = "a" * first
    return (head + f'create "{parent}/{a}" 0 0\ncreate "{parent}/{LONG}" 0 0\n'
            f'unlink "{parent}/{LONG}"\n{again} "{parent}/{LONG}"' + (" 0 0" if again == "create" else "") + "\n")


def sigs(res):
    return sorted((d.fields["role"], d.fields["oracle"], d.fields["verdict"], d.fields["kind"])
                  for d in res.divs.values())


@unittest.skipUnless(shutil.which("fusefat") and shutil.which("fusermount") and os.path.exists("/dev/fuse")
                     and shutil.which("fsck.fat") and shutil.which("node"), "needs fusefat, fuse, dosfstools, node")
class FusefatSlotRunTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.ck = checker.Checker(["dosfsck", "fatfs"], ["fusefat"])

    @classmethod
    def tearDownClass(cls):
        cls.ck.close()

    def test_refused_and_named(self):
        for text, fs, line in ((script(130), "fat32:34M:512", 4),
                               (script(130, again="mkdir"), "fat32:34M:512", 4),
                               (script(169), "fat32:34M:512", 4),     # 14 slots: the run spans 3 clusters
                               (script(130, parent="/d"), "fat16:16M:512", 5)):
            with self.subTest(fs=fs, script=text[:60]):
                r = self.ck.check(opscript.parse(text), fs)
                self.assertEqual(sigs(r), [("writer", "fusefat", "result", fusefat.SLOT_RUN)], r.details)
                det = r.details["fusefat"]["(writer)"]
                self.assertIn(f"from line {line}:", det)
                self.assertIn("expected ok, got EPERM", det)
                self.assertIn("Offset too big", r.raws["fusefat"])
                self.assertEqual({k: v for k, v in r.verdicts["fusefat"].items() if k != "(writer)"},
                                 {"dosfsck": "ok", "fatfs": "ok"})

    def test_near_misses_are_made(self):
        for text, fs in ((script(39), "fat32:34M:512"),          # 12 + 9 slots: ends inside cluster 2
                         (script(130), "fat16:16M:512"),         # the FAT16 root is contiguous
                         (f'create "/{"a" * 130}" 0 0\ncreate "/{LONG}" 0 0\n', "fat32:34M:512")):
            with self.subTest(fs=fs, script=text[:60]):
                r = self.ck.check(opscript.parse(text), fs)
                self.assertEqual(sigs(r), [], r.details)
                self.assertFalse(fusefat.slot_run_wrapped(r.raws["fusefat"]))


if __name__ == "__main__":
    unittest.main()
