#!/usr/bin/python3
"""The I/O-bounds oracle (vfz/iobounds.py, harnesses/iotrace/) against real
programs.

The preload library records each wrapped call of build/iotrace_probe at the
offset, length and result the program used (read, pread, readv, preadv,
write, pwrite, writev, pwritev, mmap, a dup'd and a dup2'd fd, ftruncate,
openat, fread/fwrite through a FILE, a short fread at the end), nothing of a
file it does not watch and nothing after close; past the record cap only
the accesses past the declared volume are written. fsck.fat -n and mdir read
a clean volume in bounds and print the same with and without the library.
A hand-made hostile volume -- a FAT32 volume whose declared size was cut by
one cluster and whose file (400 bytes) starts at the first cluster past the new end
(mtools' off-by-one, finding mtools-canary-1a43bdab48) -- makes mtype read
past the volume: the verdict names that cluster's first sector and the
command; through the hostile campaign's reader (vfz.hostile.bounds) it is
an out-of-bounds verdict, written as a finding that --replay reproduces (and
not with the clean volume in its place). fatsort's overwrite finding replayed under the
library is a write past the volume. The footer probe of sleuthkit on a
padded clean volume is its named trait, not a verdict. FatFs's disk layer
and U-Boot's QEMU record their sectors: FatFs reads past a truncated image,
U-Boot reads its canary finding's cluster past the volume.
"""
import argparse
import os
import lzma
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from vfz import iobounds
from vfz.hostile import findings as hostile_findings
from vfz.hostile import transform as hostile_tx# noqa: E402
from vfz.hostile import verdict as hv# noqa: E402
from vfz.hostile import mutate as hm# noqa: E402
from vfz.fatimg import Fat  # noqa: E402

BUILD = os.environ.get("VFAT_BUILD") or os.path.join(REPO, "build")
PROBE = os.path.join(BUILD, "iotrace_probe")
LIB = os.path.join(BUILD, iobounds.LIB)
MTOOLS_ENV = {"MTOOLS_SKIP_CHECK": "1"}


def data(path):
    with open(path, "rb") as f:
        return f.read()


def clean_volume(path):
    """A 34 MiB FAT32 volume (mkfs.fat) with /F.TXT (700 bytes) and /D."""
    subprocess.run(["mkfs.fat", "-C", "-F", "32", path, "34816"], check=True, capture_output=True)
    src = path + ".f"
    with open(src, "wb") as f:
        f.write(b"contents of f\n" * 50)
    subprocess.run(["mcopy", "-i", path, src, "::/F.TXT"], check=True, env=dict(os.environ, **MTOOLS_ENV))
    subprocess.run(["mmd", "-i", path, "::/D"], check=True, env=dict(os.environ, **MTOOLS_ENV))
    os.unlink(src)


def cut_volume(path):
    """The volume's declared size cut by one cluster; /F.TXT moved to the
    first cluster wholly past the new end (an EOC there) -> (its first
    sector, the declared bytes)."""
    with open(path, "rb") as f:
        b = bytearray(f.read())
    fat = Fat(b)
    new_total = fat.total - fat.spc
    struct.pack_into("<I", b, 32, new_total)
    cut = Fat(b)
    first = cut.clusters + 2                      # one past the last cluster of the cut volume
    root = cut.cluster_off(cut.root_cluster)
    for off in range(root, root + cut.csize, 32):
        if cut.b[off:off + 11] == b"F       TXT":
            struct.pack_into("<H", cut.b, off + 26, first & 0xFFFF)
            struct.pack_into("<H", cut.b, off + 20, first >> 16)
            struct.pack_into("<I", cut.b, off + 28, 400)       # within that one cluster
            break
    else:
        raise AssertionError("F.TXT not in the root")
    cut.set(first, 0x0FFFFFFF)
    with open(path, "wb") as f:
        f.write(bytes(cut.b))
    return cut.data_sec + (first - 2) * cut.spc, new_total * fat.bps


