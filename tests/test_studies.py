#!/usr/bin/python3
"""The two studies at reduced size (vfatfuzz study collisions|compat
--size small) into a temporary directory, checked against the analytic
values and for completeness. Real core, real fsck.fat/mtools/7-Zip/GRUB,
real kernel in QEMU (rows skipped only when the guest is not built).

Collision checks (can fail if the core's dummies are not drawn as
docs/write-paths.md says, e.g. fewer random bits or a stuck bit):
  * per series and size: the analytic probability lies in the measured
    99.99 % Wilson interval (v1 at 32 767 entries: 39.3 %);
  * equal pairs in the projections (about 16 000 per v1 directory, 300 000
    per v3 one) are within 5 standard deviations of their exact mean;
  * --unique never collides;
  * the analytic figures themselves: v1 full directory 39.34 %, v3 100
    files with the uniform count 4.81e-8.
Compat checks: every row x every (style, class) column is present in the
CSV and the Markdown, every link points to an op-script that exists and
parses, dual images are read correctly by mtools, and the variants show
the kernel behaviour docs/write-paths.md describes (space at byte 8: listed, not
openable); vvfat's rows (vfz/study/compat_media.py: a Linux guest writing
on a vvfat disk, stock and patched) have one verdict in each style a
writer of its medium has, for the class the small size runs them on, and
n/a elsewhere.
"""
import csv
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.environ.get("VFAT_SRC") or os.path.dirname(HERE)
sys.path.insert(0, REPO)

from vfz.study import collisions as sc# noqa: E402
from vfz.study import compat as scp# noqa: E402
from vfz.study import compat_media# noqa: E402
from vfz import opscript# noqa: E402

VFATFUZZ = os.path.join(REPO, "scripts", "vfatfuzz")
OUT = tempfile.mkdtemp(prefix="vfz-test-studies-")


_RUNS = {}


def start(which):
    """Both studies run at once (two cores): the test waits for each."""
    if which not in _RUNS:
        _RUNS[which] = subprocess.Popen(
            ["/usr/bin/python3", VFATFUZZ, "study", which, "--size", "small", "--seed", "3",
             "--out", OUT], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def setUpModule():
    start("collisions")
    start("compat")


def tearDownModule():
    for p in _RUNS.values():
        if p.poll() is None:
            p.terminate()
            p.wait(60)
    if not os.environ.get("VFZ_KEEP"):
        import shutil
        shutil.rmtree(OUT, ignore_errors=True)


def study(which):
    start("collisions")
    start("compat")
    p = _RUNS[which]
    out, err = p.communicate(timeout=900)
    if p.returncode != 0:
        raise AssertionError(f"study {which} exit {p.returncode}: {err[-2000:]}")
    return p


class Analytic(unittest.TestCase):
    def test_v1_full_directory(self):
        self.assertAlmostEqual(sc.v1_collide(32767), 0.3934, places=3)
        # exact vs birthday with the same sum p^2 agree
        self.assertAlmostEqual(sc.v1_collide(32767), sc.birthday(32767, sc.V1_SUM_P2), places=6)

    def test_v3_uniform_count_and_exact(self):
        self.assertAlmostEqual(sc.birthday(100, 1 / sc.v3_uniform_space(False)) / 4.81e-8, 1, places=2)
        s2, rse = sc.v3_sum_p2(False, samples=5000)
        # non-uniform slash offset alone: x 70/64; the digits add more
        self.assertGreater(s2 * sc.v3_uniform_space(False), 70 / 64)
        self.assertLess(rse, 0.01)

    def test_p_digits_is_a_distribution(self):
        tot = sum(sc.p_digits((a, b), 26) for a in range(35) for b in range(35))
        self.assertAlmostEqual(tot, 1.0, places=12)

    def test_wilson(self):
        lo, hi = sc.wilson(0, 10)
        self.assertEqual(lo, 0.0)
        self.assertAlmostEqual(hi, 0.2775, places=3)


class BadInput(unittest.TestCase):
    def test_one_line_errors(self):
        for argv in (["study", "nope"], ["study", "compat", "--size", "huge"],
                     ["study", "collisions", "--out", "/proc/no/such/dir"]):
            p = subprocess.run(["/usr/bin/python3", VFATFUZZ, *argv], capture_output=True, text=True,
                               timeout=60)
            self.assertEqual(p.returncode, 2, argv)
            self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)


