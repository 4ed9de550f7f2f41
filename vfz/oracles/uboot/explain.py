"""Recognising U-Boot's named exceptions from evidence: the hooks of its reader and writer.

A shown name, a result, a known failure of its writer, a whole divergence
of its reader or of fsck.fat on its writer's image.

Part of the uboot oracle (vfz/oracles/uboot/): the hooks its Reader and
Writer classes carry (name_exception, result_exception, known_failure,
explain); the catalogue is exceptions.py.
"""
import re

from vfz import listing
from vfz.model.names import walked
from vfz.oracles.uboot.exceptions import (
    ALIAS_DEL, ALIAS_DUP, ALIAS_E5, COLLIDE, FSINFO, LFN_LOW_BYTE, LITERAL_WALK, NO_RENAME, RAW_83,
    SKIPPED_05, UNADDRESSABLE, WALK_ENOENT)
from vfz.oracles.uboot.names import (
    colliding, dup_short_ext, fold_shown, lfn_low_byte_form, long_05, raw_83_form, shown_paths)
from vfz.oracles.uboot.shell import uboot_norm


def reader_name_exception(expected_leaf, actual_leaf):
    # an empty form is not a name to match: which entry it is, is told from
    # the image (_empty_names)
    if actual_leaf and actual_leaf == lfn_low_byte_form(expected_leaf):
        return LFN_LOW_BYTE
    if actual_leaf == raw_83_form(expected_leaf):
        return RAW_83
    return None


def _literal_walk(op):
    """A component before the leaf that U-Boot matches as given where Linux
    (and U-Boot's own leaf rule) would not: leading/trailing blanks or
    trailing dots."""
    comps = [c for c in op.args[0].split("/") if c][:-1]
    return any(c not in (".", "..") and uboot_norm(c) != c for c in comps)


def result_exception(op, expected, actual):
    # uboot-shell-bytes and uboot-name-check-first are no result exceptions:
    # the profile predicts them (path_err, name_first), so any other answer
    # is a finding
    if expected == "ENOTDIR" and actual == "ENOENT":
        return WALK_ENOENT
    return None


def known_failure(ev):
    """-> (op index, name) of a known U-Boot failure behind the divergence:
      uboot-literal-walk: the first differing op names a component before
        its leaf with blanks or trailing dots, and U-Boot did not find it
        (ENOENT/ENOTDIR) where the model did, or the reverse;
      uboot-alias-e5 (a bug): an op U-Boot answered ok created a leaf whose
        alias U-Boot starts with byte 0xE5 ('å...'), and the core's listing
        of the image lacks that entry (the slot reads as deleted)."""
    ops, wr = ev.ops, ev.wr
    if wr is None or wr.error:
        return None
    bad = ev.bad
    found = []
    # renames are unsupported (the Entry's supports): cut before the first
    first = next((i for i, op in enumerate(ops) if op.kind == "rename"), None)
    if first is not None and (bad is None or first <= bad):
        found.append((first, NO_RENAME))
    if bad is not None and bad < len(wr.results):
        a = wr.results[bad]
        e = ev.results[bad] if ev.results and bad < len(ev.results) else None
        if _literal_walk(ops[bad]) and {a, e} & {"ENOENT", "ENOTDIR"} and a != e:
            found.append((bad, LITERAL_WALK))
    end = bad if bad is not None else len(ops)
    cand = [i for i, op in enumerate(ops[:end])
            if op.kind in ("create", "mkdir") and i < len(wr.results) and wr.results[i] == "ok"
            and uboot_norm([c for c in op.args[0].split("/") if c][-1]).startswith("\u00e5")]
    if cand and ev.image:
        from vfz.oracles.evidence import core_listing
        shown = {e["path"] for e in core_listing(ev.image) or ()}
        for i in cand:
            # the entry made, as the core lists it ('//å' is '/å')
            comps = walked(ops[i].args[0])
            path = "/" + "/".join(comps[:-1] + [uboot_norm(comps[-1])])
            if path not in shown:
                found.append((i, ALIAS_E5))
                break
    # the earliest: the readers check the script cut before it, so a later
    # cut would leave an earlier failure in their image (campaign seed
    # 11102: mkdir //å then a rename was cut at the rename, and the readers
    # filed the 0xE5 alias of /å as six findings)
    return min(found) if found else None


