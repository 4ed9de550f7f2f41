#!/usr/bin/python3
"""vfz/export/hostile.py: reproducers of hostile-volume findings.

Through the real CLI (`vfatfuzz repro reports/hostile/NAME --export DIR`),
run from a copy with a bare PATH: mtools' endless recursion
(mtools-crash-59deb88b68) says REPRODUCED with the signal, and GRUB's hang
on a looping directory (grub-hang-c0086ebc1f) says REPRODUCED within its
HANG_S limit. The same findings (and mtools' canary) with their unmutated seed volume in place
of the hostile one say NOT REPRODUCED, so the verdict is not a constant;
looping_dirs finds the looping directory in the hostile volume and none in
the seed. The issue-28 templates (FatFs, the npm fatfs package, GRUB's read
past the volume, mtools' mcopy crash and traced hostile write; run
hostile-30's FatFs writer, minfo crash and fusefat writer hang; FatFs's damage
spread on a FAT16 of 4 085 clusters, fsck.fat -n around its ops) say
REPRODUCED on their finding's volume and NOT REPRODUCED with its seed volume
in the same run.sh.
"""
import json
import lzma
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

REPO = os.environ.get("VFAT_SRC") or os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, REPO)

from vfz import oracles  # noqa: E402
from vfz.export import hostile as export_hostile  # noqa: E402
from vfz.oracles.repro import looping_dirs  # noqa: E402

VFATFUZZ = os.path.join(REPO, "scripts", "vfatfuzz")
HOSTILE = os.path.join(REPO, "reports", "hostile")
MTOOLS = "mtools-crash-59deb88b68"
GRUB = "grub-hang-c0086ebc1f"
# HANG_S for a run whose tool ends by itself (mdir's crash, every seed
# volume): a cap never waited on. mtools' recursion to SIGSEGV took 1.3-2.5 s
# at nice 15 beside a CPU hog (load 6), past the 3 s a test once gave it
# here; GRUB's seed listing up to 1.0 s. The hang keeps a short limit.
ENDS_S = "120"


def run_standalone(d, tmp, hang_s=ENDS_S, env=None):
    dst = os.path.join(tmp, "copy-" + os.path.basename(d))
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(d, dst)
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": tmp, "HANG_S": hang_s, **(env or {})}
    # a fresh work directory each run: the FatFs templates link node_modules into it
    work = os.path.join(tmp, "work-" + os.path.basename(d))
    shutil.rmtree(work, ignore_errors=True)
    r = subprocess.run(["sh", os.path.join(dst, "run.sh"), work],
                       capture_output=True, text=True, errors="replace", env=env, timeout=300)
    return r.returncode, r.stdout + r.stderr


class ExportHostileTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="vfz-test-export-hostile-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def seed_copy(self, name):
        """The finding with its seed volume as the hostile one."""
        d = os.path.join(self.tmp, "seed-" + name)
        shutil.copytree(os.path.join(HOSTILE, name), d)
        shutil.copyfile(os.path.join(d, "seed.img.xz"), os.path.join(d, "hostile.img.xz"))
        return d

    def test_1_mtools_crash_through_the_cli(self):
        d = os.path.join(self.tmp, "mtools")
        r = subprocess.run([sys.executable, VFATFUZZ, "repro", os.path.join(HOSTILE, MTOOLS), "--export", d],
                           capture_output=True, text=True, errors="replace", timeout=300,
                           env=dict(os.environ, HANG_S=ENDS_S))
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("run.sh here: REPRODUCED: mdir killed by signal 11", r.stdout)
        for f in ("README.md", "run.sh", "image.img.xz", "printed.txt"):
            self.assertTrue(os.path.isfile(os.path.join(d, f)), f)
        with open(os.path.join(d, "image.img.xz"), "rb") as f1, \
                open(os.path.join(HOSTILE, MTOOLS, "hostile.img.xz"), "rb") as f2:
            self.assertEqual(lzma.decompress(f1.read()), lzma.decompress(f2.read()))
        with open(os.path.join(d, "README.md"), encoding="utf-8") as f:
            readme = f.read()
        for part in ("## Versions", "- mtools 4.0", "## Steps", "## Expected", "## Actual",
                     "## The mutated fields", "hostile 03"):
            self.assertIn(part, readme)
        rc, out = run_standalone(d, self.tmp)
        self.assertEqual(rc, 0, out)
        self.assertEqual(out.strip().split("\n")[-1], "REPRODUCED: mdir killed by signal 11")
        with open(os.path.join(d, "run.sh"), encoding="utf-8") as f:
            self.assertNotIn("vfatfuzz ", f.read().split("\n", 3)[3])

    def test_2_seed_volume_is_not_reproduced(self):
        for name in (MTOOLS, GRUB, "mtools-canary-1a43bdab48"):
            with self.subTest(finding=name):
                src = self.seed_copy(name)
                d = os.path.join(self.tmp, "seed-out-" + name)
                res = export_hostile.export_finding(src, d, run=False)
                self.assertIsNone(res["status"])
                rc, out = run_standalone(d, self.tmp)
                self.assertEqual((rc, out.strip().split("\n")[-1]), (1, "NOT REPRODUCED"), out)

    def test_3_grub_hang_within_its_limit(self):
        d = os.path.join(self.tmp, "grub")
        export_hostile.export_finding(os.path.join(HOSTILE, GRUB), d, run=False)
        rc, out = run_standalone(d, self.tmp, hang_s="3")
        self.assertEqual(rc, 0, out)
        self.assertIn("REPRODUCED: grub-fstest ls of /&V'L_'", out)
        with open(os.path.join(HOSTILE, GRUB, "finding.json")) as f:
            self.assertEqual(json.load(f)["kind"], "hang")

    def test_5_hostile_bodies_tell_the_bug_from_the_seed(self):
        # the issue-28 templates (FatFs's disk records, the npm package's canary, GRUB's read
        # past the volume, mtools' mcopy -s into a destination of the oracle's length, a
        # hostile write's traced copy): run.sh REPRODUCED on the finding's volume, NOT
        # REPRODUCED with the seed volume put in its place (the same script)
        env = {"VFZ_JS_FATFS": os.path.join(REPO, "vfz", "oracles", "fatfs", "node_modules"),
               "VFZ_NPM_FATFS": os.path.join(REPO, "vfz", "oracles", "jsfatfs", "node_modules")}
        # run hostile-30's: a FatFs writer's ops as the apply request, minfo's assertion (the
        # command the evidence recorded), fusefat's writer hang (HANG_S 5: the seed's ops end)
        for name, want, hang_s in (("fatfs-out-of-bounds-5dd352de79", "by disk_read in f_readdir /", ENDS_S),
                                   ("jsfatfs-canary-830240f7f9", "fs.readFile returned bytes from past the declared", ENDS_S),
                                   ("grub-out-of-bounds-ae9bed5f7f", "read(s) of the image reach past volume", ENDS_S),
                                   ("mtools-crash-be2ec12365", "mcopy killed by signal 6 (stack smashing detected)", ENDS_S),
                                   ("write-mtools-out-of-bounds-1a06b9a1b7", "read(s) of the image reach past volume", ENDS_S),
                                   ("write-fatfs-out-of-bounds-25a0adfc26", "by disk_write in create /hostile-new-2.bin", ENDS_S),
                                   ("write-fatfs-spread-a7c9646d09", "fsck.fat -n, clean before FatFs's ops, finds errors after", ENDS_S),
                                   ("mtools-crash-df72cb31ee", "minfo killed by signal 6: Assertion `!bad' failed", ENDS_S),
                                   ("write-fusefat-hang-39e2d9a9ff", "op 2: rmdir: fusefat gave no answer within 5 s", "5")):
            with self.subTest(finding=name):
                d = os.path.join(self.tmp, "t5-" + name)
                export_hostile.export_finding(os.path.join(HOSTILE, name), d, run=False)
                rc, out = run_standalone(d, self.tmp, hang_s, env=env)
                self.assertEqual(rc, 0, out)
                self.assertIn(want, out.strip().split("\n")[-1])
                shutil.copyfile(os.path.join(HOSTILE, name, "seed.img.xz"), os.path.join(d, "image.img.xz"))
                rc, out = run_standalone(d, self.tmp, hang_s, env=env)
                self.assertEqual((rc, out.strip().split("\n")[-1]), (1, "NOT REPRODUCED"), out)

    def test_4_looping_dirs(self):
        with open(os.path.join(HOSTILE, GRUB, "hostile.img.xz"), "rb") as f:
            self.assertEqual(looping_dirs(lzma.decompress(f.read())), ["/&V'L_'"])
        with open(os.path.join(HOSTILE, GRUB, "seed.img.xz"), "rb") as f:
            self.assertEqual(looping_dirs(lzma.decompress(f.read())), [])
        self.assertEqual(oracles.exporter("uboot").uboot_word("/&V'L_'"), "/\\&V\\'L_\\'")


if __name__ == "__main__":
    unittest.main(verbosity=2)
