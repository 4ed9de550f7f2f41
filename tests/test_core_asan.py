#!/usr/bin/python3
"""core-asan: core-dual's policy run by the ASan build (vfz.oracles.core), a writer of the
main job that no reader reads, held byte for byte against core-dual (vfz.check.twins).

On clean scripts both write the same image and nothing diverges; no reader reads core-asan's
image; a difference in the data alone (the metadata equal) is its own divergence,
`twin-data`; a build under test given without its ASan build leaves core-asan out with a
note. (Its catch of a real memory error, a planted over-read that the release build
survives, is in tests/test_asan_replay.py, which builds that fault under ASan anyway.)
"""
import os
import shutil
import sys
import tempfile
import unittest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, REPO)

from vfz import oracles, opscript  # noqa: E402
from vfz.check import checker, twins  # noqa: E402
from vfz.oracles.core import ASAN_BUILD  # noqa: E402

SCRIPT = """mkdir "/d"
create "/d/a long name.txt" 3000 1
create "/B.TXT" 10 2
rename "/d/a long name.txt" "/d/other name.md"
truncate "/B.TXT" 700
unlink "/B.TXT"
"""


@unittest.skipUnless(os.access(ASAN_BUILD, os.X_OK), f"{ASAN_BUILD} is not built (vfatfuzz setup)")
class CoreAsan(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="vfz-test-coreasan-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def test_registry(self):
        e = oracles.entry("core-asan")
        self.assertEqual((e.twin, e.unread, e.sanitized, e.under_test), ("core-dual", True, True, True))
        self.assertIn("core-asan", checker.OWN_WRITERS)       # the main job's own writers
        self.assertFalse(any(oracles.reads(r, "core-asan") for r in oracles.names("reader")))

    def test_clean_script_same_bytes_unread(self):
        ck = checker.Checker(["dosfsck"], ["core-dual", "core-asan"], timeout=60.0, notes=[])
        self.addCleanup(ck.close)
        res = ck.check(opscript.parse(SCRIPT), "fat12", workdir=self.tmp)
        self.assertEqual(dict(res.divs), {}, [str(d) for d in res.divs.values()])
        self.assertEqual(set(res.verdicts["core-asan"]), set())     # no reader, no writer verdict
        self.assertIn("dosfsck", res.verdicts["core-dual"])
        self.assertEqual(res.results["core-asan"], res.results["core-dual"])
        self.assertIsNone(twins.first_difference(res.images["core-asan"], res.images["core-dual"]))

    def test_data_difference_is_twin_data(self):
        ck = checker.Checker(["dosfsck"], ["core-dual", "core-asan"], timeout=60.0, notes=[])
        self.addCleanup(ck.close)
        ops = opscript.parse(SCRIPT)
        res = ck.check(ops, "fat12", workdir=self.tmp)
        # one data byte of the ASan writer's image changed, as a build that corrupts
        # a file's data and nothing else would leave it: only the whole-image compare sees it
        img = res.images["core-asan"]
        with open(img, "r+b") as f:
            data = bytearray(f.read())
            off = next(i for i in range(len(data) - 1, 0, -1) if data[i])   # the last non-zero byte
            f.seek(off)
            f.write(bytes([data[off] ^ 0xFF]))
        self.assertEqual(twins.first_difference(img, res.images["core-dual"]), off)
        res.divs.clear()
        twins.check_twins(ck, res, ops, "fat12")
        kinds = [d.fields["kind"] for d in res.divs.values()]
        self.assertEqual(kinds, ["twin-data"])

    def test_build_under_test_without_asan_build(self):
        notes = []
        ck = checker.Checker(["dosfsck"], ["core-dual", "core-asan"], vfat=os.path.join(REPO, "build", "vfat"),
                             timeout=60.0, notes=notes)
        self.addCleanup(ck.close)
        self.assertEqual(ck.writer_names, ["core-dual"])
        self.assertTrue(any("core-asan skipped" in n and "--asan-vfat" in n for n in notes), notes)
        ck2 = checker.Checker(["dosfsck"], ["core-dual", "core-asan"], vfat=os.path.join(REPO, "build", "vfat"),
                              asan_vfat=ASAN_BUILD, timeout=60.0, notes=[])
        self.addCleanup(ck2.close)
        self.assertEqual(ck2.writer_names, ["core-dual", "core-asan"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
