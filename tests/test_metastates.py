#!/usr/bin/python3
"""The census states of the second grammar (vfz/campaign/metastates.py),
each reached by the op that makes it and not by its near miss, on the
model alone (no image, no tool)."""
import os
import random
import sys
import unittest

REPO = os.environ.get("VFAT_SRC") or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from vfz import model, opscript  # noqa: E402
from vfz.campaign.metastates import META_STATES, meta_reached  # noqa: E402
from vfz.campaign.scriptgen import enrich  # noqa: E402

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

    def test_enrich_makes_read_only_then_modified(self):
        """A meta script's enrichment ends with a file made read-only and
        modified (every kind of the four drawn over 40 seeds, each reaching
        ro-modified unless the enrichment's earlier ops renamed the file
        away); without meta the enrichment is the same and draws no second
        grammar."""
        ops = opscript.parse('mkdir "/d"\ncreate "/d/a.txt" 3000 1\ncreate "/b" 10 2\n')
        kinds, reached = set(), 0
        for seed in range(40):
            e = enrich(ops, random.Random(seed), meta=True)
            self.assertEqual(e[-2].kind, "chattr")
            self.assertTrue(e[-2].args[1].startswith("r"))
            kinds.add(e[-1].kind)
            m = model.Model("kernel", "dual")
            m.apply(e)
            got = meta_reached(model.Model("kernel", "dual"), e, m.results, CL)
            self.assertEqual("ro-modified" in got, m.results[-2:] == ["ok", "ok"], e)
            reached += "ro-modified" in got
            plain = enrich(ops, random.Random(seed))
            self.assertFalse([o for o in plain if o.kind in opscript.META_KINDS])
            self.assertEqual([str(o) for o in plain], [str(o) for o in e[:len(plain)]])
        self.assertEqual(kinds, {"write", "truncate", "rename", "unlink"})
        self.assertGreaterEqual(reached, 30)


if __name__ == "__main__":
    unittest.main(verbosity=2)
