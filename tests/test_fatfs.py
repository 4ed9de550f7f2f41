#!/usr/bin/python3
"""The FatFs oracle (vfz/oracles/fatfs/) against ChaN FatFs R0.15 itself
(js-fatfs 0.2.1 under Node). One Node process for the whole test, shared by
the reader and the writer:
  * the reader on core-written images (dual, v1, v3; FAT12, FAT16, FAT32)
    lists what `vfat ls` lists (path, type, size, sha256), and on dual
    images its 8.3 names are the core's aliases;
  * the writer applies a script with every op kind; its answers are the
    model's with the fatfs profile, the FRESULTs behind them are the ones
    the module documents, fsck.fat -n finds the image clean and the core
    and mtools readers see the model's tree; a full FAT12 root is ENOSPC
    (FR_DENIED) on the op the model says;
  * a garbage or truncated image is an error and the process lives on; a
    WebAssembly trap or a hang ends it, and the next image reads right in
    a fresh one; a directory that contains its own parent and a file whose
    cluster chain loops under a 4 GiB size end with a complaint;
  * casefold.json is what FatFs folds today; the reader's explain hook
    names the DEL exception on a real nodual image; the sixth colliding
    alias is a hash (LON~XXXX.TXT), which the writer's known_failure names.
"""
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest
from collections import Counter

REPO = os.environ.get("VFAT_SRC") or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from vfz import listing, model, opscript
from vfz.check import verdict# noqa: E402
from vfz.oracles import fatfs, mtools  # noqa: E402
from vfz.oracles.core import CoreReader, vfat_binary  # noqa: E402

VFAT = vfat_binary()

TREE = """\
mkdir "/A long directory name"
create "/A long directory name/new long file name.txt" 1000 7
create "/hello.txt" 3 1
create "/lower.txt" 5 1
create "/Mixed.Txt" 6 1
mkdir "/d"
mkdir "/d/e"
create "/d/e/x y'z.bin" 70000 3
create "/d/semi;colon+plus.txt" 10 2
create "/empty" 0 1
create "/abcdefghijklm" 13 5
create "/Über Größe.dat" 4100 2
create "/emoji 😀 file" 5 9
create "/日本語.txt" 7 3
create "/d/LONGFILENAME1.TXT" 1 1
create "/d/longfilename2.txt" 1 1
create "/d/longfilename3.txt" 1 1
"""

# every op kind; the comments say what FatFs answers and why
WRITES = """\
mkdir "/dir"
mkdir "/dir"
mkdir "/DIR/Sub dir"
create "/dir/a long name.txt" 100 3
create "/dir/a long name.txt" 100 3
write "/dir/a long name.txt" 10 5 9
write "/dir/a long name.txt" 5000 7 4
write "/dir/missing" 0 5 1
create "/dir/a long name.txt/x" 1 1
create "/b " 7 7
create "/B" 1 1
create "/É" 2 2
mkdir "/é"
create "/st*r" 1 1
create "/del\u007f" 1 1
create "/LONG256" 1 1
create "/new/" 1 1
rmdir "/dir"
unlink "/dir"
rmdir "/b"
rename "/dir/a long name.txt" "/dir/Sub dir/moved name.txt"
create "/dir/target" 3 5
create "/dir/other" 4 6
rename "/dir/other" "/dir/TARGET"
rename "/dir/target" "/dir/TaRgEt"
rename "/dir" "/dir/Sub dir/loop"
rename "/dir/./Sub dir" "/renamed dir"
unlink "/renamed dir/moved name.txt"
rmdir "/renamed dir"
rmdir "/"
unlink "/nosuch/x"
""".replace("LONG256", "a" * 256)


def sh(*argv, check=True):
    p = subprocess.run([str(a) for a in argv], capture_output=True, text=True)
    if check and p.returncode != 0:
        raise AssertionError(f"{argv}: exit {p.returncode}: {p.stderr.strip()[:300]}")
    return p


def mkfs(img, fat, size=None):
    sh(VFAT, "mkfs", img, "--size", size or ("40M" if fat == "32" else "8M"), "--fat", fat)


def core_apply(img, text, mode):
    path = img + ".ops"
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    sh(VFAT, "apply", img, path, *mode, "--seed", "7", check=False)


