"""Evidence about a divergence: what the checker knows when it asks the
oracles' hooks whether a named exception explains it, and recognisers
that more than one oracle's exceptions share.
"""
from dataclasses import dataclass, field

from vfz import oracles, proc


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
    base: str = None                  # the image the writer started from (writer divergences)
    entries: list = None              # the expected listing
    # writer divergences
    wr: object = None                 # the WriteResult
    results: list = None              # the model's results
    bad: int = None                   # index of the first op whose result differs
    fat_bits: int = 16


def ev_get(ev, k):
    """Field k of the evidence a hook is given: an Evidence, or a dict of
    the same fields (replays and tests build those)."""
    return ev.get(k) if isinstance(ev, dict) else getattr(ev, k, None)


def core_listing(image, timeout=30.0):
    """The core's listing of image (short-entry bytes included), or None
    when it could not read."""
    with proc.env_hook(None):     # the harness's own reading: never under the I/O-bounds trace
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


def raw_short_form(e, lower_ascii_always):
    """A bare 8.3 entry of the core's listing as a reader that prints its
    raw bytes shows it (7-Zip, GRUB): base and extension trimmed of blanks,
    ASCII letters lower-cased by the NT case bits (GRUB: always), bytes >=
    0x80 as stored (cp437), the whole decoded as UTF-8 with replacement as
    the glues do ('┬▓AO' NT 0x08, C2 B2 41 4F: '²ao'). None for an entry
    with LFN slots or no short entry."""
    sh = e.get("short")
    if not sh or e.get("lfn"):
        return None
    raw = bytes.fromhex(sh)
    nt = e.get("nt") or 0
    parts = []
    for part, bit in ((raw[:8], 0x08), (raw[8:11], 0x10)):
        part = part.rstrip(b" ")
        if lower_ascii_always or nt & bit:
            part = bytes(c + 32 if 0x41 <= c <= 0x5A else c for c in part)
        parts.append(part)
    return (parts[0] + (b"." + parts[1] if parts[1] else b"")).decode("utf-8", "replace")


def raw_short_explains(ev, lower_ascii_always):
    """True when a reader's whole listing is the image as raw_short_form
    shows it and nothing else differs: the core's listing of the image is
    the expected tree (paths, types, contents), and the reader shows each
    entry at the path made of its components' forms (a long name as it is,
    a bare 8.3 name as raw_short_form), with its type and contents, at
    least one bare name holding a byte >= 0x80. Names the raw bytes make
    alike ('ç' and '▄', 80 and DC: both U+FFFD) are told apart by type and
    contents only as a whole listing (campaign issue 26, mtools seed 44)."""
    from collections import Counter
    from vfz import listing
    r = ev.rr
    if r is None or r.listing is None or not ev.image or ev.entries is None:
        return False
    core = core_listing(ev.image)
    if core is None:
        return False
    key = lambda e: tuple(listing.core(e).get(k) for k in listing.KEYS)   # noqa: E731
    if Counter(map(key, core)) != Counter(map(key, ev.entries)):
        return False
    own, raw_high = {}, False
    for e in core:
        form = raw_short_form(e, lower_ascii_always)
        leaf = e["path"].rpartition("/")[2]
        if form is not None and form != leaf and any(ord(c) > 0x7F for c in leaf):
            raw_high = True
        own[e["path"]] = leaf if form is None else form
    predicted = []
    for e in core:
        comps = e["path"].split("/")[1:]
        path = "".join("/" + own.get("/".join([""] + comps[:i + 1]), c) for i, c in enumerate(comps))
        predicted.append(dict(e, path=path))
    return raw_high and Counter(map(key, predicted)) == Counter(map(key, r.listing))


def fat32_few_clusters(image):
    """True when image's boot sector is a FAT32 one (16-bit FAT size 0, as Linux decides)
    over fewer than 65 525 clusters, which Microsoft's rule -- the type follows the count --
    calls FAT12 or FAT16 (what BusyBox's mkdosfs and mkfs.fat -F 32 make on small volumes)."""
    from vfz.fatimg import Fat
    try:
        with open(image, "rb") as f:
            head = f.read(4096)
        if len(head) < 512 or int.from_bytes(head[22:24], "little") != 0:
            return False
        return Fat(head).clusters < 65525
    except (OSError, ValueError, ZeroDivisionError):
        return False


def few_clusters_exception(family):
    """The named exception of a reader that decides the FAT type by the cluster count."""
    return oracles.NamedException(
        f"{family}-fat32-few-clusters", family, "reader",
        "decides the FAT type by the cluster count (Microsoft's rule), so a FAT32 boot sector "
        "over fewer than 65 525 clusters reads as FAT12/16 and the tree is lost or refused; "
        "Linux, 7-Zip, GRUB and fatcat follow the boot sector (design difference, measured on "
        "BusyBox's 1 MiB FAT32: 1 984 clusters)",
        "the image's boot sector is FAT32 (16-bit FAT size 0) over < 65 525 clusters "
        "(vfz.oracles.evidence.fat32_few_clusters; Entry.fat_type == 'count')")


def fat_type_exception(ev):
    """A reader that decides the FAT type by the cluster count (Entry.fat_type "count"), on a
    FAT32 boot sector over fewer than 65 525 clusters: its family's exception
    (few_clusters_exception), which explains the whole divergence; else None."""
    e = oracles.entry(ev.reader)
    if e.fat_type == "count" and ev.image and fat32_few_clusters(ev.image):
        return f"{e.family}-fat32-few-clusters"
    return None


def label_nul_padded(image):
    """True when the boot sector's volume label field (offset 43, FAT32 71) holds a NUL
    after its text: BusyBox's mkdosfs pads labels with NULs (busybox-label-nul)."""
    try:
        with open(image, "rb") as f:
            b = f.read(90)
        sig, off = (66, 71) if int.from_bytes(b[22:24], "little") == 0 else (38, 43)
        if len(b) < off + 11 or b[sig] != 0x29:      # no label field without the signature
            return False
        return b"\0" in b[off:off + 11]
    except OSError:
        return False

def label_nul_shown(image, label_diffs):
    """True when image's label is NUL-padded (BusyBox's mkdosfs: label_nul_padded) and every
    label difference (where, expected, shown) of a reader is that label shown cut at its first
    NUL, as a C string (mtools's minfo right-aligns the boot sector's in 11 columns):
    busybox-label-nul."""
    if not label_diffs or not image or not label_nul_padded(image):
        return False
    return all(isinstance(e, str) and "\0" in e and isinstance(a, str) and a.strip(" ") == e.split("\0")[0]
               for _, e, a in label_diffs)


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
