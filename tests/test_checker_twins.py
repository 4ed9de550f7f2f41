#!/usr/bin/python3
"""The checker's twin comparison: a core writer and the kernel writer it
reimplements (Entry.twin) must write the same short entries, NT bytes,
attributes, clusters and LFN counts under the same script; masked only
where the kernel draws randomness (hex-tail aliases, dummies of another
seed). Blind spot of issue 18: an alias Linux would never write passes
every reader, which finds the file by its long name."""
import os
import sys
import unittest

REPO = os.environ.get("VFAT_SRC") or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from vfz import opscript
from vfz.check import checker
from vfz.check import twins# noqa: E402
from vfz.oracles import kernel as kernel_oracle  # noqa: E402


def entry(short, nt=0, cluster=3, dummy=False):
    return {"path": "/x", "type": "file", "short": short, "nt": nt, "attr": 32, "cluster": cluster,
            "lfn": 1, "dummy": dummy}


class TwinDifferences(unittest.TestCase):
    def test_fields(self):
        a = {"/x": entry(b"LONGFI~1TXT".hex())}
        b = {"/x": entry(b"LONGFI~2TXT".hex(), nt=8, cluster=4)}
        got = twins.twin_differences(a, b, True)
        self.assertEqual([f for f, *_ in got], ["short", "nt", "cluster"])

    def test_masks_randomness(self):
        self.assertFalse(twins._hex_tail(b"LONGFI~1TXT".hex()))    # an ordinary ~N alias counts
        tail = b"LO1EF0~1TXT".hex()                                   # Linux's XXnnnn~D
        self.assertTrue(twins._hex_tail(tail))
        a = {"/x": entry(b"LONGFI~1TXT".hex())}
        b = {"/x": entry(tail)}
        self.assertEqual(twins.twin_differences(a, b, True), [])
        # dummies: compared when both writers have one seed, else masked
        a = {"/x": entry("20000a0b0213130d2f0000", dummy=True)}
        b = {"/x": entry("20001111111111112f0000", dummy=True)}
        self.assertEqual([f for f, *_ in twins.twin_differences(a, b, True)], ["short"])
        self.assertEqual(twins.twin_differences(a, b, False), [])


class SameResults(unittest.TestCase):
    def test_twins_compared_when_both_differ_from_the_model_alike(self):
        """A volume that fills: both twins say ENOSPC where the model says
        ok (it counts no clusters); their bytes are still compared. Not
        when their results differ or one failed."""
        from vfz.check.divergence import CheckResult
        res = CheckResult()
        res.verdicts = {"a": {"(writer)": "differs"}, "b": {"(writer)": "differs"}}
        res.results = {"a": ["ok", "ENOSPC"], "b": ["ok", "ENOSPC"]}
        self.assertTrue(twins._same_results(res, "a", "b"))
        res.results["b"] = ["ok", "ok"]
        self.assertFalse(twins._same_results(res, "a", "b"))
        res.results["b"] = None
        self.assertFalse(twins._same_results(res, "a", "b"))


@unittest.skipUnless(kernel_oracle.KernelWriter(auto_build=False).available()[0], "kernel guest not built")
class TwinsEndToEnd(unittest.TestCase):
    def test_core_dual_against_kernel(self):
        """core-dual with another shortname rule (winnt) stores readme.txt
        bare with NT 0x18 where the kernel (mixed, which creates as win95)
        writes a long name and README.TXT: every reader shows 'readme.txt'
        both ways (vfat-check here finds nothing wrong), the twin comparison
        sees the bytes; with the kernel's rule, nothing. The whole-metadata
        comparison (vfz.check.metadata: twin-<region>-<field>) sees the root's
        slots shifted by the missing LFN slot too, and nothing with the
        kernel's rule."""
        ops = opscript.parse('create "/readme.txt" 1 1\nmkdir "/Long Directory Name"\n')
        for args, want in ((["--shortname", "winnt"], ["twin-lfn", "twin-nt"]), ([], [])):
            ck = checker.Checker(["vfat-check"], ["core-dual", "kernel"],
                                 cfg={"core-dual": {"extra_args": args}, "kernel": {"auto_build": False}})
            try:
                r = ck.check(ops, "fat16")
            finally:
                ck.close()
            kinds = sorted(d.fields["kind"] for d in r.divs.values())
            with self.subTest(args=args):
                # the listing's fields, then the whole metadata's: the root's
                # slots from readme.txt's on (an LFN slot where the core has
                # its short entry: 'slot'), nothing else (FATs, boot sector)
                self.assertEqual([k for k in kinds if not k.startswith("twin-root-")], want,
                                 [d.detail for d in r.divs.values()])
                meta = [k for k in kinds if k.startswith("twin-root-")]
                self.assertEqual(bool(meta), bool(want), meta)
                if want:
                    self.assertIn("twin-root-slot", meta)


if __name__ == "__main__":
    unittest.main(verbosity=2)
