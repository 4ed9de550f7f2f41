"""The mtools oracle's named exceptions (mtools 4.0.32) and the evidence that recognises each.

Reader side: how the mtools reader shows names (astral characters,
non-ASCII lower case), and its failure on names over 255 UTF-8 bytes.
Writer side: how the mtools writer spells and refuses names, and its
known failures, which the campaign files as one finding each and after
which the readers check the script cut before the failing op (the alias
model behind mtools-nul-alias is aliases.py). Then the catalogue.
"""
import re
from collections import Counter

from vfz import model, oracles
from vfz.oracles import NamedException
from vfz.oracles.mtools.aliases import nul_alias_in_image, nul_alias_op


MTOOLS_LONG_UTF8 = "mtools-long-utf8"
MTOOLS_NO_DIR_SLOTS = "mtools-no-dir-slots"
MTOOLS_TRAILING_DOT = "mtools-trailing-dot-unopenable"
MTOOLS_MMOVE_GROW = "mtools-mmove-grow-abort"
MTOOLS_ASTRAL_TRUNCATED = "mtools-astral-truncated"
MTOOLS_NUL_ALIAS = "mtools-nul-alias"
ASTRAL_AMBIGUOUS = "mtools-astral-ambiguous"
MTOOLS_ALIAS_LOOKUP = "mtools-alias-lookup"
# the mtools writer's log line for a lookup it answered through an 8.3
# alias ("# line N: found through its 8.3 alias 'LONGFI~1.TXT' -> '/x'")
ALIAS_NOTE = "found through its 8.3 alias"


# ---------------------------------------------------------------- reader side
def reader_name_exception(exp, act):
    if exp == act:
        return None
    if act == model._upper_nonascii(exp):
        return "mtools-lcase-nonascii"
    if act in (model.mtools_shown(exp), model.mtools_shown(model._upper_nonascii(exp))):
        return "mtools-astral-read"
    return None


def split_ambiguous(expected, actual, used):
    """Names that differ only in characters outside the BMP look the same
    to mtools ('/😀x' and '/𠀋x' are both '/__x'): it lists them under one
    name and cannot extract either by path. Such entries (and whatever
    lies below them) are compared by visible path and type only; the rest
    goes through the normal comparison. -> (expected rest, actual rest,
    None or ([(sign, path, type)], counts differ))."""
    exp_vis = [(model.mtools_shown(e["path"]), e) for e in expected]
    count = Counter(v for v, _ in exp_vis)
    amb = {v for v, n in count.items() if n > 1}
    if not amb:
        return expected, actual, None

    def inside(vis):
        return any(vis == a or vis.startswith(a + "/") for a in amb)

    act_vis = [(model.mtools_shown(e["path"]), e) for e in actual]
    exp_rest = [e for v, e in exp_vis if not inside(v)]
    act_rest = [e for v, e in act_vis if not inside(v)]
    want = sorted((v, e["type"]) for v, e in exp_vis if inside(v))
    got = sorted((v, e["type"]) for v, e in act_vis if inside(v))
    used[ASTRAL_AMBIGUOUS] += len(want)
    if want == got:
        return exp_rest, act_rest, None
    rows = [("-", p, t) for p, t in want if (p, t) not in got] + \
        [("+", p, t) for p, t in got if (p, t) not in want]
    return exp_rest, act_rest, (rows, True)


def reader_long_names(rr, entries):
    """The mtools reader failed to copy the tree to the host because of a
    name over 255 UTF-8 bytes as mtools shows it (the host refuses it):
    mcopy died of stack smashing, or every complaint is mcopy's 'File name
    too long'; and the tree holds such a name (exception mtools-long-utf8)."""
    raw = rr.raw or ""
    if "stack smashing detected" not in raw and not (
            rr.complaints and all(c.startswith("mcopy exit") and "File name too long" in c
                                  for c in rr.complaints)):
        return False
    return any(any(model.mtools_too_long(model.mtools_shown(c))
                   for c in e["path"].split("/")) for e in entries or ())


def reader_explain(ev):
    if ev.verdict in ("failed", "complains") and reader_long_names(ev.rr, ev.entries):
        return MTOOLS_LONG_UTF8, "failed"
    if ev.verdict == "differs" and label_nul_shown(ev):
        return LABEL_NUL
    return None