def _empty_names(shown_listing, core, add):
    """The entries U-Boot showed with an empty name (uboot-lfn-low-byte: a
    long name whose first unit's low byte is 0, e.g. U+0100 'Ā' or the
    U+F600 mtools writes for '😀'), checked against the image: per directory
    and type, as many as the core's listing has entries whose U-Boot form
    is empty. -> {(shown parent, type): count} to match missing entries
    against ({} when there are none), or None when the counts differ."""
    seen = {}
    for e in shown_listing:
        if e.get("unread") == UNADDRESSABLE and e["path"].endswith("/"):
            key = (fold_shown(e["path"][:-1]), e["type"])
            seen[key] = seen.get(key, 0) + 1
    if not seen:
        return {}
    m = core()
    want = {}
    for e in m["core"] or ():
        vis = m["shown"].get(e["path"], "")
        if vis.endswith("/") and "//" not in vis:
            key = (vis[:-1], e["type"])
            want[key] = want.get(key, 0) + 1
    if want != seen:
        return None
    add(LFN_LOW_BYTE)
    return dict(seen)


def reader_explain(ev):
    """Every difference of the reader's listing and every complaint,
    explained from the evidence, or None:
      uboot-05-skipped (a bug): a missing entry is, or lies under, an entry
        with LFN slots whose short entry starts with 0x05 in the image (the
        core's listing): U-Boot's extract_vfat_name takes such an entry for
        a deleted one and skips it;
      uboot-lfn-collide: an entry shown under a name another entry of its
        directory is shown under too (uboot-lfn-low-byte folds distinct
        long names together: '😀' and '😀😀' are both '='; the core's
        listing gives every entry's U-Boot form): a missing, extra or changed
        entry at or under such a name, a failed fatload/fatls of one, a
        size fatload read that is not the size fatls showed for it;
      uboot-lfn-low-byte: entries shown with an empty name, as many per
        directory as the image holds long names whose U-Boot form is empty
        (_empty_names); each explains one missing entry of that directory
        and type, and a directory everything missing under it;
      uboot-unaddressable: a file listed without sha256 that the listing
        marks unread=uboot-unaddressable (a name whose U-Boot form holds
        '\\' or 0xFF: its shell cannot be given it), an entry missing under
        a directory so marked.
    -> the kinds seen (one finding each)."""
    d, r = getattr(ev, "diff", None), getattr(ev, "rr", None)
    if d is None or r is None or r.listing is None or d.ambiguous:
        return None
    marked = [e for e in r.listing if e.get("unread") == UNADDRESSABLE and not e["path"].endswith("/")]
    files = [e for e in marked if e["type"] == "file"]
    dirs = [e for e in marked if e["type"] == "dir"]
    memo = {}

    def core():
        if "core" not in memo:
            from vfz.oracles.evidence import core_listing
            memo["core"] = core_listing(ev.image) if ev.image else None
            memo["shown"] = shown_paths(memo["core"])
            memo["collide"] = colliding(memo["shown"])
        return memo

    def collides(path):
        m = core()
        if not m["collide"]:
            return False
        vis = m["shown"].get(path)
        if vis is None:
            # a shown path (U-Boot's form already) or one the comparison
            # mapped to expected names of a colliding group, mixed: a
            # component beyond Latin-1 can only be a long name
            vis = fold_shown("".join("/" + (lfn_low_byte_form(c) if any(ord(x) > 0xFF for x in c)
                                             else c) for c in path.split("/")[1:]))
        return listing.under(vis, m["collide"])

    kinds = []

    def add(k):
        if k not in kinds:
            kinds.append(k)
    empty = _empty_names(r.listing, core, add)
    if empty is None:
        return None
    for c in r.complaints:
        # "fatload PATH: ...", "fatls PATH: ...", "PATH: fatls says N bytes, fatload read M"
        m = re.match(r"(?:fatload |fatls )?(/.*?): ", str(c))
        if not m or not collides(m.group(1)):
            return None
        add(COLLIDE)
    sha_only = 0
    for a, b in d.changed:
        if collides(a["path"]):
            add(COLLIDE)
        elif "sha256" in b or {k: v for k, v in a.items() if k != "sha256"} != b:
            return None
        else:
            sha_only += 1
            add(UNADDRESSABLE)
    if sha_only > len(files):
        return None
    # shown with an empty name: accounted for by _empty_names (their parent
    # may appear under its expected name here, mapped by a name exception)
    blanks = {}
    for e in d.extra:
        if e["path"].endswith("/"):
            blanks[e["type"]] = blanks.get(e["type"], 0) + 1
    for t, n in blanks.items():
        if n > sum(c for (_, kind), c in empty.items() if kind == t):
            return None
    for e in d.extra:
        if e["path"].endswith("/"):
            continue
        if not collides(e["path"]):
            return None
        add(COLLIDE)
    if d.missing:
        skipped = long_05(core()["core"])
        gone = []                       # missing directories shown with an empty name
        for e in sorted(d.missing, key=lambda e: e["path"]):
            par = e["path"].rpartition("/")[0]
            key = (fold_shown(core()["shown"].get(par, par)), e["type"])
            if listing.under(e["path"], gone):
                continue
            vis = core()["shown"].get(e["path"])
            # an entry of the image: its own form must be empty; one the
            # writer stored under another name (mtools-astral): by count
            if empty.get(key) and (vis is None or vis.endswith("/")):
                empty[key] -= 1
                if e["type"] == "dir":
                    gone.append(e["path"])
                continue
            if listing.under(e["path"], skipped):
                add(SKIPPED_05)
            elif collides(e["path"]):
                add(COLLIDE)
            elif dirs:
                add(UNADDRESSABLE)
            else:
                return None
    if any(empty.values()):
        return None                     # an empty name shown for nothing missing
    return kinds or None


