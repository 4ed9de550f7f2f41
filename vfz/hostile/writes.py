"""Hostile writes: a writer applies an op-script to a mutated volume, driven as a hostile reader.

`vfatfuzz hostile --writers kernel,mtools,...` gives every writer the same mutated volumes the
readers get (image i of the run), each with a script made for it (`script_for`): the entries
the strict reader (the core's `vfat ls`) lists on the hostile volume, those the mutation hit
first -- an entry whose chain holds a mutated FAT entry, whose clusters or directory slots
the mutation overwrote --, and a mix of create, write past the end (extend), write inside,
mkdir, rename, unlink and rmdir over them. The script is derived from the volume's bytes and
the mutation's offsets with a fixed seed, so the same volume gets the same script; a finding
keeps the script it was found with (finding.json "ops") and replays and minimises with it.

Verdicts, besides crash, hang and trap (a kernel WARNING, BUG or Oops in the guest's log
during the ops; vfz.hostile.verdict reads the writer's "[kmsg]" section):

    spread   damage spread: the strict reader lists the volume before and after the ops;
             every entry it read cleanly before that no op names (neither it nor a directory
             above it is an argument of an op) must read the same after (type, size,
             contents), and no entry may appear that no op made. Judged only when the writer
             took the volume and answered every op with a result of the op's semantics
             (ok, EEXIST, ENOENT, ENOTDIR, EISDIR, ENOTEMPTY, ENOSPC, EINVAL, ENAMETOOLONG):
             a writer that refused the volume or an op with an error (EIO, EROFS, EUCLEAN,
             ...) is not judged, and neither is an entry the strict checker (`vfat check`)
             complained about before the ops, nor anything under it (a complaint without a
             path, such as a bad boot sector, leaves the whole volume unjudged): only what read
             cleanly is held to read the same. Two directory entries holding one cluster (a
             directory entry of cluster 0 is the root) show one directory under two paths: an
             op under either names both. The finding's evidence names each entry. A spread
             the writer's spread_exception(head) hook attributes to a named exception of its
             oracle from the volume's boot sector (FatFs on a FAT16 of 4 085 clusters, which it
             writes as FAT12: fatfs-count-edges-write) is signed by that name, not by what
             happened to the entries: one cause, one signature (extra["spread_exception"]).
"""
import hashlib
import random

from vfz import opscript, oracles, proc
from vfz.fatimg import Fat
from vfz.model.names import walked
from vfz.oracles import ReadResult

SEMANTIC = frozenset({"ok", "EEXIST", "ENOENT", "ENOTDIR", "EISDIR", "ENOTEMPTY", "ENOSPC", "EINVAL",
                      "ENAMETOOLONG"})
OPS_PER_SCRIPT = 8


def strict_reader(lists=True):
    """The project's own strict reader (the registry's reader under test): its lister
    (`vfat ls`), or with lists=False its checker (`vfat check`), each answered by the
    reading thread's `vfat serve` (vfz.oracles.served: the same answers, no process a read)."""
    name = next(n for n in oracles.names("reader")
                if getattr(oracles.entry(n), "under_test", not oracles.entry(n).independent)
                and oracles.entry(n).lists == lists)
    # the lister without its label run: spread compares listings alone (one process less
    # for each of the two reads around every op-script)
    return oracles.get_reader(name, served=True, **({"label": False} if lists else {}))


def unclean(complaints, listing=()):
    """Paths the strict checker complains about ('kind: PATH: message', where the message
    may name more entries: a cross-link names both files): they and everything under them
    did not read cleanly, so no spread is judged there."""
    out = set()
    paths = sorted({e["path"] for e in listing or () if e.get("path", "/") != "/"}, key=len, reverse=True)
    for c in complaints or ():
        parts = c.split(": ", 2)
        if len(parts) >= 2 and parts[1].startswith("/"):
            out.add(_key(parts[1]))
        else:
            out.add(())            # a complaint without a path: the whole volume
        rest = parts[2] if len(parts) > 2 else ""
        out |= {_key(p) for p in paths if (p + " ") in (rest + " ")}
    return out


