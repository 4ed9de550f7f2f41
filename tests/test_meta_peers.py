#!/usr/bin/python3
"""The second grammar (truncate, chattr, touch, label) on the peers, and the meta keys of their listings.

  1. Each peer writer (mtools, FatFs, the npm fatfs package, fusefat,
     fatlabel) on `vfat gen --meta` scripts: its results equal the model's
     op by op (its profile: vfz/model/profiles.py knobs), and what the core
     reads of its image (attrs, modify time, access date, label) equals the
     model's expectation, or the divergence is one of the writer's named
     exceptions; every kind of the second grammar it claims succeeds at
     least once.
  2. Each new named exception, recognised from its evidence on a real image
     (mtools-time-wrap, mtools-label-case, jsfatfs-truncate-ff00, jsfatfs-chmod-dir-volume,
     jsfatfs-time-wrap, fusefat-month-minus-one, fusefat-root-utime-segv,
     fusefat-month-plus-one-read, fatcat-skips-attr-files, sleuthkit-y2038).
  3. The readers' meta keys against the core's bytes (mtools, 7z, fatcat,
     sleuthkit, FatFs, fusefat, the npm package), and the one mask (mdir's
     minutes): a wrong attribute, time or label is caught, the mask hides
     only the seconds.
  4. Regressions of our glue: fusefat's agent imported after its chroot
     (chattr killed it), the label entry fusefat lists as a file under its
     8.3 form, jsfatfs/exceptions.py's imports after the layout move.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from collections import Counter

SRC = os.environ.get("VFAT_SRC") or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("VFAT_BUILD") or os.path.join(SRC, "build")
sys.path.insert(0, SRC)

from vfz import listing, opscript, oracles  # noqa: E402
from vfz.check import verdict  # noqa: E402
from vfz.check.checker import Checker, model_of, ops_for  # noqa: E402

VFAT = os.path.join(BUILD, "vfat")
NAMES = "upper83,lower83,long,latin,dots,slot13"


def gen(seed, ops=40):
    t = subprocess.run([VFAT, "gen", "--seed", str(seed), "--ops", str(ops), "--meta", "--names", NAMES],
                       capture_output=True, text=True, check=True).stdout
    return opscript.parse(t)


def usable(*names):
    for n in names:
        o = oracles.get_writer(n) if oracles.entry(n).writer else oracles.get_reader(n)
        ok, why = o.available() if hasattr(o, "available") else (True, "")
        o.close()
        if not ok:
            return False, why
    return True, ""


def kinds(res):
    return {d.fields["kind"] for d in res.divs.values()}


class Writers(unittest.TestCase):
    """gen --meta scripts through each peer writer, read by the core."""
    WRITERS = ("mtools", "fatfs", "jsfatfs", "fusefat", "fatlabel")
    # the named exceptions a writer's image may show on these scripts (its
    # catalogue: each one recognised from evidence by its hooks)
    NAMED = {"mtools": {"mtools-time-wrap", "mtools-mmove-grow-abort"},
             "jsfatfs": {"jsfatfs-truncate-ff00", "jsfatfs-chmod-dir-volume", "jsfatfs-time-wrap",
                         "jsfatfs-gap-write-size"},
             "fusefat": {"fusefat-month-minus-one", "fusefat-root-utime-segv", "fusefat-write-eperm",
                         "fusefat-rename-refused-loses-source", "fusefat-write-gap-cuts-chain",
                         "fusefat-rename-dir-empties"},
             "fatfs": set(), "fatlabel": set()}

    @classmethod
    def setUpClass(cls):
        cls.c = Checker(readers=["core"], writers=list(cls.WRITERS))
        cls.have = set(cls.c.writer_names)

    @classmethod
    def tearDownClass(cls):
        cls.c.close()

    def test_gen_meta_scripts(self):
        done = Counter()
        for seed in range(1, 7):
            ops = gen(seed)
            res = self.c.check(ops, "fat16")
            for d in res.divs.values():
                self.assertIn(d.fields["kind"], self.NAMED[d.writer], f"seed {seed}: {d} {d.detail[:300]}")
            for wn in self.have:
                wops = ops_for(wn, ops)
                m = model_of(wn, self.c.pristine_image("fat16"), wops)
                for o, r in zip(wops, m.results):
                    if o.kind in opscript.META_KINDS and r == "ok":
                        done[(wn, o.kind)] += 1
        print(f"second-grammar ops that succeeded, per writer: {dict(done)}", file=sys.stderr)
        for wn in self.have:
            for k in oracles.entry(wn).supports & oracles.META_OPS:
                self.assertGreater(done[(wn, k)], 0, f"{wn}: no {k} succeeded")

    def test_supports(self):
        want = {"mtools": {"truncate", "chattr", "touch", "label"}, "fatfs": {"truncate"},
                "jsfatfs": {"truncate", "chattr", "touch"}, "fusefat": {"truncate", "touch"},
                "fatlabel": {"label"}, "uboot": {"truncate"}}
        for wn, meta in want.items():
            self.assertEqual(oracles.entry(wn).supports & oracles.META_OPS, meta, wn)


class NamedBugs(unittest.TestCase):
    """Each new named exception, from a script that shows it."""

    def check(self, writer, readers, text, fs="fat16"):
        ok, why = usable(writer, *readers)
        if not ok:
            self.skipTest(why)
        c = Checker(readers=readers, writers=[writer])
        self.addCleanup(c.close)
        return c.check(opscript.parse(text), fs)

    def test_mtools_time_wrap(self):
        res = self.check("mtools", ["core"], 'create "/A" 10 1\ntouch "/A" 0 0\n'
                         'create "/B" 10 1\ntouch "/B" 7664162256 0\n')
        self.assertEqual(kinds(res), {"mtools-time-wrap"})
        # and an in-range time is no divergence
        self.assertEqual(kinds(self.check("mtools", ["core"], 'create "/A" 10 1\ntouch "/A" 1246079973 0\n')),
                         set())

    def test_mtools_label_case(self):
        res = self.check("mtools", ["dosfsck", "core"], 'label "lower"\ncreate "/a" 1 1\n')
        self.assertEqual(kinds(res), {"mtools-label-case"})
        # an upper-case label: boot and root agree, nothing to name
        self.assertEqual(kinds(self.check("mtools", ["dosfsck", "core"], 'label "UPPER"\n')), set())

    def test_jsfatfs_truncate_and_chmod(self):
        for fs in ("fat12", "fat16", "fat32"):
            res = self.check("jsfatfs", ["core"], 'create "/BIG" 20000 1\ntruncate "/BIG" 10\n', fs)
            self.assertEqual(kinds(res), {"jsfatfs-truncate-ff00"}, fs)
            from vfz.fatimg import open_ro
            from vfz.oracles.jsfatfs.meta import FREED
            fat = open_ro(res.images["jsfatfs"])
            self.assertGreater(sum(fat.get(n) == FREED[fat.bits] for n in range(2, fat.clusters + 2)), 0, fs)
        # a shrink that frees no cluster leaves the FAT right
        res = self.check("jsfatfs", ["core"], 'create "/A" 600 1\ntruncate "/A" 513\n')
        self.assertEqual(kinds(res), set())
        res = self.check("jsfatfs", ["core"], 'mkdir "/D"\ncreate "/D/x" 3 3\nchattr "/D" h\n')
        self.assertEqual(kinds(res), {"jsfatfs-chmod-dir-volume"})
        res = self.check("jsfatfs", ["core"], 'create "/A" 1 1\ntouch "/A" 0 0\ncreate "/E" 1 1\n'
                         'touch "/E" 9223372036854775807 1246079973\n')
        self.assertEqual(kinds(res), {"jsfatfs-time-wrap"})

    def test_fusefat_dates_and_root(self):
        res = self.check("fusefat", ["core"], 'create "/A" 1 1\ntouch "/A" 1246079973 1246079973\n')
        self.assertEqual(kinds(res), {"fusefat-month-minus-one"})
        # January is right (month 0 is read as 1)
        self.assertEqual(kinds(self.check("fusefat", ["core"], 'create "/A" 1 1\ntouch "/A" 1231977600 1231977600\n')),
                         set())
        res = self.check("fusefat", ["core"], 'create "/A" 1 1\ntouch "/" 1246079973 1246079973\n')
        self.assertEqual(kinds(res), {"fusefat-root-utime-segv"})

    def test_reader_bugs(self):
        script = 'create "/RO.TXT" 5 1\nchattr "/RO.TXT" rh\ncreate "/B" 1 1\ntouch "/B" 2177452800 2177452800\n'
        self.assertEqual(kinds(self.check("core-dual", ["fatcat"], script)), {"fatcat-skips-attr-files"})
        self.assertEqual(kinds(self.check("core-dual", ["sleuthkit"], script)), {"sleuthkit-y2038"})
        self.assertEqual(kinds(self.check("core-dual", ["fusefat"], script)), {"fusefat-month-plus-one-read"})


class Readers(unittest.TestCase):
    """Every reader's meta keys on one core-written image, compared with the
    model's expectation; a wrong expectation is caught (nothing vacuous)."""
    READERS = ("core", "mtools", "7z", "fatfs", "jsfatfs", "sleuthkit", "fatcat", "fusefat")
    SCRIPT = ('mkdir "/Dir A"\ncreate "/Dir A/long file name.txt" 10 1\ncreate "/PLAIN.TXT" 5 1\n'
              'create "/ARCH.TXT" 5 1\nchattr "/ARCH.TXT" hsa\nchattr "/Dir A" -\n'
              'touch "/PLAIN.TXT" 1246079973 1246079973\ntouch "/Dir A/long file name.txt" 1546079973 1546079973\n'
              'label "FUZZ 27"\n')

    @classmethod
    def setUpClass(cls):
        cls.c = Checker(readers=list(cls.READERS), writers=["core-dual"])
        cls.ops = opscript.parse(cls.SCRIPT)
        cls.res = cls.c.check(cls.ops, "fat16")
        cls.m = model_of("core-dual", cls.c.pristine_image("fat16"), cls.ops)

    @classmethod
    def tearDownClass(cls):
        cls.c.close()

    def test_all_agree(self):
        """Every reader shows the model's tree, attributes, times and label,
        but fusefat, whose months are named (fusefat-month-plus-one-read)."""
        named = {d.fields["oracle"]: d.fields["kind"] for d in self.res.divs.values()}
        self.assertEqual(named, {"fusefat": "fusefat-month-plus-one-read"} if "fusefat" in self.c.reader_names
                         else {})
        for rn in self.c.reader_names:
            if rn not in named:
                self.assertEqual(self.res.verdicts["core-dual"][rn], "ok",
                                 f"{rn}: {self.res.details['core-dual'][rn]}")

    def shown(self, rn):
        r = dict(self.c.readers)[rn]
        return r, r.read(self.res.images["core-dual"])

    def test_keys_shown(self):
        want = {"core": {"attrs", "mtime", "atime"}, "mtools": {"attrs", "mtime"}, "7z": {"attrs", "mtime", "atime"},
                "fatfs": {"attrs", "mtime"}, "jsfatfs": {"attrs", "mtime", "atime"},
                "sleuthkit": {"mtime", "atime"}, "fatcat": {"mtime"}, "fusefat": {"mtime"}}
        for rn in self.c.reader_names:
            _, rr = self.shown(rn)
            e = {x["path"]: x for x in rr.listing}["/PLAIN.TXT"]
            self.assertEqual(set(e) & set(listing.META_KEYS), want[rn], rn)

    def test_wrong_expectations_caught(self):
        exp = self.m.entries()
        for rn in self.c.reader_names:
            r, rr = self.shown(rn)
            for key, val in (("attrs", "r"), ("mtime", 1246079973 - 7200), ("atime", 1246060800 - 86400)):
                bad = [dict(e, **{key: val}) if e["path"] == "/PLAIN.TXT" else e for e in exp]
                shown = {x["path"]: x for x in rr.listing}["/PLAIN.TXT"]
                base = verdict.compare_listing(exp, rr.listing, type(r), None, Counter())
                d = verdict.compare_listing(bad, rr.listing, type(r), None, Counter())
                self.assertEqual(d.lines() != base.lines(), key in shown, f"{rn} {key}")

    def test_labels(self):
        lab = self.m.expected_label()
        self.assertEqual(lab, {"boot": "FUZZ 27", "root": "FUZZ 27"})
        for rn in ("core", "mtools", "sleuthkit"):
            _, rr = self.shown(rn)
            self.assertEqual(verdict.compare_label(lab, rr.extra["label"]), [], rn)
            self.assertTrue(verdict.compare_label({"boot": "X", "root": "X"}, rr.extra["label"]), rn)

    def test_mdir_minute_mask(self):
        """mdir shows 5:19 for 05:19:32: the mask floors both sides, so a
        time 20 s off passes and one a minute off does not."""
        r, rr = self.shown("mtools")
        exp = self.m.entries()
        for delta, caught in ((20, False), (60, True)):
            bad = [dict(e, mtime=e["mtime"] + delta) if e["path"] == "/PLAIN.TXT" else e for e in exp]
            self.assertEqual(bool(verdict.compare_listing(bad, rr.listing, type(r), None, Counter())), caught)


