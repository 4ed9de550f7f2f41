"""--unique dummies are unique among every short entry of the directory,
v3 included (regression: the July reader side made v3 dummies, flagged
FAT_NO_83NAME in the NT byte, invisible to the uniqueness scan, so
`--dummy v3 --unique` stopped redrawing: the full collision study of
2026-12-03 found 4 of 200 v3-unique directories of 32 767 files with a
duplicate, e.g. trial seed 20971625, first duplicate at creation 22 064).

build/study_collide creates the files through the core's own create path
(exactly `vfat apply --seed` of the op-script its --script prints). Plain
v3 with that seed repeats a dummy at creation 22 064; --unique draws the
same stream until a repeat and must redraw it. Default build only (the
asan build takes minutes for 22 064 creations).
"""
import os
import subprocess
import unittest

BUILD = os.environ.get("VFAT_BUILD") or os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "build")
DRIVER = os.path.join(BUILD, "study_collide")
SEED, FIRST = 20971625, 22064


def trial(*args):
    p = subprocess.run([DRIVER, *args, "--n", str(FIRST), "--trials", "1", "--seed", str(SEED)],
                       capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        raise AssertionError(f"study_collide exit {p.returncode}: {p.stderr[-300:]}")
    f = p.stdout.split("\n")[-2].split()
    return {"first": int(f[2]), "pairs": int(f[4])}


@unittest.skipUnless(os.access(DRIVER, os.X_OK), f"{DRIVER} not built (vfatfuzz setup)")
class UniqueDummies(unittest.TestCase):
    def test_plain_v3_repeats_a_dummy_there(self):
        self.assertEqual(trial("--dummy", "v3"), {"first": FIRST, "pairs": 1})

    def test_v3_unique_redraws_it(self):
        self.assertEqual(trial("--dummy", "v3", "--unique"), {"first": 0, "pairs": 0})

    def test_v1_unique_still_unique(self):
        self.assertEqual(trial("--dummy", "v1", "--unique")["pairs"], 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
