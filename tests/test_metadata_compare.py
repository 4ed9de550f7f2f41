#!/usr/bin/python3
"""The whole-metadata comparison (vfz.check.metadata) and its masks: every
byte of the boot sector, the reserved sectors, the FAT copies and the
directory slots of the core's images is compared; a flipped byte is
reported at its region and field, unless it is a valid time of a short
entry (CLOCK) or a hex-tail alias's digits (JIFFIES, when asked). The
kernel's side of the masks: two kernel writes of one script differ only
where CLOCK masks, and the twin pairs write the same metadata."""
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest

REPO = os.environ.get("VFAT_SRC") or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from vfz import fatimg, opscript  # noqa: E402
from vfz.check import diff, metadata  # noqa: E402
from vfz.oracles import core as core_oracle  # noqa: E402
from vfz.oracles import kernel as kernel_oracle  # noqa: E402

VFAT = core_oracle.vfat_binary()
# a subdirectory with long names (LFN slots), 8.3 names, a deleted entry
# (the unlink) and enough files to reach a second directory cluster on
# FAT32's 512-byte clusters
SCRIPT = "\n".join(['mkdir "/Sub Directory"', 'create "/Sub Directory/a long file name.txt" 700 1',
                    'create "/SHORT.TXT" 10 2', 'create "/gone file.txt" 30 3',
                    'unlink "/gone file.txt"', 'mkdir "/Sub Directory/deeper"']
                   + [f'create "/Sub Directory/deeper/file number {i}.dat" 5 {i}' for i in range(12)]) + "\n"


def core_image(tmp, fs):
    fat, size, cl = diff.parse_fs({"fat12": "fat12:2M", "fat16": "fat16:4M:512", "fat32": "fat32:34M:512"}[fs])
    img = os.path.join(tmp, f"{fs}.img")
    diff.mkfs(img, fat, size, cl)
    ops = os.path.join(tmp, "ops.txt")
    with open(ops, "w", encoding="utf-8") as f:
        f.write(SCRIPT)
    subprocess.run([VFAT, "apply", img, ops, "--names", "dual", "--no-sync"], check=True,
                   capture_output=True)
    with open(img, "rb") as f:
        return f.read()


def short_slots(b, free=2):
    """{slot offset: (region, slot bytes)} of every slot in use (short
    entries live or deleted, LFN slots) of every directory, and the first
    `free` slots past each end marker, from vfz.check.metadata's walk."""
    f = fatimg.Fat(b)
    dirs = metadata._walk(f, b)
    out = {}
    for key, (path, offs) in dirs.items():
        left = free
        for o in offs:
            s = b[o:o + 32]
            if s[0] == 0:
                if not left:
                    break
                left -= 1
            out[o] = ("root" if key is None else "dir", s)
    return out


def flip(b, off, mask=0x01):
    c = bytearray(b)
    c[off] ^= mask
    return bytes(c)


