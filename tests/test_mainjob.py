#!/usr/bin/python3
"""vfz.selftest.mainjob: `vfatfuzz selftest --main-job`'s argument errors and its report.

* Bad arguments (no --mutants, a non-positive budget or count, a file that
  is not in core/src, a revision that is not a commit) give one clear
  error line and exit 2, before anything is built.
* The report of rows in the format the mode appends: the score counts only
  confirmed kills over the non-equivalent mutants, the goal line says met
  or not met, and the focused verdicts of the same mutants stand beside.
"""
import os
import subprocess
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from vfz.selftest import mainjob  # noqa: E402


class ArgumentErrors(unittest.TestCase):
    def test_one_line_exit_2(self):
        cases = [([], "--main-job needs --mutants"),
                 (["--mutants", "0"], "--main-job needs --mutants"),
                 (["--mutants", "1", "--budget", "0"], "--budget must be positive"),
                 (["--mutants", "1", "--files", "nosuch.c"], "--files: no core/src/nosuch.c"),
                 (["--mutants", "1", "--git", "no-such-rev"], "--git: no commit no-such-rev")]
        for extra, want in cases:
            p = subprocess.run([os.path.join(ROOT, "scripts", "vfatfuzz"), "selftest", "--main-job", *extra],
                               capture_output=True, text=True, cwd=ROOT, timeout=60)
            self.assertEqual(p.returncode, 2, (extra, p.stderr))
            lines = p.stderr.strip().splitlines()
            self.assertEqual(len(lines), 1, (extra, p.stderr))
            self.assertIn(want, lines[0])


class Report(unittest.TestCase):
    def test_score_and_goal(self):
        def row(i, status, **kw):
            return dict(id=f"x.c:{i}:1:ror-0", file="x.c", old="<", new="<=", status=status, seed=7,
                        budget=120.0, git="abc", **kw)
        rows = [row(1, "killed", confirmed=["role=reader oracle=dosfsck"], new_sigs=["role=reader oracle=dosfsck"]),
                row(2, "survived", new_sigs=[]), row(3, "equivalent"), row(4, "unconfirmed", new_sigs=["role=fuzz"]),
                row(5, "nocompile")]
        focused = [row(1, "killed", seconds=3.0), row(2, "killed", seconds=9.0)]
        md = mainjob.render(rows, focused)
        self.assertIn("| 4 | 1 | 3 | 1 | 1 | 33 % |", md)
        self.assertIn("| focused hunt, same mutants | 2 | - | 2 | 2 | 0 | 100 % |", md)
        self.assertIn("**not met** on this sample of 3 non-equivalent mutants", md)
        self.assertNotIn("x.c:5:1", md)
        md = mainjob.render([rows[0], rows[2]])
        self.assertIn("**met**", md)


class RunFacts(unittest.TestCase):
    def test_found_after_and_scripts(self):
        """found_s is the earliest confirmed finding's found_after_s; scripts the run's summary."""
        import json
        import tempfile
        wd = tempfile.mkdtemp(prefix="vfz-mj-")
        try:
            for h, kind, t in (("aaa", "x", 70.5), ("bbb", "y", 12.0), ("ccc", "z", 3.0)):
                os.makedirs(os.path.join(wd, "findings", h))
                fields = dict(role="reader", oracle="dosfsck", verdict="complains", kind=kind, op="-", cls="-")
                with open(os.path.join(wd, "findings", h, "finding.json"), "w") as f:
                    json.dump({"fields": fields, "found_after_s": t}, f)
            sig = mainjob.signatures(wd)
            texts = [sig["aaa"], sig["bbb"]]          # ccc was not confirmed
            self.assertEqual(mainjob.found_after(wd, texts), 12.0)
            self.assertIsNone(mainjob.found_after(wd, []))
            self.assertIsNone(mainjob.run_scripts(wd))
            with open(os.path.join(wd, "summary.json"), "w") as f:
                json.dump({"scripts": 47}, f)
            self.assertEqual(mainjob.run_scripts(wd), 47)
        finally:
            import shutil
            shutil.rmtree(wd)


if __name__ == "__main__":
    unittest.main()
