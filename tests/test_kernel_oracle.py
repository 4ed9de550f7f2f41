#!/usr/bin/python3
"""The kernel oracle against the real Debian 6.1 kernel in QEMU (TCG).

Run by ctest with VFAT_BUILD=<build dir> and VFAT_SRC=<repo>; builds the
guest with vfz/oracles/kernel/build.sh when it is missing. Images are made with
the real mkfs.fat and mtools, or written byte by byte here (hand-made
nodual entries, damaged chains); the expected trees are computed from what
was put in.
"""
import os
import random
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
import unittest

SRC = os.environ.get("VFAT_SRC") or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("VFAT_BUILD") or os.path.join(SRC, "build")
KBUILD = os.path.join(BUILD, "kernel")
sys.path.insert(0, SRC)

from vfz.oracles import kernel as K  # noqa: E402
from vfz.oracles.kernel.vm import VMError  # noqa: E402
from vfz import iobounds, listing, opscript  # noqa: E402

TMP = None
MT_ENV = None


def setUpModule():
    global TMP, MT_ENV
    for tool in ("mkfs.fat", "fsck.fat", "mcopy", "mmd", "mdir", "qemu-system-x86_64"):
        if shutil.which(tool) is None:
            raise RuntimeError(f"{tool} is not installed")
    p = subprocess.run([os.path.join(SRC, "vfz", "oracles", "kernel", "build.sh"), KBUILD],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if p.returncode != 0:
        raise RuntimeError("build.sh failed:\n" + p.stdout.decode(errors="replace"))
    TMP = tempfile.mkdtemp(prefix="vfz-ktest-")
    rc = os.path.join(TMP, "mtoolsrc")
    with open(rc, "w") as f:
        f.write("mtools_skip_check=1\ndefault_codepage=437\n")
    MT_ENV = dict(os.environ, MTOOLSRC=rc, MTOOLS_SKIP_CHECK="1", LC_ALL="C.UTF-8", LANG="C.UTF-8")


def tearDownModule():
    K.shutdown_all()
    if TMP:
        shutil.rmtree(TMP, ignore_errors=True)


# ------------------------------------------------------------------ helpers
def run(argv, **kw):
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=MT_ENV,
                          timeout=60, **kw)


def mkfs(name, kib=8192, extra=()):
    path = os.path.join(TMP, name)
    if os.path.exists(path):
        os.unlink(path)
    p = run(["mkfs.fat", *extra, "-C", path, str(kib)])
    assert p.returncode == 0, p.stderr
    return path


def mt_mkdir(img, path):
    p = run(["mmd", "-i", img, "::" + path])
    assert p.returncode == 0, (path, p.stderr)


def mt_put(img, path, data):
    src = os.path.join(TMP, "_content")
    with open(src, "wb") as f:
        f.write(data)
    p = run(["mcopy", "-i", img, src, "::" + path])
    assert p.returncode == 0, (path, p.stderr)


def mdir_paths(img):
    p = run(["mdir", "-/", "-b", "-a", "-i", img, "::/"])
    out = set()
    for line in p.stdout.decode("utf-8").splitlines():
        if line.startswith("::/"):
            s = line[2:]
            out.add(s[:-1] if s.endswith("/") and len(s) > 1 else s)
    return out


def expected_listing(tree):
    """tree: {path: bytes for a file, None for a dir}"""
    return listing.normalize([listing.entry(p, "dir") if d is None else listing.entry(p, "file", d)
                              for p, d in tree.items()])