@unittest.skipUnless(os.access(VFAT, os.X_OK), "build/vfat not built")
class Flips(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="vfz-meta-")
        cls.img = {fs: core_image(cls.tmp, fs) for fs in ("fat12", "fat16", "fat32")}

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def one(self, b, off, mask=0x01, jiffies=False):
        masked = []
        got = metadata.compare(self.img_of(b), flip(b, off, mask), jiffies=jiffies, masked=masked)
        return got, masked

    def img_of(self, b):
        return b

    def test_identical(self):
        for fs, b in self.img.items():
            self.assertEqual(metadata.compare(b, bytes(b)), [], fs)

    def test_regions_reported(self):
        """One flip in each unmasked region is one difference there."""
        for fs, b in self.img.items():
            f = fatimg.Fat(b)
            want = [(3, "boot", "oem"), (0x25 if f.bits != 32 else 0x41, "boot", "state"),
                    (f.fat_off + 2 * 5, "fat1", "entry"),
                    (f.fat_off + f.spf * f.bps + 2 * 5, "fat2", "entry"),
                    (f.fat_off + f.spf * f.bps - 1, "fat1", "slack")]
            if f.bits == 32:
                want += [(f.bps + 488, "fsinfo", "free-count"), (f.bps + 492, "fsinfo", "next-free"),
                         (6 * f.bps + 3, "boot-backup", "oem"), (7 * f.bps + 488, "fsinfo-backup", "free-count"),
                         (2 * f.bps + 100, "reserved", "rest")]
            else:
                want += [(f.fat_off - f.bps + 7, "reserved", "rest")] if f.res > 1 else []
                root = f.data_sec * f.bps - f.rootent * 32
                # past the end marker: a slot in use in one image, a field of a free slot
                want += [(root + 32 * (f.rootent - 1), "root", "slot"),
                         (root + 32 * (f.rootent - 1) + 28, "root", "size")]
            for off, region, field in want:
                with self.subTest(fs=fs, off=off):
                    got, masked = self.one(b, off)
                    self.assertEqual([(d.region, d.field, d.offset <= off) for d in got],
                                     [(region, field, True)], got)
                    self.assertEqual(masked, [])

    def test_every_slot_byte(self):
        """Every byte of every directory slot reachable (root and
        subdirectories, live, deleted, LFN and free slots past the end
        marker): a flip is reported at that slot, or masked as CLOCK, and
        CLOCK only ever takes a time field of a short entry."""
        for fs in ("fat16", "fat32"):      # the fixed root and a cluster chain (FAT12's is FAT16's)
            b = self.img[fs]
            slots = short_slots(b)
            n_clock = n_rep = 0
            for o, (region, s) in sorted(slots.items()):
                short = s[0] != 0 and s[11] != 0x0F
                for i in range(32):
                    if i == 11:
                        continue             # the attr byte turns a slot into another kind
                    got, masked = self.one(b, o + i)
                    with self.subTest(fs=fs, slot=o, byte=i):
                        self.assertEqual(len(got) + len(masked), 1, (got, masked))
                        for d in got:
                            self.assertEqual(d.region, region)
                            self.assertTrue(d.offset <= o + i < d.offset + len(bytes.fromhex(d.mine)), d)
                        for name, d in masked:
                            self.assertEqual(name, "CLOCK")     # one byte never makes a write-back
                            self.assertTrue(short, d)
                            self.assertIn(i, (13, 14, 15, 16, 17, 18, 19, 22, 23, 24, 25), d)
                    n_clock += len(masked)
                    n_rep += len(got)
            self.assertGreater(n_clock, 0, fs)
            self.assertGreater(n_rep, n_clock, fs)

    def test_clock_mask_is_valid_times_only(self):
        """A valid time is the clock; month 13, hour 24 or 200
        centiseconds is not, and is reported."""
        b = self.img["fat16"]
        o = [o for o, (_, s) in short_slots(b).items() if s[0] not in (0, 0xE5) and s[11] == 0x20][0]
        for field, off, bad in (("mdate", 24, struct.pack("<H", (29 << 9) | (13 << 5) | 1)),
                                ("mtime", 22, struct.pack("<H", 24 << 11)),
                                ("ctime-cs", 13, bytes([200])), ("cdate", 16, struct.pack("<H", (29 << 9) | 1))):
            c = bytearray(b)
            c[o + off:o + off + len(bad)] = bad
            with self.subTest(field=field):
                self.assertEqual([d.field for d in metadata.compare(b, bytes(c))], [field])
            c = bytearray(b)
            c[o + off] ^= 0x02 if off != 13 else 0x01
            masked = []
            with self.subTest(field=field, valid=True):
                self.assertEqual(metadata.compare(b, bytes(c), masked=masked), [])
                self.assertEqual([(m, d.field) for m, d in masked], [("CLOCK", field)])

    def test_writeback_mask(self):
        """A deleted file's slot may hold zeros or its inode's write-back
        (a data cluster and a size above 0) -- WRITEBACK masks exactly
        that pair of values, in a deleted short slot, and nothing when the
        slot is live, when one field alone differs, or when neither side
        holds zeros."""
        for fs in ("fat16", "fat32"):
            b = self.img[fs]
            sl = short_slots(b)
            dead = [o for o, (_, s) in sorted(sl.items()) if s[0] == 0xE5 and s[11] != 0x0F]
            live = [o for o, (_, s) in sorted(sl.items()) if s[0] not in (0, 0xE5) and s[11] == 0x20]
            self.assertTrue(dead and live, fs)

            def put(o, start, size, base=b):
                c = bytearray(base)
                c[o + 20:o + 22] = struct.pack("<H", start >> 16)
                c[o + 26:o + 28] = struct.pack("<H", start & 0xFFFF)
                c[o + 28:o + 32] = struct.pack("<I", size)
                return bytes(c)
            o = dead[0]
            self.assertEqual(b[o + 20:o + 22] + b[o + 26:o + 32], bytes(8), "the core's deleted slot: zeros")
            with self.subTest(fs=fs, case="written back"):
                masked = []
                self.assertEqual(metadata.compare(b, put(o, 3, 30), masked=masked), [])
                self.assertEqual(sorted({(m, d.field) for m, d in masked}),
                                 [("WRITEBACK", "cluster-lo"), ("WRITEBACK", "size")])
                masked = []
                self.assertEqual(metadata.compare(put(o, 0x10003, 30), b, masked=masked), [])
            for case, other, base in (("cluster alone", put(o, 3, 0), b), ("size alone", put(o, 0, 30), b),
                                      ("cluster 1", put(o, 1, 30), b),
                                      ("neither zero", put(o, 3, 30), put(o, 4, 30)),
                                      ("live slot", put(live[0], 3, 30, put(live[0], 0, 0)),
                                       put(live[0], 0, 0))):
                with self.subTest(fs=fs, case=case):
                    masked = []
                    self.assertTrue(metadata.compare(base, other, masked=masked), case)
                    self.assertEqual(masked, [])

    def test_jiffies_mask(self):
        """A hex-tail alias's four digits (and the checksums of its LFN
        slots) are masked only when asked, and no other name byte."""
        b = self.img["fat16"]
        sl = short_slots(b)
        o = [o for o, (_, s) in sorted(sl.items()) if s[0] not in (0, 0xE5) and s[11] == 0x20
             and sl.get(o - 32, ("", b"\0" * 32))[1][11] == 0x0F][0]
        lfn = []
        while sl.get(o - 32 * (len(lfn) + 1), ("", b"\0" * 32))[1][11] == 0x0F:
            lfn.append(o - 32 * (len(lfn) + 1))

        def with_name(name):
            c = bytearray(b)
            c[o:o + 11] = name
            for p in lfn:
                c[p + 13] = fatimg.lfn_checksum(name)
            return bytes(c)
        a, z = with_name(b"SU12AB~1TXT"), with_name(b"SU9F0C~1TXT")
        self.assertEqual({d.field for d in metadata.compare(a, z)}, {"name", "checksum"})
        masked = []
        self.assertEqual(metadata.compare(a, z, jiffies=True, masked=masked), [])
        self.assertEqual({(m, d.field) for m, d in masked}, {("JIFFIES", "name"), ("JIFFIES", "checksum")})
        self.assertEqual(metadata.compare(a, with_name(b"SU9F0C~7TXT"), jiffies=True), [])
        for other in (b"SV12AB~1TXT", b"SU12AB_1TXT", b"SU12AB~9TXT", b"SU12AB~1TXU"):
            with self.subTest(other=other):
                self.assertIn("name", {d.field for d in metadata.compare(a, with_name(other), jiffies=True)})


