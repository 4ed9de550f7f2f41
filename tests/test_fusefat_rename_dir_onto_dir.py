#!/usr/bin/python3
"""fusefat-rename-dir-onto-dir-eperm against the real fusefat: a rename of
a directory onto an existing empty directory answers EPERM and changes
nothing (fat_rename, libfat.c: "destination file already exist: cant
overwrite with a directory"); Linux replaces the empty directory (campaign
seed 10102: before the exception, one writer finding ok->EPERM and one
'extra' reader finding per reader of the unchanged source).

Through the checker, as a campaign files it: one writer finding of that
name, the readers check the script cut before the rename. Near misses are
answered as Linux does and unnamed: a directory onto a non-empty one
(ENOTEMPTY vs EPERM: fusefat-rmdir-eperm, the trees agree), onto a file
and a file onto a directory (the kernel answers ENOTDIR and EISDIR itself),
a file onto a file (replaced; in another spelling the entry takes the new
one, modelled: PROFILE "replace": "respell", campaign seed 10102 finding
df2fe26ce292).
"""
import os
import shutil
import sys
import unittest

REPO = os.environ.get("VFAT_SRC") or os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, REPO)

from vfz import opscript
from vfz.check import checker# noqa: E402
from vfz.oracles import fusefat  # noqa: E402


def sigs(res):
    return sorted((d.fields["role"], d.fields["oracle"], d.fields["kind"]) for d in res.divs.values())


@unittest.skipUnless(shutil.which("fusefat") and shutil.which("fusermount") and os.path.exists("/dev/fuse")
                     and shutil.which("fls"), "needs fusefat, fuse and sleuthkit")
class FusefatRenameDirOntoDirTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.ck = checker.Checker(["sleuthkit"], ["fusefat"])

    @classmethod
    def tearDownClass(cls):
        cls.ck.close()

    def check(self, text):
        return self.ck.check(opscript.parse(text), "fat16")

    def test_onto_empty_dir_is_named(self):
        for src in ("/+", "/+/../+", "/b"):
            with self.subTest(src=src):
                r = self.check(f'mkdir "/{src.strip("/").split("/")[0]}"\nmkdir "/a"\n'
                               f'rename "{src}" "/a"\nmkdir "/z"\n')
                self.assertEqual(sigs(r), [("writer", "fusefat", fusefat.RENAME_ONTO)], r.details)
                det = r.details["fusefat"]["(writer)"]
                self.assertIn("expected ok, got EPERM", det)
                self.assertIn("readers check the first 2 ops", det)
                self.assertEqual(r.verdicts["fusefat"]["sleuthkit"], "ok", r.details)

    def test_near_misses_unnamed(self):
        for text in ('mkdir "/b"\nmkdir "/a"\ncreate "/a/x" 1 1\nrename "/b" "/a"\nmkdir "/z"\n',
                     'mkdir "/b"\ncreate "/a" 1 1\nrename "/b" "/a"\nmkdir "/z"\n',
                     'create "/b" 3 1\nmkdir "/a"\nrename "/b" "/a"\nmkdir "/z"\n',
                     'create "/b" 1 1\ncreate "/a" 1 1\nrename "/b" "/a"\nmkdir "/z"\n'):
            with self.subTest(text=text):
                r = self.check(text)
                self.assertEqual(sigs(r), [], r.details)
                self.assertEqual(r.verdicts["fusefat"], {"sleuthkit": "ok"}, r.details)
        # a file onto a file in another spelling: fusefat stores the new one
        # (PROFILE "replace": "respell"; Linux keeps the target's): modelled
        for fs in ("fat12", "fat16"):
            r = self.ck.check(opscript.parse('create "/xxxxxxxxxxxx" 1 1\ncreate "/b" 2 2\n'
                                             'rename "/B" "/XXXXXXXXXXXX"\nmkdir "/xxxxxxxxxxxx"\n'), fs)
            self.assertEqual(sigs(r), [], r.details)
            self.assertEqual(r.verdicts["fusefat"], {"sleuthkit": "ok"}, r.details)
        # the name needs fusefat's EPERM on a rename the model answers ok
        ops = opscript.parse('mkdir "/b"\nmkdir "/a"\nrename "/b" "/a"\n')
        self.assertEqual(fusefat.first_known_failure(ops, ["ok", "ok", "EPERM"]), (2, fusefat.RENAME_ONTO))
        self.assertIsNone(fusefat.first_known_failure(ops, ["ok", "ok", "ok"]))


if __name__ == "__main__":
    unittest.main()
