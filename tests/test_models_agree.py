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
Capacity is compared on small volumes that the scripts fill (SmallVolumes):
a FAT12 of 40 clusters of 512 B, one of 40 clusters of 4 KiB (both with a
32-slot root, which the scripts fill too), and fuzz_ops' FAT32 of 2048
clusters of 512 B (its root grows by clusters); on the last two the
scripts start with a create that leaves 8 and 24 clusters free. model_driver starts every script from the image's bytes
(--image), the Python model from the Space and root it reads from the same
file (space_of, fixed_root_of), and their per-op results, ENOSPC included,
must agree, and so must both models' free-cluster counts after each op
they answer alike, and the core's own answer (model_driver applies the
ops alongside) must be the C model's; each volume must see enough ENOSPC answers compared
(of writes and creates) for the test to mean something. The large-volume comparison above runs the Python model
without a Space or root (Model(root=None)) on model_driver's 64 MiB FAT32
volume, which no script fills. Profiles other than the kernel's (mtools)
have no C counterpart.

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

from vfz import model, opscript  # noqa: E402
from vfz.model.space import space_of  # noqa: E402

SCRIPTS = 300
OPS = 40
MODES = {  # model_driver (the core's apply options) -> the Python model's names mode
    "dual": (["--names", "dual"], "dual"),
    "nodual-v1": (["--names", "nodual", "--dummy", "v1"], "nodual"),
    "nodual-v3": (["--names", "nodual", "--dummy", "v3"], "nodual"),
}
# short_only's rule (which names take one slot): the v3 patch forces winnt;
# the core's default shortname=mixed stores bare what win95 does
RULES = {"dual": "win95", "nodual-v1": "win95", "nodual-v3": "winnt"}
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


def c_results(opts, files, image=None):
    """model_driver's predictions: {script index: [result per op]}."""
    extra = ["--image", image] if image else []
    p = subprocess.run([os.path.join(BUILD, "model_driver")] + opts + extra + files,
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


def compare(mode, files=None, image=None):
    """-> (ops compared, ops in all, scripts cut, disagreements, {kind: compared}).
    With image: both models start from that volume's space and root, and
    kinds also counts the ENOSPC answers compared ("ENOSPC <kind>")."""
    opts, names = MODES[mode]
    files = files or FILES
    cres = c_results(opts, [p for _, p in files], image)
    compared = total = cut = 0
    kinds = collections.Counter()
    bad = []
    for i, (seed, path) in enumerate(files):
        with open(path) as f:
            ops = opscript.parse(f.read())
        total += len(ops)
        if len(cres[i]) != len(ops):
            bad.append(f"seed {seed}: model_driver gave {len(cres[i])} results for {len(ops)} ops")
            continue
        if image:
            m = model.Model("kernel", names, root=model.fixed_root_of(image), space=space_of(image),
                            rule=RULES[mode])
        else:
            m = model.Model("kernel", names, root=None)
        for op, c in zip(ops, cres[i]):
            if long_path(op):
                cut += 1
                break
            py = m.apply_one(op)
            compared += 1
            kinds[op.kind] += 1
            if py == "ENOSPC" and py == c["result"]:
                kinds["ENOSPC " + op.kind] += 1
            if image and c["core"] != c["result"]:
                bad.append(f"{mode} seed {seed} line {c['line']} {c['op']}: the core answered {c['core']}, "
                           f"the C model {c['result']} (Python model {py})")
                break
            if image and py == c["result"] and m.space.free != c["free"]:
                bad.append(f"{mode} seed {seed} line {c['line']} {c['op']}: {py}, but free clusters "
                           f"Python model {m.space.free}, C model {c['free']}")
                break
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


SMALL_SCRIPTS = 100
SMALL = {  # volume -> (how it is made, the mode it runs in, free clusters left by a first create)
    "fat12-512": (["mkfs", "--size", "24K", "--fat", "12", "--cluster", "512", "--root-entries", "32"],
                  "nodual-v1", None),
    "fat12-4k": (["mkfs", "--size", "168K", "--fat", "12", "--cluster", "4096", "--root-entries", "32"],
                 "dual", 8),
    "fat32-512": (["gen-from-input", bytes([2 << 3, 0, 0, 0, 0, 0])], "nodual-v3", 24),
}


def small_volume(name):
    """(image path, [(seed, script path)]) of a small volume: the image made
    with the CLI, the scripts the module's, behind a filling create when
    the volume is too large to fill otherwise."""
    how, _, leave = SMALL[name]
    img = os.path.join(TMP, name + ".img")
    vfat = os.path.join(BUILD, "vfat")
    if how[0] == "mkfs":
        subprocess.run([vfat, "mkfs", img] + how[1:], check=True)
    else:   # fuzz_ops' own template for a fuzz input of these bytes
        inp = os.path.join(TMP, name + ".in")
        with open(inp, "wb") as f:
            f.write(how[1])
        subprocess.run([vfat, "gen", "--from-input", inp, "--image", img], check=True,
                       stdout=subprocess.DEVNULL)
    files = []
    for seed, path in FILES[:SMALL_SCRIPTS]:
        if leave is None:
            files.append((seed, path))
            continue
        sp = space_of(img)
        p = os.path.join(TMP, f"{name}-{seed}.txt")
        with open(path) as src, open(p, "w") as dst:
            dst.write(f'create "/fill.bin" {(sp.free - leave) * sp.cs} 7\n' + src.read())
        files.append((seed, p))
    return img, files


class SmallVolumes(unittest.TestCase):
    """Both models' capacity on volumes the scripts fill (module docstring)."""

    def check_volume(self, name):
        img, files = small_volume(name)
        mode = SMALL[name][1]
        compared, total, cut, bad, kinds = compare(mode, files, img)
        nospc = {k: v for k, v in kinds.items() if k.startswith("ENOSPC")}
        print(f"{name} ({mode}): {compared} of {total} ops compared, {cut} scripts cut, "
              f"{len(bad)} disagreements; ENOSPC compared: {nospc}", file=sys.stderr)
        self.assertEqual(len(bad), 0, f"{len(bad)} disagreements, the first:\n" + "\n".join(bad[:5]))
        self.assertGreaterEqual(compared, 0.9 * total)
        for k in ("write", "create"):
            self.assertGreaterEqual(kinds["ENOSPC " + k], 5, f"too few ENOSPC {k} compared on {name}")
        return kinds

    def test_fat12_512(self):
        kinds = self.check_volume("fat12-512")
        self.assertGreater(kinds["ENOSPC mkdir"], 0)

    def test_fat12_4k(self):
        self.check_volume("fat12-4k")

    def test_fat32_root_grows(self):
        self.check_volume("fat32-512")


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
