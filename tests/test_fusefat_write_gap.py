#!/usr/bin/python3
"""fusefat-write-gap-cuts-chain against the real fusefat: a write that
starts at or past the end of the last cluster of a file of n >= 2 clusters
answers ok, but fusefat's fat_seek links the file's first cluster to the new
ones: clusters 2..n are cut off (a lost chain), the written bytes land n-1
clusters early and the size overshoots the chain (campaign seed 9101,
findings e6b18cb070bb, 6ab1fa989fa1, da5c305f9887).

Through the checker, as a campaign files it (Checker(["dosfsck"],
["fusefat"])): the minimised script is one writer finding of that name and
fsck.fat reads the script cut before the write clean; the full image is
corrupt the way the exception says. Near misses (a write inside the last
cluster, even past the end; a write to a one-cluster file past its cluster)
are neither corrupt nor named, and the name needs the image's evidence: the
same ops and results on an image without the lost chain are not named.
"""
import os
import shutil
import subprocess
import sys
import unittest

REPO = os.environ.get("VFAT_SRC") or os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, REPO)

from vfz import opscript
from vfz.check import checker# noqa: E402
from vfz.fatimg import open_ro  # noqa: E402
from vfz.oracles import fusefat  # noqa: E402

MINIMAL = 'create "/Rpe@o" 1024 0\nwrite "/rpe@o" 1632 512 66\n'


def sigs(res):
    return sorted((d.fields["role"], d.fields["oracle"], d.fields["verdict"], d.fields["kind"])
                  for d in res.divs.values())


def fsck(image):
    return subprocess.run(["fsck.fat", "-n", image], capture_output=True, text=True, timeout=60)


def file_entry(fat):
    """(first cluster, size) of the root's only regular file (a '~N' alias: fusefat's)."""
    files = [(cl, size) for _o, _n, attr, cl, size, _l in fat.short_entries(None) if not attr & 0x18]
    assert len(files) == 1, files
    return files[0]


@unittest.skipUnless(shutil.which("fusefat") and shutil.which("fusermount") and os.path.exists("/dev/fuse")
                     and shutil.which("fsck.fat"), "needs fusefat, fuse and dosfstools")
class FusefatWriteGapTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.ck = checker.Checker(["dosfsck"], ["fusefat"])

    @classmethod
    def tearDownClass(cls):
        cls.ck.close()

    def check(self, text, fs):
        return self.ck.check(opscript.parse(text), fs)

    def test_minimal_script_is_named_and_corrupt(self):
        r = self.check(MINIMAL, "fat32")
        self.assertEqual(sigs(r), [("writer", "fusefat", "result", fusefat.WRITE_GAP)], r.details)
        # the readers check the script cut before the write: clean
        self.assertEqual(r.verdicts["fusefat"]["dosfsck"], "ok", r.details)
        self.assertIn("readers check the first 1 ops", r.details["fusefat"]["(writer)"])
        img = r.images["fusefat"]
        p = fsck(img)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("File size is 2144 bytes, cluster chain length is 2048 bytes", p.stdout)
        self.assertIn("Reclaimed 1 unused cluster (512 bytes)", p.stdout)
        fat = open_ro(img)
        first, size = file_entry(fat)
        chain = fat.chain(first)
        self.assertEqual((size, len(chain)), (2144, 4))
        old = opscript.content(0, 1024)
        # the cut-off cluster: the file's bytes 512..1023, linked to nothing
        lost = fusefat.lost_chains(fat)
        self.assertEqual(len(lost), 1)
        self.assertEqual(len(lost[0]), 1)
        off = fat.cluster_off(lost[0][0])
        self.assertEqual(bytes(fat.b[off:off + 512]), old[512:])
        # the data: first cluster kept, then zeros, the 512 bytes at 1632 - 512
        data = b"".join(bytes(fat.b[fat.cluster_off(c):fat.cluster_off(c) + 512]) for c in chain)
        self.assertEqual(data[:512], old[:512])
        self.assertEqual(data[512:1120], bytes(608))
        self.assertEqual(data[1120:1632], opscript.content(66, 512))
        self.assertNotIn(lost[0][0], chain)
        # the name needs the image's evidence: the same ops and results on
        # the cut image (the 1024-byte file, nothing lost) are not named
        ops = opscript.parse(MINIMAL)
        self.assertEqual(fusefat.first_known_failure(ops, ["ok", "ok"], img), (1, fusefat.WRITE_GAP))
        self.assertIsNone(fusefat.first_known_failure(ops, ["ok", "ok"], r.images["fusefat-cut"]))
        self.assertIsNone(fusefat.first_known_failure(ops, ["ok", "ok"]))

    def test_aligned_append_and_gap_fat16_fat12(self):
        """An append exactly at the cluster-aligned end of a 3-cluster file
        (FAT16, 512-byte clusters) and a gap of a whole cluster on FAT12
        (2048-byte clusters, a 5000-byte file): named, n-1 = 2 clusters cut
        off, the size overshooting the chain by as many."""
        for fs, text, size, csize in (
                ("fat16", 'create "/f" 1536 3\nwrite "/f" 1536 10 4\n', 2048, 512),
                ("fat12", 'create "/f" 5000 3\nwrite "/f" 6144 10 4\n', 7048, 2048)):
            with self.subTest(fs=fs):
                r = self.check(text, fs)
                self.assertEqual(sigs(r), [("writer", "fusefat", "result", fusefat.WRITE_GAP)], r.details)
                self.assertEqual(r.verdicts["fusefat"]["dosfsck"], "ok", r.details)
                fat = open_ro(r.images["fusefat"])
                self.assertEqual(fat.csize, csize)
                first, got = file_entry(fat)
                self.assertEqual(got, size)
                self.assertEqual(-(-size // csize) - len(fat.chain(first)), 2)
                self.assertEqual([len(c) for c in fusefat.lost_chains(fat)], [2])

    def test_near_misses_neither_corrupt_nor_named(self):
        """A write into the last cluster (past the end: a gap inside the
        cluster; or running past it), and a write far past the one cluster
        of a one-cluster file: fusefat writes them right."""
        for fs, text in (("fat32", 'create "/f" 1000 0\nwrite "/f" 1010 100 66\n'),
                         ("fat32", 'create "/f" 1024 0\nwrite "/f" 1023 512 66\n'),
                         ("fat32", 'create "/f" 512 0\nwrite "/f" 1632 512 66\n'),
                         ("fat12", 'create "/f" 3000 3\nwrite "/f" 4000 100 4\n')):
            with self.subTest(fs=fs, script=text):
                r = self.check(text, fs)
                self.assertEqual(sigs(r), [], r.details)
                self.assertEqual(r.verdicts["fusefat"], {"dosfsck": "ok"}, r.details)
                self.assertEqual(fsck(r.images["fusefat"]).returncode, 0)
                self.assertEqual(fusefat.lost_chains(open_ro(r.images["fusefat"])), [])


if __name__ == "__main__":
    unittest.main(verbosity=2)
