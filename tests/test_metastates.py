#!/usr/bin/python3
"""The census states of the second grammar (vfz/campaign/metastates.py),
each reached by the op that makes it and not by its near miss, on the
model alone (no image, no tool)."""
import os
import sys
import unittest

REPO = os.environ.get("VFAT_SRC") or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from vfz import model, opscript  # noqa: E402
from vfz.campaign.metastates import META_STATES, meta_reached  # noqa: E402

CL = 2048


def states(text, results=None):
    ops = opscript.parse(text)
    m = model.Model("kernel", "dual")
    return meta_reached(m, ops, results or ["ok"] * len(ops), CL)


class MetaStates(unittest.TestCase):
    def test_each_state_and_its_near_miss(self):
        base = 'create "/f" 5000 1\n'              # 3 clusters
        cases = [
            ("shrink-cluster", base + 'truncate "/f" 2048\n', base + 'truncate "/f" 4097\n'),
            ("extend-hole", base + 'truncate "/f" 5001\n', base + 'truncate "/f" 5000\n'),
            ("extend-hole", base + 'write "/f" 5001 1 2\n', base + 'write "/f" 5000 1 2\n'),
            ("ro-modified", base + 'chattr "/f" r\nrename "/f" "/g"\n',
             base + 'chattr "/f" r\nchattr "/f" a\nunlink "/f"\n'),
            ("time-edge", base + 'touch "/f" 1246079973 315532801\n',
             base + 'touch "/f" 315532802 4354819197\n'),
            ("time-edge", base + 'touch "/f" 9999999999 1246079973\n',
             base + 'touch "/" 0 0\n'),            # the root has no times to clamp
        ]
        for st, hit, miss in cases:
            with self.subTest(state=st, hit=hit):
                self.assertIn(st, states(hit))
                self.assertNotIn(st, states(miss))

    def test_only_ops_that_succeeded(self):
        # the writer refused the truncate: no state, whatever the model says
        self.assertEqual(states('create "/f" 5000 1\ntruncate "/f" 1\n', ["ok", "EIO"]), set())
        self.assertEqual(states('mkdir "/d"\ntruncate "/d" 1\n'), set())    # EISDIR
        self.assertEqual(len(META_STATES), 4)


if __name__ == "__main__":
    unittest.main(verbosity=2)
