"""The npm fatfs package running out of clusters where Linux does, or earlier because every file holds one: what its ENOSPC leaves behind, recognised from the image it wrote and the volume it started from: known_failure.

Linux answers ENOSPC for a write that runs out part-way and cuts the file
back to the last page it could fill, freeing the rest (vfz.model.space);
the package undoes nothing:
  * SIZE (jsfatfs-enospc-chain-size): index.js fs.write calls
    _updateEntry with size max(old, pos + len) after chain.writeToPosition
    failed, so the entry claims every byte asked for over the clusters the
    chain got before NOSPC (fsck.fat "File size is 3199 bytes, cluster chain
    length is 3072 bytes"; the readers show zeros or other bytes past the
    chain's end); fs.ftruncate's growth keeps the old size over the clusters
    it added before NOSPC. Minimised on a FAT32 volume of 12 free 512-byte
    clusters: create "/a" 1301, create "/f" 1093, create "/c" 3199: ENOSPC
    for both, Linux keeps /c at 0 bytes, the package records 3199 over 6
    clusters.
  * EMPTY_CLUSTER in two new states (jsfatfs-empty-file-cluster: dir.js
    addFile allocates a cluster for every new file): the volume runs out
    earlier than for Linux by one cluster per empty file (five free
    clusters, three empty files and two mkdirs: the third mkdir is
    ENOSPC), and a create on a full volume makes no entry at all (Linux
    makes the entry, ENOSPC for its data).
"""
import struct

from vfz import model
from vfz.model.space import space_for
from vfz.oracles.jsfatfs.alloc import _comps, _key, package_tree
from vfz.oracles.jsfatfs.exceptions import EMPTY_CLUSTER
from vfz.oracles.jsfatfs.fewclusters import package_view
from vfz.oracles.jsfatfs.profile import PROFILE
from vfz.oracles import NamedException

SIZE = "jsfatfs-enospc-chain-size"
DATA_OPS = ("create", "write", "truncate")


def _view(image):
    try:
        view = package_view(image)
        return view, package_tree(view)
    except (OSError, ValueError, struct.error, IndexError, UnicodeDecodeError, TypeError):
        return None, None


def chain_split(view, node):
    """Does a file's entry (first, is_dir, size) disagree with its chain:
    a size beyond the bytes its clusters hold (fs.write after NOSPC), or
    more clusters than the size needs, one kept for size 0 (ftruncate's
    growth after NOSPC)?"""
    first, is_dir, size = node
    if is_dir or first < 2:
        return False
    n = len(view.chain(first))
    cs = view.csize
    return size > n * cs or n > max(1, (size + cs - 1) // cs)


def linux_model(base, ops):
    """The model of the package's profile (Linux's capacity) after ops on base, or None."""
    try:
        m = model.Model(PROFILE, "nodual", root=model.root_for(PROFILE, base), rule="lfn",
                        space=space_for(PROFILE, base))
        m.label_from(base)
        m.apply(ops)
    except (OSError, ValueError, struct.error, TypeError):
        return None
    return m if m.space is not None else None


def empty_files_short(base, ops, i):
    """EMPTY_CLUSTER evidence for op i, answered ENOSPC where the model
    says ok: charged one cluster for each file the model holds empty after
    the ops before it (the package gave each one), the model of Linux's
    capacity answers ENOSPC at op i too -- or, op i creating an empty file,
    has no cluster left for it."""
    m = linux_model(base, ops[:i])
    if m is None:
        return False
    empty = sum(1 for e in m.entries() if e["type"] == "file" and not e.get("size"))
    op = ops[i]
    if op.kind == "create" and not op.args[1]:
        return m.space.free - empty < 1     # the new empty file's own cluster
    if not empty:
        return False
    m.space.free = max(0, m.space.free - empty)
    m.apply(ops[i:i + 1])
    return m.results[-1] == "ENOSPC"


def no_entry(view, tree, base, ops, i):
    """EMPTY_CLUSTER evidence for create op i, answered ENOSPC by both: the
    package's view holds no such entry and no free cluster the search from
    its directory's first cluster reaches, where Linux made the entry."""
    op = ops[i]
    comps = _comps(op.path)
    parent = tree.get(_key(comps[:-1]))
    if op.kind != "create" or _key(comps) in tree or not parent or not parent[1]:
        return False
    start = parent[0] or 2
    if any(view.get(n) == 0 for n in range(start, view.clusters)):
        return False
    m = linux_model(base, ops[:i + 1])
    return m is not None and any(e["path"].upper() == op.path.upper() or
                                 _key(_comps(e["path"])) == _key(comps) for e in m.entries())


def known_failure(ev):
    """(i, name) for the first op the package answered ENOSPC, while its
    results before matched the model's: SIZE when the file op i writes
    has an entry its chain disagrees with; EMPTY_CLUSTER when the model
    said ok and empty_files_short holds, or a create left no entry
    (no_entry). None otherwise; the readers check the script cut there."""
    get = (lambda k: ev.get(k)) if isinstance(ev, dict) else (lambda k: getattr(ev, k, None))
    ops, wr, want, base = get("ops") or [], get("wr"), get("results") or [], get("base")
    got = (wr.results or []) if wr is not None else []
    view = tree = None
    for i, op in enumerate(ops[:min(len(got), len(want))]):
        if got[i] != "ENOSPC":
            if got[i] != want[i]:
                return None
            continue
        if view is None:
            view, tree = _view(get("image"))
            if view is None:
                return None
        node = tree.get(_key(_comps(op.path)))
        if op.kind in DATA_OPS and node and chain_split(view, node):
            return i, SIZE
        if base and want[i] == "ok" and empty_files_short(base, ops, i):
            return i, EMPTY_CLUSTER
        if base and want[i] == "ENOSPC" and no_entry(view, tree, base, ops, i):
            return i, EMPTY_CLUSTER
        if got[i] != want[i]:
            return None
    return None


EXCEPTIONS = [
    NamedException(
        SIZE, "jsfatfs", "writer",
        "index.js fs.write updates the entry's size to max(old, pos + len) even when "
        "chain.writeToPosition failed with NOSPC, and ftruncate's growth keeps the old size over "
        "the clusters it added: the entry disagrees with its chain (fsck.fat 'File size is 3199 "
        "bytes, cluster chain length is 3072 bytes'), where Linux cuts the file back to the last "
        "page it filled and frees the rest. Minimised: 12 free 512-byte clusters, create \"/a\" "
        "1301, create \"/f\" 1093, create \"/c\" 3199: ENOSPC for both, /c 0 bytes on Linux, 3199 "
        "over 6 clusters from the package",
        "the first op the package answered ENOSPC (its results before as the model's) writes a "
        "file whose entry in the package's view of the image claims more bytes than its chain "
        "holds, or holds more clusters than its size needs (known_failure; the readers check the "
        "script cut there)", bug=SIZE),
]
