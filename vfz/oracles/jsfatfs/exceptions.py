"""The named exceptions of the npm fatfs package (jsfatfs) and their recognition from evidence: known_failure, explain_write, explain_read."""
import re
import struct

from vfz import listing, model, opscript
from vfz.fatimg import open_ro
from vfz.oracles import NamedException
from vfz.oracles.jsfatfs.profile import PROFILE, js_upper, longname, throws

NAME_THROWS = "jsfatfs-name-throws"
EOC_FF8 = "jsfatfs-eoc-ff8"
GAP_SIZE = "jsfatfs-gap-write-size"
ONE_FAT = "jsfatfs-one-fat"
FSINFO = "jsfatfs-fsinfo-stale"
DOTDOT = "jsfatfs-dotdot-root-cluster"
EMPTY_CLUSTER = "jsfatfs-empty-file-cluster"
TRIM = "jsfatfs-trim-lookup"
CASE_TWINS = "jsfatfs-case-twins"
BAD_CHARS = "jsfatfs-bad-chars"
# what the package lets into names: longname()'s and shortname()'s patterns
# write the range ' to _ (0x27-0x5F)
LONG_BAD = set('*:<>?\\')
SHORT_BAD = LONG_BAD | set("+,;=[]")

# what the server reports when longname() threw (helpers.js)
_THROW = re.compile(r"(uncaught|thrown): Error: (Invalid character .* in name\.|Name is too long\.)")
EOC8 = {12: 0xFF8, 16: 0xFFF8, 32: 0x0FFFFFF8}


def _get(ev, k):
    return ev.get(k) if isinstance(ev, dict) else getattr(ev, k, None)


def _comps(path):
    return [c for c in path.split("/") if c and c not in (".", "..")]


def op_throws(op):
    """Does any path component of op make longname() throw?"""
    return any(throws(c) for k, a in zip(opscript.OPS[op.kind], op.args) if k == "s"
               for c in _comps(a))


# ---------------------------------------------------------------- the image
def _core_clusters(image):
    """{upper-cased path: (first cluster, size, type)} of the core's listing."""
    from vfz.oracles.evidence import core_listing
    ls = core_listing(image) or []
    return {e["path"].upper(): (e.get("cluster", 0), e.get("size", 0), e["type"]) for e in ls}


def ends_ff8(fat, first):
    """Does the chain from cluster first end in exactly 0x?FF8, which the
    package reads as 'reserved' (vol.js: EOF only when the value is
    greater than prefix + 0xF8)?"""
    ch = fat.chain(first) if first else []
    return bool(ch) and fat.get(ch[-1]) == EOC8[fat.bits]


def _dir_cluster(fat, clusters, path):
    """First cluster of directory path in the image (the FAT32 root's from
    the BPB), or None (a fixed root, or not found)."""
    comps = _comps(path)
    if not comps:
        return fat.root_cluster or None
    c = clusters.get(("/" + "/".join(comps)).upper())
    return c[0] if c and c[2] == "dir" else None


def eoc_ff8_at(image, op):
    """Evidence of EOC_FF8 for an op answered EIO: the directory it looks
    in (or the file it writes) has a chain ending in 0x?FF8 (mkfs.fat ends
    the FAT32 root that way)."""
    try:
        fat = open_ro(image)
        clusters = _core_clusters(image)
    except (OSError, ValueError, struct.error):
        return False
    path = "/" + "/".join(_comps(op.path))
    cands = [path.rpartition("/")[0], path]
    for p in cands:
        c = _dir_cluster(fat, clusters, p) if p != path or op.kind != "write" else \
            (clusters.get(p.upper()) or (0,))[0]
        if c and ends_ff8(fat, c):
            return True
    return False


# ---------------------------------------------------------------- writer
def known_failure(ev):
    """The first op of the script the package answered otherwise than the
    model is EIO in a directory whose chain ends in 0x?FF8 (EOC_FF8), or
    the package threw at an op whose path has a name longname() refuses
    (NAME_THROWS: the server reports the throw with the results before it).
    -> (index of that op, name); the readers check the script cut there."""
    ops, wr, want = _get(ev, "ops") or [], _get(ev, "wr"), _get(ev, "results") or []
    if wr is None:
        return None
    got = wr.results or []
    for i, op in enumerate(ops[:len(got)]):
        if i < len(want) and got[i] == want[i]:
            continue
        if got[i] == "EIO" and eoc_ff8_at(_get(ev, "image"), op):
            return i, EOC_FF8
        return None
    n = len(got)
    if wr.error and n < len(ops) and _THROW.search(wr.error) and op_throws(ops[n]):
        return n, NAME_THROWS
    return None