LABEL_NUL = "mtools-label-nul"


def label_nul_shown(ev):
    """LABEL_NUL: the whole difference is the volume label, expected with NULs after its
    text (BusyBox's, evidence.label_nul_padded on the image), and mtools shows that text
    without them (mdir stops at the first NUL; minfo prints the 11 bytes, NULs as nothing,
    padded with spaces on the left)."""
    from vfz.oracles.evidence import label_nul_padded
    d = ev.diff
    if d is None or not d.label or d.missing or d.extra or d.changed or d.ambiguous or d.ambiguous_counts:
        return False
    if not ev.image or not label_nul_padded(ev.image):
        return False
    return all(e and "\0" in e and a is not None and a.strip(" ") == e.replace("\0", "").strip(" ")
               for _, e, a in d.label)


# ---------------------------------------------------------------- writer side
def writer_name_exception(exp, act):
    if exp == act:
        return None
    if act == exp.upper() and model.short_only(exp.upper()):
        return "mtools-mmove-upcase"
    if act.endswith(".") and (act.rstrip(" .") == exp.rstrip(" .")
                              or model.fold(act.rstrip(" ")) == model.fold(exp.rstrip(" "))):
        return "mtools-trailing-dots"
    if act == "".join(chr(ord(c) & 0xFFFF) for c in exp):
        return MTOOLS_ASTRAL_TRUNCATED
    if act.lower() == exp.lower() and not exp.isascii() and model.fold(act) != model.fold(exp):
        return "mtools-nonascii-case-clash"
    return None


def result_exception(op, exp, act):
    target = op.args[1] if op.kind == "rename" else op.args[0]
    leaf = ([c for c in target.split("/") if c] or [""])[-1]
    if op.kind in ("create", "mkdir", "rename") and act == "EINVAL" and exp == "ok":
        if model._mtools_reserved(leaf):
            return "mtools-reserved-names"
        if op.kind == "rename":
            src = ([c for c in op.args[0].split("/") if c] or [""])[-1]
            # the spelling on disk may differ from both (rename "/ba" "/ba"
            # of "BA"): the writer calls mren only when it does
            if model.fold(src) == model.fold(leaf):
                return "mtools-case-rename"
            if model.strip_dots(src).lower() == model.strip_dots(leaf).lower():
                return "mtools-nonascii-case-clash"
    if act == "EEXIST" and exp == "ok" and op.kind in ("create", "mkdir") and not leaf.isascii():
        return "mtools-nonascii-case-clash"
    return None


def op_raw(raw, line):
    """The part of the mtools writer's log for the op on line: its mtools
    commands and their output, up to the writer's '# line N:' note."""
    text = "\n" + (raw or "")
    end = text.find(f"\n# line {line}: ")
    if end < 0:
        return ""
    start = text.rfind("\n# line ", 0, end)
    start = text.find("\n", start + 1) if start >= 0 else 0
    return text[start:end]


def _parent_is_root(path):
    comps = []
    for c in [c for c in path.split("/") if c][:-1]:
        if c == "..":
            if comps:
                comps.pop()
        elif c != ".":
            comps.append(c)
    return not comps


def long_names_explain(img, entries):
    """True when the core's listing of img differs from the model's
    entries only in paths with a component over 255 UTF-8 bytes (lost, or
    shown under another name: no more extra entries than lost ones)."""
    r = oracles.get_reader("core").read(img)
    if r.error or r.listing is None:
        return False
    exp = {(e["path"], e["type"]) for e in entries}
    act = {(e["path"], e["type"]) for e in r.listing}
    lost, extra = exp - act, act - exp
    return bool(lost) and len(extra) <= len(lost) and all(
        any(model.mtools_too_long(c) for c in p.split("/")) for p, _ in lost)


def alias_lookup_op(ops, raw):
    """Index of the first of ops the mtools writer answered through an
    entry's 8.3 alias (its ALIAS_NOTE in raw), else None."""
    lines = {int(m.group(1)) for m in re.finditer(
        r"^# line (\d+): " + re.escape(ALIAS_NOTE) + " ", raw or "", re.M)}
    return next((i for i, op in enumerate(ops) if op.line in lines), None)


