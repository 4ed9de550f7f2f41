#!/usr/bin/python3
"""The two models agree: harnesses/model.c (fuzz_ops' C model, run by
build/model_driver) and the Python model (vfz.model), op by op.

The same `vfat gen --seed N --ops K` scripts go through both, in the
three write modes of the core's writers (dual; nodual with v1 and with v3
dummies), and every op's predicted result ("ok" or an errno name) must be
the same wherever both model the op. Both model the six ops with Linux
6.1's name rules, lookups, errno precedence and rename semantics. The
common ground ends, and the rest of that script is not compared,
  * at an op that names a path of PATH_MAX (4096) bytes or more: the
    Python model answers ENAMETOOLONG as the kernel's getname does, the C
    model and the core have no such limit;
  * after an op that leaves a hex alias (XX####~D, the tenth ~N of a
    base) in the Python model's dual-mode tree: its digits come from
    jiffies, the Python model keeps "an alias nobody can name", the C
    model learns the one the core wrote.
Every other seed's script is drawn with `vfat gen --meta`, so that the
ops of the second grammar (truncate, chattr, touch, label) are compared
too: each of the four must be compared at least once per mode.
Space is out of both models' scope here: the Python model runs with a
root that never fills (Model(root=None)) and model_driver's core volume
is a 64 MiB FAT32 one. Profiles other than the kernel's (mtools) have no
C counterpart.

The test fails on any disagreement, naming the script's seed, the op and
both answers, and also when less than 90% of the ops were compared (the
common ground must not shrink to nothing). Seeds are fixed; VFZ_SEED
shifts them and is printed.
"""
import collections
import json
import os
import subprocess
import sys
import tempfile
import unittest

SRC = os.environ.get("VFAT_SRC") or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("VFAT_BUILD") or os.path.join(SRC, "build")
sys.path.insert(0, SRC)

from vfz import model, opscript# noqa: E402

SCRIPTS = 300
OPS = 40
MODES = {  # model_driver (the core's apply options) -> the Python model's names mode
    "dual": (["--names", "dual"], "dual"),
    "nodual-v1": (["--names", "nodual", "--dummy", "v1"], "nodual"),
    "nodual-v3": (["--names", "nodual", "--dummy", "v3"], "nodual"),
}
SEED0 = int(os.environ.get("VFZ_SEED", "1"))
TMP = None
FILES = []


def setUpModule():
    global TMP
    for exe in ("vfat", "model_driver"):
        if not os.access(os.path.join(BUILD, exe), os.X_OK):
            raise RuntimeError(f"{BUILD}/{exe} is not built (cmake --build --preset default)")
    TMP = tempfile.mkdtemp(prefix="vfz-models-")
    print(f"test_models_agree: seeds {SEED0}..{SEED0 + SCRIPTS - 1}, {OPS} ops each", file=sys.stderr)
    for seed in range(SEED0, SEED0 + SCRIPTS):
        p = os.path.join(TMP, f"gen-{seed}.txt")
        meta = ["--meta"] if seed % 2 else []
        with open(p, "w") as f:
            subprocess.run([os.path.join(BUILD, "vfat"), "gen", "--seed", str(seed), "--ops", str(OPS)]
                           + meta, stdout=f, check=True)
        FILES.append((seed, p))


def tearDownModule():
    if TMP:
        subprocess.run(["rm", "-rf", TMP])


def c_results(opts, files):
    """model_driver's predictions: {script index: [result per op]}."""
    p = subprocess.run([os.path.join(BUILD, "model_driver")] + opts + files,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600)
    if p.returncode != 0:
        raise AssertionError(f"model_driver failed: {p.stderr.strip()}")
    out = collections.defaultdict(list)
    for line in p.stdout.splitlines():
        r = json.loads(line)
        out[r["script"]].append(r)
    return out


def has_hex_alias(node):
    return any(isinstance(k.alias, model.HexAlias) or has_hex_alias(k) for k in node.kids.values())


def long_path(op):
    return any(isinstance(a, str) and len(a.encode("utf-8")) >= model.PATH_MAX for a in op.args)


def compare(mode):
    """-> (ops compared, ops in all, scripts cut, disagreements, {kind: compared})."""
    opts, names = MODES[mode]
    cres = c_results(opts, [p for _, p in FILES])
    compared = total = cut = 0
    kinds = collections.Counter()
    bad = []
    for i, (seed, path) in enumerate(FILES):
        with open(path) as f:
            ops = opscript.parse(f.read())
        total += len(ops)
        if len(cres[i]) != len(ops):
            bad.append(f"seed {seed}: model_driver gave {len(cres[i])} results for {len(ops)} ops")
            continue
        m = model.Model("kernel", names, root=None)
        for op, c in zip(ops, cres[i]):
            if long_path(op):
                cut += 1
                break
            py = m.apply_one(op)
            compared += 1
            kinds[op.kind] += 1
            if py != c["result"]:
                bad.append(f"{mode} seed {seed} line {c['line']} {c['op']}: Python model {py}, "
                           f"C model {c['result']} (core {c['core']})")
                break   # the trees differ from here on
            if names == "dual" and has_hex_alias(m.root):
                cut += 1
                break
    return compared, total, cut, bad, kinds


class ModelsAgree(unittest.TestCase):
    def check_mode(self, mode):
        compared, total, cut, bad, kinds = compare(mode)
        print(f"{mode}: {compared} of {total} ops compared, {cut} scripts cut, "
              f"{len(bad)} disagreements; second grammar: "
              + ", ".join(f"{k} {kinds[k]}" for k in opscript.META_KINDS), file=sys.stderr)
        self.assertEqual(len(bad), 0, f"{len(bad)} disagreements, the first:\n" + "\n".join(bad[:5]))
        self.assertGreaterEqual(compared, 0.9 * total)
        for k in opscript.META_KINDS:
            self.assertGreater(kinds[k], 0, f"no {k} op was compared")

    def test_dual(self):
        self.check_mode("dual")

    def test_nodual_v1(self):
        self.check_mode("nodual-v1")

    def test_nodual_v3(self):
        self.check_mode("nodual-v3")


class Driver(unittest.TestCase):
    def test_bad_script_is_one_line_and_exit_2(self):
        p = os.path.join(TMP, "bad.txt")
        with open(p, "w") as f:
            f.write('mkdir "/a"\nfrobnicate "/b"\n')
        r = subprocess.run([os.path.join(BUILD, "model_driver"), p], capture_output=True, text=True)
        self.assertEqual(r.returncode, 2)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        self.assertEqual(r.stdout, "")

    def test_aliases_learnt_from_the_core(self):
        # dual mode: the C model knows LONGFI~1.TXT only from the core's listing
        p = os.path.join(TMP, "alias.txt")
        with open(p, "w") as f:
            f.write('create "/longfilename.txt" 1 1\ncreate "/LONGFI~1.TXT" 0 0\n'
                    'unlink "/longfi~1.txt"\nunlink "/longfilename.txt"\n')
        got = [r["result"] for r in c_results(["--names", "dual"], [p])[0]]
        self.assertEqual(got, ["ok", "EEXIST", "ok", "ENOENT"])
        got = [r["result"] for r in c_results(["--names", "nodual"], [p])[0]]
        self.assertEqual(got, ["ok", "ok", "ok", "ok"])   # no aliases: a bare LONGFI~1.TXT


if __name__ == "__main__":
    unittest.main(verbosity=2)
