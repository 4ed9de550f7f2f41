"""The named exceptions of the npm fatfs package (jsfatfs) and their recognition from evidence: known_failure, explain_write, explain_read."""
import re
import struct

from vfz import listing, model, opscript
from vfz.fatimg import open_ro
from vfz.oracles import NamedException
from vfz.oracles.busybox import LABEL_NUL
from vfz.oracles.evidence import ev_get as _get, label_nul_shown
from vfz.oracles.jsfatfs.partial import PARTIAL, later_enospc
from vfz.oracles.jsfatfs.profile import PROFILE, comps_of as _comps, js_upper, longname, throws

NAME_THROWS = "jsfatfs-name-throws"
EOC_FF8 = "jsfatfs-eoc-ff8"
GAP_SIZE = "jsfatfs-gap-write-size"
ONE_FAT = "jsfatfs-one-fat"
FSINFO = "jsfatfs-fsinfo-stale"
DOTDOT = "jsfatfs-dotdot-root-cluster"
EMPTY_CLUSTER = "jsfatfs-empty-file-cluster"
TRIM = "jsfatfs-trim-lookup"
CASE_TWINS = "jsfatfs-case-twins"
ROOT_TERM = "jsfatfs-root-terminator"
EMPTY_NAME = "jsfatfs-empty-name"
MTOOLS_ASTRAL = "mtools-astral-read"      # mtools's own (vfz/oracles/mtools_exceptions.py)
LFN_CROSS = "fsck-v1-lfn-cross"           # fsck.fat's own (vfz/oracles/dosfsck/)
DIR_SPELLINGS = "jsfatfs-dir-spellings"
BAD_CHARS = "jsfatfs-bad-chars"
NT_CASE = "jsfatfs-ignores-nt-case"
# what the package lets into names: longname()'s and shortname()'s patterns
# write the range ' to _ (0x27-0x5F)
LONG_BAD = set('*:<>?\\')
SHORT_BAD = LONG_BAD | set("+,;=[]")

# what the server reports when longname() threw (helpers.js)
_THROW = re.compile(r"(uncaught|thrown): Error: (Invalid character .* in name\.|Name is too long\.)")
EOC8 = {12: 0xFF8, 16: 0xFFF8, 32: 0x0FFFFFF8}


def _names(path):
    """Every name of path the glue's walk gives the package (fs.stat),
    '..' folding one away after it was looked up: '.' and '..' left out."""
    return [c for c in path.split("/") if c and c not in (".", "..")]


def op_throws(op):
    """Does any path component of op make longname() throw?"""
    return any(throws(c) for k, a in zip(opscript.OPS[op.kind], op.args) if k == "s"
               for c in _names(a))


# ---------------------------------------------------------------- the image
def _core_clusters(image):
    """{upper-cased path: (first cluster, size, type, short-entry bytes)} of
    the core's listing."""
    from vfz.oracles.evidence import core_listing
    ls = core_listing(image) or []
    return {e["path"].upper(): (e.get("cluster", 0), e.get("size", 0), e["type"],
                                bytes.fromhex(e.get("short") or "")) for e in ls}


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
        if empty_component(op):
            return i, EMPTY_NAME
        if op.kind in ("create", "mkdir") and _dir_key(_comps(op.path)[:-1]) in respelled_dirs(ops[:i + 1]):
            return i, DIR_SPELLINGS
        if got[i] == "ENOSPC" and i < len(want) and want[i] == "ok" and \
                root_tail_exact(_get(ev, "image"), ops[:i], op):
            return i, ROOT_TERM
        if later_enospc(_get(ev, "image"), ops, got, want, i):
            return i, PARTIAL
        return None
    n = len(got)
    if wr.error and n < len(ops) and _THROW.search(wr.error) and op_throws(ops[n]):
        return n, NAME_THROWS
    return None


def empty_component(op):
    """Does a path of op have a component (not '.' or '..') that
    longname() empties: blanks or a BOM only (JavaScript trim), or dots
    only ('...')?"""
    return any(not longname(c) for k, a in zip(opscript.OPS[op.kind], op.args) if k == "s"
               for c in _names(a))


