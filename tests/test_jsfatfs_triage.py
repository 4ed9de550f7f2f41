#!/usr/bin/python3
"""The jsfatfs causes of issue 29's campaign 2911 (the npm fatfs package 0.10.8 itself, one Node process), each recognised from real evidence and not on its control:
  * jsfatfs-fat32-few-clusters-write: mkdir on mkfs.fat -F 32's 34 MB volume
    of 4344 clusters, whose image read as the package reads it holds the
    expected tree; not on a FAT32 of 68k clusters, nor against another tree;
  * jsfatfs-chmod-dir-volume on that volume (the label bit seen in the
    package's view of the image: vfz.fatimg finds no root there);
  * a throw of the package commits what it wrote before it, so a chattr of a
    directory before a '|' name is jsfatfs-chmod-dir-volume (the glue lost it);
  * jsfatfs-enospc-partial-entry: a 20-slot mkdir into a 16-slot root leaves
    orphaned long-name slots and the next mkdir is ENOSPC; not on a 512-slot root;
  * busybox-label-nul beside the package's exceptions: every divergence of a
    create on BusyBox's FAT32, for the package and core-dual, is named;
  * jsfatfs-dir-spellings where a mkdir through one spelling overwrote the
    long-name slots of a file made through another (fsck.fat's "Long
    filename fragment ... found outside a LFN sequence"; campaign 2911 rerun).
"""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

REPO = os.environ.get("VFAT_SRC") or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from vfz import model, opscript, oracles  # noqa: E402
from vfz.check.checker import Checker  # noqa: E402
from vfz.check.predict import model_of  # noqa: E402
from vfz.oracles.core import vfat_binary  # noqa: E402
from vfz.oracles.evidence import Evidence  # noqa: E402
from vfz.oracles.jsfatfs import fewclusters, meta, partial  # noqa: E402
from vfz.oracles.jsfatfs.profile import PROFILE  # noqa: E402
from vfz.oracles.jsfatfs.server import available  # noqa: E402
from vfz.oracles.jsfatfs.writer import JsfatfsWriter  # noqa: E402

VFAT = vfat_binary()


def mkfs(path, *args):
    """mkfs.fat ARGS[:-1] -C path ARGS[-1] (KiB)."""
    if os.path.exists(path):
        os.unlink(path)
    subprocess.run(["mkfs.fat", *args[:-1], "-C", path, args[-1]], check=True, capture_output=True)


def expected(ops):
    m = model.Model(PROFILE, "nodual", rule="lfn")
    m.apply(ops)
    return m


