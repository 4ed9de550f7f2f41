"""Name rules of Linux 6.1 vfat, as the model applies them: which names a
new entry may take, how lookups fold them, which names are their own 8.3
form, the dual-mode alias (vfat_create_shortname) and how readers that
print raw OEM bytes show a bare 8.3 name.

Independent of the C core's names.c (see vfz/model/__init__.py: why two
models). Pure functions, no state.
"""
BAD_CHARS = set('*?<>|":\\/')
RESERVED = {"CON", "PRN", "AUX", "NUL", "CLOCK$"} | {f"COM{i}" for i in range(1, 10)} \
    | {f"LPT{i}" for i in range(1, 10)}
PATH_MAX = 4096


def strip_dots(name):
    return name.rstrip(".")


def fold(name):
    """Lookup key: trailing dots ignored, ASCII letters folded only."""
    return "".join(c.lower() if "A" <= c <= "Z" else c for c in strip_dots(name))


def utf16_len(s):
    return sum(2 if ord(c) > 0xFFFF else 1 for c in s)


def check_new_name(name):
    """The kernel's verdict on a name for a new entry: None or errno name."""
    s = strip_dots(name)
    if not s:
        return "ENOENT"
    if utf16_len(s) > 255:
        return "ENAMETOOLONG"
    for c in s:
        if ord(c) < 0x20 or c in BAD_CHARS:
            return "EINVAL"
    if s.endswith(" "):
        return "EINVAL"
    return None


def short_only(name, rule="win95"):
    """Would Linux store this name as a bare 8.3 entry (no LFN slots)?
    rule: win95 (creation rule of shortname=mixed|win95|lower: the 8.3
    form must be upper case) or winnt (v3 and shortname=winnt: base and
    extension each all-upper or all-lower). Non-ASCII never fits (cp437
    bytes >= 0x7F clear both case flags in to_shortname_char); lfn: a
    writer that gives every name long-name slots (npm fatfs)."""
    if rule == "lfn":
        return False
    s = strip_dots(name)
    if not s or any(ord(c) >= 0x7F for c in s):   # DEL too: byte >= 0x7F
        return False
    dot = s.rfind(".")
    if dot > 0 and s[:dot].strip(". "):
        base, ext = s[:dot], s[dot + 1:]
    else:
        base, ext = s, ""
    for part, n in ((base, 8), (ext, 3)):
        if len(part) > n:
            return False
        if any(c in " .+,;=[]" or ord(c) < 0x20 or c in BAD_CHARS for c in part):
            return False
    if not base:
        return False

    def case_ok(part):
        up = part == part.upper()
        lo = part == part.lower()
        return up if rule == "win95" else (up or lo)
    return case_ok(base) and case_ok(ext)


def needs_lfn(name, rule="win95"):
    return not short_only(name, rule)


def _cp437_upper(c):
    u = c.upper()
    if len(u) == 1:
        try:
            u.encode("cp437")
            return u
        except UnicodeEncodeError:
            pass
    return c


def _units(s):
    """The UTF-16 units of s, one str character each (a character outside
    the BMP gives its two surrogates, as in the kernel's wchar_t name)."""
    b = s.encode("utf-16-le", "surrogatepass")
    return [chr(int.from_bytes(b[i:i + 2], "little")) for i in range(0, len(b), 2)]


def _sn_char(c):
    """to_shortname_char for one UTF-16 unit with nls_cp437: (what it
    becomes in the 8.3 form, "" when skipped; does the form stay valid).
    '.' and ' ' are skipped, + , ; = [ ] and units cp437 lacks (CJK, each
    half of a surrogate pair) become '_'; the rest is upper-cased through
    the cp437 table. Every such unit is one cp437 byte."""
    if c in ". ":
        return "", False
    if c in "+,;=[]":
        return "_", False
    try:
        c.encode("cp437")
    except UnicodeEncodeError:
        return "_", False
    return _cp437_upper(c), True


def shortname_parts(name):
    """The first half of vfat_create_shortname: (base, ext, plain) of a
    name (trailing dots stripped). base (1..8 characters) and ext (0..3)
    are the 8.3 form as Linux shows it (cp437, upper case); plain is
    is_shortname && valid: nothing was skipped, replaced or cut off, so
    the form is the name itself. The extension follows the last dot
    unless only dots and spaces precede it (".bashrc" is all base)."""
    u = _units(strip_dots(name))
    n = len(u)
    dot = max((i for i, c in enumerate(u) if c == "."), default=-1)
    if 0 < dot < n - 1 and any(c not in ". " for c in u[:dot]):
        sz, ext_start = dot, dot + 1
    else:
        sz, ext_start = n, n
    base, plain_b = _sn_part(u, 0, sz, 8)
    ext, plain_e = _sn_part(u, ext_start, n, 3)
    return base, ext, plain_b and plain_e


def _sn_part(u, start, end, limit):
    """Units u[start:end] as 8.3 characters, at most limit of them ->
    (text, plain): plain when nothing was replaced or cut off (a unit
    after the limit is reached is not looked at, as in Linux)."""
    out, plain = "", True
    for i in range(start, end):
        ch, ok = _sn_char(u[i])
        plain = plain and ok
        if ch:
            out += ch
            if len(out) == limit:
                return out, plain and i + 1 == end
    return out, plain


