#!/usr/bin/python3
"""The name policy (core/src/names.c) against the real Linux 6.1 vfat
driver in QEMU (vfz/oracles/kernel), under all four shortname= rules:

1. creation: the same names are created in the same directories by the
   kernel and by names.c (through tests/names_driver.c, which adds the
   VFS lookup); each short entry (11 bytes, NT case byte, LFN or not) and
   each error must agree. The kernel's hex tails come from jiffies, so
   their four hex digits and the digit after '~' are masked.
2. display: short-only entries with crafted bytes and NT case bits are
   listed by the kernel; the names must be what
   vfat_shortname_to_utf16_rule shows.

Exit 0 when everything agrees, 1 on a mismatch, 2 when it cannot run.
"""
import errno
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time

SRC = os.environ.get("VFAT_SRC") or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("VFAT_BUILD") or os.path.join(SRC, "build")
os.environ.setdefault("VFAT_BUILD", BUILD)
sys.path.insert(0, SRC)

from vfz.oracles.kernel import KernelReader, KernelWriter, shutdown_all  # noqa: E402
from vfz.opscript import Op  # noqa: E402

RULES = {"lower": 1, "win95": 2, "winnt": 3, "mixed": 4}
OPTIONS = "codepage=437,iocharset=ascii,utf8,shortname={}"

# Names created in order, one directory per group.
GROUPS = [
    ["README.TXT", "readme2.txt", "README3.txt", "readme4.TXT", "ReadMe5.txt",
     "abcdefgh", "12345678.123", "a1", "CON", "nul.txt", "x.y"],
    ["readme.txt", "README.TXT", "abc", "ABC", "abc."],
    ["longfilename%d.txt" % i for i in range(1, 12)],
    ["LONGFILENAME.TXT", "ABCDEFGHI", "a+b", "[a];b,c=d", ".bashrc", "...test",
     ".a.b", ".profile.d", "a.b.c", "archive.tar.gz", "file.html",
     "ABCDEFGH.TXTX", "ab.html"],
    ["my file.txt", " abc", "ABC .TXT", "ABCDEFGH .TXT", "a.t x", "\u00e9.txt",
     "\u00c9", "\u00e5.txt", "\u03c3x", "\u00e0", "\u4e2d\u6587.txt",
     "\U0001F600", "abcdef+", "abcde+", "a\u007f"],
    ["a+%d" % i for i in range(1, 12)],
    ["+", "=", ";", ",", "[", "]"] + ["+%d" % i for i in range(1, 5)],
    ["+x%d" % i for i in range(1, 12)],
    ["x.", "y...", "z. ", "...", "....", ". .", " lead", "in ner", "trail ", "a*b", "a?b", "a<b",
     "a>b", "a|b", 'a"b', "a:b", "a\\b", "a\u0001", "a\tb", "AUX", "COM1",
     "LPT1.doc", "\u00e5ngstr\u00f6m", "caf\u00e9", "\u03b1\u03b2\u03b3",
     "\u03a9mega.TXT", "\u03c9mega.txt", "\u00ff\u00a0x"],
    ["abc~1.txt", "abc~1.TXT", "ABC~1.TXT", "abc", "abcdefghijklm",
     "a" * 255, "b" * 256, "\U0001F600" * 127 + "c", "\U0001F600" * 128],
    ["Ab.TXT", "aB.txt", "ab.Txt", "AB.tXT", "MiXeD", "lower", "UPPER",
     "lower.UPP", "UPPER.low", "x1.y2", "X1.Y2", "+,;=[]"],
    # ten names with base "_" (1 byte) and ten with "__" (2 bytes): hex
    # tails of short bases
    ["+", "=", ";", ",", "[", "]", "\u4e2d", "\u6587", "\u5b57", "\u65e5", "\u6708"],
    [chr(0x1F600 + i) for i in range(11)],
    [chr(0x1F600 + i) + ".j" for i in range(11)],
    ["\xc0\xc1\xc2", "\u0192x", "\u2591\u2588", "\u00df", "\u00b5", "\u00c4",
     "\u00e4.\u00c4", "\u00c7\u00e7", "\u00d1.\u00f1"],
]

