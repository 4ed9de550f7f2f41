#!/usr/bin/python3
"""Transformers in the hostile campaign (vfz/hostile/transform.py) against the
real fatsort and fsck.fat -a.

A FAT12 256 KiB volume with 512-byte clusters written by the core: /d holds
a 104-character name, /d/aaa and a 255-character name (21 slots) whose
set fatsort's order puts at slot 13 of the second cluster, last in /d
(fatsort-long-set-3-clusters, the silent variant: the slots past the
second cluster go to the cluster that physically follows it). Moving /d's
second cluster to the last cluster of the volume (a valid volume: fsck.fat
-n and vfat check find nothing) makes the cluster that follows it the first
one past the declared end: fatsort writes 64 bytes (two slots) there, into
what on a stick is the next partition. The overwrite verdict must fire
with those bytes, carry the named exception, survive minimising (the
chain move is the change that matters), be written as a finding that
`--replay` reproduces (and not on the seed) and export a run.sh that says
REPRODUCED with the tool alone.

Silence where the tools behave: fsck.fat -a repairing a canary volume (a
file pointed past the declared end, the canary fill there, the FATs
differing) changes the volume inside its bounds only; creating a missing
FAT32 backup boot sector (sector 6) and fixing FSINFO are writes among the
reserved sectors it may make, beside the ones it never writes; fatsort sorting a
FAT12 root (the slots right after the FATs, which its own region ends at)
and the well-formed volume gives no verdict. A directory whose first
cluster is 0 kills fatsort by its assertion (a crash naming it), and a
crash of the known bug carries its name: two signatures.
"""
import argparse
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from vfz.hostile import findings as hostile_findings
from vfz.hostile import minimise as hostile_min
from vfz.hostile import transform as hostile_tx# noqa: E402
from vfz.hostile import mutate as hm# noqa: E402
from vfz.hostile import verdict as hv# noqa: E402
from vfz.fatimg import Fat  # noqa: E402
from vfz.oracles import fatsort  # noqa: E402
from vfz.oracles.fsck_repair import FsckRepairTransformer  # noqa: E402

VFAT = os.path.join(os.environ.get("VFAT_BUILD") or os.path.join(REPO, "build"), "vfat")
LONG_LAST = (f'mkdir "/d"\ncreate "/d/{"m" * 104}" 1 1\ncreate "/e" 1 2\n'
             f'create "/d/{"z" * 255}" 600 3\ncreate "/d/aaa" 1 4\n')
LONG_BEFORE = f'mkdir "/d"\ncreate "/d/c" 1 3\ncreate "/d/{"a" * 117}" 1 1\ncreate "/d/{"b" * 255}" 1 2\n'
SEED_FAT12 = os.path.join(REPO, "corpus", "fuzz_image", "fat12-mtools")
SEED_FAT32 = os.path.join(REPO, "corpus", "fuzz_image", "fat32-small-empty")     # 32 reserved sectors


def core_volume(tmp, name, ops):
    img, txt = os.path.join(tmp, name + ".img"), os.path.join(tmp, name + ".txt")
    with open(txt, "w") as f:
        f.write(ops)
    subprocess.run([VFAT, "mkfs", img, "--size", "256K", "--fat", "12", "--cluster", "512"],
                   check=True, capture_output=True)
    subprocess.run([VFAT, "apply", img, txt, "--names", "dual"], check=True, capture_output=True)
    with open(img, "rb") as f:
        return f.read()


def move_to_last(seed):
    """(image, patches): /d's second cluster moved to the volume's last one."""
    f = Fat(seed)
    first = next(e[3] for e in f.short_entries(None) if e[1] == b"D          ")
    c1, c2, c3 = f.chain(first)
    last = f.clusters + 1
    a, b = f.cluster_off(c2), f.cluster_off(last)
    f.b[b:b + f.csize] = f.b[a:a + f.csize]
    f.set(c1, last)
    f.set(last, c3)
    f.set(c2, 0)
    img = bytes(f.b)
    fat_end = f.data_sec * f.bps
    return img, [hm.Patch(o, img[o:o + n], f"fat[{c1}]={last}, fat[{last}]={c3}, fat[{c2}]=0 (/d's chain)")
                 for o, n in hm.byte_ranges(seed, img) if o < fat_end] + \
        [hm.Patch(b, img[b:b + f.csize], f"cluster {last} (the volume's last) = /d's second cluster {c2}")]


def fat12_seed():
    with open(SEED_FAT12, "rb") as f:
        return f.read()[16:]


