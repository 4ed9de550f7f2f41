#!/usr/bin/python3
"""The reproducer templates of the npm fatfs package (vfz/oracles/jsfatfs/export.py)
and of QEMU's vvfat (vfz/oracles/vvfat/export.py) tell a bug from its absence.

Each pair is exported and its run.sh run on this machine with the real tools
(node with the pinned package, qemu-img): once where the bug shows --
REPRODUCED with the symptom -- and once where it cannot -- NOT REPRODUCED:

  jsfatfs-one-fat          create on FAT16: only the first FAT holds the cluster /
  jsfatfs-fsinfo-stale     the same on FAT16, which has no FSInfo
  jsfatfs-name-throws      a name with '"': the throw escapes, the instance is stuck /
                           a legal name
  vvfat-floppy16-fat12     fat:floppy:16: a 2-cluster file: 16-bit entries under a
                           FAT12 cluster count / fat:floppy: (FAT12) the same tree

And a finding whose reader saw a writer's named exception (fsck.fat on the
package's FATs) is exported through the writer's template, on the writer side.
One node process or one qemu-img convert per export: seconds.
"""
import json
import os
import shutil
import sys
import tempfile
import unittest

REPO = os.environ.get("VFAT_SRC") or os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, REPO)

from vfz import opscript  # noqa: E402
from vfz.export import case as export_case  # noqa: E402
from vfz.export import reproducer as export  # noqa: E402

NPM_FATFS = os.path.join(REPO, "vfz", "oracles", "jsfatfs", "node_modules")


class NodeQemuExportTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="vfz-test-export-nq-")
        if os.path.isdir(os.path.join(NPM_FATFS, "fatfs")):
            os.environ["VFZ_NPM_FATFS"] = NPM_FATFS     # run.sh links it instead of npm ci
        os.environ["HANG_S"] = "2"

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def run_case(self, name, impl, text, fs, kind, writer=None):
        work = os.path.join(self.tmp, name + "-work")
        os.makedirs(work)
        case = export_case.build_case(impl, "writer", opscript.parse(text), fs, work, writer=writer,
                                      title=name, kind=kind)
        d = os.path.join(self.tmp, name)
        res = export.export(case, d, run=True, timeout=120)
        with open(os.path.join(d, "printed.txt"), encoding="utf-8", errors="replace") as f:
            printed = f.read()
        if res["status"] == 2:
            self.skipTest(f"{impl}: {res['result']}")
        return res["status"], res["result"], printed

    def assertReproduced(self, r, *symptoms):
        status, last, printed = r
        self.assertEqual(status, 0, printed[-2000:])
        self.assertTrue(last.startswith("REPRODUCED: "), last)
        for s in symptoms:
            self.assertIn(s, printed)

    def assertNotReproduced(self, r):
        status, last, printed = r
        self.assertEqual((status, last), (1, "NOT REPRODUCED"), printed[-2000:])

    def test_1_jsfatfs_fats_and_fsinfo(self):
        ops = 'create "/a" 1 0\n'
        self.assertReproduced(self.run_case("one-fat", "jsfatfs", ops, "fat16", "jsfatfs-one-fat"),
                              "only the first FAT was written")
        self.assertNotReproduced(self.run_case("fsinfo-fat16", "jsfatfs", ops, "fat16", "jsfatfs-fsinfo-stale"))

    def test_2_jsfatfs_name_throws(self):
        r = self.run_case("throws", "jsfatfs", 'create "/a\\"b" 1 0\n', "fat16", "jsfatfs-name-throws")
        self.assertReproduced(r, "the package threw outside its callback", "never answers again")
        self.assertNotReproduced(self.run_case("legal", "jsfatfs", 'create "/ab" 1 0\n', "fat16",
                                               "jsfatfs-name-throws"))

    def test_3_vvfat_floppy16(self):
        ops = 'mkdir "/d"\ncreate "/d/A" 10000 1\n'
        r = self.run_case("fl16", "vvfat", ops, "fat12", "vvfat-floppy16-fat12", writer="vvfat-floppy-16")
        self.assertReproduced(r, "the FAT holds 16-bit entries", "make it FAT12")
        self.assertNotReproduced(self.run_case("fl12", "vvfat", ops, "fat12", "vvfat-floppy16-fat12",
                                               writer="vvfat-floppy"))

    def test_4_reader_finding_of_a_writer_bug(self):
        # a finding as the campaign files it: fsck.fat (role reader) saw the package's one-fat
        from vfz import findings
        fields = {"role": "reader", "oracle": "dosfsck", "verdict": "complains", "kind": "jsfatfs-one-fat",
                  "op": "-", "cls": "-"}
        sig = findings.sig_hash(fields)
        d = os.path.join(self.tmp, "findings", sig)
        work = os.path.join(self.tmp, "finding-work")
        os.makedirs(d)
        os.makedirs(work)
        base = export_case.build_case("jsfatfs", "writer", [], "fat16", work).image
        shutil.copyfile(base, os.path.join(d, "before-fat16.img"))
        for n in ("ops.txt", "ops.orig.txt"):
            with open(os.path.join(d, n), "w") as f:
                f.write('create "/a" 1 0\n')
        summary = findings.sig_text(fields) + " | writer jsfatfs on fat16"
        with open(os.path.join(d, "finding.json"), "w") as f:
            json.dump({"signature": sig, "fields": fields, "summary": summary, "writer": "jsfatfs",
                       "fs": "fat16"}, f)
        with open(os.path.join(d, "summary.txt"), "w") as f:
            f.write(summary + "\n")
        self.assertEqual(findings.well_formed(d), "")
        case = export_case.case_from_finding(d, work)
        self.assertEqual((case.impl, case.side, case.kind), ("jsfatfs", "writer", "jsfatfs-one-fat"))
        # a reader's own exception stays the reader's
        fields2 = dict(fields, kind="fsck-v1-lfn-cross")
        self.assertFalse(export_case.writers_bug(fields2["kind"], "jsfatfs"))

if __name__ == "__main__":
    unittest.main(verbosity=2)
