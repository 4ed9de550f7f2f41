#!/usr/bin/python3
"""The nightly workflow (.github/workflows/nightly-fuzz.yml) cannot run on
GitHub from here, so its own shell steps run locally, as written:

  - every `scripts/vfatfuzz ...` command line in it parses with the real
    command line (vfz.cli.build_parser), and every `cmake --preset` /
    `--build --preset` it names exists in CMakePresets.json;
  - its "Campaign" step runs under bash with the variables GitHub sets
    (GITHUB_OUTPUT, GITHUB_STEP_SUMMARY, MINUTES, WORKDIR): the campaign
    (default oracles, kernel included) writes what the cache steps save,
    the outputs rc/new are well formed, the job summary has the table;
  - its "Fail on a new finding" step, fed those outputs, fails exactly
    when the campaign found something new or could not run; a second
    campaign step on the same workdir reports only findings it had not
    seen before.

Needs python3-yaml (setup installs it), the builds, QEMU for the kernel
oracle. About 3 minutes (two 1-minute campaigns)."""
import os
import re
import shlex
import subprocess
import sys
import tempfile
import unittest
import json

REPO = os.environ.get("VFAT_SRC") or os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, REPO)

import yaml  # noqa: E402  (python3-yaml, installed by `vfatfuzz setup`)

from vfz import cli  # noqa: E402

WORKFLOW = os.path.join(REPO, ".github", "workflows", "nightly-fuzz.yml")


def load_workflow():
    with open(WORKFLOW) as f:
        return yaml.safe_load(f)


def steps(wf):
    (job,) = wf["jobs"].values()
    return job["steps"]


def step(wf, name):
    for s in steps(wf):
        if s.get("name") == name:
            return s
    raise AssertionError(f"workflow has no step named {name!r}")


def shell_lines(script):
    """Logical lines of a run: block (backslash continuations joined)."""
    return [ln.strip() for ln in script.replace("\\\n", " ").splitlines() if ln.strip()]


def substitute(script, outputs):
    """${{ ... }} expressions as GitHub would expand them here."""
    def repl(m):
        expr = m.group(1).strip()
        mo = re.fullmatch(r"steps\.campaign\.outputs\.(\w+)", expr)
        if mo:
            return outputs.get(mo.group(1), "")
        raise AssertionError(f"unexpected expression ${{{{ {expr} }}}} in a run step")
    return re.sub(r"\$\{\{(.*?)\}\}", repl, script)


def read_outputs(path):
    out = {}
    with open(path) as f:
        for ln in f:
            if "=" in ln:
                k, v = ln.rstrip("\n").split("=", 1)
                out[k] = v
    return out


