"""fatsort 1.6.4 (Debian 12) as a transformer: it rewrites every directory
of an image in sorted order, in place.

`fatsort IMAGE` (LC_ALL=C.UTF-8; default order: directories first, then
files, case-insensitive) moves whole entries -- LFN slots with their short
entry -- to new slots of the same directory. Every reader must see the same
tree afterwards; a v1 dummy's LFN set must stay in front of its short entry
and a v3 entry keep its NT byte 0x20 (tests/test_userspace_oracles.py
checks both with `vfat ls`, which prints the short bytes, the NT byte and
the LFN slot count of every entry).

Exit status: 0 sorted (or nothing to do); anything else, or a timeout, is
the transformer's error (the image may then be half rewritten).
"""
import os
import shutil

from vfz.oracles import Entry, Timer, Transformer, WriteResult
from vfz.proc import run

ENV = {"LC_ALL": "C.UTF-8", "LANG": "C.UTF-8"}


class FatsortTransformer(Transformer):
    def __init__(self, name="fatsort", fatsort="fatsort", options=(), **cfg):
        self.name = name
        self.cmd = [fatsort, *options]

    def available(self):
        return shutil.which(self.cmd[0]) is not None, f"{self.cmd[0]} not installed (package fatsort)"

    def transform(self, image, timeout=60.0):
        w = WriteResult(self.name)
        with Timer() as t:
            if not os.path.isfile(image):
                w.error = f"no such image: {image}"
            else:
                # -f: the image is a file, never mounted; fatsort refuses
                # to touch what /proc/mounts names otherwise
                p = run([*self.cmd, "-f", image], timeout=timeout, env=ENV)
                w.raw = p.raw()
                if p.error or p.rc != 0:
                    tail = (p.errtext or p.text).strip().split("\n")[-1:]
                    w.error = f"fatsort: {p.error or f'exit {p.rc}'}: {tail}"
        w.seconds = t.seconds
        return w


ENTRIES = [Entry("fatsort", "fatsort", transformer="vfz.oracles.fatsort:FatsortTransformer",
                 needs=("fatsort",), cost="process")]

EXCEPTIONS = []
