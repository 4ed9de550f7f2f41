#!/usr/bin/python3
"""vfz/oracles/kernel/export.py's run.sh, mount path included, run for real: this
host's kernel has no vfat, so the exporter runs it as root inside the
kernel oracle's guest (vfz/export/vm.py: Debian's 6.1 kernel, busybox),
one VM booted once for the whole file.

- writer side: mkdir/create/write/rename (file over file, directory onto a
  non-empty directory)/unlink/rmdir through the loop mount, each exit
  status as Linux is expected to answer: the stock kernel is the reference,
  so the script must say NOT REPRODUCED, every op matching;
- reader side: mtools' image with trailing dots (mtools-trailing-dots):
  Linux lists 'dots...' and 'dir..' but cannot stat them, so the script
  must say REPRODUCED and seen.txt (brought back from the guest) must lack
  them;
- a damaged reproducer (its image missing) says CANNOT RUN in the guest.
"""
import os
import shutil
import sys
import tempfile
import unittest

REPO = os.environ.get("VFAT_SRC") or os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, REPO)

from vfz import opscript
from vfz.export import case as export_case  # noqa: E402
from vfz.export import reproducer as export  # noqa: E402
from vfz.oracles.kernel import export_vm  # noqa: E402

WRITER_OPS = """mkdir "/d"
create "/d/a long name.txt" 10 1
write "/d/a long name.txt" 4 3 2
mkdir "/d/e"
create "/d/e/f" 3 3
rename "/d/a long name.txt" "/d/b"
rename "/d/b" "/d/e/f"
mkdir "/x"
create "/x/y" 1 1
rename "/d/e" "/x"
create "/d/e/f" 1 1
unlink "/d/e/f"
rmdir "/d/e"
rmdir "/x"
"""
READER_OPS = 'create "/dots..." 3 1\nmkdir "/dir.."\ncreate "/ok" 1 1\n'


class ExportKernelTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="vfz-test-export-kernel-")
        cls.vm = export_vm.stock_vm()           # the pooled VM every export here uses

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)
        from vfz.oracles import kernel
        kernel.shutdown_all()

    def export(self, side, text, writer=None, name="x"):
        w = tempfile.mkdtemp(dir=self.tmp)
        c = export_case.build_case("kernel", side, opscript.parse(text), "fat16", w, writer=writer,
                              title=name)
        d = os.path.join(self.tmp, name)
        res = export.export(c, d, run=True, timeout=120)
        with open(os.path.join(d, "printed.txt"), encoding="utf-8") as f:
            return c, d, res, f.read()

    def test_1_writer_ops_through_the_loop_mount(self):
        c, d, res, out = self.export("writer", WRITER_OPS, name="writer")
        self.assertIn("run in the kernel oracle's QEMU guest", out.split("\n")[0])
        self.assertIn("kernel: 6.1.", out)
        self.assertEqual((res["status"], res["result"]), (1, "NOT REPRODUCED"), out)
        # every op ran on the mounted volume and answered as the model says
        self.assertEqual(c.results[9], "ENOTEMPTY")
        for n, want in enumerate(c.results, 1):
            self.assertIn(f"op {n}: ", out)
            self.assertIn(f"exit {0 if want == 'ok' else 1} (Linux is expected to give: {want})", out)
        self.assertIn("Directory not empty", out)
        with open(os.path.join(d, "seen.txt"), encoding="utf-8") as f:
            seen = f.read().split("\n")
        with open(os.path.join(d, "expected.txt"), encoding="utf-8") as f:
            self.assertEqual(f.read().split("\n"), seen)
        self.assertIn("d /d", seen)
        self.assertTrue(any(s.startswith("f /x/y 1 ") for s in seen), seen)

    def test_2_reader_shows_mtools_trailing_dots(self):
        c, d, res, out = self.export("reader", READER_OPS, writer="mtools", name="reader")
        self.assertEqual(res["status"], 0, out)
        self.assertEqual(res["result"], "REPRODUCED: Linux vfat shows another tree than expected "
                                        "(2 lines differ)")
        with open(os.path.join(d, "seen.txt"), encoding="utf-8") as f:
            seen = f.read()
        self.assertIn("f /ok 1 ", seen)
        self.assertNotIn("dots", seen)
        self.assertIn("-f /dots... 3 ", out)
        with open(os.path.join(d, "README.md"), encoding="utf-8") as f:
            self.assertIn("run in the kernel oracle's QEMU guest", f.read())

    def test_3_broken_reproducer_cannot_run(self):
        src = os.path.join(self.tmp, "reader")
        if not os.path.isdir(src):
            self.export("reader", READER_OPS, writer="mtools", name="reader")
        d = os.path.join(self.tmp, "broken")
        shutil.copytree(src, d)
        os.remove(os.path.join(d, "image.img.xz"))
        st, out, seen = export_vm.run_in_vm(d, vm=self.vm)
        self.assertEqual(st, 2, out)
        self.assertIn("CANNOT RUN: cannot unpack image.img.xz", out)
        self.assertIsNone(seen)

    def test_4_second_grammar_through_the_loop_mount(self):
        """truncate -s and touch -m/-a answer as Linux does for each op
        (sizes, holes, EISDIR, ENOENT; times past what touch(1) takes are
        given as 2108, which the kernel clamps alike): NOT REPRODUCED, the
        listing the model's; chattr goes through busybox's fatattr applet in
        the guest (no perl there): ok on a file, EINVAL on the root, ENOENT."""
        text = ('create "/f" 5000 1\ntruncate "/f" 700\ntruncate "/f" 9000\nmkdir "/d"\n'
                'truncate "/d" 0\ntouch "/f" 86400 9223372036854775807.5\ntouch "/nope" 1 1\n'
                'touch "/d" 1246079973.5 1246079973\n')
        c, d, res, out = self.export("writer", text, name="meta")
        self.assertEqual((res["status"], res["result"]), (1, "NOT REPRODUCED"), out)
        self.assertEqual(c.results, ["ok", "ok", "ok", "ok", "EISDIR", "ok", "ENOENT", "ok"])
        for n, want in enumerate(c.results, 1):
            self.assertIn(f"exit {0 if want == 'ok' else 1} (Linux is expected to give: {want})", out)
        self.assertIn("touch -c -m -d @86400", out)
        self.assertIn("-a -d @4354819200", out)
        c, d, res, out = self.export("writer", 'create "/f" 1 1\nchattr "/f" rh\nchattr "/" r\n'
                                     'chattr "/nope" a\nchattr "/f" -\n', name="meta-attr")
        self.assertEqual((res["status"], res["result"]), (1, "NOT REPRODUCED"), out)
        self.assertEqual(c.results, ["ok", "ok", "EINVAL", "ENOENT", "ok"])
        for n, want in enumerate(c.results, 1):
            self.assertIn(f"exit {0 if want == 'ok' else 1} (Linux is expected to give: {want})", out)


if __name__ == "__main__":
    unittest.main(verbosity=2)
