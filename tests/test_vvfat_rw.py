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
  * a file grown inside its cluster (create 13 bytes, write 13 at 6578)
    reaches the host with its old head and not the bytes written:
    vvfat-grown-file-stale-bytes, recognised from the host file itself;
  * QEMU's abort on a vvfat assertion is named from its stderr line only
    when the script has the kind of op that reaches that assertion (a
    directory rename reaches check_directory_consistency's).
kernel-vvfat-nodual (the guest with the seed patch's v1 modules, a VM of its
own, kept for the class): a script of long names in the root and in a
directory reaches the host as the patched kernel's model (verdict ok, the
guest's own listing the model's), the nodual_seed parameter only the
patched vfat.ko has was written; the compat study's vvfat cells for that
writer (vfz.study.compat_media.judge_one) say "reads correctly" for the
whole script and the cut row; the v3 writer's name hook names vvfat's
lower-casing of a name the winnt rule stores bare.
kernel-vvfat-nodual-v3 (its own guest): with the seed at which the core's
v3 writer (the patched module's twin) draws dummies led by 0x05 (the
escape of a leading 0xE5) for a directory and a file, the host directory
is the model's tree: vvfat follows those entries by their long names.
Without a VM (HostTreeTest): host trees made from the model's where vvfat
stalled and failed entries at once are named by every cause and only when
each difference has one; a bare 8.3 name vvfat downcased that the script
unlinked is unlink-kept; an array_get abort is named by the subdirectory
that grew past one cluster or by a chattr, whichever op comes first, and
is a finding with neither; the campaign brings the kernel-vvfat reader with
the writer whatever --oracles says.
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
from vfz.oracles.vvfat import archive, hosttree, rw  # noqa: E402

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
GROWN = """\
create "/f" 13 142
write "/f" 6578 13 50
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

    def test_grown_file_named(self):
        res = self.ck.check(opscript.parse(GROWN), "fat16", writers=["kernel-vvfat"],
                            workdir=tempfile.mkdtemp(dir=self.tmp))
        self.assertEqual(res.results["kernel-vvfat"], ["ok", "ok"], res.raws["kernel-vvfat"])
        self.assertEqual({d.fields["kind"] for d in res.divs.values()}, {rw.GROWN_STALE}, res.details)
        got = archive.file_bytes(res.images["kernel-vvfat"], "/f")
        self.assertEqual(len(got), 6591)
        self.assertEqual(got[:13], opscript.content(142, 13))
        self.assertNotEqual(got[6578:], opscript.content(50, 13))

    def test_abort_named_by_its_op_kind(self):
        nested = opscript.parse('mkdir "/a"\ncreate "/f" 1 1\nmkdir "/a/c"\n')
        flat = opscript.parse('mkdir "/a"\ncreate "/a/f" 1 1\n')
        wr = WriteResult("kernel-vvfat", error=ABORT)
        self.assertEqual(rw.known_failure(Evidence(nested, writer="kernel-vvfat", wr=wr)), (2, rw.MKDIR_PARENT))
        self.assertIsNone(rw.known_failure(Evidence(flat, writer="kernel-vvfat", wr=wr)))
        other = WriteResult("kernel-vvfat", error="QEMU aborted: vvfat.c:1: f: Assertion `x' failed.")
        self.assertIsNone(rw.known_failure(Evidence(nested, writer="kernel-vvfat", wr=other)))
        self.assertEqual([x.oracle for x in oracles.exception(rw.MKDIR_PARENT)], ["vvfat"])
        consistency = WriteResult("kernel-vvfat", error="QEMU aborted: ../../block/vvfat.c:2034: "
                                  "check_directory_consistency: Assertion `mapping->mode & MODE_DELETED' failed.")
        dir_rename = opscript.parse('mkdir "/a"\ntouch "/a" 1 1\nrename "/a" "/b"\n')
        self.assertEqual(rw.known_failure(Evidence(dir_rename, writer="kernel-vvfat", wr=consistency)),
                         (2, rw.CONSISTENCY))
        self.assertIsNone(rw.known_failure(Evidence(opscript.parse('mkdir "/a"\nmkdir "/b"\n'),
                                                    writer="kernel-vvfat", wr=consistency)))


NODUAL = """\
mkdir "/Dir A"
create "/Dir A/a long name.txt" 100 7
create "/another long file" 20 3
mkdir "/Dir A/a long directory"
create "/Dir A/a long directory/x y z.dat" 9000 5
"""


def _nodual_available():
    ok, why = oracles.get_writer("kernel-vvfat-nodual").available()
    return ok, why


@unittest.skipUnless(_nodual_available()[0], f"kernel-vvfat-nodual unavailable: {_nodual_available()[1]}")
class KernelVvfatNodualTest(unittest.TestCase):
    WRITER = "kernel-vvfat-nodual"

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="test-vvfat-nodual-")
        cls.ck = Checker(readers=["kernel-vvfat"], writers=[cls.WRITER],
                         explicit_readers=True, explicit_writers=True)
        cls.ops = opscript.parse(NODUAL)
        cls.res = cls.ck.check(cls.ops, "fat16", workdir=cls.tmp)

    @classmethod
    def tearDownClass(cls):
        cls.ck.close()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def _model(self, ops):
        from vfz.check.predict import model_of
        return model_of(self.WRITER, self.ck.pristine_image("fat16"), ops)

    def test_patched_guest_writes_reach_the_host(self):
        res, w = self.res, self.WRITER
        m = self._model(self.ops)
        self.assertIn("[nodual_seed=", res.raws[w])      # only the patched vfat.ko has it
        self.assertEqual(res.results[w], m.results, res.raws[w])
        self.assertEqual(res.verdicts[w], {"kernel-vvfat": "ok"}, res.details)
        entries, guest = archive.read(res.images[w])
        self.assertEqual(verdict.listing_diff(m.entries(), guest).lines(), [])
        self.assertEqual(verdict.listing_diff(m.entries(), entries).lines(), [])

    def test_compat_cells(self):
        from vfz.study import compat_media
        row = next(r for r, (rn, ws) in compat_media.MEDIA.items() if ws.get("v1") == self.WRITER)
        rn = compat_media.MEDIA[row][0]
        base = self.ck.pristine_image("fat16")
        w = oracles.get_writer(self.WRITER)
        res, mism = compat_media.judge_one(row, rn, oracles.get_reader(rn), self.WRITER, w, self.ops, 7,
                                           base, os.path.join(self.tmp, "cell.img"), 120.0)
        self.assertEqual(mism, [])
        self.assertEqual(res, {row: ("reads correctly", ""), row + compat_media.CUT: ("reads correctly", "")})

    def test_v3_names_its_bare_names(self):
        cls = oracles.oracle_class("kernel-vvfat-nodual-v3", "writer")
        self.assertEqual(cls.name_exception("abc.TXT", "abc.txt"), rw.DOWNCASE)
        self.assertIsNone(rw.name_exception("abc.TXT", "abc.txt"))        # not bare for win95
        self.assertIsNone(cls.name_exception("a long.TXT", "a long.txt"))  # never bare


# V3_SEED: a seed at which the core's v3 writer draws 0x05-led dummies for "/a long
# directory" and one file of this script (checked by the test before it runs the guest)
V3_05 = "".join(f'create "/a long file name {i}.txt" 10 {i}\n' for i in range(1, 9)) + \
    'mkdir "/a long directory"\ncreate "/a long directory/inner long name.txt" 20 5\n'
V3_SEED = 245


@unittest.skipUnless(oracles.get_writer("kernel-vvfat-nodual-v3").available()[0],
                     "kernel-vvfat-nodual-v3 unavailable")
class NodualReproducerTest(unittest.TestCase):
    """A finding of a writer whose guest loads the seed patch's modules is
    exported with them: the reproducer carries the build's v1 fat.ko and
    vfat.ko in data/ and writes the writer's nodual_seed, which only the
    patched vfat.ko has (a stock guest would stop at that write with
    'cannot'); the stock writer's reproducer carries neither. One QEMU boot."""

    def test_patched_modules_ride_in_the_reproducer(self):
        from dataclasses import replace
        from vfz.export import case as excase, reproducer
        from vfz.oracles.kernel.guest import default_nodual_dir
        tmp = tempfile.mkdtemp(prefix="test-vvfat-nodual-export-")
        self.addCleanup(shutil.rmtree, tmp, True)
        ops = opscript.parse(NODUAL)
        stock = excase.build_case("kernel-vvfat", "writer", ops, "fat16", tmp, writer="kernel-vvfat")
        reproducer.export(stock, os.path.join(tmp, "stock"), run=False)
        self.assertFalse(os.path.exists(os.path.join(tmp, "stock", "data", "fat-v1.ko.bin")))
        with open(os.path.join(tmp, "stock", "run.sh"), encoding="utf-8") as f:
            self.assertNotIn("nodual_seed", f.read())
        case = replace(excase.build_case("kernel-vvfat-nodual", "writer", ops, "fat16", tmp,
                                         writer="kernel-vvfat-nodual"), seed=7)
        out = os.path.join(tmp, "v1")
        r = reproducer.export(case, out, run=_available()[0], timeout=600)
        for m in ("fat", "vfat"):
            with open(os.path.join(default_nodual_dir(), "v1", m + ".ko"), "rb") as a, \
                    open(os.path.join(out, "data", f"{m}-v1.ko.bin"), "rb") as b:
                self.assertEqual(a.read(), b.read())
        with open(os.path.join(out, "run.sh"), encoding="utf-8") as f:
            self.assertIn("echo 7 > /sys/module/vfat/parameters/nodual_seed", f.read())
        if not _available()[0]:
            self.skipTest(f"kernel-vvfat unavailable: {_available()[1]}")
        with open(os.path.join(out, "printed.txt"), encoding="utf-8") as f:
            printed = f.read()
        # the patched modules loaded (the seed written, no 'cannot'), the script ran to its end
        self.assertIn("seed patch modules: /data/fat-v1.ko.bin /data/vfat-v1.ko.bin", printed)
        self.assertNotIn("cannot set nodual_seed", printed)
        self.assertIn("@@guest done", printed.replace("    ", ""), printed[-3000:])
        self.assertIn(r["status"], (0, 1), printed[-2000:])


