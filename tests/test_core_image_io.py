"""The CLI's image I/O: `vfat apply` writes the same bytes whether or not it
skips the pages it never touched.

`vfat apply` reads an image into a calloc'd buffer (only its data extents)
and writes it back without its zero 4 KiB blocks. To avoid scanning a 34 MB
FAT32 buffer for zeros (8 700 page faults, ~100 ms of its ~110 ms), it asks
/proc/self/pagemap which pages were never touched and skips those
(core/cli/vfat.c untouched_pages). VFAT_SCAN_ALL=1 turns the shortcut off:
both ways must give byte-identical images and sparse layouts, on sparse
images (mostly holes), on images whose free clusters hold random bytes (no
holes, every page read), and when a script frees clusters it wrote.
"""
import os
import random
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import util_images as U  # noqa: E402

VFAT = os.path.join(U.BUILD, "vfat")
SEED = int(os.environ.get("VFZ_TEST_SEED", "20261203"))


def apply(vfat_env, image, script, mode):
    env = dict(os.environ)
    env.pop("VFAT_SCAN_ALL", None)
    env.update(vfat_env)
    p = subprocess.run([VFAT, "apply", image, script, *U.MODES[mode], "--seed", "7",
                        "--no-sync"], env=env, capture_output=True, timeout=120)
    if p.returncode != 0:
        raise AssertionError(f"vfat apply exit {p.returncode}: {p.stderr.decode()[:300]}")
    return p.stdout


def allocated_kib(path):
    return os.stat(path).st_blocks // 2


class ImageIO(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        print(f"test_core_image_io: seed {SEED}", file=sys.stderr)
        cls.tmp = tempfile.TemporaryDirectory(prefix="vfz-imageio-")
        cls.base = {}
        for fat, (bits, size, clus) in U.CORE_FS.items():
            img = os.path.join(cls.tmp.name, f"{fat}.img")
            subprocess.run([VFAT, "mkfs", img, "--size", size, "--fat", bits, "--cluster", clus],
                           check=True, capture_output=True, timeout=60)
            cls.base[fat] = img

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def both_ways(self, src, script, mode, tag):
        out = {}
        for way, env in (("pagemap", {}), ("scan", {"VFAT_SCAN_ALL": "1"})):
            img = os.path.join(self.tmp.name, f"{tag}-{way}.img")
            with open(src, "rb") as f, open(img, "wb") as g:
                data = f.read()
                g.write(data)
            results = apply(env, img, script, mode)
            with open(img, "rb") as f:
                out[way] = (f.read(), results, allocated_kib(img))
        a, b = out["pagemap"], out["scan"]
        self.assertEqual(a[1], b[1], f"{tag}: op results differ")
        self.assertTrue(a[0] == b[0], f"{tag}: images differ")
        self.assertEqual(a[2], b[2], f"{tag}: sparse layouts differ ({a[2]} vs {b[2]} KiB)")
        return a[0]

    def script(self, seed, ops=40):
        path = os.path.join(self.tmp.name, f"gen-{seed}.ops")
        text = subprocess.run([VFAT, "gen", "--seed", str(seed), "--ops", str(ops)],
                              check=True, capture_output=True, timeout=60).stdout
        with open(path, "wb") as f:
            f.write(text)
        return path

    def test_sparse_images(self):
        for fat, img in self.base.items():
            for k, mode in enumerate(("dual", "v1", "v3")):
                s = SEED + 10 * k
                self.both_ways(img, self.script(s), mode, f"sparse-{fat}-{mode}-{s}")

    def test_free_space_full_of_random_bytes(self):
        # Free clusters keep what they held: every page of the image has data,
        # so every page is read and must be scanned and written back.
        rng = random.Random(SEED)
        for fat, img in self.base.items():
            noisy = os.path.join(self.tmp.name, f"noisy-{fat}.img")
            with open(img, "rb") as f:
                data = bytearray(f.read())
            tail = len(data) // 2
            data[tail:] = rng.randbytes(len(data) - tail)
            with open(noisy, "wb") as f:
                f.write(data)
            got = self.both_ways(noisy, self.script(SEED + 1), "v1", f"noisy-{fat}")
            self.assertEqual(got[-4096:], bytes(data[-4096:]),
                             f"noisy-{fat}: the last block's random bytes were not kept")

    def test_clusters_written_then_freed(self):
        # A file written then removed leaves its bytes in free clusters: the
        # pages were touched, so they are written back.
        script = os.path.join(self.tmp.name, "freed.ops")
        with open(script, "w") as f:
            f.write('create "/big file.bin" 300000 5\nunlink "/big file.bin"\n'
                    'create "/small" 10 6\n')
        for fat, img in self.base.items():
            got = self.both_ways(img, script, "dual", f"freed-{fat}")
            self.assertGreater(sum(1 for b in got if b), 250000,
                               f"freed-{fat}: the freed clusters' bytes were dropped")


if __name__ == "__main__":
    unittest.main(verbosity=2)