class GapModel(model.Model):
    """The model with the package's fs.write: a write past the end pads the
    gap with zeros and writes, but records the size as old size + the
    bytes asked for (index.js: _fd.pos = _pos + len after _pos was moved
    back to the old end), so the file shows its first old+len bytes."""

    def _op_write(self, path, off, size, seed):
        node, err = self._walk(self._split(path))
        old = len(node.data) if node is not None and not err and not node.is_dir else None
        r = super()._op_write(path, off, size, seed)
        if r == "ok" and old is not None and size and off > old:
            del node.data[old + size:]
        return r


def gap_entries(ops):
    """{path: entry} the package makes of ops, by GapModel; and whether a
    write past the end was among them."""
    m = GapModel(PROFILE, "nodual", rule="lfn")
    m.apply(ops)
    return {e["path"]: e for e in m.entries()}


def _gap_holds(ev):
    d = _get(ev, "diff")
    if d is None or d.missing or d.extra or d.ambiguous or not d.changed:
        return False
    gap = gap_entries(_get(ev, "ops") or [])
    for exp, shown in d.changed:
        g = gap.get(exp["path"])
        if g is None or g == exp:
            return False
        if any(k in shown and shown[k] != g.get(k) for k in ("type", "size", "sha256")):
            return False
    return True


_FSCK = [   # fsck.fat message -> exception, when its evidence holds
    (re.compile(r"FATs differ"), ONE_FAT),
    (re.compile(r"^Using first FAT\.$"), ONE_FAT),
    (re.compile(r"Free cluster summary wrong \((\d+) vs\. really (\d+)\)"), FSINFO),
    (re.compile(r"Invalid '\.\.' entry in the second slot"), DOTDOT),
    (re.compile(r"File size is 0 bytes, cluster chain length is > 0 bytes"), EMPTY_CLUSTER),
    (re.compile(r"Bad short file name \((.*)\)\."), BAD_CHARS),
    (re.compile(r"File size is (\d+) bytes, cluster chain length is > (\d+) bytes"), GAP_SIZE),
]


def _fsck_holds(name, m, c, fat, img, clusters, ops):
    if name == ONE_FAT:
        # every FAT entry where the copies differ is free in the second:
        # the package allocated in the first only
        if fat.nfats < 2:
            return False
        size = fat.spf * fat.bps
        a = fat.b[fat.fat_off:fat.fat_off + size]
        b = fat.b[fat.fat_off + size:fat.fat_off + 2 * size]
        if a == b:
            return False
        width = {12: None, 16: 2, 32: 4}[fat.bits]
        if width is None:
            return True         # FAT12 entries straddle bytes: the copies differing is the evidence
        return all(b[i:i + width] == bytes(width) for i in range(0, size, width)
                   if a[i:i + width] != b[i:i + width])
    if name == FSINFO:
        if fat.bits != 32:
            return False
        sec = struct.unpack_from("<H", fat.b, 48)[0]
        stored = struct.unpack_from("<I", fat.b, sec * fat.bps + 488)[0]
        return int(m.group(1)) == stored and stored != int(m.group(2))
    path = c.get("path")
    if not path or not path.startswith("/"):
        return False
    ent = clusters.get(path.upper())
    if name == DOTDOT:
        if fat.bits != 32 or len(_comps(path)) != 1 or not ent or ent[2] != "dir":
            return False
        slots = fat.entries(ent[0])
        return len(slots) > 1 and slots[1][1][:2] == b".." and \
            (struct.unpack_from("<H", slots[1][1], 26)[0] | struct.unpack_from("<H", slots[1][1], 20)[0] << 16) \
            == fat.root_cluster
    if name == EMPTY_CLUSTER:
        if ent is None and re.fullmatch(r"FSCK\d{4}\.\d{3}", path.rpartition("/")[2]):
            # fsck.fat renamed a bad short name first (BAD_CHARS): any empty
            # file with a cluster in that directory
            par = path.rpartition("/")[0].upper()
            return any(p.rpartition("/")[0] == par and e[2] == "file" and e[1] == 0 and e[0]
                       for p, e in clusters.items())
        return bool(ent) and ent[2] == "file" and ent[1] == 0 and ent[0] != 0
    if name == BAD_CHARS:
        return bool(ent) and any(ch in SHORT_BAD for ch in m.group(1))
    if name == GAP_SIZE:
        g = gap_entries(ops).get(path)
        return bool(ent) and g is not None and g.get("size") == int(m.group(1)) == ent[1]
    return False


