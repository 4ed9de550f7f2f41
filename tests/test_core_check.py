#!/usr/bin/python3
"""`vfat check` against the real fsck.fat (dosfstools), on damaged and on
written images.

1. unit_check (tests/unit_check.c) writes its hand-built damaged images when
   VFAT_CHECK_DUMP is set: one image per damage kind and FAT type. On the
   "plain-" ones (no v1 dummy, which fsck.fat calls a bad short name) each
   damage must make `vfat check` exit 1, and fsck.fat -n must complain
   exactly for the damages it is known to look at (FSCK_SEES); the others
   (FSCK_MISSES) are the checks only vfat check makes. Clean images: both
   quiet.
2. The dummy entries: fsck.fat calls a v1 dummy a bad short name and is
   quiet on a v3 one (NT byte 0x20), and finds two equal v1 dummies a
   duplicate, as docs/write-paths.md says; vfat check accepts both forms and reports
   the pair as dummy-collision.
3. Images written by the core (vfat gen | vfat apply, dual and nodual v3)
   must get the same verdict from both checkers (short names with 0x7F
   aside: fsck.fat alone rejects them); nodual v1 images must be clean for
   vfat check while fsck.fat complains about the dummies.
"""
import os
import re
import subprocess
import tempfile
import unittest

BUILD = os.environ.get("VFAT_BUILD") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "build")
VFAT = os.path.join(BUILD, "vfat")
UNIT = os.path.join(BUILD, "unit_check")
FSCK = "/sbin/fsck.fat"

# damages fsck.fat 4.2 reports (exit status 1, or a message with exit 0)
FSCK_SEES = {
    "chain-loop", "cross-link", "lost", "chain-long", "chain-short",
    "range-pointer", "range-first", "chain-free", "chain-bad", "first-zero",
    "fat-media", "fat-eoc", "fat-copies", "lfn-checksum", "lfn-checksum-inner",
    "lfn-order-swap", "lfn-order-no40", "lfn-order-extra", "lfn-orphan", "lfn-orphan-interrupted",
    "lfn-cluster", "dot-missing", "dot-target", "dot-root", "shortname-invalid",
    "shortname-dup", "dir-size", "dir-cycle", "dir-zero",
    "fsinfo-count", "fsinfo-signature", "root-free", "root-loop",
    "dummy-collision-v3", "del-star", "dirty-state", "dirty-fat1", "boot-backup",
}
# ... except on these FAT types (FAT12 has no dirty flag in FAT[1])
FSCK_SEES_NOT_ON = {("fat-eoc", "12")}
# damages only vfat check reports
FSCK_MISSES = {
    "lfn-padding", "lfn-padding-noterm", "lfn-toolong", "longname-dup",
    "longname-shortname", "longname-invalid", "attr", "volume-label",
    "after-end", "fsinfo-hint", "longname-dot",
}
QUIET = ("clean", "fsinfo-unknown", "fsinfo-restored", "root-five-clusters")
# clean for vfat check, complaints for fsck.fat: 0x7F in short names, which
# Linux writes in aliases and the Microsoft spec allows; fsck.fat 4.2 calls
# them bad short names
FSCK_ONLY = ("del-alias",)

# fsck.fat lines that are not complaints
FSCK_NOISE = re.compile(
    r"^(fsck\.fat \d|Checking we can access|.*: \d+ files?, \d+/\d+ clusters$|\s*$"
    r"|Free cluster summary uninitialized)")


def run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          timeout=120, **kw)


def fsck(path):
    """(exit status, complaint lines) of fsck.fat -n."""
    p = run([FSCK, "-n", path])
    out = p.stdout.decode("utf-8", "replace").splitlines()
    return p.returncode, [l for l in out if not FSCK_NOISE.match(l)]


def without_del_names(lines):
    """fsck.fat complaints minus its "Bad short file name" blocks for short
    names holding 0x7F (see FSCK_ONLY); the closing "Leaving filesystem
    unchanged." goes when nothing else is left."""
    out, i = [], 0
    while i < len(lines):
        if (lines[i].startswith("/") and i + 1 < len(lines)
                and lines[i + 1].startswith("  Bad short file name (")
                and "\x7f" in lines[i + 1]):
            i += 2
            while i < len(lines) and lines[i].startswith("  "):
                i += 1
            continue
        out.append(lines[i])
        i += 1
    if out == ["Leaving filesystem unchanged."]:
        out = []
    return out


def vcheck(path):
    p = subprocess.run([VFAT, "check", path], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=120)
    return p.returncode, p.stdout.decode("utf-8", "replace").splitlines()


