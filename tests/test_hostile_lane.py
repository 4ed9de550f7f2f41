#!/usr/bin/python3
"""A hostile lane's image files (vfz.hostile.lane.Slot) hold exactly the image they were given.

A Slot rewrites its file in place, only where the image it held and the next
one differ; these tests put sequences of images (one seed and several, with
tails, and files a tool changed or replaced between two images) and compare
the file's bytes with the image made whole (vfz.hostile.mutate.apply).
"""
import os
import random
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from vfz.hostile import lane  # noqa: E402
from vfz.hostile import mutate as hm  # noqa: E402
from vfz.hostile.layout import Patch  # noqa: E402
from vfz.hostile.loop import Hostile  # noqa: E402


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


if __name__ == "__main__":
    unittest.main()
