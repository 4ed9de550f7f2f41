"""The 8.3 aliases mtools 4.0.32 makes (vfat.c), as far as exception mtools-nul-alias needs them.

_dos_name is dos_name's 11 bytes of a new name, _tail_misprints
autorename's '~N' tail that leaves sprintf's NUL inside them;
nul_alias_leaf and nul_alias_op predict which new name gets such an
alias, nul_alias_in_image finds one in an image (the core's listing).
"""
import re

from vfz.model import glibc
from vfz.model.profiles import MTOOLS_SHORT_ILLEGALS, _case_of, _translit
from vfz.oracles.evidence import core_listing


def _dos_part(text, limit):
    """mtools 4.0.32 TranslateToDos on one part of a name: at most limit
    characters are converted (more: mangled); spaces and dots among them
    are dropped and control characters made '_' (mangled); the rest
    upper-cased (towupper) and converted to CP437//TRANSLIT into one byte
    per character kept, cut where a transliteration is longer, '?' made
    '_'. -> (bytes padded with spaces to limit, mangled)."""
    mangled = len(text) > limit
    chars = []
    for c in text[:limit]:
        if c in " .":
            mangled = True
            continue
        if ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F:
            mangled = True
            c = "_"
        chars.append(_case_of(c)[2])
    out = glibc.to_cp437_translit("".join(chars), len(chars))
    if out is None:
        out = b""
        for c in chars:
            try:
                out += c.encode("cp437")
            except UnicodeEncodeError:
                out += _translit(c) or b"_"
    out = out[:len(chars)].replace(b"?", b"_")
    return out.ljust(limit, b" "), mangled


def _dos_name(leaf):
    """The 11 bytes mtools 4.0.32's dos_name makes of a new name before
    any autorename, and whether it counts as mangled (mangled & 2: then
    dos_name itself calls autorename_short). mwrite_one strips trailing
    spaces first; dos_name skips leading dots and spaces; the extension is
    what follows the last dot."""
    name = leaf.rstrip(" ")
    skip = len(name) - len(name.lstrip(". "))
    name = name[skip:]
    dot = name.rfind(".")
    base, m1 = _dos_part(name[:dot] if dot >= 0 else name, 8)
    ext, m2 = _dos_part(name[dot + 1:], 3) if dot >= 0 else (b"   ", False)
    return base + ext, bool(skip) or m1 or m2


def _tail_misprints(name, bump):
    """Does mtools 4.0.32 autorename (vfat.c, limit 8, dot ' ') print a '~N'
    tail that does not end where the old tail ended, leaving sprintf's
    NUL inside the 11 bytes? The base must end (at its first space or at
    8 bytes) in '~' and digits only; the printed number is the digits' value
    (+1 with bump; a short-illegal byte in the name resets bump to 0): it
    misprints when its length differs from the digits' -- no digits at all
    ('L{_KGFI~' prints '~0'), or leading zeros ('~05' prints '~5') -- unless
    it passes 999999 (tail reset to '~1' at the right place) or bump carries
    it to 10**len (autorename moves the tail one byte)."""
    if any(chr(b) in MTOOLS_SHORT_ILLEGALS for b in name):
        bump = 0
    tilde, end = -1, 0
    while end < 8 and name[end] not in (0, 0x20):
        if name[end] == 0x7E:
            tilde = end
        elif not 0x30 <= name[end] <= 0x39:
            tilde = -1
        end += 1
    if tilde < 0:
        return False
    digits = name[tilde + 1:end]
    seq = int(digits or b"0") + (1 if bump else 0)
    if seq > 999999 or seq == 10 ** len(digits):
        return False
    return len(str(seq)) != len(digits)


def nul_alias_leaf(leaf, earlier=()):
    """Can mtools 4.0.32 give this new name (mkdir, create, rename target)
    an 8.3 alias holding sprintf's NUL (exception mtools-nul-alias)? Its
    first autorename misprints the tail: the one dos_name makes of a
    mangled name, or get_slots of a name with short-illegal bytes (bump
    0); else the one an alias clash makes (bump 1), which needs an entry
    with the same 8.3 form: earlier holds the _dos_name bytes of the names
    made before. A '~' may also come of a transliteration ('˜', '∼')."""
    if "~" not in leaf and leaf.isascii():
        return False
    name, mangled = _dos_name(leaf)
    if mangled or any(chr(b) in MTOOLS_SHORT_ILLEGALS for b in name):
        return _tail_misprints(name, 0)
    return name in earlier and _tail_misprints(name, 1)


def nul_alias_op(ops):
    """Index of the first op of ops that makes a name nul_alias_leaf
    predicts a NUL in the alias of, else None."""
    made = set()
    for i, op in enumerate(ops):
        leaf = _new_leaf(op)
        if not leaf or leaf in (".", ".."):
            continue
        if nul_alias_leaf(leaf, made):
            return i
        if "~" in leaf or not leaf.isascii():
            made.add(_dos_name(leaf)[0])
    return None


_NUL_TAIL = re.compile(rb"~[0-9]*[^\x00]?\x00")


def nul_alias_in_image(image):
    """Paths of the image's short entries (the core's listing: field
    'short', 11 bytes hex) whose name holds a NUL right behind a '~N' tail
    (the one byte autorename restores may stand between: 'L{_KGFI~' and
    ' ', NUL, NUL; '0150~\\x900~' and 'A', NUL, NUL; 'ABCDE~5', NUL and
    'TXT')."""
    out = []
    for e in core_listing(image) or ():
        try:
            raw = bytes.fromhex(e.get("short") or "")
        except ValueError:
            continue
        if len(raw) == 11 and _NUL_TAIL.search(raw):
            out.append(e["path"])
    return out


def _new_leaf(op):
    if op.kind not in ("create", "mkdir", "rename") or len(op.args) < (2 if op.kind == "rename" else 1):
        return None
    target = op.args[1] if op.kind == "rename" else op.args[0]
    if not isinstance(target, str):
        return None
    return ([c for c in target.split("/") if c] or [None])[-1]