@unittest.skipUnless(os.path.exists(LIB) and os.path.exists(PROBE), "build the default preset first")
class Judge(unittest.TestCase):
    """judge() alone: the boot sector's read is how a tool learns the
    declared volume, never a read past it; everything else is judged."""

    def acc(self, kind, off, n):
        return iobounds.Access(kind, "disk_read" if kind == "read" else "disk_write", off, n, n, 0, "mount")

    def test_boot_sector_read_of_a_tiny_declared_volume(self):
        t = iobounds.Trace(accesses=[self.acc("read", 0, 512), self.acc("read", 0, 4096)])
        self.assertEqual(iobounds.judge(t, 192, 102400), [])
        t = iobounds.Trace(accesses=[self.acc("write", 0, 512), self.acc("read", 4096, 512),
                                     self.acc("read", 0, 4097)])
        got = [(o.kind, o.region, o.offset) for o in iobounds.judge(t, 192, 102400)]
        self.assertEqual(got, [("write", "past volume", 0), ("read", "past volume", 4096),
                               ("read", "past volume", 0)])
        # a boot sector read past a short image is still past the image
        t = iobounds.Trace(accesses=[self.acc("read", 0, 512)])
        self.assertEqual([o.region for o in iobounds.judge(t, 192, 300)], ["past image"])


class Library(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="vfz-test-iob-")
        self.img = os.path.join(self.tmp, "p.img")
        with open(self.img, "wb") as f:
            f.write(bytes(65536))
        self.other = os.path.join(self.tmp, "other")
        with open(self.other, "wb") as f:
            f.write(b"not watched\n")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def probe(self, declared=0, cap=None):
        trace = os.path.join(self.tmp, "t.txt")
        env = dict(os.environ, **iobounds.env(trace, self.img, declared, "probe IMAGE", LIB))
        if cap is not None:
            env["VFZ_IOTRACE_MAX"] = str(cap)
        p = subprocess.run([PROBE, self.img, self.other], env=env, capture_output=True, text=True)
        self.assertEqual((p.returncode, p.stdout), (0, "ok\n"), p.stderr)
        return iobounds.read_trace(trace)

    def test_every_call_at_its_offset(self):
        t = self.probe()
        got = [(a.kind, a.call, a.offset, a.length, a.result) for a in t.accesses]
        self.assertEqual(got, [
            ("read", "read", 0, 100, 100), ("read", "read", 1000, 50, 50),
            ("read", "pread", 5000, 10, 10), ("read", "readv", 1050, 100, 100),
            ("read", "preadv", 7000, 100, 100), ("write", "write", 8000, 20, 20),
            ("write", "pwrite", 9000, 30, 30), ("write", "writev", 8020, 100, 100),
            ("write", "pwritev", 10000, 100, 100), ("map", "mmap", 8192, 4096, 1),
            ("read", "pread", 11000, 11, 11), ("read", "pread", 12000, 12, 12),
            ("truncate", "ftruncate", 65536, 0, 0), ("read", "pread", 13000, 13, 13),
            ("read", "fread", 3000, 64, 64), ("write", "fwrite", 3064, 16, 16),
            ("read", "fread", 65526, 100, 10)])
        self.assertEqual({a.op for a in t.accesses}, {"probe IMAGE"})
        self.assertEqual([o[2] for o in t.opens], ["open", "openat", "fopen"])
        self.assertEqual((t.dropped, t.unfinished), (0, []))
        # judged: the short fread at the end asked past the image; with a
        # declared volume of 9000 bytes the accesses ending past it too
        oob = iobounds.judge(t, None, 65536)
        self.assertEqual([(o.kind, o.region, o.offset, o.sector) for o in oob],
                         [("read", "past image", 65526, 128)])
        oob = iobounds.judge(t, 9000, 65536)
        self.assertEqual([(o.kind, o.region, o.offset, o.sector) for o in oob],
                         [("write", "past volume", 9000, 17), ("write", "past volume", 10000, 19),
                          ("map", "past volume", 8192, 17), ("read", "past volume", 11000, 21),
                          ("read", "past volume", 12000, 23), ("read", "past volume", 13000, 25),
                          ("read", "past image", 65526, 128)])

    def test_cap_keeps_the_accesses_past_the_volume(self):
        t = self.probe(declared=9000, cap=3)
        self.assertEqual([a.offset for a in t.accesses if a.kind != "map"][:3], [0, 1000, 5000])
        # past the cap: only what ends past the volume (mappings and
        # truncations are always written); the 6 others counted
        past = [(a.kind, a.offset) for a in t.accesses[3:]]
        self.assertEqual(past, [("write", 9000), ("write", 10000), ("map", 8192), ("read", 11000),
                                ("read", 12000), ("truncate", 65536), ("read", 13000), ("read", 65526)])
        self.assertEqual(t.dropped, 6)


@unittest.skipUnless(os.path.exists(LIB) and shutil.which("fsck.fat") and shutil.which("mdir"),
                     "needs the library, dosfstools and mtools")
