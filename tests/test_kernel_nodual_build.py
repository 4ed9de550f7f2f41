#!/usr/bin/python3
"""The kernel-nodual oracle's modules: vfz/oracles/kernel-nodual/build.sh builds
fat.ko/vfat.ko with the seed patch ported to Debian's Linux 6.1 fs/fat, in
the v1 and v3 variants, for the installed linux-image-amd64.

Real build against the installed headers (no mocks): the test runs build.sh,
then checks the modules with modinfo against the installed kernel's own
fat.ko, and applies the patch to a fresh copy of fs/fat from the tarball.
"""
import os
import re
import shutil
import subprocess
import tempfile
import unittest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
HERE = os.path.join(REPO, "vfz", "oracles", "kernel-nodual")
BUILD_SH = os.path.join(HERE, "build.sh")
PATCH = os.path.join(HERE, "nodual.patch")
# where the kernel oracle looks for the modules (vfz/oracles/kernel default_nodual_dir)
OUT = (os.path.join(os.environ["VFAT_BUILD"], "kernel-nodual") if os.environ.get("VFAT_BUILD")
       else os.path.join(REPO, "build", "kernel-nodual"))
TARBALL = "/usr/src/linux-source-6.1.tar.xz"


def run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, **kw)


def installed_kernel():
    """Version linux-image-amd64 depends on, found independently of build.sh."""
    p = run(["dpkg-query", "-W", "-f=${Depends}", "linux-image-amd64"])
    if p.returncode != 0:
        return None
    m = re.search(r"linux-image-(\d[^\s,(]*)", p.stdout)
    return m.group(1) if m else None


def modinfo(path, field):
    p = run(["modinfo", "-F", field, path])
    if p.returncode != 0:
        raise AssertionError(f"modinfo {path}: {p.stderr.strip()}")
    return p.stdout.strip()


KVER = installed_kernel()
HAVE = (KVER is not None and os.path.exists(f"/lib/modules/{KVER}/build/Makefile")
        and os.path.exists(TARBALL))


@unittest.skipUnless(HAVE, "needs linux-image-amd64, linux-headers-amd64 and linux-source-6.1")
class BuildTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.build = run([BUILD_SH, OUT], timeout=900)

    def test_build_succeeds(self):
        self.assertEqual(self.build.returncode, 0, self.build.stderr)

    def test_both_variants_built(self):
        for v in ("v1", "v3"):
            for m in ("fat", "vfat"):
                ko = os.path.join(OUT, v, m + ".ko")
                self.assertTrue(os.path.isfile(ko), ko)
                self.assertEqual(modinfo(ko, "name"), m)
            # vfat must take fat's symbols: the names stay fat/vfat
            self.assertEqual(modinfo(os.path.join(OUT, v, "vfat.ko"), "depends"), "fat")
            self.assertEqual(modinfo(os.path.join(OUT, v, "vfat.ko"), "nodual"), v)
            self.assertIn("dummy short entry",
                          modinfo(os.path.join(OUT, v, "fat.ko"), "nodual"))
            parms = modinfo(os.path.join(OUT, v, "vfat.ko"), "parm")
            self.assertTrue(parms.startswith("nodual_seed:"), parms)

    def test_no83_variant_built(self):
        """Issue 16: the July reader side alone on the stock code (no83), and
        in v3; not in v1 (June had no FAT_NO_83NAME)."""
        for m in ("fat", "vfat"):
            ko = os.path.join(OUT, "no83", m + ".ko")
            self.assertTrue(os.path.isfile(ko), ko)
            self.assertEqual(modinfo(ko, "name"), m)
        self.assertEqual(modinfo(os.path.join(OUT, "no83", "fat.ko"), "nodual"),
                         "reader: FAT_NO_83NAME")
        # vfat.ko of no83 is the stock writer: no tag, no nodual_seed
        self.assertEqual(modinfo(os.path.join(OUT, "no83", "vfat.ko"), "nodual"), "")
        self.assertEqual(modinfo(os.path.join(OUT, "no83", "vfat.ko"), "parm"), "")
        self.assertIn("FAT_NO_83NAME", modinfo(os.path.join(OUT, "v3", "fat.ko"), "nodual"))
        self.assertNotIn("FAT_NO_83NAME", modinfo(os.path.join(OUT, "v1", "fat.ko"), "nodual"))

    def test_vermagic_matches_installed_kernel(self):
        stock = [f for f in os.listdir(f"/lib/modules/{KVER}/kernel/fs/fat")
                 if f.startswith("fat.ko")]
        self.assertTrue(stock, "installed kernel has no fat.ko")
        want = modinfo(f"/lib/modules/{KVER}/kernel/fs/fat/{stock[0]}", "vermagic")
        self.assertTrue(want.startswith(KVER + " "), want)
        for v in ("v1", "v3", "no83"):
            for m in ("fat", "vfat"):
                self.assertEqual(modinfo(os.path.join(OUT, v, m + ".ko"), "vermagic"), want)

    def test_second_run_is_cached(self):
        self.assertEqual(self.build.returncode, 0, self.build.stderr)
        ko = os.path.join(OUT, "v1", "vfat.ko")
        before = os.stat(ko).st_mtime_ns
        again = run([BUILD_SH, OUT], timeout=900)
        self.assertEqual(again.returncode, 0, again.stderr)
        self.assertIn("up to date", again.stderr)
        self.assertEqual(os.stat(ko).st_mtime_ns, before)

    def test_missing_headers_and_source_are_named(self):
        tmp = tempfile.mkdtemp(prefix="knd-")
        try:
            p = run([BUILD_SH, tmp],
                    env=dict(os.environ, KERNEL_VERSION="0.0.0-none-amd64"), timeout=60)
            self.assertNotEqual(p.returncode, 0)
            self.assertIn("linux-headers", p.stderr)
            p = run([BUILD_SH, tmp],
                    env=dict(os.environ, LINUX_SOURCE_TARBALL="/nonexistent/linux.tar.xz"),
                    timeout=60)
            self.assertNotEqual(p.returncode, 0)
            self.assertIn("linux-source", p.stderr)
            self.assertFalse(os.path.exists(os.path.join(tmp, "v1")))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


