#!/usr/bin/python3
"""The fusefat oracle runs only against fusefat 0.1a, the program its
traits and named exceptions describe (Debian 13's package fusefat is
another program, fusefatfs 0.4: vfz.oracles.fusefat.is_fusefat_01a).
The installed fusefat (Debian 12: 0.1a) is accepted; any other program
given as the fusefat binary is refused with one line naming it."""
import os
import shutil
import sys
import unittest

REPO = os.environ.get("VFAT_SRC") or os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, REPO)

from vfz.oracles import fusefat  # noqa: E402

SIDS_FUSEFATFS = os.environ.get("VFZ_FUSEFATFS")   # e.g. Debian sid's binary, where one is at hand


@unittest.skipUnless(shutil.which("fusefat") and shutil.which("fusermount") and os.path.exists("/dev/fuse"),
                     "needs fusefat, fuse")
class FlavourTests(unittest.TestCase):
    def test_installed_fusefat_is_01a(self):
        for cls in (fusefat.FusefatReader, fusefat.FusefatWriter):
            self.assertEqual(cls().available(), (True, ""))
        # called by its full path, 0.1a's help names it so ("Usage: /usr/bin/fusefat ...")
        self.assertEqual(fusefat.FusefatReader(fusefat=shutil.which("fusefat")).available(), (True, ""))

    def test_other_program_is_refused(self):
        for exe in ("true", shutil.which("fsck.fat") or "ls"):
            ok, why = fusefat.FusefatReader(fusefat=exe).available()
            self.assertFalse(ok)
            self.assertIn("is not fusefat 0.1a", why)
            self.assertNotIn("\n", why)

    @unittest.skipUnless(SIDS_FUSEFATFS, "set VFZ_FUSEFATFS to a fusefatfs binary to check it is refused")
    def test_fusefatfs_is_refused(self):
        ok, why = fusefat.FusefatWriter(fusefat=SIDS_FUSEFATFS).available()
        self.assertFalse(ok)
        self.assertIn("fusefatfs", why)


if __name__ == "__main__":
    unittest.main()
