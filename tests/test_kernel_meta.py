#!/usr/bin/python3
"""The second grammar in the kernel oracle (Linux 6.1 in QEMU, one VM for
the whole module): its writer runs truncate, chattr and touch through the
guest agent (truncate(2), FAT_IOCTL_SET_ATTRIBUTES, utimensat(2)) with the
model's results op by op and the core's bytes (the twin comparison, times
where the model predicts them); its reader lists FAT_IOCTL_GET_ATTRIBUTES
and statx's three times, which agree with the core's listing of the same
bytes under the reader's one mask (attribute bits 0x40 and 0x80 never
reach the inode).

Run by ctest with VFAT_BUILD=<build dir> and VFAT_SRC=<repo>; the guest is
built with vfz/oracles/kernel/build.sh when missing.
"""
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest

SRC = os.environ.get("VFAT_SRC") or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("VFAT_BUILD") or os.path.join(SRC, "build")
VFAT = os.path.join(BUILD, "vfat")
sys.path.insert(0, SRC)

from vfz import opscript  # noqa: E402
from vfz.check import checker, meta  # noqa: E402
from vfz.oracles import kernel as K  # noqa: E402
from vfz.oracles.evidence import core_listing  # noqa: E402

TMP = None

# Each line's Linux result is docs/op-script.md's; the model says the same
# (the test compares the kernel with it, not with these comments).
SCRIPT = """
create "/big.bin" 5000 7          # 10 clusters of 512 bytes (fat16:4M:512)
truncate "/big.bin" 1000          # shrunk across a cluster boundary
truncate "/big.bin" 9000          # extended with a hole: zeros
write "/big.bin" 12000 10 3       # a write past the end: another hole
truncate "/nothere" 5             # ENOENT
truncate "/big.bin/" 5            # ENOTDIR
mkdir "/Dir"
truncate "/Dir" 0                 # EISDIR
truncate "/" 0                    # EISDIR
chattr "/" rh                     # EINVAL: the root has no attributes
chattr "/" -                      # ok, nothing changes
chattr "/Dir" rhs                 # a directory keeps ATTR_DIR
create "/Dir/ro.txt" 100 1
chattr "/Dir/ro.txt" r
write "/Dir/ro.txt" 100 5 9       # root's CAP_DAC_OVERRIDE: read-only then modified
truncate "/Dir/ro.txt" 50
rename "/Dir/ro.txt" "/Dir/still ro.txt"
create "/old.txt" 1 1
touch "/old.txt" 86400 86400      # 1970-01-02: clamped to 1980-01-01
create "/far.txt" 1 1
touch "/far.txt" 7258118403 7258118403.5   # 2200: the last even second of 2107
create "/odd.txt" 1 1
touch "/odd.txt" 1246079973.75 1246079973  # 2 s and the day
touch "/Dir" 1000000001 1000000001
touch "/" 1000000000 1000000000   # ok, the root has no times
touch "/missing" 1 1              # ENOENT
chattr "/odd.txt/" a              # ENOTDIR
create "/gone.txt" 3000 4
chattr "/gone.txt" rhsa
unlink "/gone.txt"                # read-only, unlinked all the same
label "KEPT"                      # not sent to the kernel (its supports)
"""


