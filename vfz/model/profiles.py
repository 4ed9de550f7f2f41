"""Model profiles: the writers that legitimately differ from Linux 6.1 by
design, as knobs of the model (vfz.model.tree.Model). kernel (the default)
is Linux 6.1 and the core in every mode; mtools is the model's own
prediction of mtools 4.0.32 (measured against mtools itself: the mtools
writer glue, vfz/oracles/mtools/, does not use it).

An oracle whose writes follow other rules defines its knobs in its own
module and names that dict as its Entry.profile.
"""
import os
import subprocess

from vfz.model import glibc
from vfz.model.names import check_new_name, strip_dots, _cp437_upper, _short_able

MTOOLS_RESERVED = {"CON", "PRN", "AUX", "NUL"} | {f"COM{i}" for i in range(1, 5)} \
    | {f"LPT{i}" for i in range(1, 5)}


def _mtools_reserved(leaf):
    """mtools 4.0.32 refuses a long name that is exactly a reserved device
    name once its trailing spaces are dropped: CON PRN AUX NUL COM1-COM4
    LPT1-LPT4, any case (measured: COM5, LPT9, CLOCK$, 'CON.', 'nul.txt' and
    'aux.c' are accepted; 'CON.' gets a long name and another alias)."""
    return leaf.rstrip(" ").upper() in MTOOLS_RESERVED


MTOOLS_SHORT_ILLEGALS = ";+=[]',\"*\\<>/?:|"
_TRANSLIT = {}      # character -> bytes of glibc's CP437//TRANSLIT (None: no iconv)


def _translit(c):
    """c through glibc iconv to CP437//TRANSLIT under C.UTF-8, as mtools
    converts the characters of a short name: 'Œ' -> b'OE', 'Ÿ' -> b'Y',
    'É' -> b'\\x90', 'Ж' -> b'?'. Asked of the iconv program once per
    character; None when it cannot run here."""
    if c not in _TRANSLIT:
        try:
            p = subprocess.run(["iconv", "-f", "UTF-8", "-t", "CP437//TRANSLIT"],
                               input=c.encode("utf-8", "surrogatepass"), capture_output=True,
                               env={"LC_ALL": "C.UTF-8", "PATH": os.environ.get("PATH", "/usr/bin:/bin")},
                               timeout=10)
            _TRANSLIT[c] = p.stdout if p.returncode == 0 else b"?"
        except (OSError, subprocess.SubprocessError):
            _TRANSLIT[c] = None
    return _TRANSLIT[c]


def _case_of(c):
    """(lower, upper, upper-cased c) by glibc's C.UTF-8 rules, as mtools
    tests case (Python's rules when glibc cannot be asked)."""
    got = glibc.case_of(c)
    if got is not None:
        return got
    u = c.upper()
    return c.islower(), c.isupper(), (u if len(u) == 1 else c)


