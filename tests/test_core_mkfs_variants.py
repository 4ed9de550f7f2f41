"""Images made by REAL mkfs.fat and filled by REAL mtools, read by the core.

For every mkfs.fat variant (FAT12/16/32; sector sizes 512..4096; sectors
per cluster 1..128 where mkfs.fat accepts them; 1 or 2 FATs; root entry
counts; reserved sector counts), mtools builds a tree (mmd, mcopy, mren,
mdel, mrd) whose expected listing this test writes down from what it put
in. Then:
  * the core's `vfat ls` equals that listing exactly (names, sizes, sha256);
  * the core applies an op-script (dual mode) into the image, after which
    fsck.fat -n is clean, `vfat check` is clean, and mtools reads exactly
    the core's new listing.
A variant that mkfs.fat itself refuses is not an image; each FAT type must
still get at least MIN_PER_TYPE accepted variants.
"""
import os
import shutil
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import util_images as U  # noqa: E402
from test_core_tools import expected_for_mtools  # noqa: E402

MIN_PER_TYPE = 6


def variants():
    """(label, size KiB, mkfs.fat options)."""
    out = []
    # sector sizes x cluster sizes
    for ss in (512, 1024, 2048, 4096):
        for spc in (1, 2, 4, 8, 16, 32, 64, 128):
            if ss * spc > 65536:
                continue
            # FAT12: small volume, enough clusters for the tree
            if ss * spc <= 8192:
                out.append((f"fat12-S{ss}-s{spc}", 2048, ["-F", "12", "-S", ss, "-s", spc]))
            # FAT16: at least 4085 clusters
            kib = max(8192, (4200 * ss * spc) // 1024 + 1024)
            if kib <= 65536:
                out.append((f"fat16-S{ss}-s{spc}", kib, ["-F", "16", "-S", ss, "-s", spc]))
            # FAT32: at least 65525 clusters (mtools refuses fewer), so only
            # cluster sizes up to 2 KiB keep the image small (<= 140 MiB,
            # sparse on tmpfs)
            if ss * spc <= 2048:
                kib = (66000 * ss * spc) // 1024 + 2048
                out.append((f"fat32-S{ss}-s{spc}", kib, ["-F", "32", "-S", ss, "-s", spc]))
    # one FAT, root entry counts, reserved sectors
    out += [
        ("fat12-f1", 2048, ["-F", "12", "-f", "1"]),
        ("fat16-f1", 16384, ["-F", "16", "-f", "1"]),
        ("fat32-f1", 35000, ["-F", "32", "-s", "1", "-f", "1"]),
        ("fat12-r32", 2048, ["-F", "12", "-r", "32"]),
        ("fat12-r64", 2048, ["-F", "12", "-r", "64"]),
        ("fat16-r1024", 16384, ["-F", "16", "-r", "1024"]),
        ("fat16-r32-S1024", 16384, ["-F", "16", "-r", "32", "-S", "1024"]),
        ("fat12-R4", 2048, ["-F", "12", "-R", "4"]),
        ("fat16-R17", 16384, ["-F", "16", "-R", "17"]),
        ("fat32-R8", 35000, ["-F", "32", "-s", "1", "-R", "8"]),
        ("fat32-R64", 35000, ["-F", "32", "-s", "1", "-R", "64", "-f", "1"]),
        ("fat32-default", 300000, ["-F", "32"]),
        ("fat12-floppy", 1440, []),
    ]
    return out


# (host path relative to the tree, size, seed)
FILES = [
    ("hello.txt", 100, 1),
    ("README", 0, 2),
    ("A long file name with spaces.text", 5000, 3),
    ("été.txt", 3000, 4),
    ("日本語.dat", 70000, 5),
    ("MiXeD.Case", 513, 6),
    ("to delete.txt", 10, 7),
    ("Docs/sub/deep file.bin", 1, 8),
    ("Docs/UPPER.TXT", 4097, 9),
    ("Long Directory Name/x+y,z;w=[1].dat", 2048, 10),
]
DIRS = ["Docs", "Docs/sub", "Long Directory Name", "empty", "gone"]

AFTER_SCRIPT = """mkdir "/core dir"
create "/core dir/a file written by the core.txt" 9000 11
create "/Docs/sub/second long name.bin" 100 12
write "/hello-renamed.txt" 50 100 13
rename "/A long file name with spaces.text" "/core dir/moved here.text"
unlink "/Docs/UPPER.TXT"
rmdir "/empty"
"""


def build_tree(tc, img, work):
    """Fill img with mtools; return the expected listing."""
    host = os.path.join(work, "host")
    shutil.rmtree(host, ignore_errors=True)
    for d in DIRS:
        os.makedirs(os.path.join(host, d), exist_ok=True)
    expected = {}
    for rel, size, seed in FILES:
        data = U.content(seed, size)
        with open(os.path.join(host, rel), "wb") as f:
            f.write(data)
        expected["/" + rel] = U.file_entry("/" + rel, data)
    for d in DIRS:
        cp = U.mtools("mmd", "-i", img, U.mpath("/" + d))
        U.check_ok(cp, f"mmd {d}")
        expected["/" + d] = U.dir_entry("/" + d)
    for rel, _, _ in FILES:
        parent = os.path.dirname(rel)
        cp = U.mtools("mcopy", "-i", img, os.path.join(host, rel), U.mpath("/" + parent) + ("/" if parent else ""))
        U.check_ok(cp, f"mcopy {rel}")
    # mren, mdel, mrd
    U.check_ok(U.mtools("mren", "-i", img, "::/hello.txt", "::/hello-renamed.txt"), "mren")
    e = expected.pop("/hello.txt")
    e["path"] = "/hello-renamed.txt"
    expected[e["path"]] = e
    U.check_ok(U.mtools("mdel", "-i", img, "::/to delete.txt"), "mdel")
    del expected["/to delete.txt"]
    U.check_ok(U.mtools("mrd", "-i", img, "::/gone"), "mrd")
    del expected["/gone"]
    return list(expected.values())


class MkfsVariantsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        for t in ("mkfs.fat", "fsck.fat", "mmd", "mcopy", "mren", "mdel", "mrd", "mdir", "mtype"):
            U.require(t)
        U.vfat_bin()
        cls.tmp = U.tmpdir("vfz-core-mkfs-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_variants(self):
        accepted = {"fat12": 0, "fat16": 0, "fat32": 0}
        refused = []
        for label, kib, opts in variants():
            with self.subTest(variant=label):
                img = os.path.join(self.tmp, label + ".img")
                if os.path.exists(img):
                    os.unlink(img)
                cp = U.run([U.require("mkfs.fat"), "-C", *map(str, opts), img, str(kib)])
                if cp.returncode != 0:
                    refused.append(f"{label}: {cp.stderr.decode(errors='replace').strip()[:100]}")
                    continue
                accepted[label[:5]] = accepted.get(label[:5], 0) + 1
                self.one(label, img)
                os.unlink(img)
        print(f"\nmkfs variants: accepted {accepted}; mkfs.fat refused {len(refused)}: {refused}")
        for t, n in accepted.items():
            self.assertGreaterEqual(n, MIN_PER_TYPE, f"too few {t} variants accepted by mkfs.fat")

    def one(self, label, img):
        what = f"[{label}]"
        expected = build_tree(self, img, self.tmp)
        got = U.core_ls(img)
        d = U.listing_diff(expected, got)
        self.assertFalse(d, f"core reads the mtools tree differently {what}:\n{d}")
        res = U.core_apply(img, AFTER_SCRIPT, "dual", seed=5)
        self.assertEqual([r["result"] for r in res], ["ok"] * len(res), f"{what} {res}")
        after = U.core_ls(img)
        U.fsck_assert_clean(self, img, what)
        cp = U.core_check(img)
        self.assertEqual(cp.returncode, 0, f"vfat check {what}:\n{cp.stdout.decode()}{cp.stderr.decode()}")
        # mtools shows a bare 8.3 entry with only ASCII lower-cased by the NT
        # case flags (e.g. mtools' own "été.txt" comes back as "ÉtÉ.txt")
        d = U.listing_diff(expected_for_mtools(after), U.mtools_listing(img))
        self.assertFalse(d, f"mtools reads the core's writes differently {what}:\n{d}")
        paths = {e["path"] for e in after}
        self.assertIn("/core dir/a file written by the core.txt", paths)
        self.assertNotIn("/Docs/UPPER.TXT", paths)


if __name__ == "__main__":
    unittest.main(verbosity=2)