def root_tail_exact(image, before, op):
    """ROOT_TERM evidence: op makes an entry in a FAT12/16 root (the
    image's BPB) where, after the ops before it (the model of this
    profile, from a root holding only the image's volume label slots),
    a run of the slots the entry needs is free but no run one slot longer:
    the package wants a free slot after the entry for the end marker."""
    if op.kind not in ("create", "mkdir"):
        return False
    comps = _comps(op.path)
    if len(comps) != 1:
        return False
    try:
        fat = open_ro(image)
    except (OSError, ValueError, struct.error, TypeError):
        return False
    if fat.bits == 32 or not fat.rootent:
        return False
    labels = [i for i, (off, e) in enumerate(fat.entries(None))
              if e[0] not in (0, 0xE5) and e[11] != 0x0F and e[11] & 0x08]
    m = model.Model(PROFILE, "nodual", root=model.FixedRoot(fat.rootent, labels), rule="lfn")
    m.apply(before)
    if m.fixed is None:
        return False
    n = model.slots_needed(longname(comps[0]), "lfn")
    probe = model.FixedRoot(len(m.fixed.used))
    probe.used = list(m.fixed.used)
    if probe.alloc(n + 1) is not None:
        return False
    return probe.alloc(n) is not None


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


def read_ops(ev):
    """The ops whose image the reader read: the evidence names the whole
    script even when a known failure (jsfatfs-name-throws) had the readers
    check it cut; the cut is the longest prefix whose model tree is the
    expected one (ev.entries)."""
    ops = _get(ev, "ops") or []
    exp = _get(ev, "entries")
    if exp is None:
        return ops
    for k in range(len(ops), -1, -1):
        m = model.Model(PROFILE, "nodual", rule="lfn")
        m.apply(ops[:k])
        if m.entries() == exp:
            return ops[:k]
    return ops


def explain_write(ev):
    """A reader's divergence on an image the package wrote: fsck.fat's
    complaints (explain_checker), or a listing whose every difference one
    of these explains (their names, sorted): a file shown as the package's
    fs.write left it (GAP_SIZE: GapModel's entry); an expected name holding
    * : < > ? \\ shown with '_' for some of them (BAD_CHARS, mtools), its
    entry otherwise equal; an entry of a directory the script created in
    through two spellings (DIR_SPELLINGS)."""
    if _get(ev, "verdict") == "complains":
        return None         # a checker's complaints: vfz.oracles.jsfatfs.fsck.explain_checker
    d = _get(ev, "diff")
    if _get(ev, "verdict") != "differs" or d is None or d.ambiguous or d.ambiguous_counts:
        return None
    ops = read_ops(ev)
    names = set()
    gap = None
    respelled = respelled_dirs(ops)
    for exp, shown in d.changed:
        if gap is None:
            gap = gap_entries(ops)
        g = gap.get(exp["path"])
        if g is not None and g != exp and all(shown.get(k) == g.get(k) for k in ("type", "size", "sha256")
                                              if k in shown):
            names.add(GAP_SIZE)
        elif _in_respelled(exp["path"], respelled):
            names.add(DIR_SPELLINGS)
        else:
            return None
    extra = {e["path"]: e for e in d.extra}
    gone = []                   # missing entries explained: what lies under them goes with them
    astral = _get(ev, "reader") == "mtools"
    for e in sorted(d.missing, key=lambda e: len(e["path"])):
        if gap is None:
            gap = gap_entries(ops)
        u = _underscored(e, extra, astral, gap)
        if u is not None:
            del extra[u[0]]
            names.add(BAD_CHARS)
            if u[1]:
                names.add(MTOOLS_ASTRAL)
            if u[2]:
                names.add(GAP_SIZE)
        elif _in_respelled(e["path"], respelled) or listing.under(e["path"], gone):
            names.add(DIR_SPELLINGS)
            gone.append(e["path"])
        else:
            return None
    for p in extra:
        if _in_respelled(p, respelled):
            names.add(DIR_SPELLINGS)
        else:
            return None
    if d.label:             # the formatter's NUL-padded label (busybox-label-nul), or a finding
        if not label_nul_shown(_get(ev, "image"), d.label):
            return None
        names.add(LABEL_NUL)
    return sorted(names) or None


def _underscored(e, shown, astral=False, gap=None):
    """(the path of shown that is expected entry e's with '_' for some of
    its * : < > ? \\ (mtools), the entry otherwise equal -- or as GapModel
    (gap) has it: the third item says so; whether a character beyond the
    BMP was shown '__' too: astral, mtools's own exception
    mtools-astral-read), else None."""
    p = e["path"]
    if not any(ch in LONG_BAD for ch in p):
        return None
    g = (gap or {}).get(p)     # mtools shows a character beyond the BMP '__', not always (fab9a830e8d8)
    for wide in dict.fromkeys(["".join("__" if astral and ord(ch) > 0xFFFF else ch for ch in p), p]):
        for q, x in shown.items():
            if len(q) == len(wide) and q != p and \
                    all(a == b or (a in LONG_BAD and b == "_") for a, b in zip(wide, q)):
                if dict(x, path=p) == e:
                    return q, wide != p, False
                if g is not None and g != e and all(g.get(k) == v for k, v in x.items() if k != "path"):
                    return q, wide != p, True
    return None


