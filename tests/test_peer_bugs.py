#!/usr/bin/python3
"""corpus/peer-bugs/: every catalogued bug of another implementation is
still there in the installed version.

A case is a directory NAME with ops.txt, bug.json ({"impl", "side", "fs",
"writer", "seed", "kind", "title", "expect": [strings the reproducer's
output must hold], "extra"}) and README (one line). Its exported
reproducer is committed as reports/bugs/NAME/ (`vfatfuzz repro
corpus/peer-bugs/NAME --export reports/bugs/NAME`) and reports/bugs.md
describes it. This test runs each committed run.sh -- the very script a
maintainer gets -- on this machine, and asserts that it still prints
REPRODUCED (exit 0) with the expected symptoms: an upgrade that fixes a
bug fails here, and the entry then moves to "fixed" in bugs.md. A case
whose tool is not installed says CANNOT RUN and is reported as skipped,
except dosfstools and mtools, which the suite always has.

It also keeps the catalogue honest: the committed reproducer replays the
case's own ops, bugs.md links every case, and every named exception (the
oracle registry's and vfz.model's) is named in bugs.md, as a bug or as a
design difference -- a new exception without an entry fails here.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

REPO = os.environ.get("VFAT_SRC") or os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, REPO)

from vfz import export, model, opscript  # noqa: E402

CASES = os.path.join(REPO, "corpus", "peer-bugs")
REPORTS = os.path.join(REPO, "reports", "bugs")
BUGS_MD = os.path.join(REPO, "reports", "bugs.md")
ALWAYS = {"dosfsck", "mtools"}
# the FatFs reproducer installs js-fatfs with npm ci unless given one: the fatfs oracle's
JS_FATFS = os.path.join(REPO, "vfz", "oracles", "fatfs", "node_modules")


def cases():
    return sorted(n for n in os.listdir(CASES) if os.path.isfile(os.path.join(CASES, n, "bug.json")))


def spec(n):
    with open(os.path.join(CASES, n, "bug.json"), encoding="utf-8") as f:
        return json.load(f)


def exception_names():
    names = {e.name for e in getattr(model, "EXCEPTIONS", [])}
    try:
        from vfz import oracles
        names |= {x.name for x in oracles.exceptions()}
    except Exception as e:          # the registry must load: say why it did not
        raise AssertionError(f"the oracle registry does not load: {type(e).__name__}: {e}")
    return names


class PeerBugTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="vfz-test-peer-")
        with open(BUGS_MD, encoding="utf-8") as f:
            cls.md = f.read()

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_1_cases_are_well_formed(self):
        self.assertGreaterEqual(len(cases()), 10)
        for n in cases():
            s = spec(n)
            with self.subTest(case=n):
                self.assertIn(s["impl"], export.IMPLS)
                self.assertIn(s["side"], ("reader", "writer"))
                self.assertTrue(s.get("expect"), "no expected symptom")
                if s["side"] == "reader":
                    self.assertTrue(s.get("writer"))
                with open(os.path.join(CASES, n, "README"), encoding="utf-8") as f:
                    self.assertEqual(len(f.read().strip().split("\n")), 1)
                d = os.path.join(REPORTS, n)
                for f in ("README.md", "run.sh", "image.img.xz", "ops.txt", "expected.txt"):
                    self.assertTrue(os.path.isfile(os.path.join(d, f)), f"reports/bugs/{n}: no {f}")
                self.assertEqual(opscript.dump(opscript.load(os.path.join(d, "ops.txt"))),
                                 opscript.dump(opscript.load(os.path.join(CASES, n, "ops.txt"))),
                                 f"reports/bugs/{n} was exported from other ops: re-export it")

    def test_2_each_bug_is_still_present(self):
        for n in cases():
            s = spec(n)
            with self.subTest(case=n):
                r = subprocess.run(["sh", os.path.join(REPORTS, n, "run.sh"), os.path.join(self.tmp, n)],
                                   capture_output=True, text=True, errors="replace", timeout=600,
                                   env=dict(os.environ, LC_ALL="C.UTF-8",
                                            **({"VFZ_JS_FATFS": JS_FATFS} if os.path.isdir(JS_FATFS) else {})))
                out = r.stdout + r.stderr
                last = out.strip().split("\n")[-1]
                if r.returncode == 2 and s["impl"] not in ALWAYS:
                    print(f"{n}: skipped here: {last}", file=sys.stderr)
                    continue
                self.assertEqual(r.returncode, 0, f"{n}: the bug no longer shows ({last}); if the "
                                 f"installed {s['impl']} fixed it, move its entry in reports/bugs.md "
                                 f"to 'fixed' and drop the case\n{out[-3000:]}")
                self.assertTrue(last.startswith("REPRODUCED: "), last)
                for want in s["expect"]:
                    self.assertIn(want, out, f"{n}: symptom {want!r} missing")

    def test_3_bugs_md_links_every_case(self):
        for n in cases():
            self.assertIn(f"(bugs/{n}/)", self.md, f"reports/bugs.md does not link bugs/{n}/")
        for n in os.listdir(REPORTS):
            self.assertIn(n, cases(), f"reports/bugs/{n} has no case in corpus/peer-bugs")

    def test_4_every_named_exception_is_catalogued(self):
        missing = sorted(x for x in exception_names() if not re.search(r"`" + re.escape(x) + r"`", self.md))
        self.assertEqual(missing, [], "named exceptions with no entry in reports/bugs.md (a bug or a "
                                      "design difference)")
        # an exception that links its entry (NamedException.bug) links an anchor that exists
        from vfz import oracles
        anchors = set(re.findall(r'<a id="([^"]+)"></a>', self.md))
        for x in oracles.exceptions():
            if getattr(x, "bug", None):
                self.assertIn(x.bug, anchors, f"{x.name}: bug={x.bug!r} is no anchor of reports/bugs.md")


if __name__ == "__main__":
    unittest.main(verbosity=2)
