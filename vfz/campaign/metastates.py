"""The census states of the second grammar: what a script's truncate, chattr and touch reached, stepped through the model.

    shrink-cluster   a truncate that cut a file's chain: fewer clusters
                     after it than before (fat_free)
    extend-hole      a file extended past its end with zeros: a growing
                     truncate, or a write at an offset past the size
    ro-modified      a read-only file written, truncated, renamed or
                     unlinked (root's CAP_DAC_OVERRIDE: all succeed)
    time-edge        a touch whose modify or access time lands on the
                     edge of FAT's range: clamped to 1980-01-01 or to
                     2107-12-31 23:59:58, or given exactly there

Recognised on the model's tree before each op that succeeded for the
writer (its per-op results), so the census needs no image and no C core.
"""
from vfz.model.inode import ATTR_RO, FAT_MAX_SEC, FAT_MIN_SEC, stored_mtime

META_STATES = ["shrink-cluster", "extend-hole", "ro-modified", "time-edge"]


def _clusters(size, cluster):
    return -(-size // cluster)


def at_edge(t):
    """Does a touch time (vfz.opscript.Time) store at an edge of FAT's
    range (clamped or given there)?"""
    return stored_mtime(t.sec) in (FAT_MIN_SEC, FAT_MAX_SEC)


def meta_reached(m, ops, results, cluster):
    """-> set of META_STATES: model m (fresh, of the writer's profile) is
    stepped through ops; results are the writer's per-op results, and an
    op counts only when it answered "ok" there and in the model."""
    out = set()
    for i, op in enumerate(ops):
        before = m.inode(op.path) if op.kind != "label" else None
        res = m.apply([op])[-1]
        if res != "ok" or i >= len(results) or results[i] != "ok" or before is None:
            continue
        is_dir, size, attr = before
        if op.kind == "truncate":
            if _clusters(op.args[1], cluster) < _clusters(size, cluster):
                out.add("shrink-cluster")
            if op.args[1] > size:
                out.add("extend-hole")
        elif op.kind == "write" and op.args[2] and op.args[1] > size:
            out.add("extend-hole")
        elif op.kind == "touch" and (at_edge(op.args[1]) or at_edge(op.args[2])):
            out.add("time-edge")
        if op.kind in ("write", "truncate", "rename", "unlink") and not is_dir and attr & ATTR_RO:
            out.add("ro-modified")
    return out
