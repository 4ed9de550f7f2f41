#!/usr/bin/python3
"""The seed patch at work: Debian's Linux 6.1 with the ported fat.ko/vfat.ko
(vfz/oracles/kernel-nodual, v1 and v3) writes images in a QEMU TCG guest
(vfz/oracles/kernel), and the bytes are checked on the host.

For a fixed op-script covering the docs/op-script.md name classes, on FAT12, FAT16
and FAT32:
  * every op answers as the model (vfz.model) says;
  * every long-named entry has LFN slots whose checksum matches an 11-byte
    short entry that is a well-formed dummy of the variant (v1: 20 00 r*6
    2F 00 00, NT 0; v3: '~', '/' for files only, the 35 invalid characters,
    the alias extension, NT 0x20), and the LFN spells the stored name;
  * names that are 8.3 under the variant's creation rule (win95 for v1 with
    shortname=mixed, winnt for v3) have no LFN and a plain short entry;
  * the stock kernel and the patched kernel read back exactly the expected
    tree (names, types, sizes, contents), without kernel complaints.
Also: the modules load with no message but the unsigned-module taint;
nodual_seed replays dummies byte for byte (checked against a host model of
the generator); without it the dummies come from the kernel's random
numbers; and the reader hunk (dir.c) finds a file whose dummy parses to an
empty short name, which the stock kernel cannot.
Issue 16: the July 2009 reader side (FAT_NO_83NAME, in v3 and alone in the
no83 build of the stock code) makes a v3 dummy no path (rmdir of the name
its 11 bytes spell is ENOENT, as in the C core; stock and v1 remove the
directory), and the core and the kernel write the same dummies when an
alias needs the hex-tail fallback (two seeded streams in both).

Needs the guest (vfz/oracles/kernel/build.sh, run automatically) and the modules
(vfz/oracles/kernel-nodual/build.sh, run here when missing).
"""
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, REPO)

from vfz import listing, model, opscript# noqa: E402
from vfz import oracles# noqa: E402
from vfz.oracles import kernel as kernel_oracle  # noqa: E402

NODUAL_BUILD = os.path.join(REPO, "vfz", "oracles", "kernel-nodual", "build.sh")
NODUAL_DIR = (os.path.join(os.environ["VFAT_BUILD"], "kernel-nodual")
              if os.environ.get("VFAT_BUILD") else os.path.join(REPO, "build", "kernel-nodual"))

# ------------------------------------------------------------------ the script
L255 = "L" + "".join(chr(ord("a") + i % 26) for i in range(250)) + ".text"
NAMES_SCRIPT = r'''
# 8.3 upper
create "/README.TXT" 10 1
mkdir "/DIR1"
create "/DIR1/A.B" 3 2
# 8.3 lower or mixed case
create "/readme.md" 20 3
mkdir "/lowdir"
create "/MixEd.Txt" 7 4
create "/lowdir/UPPER.c" 9 5
# long ASCII, slot boundaries (13, 26 units), 255 units
create "/A long file name with spaces.txt" 100 6
create "/exactly13char" 13 7
create "/exactly-26-characters-abc" 26 8
create "/LONG255" 1 9
# Latin-1 / BMP, CJK, astral
create "/caf\u00e9 r\u00e9sum\u00e9.txt" 5 10
mkdir "/\u00dcn\u00efc\u00f6d\u00e9 Dir"
create "/\u00dcn\u00efc\u00f6d\u00e9 Dir/\u65e5\u672c\u8a9e\u306e\u30d5\u30a1\u30a4\u30eb.txt" 300 11
create "/emoji \ud83d\ude00 name.txt" 4 12
# dots and spaces
create "/.hidden" 1 13
create "/..two dots" 1 14
create "/a.b.c.d" 1 15
create "/archive.tar.gz" 5000 16
create "/ leading space" 1 17
create "/inner   spaces here" 1 18
create "/trailing space " 1 19
create "/trailing dots..." 2 20
# valid in long names only; invalid everywhere
create "/a+b,c;d=e[f].txt" 1 21
create "/bad*name" 1 22
create "/ctl\u0001name" 1 23
create "/q?.txt" 1 24
# reserved device names
create "/CON" 1 25
create "/nul.txt" 1 26
mkdir "/COM1"
# names differing only by case
create "/Case Test" 1 27
create "/CASE TEST" 1 28
create "/case" 1 29
create "/CASE" 1 30
# names starting with 0xE5 (cp437 sigma, Latin-1 a-ring)
create "/\u03c3igma start" 1 31
create "/\u00e5ngstr\u00f6m" 1 32
create "/\u03c3.TXT" 1 33
# directories with long names, nesting, renames, deletions
mkdir "/Some Long Directory"
mkdir "/Some Long Directory/Nested directory two"
create "/Some Long Directory/Nested directory two/deep file name.bin" 3000 34
rename "/A long file name with spaces.txt" "/Some Long Directory/moved and renamed.txt"
rename "/readme.md" "/LOWDIR/short.md"
rename "/Case Test" "/case test"
rename "/exactly13char" "/DIR1/SHORT"
create "/to be deleted.txt" 1 35
unlink "/to be deleted.txt"
mkdir "/empty long directory"
rmdir "/empty long directory"
create "/Some Long Directory/replace target.txt" 5 36
create "/replace source file.txt" 6 37
rename "/replace source file.txt" "/Some Long Directory/replace target.txt"
write "/archive.tar.gz" 4000 3000 38
'''.replace('"/LONG255"', '"/' + L255 + '"')


