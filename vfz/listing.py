"""Canonical listing (docs/listing.md): JSON lines sorted by path.

    {"path": "/Dir A/file.txt", "type": "file", "size": 5, "sha256": "..."}
    {"path": "/Dir A", "type": "dir"}

Only path, type, size and sha256 take part in comparisons, and the meta
keys (META_KEYS: attrs, mtime, atime) where the expected entry has them
and the reader shows them; readers may add fields (short-entry bytes,
clusters) that are kept for reports.
"""
import hashlib
import json

KEYS = ("path", "type", "size", "sha256")
# Compared only where the expected entry has them (the model knows a time
# only after a touch that no later op stamped over) and the reader shows
# them: "attrs" the letters of r h s a in that order ("-": none), "mtime"
# and "atime" seconds since the epoch as Linux 6.1 reads the fields (UTC).
META_KEYS = ("attrs", "mtime", "atime")
ATTR_LETTERS = (("r", 0x01), ("h", 0x02), ("s", 0x04), ("a", 0x20))


def attr_letters(byte):
    """The attribute byte's r h s a bits as the op-script spells them."""
    return "".join(c for c, b in ATTR_LETTERS if byte & b) or "-"


def entry(path, type_, data=None, size=None, **extra):
    e = {"path": path, "type": type_}
    if type_ == "file":
        if data is not None:
            e["size"] = len(data)
            e["sha256"] = hashlib.sha256(data).hexdigest()
        else:
            e["size"] = size
    e.update(extra)
    return e


def core(e):
    """The comparable part of an entry."""
    return {k: e[k] for k in KEYS if k in e}


def normalize(entries):
    return sorted((core(e) for e in entries), key=lambda e: e["path"])


def dumps_entry(e):
    try:
        return json.dumps(e, ensure_ascii=False)
    except UnicodeEncodeError:
        return json.dumps(e)


def dumps(entries):
    return "".join(dumps_entry(e) + "\n" for e in sorted(entries, key=lambda e: e["path"]))


def loads(text):
    """JSON lines; lines end at "\n" only (a path may hold U+2028, \v...)."""
    out = []
    for line in text.split("\n"):
        line = line.strip(" \t\r")
        if line:
            out.append(json.loads(line))
    return out


def diff(expected, actual):
    """Differences between two listings as readable lines ('' = equal).

    Compares only the canonical keys; a path present on one side only is
    reported as missing/extra, a path on both sides with other fields as
    changed."""
    exp = {e["path"]: core(e) for e in expected}
    act = {e["path"]: core(e) for e in actual}
    lines = []
    for p in sorted(set(exp) | set(act)):
        a, b = exp.get(p), act.get(p)
        if a == b:
            continue
        if b is None:
            lines.append(f"- {dumps_entry(a)}")
        elif a is None:
            lines.append(f"+ {dumps_entry(b)}")
        else:
            lines.append(f"- {dumps_entry(a)}")
            lines.append(f"+ {dumps_entry(b)}")
    return "\n".join(lines)


def under(path, paths):
    """Is path one of paths, or below one of them?"""
    return any(path == q or path.startswith(q + "/") for q in paths)


def fold_twins(entries, fold):
    """Paths of the entries that share their directory with another entry
    whose leaf is equal under fold (names a case-folding reader takes for
    one: FatFs, fusefat)."""
    groups = {}
    for e in entries:
        par, _, leaf = e["path"].rpartition("/")
        groups.setdefault((par, fold(leaf)), []).append(e["path"])
    return {p for g in groups.values() if len(g) > 1 for p in g}
