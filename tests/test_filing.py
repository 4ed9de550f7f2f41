#!/usr/bin/python3
"""vfz.campaign.filing's replay of a divergence (divergence_test), the test the
campaign's minimiser runs: each kind of divergence is replayed with the
readers it needs to show again.

A transformer's divergence shows through the readers of the transformed
image. divergence_test replayed it with no reader at all, so it never
showed again: every such finding was filed unminimised and labelled flaky
(campaign seed 10102, finding 61a5cbf30e5a: fsck.fat -a's rename of a
Linux alias holding 0x7F, 19 ops, "[flaky: not shown again on replay]",
while `vfatfuzz repro` showed it at once). Real tools: the core's dual
writer, fsck.fat -a as the transformer, mtools as the reader.
"""
import os
import shutil
import sys
import unittest

REPO = os.environ.get("VFAT_SRC") or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from vfz import opscript
from vfz.check import checker
from vfz.campaign import filing
from vfz.campaign import minimize# noqa: E402
from vfz.oracles import fsck_repair  # noqa: E402

# /c<DEL>: Linux (and the dual writer) stores the alias 'C\x7f', which
# fsck.fat -a calls a bad short name and renames (fsck-repair-renames-bad-short)
OPS = opscript.parse('mkdir "/d"\ncreate "/d/x" 10 1\ncreate "/c\\u007f" 513 61\n')


@unittest.skipUnless(shutil.which("fsck.fat") and shutil.which("mdir"), "needs dosfstools and mtools")
class ReplayTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.ck = checker.Checker(["mtools"], ["core-dual"], transformers=["fsck-repair"])

    @classmethod
    def tearDownClass(cls):
        cls.ck.close()

    def test_transformer_divergence_replays_and_minimises(self):
        r = self.ck.check(OPS, "fat16")
        tx = [d for d in r.divs.values() if d.fields["role"] == "transformer"]
        self.assertEqual([d.fields["kind"] for d in tx], [fsck_repair.RENAMED], r.details)
        d = tx[0]
        test = filing.divergence_test(self.ck, d, "fat16")
        self.assertTrue(test(OPS))
        mops, st = minimize.minimize(OPS, test, budget=60)
        self.assertTrue(st["reproduced"], st)
        self.assertEqual([o.kind for o in mops], ["create"])
        self.assertIn("\x7f", mops[0].args[0])

    def test_readers_per_role(self):
        ck = self.ck
        f = {"op": "-", "cls": "-"}
        self.assertEqual(filing.replay_readers(ck, dict(f, role="reader", oracle="mtools", verdict="differs",
                                                        kind="missing")), ["mtools"])
        self.assertEqual(filing.replay_readers(ck, dict(f, role="writer", oracle="core", verdict="result",
                                                        kind="ok->EPERM")), [])
        # a reader's kind under a transformer: that reader
        self.assertEqual(filing.replay_readers(ck, dict(f, role="transformer", oracle="dosfsck",
                                                        verdict="differs", kind="mtools:missing")),
                         ["mtools"])
        # its named exception, or an unknown reader's prefix: every reader
        for kind in (fsck_repair.RENAMED, "kernel:missing"):
            self.assertIsNone(filing.replay_readers(ck, dict(f, role="transformer", oracle="dosfsck",
                                                             verdict="differs", kind=kind)))
        # a failed transform needs no reader
        self.assertEqual(filing.replay_readers(ck, dict(f, role="transformer", oracle="fatsort",
                                                        verdict="failed", kind="fatsort exit 1")), [])


if __name__ == "__main__":
    unittest.main()
