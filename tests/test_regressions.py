#!/usr/bin/python3
"""corpus/regressions/: every case replayed on every available oracle.

A case is a directory with ops.txt (op-script), expected.json
({"fs": "fat16", "verdicts": {writer: {"(writer)": v, reader: v}}}, v one
of ok|differs|complains|failed; optionally "same_names": [[w1, w2], ...],
writers whose images must hold the same name records: every directory's
short entries, NT bytes, attributes and LFN slots, byte for byte);
optionally "same_metadata": [[w1, w2], ...], writers whose images must
hold the same metadata, masked as the twin comparison masks it
(vfz.check.metadata: boot sector, FSInfo, FAT copies, every directory
slot) and README (one line: what it guards).
Each writer of expected.json applies ops.txt to a fresh image (vfz.campaign.loop
Checker, the same path as the campaign), every reader of the case that is
available here reads it, and each verdict must equal the expected one.
Oracles that are not available on this machine (no kernel guest build,
say) are reported as skipped, never silently passed: at least dosfsck and
mtools must be there. New cases: `vfatfuzz repro FINDING --save-case
corpus/regressions/NAME --note "..."` once the finding is fixed.
"""
import json
import os
import sys
import unittest

REPO = os.environ.get("VFAT_SRC") or os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, REPO)

from vfz import fatimg, opscript, oracles  # noqa: E402
from vfz.check import checker, metadata  # noqa: E402
from vfz.export import cases as repro_cases  # noqa: E402

CASES = os.path.join(REPO, "corpus", "regressions")
VERDICTS = {"ok", "differs", "complains", "failed"}


def name_records(path):
    """[(path of the directory, 11 name bytes, NT byte, attr, LFN slot bytes)]
    of every entry, directories walked depth first from the root: what a
    writer decided about names, without times and cluster numbers."""
    with open(path, "rb") as f:
        fat = fatimg.Fat(f.read())
    out, todo = [], [("/", None)]
    while todo:
        d, clus = todo.pop()
        for off, name, attr, first, _, lfn in fat.short_entries(clus):
            if name in (b".          ", b"..         "):
                continue
            out.append((d, name.hex(), fat.b[off + 12], attr,
                        b"".join(bytes(fat.b[o:o + 32]) for o in lfn).hex()))
            if attr & 0x10 and first:
                todo.append((d + name.hex() + "/", first))
    return out


def cases():
    """Every case; VFZ_CASES=a,b replays only those (a quick run of a few)."""
    if not os.path.isdir(CASES):
        return []
    names = sorted(n for n in os.listdir(CASES) if os.path.isdir(os.path.join(CASES, n)))
    only = [c for c in os.environ.get("VFZ_CASES", "").split(",") if c]
    return [n for n in names if n in only] if only else names


class RegressionTests(unittest.TestCase):
    checker = None

    @classmethod
    def setUpClass(cls):
        readers, writers = set(), set()
        for n in cases():
            with open(os.path.join(CASES, n, "expected.json")) as f:
                exp = json.load(f)
            for w, vs in exp["verdicts"].items():
                writers.add(w)
                readers |= {r for r in vs if r != "(writer)"}
        cls.notes = []
        cls.checker = checker.Checker(sorted(readers), sorted(writers), notes=cls.notes,
                                       timeout=120.0) if writers else None

    @classmethod
    def tearDownClass(cls):
        if cls.checker:
            cls.checker.close()

    def test_corpus_is_well_formed(self):
        self.assertGreaterEqual(len(cases()), 1 if os.environ.get("VFZ_CASES") else 5)
        for n in cases():
            d = os.path.join(CASES, n)
            for f in ("ops.txt", "expected.json", "README"):
                self.assertTrue(os.path.isfile(os.path.join(d, f)), f"{n}: missing {f}")
            with open(os.path.join(d, "README"), encoding="utf-8") as f:
                self.assertEqual(len(f.read().strip().splitlines()), 1, f"{n}: README is not one line")
            with open(os.path.join(d, "expected.json")) as f:
                exp = json.load(f)
            # a classic volume, or a geometry spec (vfz.geometry: a formatter, a free window)
            self.assertTrue(exp["fs"] in checker.FS_SPECS or checker.is_geometry(exp["fs"]), exp["fs"])
            for w, vs in exp["verdicts"].items():
                self.assertTrue(set(vs.values()) <= VERDICTS, f"{n}: {vs}")
            self.assertTrue(opscript.load(os.path.join(d, "ops.txt")), f"{n}: empty script")

    def test_fast_readers_present(self):
        have = set(self.checker.reader_names)
        self.assertTrue({"dosfsck", "mtools"} <= have, self.notes)

    def test_replay_every_case(self):
        for n in cases():
            with self.subTest(case=n):
                d = os.path.join(CASES, n)
                with open(os.path.join(d, "expected.json")) as f:
                    exp = json.load(f)
                ops = opscript.load(os.path.join(d, "ops.txt"))
                writers = [w for w in exp["verdicts"] if w in self.checker.writer_names]
                skipped = sorted(set(exp["verdicts"]) - set(writers))
                self.assertTrue(writers, f"{n}: no writer of the case available ({self.notes})")
                res = self.checker.check(ops, exp["fs"], writers=writers)
                bad, unread = repro_cases.compare(exp, res, writers)     # what `vfatfuzz repro CASE` holds too
                skipped += unread
                for w, o, want, have, detail in bad:
                    self.assertEqual(have, want, f"{n}: writer {w}, oracle {o}: {detail[:1500]}")
                for a, b in exp.get("same_names", []):
                    if a in writers and b in writers:
                        self.assertEqual(name_records(res.images[a]), name_records(res.images[b]),
                                         f"{n}: {a} and {b} wrote different name records")
                    else:
                        skipped.append(f"same_names {a}={b}")
                for a, b in exp.get("same_metadata", []):
                    if a in writers and b in writers:
                        got = metadata.compare(res.images[a], res.images[b],
                                               jiffies=not oracles.entry(b).seeded)
                        self.assertEqual([str(d) for d in got], [],
                                         f"{n}: {a} and {b} wrote different metadata")
                    else:
                        skipped.append(f"same_metadata {a}={b}")
                if skipped:
                    print(f"{n}: skipped (not available here): {', '.join(skipped)}", file=sys.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
