#!/usr/bin/python3
"""Issue 26's census figures, cheaply: the geometry Pool draws every boundary class of each FAT
type within its first draws of a seed, three in four with a free window; a window leaves exactly
its clusters free (the rest bad, which the census does not count as usable); and on a windowed
volume of each FAT type a few generated scripts with their patterns (vfz.campaign.patterns),
written by the real core and read back by the census (vfz.fatimg, not the core), reach every
state the issue names; a fuzz_ops input's mkdir chain reaches deep-tree in one kind byte; a
window with a low run (wrap=K) leaves the run free below it and points FAT32's next-free hint at
the window; and a fuzz_ops input with a churn create, on a wrap window of each FAT type sized to
it (vfz.campaign.fitwindow), reaches alloc-wrap and reuse-after-unlink with the real core.
"""
import os
import random
import shutil
import subprocess
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from vfz import geometry, opscript, oracles  # noqa: E402
from vfz.campaign import geometry as cgeo  # noqa: E402
from vfz.campaign import fitwindow, patterns, steer  # noqa: E402
from vfz.check import diff  # noqa: E402
from vfz.fatimg import Fat  # noqa: E402
from vfz.model.space import space_of  # noqa: E402

VFAT = os.path.join(os.environ.get("VFAT_BUILD") or os.path.join(REPO, "build"), "vfat")
# the states issue 26 asks of ordinary scripts, and those of one FAT type
NAMED = {"near-full", "alloc-wrap", "reuse-after-unlink", "enospc", "deep-tree"}
WINDOWED = {12: "fat12:2M:512:free=40:at=338@vfat", 16: "fat16:4M:512:free=48:at=3000@mkfs.fat",
            32: "fat32:34M:512:free=48:at=40000@mkfs.fat"}
# windows that straddle the wrap point: a low run below the window (cluster 2 on FAT12/16, which
# Linux's first allocation after mount skips; FAT32's next-free hint at the window)
WRAP = {12: "fat12:2M:512:free=40:at=338:wrap=1@vfat", 16: "fat16:4M:512:free=48:at=3000:wrap=1@mkfs.fat",
        32: "fat32:34M:1024:free=48:at=20000:wrap=3@mkfs.fat"}


class Pool(unittest.TestCase):
    def test_every_boundary_class_in_the_first_draws(self):
        pool = cgeo.Pool(2606, oracles.names("formatter"))
        with tempfile.TemporaryDirectory(prefix="vfz-pool-") as d:
            img = os.path.join(d, "v.img")
            for fat, classes in cgeo.CLASSES.items():
                with self.subTest(fat=fat):
                    specs = [pool._draw(fat, k) for k in range(pool.SIZE)]
                    self.assertNotIn(None, specs)
                    seen, windows = set(), 0
                    for s in specs:
                        diff.make_volume(img, s)
                        seen.add(cgeo.geometry_class(img, fat))
                        g = geometry.parse(s)
                        windows += bool(g.free)
                    self.assertLessEqual({c for c in classes if ":" in c}, seen, specs)
                    self.assertEqual(windows, sum(1 for k in range(pool.SIZE) if k % pool.WINDOW_OF), specs)
                    for g in map(geometry.parse, specs):      # a low run lies below its window
                        self.assertTrue(not g.wrap or g.at >= 3 + g.wrap + 1, g.spec())
                    self.assertEqual(specs, [cgeo.Pool(2606, oracles.names("formatter"))._draw(fat, k)
                                             for k in range(2)] + specs[2:])      # seeded


class Window(unittest.TestCase):
    def test_window_leaves_its_clusters_free(self):
        with tempfile.TemporaryDirectory(prefix="vfz-win-") as d:
            img = os.path.join(d, "v.img")
            for fat, spec in WINDOWED.items():
                with self.subTest(fat=fat):
                    diff.make_volume(img, spec)
                    g = geometry.parse(spec)
                    with open(img, "rb") as f:
                        fa = Fat(f.read())
                    free = [c for c in range(2, fa.clusters + 2) if fa.get(c) == 0]
                    self.assertEqual(free, list(range(g.at, g.at + g.free)))
                    self.assertEqual(space_of(img).free, g.free)
                    fsck = subprocess.run(["fsck.fat", "-n", img], capture_output=True, text=True)
                    self.assertEqual(fsck.returncode, 0, fsck.stdout + fsck.stderr)

    def test_wrap_window_keeps_a_low_run(self):
        import struct
        with tempfile.TemporaryDirectory(prefix="vfz-win-") as d:
            img = os.path.join(d, "v.img")
            for fat, spec in WRAP.items():
                with self.subTest(fat=fat):
                    diff.make_volume(img, spec)
                    g = geometry.parse(spec)
                    with open(img, "rb") as f:
                        raw = f.read()
                    fa = Fat(raw)
                    free = [c for c in range(2, fa.clusters + 2) if fa.get(c) == 0]
                    low = [2] if fat != 32 else list(range(3, 3 + g.wrap))     # FAT32: the root is 2
                    self.assertEqual(free, low + list(range(g.at, g.at + g.free)))
                    if fat == 32:           # FSInfo: the free count, next-free at the window
                        fsi = struct.unpack_from("<H", raw, 48)[0] * fa.bps
                        self.assertEqual(struct.unpack_from("<II", raw, fsi + 488), (len(free), g.at - 1))
                    fsck = subprocess.run(["fsck.fat", "-n", img], capture_output=True, text=True)
                    self.assertEqual(fsck.returncode, 0, fsck.stdout + fsck.stderr)


