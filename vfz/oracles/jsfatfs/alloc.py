"""The npm fatfs package's cluster search: forward from a hint, below countofClusters, never wrapping (jsfatfs-alloc-search-range), recognised from the image it wrote: search_missed, known_failure.

vol.js allocateInFAT(hint) tries clusters hint, hint + 1, ... while
num < countofClusters and answers NOSPC past that ("TODO: try searching
backwards from hint"). Two gaps follow: clusters below the hint are never
tried (a file grows from its last cluster, chains.js expandChainToLength; a
new entry's cluster is searched from its directory's first cluster, dir.js
addFile, 2 for a fixed root), and the last two clusters, countofClusters
and countofClusters + 1 (cluster numbers start at 2), are never allocated
at all. Linux allocates from where it last did and wraps past the end, so
a volume whose free clusters lie below a file's end, or at the volume's
very end, is ENOSPC for the package and not for Linux. Measured: mkfs.fat -F 12 -s 1
of 64 KiB (93 clusters, all free): `create "/a" 47104 0` (92 clusters) is
ENOSPC with clusters 93 and 94 free; 91 clusters are not.

The evidence is the image after the script: the package frees no cluster
(it has no unlink or rmdir; a shrink marks clusters prefix + 0,
jsfatfs-truncate-ff00), so a cluster free in its view of the image was free
at every op. The op it answered ENOSPC has a hint (the file's last cluster,
the directory's first or last cluster) from which to countofClusters no
cluster is free, and yet some cluster of the volume is.
"""
import functools
import struct

from vfz import opscript
from vfz.oracles import NamedException
from vfz.oracles.evidence import ev_get
from vfz.oracles.jsfatfs.fewclusters import comps_of as _comps, package_tree, package_view, path_key as _key

ALLOC = "jsfatfs-alloc-search-range"


def _last(view, first):
    ch = view.chain(first) if first >= 2 else []
    return ch[-1] if ch else None


def hints(view, tree, op):
    """The clusters the package's searches for op start from: the file's
    last cluster (a write, or a create's fs.write); the parent directory's
    first cluster (a new entry's own cluster: 2 for a fixed root) and last
    cluster (the directory grown by the new slots)."""
    comps = _comps(op.path)
    out = set()
    node = tree.get(_key(comps))
    if node and not node[1] and op.kind in ("create", "write", "truncate"):
        out.add(_last(view, node[0]))
    if op.kind in ("create", "mkdir"):
        parent = tree.get(_key(comps[:-1]))
        if parent and parent[1]:
            out.add(parent[0] or 2)
            out.add(_last(view, parent[0]) if parent[0] else None)
    return {h for h in out if h}


def search_missed(image, op):
    """ALLOC evidence for op, answered ENOSPC: in the package's view of
    the image some cluster is free, and from one of op's hints up to
    countofClusters none is (the search the package made found nothing
    where a search of the whole FAT finds a cluster)."""
    try:
        view = package_view(image)
        free = [n for n in range(2, view.clusters + 2) if view.get(n) == 0]
        if not free:
            return False
        tree = package_tree(view)
        hs = hints(view, tree, op)
    except (OSError, ValueError, struct.error, IndexError, UnicodeDecodeError, TypeError):
        return False
    return any(not any(h <= n < view.clusters for n in free) for h in hs)


def known_failure(ev):
    """(i, ALLOC) when the first op the package answered otherwise than the
    model is ENOSPC where the model says ok and search_missed holds; else
    None. The readers check the script cut before it."""
    get = functools.partial(ev_get, ev)
    ops, wr, want = get("ops") or [], get("wr"), get("results") or []
    got = (wr.results or []) if wr is not None else []
    for i, op in enumerate(ops[:min(len(got), len(want))]):
        if got[i] == want[i]:
            continue
        if got[i] == "ENOSPC" and want[i] == "ok" and op.kind in opscript.OPS and \
                search_missed(get("image"), op):
            return i, ALLOC
        return None
    return None


EXCEPTIONS = [
    NamedException(
        ALLOC, "jsfatfs", "writer",
        "vol.js allocateInFAT searches clusters from a hint upwards while num < countofClusters "
        "and answers NOSPC there ('TODO: try searching backwards from hint'): clusters below the "
        "hint (a growing file's last cluster, a new entry's directory's first cluster) are never "
        "tried, and the volume's last two clusters (countofClusters and countofClusters + 1) are "
        "never allocated. Linux wraps past the end. Measured: mkfs.fat -F 12 -s 1 of 64 KiB (93 "
        "clusters, all free): create \"/a\" 47104 0 (92 clusters) is ENOSPC with clusters 93 and 94 "
        "free",
        "the first op the package answered otherwise is ENOSPC where the model says ok, and in the "
        "package's view of the image (it frees no cluster) some cluster is free while none is from "
        "one of the op's search hints (the file's last cluster, the directory's first or last) up "
        "to countofClusters (known_failure; the readers check the script cut there)", bug=ALLOC),
]
