#!/usr/bin/python3
"""The U-Boot oracle (vfz/oracles/uboot/) against U-Boot 2023.01 itself.

One QEMU for the whole test (a Board shared by the reader and the writer):
  * the reader on core-written images lists what `vfat ls` lists (path,
    type, size, sha256 of what fatload put in RAM); the non-ASCII long
    names come back exactly as the named exception's transformation says;
  * two images of one size with different trees swapped without a reboot
    each read as themselves (the swap is sound);
  * the writer's tree is accepted by fsck.fat -n and `vfat ls` shows the
    same tree, and the same op results, as the core writer on the same
    script (rename aside: ENOSYS);
  * an entry with a long name whose 8.3 name starts with 0x05 is not
    listed, and the reader's explain names it uboot-05-skipped (a U-Boot bug);
  * two long names U-Boot shows alike ('😀', '😀😀': '=') cannot both be
    opened, and the explain names it uboot-lfn-collide;
  * a garbage image is an error, a directory whose cluster chain loops is a
    trap (no prompt in the time limit), and the next image reads right.
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

from vfz import listing, opscript# noqa: E402
from vfz.oracles import uboot  # noqa: E402
from vfz.oracles.core import vfat_binary  # noqa: E402

VFAT = vfat_binary()

TREE_A = """\
mkdir "/A long directory name"
create "/A long directory name/new long file name.txt" 1000 7
create "/hello.txt" 3 1
mkdir "/d"
mkdir "/d/e"
create "/d/e/x y'z.bin" 70000 3
create "/d/semi;colon $HOME.txt" 10 2
create "/empty" 0 1
create "/UPPER.TXT" 513 4
"""
TREE_B = """\
mkdir "/other"
create "/other/b.txt" 4096 9
create "/hello.txt" 5 2
"""
NON_ASCII = """\
create "/Über Größe.dat" 10 2
create "/emoji 😀 file" 5 9
create "/日本語.txt" 7 3
"""
WRITES = """\
mkdir "/dir"
mkdir "/dir"
mkdir "/DIR/Sub dir"
create "/dir/a long name.txt" 100 3
create "/dir/a long name.txt" 100 3
write "/dir/a long name.txt" 10 5 9
write "/dir/a long name.txt" 0 5 8
write "/dir/a long name.txt" 200 5 7
write "/dir/nosuch" 0 5 7
write "/dir" 0 5 7
create "/dir/Sub dir/f" 3 3
create "/big file.bin" 40000 5
rmdir "/dir/Sub dir"
unlink "/dir/Sub dir"
rmdir "/dir/Sub dir/f"
unlink "/dir/Sub dir/f"
rmdir "/dir/Sub dir"
unlink "/nosuch"
mkdir "/nosuch/x"
create "/dir/a long name.txt/x" 1 1
create "/Café.txt" 4 1
rmdir "/"
"""


def run(argv):
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def make(path, script, size="16M"):
    if os.path.exists(path):
        os.unlink(path)
    p = run([VFAT, "mkfs", path, "--size", size, "--fat", "16"])
    assert p.returncode == 0, p.stderr
    ops = os.path.join(os.path.dirname(path), "ops")
    with open(ops, "w", encoding="utf-8") as f:
        f.write(script)
    p = run([VFAT, "apply", path, ops, "--names", "dual"])
    assert p.returncode in (0, 1), p.stderr
    return [__import__("json").loads(x)["result"] for x in p.stdout.splitlines() if x.startswith("{")]


def core_ls(path):
    p = run([VFAT, "ls", path])
    assert p.returncode == 0, p.stderr
    return listing.normalize(listing.loads(p.stdout))


@unittest.skipUnless(uboot.available()[0], uboot.available()[1])
@unittest.skipUnless(os.access(VFAT, os.X_OK), "build/vfat is not built")
class TestUboot(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="test-uboot-")
        cls.board = uboot.Board()
        cls.reader = uboot.UbootReader(board=cls.board)
        cls.writer = uboot.UbootWriter(board=cls.board)

    @classmethod
    def tearDownClass(cls):
        cls.board.kill()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def img(self, name, script, size="16M"):
        p = os.path.join(self.tmp, name)
        make(p, script, size)
        return p

    def read(self, path, timeout=120.0):
        r = self.reader.read(path, timeout)
        self.assertIsNone(r.error, r.raw[-2000:])
        self.assertEqual(r.complaints, [])
        return r

    def test_1_reader_lists_core_tree(self):
        a = self.img("a.img", TREE_A)
        r = self.read(a)
        self.assertEqual(listing.normalize(r.listing), core_ls(a))
        for e in r.listing:
            if e["type"] == "file":
                self.assertEqual(e["read"], e["size"])

    def test_2_non_ascii_names_are_the_named_transformation(self):
        n = self.img("n.img", NON_ASCII)
        r = self.read(n)
        want = {e["path"]: e for e in core_ls(n)}
        got = {e["path"]: e for e in listing.normalize(r.listing)}
        self.assertEqual(len(got), len(want))
        for path, e in want.items():
            shown = "/" + uboot.lfn_low_byte_form(path[1:])
            self.assertIn(shown, got)
            self.assertEqual(got[shown]["sha256"], e["sha256"])
            if shown != path:
                self.assertEqual(self.reader.name_exception(path[1:], shown[1:]), uboot.LFN_LOW_BYTE)
        self.assertIn("/emoji =", got)           # D83D -> '=', DE00 ends the slot
        self.assertIn("/Über Größe.dat", got)    # Latin-1: one byte per unit is right
        # a different name is not excused
        self.assertIsNone(self.reader.name_exception("emoji 😀 file", "emoji ?"))

    def test_3_swap_without_reboot_is_sound(self):
        a = self.img("sa.img", TREE_A)
        b = self.img("sb.img", TREE_B)
        self.assertEqual(os.path.getsize(a), os.path.getsize(b))
        self.read(a)
        boots = self.board.boots
        for path in (b, a, b):
            r = self.read(path)
            self.assertEqual(listing.normalize(r.listing), core_ls(path))
        self.assertEqual(self.board.boots, boots, "same-size images must not reboot")

    def test_4_writer(self):
        ref = self.img("ref.img", "")
        want_results = make(ref, WRITES)
        w = self.img("w.img", "")
        res = self.writer.apply(w, opscript.parse(WRITES), 300.0)
        self.assertIsNone(res.error, res.raw[-2000:])
        self.assertEqual(res.results, want_results, res.raw[:3000])
        p = run(["fsck.fat", "-n", w])
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(core_ls(w), core_ls(ref))
        # evidence of uboot-zero-date: every entry U-Boot made in the root
        # has creation, access and write dates 0x0000 (fsck.fat -n was silent)
        with open(w, "rb") as f:
            bs = f.read(512)
            bps, _, reserved, nfats, _ = struct.unpack_from("<HBHBH", bs, 11)
            f.seek((reserved + nfats * struct.unpack_from("<H", bs, 22)[0]) * bps)
            root = f.read(32 * 16)
        dates = set()
        for i in range(0, len(root), 32):
            e = root[i:i + 32]
            if e[0] in (0, 0xE5) or e[11] == 0x0F or e[11] & 0x08:
                continue                  # end, deleted, LFN slot, volume label
            cdate, adate = struct.unpack_from("<HH", e, 16)
            wdate, = struct.unpack_from("<H", e, 24)
            dates |= {cdate, adate, wdate}
        self.assertEqual(dates, {0})
        # and U-Boot reads back what it wrote
        self.assertEqual(listing.normalize(self.read(w).listing), core_ls(ref))

    def test_5_writer_refuses_what_it_cannot_do(self):
        w = self.img("w2.img", "")
        ops = opscript.parse('mkdir "/a"\nrename "/a" "/b"\ncreate "/emoji 😀" 1 1\n')
        res = self.writer.apply(w, ops, 120.0)
        self.assertIsNone(res.error)
        self.assertEqual(res.results, ["ok", "ENOSYS", "EILSEQ"])
        self.assertEqual([e["path"] for e in core_ls(w)], ["/a"])

    def test_5b_known_bugs_as_named(self):
        """U-Boot's alias bugs, exactly as EXCEPTIONS describe them."""
        w = self.img("w3.img", "")
        ops = opscript.parse('create "/abcdefgh.c" 1 1\ncreate "/abcdefgx.c" 1 1\n'
                             'create "/abcdefgh.txt" 1 1\ncreate "/abcdefgx.txt" 1 1\n'
                             'create "/åland" 1 1\n')
        res = self.writer.apply(w, ops, 120.0)
        self.assertEqual(res.results, ["ok"] * 5)
        shown = listing.loads(run([VFAT, "ls", w]).stdout)
        # uboot-alias-dup: a 1-char extension gets ~1 twice, a 3-char one ~1, ~2
        self.assertEqual(uboot.dup_short_ext(shown), [("/abcdefgh.c", "/abcdefgx.c")])
        # uboot-alias-e5: 'åland' reads as deleted (alias byte 0xE5)
        self.assertNotIn("/åland", [e["path"] for e in shown])
        self.assertIn("Orphaned long file name part", run(["fsck.fat", "-n", w]).stdout)
        # named at its own op when a later rename (unsupported: cut there)
        # follows it: the earlier cut wins (campaign seed 11102 cut at the
        # rename, and six reader findings followed from /å's alias)
        from vfz.oracles.evidence import Evidence
        w4 = self.img("w4.img", "")
        ops4 = opscript.parse('mkdir "//å"\nrename "/å" "/b"\n')
        res4 = self.writer.apply(w4, ops4, 120.0)
        self.assertEqual(res4.results, ["ok", "ENOSYS"])
        ev = Evidence(ops4, writer="uboot", wr=res4, results=["ok", "ok"], bad=1, fat_bits=16, image=w4)
        self.assertEqual(uboot.UbootWriter.known_failure(ev), (0, uboot.ALIAS_E5))

    def test_5c_05_entries_skipped(self):
        """uboot-05-skipped: a long-named entry whose 8.3 name starts with
        0x05 is not listed (here a v3 dummy, core seed 21, under /d), and
        UbootReader.explain names exactly that from the image's bytes."""
        from vfz.oracles.evidence import Evidence
        from vfz.check.verdict import listing_diff
        path = os.path.join(self.tmp, "v3-05.img")
        ops = os.path.join(self.tmp, "v3-05.ops")
        with open(ops, "w") as f:
            f.write('mkdir "/d"\ncreate "/d/a long file name.txt" 10 1\ncreate "/d/b" 2 2\n')
        self.assertEqual(run([VFAT, "mkfs", path, "--size", "16M", "--fat", "16"]).returncode, 0)
        p = run([VFAT, "apply", path, ops, "--names", "nodual", "--dummy", "v3", "--seed", "21"])
        self.assertEqual(p.returncode, 0, p.stderr)
        core = core_ls(path)
        shorts = {e["path"]: e["short"] for e in listing.loads(run([VFAT, "ls", path]).stdout)}
        self.assertTrue(shorts["/d/a long file name.txt"].startswith("05"), shorts)
        r = self.read(path)
        diff = listing_diff(core, listing.normalize(r.listing))
        self.assertEqual([e["path"] for e in diff.missing], ["/d/a long file name.txt"])
        self.assertFalse(diff.extra or diff.changed)
        ev = Evidence(opscript.parse(open(ops).read()), writer="core-v3", reader="uboot", rr=r,
                      verdict="differs", diff=diff, image=path)
        self.assertEqual(uboot.UbootReader.explain(ev), [uboot.SKIPPED_05])

    def test_5d_colliding_names(self):
        """uboot-lfn-collide: '😀😀' (a directory) and '😀' (a file) are both
        '=' to U-Boot; its lookup finds the first, so the file cannot be
        loaded; UbootReader.explain names that from the image's bytes."""
        from vfz.oracles.evidence import Evidence
        from vfz.check.verdict import listing_diff
        script = 'mkdir "/😀😀"\ncreate "/😀" 3 1\ncreate "/B" 2 2\n'
        path = self.img("collide.img", script)
        core = core_ls(path)
        r = self.reader.read(path, 120.0)
        self.assertIsNone(r.error, r.raw[-2000:])
        self.assertEqual(sorted((e["path"], e["type"]) for e in r.listing),
                         [("/=", "dir"), ("/=", "file"), ("/B", "file")])
        self.assertTrue(any(c.startswith("fatload /=") for c in r.complaints), r.complaints)
        shown = [dict(e, path={"/=": "/😀"}.get(e["path"], e["path"])) for e in r.listing
                 if e["type"] == "file"] + [{"path": "/😀😀", "type": "dir"}]
        diff = listing_diff(core, listing.normalize(shown))
        self.assertTrue(diff)
        ev = Evidence(opscript.parse(script), writer="core-dual", reader="uboot", rr=r,
                      verdict="differs", diff=diff, image=path)
        self.assertEqual(uboot.UbootReader.explain(ev), [uboot.COLLIDE])

    def test_5e_empty_names(self):
        """uboot-lfn-low-byte: a long name whose first UTF-16 unit has a low
        byte 0 ('Āx', U+0100) is shown with an empty name. The reader neither
        lists nor walks into it ('/' + '' is the root again: a walk that
        never ended, campaign seed 9101) and marks it; explain matches it
        against the image: one empty name per such long name, explaining
        the missing directory and everything under it, not one entry more."""
        from vfz.oracles.evidence import Evidence
        from vfz.check.verdict import ListingDiff, compare_listing
        from collections import Counter
        script = 'mkdir "/Āx"\nmkdir "/Āx/sub"\ncreate "/Āx/sub/f" 3 1\ncreate "/Ā" 2 2\ncreate "/B" 2 2\n'
        path = self.img("empty.img", script)
        core = core_ls(path)
        r = self.reader.read(path, 120.0)
        self.assertIsNone(r.error, r.raw[-2000:])
        self.assertEqual(r.complaints, [])
        self.assertEqual(sorted((e["path"], e["type"], e.get("unread")) for e in r.listing),
                         [("/", "dir", uboot.UNADDRESSABLE), ("/", "file", uboot.UNADDRESSABLE),
                          ("/B", "file", None)])
        diff = compare_listing(core, listing.normalize(r.listing), uboot.UbootReader, None, Counter())
        self.assertEqual(sorted(e["path"] for e in diff.missing), ["/Ā", "/Āx", "/Āx/sub", "/Āx/sub/f"])

        def explain(d):
            return uboot.UbootReader.explain(Evidence(opscript.parse(script), writer="core-dual",
                                                      reader="uboot", rr=r, verdict="differs",
                                                      diff=d, image=path))
        self.assertEqual(explain(diff), [uboot.LFN_LOW_BYTE])
        b = {"path": "/B", "type": "file", "size": 2}
        self.assertIsNone(explain(ListingDiff(missing=diff.missing + [b], extra=diff.extra)))
        # the same listing against an image with one such name fewer
        other = self.img("empty-1.img", 'mkdir "/Āx"\ncreate "/B" 2 2\n')
        self.assertIsNone(uboot.UbootReader.explain(Evidence(
            opscript.parse(script), writer="core-dual", reader="uboot", rr=r, verdict="differs",
            diff=diff, image=other)))

    @unittest.skipUnless(shutil.which("mcopy"), "mtools not installed")
    def test_5f_bare_name_with_sharp_s(self):
        """uboot-83-oem-bytes: mtools stores 'aéß' bare, 41 90 E1 with the
        NT lower-case bit; U-Boot shows the OEM bytes Latin-1 lower-cased:
        'a\\x90á'. The expected form upper-cases in the code page as Linux
        does ('ß' has no capital there), not 'SS' (campaign seed 9101)."""
        from vfz.oracles import get_writer
        path = os.path.join(self.tmp, "sharp.img")
        self.assertEqual(run([VFAT, "mkfs", path, "--size", "16M", "--fat", "16"]).returncode, 0)
        wr = get_writer("mtools").apply(path, opscript.parse('create "/aéß" 0 0\n'))
        self.assertEqual(wr.results, ["ok"], wr.error)
        core = core_ls(path)
        self.assertEqual([e["path"] for e in core], ["/aéß"])
        r = self.read(path)
        self.assertEqual([e["path"] for e in r.listing], ["/a\x90á"])
        self.assertEqual(uboot.UbootReader.name_exception("aéß", "a\x90á"), uboot.RAW_83)

    @unittest.skipUnless(shutil.which("mcopy"), "mtools not installed")
    def test_5g_empty_name_under_a_bare_directory(self):
        """mtools stores 'σ' bare (0x05: cp437 0xE5) and '😀x' as U+F600 'x'
        (mtools-astral): U-Boot shows a blank name under a directory whose
        name a name exception maps; the checker files only the named
        uboot-lfn-low-byte (campaign seed 9102, finding 13ed16d398f8)."""
        from vfz.check import checker
        ck = checker.Checker(["uboot"], ["mtools"], cfg={"uboot": {"board": self.board}})
        try:
            r = ck.check(opscript.parse('mkdir "/σ"\ncreate "/σ/😀x" 0 0\ncreate "/b" 1 1\n'), "fat12")
        finally:
            ck.close()
        self.assertEqual(sorted(d.fields["kind"] for d in r.divs.values()), [uboot.LFN_LOW_BYTE],
                         r.details.get("mtools"))

    def test_5h_low_bytes(self):
        """Names whose U-Boot form (one byte per UTF-16 unit) holds a LF
        ('吊' U+540A), '/' ('启' U+542F), '\\' ('呜' U+545C) or 0xFF ('哿'
        U+54FF) cannot be handed to a command: the reader lists them, marks
        them unaddressable and walks no directory so named; a CR ('名'
        U+540D) or another control byte ('𠀋': D840 DC0B) reaches fatload
        intact (measured on all 255 low bytes of U+54xx). '呟x呟' shows as
        '_x_', a prefix of the alias _X_~1 of '吁x吁' as long as its shown
        name: U-Boot's lookup loads that file instead (uboot-lfn-collide
        through the 8.3 name). explain names both, and nothing more."""
        from collections import Counter
        from vfz.oracles.evidence import Evidence
        from vfz.check.verdict import ListingDiff, compare_listing
        script = ('mkdir "/d"\ncreate "/d/x吊y" 1 1\ncreate "/d/x启y" 2 2\ncreate "/d/x呜y" 3 3\n'
                  'create "/d/x哿y" 4 4\ncreate "/d/日本語のファイル名.txt" 5 5\ncreate "/d/a𠀋b" 6 6\n'
                  'mkdir "/d/启"\ncreate "/d/启/f" 7 7\nmkdir "/d/上"\ncreate "/d/上/g" 8 8\n'
                  'create "/吁x吁" 9 9\ncreate "/呟x呟" 10 10\n')
        path = self.img("low.img", script)
        core = core_ls(path)
        r = self.reader.read(path, 120.0)
        self.assertIsNone(r.error, r.raw[-2000:])
        marked = sorted((e["path"], e["type"]) for e in r.listing if e.get("unread") == uboot.UNADDRESSABLE)
        self.assertEqual(marked, sorted([("/d/\n", "dir"), ("/d/x\ny", "file"), ("/d/x/y", "file"),
                                         ("/d/x\\y", "file"), ("/d/x\xffy", "file"), ("/d//", "dir")]))
        want = {e["path"]: e for e in core}
        got = {e["path"]: e for e in r.listing}
        self.assertEqual(got["/d/" + uboot.lfn_low_byte_form("日本語のファイル名.txt")]["sha256"],
                         want["/d/日本語のファイル名.txt"]["sha256"])
        self.assertEqual(got["/d/a@\x0bb"]["sha256"], want["/d/a𠀋b"]["sha256"])
        self.assertEqual(got["/_x_"]["sha256"], want["/吁x吁"]["sha256"])
        self.assertEqual(r.complaints, ["/_x_: fatls says 10 bytes, fatload read 9"])
        diff = compare_listing(core, listing.normalize(r.listing), uboot.UbootReader, None, Counter())

        def explain(d):
            return uboot.UbootReader.explain(Evidence(opscript.parse(script), writer="core-dual",
                                                      reader="uboot", rr=r, verdict="differs",
                                                      diff=d, image=path, entries=core))
        self.assertEqual(sorted(explain(diff)), [uboot.COLLIDE, uboot.UNADDRESSABLE])
        b = {"path": "/d/a𠀋b", "type": "file", "size": 6}
        self.assertIsNone(explain(ListingDiff(missing=diff.missing + [b], extra=diff.extra,
                                              changed=diff.changed)))

    def test_5i_many_names_in_one_read(self):
        """U-Boot's environment holds a few hundred variables: a read that
        hands over ~770 names had the last dozen come out empty ("Failed to
        load ''"). A Session deletes the variables of older round trips,
        its own and those of the sessions before it on the board."""
        from vfz.oracles.uboot.shell import Session
        import time
        self.board.load(self.img("vars.img", ""))
        for k in range(6):
            if k % 3 == 0:
                s = Session(self.board, time.monotonic() + 120)
            paths = [("/é%d-%d" % (k, i)).encode("latin-1") for i in range(180)]
            res = s.runs([b"echo " + w for w in s.words(paths)])
            self.assertEqual([o.strip() for o, _ in res], paths)

    def test_5j_05_dummy_after_rename_in_a_whole_script(self):
        """uboot-05-skipped on a whole mixed script (issue 26): under
        core-v3, seed 80, the renamed directory's new dummy starts with 0x05
        and U-Boot loses it and its file; '名' (U+540D: a CR to U-Boot)
        loads. The checker files exactly the one named exception."""
        from vfz.check import checker
        script = ('mkdir "/Dir B"\ncreate "/Dir B/inner file.txt" 100 3\n'
                  'create "/日本語のファイル名.txt" 50 2\ncreate "/plain.txt" 10 1\n'
                  'rename "/Dir B" "/Dir B renamed with contents"\n')
        ck = checker.Checker(["uboot"], ["core-v3"], cfg={"uboot": {"board": self.board},
                                                           "core-v3": {"seed": 80}})
        try:
            r = ck.check(opscript.parse(script), "fat16")
            img = r.images["core-v3"]
            shorts = {e["path"]: e["short"] for e in listing.loads(run([VFAT, "ls", img]).stdout)}
            self.assertTrue(shorts["/Dir B renamed with contents"].startswith("05"), shorts)
            self.assertEqual(sorted(d.fields["kind"] for d in r.divs.values()), [uboot.SKIPPED_05],
                             r.details.get("core-v3"))
        finally:
            ck.close()

    def test_6_hostile_images(self):
        garbage = os.path.join(self.tmp, "garbage.img")
        with open(garbage, "wb") as f:
            f.write(bytes((i * 7 + 3) % 251 for i in range(1 << 20)))
        r = self.reader.read(garbage, 60.0)
        self.assertIsNotNone(r.error)
        self.assertIsNone(r.listing)
        # a directory whose first cluster (full: no end marker) is chained
        # to itself: fatls never ends
        loop = self.img("loop.img", 'mkdir "/d"\n' + "".join(f'create "/d/F{i:02d}" 1 1\n'
                                                              for i in range(80)))
        cl = next(e["cluster"] for e in listing.loads(run([VFAT, "ls", loop]).stdout)
                  if e["path"] == "/d")
        with open(loop, "r+b") as f:
            bs = f.read(512)
            bps, _, reserved = struct.unpack_from("<HBH", bs, 11)
            f.seek(reserved * bps + 2 * cl)
            f.write(struct.pack("<H", cl))
        r = self.reader.read(loop, 10.0)
        self.assertTrue(r.error and r.error.startswith("trap:"), r.error)
        a = self.img("after.img", TREE_A)
        self.assertEqual(listing.normalize(self.read(a).listing), core_ls(a))


if __name__ == "__main__":
    unittest.main(verbosity=2)
