#!/usr/bin/python3
"""The mtools profile's stored-spelling rule (vfz.model.profiles.mtools_store)
held against mtools 4.0.32 itself.

The mtools writer glue refuses, as Linux would, a new name that mtools
would store as an existing one, and it takes mtools' stored spelling from
this rule; the model predicts with the same rule. So the rule is checked
here against the tool, not against the model: each name is written by
mcopy (a file) and mmd (a directory) on a fresh FAT16 image, exactly as the
glue calls them, and read back by the core's reader (`vfat ls`), which
shows the name Linux would show.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

REPO = os.environ.get("VFAT_SRC") or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from vfz.check import diff# noqa: E402
from vfz.model.profiles import mtools_store  # noqa: E402
from vfz.oracles.mtools import mtarget, mtools_env  # noqa: E402
from vfz.oracles.core import vfat_binary  # noqa: E402

# one name per clause of the rule: trailing spaces dropped, a single dot
# dropped before a bare 8.3 entry, other trailing dots kept, astral cut to
# 16 bits, transliteration into a bare 8.3 entry, names kept as given;
# glibc's case rules (titlecase digraphs are lower case: 'ǅ.txt' is lost as
# 'd.txt', 'ǲZ.c' is mixed case and kept) and its bounded transliteration
# ('Ǆ' alone keeps the 'D' of 'DŽ'; in 'ǄA' it falls back to '?': kept)
NAMES = ["trail ", "trail.", "dots...", "Ab.", "x+y.", "\u0153", "a\u0153", "\u00ff",
         "x\u20ac", "\U0001F600x", "CON.", "Hello World.txt", "caf\u00e9.TXT", "lower.txt",
         "\u01c5.txt", "\u01c8", "\u01f2Z.c", "\u01c4", "\u01c4A", "a\u01cb.b"]


@unittest.skipUnless(shutil.which("mcopy") and shutil.which("mkfs.fat"), "mtools/dosfstools missing")
class MtoolsStoreTests(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="vfz-mstore-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def stored(self, name, kind):
        img = os.path.join(self.tmp, "s.img")
        if os.path.exists(img):
            os.unlink(img)
        diff.mkfs(img, 16, 16 << 20, 0)
        if kind == "file":
            src = os.path.join(self.tmp, "data")
            with open(src, "wb") as f:
                f.write(b"x")
            argv = ["mcopy", "-i", img, "-D", "s", src, mtarget("/", name)]
        else:
            argv = ["mmd", "-i", img, "-D", "s", mtarget("/", name)]
        p = subprocess.run(argv, capture_output=True, env=mtools_env())
        self.assertEqual(p.returncode, 0, p.stderr)
        ls = subprocess.run([vfat_binary(), "ls", img], capture_output=True, text=True, check=True)
        paths = [json.loads(ln)["path"] for ln in ls.stdout.split("\n") if ln.startswith("{")]
        self.assertEqual(len(paths), 1, paths)
        return paths[0][1:]

    def test_rule_matches_mtools(self):
        for name in NAMES:
            for kind in ("file", "dir"):
                with self.subTest(name=name, kind=kind):
                    self.assertEqual(self.stored(name, kind), mtools_store(name))


if __name__ == "__main__":
    unittest.main(verbosity=2)