@unittest.skipUnless(os.access(VFAT, os.X_OK), "build/vfat missing")
class Reach(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="vfz-reach-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_generated_scripts_reach_the_states(self):
        for fat, spec in WINDOWED.items():
            with self.subTest(fat=fat):
                img, _, _ = steer.written(VFAT, [], spec, self.tmp)
                base = os.path.join(self.tmp, f"pristine-{fat}.img")      # written() reuses img
                shutil.copyfile(img, base)
                space = space_of(base)
                want = {st for st in NAMED | set(steer.ONLY) if steer.applies(st, f"fat{fat}")}
                got = set()
                for seed in range(1, 7):
                    p = subprocess.run([VFAT, "gen", "--seed", str(seed), "--ops", "12"],
                                       capture_output=True, text=True, check=True)
                    ops = patterns.extend(opscript.parse(p.stdout), random.Random(seed), space_of(base),
                                          fat, overflow=True)
                    img, res, cuts = steer.written(VFAT, ops, spec, self.tmp, cut_unlinks=1)
                    got |= steer.census(img, ops, res, cuts)
                    if want <= got:
                        break
                self.assertLessEqual(want, got, f"{spec}: {sorted(want - got)} not reached "
                                                f"({space.free} clusters free)")

    def test_fuzz_input_chain_is_deep(self):
        inp = os.path.join(self.tmp, "chain.bin")
        with open(inp, "wb") as f:      # FAT12, one mkdir kind byte 0x08: a chain of 7-10 more
            f.write(bytes([0, 0, 1, 0, 0, 0, 0x08, 5, 0x41, 2, 0, 0, 0, 1, 3]))
        p = subprocess.run([VFAT, "gen", "--from-input", inp], capture_output=True, text=True, check=True)
        ops = opscript.parse(p.stdout)
        self.assertGreaterEqual(len(ops), 8)
        self.assertTrue(all(o.kind == "mkdir" for o in ops))
        img, res, cuts = steer.written(VFAT, ops, "fat12", self.tmp)
        self.assertEqual(res, ["ok"] * len(ops))
        self.assertIn("deep-tree", steer.census(img, ops, res, cuts))

    def test_churn_on_a_fitted_wrap_window_wraps_and_reuses(self):
        inp = os.path.join(self.tmp, "churn.bin")
        with open(inp, "wb") as f:      # FAT12: a mkdir, a churn create (0x09): size 0 reads 4097, then 6000
            f.write(bytes([0, 0, 1, 0, 0, 0, 0x00, 2, 0, 0x41, 0, 0x09, 2, 1, 0x42, 0, 0, 7, 10]))
        p = subprocess.run([VFAT, "gen", "--from-input", inp], capture_output=True, text=True, check=True)
        ops = opscript.parse(p.stdout)
        self.assertEqual([o.kind for o in ops], ["mkdir", "create", "unlink", "create"])
        self.assertEqual(ops[1].args[0], ops[3].args[0])
        self.assertEqual((ops[1].args[1], ops[3].args[1]), (4097, 6000))
        made = {}

        def pristine(spec):
            if spec not in made:
                made[spec] = os.path.join(self.tmp, f"p{len(made)}.img")
                diff.make_volume(made[spec], spec)
            return made[spec]
        for fat, spec in WRAP.items():
            with self.subTest(fat=fat):
                fitted = fitwindow.fitted(pristine, ops, spec, "test")
                g = geometry.parse(fitted)
                self.assertLess(g.free, geometry.parse(spec).free, fitted)     # the window shrank
                img, res, cuts = steer.written(VFAT, ops, fitted, self.tmp, cut_unlinks=1)
                self.assertEqual(res, ["ok"] * 4, fitted)                       # no ENOSPC from the fit
                got = steer.census(img, ops, res, cuts)
                self.assertLessEqual({"alloc-wrap", "reuse-after-unlink"}, got, fitted)
                # for writers whose model does not count clusters: a window that holds the peak
                roomy = geometry.parse(fitwindow.fitted(pristine, ops, spec, "test", overflow=False))
                al = fitwindow.allocations(ops, space_of(pristine(spec)))
                peak = max(sum(a - f for a, f, _ in al[:j + 1]) for j in range(len(al)))
                self.assertGreaterEqual(roomy.free + roomy.wrap, peak, roomy.spec())
                for k in list(os.listdir(self.tmp)):          # written() keeps its base per spec
                    if k.startswith(("base-", "all", "cut")):
                        os.unlink(os.path.join(self.tmp, k))


if __name__ == "__main__":
    unittest.main(verbosity=2)
