"""The fusefat reader: a read-only mount walked by the agent, and the reader's named exceptions.

`fusefat -f -s -o ro IMAGE DIR`, then the agent walks the tree with
os.walk and hashes every file. The volume label entry fusefat lists as a
file is dropped here (LABEL_AS_FILE); explain and name_exception recognise
the reader's other exceptions (CASE_TWINS, RAW_83, LONG_UTF8_CUT, NT_CASE).
"""
import os
import re

from vfz import listing
from vfz.oracles import Reader, ReadResult, Timer
from vfz.oracles.fusefat import meta
from vfz.oracles.fusefat.exceptions import CASE_TWINS, LABEL_AS_FILE, LONG_UTF8_CUT, NT_CASE, RAW_83
from vfz.oracles.fusefat.mount import FUSEFAT, Mount, available
from vfz.oracles.fusefat.names import fusefat_fold, raw_83, readdir_cut


def _twins_explain(d, entries):
    """Every difference lies at or under one of two or more expected names
    of one directory that fusefat_fold makes one (CASE_TWINS): fusefat opens
    the first of them for each."""
    if not entries or not (d.missing or d.extra or d.changed):
        return False
    twins = listing.fold_twins(entries, fusefat_fold)
    return bool(twins) and all(listing.under(e["path"], twins)
                               for e in d.missing + d.extra + [a for a, _ in d.changed])


def _unopenable_as(exp, shown):
    """The named exception under which fusefat lists file exp (shown: the
    entry paired with it, its name already mapped by name_exception) under
    a name it then cannot open, contents unread: LONG_UTF8_CUT (a name
    whose UTF-8 form is over 255 bytes: readdir_cut), else RAW_83 (a
    non-ASCII name with a cp437 form, stored bare: raw_83); else None."""
    leaf = exp["path"].rsplit("/", 1)[-1]
    if shown.get("size") is not None or exp.get("type") != "file" or leaf.isascii():
        return None
    if readdir_cut(leaf) != leaf:
        return LONG_UTF8_CUT
    return RAW_83 if raw_83(leaf) is not None else None


def _refused(path, refused):
    """path (expected) is a directory with a non-ASCII bare name that
    fusefat's output says it could not open (under its raw_83 form)."""
    leaf = path.rsplit("/", 1)[-1]
    form = None if leaf.isascii() else raw_83(leaf)
    return form is not None and any(r.rstrip().endswith("/" + form) for r in refused)


def root_label(image):
    """The volume label entry of the root directory as text (trailing spaces
    dropped), or None."""
    from vfz.fatimg import open_ro
    fat = open_ro(image)
    for off in fat.dir_slots(None):
        e = fat.b[off:off + 32]
        if e[0] == 0:
            break
        if e[0] != 0xE5 and e[11] & 0x0F != 0x0F and e[11] & 0x08:
            return bytes(e[:11]).decode("cp437").rstrip(" ")
    return None


def label_file_name(image):
    """The name fusefat lists the root's volume label entry under (as an
    empty file, LABEL_AS_FILE): its 11 bytes as an 8.3 name, blanks
    dropped, a dot before a non-empty extension ('12345678901' ->
    '12345678.901', 'A B' -> 'AB', 'NO NAME' -> 'NONAME'), or None. fusefat
    builds it as a C string: a NUL ends it, after the dot a non-blank
    extension put there (BusyBox's 'VFATFUZZ\0\0\0' -> 'VFATFUZZ.')."""
    raw = root_label(image)
    if raw is None:
        return None
    raw = raw.ljust(11)
    base, ext = raw[:8].replace(" ", ""), raw[8:].replace(" ", "")
    return (base + ("." + ext if ext else "")).split("\0")[0]


def _text(s):
    """A host name from the agent (surrogateescape) -> canonical text."""
    return os.fsencode(s).decode("utf-8", "replace")