def known_failure(ev):
    """A known failure of the mtools writer behind its first divergence ->
    (index of the op it starts at, kind), else None. ev.bad: index of the
    first op whose result differs (None: all equal). Evidence only:
      mtools-no-dir-slots: that op's own mtools output says 'No directory
        slots', the model expects ok, and its directory can grow (not the
        FAT12/16 root);
      mtools-mmove-grow-abort: that op is a rename the model expects to
        succeed and its mmove/mren died of dirCache.c's freeDirCacheRange
        assertion (EIO);
      mtools-alias-lookup: an op at or before it found an entry through
        its 8.3 alias (the writer's own note: a name the model, which does
        not predict mtools' aliases, takes for a new one);
      mtools-long-utf8: an op at or before it names a component over 255
        UTF-8 bytes (model.mtools_long_names) and the divergence is the
        writer's failure, a result on such an op, or, with no result
        divergence before it, the image's names (core listing)."""
    ops, expected, wr, bad = ev.ops, ev.results, ev.wr, ev.bad
    found = []
    if bad is not None and not wr.error:
        op, a, e = ops[bad], wr.results[bad] if bad < len(wr.results) else None, expected[bad]
        if op.kind in ("create", "mkdir", "rename") and e == "ok" and a == "EINVAL" \
                and "No directory slots" in op_raw(wr.raw, op.line):
            target = op.args[1] if op.kind == "rename" else op.args[0]
            if ev.fat_bits == 32 or not _parent_is_root(target):
                found.append((bad, MTOOLS_NO_DIR_SLOTS))
        if op.kind == "rename" and e == "ok" and a == "EIO" and \
                "freeDirCacheRange: Assertion" in op_raw(wr.raw, op.line):
            found.append((bad, MTOOLS_MMOVE_GROW))
    at = next((i for i, op in enumerate(ops) if model.mtools_long_names(op)), None)
    if at is not None:
        if wr.error:
            if at <= len(wr.results):
                found.append((at, MTOOLS_LONG_UTF8))
        elif bad is not None and bad >= at and model.mtools_long_names(ops[bad]):
            found.append((at, MTOOLS_LONG_UTF8))
        elif (bad is None or bad > at) and ev.image and long_names_explain(ev.image, ev.entries):
            found.append((at, MTOOLS_LONG_UTF8))
    last = len(wr.results) if wr.error else (len(ops) if bad is None else bad + 1)
    at = alias_lookup_op(ops[:last], wr.raw)
    if at is not None:
        found.append((at, MTOOLS_ALIAS_LOOKUP))
    at = nul_alias_op(ops[:last])
    if at is not None and ev.image and nul_alias_in_image(ev.image):
        found.append((at, MTOOLS_NUL_ALIAS))
    # the earliest: what the writer did from there on is not the model's
    return min(found) if found else None


def trailing_dot_explains(ev):
    """True when a reader's listing diff is only entries whose name ends
    in '.' listed without size or contents (Linux lists them but cannot
    open them) and entries under such a directory missing (exception
    mtools-trailing-dot-unopenable). The reader's own entries give the
    dots where the diff shows a name as the model spells it (a named
    writer exception mapped 'C.O.' to 'C.O')."""
    d = ev.diff
    if d is None or d.ambiguous or d.ambiguous_counts or ev.lines:
        return False
    exp, act = d.expected_side(), d.shown_side()
    if not exp or set(act) - set(exp):
        return False

    def comps(p):
        return [c for c in (p or "").split("/") if c]

    def dotted(cs):
        return any(c.endswith(".") and c not in (".", "..") for c in cs)

    def key(cs):
        return "/".join(c.rstrip(".").upper() for c in cs)
    # dotted entries as the reader listed them, unopened (no size)
    shown = {key(comps(e.get("path"))) for e in ev.rr.listing or ()
             if dotted(comps(e.get("path"))[-1:]) and "size" not in e and "sha256" not in e}

    def unopened(cs):
        return dotted(cs[-1:]) or key(cs) in shown
    for p, e in exp.items():
        cs = comps(p)
        if p in act:
            a = act[p]
            if a.get("type") != e.get("type") or "size" in a or "sha256" in a or \
                    not any(unopened(cs[:i]) for i in range(1, len(cs) + 1)):
                return False
        elif not any(unopened(cs[:i]) for i in range(1, len(cs))):
            return False
    return True