def hit_clusters(image, offsets):
    """Cluster numbers the mutated byte offsets touch: a FAT entry's cluster, or the data
    cluster holding the byte."""
    try:
        f = Fat(image[:1 << 16] if len(image) > 1 << 16 else image, copy=True)
    except Exception:
        return set()
    out = set()
    fat_end = f.fat_off + f.nfats * f.spf * f.bps
    data = f.data_sec * f.bps
    per = {12: 1.5, 16: 2, 32: 4}[f.bits]
    for off in offsets:
        if f.fat_off <= off < fat_end and f.spf:
            out.add(int(((off - f.fat_off) % (f.spf * f.bps)) / per))
        elif off >= data and f.csize:
            out.add(2 + (off - data) // f.csize)
    return out


def script_for(listing, image, offsets, seed=0, n=OPS_PER_SCRIPT):
    """An op-script over the listing's entries, those the mutation hit first."""
    rng = random.Random(hashlib.sha256(image[:1 << 20]).hexdigest() + str(seed))
    hits = hit_clusters(image, offsets)
    entries = [e for e in listing or () if e.get("path") not in (None, "/")]
    hit = [e for e in entries if e.get("cluster") in hits]
    files = [e["path"] for e in entries if e.get("type") == "file"]
    dirs = ["/"] + [e["path"] for e in entries if e.get("type") == "dir"]
    first = [e["path"] for e in hit] or [e["path"] for e in entries]
    ops, k = [], 0

    def pick(pool, fallback):
        pool = pool or fallback
        return rng.choice(pool) if pool else "/"

    for i in range(n):
        k += 1
        target = first[i % len(first)] if first and i < len(first) else None
        kind = rng.choice(["create", "extend", "write", "mkdir", "rename", "unlink", "rmdir", "create"])
        f = target if target in files else pick(files, [])
        d = target if target in dirs else pick(dirs, ["/"])
        base = d.rstrip("/")
        if kind == "create" or (kind in ("extend", "write", "unlink", "rename") and not files):
            size = rng.choice([0, 1, 511, 4096, 33000, 100000])
            ops.append(f'create {opscript.quote(f"{base}/hostile-new-{k}.bin")} {size} {rng.randrange(256)}')
        elif kind == "extend":
            ops.append(f'write {opscript.quote(f)} {rng.choice([4096, 65536, 1 << 20])} '
                       f'{rng.choice([1, 512, 5000])} {rng.randrange(256)}')
        elif kind == "write":
            ops.append(f'write {opscript.quote(f)} {rng.randrange(0, 600)} {rng.choice([1, 100, 600])} '
                       f'{rng.randrange(256)}')
        elif kind == "mkdir":
            ops.append(f'mkdir {opscript.quote(f"{base}/hostile-dir-{k}")}')
        elif kind == "rename":
            to = pick(dirs, ["/"]).rstrip("/") + f"/hostile-moved-{k}"
            ops.append(f"rename {opscript.quote(f)} {opscript.quote(to)}")
        elif kind == "unlink":
            ops.append(f"unlink {opscript.quote(f)}")
        else:
            ops.append(f"rmdir {opscript.quote(d if d != '/' else pick(dirs[1:], ['/x']))}")
    return opscript.parse("\n".join(ops) + "\n")


def _key(path):
    """A path as the lookup walks it ('.' dropped, '..' back one), case-folded (VFAT's
    lookups ignore case): the same entry however an op or a listing spells it."""
    return tuple(c.casefold() for c in walked(path))


def _named(ops):
    return {_key(a) for op in ops for a in op.args if isinstance(a, str) and a.startswith("/")}


def _under(p, named):
    k = _key(p)
    return any(k[:len(q)] == q for q in named)


def _aliases(listing, named, root_cluster=0):
    """named, widened to what the same directories show under another path: on a hostile
    volume two directory entries may hold one cluster (a directory entry with cluster 0 is
    the root), so an op under one of them shows under the other too."""
    by_cluster = {}
    for e in listing:
        if e.get("type") == "dir" and e.get("cluster") is not None:
            c = e["cluster"] or root_cluster
            by_cluster.setdefault(c, set()).add(_key(e["path"]))
    by_cluster.setdefault(root_cluster, set()).add(())
    groups = [g for g in by_cluster.values() if len(g) > 1]
    out = set(named)
    for k in named:
        for g in groups:
            for d in g:
                if k[:len(d)] == d:
                    out |= {o + k[len(d):] for o in g}
    return out


def spread(before, after, ops, results, root_cluster=0, dirty=()):
    """Entries outside the ops that read differently after them -> [(what, path, before,
    after)]; [] when the writer is not judged (see the module doc). dirty: path keys the
    strict checker complained about before the ops (they and their subtrees are skipped)."""
    if before is None or after is None or any(r not in SEMANTIC for r in results or ()):
        return []
    named = _aliases(before, _named(ops), root_cluster) | set(dirty)
    b = {e["path"]: e for e in before if _key(e.get("path", "/"))}
    a = {e["path"]: e for e in after if _key(e.get("path", "/"))}
    bk = {_key(p) for p in b}
    ak = {}                     # an after entry by its key, the first of a's order (one pass,
    for q, v in a.items():      # not a scan of a for every entry that moved or went)
        ak.setdefault(_key(q), v)
    out = []
    for p, e in sorted(b.items()):
        if _under(p, named):
            continue
        x = a.get(p) or ak.get(_key(p))
        if x is None:
            out.append(("lost", p, e, None))
        elif x.get("type") != e.get("type"):
            out.append(("type", p, e, x))
        elif x.get("size") != e.get("size"):
            out.append(("size", p, e, x))
        elif x.get("sha256") != e.get("sha256"):
            out.append(("contents", p, e, x))
    for p, x in sorted(a.items()):
        if _key(p) not in bk and not _under(p, named):
            out.append(("appeared", p, None, x))
    return out


def _root_cluster(image):
    """The root directory's cluster as listings give it: FAT32's BPB field, else 0."""
    import struct
    if len(image) >= 48 and struct.unpack_from("<H", image, 22)[0] == 0:
        return struct.unpack_from("<I", image, 44)[0]
    return 0


def ops_of(rr):
    """The script a writer's answer was made with."""
    return opscript.parse(rr.extra["ops"])


class WriterProbe:
    """A writer driven as a hostile reader: read(path) applies the probe's script (or one made
    for the volume) and answers a ReadResult whose raw/error are the writer's (crash, hang and
    trap are classified as for readers) and whose extra holds the ops, results and spread."""

    def __init__(self, name, ops=None, **cfg):
        self.name = name
        self.tool = oracles.get_writer(name, **cfg)
        self.strict = strict_reader()
        self.check = strict_reader(lists=False)
        self.fixed = opscript.parse(ops) if isinstance(ops, str) else ops
        self.offsets = ()           # the mutation's byte offsets (set per image by the campaign)
        self.pre = None             # prepare()'s answer for the next read (the campaign's prefetch)

    def available(self):
        if hasattr(self.tool, "available"):
            return self.tool.available()
        return True, ""

    def prepare(self, path, image, offsets, timeout=60.0):
        """The strict reader's view of the volume at path before the ops (its listing, what
        its checker complained about) and the script made for it: done ahead of read() by
        the campaign's prefetch thread (vfz.hostile.lane) while the writer works on the
        volume before. The checker, then the lister: two requests to this thread's `vfat
        serve` (they ran side by side as two processes before, when a process's start was
        most of each one's wall)."""
        with proc.env_hook(None):           # the strict reader is the harness's, not traced
            rc = self.check.read(path, timeout)
            rb = self.strict.read(path, timeout)
        before = None if rb.error else rb.listing
        dirty = {()} if rc.error else unclean(rc.complaints, before)
        return {"path": path, "image": image, "before": before, "dirty": dirty,
                "ops": script_for(before, image, offsets)}

    def read(self, path, timeout=60.0):
        return self.read_finish(self.read_start(path, timeout), timeout)

    def read_start(self, path, timeout=60.0):
        """The ops on the volume at path (the writer's own time) -> what read_finish() judges. The
        hostile campaign's writer lanes call read_finish() in a thread of their own while the
        writer works on the next volume (vfz.hostile.lane.Behind): the same judgement, off
        the writer's path."""
        pre, self.pre = self.pre, None
        if pre is None or pre["path"] != path:
            with open(path, "rb") as f:
                pre = self.prepare(path, f.read(), self.offsets, timeout)
        ops = self.fixed or pre["ops"]
        if hasattr(self.tool, "last_iotrace"):
            self.tool.last_iotrace = None   # a failed apply leaves none
        wr = self.tool.apply(path, ops, timeout)
        return {"pre": pre, "ops": ops, "wr": wr, "path": path,
                "iotrace": getattr(self.tool, "last_iotrace", None)}

    def read_finish(self, started, timeout=60.0):
        """The strict reader after the ops and the spread verdict's evidence -> ReadResult."""
        pre, ops, wr = started["pre"], started["ops"], started["wr"]
        image, before, dirty = pre["image"], pre["before"], pre["dirty"]
        with proc.env_hook(None):           # the strict reader is the harness's, not traced
            ra = self.strict.read(started["path"], timeout) if not wr.error else None
        after = None if ra is None or ra.error else ra.listing
        sp = [] if wr.error else spread(before, after, ops, wr.results, _root_cluster(image), dirty)
        text = opscript.dump(ops)
        extra = {"writer": True, "ops": text, "results": list(wr.results or ()),
                 "spread": [(w, p, (e or {}).get("size"), (x or {}).get("size")) for w, p, e, x in sp]}
        hook = getattr(self.tool, "spread_exception", None)
        exc = hook(image) if sp and hook and image else None
        if exc:
            extra["spread_exception"] = exc
        if started["iotrace"] is not None:
            extra["iotrace"] = started["iotrace"]   # its own sectors (vfz.hostile.bounds)
        return ReadResult(self.name, listing=None, raw=wr.raw or "", error=wr.error, seconds=wr.seconds,
                          extra=extra)

    def close(self):
        for t in (self.tool, self.strict, self.check):
            try:
                t.close()
            except Exception:
                pass
