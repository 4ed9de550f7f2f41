#!/usr/bin/python3
"""Signatures that keep bugs apart, and boundary mutators, on real tools (issue 28).

  - a stock binary's crash is signed by its backtrace: mtools (Debian's
    stripped mdir) on two catalogued volumes, read under the campaign's
    crash hook (gdb run again over the same command): each signature names
    three frames, the two differ, and a second read signs the same crash
    the same way (gdb turns address randomisation off; frames are object +
    offset); a stack run out in a recursion (the SIGSEGV: mdir -/ into a
    directory that holds itself) is signed by the frames that repeat; without
    the hook the signature is the program and signal only;
  - the boundary mutator's values come from the volume's own layout, as a
    real tool reads that layout: fsck.fat -v's data cluster count N and FAT
    size give past-last N+2 and fat-end (FAT bits / entry width); the
    count-4084 and count-4085 volumes made from a FAT16 seed are FAT12 and
    FAT16 to fsck.fat, with exactly that many clusters; the FAT32 wraps
    (FAT size x FAT count, total sectors x bytes per sector) land, in 32
    bits, on the seed's own data start and byte size, and the core's
    strict reader refuses them with its error, not a crash.
U-Boot's and the kernel's last words are checked on real guests in
tests/test_hostile_traps.py (two U-Boot hangs of fatls, two signatures).
"""
import json
import lzma
import os
import random
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.abspath(os.path.dirname(__file__)))
sys.path.insert(0, REPO)

from vfz import oracles, proc  # noqa: E402
from vfz.hostile import boundary, mutate as hm, verdict as hv  # noqa: E402
from vfz.hostile import backtrace as hbt  # noqa: E402
from vfz.hostile.seeds import corpus_seeds, layouts  # noqa: E402

HOSTILE = os.path.join(REPO, "reports", "hostile")
FPE = os.path.join(HOSTILE, "mtools-crash-263f15b1cf")      # mdir SIGFPE: sectors per cluster 0
SEGV = os.path.join(HOSTILE, "mtools-crash-59deb88b68")     # mdir SIGSEGV
VFAT = os.path.join(os.environ.get("VFAT_BUILD") or os.path.join(REPO, "build"), "vfat")


def unpack(d):
    with open(os.path.join(d, "hostile.img.xz"), "rb") as f:
        return lzma.decompress(f.read())


def fsck_v(path):
    p = subprocess.run(["fsck.fat", "-n", "-v", path], capture_output=True, text=True, timeout=60)
    out = p.stdout + p.stderr
    n = re.search(r"(\d+) data clusters", out)
    bits = re.search(r"(\d+) FATs?, (\d+) bit entries", out)
    per_fat = re.search(r"(\d+) bytes per FAT", out)
    return (int(n.group(1)) if n else None, int(bits.group(2)) if bits else None,
            int(per_fat.group(1)) if per_fat else None, out)


