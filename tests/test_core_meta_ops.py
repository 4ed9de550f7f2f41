#!/usr/bin/python3
"""The second grammar (truncate, chattr, touch, label: docs/op-script.md)
end to end on the core.

  1. Both parsers read the same text the same way: `vfat fmt` (the C
     parser) and vfz.opscript print the same canonical lines for good
     input, including `vfat gen --meta` scripts; bad input is one error
     line naming the line, exit 2, in C and an OpScriptError in Python.
  2. The core's results, attribute bytes, touched times and label equal
     the Python model's (vfz/model/inode.py) on `vfat gen --meta` scripts,
     on FAT12, FAT16 and FAT32, and fsck.fat -n finds nothing to fix.
  3. mtools reads what the core wrote: mattrib shows the attributes,
     mlabel and minfo the label, mdir the modify date a touch set.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

SRC = os.environ.get("VFAT_SRC") or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("VFAT_BUILD") or os.path.join(SRC, "build")
sys.path.insert(0, SRC)

from vfz import model, opscript# noqa: E402

VFAT = os.path.join(BUILD, "vfat")
FSCK = shutil.which("fsck.fat") or "/usr/sbin/fsck.fat"
SEEDS = range(1, 25)

GOOD = [
    'truncate "/a" 0', 'truncate "/a" 67108864', 'chattr "/a" rhsa', 'chattr "/a" ashr',
    'chattr "/a" -', 'chattr "/a/" r   # comment', 'touch "/a" 0 0', 'touch "/a" 1.5 2.000000001',
    'touch "/a" 9223372036854775807 1.10', 'touch "/a" 00012.3400 7', 'label ""', 'label "X"',
    'label "no/slash needed"', 'label "\\u00c4\\t"', '\tlabel\t"A"\t', 'chattr "/\\u00e9" h',
    'chattr "/a" r#x', 'mkdir\t"/tab"',
]
BAD = [
    'truncate "/a"', 'truncate "/a" 67108865', 'truncate "/a" -1', 'truncate "a" 1',
    'chattr "/a"', 'chattr "/a" rr', 'chattr "/a" x', 'chattr "/a" R', 'chattr "/a" --',
    'chattr "/a" ""', 'chattr "/a" r/', 'touch "/a" 1', 'touch "/a" 1. 2', 'touch "/a" .5 2',
    'touch "/a" 1.1234567890 2', 'touch "/a" 9223372036854775808 0', 'touch "/a" -1 0',
    'touch "/a" 1e3 0', 'touch "/a" 1,5 0', 'label', 'label X', 'label "a\\u0000b"',
    'label "\\ud800"', 'label "a" "b"', 'touch "/a" 1 2 3',
]


def run(argv, **kw):
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, **kw)


def c_fmt(path):
    return run([VFAT, "fmt", path])


def py_fmt(text):
    return opscript.dump(opscript.parse(text))


class Parsers(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="vfz-meta-parse-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def write(self, text):
        p = os.path.join(self.tmp, "s.txt")
        with open(p, "w", encoding="utf-8") as f:
            f.write(text)
        return p

    def test_good_lines_read_alike(self):
        for line in GOOD:
            with self.subTest(line):
                c = c_fmt(self.write(line + "\n"))
                self.assertEqual(c.returncode, 0, c.stderr)
                py = opscript.parse(line + "\n")
                # the same ops, whoever formats them (C writes a tab as
                # \u0009, Python's json as \t: the same JSON string)
                self.assertEqual([(o.kind, o.args) for o in opscript.parse(c.stdout)],
                                 [(o.kind, o.args) for o in py])
                self.assertEqual(c_fmt(self.write(opscript.dump(py))).stdout, c.stdout)
                self.assertEqual(c_fmt(self.write(c.stdout)).stdout, c.stdout)

    def test_bad_lines_one_error_exit_2(self):
        for line in BAD:
            with self.subTest(line):
                text = 'mkdir "/ok"\n' + line + "\n"
                c = c_fmt(self.write(text))
                self.assertEqual(c.returncode, 2, c.stdout)
                self.assertEqual(c.stdout, "")
                self.assertEqual(len(c.stderr.strip().splitlines()), 1, c.stderr)
                self.assertIn("line 2", c.stderr)
                with self.assertRaises(opscript.OpScriptError) as e:
                    opscript.parse(text)
                self.assertIn("line 2", str(e.exception))
                a = run([VFAT, "apply", os.path.join(self.tmp, "none.img"), self.write(text)])
                self.assertEqual(a.returncode, 2)
                self.assertEqual(len(a.stderr.strip().splitlines()), 1, a.stderr)

    def test_generated_scripts_read_alike(self):
        for seed in SEEDS:
            g = run([VFAT, "gen", "--seed", str(seed), "--ops", "60", "--meta"])
            text = "".join(ln + "\n" for ln in g.stdout.splitlines() if not ln.startswith("#"))
            self.assertEqual(c_fmt(self.write(text)).stdout, text, f"seed {seed}")
            self.assertEqual(py_fmt(text), text, f"seed {seed}")


def apply(img, ops_path, *opts):
    p = run([VFAT, "apply", img, ops_path, *opts])
    if p.returncode:
        raise AssertionError(p.stderr)
    return [json.loads(ln)["result"] for ln in p.stdout.splitlines()]


def core_inodes(img):
    p = run([VFAT, "ls", img])
    return {e["path"]: e for e in map(json.loads, p.stdout.splitlines())}


def core_label(img):
    return json.loads(run([VFAT, "label", img]).stdout)


class CoreAgainstModel(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="vfz-meta-core-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def check_fs(self, fat, size):
        compared = {k: 0 for k in opscript.META_KINDS}
        for seed in SEEDS:
            img = os.path.join(self.tmp, f"fat{fat}-{seed}.img")
            ops_path = os.path.join(self.tmp, f"ops-{seed}.txt")
            with open(ops_path, "w") as f:
                subprocess.run([VFAT, "gen", "--seed", str(seed), "--ops", "50", "--meta",
                                "--names", "upper83,lower83,long,latin,dots,slot13"],
                               stdout=f, check=True)
            run([VFAT, "mkfs", img, "--size", size, "--fat", str(fat)])
            with open(ops_path) as f:
                ops = opscript.parse(f.read())
            m = model.Model("kernel", "dual", root=model.root_for("kernel", img))
            want = m.apply(ops)
            got = apply(img, ops_path, "--names", "dual")
            where = f"FAT{fat} seed {seed}"
            self.assertEqual(got, want, where)
            for op, r in zip(ops, got):
                if op.kind in compared and r == "ok":
                    compared[op.kind] += 1
            ls = core_inodes(img)
            for path, ino in m.inodes().items():
                e = ls.get(path)
                self.assertIsNotNone(e, f"{where}: {path} not listed")
                self.assertEqual(e["attr"], ino["attr"], f"{where}: {path} attributes")
                for t in ("mtime", "atime"):
                    if ino[t] is not None:
                        self.assertEqual(e[t], ino[t], f"{where}: {path} {t}")
            lab = core_label(img)
            if any(o.kind == "label" and r == "ok" for o, r in zip(ops, got)):
                self.assertEqual(lab["root"], m.label, where)
                self.assertEqual(lab["boot"], m.label if m.label is not None else "NO NAME", where)
            f = run([FSCK, "-n", img])
            self.assertEqual(f.returncode, 0, f"{where}: fsck.fat -n: {f.stdout[-800:]}")
            os.unlink(img)
        print(f"FAT{fat}: ok results compared: {compared}", file=sys.stderr)
        for k, n in compared.items():
            self.assertGreater(n, 0, f"FAT{fat}: no {k} succeeded")

    def test_fat12(self):
        self.check_fs(12, "4M")

    def test_fat16(self):
        self.check_fs(16, "20M")

    def test_fat32(self):
        self.check_fs(32, "40M")


class LabelSlot(unittest.TestCase):
    """The label's root entry is a slot of a FAT12/16 root like any other:
    mkfs.fat -n puts one there, label "" frees it, a new label needs one."""

    def test_full_fixed_root(self):
        mkfs = shutil.which("mkfs.fat") or "/usr/sbin/mkfs.fat"
        tmp = tempfile.mkdtemp(prefix="vfz-meta-slot-")
        self.addCleanup(shutil.rmtree, tmp, True)
        img, ops_path = os.path.join(tmp, "f.img"), os.path.join(tmp, "ops.txt")
        subprocess.run([mkfs, "-C", "-F", "12", "-r", "16", "-n", "PRESET", img, "1440"],
                       check=True, capture_output=True)
        text = "".join(f'create "/F{i:02d}.TXT" 0 0\n' for i in range(16))
        text += 'label ""\ncreate "/LAST.TXT" 0 0\nlabel "NEW"\nunlink "/F00.TXT"\nlabel "NEW"\n'
        with open(ops_path, "w") as f:
            f.write(text)
        ops = opscript.parse(text)
        m = model.Model("kernel", "dual", root=model.root_for("kernel", img))
        want = m.apply(ops)
        # 15 files fill the 16 slots beside PRESET's entry
        self.assertEqual(want, ["ok"] * 15 + ["ENOSPC", "ok", "ok", "ENOSPC", "ok", "ok"])
        self.assertEqual(apply(img, ops_path, "--names", "dual"), want)
        self.assertEqual(core_label(img), {"boot": "NEW", "root": "NEW"})
        self.assertEqual(run([FSCK, "-n", img]).returncode, 0)


class Mtools(unittest.TestCase):
    """What mtools (a reader apart from the core) makes of the core's bytes."""

    def test_attributes_label_and_date(self):
        tmp = tempfile.mkdtemp(prefix="vfz-meta-mtools-")
        self.addCleanup(shutil.rmtree, tmp, True)
        for fat, size in ((12, "4M"), (16, "20M"), (32, "40M")):
            img = os.path.join(tmp, f"m{fat}.img")
            ops = os.path.join(tmp, "ops.txt")
            with open(ops, "w") as f:
                f.write('mkdir "/DIR"\ncreate "/RO.TXT" 3000 1\ncreate "/HID.TXT" 10 2\n'
                        'create "/PLAIN.TXT" 600 3\nchattr "/RO.TXT" r\nchattr "/HID.TXT" hs\n'
                        'chattr "/DIR" h\nchattr "/PLAIN.TXT" -\ntruncate "/RO.TXT" 700\n'
                        'touch "/PLAIN.TXT" 1246079973.7 1246079973\nlabel "Fuzz 27"\n')
            run([VFAT, "mkfs", img, "--size", size, "--fat", str(fat)])
            self.assertEqual(apply(img, ops, "--names", "dual"), ["ok"] * 11)
            env = dict(os.environ, MTOOLS_SKIP_CHECK="1")
            a = run(["mattrib", "-i", img, "-/", "::"], env=env).stdout
            got = {ln.split("::", 1)[1].strip(): "".join(sorted(ln.split("::", 1)[0].replace(" ", "")))
                   for ln in a.splitlines() if "::" in ln}
            # the truncate of a read-only file set its archive bit, as Linux's fat_free does
            self.assertEqual(got["/RO.TXT"], "AR", a)
            self.assertEqual(got["/HID.TXT"], "HS", a)
            self.assertEqual(got["/DIR"], "H", a)
            self.assertEqual(got["/PLAIN.TXT"], "", a)
            lab = run(["mlabel", "-i", img, "-s", "::"], env=env).stdout
            self.assertIn("Volume label is Fuzz 27", lab)
            self.assertIn('disk label="Fuzz 27    "', run(["minfo", "-i", img, "::"], env=env).stdout)
            d = run(["mdir", "-i", img, "::/PLAIN.TXT"], env=env).stdout
            self.assertIn("2009-06-27   5:19", d)
            self.assertEqual(run([FSCK, "-n", img]).returncode, 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
