#!/usr/bin/python3
"""The vvfat writers (vfz/oracles/vvfat/) against qemu-img itself, one Checker for all:
  * a script with a subdirectory, files of 0 B to 20 KB and a write past
    the end, through the checker: vvfat-12, vvfat-16 and vvfat-floppy are
    read as the model's tree by fsck.fat, mtools (and 7-Zip when
    installed); every divergence on vvfat-32 is vvfat-fat32-fat16-bpb, on
    vvfat-floppy-16 vvfat-floppy16-fat12;
  * the evidence is the image's: a vvfat-16 and a vvfat-floppy volume hold
    neither; on a vvfat-floppy-16 volume of an empty file and an empty
    directory no chain moves, but FAT12 reading sees a cluster no chain
    holds (fsck.fat reclaims it): the checker's complaint is named, a
    listing reader reads it right;
  * the model's root is vvfat's: 256 one-letter files make the 256th
    ENOSPC and vvfat takes the other 255 (it refuses a root of 513 slots);
  * the volume is the FAT partition of vvfat's MBR disk (label 'QEMU
    VVFAT', 8 KiB clusters);
  * a tree over the floppy's 357 clusters is refused by vvfat and named
    vvfat-too-big at the op that makes it too big (the readers check the
    script cut there), and not for a tree that fits.
"""
import os
import shutil
import sys
import tempfile
import unittest

REPO = os.environ.get("VFAT_SRC") or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from vfz import fatimg, opscript  # noqa: E402
from vfz.check.checker import Checker  # noqa: E402
from vfz.oracles import exception  # noqa: E402
from vfz.oracles.evidence import Evidence  # noqa: E402
from vfz.oracles.vvfat import exceptions as X  # noqa: E402
from vfz.oracles.vvfat.volume import available  # noqa: E402

SCRIPT = """\
mkdir "/Dir A"
create "/Dir A/a long name.txt" 100 7
create "/big.bin" 20000 9
create "/small" 10 3
mkdir "/Dir A/sub"
create "/Dir A/sub/x" 9000 1
create "/empty" 0 0
write "/small" 5 30 4
"""
WRITERS = ["vvfat-12", "vvfat-16", "vvfat-32", "vvfat-floppy", "vvfat-floppy-16"]
RIGHT = ("vvfat-12", "vvfat-16", "vvfat-floppy")
NAMED = {"vvfat-32": X.FAT32_BPB, "vvfat-floppy-16": X.FLOPPY16}


