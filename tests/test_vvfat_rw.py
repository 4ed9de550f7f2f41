#!/usr/bin/python3
"""kernel-vvfat (vfz/oracles/vvfat/: Linux in a guest writes on a hot-plugged
fat:rw: vvfat disk, mounted synchronous; the host directory vvfat wrote back
is read against the model), one guest for all:
  * a script of mkdir and create (a long name, a subdirectory, a file in it)
    through the checker: the writer's results are the model's, its image is
    the archive of the host directory, and the kernel-vvfat reader finds the
    model's tree in it, contents included; the guest's own listing rides in
    the archive and is the model's too; no FAT reader reads the archive and
    the kernel-vvfat reader reads no FAT volume;
  * the comparison can fail: the same archive with one file's bytes changed,
    one file gone, one extra, is read as differing;
  * a script that unlinks, writes into a file and creates a bare 8.3 name
    (mkdir, create, write, unlink; a rename aborts QEMU on this mount,
    vvfat-abort-cluster-count, and costs a boot): the host directory differs from
    the model, and each difference is a named vvfat exception recognised
    from the guest's listing and the script (unlink-kept, update-lost,
    downcase-short-names), none unexplained;
  * QEMU's abort on a vvfat assertion is named from its stderr line only
    when the script has the kind of op that reaches that assertion.
"""
import os
import shutil
import sys
import tarfile
import tempfile
import unittest

REPO = os.environ.get("VFAT_SRC") or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from vfz import opscript, oracles  # noqa: E402
from vfz.check import verdict  # noqa: E402
from vfz.check.checker import Checker  # noqa: E402
from vfz.oracles import WriteResult  # noqa: E402
from vfz.oracles.evidence import Evidence  # noqa: E402
from vfz.oracles.vvfat import archive, rw  # noqa: E402

SCRIPT = """\
mkdir "/Dir A"
create "/Dir A/a long name.txt" 100 7
create "/Keep.TXT" 3000 4
mkdir "/Dir A/sub"
create "/Dir A/sub/last one" 7 2
"""
NAMED = """\
mkdir "/d"
create "/x" 5 1
unlink "/x"
create "/z" 100 1
write "/z" 80 50 2
create "/UP.TXT" 10 3
"""
ABORT = ("QEMU aborted: ../../block/vvfat.c:2756: handle_renames_and_mkdirs: "
         "Assertion `j < s->mapping.next' failed.; vvfat guest: channel closed (QEMU died)")


def _available():
    ok, why = oracles.get_writer("kernel-vvfat").available()
    return ok and shutil.which("mdir") is not None, why or "mtools missing"


@unittest.skipUnless(_available()[0], f"kernel-vvfat unavailable: {_available()[1]}")
class KernelVvfatTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="test-vvfat-rw-")
        cls.ck = Checker(readers=["kernel-vvfat", "mtools"], writers=["kernel-vvfat", "core-dual"],
                         explicit_readers=True, explicit_writers=True)
        cls.ops = opscript.parse(SCRIPT)
        cls.res = cls.ck.check(cls.ops, "fat16", workdir=cls.tmp)

    @classmethod
    def tearDownClass(cls):
        cls.ck.close()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_host_directory_is_the_model_tree(self):
        res = self.res
        self.assertEqual(res.verdicts["kernel-vvfat"], {"kernel-vvfat": "ok"}, res.details)
        self.assertEqual(res.results["kernel-vvfat"], ["ok"] * 5, res.raws["kernel-vvfat"])
        self.assertFalse(res.divs, res.details)
        entries, guest = archive.read(res.images["kernel-vvfat"])
        sizes = {e["path"]: e.get("size") for e in entries}
        self.assertEqual(sizes, {"/Dir A": None, "/Dir A/a long name.txt": 100, "/Dir A/sub": None,
                                 "/Dir A/sub/last one": 7, "/Keep.TXT": 3000})
        self.assertEqual([{k: e[k] for k in ("path", "type", "size", "sha256") if k in e} for e in entries],
                         guest)
        # the media: mtools read core-dual's volume and not the archive
        self.assertEqual(res.verdicts["core-dual"], {"mtools": "ok"})

    def test_differences_named(self):
        res = self.ck.check(opscript.parse(NAMED), "fat16", writers=["kernel-vvfat"],
                            workdir=tempfile.mkdtemp(dir=self.tmp))
        self.assertEqual(res.results["kernel-vvfat"], ["ok"] * 6, res.raws["kernel-vvfat"])
        self.assertEqual(res.verdicts["kernel-vvfat"], {"kernel-vvfat": "differs"}, res.details)
        kinds = {d.fields["kind"] for d in res.divs.values()}
        self.assertTrue(kinds, res.details)
        self.assertLessEqual(kinds, {rw.UNLINK_KEPT, rw.UPDATE_LOST, rw.DOWNCASE}, res.details)
        entries, guest = archive.read(res.images["kernel-vvfat"])
        self.assertEqual({e["path"] for e in guest}, {"/d", "/z", "/UP.TXT"})

    def _judge(self, image):
        rr = oracles.get_reader("kernel-vvfat").read(image)
        from vfz.check.predict import model_of
        m = model_of("kernel-vvfat", self.ck.pristine_image("fat16"), self.ops)
        return verdict.verdict_for(rr, m.entries(), "kernel-vvfat", None, {}, "kernel-vvfat", image=image)

    def test_comparison_can_fail(self):
        src = self.res.images["kernel-vvfat"]
        self.assertEqual(self._judge(src).verdict, "ok")
        for change in ("bytes", "gone", "extra"):
            top = tempfile.mkdtemp(dir=self.tmp)
            with tarfile.open(src, **archive.ENC) as t:
                t.extractall(top)
            if change == "bytes":
                with open(os.path.join(top, "Keep.TXT"), "r+b") as f:
                    f.write(b"!")
            elif change == "gone":
                os.unlink(os.path.join(top, "Dir A", "sub", "last one"))
            else:
                open(os.path.join(top, "x"), "wb").close()
            img = os.path.join(self.tmp, f"{change}.tar")
            archive.write(top, img)
            self.assertEqual(self._judge(img).verdict, "differs", change)

    def test_abort_named_by_its_op_kind(self):
        nested = opscript.parse('mkdir "/a"\ncreate "/f" 1 1\nmkdir "/a/c"\n')
        flat = opscript.parse('mkdir "/a"\ncreate "/a/f" 1 1\n')
        wr = WriteResult("kernel-vvfat", error=ABORT)
        self.assertEqual(rw.known_failure(Evidence(nested, writer="kernel-vvfat", wr=wr)), (2, rw.MKDIR_PARENT))
        self.assertIsNone(rw.known_failure(Evidence(flat, writer="kernel-vvfat", wr=wr)))
        other = WriteResult("kernel-vvfat", error="QEMU aborted: vvfat.c:1: f: Assertion `x' failed.")
        self.assertIsNone(rw.known_failure(Evidence(nested, writer="kernel-vvfat", wr=other)))
        self.assertEqual([x.oracle for x in oracles.exception(rw.MKDIR_PARENT)], ["vvfat"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
