#!/usr/bin/python3
"""The campaign's pipeline (issue 15) against the real tools, cheaply: the
mtools writer (whose known failures are findings within seconds), core-v1,
the dosfsck and mtools readers, FAT12; no kernel VM.

  1. kill -9 at seeded moments in every stage (lanes checking, the
     minimiser working, the fuzzer running), then a resumed run: every
     divergence any run announced is a finding at the end, none is filed
     twice, no partial directory is left, the corpus entries present at
     each kill are still there, and no fuzz_ops outlives its campaign;
  2. a state.json holding `{bad` is one error line and exit 2; --fresh
     starts afresh and keeps the findings;
  3. two shards of one seed check disjoint scripts, and `vfatfuzz merge`
     of the two gives exactly the union of their findings (one per
     signature), their pending divergences, and the corpora merged by
     libFuzzer (-merge=1: a subset of their union, nothing invented);
  4. the summary reports the stages, the oracles' own time and the bound.
About 3 minutes at load 2."""
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
import unittest

REPO = os.environ.get("VFAT_SRC") or os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, REPO)

from vfz import findings
from vfz.campaign import shards# noqa: E402

VFATFUZZ = os.path.join(REPO, "scripts", "vfatfuzz")
VFAT = os.path.join(REPO, "build", "vfat")
FUZZ = os.path.join(REPO, "build-fuzz", "fuzz", "fuzz_ops")
CHEAP = ["--writers", "mtools,core-v1", "--oracles", "dosfsck,mtools", "--fs", "fat12",
         "--min-budget", "3"]
SEED = int(os.environ.get("VFZ_TEST_SEED", "7"))


def vfz(*args, timeout=300):
    return subprocess.run(["/usr/bin/python3", VFATFUZZ, *args], capture_output=True, text=True,
                          timeout=timeout)


def announced(text):
    return set(re.findall(r"new divergence ([0-9a-f]{12})", text))


def finding_names(wd):
    d = os.path.join(wd, "findings")
    return sorted(os.listdir(d)) if os.path.isdir(d) else []


def corpus_names(wd):
    d = os.path.join(wd, "corpus")
    return {n for n in os.listdir(d) if not n.startswith(".")} if os.path.isdir(d) else set()


def fuzzers_of(workdir, fuzzing=False):
    """Processes running fuzz_ops on this workdir's files; fuzzing: only
    those fuzzing on its corpus, the libFuzzer workers
    (-fork=J) and the ASan replay of the corpus (-rss_limit_mb=), both
    niced. A crash file's judging (fuzz_ops on one file of crashes/, or
    -minimize_crash) is the minimiser's check work, at the campaign's own
    niceness like the lanes: it once matched here and failed the test."""
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/cmdline", "rb") as f:
                    argv = f.read().split(b"\0")
            except OSError:
                continue
            if argv and argv[0].endswith(b"fuzz_ops") and \
                    any(a.startswith(workdir.encode()) for a in argv[1:]) and (not fuzzing or \
                    any(a.startswith((b"-fork=", b"-rss_limit_mb=")) for a in argv[1:])):
                out.append(int(d))
    return out


def niceness(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[16])
    except (OSError, IndexError, ValueError):
        return None


