#!/usr/bin/python3
"""The nightly workflow (.github/workflows/nightly-fuzz.yml) cannot run on
GitHub from here, so its own shell steps run locally, as written:

  - every `scripts/vfatfuzz ...` command line in it parses with the real
    command line (vfz.cli.main.build_parser), every `cmake --preset` /
    `--build --preset` it names exists in CMakePresets.json, the matrix has
    one job per shard (SHARDS), the shard job uploads only its workdir;
  - the shard job's "Campaign" step runs under bash for two shards of one
    seed with the variables GitHub sets (GITHUB_OUTPUT, GITHUB_STEP_SUMMARY,
    MINUTES, WORKDIR, SEED, SHARD, SHARDS), each in the layout the merge
    job downloads (shards/shard-I): the campaign (default oracles, kernel
    included) writes what the upload step saves, the outputs are well
    formed, the job summary has the table;
  - the merge job's "Merge shards" step merges them into campaign/ (the
    union of their findings), its "Report" step writes the page, the digest
    in the job summary and one night of history/ (the second night: nothing
    new, trends drawn), its "Fail on a new finding" step, fed those
    outputs, fails exactly when something new was found, a shard could not
    run or the merge failed; merged again over the kept workdir, nothing
    is new.

Needs python3-yaml (setup installs it), the builds (fuzz_ops for the corpus
merge), QEMU for the kernel oracle. About 3 minutes (two 1-minute shards)."""
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

from vfz.cli import main as cli  # noqa: E402

WORKFLOW = os.path.join(REPO, ".github", "workflows", "nightly-fuzz.yml")


def load_workflow():
    with open(WORKFLOW) as f:
        return yaml.safe_load(f)


def steps(wf, job=None):
    if job:
        return wf["jobs"][job]["steps"]
    return [s for j in wf["jobs"].values() for s in j.get("steps", [])]


