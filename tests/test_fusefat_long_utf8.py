#!/usr/bin/python3
"""fusefat-readdir-cuts-long-utf8 against the real fusefat: a long name of
255 characters or fewer whose UTF-8 form is over 255 bytes is listed cut
to 255 bytes and cannot be opened (fat_readdir copies at most 255 bytes
into d_name; campaign seed 10103, finding a1acd2a9f420). Through the
checker (the core's dual writer, byte-exact with Linux): one reader
finding of that name, for a cut after a character and inside one; a name
of 254 UTF-8 bytes is read whole; and a long non-ASCII name is no longer
taken for fusefat-raw-83.
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


def kinds(res):
    return sorted(d.fields["kind"] for d in res.divs.values())


@unittest.skipUnless(shutil.which("fusefat") and shutil.which("fusermount") and os.path.exists("/dev/fuse"),
                     "needs fusefat, fuse")
class FusefatLongUtf8Tests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.ck = checker.Checker(["fusefat"], ["core-dual"])

    @classmethod
    def tearDownClass(cls):
        cls.ck.close()

    def test_cut_names_are_named(self):
        for name in ("é" + "x" * 254, "x" * 254 + "é", "é" * 128):
            with self.subTest(n=len(name.encode())):
                self.assertGreater(len(name.encode()), 255)
                r = self.ck.check(opscript.parse(f'create "/{name}" 13 1\n'), "fat16")
                self.assertEqual(kinds(r), [fusefat.LONG_UTF8_CUT], r.details)
                rr = fusefat.FusefatReader().read(r.images["core-dual"], 60)
                shown = [e for e in rr.listing if e["path"] != "/"]
                self.assertEqual([e["path"] for e in shown], ["/" + fusefat.readdir_cut(name)])
                self.assertIsNone(shown[0].get("size"))          # cannot be opened

    def test_254_bytes_read_whole(self):
        name = "é" * 127
        r = self.ck.check(opscript.parse(f'create "/{name}" 13 1\n'), "fat16")
        self.assertEqual(kinds(r), [], r.details)
        self.assertEqual(fusefat.readdir_cut(name), name)


if __name__ == "__main__":
    unittest.main()
