"""The FatFs reader: the tree walked by server.js, and the reader's named exceptions.

f_opendir/f_readdir from the root, each file hashed (f_open/f_read); the
contract and its errors are in the package's docstring. explain_read
recognises DEL_UNOPENABLE and CASE_TWINS from a divergence's evidence.
"""
import json
import os

from vfz import geometry, iobounds, listing
from vfz.oracles import Reader, ReadResult, Timer
from vfz.oracles.fatfs.exceptions import CASE_TWINS, COUNT_EDGES, DEL_UNOPENABLE, _get
from vfz.oracles.fatfs.names import fatfs_fold
from vfz.oracles.fatfs.server import Server, ServerError, available


def explain_read(ev):
    """The named exception behind a FatFs reader divergence, from evidence
    (ev.diff: the listing difference; ev.entries: the expected listing):
    every difference must lie at or under an entry FatFs lists but cannot
    open (a name with DEL, whose 8.3 name cannot stand in for it:
    DEL_UNOPENABLE), or be one of two names of a directory that FatFs's
    folding makes one (CASE_TWINS: Linux folds ASCII only, so a nodual
    writer makes 'é' beside 'É' and FatFs opens the first for both). Nothing
    may be shown that is not expected, but a twin."""
    d = _get(ev, "diff")
    rr = _get(ev, "rr")
    if count_edge(rr, _get(ev, "image")):
        return COUNT_EDGES
    names = set()
    twins = listing.fold_twins(_get(ev, "entries") or (), fatfs_fold)

    def under_twin(path):
        return listing.under(path, twins)
    for c in (rr.complaints if rr is not None else ()):
        # server.js: "f_readdir PATH: FR_X", "f_open/f_read PATH: FR_X",
        # "PATH: read N bytes, directory entry says M", "PATH: the name opens
        # another entry (ALIAS)", "PATH: directory at cluster N already listed"
        head, _, fr = c.rpartition(": ")
        if fr == "FR_INVALID_NAME" and "\x7f" in head:
            names.add(DEL_UNOPENABLE)
        elif " bytes, directory entry says " in c and under_twin(c.partition(": read ")[0]):
            names.add(CASE_TWINS)
        elif ": the name opens another entry (" in c and under_twin(c.partition(": the name ")[0]):
            names.add(CASE_TWINS)
        elif ": directory at cluster " in c and under_twin(c.partition(": directory at ")[0]):
            names.add(CASE_TWINS)         # the other twin's directory, listed already
        elif head.startswith(("f_open/f_read ", "f_readdir ")) and fr.startswith("FR_") \
                and under_twin(head.partition(" ")[2]):
            # FatFs opened the other twin: a directory for a file (FR_NO_FILE),
            # a file for a directory (campaign 1313, b10db50c6e0f)
            names.add(CASE_TWINS)
        else:
            return None
    if d is None:                       # the listing matched (contents unknown): complaints only
        return min(names) if names else None
    if d.ambiguous or d.ambiguous_counts:
        return None
    for sign, e in [("-", e) for e in d.missing + [a for a, _ in d.changed]] + [("+", e) for e in d.extra]:
        comps = e["path"].split("/")
        if sign == "-" and any("\x7f" in c for c in comps[1:]):
            names.add(DEL_UNOPENABLE)
        elif under_twin(e["path"]):
            # a twin, or under one: FatFs opened the other twin for it
            names.add(CASE_TWINS)
        else:
            return None
    if not names:
        return None
    return DEL_UNOPENABLE if DEL_UNOPENABLE in names else CASE_TWINS


def count_edge(rr, image):
    """COUNT_EDGES: FatFs's FR_NO_FILESYSTEM on a FAT32 boot sector over exactly 65 525
    clusters (which FatFs's MAX_FAT16 0xFFF5 calls FAT16)."""
    if not image or rr is None or rr.error != "f_mount: FR_NO_FILESYSTEM":
        return False
    try:
        m = geometry.made(image)
    except OSError:
        return False
    return bool(m and m["bpb32"] and m["clusters"] == geometry.FAT16_MAX + 1)


def fresh_read(geo, rr, image=None):
    """COUNT_EDGES on a formatter's fresh volume (the failure is the whole answer)."""
    return [(COUNT_EDGES, [rr.error])] if count_edge(rr, image) else []


class FatfsReader(Reader):
    explain = staticmethod(explain_read)
    fresh_exceptions = staticmethod(fresh_read)

    def __init__(self, name="fatfs", **cfg):
        self.name = name
        self.server = Server()

    def available(self):
        return available()

    def read(self, image, timeout=30.0):
        r = ReadResult(self.name)
        with Timer() as t:
            if not os.path.isfile(image):
                r.error = f"no such image: {image}"
            else:
                try:
                    ans = self.server.request({"op": "list", "image": os.path.abspath(image)}, timeout)
                    # the sectors its disk callbacks read (vfz.iobounds records)
                    r.extra["iotrace"] = iobounds.sector_trace(ans.pop("io", None) or {})
                    r.raw = json.dumps(ans, ensure_ascii=False)[:20000]
                    if ans.get("error"):
                        r.error = ans["error"]
                    else:
                        r.listing = sorted(ans["entries"], key=lambda e: e["path"])
                        r.complaints = list(ans.get("complaints", ()))
                except ServerError as e:
                    r.error = f"fatfs: {e}"
                except Exception as e:  # an oracle never crashes the harness
                    r.error = f"fatfs reader: {type(e).__name__}: {e}"
        r.seconds = t.seconds
        return r

    def close(self):
        self.server.close()
