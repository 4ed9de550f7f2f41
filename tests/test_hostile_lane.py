#!/usr/bin/python3
"""A hostile lane's image files (vfz.hostile.lane.Slot) hold exactly the image they were given.

A Slot rewrites its file in place, only where the image it held and the next
one differ; these tests put sequences of images (one seed and several, with
tails, and files a tool changed or replaced between two images) and compare
the file's bytes with the image made whole (vfz.hostile.mutate.apply).

A writer lane judges volume i (the strict reader after the ops, spread and
I/O-bounds verdicts) behind the writer, while it applies volume i+1's ops
(lane.Behind): the core writer on the first volumes of a run over the corpus
seeds gets, volume by volume, the judgement it gets when each volume is read
whole in the lane's thread.
"""
import argparse
import os
import random
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from vfz.hostile import lane  # noqa: E402
from vfz.hostile import mutate as hm  # noqa: E402
from vfz.hostile.layout import Patch  # noqa: E402
from vfz.hostile import loop, seeds  # noqa: E402
from vfz.hostile import transform as hostile_tx  # noqa: E402
from vfz.hostile.loop import Hostile  # noqa: E402

VFAT = os.path.join(os.environ.get("VFAT_BUILD") or os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "build"), "vfat")


def seed_image(rng, size):
    """A sparse seed: a few non-zero runs in zeros, as the campaign's seeds are."""
    b = bytearray(size)
    for _ in range(rng.randrange(1, 6)):
        a = rng.randrange(size)
        n = rng.randrange(1, 9000)
        b[a:a + n] = bytes(rng.randrange(1, 256) for _ in range(min(n, size - a)))
    return bytes(b)


def image(rng, seed):
    patches = []
    for _ in range(rng.randrange(0, 5)):
        off = rng.randrange(len(seed) + 64)         # some past the seed's end: not written
        patches.append(Patch(off, bytes(rng.randrange(256) for _ in range(rng.randrange(1, 700))), "f"))
    tail = bytes(rng.randrange(256) for _ in range(rng.choice([0, 0, 1, 513, 4096])))
    return Hostile(seed, {"patches": patches, "tail": tail})


class SlotTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.tmp.name, "slot.img")
        self.rng = random.Random(30)
        self.seeds = [seed_image(self.rng, n) for n in (64 * 1024, 200 * 1024, 64 * 1024 + 512, 96 * 1024)]

    def tearDown(self):
        self.tmp.cleanup()

    def held(self):
        with open(self.path, "rb") as f:
            return f.read()

    def test_sequence_of_images_over_several_seeds(self):
        slot = lane.Slot(self.path)
        for k in range(150):
            seed = self.seeds[0] if k < 20 else self.rng.choice(self.seeds)
            h = image(self.rng, seed)
            slot.put(h)
            self.assertEqual(self.held(), hm.apply(seed, h["patches"], h["tail"]), f"image {k}")

    def test_file_changed_by_the_tool_is_made_again(self):
        slot = lane.Slot(self.path)
        seed = self.seeds[1]
        h = image(self.rng, seed)
        slot.put(h)
        # a writer's ops: bytes outside the image's patches, size unchanged
        with open(self.path, "r+b") as f:
            f.seek(100)
            f.write(b"\xAA" * 3000)
        h2 = image(self.rng, seed)
        slot.put(h2)
        # the bytes it wrote are not the image's: the file was made again
        self.assertEqual(self.held(), hm.apply(seed, h2["patches"], h2["tail"]))
        # a commit that renames a copy over it (FatFs's writer)
        with open(self.path + ".tmp", "wb") as f:
            f.write(bytes([0x55]) * len(seed))
        os.replace(self.path + ".tmp", self.path)
        h3 = image(self.rng, seed)
        slot.put(h3)
        self.assertEqual(self.held(), hm.apply(seed, h3["patches"], h3["tail"]))

    def test_untouched_file_is_rewritten_in_place(self):
        slot = lane.Slot(self.path)
        slot.put(image(self.rng, self.seeds[0]))
        ino = os.stat(self.path).st_ino
        h = image(self.rng, self.seeds[2])
        slot.put(h)
        self.assertEqual(os.stat(self.path).st_ino, ino)
        self.assertEqual(self.held(), hm.apply(self.seeds[2], h["patches"], h["tail"]))


class Recorded(loop.Run):
    """The campaign's run, each volume's judgement kept (and no settling of what it finds)."""

    def judged(self, name, reader, h, path, st, rr):
        err = rr.error and rr.error.replace(os.path.dirname(path), "DIR")     # each lane has its own
        self.seen[h["index"]] = (err, rr.extra.get("results"), rr.extra.get("spread"),
                                 rr.extra.get("io", {}).get("verdicts"))
        super().judged(name, reader, h, path, st, rr)

    def found(self, name, reader, h, v, rr, path, inline=False):
        self.kinds.append((h["index"], v.kind))


class BehindTest(unittest.TestCase):
    VOLUMES = 10

    def lane(self, run, behind):
        name = "write:core-dual"
        reader = hostile_tx.tool(name)
        probe = getattr(reader, "reader", reader)
        tmp = tempfile.mkdtemp(dir=run.workdir)
        ahead = lane.Prefetch(run.images, tmp, probe, 30)
        b = lane.Behind(name) if behind else None
        st = {"images": 0, "seconds": 0.0, "refused": 0, "verdicts": {}, "error": None}
        try:
            for _ in range(self.VOLUMES):
                i, h, path, pre = ahead.next()
                run.one(name, reader, probe, h, path, pre, st, b)
        finally:
            if b is not None:
                b.close()
            ahead.close()
            reader.close()
        return st

    def test_judged_behind_as_in_the_lane(self):
        if not os.access(VFAT, os.X_OK):
            self.skipTest("build/vfat missing (cmake --build --preset default)")
        with tempfile.TemporaryDirectory() as wd:
            args = argparse.Namespace(workdir=wd, timeout=30.0, min_seconds=10.0)
            lays = seeds.layouts(seeds.corpus_seeds(log=lambda s: None, seed=30), log=lambda s: None)
            got = []
            for behind in (True, False):
                run = Recorded(args, log=lambda s: None)
                run.seen, run.kinds = {}, []
                run.layouts, run.images = lays, lane.Images(loop.make, lays, 30)
                st = self.lane(run, behind)
                got.append((st, run.seen, run.kinds))
        (st1, seen1, k1), (st2, seen2, k2) = got
        self.assertEqual(sorted(seen1), list(range(self.VOLUMES)))
        self.assertEqual(seen1, seen2)
        self.assertEqual(sorted(k1), sorted(k2))     # two judges at once: found in either order
        self.assertEqual({k: st1[k] for k in ("images", "refused", "verdicts")},
                         {k: st2[k] for k in ("images", "refused", "verdicts")})
        self.assertTrue(any(r for _, r, _, _ in seen1.values()), "no volume took an op")


if __name__ == "__main__":
    unittest.main()