# Short-only entries: (11 bytes, NT byte). Names must stay distinct
# under every rule and contain no '/' or NUL before the first byte.
def sn(base, ext=b""):
    return base.ljust(8) + ext.ljust(3)


DISPLAY = [
    (sn(b"READA", b"TXT"), 0x00), (sn(b"READB", b"TXT"), 0x08),
    (sn(b"READC", b"TXT"), 0x10), (sn(b"READD", b"TXT"), 0x18),
    (sn(b"\x05BC", b"TXT"), 0x00), (sn(b"\x05BD", b"TXT"), 0x08),
    (sn(b"\x90A", b"TXT"), 0x00), (sn(b"\x90B", b"TXT"), 0x08),
    (sn(b"\xe8C"), 0x08), (sn(b"A B", b"C"), 0x00), (sn(b"", b"TXT"), 0x00),
    (sn(b"ABC", b"T X"), 0x00), (b"AB\x00XXXXXTXT", 0x00), (sn(b"\x01BC"), 0x00),
    (sn(b"\xb0\xdb"), 0x00), (sn(b"low", b"txt"), 0x00), (sn(b"lox", b"txt"), 0x18),
    (sn(b"\x8e"), 0x08), (sn(b"\xe1D"), 0x08), (sn(b"\x80A"), 0x08),
    (sn(b"A.B"), 0x00), (sn(b"ABD", b"TX"), 0x00), (sn(b"\xffA"), 0x00),
    (sn(b"NOEXT"), 0x18), (sn(b"MIX", b"ABC"), 0x10),
    (sn(b"\x9aX", b"\x99\x8f\x92"), 0x18), (sn(b" LEAD"), 0x00),
]
assert all(len(b) == 11 for b, _ in DISPLAY)


def build_driver(tmp):
    exe = os.path.join(tmp, "names_driver")
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if not cc:
        raise RuntimeError("no C compiler to build tests/names_driver.c")
    subprocess.run([cc, "-std=c11", "-O1", "-I", os.path.join(SRC, "core/include"),
                    "-I", os.path.join(SRC, "core/src"),
                    os.path.join(SRC, "tests/names_driver.c"),
                    os.path.join(SRC, "core/src/names.c"),
                    os.path.join(SRC, "core/src/cp437.c"), "-o", exe], check=True)
    return exe


def run_driver(exe, lines):
    p = subprocess.run([exe], input="".join(l + "\n" for l in lines).encode(),
                       stdout=subprocess.PIPE, check=True, timeout=60)
    return p.stdout.decode().splitlines()