class DamagedImages(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        env = dict(os.environ, VFAT_CHECK_DUMP=cls.tmp.name, VFAT_CHECK_ITERS="0")
        # unit_check writes every damaged image it makes (~3.7 GB, little
        # CPU): its time is the disk's, hence a limit of its own
        p = subprocess.run([UNIT], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=900, env=env)
        if p.returncode != 0:
            raise AssertionError("unit_check failed:\n" + p.stdout.decode())
        cls.images = sorted(f[:-4] for f in os.listdir(cls.tmp.name) if f.endswith(".img"))

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def path(self, name):
        return os.path.join(self.tmp.name, name + ".img")

    def test_plain_images_against_fsck(self):
        seen = 0
        for name in self.images:
            m = re.match(r"^(plain-)?fat(12|16|32)-(.*)$", name)
            self.assertIsNotNone(m, name)
            if not m.group(1):
                continue
            case, fat = m.group(3), m.group(2)
            with self.subTest(image=name):
                vrc, vout = vcheck(self.path(name))
                frc, fout = fsck(self.path(name))
                complains = frc != 0 or bool(fout)
                if case in FSCK_ONLY:
                    self.assertEqual((vrc, vout), (0, []), name)
                    self.assertTrue(complains, name)
                    self.assertEqual(without_del_names(fout), [], name)
                    continue
                if case in QUIET:
                    self.assertEqual((vrc, vout), (0, []), name)
                    self.assertEqual((frc, fout), (0, []), name)
                    continue
                self.assertEqual(vrc, 1, "%s: vfat check %s" % (name, vout))
                self.assertTrue(vout)
                if case in FSCK_SEES and (case, fat) not in FSCK_SEES_NOT_ON:
                    self.assertTrue(complains, "%s: fsck.fat quiet" % name)
                elif case in FSCK_MISSES or (case, fat) in FSCK_SEES_NOT_ON:
                    self.assertFalse(complains, "%s: fsck.fat now sees it: %s" % (name, fout))
                else:
                    self.fail("%s: case not classified" % case)
                seen += 1
        # 40 plain damages on three FAT types, plus the FAT32-only ones
        self.assertGreaterEqual(seen, 3 * 40 + 7)

    def test_dummies(self):
        for t in (12, 16, 32):
            with self.subTest(fat=t):
                clean = self.path("fat%d-clean" % t)
                self.assertEqual(vcheck(clean), (0, []))
                frc, fout = fsck(clean)
                text = "\n".join(fout)
                # the v1 dummy (of "/dummy file") is a bad short name to fsck
                self.assertIn("/dummy file\n  Bad short file name", text)
                # the v3 dummy (NT byte 0x20) is exempt
                self.assertNotIn("v3 dummy", text)
                # two equal v1 dummies: fsck.fat calls each a bad short
                # name (and renames it), so it never gets to the duplicate
                coll = self.path("fat%d-dummy-collision" % t)
                vrc, vout = vcheck(coll)
                self.assertEqual(vrc, 1)
                self.assertTrue(any(l.startswith("dummy-collision: /another dummy: ")
                                    for l in vout), vout)
                frc, fout = fsck(coll)
                text = "\n".join(fout)
                self.assertIn("/another dummy\n  Bad short file name", text)
                self.assertNotIn("Duplicate directory entry", text)
                # two equal v3 dummies: a duplicate to fsck.fat
                coll = self.path("plain-fat%d-dummy-collision-v3" % t)
                vrc, vout = vcheck(coll)
                self.assertTrue(any(l.startswith("dummy-collision: /another v3 dummy: ")
                                    for l in vout), vout)
                frc, fout = fsck(coll)
                text = "\n".join(fout)
                self.assertIn("/v3 dummy.txt\n  Duplicate directory entry.", text)
                self.assertNotIn("Bad short file name", text)


class WrittenImages(unittest.TestCase):
    """Images the core writes from random op-scripts: both checkers agree."""

    def write(self, tmp, seed, names, fat):
        ops = os.path.join(tmp, "s.ops")
        img = os.path.join(tmp, "w.img")
        with open(ops, "wb") as f:
            p = subprocess.run([VFAT, "gen", "--seed", str(seed), "--ops", "150"],
                               stdout=f, timeout=60)
        self.assertEqual(p.returncode, 0)
        if os.path.exists(img):
            os.unlink(img)
        size = {"12": "2M", "16": "16M", "32": "40M"}[fat]
        p = run([VFAT, "mkfs", img, "--size", size, "--fat", fat, "--cluster", "512"])
        self.assertEqual(p.returncode, 0, p.stdout)
        p = run([VFAT, "apply", img, ops, "--seed", str(seed)] + names)
        self.assertIn(p.returncode, (0, 1), p.stdout)
        return img

    def test_agree(self):
        counts = {"agree-clean": 0, "agree-flagged": 0}
        with tempfile.TemporaryDirectory() as tmp:
            for seed in range(1, 7):
                for fat in ("12", "16", "32"):
                    for names in (["--names", "dual"], ["--names", "nodual", "--dummy", "v3"],
                                  ["--names", "nodual", "--dummy", "v1"]):
                        with self.subTest(seed=seed, fat=fat, names=names):
                            img = self.write(tmp, seed, names, fat)
                            vrc, vout = vcheck(img)
                            frc, fout = fsck(img)
                            self.assertIn(vrc, (0, 1), vout)
                            if names[-1] == "v1":
                                # fsck.fat renames every v1 dummy (and its
                                # -n dry run then cascades); vfat check
                                # accepts them
                                self.assertNotEqual(frc, 0)
                                self.assertTrue(any(l.startswith("  Bad short file name (") for l in fout))
                                self.assertEqual(vout, [])
                                continue
                            rest = without_del_names(fout)
                            if rest != fout and len(rest) > 0 and fat == "32":
                                # fsck.fat 4.2 on FAT32: after its (dry-run)
                                # rename of a 0x7F short name it calls the
                                # '.'/'..' of later directories missing and
                                # reclaims a cluster; with the 0x7F file gone
                                # it is clean. No verdict to compare.
                                counts["fsck-cascade"] = counts.get("fsck-cascade", 0) + 1
                                continue
                            complains = bool(rest)
                            self.assertEqual(vrc == 1, complains,
                                             "vfat check %s\nfsck.fat %s" % (vout[:5], fout[:10]))
                            counts["agree-flagged" if complains else "agree-clean"] += 1
        print("written images:", counts)
        self.assertGreater(counts["agree-clean"], 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