def writer_explain(ev):
    """fsck.fat's complaints on an image U-Boot wrote, each kind explained:
      uboot-alias-del: every bad short name holds 0x7F ('Bad short file
        name (\x7f~1)') at a path holding DEL;
      uboot-alias-dup (a bug): fsck.fat finds a duplicate (and maybe other
        lines of that report) and the core's listing shows two equal
        aliases with a 1-2 character extension;
      uboot-fsinfo-stale: the FAT32 FSInfo free count.
    -> the kinds (one finding each), or None when a complaint is left."""
    r = getattr(ev, "rr", None)
    if r is None:
        return None
    cs = [c for c in r.extra.get("complaints", ()) if isinstance(c, dict)]
    kinds = {c.get("kind") for c in cs}
    if not cs or len(cs) != len(r.extra.get("complaints", ())):
        return None
    out = []
    bad = [c for c in cs if c.get("kind") == "bad-short-name"]
    if bad:
        if not all("\x7f" in c.get("message", "") and "\x7f" in str(c.get("path", "")) for c in bad):
            return None
        out.append(ALIAS_DEL)
    if "duplicate" in kinds:
        from vfz.oracles.evidence import core_listing
        if not ev.image or not dup_short_ext(core_listing(ev.image)):
            return None
        out.append(ALIAS_DUP)
    if "free-count" in kinds:
        if ev.fat_bits != 32:
            return None
        out.append(FSINFO)
    left = kinds - {"bad-short-name", "duplicate", "free-count"} - \
        ({"other"} if "duplicate" in kinds else set())
    return None if left else (out or None)