@unittest.skipUnless(available()[0], "node or the npm package fatfs is missing (vfatfuzz setup)")
@unittest.skipUnless(shutil.which("mkfs.fat"), "mkfs.fat missing")
class JsfatfsTriageTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="test-jsfatfs-triage-")
        cls.writer = JsfatfsWriter()

    @classmethod
    def tearDownClass(cls):
        cls.writer.close()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def apply(self, name, mkfs_args, text):
        p = os.path.join(self.tmp, name)
        mkfs(p, *mkfs_args)
        ops = opscript.parse(text)
        return p, ops, self.writer.apply(p, ops, 30)

    def test_few_clusters_write(self):
        few = ["-F", "32", "-s", "16", "34816"]         # 4344 clusters of 8 KiB
        p, ops, w = self.apply("few.img", few, 'mkdir "/a"\ncreate "/b" 9000 3\n')
        self.assertEqual(w.results, ["ok", "ok"])
        m = expected(ops)
        ev = Evidence(ops, writer="jsfatfs", image=p, entries=m.entries(), verdict="complains")
        self.assertEqual(fewclusters.explain_few_clusters(ev), fewclusters.FEW_WRITE)
        # Linux's reading: a's first cluster is free in the 32-bit FAT
        view = fewclusters.package_view(p)
        self.assertEqual(view.bits, 16)
        other = [dict(e, size=e.get("size", 0) + 1) if e["type"] == "file" else e for e in m.entries()]
        self.assertIsNone(fewclusters.explain_few_clusters(
            Evidence(ops, writer="jsfatfs", image=p, entries=other, verdict="complains")))
        q, ops, w = self.apply("many.img", ["-F", "32", "-s", "1", "36000"], 'mkdir "/a"\n')
        self.assertIsNone(fewclusters.explain_few_clusters(
            Evidence(ops, writer="jsfatfs", image=q, entries=expected(ops).entries(), verdict="complains")))

    def test_chattr_dir_on_few_clusters(self):
        p, ops, w = self.apply("fewdir.img", ["-F", "32", "-s", "16", "34816"], 'mkdir "/a"\nchattr "/a" r\n')
        self.assertEqual(meta.known_failure(ops, expected(ops).results, p), (1, meta.DIR_VOLUME))

    def test_throw_commits_what_came_before(self):
        p, ops, w = self.apply("throw.img", ["-F", "16", "20000"], 'mkdir "/a"\nchattr "/a" r\ncreate "/b|" 0 0\n')
        self.assertIn('Invalid character "|"', w.error)
        self.assertEqual(meta.dir_volumes(meta._fat(p)), [(b"A          ", 0x19)])
        ev = Evidence(ops, writer="jsfatfs", wr=w, results=expected(ops).results, image=p)
        self.assertEqual(JsfatfsWriter.known_failure(ev), (1, meta.DIR_VOLUME))

    def test_enospc_partial_entry(self):
        text = f'mkdir "/{"n" * 250}"\nmkdir "/A/"\n'
        base = os.path.join(self.tmp, "r16-base.img")
        mkfs(base, "-F", "12", "-r", "16", "-s", "1", "2048")
        p, ops, w = self.apply("r16.img", ["-F", "12", "-r", "16", "-s", "1", "2048"], text)
        self.assertEqual(w.results, ["ENOSPC", "ENOSPC"])
        self.assertEqual(partial.orphan_tail(p), 16)
        m = model_of("jsfatfs", base, ops)      # the model of the 16-slot root
        self.assertEqual(m.results, ["ENOSPC", "ok"])
        ev = Evidence(ops, writer="jsfatfs", wr=w, results=m.results, image=p)
        self.assertEqual(JsfatfsWriter.known_failure(ev), (1, partial.PARTIAL))
        q, ops, w = self.apply("r512.img", ["-F", "12", "-s", "1", "2048"], text)
        self.assertEqual(w.results, ["ok", "ok"])
        self.assertEqual(partial.orphan_tail(q), 0)

    @unittest.skipUnless(shutil.which("busybox") and os.access(VFAT, os.X_OK), "busybox or build/vfat missing")
    def test_busybox_label_beside_package_exceptions(self):
        names = {x.name for x in oracles.exceptions()}
        for wn in ("jsfatfs", "core-dual"):
            c = Checker(readers=["dosfsck", "mtools", "vfat-check"], writers=[wn], vfat=VFAT)
            try:
                res = c.check(opscript.parse('mkdir "/d"\ncreate "/d/a" 0 0\n'), "fat32:34076160@busybox-mkdosfs")
            finally:
                c.close()
            kinds = {(d.fields["oracle"], d.fields["kind"]) for d in res.divs.values()}
            self.assertIn(("mtools", "mtools-label-nul"), kinds, wn)     # mtools shows its text
            self.assertIn(("dosfsck", "busybox-label-nul"), kinds, wn)
            if wn == "core-dual":       # jsfatfs's own images break the checker's rules elsewhere
                self.assertIn(("vfat-check", "busybox-label-nul"), kinds, wn)
            for k in kinds:
                if k[0] != "vfat-check" or wn == "core-dual":
                    self.assertIn(k[1], names, (wn, kinds))

    @unittest.skipUnless(os.access(VFAT, os.X_OK), "build/vfat missing")
    def test_spellings_leave_lfn_fragments(self):
        long = "q" * 200
        text = (f'mkdir "//\U0001d11eX"\ncreate "/\U0001d11eX/a" 0 0\n'
                f'create "/\U0001d11ex/{long}" 0 0\nmkdir "/\U0001d11eX/L"\n')
        names = {x.name for x in oracles.exceptions()}
        c = Checker(readers=["dosfsck"], writers=["jsfatfs"], vfat=VFAT)
        try:
            res = c.check(opscript.parse(text), "fat16")
        finally:
            c.close()
        self.assertIn("found outside a LFN sequence", res.details["jsfatfs"]["dosfsck"])
        kinds = {d.fields["kind"] for d in res.divs.values()}
        self.assertIn("jsfatfs-dir-spellings", kinds)
        self.assertLessEqual(kinds, names)


if __name__ == "__main__":
    unittest.main(verbosity=2)