class Signatures(unittest.TestCase):
    def setUp(self):
        if not shutil.which("mdir") or not shutil.which("gdb"):
            self.skipTest("mtools and gdb are installed by vfatfuzz setup")
        self.tmp = tempfile.mkdtemp(prefix="vfz-test-sig-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def read(self, d, hook):
        path = os.path.join(self.tmp, os.path.basename(d) + ".img")
        with open(path, "wb") as f:
            f.write(unpack(d))
        r = oracles.get_reader("mtools")
        if hook:
            with proc.crash_hook(hbt.gdb_backtrace):
                rr = r.read(path, 30)
        else:
            rr = r.read(path, 30)
        vs = [v for v in hv.classify(rr, timeout=30) if v.kind == "crash"]
        self.assertEqual(len(vs), 1, rr.raw)
        return vs[0]

    def test_crash_signed_by_backtrace(self):
        fpe, segv = self.read(FPE, True), self.read(SEGV, True)
        for v, sig in ((fpe, "SIGFPE"), (segv, "SIGSEGV")):
            m = re.fullmatch(r"mdir " + sig + r" in ([^<]+)<([^<]+)<([^<]+)", v.message)
            self.assertIsNotNone(m, v.message)
            self.assertIn("[backtrace]", v.evidence)
        self.assertNotEqual(fpe.message.split(" in ")[1], segv.message.split(" in ")[1])
        # the SIGSEGV is a stack run out in mdir -/'s recursion: signed by the frames that
        # repeat, not by where the stack happened to end
        self.assertTrue(segv.message.startswith("mdir SIGSEGV in recursion<"), segv.message)
        self.assertEqual(self.read(FPE, True).message, fpe.message)      # stable across runs
        self.assertEqual(self.read(FPE, False).message, "mdir SIGFPE")   # no hook: no frames


class LoopingListing(unittest.TestCase):
    def test_uboot_loop_signed_by_its_cycle_not_the_cut(self):
        # U-Boot's console when uboot-hang-a1f844e286 was found (fatls of a directory whose
        # chain loops: "./", "../" and one file, over and over), cut after each line of its
        # last turns as another time limit cuts it (its replay at 60 s was signed
        # "./ | <file>", at 30 s "../ | <file>"): one signature, the cycle's kinds
        from vfz.hostile import lastwords
        with open(os.path.join(REPO, "reports", "hostile", "uboot-hang-a1f844e286", "finding.json")) as f:
            ev = json.load(f)["evidence"]
        head, console = ev.split("; console: ", 1)
        text = lastwords.console_of(ev)
        ends = [m.end() for m in re.finditer(r"\r\n", text)][-6:]
        sigs = {lastwords.uboot_last(f"{head}; console: {text[:e]!r}") for e in ends}
        self.assertEqual(sigs, {"./ | ../ | <file>"})
        # the empty looping directory of uboot-hang-66d1939cf4 keeps its own
        with open(os.path.join(REPO, "reports", "hostile", "uboot-hang-66d1939cf4", "finding.json")) as f:
            self.assertEqual(lastwords.uboot_last(json.load(f)["evidence"]), "./ | ../")


class Boundaries(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not shutil.which("fsck.fat"):
            raise unittest.SkipTest("fsck.fat is installed by vfatfuzz setup")
        cls.L = layouts(corpus_seeds((), seed=1), log=lambda s: None)
        cls.tmp = tempfile.mkdtemp(prefix="vfz-test-bound-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, True)

    def write(self, name, data):
        p = os.path.join(self.tmp, name)
        with open(p, "wb") as f:
            f.write(data)
        return p

    def test_cluster_values_from_the_layout(self):
        for name in ("corpus:patch-fat16-fat", "corpus:patch-fat32-lfn-root", "corpus:fat12-mtools"):
            L = self.L[name]
            n, bits, per_fat, out = fsck_v(self.write("seed.img", L.data))
            self.assertIsNotNone(n, out)
            vals = boundary.cluster_values(L)
            self.assertIn(("past-last", n + 2), vals, name)
            self.assertIn(("fat-end", per_fat * 8 // bits), vals, name)
            top = {12: 0xFFF, 16: 0xFFFF, 32: 0x0FFFFFFF}[bits]
            self.assertIn(("eoc-first", top - 7), vals)
            self.assertIn(("bad", top - 8), vals)

    def test_counts_at_the_fat12_fat16_boundary(self):
        L = self.L["corpus:patch-fat16-fat"]
        seen = {}
        for i in range(200):
            ps = boundary.count_patches(L, random.Random(i))
            n = int(ps[-1].field.rsplit("-", 1)[1])
            if n in (4084, 4085) and n not in seen:
                got = fsck_v(self.write(f"c{n}.img", hm.apply(L.data, ps)))
                seen[n] = got[:2]
        self.assertEqual(seen, {4084: (4084, 12), 4085: (4085, 16)})

    def test_fat32_wraps(self):
        L = self.L["corpus:patch-fat32-lfn-root"]
        f = L.fat
        kinds = {}
        for i in range(100):
            ps = boundary.product_patches(L, random.Random(i))
            kinds.setdefault(ps[0].field, ps)
        ps = kinds["bpb.fat_size32=fat-size-x-count"]
        spf = struct.unpack("<I", ps[0].data)[0]
        self.assertGreater(f.nfats * spf, 1 << 32)
        self.assertEqual((f.res + f.nfats * spf) & 0xFFFFFFFF, f.res + f.nfats * f.spf)
        total = struct.unpack("<I", kinds["bpb.total_sectors32=total-bytes"][0].data)[0]
        self.assertEqual(total * f.bps & 0xFFFFFFFF, f.total * f.bps)
        for ps in kinds.values():
            p = subprocess.run([VFAT, "check", self.write("w.img", hm.apply(L.data, ps))],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, 2, p.stdout + p.stderr)      # unusable, said so
            self.assertIn("unusable", p.stdout + p.stderr)

    def test_mutate_draws_bound(self):
        L = self.L["corpus:patch-fat16-fat"]
        kinds = set()
        for i in range(300):
            _, _, k = hm.mutate(L, random.Random(f"1:{i}"))
            kinds.update(k)
        self.assertIn("bound", kinds)


if __name__ == "__main__":
    unittest.main()