class Tools(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="vfz-test-iob-")
        cls.clean = os.path.join(cls.tmp, "clean.img")
        clean_volume(cls.clean)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def copy(self, name):
        p = os.path.join(self.tmp, name)
        shutil.copyfile(self.clean, p)
        return p

    def test_clean_volume_in_bounds_and_same_output(self):
        size = os.path.getsize(self.clean)
        for argv in (["fsck.fat", "-n", self.clean], ["mdir", "-i", self.clean, "-/", "-a", "::/"]):
            plain = subprocess.run(argv, capture_output=True, env=dict(os.environ, **MTOOLS_ENV))
            p, t = iobounds.run(argv, self.clean, size)
            self.assertEqual((p.rc, p.out, p.err), (plain.returncode, plain.stdout, plain.stderr), argv)
            self.assertGreater(len(t.accesses), 2, argv)
            self.assertEqual(iobounds.judge(t, size, size), [], argv)
            self.assertEqual(set(t.ops.values()), {iobounds.label(argv, [self.clean])})

    def test_hostile_volume_read_past_the_volume(self):
        img = self.copy("cut.img")
        sector, declared = cut_volume(img)
        p, t = iobounds.run(["mtype", "-i", img, "::/F.TXT"], img, declared)
        oob = iobounds.judge(t, declared, os.path.getsize(img))
        self.assertTrue(oob, p.raw())
        self.assertEqual({(o.kind, o.region) for o in oob}, {("read", "past volume")})
        self.assertEqual(oob[0].sector, sector)
        self.assertIn(f"(sector {sector}, 512 done) by read in `mtype -i IMAGE ::/F.TXT`", oob[0].describe())
        # the campaign's reader: one out-of-bounds verdict, the sector in its evidence
        reader = hostile_tx.tool("mtools")
        try:
            rr = reader.read(img, 30)
            vs = hv.classify(rr, data(img), None, 30)
            clean = hv.classify(reader.read(self.clean, 30), data(self.clean), None, 30)
        finally:
            reader.close()
        self.assertEqual([(v.kind, v.message) for v in vs], [("out-of-bounds", "mcopy read past volume")])
        self.assertIn(f"(sector {sector}, ", vs[0].evidence)
        self.assertEqual(clean, [])
        # written as a finding, it replays; the clean volume in its place does not
        wd = os.path.join(self.tmp, "work")
        os.makedirs(os.path.join(wd, "findings"), exist_ok=True)
        h = {"seed_name": "clean", "patches": [], "tail": b"", "kinds": ["canary"], "canary": None,
             "image": data(img), "index": 0}
        d = hostile_findings.write_finding(wd, "mtools", vs[0], rr, h, data(self.clean), data(img),
                                           argparse.Namespace(seed=1, timeout=30.0))
        self.assertTrue(os.path.basename(d).startswith("mtools-out-of-bounds-"))
        log = []
        self.assertEqual(hostile_findings.replay(d, log.append), 0, log)
        with open(os.path.join(d, "hostile.img.xz"), "wb") as f:
            f.write(lzma.compress(data(self.clean)))
        self.assertEqual(hostile_findings.replay(d, log.append), 1, log)

    @unittest.skipUnless(shutil.which("fatsort"), "needs fatsort")
    def test_fatsort_overwrite_is_a_write_past_the_volume(self):
        d = os.path.join(REPO, "reports", "hostile", "fatsort-overwrite-da7dfadaf8")
        with open(os.path.join(d, "hostile.img.xz"), "rb") as f:
            image = lzma.decompress(f.read())
        path = os.path.join(self.tmp, "fs.img")
        with open(path, "wb") as f:
            f.write(image)
        tx = hostile_tx.tool("fatsort")
        try:
            rr = tx.read(path, 30)
        finally:
            tx.close()
        end = hm.declared_end(image)
        writes = [o for o in rr.extra["io"]["out"] if o["kind"] == "write"]
        self.assertTrue(writes)
        self.assertEqual({o["region"] for o in writes}, {"past volume"})
        self.assertEqual(writes[0]["sector"], end // 512)
        msgs = [v.message for v in hv.classify(rr, image, None, 30) if v.kind == "out-of-bounds"]
        self.assertEqual(msgs, ["fatsort write past volume [fatsort-long-set-3-clusters]"])

    @unittest.skipUnless(shutil.which("fls"), "needs sleuthkit")
    def test_sleuthkit_footer_probe_is_its_trait(self):
        img = self.copy("padded.img")
        with open(img, "ab") as f:
            f.write(bytes(65536))
        reader = hostile_tx.tool("sleuthkit")
        try:
            rr = reader.read(img, 30)
        finally:
            reader.close()
        size = os.path.getsize(img)
        probes = [o for o in rr.extra["io"]["out"] if o["offset"] == size - 512 and o["length"] == 8]
        self.assertTrue(probes)
        self.assertEqual({o["exception"] for o in probes}, {"sleuthkit-footer-probe"})
        self.assertEqual(rr.extra["io"]["verdicts"], [])


class Fatfs(unittest.TestCase):
    """FatFs's disk layer records its sectors (server.js), a read past the
    image included (answered RES_ERROR): the image cut in the middle of
    /BIG's clusters, the volume still declaring them."""

    def test_sectors_recorded_and_past_the_image(self):
        from vfz.oracles import fatfs
        ok, why = fatfs.available()
        if not ok:
            self.skipTest(why)
        tmp = tempfile.mkdtemp(prefix="vfz-test-iob-")
        reader = hostile_tx.tool("fatfs")
        try:
            img = os.path.join(tmp, "v.img")
            subprocess.run(["mkfs.fat", "-C", "-F", "12", img, "1024"], check=True, capture_output=True)
            big = os.path.join(tmp, "big")
            with open(big, "wb") as f:
                f.write(bytes(range(256)) * 2048)           # 512 KiB: the volume's second half
            subprocess.run(["mcopy", "-i", img, big, "::/BIG"], check=True, env=dict(os.environ, **MTOOLS_ENV))
            rr = reader.read(img, 30)
            io = rr.extra["io"]
            self.assertIsNone(rr.error)
            self.assertGreater(io["accesses"], 3)
            self.assertEqual((io["out"], io["verdicts"]), ([], []))
            with open(img, "r+b") as f:
                f.truncate(384 * 1024)                      # the volume declares 1 MiB
            rr = reader.read(img, 30)
            out = rr.extra["io"]["out"]
            self.assertTrue(out, rr.complaints)
            self.assertEqual({(o["kind"], o["region"], o["call"], o["op"]) for o in out},
                             {("read", "past image inside volume", "disk_read", "f_open/f_read /BIG")})
            self.assertEqual(min(o["sector"] for o in out), 768)
            self.assertEqual([v.message for v in hv.classify(rr, data(img), None, 30)],
                             ["fatfs read past image inside volume"])
        finally:
            reader.close()
            shutil.rmtree(tmp, ignore_errors=True)


class Uboot(unittest.TestCase):
    """U-Boot's QEMU logs the block layer: the canary finding's volume (a
    file on a cluster past the declared end) is read past the volume at the
    declared end's sector; its seed is read in bounds (one board, a swap)."""

    def test_canary_volume_read_past_the_volume(self):
        from vfz.oracles import uboot
        ok, why = uboot.available()
        if not ok:
            self.skipTest(why)
        d = os.path.join(REPO, "reports", "hostile", "uboot-canary-43a6dbb7d9")
        tmp = tempfile.mkdtemp(prefix="vfz-test-iob-")
        reader = hostile_tx.tool("uboot", iotrace=True)
        try:
            got = {}
            for name in ("hostile", "seed"):
                with open(os.path.join(d, name + ".img.xz"), "rb") as f:
                    image = lzma.decompress(f.read())
                path = os.path.join(tmp, "v.img")
                with open(path, "wb") as f:
                    f.write(image)
                rr = reader.read(path, 60)
                self.assertIsNone(rr.error, rr.raw[-2000:])
                self.assertGreater(rr.extra["io"]["accesses"], 10)
                got[name] = (rr.extra["io"]["out"], hv.classify(rr, image, None, 60))
            out, vs = got["hostile"]
            with open(os.path.join(d, "hostile.img.xz"), "rb") as f:
                fat = Fat(lzma.decompress(f.read()))
            # the root's file whose first cluster lies past the declared volume
            (c,) = [e[3] for e in fat.short_entries(None) if e[3] > fat.clusters + 1]
            self.assertEqual({(o["kind"], o["region"], o["call"]) for o in out},
                             {("read", "past volume", "blk_co_preadv")})
            self.assertEqual(min(o["sector"] for o in out), fat.data_sec + (c - 2) * fat.spc)
            self.assertEqual([(v.kind, v.message) for v in vs],
                             [("out-of-bounds", "uboot read past volume")])
            self.assertEqual(got["seed"], ([], []))
        finally:
            reader.close()
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
