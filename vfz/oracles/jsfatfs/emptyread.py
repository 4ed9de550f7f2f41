"""The npm fatfs package reading an empty file whose entry holds cluster 0 (jsfatfs-empty-read-cluster0): it reads 'cluster 0' anyway, a sector before the volume when clusters are 64 KiB; recognised from the image: explain.

index.js fs.readFile sizes its buffer by the entry (0 bytes) and calls
fs.read, which calls chain.readFromPosition(0, <0 bytes>) on the chain of
the entry's first cluster, 0 for an empty file Linux made, without looking
at the length; the chain reads the first sector of cluster 0, which
vol.js _firstSectorOfCluster puts at firstDataSector + (0 - 2) *
SecPerClus: inside the FAT or the root for small clusters (read, nothing
kept), before the volume's first sector for large ones -- 128 sectors a
cluster on a FAT12 of 3 MB, data from sector 34: sector -222, which a
driver (ours: 'read before the start of the image') refuses, so the file
cannot be read ('readFile /a: IO'). Minimised: core-dual's `create "/a" 0
0` on fat12:3025K:65536:fats=1 (run 3201, f827886d73f9; before the glue
refused the sector it threw from Node's fs.readSync: 'uncaught: RangeError
... position ... Received -113664').

explain_split: the same listing also holds another exception's part (run
3204, 56b24e1e4a41: a name with a leading blank, jsfatfs-trim-lookup,
beside an unread empty file on fat12:2M:65536:sector=2048).
"""
import copy
import dataclasses
import struct

from vfz import listing
from vfz.fatimg import open_ro
from vfz.oracles import NamedException
from vfz.oracles.evidence import ev_get

EMPTY_READ = "jsfatfs-empty-read-cluster0"


def cluster0_before_volume(image):
    """Is the sector the package computes for cluster 0 before the volume?"""
    try:
        fat = open_ro(image)
    except (OSError, ValueError, struct.error, ZeroDivisionError):
        return False
    return fat.data_sec - 2 * fat.spc < 0


def explain(ev):
    """EMPTY_READ when every complaint of the package's listing is
    'readFile P: IO' for an expected empty file P whose entry (the core's
    listing of the image) holds cluster 0, cluster 0's sector lies before
    the volume, and every other difference is such a file left out or
    shown without its contents' hash."""
    from vfz.oracles.jsfatfs.exceptions import _core_clusters
    rr, image = ev_get(ev, "rr"), ev_get(ev, "image")
    if rr is None or rr.error or not rr.complaints or not image or not cluster0_before_volume(image):
        return None
    try:
        clusters = _core_clusters(image)
    except (OSError, ValueError, struct.error, TypeError):
        return None
    empty = {e["path"] for e in ev_get(ev, "entries") or () if e["type"] == "file" and not e.get("size")}
    unread = []
    for c in rr.complaints:
        head, _, code = c.rpartition(": ")
        p = head[len("readFile "):] if head.startswith("readFile ") else None
        ent = clusters.get((p or "").upper())
        if code != "IO" or p not in empty or not ent or ent[0] != 0:
            return None
        unread.append(p)
    d = ev_get(ev, "diff")
    # the server lists a file it cannot read without its sha256 (or not at all)
    unhashed = all(a["path"] in unread and "sha256" not in b and
                   {k: v for k, v in a.items() if k != "sha256"} == b for a, b in (d.changed if d else ()))
    if d is not None and (d.ambiguous or not unhashed or d.extra or d.label or
                          any(not listing.under(e["path"], unread) for e in d.missing)):
        return None
    return EMPTY_READ


def explain_split(ev, explain_rest):
    """A listing whose complaints and differences split into EMPTY_READ's
    part (explain: its 'readFile P: IO' complaints, P an expected empty
    file, and what differs at or under such a P) and the rest, which
    explain_rest (exceptions.explain_read) names -> the sorted names, else None."""
    rr, d = ev_get(ev, "rr"), ev_get(ev, "diff")
    if rr is None or rr.error or d is None or d.ambiguous:
        return None
    empty = {e["path"] for e in ev_get(ev, "entries") or () if e["type"] == "file" and not e.get("size")}
    mine = [c for c in rr.complaints if c.startswith("readFile ") and c.endswith(": IO")
            and c[len("readFile "):-len(": IO")] in empty]
    unread = [c[len("readFile "):-len(": IO")] for c in mine]
    rest = [c for c in rr.complaints if c not in mine]
    if not mine or not rest:
        return None
    de, dr = copy.copy(d), copy.copy(d)
    de.changed = [(a, b) for a, b in d.changed if a["path"] in unread]
    de.missing = [e for e in d.missing if listing.under(e["path"], unread)]
    de.extra, de.label = [], None
    dr.changed = [x for x in d.changed if x not in de.changed]
    dr.missing = [e for e in d.missing if e not in de.missing]
    first = explain(dataclasses.replace(ev, rr=dataclasses.replace(rr, complaints=mine), diff=de))
    other = explain_rest(dataclasses.replace(ev, rr=dataclasses.replace(rr, complaints=rest), diff=dr))
    if not first or not other:
        return None
    return sorted({first, *([other] if isinstance(other, str) else other)})


EXCEPTIONS = [
    NamedException(
        EMPTY_READ, "jsfatfs", "reader",
        "fs.readFile of an empty file reads its first cluster's first sector even for 0 bytes "
        "(index.js fs.read -> chain.readFromPosition); an empty file Linux made has cluster 0, "
        "whose sector vol.js _firstSectorOfCluster puts at firstDataSector - 2 * SecPerClus: "
        "before the volume with 64 KiB clusters (a 3 MB FAT12: sector -222), which the driver "
        "refuses, so the file cannot be read. core-dual's create \"/a\" 0 0 on "
        "fat12:3025K:65536: 'readFile /a: IO'",
        "every complaint is 'readFile P: IO' for an expected empty file whose entry holds "
        "cluster 0, on a volume where firstDataSector - 2 * SecPerClus < 0, and every other "
        "difference is such a file left out or shown without its hash (explain)", bug=EMPTY_READ),
]