class NightlyWorkflow(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.wf = load_workflow()
        cls.td = tempfile.TemporaryDirectory(prefix="vfz-test-nightly-")
        cls.tmp = cls.td.name

    @classmethod
    def tearDownClass(cls):
        cls.td.cleanup()

    def test_1_commands_parse_and_presets_exist(self):
        parser, mods = cli.build_parser()
        with open(os.path.join(REPO, "CMakePresets.json")) as f:
            presets = json.load(f)
        configure = {p["name"] for p in presets["configurePresets"]}
        build = {p["name"] for p in presets.get("buildPresets", [])}
        seen_cmds, seen_presets = set(), 0
        env = {"MINUTES": "30", "WORKDIR": "campaign"}
        for s in steps(self.wf):
            for ln in shell_lines(s.get("run", "")):
                for var, val in env.items():
                    ln = ln.replace(f'"${var}"', val).replace(f"${var}", val)
                for m in re.finditer(r"cmake (--build )?--preset (\S+)", ln):
                    seen_presets += 1
                    self.assertIn(m.group(2), build if m.group(1) else configure, ln)
                # commands run, and commands shown to users (the repro hint)
                m = re.search(r"scripts/vfatfuzz\s+([^\"'|]*)", ln)
                if not m:
                    continue
                argv = shlex.split(m.group(1).split("2>&1")[0])
                self.assertIn(argv[0], mods, f"unknown command in workflow: {ln}")
                try:
                    parser.parse_args(argv)
                except SystemExit as e:   # _Parser.error: one line on stderr, exit 2
                    self.fail(f"workflow command line does not parse ({e.code}): {ln}")
                seen_cmds.add(argv[0])
        self.assertTrue({"setup", "selftest", "campaign"} <= seen_cmds, seen_cmds)
        self.assertGreaterEqual(seen_presets, 2)

    def run_campaign_step(self, workdir, tag):
        s = step(self.wf, "Campaign")
        self.assertEqual(s.get("shell"), "bash")
        gh_out = os.path.join(self.tmp, f"out-{tag}")
        gh_sum = os.path.join(self.tmp, f"summary-{tag}")
        env = dict(os.environ, MINUTES="1", WORKDIR=workdir, GITHUB_OUTPUT=gh_out,
                   GITHUB_STEP_SUMMARY=gh_sum)
        # bash -e as GitHub runs `shell: bash` (bash --noprofile --norc -eo pipefail)
        p = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c",
                            substitute(s["run"], {})],
                           cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
        self.assertEqual(p.returncode, 0, p.stdout[-3000:] + p.stderr[-3000:])
        outputs = read_outputs(gh_out)
        self.assertIn(outputs.get("rc"), ("0", "1"), outputs)   # 2 = could not run
        self.assertRegex(outputs.get("new", ""), r"^\d+$")
        with open(gh_sum) as f:
            summary = f.read()
        self.assertIn("campaign summary", summary)
        self.assertRegex(summary, r"(?m)^kernel\s", "the kernel oracle took part")
        with open(os.path.join(REPO, "new-findings.txt")) as f:
            new = f.read().split()
        self.assertEqual(len(new), int(outputs["new"]))
        return outputs, new

    def run_fail_step(self, outputs):
        s = step(self.wf, "Fail on a new finding or a broken campaign")
        return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c",
                               substitute(s["run"], outputs)],
                              cwd=REPO, capture_output=True, text=True, timeout=60)

    def test_2_campaign_step_outputs_cache_and_verdict(self):
        wd = os.path.join(self.tmp, "campaign")
        scratch = ["known-before.txt", "known-after.txt", "new-findings.txt", "campaign.log"]
        before = {f for f in scratch if os.path.exists(os.path.join(REPO, f))}
        try:
            out1, new1 = self.run_campaign_step(wd, "1")
            # what the cache steps save (paths relative to the default WORKDIR)
            saved = step(self.wf, "Save corpus, state and known findings")["with"]["path"].split()
            for p in saved:
                self.assertTrue(p.startswith("campaign/"), p)
                rel = p[len("campaign/"):]
                if rel == "findings" and int(out1["new"]) == 0:
                    continue      # created with the first finding
                if rel == "harvested.txt":
                    continue      # created when the first fuzz_ops entry has been checked
                self.assertTrue(os.path.exists(os.path.join(wd, rel)), f"campaign did not write {p}")
            self.assertTrue(os.listdir(os.path.join(wd, "corpus")), "empty corpus")
            fail = self.run_fail_step(out1)
            self.assertEqual(fail.returncode, 1 if new1 else 0, fail.stdout + fail.stderr)
            if new1:
                self.assertIn("new findings:", fail.stdout)
            # a broken campaign fails the job even without findings
            broken = self.run_fail_step({"rc": "2", "new": "0"})
            self.assertEqual(broken.returncode, 1)
            # resumed on the same workdir: only findings not known before count
            out2, new2 = self.run_campaign_step(wd, "2")
            self.assertFalse(set(new1) & set(new2), "a known finding was reported as new again")
            self.assertEqual(self.run_fail_step(out2).returncode, 1 if new2 else 0)
        finally:
            for f in scratch:
                if f not in before and os.path.exists(os.path.join(REPO, f)):
                    os.unlink(os.path.join(REPO, f))


if __name__ == "__main__":
    unittest.main(verbosity=2)
