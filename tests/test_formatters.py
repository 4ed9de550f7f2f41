#!/usr/bin/python3
"""Formatters as a role (vfz.oracles Formatter, vfz.geometry, vfz.campaign.geometry) against
the real tools: mkfs.fat, `vfat mkfs` and BusyBox's mkdosfs make exactly the layout asked
(read back from the boot sector), refuse what they cannot make, the cluster-count
boundaries are found from each formatter's own layout, fsck.fat reads each fresh volume,
and BusyBox's catalogued differences are recognised from fsck.fat's real words only.
"""
import os
import random
import shutil
import struct
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from vfz import geometry, oracles  # noqa: E402
from vfz.campaign import geometry as cgeo  # noqa: E402
from vfz.errors import UsageError  # noqa: E402


def bpb(path):
    with open(path, "rb") as f:
        b = f.read(512)
    bps, spc, res, nfats, rootent = struct.unpack_from("<HBHBH", b, 11)
    return dict(sector=bps, cluster=bps * spc, reserved=res, fats=nfats, root=rootent)


class FormatterTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="vfz-fmt-")
        cls.img = os.path.join(cls.tmp, "v.img")
        cls.fsck = oracles.get_reader("dosfsck", repair=False)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def make(self, spec):
        g = geometry.parse(spec)
        r = oracles.get_formatter(g.formatter).format(self.img, g)
        return g, r

    def test_spec_round_trip_and_bad_specs(self):
        for s in ("fat12:2M", "fat16:4M:512", "fat12:1200K:4096:sector=4096:fats=1@vfat",
                  "fat32:40M:4096:reserved=8@mkfs.fat", "fat16:8M:2048:root=1024@mkfs.fat"):
            self.assertEqual(geometry.parse(s).spec(), s)
        for bad in ("fat13:2M", "fat16:4M:3000", "fat16:4M:512:fats=3", "fat16:4M:512:sector=768",
                    "fat16:4M:512:colour=1", "fat16:0M", "fat16:4M:512:sector=4096"):
            with self.assertRaises(UsageError, msg=bad):
                geometry.parse(bad)

    def test_layout_is_what_was_asked(self):
        for spec in ("fat12:1200K:4096:sector=4096:fats=1:reserved=3:root=128@vfat",
                     "fat16:16M:2048:fats=1:reserved=4:root=1024@mkfs.fat",
                     "fat32:300M:4096:sector=1024:reserved=16@mkfs.fat",
                     "fat16:6M:1024:sector=1024:root=64@vfat"):
            g, r = self.make(spec)
            self.assertIsNone(r.error, spec)
            got = bpb(self.img)
            for k in ("sector", "cluster", "fats", "reserved", "root"):
                if getattr(g, k):
                    self.assertEqual(got[k], getattr(g, k), f"{spec}: {k}")
            self.assertEqual(os.path.getsize(self.img), g.size)
            rr = self.fsck.read(self.img)
            self.assertEqual((rr.error, rr.complaints), (None, []), f"fsck.fat on {spec}: {rr.raw[-300:]}")

    def test_refuses_what_it_cannot_make(self):
        g, r = self.make("fat16:4M:1024@busybox-mkdosfs")
        self.assertIn("unsupported", r.error)
        g, r = self.make("fat32:40M:4096@busybox-mkdosfs")
        self.assertIn("unsupported", r.error)          # BusyBox takes no cluster size

    def test_own_mkfs_refusing_is_a_finding(self):
        """The build under test's mkfs refusing a volume is a formatter divergence of the
        check (the campaign files it, vfz.check.formatted.format_failed); a peer formatter's
        refusal still stops the check (a harness error, not the build's)."""
        from vfz import opscript
        from vfz.check.checker import Checker
        ck = Checker(["dosfsck"], ["core-dual"], notes=[])
        try:
            res = ck.check(opscript.parse('mkdir "/a"\n'), "fat32:1M@vfat")
            (d,) = res.divs.values()
            self.assertEqual((d.fields["role"], d.fields["oracle"], d.fields["verdict"], d.writer),
                             ("formatter", "core", "failed", "vfat"))
            self.assertIn("no cluster size", d.fields["kind"])
            self.assertEqual(res.images, {})
            with self.assertRaises(UsageError):
                ck.check(opscript.parse('mkdir "/a"\n'), "fat16:4M:1024@busybox-mkdosfs")
            # the campaign sizes a generated script to its volume before the check, which
            # makes the volume: a refusal there must reach the check, not stop the campaign
            # (it did: main-job mutant mkfs.c:55's run ended at 22 s with no finding)
            from vfz.campaign import loop, patterns
            ops = opscript.parse('mkdir "/a"\ncreate "/a/f" 10 1\n')
            with self.assertRaises(UsageError):
                patterns.for_script(ck, ops, "fat16:64K@vfat", 1)
            self.assertIs(loop.unmade_ok(lambda: patterns.for_script(ck, ops, "fat16:64K@vfat", 1), ops), ops)
            (d,) = ck.check(ops, "fat16:64K@vfat").divs.values()
            self.assertEqual((d.fields["role"], d.fields["verdict"]), ("formatter", "failed"))
        finally:
            ck.close()

    def test_boundaries_from_the_formatters_own_layout(self):
        from vfz.fatimg import Fat
        # mkfs.fat 4.2 refuses the counts next to the boundaries (measured: with 4 KiB
        # clusters its largest FAT12 is 4 075 clusters), so only the core's formatter sits
        # exactly on them; a count the formatter never makes is None, never a near miss
        lay = geometry.Geometry(12, 0, 4096, formatter="mkfs.fat")
        self.assertIsNone(cgeo.size_for(lay, geometry.FAT12_MAX))
        for name, fat, cl, target in (("vfat", 12, 4096, geometry.FAT12_MAX),
                                      ("vfat", 16, 2048, geometry.FAT12_MAX + 1),
                                      ("vfat", 16, 512, geometry.FAT16_MAX),
                                      ("vfat", 32, 512, geometry.FAT16_MAX + 1),
                                      ("mkfs.fat", 12, 4096, 4075)):
            lay = geometry.Geometry(fat, 0, cl, formatter=name)
            size = cgeo.size_for(lay, target)
            self.assertIsNotNone(size, f"{name} FAT{fat} {target}")
            g = geometry.Geometry(fat, size, cl, formatter=name)
            r = oracles.get_formatter(name).format(self.img, g)
            self.assertIsNone(r.error)
            with open(self.img, "rb") as f:
                self.assertEqual(Fat(f.read(4096)).clusters, target, f"{name} {g.spec()}")

    def explained(self, geo, rr):
        """The complaint lines every oracle's fresh_exceptions explain, by name."""
        out = {}
        for role, name in (("formatter", geo.formatter), ("reader", "dosfsck")):
            for n, lines in oracles.oracle_class(name, role).fresh_exceptions(geo, rr):
                out[n] = lines
        return out

    def test_fresh_volume_exceptions_from_real_fsck_words(self):
        g = geometry.Geometry(32, 1 << 20, formatter="busybox-mkdosfs")
        self.assertIsNone(oracles.get_formatter("busybox-mkdosfs").format(self.img, g).error)
        rr = self.fsck.read(self.img)
        ex = self.explained(g, rr)
        self.assertEqual(sorted(ex), ["busybox-label-nul", "fsck-fat32-few-clusters"], rr.complaints)
        self.assertEqual(sorted(x for v in ex.values() for x in v), sorted(rr.complaints))
        # mkfs.fat -F 32 on a small volume: the same warning, no label complaint
        g = geometry.parse("fat32:40M:4096@mkfs.fat")
        self.assertIsNone(oracles.get_formatter("mkfs.fat").format(self.img, g).error)
        rr = self.fsck.read(self.img)
        self.assertEqual(sorted(self.explained(g, rr)), ["fsck-fat32-few-clusters"])
        # BusyBox without -n: 11 NULs in the boot sector's label, rejected by fsck.fat
        with open(self.img, "wb") as f:
            f.truncate(40 << 20)
        from vfz.proc import run
        self.assertEqual(run(["busybox", "mkdosfs", self.img]).rc, 0)
        rr = self.fsck.read(self.img)
        self.assertEqual(sorted(self.explained(g.with_formatter("busybox-mkdosfs"), rr)), ["busybox-label-nul"])
        # nothing else is explained: a damaged FAT is no exception of either
        rr.complaints = rr.complaints + ["fat -: FATs differ but appear to be intact."]
        ex = self.explained(g.with_formatter("busybox-mkdosfs"), rr)
        self.assertNotIn("fat -: FATs differ but appear to be intact.", [x for v in ex.values() for x in v])

    def test_fresh_check_names_few_clusters_and_reads_nul_label(self):
        """Regressions of the formatter sweep (reports/formatters.md): a count reader on a FAT32
        boot sector over few clusters is its family's fat32-few-clusters on a fresh volume too,
        and fusefat's label-as-file of BusyBox's NUL-padded label is the name fusefat shows
        ('VFATFUZZ.'), so neither is a finding."""
        import collections
        from vfz.check import formatted
        from vfz.check.divergence import CheckResult
        for spec, reader, want in (("fat32:1M@busybox-mkdosfs", "sleuthkit", ["sleuthkit-fat32-few-clusters"]),
                                   ("fat32:34M@busybox-mkdosfs", "fusefat", [])):
            g = geometry.parse(spec)
            self.assertIsNone(oracles.get_formatter(g.formatter).format(self.img, g).error)
            res, names = CheckResult(), collections.Counter()
            rd = oracles.get_reader(reader)
            try:
                formatted.check_formatted(res, [(reader, rd)], g, g.formatter, [], self.img, 32, 60, names)
            finally:
                rd.close()
            self.assertEqual((sorted(names), [d.detail for d in res.divs.values()]), (want, []), spec)

    def test_draw_is_seeded_and_makeable(self):
        names = oracles.names("formatter")
        a = [cgeo.draw(random.Random(7), names)[0] for _ in range(1)]
        b = [cgeo.draw(random.Random(7), names)[0] for _ in range(1)]
        self.assertEqual(a, b)
        r = random.Random(11)
        for _ in range(6):
            g, why = cgeo.draw(r, names)
            self.assertIsNotNone(g, why)
            res = oracles.get_formatter(g.formatter).format(self.img, g)
            self.assertIsNone(res.error, g.spec())
            self.assertEqual(geometry.parse(g.spec()), g)


if __name__ == "__main__":
    unittest.main()
