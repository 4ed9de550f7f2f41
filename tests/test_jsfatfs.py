#!/usr/bin/python3
"""The jsfatfs oracle (vfz/oracles/jsfatfs/) against the npm fatfs package 0.10.8 itself, one Node process for the direct tests:
  * the reader lists mkfs.fat volumes of FAT12, FAT16 and FAT32 written by
    the core (dual) as the core's `vfat ls` does (path, type, size, sha256);
  * the writer's create/mkdir/write script, on all three types, answers as
    the model with its profile, and the checker names every divergence the
    readers (fsck.fat, mtools, jsfatfs) find with a jsfatfs exception;
  * a throw of the package ('|' in a name) and a hang end the process (what
    it wrote before the throw committed), the next image is served by a
    fresh one;
  * each named exception is recognised from real evidence, and not where
    it does not hold (a write inside a file, a FAT16 root, '*' in a name, a
    clean core image, a second FAT that is not free where the copies differ);
  * a directory created in through two spellings, a leaf longname()
    empties, and a bad 8.3 name whose long name crosses clusters (fsck.fat's
    own fsck-v1-lfn-cross) are named, and not their controls;
  * fs.truncate writes 0xFF00 into the freed clusters of a FAT16 volume.
"""
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest

REPO = os.environ.get("VFAT_SRC") or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from vfz import listing, model, opscript  # noqa: E402
from vfz.check.checker import Checker  # noqa: E402
from vfz.oracles.evidence import Evidence  # noqa: E402
from vfz.fatimg import Fat  # noqa: E402
from vfz.oracles import ReadResult, exception  # noqa: E402
from vfz.oracles.core import CoreReader, vfat_binary  # noqa: E402
from vfz.oracles.dosfsck import DosfsckReader  # noqa: E402
from vfz.oracles.jsfatfs import exceptions as X  # noqa: E402
from vfz.oracles.jsfatfs.reader import JsfatfsReader  # noqa: E402
from vfz.oracles.jsfatfs.server import ServerError, available  # noqa: E402
from vfz.oracles.jsfatfs.writer import JsfatfsWriter  # noqa: E402

VFAT = vfat_binary()
FS = {12: ("12", "2048"), 16: ("16", "20000"), 32: ("32", "40000")}

TREE = """\
mkdir "/A long directory name"
create "/A long directory name/new long file name.txt" 1000 7
create "/hello.txt" 3 1
mkdir "/d"
mkdir "/d/e"
create "/d/e/x y'z.bin" 70000 3
create "/Über Größe.dat" 4100 2
create "/日本語.txt" 7 3
write "/hello.txt" 1 5000 4
"""


LONG_SET = ('mkdir "/a"\ncreate "/a/😀 astral 𝔘.t" 0 0\n' +
            "".join(f'create "/a/{c}" 0 0\n' for c in "ReAlC") + 'create "/a/{}" 1 0\n')


def mkfs(path, bits, cluster=1):
    fat, kib = FS[bits]
    subprocess.run(["mkfs.fat", "-F", fat, "-s", str(cluster), "-C", path, kib],
                   check=True, capture_output=True)


def fat_of(path):
    with open(path, "rb") as f:
        return Fat(f.read())


def ops_of(text):
    return opscript.parse(text)