def _mtools_translit_short(name):
    """mtools 4.0.32 makes the 8.3 form of a new name (dos_name) by
    upper-casing each character and converting the result with iconv to
    CP437//TRANSLIT into a buffer of one byte per character: a character
    cp437 lacks is transliterated ('Œ' -> 'OE', 'Ÿ' -> 'Y') and what does not
    fit is cut ('œ' -> 'O', 'aœ' -> 'AO', 'œœ' -> 'OE'), and none of this
    counts as mangling. When nothing else needs a long name (8.3 shape, one
    case per part, no '?' or short-illegal byte, no reserved base) mtools
    writes a bare 8.3 entry with the NT case bits and NO long name: the
    name is lost. -> the name such an entry shows (cp437, lower-cased per
    part as its case bits say: 'œ' -> 'o', 'ßaœÿÿa.txt' -> 'ßaoeyy.txt'), or
    None when mtools keeps the name (a long name, or a bare 8.3 entry that
    needed no transliteration: the rest of the model covers those).
    Case tests and the conversion are glibc's own (vfz.model.glibc: a
    titlecase digraph such as 'ǅ' is lower case there, and a translit cut
    by the buffer keeps its first byte, 'Ǆ' -> 'D' where the iconv program
    gives '?'); Python's rules and the iconv program without glibc."""
    if not name or name[0] in ". ":
        return None
    dot = name.rfind(".")
    parts = [(name[:dot], 8), (name[dot + 1:], 3)] if dot >= 0 else [(name, 8)]
    out = []
    for part, limit in parts:
        if len(part) > limit:
            return None
        case, up = None, []
        for c in part:
            if c in " ." or ord(c) < 0x20 or ord(c) == 0x7F:
                return None
            lower, upper, u = _case_of(c)
            if lower:
                if case == "U":
                    return None
                case, c = "L", u
            elif upper:
                if case == "L":
                    return None
                case = "U"
            up.append(c)
        b = glibc.to_cp437_translit("".join(up), len(up))
        if b is None:
            b = b""
            for c in up:
                try:
                    b += c.encode("cp437")
                except UnicodeEncodeError:
                    t = _translit(c)
                    if t is None:
                        return None
                    b += t
        b = b[:len(up)]
        if any(x < 0x20 or chr(x) in MTOOLS_SHORT_ILLEGALS + " ." for x in b):
            return None
        shown = b.decode("cp437")
        if case == "L":
            shown = "".join(x.lower() if len(x.lower()) == 1 else x for x in shown)
        out.append((b, shown))
    if not out[0][0]:
        # nothing left of the base ('\ufeff', U+200B: iconv drops them):
        # mtools keeps the long name, alias '~1' (measured)
        return None
    base = out[0][0].upper().ljust(8)
    if base[:3] in (b"CON", b"AUX", b"PRN", b"NUL") and base[3:] == b"     " or \
            base[:3] in (b"COM", b"LPT") and b"1" <= base[3:4] <= b"4" and base[4:] == b"    ":
        return None
    shown = out[0][1] + ("." + out[1][1] if len(out) > 1 and out[1][1] else "")
    return shown if shown != name.rstrip(".") else None


def mtools_store(leaf):
    """How mtools spells a new name on disk: trailing spaces dropped; a
    single trailing dot dropped when what is left is stored as a bare 8.3
    entry, without a dot ('trail.' -> 'trail'; measured: 'Ab.', 'x+y.',
    'a b.', 'テ.' keep theirs, they get a long name); other trailing dots
    kept ('dots...'); characters outside the BMP cut to their low 16 bits
    (so later ops that spell the real name no longer find it, as with
    mtools); a name that mtools transliterates into a bare 8.3 entry as
    that entry shows ('œ' -> 'o': _mtools_translit_short)."""
    lossy = _mtools_translit_short(leaf.rstrip(" "))
    if lossy is not None:
        return lossy
    s = "".join(chr(ord(c) & 0xFFFF) for c in leaf).rstrip(" ")
    t = s[:-1]
    if (s.endswith(".") and not t.endswith(".") and "." not in t and t and _short_able(t)
            and t.upper() not in MTOOLS_RESERVED):       # "CON." gets a long name
        return t
    return s


def _mtools_bare(name):
    """Does mtools store this (already stored-form) name as a bare 8.3
    entry: 8.3 shape, every character one cp437 byte, one case per part,
    no reserved base."""
    base = name.rsplit(".", 1)[0] if "." in name else name
    return _short_able(name) and base.upper() not in MTOOLS_RESERVED and all(
        _upper_converts(c) for c in name if not c.isascii())


def _upper_converts(c):
    """mtools upper-cases a character before it converts it to cp437 for
    the 8.3 name: a lower-case letter whose capital cp437 lacks and iconv
    cannot transliterate ('µ' -> 'Μ' -> '?') makes the 8.3 name lossy, so
    the name keeps a long name (measured: 'µa' gets _A with LFN slots and
    NT 0x00, 'πa' likewise)."""
    u = c.upper()
    if len(u) != 1:
        return True                      # 'ß' stays (cp437 E1)
    try:
        u.encode("cp437")
        return True
    except UnicodeEncodeError:
        t = _translit(u)
        return t is None or b"?" not in t


def _mtools_parts(n):
    i = n.rfind(".")
    return (n[:i], n[i + 1:]) if i > 0 else (n, "")


