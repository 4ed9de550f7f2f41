#!/usr/bin/python3
"""`vfatfuzz repro` takes every kind of case the repository holds (vfz/export/cases.py):
a regression case (corpus/regressions/NAME), a peer-bug case
(corpus/peer-bugs/NAME), a hostile finding (reports/hostile/NAME) and a crash
file, plainly and with --export, and says what it replayed and what it
expected. Cheap cases only (fsck.fat, mtools, fatcat; no VM): ~40 s.
A campaign finding's repro is tested by tests/test_minimize.py and
tests/test_export.py."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

REPO = os.environ.get("VFAT_SRC") or os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
VFATFUZZ = os.path.join(REPO, "scripts", "vfatfuzz")
REGRESSION = os.path.join(REPO, "corpus", "regressions", "fsck-v1-lfn-crosses-cluster")
PEER_BUG = os.path.join(REPO, "corpus", "peer-bugs", "fsck-del-alias")
HOSTILE = os.path.join(REPO, "reports", "hostile", "fatcat-crash-37bb07c848")
CRASH = os.path.join(REPO, "corpus", "fuzz_ops", "alias-clash.nodual")


def repro(*args, timeout=300):
    p = subprocess.run([sys.executable, VFATFUZZ, "repro", *args], cwd=REPO, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=timeout)
    return p.returncode, p.stdout


class ReproCases(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="vfz-test-repro-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_regression_case(self):
        rc, out = repro(REGRESSION, "--writers", "core-dual,core-v1", "--oracles", "dosfsck,mtools")
        self.assertIn("regression case", out)
        self.assertIn("4 ops on fat32", out)                     # what it replayed
        self.assertIn("expected (from expected.json)", out)       # what it expected
        # expected.json: core-v1's image makes fsck.fat complain (the named exception), core-dual's not
        self.assertRegex(out, r"core-v1 .*dosfsck=complains")
        self.assertRegex(out, r"core-dual .*dosfsck=ok")
        self.assertEqual(rc, 0, out)
        self.assertIn("result: every verdict as expected", out)

    def test_regression_case_unknown_writer(self):
        rc, out = repro(REGRESSION, "--writers", "core-unique")
        self.assertEqual(rc, 2, out)
        self.assertEqual(len(out.strip().splitlines()), 1, out)
        self.assertIn("no verdicts of writer(s) core-unique", out)

    def test_regression_case_export(self):
        d = os.path.join(self.tmp, "reg")
        rc, out = repro(REGRESSION, "--export", d)
        # the first non-ok verdict of expected.json: core-v1 read by dosfsck
        self.assertIn("exporting core-v1 read by dosfsck", out)
        self.assertEqual(rc, 1, out)
        self.assertIn("REPRODUCED", out)
        for n in ("run.sh", "ops.txt", "README.md", "image.img.xz"):
            self.assertTrue(os.path.isfile(os.path.join(d, n)), n)

    def test_peer_bug_case(self):
        rc, out = repro(PEER_BUG)
        self.assertIn("peer-bug case", out)
        self.assertIn("dosfsck (reader side), 1 ops on fat16, written by core-dual", out)
        self.assertIn('expected: run.sh says REPRODUCED and prints ["REPRODUCED: fsck.fat -n finds problems"', out)
        self.assertEqual(rc, 1, out)
        self.assertIn("result: STILL SHOWS", out)

    def test_peer_bug_case_export(self):
        d = os.path.join(self.tmp, "peer")
        rc, out = repro(PEER_BUG, "--export", d)
        self.assertEqual(rc, 1, out)
        with open(os.path.join(d, "printed.txt")) as f:
            self.assertIn("Bad short file name", f.read())

    def test_hostile_finding(self):
        if not shutil.which("fatcat"):
            self.skipTest("fatcat is not installed (vfatfuzz setup installs it)")
        rc, out = repro(HOSTILE)
        self.assertIn("hostile finding", out)
        self.assertIn("expected signature: fatcat|crash|fatcat SIGFPE in FatSystem::parseHeader()", out)
        self.assertEqual(rc, 1, out)
        self.assertIn("result: STILL SHOWS", out)
        d = os.path.join(self.tmp, "hostile")
        rc, out = repro(HOSTILE, "--export", d)
        self.assertEqual(rc, 1, out)
        self.assertTrue(os.path.isfile(os.path.join(d, "run.sh")))

    def test_crash_file(self):
        rc, out = repro(CRASH, "--writers", "core-dual", "--oracles", "dosfsck,mtools")
        self.assertIn(f"crash file {CRASH}", out)
        self.assertRegex(out, r"result: (STILL DIVERGES|no divergence)")
        self.assertEqual(rc, 1 if "STILL DIVERGES" in out else 0, out)
        d = os.path.join(self.tmp, "crash")
        rc, out = repro(CRASH, "--writers", "core-dual", "--oracles", "dosfsck", "--export", d)
        self.assertIn(rc, (0, 1), out)
        self.assertIn("run.sh here:", out)
        self.assertTrue(os.path.isfile(os.path.join(d, "run.sh")))

    def test_other_directory(self):
        rc, out = repro(self.tmp)
        self.assertEqual(rc, 2, out)
        self.assertIn("a regression case (ops.txt, expected.json), a peer-bug case (bug.json)", out)


if __name__ == "__main__":
    unittest.main(verbosity=2)
