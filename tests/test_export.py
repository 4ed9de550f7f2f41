#!/usr/bin/python3
"""vfz.export.reproducer / `vfatfuzz repro --export DIR`: reproducers a maintainer runs
without vfatfuzz.

The dosfsck and mtools findings of the regression corpus
(corpus/regressions/fsck-v1-lfn-crosses-cluster: fsck.fat -a destroys a
directory; mtools-known-failure-cut: mmd "No directory slots") are
exported through the real CLI, from an op-script and from a finding
directory the campaign's own code writes, and the exported run.sh is run
on this machine from a copy of the directory, with a PATH that has no
vfatfuzz on it: it must print REPRODUCED and exit 0. The same exporter on
a script (or an image) without the bug must say NOT REPRODUCED (exit 1),
so the script's verdict is not a constant. No VM here: the kernel
exporter's script is checked by sh -n; tests/test_export_kernel.py runs it,
loop mount included, inside the kernel oracle's guest.
"""
import lzma
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

REPO = os.environ.get("VFAT_SRC") or os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, REPO)

from vfz import findings, opscript
from vfz.campaign import loop as campaign
from vfz.export import case as export_case
from vfz.export import reproducer as export
from vfz.campaign import filing# noqa: E402

VFATFUZZ = os.path.join(REPO, "scripts", "vfatfuzz")
CASES = os.path.join(REPO, "corpus", "regressions")
FSCK_CASE = os.path.join(CASES, "fsck-v1-lfn-crosses-cluster")
MTOOLS_CASE = os.path.join(CASES, "mtools-known-failure-cut")


def cli(*args, timeout=300):
    return subprocess.run([sys.executable, VFATFUZZ, "repro", *args], capture_output=True, text=True,
                          errors="replace", timeout=timeout)


def run_standalone(d, tmp):
    """Copy the reproducer elsewhere and run it with a bare PATH."""
    dst = os.path.join(tmp, "copy-" + os.path.basename(d.rstrip("/")))
    shutil.copytree(d, dst)
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": tmp}
    r = subprocess.run(["sh", os.path.join(dst, "run.sh"), os.path.join(tmp, "work-" + os.path.basename(d))],
                       capture_output=True, text=True, errors="replace", env=env, timeout=300)
    return r.returncode, r.stdout + r.stderr


class ExportTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="vfz-test-export-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def check_layout(self, d, impl_word):
        for n in ("README.md", "run.sh", "image.img.xz", "ops.txt", "expected.txt", "printed.txt"):
            self.assertTrue(os.path.isfile(os.path.join(d, n)), f"{d}: missing {n}")
        with open(os.path.join(d, "image.img.xz"), "rb") as f:
            img = lzma.decompress(f.read())
        self.assertEqual(img[510:512], b"\x55\xaa", "the compressed image is not a FAT volume")
        with open(os.path.join(d, "README.md"), encoding="utf-8") as f:
            readme = f.read()
        for part in ("## Versions", "## Steps", "## Expected", "## Actual", "directory entries involved"):
            self.assertIn(part, readme)
        self.assertIn(impl_word, readme)
        # the versions come from dpkg-query, the hexdump from the image
        self.assertRegex(readme, r"- (dosfstools|mtools) \d")
        self.assertRegex(readme, r"[0-9a-f]{8}: ([0-9a-f]{4} ){8} ")
        self.assertEqual(subprocess.run(["sh", "-n", os.path.join(d, "run.sh")]).returncode, 0)
        return readme

    def test_1_fsck_case_from_opscript_reproduces(self):
        d = os.path.join(self.tmp, "fsck")
        r = cli(os.path.join(FSCK_CASE, "ops.txt"), "--writers", "core-v1", "--oracles", "dosfsck",
                "--fs", "fat32", "--export", d)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("run.sh here: REPRODUCED: fsck.fat -a destroyed", r.stdout)
        self.check_layout(d, "dosfstools")
        rc, out = run_standalone(d, self.tmp)
        self.assertEqual(rc, 0, out)
        self.assertEqual(out.strip().split("\n")[-1],
                         "REPRODUCED: fsck.fat -a destroyed 1 of the 4 files and directories "
                         "(see seen.txt: what is left)")
        self.assertIn("Expected a valid '.' entry in the first slot, found free entry.", out)

    def test_2_mtools_case_from_opscript_reproduces(self):
        d = os.path.join(self.tmp, "mtools")
        r = cli(os.path.join(MTOOLS_CASE, "ops.txt"), "--writers", "mtools", "--fs", "fat16",
                "--export", d)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.check_layout(d, "mtools")
        with open(os.path.join(d, "run.sh"), encoding="utf-8") as f:
            sh = f.read()
        for cmd in ("mmd -i", "mcopy -i", "mmove -i", "mdir -i", "mtype -i"):
            self.assertIn(cmd, sh)
        self.assertNotIn("vfatfuzz ", sh.split("\n", 3)[3])     # no call of vfatfuzz past the header
        rc, out = run_standalone(d, self.tmp)
        self.assertEqual(rc, 0, out)
        self.assertIn("mmd: No directory slots", out)
        self.assertTrue(out.strip().endswith("where Linux succeeds: mmd: No directory slots"), out[-500:])
        # data/: the exact bytes of each create, as the op-script defines them
        ops = opscript.load(os.path.join(MTOOLS_CASE, "ops.txt"))
        i = next(k for k, op in enumerate(ops) if op.kind == "create" and op.args[1] > 0)
        with open(os.path.join(d, "data", f"op{i + 1}.bin"), "rb") as f:
            self.assertEqual(f.read(), opscript.content(ops[i].args[2], ops[i].args[1]))

    def test_3_same_exporter_says_not_reproduced_without_the_bug(self):
        # the fsck layout written with 8.3 aliases (core-dual): fsck.fat renames nothing
        d = os.path.join(self.tmp, "fsck-dual")
        r = cli(os.path.join(FSCK_CASE, "ops.txt"), "--writers", "core-dual", "--oracles", "dosfsck",
                "--fs", "fat32", "--export", d)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        rc, out = run_standalone(d, self.tmp)
        self.assertEqual((rc, out.strip().split("\n")[-1]), (1, "NOT REPRODUCED"), out)
        # the mtools script minus the 250-character name: every op succeeds
        ops = [op for op in opscript.load(os.path.join(MTOOLS_CASE, "ops.txt")) if len(op.path) < 100]
        p = os.path.join(self.tmp, "short.txt")
        with open(p, "w", encoding="utf-8") as f:
            f.write(opscript.dump(ops))
        d = os.path.join(self.tmp, "mtools-short")
        r = cli(p, "--writers", "mtools", "--fs", "fat16", "--export", d)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        rc, out = run_standalone(d, self.tmp)
        self.assertEqual((rc, out.strip().split("\n")[-1]), (1, "NOT REPRODUCED"), out)

    def test_4_from_a_finding_directory(self):
        # the campaign's own checker and finding writer on the fsck case
        ops = opscript.load(os.path.join(FSCK_CASE, "ops.txt"))
        ck = campaign.Checker(["dosfsck"], ["core-v1"], timeout=120.0)
        try:
            res = ck.check(ops, "fat32")
            div = next(x for x in res.divs.values() if x.fields["oracle"] == "dosfsck")
            path = filing.write_full(self.tmp, ck, div, ops, ops, "fat32", {})
        finally:
            ck.close()
        self.assertEqual(findings.well_formed(path), "")
        d = os.path.join(self.tmp, "from-finding")
        r = cli(path, "--export", d)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        readme = self.check_layout(d, "dosfstools")
        self.assertIn(div.sig, readme)
        self.assertIn("`core-v1`", readme)
        rc, out = run_standalone(d, self.tmp)
        self.assertEqual(rc, 0, out)

    def test_5_every_exporter_writes_valid_sh(self):
        # every exporter on one small script (the kernel's run in test_export_kernel)
        ops = opscript.parse('mkdir "/d"\ncreate "/d/a long name.txt" 10 1\nwrite "/d/a long name.txt" 4 3 2\n'
                             'rename "/d/a long name.txt" "/d/b"\nunlink "/d/b"\nrmdir "/d"\n')
        for impl, side, writer in (("7z", "reader", "core-dual"), ("grub", "reader", "core-dual"),
                                   ("kernel", "writer", None), ("kernel", "reader", "core-dual"),
                                   ("mtools", "writer", None), ("fatfs", "writer", None),
                                   ("fusefat", "writer", None), ("uboot", "reader", "core-dual"),
                                   ("sleuthkit", "reader", "core-dual"),
                                   ("fatcat", "reader", "core-dual")):
            with self.subTest(impl=impl, side=side):
                w = tempfile.mkdtemp(dir=self.tmp)
                c = export_case.build_case(impl, side, ops, "fat16", w, writer=writer)
                d = os.path.join(w, "out")
                export.export(c, d, run=False)
                self.assertEqual(subprocess.run(["sh", "-n", os.path.join(d, "run.sh")]).returncode, 0)
                if impl == "kernel" and side == "writer":
                    with open(os.path.join(d, "run.sh"), encoding="utf-8") as f:
                        sh = f.read()
                    for cmd in ("mount -t vfat -o loop,", "kstep 1 ok mkdir", "dd if=", "rename($ARGV[0], $ARGV[1])", "rm ",
                                "rmdir "):
                        self.assertIn(cmd, sh)

    def test_6_bad_usage_is_one_line(self):
        r = cli(os.path.join(FSCK_CASE, "ops.txt"), "--export", os.path.join(self.tmp, "x"))
        self.assertEqual(r.returncode, 2)
        self.assertEqual(len(r.stderr.strip().split("\n")), 1, r.stderr)
        self.assertIn("--writers", r.stderr)
        with self.assertRaises(export.ExportError):
            export.impl_module("no-such-tool")


if __name__ == "__main__":
    unittest.main(verbosity=2)
