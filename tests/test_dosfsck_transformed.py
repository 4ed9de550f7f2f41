#!/usr/bin/python3
"""The dosfsck oracle on an image a transformer rewrote (fatsort, fsck.fat
-a): what fsck.fat -n must say then follows from the image's short entries
(the core's listing), and a dual alias holding 0x7F -- Linux writes it for a
long name with DEL, fsck.fat calls it a bad short name (fsck-del-alias) --
is one such complaint there too, as on the writer's own image.

Against the real fsck.fat and fatsort: core-dual writes names with DEL (one
in the root, five in a directory of six entries, so that fsck.fat also
finds 'many bad entries' there), fatsort sorts the image, and the checker
files nothing. Campaign seed 9101 filed 'dosfsck:+bad-short-name' for
fatsort on such an image (finding 1a3b3f5ee6f5) before the fix.
"""
import os
import shutil
import sys
import unittest

REPO = os.environ.get("VFAT_SRC") or os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, REPO)

from vfz import opscript
from vfz.check import checker# noqa: E402
from vfz.oracles import core as core_oracle  # noqa: E402

CORE_OK, CORE_WHY = core_oracle.available()
DEL = "\x7f"
SCRIPT = (f'create "/ba{DEL}" 511 1\nmkdir "/d"\n'
          + "".join(f'create "/d/f{i}{DEL}" 1 {i}\n' for i in range(5))
          + 'create "/d/plain" 2 9\ncreate "/zz" 3 3\n')


@unittest.skipUnless(CORE_OK, CORE_WHY)
@unittest.skipUnless(shutil.which("fsck.fat") and shutil.which("fatsort"), "needs dosfstools and fatsort")
class TestTransformedDelAliases(unittest.TestCase):
    def test_fatsort_keeps_the_expected_complaints(self):
        ck = checker.Checker(["dosfsck"], ["core-dual"], transformers=("fatsort",))
        try:
            for fs in ("fat16", "fat32"):
                r = ck.check(opscript.parse(SCRIPT), fs)
                with self.subTest(fs=fs):
                    self.assertEqual(r.verdicts["core-dual"], {"dosfsck": "ok"}, r.details["core-dual"])
                    self.assertEqual(r.verdicts["core-dual>fatsort"], {"dosfsck": "ok"},
                                     r.details["core-dual>fatsort"])
                    self.assertEqual(list(r.divs), [], [d.fields for d in r.divs.values()])
                    raw = r.raws["core-dual>fatsort.dosfsck"]
                    # the complaints are really there: 6 bad names, 1 'many bad entries' (/d)
                    self.assertEqual(raw.count("Bad short file name"), 6, raw[-2000:])
        finally:
            ck.close()


if __name__ == "__main__":
    unittest.main()
