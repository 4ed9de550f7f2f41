#!/usr/bin/python3
"""vfz/oracles/served.py: `vfat serve` answers as `vfat ls` / `vfat check` processes do.

  - for volumes that read cleanly, that the checker complains about (the
    catalogued FatFs spread's volume after FatFs's ops: a cross-link, chains
    out of range, names with control bytes), that `vfat ls` refuses (a zeroed
    boot sector) and a missing file, each answer -- exit status, stdout,
    stderr, error -- is the process's, byte for byte, for both commands and
    over one server (requests after a failed one are answered too);
  - a server killed between requests (as a crash would end it) is replaced:
    the next request is answered as the process answers it;
  - a request that does not answer in time is a timeout, and the next one is
    answered by a new server;
  - an argv the server does not take (`vfat label`) runs as a process.
"""
import lzma
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.abspath(os.path.dirname(__file__)))
sys.path.insert(0, REPO)

from vfz import opscript, oracles, proc  # noqa: E402
from vfz.oracles import served  # noqa: E402

VFAT = os.path.join(os.environ.get("VFAT_BUILD") or os.path.join(REPO, "build"), "vfat")
SPREAD = os.path.join(REPO, "reports", "hostile", "write-fatfs-spread-a7c9646d09")


class Served(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.access(VFAT, os.X_OK):
            raise unittest.SkipTest("build/vfat missing (cmake --build --preset default)")
        cls.tmp = tempfile.mkdtemp(prefix="vfz-test-served-")
        cls.images = []
        clean = os.path.join(cls.tmp, "clean.img")
        subprocess.run([VFAT, "mkfs", clean, "--size", "2M", "--fat", "12"], check=True, capture_output=True)
        with open(os.path.join(cls.tmp, "mk.ops"), "w") as f:
            f.write('mkdir "/d"\ncreate "/d/caf\u00e9.txt" 3000 7\ncreate "/b" 10 1\n')
        subprocess.run([VFAT, "apply", clean, os.path.join(cls.tmp, "mk.ops")], check=True, capture_output=True)
        cls.images.append(clean)
        with open(os.path.join(SPREAD, "hostile.img.xz"), "rb") as f:
            img = lzma.decompress(f.read())
        cls.images.append(cls.put("spread.img", img))
        cls.images.append(cls.put("zero.img", bytes(65536)))
        cls.images.append(os.path.join(cls.tmp, "missing.img"))
        w = oracles.get_writer("fatfs")
        ok, _ = w.available()
        if ok:       # the volume after FatFs's ops: a cross-link, chains out of range, odd names
            after = cls.put("after.img", img)
            with open(os.path.join(SPREAD, "finding.json")) as f:
                import json
                w.apply(after, opscript.parse(json.load(f)["ops"]), 30)
            cls.images.append(after)
        w.close()

    @classmethod
    def put(cls, name, data):
        p = os.path.join(cls.tmp, name)
        with open(p, "wb") as f:
            f.write(data)
        return p

    @classmethod
    def tearDownClass(cls):
        served.close()
        shutil.rmtree(cls.tmp, True)

    def same(self, argv):
        a, b = served.run(argv, 30), proc.run(argv, timeout=30)
        self.assertEqual((a.rc, a.error, a.out, a.err), (b.rc, b.error, b.out, b.err), argv)

    def test_answers_as_the_process(self):
        for img in self.images * 2:
            for cmd in ("ls", "check"):
                self.same([VFAT, cmd, img])
        self.assertGreaterEqual(len(self.images), 4)

    def test_killed_server_is_replaced(self):
        self.same([VFAT, "ls", self.images[0]])
        s = served._server(VFAT)
        os.killpg(s.p.pid, signal.SIGKILL)
        s.p.wait()
        self.same([VFAT, "check", self.images[0]])

    def test_timeout_then_a_new_server(self):
        p = served.run([VFAT, "ls", self.images[1]], 0)
        self.assertEqual((p.rc, p.timed_out, p.error), (None, True, "timeout after 0s"))
        self.same([VFAT, "ls", self.images[1]])

    def test_other_commands_run_as_processes(self):
        p = served.run([VFAT, "label", self.images[0]], 30)
        self.assertEqual(p.rc, 0)
        self.assertIn('"boot"', p.text)


if __name__ == "__main__":
    unittest.main()
