"""kernel-vvfat's host directory against the model: which of vvfat's catalogued write-back failures explains each difference, several of them in one tree.

vvfat replays the guest's writes onto the host directory commit by commit
(try_commit after a write that leaves its view consistent). What the host
holds after a script is therefore the model's tree after some op k (the
last commit that went through: k < len(ops) is vvfat-commit-stalled),
with, entry by entry, the failures of the commits up to there: a removed
file or directory left behind, an empty file never made, a file cut at a
cluster, a new size not replayed, or a grown file whose bytes past the
size vvfat last committed are not the guest's (vvfat-grown-file-stale-
bytes: do_commit empties its overlay after each commit, and read_cluster
reads the old, shorter host file into a buffer whose tail keeps stale heap
bytes). explain() finds the latest k at which every remaining difference
is one of those, each checked on its own entry, and returns their names;
anything else leaves the divergence unnamed.
"""
import hashlib

from vfz import listing

CLUSTER = 8192                  # vvfat's clusters on fat:16: (16 sectors)

STALLED = "vvfat-commit-stalled"
EMPTY_LOST = "vvfat-empty-file-lost"
FILE_CUT = "vvfat-file-cut-at-cluster"
UPDATE_LOST = "vvfat-update-lost"
RMDIR_KEPT = "vvfat-rmdir-kept"
UNLINK_KEPT = "vvfat-unlink-kept"
GROWN_STALE = "vvfat-grown-file-stale-bytes"


def writer_model(writer=None):
    """A fresh model of a kernel-vvfat writer (default kernel-vvfat): its
    entry's profile, names and shortname rule -> (model, rule)."""
    from vfz import model, oracles
    e = oracles.entry(writer or "kernel-vvfat")
    return model.Model(e.profile, e.names, root=model.root_for(e.profile, None), rule=e.shortname), e.shortname


def downcased(path, rule="win95"):
    """path as vvfat names it on the host: each component Linux stores bare
    (no long name, by the writer's shortname rule) lower-cased
    (rw.name_exception)."""
    from vfz.model.names import short_only
    return "/".join(c.lower() if c and short_only(c, rule) else c for c in path.split("/"))


class Snapshot:
    """The model's tree after k ops, keyed by host path: {path: (type,
    bytes or None)}; the host paths removed by an rmdir or an unlink that
    succeeded in those k ops."""

    def __init__(self, tree, rmdirs, unlinks):
        self.tree, self.rmdirs, self.unlinks = tree, rmdirs, unlinks


def snapshots(ops, writer=None):
    """[Snapshot after k ops for k = 0 .. len(ops)] through the model of
    the kernel-vvfat writer (writer_model)."""
    m, rule = writer_model(writer)
    rmdirs, unlinks = set(), set()
    out = [_snap(m, rmdirs, unlinks, rule)]
    for op in ops:
        before = set(out[-1].tree)
        res = m.apply_one(op)
        snap = _snap(m, rmdirs, unlinks, rule)
        if res == "ok" and op.kind in ("rmdir", "unlink"):
            # the entries the op removed, as the model spells them: the op's
            # path may name them otherwise (Linux drops trailing dots: unlink
            # "/dY." removes /dY; case folds)
            gone = before - set(snap.tree)
            (rmdirs if op.kind == "rmdir" else unlinks).update(gone)
            snap = _snap(m, rmdirs, unlinks, rule)
        out.append(snap)
    return out


def _snap(m, rmdirs, unlinks, rule):
    tree = {}
    for x in m.entries():
        data = None
        if x["type"] == "file":
            node, _ = m._walk([c for c in x["path"].split("/") if c])
            data = bytes(node.data) if node is not None else b""
        tree[downcased(x["path"], rule)] = (x["type"], data)
    return Snapshot(tree, set(rmdirs), set(unlinks))


def _sha(b):
    return hashlib.sha256(b).hexdigest()


def _states(snaps, k, path):
    """The bytes path had after each op up to k (in order, repeats dropped)."""
    out = []
    for s in snaps[:k + 1]:
        t = s.tree.get(path)
        if t and t[0] == "file" and (not out or out[-1] != t[1]):
            out.append(t[1])
    return out


def file_kind(host, ref, earlier, data):
    """Which failure made the host file (an entry of the listing: size,
    sha256) out of ref, the model's bytes at the snapshot, given the bytes
    the file had before (earlier, oldest first); data() reads the host
    file's bytes. None when no rule holds:
      UPDATE_LOST  it is the file as it was earlier, or a size it had earlier
                   holding the head of ref (a later size not replayed);
      FILE_CUT     the head of ref cut at a whole number of 8 KiB clusters;
      GROWN_STALE  ref's size, holding an earlier non-empty state of the
                   file as its head and other bytes past it (what vvfat read
                   past the end of its old host file)."""
    size, sha = host.get("size"), host.get("sha256")
    if size is None:
        return None
    if any(len(b) == size and _sha(b) == sha for b in earlier) or \
            (size < len(ref) and size in {len(b) for b in earlier} and _sha(ref[:size]) == sha):
        return UPDATE_LOST
    if 0 < size < len(ref) and size % CLUSTER == 0 and _sha(ref[:size]) == sha:
        return FILE_CUT
    if size == len(ref) and sha != _sha(ref):
        got = data()
        if got is not None and any(0 < len(b) < size and got[:len(b)] == b for b in earlier):
            return GROWN_STALE
    return None


def residual(snaps, k, host, data):
    """The names that explain every difference between the host listing
    ({path: entry}) and the model's tree after k ops, else None."""
    snap = snaps[k]
    names = set()
    for p, (kind, b) in snap.tree.items():
        if p in host:
            continue
        if kind == "file" and not b:
            names.add(EMPTY_LOST)       # an empty file: no cluster, never made on the host
        else:
            return None
    for p, h in host.items():
        t = snap.tree.get(p)
        if t is None:
            if listing.under(p, snap.rmdirs):
                names.add(RMDIR_KEPT)
            elif listing.under(p, snap.unlinks):
                names.add(UNLINK_KEPT)
            else:
                return None
        elif t[0] != h["type"]:
            return None
        elif t[0] == "file" and (h.get("size"), h.get("sha256")) != (len(t[1]), _sha(t[1])):
            kind = file_kind(h, t[1], _states(snaps, k, p)[:-1], lambda: data(p))
            if kind is None:
                return None
            names.add(kind)
    return names


def explain(ops, host, data, writer=None):
    """The names that explain the host listing (entries) against the
    model's tree after the script (of writer: writer_model), vvfat's stall
    included: the latest k whose residual is explained (k < len(ops) adds
    STALLED); None."""
    hmap = {e["path"]: e for e in host}
    snaps = snapshots(ops, writer)
    n = len(ops)
    for k in range(n, -1, -1):
        names = residual(snaps, k, hmap, data)
        if names is None:
            continue
        if k < n:
            names.add(STALLED)
        return sorted(names) or None
    return None
