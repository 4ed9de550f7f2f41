"""Twins: a core writer and the kernel writer it reimplements must write the same bytes under the same script (and core-asan, the ASan build, core-dual's)."""
import os

from vfz import oracles
from vfz.check import metadata
from vfz.check.divergence import Divergence, family, name_class, op_for_path, ops_for
from vfz.check.predict import model_of
from vfz.oracles.evidence import core_listing


def check_twins(ck, res, ops, fs=None):
    """A writer that reimplements another (Entry.twin: the core and the
    kernel it follows) must write the same bytes under the same script.
    First the whole metadata (vfz.check.metadata: boot sector, FSInfo,
    every FAT copy, every directory slot), one divergence per region and
    field; then, when it differs, the listing's fields per path (short
    entries, NT case byte, attributes, first clusters, LFN slot counts)
    from the core's listing of both images, which name the entry. Masked
    only where the kernel draws randomness: its hex-tail aliases (jiffies)
    and dummies of another seed. The modify and access times are held to
    the model wherever it predicts them (a touch not stamped over since:
    "now" is each writer's clock), also when both twins wrote them alike.
    Compared whenever both answered every op alike, also where both differ
    from the model (a volume that fills). When the twin is sent less of
    the script (its supports: Linux writes no label), the writer writes
    the twin's script again on a fresh volume of fs for the comparison,
    whose results must then be the twin's."""
    ws = dict(ck.writers)
    for wn, w in ck.writers:
        tn = oracles.entry(wn).twin
        if not tn or tn not in ws or wn not in res.images or tn not in res.images:
            continue
        tops = ops_for(tn, ops)
        mine = res.images[wn]
        if ops_for(wn, ops) == tops:
            if not _same_results(res, wn, tn):
                continue                   # results differ already: a finding of its own
        elif res.verdicts.get(tn, {}).get("(writer)"):
            continue
        m = None
        if ops_for(wn, ops) != tops:
            if fs is not None:
                m = model_of(tn, ck.pristine_image(fs), tops)
            if m is None or ops_for(wn, tops) != tops:
                continue                   # no script both can be sent
            mine, det = _rewrite(ck, w, wn, fs, tops, res, tn, m)
            if det:
                res.add(Divergence({"role": "writer", "oracle": family(wn), "verdict": "result",
                                    "kind": "twin-results", "op": "-", "cls": "-"}, wn, det))
            if mine is None:
                continue
        same_seed = getattr(w, "seed", None) == getattr(ws[tn], "seed", None)
        meta = metadata_differences(mine, res.images[tn], tn, same_seed)
        if meta == [] and oracles.entry(tn).under_test:
            # the core against the core (another build of it): the data too, every byte
            off = first_difference(mine, res.images[tn])
            if off is not None:
                res.add(Divergence({"role": "writer", "oracle": family(wn), "verdict": "bytes",
                                    "kind": "twin-data", "op": "-", "cls": "-"}, wn,
                                   f"{wn} and its twin {tn} wrote the same metadata but other bytes "
                                   f"at image offset {off:#x}"))
            continue
        if m is None and fs is not None:      # the twin's model: its predicted times
            m = model_of(tn, ck.pristine_image(fs), tops)
        times = predicted_times(m) if m is not None else {}
        if meta == [] and not any(times.values()):
            continue          # the same metadata but the masks: the listing's fields too (no vfat ls)
        a, b = twin_listing(mine), twin_listing(res.images[tn])
        if a is not None and b is not None:
            diffs = twin_differences(a, b, same_seed) if meta != [] else []
            diffs += time_differences(a, b, times)
            for field, path, x, y in diffs:
                det = (f"{wn} and its twin {tn} wrote {path} differently: {field} "
                       f"{x!r} vs {y!r}")
                res.add(Divergence({"role": "writer", "oracle": family(wn), "verdict": "bytes",
                                    "kind": f"twin-{field}", "op": op_for_path(ops, path),
                                    "cls": name_class(path)}, wn, det))
        for d, n in meta or ():
            det = (f"{wn} and its twin {tn} wrote the metadata differently ({n} field(s) of this "
                   f"kind): {d}")
            res.add(Divergence({"role": "writer", "oracle": family(wn), "verdict": "bytes",
                                "kind": f"twin-{d.kind}", "op": op_for_path(ops, d.path) if d.path else "-",
                                "cls": name_class(d.path)}, wn, det))


