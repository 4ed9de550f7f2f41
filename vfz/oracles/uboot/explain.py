"""Recognising U-Boot's named exceptions from evidence: the hooks of its reader and writer.

A shown name, a result, a known failure of its writer, a whole divergence
of its reader or of fsck.fat on its writer's image.

Part of the uboot oracle (vfz/oracles/uboot/): the hooks its Reader and
Writer classes carry (name_exception, result_exception, known_failure,
explain); the catalogue is exceptions.py.
"""
import re
from collections import Counter

from vfz.oracles.uboot.fresh import fresh_exceptions
from vfz import listing
from vfz.model.names import walked
from vfz.oracles.uboot.exceptions import (
    ALIAS_DEL, ALIAS_DUP, ALIAS_E5, COLLIDE, FSINFO, LFN_LOW_BYTE, LITERAL_WALK, NO_RENAME, RAW_83,
    SKIPPED_05, UNADDRESSABLE, WALK_ENOENT)
from vfz.oracles.uboot.names import (
    colliding, dup_short_ext, fold_shown, lfn_low_byte_form, long_05, raw_83_form, shadowed,
    shown_paths, unaddressable)
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


def _vis(m, path):
    """A path of a difference as U-Boot shows it, folded: the core's form of
    its longest prefix that is an entry of the image, then each component
    beyond Latin-1 in its long-name form (a path the comparison mapped in
    part to expected names, or a shown path: Latin-1 already)."""
    shown = m["shown"]
    if path in shown:
        return shown[path]
    comps = path.split("/")[1:]
    base, rest = "", comps
    for k in range(len(comps) - 1, 0, -1):
        pre = "/" + "/".join(comps[:k])
        if pre in shown:
            base, rest = shown[pre], comps[k:]
            break
    return fold_shown(base + "".join("/" + (lfn_low_byte_form(c) if any(ord(x) > 0xFF for x in c)
                                             else c) for c in rest))


class _Unreached:
    """The entries U-Boot lists but the reader cannot give a command
    (unread=uboot-unaddressable), checked against the image: the core's
    listing predicts them (names.unaddressable: empty names, '/' in a
    name, paths the shell cannot take) and they must be exactly the marked
    ones, per U-Boot path and type. Each then explains one difference of
    its own entry: missing (a directory: everything under it too), shown
    without contents, or shown under U-Boot's path."""

    def __init__(self, r, m):
        def below(vis):
            return any(vis.startswith(c + "/") for c in m["collide"])
        self.m = m
        # not under a name that collides: U-Boot walks the first of them
        # twice, and the others never
        self.marked = Counter()
        for e in r.listing:
            vis = fold_shown(e["path"])
            if e.get("unread") == UNADDRESSABLE and not below(vis):
                self.marked[(vis, e["type"])] += 1
        types = {e["path"]: e["type"] for e in m["core"] or ()}
        self.pred = {p: (vis, cause, types[p]) for p, (vis, cause) in
                     unaddressable(m["core"]).items() if not below(vis)}
        self.ok = self.marked == Counter((v, t) for v, _, t in self.pred.values())
        self.left = dict(self.pred)      # not yet matched with a difference
        self.gone = {}                   # expected directories explained (with their subtrees): cause
        self.extra = Counter(self.marked)

    def claim(self, path, type_, expected_paths):
        """-> the cause that explains the expected entry at path, or None."""
        for g, cause in self.gone.items():
            if path.startswith(g + "/"):
                return cause
        for p, (_, cause, t) in self.pred.items():
            if t == "dir" and path.startswith(p + "/"):
                # under a directory listed (under its expected name) but not walked
                self.left.pop(p, None)
                self.gone[p] = cause
                return cause
        hit = path if path in self.left and self.left[path][2] == type_ else None
        if hit is None and path not in self.m["shown"]:
            # an entry the writer stored under another name (mtools-astral:
            # '😀' as U+F600): one of its directory's, by type
            par = _vis(self.m, path.rpartition("/")[0] or "/").rstrip("/")
            hit = next((p for p, (v, _, t) in sorted(self.left.items())
                        if t == type_ and p not in expected_paths
                        and _vis(self.m, p.rpartition("/")[0] or "/").rstrip("/") == par), None)
        if hit is None:
            return None
        cause = self.left.pop(hit)[1]
        if type_ == "dir":
            self.gone[path] = cause
        return cause

    def shown(self, e):
        """An entry shown (extra) that is a marked one, by its U-Boot path."""
        key = (_vis(self.m, e["path"]), e["type"])
        if self.extra[key] <= 0:
            return False
        self.extra[key] -= 1
        return True


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
      uboot-lfn-low-byte (an empty name) and uboot-unaddressable (a name
        holding '/', or a path the shell cannot take: LF, 0xFF, '\\'): the
        entries the listing marks unread=uboot-unaddressable are exactly
        those the image's bytes predict (_Unreached); each explains its own
        entry (missing, without contents, or under U-Boot's path) and, for
        a directory, everything missing under it.
      uboot-fs-type-string, uboot-sector-size: a failed read of a volume whose
        boot sector U-Boot refuses whole (fresh.py), written or fresh.
    -> the kinds seen (one finding each)."""
    d, r = getattr(ev, "diff", None), getattr(ev, "rr", None)
    if r is not None and getattr(ev, "verdict", None) == "failed":
        whole = fresh_exceptions(None, r, getattr(ev, "image", None))
        if whole:
            return whole[0][0]
    if d is None or r is None or r.listing is None or d.ambiguous:
        return None
    memo = {}

    def core():
        if "core" not in memo:
            from vfz.oracles.evidence import core_listing
            memo["core"] = core_listing(ev.image) if ev.image else None
            memo["shown"] = shown_paths(memo["core"])
            memo["collide"] = colliding(memo["shown"]) | shadowed(memo["core"], memo["shown"])
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
    for c in r.complaints:
        # "fatload PATH: ...", "fatls PATH: ...", "PATH: fatls says N bytes, fatload read M"
        m = re.match(r"(?:fatload |fatls )?(/.*?): ", str(c))
        if not m or not collides(m.group(1)):
            return None
        add(COLLIDE)
    unr = _Unreached(r, core()) if any(
        e.get("unread") == UNADDRESSABLE for e in r.listing) or d.missing or d.changed else None
    if unr is not None and not unr.ok:
        return None
    expected_paths = {e["path"] for e in ev.entries or ()} | {e["path"] for e in d.missing} | \
        {a["path"] for a, _ in d.changed}
    for a, b in d.changed:
        cause = None
        if "sha256" not in b and {k: v for k, v in a.items() if k != "sha256"} == b:
            cause = unr.claim(a["path"], a["type"], expected_paths)
        if cause is None and not collides(a["path"]):
            return None
        add(cause or COLLIDE)
    skipped = long_05(core()["core"]) if d.missing else set()
    for e in sorted(d.missing, key=lambda e: e["path"]):
        cause = unr.claim(e["path"], e["type"], expected_paths)
        if cause:
            add(cause)
        elif listing.under(e["path"], skipped):
            add(SKIPPED_05)
        elif collides(e["path"]):
            add(COLLIDE)
        else:
            return None
    for e in d.extra:
        if unr is not None and unr.shown(e):
            continue
        if not collides(e["path"]):
            return None
        add(COLLIDE)
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