class GlueRegressions(unittest.TestCase):
    def test_fusefat_chattr_enotty(self):
        ok, why = usable("fusefat")
        if not ok:
            self.skipTest(why)
        w = oracles.get_writer("fusefat")
        self.addCleanup(w.close)
        tmp = tempfile.mkdtemp(prefix="vfz-meta-fusefat-")
        self.addCleanup(shutil.rmtree, tmp, True)
        img = os.path.join(tmp, "f.img")
        subprocess.run([VFAT, "mkfs", img, "--size", "4M", "--fat", "16"], check=True, capture_output=True)
        wr = w.apply(img, opscript.parse('create "/A" 10 1\nchattr "/A" rh\ncreate "/B" 1 1\n'))
        # the agent imported fcntl after its chroot and died (fusefat then
        # killed before it wrote back): now FUSE's answer, and the next op runs
        self.assertIsNone(wr.error)
        self.assertEqual(wr.results, ["ok", "ENOTTY", "ok"])

    def test_fusefat_label_file_name(self):
        from vfz.oracles.fusefat.reader import label_file_name
        tmp = tempfile.mkdtemp(prefix="vfz-meta-label-")
        self.addCleanup(shutil.rmtree, tmp, True)
        for text, shown in (("12345678901", "12345678.901"), ("A B", "AB"), ("NO NAMEX", "NONAMEX"),
                            ("VFATFUZZ", "VFATFUZZ")):
            img = os.path.join(tmp, "l.img")
            subprocess.run(["mkfs.fat", "-C", "-n", text, img, "2048"], check=True, capture_output=True)
            self.assertEqual(label_file_name(img), shown)
            os.unlink(img)

    def test_jsfatfs_exceptions_imports(self):
        from vfz.oracles.jsfatfs import exceptions as X
        self.assertFalse(X.op_throws(opscript.parse('create "/a" 1 1\n')[0]))
        self.assertTrue(X.op_throws(opscript.parse('create "/a|b" 1 1\n')[0]))
        tmp = tempfile.mkdtemp(prefix="vfz-meta-js-")
        self.addCleanup(shutil.rmtree, tmp, True)
        img = os.path.join(tmp, "j.img")
        subprocess.run([VFAT, "mkfs", img, "--size", "4M", "--fat", "16"], check=True, capture_output=True)
        self.assertEqual(X._core_clusters(img), {})


if __name__ == "__main__":
    unittest.main(verbosity=2)