def first_difference(a, b, chunk=1 << 20):
    """The first offset at which files a and b differ (a length too), or None."""
    with open(a, "rb") as fa, open(b, "rb") as fb:
        pos = 0
        while True:
            x, y = fa.read(chunk), fb.read(chunk)
            if x != y:
                n = min(len(x), len(y))
                return pos + next((i for i in range(n) if x[i] != y[i]), n)
            if not x:
                return None
            pos += len(x)


def replay_writers(wn, fields, writers=None):
    """The writers a divergence of writer wn (signature fields) needs to
    show again: wn, and for a twin comparison's (kind twin-*: bytes or
    results) the twin it was held against too, when writers (names the
    checker has; None: any) hold it. Without the twin the comparison never
    runs: a replay by the writer alone reads every twin divergence as
    flaky. The campaign's minimiser, the selftest's hunt and confirmation
    and the main-job mode all replay through this."""
    ws = [wn]
    e = oracles.entries().get(wn)
    if e and fields.get("role") == "writer" and str(fields.get("kind", "")).startswith("twin-"):
        if e.twin and (writers is None or e.twin in writers):
            ws.append(e.twin)
    return ws


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
        # a twin that is the core itself (core-asan's core-dual) draws no jiffies
        diffs = metadata.compare(mine, theirs, jiffies=not seeded and not oracles.entry(twin).under_test)
    except (metadata.Unusable, OSError):
        return None                # no image to compare: the writer's own finding
    first, count = {}, {}
    for d in diffs:
        first.setdefault(d.kind, d)
        count[d.kind] = count.get(d.kind, 0) + 1
    return [(d, count[k]) for k, d in first.items()]


def _rewrite(ck, w, wn, fs, tops, res, tn, m):
    """Writer w applies its twin's script tops to a fresh volume of fs ->
    (image or None, detail of a divergence or None): its results must be
    the model's, which the twin's matched."""
    img = os.path.join(os.path.dirname(res.images[wn]), f"{wn}-as-{tn}.img")
    wr = ck._write(w, wn, ck.pristine_image(fs), img, tops)
    res.images[f"{wn}-as-{tn}"] = img
    res.raws[f"{wn}-as-{tn}"] = wr.raw
    if wr.error:
        return None, f"{wn} on its twin {tn}'s script failed: {wr.error}"
    for i, op in enumerate(tops):
        got = wr.results[i] if i < len(wr.results) else None
        if got != m.results[i]:
            return None, (f"{wn} on its twin {tn}'s script: line {op.line}: {op}: expected "
                          f"{m.results[i]}, got {got}")
    return img, None


def predicted_times(m):
    """{path: {"mtime": s, "atime": s}} of the times model m predicts (a
    touch not stamped over since; the rest is each writer's clock)."""
    return {p: {k: v for k, v in i.items() if k in ("mtime", "atime") and v is not None}
            for p, i in m.inodes().items()}


def time_differences(a, b, predicted):
    """[(field, path, mine, theirs)]: the modify and access times of two
    core listings by path, where the model predicts them; named when
    either is not the prediction (both wrong alike included)."""
    out = []
    for p, times in sorted(predicted.items()):
        x, y = a.get(p), b.get(p)
        if x is None or y is None:
            continue
        for f, want in sorted(times.items()):
            if x.get(f) != want or y.get(f) != want:
                out.append((f, p, x.get(f), y.get(f)))
    return out


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