def kernel_ready():
    return kernel_oracle.KernelNodualWriter(auto_build=False).available()[0]


@unittest.skipUnless(os.access(VFAT, os.X_OK) and kernel_ready(), "kernel guest or nodual modules not built")
class KernelMasks(unittest.TestCase):
    maxDiff = None
    """The masks' evidence: the kernel writes one script twice alike but
    for the clock; each twin pair writes the same metadata (a rename and
    an unlink before the write-back included: the deleted slots)."""

    def test_kernel_runs_and_twins(self):
        from vfz import oracles
        ops = opscript.parse(SCRIPT + 'rename "/SHORT.TXT" "/short renamed.txt"\n'
                             'unlink "/short renamed.txt"\nrmdir "/Sub Directory/deeper"\n'
                             + "".join(f'create "/FOOLON~{i}.TXT" 1 {i}\n' for i in range(1, 10))
                             + 'create "/foolongname.txt" 5 10\n')
        tmp = tempfile.mkdtemp(prefix="vfz-meta-k-")
        try:
            base = os.path.join(tmp, "base.img")
            diff.mkfs(base, 32, 34 << 20, 512)
            imgs = {}
            for name in ("kernel", "kernel#2", "core-dual", "kernel-nodual", "core-v1"):
                w = oracles.get_writer(name.split("#")[0], **({"vfat": VFAT} if name.startswith("core")
                                                              else {"auto_build": False}))
                p = os.path.join(tmp, name + ".img")
                shutil.copy(base, p)
                r = w.apply(p, ops, 120)
                self.assertIsNone(r.error, name)
                imgs[name] = p
            masked = []
            self.assertEqual(metadata.compare(imgs["kernel"], imgs["kernel#2"], jiffies=True, masked=masked), [])
            self.assertTrue({m for m, _ in masked} <= {"CLOCK", "JIFFIES"}, masked)
            self.assertEqual([str(d) for d in metadata.compare(imgs["core-dual"], imgs["kernel"], jiffies=True)], [])
            self.assertEqual(metadata.compare(imgs["core-v1"], imgs["kernel-nodual"]), [])
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    unittest.main(verbosity=2)
