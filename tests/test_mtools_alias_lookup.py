#!/usr/bin/python3
"""The mtools writer's lookups through 8.3 aliases, and the named exception
mtools-alias-lookup (vfz/oracles/mtools/exceptions.py), against real
mtools and fsck.fat.

Campaign seed 10103 found `create "/longfilename2.txt"`, `create
"/LONGFI~1.TXT"` answered EINVAL by the mtools writer: its glue matched
long names only, ran `mcopy -D s`, and mtools, which sees the alias, skipped
(exit 1). Linux finds the file through its alias (EEXIST). Here:
  * mtools itself sees the alias: mcopy -D s of it exits 1 and leaves the
    directory as it was (the behaviour the glue now follows);
  * the writer's answers through aliases (create, mkdir, write, unlink,
    rmdir, rename from, onto and onto its own alias, paths through a
    directory's alias) are Linux's, op by op, as the dual model predicts
    them (the model held to the kernel by test_core_model_aliases), and
    each such op is noted in the writer's log;
  * the checker files that script as one finding of kind
    mtools-alias-lookup from the op, the readers agree on the script cut
    before it;
  * names that only look like aliases (no such alias on the image, a bare
    8.3 entry of that name) are new names, not noted, no finding.
About 5 s."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

REPO = os.environ.get("VFAT_SRC") or os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, REPO)

from vfz import model, opscript
from vfz.check import checker# noqa: E402
from vfz.oracles.mtools import MtoolsWriter, mtarget, mtools_env, short_names  # noqa: E402
from vfz.oracles.mtools.exceptions import ALIAS_NOTE, alias_lookup_op  # noqa: E402

VFAT = os.path.join(os.environ.get("VFAT_BUILD") or os.path.join(REPO, "build"), "vfat")
NAMED = ("writer", "mtools", "result", "mtools-alias-lookup", "-", "-")

THROUGH = '''create "/longfilename2.txt" 5 1
create "/a" 3 2
write "/LONGFI~1.TXT" 0 4 3
rename "/longfilename2.txt" "/longfi~1.txt"
create "/LONGFI~1.TXT" 0 0
mkdir "/longfi~1.txt."
rename "/a" "/LONGFI~1.TXT"
mkdir "/directoryname"
create "/DIRECT~1/x" 1 1
unlink "/direct~1/x"
mkdir "/DIRECT~1/sub"
rename "/DIRECT~1/sub" "/DIRECT~1/s2"
rmdir "/DIRECT~1/S2"
rmdir "/DIRECT~1"
'''
ALIAS_LINES = [3, 4, 5, 6, 7, 9, 10, 11, 12, 13, 14]
# alias-shaped names that name no alias: longfilename2.txt's is ~1 and
# short.txt~'s SHORT~1.TXT, and SHORT.TXT is a bare 8.3 entry
NEW_NAMES = '''create "/longfilename2.txt" 5 1
create "/LONGFI~2.TXT" 1 1
create "/SHORT.TXT" 1 1
create "/short.txt~" 1 1
mkdir "/SHORT~2.TXT"
'''


def sigs_of(res):
    return sorted((d.fields["role"], d.fields["oracle"], d.fields["verdict"], d.fields["kind"],
                   d.fields["op"], d.fields["cls"]) for d in res.divs.values())


@unittest.skipUnless(os.access(VFAT, os.X_OK), "build/vfat not built")
@unittest.skipUnless(shutil.which("mcopy") and shutil.which("fsck.fat"), "mtools or fsck.fat not installed")
class MtoolsAliasLookupTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.td = tempfile.TemporaryDirectory(prefix="vfz-test-alias-lookup-")
        cls.ck = checker.Checker(["dosfsck", "mtools"], ["mtools"])

    @classmethod
    def tearDownClass(cls):
        cls.ck.close()
        cls.td.cleanup()

    def fresh(self, name):
        img = os.path.join(self.td.name, name)
        shutil.copy(self.ck.pristine_image("fat32"), img)
        return img

    def test_mtools_sees_the_alias(self):
        img = self.fresh("mcopy.img")
        data = os.path.join(self.td.name, "data")
        with open(data, "wb") as f:
            f.write(b"x")
        env = mtools_env()
        p = subprocess.run(["mcopy", "-i", img, data, mtarget("/", "longfilename2.txt")], env=env)
        self.assertEqual(p.returncode, 0)
        before = short_names(img, 30)
        self.assertEqual(before, {"/longfilename2.txt": "LONGFI~1.TXT"})
        with open(img, "rb") as f:
            bytes_before = f.read()
        p = subprocess.run(["mcopy", "-i", img, "-D", "s", data, mtarget("/", "LONGFI~1.TXT")],
                           env=env, capture_output=True)
        self.assertEqual(p.returncode, 1)
        with open(img, "rb") as f:
            self.assertEqual(f.read(), bytes_before)

    def test_answers_through_aliases_are_linux(self):
        ops = opscript.parse(THROUGH)
        w = MtoolsWriter().apply(self.fresh("through.img"), ops, 60)
        self.assertIsNone(w.error)
        m = model.Model("kernel", "dual")
        m.apply(ops)
        self.assertEqual([f"{op}: {r}" for op, r in zip(ops, w.results)],
                         [f"{op}: {r}" for op, r in zip(ops, m.results)])
        # the answers are not all "ok": EEXIST through an alias counts
        self.assertEqual(w.results.count("EEXIST"), 2)
        noted = sorted({int(ln.split()[2].rstrip(":")) for ln in w.raw.split("\n")
                        if ALIAS_NOTE in ln})
        self.assertEqual(noted, ALIAS_LINES)
        self.assertEqual(alias_lookup_op(ops, w.raw), 2)

    def test_one_named_finding_readers_on_the_cut(self):
        r = self.ck.check(opscript.parse('create "/longfilename2.txt" 0 0\ncreate "/LONGFI~1.TXT" 0 0\n'),
                          "fat32")
        self.assertEqual(sigs_of(r), [NAMED], r.details.get("mtools"))
        det = r.details["mtools"]["(writer)"]
        self.assertIn("named exception mtools-alias-lookup from line 2:", det)
        self.assertIn("expected ok, got EEXIST", det)
        self.assertEqual({k: v for k, v in r.verdicts["mtools"].items() if k != "(writer)"},
                         {"dosfsck": "ok", "mtools": "ok"})
        # the whole script, every kind of lookup: still one finding
        r = self.ck.check(opscript.parse(THROUGH), "fat32")
        self.assertEqual(sigs_of(r), [NAMED], r.details.get("mtools"))
        self.assertIn("from line 3:", r.details["mtools"]["(writer)"])

    def test_names_that_only_look_like_aliases(self):
        ops = opscript.parse(NEW_NAMES)
        w = MtoolsWriter().apply(self.fresh("new.img"), ops, 60)
        self.assertEqual(w.results, ["ok"] * len(ops), w.raw[-2000:])
        self.assertNotIn(ALIAS_NOTE, w.raw)
        r = self.ck.check(ops, "fat32")
        self.assertEqual(sigs_of(r), [], r.details.get("mtools"))


if __name__ == "__main__":
    unittest.main()
