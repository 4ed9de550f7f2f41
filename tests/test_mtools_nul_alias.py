#!/usr/bin/python3
"""The mtools oracle's named exception mtools-nul-alias (reports/bugs.md
#mtools-nul-alias; vfz/oracles/mtools/aliases.py): mtools 4.0.32's
autorename leaves sprintf's NUL inside an 8.3 alias ('L{+KGFI~5' ->
'L{_KGFI~' + ' \\0\\0') and the long name is lost. Against real mtools,
fsck.fat and vfat check: the trigger scripts are one writer finding of
that kind (the readers check the script cut before the op), near misses
are not named, the evidence needs both the name and the image, and the
name predicate agrees with mmd itself. About 5 s."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

REPO = os.environ.get("VFAT_SRC") or os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, REPO)

from vfz import opscript
from vfz.check import checker# noqa: E402
from vfz.oracles.evidence import Evidence, core_listing  # noqa: E402
from vfz.oracles import WriteResult  # noqa: E402
from vfz.oracles.mtools import MtoolsWriter, mtarget, mtools_env  # noqa: E402
from vfz.oracles.mtools.aliases import nul_alias_in_image, nul_alias_leaf  # noqa: E402

VFAT = os.path.join(REPO, "build", "vfat")
NAMED = ("writer", "mtools", "result", "mtools-nul-alias", "-", "-")

# -> the line of the op mtools misprints the alias of
TRIGGERS = [
    ('mkdir "/L{+KGFI~5"\n', 1),
    # the long name lost: a later op through it fails (ENOENT), still one finding
    ('create "/a" 1 1\nmkdir "/abcdefg~ x"\ncreate "/abcdefg~ x/f" 1 1\ncreate "/b" 2 2\n', 2),
    # long name kept, bad 8.3 name 'ABCDE~5' NUL 'TXT'
    ('create "/abcde~05.txt x" 3 3\n', 1),
    ('mkdir "/d"\ncreate "/d/abc~005.txt long" 4 4\n', 2),
    # mmove to such a name
    ('create "/x" 1 1\nrename "/x" "/L{+KGFI~5"\ncreate "/y" 1 1\n', 2),
    # an alias clash: 'aЖ~05' is 'A_~05' like the bare 'a_~05' before it; bump 1 prints '~6'
    ('create "/a_~05" 1 1\ncreate "/a\u0416~05" 2 2\n', 2),
]
NEAR_MISSES = [
    'mkdir "/L{KGFI~5 long name"\n',        # '~5' is reprinted in place (bugs.md: NOT REPRODUCED)
    'mkdir "/LKGFI5 long name"\ncreate "/abcdefgh~1" 1 1\n',   # no '~' in the base
    'create "/a_~05" 1 1\n',                # leading zero, but no autorename without a clash
    'create "/a_~09" 1 1\ncreate "/a\u0416~09" 2 2\n',   # the clash bumps '~09' to '~10': same length
]
# names mmd is given alone on an empty root: the predicate must agree with
# what mmd writes (both answers occur)
SWEEP = ["abcdefg~ x", "abc~ x", "a.b~.txt", ".ab~", "ab+~", "ab~", "ab~05 long", "ab~09 long",
         "ab~0 long", "ab~00 long", "a~1234567 x", "abc~ ", "x~1 y", "0150~\u00e90~~ 0.a",
         "abcdefg\u02dc x", "L{+KGFI~5", "L{KGFI~5 long name", "ab~05.c x", "~.x", "A B~"]


def sigs_of(res):
    return sorted((d.fields["role"], d.fields["oracle"], d.fields["verdict"], d.fields["kind"],
                   d.fields["op"], d.fields["cls"]) for d in res.divs.values())


@unittest.skipUnless(os.access(VFAT, os.X_OK), "build/vfat not built")
@unittest.skipUnless(shutil.which("mmd") and shutil.which("fsck.fat"), "mtools or fsck.fat not installed")
class MtoolsNulAliasTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.td = tempfile.TemporaryDirectory(prefix="vfz-test-nul-alias-")
        cls.ck = checker.Checker(["dosfsck", "mtools", "vfat-check"], ["mtools"])

    @classmethod
    def tearDownClass(cls):
        cls.ck.close()
        cls.td.cleanup()

    def test_triggers_one_named_finding(self):
        for text, line in TRIGGERS:
            with self.subTest(script=text):
                r = self.ck.check(opscript.parse(text), "fat16")
                self.assertEqual(sigs_of(r), [NAMED], r.details.get("mtools"))
                self.assertIn(f"named exception mtools-nul-alias from line {line}:",
                              r.details["mtools"]["(writer)"])
                # the image mtools left holds the NUL alias; the readers
                # read the script cut before the op and agree
                self.assertTrue(nul_alias_in_image(r.images["mtools"]))
                self.assertFalse(nul_alias_in_image(r.images["mtools-cut"]))
                self.assertEqual({k: v for k, v in r.verdicts["mtools"].items() if k != "(writer)"},
                                 {"dosfsck": "ok", "mtools": "ok", "vfat-check": "ok"})
        r = self.ck.check(opscript.parse(TRIGGERS[0][0]), "fat16")
        self.assertEqual([e["short"] for e in core_listing(r.images["mtools"])],
                         ["4c7b5f4b4746497e200000"])

    def test_near_misses_not_named(self):
        for text in NEAR_MISSES:
            with self.subTest(script=text):
                r = self.ck.check(opscript.parse(text), "fat16")
                self.assertNotIn("mtools-nul-alias", {d.fields["kind"] for d in r.divs.values()})
                self.assertFalse(nul_alias_in_image(r.images["mtools"]))
                self.assertEqual(sigs_of(r), [], r.details.get("mtools"))

    def test_evidence_needs_name_and_image(self):
        """known_failure names it only when the script makes such a name
        AND the image holds such an alias: a NUL alias behind a script of
        names without '~' stays unnamed, and so does a trigger name on an
        image without one."""
        r = self.ck.check(opscript.parse(TRIGGERS[0][0]), "fat16")
        bad_img, clean_img = r.images["mtools"], r.images["mtools-cut"]

        def ev(text, img):
            ops = opscript.parse(text)
            return Evidence(ops, writer="mtools", wr=WriteResult("mtools", results=["ok"] * len(ops)),
                            results=["ok"] * len(ops), bad=None, fat_bits=16, image=img, entries=[])
        self.assertEqual(MtoolsWriter.known_failure(ev(TRIGGERS[0][0], bad_img)), (0, "mtools-nul-alias"))
        self.assertIsNone(MtoolsWriter.known_failure(ev('mkdir "/LKGFI5 long"\n', bad_img)))
        self.assertIsNone(MtoolsWriter.known_failure(ev(NEAR_MISSES[0], bad_img)))
        self.assertIsNone(MtoolsWriter.known_failure(ev(TRIGGERS[0][0], clean_img)))

    def test_predicate_agrees_with_mmd(self):
        pristine = self.ck.pristine_image("fat16")
        img = os.path.join(self.td.name, "one.img")
        seen = set()
        for name in SWEEP:
            shutil.copy(pristine, img)
            p = subprocess.run(["mmd", "-i", img, "-D", "s", mtarget("/", name)], env=mtools_env(),
                               capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, (name, p.stderr))
            got = bool(nul_alias_in_image(img))
            self.assertEqual(nul_alias_leaf(name), got, name)
            seen.add(got)
        self.assertEqual(seen, {True, False})

    def test_repro_cli_names_it(self):
        """`vfatfuzz repro` of the peer-bug case's op-script: one divergence,
        kind mtools-nul-alias (exit 1: it still diverges)."""
        p = subprocess.run([sys.executable, os.path.join(REPO, "scripts", "vfatfuzz"), "repro",
                            os.path.join(REPO, "corpus", "peer-bugs", "mtools-nul-alias", "ops.txt"),
                            "--writers", "mtools", "--oracles", "dosfsck,mtools,vfat-check",
                            "--fs", "fat16"], capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 1, p.stderr[-2000:])
        self.assertIn("result: STILL DIVERGES", p.stdout)
        divs = [ln for ln in p.stdout.splitlines() if ln.startswith("-- divergence")]
        self.assertEqual(len(divs), 1, p.stdout)
        self.assertIn("role=writer oracle=mtools verdict=result kind=mtools-nul-alias op=- cls=-", divs[0])


if __name__ == "__main__":
    unittest.main()
