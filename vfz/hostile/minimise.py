"""Minimising a hostile volume: revert mutated bytes to the seed's while the
finding's signature stays.

Two passes, each a greedy one-at-a-time reversion (what is reverted stays
reverted when the signature survives): first whole mutations (the patches
of one mutator, the canary tail), then the byte ranges that still differ
from the seed. For a hang only the tries that still hang cost a whole time
limit (the others answer), so the second pass runs for hangs too unless
hang=True asks to skip it.
The minimiser never adds bytes: the result differs from the seed in a
subset of the original ranges. Bounded by a number of reads and seconds.
"""
import time

from vfz.hostile import mutate as hm
from vfz.hostile import verdict as hv


class Checker:
    """image bytes -> does this reader still give signature sig on them?"""

    def __init__(self, reader, name, sig, canary, timeout, path):
        self.reader, self.name, self.sig = reader, name, sig
        self.canary, self.timeout, self.path = canary, timeout, path
        self.reads = 0
        self.last = None          # the answer of the last image that kept the signature
        self.last_image = None

    def __call__(self, image):
        with open(self.path, "wb") as f:
            f.write(image)
        rr = self.reader.read(self.path, self.timeout)
        self.reads += 1
        ok = any(v.signature(self.name) == self.sig
                 for v in hv.classify(rr, image, self.canary, self.timeout))
        if ok:
            self.last, self.last_image = rr, image
        return ok


def _groups(patches):
    """Patches of one field family together (one mutator's write to both FATs
    is one group: reverting one copy alone rarely keeps a FAT bug)."""
    out = {}
    for p in patches:
        key = p.field.split("=")[0]
        key = key.replace("fat0[", "fat[").replace("fat1[", "fat[")
        out.setdefault(key, []).append(p)
    return list(out.values())


def minimise(seed, h, check, budget_s=120.0, max_reads=40, hang=False):
    t_end = time.monotonic() + budget_s
    reads0 = check.reads

    def room():
        return time.monotonic() < t_end and check.reads - reads0 < max_reads

    groups = _groups(h["patches"])
    tail = h["tail"]
    best = h["image"]
    # pass 1: whole mutations
    k = 0
    while k < len(groups) and room():
        trial = [p for g in groups[:k] + groups[k + 1:] for p in g]
        img = hm.apply(seed, trial, tail if any("canary" in p.field for p in trial) else b"")
        if img != best and check(img):
            groups.pop(k)
            best = img
        else:
            k += 1
    if hang:
        return best
    # pass 2: byte ranges
    ranges = hm.byte_ranges(seed, best)
    for off, n in ranges:
        if not room():
            break
        if off >= len(seed):                 # the tail: cut it off
            img = best[:len(seed)]
        else:
            b = bytearray(best)
            b[off:off + n] = seed[off:off + n]
            img = bytes(b)
        if check(img):
            best = img
    return best