def _mtools_case_of(name):
    """The NT lower-case flags (base, ext) mtools gives the short entry of
    a new name (stored form): per part, for a bare 8.3 entry ('x.TXT':
    base); none when the name gets a long name (measured: 'lower.text',
    '.c', 'long name' all 0)."""
    if not _mtools_bare(name):
        return (False, False)
    return tuple(any(_case_of(c)[0] for c in x) for x in _mtools_parts(name))


def _mtools_moved(src_name, new, case=None):
    """The name mmove/mren give an entry (measured, mtools 4.0.32): the new
    short entry takes the NT case byte of the source's. A target stored as
    a bare 8.3 entry therefore shows in upper case when the source was made
    with a long name ('Long Name' -> 'éa' is 'ÉA', -> 'ab.c' is 'AB.C'), and
    with the source's lower-case bits, per part, when it was made as a bare
    8.3 entry ('x' -> 'AB' is 'ab', 'x.TXT' -> 'ab.c' is 'ab.C'); the bits
    go along through renames to long names ('a' -> '.c' -> 'A' is 'a',
    campaign 15: case = the flags the entry was made with, _mtools_case_of;
    None: from src_name). A target that gets a long name keeps its spelling
    ('Ab', 'a+b')."""
    if not _mtools_bare(new):
        return new
    parts = _mtools_parts
    lower = list(case) if case is not None else list(_mtools_case_of(src_name))
    out = ["".join(c.lower() if lo and len(c.lower()) == 1 else _cp437_upper(c) for c in x)
           for x, lo in zip(parts(new), lower)]
    return out[0] + ("." + out[1] if out[1] else "")


def _mtools_name_err(leaf):
    if _mtools_reserved(leaf):
        return "EINVAL"
    # the kernel's rules on the name as given (mtools checks before it cuts
    # astral characters), trailing spaces excepted (mtools drops them)
    s = leaf.rstrip(" ")
    if s.rstrip(".") == "" and leaf:
        # all spaces or all dots ('...'): mtools refuses the name (measured:
        # mcopy, mmd, mmove exit 1; the writer answers EINVAL). Linux: EINVAL
        # for spaces (a trailing space), ENOENT for dots (stripped to
        # nothing). All spaces was ENOENT here until campaign seed 11101
        # found mkdir "/ " answered EINVAL.
        return "EINVAL"
    return check_new_name(s.rstrip(".") + ("x" if s.endswith(".") and s.rstrip(".") else ""))


def _mtools_lookup(d, leaf):
    """The mtools writer (vfz/oracles/mtools/writer.py) finds names as mtools does,
    folding the case of every letter, not only ASCII: 'é' finds 'É', 'σ'
    finds 'Σ'. So a new name that Linux would add next to such an entry is
    EEXIST and nothing is made (exception mtools-nonascii-case-clash), and
    a path spelt 'é/x' goes through 'É'. The entry of d that only this
    fold finds, or None."""
    key = strip_dots(leaf).lower()
    for k in d.kids.values():
        if strip_dots(k.name).lower() == key:
            return k
    return None