def setUpModule():
    global TMP
    if shutil.which("qemu-system-x86_64") is None:
        raise unittest.SkipTest("qemu-system-x86_64 is not installed")
    p = subprocess.run([os.path.join(SRC, "vfz", "oracles", "kernel", "build.sh"),
                        os.path.join(BUILD, "kernel")], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if p.returncode != 0:
        raise RuntimeError("build.sh failed:\n" + p.stdout.decode(errors="replace"))
    TMP = tempfile.mkdtemp(prefix="vfz-kmeta-")


def tearDownModule():
    K.shutdown_all()
    if TMP:
        shutil.rmtree(TMP, ignore_errors=True)


class Writer(unittest.TestCase):
    def test_supports(self):
        ops = opscript.parse(SCRIPT)
        sent = checker.ops_for("kernel", ops)
        self.assertEqual([o.kind for o in ops if o not in sent], ["label"])
        self.assertEqual(sorted(e.name for e in K.ENTRIES),
                         ["kernel", "kernel-no83", "kernel-nodual", "kernel-nodual-v3"])
        for e in K.ENTRIES:
            self.assertLessEqual({"truncate", "chattr", "touch"}, e.supports)
            self.assertNotIn("label", e.supports)

    def test_model_and_twin(self):
        """The kernel's results are the model's, op by op; the core's
        writer on the same script writes the same attributes, and the times
        the model predicts, in both images; the core and the kernel read
        every image alike, attributes and times included."""
        ops = opscript.parse(SCRIPT)
        ck = checker.Checker(["core", "kernel"], ["kernel", "core-dual"], vfat=VFAT,
                             cfg={"kernel": {"auto_build": False}})
        try:
            res = ck.check(ops, "fat16", workdir=TMP)
        finally:
            ck.close()
        self.assertEqual(res.divs, {}, [d.detail for d in res.divs.values()])
        self.assertIn("core-dual-as-kernel", res.images)     # label left out: compared on the cut script
        self.assertEqual(res.verdicts["kernel"], {"core": "ok", "kernel": "ok"})
        ls = {e["path"]: e for e in core_listing(res.images["kernel"], 30)}
        self.assertEqual(ls["/big.bin"]["size"], 12010)
        self.assertEqual(ls["/Dir"]["attr"], 0x17)
        self.assertEqual(ls["/Dir/still ro.txt"]["attr"] & 0x21, 0x21)   # read-only, archive
        self.assertEqual(ls["/Dir/still ro.txt"]["size"], 50)
        self.assertEqual((ls["/old.txt"]["mtime"], ls["/old.txt"]["atime"]), (315532800, 315532800))
        self.assertEqual((ls["/far.txt"]["mtime"], ls["/far.txt"]["atime"]), (4354819198, 4354732800))
        self.assertEqual((ls["/odd.txt"]["mtime"], ls["/odd.txt"]["atime"]), (1246079972, 1246060800))
        self.assertNotIn("/gone.txt", ls)


class Reader(unittest.TestCase):
    def test_attributes_and_times_against_core(self):
        """Random time, date, access-date, creation fields and attribute
        bytes (reserved bits included) on 40 entries: the kernel shows what
        the core's listing decodes, under the mask; without the mask the
        entries with bits 0x40/0x80 differ, and only they."""
        img = os.path.join(TMP, "meta.img")
        subprocess.run([VFAT, "mkfs", img, "--size", "4M", "--fat", "16"], check=True,
                       stdout=subprocess.DEVNULL)
        script = os.path.join(TMP, "meta.ops")
        with open(script, "w") as f:
            f.write("".join(f'create "/F{i}.TXT" 10 {i}\n' for i in range(40)))
        subprocess.run([VFAT, "apply", img, script], check=True, stdout=subprocess.DEVNULL)
        rng = random.Random(2701)
        b = bytearray(open(img, "rb").read())
        reserved = set()
        for i in range(40):
            off = b.index(f"F{i}".ljust(8).encode() + b"TXT")
            attr = rng.choice([0x00, 0x20, 0x21, 0x26, 0x27, 0x40, 0x80, 0xE1])
            b[off + 11] = attr
            if attr & 0xC0:
                reserved.add(f"/F{i}.TXT")
            b[off + 13] = rng.randrange(256)                 # creation time's 10 ms
            for o in (14, 16, 18, 22, 24):                   # ctime, cdate, adate, time, date
                struct.pack_into("<H", b, off + o, rng.randrange(65536))
        with open(img, "wb") as f:
            f.write(b)
        rr = K.KernelReader(auto_build=False).read(img, 60)
        self.assertIsNone(rr.error)
        core = core_listing(img, 30)
        self.assertEqual(len(rr.listing), 40)
        for e in rr.listing:
            self.assertLessEqual(set(K.KernelReader.shows), set(e), e)
        self.assertEqual(meta.meta_changed(K.KernelReader, rr.listing, core), [])

        class Unmasked(K.KernelReader):
            shown = staticmethod(lambda field, value: value)
        got = meta.meta_changed(Unmasked, rr.listing, core)
        self.assertEqual({a["path"] for a, _ in got}, reserved)
        self.assertEqual({tuple(sorted(a)) for a, _ in got}, {("attr", "path")})


class Listing(unittest.TestCase):
    def test_parse(self):
        line = (b"T\t/a\tf\tf\t3\t" + b"0" * 64 + b"\t-\tok\t-\t21\t1246079972.000000000\t"
                b"1246060800.000000000\t1246079973.550000000\n"
                b"T\t/d\td\td\t0\t-\t-\tok\t-\tENOTTY\t1.000000000\t0.000000000\t-\n")
        entries, errors = K.parse_listing(line)
        self.assertEqual(errors, [])
        self.assertEqual(entries[0]["attr"], 0x21)
        self.assertEqual((entries[0]["mtime"], entries[0]["atime"]), (1246079972, 1246060800))
        self.assertEqual((entries[0]["crtime"], entries[0]["crtime_ns"]), (1246079973, 550000000))
        self.assertEqual(entries[1]["attr_error"], "ENOTTY")
        self.assertNotIn("crtime", entries[1])


if __name__ == "__main__":
    unittest.main(verbosity=2)
