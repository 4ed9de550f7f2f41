#!/usr/bin/python3
"""vfz.selftest.mutants: the C mutator, and `vfatfuzz selftest --mutants 3`.

* The operators on a small C text: each operator fires where it should and
  nowhere in comments, literals, preprocessor lines or VFAT_FAULT code;
  pointer declarators and unary minus are not taken for binary operators;
  the order is a function of the seed.
* The hunt's parts: a writer the checker does not read (a twin, unread)
  still writes and is held to the model; a twin divergence is checked
  again with its twin.
* End to end: three mutants of fatent.c and namei.c are built with the
  asan preset (clang -O0: a fresh build of the vfat CLI takes seconds, the
  default preset's -O2 minutes at our load), hunted for a few seconds on
  the fast readers and the mutant's own checker and `vfat ls`, and
  recorded (one JSON line each); then the mutant that deletes
  remove_entry's fat_free_chain call (what the planted fault CLUSTER_LEAK
  does by hand) is hunted again with --rerun and the steered tour first,
  and must be killed by a reader that sees lost clusters, with a minimised
  script (a checker's lost clusters, or the ENOSPC of the tour's near-full
  part). Own work dirs (--mutants-tag MUTANT_TEST), so a full run in the
  background is not disturbed; build-fault-MUTANT_TEST-asan/ is kept, so a
  later run recompiles only what changed.
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

REPO = os.environ.get("VFAT_SRC") or os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, REPO)

from vfz.selftest import mutants# noqa: E402

C_TEXT = """\
#include "fat.h"
#define LIMIT (a < b)
/* if (x < y) not code */
static int f(uint8_t *p, int n, int m)
{
	int k = -1;

	if (n < m)
		k = n + 1;
	while (n != 0)
		n--;
	g(n, m);
	printf("a < b %d", n);
#ifdef VFAT_FAULT_SOMETHING
	n = n * 2;
#else
	n = n - 2;
#endif
#ifndef VFAT_FAULT_OTHER
	h(p, 0x1F);
#endif
	return *p + k;
}
"""


def by_op(sites):
    out = {}
    for m in sites:
        out.setdefault(m.op, []).append(m)
    return out


class Operators(unittest.TestCase):
    def setUp(self):
        self.sites = mutants.sites("t.c", C_TEXT)
        self.lines = C_TEXT.split("\n")

    def test_relational_and_arithmetic(self):
        ops = by_op(self.sites)
        self.assertIn(("<", "<=", 8), [(m.old, m.new, m.line) for m in ops["ror"]])
        self.assertIn(("!=", "==", 10), [(m.old, m.new, m.line) for m in ops["ror"]])
        aor = [(m.old, m.new, m.line) for m in ops["aor"]]
        self.assertIn(("+", "-", 9), aor)
        self.assertIn(("--", "++", 11), aor)
        self.assertIn(("-", "+", 17), aor)     # the live #else branch
        self.assertIn(("+", "-", 22), aor)     # *p + k: the binary plus only
        # unary minus (line 6), the declarator uint8_t *p (line 4) and the
        # dereference *p (line 22) are not binary operators
        self.assertFalse([m for m in ops["aor"] if m.line in (4, 6)])
        self.assertFalse([m for m in ops["aor"] if m.old == "*" and m.line == 22])

    def test_constants_conditions_deletions_swaps(self):
        ops = by_op(self.sites)
        cst = {(m.old, m.new, m.line) for m in ops["cst"]}
        self.assertTrue({("1", "2", 6), ("1", "0", 6), ("0x1F", "0x20", 20), ("0x1F", "0x1E", 20)} <= cst)
        neg = {m.line: m for m in ops["neg"]}
        self.assertEqual(sorted(neg), [8, 10])
        mutated = neg[8].apply(C_TEXT).split("\n")[7]
        self.assertEqual(mutated.strip(), "if (!(n < m))")
        dels = {m.line for m in ops["del"]}
        self.assertTrue({9, 11, 12, 13, 17, 20} <= dels, dels)
        self.assertNotIn(22, dels)             # the function's last return stays
        self.assertNotIn(6, dels)              # a declaration is not a statement to delete
        swp = [m for m in ops["swp"] if m.line == 12]
        self.assertEqual(len(swp), 1)
        self.assertEqual(swp[0].apply(C_TEXT).split("\n")[11].strip(), "g(m, n);")

    def test_skipped_text(self):
        lines = {m.line for m in self.sites}
        # the #define, the comment, the fault branch (line 15) and the string
        for no in (1, 2, 3, 14, 15, 16, 18, 19, 21):
            self.assertNotIn(no, lines, no)
        for m in self.sites:
            if m.line == 13:                   # the '<' inside the string literal
                self.assertIn(m.op, ("swp", "del"))

    def test_apply_and_diff(self):
        for m in self.sites:
            new = m.apply(C_TEXT)
            self.assertNotEqual(new, C_TEXT)
            self.assertEqual(len(new.split("\n")), len(self.lines))
            d = m.diff(C_TEXT).splitlines()
            self.assertEqual(d[0], f"t.c:{m.line}")
            self.assertTrue(d[1].startswith("- ") and d[2].startswith("+ "))

    def test_seeded_order(self):
        texts = {"t.c": C_TEXT, "u.c": C_TEXT.replace("g(n, m)", "q(m, n)")}
        a = [m.id for m in mutants.select(["t.c", "u.c"], 5, texts)]
        b = [m.id for m in mutants.select(["t.c", "u.c"], 5, texts)]
        c = [m.id for m in mutants.select(["t.c", "u.c"], 6, texts)]
        self.assertEqual(a, b)
        self.assertNotEqual(a, c)
        self.assertEqual(sorted(a), sorted(c))
        self.assertEqual(len(set(a)), len(a))
        self.assertEqual([i.split(":")[0] for i in a[:4]], ["t.c", "u.c", "t.c", "u.c"])


VFAT = os.path.join(os.environ.get("VFAT_BUILD") or os.path.join(REPO, "build"), "vfat")


@unittest.skipUnless(os.access(VFAT, os.X_OK), "build/vfat missing")
class HuntParts(unittest.TestCase):
    def test_unread_writer(self):
        from vfz import opscript
        from vfz.check import checker
        ck = checker.Checker(["dosfsck"], ["core-dual", "core-v1"], vfat=VFAT, unread=["core-v1"])
        try:
            ops = opscript.parse('mkdir "/a long dir"\ncreate "/a long dir/x.txt" 10 1\n')
            res = ck.check(ops, "fat12")
            self.assertEqual(ck.images_checked["dosfsck"], 1)          # core-dual's image only
            self.assertEqual(ck.applies["core-v1"], 1)
            self.assertIn("core-v1", res.images)
            self.assertEqual(res.verdicts["core-v1"], {})
            self.assertEqual(res.verdicts["core-dual"], {"dosfsck": "ok"})
        finally:
            ck.close()

    def test_twin_divergence_writers(self):
        from vfz.check import checker
        from vfz.selftest import hunt as cmd_selftest
        ck = checker.Checker(["dosfsck"], ["core-dual", "core-v1"], vfat=VFAT)
        try:
            base = {"role": "writer", "oracle": "core", "op": "create", "cls": "long"}
            bytes_d = checker.Divergence(dict(base, verdict="bytes", kind="twin-short"), "core-dual", "")
            result_d = checker.Divergence(dict(base, verdict="result", kind="ok->EIO"), "core-dual", "")
            # the twin (kernel) is not among this checker's writers: the writer alone
            self.assertEqual(cmd_selftest.div_writers(ck, bytes_d), ["core-dual"])
            ck.writers.append(("kernel", None))             # as if the kernel twin were loaded
            self.assertEqual(cmd_selftest.div_writers(ck, bytes_d), ["core-dual", "kernel"])
            self.assertEqual(cmd_selftest.div_writers(ck, result_d), ["core-dual"])
            ck.writers.pop()
        finally:
            ck.close()


def vfatfuzz(*argv, timeout=900):
    return subprocess.run([sys.executable, os.path.join(REPO, "scripts", "vfatfuzz"), "selftest", *argv],
                          capture_output=True, text=True, timeout=timeout)


@unittest.skipUnless(os.access(os.path.join(os.environ.get("VFAT_BUILD") or os.path.join(REPO, "build"),
                                            "vfat"), os.X_OK), "build/vfat missing")
class EndToEnd(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="vfz-test-mutants-")
        cls.out = os.path.join(cls.tmp.name, "r.jsonl")
        cls.common = ["--seed", "7", "--files", "fatent.c,namei.c", "--mutants-tag", "MUTANT_TEST",
                      "--mutants-out", cls.out, "--min-budget", "5", "--sanitize",
                      "--oracles", "dosfsck,vfat-check,vfat-check-own,core"]
        cls.p = vfatfuzz("--mutants", "3", "--budget", "4", *cls.common)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def rows(self):
        with open(self.out) as f:
            return [json.loads(ln) for ln in f if ln.strip()]

    def test_1_three_mutants(self):
        self.assertEqual(self.p.returncode, 0, self.p.stderr[-2000:])
        self.assertIn("seed 7", self.p.stdout)
        rows = self.rows()
        built = [r for r in rows if r["status"] != "nocompile"]
        self.assertEqual(len(built), 3, rows)
        for r in rows:
            self.assertIn(r["file"], ("fatent.c", "namei.c"))
            self.assertIn(r["status"], ("killed", "survived", "equivalent", "unconfirmed", "nocompile"))
            # the tree the run drew from (HEAD may have moved on since: others commit)
            src = subprocess.run(["git", "-C", REPO, "show", f"{r['git']}:core/src/{r['file']}"],
                                 capture_output=True, text=True, check=True).stdout.split("\n")[r["line"] - 1]
            self.assertEqual(src[r["col"]:r["col"] + len(r["old"])], r["old"])
            if r["status"] == "killed":
                self.assertGreaterEqual(r["ops"], 1)
                self.assertTrue(r["oracle"] and r["signature"])
                self.assertLessEqual(r["seconds"], 4 + 30)
        self.assertIn("| all | 3 |", self.p.stdout)

    def test_2_known_kill(self):
        texts = {f: mutants.read_src(f) for f in ("fatent.c", "namei.c")}
        start = texts["namei.c"].split("\n").index("static int remove_entry(vfat_vol *v, struct walk *w)")
        leak = [m for m in mutants.sites("namei.c", texts["namei.c"])
                if m.op == "del" and m.old == "fat_free_chain(v, c);" and m.line > start][:1]
        self.assertEqual(len(leak), 1, "remove_entry's fat_free_chain(v, c) call not found")
        rerun = os.path.join(self.tmp.name, "rerun.jsonl")
        with open(rerun, "w") as f:
            f.write(json.dumps(dict(leak[0].to_dict(), status="survived")) + "\n")
        p = vfatfuzz("--mutants", "1", "--budget", "60", "--rerun", rerun, "--tour", *self.common)
        self.assertEqual(p.returncode, 0, p.stderr[-2000:])
        r = [x for x in self.rows() if x["id"] == leak[0].id][-1]
        self.assertEqual(r["status"], "killed", r)
        # lost clusters: a checker sees them, or the tour's near-full part
        # runs out of space where the model has room (ENOSPC)
        self.assertIn(r["oracle"], ("dosfsck", "vfat-check", "vfat-check-own", "core"))
        if r["oracle"] == "core":
            self.assertIn("->ENOSPC", r["signature"])
        self.assertTrue(r["sanitize"] and r["tour"])
        self.assertLessEqual(r["ops"], r["ops_orig"])
        self.assertIn("fat_free_chain", r["diff"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
