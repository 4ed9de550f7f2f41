#!/usr/bin/python3
"""fusefat-erase-overruns-cluster against the real fusefat: on FAT12/16,
fat_real_delete (libfat.c) erases a deleted entry's slots with one lseek +
write from its first slot, so an entry whose slots run from a
subdirectory's cluster into its next (not physically adjacent) cluster
keeps its tail live there, and the 0xE5 copies land in the cluster
physically after the first one (campaign seed 9102, findings dab8bac657c4,
6e12ab5f9068, 6aed76e10879, 63f73293bdc9, 06f61c0b7b82: a directory with a
255-character name renamed out of /edC, wiped /edC,/AUX's '.' and '..').

Through the checker, as a campaign files it (Checker(["dosfsck"],
["fusefat"]), FAT16 4 MiB with 512-byte clusters): the minimal script is
one writer finding of that name, fsck.fat reads the cut script clean and
the full image is corrupt the way the exception says, also when the
tail in the next cluster is the short entry alone. Near misses (an
entry that fits in the directory's first cluster; the same script on
FAT32, which erases through the chain) are clean and unnamed, and the name
needs the image's evidence.
"""
import os
import shutil
import string
import subprocess
import sys
import unittest

REPO = os.environ.get("VFAT_SRC") or os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, REPO)

from vfz import opscript
from vfz.check import checker# noqa: E402
from vfz.fatimg import open_ro  # noqa: E402
from vfz.oracles import fusefat  # noqa: E402

ALPHA = (string.ascii_lowercase + string.digits) * 6


def script(n):
    """mkdir /d; mkdir /d/x; an n-character name created and unlinked in /d:
    '.', '..' and x (fusefat: one long-name slot + '~1') take 4 of the 16
    slots of /d's first cluster (2); x gets cluster 3, so /d's second
    cluster is 4. 182 characters = 14 long-name slots + 1: 3 run into
    cluster 4, and the erase writes them over cluster 3 (x's '.' and '..')."""
    name = ALPHA[:n]
    return name, (f'mkdir "/d"\nmkdir "/d/x"\ncreate "/d/{name}" 0 0\nunlink "/d/{name}"\n')


def sigs(res):
    return sorted((d.fields["role"], d.fields["oracle"], d.fields["verdict"], d.fields["kind"])
                  for d in res.divs.values())


def fsck(image):
    return subprocess.run(["fsck.fat", "-n", image], capture_output=True, text=True, timeout=60)


@unittest.skipUnless(shutil.which("fusefat") and shutil.which("fusermount") and os.path.exists("/dev/fuse")
                     and shutil.which("fsck.fat"), "needs fusefat, fuse and dosfstools")
class FusefatEraseOverrunTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.ck = checker.Checker(["dosfsck"], ["fusefat"])

    @classmethod
    def tearDownClass(cls):
        cls.ck.close()

    def check(self, text, fs):
        return self.ck.check(opscript.parse(text), fs)

    def test_minimal_script_is_named_and_corrupt(self):
        name, text = script(182)
        r = self.check(text, "fat16")
        self.assertEqual(sigs(r), [("writer", "fusefat", "result", fusefat.ERASE_OVERRUN)], r.details)
        self.assertEqual(r.verdicts["fusefat"]["dosfsck"], "ok", r.details)
        self.assertIn("from line 4: unlink", r.details["fusefat"]["(writer)"])
        self.assertIn("readers check the first 3 ops", r.details["fusefat"]["(writer)"])
        img = r.images["fusefat"]
        p = fsck(img)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn('Long filename fragment "abcdefghijklm" found outside a LFN sequence', p.stdout)
        self.assertIn('Long filename fragment "nopqrstuvwxyz" found outside a LFN sequence', p.stdout)
        self.assertIn("Expected a valid '.' entry in the first slot, found free entry", p.stdout)
        fat = open_ro(img)
        self.assertEqual(fat.csize, 512)
        d = [cl for _o, n, a, cl, _s, _l in fat.short_entries(None) if a & 0x10]
        self.assertEqual(len(d), 1)
        chain = fat.chain(d[0])
        self.assertEqual(len(chain), 2)
        self.assertNotEqual(chain[1], chain[0] + 1)
        # /d's second cluster begins with the live tail: orders 2, 1 and the short entry
        units = fusefat.orphan_tail(fat, chain[1], chain[0])
        self.assertEqual("".join(map(chr, units)), name[:26])
        # the cluster physically after /d's first (x's) begins with the erased
        # copies of those 3 slots: marked 0x00 (end of directory: the entry
        # was /d's last), so x's own entries are hidden too
        x = chain[0] + 1
        base, tail = fat.cluster_off(x), fat.cluster_off(chain[1])
        head = [bytes(fat.b[base + 32 * k:base + 32 * k + 32]) for k in range(3)]
        self.assertEqual([e[0] for e in head], [0x00] * 3)
        self.assertEqual([e[1:] for e in head], [bytes(fat.b[tail + 32 * k + 1:tail + 32 * k + 32]) for k in range(3)])
        # the name needs the image's evidence: not on the cut image (the entry
        # spans clusters 2 and 4 whole), not without one
        cut = open_ro(r.images["fusefat-cut"])
        self.assertEqual(cut.chain(d[0]), chain)
        self.assertIsNone(fusefat.orphan_tail(cut, chain[1], chain[0]))
        ops = opscript.parse(text)
        self.assertEqual(fusefat.first_known_failure(ops, ["ok"] * 4, img), (3, fusefat.ERASE_OVERRUN))
        self.assertIsNone(fusefat.first_known_failure(ops, ["ok"] * 4, r.images["fusefat-cut"]))
        self.assertIsNone(fusefat.first_known_failure(ops, ["ok"] * 4))

    def test_near_misses_clean_and_unnamed(self):
        """A 130-character name (11 slots) fits in /d's first cluster; on
        FAT32 the 182-character one is erased through the chain."""
        for fs, n in (("fat16", 130), ("fat32", 182)):
            with self.subTest(fs=fs, n=n):
                _name, text = script(n)
                r = self.check(text, fs)
                self.assertEqual(sigs(r), [], r.details)
                self.assertEqual(r.verdicts["fusefat"], {"dosfsck": "ok"}, r.details)
                self.assertEqual(fsck(r.images["fusefat"]).returncode, 0)

    def test_short_entry_alone_in_next_cluster(self):
        """A 150-character name (12 slots + '~N') fills /d's first cluster
        with its long-name slots: the short entry alone is /d's second
        cluster's first (j = 0). fusefat erases the 12 slots and writes the
        short entry's erased copy over x's '.' (fsck.fat: dots-missing, the
        only complaint); the short entry stays live in /d's second cluster,
        behind the 0x00 the erase wrote (the entry was /d's last). Named
        from orphan_short's evidence."""
        name, text = script(150)
        r = self.check(text, "fat16")
        self.assertEqual(sigs(r), [("writer", "fusefat", "result", fusefat.ERASE_OVERRUN)], r.details)
        self.assertEqual(r.verdicts["fusefat"]["dosfsck"], "ok", r.details)
        img = r.images["fusefat"]
        self.assertIn("Expected a valid '.' entry in the first slot, found free entry", fsck(img).stdout)
        fat = open_ro(img)
        d = [cl for _o, n, a, cl, _s, _l in fat.short_entries(None) if a & 0x10][0]
        chain = fat.chain(d)
        self.assertIsNone(fusefat.orphan_tail(fat, chain[1], chain[0]))
        units = fusefat.orphan_short(fat, chain[1], chain[0])
        self.assertEqual("".join(map(chr, units[:units.index(0)])), name)
        tail = fat.cluster_off(chain[1])
        self.assertTrue(fat.b[tail:tail + 2] == b"~" + str(len(fat.short_entries(d)) - 1).encode()
                        or fat.b[tail] == ord("~"), bytes(fat.b[tail:tail + 11]))   # fusefat's '~N' alias
        self.assertEqual(fat.b[fat.cluster_off(chain[0]) + fat.csize - 32], 0x00)  # ends the directory
        # on the cut image the entry is whole (slots in one cluster, its short
        # entry in the next): no evidence
        cut = open_ro(r.images["fusefat-cut"])
        self.assertIsNone(fusefat.orphan_short(cut, chain[1], chain[0]))
        self.assertFalse(fusefat.erase_overrun_evidence(cut, name))
        self.assertTrue(fusefat.erase_overrun_evidence(fat, name))
        self.assertFalse(fusefat.erase_overrun_evidence(fat, name[:-1]))


if __name__ == "__main__":
    unittest.main()
