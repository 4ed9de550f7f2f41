#!/usr/bin/python3
"""The formatters mformat (mtools) and fatfs-mkfs (FatFs f_mkfs through js-fatfs) against the
real tools: each makes exactly the layout asked (read back from the boot sector), the same
bytes twice, a volume fsck.fat and the core's `vfat check` find clean; each refuses what it
cannot make; the boundaries each reaches are the measured ones (mformat's FAT16 starts at
4 096 clusters, FatFs's FAT16 ends at 65 525); and the named exceptions of the formatter sweep
are recognised from the readers' real answers (fatfs-mkfs-fat16-65525, fatfs-count-edges,
fatcat-sector-512) while fatcat's one-FAT compare is no longer a complaint.
"""
import collections
import os
import shutil
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from vfz import geometry, oracles  # noqa: E402
from vfz.check import formatted, sizing  # noqa: E402
from vfz.check.divergence import CheckResult  # noqa: E402

LAYOUTS = ("fat12:1200K:4096:sector=4096:fats=1:reserved=3:root=128@mformat",
           "fat16:16M:2048:fats=1:reserved=4:root=1024@mformat",
           "fat32:300M:4096:sector=1024:reserved=16@mformat",
           "fat12:1200K:4096:sector=4096:fats=2:root=128@fatfs-mkfs",
           "fat16:16M:2048:sector=2048:root=1024@fatfs-mkfs",
           "fat32:40M:512:fats=2@fatfs-mkfs")


class PeerFormatterTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="vfz-fmtpeer-")
        cls.img = os.path.join(cls.tmp, "v.img")
        cls.fsck = oracles.get_reader("dosfsck", repair=False)
        cls.check = oracles.get_reader("vfat-check")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def make(self, spec, path=None):
        g = geometry.parse(spec)
        return g, oracles.get_formatter(g.formatter).format(path or self.img, g)

    def named(self, g, reader, path=None):
        """check_formatted of one reader on the fresh volume: (names applied, divergences)."""
        res, names = CheckResult(), collections.Counter()
        formatted.check_formatted(res, [(reader, oracles.get_reader(reader))], g, g.formatter, [],
                                  path or self.img, g.fat, 60, names)
        return sorted(names), list(res.divs.values())

    def test_layout_asked_same_bytes_and_clean(self):
        other = os.path.join(self.tmp, "w.img")
        for spec in LAYOUTS:
            g, r = self.make(spec)
            self.assertIsNone(r.error, spec)
            self.assertEqual(geometry.unlike(self.img, g), [], spec)
            self.assertEqual(os.path.getsize(self.img), g.size)
            self.assertIsNone(self.make(spec, other)[1].error)
            with open(self.img, "rb") as a, open(other, "rb") as b:
                self.assertTrue(a.read() == b.read(), f"{spec}: two formats differ (serial, time?)")
            for rd in (self.fsck, self.check):
                rr = rd.read(self.img)
                self.assertEqual((rr.error, rr.complaints), (None, []), f"{rd.name} on {spec}: {rr.raw[-300:]}")

    def test_refuses_what_it_cannot_make(self):
        for spec, why in (("fat32:40M:512:root=64@mformat", "root entries on FAT32"),
                          ("fat16:8M:512:root=100@mformat", "100 root entries"),
                          ("fat16:8M:512:reserved=4@fatfs-mkfs", "reserved"),
                          ("fat32:40M:512:root=64@fatfs-mkfs", "root entries on FAT32"),
                          ("fat16:4M:4096@mformat", "Too few clusters for 16 bit fat"),
                          ("fat32:1M@mformat", "Too few clusters for 32 bit fat"),
                          ("fat16:4M@fatfs-mkfs", "f_mkfs made fat 12 for 16"),
                          ("fat32:1M@fatfs-mkfs", "FR_MKFS_ABORTED")):
            g, r = self.make(spec)
            self.assertIsNotNone(r.error, spec)
            self.assertIn(why, r.error, spec)

    def test_boundaries_each_reaches(self):
        # mformat: FAT12 up to 4 084 clusters, FAT16 from 4 096 (nothing in 4 085..4 095)
        self.assertIsNotNone(sizing.size_for(geometry.Geometry(12, 0, 4096, formatter="mformat"), 4084))
        lay = geometry.Geometry(16, 0, 2048, formatter="mformat")
        self.assertIsNone(sizing.size_for(lay, 4085))
        self.assertIsNotNone(sizing.size_for(lay, 4096))
        # FatFs: FAT16 up to 65 525 clusters, FAT32 from 65 526
        self.assertIsNotNone(sizing.size_for(geometry.Geometry(16, 0, 512, formatter="fatfs-mkfs"), 65525))
        lay = geometry.Geometry(32, 0, 512, formatter="fatfs-mkfs")
        self.assertIsNone(sizing.size_for(lay, 65525))
        self.assertEqual(sizing.smallest(lay) and geometry.made(self._at(lay, sizing.smallest(lay)))["clusters"],
                         65526)

    def _at(self, lay, size):
        g = geometry.Geometry(**{**lay.__dict__, "size": size})
        self.assertIsNone(oracles.get_formatter(g.formatter).format(self.img, g).error)
        return self.img

    def test_named_from_real_answers(self):
        # FatFs's 65 525-cluster FAT16: fsck.fat gives up, named as the formatter's difference
        lay = geometry.Geometry(16, 0, 512, formatter="fatfs-mkfs")
        g = geometry.Geometry(**{**lay.__dict__, "size": sizing.size_for(lay, 65525)})
        self._at(g, g.size)
        self.assertEqual(self.named(g, "dosfsck"), (["fatfs-mkfs-fat16-65525"], []))
        # one cluster fewer: nothing to name, fsck.fat is clean
        g2 = geometry.Geometry(**{**lay.__dict__, "size": sizing.size_for(lay, 65524)})
        self._at(g2, g2.size)
        self.assertEqual(self.named(g2, "dosfsck"), ([], []))
        # mformat's smallest FAT32 (65 525 clusters): FatFs takes it for FAT16 and fails
        lay = geometry.Geometry(32, 0, 512, formatter="mformat")
        g = geometry.Geometry(**{**lay.__dict__, "size": sizing.size_for(lay, 65525)})
        self._at(g, g.size)
        self.assertEqual(self.named(g, "fatfs"), (["fatfs-count-edges"], []))
        # fatcat refuses 4 KiB sectors (named); on one FAT it no longer complains at all
        g = geometry.parse("fat12:2M:4096:sector=4096:fats=1@mformat")
        self._at(g, g.size)
        self.assertEqual(self.named(g, "fatcat"), (["fatcat-sector-512"], []))
        # ... and on a written image of such a volume, through the checker's explain hook
        from types import SimpleNamespace
        fcls = oracles.oracle_class("fatcat", "reader")
        ev = SimpleNamespace(verdict="failed", rr=oracles.get_reader("fatcat").read(self.img), image=self.img)
        self.assertEqual(fcls.explain(ev), "fatcat-sector-512")
        g = geometry.parse("fat16:8M:512:fats=1@mformat")
        self._at(g, g.size)
        rr = oracles.get_reader("fatcat").read(self.img)
        self.assertIn("Compare is only suitable for 2 fats", rr.raw)
        self.assertEqual((rr.error, rr.complaints, rr.listing), (None, [], []))
        # a failure that is not the edge is not named: the count must be the edge's
        rr.error = "f_mount: FR_NO_FILESYSTEM"
        self.assertEqual(oracles.oracle_class("fatfs", "reader").fresh_exceptions(g, rr, self.img), [])


class SweepCliTests(unittest.TestCase):
    def test_small_sweep_and_bad_name(self):
        import subprocess
        vfz = [sys.executable, os.path.join(REPO, "scripts", "vfatfuzz"), "study", "formatters"]
        p = subprocess.run(vfz + ["--formatters", "mformat,nope"], capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 2)
        self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
        self.assertIn("unknown formatter(s) nope", p.stderr)
        out = tempfile.mkdtemp(prefix="vfz-fmtsweep-test-")
        self.addCleanup(shutil.rmtree, out, True)
        p = subprocess.run(vfz + ["--formatters", "mformat,fatfs-mkfs", "--readers", "dosfsck,vfat-check",
                                  "--size", "small", "--out", out], capture_output=True, text=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr[-2000:])
        with open(os.path.join(out, "formatters-sweep.md")) as f:
            md = f.read()
        # three plain volumes each (one a FAT type), every one read clean by both readers
        self.assertIn("| `dosfsck` | 3 / 3 / 0 / 0 | 3 / 3 / 0 / 0 |", md)
        self.assertIn("| `vfat-check` | 3 / 3 / 0 / 0 | 3 / 3 / 0 / 0 |", md)
        self.assertIn("## Findings\n\n- none", md)


if __name__ == "__main__":
    unittest.main()