@unittest.skipUnless(HAVE, "needs linux-headers-amd64 and linux-source-6.1")
class PatchTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="knd-patch-")
        p = run(["tar", "-xJf", TARBALL, "-C", cls.tmp, "--wildcards",
                 "--strip-components=1", "*/fs/fat/*"], timeout=300)
        assert p.returncode == 0, p.stderr
        cls.fat = os.path.join(cls.tmp, "fs", "fat")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def read(self, name):
        with open(os.path.join(self.fat, name)) as f:
            return f.read()

    def test_patch_applies_to_pristine_fs_fat(self):
        pristine = self.read("namei_vfat.c")
        self.assertNotIn("vfat_build_dummy_83_buffer", pristine)
        p = run(["patch", "-p1", "--dry-run", "-d", self.tmp, "-i", PATCH])
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertNotIn("fuzz", p.stdout.lower() + p.stderr.lower())
        self.assertNotIn("offset", p.stdout.lower())

    def test_patched_source_has_the_dummy_builder(self):
        work = tempfile.mkdtemp(prefix="knd-src-")
        try:
            shutil.copytree(os.path.join(self.tmp, "fs"), os.path.join(work, "fs"))
            p = run(["patch", "-p1", "-d", work, "-i", PATCH])
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            with open(os.path.join(work, "fs/fat/namei_vfat.c")) as f:
                src = f.read()
            # the builder exists for both variants and is called from vfat_build_slots
            self.assertEqual(src.count("static void vfat_build_dummy_83_buffer("), 2)
            slots = src[src.index("static int vfat_build_slots("):]
            slots = slots[:slots.index("\n}\n")]
            self.assertIn("vfat_build_dummy_83_buffer(msdos_name, is_dir);", slots)
            self.assertIn("get_random_u32()", src)
            code = re.sub(r"/\*.*?\*/", "", src, flags=re.S)
            # random32() is gone in 6.1: no call to it may remain
            self.assertIsNone(re.search(r"(?<![\w])random32\s*\(", code))
            self.assertIn("module_param_cb(nodual_seed", src)
            # the seed's pattern: 20 00 r*6 2F 00 00
            for line in ("msdos_name[0] = ' ';", "msdos_name[1] = 0;",
                         "msdos_name[8] = '/';", "msdos_name[9] = 0;",
                         "msdos_name[10] = 0;"):
                self.assertIn(line, src)
            with open(os.path.join(work, "fs/fat/dir.c")) as f:
                dirc = f.read()
            search = dirc[dirc.index("int fat_search_long("):]
            search = search[:search.index("EXPORT_SYMBOL_GPL(fat_search_long)")]
            # an empty short name must not end the search any more (nodual)
            self.assertNotRegex(search, r"if \(len == 0\)\s*continue;")
            self.assertIn("if (len == 0 && !VFAT_NODUAL)", search)
            # FAT_NO_83NAME (July 2009): flagged entries are compared by
            # their long name only, fat_scan and the msdos readdir skip them
            no83 = search[search.index("#if VFAT_NO83NAME"):]
            self.assertLess(no83.index("if (de->lcase & FAT_NO_83NAME)\n\t\t\tgoto compare_longname;"),
                            no83.index("fat_parse_short(sb, de, bufname, 0)"))
            self.assertLess(search.index("compare_longname:"), search.index("/* Compare longname */"))
            scan = dirc[dirc.index("int fat_scan(struct inode *dir"):]
            scan = scan[:scan.index("EXPORT_SYMBOL_GPL(fat_scan)")]
            self.assertIn("if (sinfo->de->lcase & FAT_NO_83NAME)\n\t\t\tcontinue;", scan)
            with open(os.path.join(work, "fs/fat/fat.h")) as f:
                self.assertIn("#define FAT_NO_83NAME\t0x20", f.read())
            # the hex tail reads the jiffies stand-in in the nodual builds
            self.assertIn("i = vfat_nodual_jiffies();", src)
            self.assertIn("vfat_nodual_jstate = seed ^ VFAT_NODUAL_JIFFIES_SALT;", src)
            # and the patch reverses cleanly
            p = run(["patch", "-p1", "-R", "-d", work, "-i", PATCH])
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            with open(os.path.join(work, "fs/fat/namei_vfat.c")) as f:
                self.assertEqual(f.read(), self.read("namei_vfat.c"))
        finally:
            shutil.rmtree(work, ignore_errors=True)

    def test_unknown_variant_is_refused(self):
        work = tempfile.mkdtemp(prefix="knd-bad-")
        try:
            shutil.copytree(os.path.join(self.tmp, "fs"), os.path.join(work, "fs"))
            self.assertEqual(run(["patch", "-p1", "-s", "-d", work, "-i", PATCH]).returncode, 0)
            p = run(["make", "-C", f"/lib/modules/{KVER}/build",
                     "M=" + os.path.join(work, "fs", "fat"), "VFAT_NODUAL=2", "-j2",
                     "namei_vfat.o"], timeout=300)
            self.assertNotEqual(p.returncode, 0)
            self.assertIn("VFAT_NODUAL must be", p.stdout + p.stderr)
        finally:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    unittest.main(verbosity=2)