def alias_of(short_hex):
    """The 8.3 name FatFs shows for the core's short entry bytes."""
    b = bytes.fromhex(short_hex)
    base, ext = b[:8].rstrip(b" "), b[8:].rstrip(b" ")
    if base[:1] == b"\x05":
        base = b"\xe5" + base[1:]
    return (base + (b"." + ext if ext else b"")).decode("cp437")


def geometry(b):
    bps = struct.unpack_from("<H", b, 11)[0]
    spc, res, nf = b[13], struct.unpack_from("<H", b, 14)[0], b[16]
    nroot = struct.unpack_from("<H", b, 17)[0]
    fsz = struct.unpack_from("<H", b, 22)[0] or struct.unpack_from("<I", b, 36)[0]
    return bps, spc, (res + nf * fsz) * bps + nroot * 32


class FatfsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        ok, why = fatfs.available()
        if not ok:
            raise AssertionError(f"the FatFs oracle is not installed: {why}")
        cls.tmp = tempfile.mkdtemp(prefix="vfz-test-fatfs-")
        cls.reader = fatfs.FatfsReader()
        cls.writer = fatfs.FatfsWriter()
        cls.writer.server.close()
        cls.writer.server = cls.reader.server        # one Node process for the whole test
        cls.core = CoreReader()

    @classmethod
    def tearDownClass(cls):
        cls.reader.close()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def img(self, name):
        return os.path.join(self.tmp, name)

    def test_1_reader_lists_as_core(self):
        modes = {"dual": ["--names", "dual"], "v1": ["--names", "nodual", "--dummy", "v1"],
                 "v3": ["--names", "nodual", "--dummy", "v3"]}
        for mname, mode in modes.items():
            for fat in ("12", "16", "32"):
                with self.subTest(mode=mname, fat=fat):
                    img = self.img(f"r-{mname}-{fat}.img")
                    mkfs(img, fat)
                    core_apply(img, TREE, mode)
                    c = self.core.read(img)
                    r = self.reader.read(img)
                    self.assertIsNone(r.error)
                    self.assertEqual(r.complaints, [])
                    self.assertEqual(listing.normalize(r.listing), listing.normalize(c.listing))
                    self.assertEqual(len(r.listing), TREE.count("\n"))
                    if mname == "dual":
                        shorts = {e["path"]: alias_of(e["short"]) for e in c.listing}
                        self.assertEqual({e["path"]: e["short83"] for e in r.listing}, shorts)
        self.assertEqual(self.reader.server.starts, 1)

    def test_2_writer_every_op(self):
        ops = opscript.parse(WRITES)
        img = self.img("w.img")
        mkfs(img, "16")
        m = model.Model(fatfs.PROFILE, "dual", root=model.root_for(fatfs.PROFILE, img), rule="winnt")
        m.apply(ops)
        w = self.writer.apply(img, ops)
        self.assertIsNone(w.error)
        self.assertEqual(w.results, m.results,
                         "\n".join(f"{o}: model {a} fatfs {b}" for o, a, b in zip(ops, m.results, w.results)
                                   if a != b))
        # the FRESULT behind an errno, as the module's map says
        lines = w.raw.splitlines()
        self.assertEqual(len(lines), len(ops))

        def call(i):
            return lines[i].rpartition(" [")[2].rstrip("]"), w.results[i]
        self.assertEqual(call(1), ("FR_EXIST", "EEXIST"))              # mkdir twice
        self.assertEqual(call(13), ("FR_INVALID_NAME", "EINVAL"))      # '*'
        self.assertEqual(call(14), ("FR_INVALID_NAME", "EINVAL"))      # DEL (Linux: ok)
        self.assertEqual(call(15), ("FR_INVALID_NAME", "EINVAL"))      # 256 units (Linux: ENAMETOOLONG)
        self.assertEqual(call(17), ("FR_DENIED", "ENOTEMPTY"))         # rmdir of a full directory
        self.assertEqual(call(12), ("FR_EXIST", "EEXIST"))             # 'é' finds 'É'
        self.assertEqual(call(9), ("FR_OK", "ok"))                     # 'b ' is stored 'b'
        self.assertEqual(call(10)[1], "EEXIST")                        # so 'B' clashes
        self.assertEqual(w.results[18], "EISDIR")                      # unlink of a directory
        self.assertEqual(w.results[25], "EINVAL")                      # into its own subtree
        self.assertEqual(call(23), ("FR_EXIST,FR_OK,FR_OK", "ok"))     # f_rename never replaces
        self.assertEqual(model.Model("kernel", "dual").apply(ops)[14], "ok")
        ck = sh("fsck.fat", "-n", img, check=False)
        self.assertEqual(ck.returncode, 0, ck.stdout)
        exp = listing.normalize(m.entries())
        self.assertIn({"path": "/b", "type": "file", "size": 7, "sha256": listing.entry(
            "/b", "file", opscript.content(7, 7))["sha256"]}, exp)
        got = self.core.read(img)
        self.assertEqual(listing.normalize(got.listing), exp)
        mt = mtools.MtoolsReader().read(img)
        self.assertIsNone(mt.error)
        self.assertEqual(listing.normalize(mt.listing), exp)
        # the gap before an offset past the end reads as zeros
        data = bytearray(opscript.content(3, 100))
        data[10:15] = opscript.content(9, 5)
        data.extend(b"\0" * 4900)
        data.extend(opscript.content(4, 7))
        # the file was renamed to /renamed dir/moved name.txt, then unlinked: read it
        # from an image that stops before that
        img2 = self.img("w2.img")
        mkfs(img2, "16")
        self.assertIsNone(self.writer.apply(img2, ops[:7]).error)
        f = {e["path"]: e for e in self.reader.read(img2).listing}
        self.assertEqual(f["/dir/a long name.txt"]["sha256"], listing.entry("/x", "file", bytes(data))["sha256"])

    def test_3_fixed_root_full(self):
        img = self.img("root.img")
        mkfs(img, "12", "1M")
        ops = opscript.parse("".join(f'create "/a long file name number {i:03d}.txt" 0 1\n'
                                     for i in range(200)))
        m = model.Model(fatfs.PROFILE, "dual", root=model.root_for(fatfs.PROFILE, img), rule="winnt")
        m.apply(ops)
        self.assertIn("ENOSPC", m.results)
        w = self.writer.apply(img, ops)
        self.assertEqual(w.results, m.results)
        first = m.results.index("ENOSPC")
        self.assertIn("-> ENOSPC [FR_DENIED]", w.raw.splitlines()[first])
        self.assertEqual(sh("fsck.fat", "-n", img, check=False).returncode, 0)

    def test_4_hostile(self):
        good = self.img("good.img")
        mkfs(good, "16")
        core_apply(good, TREE, ["--names", "dual"])
        g = self.img("garbage.img")
        with open(g, "wb") as f:
            f.write(random.Random(13).randbytes(1 << 20))
        self.reader.server.request({"op": "ping"}, 30)        # running before counting
        starts = self.reader.server.starts
        r = self.reader.read(g)
        self.assertEqual(r.error, "f_mount: FR_NO_FILESYSTEM")
        t = self.img("trunc.img")
        with open(good, "rb") as f, open(t, "wb") as o:
            o.write(f.read(100))
        self.assertEqual(self.reader.read(t).error, "f_mount: FR_DISK_ERR")
        self.assertEqual(self.reader.server.starts, starts)     # FatFs answered: same process
        # a WebAssembly trap ends the process; the next image gets a new one
        with self.assertRaises(fatfs.ServerError) as cm:
            self.reader.server.request({"op": "trap", "image": good}, 10)
        self.assertIn("RuntimeError: memory access out of bounds", str(cm.exception))
        self.assertIsNone(self.reader.server.proc)
        r = self.reader.read(good)
        self.assertIsNone(r.error)
        self.assertEqual(len(r.listing), TREE.count("\n"))
        self.assertEqual(self.reader.server.starts, starts + 1)
        # a hang is killed at the timeout
        with self.assertRaises(fatfs.ServerError) as cm:
            self.reader.server.request({"op": "hang"}, 2)
        self.assertIn("timeout", str(cm.exception))
        self.assertIsNone(self.writer.apply(good, opscript.parse('mkdir "/after"\n')).error)
        self.assertEqual(self.reader.server.starts, starts + 2)
        # /d/e made to point at /d: a directory that holds its own parent
        loop = self.img("loop.img")
        c = {e["path"]: e for e in self.core.read(good).listing}
        with open(good, "rb") as f:
            b = bytearray(f.read())
        bps, spc, data = geometry(b)
        off = data + (c["/d"]["cluster"] - 2) * bps * spc
        i = next(i for i in range(off, off + bps * spc, 32) if b[i:i + 11] == b"E          ")
        struct.pack_into("<H", b, i + 26, c["/d"]["cluster"])
        with open(loop, "wb") as f:
            f.write(b)
        r = self.reader.read(loop, timeout=60)
        self.assertIsNone(r.error)
        self.assertIn(f"/d/e: directory at cluster {c['/d']['cluster']} already listed (loop or cross-link)",
                      r.complaints)
        # a file whose size says 4 GiB - 1 and whose chain loops on itself:
        # f_read would follow it to the end of that size
        f = "/d/e/x y'z.bin"
        b2 = bytearray(b)
        struct.pack_into("<H", b2, i + 26, c["/d/e"]["cluster"])     # /d/e as it was
        off = data + (c["/d/e"]["cluster"] - 2) * bps * spc
        j = next(j for j in range(off, off + bps * spc, 32) if b2[j + 11] == 0x20 and b2[j] != 0xE5)
        struct.pack_into("<I", b2, j + 28, 0xFFFFFFFF)
        fat_off = struct.unpack_from("<H", b2, 14)[0] * bps
        struct.pack_into("<H", b2, fat_off + 2 * c[f]["cluster"], c[f]["cluster"])   # FAT16: loops
        with open(loop, "wb") as fh:
            fh.write(b2)
        r = self.reader.read(loop, timeout=60)
        self.assertIsNone(r.error)
        self.assertTrue(any(x.startswith(f"f_read {f}: more bytes than the volume holds") for x in r.complaints),
                        r.complaints)
        self.assertEqual(self.reader.server.starts, starts + 2)

    def test_5_casefold_is_measured(self):
        with open(fatfs.CASEFOLD, encoding="utf-8") as f:
            committed = sorted(tuple(p) for p in json.load(f)["same"])
        self.assertEqual(fatfs.measure_casefold(self.reader.server), committed)
        self.assertEqual(fatfs.fatfs_fold("Éa. "), fatfs.fatfs_fold("éA"))
        self.assertNotEqual(fatfs.fatfs_fold("\u00b5"), fatfs.fatfs_fold("\u039c"))   # not folded

    def test_6_explain_del_and_twins(self):
        text = 'mkdir "/ca\\u007f"\ncreate "/ca\\u007f/x" 10 1\ncreate "/ok" 1 1\n'
        img = self.img("del.img")
        mkfs(img, "16")
        core_apply(img, text, ["--names", "nodual", "--dummy", "v1"])
        m = model.Model("kernel", "nodual")
        m.apply(opscript.parse(text))
        r = self.reader.read(img)
        self.assertEqual([c.rpartition(": ")[2] for c in r.complaints], ["FR_INVALID_NAME"])
        d = verdict.listing_diff(m.entries(), r.listing)
        self.assertEqual([e["path"] for e in d.missing], ["/ca\x7f/x"])
        ev = {"diff": d, "rr": r, "entries": m.entries()}
        self.assertEqual(fatfs.FatfsReader.explain(ev), fatfs.DEL_UNOPENABLE)
        # a file under such a name, whose size is all the listing can say:
        # the verdict is the complaint alone (no listing difference)
        img1 = self.img("del-file.img")
        mkfs(img1, "16")
        core_apply(img1, 'create "/\\u007f" 0 0\n', ["--names", "dual"])
        m1 = model.Model("kernel", "dual")
        m1.apply(opscript.parse('create "/\\u007f" 0 0\n'))
        r1 = self.reader.read(img1)
        vd = verdict.verdict_for(r1, m1.entries(), "fatfs", None, Counter(), "core-dual")
        self.assertEqual((vd.verdict, vd.diff), ("complains", None))
        self.assertEqual(fatfs.FatfsReader.explain({"diff": vd.diff, "rr": r1, "entries": m1.entries()}),
                         fatfs.DEL_UNOPENABLE)
        # names Linux keeps apart in a nodual image and FatFs folds to one
        text = 'mkdir "/É"\nmkdir "/é"\ncreate "/é/x" 5 1\ncreate "/É/y" 6 2\ncreate "/ñ" 3 3\ncreate "/Ñ" 4 4\n'
        img3 = self.img("twins.img")
        mkfs(img3, "16")
        core_apply(img3, text, ["--names", "nodual", "--dummy", "v1"])
        m = model.Model("kernel", "nodual")
        m.apply(opscript.parse(text))
        r3 = self.reader.read(img3)
        d3 = verdict.listing_diff(m.entries(), r3.listing)
        self.assertTrue(d3)
        self.assertEqual(fatfs.FatfsReader.explain({"diff": d3, "rr": r3, "entries": m.entries()}),
                         fatfs.CASE_TWINS)
        # twins of another type: FatFs opens the directory 'σe' for the file
        # 'Σe' (f_open FR_NO_FILE; campaign 1313, b10db50c6e0f)
        text = 'mkdir "/σe"\ncreate "/Σe" 3 1\n'
        img5 = self.img("twins-types.img")
        mkfs(img5, "16")
        core_apply(img5, text, ["--names", "nodual", "--dummy", "v1"])
        m = model.Model("kernel", "nodual")
        self.assertEqual(m.apply(opscript.parse(text)), ["ok", "ok"])
        r5 = self.reader.read(img5)
        self.assertIn("f_open/f_read /Σe: FR_NO_FILE", r5.complaints)
        d5 = verdict.listing_diff(m.entries(), r5.listing)
        self.assertEqual(fatfs.FatfsReader.explain({"diff": d5, "rr": r5, "entries": m.entries()}),
                         fatfs.CASE_TWINS)
        # long twins from a dual writer (two aliases, no clash): the same
        text = 'create "/élongname.txt" 1 1\ncreate "/Élongname.txt" 2 2\n'
        img4 = self.img("twins-dual.img")
        mkfs(img4, "16")
        core_apply(img4, text, ["--names", "dual"])
        m = model.Model("kernel", "dual")
        self.assertEqual(m.apply(opscript.parse(text)), ["ok", "ok"])
        r4 = self.reader.read(img4)
        self.assertIn("/Élongname.txt: the name opens another entry (ÉLONGN~1.TXT)", r4.complaints)
        d4 = verdict.listing_diff(m.entries(), r4.listing)
        self.assertEqual(fatfs.FatfsReader.explain({"diff": d4, "rr": r4, "entries": m.entries()}),
                         fatfs.CASE_TWINS)
        # DEL names in a dual image: the reader opens them by their alias
        img2 = self.img("del-dual.img")
        mkfs(img2, "16")
        core_apply(img2, 'mkdir "/abcdefgh\\u007f"\ncreate "/abcdefgh\\u007f/x" 10 1\n', ["--names", "dual"])
        r2 = self.reader.read(img2)
        self.assertEqual(r2.complaints, [])
        self.assertEqual(listing.normalize(r2.listing), listing.normalize(self.core.read(img2).listing))

    def test_7_own_aliases(self):
        text = "".join(f'create "/longfilename{i}.txt" {i} {i}\n' for i in range(1, 8)) + \
            'unlink "/LONGFI~5.TXT"\nunlink "/LONGFI~6.TXT"\n'
        ops = opscript.parse(text)
        img = self.img("hash.img")
        mkfs(img, "16")
        m = model.Model(fatfs.PROFILE, "dual", root=model.root_for(fatfs.PROFILE, img), rule="winnt")
        m.apply(ops)
        w = self.writer.apply(img, ops)
        self.assertEqual(w.results[:8], m.results[:8])
        self.assertEqual((m.results[8], w.results[8]), ("ok", "ENOENT"))
        alt = {e["path"]: e["short83"] for e in self.reader.read(img).listing}
        self.assertEqual(alt["/longfilename4.txt"], "LONGFI~4.TXT")
        self.assertRegex(alt["/longfilename6.txt"], r"^LON~[0-9A-F]{4}\.TXT$")
        self.assertEqual(fatfs.FatfsWriter.known_failure({"bad": 8, "ops": ops}), (8, fatfs.OWN_ALIASES))
        self.assertIsNone(fatfs.FatfsWriter.known_failure({"bad": 0, "ops": ops}))
        # a leading dot: FatFs's alias has an empty base
        img2 = self.img("dot.img")
        mkfs(img2, "16")
        self.assertEqual(self.writer.apply(img2, opscript.parse('create "/.bashrc" 1 1\n')).results, ["ok"])
        self.assertEqual(self.reader.read(img2).listing[0]["short83"], "~1.BAS")


if __name__ == "__main__":
    unittest.main(verbosity=2)
