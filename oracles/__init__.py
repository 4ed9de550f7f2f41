"""Oracles: one module per independent implementation, one contract.

A reader takes an image and answers with a canonical listing (see
scripts/vfz/listing.py), structured complaints (checkers), its raw output
and an error string when it could not run (timeout, crash, unusable image).
A writer applies an op-script (a list of vfz.opscript.Op) to an image in
place and answers with one result per op ("ok" or an errno name such as
"EEXIST"), so outcomes can be compared across writers.

The verdict (ok | differs | complains | failed) is not decided here: the
driver compares each answer with the model's expected tree (vfz.model).
"""
from dataclasses import dataclass, field
import importlib
import os
import sys
import time

# oracles use the shared vfz modules (listing, opscript, proc) in scripts/
_SCRIPTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts")
if _SCRIPTS not in sys.path:
    sys.path.insert(0, _SCRIPTS)


@dataclass
class ReadResult:
    oracle: str
    listing: list = None          # canonical entries, None if it did not read
    complaints: list = field(default_factory=list)  # one string each
    raw: str = ""                 # everything the tool printed, for reports
    error: str = None             # why it failed (timeout, crash, ...)
    seconds: float = 0.0
    extra: dict = field(default_factory=dict)   # oracle-specific (dmesg, repair probe)


@dataclass
class WriteResult:
    oracle: str
    results: list = field(default_factory=list)  # per op: "ok" or errno name
    raw: str = ""
    error: str = None
    seconds: float = 0.0


class Reader:
    name = "?"

    def read(self, image, timeout=30.0):
        raise NotImplementedError

    def read_many(self, images, timeout=30.0):
        """Batch form; oracles with a costly start (the kernel VM) override."""
        return [self.read(img, timeout) for img in images]

    def close(self):
        pass


class Writer:
    name = "?"

    def apply(self, image, ops, timeout=60.0):
        raise NotImplementedError

    def close(self):
        pass


class Timer:
    def __enter__(self):
        self.t0 = time.monotonic()
        return self

    def __exit__(self, *a):
        self.seconds = time.monotonic() - self.t0


# name -> "module:Class"; modules are imported on first use so that a
# missing tool only matters to the oracle that needs it.
READERS = {
    "dosfsck": "oracles.dosfsck:DosfsckReader",
    "mtools": "oracles.mtools:MtoolsReader",
    "7z": "oracles.sevenzip:SevenZipReader",
    "grub": "oracles.grub:GrubReader",
    "core": "oracles.core:CoreReader",
    "kernel": "oracles.kernel:KernelReader",
    "kernel-nodual": "oracles.kernel:KernelNodualReader",
    "kernel-nodual-v3": "oracles.kernel:KernelNodualV3Reader",
}
WRITERS = {
    "core-dual": "oracles.core:CoreWriter",
    "core-v1": "oracles.core:CoreWriter",
    "core-v3": "oracles.core:CoreWriter",
    "core-unique": "oracles.core:CoreWriter",
    "mtools": "oracles.mtools:MtoolsWriter",
    "kernel": "oracles.kernel:KernelWriter",
    "kernel-nodual": "oracles.kernel:KernelNodualWriter",
    "kernel-nodual-v3": "oracles.kernel:KernelNodualV3Writer",
}


def _load(table, name, **cfg):
    if name not in table:
        raise KeyError(f"unknown oracle {name!r} (known: {', '.join(sorted(table))})")
    mod, cls = table[name].split(":")
    return getattr(importlib.import_module(mod), cls)(name=name, **cfg)


def get_reader(name, **cfg):
    return _load(READERS, name, **cfg)


def get_writer(name, **cfg):
    return _load(WRITERS, name, **cfg)
