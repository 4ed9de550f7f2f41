#!/usr/bin/python3
"""vfz.steer: the tour reaches every state it is made for, on each FAT type,
written by the real core; the census sees none of them on a short script.

The census reads the images with vfz.fatimg (not the core), so a state it
reports is one the bytes show.
"""
import os
import shutil
import sys
import tempfile
import unittest

REPO = os.environ.get("VFAT_SRC") or os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, REPO)

from vfz import opscript, steer  # noqa: E402

VFAT = os.path.join(os.environ.get("VFAT_BUILD") or os.path.join(REPO, "build"), "vfat")


@unittest.skipUnless(os.access(VFAT, os.X_OK), "build/vfat missing")
class Tour(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="vfz-test-steer-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def census_of(self, ops, fs):
        img, res, cuts = steer.written(VFAT, ops, fs, self.tmp)
        self.assertEqual(len(res), len(ops))
        return steer.census(img, ops, res, cuts), res

    def test_tour_reaches_every_state(self):
        for fs in ("fat12", "fat16", "fat32"):
            with self.subTest(fs=fs):
                img, _, _ = steer.written(VFAT, [], fs, self.tmp)
                free, cl = steer.volume_free(img)
                ops = steer.tour(free, cl)
                got, res = self.census_of(ops, fs)
                want = set(steer.STATES) - ({"fat12-sector-edge"} if fs != "fat12" else set())
                self.assertEqual(got, want)
                # the data ops all succeed: no ENOSPC the model could not predict
                for op, r in zip(ops, res):
                    if op.kind in ("create", "write") and "/d/" not in op.path:
                        self.assertEqual(r, "ok", op)

    def test_short_script_reaches_nothing(self):
        ops = opscript.parse('mkdir "/a"\ncreate "/a/b" 100 1\nunlink "/a/b"\ncreate "/c" 10 2\n')
        got, res = self.census_of(ops, "fat16")
        self.assertEqual(res, ["ok"] * 4)
        self.assertEqual(got, set())

    def test_moves_are_op_level(self):
        ops = opscript.parse('mkdir "/a"\nmkdir "/a/b"\nrename "/a/b" "/b"\nrename "/b" "/a/c"\n')
        got, _ = self.census_of(ops, "fat12")
        self.assertEqual(got, {"dir-to-root", "dir-from-root"})


if __name__ == "__main__":
    unittest.main(verbosity=2)
