"""Evidence about a divergence: what the checker knows when it asks the
oracles' hooks whether a named exception explains it, and recognisers
that more than one oracle's exceptions share.
"""
from dataclasses import dataclass, field

from vfz import oracles, proc


@dataclass
class Evidence:
    ops: list                         # the op-script (as the readers saw it: maybe cut)
    writer: str = None                # the writer's registry name
    reader: str = None                # the reader's registry name (reader divergences)
    rr: object = None                 # its ReadResult
    verdict: str = None               # ok | differs | complains | failed
    diff: object = None               # vfz.check.verdict.ListingDiff
    lines: list = field(default_factory=list)   # the verdict's complaint/judgement lines
    detail: str = ""                  # the verdict as text
    exp_complaints: object = None     # the reader's expectations (checkers)
    image: str = None                 # the image read
    entries: list = None              # the expected listing
    # writer divergences
    wr: object = None                 # the WriteResult
    results: list = None              # the model's results
    bad: int = None                   # index of the first op whose result differs
    fat_bits: int = 16


def core_listing(image, timeout=30.0):
    """The core's listing of image (short-entry bytes included), or None
    when it could not read."""
    with proc.env_hook(None):     # the harness's own reading: never under the I/O-bounds trace
        r = oracles.get_reader("core").read(image, timeout)
    return None if r.error or r.listing is None else r.listing


def lost_behind_dummy_05(ev):
    """True when every path a reader lost is, or lies under, an entry
    whose short entry is a v3 dummy starting with 0x05, and the reader
    shows no more entries than it lost (each such entry at most shown as
    its dummy). Only for writers of v3 dummies; the short entries come
    from the core's listing of the image."""
    if not ev.writer or oracles.entry(ev.writer).shorts != "v3":
        return False
    d = ev.diff
    if d is None or d.changed or d.ambiguous:
        return False
    lost = {e["path"] for e in d.missing}
    shown = {e["path"] for e in d.extra}
    if not lost or len(shown) > len(lost):
        return False
    listing = core_listing(ev.image)
    if listing is None:
        return False
    d05 = {e["path"] for e in listing if e.get("dummy") and str(e.get("short", "")).startswith("05")}
    return bool(d05) and all(any(p == q or p.startswith(q + "/") for q in d05) for p in lost)
