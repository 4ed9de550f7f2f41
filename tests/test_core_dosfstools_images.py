#!/usr/bin/python3
"""`vfat check` on dosfstools' own damaged volumes (tests/check-*.fsck of
its 4.2 source), as fsck.fat judges them.

The images come from Debian's dosfstools source package at test time
(tests/dosfstools_src.py: GPL-3.0 data, not shipped here); the expected
verdict of each is tests/data/dosfstools-check.json. For every image:
fsck.fat -n (with the test's .args) exits as recorded, and so does
`vfat check`, reporting the recorded finding kinds. Among them the three
label cases (a different label in the root and the boot sector, a label
in the boot sector only, one in the root only), which the checker flags
with kind "label" as fsck.fat does. Skipped, saying why, when the source
package cannot be had (no network to deb.debian.org and no
$VFZ_DOSFSTOOLS_SRC).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

SRC = os.environ.get("VFAT_SRC") or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("VFAT_BUILD") or os.path.join(SRC, "build")
sys.path.insert(0, os.path.join(SRC, "tests"))

import dosfstools_src  # noqa: E402

with open(os.path.join(SRC, "tests", "data", "dosfstools-check.json")) as f:
    EXPECTED = {k: v for k, v in json.load(f).items() if not k.startswith("_")}


class DosfstoolsImages(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.src, why = dosfstools_src.source_dir(BUILD)
        if cls.src is None:
            raise unittest.SkipTest(why)
        for tool in ("xxd", "fsck.fat"):
            if not shutil.which(tool) and not os.path.exists(f"/usr/sbin/{tool}"):
                raise unittest.SkipTest(f"{tool} not installed (Debian packages xxd, dosfstools)")
        cls.tmp = tempfile.mkdtemp(prefix="vfz-dosfstools-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_every_check_image_is_known(self):
        names = sorted(f[:-5] for f in os.listdir(os.path.join(self.src, "tests"))
                       if f.startswith("check-") and f.endswith(".fsck"))
        self.assertEqual(names, sorted(EXPECTED))

    def test_verdicts(self):
        fsck = shutil.which("fsck.fat") or "/usr/sbin/fsck.fat"
        for name, want in sorted(EXPECTED.items()):
            with self.subTest(name):
                img = os.path.join(self.tmp, name + ".img")
                args = dosfstools_src.image(self.src, name, img)
                f = subprocess.run([fsck, "-n"] + args + [img], capture_output=True, text=True,
                                   timeout=120)
                self.assertEqual(f.returncode, want["fsck"], f.stdout[-500:])
                # a finished check ends with its summary line; a give-up does not
                self.assertEqual(want.get("fsck_gave_up", False),
                                 not f.stdout.rstrip().endswith("clusters"), f.stdout[-300:])
                c = subprocess.run([os.path.join(BUILD, "vfat"), "check", img],
                                   capture_output=True, text=True, timeout=120)
                self.assertEqual(c.returncode, want["core"], c.stdout + c.stderr)
                lines = (c.stdout + c.stderr).splitlines()
                kinds = sorted({ln.split(":", 1)[0] for ln in lines if ":" in ln} - {"vfat"})
                self.assertEqual(kinds, sorted(want["kinds"]), "\n".join(lines[:10]))
                os.unlink(img)


if __name__ == "__main__":
    unittest.main(verbosity=2)