class FusefatReader(Reader):
    def __init__(self, name="fusefat", fusefat=FUSEFAT, **cfg):
        self.name = name
        self.fusefat = fusefat

    def available(self):
        return available(self.fusefat)

    def read(self, image, timeout=30.0):
        r = ReadResult(self.name)
        with Timer() as t:
            try:
                self._read(image, timeout, r)
            except Exception as e:
                r.error = f"fusefat reader: {type(e).__name__}: {e}"
                r.listing = None
        r.seconds = t.seconds
        return r

    def _read(self, image, timeout, r):
        if not os.path.isfile(image):
            r.error = f"no such image: {image}"
            return
        m = Mount(image, rw=False, fusefat=self.fusefat)
        why = m.start()
        ans, hung = None, False
        if why is None:
            ans, why = m.request({"op": "walk"}, timeout)
            hung = why is not None
        unclean = m.stop(hung=hung)
        r.raw = "\n".join(m.notes) + "\n" + m.out_text
        if why:
            r.error = why
            return
        if unclean:
            r.complaints.append(unclean)
        out = []
        for path, kind, size, sha, err, *st in ans["entries"]:
            p = _text(path)
            # the meta key fusefat shows (stat): the modify time; no
            # attributes (its modes are fixed)
            # (fusefat's st_atime is its modify time: the access date is not shown)
            tm = {"mtime": st[0][0]} if st and st[0] else {}
            if kind == "dir":
                out.append(listing.entry(p, "dir", **tm))
            elif err:
                r.complaints.append(f"cannot read {p}: {err}")
                out.append(listing.entry(p, "file", size=None, **tm))
            else:
                e = listing.entry(p, "file", size=size, **tm)
                e["sha256"] = sha
                out.append(e)
        label = label_file_name(image)
        if label is not None:
            # named exception LABEL_AS_FILE: the volume label entry listed
            # as an empty file; dropped here, the evidence kept
            hit = [e for e in out if e["path"] == "/" + label and e["type"] == "file" and e["size"] == 0]
            if hit:
                out.remove(hit[0])
                r.extra["exceptions"] = [LABEL_AS_FILE]
                r.extra["label_as_file"] = hit[0]["path"]
        r.listing = sorted(out, key=lambda e: e["path"])

    @staticmethod
    def explain(ev):
        """RAW_83 / LONG_UTF8_CUT when every difference is either a file
        listed under its expected path (its name mapped by name_exception)
        whose contents fusefat could not read, the leaf a non-ASCII name
        stored bare (raw_83) or a long name cut to 255 UTF-8 bytes
        (readdir_cut); or an entry missing under such a directory, listed itself,
        that fusefat could not open: its output says "find file error
        fname: .../<raw_83 form>" (so nothing under it is listed).
        CASE_TWINS when every difference lies at or under one of two
        expected names fusefat folds to one (_twins_explain)."""
        if meta.explain_read(ev):
            return meta.MONTH_READ
        d = getattr(ev, "diff", None)
        if d is None or getattr(d, "ambiguous", None):
            return None
        if _twins_explain(d, getattr(ev, "entries", None)):
            return CASE_TWINS
        if d.extra or not (d.changed or d.missing):
            return None
        kinds = set()
        for exp, shown in d.changed:
            kind = _unopenable_as(exp, shown)
            if kind is None:
                return None
            kinds.add(kind)
        if d.missing:
            raw = getattr(getattr(ev, "rr", None), "raw", None) or ""
            refused = [m.group(1) for m in re.finditer(r"find file error fname: (.*)", raw)]
            gone = {e["path"] for e in d.missing}
            for e in d.missing:
                comps = e["path"].split("/")[1:]
                ups = ["/" + "/".join(comps[:i]) for i in range(1, len(comps))]
                if not any(_refused(p, refused) for p in ups if p not in gone):
                    return None
            kinds.add(RAW_83)
        return kinds.pop() if len(kinds) == 1 else sorted(kinds)

    @staticmethod
    def name_exception(expected_leaf, actual_leaf):
        """A bare 8.3 name shows as stored (upper case): the NT case byte is
        ignored; a non-ASCII one as its raw cp437 bytes."""
        from vfz.model import short_only
        if actual_leaf == expected_leaf.upper() and actual_leaf != expected_leaf \
                and short_only(expected_leaf, "winnt") and expected_leaf.isascii():
            return NT_CASE
        if not expected_leaf.isascii() and actual_leaf == raw_83(expected_leaf):
            return RAW_83
        if actual_leaf != expected_leaf and actual_leaf == readdir_cut(expected_leaf):
            return LONG_UTF8_CUT
        return None
