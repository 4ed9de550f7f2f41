#!/usr/bin/python3
"""Named exceptions of the process readers on whole scripts with the name
classes of issue 26 (cp437, lowbyte, marks), against the real tools.

  * fatcat-lfn-bytes: a long name whose fatcat form holds the byte '/'
    (U+032F, a combining mark, gives 2F 03) is split into two path
    components; the entry and everything under it are explained from the
    image, and nothing else is;
  * `vfatfuzz diff` names what the checker names (sleuthkit-invalid-83 on
    a nodual image), so a user's own script shows its exceptions;
  * mtools as the writer: its 8.3 decision for CP437 characters without
    case ('┬▓aô' is stored bare, C2 B2 41 4F with NT 0x08), for letters
    whose capital cp437 lacks ('µa' keeps a long name, NT 0x00) and for a
    name iconv empties ('\ufeff' keeps its long name, alias ~1) is the
    model's; 7-Zip and GRUB show bare names' raw bytes, and where two of
    them show alike ('ç' 0x80, '▄' 0xDC: U+FFFD both) the whole listing is
    told from the image (7z-nonascii-short, grub-raw-oem-bytes,
    sleuthkit-short-ascii; TSK also drops the 0xFF of a NBSP).
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

from vfz import model, opscript# noqa: E402
from vfz.check import checker  # noqa: E402
from vfz.check.verdict import ListingDiff  # noqa: E402
from vfz.oracles import fatcat, grub, sevenzip, sleuthkit  # noqa: E402
from vfz.oracles.evidence import Evidence  # noqa: E402


def kinds(res):
    return sorted((d.fields["oracle"], d.fields["kind"]) for d in res.divs.values())


@unittest.skipUnless(shutil.which("fatcat"), "fatcat not installed")
class FatcatSlash(unittest.TestCase):
    def test_slash_in_the_form_splits_the_name(self):
        script = 'mkdir "/é̯x"\ncreate "/é̯x/f" 3 1\ncreate "/g" 1 1\n'
        ck = checker.Checker(["fatcat"], ["core-dual"])
        try:
            res = ck.check(opscript.parse(script), "fat16")
            self.assertEqual(kinds(res), [("fatcat", fatcat.LFN_BYTES)], res.details)
            img = res.images["core-dual"]
            self.assertEqual(fatcat.short_fallback_paths(img),
                             {"/é̯x": "/é/\x03x", "/é̯x/f": "/é/\x03x/f"})
            rr = fatcat.FatcatReader(check=False).read(img)
            shown = {e["path"]: e for e in rr.listing}
            self.assertIn("/é/\x03x/f", shown)
            # one entry more missing than the image explains: not named
            d = ListingDiff(missing=[{"path": "/é̯x", "type": "dir"},
                                     {"path": "/é̯x/f", "type": "file", "size": 3,
                                      "sha256": shown["/é/\x03x/f"]["sha256"]},
                                     {"path": "/g", "type": "file", "size": 1}],
                            extra=[shown["/é/\x03x"], shown["/é/\x03x/f"]])
            ev = Evidence(opscript.parse(script), writer="core-dual", reader="fatcat", rr=rr,
                          verdict="differs", diff=d, image=img)
            self.assertIsNone(fatcat.FatcatReader.explain(ev))
            d.missing.pop()
            self.assertEqual(fatcat.FatcatReader.explain(ev), fatcat.LFN_BYTES)
        finally:
            ck.close()


@unittest.skipUnless(shutil.which("fls"), "sleuthkit not installed")
class DiffNames(unittest.TestCase):
    def test_diff_shows_the_named_exception(self):
        tmp = tempfile.mkdtemp(prefix="test-naming-")
        try:
            ops = os.path.join(tmp, "ops")
            with open(ops, "w", encoding="utf-8") as f:
                f.write('mkdir "/Dir B"\ncreate "/Dir B/inner file.txt" 100 3\ncreate "/plain.txt" 10 1\n')
            p = subprocess.run([sys.executable, os.path.join(REPO, "scripts", "vfatfuzz"), "diff",
                                "--ops", ops, "--writers", "core-v1", "--oracles", "sleuthkit",
                                "--fs", "fat16", "--json"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
            self.assertEqual(p.returncode, 1, p.stderr)
            v = json.loads(p.stdout)["targets"][0]["readers"]["sleuthkit"]
            self.assertEqual(v["verdict"], "differs")
            self.assertEqual(v["named"], [sleuthkit.INVALID_83])
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


class ShortAble(unittest.TestCase):
    def test_caseless_cp437_characters_fit_either_case(self):
        """Measured on mtools 4.0.32 (codepage 437): bare with NT 0x08
        '┬▓ao', '▀╒i', '²a'; bare with 0x00 '▓A', '²A', '∞A'; a long name for
        'ªA', 'ⁿA' (lower-case letters beside a capital), 'µa' (capital Μ
        not in cp437, no transliteration: _A~ with LFN slots)."""
        for name in ("┬▓ao", "▀╒i", "²a", "▓A", "²A", "∞A"):
            self.assertTrue(model._short_able(name), name)
        for name in ("ªA", "ⁿA"):
            self.assertFalse(model._short_able(name), name)
        from vfz.model.profiles import _mtools_bare, _mtools_case_of, mtools_store
        self.assertFalse(_mtools_bare("µa"))
        self.assertEqual(_mtools_case_of("µa"), (False, False))
        self.assertEqual(_mtools_case_of("┬▓ao"), (True, False))
        self.assertEqual(mtools_store("\ufeff"), "\ufeff")
        self.assertEqual(mtools_store("a\ufeffb"), "ab")


@unittest.skipUnless(shutil.which("mcopy") and shutil.which("7z") and shutil.which("grub-fstest"),
                     "needs mtools, p7zip-full and grub-common")
class MtoolsWriterRawShortNames(unittest.TestCase):
    SCRIPT = ('mkdir "/┬▓aô"\nmkdir "/ç"\ncreate "/▄" 4096 33\nmkdir "/d"\nmkdir "/d/\\ufeff"\n'
              'rename "/d/\\ufeff" "/µa"\ncreate "/▓A" 1 1\nmkdir "/σ\\u00a0ée"\n')

    @unittest.skipUnless(shutil.which("fls"), "sleuthkit not installed")
    def test_only_the_named_exceptions(self):
        ck = checker.Checker(["7z", "grub", "sleuthkit"], ["mtools"])
        try:
            res = ck.check(opscript.parse(self.SCRIPT), "fat16")
            self.assertEqual(kinds(res), [("7z", sevenzip.NONASCII_SHORT), ("grub", grub.RAW_OEM),
                                          ("sleuthkit", sleuthkit.SHORT_ASCII)], res.details)
            img = res.images["mtools"]
            from vfz.oracles.evidence import core_listing
            shorts = {e["path"]: (e["short"][:8], e["nt"], e.get("lfn")) for e in core_listing(img)}
            self.assertEqual(shorts["/┬▓ao"], ("c2b2414f", 8, 0))
            self.assertEqual(shorts["/µa"][1:], (0, 1))
            self.assertEqual(shorts["/σ\u00a0ée"], ("e4ff9045", 8, 0))
            self.assertEqual(sleuthkit.SleuthkitReader.name_exception("σ\u00a0ée", "^^e"),
                             sleuthkit.SHORT_ASCII)
            self.assertIsNone(sleuthkit.SleuthkitReader.name_exception("σ\u00a0ée", "^^^e"))
            # the whole-listing recogniser needs the image to be the listing
            rr = sevenzip.SevenZipReader().read(img)
            exp = model.Model("mtools", "dual")
            ev = Evidence(opscript.parse(self.SCRIPT), writer="mtools", reader="7z", rr=rr,
                          verdict="differs", diff=ListingDiff(missing=[{"path": "/x", "type": "dir"}]),
                          image=img, entries=None)
            exp.apply(opscript.parse(self.SCRIPT))
            ev.entries = exp.entries()
            self.assertEqual(sevenzip.SevenZipReader.explain(ev), sevenzip.NONASCII_SHORT)
            ev.entries = ev.entries[1:]
            self.assertIsNone(sevenzip.SevenZipReader.explain(ev))
            rr.listing = [e for e in rr.listing if e["path"] != "/d"]
            ev.entries = exp.entries()
            self.assertIsNone(sevenzip.SevenZipReader.explain(ev))
        finally:
            ck.close()


if __name__ == "__main__":
    unittest.main(verbosity=2)
