"""Twins: a core writer and the kernel writer it reimplements must write the same bytes under the same script."""
from vfz import oracles
from vfz.check import metadata
from vfz.check.divergence import Divergence, family, name_class, op_for_path, ops_for
from vfz.oracles.evidence import core_listing


def check_twins(ck, res, ops):
    """A writer that reimplements another (Entry.twin: the core and the
    kernel it follows) must write the same bytes under the same script:
    short entries (dual aliases, dummies of one seed), NT case byte,
    attributes, first clusters and LFN slot counts, per path, from the
    core's listing of both images. Masked only where the kernel draws
    randomness: its hex-tail aliases (jiffies) and dummies of another
    seed. One divergence per differing field. And the whole metadata
    (vfz.check.metadata: boot sector, FSInfo, every FAT copy, every
    directory slot), one divergence per region and field; compared first:
    when it is the same, so are the listing's fields (no listing made)."""
    ws = dict(ck.writers)
    for wn, w in ck.writers:
        tn = oracles.entry(wn).twin
        if not tn or tn not in ws or wn not in res.images or tn not in res.images:
            continue
        if ops_for(wn, ops) != ops_for(tn, ops):
            continue                       # sent different scripts (supports): no twins here
        if not _same_results(res, wn, tn):
            continue                       # results differ already: a finding of its own
        same_seed = getattr(w, "seed", None) == getattr(ws[tn], "seed", None)
        meta = metadata_differences(res.images[wn], res.images[tn], tn, same_seed)
        if meta == []:
            continue        # the same metadata but the masks: the listing fields too (no vfat ls)
        a, b = twin_listing(res.images[wn]), twin_listing(res.images[tn])
        for field, path, mine, theirs in (twin_differences(a, b, same_seed) if a and b else ()):
            det = (f"{wn} and its twin {tn} wrote {path} differently: {field} "
                   f"{mine!r} vs {theirs!r}")
            res.add(Divergence({"role": "writer", "oracle": family(wn), "verdict": "bytes",
                                "kind": f"twin-{field}", "op": op_for_path(ops, path),
                                "cls": name_class(path)}, wn, det))
        for d, n in meta or ():
            det = (f"{wn} and its twin {tn} wrote the metadata differently ({n} field(s) of this "
                   f"kind): {d}")
            res.add(Divergence({"role": "writer", "oracle": family(wn), "verdict": "bytes",
                                "kind": f"twin-{d.kind}", "op": op_for_path(ops, d.path) if d.path else "-",
                                "cls": name_class(d.path)}, wn, det))


def _same_results(res, wn, tn):
    """Both writers answered every op alike (and neither failed): their
    images must then be equal, even where both differ from the model (a
    volume that fills up, which the model does not count)."""
    results = getattr(res, "results", {})
    if wn in results and tn in results:
        return results[wn] is not None and results[wn] == results[tn]
    return not (res.verdicts.get(wn, {}).get("(writer)") or res.verdicts.get(tn, {}).get("(writer)"))


def metadata_differences(mine, theirs, twin, same_seed):
    """[(first Difference, count)] per kind (region-field) between the
    images of a writer and of its twin (vfz.check.metadata), or None when
    not compared: both seeded but not alike (their dummies differ
    everywhere), or no image to compare. The JIFFIES mask when the twin is
    not seeded (the stock kernel: jiffies)."""
    seeded = oracles.entry(twin).seeded
    if seeded and not same_seed:
        return None
    try:
        diffs = metadata.compare(mine, theirs, jiffies=not seeded)
    except (metadata.Unusable, OSError):
        return None                # no image to compare: the writer's own finding
    first, count = {}, {}
    for d in diffs:
        first.setdefault(d.kind, d)
        count[d.kind] = count.get(d.kind, 0) + 1
    return [(d, count[k]) for k, d in first.items()]


TWIN_FIELDS = ("type", "short", "nt", "attr", "cluster", "lfn")


def twin_listing(image):
    """The core's listing of image by path, or None."""
    ls = core_listing(image)
    return None if ls is None else {e["path"]: e for e in ls}


def _hex_tail(short_hex):
    """Linux's fallback alias XXnnnn~D (hex digits from jiffies)."""
    try:
        b = bytes.fromhex(short_hex)
    except (TypeError, ValueError):
        return False
    return len(b) == 11 and b[6:7] == b"~" and all(chr(c) in "0123456789ABCDEF" for c in b[2:6])


def twin_differences(a, b, same_seed):
    """[(field, path, mine, theirs)] between two core listings by path."""
    out = []
    for p in sorted(set(a) | set(b)):
        x, y = a.get(p), b.get(p)
        if x is None or y is None:
            continue                 # a tree difference: the readers' finding
        for f in TWIN_FIELDS:
            u, v = x.get(f), y.get(f)
            if f == "short" and (_hex_tail(v or "") or
                                 (not same_seed and x.get("dummy") and y.get("dummy"))):
                continue
            if u != v:
                out.append((f, p, u, v))
    return out