class Collisions(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        study("collisions")
        with open(os.path.join(OUT, "collisions.csv")) as f:
            cls.rows = list(csv.DictReader(f))
        with open(os.path.join(OUT, "collisions.json")) as f:
            cls.js = json.load(f)
        with open(os.path.join(OUT, "collisions.md")) as f:
            cls.md = f.read()

    def test_outputs(self):
        self.assertTrue(os.path.getsize(os.path.join(OUT, "collisions.png")) > 10000)
        for s in ("fsck.fat", "mtools", "core git revision", "kernel (guest)", "--seed 3"):
            self.assertIn(s, self.md)
        self.assertEqual({r["series"] for r in self.rows}, set(sc.SERIES))
        self.assertEqual(sorted({int(r["n"]) for r in self.rows}), sc.SIZES)

    def test_rates_within_intervals(self):
        # 99.99 % Wilson intervals (about 120 points are checked); projection
        # points only for series with enough trials (the pair counts below
        # are the sharp check for the others)
        for r in self.rows:
            k, n, a = int(r["collided"]), int(r["trials"]), float(r["analytic"])
            lo, hi = sc.wilson(k, n, z=3.89)
            self.assertTrue(lo <= a <= hi, f"{r['series']} n={r['n']}: {k}/{n}, analytic {a}")
            if n < 20:
                continue
            pk, pa = int(r["proj_collided"]), float(r["proj_analytic"])
            lo, hi = sc.wilson(pk, n, z=3.89)
            self.assertTrue(lo <= pa <= hi, f"{r['series']} n={r['n']} projection: {pk}/{n}, exact {pa}")

    def test_v1_full_directory_collides(self):
        r = next(r for r in self.rows if r["series"] == "v1" and r["n"] == "32767")
        self.assertGreater(int(r["collided"]), 0)   # P(0 of 40) = 2e-9

    def test_projection_pairs(self):
        for name, rs in self.js["uniformity"].items():
            for lab, obs, mean, sd, z in rs:
                self.assertLess(abs(z), 5, f"{name} projection {lab}: {obs} pairs, expected {mean:.0f}+-{sd:.0f}")

    def test_unique_never_collides(self):
        for r in self.rows:
            if r["series"] in ("unique", "v3-unique"):
                self.assertEqual(int(r["collided"]), 0)
        self.assertEqual(self.js["pairs"]["unique"][0], 0)

    def test_cost_of_a_collision(self):
        costs = dict((t.split(":")[0], c) for t, c in self.js["costs"])
        v3 = costs["forced v3"]
        self.assertEqual(v3["duplicate_groups"], 1)
        self.assertEqual(v3["fsck_n_kinds"].get("duplicate"), 1)
        self.assertEqual(v3["long_names_lost"], 1)          # fsck.fat -a renames the second
        self.assertTrue(v3["fsck_after_a_clean"])
        self.assertEqual(v3["mtools"]["dup_files_read_ok"], 2)
        v1 = costs["forced v1"]
        self.assertEqual(v1["fsck_n_kinds"].get("bad-short-name"), 3)
        self.assertEqual(v1["long_names_lost"], 3)
        if "kernel" in v1:
            self.assertEqual(v1["kernel"]["dup_files_read_ok"], 2)


class Compat(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        study("compat")
        with open(os.path.join(OUT, "compat.csv")) as f:
            cls.rows = list(csv.DictReader(f))
        with open(os.path.join(OUT, "compat.md")) as f:
            cls.md = f.read()
        with open(os.path.join(OUT, "compat-variants.csv")) as f:
            cls.var = {r["id"]: r for r in csv.DictReader(f)}

    def test_every_row_and_column(self):
        have = {(r["row"], r["style"], r["class"]) for r in self.rows}
        for row in scp.ROWS:
            for style in scp.STYLES:
                for cls in scp.CLASSES:
                    self.assertIn((row, style, cls), have)
        for style in scp.STYLES:
            self.assertIn(f"## Style {style} ", self.md)
        for cls in scp.CLASSES:
            self.assertIn(f"| {cls} ", self.md)
        for row in scp.ROWS:
            if row in compat_media.ROWS:
                continue
            # one row per style table (cells are verdict links); the table of
            # non-ok cases below them may name the row again
            self.assertEqual(len(re.findall(rf"\n\| {re.escape(row)} \| \[", self.md)),
                             len(scp.STYLES), row)

    def test_media_rows(self):
        """vvfat's rows: a cell in each style a writer of its medium has, for
        the classes the small size runs (one script each), n/a elsewhere; a
        verdict for the whole script and one for the script cut before a
        named abort; the md's section of them."""
        cell = {(r["row"], r["style"], r["class"]): r for r in self.rows}
        for title, (_, ws) in compat_media.MEDIA.items():
            if f"{title}: skipped" in self.md:
                continue
            for row in (title, title + compat_media.CUT):
                for style in scp.STYLES:
                    for cls in scp.CLASSES:
                        r = cell[(row, style, cls)]
                        ran = style in ws and compat_media.runs("small", cls, 0)
                        self.assertEqual(r["case"] != "n/a", ran, (row, style, cls))
                        if ran:
                            self.assertEqual(sum(int(r[v]) for v in scp.VERDICTS), 1, r)
            self.assertIn("## The vvfat rows", self.md)

    def test_links_exist_and_parse(self):
        links = set(re.findall(r"\]\((compat/cases/[^)]+\.ops)\)", self.md))
        self.assertTrue(links)
        for r in self.rows:
            if r["case"] != "n/a":
                links.add(r["case"])
        for l in links:
            p = os.path.join(OUT, l)
            self.assertTrue(os.path.isfile(p), l)
            with open(p) as f:
                opscript.parse(f.read())

    def test_counts(self):
        for r in self.rows:
            if r["case"] == "n/a":
                continue
            self.assertEqual(sum(int(r[v]) for v in scp.VERDICTS), 1, r)   # small: 1 image a cell

    def test_known_behaviour(self):
        cell = {(r["row"], r["style"], r["class"]): r for r in self.rows}
        # dual images: fsck.fat has nothing to say about plain long names
        self.assertEqual(cell[("fsck.fat -n", "dual", "long")]["reads correctly"], "1")
        # v1 dummies are bad short names to fsck.fat, and -a damages them
        self.assertEqual(cell[("fsck.fat -n", "v1", "long")]["complains"], "1")
        self.assertEqual(cell[("fsck.fat -a + re-read", "v1", "long")]["damages on repair"], "1")
        # v3: NT 0x20 exemption
        self.assertEqual(cell[("fsck.fat -n", "v3", "long")]["reads correctly"], "1")
        self.assertEqual(cell[("mtools", "v1", "long")]["reads correctly"], "1")

    def test_variants(self):
        v = self.var
        self.assertEqual(v["v1-seed"]["mtools"], "listed, reads")
        self.assertIn("bad-short-name", v["v1-seed"]["fsck.fat -n"])
        self.assertEqual(v["v3-seed"]["fsck.fat -n"], "clean")
        self.assertIn("long name lost", v["v3-nt0"]["fsck.fat -a"])
        self.assertIn("not listed", v["v1-nul0"]["mtools"])
        if v["v1-seed"]["kernel"] != "n/a":
            self.assertEqual(v["v1-seed"]["kernel"], "listed, reads")
            self.assertIn("open_error ENOENT", v["v1-space8"]["kernel"])
            self.assertIn("open_error ENOENT", v["v1-nul8"]["kernel"])
        if v["v1-seed"]["kernel-nodual"] != "n/a":
            self.assertEqual(v["v1-space8"]["kernel-nodual"], "listed, reads")


if __name__ == "__main__":
    unittest.main(verbosity=2)
