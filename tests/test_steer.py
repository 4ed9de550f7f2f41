#!/usr/bin/python3
"""vfz.campaign.steer: the tour reaches every state it is made for, on each FAT type,
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

from vfz import opscript
from vfz.campaign import steer# noqa: E402

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
                # every state that applies to the FAT type but ENOSPC (the tour keeps its data
                # under the free space: peers without Linux's capacity rules write it too)
                want = {st for st in steer.STATES if steer.applies(st, fs)} - {"enospc"}
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


@unittest.skipUnless(os.access(VFAT, os.X_OK), "build/vfat missing")
class Campaign(unittest.TestCase):
    """What the campaign draws from vfz.campaign.steer: a seeded tour every
    STEER_EVERY-th iteration, and the census of a checked script."""

    @classmethod
    def setUpClass(cls):
        from vfz.check import checker
        cls.ck = checker.Checker(["dosfsck"], ["core-dual"], vfat=VFAT)

    @classmethod
    def tearDownClass(cls):
        cls.ck.close()

    def test_tour_iterations(self):
        fsl = ["fat12", "fat16", "fat32"]
        k = steer.STEER_EVERY
        self.assertIsNone(steer.campaign_tour(self.ck, 5, 0, fsl))
        self.assertIsNone(steer.campaign_tour(self.ck, 5, k, fsl))
        a = steer.campaign_tour(self.ck, 5, k - 1, fsl)
        b = steer.campaign_tour(self.ck, 5, 2 * k - 1, fsl)
        self.assertEqual((a[1], b[1]), ("fat12", "fat16"))       # the volumes in turn
        same = steer.campaign_tour(self.ck, 5, k - 1, fsl)[0]
        other = steer.campaign_tour(self.ck, 6, k - 1, fsl)[0]
        self.assertEqual(opscript.dump(a[0]), opscript.dump(same))    # replayable
        self.assertNotEqual(opscript.dump(a[0]), opscript.dump(other))
        light = steer.campaign_tour(self.ck, 5, 3 * k - 1, fsl)
        self.assertEqual(light[1], "fat32")
        big = max(op.args[1] for op in light[0] if op.kind == "create")
        self.assertLess(big, 64 * 1024)          # no volume fill on FAT32

    def test_early_tours_on_the_own_mkfs(self):
        """Iterations 1 and 2 are tours too (a 2-minute campaign reaches the states at once), on
        the first two volumes made by the build's own mkfs when the run's formatters hold it;
        3 probes its FAT32, 4-7 its volumes at both sides of both cluster-count boundaries."""
        fsl = ["fat12", "fat16", "fat32"]
        a = steer.campaign_tour(self.ck, 5, 1, fsl, ["mkfs.fat", "vfat"])
        b = steer.campaign_tour(self.ck, 5, 2, fsl, ["mkfs.fat", "vfat"])
        self.assertEqual((a[1], b[1]), ("fat12:2M@vfat", "fat16:4M:512@vfat"))
        self.assertEqual(steer.campaign_tour(self.ck, 5, 1, fsl)[1], "fat12")   # --fs: classic volumes
        c = steer.campaign_tour(self.ck, 5, 3, fsl, ["vfat"])    # the own mkfs's FAT32, probed
        self.assertEqual((opscript.dump(c[0]), c[1]), (opscript.dump(steer.probe()), "fat32:34M:512@vfat"))
        self.assertIsNone(steer.campaign_tour(self.ck, 5, 3, fsl))
        # then both sides of both cluster-count boundaries, made by the own mkfs
        from vfz.check.sizing import clusters_of
        for i, (fat, want) in zip(sorted(steer.EARLY_BOUNDS), ((12, 4084), (16, 4085), (16, 65524), (32, 65525))):
            ops, spec = steer.campaign_tour(self.ck, 5, i, fsl, ["vfat"])
            self.assertEqual(opscript.dump(ops), opscript.dump(steer.probe()))
            self.assertTrue(spec.startswith(f"fat{fat}:") and spec.endswith("@vfat"), spec)
            self.assertEqual(clusters_of(self.ck.pristine_image(spec)), want, spec)
            self.assertIsNone(steer.campaign_tour(self.ck, 5, i, fsl))       # --fs: no own mkfs
        self.assertIsNone(steer.campaign_tour(self.ck, 5, max(steer.EARLY_BOUNDS) + 1, fsl, ["vfat"]))
        res = self.ck.check(a[0], a[1])
        self.assertIn("near-full", steer.result_census(self.ck, res, a[0], a[1]))

    def test_census_of_a_checked_tour(self):
        ops, fs = steer.campaign_tour(self.ck, 9, 2 * steer.STEER_EVERY - 1, ["fat12", "fat16"])
        res = self.ck.check(ops, fs)
        got = steer.result_census(self.ck, res, ops, fs)
        # enospc too: the campaign's tour ends with writes that run out of clusters part-way
        self.assertEqual(got, {st for st in steer.STATES if steer.applies(st, fs)})
        cap = [r for o, r in zip(ops, res.results[self.ck.writer_names[0]]) if o.args and "/cap/" in o.args[0]]
        self.assertEqual(cap.count("ENOSPC"), 4, cap)      # each shape of steer.capacity on FAT16
        self.assertEqual([d for d in res.divs.values() if d.fields["role"] == "writer"], [])
        plain = opscript.parse('mkdir "/a"\ncreate "/a/b" 100 1\n')
        res = self.ck.check(plain, "fat16")
        self.assertEqual(steer.result_census(self.ck, res, plain, "fat16"), set())
        c = steer.Census()
        c.add("fat16", "steer tour", got)
        c.add("fat16", "vfat gen", set())
        c.add("fat16", "vfat gen", None)          # no core writer: not counted
        row = {d["source"]: d for d in c.to_json()}
        self.assertEqual(row["vfat gen"]["scripts"], 1)
        self.assertEqual(row["steer tour"]["reached"]["near-full"], 1)
        self.assertTrue(any(ln.startswith("near-full") for ln in c.lines()))


if __name__ == "__main__":
    unittest.main(verbosity=2)
