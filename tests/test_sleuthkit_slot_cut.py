#!/usr/bin/python3
"""sleuthkit-long-name-cut when a cut name meets another entry's: TSK 4.11
shows a 247-character name cut to 234 (18 slots) and a 252-character one
cut to 247 (19 slots), so the second shows under the first's path with its
own contents (campaign seed 10102, finding b1528ddc993a: filed as an
unnamed 'changed:sha256'). The real fls on a core-dual image; the pairing
(slot_cut_explains) must also refuse a listing the cut does not explain.
"""
import os
import shutil
import sys
import unittest

REPO = os.environ.get("VFAT_SRC") or os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, REPO)

from vfz import opscript
from vfz.check import checker# noqa: E402
from vfz.oracles import sleuthkit  # noqa: E402

A, B = "x" * 247, "x" * 252


@unittest.skipUnless(shutil.which("fls"), "needs sleuthkit")
class SlotCutCollisionTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.ck = checker.Checker(["sleuthkit"], ["core-dual"])

    @classmethod
    def tearDownClass(cls):
        cls.ck.close()

    def test_colliding_cut_is_named(self):
        r = self.ck.check(opscript.parse(f'create "/{A}" 13 247\ncreate "/{B}" 13 255\n'), "fat16")
        self.assertEqual([(d.fields["oracle"], d.fields["kind"]) for d in r.divs.values()],
                         [("sleuthkit", sleuthkit.SLOT_CUT)], r.details)
        rr = sleuthkit.SleuthkitReader().read(r.images["core-dual"], 60)
        self.assertEqual(sorted(len(e["path"]) - 1 for e in rr.listing), [234, 247])

    def test_pairing_needs_type_contents_and_cut_paths(self):
        exp = [{"path": "/" + A, "type": "file", "size": 13, "sha256": "a"},
               {"path": "/" + B, "type": "file", "size": 13, "sha256": "b"}]
        shown = [{"path": "/" + A[:234], "type": "file", "size": 13, "sha256": "a"},
                 {"path": "/" + A, "type": "file", "size": 13, "sha256": "b"}]
        self.assertTrue(sleuthkit.slot_cut_explains(exp, shown))
        self.assertFalse(sleuthkit.slot_cut_explains(exp, exp))                     # nothing cut
        other = [dict(shown[0], sha256="c"), shown[1]]
        self.assertFalse(sleuthkit.slot_cut_explains(exp, other))                   # other contents
        moved = [{"path": "/d/" + A[:234], "type": "file", "size": 13, "sha256": "a"}, shown[1]]
        self.assertFalse(sleuthkit.slot_cut_explains(exp, moved))                   # other directory
        self.assertFalse(sleuthkit.slot_cut_explains(exp, shown[:1]))               # one lost
        odd = [dict(shown[0], path="/" + A[:230]), shown[1]]
        self.assertFalse(sleuthkit.slot_cut_explains(exp, odd))                     # not on a slot


if __name__ == "__main__":
    unittest.main()