def trailing_slash(path):
    """'name/': Linux then wants a directory there (create EISDIR; write,
    unlink ENOTDIR on a file; rename of a file ENOTDIR). The model and the
    mtools writer decide with it."""
    comps = [c for c in path.split("/") if c]
    return bool(comps) and path.endswith("/") and comps[-1] not in (".", "..")


def walked(path):
    """path's components as a lookup walks them: '.' dropped, '..' back one
    (none above the root). Lexical, which is exact on FAT (no symlinks and
    no mounts inside) wherever the walk succeeds; where a component before a
    '..' is missing or a file the walk fails, and the callers only compare
    paths of ops that succeeded or of entries made."""
    out = []
    for c in path.split("/"):
        if c in ("", "."):
            continue
        if c == "..":
            out = out[:-1]
        else:
            out.append(c)
    return out


def mtools_shown(s):
    """A name or path as mtools 4.0.x shows it: it decodes UTF-16 units one
    at a time, so each character outside the BMP (a surrogate pair) reads
    as '__'."""
    return "".join("__" if ord(c) > 0xFFFF else c for c in s)


def _form(base, ext):
    return base + "." + ext if ext else base


def plain_alias(name):
    """The 8.3 form vfat_create_shortname tries first (is_shortname && valid:
    the name fits 8.3, every character is one cp437 byte, no skipped or
    replaced character), upper-cased through cp437, as the string Linux
    shows for it (the short entry of an alias has no case bits); None when
    the alias needs a ~N tail. Linux uses this form as the alias of such a
    long name if no short entry of the directory has it yet, and refuses
    the name (EEXIST) if one has."""
    s = strip_dots(name)
    if not s or any(ord(c) < 0x20 for c in s):
        return None
    base, ext, plain = shortname_parts(s)
    return _form(base, ext) if plain and base else None


class HexAlias:
    """The alias of a long name whose BASE~1..BASE~9 were all taken: Linux
    writes XX####~D, the first two base characters, four hex digits and a
    digit from jiffies, then the extension. Nobody can name it: lookups
    never match it, and it takes no form the model hands out (the chance
    that it holds one is what the model cannot predict)."""

    def __init__(self, base, ext):
        self.base, self.ext = base[:2], ext

    def __repr__(self):
        return f"HexAlias({_form(self.base + '####~?', self.ext)!r})"


def alias_has_del(name):
    """Does the dual-mode alias Linux makes for this long name contain the
    byte 0x7F (DEL passes to_shortname_char unchanged)? Without the
    directory: the plain form when the name has one, else the ~N form,
    which keeps the first 6 base characters and the extension."""
    s = strip_dots(name)
    if "\x7f" not in s or short_only(s):
        return False
    base, ext, plain = shortname_parts(s)
    return "\x7f" in (base if plain else base[:6]) + ext


def _alias_has_del(alias):
    if isinstance(alias, HexAlias):
        return "\x7f" in alias.base + alias.ext
    return alias is not None and "\x7f" in alias




def _upper_nonascii(s):
    # one character each: 'ß' stays (its cp437 byte E1 has no upper case)
    return "".join(c.upper() if not c.isascii() and len(c.upper()) == 1 else c for c in s)


def _short_able(name):
    """Could some writer (mtools does) store this name as a bare 8.3 entry:
    every character one cp437 byte, 8.3 shape, one case per part. A
    character with no case ('▓', '²', '∞', '₧') fits either case of its
    part, a lower-case one ('ª', 'ⁿ', 'θ') only a lower-case part (measured
    on mtools 4.0.32, codepage 437: '┬▓ao' bare with NT 0x08, '▓A' bare
    with 0x00, 'ªA' and 'ⁿA' get a long name)."""
    try:
        name.encode("cp437")
    except UnicodeEncodeError:
        return False
    return short_only("".join(c if c.isascii() else "X" if c.isupper() else "x" if c.islower() else "0"
                              for c in name), "winnt")


def _bare_shown(name):
    """Could name be what Linux shows for a bare 8.3 entry: _short_able,
    where a letter with no one-character upper case ('ß', cp437 E1, stays
    E1 in an upper-case name) fits either case of its part ('ßAO' is what
    mmove makes of 'ßaœ')."""
    return _short_able(name) or _short_able(
        "".join("0" if not c.isascii() and len(c.upper()) != 1 else c for c in name))


def _raw_oem(name, lower_ascii):
    """A bare 8.3 name as a reader that prints its raw bytes shows it
    (GRUB, 7-Zip): each non-ASCII character as its cp437 byte, in upper
    case as stored, the whole decoded as UTF-8 with replacement as the
    glue does. Not always one U+FFFD per character: 'ßé' (E1 90) is one
    truncated sequence, 'ßéä' (E1 90 8E) is U+140E."""
    b = bytearray()
    for c in name:
        if c.isascii():
            b += (c.lower() if lower_ascii else c).encode("ascii")
            continue
        try:
            b += _cp437_upper(c).encode("cp437")
        except UnicodeEncodeError:
            return None
    return b.decode("utf-8", "replace")