class KernelVvfatV3Test(unittest.TestCase):
    def test_dummies_led_by_05_followed(self):
        from vfz.check import diff
        from vfz.check.predict import model_of
        from vfz.oracles.evidence import core_listing
        tmp = tempfile.mkdtemp(prefix="test-vvfat-v3-")
        self.addCleanup(shutil.rmtree, tmp, True)
        ops = opscript.parse(V3_05)
        base = os.path.join(tmp, "base.img")
        diff.mkfs(base, 16, 16 << 20, 0)
        core = os.path.join(tmp, "core.img")
        shutil.copyfile(base, core)
        self.assertIsNone(oracles.get_writer("core-v3", seed=V3_SEED).apply(core, ops).error)
        led = {e["type"] for e in core_listing(core) if e.get("dummy") and e["short"].startswith("05")}
        self.assertEqual(led, {"dir", "file"})
        img = os.path.join(tmp, "vv.img")
        shutil.copyfile(base, img)
        wr = oracles.get_writer("kernel-vvfat-nodual-v3", seed=V3_SEED).apply(img, ops, 120.0)
        self.assertIsNone(wr.error, wr.raw)
        self.assertIn(f"[nodual_seed={V3_SEED}]", wr.raw)
        m = model_of("kernel-vvfat-nodual-v3", base, ops)
        self.assertEqual(wr.results, m.results, wr.raw)
        rr = oracles.get_reader("kernel-vvfat").read(img)
        vd = verdict.verdict_for(rr, m.entries(), "kernel-vvfat", None, {}, "kernel-vvfat-nodual-v3")
        self.assertEqual(vd.verdict, "ok", vd.text())