def many_files_script(n=40):
    """Enough long names in one directory to span several clusters."""
    lines = ['mkdir "/many"']
    lines += [f'create "/many/file number {i:03d} with a long name.dat" {i} {i}' for i in range(n)]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------ FAT reading
INVALID35 = bytes([0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x0B, 0x0C] + list(range(0x0E, 0x20))
                  + [0x22, 0x2A, 0x3A, 0x3C, 0x3E, 0x3F, 0x5B, 0x5D, 0x7C])


def lfn_checksum(sn):
    s = 0
    for b in sn:
        s = ((((s & 1) << 7) | (s >> 1)) + b) & 0xFF
    return s


class Fat:
    """Just enough of FAT12/16/32 to walk directories (our own reader)."""

    def __init__(self, data):
        self.d = data
        (self.bps, self.spc, self.rsv, self.nf, self.rootent, tot16, _media,
         fatsz16) = struct.unpack_from("<HBHBHHBH", data, 11)
        tot = tot16 or struct.unpack_from("<I", data, 32)[0]
        self.fatsz = fatsz16 or struct.unpack_from("<I", data, 36)[0]
        rootsec = (self.rootent * 32 + self.bps - 1) // self.bps
        self.first_data = self.rsv + self.nf * self.fatsz + rootsec
        nclus = (tot - self.first_data) // self.spc
        self.bits = 12 if nclus < 4085 else 16 if nclus < 65525 else 32
        self.root_clus = struct.unpack_from("<I", data, 44)[0] if self.bits == 32 else 0

    def next(self, c):
        fo = self.rsv * self.bps
        if self.bits == 12:
            v = struct.unpack_from("<H", self.d, fo + c + c // 2)[0]
            v = v >> 4 if c & 1 else v & 0xFFF
            return v if v < 0xFF8 else None
        if self.bits == 16:
            v = struct.unpack_from("<H", self.d, fo + 2 * c)[0]
            return v if v < 0xFFF8 else None
        v = struct.unpack_from("<I", self.d, fo + 4 * c)[0] & 0x0FFFFFFF
        return v if v < 0x0FFFFFF8 else None

    def dir_bytes(self, clus):
        if clus == 0 and self.bits != 32:
            off = (self.rsv + self.nf * self.fatsz) * self.bps
            return self.d[off:off + self.rootent * 32]
        if clus == 0:
            clus = self.root_clus
        out, seen = [], set()
        while clus is not None and clus >= 2 and clus not in seen:
            seen.add(clus)
            off = (self.first_data + (clus - 2) * self.spc) * self.bps
            out.append(self.d[off:off + self.spc * self.bps])
            clus = self.next(clus)
        return b"".join(out)

    def entries(self, clus=0):
        """Live entries of a directory: dicts with sn, nt, attr, clus, lfn
        (decoded name or None), slots (raw LFN slots), sizes."""
        data = self.dir_bytes(clus)
        slots = []
        for i in range(0, len(data), 32):
            e = data[i:i + 32]
            if e[0] == 0:
                break
            if e[0] == 0xE5:
                slots = []
                continue
            if e[11] == 0x0F:
                slots.append(e)
                continue
            name = None
            if slots:
                units = b"".join(s[1:11] + s[14:26] + s[28:32] for s in reversed(slots))
                u = list(struct.unpack("<%dH" % (len(units) // 2), units))
                if 0 in u:
                    u = u[:u.index(0)]
                name = struct.pack("<%dH" % len(u), *u).decode("utf-16-le", "surrogatepass")
            yield {"sn": e[:11], "nt": e[12], "attr": e[11], "slots": slots, "lfn": name,
                   "clus": struct.unpack_from("<H", e, 26)[0]
                   | (struct.unpack_from("<H", e, 20)[0] << 16 if self.bits == 32 else 0)}
            slots = []

    def walk(self, clus=0, path=""):
        for e in self.entries(clus):
            if e["sn"] in (b".          ", b"..         ") or e["attr"] & 0x08:
                continue
            name = e["lfn"] if e["lfn"] is not None else short_display(e["sn"], e["nt"])
            e["path"] = path + "/" + name
            yield e
            if e["attr"] & 0x10:
                yield from self.walk(e["clus"], e["path"])


def short_display(sn, nt):
    """Name of a short-only entry as Linux shows it (ASCII 8.3 names)."""
    base = sn[:8].rstrip(b" ").decode("latin-1")
    ext = sn[8:].rstrip(b" ").decode("latin-1")
    if nt & 0x08:
        base = base.lower()
    if nt & 0x10:
        ext = ext.lower()
    return base + ("." + ext if ext else "")


def alias_ext(name):
    """Extension of the alias Linux makes for NAME (ASCII extensions only;
    None when the extension has other characters)."""
    dot = name.rfind(".")
    if dot < 0 or not name[:dot].strip(". "):
        return b"   "
    out = ""
    for c in name[dot + 1:]:
        if c in ". ":
            continue
        if not c.isascii():
            return None
        out += "_" if c in "+,;=[]" else c.upper()
        if len(out) == 3:
            break
    return out.ljust(3).encode()


def is_v1_dummy(sn, nt):
    return (sn[:2] == b" \0" and sn[8:] == b"/\0\0" and nt == 0
            and all(b < 32 for b in sn[2:8]) and any(sn[2:8]))


def v3_problem(sn, nt, is_dir, name):
    """None when SN is a well-formed v3 dummy for NAME, else why not."""
    if nt != 0x20:
        return f"NT byte {nt:#x}"
    base = sn[:8]
    if base.count(b"~") != 1:
        return "not exactly one '~'"
    if base.count(b"/") != (0 if is_dir else 1):
        return "wrong number of '/'"
    if any(b not in INVALID35 for b in base if b not in b"~/"):
        return "base byte outside the 35 invalid characters"
    want = alias_ext(name)
    if want is not None and sn[8:] != want:
        return f"extension {sn[8:]!r}, alias would have {want!r}"
    return None


# ------------------------------------------------------------ host model of the generator
M64 = (1 << 64) - 1


class SplitMix:
    def __init__(self, seed):
        self.s = seed

    def r32(self):
        self.s = (self.s + 0x9E3779B97F4A7C15) & M64
        z = self.s
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
        return (z ^ (z >> 31)) >> 32


def model_v1(g):
    r = (g.r32() & 0x3FFFFFFF) or 1
    return b" \0" + bytes((r >> (5 * i)) & 31 for i in range(6)) + b"/\0\0"


def model_v3_base(g, is_dir):
    r = g.r32()
    b = [None] * 8
    t = r % 8
    r >>= 3
    b[t] = 0x7E
    if not is_dir:
        b[(t + 1 + r % 7) % 8] = 0x2F
        r >>= 3
    for i in range(8):
        if b[i] is None:
            b[i] = INVALID35[r % 35]
            r //= 35
            if r < 35:          # fewer than 35 values left: a fresh number
                r = g.r32()
    return bytes(b)


# ------------------------------------------------------------ helpers
def mkfs(path, bits):
    size_kib = {12: 1440, 16: 20480, 32: 40960}[bits]
    if os.path.exists(path):
        os.unlink(path)
    cmd = ["mkfs.fat", "-C", "-F", str(bits)] + (["-s", "1"] if bits == 32 else []) \
        + [path, str(size_kib)]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert p.returncode == 0, p.stdout


def kmsg_of(raw):
    return raw.split("[kmsg]\n", 1)[1].splitlines() if "[kmsg]\n" in raw else []


def kmsg_records(raw):
    """/dev/kmsg records -> [(level, message)] (continuation lines dropped)."""
    out = []
    for line in raw.decode("utf-8", "replace").splitlines():
        if not line or line.startswith(" ") or ";" not in line:
            continue
        head, _, msg = line.partition(";")
        out.append((int(head.split(",")[0]) & 7, msg))
    return out


def have_tools():
    return all(shutil.which(t) for t in ("qemu-system-x86_64", "mkfs.fat", "gcc")) \
        and os.path.exists("/bin/busybox")


@unittest.skipUnless(have_tools(), "needs qemu-system-x86, dosfstools, busybox-static, gcc")
class KernelNodualTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not all(os.path.exists(os.path.join(NODUAL_DIR, v, m))
                   for v in ("v1", "v3", "no83") for m in ("fat.ko", "vfat.ko")):
            p = subprocess.run([NODUAL_BUILD, NODUAL_DIR], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, timeout=900)
            assert p.returncode == 0, p.stdout.decode(errors="replace")
        cls.tmp = tempfile.mkdtemp(prefix="vfz-knd-")
        cls.ops = opscript.parse(NAMES_SCRIPT)
        cls.exp_results, cls.exp_entries = model.expected(cls.ops)
        cls.stock = oracles.get_reader("kernel")
        cls.readers = {"v1": oracles.get_reader("kernel-nodual", nodual_dir=NODUAL_DIR),
                       "v3": oracles.get_reader("kernel-nodual-v3", nodual_dir=NODUAL_DIR)}

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def writer(self, variant, **cfg):
        name = {"v1": "kernel-nodual", "v3": "kernel-nodual-v3", "no83": "kernel-no83",
                "stock": "kernel"}[variant]
        return oracles.get_writer(name, nodual_dir=NODUAL_DIR, **cfg)

    def write(self, variant, ops, bits=16, **cfg):
        img = os.path.join(self.tmp, f"{variant}-fat{bits}-{len(ops)}.img")
        mkfs(img, bits)
        w = self.writer(variant, **cfg).apply(img, ops, timeout=120)
        self.assertIsNone(w.error, w.raw)
        with open(img, "rb") as f:
            return img, w, f.read()

    # -------------------------------------------------------------- the checks
    def check_entries(self, variant, data, entries):
        """Short entries well-formed, LFN exactly for the non-8.3 names."""
        rule = "win95" if variant == "v1" else "winnt"
        fat = Fat(data)
        seen = {}
        for e in fat.walk():
            path, is_dir = e["path"], bool(e["attr"] & 0x10)
            leaf = path.rsplit("/", 1)[1]
            with self.subTest(variant=variant, fat=fat.bits, path=path):
                if e["slots"]:
                    self.assertTrue(model.needs_lfn(leaf, rule), "8.3 name got LFN slots")
                    self.assertEqual({s[13] for s in e["slots"]}, {lfn_checksum(e["sn"])},
                                     "LFN checksum does not match the short entry")
                    self.assertEqual(len(e["slots"]), (model.utf16_len(leaf) + 12) // 13)
                    if variant == "v1":
                        self.assertTrue(is_v1_dummy(e["sn"], e["nt"]),
                                        f"not a v1 dummy: {e['sn'].hex(' ')} nt={e['nt']:#x}")
                    else:
                        self.assertIsNone(v3_problem(e["sn"], e["nt"], is_dir, leaf),
                                          e["sn"].hex(" "))
                else:
                    self.assertTrue(model.short_only(leaf, rule), "long name without LFN")
                    self.assertFalse(is_v1_dummy(e["sn"], e["nt"]))
                    self.assertEqual(e["nt"] & 0x20, 0)
                seen[path] = "dir" if is_dir else "file"
        want = {x["path"]: x["type"] for x in entries}
        self.assertEqual(seen, want, "names in the image differ from the expected tree")
        return fat

    def check_read_back(self, img, variant):
        for reader in (self.stock, self.readers[variant]):
            r = reader.read(img, timeout=120)
            with self.subTest(reader=reader.name, variant=variant, img=os.path.basename(img)):
                self.assertIsNone(r.error, r.raw[-2000:])
                self.assertEqual(r.complaints, [], r.raw[-2000:])
                self.assertEqual(listing.diff(self.exp_entries_for(img), r.listing), "")

    def exp_entries_for(self, img):
        return self._expected[img]

    def run_names(self, variant, bits):
        img, w, data = self.write(variant, self.ops, bits, seed=1000 + bits)
        self.assertEqual(w.results, self.exp_results, w.raw)
        self.assertEqual([m for m in kmsg_of(w.raw) if kernel_oracle.COMPLAINT_RE.search(m)],
                         [], w.raw)
        self.check_entries(variant, data, self.exp_entries)
        self._expected = {img: self.exp_entries}
        self.check_read_back(img, variant)

    # -------------------------------------------------------------- tests
    def test_names_v1_fat16(self):
        self.run_names("v1", 16)

    def test_names_v1_fat12(self):
        self.run_names("v1", 12)

    def test_names_v1_fat32(self):
        self.run_names("v1", 32)

    def test_names_v3_fat16(self):
        self.run_names("v3", 16)

    def test_names_v3_fat32(self):
        self.run_names("v3", 32)

    def test_many_long_names_in_one_directory(self):
        ops = opscript.parse(many_files_script())
        res, ents = model.expected(ops)
        for variant in ("v1", "v3"):
            img, w, data = self.write(variant, ops, 16)
            self.assertEqual(w.results, res)
            fat = self.check_entries(variant, data, ents)
            many = [e for e in fat.walk() if e["path"].startswith("/many/")]
            self.assertEqual(len(many), len(ops) - 1)
            self._expected = {img: ents}
            self.check_read_back(img, variant)

    def test_seed_replays_dummies(self):
        """nodual_seed=N: the dummies equal the host model of the generator."""
        names = ["first long name.txt", "Second Long Dir", "third.long.name.jpeg",
                 "x.tar.gz", "lower.txt", "fifth one"]
        dirs = {"Second Long Dir", "fifth one"}
        ops = opscript.parse("".join(
            (f'mkdir "/{n}"\n' if n in dirs else f'create "/{n}" 1 1\n') for n in names))
        for variant in ("v1", "v3"):
            rule = "win95" if variant == "v1" else "winnt"
            img, w, data = self.write(variant, ops, 16, seed=424242)
            got = {e["path"][1:]: e for e in Fat(data).walk()}
            g = SplitMix(424242)
            for n in names:
                with self.subTest(variant=variant, name=n):
                    if not model.needs_lfn(n, rule):
                        self.assertEqual(got[n]["slots"], [])   # lower.txt under v3
                        continue
                    if variant == "v1":
                        self.assertEqual(got[n]["sn"], model_v1(g))
                    else:
                        self.assertEqual(got[n]["sn"][:8], model_v3_base(g, n in dirs))
                        self.assertEqual(got[n]["sn"][8:], alias_ext(n))

    def test_creation_rule(self):
        """v1 follows shortname= (the seed leaves vfat_create_shortname
        alone); v3 always creates by the winnt rule."""
        ops = opscript.parse('create "/lower.txt" 1 1\ncreate "/UP.TXT" 1 2\n'
                             'create "/Mixed.txt" 1 3\nmkdir "/lowdir"\n')
        base = "codepage=437,iocharset=ascii,utf8,shortname="
        cases = [("v1", "mixed", {"/lower.txt", "/Mixed.txt", "/lowdir"}),
                 ("v1", "winnt", {"/Mixed.txt"}),
                 ("v3", "mixed", {"/Mixed.txt"}),
                 ("v3", "win95", {"/Mixed.txt"})]
        for variant, rule, want_lfn in cases:
            with self.subTest(variant=variant, shortname=rule):
                img, w, data = self.write(variant, ops, 16, options=base + rule)
                self.assertEqual(w.results, ["ok"] * 4, w.raw)
                ents = {e["path"]: e for e in Fat(data).walk()}
                self.assertEqual({p for p, e in ents.items() if e["slots"]}, want_lfn)
                for p, e in ents.items():
                    if e["slots"]:
                        ok = (is_v1_dummy(e["sn"], e["nt"]) if variant == "v1" else
                              v3_problem(e["sn"], e["nt"], bool(e["attr"] & 0x10), p[1:]) is None)
                        self.assertTrue(ok, (p, e["sn"].hex(" ")))
                    else:
                        self.assertEqual(short_display(e["sn"], e["nt"]), p[1:])

    def test_core_writes_the_same_dummies(self):
        """The C core (build/vfat, written independently from docs/write-paths.md) and
        the patched kernel, same seed, same script, same fresh image: every
        entry has the same short entry, NT byte and LFN slots, byte for byte."""
        core = os.path.join(os.environ.get("VFAT_BUILD") or os.path.join(REPO, "build"), "vfat")
        if not os.access(core, os.X_OK):
            self.skipTest(f"{core} not built")
        script = NAMES_SCRIPT + many_files_script(20)
        ops = opscript.parse(script)
        ops_file = os.path.join(self.tmp, "same.ops")
        with open(ops_file, "w") as f:
            f.write(script)
        for variant, bits in (("v1", 16), ("v1", 32), ("v3", 16), ("v3", 12)):
            with self.subTest(variant=variant, fat=bits):
                kimg = os.path.join(self.tmp, "same-kernel.img")
                cimg = os.path.join(self.tmp, "same-core.img")
                mkfs(kimg, bits)
                shutil.copy(kimg, cimg)
                w = self.writer(variant, seed=31337 + bits).apply(kimg, ops, timeout=120)
                self.assertIsNone(w.error, w.raw)
                p = subprocess.run([core, "apply", cimg, ops_file, "--names", "nodual",
                                    "--dummy", variant, "--seed", str(31337 + bits)],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                self.assertIn(p.returncode, (0, 1), p.stderr)
                with open(kimg, "rb") as f:
                    k = {e["path"]: e for e in Fat(f.read()).walk()}
                with open(cimg, "rb") as f:
                    c = {e["path"]: e for e in Fat(f.read()).walk()}
                self.assertEqual(sorted(k), sorted(c))
                self.assertGreater(sum(1 for e in k.values() if e["slots"]), 40)
                for path in sorted(k):
                    self.assertEqual((k[path]["sn"], k[path]["nt"], k[path]["slots"]),
                                     (c[path]["sn"], c[path]["nt"], c[path]["slots"]), path)

    def test_v3_dummy_is_no_path(self):
        """Issue 16 #1: the short entry of a long name written by v3 (here
        1e 13 12 1e 7e 2a 2a 0e 20 20 20, NT 0x20, nodual_seed=1, the default,
        as the core writes with --seed 1) spells a name. Without the July
        reader side a lookup of that name finds the directory (stock, v1);
        with it (v3, no83) the name is not there: ENOENT, as the core answers."""
        made = opscript.parse('mkdir "/a long directory name"\n')
        img, w, data = self.write("v3", made, 16)
        self.assertEqual(w.results, ["ok"], w.raw)
        ents = [e for e in Fat(data).walk() if e["path"] == "/a long directory name"]
        self.assertEqual(len(ents), 1)
        sn, nt = ents[0]["sn"], ents[0]["nt"]
        self.assertEqual(sn.hex(), "1e13121e7e2a2a0e202020")
        self.assertEqual(nt, 0x20)
        base, ext = sn[:8].rstrip(b" "), sn[8:].rstrip(b" ")
        leaf = (base + (b"." + ext if ext else b"")).decode("latin-1")
        rm = [opscript.Op("rmdir", ["/" + leaf])]
        want = {"stock": "ok", "v1": "ok", "v3": "ENOENT", "no83": "ENOENT"}
        got = {}
        for variant in want:
            copy = os.path.join(self.tmp, f"nopath-{variant}.img")
            shutil.copy(img, copy)
            r = self.writer(variant).apply(copy, rm, timeout=120)
            self.assertIsNone(r.error, r.raw)
            got[variant] = r.results[0]
        self.assertEqual(got, want)
        # found by its long name all the same
        r = self.writer("v3").apply(img, opscript.parse('rmdir "/A LONG DIRECTORY NAME"\n'),
                                    timeout=120)
        self.assertEqual(r.results, ["ok"], r.raw)

    def test_dummies_do_not_depend_on_the_hex_tail(self):
        """Issue 16 #2: FOOLON~1.TXT .. FOOLON~9.TXT, then foolongname.txt
        (its alias needs the hex-tail fallback, which reads jiffies), seed
        42: the core and the kernel write the same short entries, byte for
        byte (v1: 20 00 06 11 0c 0e 1d 1e 2f 00 00)."""
        core = os.path.join(os.environ.get("VFAT_BUILD") or os.path.join(REPO, "build"), "vfat")
        if not os.access(core, os.X_OK):
            self.skipTest(f"{core} not built")
        script = "".join(f'create "/FOOLON~{i}.TXT" 1 {i}\n' for i in range(1, 10))
        script += 'create "/foolongname.txt" 5 10\n'
        ops = opscript.parse(script)
        ops_file = os.path.join(self.tmp, "foolon.ops")
        with open(ops_file, "w") as f:
            f.write(script)
        for variant in ("v1", "v3"):
            with self.subTest(variant=variant):
                kimg = os.path.join(self.tmp, f"foolon-kernel-{variant}.img")
                cimg = os.path.join(self.tmp, f"foolon-core-{variant}.img")
                mkfs(kimg, 16)
                shutil.copy(kimg, cimg)
                w = self.writer(variant, seed=42).apply(kimg, ops, timeout=120)
                self.assertIsNone(w.error, w.raw)
                self.assertEqual(w.results, ["ok"] * 10, w.raw)
                p = subprocess.run([core, "apply", cimg, ops_file, "--names", "nodual",
                                    "--dummy", variant, "--seed", "42"],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                self.assertEqual(p.returncode, 0, p.stderr)
                with open(kimg, "rb") as f:
                    k = {e["path"]: e for e in Fat(f.read()).walk()}
                with open(cimg, "rb") as f:
                    c = {e["path"]: e for e in Fat(f.read()).walk()}
                self.assertEqual(sorted(k), sorted(c))
                if variant == "v1":
                    self.assertEqual(k["/foolongname.txt"]["sn"].hex(" "),
                                     "20 00 06 11 0c 0e 1d 1e 2f 00 00")
                for path in sorted(k):
                    self.assertEqual((k[path]["sn"], k[path]["nt"], k[path]["slots"]),
                                     (c[path]["sn"], c[path]["nt"], c[path]["slots"]), path)

    def test_nodual_writers_are_seeded_by_default(self):
        """Issue 16 #2: a kernel nodual writer without a seed in its cfg
        takes the core writers' default (1): two runs write the same bytes,
        and they equal `vfat apply --seed 1`."""
        self.assertEqual(kernel_oracle.DEFAULT_SEED, 1)
        ops = opscript.parse('mkdir "/a long directory name"\n')
        shorts = []
        for _ in range(2):
            img, w, data = self.write("v3", ops, 16)
            self.assertIn("[nodual_seed=1]", w.raw)
            shorts.append([e["sn"].hex() for e in Fat(data).walk()])
        self.assertEqual(shorts[0], shorts[1])
        self.assertEqual(shorts[0], ["1e13121e7e2a2a0e202020"])

    def test_default_uses_kernel_random_numbers(self):
        """No seed: two runs of the same script give different dummies."""
        ops = opscript.parse("".join(f'create "/random dummy {i}.txt" 1 1\n' for i in range(8)))
        runs = []
        for _ in range(2):
            w = self.writer("v1", seed=0)    # 0 = back to the kernel's numbers
            img = os.path.join(self.tmp, "rand.img")
            mkfs(img, 16)
            self.assertIsNone(w.apply(img, ops, timeout=120).error)
            with open(img, "rb") as f:
                ents = list(Fat(f.read()).walk())
            self.assertEqual(len(ents), 8)
            self.assertTrue(all(is_v1_dummy(e["sn"], e["nt"]) for e in ents))
            runs.append([e["sn"] for e in ents])
        # 8 dummies of 30 random bits each: equal by chance with p = 2^-240
        self.assertNotEqual(runs[0], runs[1])
        self.assertEqual(len(set(runs[0])), 8)

    def test_modules_load_cleanly(self):
        """A fresh guest (stock modules loaded at boot), then the patched
        ones: the only messages are the unsigned-module taint lines."""
        from vfz.oracles.kernel import vm as vmmod
        build_dir = kernel_oracle.default_build_dir()
        self.assertIsNone(kernel_oracle.ensure_build(build_dir))
        vm = vmmod.VM(build_dir)
        try:
            vm.ensure()
            vm.request("K", timeout=10.0)          # whatever came after boot
            for variant in ("v1", "v3"):
                mods = []
                for m in ("fat", "vfat"):
                    with open(os.path.join(NODUAL_DIR, variant, m + ".ko"), "rb") as f:
                        mods.append(vmmod.s(m) + vmmod.s(f.read()) + vmmod.s(""))
                # the agent's M command: unload fat/vfat, load these in order
                (st, log), (kst, raw) = vm.pipeline(
                    [("M", struct.pack("<I", len(mods)) + b"".join(mods)), ("K", b"")], 60.0)
                self.assertEqual(st, "o", log)
                self.assertEqual(kst, "o")
                recs = kmsg_records(raw)
                msgs = [m for _, m in recs]
                taint = ("loading out-of-tree module taints kernel",
                         "module verification failed: signature and/or required key missing")
                with self.subTest(variant=variant):
                    # nothing at KERN_WARNING or worse but the taint line, and
                    # nothing at all from fat/vfat but the taint lines
                    self.assertEqual([m for lvl, m in recs if lvl <= 4
                                      and not any(t in m for t in taint)], [], msgs)
                    self.assertEqual([m for m in msgs if ("fat" in m.lower() or "FAT" in m)
                                      and not any(t in m for t in taint)], [], msgs)
                    if variant == "v1":
                        # first unsigned module of this boot: the taint is reported
                        # (so the messages of the load were really captured)
                        for t in taint:
                            self.assertTrue(any(t in m for m in msgs), (t, msgs))
                    st, val = vm.request("W", vmmod.s("/sys/module/vfat/parameters/nodual_seed")
                                         + vmmod.s("5"), timeout=10.0)
                    self.assertEqual(st, "o", val)
        finally:
            vm.close()

    def test_colliding_dummies(self):
        """Two equal dummies in one directory (a v1 collision, forced here):
        both files are still found by long name, and unlinking one leaves
        the other intact."""
        ops = opscript.parse('create "/first long name.txt" 10 1\n'
                             'create "/second long name.txt" 20 2\n'
                             'create "/third long name.txt" 30 3\n')
        img, w, data = self.write("v1", ops, 16)
        data = bytearray(data)
        fat = Fat(bytes(data))
        root = (fat.rsv + fat.nf * fat.fatsz) * fat.bps
        shorts = [off for off in range(root, root + fat.rootent * 32, 32)
                  if data[off] and data[off + 11] != 0x0F]
        self.assertEqual(len(shorts), 3)
        first, second = shorts[0], shorts[1]
        data[second:second + 11] = data[first:first + 11]
        c = lfn_checksum(bytes(data[first:first + 11]))
        j = second - 32
        while data[j + 11] == 0x0F:
            data[j + 13] = c
            j -= 32
        with open(img, "wb") as f:
            f.write(data)
        ents = list(Fat(bytes(data)).walk())
        self.assertEqual(ents[0]["sn"], ents[1]["sn"])
        _, want = model.expected(ops)
        for reader in (self.stock, self.readers["v1"]):
            r = reader.read(img, timeout=120)
            self.assertEqual(listing.diff(want, r.listing), "", reader.name)
        more = opscript.parse('unlink "/second long name.txt"\n'
                              'create "/fourth long name.txt" 40 4\n')
        w = self.writer("v1").apply(img, more, timeout=120)
        self.assertEqual(w.results, ["ok", "ok"], w.raw)
        _, want = model.expected(ops + more)
        r = self.readers["v1"].read(img, timeout=120)
        self.assertEqual(listing.diff(want, r.listing), "")
        self.assertEqual(r.complaints, [])

    def test_reader_hunk_finds_empty_short_name(self):
        """A dummy with a space extension parses to an empty short name:
        stock 6.1 lists the file but cannot open it; the patch can."""
        ops = opscript.parse('create "/hidden behind a blank.txt" 77 5\n'
                             'create "/VISIBLE.TXT" 3 6\n')
        img, w, data = self.write("v1", ops, 16)
        data = bytearray(data)
        fat = Fat(bytes(data))
        root = (fat.rsv + fat.nf * fat.fatsz) * fat.bps
        for off in range(root, root + fat.rootent * 32, 32):
            if data[off + 11] != 0x0F and data[off:off + 2] == b" \0":
                data[off + 8:off + 11] = b"   "
                c = lfn_checksum(bytes(data[off:off + 11]))
                j = off - 32
                while j >= root and data[j + 11] == 0x0F:
                    data[j + 13] = c
                    j -= 32
                break
        else:
            self.fail("no dummy written")
        with open(img, "wb") as f:
            f.write(data)
        path = "/hidden behind a blank.txt"
        stock = {e["path"]: e for e in self.stock.read(img, timeout=120).listing}
        self.assertIn(path, stock)                       # readdir lists it
        self.assertNotIn("sha256", stock[path])          # lookup fails
        self.assertEqual(stock[path].get("stat_error"), "ENOENT")
        patched = self.readers["v1"].read(img, timeout=120)
        self.assertIsNone(patched.error)
        _, want = model.expected(ops)
        self.assertEqual(listing.diff(want, patched.listing), "")


if __name__ == "__main__":
    unittest.main(verbosity=2)