class Geometry:
    """FAT12/16 layout of an image made by mkfs.fat (enough for these tests)."""

    def __init__(self, f):
        f.seek(0)
        bs = f.read(512)
        self.bps, self.spc, self.rsv, self.nfats, self.rootn = struct.unpack_from("<HBHBH", bs, 11)
        self.fatsz = struct.unpack_from("<H", bs, 22)[0]
        self.root = (self.rsv + self.nfats * self.fatsz) * self.bps
        self.data = self.root + self.rootn * 32
        self.csize = self.bps * self.spc
        f.seek(self.rsv * self.bps)
        self.fat = bytearray(f.read(self.fatsz * self.bps))

    def get(self, c):  # FAT12
        v = struct.unpack_from("<H", self.fat, c * 3 // 2)[0]
        return v >> 4 if c & 1 else v & 0xFFF

    def put(self, c, val):
        o = c * 3 // 2
        v = struct.unpack_from("<H", self.fat, o)[0]
        v = (v & 0x000F) | (val << 4) if c & 1 else (v & 0xF000) | val
        struct.pack_into("<H", self.fat, o, v)

    def chain(self, c):
        out = [c]
        while self.get(out[-1]) < 0xFF8 and len(out) < 10000:
            out.append(self.get(out[-1]))
        return out

    def write_fat(self, f):
        for k in range(self.nfats):
            f.seek((self.rsv + k * self.fatsz) * self.bps)
            f.write(self.fat)

    def root_entries(self, f):
        f.seek(self.root)
        raw = f.read(self.rootn * 32)
        return [raw[i:i + 32] for i in range(0, len(raw), 32)]


def lfn_checksum(short11):
    c = 0
    for b in short11:
        c = (((c & 1) << 7) + (c >> 1) + b) & 0xFF
    return c


def lfn_slots(name, chk):
    units = [name.encode("utf-16-le")[i:i + 2] for i in range(0, 2 * len(name), 2)]
    n = (len(units) + 12) // 13
    if len(units) % 13:
        units.append(b"\0\0")
    while len(units) < 13 * n:
        units.append(b"\xff\xff")
    slots = []
    for i in range(n):
        u = units[13 * i:13 * i + 13]
        seq = (i + 1) | (0x40 if i == n - 1 else 0)
        slots.append(bytes([seq]) + b"".join(u[0:5]) + bytes([0x0F, 0, chk]) +
                     b"".join(u[5:11]) + b"\0\0" + b"".join(u[11:13]))
    return slots[::-1]


def pattern(seed, n):
    return opscript.content(seed, n)


# ------------------------------------------------------------------- tests
class ReaderListing(unittest.TestCase):
    def test_mtools_image_listing_equals_expected(self):
        img = mkfs("names.img", 16384)
        deep = "/deep"
        tree = {"/Dir A": None, "/中文目录": None, deep: None}
        for i in range(12):
            deep += f"/level {i} dir"
            tree[deep] = None
        tree.update({
            "/README": pattern(1, 10),
            "/MiXeD.Txt": pattern(2, 0),
            "/Dir A/a long file name.txt": pattern(3, 2048),
            "/Dir A/name with  two spaces.txt": pattern(4, 2049),
            "/Dir A/file.with.many.dots.txt": pattern(5, 1),
            "/中文目录/文件.txt": pattern(6, 70000),
            "/中文目录/Ünïcödé ñame.dat": pattern(7, 333),
            "/" + "L" * 120 + "ong.name": pattern(8, 4096),
            deep + "/leaf file.bin": pattern(9, 5000),
        })
        for p in sorted(tree):
            if tree[p] is None:
                mt_mkdir(img, p)
        for p, d in sorted(tree.items()):
            if d is not None:
                mt_put(img, p, d)
        self.assertEqual(mdir_paths(img), set(tree))  # mtools agrees with what we put in

        r = K.KernelReader(build_dir=KBUILD)
        res = r.read(img)
        self.assertIsNone(res.error, res.raw)
        self.assertEqual(listing.normalize(res.listing), expected_listing(tree),
                         listing.diff(expected_listing(tree), res.listing))
        self.assertEqual(res.complaints, [], res.raw)
        self.assertEqual(res.extra["mount"], "ok")
        # options are per request: with shortname=lower an all-upper 8.3
        # name is shown in lower case, everything else stays
        lower = "codepage=437,iocharset=ascii,utf8,shortname=lower"
        r2 = K.KernelReader(build_dir=KBUILD, options=lower)
        for res2 in (r2.read(img), r.read(img, options=lower)):
            paths = {e["path"] for e in res2.listing}
            self.assertIn("/readme", paths)
            self.assertNotIn("/README", paths)
            self.assertIn("/Dir A/a long file name.txt", paths)
        # a bad option: the kernel refuses the mount and says why
        bad = r.read(img, options="codepage=437,nosuchoption")
        self.assertIsNone(bad.listing)
        self.assertIn("mount failed: EINVAL", bad.complaints)
        self.assertTrue(any("nosuchoption" in c for c in bad.complaints), bad.complaints)

    def test_read_many_and_unmountable(self):
        good = mkfs("many.img")
        mt_put(good, "/x.txt", b"abc")
        bad = os.path.join(TMP, "zeros.img")
        with open(bad, "wb") as f:
            f.write(bytes(1 << 20))
        r = K.KernelReader(build_dir=KBUILD)
        res = r.read_many([good, bad, good, os.path.join(TMP, "does-not-exist.img")])
        self.assertEqual(listing.normalize(res[0].listing),
                         expected_listing({"/x.txt": b"abc"}))
        self.assertIsNone(res[1].listing)
        self.assertTrue(any(c.startswith("mount failed: EINVAL") for c in res[1].complaints),
                        res[1].complaints)
        self.assertTrue(any("FAT-fs" in c for c in res[1].complaints), res[1].raw)
        self.assertEqual(res[2].listing, res[0].listing)  # nothing leaked from the bad one
        self.assertIn("cannot read image", res[3].error)


    def test_no_leak_between_same_size_images(self):
        # same geometry, same names, other contents and one extra file: the
        # guest reuses its loop device, so stale caches would show here
        a = mkfs("leak-a.img")
        b = mkfs("leak-b.img")
        mt_put(a, "/Same name.txt", pattern(1, 3000))
        mt_put(b, "/Same name.txt", pattern(2, 3000))
        mt_put(b, "/only in b.txt", pattern(3, 10))
        ea = expected_listing({"/Same name.txt": pattern(1, 3000)})
        eb = expected_listing({"/Same name.txt": pattern(2, 3000), "/only in b.txt": pattern(3, 10)})
        for drop in (True, False):   # the unmount alone must be enough
            res = K.KernelReader(build_dir=KBUILD, drop_caches=drop).read_many([a, b, a, b, b, a])
            self.assertEqual([listing.normalize(x.listing) for x in res],
                             [ea, eb, ea, eb, eb, ea], drop)


    def test_threads_share_one_vm(self):
        a = mkfs("thr-a.img")
        b = mkfs("thr-b.img")
        mt_put(a, "/in a.txt", pattern(1, 100))
        mt_put(b, "/in b.txt", pattern(2, 200))
        ea = expected_listing({"/in a.txt": pattern(1, 100)})
        eb = expected_listing({"/in b.txt": pattern(2, 200)})
        r = K.KernelReader(build_dir=KBUILD)
        w = K.KernelWriter(build_dir=KBUILD)
        boots = r.vm().boots
        out = {}

        def work(key, img):
            out[key] = [listing.normalize(x.listing) for x in r.read_many([img] * 8)]

        def write():
            c = mkfs("thr-c.img")
            out["w"] = [w.apply(c, opscript.parse(f'mkdir "/d{i}"')).results for i in range(8)]

        ts = [threading.Thread(target=work, args=("a", a)), threading.Thread(target=work, args=("b", b)),
              threading.Thread(target=write)]
        for th in ts:
            th.start()
        for th in ts:
            th.join()
        self.assertEqual(out["a"], [ea] * 8)
        self.assertEqual(out["b"], [eb] * 8)
        self.assertEqual(out["w"], [["ok"]] * 8)
        self.assertEqual(r.vm().boots, boots)


class Writer(unittest.TestCase):
    SCRIPT = [
        ('mkdir "/Dir A"', "ok"),
        ('create "/Dir A/long name file.txt" 1000 7', "ok"),
        ('create "/Dir A/long name file.txt" 10 7', "EEXIST"),
        ('create "/bad*name.txt" 10 1', "EINVAL"),
        ('create "/q?.txt" 10 1', "EINVAL"),
        ('mkdir "/中文"', "ok"),
        ('create "/中文/文件.bin" 70000 3', "ok"),
        ('write "/中文/文件.bin" 69990 20 9', "ok"),
        ('rmdir "/Dir A"', "ENOTEMPTY"),
        ('rename "/Dir A/long name file.txt" "/中文/moved name.txt"', "ok"),
        ('unlink "/nonexistent"', "ENOENT"),
        ('rmdir "/中文/文件.bin"', "ENOTDIR"),
        ('create "/UPPER.TXT" 5 1', "ok"),
        ('create "/lower.txt" 6 2', "ok"),
        ('create "/upper.txt" 6 2', "EEXIST"),     # case-insensitive names
        ('mkdir "/Dir A/sub"', "ok"),
        ('rename "/Dir A" "/Dir A/sub/inside"', "EINVAL"),
        ('rmdir "/Dir A/sub"', "ok"),
        ('rmdir "/Dir A"', "ok"),
        ('create "/tmp file" 100 4', "ok"),
        ('unlink "/tmp file"', "ok"),
        ('create "/' + "n" * 255 + '" 1 1', "ok"),
        ('create "/' + "n" * 256 + '" 1 1', "ENAMETOOLONG"),
    ]

    def test_apply_then_read_back(self):
        img = mkfs("write.img")
        ops = opscript.parse("\n".join(s for s, _ in self.SCRIPT))
        w = K.KernelWriter(build_dir=KBUILD)
        res = w.apply(img, ops)
        self.assertIsNone(res.error, res.raw)
        self.assertEqual(res.results, [e for _, e in self.SCRIPT], res.raw)
        # the model: apply the ops that succeeded
        tree = {}
        for op, out in zip(ops, res.results):
            if out != "ok":
                continue
            if op.kind == "mkdir":
                tree[op.path] = None
            elif op.kind == "create":
                tree[op.path] = pattern(op.args[2], op.args[1])
            elif op.kind == "write":
                off, size, seed = op.args[1:]
                old = tree[op.path]
                new = bytearray(old.ljust(off + size, b"\0"))
                new[off:off + size] = pattern(seed, size)
                tree[op.path] = bytes(new)
            elif op.kind == "rename":
                tree[op.args[1]] = tree.pop(op.path)
            else:
                del tree[op.path]
        exp = expected_listing(tree)
        got = K.KernelReader(build_dir=KBUILD).read(img)
        self.assertIsNone(got.error)
        self.assertEqual(listing.normalize(got.listing), exp, listing.diff(exp, got.listing))
        self.assertEqual(mdir_paths(img), set(tree))
        fsck = run(["fsck.fat", "-n", img])
        self.assertEqual(fsck.returncode, 0, fsck.stdout + fsck.stderr)

    def test_bytes_the_kernel_did_not_write_come_back(self):
        # The guest sends back only its file's data extents: every block the
        # host sent (here random bytes in the free half of the volume) must
        # come back unchanged, and the blocks the kernel wrote with it.
        img = mkfs("dense.img")
        rng = random.Random(1915)
        with open(img, "r+b") as f:
            data = bytearray(f.read())
            half = len(data) // 2
            data[half:] = rng.randbytes(len(data) - half)
            f.seek(0)
            f.write(data)
        res = K.KernelWriter(build_dir=KBUILD).apply(img, opscript.parse('mkdir "/d"\n'))
        self.assertEqual(res.results, ["ok"], res.raw)
        with open(img, "rb") as f:
            back = f.read()
        self.assertEqual(len(back), len(data))
        self.assertTrue(back[half:] == bytes(data[half:]), "the free half's bytes were lost")
        self.assertNotEqual(back[:half], bytes(data[:half]), "the mkdir did not come back")

    def test_write_applies_to_existing_image_in_place(self):
        img = mkfs("inplace.img")
        mt_put(img, "/Existing file.txt", b"old contents")
        ops = opscript.parse('write "/Existing file.txt" 4 3 0\nmkdir "/New"\n')
        res = K.KernelWriter(build_dir=KBUILD).apply(img, ops)
        self.assertEqual(res.results, ["ok", "ok"], res.raw)
        data = bytearray(b"old contents")
        data[4:7] = pattern(0, 3)
        self.assertEqual(listing.normalize(K.KernelReader(build_dir=KBUILD).read(img).listing),
                         expected_listing({"/Existing file.txt": bytes(data), "/New": None}))


class Damaged(unittest.TestCase):
    def test_lfn_bad_checksum_shows_short_name(self):
        img = mkfs("badsum.img")
        mt_put(img, "/a long file name.txt", pattern(1, 100))
        with open(img, "r+b") as f:
            g = Geometry(f)
            ents = g.root_entries(f)
            short = next(e for e in ents if e[11] != 0x0F and e[0] not in (0, 0xE5))
            for i, e in enumerate(ents):
                if e[0] != 0 and e[11] == 0x0F:
                    f.seek(g.root + 32 * i + 13)
                    f.write(bytes([e[13] ^ 0x55]))
        name = short[:8].decode().rstrip() + "." + short[8:11].decode().rstrip()
        res = K.KernelReader(build_dir=KBUILD).read(img)
        self.assertIsNone(res.error)
        # the long name is dropped, the file is still there under its alias
        self.assertEqual(listing.normalize(res.listing),
                         expected_listing({"/" + name: pattern(1, 100)}))

    def test_cross_linked_and_looping_chains(self):
        img = mkfs("chains.img")
        a, b, c = pattern(1, 5000), pattern(2, 3000), pattern(3, 10240)
        mt_put(img, "/A.TXT", a)
        mt_put(img, "/B.TXT", b)
        mt_put(img, "/LOOP.BIN", c)
        with open(img, "r+b") as f:
            g = Geometry(f)
            ents = g.root_entries(f)
            ca = struct.unpack_from("<H", ents[0], 26)[0]
            f.seek(g.root + 32 + 26)
            f.write(struct.pack("<H", ca))               # B starts in A's chain
            cl = g.chain(struct.unpack_from("<H", ents[2], 26)[0])
            self.assertEqual(len(cl), 5)
            g.put(cl[1], cl[0])                          # LOOP: 0 1 0 1 0 ...
            g.write_fat(f)
        res = K.KernelReader(build_dir=KBUILD).read(img)
        self.assertIsNone(res.error)
        cs = g.csize
        looped = (c[:cs] + c[cs:2 * cs]) * 2 + c[:cs]
        exp = expected_listing({"/A.TXT": a, "/B.TXT": a[:3000], "/LOOP.BIN": looped[:10240]})
        # the kernel follows the chains without a word: B shows A's bytes,
        # LOOP.BIN repeats its first two clusters
        self.assertEqual(listing.normalize(res.listing), exp, listing.diff(exp, res.listing))
        self.assertEqual([c for c in res.complaints if "FAT-fs" in c], [])

    def test_truncated_image(self):
        img = mkfs("trunc.img")
        data = pattern(11, 3 << 20)
        mt_put(img, "/big file.bin", data)
        with open(img, "r+b") as f:
            f.truncate(1 << 20)            # the file's clusters are past the end now
        res = K.KernelReader(build_dir=KBUILD).read(img)
        self.assertIsNone(res.error, res.raw)
        self.assertEqual([(e["path"], e.get("read_error")) for e in res.listing],
                         [("/big file.bin", "EIO")])
        self.assertTrue(any(c.startswith("attempt to access beyond end of device | loop:")
                            for c in res.complaints), res.complaints)
        # the kernel writer says ok, the data went nowhere: only dmesg knows
        w = K.KernelWriter(build_dir=KBUILD).apply(img, opscript.parse('create "/new.bin" 2000000 1'))
        self.assertIsNone(w.error, w.raw)
        self.assertEqual(w.results, ["ok"])
        self.assertIn("attempt to access beyond end of device", w.raw)
        self.assertEqual(os.path.getsize(img), 1 << 20)

    def test_duplicate_short_entries_are_listed_twice(self):
        img = mkfs("dup.img")
        mt_put(img, "/TWIN.TXT", pattern(1, 10))
        mt_put(img, "/OTHER.TXT", pattern(2, 20))
        with open(img, "r+b") as f:
            g = Geometry(f)
            ents = g.root_entries(f)
            self.assertEqual(ents[1][:11], b"OTHER   TXT")
            f.seek(g.root + 32)
            f.write(b"TWIN    TXT")          # OTHER.TXT renamed to TWIN.TXT
        res = K.KernelReader(build_dir=KBUILD).read(img)
        self.assertIsNone(res.error)
        twins = [e for e in res.listing if e["path"] == "/TWIN.TXT"]
        self.assertEqual(len(twins), 2, res.raw)
        # lookup by name finds the first entry for both readdir names
        self.assertEqual({e["size"] for e in twins}, {10})
        self.assertIn("listing: /TWIN.TXT listed 2 times", res.complaints)

    def test_directory_loop_and_short_chain(self):
        img = mkfs("dirloop.img")
        mt_mkdir(img, "/SUB")
        mt_put(img, "/SHORT.BIN", pattern(5, 5000))
        with open(img, "r+b") as f:
            g = Geometry(f)
            ents = g.root_entries(f)
            sub = struct.unpack_from("<H", ents[0], 26)[0]
            g.put(sub, sub)                               # SUB's chain loops on itself
            short = struct.unpack_from("<H", ents[1], 26)[0]
            g.put(short, 0xFFF)                           # SHORT.BIN: 1 of 3 clusters
            g.write_fat(f)
        res = K.KernelReader(build_dir=KBUILD).read(img)
        self.assertIsNone(res.error, res.raw)
        by = {e["path"]: e for e in res.listing}
        self.assertEqual(by["/SUB"].get("stat_error"), "EIO", res.raw)
        self.assertEqual(by["/SHORT.BIN"].get("read_error"), "EIO", res.raw)
        self.assertNotIn("sha256", by["/SHORT.BIN"])
        self.assertTrue(any("detected the cluster chain loop" in c for c in res.complaints),
                        res.complaints)
        self.assertTrue(any("request beyond EOF" in c for c in res.complaints),
                        res.complaints)
        self.assertEqual(len(res.complaints), len(set(res.complaints)))  # de-duplicated
        self.assertTrue(all("(loop)" in c for c in res.complaints if "FAT-fs" in c))


class NodualHandMade(unittest.TestCase):
    """A v1 nodual entry written here: LFN slots + 20 00 r r r r r r 2F 00 00."""

    def make(self, name, byte8):
        img = mkfs(f"v1-{byte8:02x}.img")
        dummy = bytes([0x20, 0x00, 0x11, 0x07, 0x1A, 0x03, 0x1F, 0x09, byte8, 0x00, 0x00])
        data = pattern(42, 3000)
        with open(img, "r+b") as f:
            g = Geometry(f)
            ents = lfn_slots("Long File Name.txt", lfn_checksum(dummy))
            ents.append(dummy + bytes([0x20, 0x00]) + bytes(13) + struct.pack("<HI", 2, len(data)))
            f.seek(g.root)
            f.write(b"".join(ents))
            g.put(2, 3)
            g.put(3, 0xFFF)
            g.write_fat(f)
            f.seek(g.data)
            f.write(data)
        return img, data

    def test_slash_at_byte8_lists_and_opens(self):
        img, data = self.make("Long File Name.txt", 0x2F)
        res = K.KernelReader(build_dir=KBUILD).read(img)
        self.assertIsNone(res.error)
        self.assertEqual(listing.normalize(res.listing),
                         expected_listing({"/Long File Name.txt": data}))
        self.assertNotIn("open_error", res.listing[0])

    def test_space_at_byte8_lists_but_cannot_open(self):
        img, data = self.make("Long File Name.txt", 0x20)
        res = K.KernelReader(build_dir=KBUILD).read(img)
        self.assertIsNone(res.error)
        self.assertEqual([e["path"] for e in res.listing], ["/Long File Name.txt"])
        e = res.listing[0]
        self.assertEqual(e["type"], "file")                  # from readdir's d_type
        self.assertEqual(e.get("stat_error"), "ENOENT", e)  # lookup by name fails
        self.assertEqual(e.get("open_error"), "ENOENT", e)
        self.assertNotIn("sha256", e)
        nd = os.path.join(os.environ.get("VFAT_BUILD") or os.path.join(SRC, "build"),
                          "kernel-nodual", "v1")
        if os.path.exists(os.path.join(nd, "vfat.ko")):
            # the ported patch's reader finds it by long name (dir.c hunk)
            res = K.KernelNodualReader(build_dir=KBUILD).read(img)
            self.assertIsNone(res.error, res.raw)
            self.assertEqual(listing.normalize(res.listing),
                             expected_listing({"/Long File Name.txt": data}))


    def test_one_vm_switches_module_sets(self):
        nd = os.path.join(BUILD, "kernel-nodual")
        if not os.path.exists(os.path.join(nd, "v1", "vfat.ko")):
            self.skipTest("kernel-nodual modules not built (vfz/oracles/kernel-nodual/build.sh)")
        img, data = self.make("Long File Name.txt", 0x20)
        stock = K.KernelReader(build_dir=KBUILD, nodual_dir=nd, shared_vm=True)
        v1 = K.KernelNodualReader(build_dir=KBUILD, nodual_dir=nd, shared_vm=True)
        v3 = K.KernelNodualV3Reader(build_dir=KBUILD, nodual_dir=nd, shared_vm=True)
        vm = stock.vm()
        self.assertIs(vm, v1.vm())
        boots, switches = vm.boots, vm.switches
        exp = expected_listing({"/Long File Name.txt": data})
        for _ in range(2):
            a = stock.read(img)
            self.assertEqual(a.listing[0].get("stat_error"), "ENOENT", a.raw)
            b = v1.read(img)
            self.assertEqual(listing.normalize(b.listing), exp, b.raw)
            c = v3.read(img)
            self.assertEqual(listing.normalize(c.listing), exp, c.raw)
        self.assertEqual(vm.boots, boots)              # one VM all along
        self.assertEqual(vm.switches - switches, 5)    # stock is loaded at boot
        self.assertIn("insmod vfat", vm.modules_log)


class Survival(unittest.TestCase):
    def small_image(self):
        img = mkfs("survive.img")
        mt_put(img, "/Some long name.txt", pattern(3, 1234))
        return img, expected_listing({"/Some long name.txt": pattern(3, 1234)})

    def test_kill_qemu_mid_batch(self):
        img, exp = self.small_image()
        r = K.KernelReader(build_dir=KBUILD)
        vm = r.vm()
        boots = vm.boots
        pid = vm.proc.pid
        killer = threading.Timer(0.5, lambda: os.kill(pid, signal.SIGKILL))
        killer.start()
        res = r.read_many([img] * 150)
        killer.join()
        errors = [x for x in res if x.error]
        self.assertLessEqual(len(errors), 1, [x.error for x in errors])
        for x in errors:
            self.assertIn("kernel VM", x.error)
        for x in res:
            if not x.error:
                self.assertEqual(listing.normalize(x.listing), exp)
        self.assertIsNone(res[-1].error)
        self.assertEqual(vm.boots, boots + 1)         # restarted exactly once
        self.assertNotEqual(vm.proc.pid, pid)

    def test_guest_panic_is_an_error_and_the_vm_comes_back(self):
        img, exp = self.small_image()
        r = K.KernelReader(build_dir=KBUILD)
        vm = r.vm()
        boots = vm.boots
        # a real kernel panic: sysrq 'c' dereferences NULL; panic=-1 and
        # -no-reboot make QEMU exit, the request fails with the console tail
        with self.assertRaises(VMError) as cm:
            vm.request("W", K.s("/proc/sysrq-trigger") + K.s("c"), timeout=30.0)
        self.assertRegex(str(cm.exception), "QEMU (exited|died)")
        self.assertIn("guest: ", str(cm.exception))
        self.assertIn("Kernel panic", str(cm.exception))
        self.assertIn("sysrq", str(cm.exception).lower())
        self.assertFalse(vm.alive())
        ok = r.read(img)
        self.assertIsNone(ok.error, ok.raw)
        self.assertEqual(listing.normalize(ok.listing), exp)
        self.assertEqual(vm.boots, boots + 1)

    def test_hanging_request_times_out_then_next_works(self):
        img, exp = self.small_image()
        hang = K.KernelReader(build_dir=KBUILD, hang_ms=600000)
        vm = hang.vm()
        boots = vm.boots
        t0 = time.monotonic()
        res = hang.read(img, timeout=3.0)
        took = time.monotonic() - t0
        self.assertIsNotNone(res.error)
        self.assertIn("timeout", res.error)
        self.assertGreaterEqual(took, 3.0)
        self.assertLess(took, 20.0)
        ok = K.KernelReader(build_dir=KBUILD).read(img)
        self.assertIsNone(ok.error, ok.raw)
        self.assertEqual(listing.normalize(ok.listing), exp)
        self.assertEqual(vm.boots, boots + 1)
        with self.assertRaises(VMError):
            vm.request("H", struct.pack("<I", 600000), timeout=1.0)
        self.assertFalse(vm.alive())
        # a writer whose guest stops answering after the ops: error, the
        # per-op results that did arrive are kept, the image is untouched
        img2 = mkfs("hang-write.img")
        with open(img2, "rb") as f:
            before = f.read()
        ops = opscript.parse('mkdir "/a"\nmkdir "/a"\ncreate "/a/b*" 1 1\n')
        # the limit is waited in full (the guest hangs after the ops), and
        # the image, the mount and the three ops must answer within it: a
        # whole apply of these ops (unmount and image back included) took
        # 0.33-2.24 s at nice 15 beside a CPU hog (load 12, 6 runs), against
        # the 3 s this once gave; 12 is 5x that
        w = K.KernelWriter(build_dir=KBUILD, hang_ms=600000).apply(img2, ops, timeout=12.0)
        self.assertIn("timeout", w.error)
        self.assertEqual(w.results, ["ok", "EEXIST", "EINVAL"])
        self.assertIn("[no answer] after the last op", w.raw)
        with open(img2, "rb") as f:
            self.assertEqual(f.read(), before)


class IoBounds(unittest.TestCase):
    """The I/O-bounds trace of the kernel VM (vfz/oracles/kernel/trace.py): QEMU's block
    layer logs the sectors the guest reads and writes; the pooled VM the other tests
    boot carries the traced drive, so this costs a few requests, not a boot."""

    def test_read_and_write_past_a_volume_declaring_8_sectors(self):
        img = mkfs("bounds.img", 8192, ("-F", "16", "-s", "1"))
        mt_put(img, "/DATA.BIN", pattern(4, 3000))
        ops = opscript.parse('create "/NEW.TXT" 100 1\n')
        with open(img, "rb") as f:
            g = Geometry(f)
            cl = struct.unpack_from("<H", g.root_entries(f)[0], 26)[0]
        # the whole volume declared: everything the kernel reads is inside it
        r = K.KernelReader(build_dir=KBUILD, iotrace=True)
        t = r.read(img).extra["iotrace"]
        self.assertTrue(t.accesses)
        self.assertEqual(iobounds.judge(t, os.path.getsize(img), os.path.getsize(img)), [])
        # 8 sectors declared (16-bit total): Linux 6.1 computes its cluster count with an
        # unsigned wrap, caps it by the FAT's size and mounts; the root directory (after
        # the FATs) and the file's cluster lie past the declared end
        with open(img, "r+b") as f:
            f.seek(19)
            f.write(struct.pack("<H", 8))
        res = r.read(img)
        self.assertIsNone(res.error)
        self.assertEqual(listing.normalize(res.listing), expected_listing({"/DATA.BIN": pattern(4, 3000)}))
        out = iobounds.judge(res.extra["iotrace"], 8 * 512, os.path.getsize(img))
        root, data = g.root // 512, (g.data + (cl - 2) * g.csize) // 512
        got = {(o.kind, o.region, o.sector, o.op.split(":")[0].split(" ")[0]) for o in out}
        self.assertIn(("read", "past volume", root, "mount"), got)
        self.assertIn(("read", "past volume", data, "walk"), got)
        self.assertTrue(all(o.call == "blk_co_preadv" for o in out))
        self.assertIn(f"(sector {root}, 512 done) by blk_co_preadv in `mount -t vfat", out[0].describe())
        # the writer: the new entry is written back into the root past the volume, at the
        # unmount's sync -- or under the op's own label when the guest's write-back ran
        # first (measured once at load 12: the root's write under 'create "/NEW.TXT" 100 1')
        w = K.KernelWriter(build_dir=KBUILD, iotrace=True)
        wr = w.apply(img, ops)
        self.assertIsNone(wr.error)
        self.assertEqual(wr.results, ["ok"])
        wout = iobounds.judge(w.last_iotrace, 8 * 512, os.path.getsize(img))
        writes = {o.op.split(":")[0] for o in wout if (o.kind, o.region, o.sector) == ("write", "past volume", root)}
        self.assertTrue(writes and writes <= {"umount", str(ops[0])}, wout)
        self.assertIn("NEW.TXT", listing.normalize(r.read(img).listing)[-1]["path"])
        # the hostile campaign's reader and writer lanes judge the same records
        from vfz.hostile import findings as hf, transform as htx, verdict as hv
        for lane, msgs in (("kernel", ["kernel read past volume"]),
                           ("write:kernel", ["kernel read past volume", "kernel write past volume"])):
            tool = htx.tool(lane, build_dir=KBUILD, **hf.reader_cfg(lane))
            vs = [v.message for v in hv.classify(tool.read(img, 30), timeout=30) if v.kind == "out-of-bounds"]
            self.assertEqual(sorted(vs), msgs, lane)


if __name__ == "__main__":
    unittest.main(verbosity=2)