@unittest.skipUnless(shutil.which("fatsort") and shutil.which("fsck.fat") and os.path.exists(VFAT),
                     "needs fatsort, fsck.fat (dosfstools) and the core's vfat (build/)")
class T(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="vfz-test-hostile-tx-")
        cls.seed = core_volume(cls.tmp, "last", LONG_LAST)
        cls.bad, cls.patches = move_to_last(cls.seed)
        cls.fatsort = hostile_tx.tool("fatsort")
        cls.fsck = hostile_tx.tool("fsck-repair")

    @classmethod
    def tearDownClass(cls):
        cls.fatsort.close()
        cls.fsck.close()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def run_tool(self, tool, image):
        path = os.path.join(self.tmp, "hostile.img")
        with open(path, "wb") as f:
            f.write(image)
        rr = tool.read(path, 30)
        return rr, hv.classify(rr, image, None, 30)

    def left(self):
        """the file as the tool left it"""
        with open(os.path.join(self.tmp, "hostile.img"), "rb") as f:
            return f.read()

    def test_moved_chain_is_a_valid_volume(self):
        path = os.path.join(self.tmp, "valid.img")
        with open(path, "wb") as f:
            f.write(self.bad)
        p = subprocess.run(["fsck.fat", "-n", path], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(subprocess.run([VFAT, "check", path], capture_output=True).returncode, 0)
        self.assertEqual(hm.declared_end(self.bad), len(self.bad))     # no bytes past the end of its own

    def test_fatsort_writes_past_the_declared_end(self):
        rr, vs = self.run_tool(self.fatsort, self.bad)
        self.assertIsNone(rr.error, rr.raw)          # fatsort says it sorted
        # the bytes changed, and the I/O trace's writes there (vfz.hostile.bounds)
        self.assertEqual([(v.kind, v.message) for v in vs],
                         [("overwrite", f"changed bytes {hostile_tx.PAST_END} [{fatsort.LONG_SET}]"),
                          ("out-of-bounds", f"fatsort write past volume [{fatsort.LONG_SET}]")])
        (w,) = rr.extra["writes"]
        end = len(self.bad)
        self.assertEqual(w["ranges"], [[end, 64]])    # two slots, at the declared end
        self.assertEqual(w["bytes"], 64)
        self.assertIn(f"offset {end:#x}", vs[0].evidence)
        self.assertTrue(vs[0].evidence.startswith("$ fatsort -f "), vs[0].evidence)
        # the same volume with the chain in place: fatsort loses the entry inside the volume only
        rr, vs = self.run_tool(self.fatsort, self.seed)
        self.assertEqual((rr.error, rr.extra["writes"], vs), (None, [], []))

    def test_finding_minimised_replayed_exported(self):
        v = hv.classify(self.run_tool(self.fatsort, self.bad)[0], self.bad, None, 30)[0]
        sig = v.signature("fatsort")
        # a mutation that does not matter: a byte of /e's data
        f = Fat(self.seed)
        e_cl = next(e[3] for e in f.short_entries(None) if e[1] == b"E          ")
        noise = hm.Patch(f.cluster_off(e_cl) + 5, b"\x7f", "dir /e data")
        img = hm.apply(self.bad, [noise])
        h = {"seed_name": "core-dual:fat12-256k-512", "patches": self.patches + [noise], "tail": b"",
             "kinds": ["dir", "fat"], "canary": None, "image": img, "index": 0}
        path = os.path.join(self.tmp, "min.img")
        check = hostile_min.Checker(self.fatsort, "fatsort", sig, None, 30, path)
        self.assertTrue(check(img))
        # 8 reads: the noise goes in the first pass (whole mutations), the chain move stays
        small = hostile_min.minimise(self.seed, h, check, budget_s=60, max_reads=8)
        self.assertNotIn(f.cluster_off(e_cl) + 5, [o for o, _ in hm.byte_ranges(self.seed, small)])
        self.assertTrue(check(small))
        wd = os.path.join(self.tmp, "work")
        os.makedirs(os.path.join(wd, "findings"), exist_ok=True)
        args = argparse.Namespace(seed=1, timeout=30.0)
        d = hostile_findings.write_finding(wd, "fatsort", v, check.last, h, self.seed, small, args)
        self.assertTrue(os.path.basename(d).startswith("fatsort-overwrite-"))
        log = []
        self.assertEqual(hostile_findings.replay(d, log.append), 0, log)
        # the seed in its place: no overwrite
        import lzma
        with open(os.path.join(d, "hostile.img.xz"), "wb") as f2:
            f2.write(lzma.compress(self.seed))
        self.assertEqual(hostile_findings.replay(d, log.append), 1, log)
        with open(os.path.join(d, "hostile.img.xz"), "wb") as f2:
            f2.write(lzma.compress(small))
        from vfz.export import hostile as export_hostile
        out = os.path.join(self.tmp, "export")
        r = export_hostile.export_finding(d, out, run=True, timeout=60)
        with open(os.path.join(out, "printed.txt")) as f2:
            printed = f2.read()
        self.assertEqual(r["status"], 0, printed)
        with open(os.path.join(out, "image.img.xz"), "rb") as f2:
            self.assertEqual(lzma.decompress(f2.read()), small)     # the volume; run.sh adds the guard
        self.assertIn(f"BUG: fatsort changed 64 bytes {hostile_tx.PAST_END} (the first at image offset "
                      f"{len(self.seed)})", printed)

    def test_fsck_repair_inside_the_volume_is_silent(self):
        import random
        L = hm.Layout(fat12_seed())
        rng = random.Random(3)
        pat = hm.canary_pattern(rng)
        ps, tail = hm.m_canary(L, rng, pat)
        ps += L.fat_entry_patches(20, 0xFF7, False)          # FAT copies differ: a bad cluster in the first
        img = hm.apply(L.data, ps, tail)
        end = hm.declared_end(img)
        self.assertLess(end, len(img))
        rr, vs = self.run_tool(self.fsck, img)
        self.assertIsNone(rr.error, rr.raw)
        self.assertIn("[rc=1]", rr.raw)                        # it repaired something
        after = self.left()
        self.assertNotEqual(after[:end], img[:end])            # inside the volume
        self.assertEqual(after[end:], hostile_tx.given(img)[end:])
        self.assertEqual((rr.extra["writes"], vs), ([], []))

    def test_fsck_repair_creating_a_backup_boot_sector_is_silent(self):
        # FAT32: no backup boot sector named and sector 6 blank: fsck.fat -a
        # creates the backup there (a legitimate write among the reserved
        # sectors it otherwise leaves alone) and fixes FSINFO's magic
        with open(SEED_FAT32, "rb") as f:
            b = bytearray(f.read()[16:])
        struct.pack_into("<H", b, 50, 0)
        b[6 * 512:7 * 512] = bytes(512)
        b[512] ^= 0xFF
        img = bytes(b)
        regions = FsckRepairTransformer.untouched(img)
        self.assertEqual([(s, e) for s, e, _ in regions], [(2 * 512, 6 * 512), (7 * 512, 30 * 512)])
        rr, vs = self.run_tool(self.fsck, img)
        self.assertIn("Created backup of boot sector in sector 6", rr.raw)
        after = self.left()
        self.assertEqual(after[6 * 512:7 * 512], img[:50] + b"\x06\x00" + img[52:512])
        self.assertEqual(after[512], img[512] ^ 0xFF)
        self.assertEqual((rr.error, rr.extra["writes"], vs), (None, [], []))

    def test_fatsort_root_after_the_fats_is_silent(self):
        img = fat12_seed()
        (s, e, _), = fatsort.FatsortTransformer.untouched(img)
        self.assertEqual((s, e), (0, Fat(img).fat_off + 2 * Fat(img).spf * 512))
        rr, vs = self.run_tool(self.fatsort, img)
        self.assertIn("Directory reordered. Writing changes.", rr.raw)
        after = self.left()
        # the root region (starting where the FATs end) was rewritten
        self.assertNotEqual(after[e:e + 512], img[e:e + 512])
        self.assertEqual((rr.error, rr.extra["writes"], vs), (None, [], []))

    def test_crash_signatures(self):
        b = bytearray(fat12_seed())
        f = Fat(b)
        off = next(e[0] for e in f.short_entries(None) if e[2] & 0x10)
        struct.pack_into("<H", b, off + 26, 0)                  # a subdirectory at cluster 0
        rr, vs = self.run_tool(self.fatsort, bytes(b))
        self.assertEqual([(v.kind, v.message) for v in vs], [("crash", "fatsort SIGABRT assertion cluster > N")])
        known = core_volume(self.tmp, "before", LONG_BEFORE)
        rr, vs = self.run_tool(self.fatsort, known)
        self.assertEqual([(v.kind, v.message) for v in vs], [("crash", f"fatsort SIGSEGV [{fatsort.LONG_SET}]")])


if __name__ == "__main__":
    unittest.main()