@unittest.skipUnless(os.access(VFAT, os.X_OK), "build/vfat not built")
class PipelineTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.td = tempfile.TemporaryDirectory(prefix="vfz-test-pipeline-")
        cls.tmp = cls.td.name

    @classmethod
    def tearDownClass(cls):
        cls.td.cleanup()

    def assert_well_formed(self, wd):
        for n in finding_names(wd):
            self.assertFalse(n.startswith(".tmp-"), f"partial finding {n} left in {wd}")
            self.assertEqual(findings.well_formed(os.path.join(wd, "findings", n)), "", n)

    @unittest.skipUnless(os.access(FUZZ, os.X_OK), "build-fuzz/fuzz/fuzz_ops not built")
    def test_1_kill9_anywhere_loses_nothing(self):
        wd = os.path.join(self.tmp, "kill9")
        rng = random.Random(SEED)
        print(f"\nkill -9 moments drawn with seed {SEED}", file=sys.stderr)
        said = set()
        niced = 0
        # round 0: right after the first divergence is journalled (the
        # minimiser starts on it, the lanes go on); then at seeded moments
        for rnd in range(3):
            log = os.path.join(self.tmp, f"kill9-{rnd}.log")
            # round 0 waits for the first divergence itself, a barrier: seed
            # SEED's scripts come in order, so it always comes (the 5th
            # script, 10.6 s into a run at load 9), however slowly; its
            # budget is only a bound (it is killed there). It was 1 minute
            # with a 50-s wait, a 4.7x margin a loaded machine can eat, and
            # no divergence before the kills fails the test.
            with open(log, "w") as lf:
                p = subprocess.Popen(["/usr/bin/python3", VFATFUZZ, "campaign", "--no-setup",
                                      "--minutes", "5" if rnd == 0 else "1", "--seed", str(SEED),
                                      "--jobs", "2", "--workdir", wd, *CHEAP],
                                     stdout=lf, stderr=subprocess.STDOUT, start_new_session=True)
            t0 = time.monotonic()
            at = None if rnd == 0 else rng.uniform(3.0, 15.0)
            while p.poll() is None and time.monotonic() - t0 < 300:
                with open(log) as f:
                    text = f.read()
                if (at is None and "minimising beside the main loop" in text) or \
                        (at is not None and time.monotonic() - t0 >= at):
                    break
                time.sleep(0.05)
            corpus_at_kill = corpus_names(wd)
            want = min(19, os.nice(0) + 10)  # the campaign's own niceness + 10
            for pid in fuzzers_of(wd, fuzzing=True):      # the check lanes come first
                self.assertEqual(niceness(pid), want, f"fuzz_ops pid {pid} not at nice {want}")
                niced += 1
            os.kill(p.pid, signal.SIGKILL)
            p.wait()
            with open(log) as f:
                now = announced(f.read())
            said |= now
            # what the killed run announced is on disk: filed or journalled
            pend = os.path.join(wd, "pending")
            on_disk = set(finding_names(wd)) | (
                {n[:-5] for n in os.listdir(pend) if n.endswith(".json")} if os.path.isdir(pend) else set())
            self.assertLessEqual(now, on_disk, f"round {rnd}: announced, then lost by kill -9")
            # fuzz_ops dies with its campaign (PR_SET_PDEATHSIG), its fork-mode
            # job with it; give a loaded machine a few seconds to reap them
            t1 = time.monotonic()
            while fuzzers_of(wd) and time.monotonic() - t1 < 10:
                time.sleep(0.2)
            left = fuzzers_of(wd)
            try:
                os.killpg(p.pid, signal.SIGKILL)  # the VM-less helpers of this run, if any
            except ProcessLookupError:
                pass
            self.assertEqual(left, [], "fuzz_ops outlived its killed campaign")
            self.assertLessEqual(corpus_at_kill, corpus_names(wd))
        self.assertTrue(said, "no divergence was announced before the kills")
        self.assertGreater(niced, 0, "no fuzzing process was seen to check its niceness")
        # resume to the end of a normal run
        before = set(finding_names(wd))
        corpus_before = corpus_names(wd)
        r = vfz("campaign", "--no-setup", "--minutes", "0.5", "--seed", str(SEED), "--jobs", "2",
                "--workdir", wd, *CHEAP, timeout=240)
        self.assertIn(r.returncode, (0, 1), r.stdout[-2000:] + r.stderr[-2000:])
        said |= announced(r.stdout)
        final = set(finding_names(wd))
        self.assertLessEqual(said, final, f"announced but not filed: {said - final}")
        new = set(re.findall(r"NEW ([0-9a-f]{12})", r.stdout))
        self.assertFalse(new & before, f"filed again: {new & before}")
        self.assertEqual(len(re.findall(r"^finding ([0-9a-f]{12})", r.stdout, re.M)),
                         len(set(re.findall(r"^finding ([0-9a-f]{12})", r.stdout, re.M))))
        self.assert_well_formed(wd)
        pend = os.path.join(wd, "pending")
        self.assertEqual([n for n in os.listdir(pend) if n.endswith(".json")] if os.path.isdir(pend) else [],
                         [], "pending divergences left after a normal end")
        self.assertLessEqual(corpus_before, corpus_names(wd))
        with open(os.path.join(wd, "summary.json")) as f:
            pl = json.load(f)["pipeline"]
        self.assertGreater(pl["fuzzer_cpu_seconds"], 0.0, "the fuzzer's CPU was not counted")
        self.assertLess(pl["fuzzer_cpu_seconds"], pl["used_cpu_seconds"])
        self.assertIn("the fuzzer took", r.stdout)

    def test_2_corrupt_state_is_an_error(self):
        wd = os.path.join(self.tmp, "corrupt")
        os.makedirs(os.path.join(wd, "findings"))
        with open(os.path.join(wd, "state.json"), "w") as f:
            f.write("{bad")
        r = vfz("campaign", "--no-setup", "--minutes", "0.05", "--no-fuzzer", "--workdir", wd,
                "--jobs", "1", *CHEAP)
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        self.assertIn("state.json", r.stderr)
        with open(os.path.join(wd, "state.json")) as f:
            self.assertEqual(f.read(), "{bad")           # not replaced
        r = vfz("campaign", "--no-setup", "--minutes", "0.05", "--no-fuzzer", "--workdir", wd,
                "--jobs", "1", "--fresh", "--seed", "3", *CHEAP)
        self.assertIn(r.returncode, (0, 1), r.stderr)
        with open(os.path.join(wd, "state.json")) as f:
            self.assertEqual(json.load(f)["last_seed"], 3)
        # an unreadable pending journal entry is an error too, never dropped
        pend = os.path.join(wd, "pending")
        os.makedirs(pend, exist_ok=True)
        with open(os.path.join(pend, "0123456789ab.json"), "w") as f:
            f.write("{bad")
        r = vfz("campaign", "--no-setup", "--minutes", "0.05", "--no-fuzzer", "--workdir", wd,
                "--jobs", "1", *CHEAP)
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn("pending", r.stderr)
        self.assertTrue(os.path.exists(os.path.join(pend, "0123456789ab.json")))

    def test_3_shards_merge_to_their_union(self):
        a, b, out = (os.path.join(self.tmp, n) for n in ("shard0", "shard1", "merged"))
        for i, wd in enumerate((a, b)):
            r = vfz("campaign", "--no-setup", "--minutes", "0.4", "--seed", str(SEED), "--shard",
                    f"{i}/2", "--no-fuzzer", "--jobs", "2", "--workdir", wd, *CHEAP, timeout=240)
            self.assertIn(r.returncode, (0, 1), r.stderr[-2000:])
            with open(os.path.join(wd, "summary.json")) as f:
                self.assertEqual(json.load(f)["shard"], [i, 2])
        # a shard's workdir is its own
        r = vfz("campaign", "--no-setup", "--minutes", "0.05", "--seed", str(SEED), "--shard", "1/2",
                "--no-fuzzer", "--jobs", "1", "--workdir", a, *CHEAP)
        self.assertEqual(r.returncode, 2, r.stdout[-1000:])
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        self.assertIn("shard 0/2", r.stderr)
        # disjoint: shard I checks iterations I, I+N, ... of the seed's sequence
        its = [{shards.shard_iteration(k, (i, 2)) for k in range(50)} for i in (0, 1)]
        self.assertFalse(its[0] & its[1])
        self.assertEqual(its[0] | its[1], set(range(100)))
        fa, fb = set(finding_names(a)), set(finding_names(b))
        self.assertTrue(fa | fb, "the shards found nothing to merge")
        # a pending divergence of one shard (as a kill leaves it) is kept
        os.makedirs(os.path.join(b, "pending"), exist_ok=True)
        with open(os.path.join(b, "pending", "fedcba987654.json"), "w") as f:
            json.dump({"signature": "fedcba987654"}, f)
        # corpora: two halves of the committed seeds
        seeds = sorted(os.listdir(os.path.join(REPO, "corpus", "fuzz_ops")))
        have_fuzz = os.access(FUZZ, os.X_OK) and len(seeds) >= 2
        if have_fuzz:
            for wd, part in ((a, seeds[::2]), (b, seeds[1::2])):
                os.makedirs(os.path.join(wd, "corpus"), exist_ok=True)
                for n in part:
                    with open(os.path.join(REPO, "corpus", "fuzz_ops", n), "rb") as f, \
                            open(os.path.join(wd, "corpus", n), "wb") as g:
                        g.write(f.read())
        r = vfz("merge", a, b, "--out", out, "--json", *([] if have_fuzz else ["--no-corpus"]))
        self.assertEqual(r.returncode, 0, r.stderr)
        s = json.loads(r.stdout)
        self.assertEqual(set(finding_names(out)), fa | fb)
        self.assertEqual(s["total_findings"], len(fa | fb))
        self.assertEqual({k: len(v) for k, v in s["findings"].items()},
                         {k: (k in fa) + (k in fb) for k in fa | fb})
        self.assert_well_formed(out)
        self.assertEqual(s["pending"], ["fedcba987654"])
        self.assertTrue(os.path.exists(os.path.join(out, "pending", "fedcba987654.json")))
        if have_fuzz:
            def blobs(d):
                out_ = set()
                for n in os.listdir(d):
                    with open(os.path.join(d, n), "rb") as f:
                        out_.add(f.read())
                return out_
            union = blobs(os.path.join(a, "corpus")) | blobs(os.path.join(b, "corpus"))
            merged = blobs(os.path.join(out, "corpus"))
            self.assertTrue(merged)
            self.assertLessEqual(merged, union)
            self.assertEqual(s["corpus"]["kept"], len(os.listdir(os.path.join(out, "corpus"))))
        # merging again changes nothing; bad input is one line, exit 2
        r2 = vfz("merge", a, b, "--out", out, "--no-corpus", "--json")
        self.assertEqual(set(finding_names(out)), fa | fb, r2.stderr)
        r3 = vfz("merge", os.path.join(self.tmp, "nosuch"), "--out", out)
        self.assertEqual(r3.returncode, 2)
        self.assertEqual(len(r3.stderr.strip().splitlines()), 1, r3.stderr)

    def test_4_summary_has_stages_and_bound(self):
        wd = os.path.join(self.tmp, "summary")
        r = vfz("campaign", "--no-setup", "--minutes", "0.15", "--seed", "11", "--no-fuzzer",
                "--jobs", "2", "--workdir", wd, *CHEAP)
        self.assertIn(r.returncode, (0, 1), r.stderr[-2000:])
        with open(os.path.join(wd, "summary.json")) as f:
            s = json.load(f)
        pl = s["pipeline"]
        self.assertEqual(pl["lanes"], 2)
        for st in ("generate", "model", "compare", "write mtools", "write core-v1",
                   "read dosfsck", "read mtools"):
            self.assertIn(st, pl["stages"])
            self.assertGreater(pl["stages"][st]["calls"], 0)
        for o in ("write mtools", "read dosfsck", "read mtools"):
            self.assertGreater(pl["oracles"][o]["cpu_seconds"], 0.0)
            self.assertGreaterEqual(pl["oracles"][o]["own_seconds"], 0.0)
        self.assertEqual(pl["stages"]["read mtools"]["calls"], s["readers"]["mtools"])
        for rd in ("dosfsck", "mtools"):
            self.assertGreater(pl["bound"][rd], 0)
            self.assertGreater(pl["pace"][rd], 0)
        self.assertIn("pace dosfsck:", r.stdout)
        self.assertIn("minimiser", r.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)
