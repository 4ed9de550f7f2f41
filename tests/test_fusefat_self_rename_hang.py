#!/usr/bin/python3
"""fusefat-stale-self-rename-hangs against the real fusefat: mkdir /a;
rmdir /A; rename /a /a (within the kernel's 1-s entry timeout) never
answers. fusefat (libfuse 2 high-level API) gives the spellings 'a' and
'A' two nodes, so removing 'A' leaves the kernel's dentry of 'a'; the
rename revalidates its target (ENOENT) but not its source, and libfuse's
get_path2 locks the one node twice and waits for itself (campaign seed
9102, finding 5f8f16aed5a9).

Through the checker, as a campaign files it (Checker(["dosfsck"],
["fusefat"]), per-op timeout 3 s instead of 20): the minimal scripts (a
directory, a file) are one writer finding of that name, fusefat was
asleep, not spinning (the writer's raw log; measured with gdb: in
pthread_cond_wait under fuse_session_loop). Near misses (rmdir spelled as
created: ENOENT; a self-rename of an existing path) answer and are
unnamed; the name needs the hang.

The window is widened here: fusefat is mounted with -o entry_timeout=120
(the real fusefat, through a three-line exec wrapper given as the oracle's
`fusefat` program). With the default 1 s, the three ops must reach the
kernel within 1 s of the mkdir's answer; they take ~0.1-0.2 s, but a
stall of the harness or the agent past 1 s lets the dentry expire and the
rename answers ENOENT (measured: a 1.2-s pause between rmdir and rename
gives ENOENT; with entry_timeout=0 no run hangs, so the cache is what the
bug needs and the test fails without it).
"""
import os
import shutil
import sys
import tempfile
import unittest

REPO = os.environ.get("VFAT_SRC") or os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, REPO)

from vfz import opscript
from vfz.check import checker# noqa: E402
from vfz.oracles import fusefat  # noqa: E402

# the kernel keeps fusefat's dentries this long (libfuse 2's default is 1 s)
ENTRY_TIMEOUT = 120
DIR = 'mkdir "/a"\nrmdir "/A"\nrename "/a" "/a"\n'
FILE = 'create "/f" 10 1\nunlink "/F"\nrename "/f" "/f"\n'


def sigs(res):
    return sorted((d.fields["role"], d.fields["oracle"], d.fields["verdict"], d.fields["kind"])
                  for d in res.divs.values())


@unittest.skipUnless(shutil.which("fusefat") and shutil.which("fusermount") and os.path.exists("/dev/fuse")
                     and shutil.which("fsck.fat"), "needs fusefat, fuse and dosfstools")
class FusefatSelfRenameHangTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="vfz-test-selfren-")
        wrapper = os.path.join(cls.tmp, "fusefat")
        # by name from PATH, so fusefat prints its usage as itself (the
        # oracle checks it is 0.1a from -h, where any -o adds a warning first)
        with open(wrapper, "w") as f:
            f.write('#!/bin/sh\ncase " $* " in *" -h "*) exec fusefat "$@";; esac\n'
                    f'exec fusefat "$@" -o entry_timeout={ENTRY_TIMEOUT}\n')
        os.chmod(wrapper, 0o755)
        cls.ck = checker.Checker(["dosfsck"], ["fusefat"],
                                 cfg={"fusefat": {"op_timeout": 3.0, "fusefat": wrapper}})

    @classmethod
    def tearDownClass(cls):
        cls.ck.close()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def check(self, text):
        return self.ck.check(opscript.parse(text), "fat16")

    def test_minimal_scripts_hang_and_are_named(self):
        for text in (DIR, FILE):
            with self.subTest(text=text):
                r = self.check(text)
                self.assertEqual(sigs(r), [("writer", "fusefat", "result", fusefat.SELF_RENAME_HANG)],
                                 r.details)
                det = r.details["fusefat"]["(writer)"]
                self.assertIn("writer failed: line 3 (rename): timeout after 3s (fusefat hung)", det)
                self.assertIn("readers check the first 2 ops", det)
                self.assertEqual(r.verdicts["fusefat"]["dosfsck"], "ok", r.details)
                # the name needs the hang: the same ops answered are not named
                ops = opscript.parse(text)
                self.assertIsNone(fusefat.first_known_failure(ops, ["ok", "ok", "ENOENT"]))
                self.assertIsNone(fusefat.first_known_failure(ops, ["ok", "ok"]))
                self.assertEqual(fusefat.first_known_failure(
                    ops, ["ok", "ok"], error="line 3 (rename): timeout after 3s (fusefat hung)"),
                    (2, fusefat.SELF_RENAME_HANG))

    def test_near_misses_answer_and_are_unnamed(self):
        """rmdir spelled as created (the kernel drops the dentry: ENOENT);
        a self-rename of an existing directory, after a case-spelled
        lookup (Linux and fusefat: ok, nothing changes)."""
        for text in ('mkdir "/a"\nrmdir "/a"\nrename "/a" "/a"\n',
                     'mkdir "/a"\nmkdir "/A"\nrename "/a" "/a"\n'):
            with self.subTest(text=text):
                r = self.check(text)
                self.assertEqual(sigs(r), [], r.details)
                self.assertNotIn("(writer)", r.verdicts["fusefat"], r.details)
                self.assertEqual(r.verdicts["fusefat"]["dosfsck"], "ok", r.details)


if __name__ == "__main__":
    unittest.main()
