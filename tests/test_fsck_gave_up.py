#!/usr/bin/python3
"""fsck.fat giving up is told from fsck.fat finding errors, against real
fsck.fat 4.2: its die() exits 1, the code of a check that found (-n) or
repaired (-a) errors, so the oracles read the summary line a finished check
always ends with (vfz.oracles.dosfsck.parse.gave_up). Before, the
fsck-repair transformer took a give-up for a repair (an unrepaired image
passed on to the readers as repaired) and the dosfsck reader filed fsck.fat's
last words as a complaint of kind 'other'.

Images: a FAT32 volume cut to 1 MiB ('Failed to read sector N.'), one whose
BPB sector size is zero ('Logical sector size is zero.'): both give up, in
-n and -a; a v1 image (fsck.fat renames its dummy: exit 1 with a summary)
and a clean one (exit 0) do not. About 2 s."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

REPO = os.environ.get("VFAT_SRC") or os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, REPO)

from vfz.oracles import get_reader, get_transformer  # noqa: E402
from vfz.oracles.dosfsck.parse import gave_up  # noqa: E402
from vfz.proc import run  # noqa: E402

VFAT = os.path.join(os.environ.get("VFAT_BUILD") or os.path.join(REPO, "build"), "vfat")


@unittest.skipUnless(shutil.which("fsck.fat") and os.access(VFAT, os.X_OK), "needs fsck.fat and build/vfat")
class FsckGaveUpTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.td = tempfile.TemporaryDirectory(prefix="vfz-test-gave-up-")
        d = cls.td.name
        ops = os.path.join(d, "ops.txt")
        with open(ops, "w") as f:
            f.write('create "/longfilename.txt" 3000 1\nmkdir "/dir"\n')
        cls.img = {}
        for name, fat, names in (("clean", "32", "dual"), ("v1", "16", "nodual")):
            p = os.path.join(d, f"{name}.img")
            subprocess.run([VFAT, "mkfs", p, "--size", "40M", "--fat", fat], check=True,
                           stdout=subprocess.DEVNULL)
            subprocess.run([VFAT, "apply", p, ops, "--names", names, "--dummy", "v1"], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            cls.img[name] = p
        cls.img["cut"] = os.path.join(d, "cut.img")
        shutil.copy(cls.img["clean"], cls.img["cut"])
        os.truncate(cls.img["cut"], 1 << 20)
        cls.img["sector0"] = os.path.join(d, "sector0.img")
        shutil.copy(cls.img["clean"], cls.img["sector0"])
        with open(cls.img["sector0"], "r+b") as f:
            f.seek(11)
            f.write(b"\0\0")
        cls.gives_up = {"cut": "Failed to read sector", "sector0": "Logical sector size is zero."}

    @classmethod
    def tearDownClass(cls):
        cls.td.cleanup()

    def copy(self, name):
        p = os.path.join(self.td.name, f"work-{name}.img")
        shutil.copy(self.img[name], p)
        return p

    def test_exit_code_alone_cannot_tell(self):
        """The premise, measured: a give-up and a repair both exit 1."""
        for name in ("cut", "sector0", "v1"):
            for mode in ("-n", "-a"):
                p = run(["fsck.fat", mode, self.copy(name)], timeout=60)
                self.assertEqual(p.rc, 1, (name, mode, p.raw()))
                self.assertEqual(bool(gave_up(p)), name in self.gives_up, (name, mode, p.raw()))
                if name in self.gives_up:
                    self.assertIn(self.gives_up[name], gave_up(p))
        p = run(["fsck.fat", "-n", self.copy("clean")], timeout=60)
        self.assertEqual((p.rc, gave_up(p)), (0, None), p.raw())

    def test_reader(self):
        r = get_reader("dosfsck")
        for name, why in self.gives_up.items():
            rr = r.read(self.copy(name), 60)
            self.assertTrue(rr.error.startswith(f"fsck.fat -n gave up: {why}"), rr.error)
        rr = r.read(self.copy("v1"), 60)
        self.assertIsNone(rr.error, rr.raw)
        self.assertEqual([c["kind"] for c in rr.extra["complaints"]], ["bad-short-name"] * 2)
        self.assertIsNone(rr.extra["repair"]["gave_up"])
        rr = r.read(self.copy("clean"), 60)
        self.assertEqual((rr.error, rr.complaints), (None, []), rr.raw)

    def test_transformer(self):
        t = get_transformer("fsck-repair")
        for name, why in self.gives_up.items():
            w = t.transform(self.copy(name), 60)
            self.assertIsNotNone(w.error, w.raw)
            self.assertTrue(w.error.startswith(f"fsck.fat -a gave up: {why}"), w.error)
        for name in ("v1", "clean"):
            w = t.transform(self.copy(name), 60)
            self.assertIsNone(w.error, w.raw)


if __name__ == "__main__":
    unittest.main()