def explain_checker(ev):
    """fsck.fat's complaints about an image the package wrote, each one a
    catalogued defect whose evidence is in the image -> the sorted names,
    else None (one complaint unexplained, or the repair probe lost data)."""
    rr = _get(ev, "rr")
    cs = (rr.extra.get("complaints") if rr is not None else None) or []
    rep = (rr.extra.get("repair") or {}) if rr is not None else {}
    if not cs or rep.get("data_lost") or rep.get("gave_up"):
        return None
    try:
        fat = open_ro(_get(ev, "image"))
        clusters = _core_clusters(_get(ev, "image"))
    except (OSError, ValueError, struct.error, TypeError):
        return None
    names = set()
    for c in cs:
        for rx, name in _FSCK:
            m = rx.search(c.get("message", ""))
            if m and _fsck_holds(name, m, c, fat, _get(ev, "image"), clusters, _get(ev, "ops") or []):
                names.add(name)
                break
        else:
            return None
    return sorted(names)


def explain_write(ev):
    """A reader's divergence on an image the package wrote: fsck.fat's
    complaints (explain_checker), or files shown as the package's fs.write
    left them (GAP_SIZE: every changed file is GapModel's)."""
    if _get(ev, "verdict") == "complains":
        return explain_checker(ev)
    if _get(ev, "verdict") == "differs":
        if _gap_holds(ev):
            return GAP_SIZE
        if _shown_underscored(ev):
            return BAD_CHARS
    return None


def _shown_underscored(ev):
    """Every difference is an expected name holding * : < > ? \\ that the
    reader shows with '_' for them (mtools), the rest of the entry equal."""
    d = _get(ev, "diff")
    if d is None or d.changed or d.ambiguous or not d.missing or len(d.missing) != len(d.extra):
        return False
    shown = {e["path"]: e for e in d.extra}
    for e in d.missing:
        if not any(ch in LONG_BAD for ch in e["path"]):
            return False
        u = "".join("_" if ch in LONG_BAD else ch for ch in e["path"])
        if u not in shown or dict(shown[u], path=e["path"]) != e:
            return False
    return True


# ---------------------------------------------------------------- reader
def _twins(entries):
    """Paths of expected entries another entry of the same directory
    equals under the package's comparison (longname, toUpperCase)."""
    return listing.fold_twins(entries or (), lambda n: js_upper(longname(n)))


def explain_read(ev):
    """The package's reading of an image, from evidence: it threw on an
    expected name longname() refuses (NAME_THROWS: DEL from Linux); a
    directory it cannot read ends in 0x?FF8 (EOC_FF8); every other
    difference lies at or under a name longname() changes (TRIM: leading
    or trailing blanks, found as another name or not at all) or one of two
    names it folds together (CASE_TWINS)."""
    rr, entries = _get(ev, "rr"), _get(ev, "entries") or []
    if rr is not None and rr.error:
        if _THROW.search(rr.error) and any(throws(c) for e in entries for c in _comps(e["path"])):
            return NAME_THROWS
        return None
    names = set()
    twins = _twins(entries)
    ff8_dirs = []
    for c in (rr.complaints if rr is not None else ()):
        head, _, code = c.rpartition(": ")
        if head.startswith("readdir ") and code == "IO":
            p = head[len("readdir "):]
            try:
                fat = open_ro(_get(ev, "image"))
                cl = _dir_cluster(fat, _core_clusters(_get(ev, "image")), p)
            except (OSError, ValueError, struct.error, TypeError):
                return None
            if not cl or not ends_ff8(fat, cl):
                return None
            names.add(EOC_FF8)
            ff8_dirs.append(p if p != "/" else "")
        elif head.startswith(("stat ", "readFile ")):
            p = head.partition(" ")[2]
            if any(longname(x) != x for x in _comps(p)):
                names.add(TRIM)
            elif listing.under(p, twins):
                names.add(CASE_TWINS)
            else:
                return None
        elif ": read " in c and listing.under(c.partition(": read ")[0], twins):
            names.add(CASE_TWINS)
        else:
            return None
    d = _get(ev, "diff")
    if d is not None:
        if d.ambiguous or d.ambiguous_counts:
            return None
        for e in d.missing + [a for a, _ in d.changed] + d.extra:
            p = e["path"]
            if any(p.startswith(q + "/") for q in ff8_dirs):
                names.add(EOC_FF8)
            elif any(longname(x) != x for x in _comps(p)):
                names.add(TRIM)
            elif listing.under(p, twins):
                names.add(CASE_TWINS)
            else:
                return None
    return sorted(names) or None


BUG = "jsfatfs"          # the anchor of the package's entry in reports/bugs.md

