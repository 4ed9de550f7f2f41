"""Evidence about a divergence: what the checker knows when it asks the
oracles' hooks whether a named exception explains it, and recognisers
that more than one oracle's exceptions share.
"""
from dataclasses import dataclass, field

from vfz import oracles


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


FAT_MIN_SEC, FAT_MAX_SEC = 315532800, 4354819198      # Linux's s_time_min, s_time_max
JS_MAX_SEC = 8640000000000                             # the last second a JavaScript Date holds


def year_wrapped(sec):
    """The time a writer that does not clamp stores for sec: the year goes
    into FAT's 7-bit field modulo 128 from 1980 (1970 -> 2098, 2108 ->
    1980), the seconds truncated to 2, UTC; None where no such date exists
    (29 February of a year that is not a leap year)."""
    import calendar
    import time
    try:
        t = time.gmtime(min(sec, 253402300799))
        return calendar.timegm((1980 + (t.tm_year - 1980) % 128, t.tm_mon, t.tm_mday,
                                t.tm_hour, t.tm_min, t.tm_sec & ~1))
    except ValueError:
        return None


def _norm(path):
    """A path lexically resolved ("." and ".." dropped), each component
    folded as lookups fold it (case, trailing dots), for matching a touch's
    path with a listed one."""
    out = []
    for c in path.split("/"):
        if c in ("", "."):
            continue
        if c == "..":
            out = out[:-1]
            continue
        out.append(c.rstrip(".").upper())
    return "/" + "/".join(out)


def time_rule_holds(ev, stored):
    """Every difference of a reader's listing is a modify time or access
    date of an entry, shown as stored(t) for a time t of a touch of the
    script (either of its two times): stored is a writer's rule for the
    seconds it keeps for t (year_wrapped, ...), None where its result is
    not predictable (a time past what a calendar date holds): then any
    value is taken for the entry the touch named."""
    d = ev.diff if ev.verdict == "differs" else None
    if not d or not d.changed or d.missing or d.extra or d.ambiguous or d.label:
        return False
    mask = oracles.oracle_class(ev.reader, "reader").meta_mask
    by_path, every = {}, set()
    for o in ev.ops:
        if o.kind != "touch":
            continue
        got = by_path.setdefault(_norm(o.path), set())
        for t in (o.args[1].sec, o.args[2].sec):
            w = stored(t)
            if w is None:
                got.add(None)
                continue
            pair = {("mtime", mask("mtime", w)), ("atime", mask("atime", w - w % 86400))}
            got |= pair
            every |= pair
    for a, b in d.changed:
        keys = {k for k in set(a) | set(b) if a.get(k) != b.get(k)}
        if not keys or keys - {"mtime", "atime"}:
            return False
        mine = by_path.get(_norm(a["path"]), set())
        if None in mine:
            continue
        if any((k, b.get(k)) not in (mine or every) for k in keys):
            return False
    return True


def time_wrap_holds(ev, invalid=None):
    """time_rule_holds with year_wrapped: a writer that stores the year
    modulo 128 and clamps nothing; invalid: what it stores for a time past
    JS_MAX_SEC (the npm fatfs package: an invalid Date, date 0, read as
    FAT_MIN_SEC)."""
    return time_rule_holds(ev, lambda t: invalid if invalid is not None and t > JS_MAX_SEC
                           else year_wrapped(t))


def shown_rule_holds(ev, rule, keys=("mtime",)):
    """A reader's divergence where every difference is a time of keys that
    it shows as rule(the expected value): a reader that decodes FAT's date
    fields its own way (fusefat's month)."""
    d = ev.diff if ev.verdict == "differs" else None
    if not d or not d.changed or d.missing or d.extra or d.ambiguous or d.label:
        return False
    for a, b in d.changed:
        diff = {k for k in set(a) | set(b) if a.get(k) != b.get(k)}
        if not diff or diff - set(keys) or any(a.get(k) is None or b.get(k) != rule(a[k]) for k in diff):
            return False
    return True