def check_kind(complaint, ops):
    """The named exception behind a structural checker's complaint
    ('longname-invalid: ...', as `vfat check` words it) about an image the
    mtools writer wrote, else None: a long name ending in '.' (mtools keeps
    trailing dots; Linux strips them before every lookup:
    mtools-trailing-dot-unopenable), or a character invalid in long names
    where the script names a character outside the BMP whose low 16 bits
    are one (mtools-astral-truncated: U+2000B is written as U+000B)."""
    if not complaint.startswith("longname-invalid: "):
        return None
    if complaint.endswith("long name ends with '.', which Linux strips before every lookup"):
        return MTOOLS_TRAILING_DOT
    if complaint.endswith("long name holds a character invalid in long names"):
        for op in ops:
            for a in op.args:
                if isinstance(a, str) and any(
                        ord(c) > 0xFFFF and model.check_new_name(chr(ord(c) & 0xFFFF)) == "EINVAL"
                        for c in a):
                    return MTOOLS_ASTRAL_TRUNCATED
    return None


def writer_explain(ev):
    """A reader divergence on an image the mtools writer wrote, explained
    by one of the writer's named exceptions: a listing diff of unopenable
    trailing-dot names; or checker complaints that are each one of the
    writer's kinds (-> a list of kinds, one finding each)."""
    if ev.verdict == "differs" and trailing_dot_explains(ev):
        return MTOOLS_TRAILING_DOT
    if ev.verdict == "complains" and ev.rr.complaints:
        known = {check_kind(c, ev.ops) for c in ev.rr.complaints}
        if None not in known:
            return sorted(known)
    return None


# ---------------------------------------------------------------- catalogue
_R, _W = "reader", "writer"
READAHEAD = "mtools-readahead-128k"


def io_exception(o, head, declared, size):
    """mtools' buffered reads past the volume on clean ones (EXCEPTIONS)."""
    if o.kind == "read" and o.region == "past volume" and declared and o.offset < declared \
            and o.length <= 131072 and o.offset % 131072 == 0:
        return READAHEAD
    return None


