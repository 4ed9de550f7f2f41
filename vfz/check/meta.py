"""Attributes and times: what a reader shows of them, held against the core reader's listing of the same image.

The canonical comparison (vfz.listing.KEYS) is path, type, size and
sha256. The core's `vfat ls` adds the entry's attribute byte and its three
times as Linux 6.1 decodes them (docs/listing.md: attr, mtime, atime,
crtime, crtime_ns). A reader that can show some of these declares them
(Reader.shows) and says what of a value it cannot show (Reader.shown, its
mask, documented in its oracle); on every image it reads, the fields both
listings have are compared path by path. A difference is the reader's
verdict "differs" with the changed entries ('-' the core's reading of the
bytes, '+' the reader's): either the reader or the core decodes the entry
otherwise.
"""


def meta_changed(rcls, shown, core):
    """[(core's entry, reader's entry)] restricted to path and the differing
    fields among those reader class rcls shows, between its listing `shown`
    and the core's listing `core` of one image; paths on one side only are
    the canonical comparison's business."""
    fields = tuple(getattr(rcls, "shows", ()))
    out = []
    if not fields or not shown or not core:
        return out
    by_path = {e["path"]: e for e in core}
    for e in sorted(shown, key=lambda e: e["path"]):
        c = by_path.get(e["path"])
        if c is None or c.get("type") != e.get("type"):
            continue
        a, b = {}, {}
        for f in fields:
            if f not in e or f not in c:
                continue                     # not shown by one of them (an open failed)
            x, y = rcls.shown(f, c[f]), rcls.shown(f, e[f])
            if x != y:
                a[f], b[f] = x, y
        if a:
            out.append((dict(path=e["path"], **a), dict(path=e["path"], **b)))
    return out