COMPOUND = """\
mkdir "/d"
create "/d/g" 13 7
write "/d/g" 5000 100 9
create "/d/U__" 10 1
unlink "/d/U__"
mkdir "/late"
"""


class HostTreeTest(unittest.TestCase):
    """The host-tree explanation on trees made from the model's (no VM):
    each cause names only the differences of its kind."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="test-vvfat-tree-")
        self.ops = opscript.parse(COMPOUND)

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def _host(self, files, dirs=("d",)):
        top = tempfile.mkdtemp(dir=self.tmp)
        for d in dirs:
            os.makedirs(os.path.join(top, d), exist_ok=True)
        for p, b in files.items():
            with open(os.path.join(top, p), "wb") as f:
                f.write(b)
        img = os.path.join(top + ".tar")
        archive.write(top, img)
        entries, _ = archive.read(img)
        return entries, lambda p: archive.file_bytes(img, p)

    def _explain(self, files, dirs=("d",)):
        entries, data = self._host(files, dirs)
        return hosttree.explain(self.ops, entries, data)

    def test_compound_named_by_each_cause(self):
        head = opscript.content(7, 13)
        grown = head + bytes(5100 - 13)        # the old head, the written bytes lost
        # stalled before the last mkdir, the grown file stale, the unlinked file
        # kept (vvfat named it in lower case: Linux stored U__ bare)
        self.assertEqual(self._explain({"d/g": grown, "d/u__": opscript.content(1, 10)}),
                         [rw.STALLED, rw.GROWN_STALE, rw.UNLINK_KEPT])
        # the same with /late made: no stall
        self.assertEqual(self._explain({"d/g": grown}, dirs=("d", "late")), [rw.GROWN_STALE])
        right = bytearray(head + bytes(5100 - 13))
        right[5000:5100] = opscript.content(9, 100)
        self.assertIsNone(self._explain({"d/g": bytes(right)}, dirs=("d", "late")))

    def test_removed_entry_spelled_as_the_model(self):
        # Linux drops the trailing dot: unlink "/dY." removes /dY (campaign 3029, cb10d10e1c72)
        self.ops = opscript.parse('create "/dY." 513 131\ntruncate "/dY." 4097\nunlink "/dY."\n')
        self.assertEqual(self._explain({"dY": opscript.content(131, 513)}, dirs=()), [rw.UNLINK_KEPT])

    def test_unexplained_difference_stays_unnamed(self):
        head = opscript.content(7, 13)
        # a head that is no earlier state of the file
        self.assertIsNone(self._explain({"d/g": b"x" + head[1:] + bytes(5100 - 13)}, dirs=("d", "late")))
        # a file the script never made
        self.assertIsNone(self._explain({"d/g": head + bytes(5100 - 13), "d/zz": b"1"}, dirs=("d", "late")))
        # a size the file never had
        self.assertIsNone(self._explain({"d/g": head + bytes(77)}, dirs=("d", "late")))

    def test_array_get_named_by_growth_or_chattr(self):
        """array_get's abort: a subdirectory grown past one cluster (the
        model's slot tables) or a chattr, whichever comes first; neither:
        a finding."""
        def name(i):
            return f"f{i:02d}" + "x" * 252        # 255 characters: 21 slots
        grown = opscript.parse('mkdir "/d"\n' + "".join(f'create "/d/{name(i)}" 0 1\n' for i in range(13))
                               + 'create "/x" 1 1\n')
        fits = opscript.parse('mkdir "/d"\n' + "".join(f'create "/d/{name(i)}" 0 1\n' for i in range(12))
                              + 'create "/x" 1 1\n')
        attr = opscript.parse('create "/x" 1 1\nchattr "/x" r\n') + grown
        err = WriteResult("kernel-vvfat", error="QEMU aborted: ../../block/vvfat.c:104: array_get: "
                          "Assertion `index < array->next' failed.; vvfat guest: channel closed (QEMU died)")
        for w in ("kernel-vvfat", "kernel-vvfat-nodual-v3"):
            self.assertEqual(rw.known_failure(Evidence(grown, writer=w, wr=err)), (13, rw.ARRAY_GET_GROWN))
            self.assertIsNone(rw.known_failure(Evidence(fits, writer=w, wr=err)))
            self.assertEqual(rw.known_failure(Evidence(attr, writer=w, wr=err)), (1, rw.ARRAY_GET))

    def test_campaign_brings_the_reader(self):
        import argparse
        from vfz.campaign import options
        p = argparse.ArgumentParser()
        options.add_arguments(p)
        readers, writers = options.roles(p.parse_args(["--writers", "kernel-vvfat,core-dual",
                                                       "--oracles", "mtools"]))
        self.assertEqual((readers, writers), (["mtools", "kernel-vvfat"], ["kernel-vvfat", "core-dual"]))
        readers, _ = options.roles(p.parse_args(["--writers", "core-dual", "--oracles", "mtools"]))
        self.assertEqual(readers, ["mtools"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