EXCEPTIONS = [
    NamedException(LABEL_NUL, "mtools", _R,
                   "mtools 4.0.32 shows a volume label padded with NULs (BusyBox mkdosfs writes "
                   "'VFATFUZZ\\0\\0\\0', busybox-label-nul) by its text: mdir's 'Volume in drive : "
                   "is VFATFUZZ' stops at the first NUL, minfo's disk label=\"   VFATFUZZ\" prints "
                   "the NULs as nothing (measured on fat32:34077184@busybox-mkdosfs, campaign seed "
                   "2606); Linux and the model keep the 11 bytes",
                   "the whole listing difference is the label, expected with NULs after its text "
                   "on an image whose boot label is NUL-padded, shown as that text "
                   "(exceptions.label_nul_shown)"),
    NamedException(READAHEAD, "mtools", _R,
                   "mtools 4.0.32 reads a volume's data area in 128 KiB blocks aligned on the "
                   "image's start and does not cut the last one at the declared end: when the "
                   "volume does not end on 128 KiB and the image goes on past it, mcopy of the "
                   "last clusters reads past the volume. Measured under the I/O trace on a clean "
                   "full mkfs.fat FAT32 volume of 38 912 000 bytes in a 40 MiB image: 128 KiB at "
                   "0x2500000, 16 KiB of it past the end; none where the volume ends on 128 KiB "
                   "(2 MiB, 16 384 000 and 35 651 584 bytes; docs/iobounds.md)",
                   "a read past the volume of at most 128 KiB at a 128 KiB-aligned offset inside "
                   "the volume (MtoolsReader.io_exception); a read that starts past the end stays "
                   "a verdict"),
    NamedException("mtools-lcase-nonascii", "mtools", _R,
                   "mtools shows a bare 8.3 entry whose NT case byte says 'lower case' with its "
                   "non-ASCII letters still in upper case ('cafÉ.txt' for CAF\\x90    TXT + 0x18); "
                   "Linux lower-cases them through the cp437 table",
                   "the shown name is the expected one with its non-ASCII letters upper-cased"),
    NamedException("mtools-astral-read", "mtools", _R,
                   "mtools converts LFN UTF-16 unit by unit: each character outside the BMP (a "
                   "surrogate pair) is listed as '__'",
                   "the shown name is the expected one with each astral character as '__'"),
    NamedException(ASTRAL_AMBIGUOUS, "mtools", _R,
                   "names that differ only in characters outside the BMP look the same to mtools "
                   "('/\U0001F600x' and '/\U0002000Bx' both list as '/__x'): it lists both under one "
                   "name and cannot extract either by path, so they (and what lies below them) are "
                   "compared by visible path and type only, not by content",
                   "two expected paths with the same shown form"),
    NamedException("mtools-reserved-names", "mtools", _W,
                   "mtools refuses to create a bare reserved DOS device name (CON, NUL, AUX, PRN, "
                   "COM1-COM4, LPT1-LPT4; 'nul.txt', 'CON.' and COM5 are accepted); Linux 6.1 "
                   "accepts them all", "EINVAL where ok is expected, on such a leaf"),
    NamedException("mtools-case-rename", "mtools", _W,
                   "renaming an entry to a respelling of its own name: Linux 6.1 keeps the old "
                   "spelling and answers 0 (vfs_rename sees the same inode); mren refuses (name "
                   "clash, exit 1) and also keeps the old spelling",
                   "EINVAL where ok is expected, on a rename whose names fold alike"),
    NamedException("mtools-mmove-upcase", "mtools", _W,
                   "mmove/mren to a name that fits 8.3 in lower case stores it upper case, without "
                   "the NT lower-case bits, when the source had a long name (the new entry takes "
                   "the source's NT case byte; modelled in the mtools profile: _mtools_moved, for "
                   "non-ASCII names too: 'éa' -> 'ÉA'); Linux keeps the spelling",
                   "the stored name is the expected 8.3 name upper-cased"),
    NamedException("mtools-trailing-dots", "mtools", _W,
                   "mtools keeps trailing dots of long names ('dots...') and drops trailing spaces "
                   "('trail ' -> 'trail', where Linux answers EINVAL); Linux strips trailing dots "
                   "(modelled in the mtools profile: mtools_store). mren to a respelling that adds "
                   "trailing dots ('c.o' -> 'C.O.') is a new name to mtools and applied; Linux "
                   "finds the entry itself and keeps 'c.o'",
                   "the stored name is the expected one with trailing dots"),
    NamedException("mtools-translit", "mtools", _W,
                   "mtools makes the 8.3 form of a new name through iconv CP437//TRANSLIT, one byte "
                   "per character, and writes a bare 8.3 entry with NO long name when the result "
                   "needs none: characters cp437 lacks are transliterated and cut ('œ' -> 'o', "
                   "'aœ' -> 'ao', 'ÿ' -> 'y', 'x€' -> 'xe'), the name is lost and later ops that "
                   "spell it find nothing; Linux keeps every name",
                   "modelled in the mtools profile (_mtools_translit_short)"),
    NamedException("mtools-nonascii-case-clash", "mtools", _W,
                   "mtools folds non-ASCII case when it looks for clashes ('É' clashes with 'é'); "
                   "Linux with iocharset=ascii folds ASCII only: a create of 'é' next to 'É' is "
                   "EEXIST, and a rename of 'σB' to 'ΣB' (a new name for Linux) is refused by mren "
                   "and the old spelling stays",
                   "EEXIST/EINVAL on non-ASCII names that fold alike in full Unicode case"),
    NamedException(MTOOLS_ASTRAL_TRUNCATED, "mtools", _W,
                   "mtools writes each character outside the BMP as its low 16 bits "
                   "(U+1D518 -> U+D518, U+1F600 -> U+F600) instead of a surrogate pair; where the "
                   "low 16 bits are a control character (U+2000B -> U+000B) vfat-check finds the "
                   "long name invalid, one finding",
                   "stored name = expected with each astral character cut to 16 bits; or a "
                   "'longname-invalid' complaint where the script names such a character",
                   bug="mtools-astral"),
    NamedException(MTOOLS_LONG_UTF8, "mtools", _W,
                   "mtools 4.0.32 mishandles a name whose UTF-8 form is over 255 bytes: "
                   "mcopy/mmd/mmove/mren die with SIGSEGV on 256+ ASCII characters, a name over 260 "
                   "bytes is written cut, with stray characters at its end, mmd then fails at random "
                   "and later lookups through the name find nothing; mcopy -s of such a file to the "
                   "host dies with 'stack smashing detected'",
                   "the writer's first divergence (a result, its own failure, or the image's names "
                   "per the core's listing) is at or after an op that names such a component; for "
                   "the mtools reader, mcopy died of stack smashing and the tree holds such a name. "
                   "One finding per role; the readers check the script cut before that op",
                   bug="mtools-long-utf8"),
    NamedException(MTOOLS_NO_DIR_SLOTS, "mtools", _W,
                   "mtools grows a directory by at most one cluster for a new entry: a long name "
                   "needing more free slots than the directory's last cluster has left plus one "
                   "new cluster fails with 'No directory slots', where Linux grows the directory "
                   "as far as needed",
                   "mtools' own message on an op the model expects to succeed, in a directory that "
                   "can grow (not the FAT12/16 root); the readers check the script cut before it",
                   bug="mtools-no-dir-slots"),
    NamedException(MTOOLS_MMOVE_GROW, "mtools", _W,
                   "mmove/mren abort ('dirCache.c:198: freeDirCacheRange: Assertion `entry->beginSlot "
                   "== beginSlot' failed', SIGABRT) when the new long name does not fit in the "
                   "directory's present clusters and the directory must grow, leaving the directory "
                   "half changed; Linux grows it",
                   "that assertion in the rename's own mtools output; the readers check the script "
                   "cut before that op", bug="mtools-mmove-grow-abort"),
    NamedException(MTOOLS_NUL_ALIAS, "mtools", _W,
                   "mtools 4.0.32 autorename (vfat.c) prints the new '~N' tail of an 8.3 alias with "
                   "sprintf and restores only the byte where the old tail ended: when the printed "
                   "tail is longer or shorter ('L{+KGFI~5' -> base 'L{_KGFI~' gets '~0'; "
                   "'abcde~05.txt x' -> '~5') its NUL stays in the 11-byte name; the entry is "
                   "stored with strncpy (zeros after the NUL) while the LFN checksum was summed "
                   "over the bytes in memory: a bad 8.3 name and, when a byte followed the NUL, "
                   "the long name lost ('L{+KGFI~5' is listed as 'L{_KGFI~')",
                   "an op that ran, at or before the writer's first divergence, makes a name whose "
                   "alias autorename misprints as mtools forms it (a base ending in '~' with no "
                   "digits or with leading zeros; nul_alias_leaf), and the image the writer left "
                   "holds a short entry with a NUL behind a '~N' tail (core listing); one finding, "
                   "the readers check the script cut before that op",
                   bug="mtools-nul-alias"),
    NamedException(MTOOLS_ALIAS_LOOKUP, "mtools", _W,
                   "a lookup matches an entry's 8.3 alias as well as its long name (Linux's "
                   "fat_search_long; mtools' own clash check: `mcopy -D s` of LONGFI~1.TXT beside "
                   "longfilename2.txt skips it, and the writer answers EEXIST as Linux does), but "
                   "the model's mtools profile does not predict mtools' aliases (they are not "
                   "Linux's: a name of characters cp437 lacks gets '___' with no '~1', 'bfdZXXXX...' "
                   "gets BFDZXX~1 where Linux gives BFDZXXXX; 10 of 36 long names in `vfat gen` "
                   "seeds 1-29 written by mcopy), so it takes such a name for a new one: a design "
                   "difference of the model, not a bug of mtools",
                   "the writer's own note that it found an entry of the image through its alias "
                   "(read by the core) on an op at or before its first divergence; one finding, "
                   "the readers check the script cut before that op"),
    NamedException(MTOOLS_TRAILING_DOT, "mtools", _W,
                   "mtools keeps trailing dots (mtools-trailing-dots: 'EB...', 'Y..'); Linux 6.1 "
                   "lists such an entry but cannot open it (its lookup strips the dots and finds no "
                   "'EB'): the file's size and contents are unknown and a directory's entries are "
                   "missing",
                   "every difference of a reader's listing is such an entry or lies under one (one "
                   "finding per reader); a checker says 'long name ends with '.''"),
]
