#!/usr/bin/python3
"""fusefat-rename-into-own-subtree against the real fusefat, through the
checker as a campaign files it (Checker(["dosfsck"], ["fusefat"])):
`rename /D /d/x` of a directory /d answers ok and moves it into itself
(the kernel's EINVAL check compares the names as given; fusefat folds case):
one writer finding of that name, the readers checking the script cut before
it, and the full image is what the exception says (fsck.fat: an invalid
'..', /d and its file gone). Near misses: the same rename spelled alike
(the kernel refuses it: EINVAL, as Linux) and a case-only move to a sibling
are clean and unnamed. Campaign seed 9103.
"""
import os
import shutil
import subprocess
import sys
import unittest

REPO = os.environ.get("VFAT_SRC") or os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, REPO)

from vfz import opscript
from vfz.check import checker# noqa: E402
from vfz.oracles import fusefat  # noqa: E402

BUG = 'mkdir "/d"\ncreate "/d/keep" 5 1\nrename "/D" "/d/x"\ncreate "/z" 1 1\n'


@unittest.skipUnless(fusefat.FusefatReader().available()[0] and shutil.which("fsck.fat"),
                     "needs fusefat, /dev/fuse and dosfstools")
class TestRenameIntoOwnSubtree(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.ck = checker.Checker(["dosfsck"], ["fusefat"])

    @classmethod
    def tearDownClass(cls):
        cls.ck.close()

    def sigs(self, r):
        return sorted((d.fields["role"], d.fields["kind"]) for d in r.divs.values())

    def test_named_and_corrupt(self):
        r = self.ck.check(opscript.parse(BUG), "fat32")
        self.assertEqual(self.sigs(r), [("writer", fusefat.INTO_SUBTREE)], r.details.get("fusefat"))
        self.assertEqual(r.verdicts["fusefat"]["dosfsck"], "ok")          # the cut script
        p = subprocess.run(["fsck.fat", "-n", r.images["fusefat"]], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
        self.assertIn("Invalid '..' entry", p.stdout)

    def test_existing_target_errno(self):
        """The target is a file inside the directory: fusefat answers for the
        target (ENOTDIR), Linux EINVAL first: named, no other finding."""
        r = self.ck.check(opscript.parse('mkdir "/.Y"\ncreate "/.Y/.c" 1 1\nrename "/.y" "/.Y/.c"\n'),
                          "fat32")
        self.assertEqual(self.sigs(r), [], r.details.get("fusefat"))
        self.assertEqual(r.verdicts["fusefat"], {"dosfsck": "ok"})
        op = opscript.parse('rename "/.y" "/.Y/.c"\n')[0]
        self.assertEqual(fusefat.FusefatWriter.result_exception(op, "EINVAL", "ENOTDIR"), fusefat.INTO_SUBTREE)
        other = opscript.parse('rename "/.y" "/.Z/.c"\n')[0]
        self.assertIsNone(fusefat.FusefatWriter.result_exception(other, "EINVAL", "ENOTDIR"))

    def test_near_misses(self):
        for text in ('mkdir "/d"\ncreate "/d/keep" 5 1\nrename "/d" "/d/x"\n',
                     'mkdir "/d"\nmkdir "/e"\nrename "/D" "/e/x"\n'):
            with self.subTest(script=text):
                r = self.ck.check(opscript.parse(text), "fat32")
                self.assertEqual(self.sigs(r), [], r.details.get("fusefat"))


if __name__ == "__main__":
    unittest.main()
