"""How FatFs folds, refuses and stores long names: casefold.json and the model profile.

fatfs_fold is FatFs's comparison key, from the case pairs measured on
FatFs itself (measure_casefold; `python3 -m vfz.oracles.fatfs --casefold`
writes casefold.json). PROFILE holds the knobs of vfz.model that predict
the FatFs writer.
"""
import json
import os

from vfz import model
from vfz.oracles.fatfs.server import NODE_DIR, Server, ServerError


CASEFOLD = os.path.join(NODE_DIR, "casefold.json")


def candidate_pairs():
    """Pairs (c, other case of c) of BMP characters above 0x7F, as Python's
    str.upper / str.lower pair them (single characters only): the
    candidates whose folding FatFs is asked about."""
    out = []
    for cp in range(0x80, 0x10000):
        if 0xD800 <= cp < 0xE000:
            continue
        c = chr(cp)
        u, lo = c.upper(), c.lower()
        if len(u) == 1 and u != c:
            out.append((c, u))
        if len(lo) == 1 and lo != c and lo.upper() != c:
            out.append((c, lo))
    return out


def measure_casefold(server=None, timeout=60.0):
    """-> the sorted pairs FatFs folds together (server.js 'casefold': a
    name made with the first character is found by f_stat with the
    second), measured now."""
    s = server or Server()
    try:
        ans = s.request({"op": "casefold", "pairs": candidate_pairs()}, timeout)
    finally:
        if server is None:
            s.close()
    if ans.get("error"):
        raise ServerError(ans["error"])
    return sorted(tuple(p) for p in ans["same"])


_FOLD = None


def _fold_table():
    """char -> the character FatFs folds it with (from casefold.json, which
    `python3 -m vfz.oracles.fatfs --casefold` measures and test_fatfs
    re-measures): 848 of the 1173 candidate pairs; FatFs R0.15 does not fold
    e.g. U+00B5 with U+039C, U+0131 with 'I', U+017F with 'S', titlecase
    digraphs, Georgian Mtavruli, Cherokee lower case, Cyrillic/Latin
    extensions added after Unicode 5."""
    global _FOLD
    if _FOLD is None:
        with open(CASEFOLD, encoding="utf-8") as f:
            pairs = json.load(f)["same"]
        pairs += [(chr(c), chr(c).upper()) for c in range(ord("a"), ord("z") + 1)]
        parent = {}

        def find(c):
            while parent.get(c, c) != c:
                c = parent[c]
            return c
        for x, y in pairs:
            rx, ry = find(x), find(y)
            if rx != ry:
                parent[max(rx, ry)] = min(rx, ry)
        _FOLD = {c: find(c) for c in parent}
        _FOLD.update({find(c): find(c) for c in parent})
    return _FOLD


def fatfs_fold(name):
    """The key under which FatFs compares a long name: trailing dots and
    spaces dropped (create_name), ASCII folded, other letters folded as
    measured (casefold.json)."""
    t = _fold_table()
    return "".join(t.get(c, c) for c in name.rstrip(" ."))


_FATFS_REFUSED = set('*:<>|"?\x7f\\')


def _fatfs_name_err(leaf):
    """FatFs's verdict on a new long name (create_name, measured): a unit
    below 0x20 or one of * : < > | " ? DEL refused (the glue refuses '\\'
    and ':' before FatFs sees them), more than 255 UTF-16 units *before*
    trailing dots and spaces are dropped refused (FR_INVALID_NAME: EINVAL,
    where Linux says ENAMETOOLONG and counts after dropping the dots), a
    name of only dots and spaces refused (Linux: ENOENT for dots, EINVAL
    for a trailing space); trailing spaces are dropped, not refused."""
    if model.utf16_len(leaf) > 255:
        return "EINVAL"
    if any(ord(c) < 0x20 or c in _FATFS_REFUSED for c in leaf):
        return "EINVAL"
    if not leaf.rstrip(" ."):
        return "EINVAL"
    return None


def _fatfs_store(leaf):
    """The spelling FatFs stores: trailing dots and spaces dropped."""
    return leaf.rstrip(" .")


def _fatfs_lookup(d, leaf):
    """The entry of model directory d that FatFs finds for leaf when the
    kernel's ASCII-folded lookup finds none: FatFs folds every letter its
    ff_wtoupper knows ('é' finds 'É') and drops trailing spaces ('a ' finds
    'a')."""
    key = fatfs_fold(leaf)
    if not key:
        return None
    for k in d.kids.values():
        if fatfs_fold(k.name) == key:
            return k
    return None


# Knobs of vfz.model (see the knob comments in vfz/model/profiles.py).
PROFILE = {
    "name_err": _fatfs_name_err,
    # follow_path: create_name refuses the leaf before dir_find looks it up, so
    # 255 'x' + '.' is EINVAL even when 255 'x' exists (campaign 1313, 61a7b9646f65)
    "leaf_name_first": True,
    # and a lookup of such a component finds nothing: 254 'x' + '..' is ENOENT
    # to rmdir even when 254 'x' exists (campaign 1313, 7929a2670133)
    "findable": lambda leaf: model.utf16_len(leaf) <= 255,
    "store": _fatfs_store,
    "lookup": _fatfs_lookup,
    # f_rename of an entry to a respelling of its own name (same directory
    # entry found) registers the new spelling and removes the old one
    "case_rename": "apply",
    # a rename onto an existing entry: FatFs's f_rename refuses it (FR_EXIST);
    # the glue removes the target and renames, so the entry takes the new
    # spelling (Linux keeps the target's)
    "replace": "respell",
}
