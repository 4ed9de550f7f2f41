#!/usr/bin/python3
"""Hostile writes (vfz/hostile/writes.py) with real writers on real mutated volumes.

  - damage spread is judged only where the strict checker read cleanly: a FAT12
    volume made by the core with /A and /B, then /B's first cluster set to /A's
    (one patched field: a cross-linked file). The core writer writes 100 bytes into
    /A; /B, which no op names, reads differently after (its contents are /A's
    cluster), and spread() says so when nothing is excused -- but `vfat check`
    complained about the cross-link before the ops (naming both files), so the
    campaign's probe judges no spread and gives no verdict. The same ops on the
    volume before the patch: every op ok, no spread, no verdict;
  - FatFs on a FAT16 volume of exactly 4 085 clusters (reports/hostile/
    write-fatfs-spread-a7c9646d09 and its instance -a4e64e974a: one field each,
    total_sectors16): the strict checker reads it cleanly before the ops, FatFs
    takes it for FAT12 and its 12-bit FAT writes lose entries on one volume and make
    entries appear on the other; both are one signature, the named exception
    fatfs-count-edges-write. With one cluster more (4 086: FAT16 to FatFs too) the
    same ops leave every entry the ops do not name as it was: no verdict;
  - a writer that crashes on the volume: mtools on a volume whose sectors per
    cluster is 0 (reports/hostile/mtools-crash-263f15b1cf) dies in the listing it
    makes before the ops (mdir SIGFPE); with the campaign's crash hook the verdict
    is a crash signed by its backtrace, and the answer keeps the script.
"""
import json
import lzma
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.abspath(os.path.dirname(__file__)))
sys.path.insert(0, REPO)

from vfz import opscript, proc  # noqa: E402
from vfz.fatimg import Fat  # noqa: E402
from vfz.hostile import backtrace as hbt, verdict as hv, writes  # noqa: E402

VFAT = os.path.join(os.environ.get("VFAT_BUILD") or os.path.join(REPO, "build"), "vfat")
FPE = os.path.join(REPO, "reports", "hostile", "mtools-crash-263f15b1cf")
FAT12_AT_4085 = [os.path.join(REPO, "reports", "hostile", "write-fatfs-spread-a7c9646d09"),
                 os.path.join(REPO, "reports", "hostile", "instances", "write-fatfs-spread-a4e64e974a")]
OPS = 'write "/A" 0 100 85\n'


class HostileWrites(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.access(VFAT, os.X_OK):
            raise unittest.SkipTest("build/vfat missing (cmake --build --preset default)")
        cls.tmp = tempfile.mkdtemp(prefix="vfz-test-hwrites-")
        img = os.path.join(cls.tmp, "seed.img")
        subprocess.run([VFAT, "mkfs", img, "--size", "2M", "--fat", "12"], check=True, capture_output=True)
        script = os.path.join(cls.tmp, "mk.ops")
        with open(script, "w") as f:
            f.write('create "/A" 3000 1\ncreate "/B" 3000 2\n')
        subprocess.run([VFAT, "apply", img, script], check=True, capture_output=True)
        with open(img, "rb") as f:
            cls.seed = f.read()
        fat = Fat(cls.seed)
        ents = {n.decode().strip(): (off, cl) for off, n, attr, cl, size, lfns in fat.short_entries(None)}
        b = bytearray(cls.seed)
        struct.pack_into("<H", b, ents["B"][0] + 26, ents["A"][1])     # /B starts at /A's cluster
        cls.cross = bytes(b)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, True)

    def path(self, name, data):
        p = os.path.join(self.tmp, name)
        with open(p, "wb") as f:
            f.write(data)
        return p

    def probe(self, name):
        w = writes.WriterProbe(name, ops=OPS)
        self.addCleanup(w.close)
        return w

    def test_spread_not_judged_where_check_complains(self):
        w = self.probe("core-dual")
        p = self.path("cross.img", self.cross)
        before = w.strict.read(p, 30).listing
        complaints = w.check.read(p, 30).complaints
        self.assertTrue(any("/A" in c and "/B" in c for c in complaints), complaints)
        rr = w.read(p, 30)
        self.assertIsNone(rr.error, rr.raw)
        self.assertEqual(rr.extra["results"], ["ok"])
        after = w.strict.read(p, 30).listing
        # unexcused, /B's change would be damage spread ...
        raw = writes.spread(before, after, opscript.parse(OPS), ["ok"], 0, dirty=set())
        self.assertIn("/B", [path for _, path, *_ in raw], raw)
        # ... but the checker complained about it before the ops: no spread, no verdict
        self.assertEqual(rr.extra["spread"], [])
        self.assertEqual(hv.classify(rr, timeout=30), [])

    def test_clean_volume_no_verdict(self):
        w = self.probe("core-dual")
        rr = w.read(self.path("seed-w.img", self.seed), 30)
        self.assertIsNone(rr.error, rr.raw)
        self.assertEqual(rr.extra["results"], ["ok"])
        self.assertEqual(rr.extra["spread"], [])
        self.assertEqual(hv.classify(rr, timeout=30), [])

    def test_fatfs_4085_clusters_one_signature(self):
        w = writes.WriterProbe("fatfs")
        self.addCleanup(w.close)
        ok, why = w.available()
        if not ok:
            self.skipTest(why)
        sigs = set()
        for d in FAT12_AT_4085:
            with open(os.path.join(d, "finding.json")) as f:
                info = json.load(f)
            with open(os.path.join(d, "hostile.img.xz"), "rb") as f:
                img = lzma.decompress(f.read())
            self.assertEqual(Fat(img).clusters, 4085)
            p = self.path("fat16-4085.img", img)
            self.assertEqual(w.check.read(p, 30).complaints, [])       # clean before the ops
            w.fixed = opscript.parse(info["ops"])
            rr = w.read(p, 30)
            self.assertTrue(rr.extra["spread"], rr.raw)
            self.assertEqual(rr.extra["spread_exception"], "fatfs-count-edges-write")
            sigs |= {v.signature("write:fatfs") for v in hv.classify(rr, timeout=30)}
            # one cluster more: FAT16 to FatFs as to Linux, the same ops spread nothing
            b = bytearray(img)
            struct.pack_into("<H", b, 19, struct.unpack_from("<H", b, 19)[0] + Fat(img).spc)
            rr = w.read(self.path("fat16-4086.img", bytes(b)), 30)
            self.assertEqual((rr.error, rr.extra["spread"]), (None, []), rr.raw)
            self.assertNotIn("spread_exception", rr.extra)
        self.assertEqual(sigs, {"write:fatfs|spread|entries the ops did not name [fatfs-count-edges-write]"})

    def test_writer_crash_signed_by_backtrace(self):
        if not shutil.which("mdir") or not shutil.which("gdb"):
            self.skipTest("mtools and gdb are installed by vfatfuzz setup")
        with open(os.path.join(FPE, "hostile.img.xz"), "rb") as f:
            img = lzma.decompress(f.read())
        w = self.probe("mtools")
        with proc.crash_hook(hbt.gdb_backtrace):
            rr = w.read(self.path("fpe.img", img), 30)
        vs = hv.classify(rr, timeout=30)
        self.assertEqual([v.kind for v in vs], ["crash"], rr.raw)
        self.assertRegex(vs[0].message, r"^mdir SIGFPE in \S+<\S+<\S+$")
        self.assertEqual(rr.extra["ops"], OPS)
        self.assertEqual(rr.extra["results"], [])          # it died before the first op


if __name__ == "__main__":
    unittest.main()