def _dir_key(comps):
    return tuple(js_upper(longname(c)) for c in comps)


def respelled_dirs(ops):
    """{directory key: spellings} of the directories the ops create in
    (the parent of a create or mkdir) through more than one spelling of
    their path: the package caches a directory per path as given
    ('/H' and '/h' are two), each with its own idea of the next free slot.
    A key is the path as the package compares names (longname, upper case)."""
    seen = {}
    for op in ops:
        if op.kind not in ("create", "mkdir"):
            continue
        comps = _comps(op.path)[:-1]
        seen.setdefault(_dir_key(comps), set()).add(tuple(comps))
    return {k: v for k, v in seen.items() if len(v) > 1}


def _in_respelled(path, respelled):
    """Is path (an expected or shown entry) a child of such a directory?"""
    return _dir_key(_comps(path)[:-1]) in respelled


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
        DIR_SPELLINGS, "jsfatfs", "writer",
        "the package caches a directory per path as given: a directory reached through two "
        "spellings ('/h' and '/H', which its own lookup takes for one) is two cached objects, each "
        "with its own idea of where the next entry goes, so a create through one overwrites an "
        "entry made through the other (its clusters orphaned: fsck.fat 'Reclaimed'), and a create "
        "through one does not see a name made through the other (no EEXIST). Minimised: mkdir "
        "\"/h\", create \"/H/x\", create \"/h/y\", create \"/H/a\": /h/y is lost",
        "the first op the package answered otherwise creates in a directory the script created in "
        "through another spelling (known_failure); every entry a reader shows otherwise lies in "
        "such a directory, fsck.fat's 'Reclaimed' where one exists (explain_write)", bug=BUG),
    NamedException(
        EMPTY_NAME, "jsfatfs", "writer",
        "a path component that longname() empties (blanks or a BOM only, JavaScript trim; dots "
        "only) is not refused: as the leaf of a create or mkdir in a subdirectory the package "
        "writes an entry with an empty name -- short name '@' and NULs, no long name, attribute "
        "0 even for mkdir (fsck.fat 'Bad short file name (@)'; mtools lists '@') -- and as a "
        "directory on the way it resolves to the directory holding it ('/\ufeff/x' is '/x') or "
        "not at all ('/a/ /\u2028/y': ENOENT). Linux refuses such a leaf (EINVAL for '...') or "
        "makes the name; the model answers EEXIST/ENOENT",
        "the first op the package answered otherwise than the model has a path component "
        "(not '.' or '..') that longname() empties (known_failure; the readers check the script "
        "cut there)", bug=BUG),
    NamedException(
        ROOT_TERM, "jsfatfs", "writer",
        "dir.js addFile, placing a new entry at the end of a directory (entryInfo.lastEntry), "
        "writes one more slot after it as the end marker (entries.push({})), so where a FAT12/16 "
        "root has exactly the entry's slots left the write runs past the root: ENOSPC; Linux fills "
        "them (a full directory needs no marker). Measured: one 3-slot name, then 2-slot names into a 512-slot "
        "root (the label in one): Linux and the model take 254 of them, the package 253",
        "the first op the package answered otherwise is ENOSPC for a create or mkdir in a FAT12/16 "
        "root where the model, before that op, has a free run of the entry's slots but none one "
        "slot longer (known_failure; the readers check the script cut there)", bug=BUG),
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
        "the FAT copies differ, and wherever they do the second copy is free, or ends a chain the "
        "first links on to a cluster free in the second (a chain grown; explain_write)",
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
    NamedException(
        NT_CASE, "jsfatfs", "reader",
        "dir.js shows a bare 8.3 entry as stored, upper case: the NT case byte (0x08 / 0x10 of "
        "byte 12) is ignored ('TODO: lowercase bits', dir.js line 91 of 0.10.8); 'big.bin' "
        "written by core-v3 (winnt rule: BIG     BIN + 0x18) lists as BIG.BIN with its contents, "
        "as Linux's shortname=win95 display would",
        "the shown leaf is the expected one upper-cased, an ASCII name that fits 8.3 under the "
        "winnt rule (stored bare with case flags; JsfatfsReader.name_exception)"),
]