def mkfs(path):
    mk = shutil.which("mkfs.fat") or "/sbin/mkfs.fat"
    subprocess.run([mk, "-C", "-F", "16", path, "65536"], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


class Fat16:
    """Just enough of FAT16 to read raw directory entries back."""

    def __init__(self, img):
        self.img = img
        bps, spc, res, nf, rootent = struct.unpack_from("<HBHBH", img, 11)
        fatsz = struct.unpack_from("<H", img, 22)[0]
        self.fat = res * bps
        self.root = (res + nf * fatsz) * bps
        self.rootlen = rootent * 32
        self.data = self.root + self.rootlen
        self.csz = spc * bps

    def chain(self, c):
        out = b""
        while 2 <= c < 0xFFF8:
            off = self.data + (c - 2) * self.csz
            out += self.img[off:off + self.csz]
            c = struct.unpack_from("<H", self.img, self.fat + 2 * c)[0]
        return out

    @staticmethod
    def entries(raw):
        """[(11 bytes, NT byte, has LFN, first cluster)] in directory order."""
        out, lfn = [], False
        for i in range(0, len(raw), 32):
            e = raw[i:i + 32]
            if e[0] == 0:
                break
            if e[0] == 0xE5:
                lfn = False
                continue
            if e[11] == 0x0F:
                lfn = True
                continue
            if e[:11] not in (b".          ", b"..         "):
                out.append((bytes(e[:11]), e[12], int(lfn),
                            struct.unpack_from("<H", e, 26)[0]))
            lfn = False
        return out

    def subdir(self, name11):
        for sn, _, _, clus in self.entries(self.img[self.root:self.root + self.rootlen]):
            if sn == name11:
                return self.entries(self.chain(clus))
        return None


def masked(sn):
    """Hide a hex tail BA####~D (the kernel takes it from jiffies)."""
    b = bytearray(sn)
    t = b.find(b"~")
    if 4 <= t <= 6 and re.fullmatch(rb"[0-9A-F]{4}", bytes(b[t - 4:t])):
        b[t - 4:t + 2] = b"????~?"
    return bytes(b)


def check_creation(exe, tmp, rule, rv):
    img = os.path.join(tmp, rule + ".img")
    mkfs(img)
    ops = []
    for gi, g in enumerate(GROUPS):
        ops.append(Op("mkdir", ["/G%d" % gi]))
        ops += [Op("create", ["/G%d/%s" % (gi, n), 0, 0]) for n in g]
    w = KernelWriter(options=OPTIONS.format(rule))
    res = w.apply(img, ops, timeout=600)
    if res.error:
        raise RuntimeError("kernel writer: " + res.error)
    with open(img, "rb") as f:
        fs = Fat16(f.read())
    lines = []
    for g in GROUPS:
        lines.append("R %d" % rv)
        lines += ["N " + n.encode("utf-8").hex() for n in g]
    mine = iter(l for l in run_driver(exe, lines))
    results = iter(res.results)
    bad = n = 0
    for gi, g in enumerate(GROUPS):
        if next(results) != "ok":
            raise RuntimeError("kernel could not mkdir /G%d" % gi)
        kents = iter(fs.subdir(("G%d" % gi).ljust(11).encode()) or [])
        for name in g:
            kr, m = next(results), next(mine)
            n += 1
            if kr == "ok":
                sn, lc, lfn, _ = next(kents)
                got = "%s %02x %d" % (masked(sn).hex(), lc, lfn)
                if not m.startswith("ERR"):
                    sn2, rest = m.split(" ", 1)
                    m = masked(bytes.fromhex(sn2)).hex() + " " + rest
            else:
                got = "ERR %d" % getattr(errno, kr, -1)
            if got != m:
                bad += 1
                print("MISMATCH shortname=%s create %r: kernel %s, names.c %s"
                      % (rule, name, got, m))
    return n, bad


def check_display(exe, tmp, rule, rv):
    img = os.path.join(tmp, "display.img")
    if os.path.exists(img):
        os.remove(img)
    mkfs(img)
    with open(img, "r+b") as f:
        fs = Fat16(f.read())
        f.seek(fs.root)
        for sn, nt in DISPLAY:
            f.write(sn + bytes([0x20, nt]) + bytes(19))
    r = KernelReader(options=OPTIONS.format(rule)).read(img, timeout=600)
    if r.error or r.listing is None:
        raise RuntimeError("kernel reader: %s" % r.error)
    got = sorted(e["path"].lstrip("/") for e in r.listing)
    out = run_driver(exe, ["D %d %02x %s" % (rv, nt, sn.hex()) for sn, nt in DISPLAY])
    want = sorted(bytes.fromhex(h).decode("utf-8") for h in out if h != "-")
    if got != want:
        print("MISMATCH shortname=%s display:\n  kernel  %r\n  names.c %r"
              % (rule, got, want))
        return len(DISPLAY), 1
    return len(DISPLAY), 0


def main():
    tmp = tempfile.mkdtemp(prefix="vfz-names-")
    try:
        exe = build_driver(tmp)
        total = bad = 0
        for rule, rv in RULES.items():
            for check in (check_creation, check_display):
                t0 = time.monotonic()
                n, b = check(exe, tmp, rule, rv)
                print("%s shortname=%s: %d cases, %d mismatches, %.1f s"
                      % (check.__name__, rule, n, b, time.monotonic() - t0),
                      flush=True)
                total += n
                bad += b
    except (RuntimeError, OSError, subprocess.SubprocessError) as e:
        print("test_names_kernel: cannot run: %s" % e)
        return 2
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        shutdown_all()
    print("test_names_kernel: %d cases (creations and shown names, 4 rules), "
          "%d mismatches" % (total, bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
