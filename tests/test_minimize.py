#!/usr/bin/python3
"""vfz.campaign.minimize on properties of the op-scripts themselves (no oracle: the
algorithm is the code under test; the oracle-backed minimisation is
exercised by test_campaign and test_mutants):
  * a property that holds keeps a 1-minimal script that still has it;
  * a divergence that does not show on the first re-run is returned as
    given, reproduced False, after one test (no budget spent on it);
  * a budget that runs out before the first test says reproduced None.
"""
import os
import sys
import unittest

REPO = os.environ.get("VFAT_SRC") or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from vfz import opscript
from vfz.campaign import minimize# noqa: E402

SCRIPT = opscript.parse('mkdir "/a"\ncreate "/a/long file name.txt" 100 1\ncreate "/b" 5 2\n'
                        'rename "/b" "/a/c"\nunlink "/a/c"\nmkdir "/d"\n')


def has_rename(ops):
    return any(o.kind == "rename" for o in ops)


class TestMinimize(unittest.TestCase):
    def test_keeps_the_property(self):
        m, st = minimize.minimize(SCRIPT, has_rename, budget=30)
        self.assertTrue(has_rename(m))
        self.assertEqual([o.kind for o in m], ["rename"])
        self.assertTrue(st["reproduced"])
        self.assertEqual((st["orig"], st["min"]), (6, 1))

    def test_not_shown_again(self):
        calls = []

        def once(ops):              # true for no script: the first sighting was the only one
            calls.append(ops)
            return False
        m, st = minimize.minimize(SCRIPT, once, budget=30)
        self.assertIs(st["reproduced"], False)
        self.assertEqual(len(calls), 1)
        self.assertEqual(opscript.dump(m), opscript.dump(SCRIPT))
        self.assertEqual((st["tests"], st["min"]), (1, 6))

    def test_no_budget(self):
        m, st = minimize.minimize(SCRIPT, has_rename, budget=0)
        self.assertIsNone(st["reproduced"])
        self.assertTrue(st["timeout"])
        self.assertEqual(len(m), 6)


if __name__ == "__main__":
    unittest.main()
