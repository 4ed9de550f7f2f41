#!/usr/bin/python3
"""fatsort-long-set-3-clusters against the real fatsort (reports/bugs.md):
fatsort 1.6.4's writeClusterChain lets an entry's slot set cross one
cluster boundary only. On 512-byte clusters (16 slots) the core's dual
writer puts '/d/c' (2 slots), a 117-character name (10 slots) and a
255-character name (21 slots) in a directory; sorted, the long set starts
at slot 12, reaches into a third cluster, and 'c' follows it: fatsort dies
by SIGSEGV. With a 104-character name (9 slots) the long set starts at
slot 11 and ends exactly at the second cluster's end: fatsort sorts it.

The transformer must name the crash from the image it was given
(overflow_lines replays fatsort's order and slot placement) and leave the
near miss unnamed; through the checker, the failed transform is filed
under the name. The same overflow with the long set last in its directory
(SILENT: '/d' grows one cluster at a time around other files' data, so its
chain is 3 clusters apart) does not crash: fatsort ends with status 0 having
written the set's last slots into the file data that follows the second
cluster; the 255-character file is gone and '/d/aaa' shows twice, which the
checkers complain about, filed under the name too."""
import os
import shutil
import sys
import tempfile
import unittest

REPO = os.environ.get("VFAT_SRC") or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from vfz import opscript
from vfz.check import checker# noqa: E402
from vfz.oracles import fatsort  # noqa: E402

FS = "fat16:4M:512"
SILENT = opscript.parse(f'mkdir "/d"\ncreate "/d/{"m" * 104}" 1 1\ncreate "/e" 1 2\n'
                        f'create "/d/{"z" * 255}" 600 3\ncreate "/d/aaa" 1 4\n')


def ops(first):
    """the 4-op script: first = length of the name sorted before the 255-character one"""
    return opscript.parse(f'mkdir "/d"\ncreate "/d/c" 1 3\ncreate "/d/{"a" * first}" 1 1\n'
                          f'create "/d/{"b" * 255}" 1 2\n')


@unittest.skipUnless(shutil.which("fatsort"), "fatsort missing (Debian package fatsort)")
class FatsortCrashTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # one checker run per script: the core's dual writer, vfat-check as the only reader
        cls.tmp = tempfile.mkdtemp(prefix="vfz-test-fatsort-crash-")
        cls.res = {}
        ck = checker.Checker(["vfat-check"], ["core-dual"], transformers=["fatsort"])
        try:
            for n, script in ((117, ops(117)), (104, ops(104)), ("silent", SILENT)):
                r = ck.check(script, FS)
                img = os.path.join(cls.tmp, f"{n}.img")
                shutil.copyfile(r.images["core-dual"], img)
                cls.res[n] = (r, img)
        finally:
            ck.close()

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def transform(self, n):
        img = os.path.join(self.tmp, f"{n}-sorted.img")
        shutil.copyfile(self.res[n][1], img)
        return fatsort.FatsortTransformer().transform(img)

    def test_crash_is_named(self):
        r, img = self.res[117]
        self.assertEqual(r.verdicts["core-dual"]["vfat-check"], "ok")        # a valid image
        with open(img, "rb") as f:
            lines = fatsort.overflow_lines(f.read())
        self.assertEqual(len(lines), 1, lines)
        self.assertTrue(lines[0].startswith("/d: " + "b" * 255 + " (21 slots) at slot 12 of a 16-slot"),
                        lines[0])
        self.assertTrue(lines[0].endswith(", before c"), lines[0])
        w = self.transform(117)
        self.assertIn("killed by SIGSEGV", w.error or "")
        self.assertEqual(fatsort.FatsortTransformer.failure_exception(w), fatsort.LONG_SET)
        # through the checker: one finding, under the name
        self.assertEqual(r.verdicts["core-dual>fatsort"], {"(transformer)": "failed"})
        self.assertEqual([(d.fields["role"], d.fields["verdict"], d.fields["kind"]) for d in r.divs.values()],
                         [("transformer", "failed", fatsort.LONG_SET)])

    def test_near_miss_sorts(self):
        r, img = self.res[104]
        with open(img, "rb") as f:
            self.assertEqual(fatsort.overflow_lines(f.read()), [])
        w = self.transform(104)
        self.assertIsNone(w.error, w.raw)
        self.assertIsNone(fatsort.FatsortTransformer.failure_exception(w))
        self.assertEqual(r.verdicts["core-dual>fatsort"], {"vfat-check": "ok"})
        self.assertEqual(list(r.divs.values()), [])

    def test_silent_loss_is_named(self):
        r, img = self.res["silent"]
        self.assertEqual(r.verdicts["core-dual"]["vfat-check"], "ok")
        lines = fatsort.overflow_lines(img)
        self.assertEqual(len(lines), 1, lines)
        self.assertTrue(lines[0].startswith("/d: " + "z" * 255 + " (21 slots) at slot 13 of a 16-slot"),
                        lines[0])
        self.assertTrue(lines[0].endswith(", last in the directory"), lines[0])
        w = self.transform("silent")
        self.assertIsNone(w.error, w.raw)
        self.assertIsNone(fatsort.FatsortTransformer.failure_exception(w))
        self.assertEqual(r.verdicts["core-dual>fatsort"], {"vfat-check": "complains"})
        self.assertEqual([(d.fields["role"], d.fields["kind"]) for d in r.divs.values()],
                         [("transformer", fatsort.LONG_SET)])
        # the near miss's raw output carries no layout line: a divergence there is not explained
        self.assertIsNone(fatsort.FatsortTransformer.explain({"raw": self.transform(104).raw}))

    def test_segv_without_the_layout_is_not_named(self):
        # the evidence is the image's layout, not the signal alone
        w = self.transform(104)
        w.raw += "[rc=-11 killed by SIGSEGV]\n"
        w.error = "fatsort: killed by SIGSEGV: []"
        self.assertIsNone(fatsort.FatsortTransformer.failure_exception(w))


if __name__ == "__main__":
    unittest.main()