# Profile knobs:
#   name_err(leaf)   -> errno for a new name (default: the kernel's rules)
#   lookup(dir, leaf)-> the entry of dir that leaf finds when the kernel's
#                       lookup (ASCII case folded) finds none (default: none)
#   replace          -> "keep" (Linux, default): a rename onto an existing
#                       entry keeps the target's spelling; "respell": the
#                       entry takes the new one (the mtools writer deletes
#                       the target, then mmoves the source to the name given)
#   store(leaf)      -> the spelling that ends up on disk (default: trailing
#                       dots stripped)
#   case_rename      -> "noop" (Linux 6.1, default) or "apply"
#   case_of(name)    -> the NT case flags a new entry's short entry gets
#                       (kept through renames, handed to moved)
#   moved(src, new, case) -> the spelling a renamed entry ends up with (default:
#                       new, the stored form of the target's leaf)
#   unbounded_root   -> True: the FAT12/16 root never fills (the writer has
#                       its own slot rules, not modelled)
#   root(image)      -> the FixedRoot the writer's root is, whatever the
#                       image (vvfat makes a volume of its own), or None
#   path_err(op)     -> errno the writer answers before any lookup (the uboot
#                       glue: a path U-Boot's shell cannot be given), or None
#   name_first       -> True: mkdir/create check the new leaf (name_err) before
#                       the parent walk's ENOENT/ENOTDIR (U-Boot's fat_write.c;
#                       not a create with a trailing '/')
#   findable(leaf)   -> False: a lookup of this component (as given) finds
#                       nothing (FatFs: create_name refuses over 255 units)
#   leaf_name_first  -> True: mkdir/create check the new leaf (name_err) before
#                       they look it up (EEXIST) (FatFs: create_name, then dir_find)
# The second grammar's knobs (vfz/model/inode.py):
#   write_atime      -> "clock": a write or truncate also stamps the access date
#                       (a writer that rewrites the whole entry: mtools' mcopy -D o)
#   touch_atime      -> "mtime": touch stores the modify time only, the access
#                       date is its date (mtools' mcopy -m)
#   dir_atime        -> "clock": a new entry stamps its directory's access date
#                       too (Linux: the modify time only; fusefat both)
#   touch_dir        -> errno of a touch of a directory other than the root
#                       (a writer that cannot date one)
#   ro_refuses       -> op kinds ("write", "truncate", "chattr", "touch") the
#                       writer refuses on a read-only entry: EACCES
#   truncate_grow    -> errno of a truncate to the current size or larger (a
#                       writer that only shrinks: fusefat's EPERM)
#   truncate_same    -> "noop": a truncate to the current size changes nothing
#                       (Linux: the archive bit and the clock when not empty)
#   dir_attr         -> the attribute byte of a new directory (Linux: 0x10)
#   label_err(text)  -> errno for a label (default: fatlabel's rules, label_err)
#   label_root(text) -> the label's root entry as the writer spells it (default:
#                       as given; mtools and FatFs upper-case it)
#   linux_capacity   -> True: a profile with knobs runs out of clusters as Linux
#                       does (vfz.model.space; a profile without it: unbounded)
PROFILES = {
    "kernel": {},
    "mtools": {
        "name_err": _mtools_name_err,
        "lookup": _mtools_lookup,
        "replace": "respell",
        "store": mtools_store,
        "moved": _mtools_moved,
        "case_of": _mtools_case_of,
        "unbounded_root": True,
        # the second grammar, measured on mtools 4.0.32 (vfz/oracles/mtools/writer.py):
        # a write or truncate is an mcopy -D o of the whole file (a new entry:
        # access date and creation time now), a touch an mcopy -m (one time),
        # no tool dates a directory, mlabel upper-cases the root entry
        "write_atime": "clock",
        "touch_atime": "mtime",
        "touch_dir": "ENOSYS",
        "label_root": str.upper,
    },
}


def profile_knobs(profile):
    """The knobs of a profile given by name, or the dict itself (an oracle
    module's own profile, named by its Entry)."""
    if isinstance(profile, dict):
        return profile
    if profile not in PROFILES:
        raise ValueError(f"unknown model profile {profile!r}")
    return PROFILES[profile]


# mtools 4.0.32 handles names of at most this many UTF-8 bytes (its known
# failures beyond are the mtools oracle's: vfz/oracles/mtools/exceptions.py)
MTOOLS_NAME_BYTES = 255


def mtools_too_long(name):
    """Is name's UTF-8 form over the 255 bytes mtools 4.0.32 handles?"""
    return len(name.encode("utf-8", "surrogatepass")) > MTOOLS_NAME_BYTES


def mtools_long_names(op):
    """Components of op's paths whose UTF-8 form is over 255 bytes, as the
    mtools writer hands them to mtools (a new leaf also in the form mtools
    stores, trailing dots kept: 'a'*255 + '.' is 256 bytes). mtools 4.0.32
    mishandles such names (exception mtools-long-utf8)."""
    out = []
    for a in op.args:
        if not isinstance(a, str) or not mtools_too_long(a):
            continue        # (mtools' stored form is never longer)
        comps = [c for c in a.split("/") if c and c not in (".", "..")]
        for c in comps + [mtools_store(c) for c in comps[-1:]]:
            if mtools_too_long(c) and c not in out:
                out.append(c)
    return out