EXCEPTIONS = [
    NamedException(
        NAME_THROWS, "jsfatfs", "writer",
        "helpers.js longname() throws (not an error of the call: the throw escapes the package's "
        "lock, so the instance never answers again) for a path component holding a unit below "
        "0x20, '\"', '|' or DEL, or longer than 255 units once trimmed; its pattern's range ' to _ "
        "lets * : < > ? \\ through. Linux refuses all but DEL with EINVAL and makes names with DEL, "
        "which the package then cannot list either (the reader side)",
        "the server reports the uncaught 'Invalid character ... in name.' / 'Name is too long.' "
        "after the ops before it; that op's (known_failure), or an expected entry's (explain_read), "
        "path has such a component", bug=BUG),
    NamedException(
        EOC_FF8, "jsfatfs", "writer",
        "vol.js fetchFromFAT takes a FAT value for end of chain only above prefix + 0xF8, so a "
        "chain that ends in exactly 0x?FF8 -- the FAT32 root as mkfs.fat makes it, chains fsck.fat "
        "repaired -- reads as 'reserved': EIO once a directory must be read or grown past that "
        "cluster (the 8th create in the root of a 512-byte-cluster FAT32 volume); the entries of "
        "the failed create stay written, and the next create in that directory crashes the "
        "process (TypeError in index.js, no entry to extend)",
        "the first op the package answered otherwise is EIO and the image's chain of its "
        "directory ends in 0x?FF8 (known_failure); a reader's 'readdir P: IO' on such a "
        "directory (explain_read)", bug=BUG),
    NamedException(
        GAP_SIZE, "jsfatfs", "writer",
        "fs.write at an offset past the end zero-fills the gap and writes, but sets the file's "
        "size to old size + bytes written instead of offset + bytes written: the file shows its "
        "old bytes, then zeros, cut short; the clusters past the recorded size stay allocated",
        "every file a reader shows otherwise is what GapModel (the model with that fs.write) "
        "makes of the script; fsck.fat's size complaint names that size (explain_write)", bug=BUG),
    NamedException(
        ONE_FAT, "jsfatfs", "writer",
        "the package writes the first FAT only (vol.js: 'how should we handle redundant FATs?'): "
        "fsck.fat -n says 'FATs differ but appear to be intact' on every volume it allocated on",
        "the FAT copies differ, and wherever they do the second copy is free (explain_write)",
        bug=BUG),
    NamedException(
        FSINFO, "jsfatfs", "writer",
        "the package never updates the FAT32 FSInfo free count: fsck.fat -n says 'Free cluster "
        "summary wrong'",
        "FAT32, the FSInfo count is the one fsck.fat calls wrong and not the FAT's (explain_write)",
        bug=BUG),
    NamedException(
        DOTDOT, "jsfatfs", "writer",
        "dir.js init writes the parent's first cluster into a new directory's '..': for a "
        "directory in the FAT32 root that is the root's cluster (2), where the FAT spec and "
        "fsck.fat want 0",
        "FAT32, the directory is in the root and its '..' holds the root cluster (explain_write)",
        bug=BUG),
    NamedException(
        EMPTY_CLUSTER, "jsfatfs", "writer",
        "dir.js addFile allocates a cluster for every new file, also an empty one: fsck.fat -n "
        "says 'File size is 0 bytes, cluster chain length is > 0 bytes' (Linux gives an empty "
        "file cluster 0)",
        "the file's entry has size 0 and a first cluster (explain_write)", bug=BUG),
    NamedException(
        BAD_CHARS, "jsfatfs", "writer",
        "helpers.js writes its character classes with the range ' to _ (0x27-0x5F), so longname() "
        "lets * : < > ? \\ into long names (Linux: EINVAL) and shortname() lets them and + , ; = [ ] "
        "into 8.3 names unreplaced: fsck.fat -n calls the short name bad, mtools shows '_' for them "
        "in the long name",
        "fsck.fat's bad short name holds one of those characters; a reader shows each such expected "
        "name with '_' for them and the entry otherwise equal (explain_write)", bug=BUG),
    NamedException(
        TRIM, "jsfatfs", "reader",
        "every path component goes through longname(), which trims blanks at both ends (JavaScript "
        "trim: space, tab, U+00A0, U+3000 ...): a name Linux made with a leading blank is listed by "
        "fs.readdir but fs.stat finds another entry or nothing; the writer stores such names "
        "trimmed (modelled: profile knob store)",
        "every difference lies at or under a component longname() changes (explain_read)",
        bug=BUG),
    NamedException(
        CASE_TWINS, "jsfatfs", "reader",
        "findInDirectory compares names upper-cased with JavaScript's toUpperCase (all of "
        "Unicode, 'ß' is 'SS'), Linux with ASCII only: of two names Linux keeps apart ('é' and "
        "'É'), fs.stat finds the first for both; the writer's EEXIST for them is modelled "
        "(profile knob lookup)",
        "every difference lies at or under one of two expected names equal under that folding "
        "(explain_read)"),
]