def step(wf, name, job=None):
    for s in steps(wf, job):
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
        mo = re.fullmatch(r"steps\.(?:campaign|merge)\.outputs\.(\w+)", expr)
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
        env = {"MINUTES": "30", "WORKDIR": "campaign", "SEED": "1", "SHARD": "0", "SHARDS": "4",
               "GITHUB_STEP_SUMMARY": "summary.md",
               "REPORT_FLAGS": self.wf["jobs"]["merge"]["env"]["REPORT_FLAGS"]}
        for s in steps(self.wf):
            for ln in shell_lines(s.get("run", "")):
                for var, val in sorted(env.items(), key=lambda kv: -len(kv[0])):   # $SHARDS before $SHARD
                    ln = ln.replace(f'"${var}"', val).replace(f"${var}", val)
                ln = re.sub(r'"([^"\s$]*)"', r"\1", ln)      # "0/4" -> 0/4 (a word, once expanded)
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
        self.assertTrue({"setup", "selftest", "campaign", "merge", "report"} <= seen_cmds, seen_cmds)
        self.assertGreaterEqual(seen_presets, 1)
        # one matrix job per shard; the merge waits for them; CFLite batch beside
        jobs = self.wf["jobs"]
        self.assertEqual(jobs["campaign"]["strategy"]["matrix"]["shard"],
                         list(range(int(self.wf["env"]["SHARDS"]))))
        self.assertEqual(jobs["merge"]["needs"], "campaign")
        modes = [s.get("with", {}).get("mode") for j in jobs.values() for s in j.get("steps", [])
                 if "clusterfuzzlite/actions/run_fuzzers" in s.get("uses", "")]
        self.assertEqual(modes, ["batch"])
        up = step(self.wf, "Upload the shard's workdir", "campaign")["with"]["path"].split()
        self.assertTrue(all(p.startswith("campaign/") for p in up), up)

    def bash(self, script, cwd, env, timeout=900):
        # bash -e as GitHub runs `shell: bash` (bash --noprofile --norc -eo pipefail)
        return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
                              cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)

    def run_shard(self, ws, shard, shards, seed):
        s = step(self.wf, "Campaign", "campaign")
        self.assertEqual(s.get("shell"), "bash")
        gh_out = os.path.join(self.tmp, f"out-shard{shard}")
        gh_sum = os.path.join(self.tmp, f"summary-shard{shard}")
        wd = f"shards/shard-{shard}"      # where the merge job downloads this shard's artifact
        env = dict(os.environ, MINUTES="1", WORKDIR=wd, SEED=str(seed), SHARD=str(shard),
                   SHARDS=str(shards), GITHUB_OUTPUT=gh_out, GITHUB_STEP_SUMMARY=gh_sum)
        p = self.bash(substitute(s["run"], {}), ws, env)
        self.assertEqual(p.returncode, 0, p.stdout[-3000:] + p.stderr[-3000:])
        outputs = read_outputs(gh_out)
        self.assertIn(outputs.get("rc"), ("0", "1"), outputs)   # 2 = could not run
        with open(gh_sum) as f:
            summary = f.read()
        self.assertIn(f"shard {shard} of {shards}", summary)
        self.assertIn("campaign summary", summary)
        self.assertRegex(summary, r"(?m)^kernel\s", "the kernel oracle took part")
        # what the upload step saves (campaign/X is the shard's X)
        up = step(self.wf, "Upload the shard's workdir", "campaign")["with"]["path"].split()
        for path in up:
            rel = path[len("campaign/"):]
            if rel in ("findings", "pending", "crashes", "harvested.txt", "selftest.json"):
                continue      # made when there is something to keep (selftest: shard 0 only)
            self.assertTrue(os.path.exists(os.path.join(ws, wd, rel)), f"campaign did not write {path}")
        with open(os.path.join(ws, wd, "summary.json")) as f:
            self.assertEqual(json.load(f)["shard"], [shard, shards])
        return set(os.listdir(os.path.join(ws, wd, "findings"))) \
            if os.path.isdir(os.path.join(ws, wd, "findings")) else set()

    def run_merge(self, ws):
        s = step(self.wf, "Merge shards", "merge")
        gh_out = os.path.join(self.tmp, "out-merge")
        if os.path.exists(gh_out):
            os.unlink(gh_out)
        env = dict(os.environ, GITHUB_OUTPUT=gh_out,
                   GITHUB_STEP_SUMMARY=os.path.join(self.tmp, "summary-merge"))
        p = self.bash(substitute(s["run"], {}), ws, env, timeout=600)
        self.assertEqual(p.returncode, 0, p.stdout[-3000:] + p.stderr[-3000:])
        outputs = read_outputs(gh_out)
        self.assertRegex(outputs.get("new", ""), r"^\d+$")
        with open(os.path.join(ws, "new-findings.txt")) as f:
            self.assertEqual(len(f.read().split()), int(outputs["new"]))
        return outputs

    def run_report(self, ws, nights):
        """The merge job's "Report" step: the page of the merged workdir, its
        digest in the job summary, one more night in history/. The coverage
        flag is the workflow's where build-coverage/ is built already (else
        the step would build the preset here: minutes)."""
        s = step(self.wf, "Report", "merge")
        summ = os.path.join(self.tmp, "summary-report")
        cov = os.path.isfile(os.path.join(REPO, "build-coverage", "CMakeCache.txt"))
        env = dict(os.environ, GITHUB_STEP_SUMMARY=summ, GITHUB_RUN_NUMBER=str(nights),
                   REPORT_FLAGS=self.wf["jobs"]["merge"]["env"]["REPORT_FLAGS"] if cov else "")
        p = self.bash(substitute(s["run"], {}), ws, env, timeout=900)
        self.assertEqual(p.returncode, 0, p.stdout[-3000:] + p.stderr[-3000:])
        self.assertNotIn("report failed", p.stdout)
        self.assertEqual(len(os.listdir(os.path.join(ws, "history"))), nights)
        self.assertTrue(os.path.isfile(os.path.join(ws, "report", "index.html")))
        with open(summ) as f:
            digest = f.read()
        self.assertIn("## vfatfuzz report: merged campaign", digest)
        self.assertIn("**Core coverage**", digest)
        with open(os.path.join(ws, "report", "summary.json")) as f:
            return json.load(f)["report"]

    def run_fail_step(self, ws, outputs):
        s = step(self.wf, "Fail on a new finding or a broken campaign", "merge")
        return self.bash(substitute(s["run"], outputs), ws, dict(os.environ), timeout=60)

    def test_2_shards_merge_and_verdict(self):
        ws = os.path.join(self.tmp, "workspace")      # the checkout: scripts/ and the steps' files
        os.makedirs(ws)
        os.symlink(os.path.join(REPO, "scripts"), os.path.join(ws, "scripts"))
        f0 = self.run_shard(ws, 0, 2, seed=5)
        f1 = self.run_shard(ws, 1, 2, seed=5)
        out = self.run_merge(ws)
        self.assertEqual(out.get("rc"), "0", out)
        self.assertEqual(out.get("broken"), "0", out)
        merged = set(os.listdir(os.path.join(ws, "campaign", "findings"))) \
            if os.path.isdir(os.path.join(ws, "campaign", "findings")) else set()
        self.assertEqual(merged, f0 | f1)
        self.assertEqual(int(out["new"]), len(f0 | f1))      # nothing was known before
        rep = self.run_report(ws, 1)
        self.assertEqual(sorted(rep["findings"]), sorted(merged))
        fail = self.run_fail_step(ws, out)
        self.assertEqual(fail.returncode, 1 if merged else 0, fail.stdout + fail.stderr)
        if merged:
            self.assertIn("new findings:", fail.stdout)
        # a shard that could not run, or a failed merge, fails the job without findings
        self.assertEqual(self.run_fail_step(ws, {"rc": "0", "broken": "1", "new": "0"}).returncode, 1)
        self.assertEqual(self.run_fail_step(ws, {"rc": "2", "broken": "0", "new": "0"}).returncode, 1)
        # the next night: the same shards over the kept merged workdir: nothing new
        out2 = self.run_merge(ws)
        self.assertEqual(out2["new"], "0", out2)
        rep2 = self.run_report(ws, 2)          # the page, with last night in its history: nothing new
        self.assertEqual(rep2["new"], 0, rep2)
        self.assertTrue(os.path.isfile(os.path.join(ws, "report", "img", "trends.png")))
        self.assertEqual(self.run_fail_step(ws, out2).returncode, 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