@unittest.skipUnless(available()[0], "qemu-img missing (Debian qemu-utils; vfatfuzz setup)")
@unittest.skipUnless(shutil.which("fsck.fat") and shutil.which("mdir"), "dosfstools or mtools missing")
class VvfatTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.readers = ["dosfsck", "mtools"] + (["7z"] if shutil.which("7z") else [])
        cls.ck = Checker(readers=cls.readers, writers=WRITERS, explicit_readers=True, explicit_writers=True)
        cls.tmp = tempfile.mkdtemp(prefix="test-vvfat-")

    @classmethod
    def tearDownClass(cls):
        cls.ck.close()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def check(self, text, writers=None, workdir=None):
        wd = workdir or tempfile.mkdtemp(dir=self.tmp)
        return self.ck.check(opscript.parse(text), "fat16", writers=writers, workdir=wd)

    def test_variants_read_and_named(self):
        res = self.check(SCRIPT)
        for w in RIGHT:
            self.assertEqual(set(res.verdicts[w]) - {"(writer)"}, set(self.readers))
            self.assertTrue(all(v == "ok" for v in res.verdicts[w].values()), (w, res.details[w]))
        for w, name in NAMED.items():
            self.assertTrue(all(v != "ok" for r, v in res.verdicts[w].items() if r in self.readers),
                            (w, res.verdicts[w]))
        kinds = {(d.writer, d.fields["oracle"]): d.fields["kind"] for d in res.divs.values()}
        for (w, r), kind in kinds.items():
            self.assertIn(w, NAMED, (w, r, kind))
            self.assertEqual(kind, NAMED[w], (w, r))
        self.assertEqual({w for w, _ in kinds}, set(NAMED))
        # the image's evidence, each variant's own and no other's
        for w in WRITERS:
            fat = fatimg.open_ro(res.images[w])
            self.assertEqual(X.fat32_entries_under_fat16_bpb(fat), w == "vvfat-32", w)
            lost = X.floppy16_lost(fat)
            self.assertEqual(bool(lost), w == "vvfat-floppy-16", (w, lost))
            self.assertEqual(bytes(fat.b[43:54]), b"QEMU VVFAT ")
            self.assertEqual(fat.csize, 8192)
        lost = X.floppy16_lost(fatimg.open_ro(res.images["vvfat-floppy-16"]))
        self.assertIn("/big.bin", lost)            # 3 clusters
        self.assertNotIn("/empty", lost)           # no cluster

    def test_evidence_not_applied_where_it_does_not_hold(self):
        res = self.check(SCRIPT, writers=["vvfat-16"])
        fake = Evidence(opscript.parse(SCRIPT), writer="vvfat-16", reader="mtools", verdict="failed",
                        image=res.images["vvfat-16"], entries=[{"path": "/a", "type": "dir"}])
        self.assertIsNone(X.explain_read(fake))
        # a floppy-16 volume of empty files: no chain to move, read right
        res = self.check('create "/a" 0 0\nmkdir "/d"\n', writers=["vvfat-floppy-16"])
        fat = fatimg.open_ro(res.images["vvfat-floppy-16"])
        self.assertTrue(X._fat16_type(fat) and fat.bits == 12)
        self.assertEqual(X.floppy16_lost(fat), set())
        self.assertTrue(X.floppy16_orphans(fat))
        self.assertEqual({(d.fields["oracle"], d.fields["kind"]) for d in res.divs.values()},
                         {("dosfsck", X.FLOPPY16)}, res.details)
        self.assertEqual(res.verdicts["vvfat-floppy-16"]["mtools"], "ok")
        self.assertIsNone(X.explain_read(Evidence([], writer="vvfat-floppy-16", reader="7z", verdict="differs",
                                                  image=res.images["vvfat-floppy-16"])))

    def test_root_is_vvfat_own(self):
        text = "".join(f'create "/{c}" 1 0\n' for c in [chr(0x4E00 + i) for i in range(256)])
        res = self.check(text, writers=["vvfat-16"])
        self.assertEqual(res.verdicts["vvfat-16"].get("(writer)", "ok"), "ok", res.details["vvfat-16"])
        self.assertFalse(res.divs, res.details)
        fat = fatimg.open_ro(res.images["vvfat-16"])
        self.assertEqual(len(X.walk(fat, 16)), 255)        # the 256th: ENOSPC, as the model says

    def test_too_big_cut(self):
        # three 1 MB files: the floppy's 357 clusters hold two (and the
        # directory); vvfat refuses the third, the readers check the cut
        text = 'mkdir "/d"\n' + "".join(f'create "/d/{c}" 1000000 {i}\n' for i, c in enumerate("abc"))
        res = self.check(text, writers=["vvfat-floppy", "vvfat-12"])
        kinds = {(d.writer, d.fields["role"], d.fields["kind"]) for d in res.divs.values()}
        self.assertEqual(kinds, {("vvfat-floppy", "writer", X.TOO_BIG)}, res.details)
        self.assertIn("does not fit", res.details["vvfat-floppy"]["(writer)"])
        self.assertTrue(all(v == "ok" for r, v in res.verdicts["vvfat-floppy"].items() if r != "(writer)"))
        self.assertEqual(X.known_failure(Evidence(opscript.parse(text)[:3], writer="vvfat-floppy",
                                                  wr=type("W", (), {"error": "does not fit"})())), None)

    def test_exceptions_catalogued(self):
        for name in (X.FAT32_BPB, X.FLOPPY16):
            xs = exception(name)
            self.assertEqual([x.oracle for x in xs], ["vvfat"])
            self.assertEqual(xs[0].bug, "vvfat")


if __name__ == "__main__":
    unittest.main(verbosity=2)