@unittest.skipUnless(available()[0], "node or the npm package fatfs is missing (vfatfuzz setup)")
@unittest.skipUnless(shutil.which("mkfs.fat") and os.access(VFAT, os.X_OK), "mkfs.fat or build/vfat missing")
class JsfatfsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="test-jsfatfs-")
        cls.reader = JsfatfsReader()
        cls.writer = JsfatfsWriter()
        cls.writer.server = cls.reader.server      # one Node process for both

    @classmethod
    def tearDownClass(cls):
        cls.reader.close()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def img(self, name, bits, cluster=1):
        p = os.path.join(self.tmp, name)
        if os.path.exists(p):
            os.unlink(p)
        mkfs(p, bits, cluster)
        return p

    def apply(self, img, text):
        ops = ops_of(text)
        return ops, self.writer.apply(img, ops, 30)

    def test_reader_lists_core_volumes(self):
        for bits in (12, 16, 32):
            p = self.img(f"read{bits}.img", bits)
            with tempfile.NamedTemporaryFile("w", suffix=".ops", delete=False) as f:
                f.write(TREE)
            try:
                r = subprocess.run([VFAT, "apply", p, f.name, "--names", "dual"], capture_output=True, text=True)
            finally:
                os.unlink(f.name)
            self.assertEqual(r.returncode, 0, r.stderr)
            core = CoreReader().read(p, 30)
            js = self.reader.read(p, 30)
            self.assertIsNone(js.error, js.error)
            self.assertEqual(js.complaints, [])
            self.assertEqual(listing.normalize(js.listing), listing.normalize(core.listing), bits)
            self.assertEqual(len(js.listing), 8)

    def test_writer_named_by_checker(self):
        text = ('mkdir "/dir"\nmkdir "/dir/sub"\ncreate "/dir/a.txt" 5000 3\nwrite "/dir/a.txt" 100 10 4\n'
                'create "/A long file name.text" 100 5\ncreate "/empty" 0 1\nmkdir "/Dir"\n'
                'create "/dir/sub/b" 700 2\nwrite "/dir/sub/b" 9000 20 6\n')
        ops = ops_of(text)
        names = {x.name for x in X.EXCEPTIONS}
        c = Checker(readers=["dosfsck", "mtools", "jsfatfs"], writers=["jsfatfs"], vfat=VFAT)
        seen = set()
        try:
            for fs in ("fat12", "fat16", "fat32"):
                res = c.check(ops, fs)
                self.assertNotIn("(writer)", res.verdicts["jsfatfs"], res.details)
                for d in res.divs.values():
                    self.assertIn(d.fields["kind"], names, d)
                    seen.add((fs, d.fields["oracle"], d.fields["kind"]))
        finally:
            c.close()
        for fs in ("fat12", "fat16", "fat32"):
            self.assertIn((fs, "dosfsck", X.ONE_FAT), seen)
            self.assertIn((fs, "dosfsck", X.EMPTY_CLUSTER), seen)
            self.assertIn((fs, "mtools", X.GAP_SIZE), seen)
        self.assertIn(("fat32", "dosfsck", X.FSINFO), seen)
        self.assertIn(("fat32", "dosfsck", X.DOTDOT), seen)
        self.assertNotIn(("fat16", "dosfsck", X.DOTDOT), seen)

    def test_dir_spellings_and_empty_names_named_by_checker(self):
        # a directory created in through two spellings: an entry is
        # overwritten (DIR_SPELLINGS), a leaf longname() empties makes a
        # nameless entry (EMPTY_NAME: the readers check the script cut);
        # the same trees spelled alike diverge in neither way
        cases = [('mkdir "/h"\ncreate "/H/x" 0 0\ncreate "/h/y" 1 1\ncreate "/H/a" 0 0\n', X.DIR_SPELLINGS),
                 ('mkdir "/h"\ncreate "/h/x" 0 0\ncreate "/h/y" 1 1\ncreate "/h/a" 0 0\n', None),
                 ('mkdir "/a"\ncreate "/a/\ufeff" 0 0\ncreate "/a/b" 1 1\n', X.EMPTY_NAME),
                 ('mkdir "/a"\ncreate "/a/c" 0 0\ncreate "/a/b" 1 1\n', None),
                 # a bad 8.3 name ('?') whose long name crosses from the
                 # directory's first cluster into its second, allocated after
                 # six files: fsck.fat's own lfn_remove bug wipes the gap
                 (LONG_SET.format("?"), X.LFN_CROSS),
                 (LONG_SET.format("b"), None)]
        c = Checker(readers=["dosfsck", "mtools"], writers=["jsfatfs"], vfat=VFAT)
        try:
            for text, name in cases:
                res = c.check(ops_of(text), "fat16")
                kinds = {d.fields["kind"] for d in res.divs.values()}
                self.assertLessEqual(kinds, {x.name for x in X.EXCEPTIONS} | {X.LFN_CROSS},
                                     (text, res.details))
                if name:
                    self.assertIn(name, kinds, (text, res.details))
                else:
                    self.assertFalse(kinds & {X.DIR_SPELLINGS, X.EMPTY_NAME, X.LFN_CROSS}, (text, kinds))
            res = c.check(ops_of(cases[0][0]), "fat16")
            self.assertEqual(res.verdicts["jsfatfs"]["mtools"], "differs")     # /h/y is lost
        finally:
            c.close()
        self.assertEqual(X.respelled_dirs(ops_of(cases[0][0])), {("H",): {("h",), ("H",)}})
        self.assertEqual(X.respelled_dirs(ops_of(cases[1][0])), {})

    def test_restart_after_throw_and_hang(self):
        p = self.img("throw.img", 16)
        starts = self.reader.server.starts
        ops, w = self.apply(p, 'mkdir "/a"\nmkdir "/a|b"\nmkdir "/c"\n')
        self.assertEqual(w.results, ["ok"])
        self.assertIn('Invalid character "|" in name.', w.error)
        with self.assertRaises(ServerError) as cm:
            self.reader.server.request({"op": "hang"}, 2.0)
        self.assertIn("timeout", str(cm.exception))
        r = self.reader.read(p, 30)
        self.assertIsNone(r.error)
        # the server committed what the package wrote before the throw (its driver writes through)
        self.assertEqual([e["path"] for e in r.listing], ["/a"])
        self.assertEqual(self.reader.server.starts, starts + 2)

    def test_name_throws_recognised(self):
        p = self.img("names.img", 16)
        ops, w = self.apply(p, 'create "/x" 1 1\ncreate "/d|e" 1 1\n')
        m = model.Model(X.PROFILE, "nodual", rule="lfn")
        m.apply(ops)
        ev = Evidence(ops, writer="jsfatfs", wr=w, results=m.results, image=p)
        self.assertEqual(X.known_failure(ev), (1, X.NAME_THROWS))
        ops, w = self.apply(p, 'create "/y*z" 1 1\ncreate "/q" 1 1\n')
        self.assertEqual(w.results, ["ok", "ok"])       # '*' passes its pattern
        self.assertIsNone(w.error)
        m = model.Model(X.PROFILE, "nodual", rule="lfn")
        m.apply(ops)
        self.assertIsNone(X.known_failure(Evidence(ops, writer="jsfatfs", wr=w, results=m.results, image=p)))
        # the reader on a name with DEL that the core made
        q = self.img("del.img", 16)
        with tempfile.NamedTemporaryFile("w", suffix=".ops", delete=False) as f:
            f.write('create "/a\\u007fb" 3 1\ncreate "/plain" 3 1\n')
        try:
            subprocess.run([VFAT, "apply", q, f.name, "--names", "dual"], check=True, capture_output=True)
        finally:
            os.unlink(f.name)
        r = self.reader.read(q, 30)
        self.assertIn("Invalid character", r.error)
        core = CoreReader().read(q, 30).listing
        self.assertEqual(X.explain_read(Evidence([], reader="jsfatfs", rr=r, verdict="failed",
                                                 entries=core, image=q)), X.NAME_THROWS)
        other = [e for e in core if "\x7f" not in e["path"]]
        self.assertIsNone(X.explain_read(Evidence([], reader="jsfatfs", rr=r, verdict="failed",
                                                  entries=other, image=q)))

    def test_eoc_ff8_recognised(self):
        text = "".join(f'create "/file{i}" 10 {i}\n' for i in range(10))
        for bits, want in ((32, (7, X.EOC_FF8)), (16, None)):
            p = self.img(f"ff8-{bits}.img", bits)
            ops, w = self.apply(p, text)
            m = model.Model(X.PROFILE, "nodual", rule="lfn")
            m.apply(ops)
            ev = Evidence(ops, writer="jsfatfs", wr=w, results=m.results, image=p)
            self.assertEqual(X.known_failure(ev), want, (bits, w.results, w.error))
            if bits == 32:
                self.assertEqual(w.results[:8], ["ok"] * 7 + ["EIO"])
                self.assertIn("TypeError", w.error)      # the 9th create crashed the process
                self.assertEqual(fat_of(p).get(2), 0x0FFFFFF8)
            else:
                self.assertEqual(w.results, ["ok"] * 10)

    def test_root_terminator_recognised(self):
        # a FAT16 root of 512 slots: a first name of 3 or 2 slots, then
        # 2-slot names; where the last free slots are exactly one entry's,
        # the package answers ENOSPC one entry before Linux (the model)
        for first in ("abcdefghijklmnop", "q"):
            p = self.img(f"rootfull-{len(first)}.img", 16)
            text = f'create "/{first}" 0 0\n' + "".join(f'create "/f{i:03d}" 0 0\n' for i in range(258))
            root = model.fixed_root_of(p)
            free = root.used.count(False)
            ops, w = self.apply(p, text)
            m = model.Model(X.PROFILE, "nodual", root=root, rule="lfn")
            m.apply(ops)
            even = (free - model.slots_needed(first, "lfn")) % 2 == 0
            ev = Evidence(ops, writer="jsfatfs", wr=w, results=m.results, image=p)
            bad = next(i for i, r in enumerate(w.results) if r != "ok")
            if even:
                self.assertEqual(m.results[bad], "ok", (first, bad))
                self.assertEqual(m.results[bad + 1], "ENOSPC")
                self.assertEqual(X.known_failure(ev), (bad, X.ROOT_TERM))
            else:
                self.assertEqual(w.results, m.results)
                self.assertIsNone(X.known_failure(ev))
            # evidence does not hold for an ENOSPC with room for the marker
            ev2 = Evidence(ops[:5], writer="jsfatfs", wr=type(w)("jsfatfs", results=["ok"] * 4 + ["ENOSPC"]),
                           results=["ok"] * 5, image=p)
            self.assertIsNone(X.known_failure(ev2))

    def test_gap_write_recognised(self):
        p = self.img("gap.img", 12)
        ops, w = self.apply(p, 'create "/f" 100 1\nwrite "/f" 3000 10 2\ncreate "/g" 100 1\nwrite "/g" 50 100 2\n')
        self.assertEqual(w.results, ["ok"] * 4)
        gap = X.gap_entries(ops)
        js = {e["path"]: e for e in self.reader.read(p, 30).listing}
        self.assertEqual(js["/f"]["size"], 110)
        # (the reader shows the times too, which the model leaves to the clock)
        self.assertEqual(gap["/f"], {k: js["/f"][k] for k in gap["/f"]})
        self.assertEqual(gap["/g"]["size"], 150)      # no gap: as the model
        m = model.Model(X.PROFILE, "nodual", rule="lfn")
        m.apply(ops)
        want = {e["path"]: e for e in m.entries()}["/g"]
        self.assertEqual(want, {k: js["/g"][k] for k in want})

    def test_checker_evidence_not_applied_to_clean_or_foreign_images(self):
        p = self.img("clean.img", 32)
        with tempfile.NamedTemporaryFile("w", suffix=".ops", delete=False) as f:
            f.write('mkdir "/d"\ncreate "/d/x" 3 1\ncreate "/e" 0 1\n')
        try:
            subprocess.run([VFAT, "apply", p, f.name, "--names", "dual"], check=True, capture_output=True)
        finally:
            os.unlink(f.name)
        # the second FAT marks a cluster the first leaves free: not the package's doing
        fat = fat_of(p)
        b = fat.b
        struct.pack_into("<I", b, fat.fat_off + fat.spf * fat.bps + 4 * 100, 0x0FFFFFFF)
        with open(p, "wb") as f:
            f.write(b)
        r = DosfsckReader(repair=False).read(p, 30)
        self.assertTrue(any("FATs differ" in c for c in r.complaints), r.complaints)
        ev = Evidence([], writer="jsfatfs", reader="dosfsck", rr=r, verdict="complains", image=p)
        self.assertIsNone(X.explain_write(ev))

    def test_truncate_writes_ff00(self):
        p = self.img("trunc.img", 16, cluster=1)
        ops, w = self.apply(p, 'create "/big" 20000 1\n')
        self.assertEqual(w.results, ["ok"])
        first = fat_of(p).chain(2)
        self.assertEqual(len(first), 40)
        ans = self.reader.server.request({"op": "truncate", "image": p, "path": "/big", "size": 10}, 30)
        self.assertEqual(ans["result"], "ok")
        fat = fat_of(p)
        self.assertEqual([fat.get(c) for c in first[2:]], [0xFF00] * 38)
        self.assertEqual(fat.get(first[0]), first[1])     # the kept cluster still links on

    def test_nt_case_ignored(self):
        """core-v3 (winnt rule) stores 'big.bin' bare, BIG     BIN + 0x18:
        the package lists BIG.BIN with its contents (jsfatfs-ignores-nt-case);
        a long name beside it is shown as it is."""
        p = self.img("ntcase.img", 16)
        with tempfile.NamedTemporaryFile("w", suffix=".ops", delete=False) as f:
            f.write('create "/big.bin" 700 3\ncreate "/Long Name.txt" 5 1\n')
        try:
            r = subprocess.run([VFAT, "apply", p, f.name, "--names", "nodual", "--dummy", "v3",
                                "--shortname", "winnt"], capture_output=True, text=True)
        finally:
            os.unlink(f.name)
        self.assertEqual(r.returncode, 0, r.stderr)
        core = {e["path"]: e for e in CoreReader().read(p, 30).listing}
        self.assertEqual((core["/big.bin"]["short"], core["/big.bin"]["nt"]), (b"BIG     BIN".hex(), 0x18))
        js = {e["path"]: e for e in self.reader.read(p, 30).listing}
        self.assertEqual(sorted(js), ["/BIG.BIN", "/Long Name.txt"])
        self.assertEqual(js["/BIG.BIN"]["sha256"], core["/big.bin"]["sha256"])
        self.assertEqual(JsfatfsReader.name_exception("big.bin", "BIG.BIN"), X.NT_CASE)
        self.assertIsNone(JsfatfsReader.name_exception("Long Name.txt", "LONG NAME.TXT"))   # not 8.3

    def test_exceptions_catalogued(self):
        for x in X.EXCEPTIONS:
            self.assertEqual(exception(x.name)[0].oracle, "jsfatfs")
        r = ReadResult("jsfatfs", listing=[])
        self.assertIsNone(X.explain_read(Evidence([], reader="jsfatfs", rr=r, verdict="ok")))


if __name__ == "__main__":
    unittest.main()
