#!/usr/bin/python3
"""Named exceptions of the process readers on whole scripts with the name
classes of issue 26 (cp437, lowbyte, marks), against the real tools.

  * fatcat-lfn-bytes: a long name whose fatcat form holds the byte '/'
    (U+032F, a combining mark, gives 2F 03) is split into two path
    components; the entry and everything under it are explained from the
    image, and nothing else is;
  * `vfatfuzz diff` names what the checker names (sleuthkit-invalid-83 on
    a nodual image), so a user's own script shows its exceptions.
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

from vfz import opscript  # noqa: E402
from vfz.check import checker  # noqa: E402
from vfz.check.verdict import ListingDiff  # noqa: E402
from vfz.oracles import fatcat, sleuthkit  # noqa: E402
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


if __name__ == "__main__":
    unittest.main(verbosity=2)
