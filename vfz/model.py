"""The expected tree of an op-script: a model of Linux 6.1 vfat semantics.

Independent of the C core (an oracle of its own): written from the kernel's
fs/fat/namei_vfat.c and the VFS rules of fs/namei.c, with Debian's mount
defaults (codepage=437, iocharset=ascii, utf8, shortname=mixed).

Name rules for a new entry (vfat_add_entry -> vfat_build_slots):
  * trailing dots are stripped (vfat_striptail_len); empty -> ENOENT
  * more than 255 UTF-16 units (astral = 2) -> ENAMETOOLONG
  * a unit < 0x20 or one of * ? < > | " : \\ -> EINVAL; last char ' ' -> EINVAL
  * reserved device names (CON, NUL, ...) are accepted: 6.1 has no such check
Lookup: ASCII-only case-insensitive, trailing dots ignored (vfat_cmpi with
the ascii NLS table), so 'a' and 'A' clash (EEXIST) but 'é' and 'É' do not
(in dual mode they clash through the alias rules below).
Stored names keep the spelling of the op that created the entry.
rename (VFS do_renameat2 + vfs_rename + vfat_rename):
  * the target dentry is found case-insensitively; if it is the source
    itself (a case-only or trailing-dot-only respelling) vfs_rename returns
    0 without calling the fs: the old spelling stays (a no-op on 6.1)
  * replacing an existing entry keeps the *target's* directory entry and so
    its spelling (vfat_rename attaches the source inode at new_i_pos)
  * file onto dir EISDIR, dir onto file ENOTDIR, dir onto non-empty dir
    ENOTEMPTY, dir into its own subtree EINVAL, target an ancestor of the
    source ENOTEMPTY, "." / ".." as last component EBUSY
rmdir: non-empty ENOTEMPTY, file ENOTDIR, "/" EBUSY, last component "."
EINVAL; unlink of a dir EISDIR; write to a missing file ENOENT (write does
not create); create/mkdir of an existing name EEXIST; a missing or file
parent ENOENT / ENOTDIR; a path of 4096 bytes or more ENAMETOOLONG.

Profiles model the writers that legitimately differ (see EXCEPTIONS):
  kernel (default) -- Linux 6.1 and the core in every mode
  mtools           -- the mtools writer (vfz/oracles/mtools.py)

Dual vs nodual (Model(names=...)): in nodual mode (the patch) a long name
gets a dummy short entry that lookups never match; in dual mode (stock
Linux, core-dual) it gets an 8.3 alias, chosen as vfat_create_shortname
does with Linux's default numtail (Model._make_alias, shortname_parts):
  * the 8.3 form: base = the first 8 characters before the last dot, ext =
    the first 3 after it, '.' and ' ' skipped, + , ; = [ ] and characters
    cp437 lacks (CJK, each half of an astral character) as '_', the rest
    upper-cased through cp437 ("a b+c.txt" -> AB_C.TXT, "é" -> É)
  * a name that is its own 8.3 form (nothing skipped, replaced or cut off:
    "é", "café.txt", "Case.txt") gets that form if no short entry of the
    directory has it, and is refused (EEXIST) if one has: "é" after "É"
    (a lookup of "é" does not match "É", the form É is taken)
  * any other name gets BASE~1 .. BASE~9 (BASE: the first 6 characters of
    the base), the first one no short entry of the directory has
    ("longfilename.txt" -> LONGFI~1.TXT, the next -> LONGFI~2.TXT; the
    form of a bare 8.3 entry such as "LONGFI~1.TXT" counts, and so does
    the alias of the entry being renamed, still in place when the new
    name's alias is picked)
  * all nine taken: Linux writes XX####~D, hex digits and D from jiffies.
    The model keeps a HexAlias, "some alias nobody can name": lookups
    never match it and it counts as taking no form.
Lookups match an alias as Linux shows it (fat_search_long compares the
name with the long name and with the short one), ASCII-case-insensitively:
"/LONGFI~1.TXT" or "/longfi~1.txt" is longfilename.txt (create/mkdir
EEXIST; write, unlink, rename from and onto it, paths through it work).
No lookup can match two entries (a name that fits 8.3 has its own form
as short name, and short names are unique), so the model needs no
directory order, except where space runs out: the fixed root of FAT12
and FAT16 (FixedRoot, Model(root=...)) holds as many 32-byte slots as
the boot sector says, and fat_add_entries takes the first run of free
slots long enough for the new entry (1 for a bare 8.3 name, else one LFN
slot per 13 UTF-16 units + the short entry) or fails with ENOSPC. A
rename to a new name adds the new entry before it removes the old one;
replacing an existing entry reuses the target's slots. A renamed entry
keeps the alias of the entry it replaces, or gets a new one in the
target directory.
Not predictable: hex aliases. A script that spells one, or whose ~N form
a hex alias happens to hold (Linux then skips that N), can diverge from
the model; a hex alias holds a given form with a chance of 1 in 16^4 * 8
at most.
"""
import json
import os
import subprocess
from dataclasses import dataclass, field

from vfz import listing
from vfz.opscript import content

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
    bytes >= 0x7F clear both case flags in to_shortname_char)."""
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


@dataclass
class Node:
    name: str
    is_dir: bool
    data: bytearray = field(default_factory=bytearray)
    kids: dict = field(default_factory=dict)   # fold(name) -> Node
    parent: "Node" = None
    alias: object = None   # dual mode, long names: the 8.3 alias as Linux shows
                           # it (a str lookups also match) or a HexAlias
    case: tuple = None     # profiles with a "case_of" knob (mtools): the NT
                           # lower-case flags (base, ext) of the short entry the
                           # entry was made with; a rename keeps them
    slots: tuple = None    # (first, count) in a FixedRoot, for its entries


def slots_needed(name, rule="win95"):
    """Directory slots Linux writes for name (vfat_build_slots): a bare 8.3
    entry, or one LFN slot per 13 UTF-16 units and the short entry (alias
    or dummy: the same count in dual and nodual modes). rule: short_only's
    (winnt for the v3 patch, which stores "abc.txt" bare)."""
    return 1 if short_only(name, rule) else (utf16_len(name) + 12) // 13 + 1


class FixedRoot:
    """The slots of a FAT12/16 root: a fixed array (BPB root entry count),
    some taken before the script runs (the volume label)."""

    def __init__(self, count, taken=()):
        self.used = [False] * count
        for i in taken:
            if 0 <= i < count:
                self.used[i] = True

    def alloc(self, n):
        """First-fit run of n free slots, as fat_add_entries scans for it
        -> its first index, or None (ENOSPC)."""
        run = 0
        for i, u in enumerate(self.used):
            run = 0 if u else run + 1
            if run == n:
                for j in range(i - n + 1, i + 1):
                    self.used[j] = True
                return i - n + 1
        return None

    def free(self, slots):
        first, n = slots
        for j in range(first, first + n):
            self.used[j] = False


def root_for(profile, image):
    """The FixedRoot a model of profile starts from on image: the kernel
    profile (Linux and the core) fills a FAT12/16 root slot by slot; the
    mtools profile has its own slot rules and keeps an unbounded root."""
    return fixed_root_of(image) if profile == "kernel" else None


def fixed_root_of(image):
    """FixedRoot of a FAT12/16 image file (its root's size and the slots in
    use), or None for FAT32 (a root that grows like any directory)."""
    with open(image, "rb") as f:
        boot = f.read(512)
        bps = int.from_bytes(boot[11:13], "little")
        count = int.from_bytes(boot[17:19], "little")
        if not count or not bps:
            return None
        reserved = int.from_bytes(boot[14:16], "little")
        fat_secs = int.from_bytes(boot[22:24], "little")
        f.seek((reserved + boot[16] * fat_secs) * bps)
        raw = f.read(count * 32)
    taken = [i for i in range(len(raw) // 32) if raw[i * 32] not in (0, 0xE5)]
    return FixedRoot(count, taken)


class Model:
    """Apply ops one by one; results[i] is "ok" or an errno name."""

    def __init__(self, profile="kernel", names="nodual", root=None, rule="win95"):
        """names: "dual" (stock Linux, core-dual: long names get an 8.3
        alias, and a plain alias is a name lookups match) or "nodual" (the
        patch: dummies, which lookups never match). root: the FixedRoot of
        the image the script runs on (fixed_root_of), None = a root that
        never fills; rule: which names take a single slot there (short_only:
        winnt for the v3 writers)."""
        if profile not in PROFILES:
            raise ValueError(f"unknown model profile {profile!r}")
        if names not in ("dual", "nodual"):
            raise ValueError(f"names must be dual or nodual, not {names!r}")
        self.names = names
        self.profile = profile
        self.p = PROFILES[profile]
        self.root = Node("", True)
        self.fixed = root
        self.rule = rule
        self.results = []

    # ------------------------------------------------------------ lookup
    def _walk(self, comps):
        """Resolve existing components -> (node, errno)."""
        cur = self.root
        for c in comps:
            if not cur.is_dir:
                return None, "ENOTDIR"
            if c == ".":
                continue
            if c == "..":
                cur = cur.parent or self.root
                continue
            nxt = self._find(cur, c)
            if nxt is None:
                return None, "ENOENT"
            cur = nxt
        return cur, None

    def _find(self, d, leaf):
        """The entry of directory d that a lookup of leaf finds: by long
        name, or in dual mode by the shown form of an alias (fat_search_long
        compares both, ASCII-case-insensitively). A HexAlias is never
        matched: its digits cannot be predicted."""
        if not strip_dots(leaf):
            return None
        k = fold(leaf)
        n = d.kids.get(k)
        if n is None and self.names == "dual":
            for x in d.kids.values():
                if isinstance(x.alias, str) and fold(x.alias) == k:
                    return x
        if n is None and "lookup" in self.p:
            return self.p["lookup"](d, leaf)
        return n

    @staticmethod
    def _short(x):
        """The 8.3 name of x's short entry as Linux shows it (dual mode):
        its alias, or the name itself for a bare 8.3 entry."""
        if x.alias is not None:
            return x.alias
        return x.name if short_only(x.name) else None

    def _make_alias(self, d, name):
        """-> (alias, errno) of a new long name in d, as vfat_create_shortname
        picks it (dual mode; None without alias: nodual, or a bare 8.3 name).
        The candidates are compared byte for byte (vfat_find_form) with
        every short entry of d, the renamed entry's own included:
          * a plain form (the name fits 8.3, see plain_alias) is the alias
            if free, else the name is refused: EEXIST (so "é" after "É")
          * else BASE~1 .. BASE~9 (BASE: the first 6 characters of the
            base), the first one free (numtail is on by default)
          * all nine taken: a HexAlias (XX####~D from jiffies)."""
        if self.names != "dual" or short_only(name):
            return None, None
        taken = {self._short(x) for x in d.kids.values()}
        base, ext, plain = shortname_parts(name)
        if plain:
            a = _form(base, ext)
            return (None, "EEXIST") if a in taken else (a, None)
        for i in range(1, 10):
            a = _form(f"{base[:6]}~{i}", ext)
            if a not in taken:
                return a, None
        return HexAlias(base, ext), None

    def _split(self, path):
        return [c for c in path.split("/") if c]

    def _parent(self, path):
        comps = self._split(path)
        if not comps:
            return None, None, "EEXIST"
        par, err = self._walk(comps[:-1])
        if err:
            return None, comps[-1], err
        if not par.is_dir:
            return None, comps[-1], "ENOTDIR"
        return par, comps[-1], None

    def _name_err(self, leaf):
        return self.p.get("name_err", check_new_name)(leaf)

    def _stored(self, leaf):
        return self.p.get("store", strip_dots)(leaf)

    # ------------------------------------------------------------ ops
    def apply(self, ops):
        for op in ops:
            self.results.append(self.apply_one(op))
        return self.results

    def apply_one(self, op):
        paths = [a for k, a in zip(_KINDS[op.kind], op.args) if k == "s"]
        if any(len(p.encode("utf-8")) >= PATH_MAX for p in paths):
            return "ENAMETOOLONG"
        return getattr(self, "_op_" + op.kind)(*op.args)

    def _op_mkdir(self, path):
        return self._new(path, True, b"")

    def _op_create(self, path, size, seed):
        return self._new(path, False, content(seed, size))

    def _new(self, path, is_dir, data):
        par, leaf, err = self._parent(path)
        if err:
            return err
        if leaf in (".", ".."):
            return "EEXIST"
        if not is_dir and trailing_slash(path):
            return "EISDIR"         # open(O_CREAT) checks the slash before it looks
        if self._find(par, self._stored(leaf)) is not None:
            return "EEXIST"
        err = self._name_err(leaf)
        if err:
            return err
        n = Node(self._stored(leaf), is_dir, bytearray(data), parent=par)
        if "case_of" in self.p:
            n.case = self.p["case_of"](n.name)
        n.alias, err = self._make_alias(par, n.name)
        if err:
            return err
        ok, n.slots = self._take_slots(par, n.name)
        if not ok:
            return "ENOSPC"
        par.kids[fold(n.name)] = n
        return "ok"

    def _take_slots(self, d, name):
        """Room for name's entry in directory d (only a fixed root can be
        full) -> (False, None) for ENOSPC, nothing taken; else (True, the
        (first, count) slots taken, or None outside a fixed root)."""
        if self.fixed is None or d is not self.root:
            return True, None
        n = slots_needed(name, self.rule)
        first = self.fixed.alloc(n)
        return (False, None) if first is None else (True, (first, n))

    def _drop_slots(self, node):
        if node.slots is not None:
            self.fixed.free(node.slots)
            node.slots = None

    def _op_write(self, path, off, size, seed):
        node, err = self._walk(self._split(path))
        if err:
            return err
        if node.is_dir:
            return "EISDIR"
        if trailing_slash(path):
            return "ENOTDIR"
        if size == 0:              # pwrite of 0 bytes does not extend the file
            return "ok"
        d = node.data
        if len(d) < off:
            d.extend(b"\0" * (off - len(d)))
        d[off:off + size] = content(seed, size)
        return "ok"

    def _op_unlink(self, path):
        comps = self._split(path)
        node, err = self._walk(comps)
        if err:
            return err
        if node.is_dir:
            return "EISDIR"
        if trailing_slash(path):
            return "ENOTDIR"
        del node.parent.kids[fold(node.name)]
        self._drop_slots(node)
        return "ok"

    def _op_rmdir(self, path):
        comps = self._split(path)
        if comps and comps[-1] in (".", ".."):
            # do_rmdir resolves the parent first (rmdir "/a/.." without
            # /a is ENOENT), then "." is EINVAL and ".." ENOTEMPTY
            _, leaf, err = self._parent(path)
            return err or ("EINVAL" if leaf == "." else "ENOTEMPTY")
        node, err = self._walk(comps)
        if err:
            return err
        if node is self.root:
            return "EBUSY"
        if not node.is_dir:
            return "ENOTDIR"
        if node.kids:
            return "ENOTEMPTY"
        del node.parent.kids[fold(node.name)]
        self._drop_slots(node)
        return "ok"

    def _op_rename(self, src_path, dst_path):
        scomps = self._split(src_path)
        dcomps = self._split(dst_path)
        # do_renameat2: both parents first (the root's parent is itself),
        # then EBUSY for the root, "." or ".." as last component
        spar, err = self._walk(scomps[:-1])
        if err:
            return err
        if not spar.is_dir:
            return "ENOTDIR"
        dpar, err = self._walk(dcomps[:-1])
        if err:
            return err
        if not dpar.is_dir:
            return "ENOTDIR"
        if not scomps or not dcomps or scomps[-1] in (".", "..") or dcomps[-1] in (".", ".."):
            return "EBUSY"
        src = self._find(spar, scomps[-1])
        if src is None:
            return "ENOENT"
        # do_renameat2: unless the source is a directory, trailing slashes
        # on either path give ENOTDIR
        if not src.is_dir and (trailing_slash(src_path) or trailing_slash(dst_path)):
            return "ENOTDIR"
        leaf = dcomps[-1]
        # the target as it would be stored (the kernel's lookup strips
        # trailing dots anyway; mtools also drops trailing spaces, 'c ' is 'c')
        dst = self._find(dpar, self._stored(leaf))
        # lock_rename trap: source an ancestor of the target's parent
        a = dpar
        while a is not None:
            if a is src:
                return "EINVAL"
            a = a.parent
        if dst is not None:
            a = spar
            while a is not None:
                if a is dst:
                    return "ENOTEMPTY"
                a = a.parent
        if dst is src:
            if self.p.get("case_rename") == "apply" and src.name != self._stored(leaf):
                del spar.kids[fold(src.name)]
                src.name = self._stored(leaf)
                spar.kids[fold(src.name)] = src
            return "ok"
        if dst is not None:
            if src.is_dir and not dst.is_dir:
                return "ENOTDIR"
            if not src.is_dir and dst.is_dir:
                return "EISDIR"
            if dst.is_dir and dst.kids:
                return "ENOTEMPTY"
            newname, newalias = dst.name, dst.alias     # the target's entry is reused
            newslots = dst.slots
            del dpar.kids[fold(dst.name)]
            if self.p.get("replace") == "respell":
                newname = self._moved(src, self._stored(leaf))
                newalias, err = self._make_alias(dpar, newname)
                if err:
                    return err
        else:
            err = self._name_err(leaf)
            if err:
                return err
            newname = self._stored(leaf)
            newname = self._moved(src, newname)
            newalias, err = self._make_alias(dpar, newname)   # the source still in place
            if err:
                return err
            ok, newslots = self._take_slots(dpar, newname)   # before the source goes
            if not ok:
                return "ENOSPC"
        self._drop_slots(src)
        src.slots = newslots
        del spar.kids[fold(src.name)]
        src.name = newname
        src.alias = newalias
        src.parent = dpar
        dpar.kids[fold(newname)] = src
        return "ok"

    def _moved(self, src, new):
        """The spelling a renamed entry ends up with (profile knob "moved")."""
        f = self.p.get("moved")
        return f(src.name, new, src.case) if f else new

    # ------------------------------------------------------------ output
    def entries(self):
        out = []

        def rec(node, prefix):
            for k in node.kids.values():
                p = prefix + "/" + k.name
                if k.is_dir:
                    out.append(listing.entry(p, "dir"))
                    rec(k, p)
                else:
                    out.append(listing.entry(p, "file", bytes(k.data)))
        rec(self.root, "")
        return sorted(out, key=lambda e: e["path"])

    def aliases(self):
        """{path: alias} of every entry: the 8.3 alias as Linux shows it, a
        HexAlias, or None (a bare 8.3 entry; every entry in nodual mode)."""
        out = {}
        stack = [(self.root, "")]
        while stack:
            d, path = stack.pop()
            for k in d.kids.values():
                out[path + "/" + k.name] = k.alias
                if k.is_dir:
                    stack.append((k, path + "/" + k.name))
        return out

    def dir_stats(self, rule="win95"):
        """[(path, entries with LFN slots, bare 8.3 entries, is_root)]."""
        out = []

        def rec(node, path):
            lfn = sum(needs_lfn(k.name, rule) for k in node.kids.values())
            out.append((path or "/", lfn, len(node.kids) - lfn, node is self.root))
            for k in node.kids.values():
                if k.is_dir:
                    rec(k, path + "/" + k.name)
        rec(self.root, "")
        return out

    def del_alias_count(self):
        """Entries whose dual alias holds 0x7F (fsck.fat calls it a bad name)."""
        n = 0
        stack = [self.root]
        while stack:
            d = stack.pop()
            for k in d.kids.values():
                n += _alias_has_del(k.alias) if self.names == "dual" else alias_has_del(k.name)
                if k.is_dir:
                    stack.append(k)
        return n

    def lfn_count(self, rule="win95"):
        """Entries that get LFN slots (and so a dummy in nodual modes)."""
        n = 0
        stack = [self.root]
        while stack:
            d = stack.pop()
            for k in d.kids.values():
                n += needs_lfn(k.name, rule)
                if k.is_dir:
                    stack.append(k)
        return n


_KINDS = {"mkdir": "s", "create": "snn", "write": "snnn", "rename": "ss",
          "unlink": "s", "rmdir": "s"}


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
    Case tests are Python's (glibc's iswlower/towupper agree on letters;
    not on titlecase digraphs such as 'ǅ', nor does a translit that glibc
    cuts in its first alternative: mtools makes 'Ǆ' 'D', the iconv program
    '?')."""
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
            u = c.upper()
            if c.islower():
                if case == "U":
                    return None
                case, c = "L", (u if len(u) == 1 else c)
            elif c.isupper():
                if case == "L":
                    return None
                case = "U"
            up.append(c)
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
    base = out[0][0].upper().ljust(8)
    if base[:3] in (b"CON", b"AUX", b"PRN", b"NUL") and base[3:] == b"     " or \
            base[:3] in (b"COM", b"LPT") and b"1" <= base[3:4] <= b"4" and base[4:] == b"    ":
        return None
    shown = out[0][1] + ("." + out[1][1] if len(out) > 1 and out[1][1] else "")
    return shown if shown != name.rstrip(".") else None


def _mtools_store(leaf):
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
    return _short_able(name) and base.upper() not in MTOOLS_RESERVED


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
    return tuple(any(c.islower() for c in x) for x in _mtools_parts(name))


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
        # all spaces: nothing left (ENOENT); all dots ('...'): mtools
        # refuses the name (measured: mcopy, mmd, mmove exit 1) where
        # Linux strips it to nothing (ENOENT)
        return "ENOENT" if not s else "EINVAL"
    return check_new_name(s.rstrip(".") + ("x" if s.endswith(".") and s.rstrip(".") else ""))


def _mtools_lookup(d, leaf):
    """The mtools writer (vfz/oracles/mtools.py) finds names as mtools does,
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
PROFILES = {
    "kernel": {},
    "mtools": {
        "name_err": _mtools_name_err,
        "lookup": _mtools_lookup,
        "replace": "respell",
        "store": _mtools_store,
        "moved": _mtools_moved,
        "case_of": _mtools_case_of,
    },
}


def expected(ops, profile="kernel", names="nodual"):
    """-> (results, entries) of applying ops to an empty volume."""
    m = Model(profile, names)
    m.apply(ops)
    return m.results, m.entries()


# ---------------------------------------------------------------- exceptions
# Named, documented ways in which an implementation legitimately differs
# from the model. Each has: who (oracle name, reader or writer side), why,
# and a predicate on (expected component, actual component) for names, or
# on op results. The driver applies them before comparing and reports which
# exceptions were used; everything else is a divergence.
@dataclass
class Exception_:
    name: str
    oracle: str          # reader or writer oracle name
    side: str            # "reader" | "writer"
    reason: str


EXCEPTIONS = [
    Exception_("mtools-lcase-nonascii", "mtools", "reader",
               "mtools shows a bare 8.3 entry whose NT case byte says 'lower case' with its "
               "non-ASCII letters still in upper case ('cafÉ.txt' for CAF\\x90    TXT + 0x18); "
               "Linux lower-cases them through the cp437 table"),
    Exception_("mtools-astral-read", "mtools", "reader",
               "mtools converts LFN UTF-16 unit by unit: each character outside the BMP (a "
               "surrogate pair) is listed as '__'"),
    Exception_("mtools-astral-ambiguous", "mtools", "reader",
               "names that differ only in characters outside the BMP look the same to mtools "
               "('/\U0001F600x' and '/\U0002000Bx' both list as '/__x'): it lists both under one "
               "name and cannot extract either by path, so they (and what lies below them) are "
               "compared by visible path and type only, not by content"),
    Exception_("mtools-reserved-names", "mtools", "writer",
               "mtools refuses to create a bare reserved DOS device name (CON, NUL, AUX, PRN, "
               "COM1-COM4, LPT1-LPT4; 'nul.txt', 'CON.' and COM5 are accepted); Linux 6.1 "
               "accepts them all"),
    Exception_("mtools-case-rename", "mtools", "writer",
               "renaming an entry to a respelling of its own name: Linux 6.1 keeps the old "
               "spelling and answers 0 (vfs_rename sees the same inode); mren refuses (name "
               "clash, exit 1) and also keeps the old spelling"),
    Exception_("mtools-mmove-upcase", "mtools", "writer",
               "mmove/mren to a name that fits 8.3 in lower case stores it upper case, without "
               "the NT lower-case bits, when the source had a long name (the new entry takes "
               "the source's NT case byte; modelled in the mtools profile: _mtools_moved, for "
               "non-ASCII names too: 'éa' -> 'ÉA'); Linux keeps the spelling"),
    Exception_("mtools-trailing-dots", "mtools", "writer",
               "mtools keeps trailing dots of long names ('dots...') and drops trailing spaces "
               "('trail ' -> 'trail', where Linux answers EINVAL); Linux strips trailing dots "
               "(modelled in the mtools profile: _mtools_store). mren to a respelling that adds "
               "trailing dots ('c.o' -> 'C.O.') is a new name to mtools and applied; Linux "
               "finds the entry itself and keeps 'c.o'"),
    Exception_("mtools-translit", "mtools", "writer",
               "mtools makes the 8.3 form of a new name through iconv CP437//TRANSLIT, one byte "
               "per character, and writes a bare 8.3 entry with NO long name when the result "
               "needs none: characters cp437 lacks are transliterated and cut ('œ' -> 'o', "
               "'aœ' -> 'ao', 'ÿ' -> 'y', 'x€' -> 'xe'), the name is lost and later ops that "
               "spell it find nothing; Linux keeps every name (modelled in the mtools profile: "
               "_mtools_translit_short)"),
    Exception_("mtools-nonascii-case-clash", "mtools", "writer",
               "mtools folds non-ASCII case when it looks for clashes ('É' clashes with 'é'); "
               "Linux with iocharset=ascii folds ASCII only: a create of 'é' next to 'É' is "
               "EEXIST, and a rename of 'σB' to 'ΣB' (a new name for Linux) is refused by mren "
               "and the old spelling stays (lookups modelled in the mtools profile: "
               "_mtools_lookup)"),
    Exception_("mtools-astral-truncated", "mtools", "writer",
               "mtools writes each character outside the BMP as its low 16 bits "
               "(U+1D518 -> U+D518, U+1F600 -> U+F600) instead of a surrogate pair; where the "
               "low 16 bits are a control character (U+2000B -> U+000B) vfat-check finds the "
               "long name invalid, one finding (campaign.mtools_check_kind)"),
    Exception_("mtools-long-utf8", "mtools", "writer",
               "mtools 4.0.32 mishandles a name whose UTF-8 form is over 255 bytes (measured): "
               "mcopy/mmd/mmove/mren die with SIGSEGV on 256+ ASCII characters (a 'n255' name, "
               "or 255 characters plus a trailing dot mtools keeps), a name over 260 bytes "
               "(130 'é', 87 CJK, 66 astral) is written cut, with stray characters at its end "
               "('x' + 130 'é' -> 'xéé...éÃ', for a directory uninitialised bytes), mmd then "
               "fails at random (exit 1, no message) and later lookups through the name find "
               "nothing; mcopy -s of such a file to the host dies with 'stack smashing detected' "
               "(the host refuses names over 255 bytes). Recognised when the writer's first "
               "divergence (a result, its own failure, or the image's names per the core's "
               "listing) is at or after an op that names such a component "
               "(vfz.model.mtools_long_names) and, for a result, on such an op; for the mtools "
               "reader, when mcopy died of stack smashing and the tree holds such a file. One "
               "finding per role; the readers check the script cut before that op"),
    Exception_("mtools-no-dir-slots", "mtools", "writer",
               "mtools grows a directory by at most one cluster for a new entry: a long name "
               "needing more free slots than the directory's last cluster has left plus one "
               "new cluster fails with 'No directory slots' (exit 1; e.g. a 250-character name, "
               "21 slots, in a FAT32 root of 512-byte clusters holding 11 entries), where Linux "
               "grows the directory as far as needed. Recognised from mtools' own message on an "
               "op the model expects to succeed, in a directory that can grow (not the FAT12/16 "
               "root, which is full for every writer); one finding; the readers check the "
               "script cut before that op"),
    Exception_("mtools-mmove-grow-abort", "mtools", "writer",
               "mmove/mren abort ('dirCache.c:198: freeDirCacheRange: Assertion `entry->beginSlot "
               "== beginSlot' failed', SIGABRT) when the new long name does not fit in the "
               "directory's present clusters and the directory must grow (measured: a 170-"
               "character name in a fresh FAT16 subdirectory of 512-byte clusters holding one "
               "file, 190 characters in a FAT32 root holding one entry; 160 characters fit), "
               "leaving the directory half changed; Linux grows it. Recognised from that "
               "assertion in the rename's own mtools output; one finding; the readers check the "
               "script cut before that op"),
    Exception_("mtools-trailing-dot-unopenable", "kernel, kernel-nodual, kernel-nodual-v3, vfat-check",
               "reader",
               "mtools keeps trailing dots (exception mtools-trailing-dots: 'EB...', 'Y..'); "
               "Linux 6.1 lists such an entry but cannot open it (its lookup strips the dots and "
               "finds no 'EB'): the file's size and contents are unknown (ENOENT) and a "
               "directory's entries are missing. Recognised when every difference of the "
               "reader's listing is such an entry or lies under one; one finding per reader. "
               "vfat-check says why: 'long name ends with '.'' (campaign.mtools_check_kind)"),
    Exception_("fsck-v1-dots", "dosfsck", "reader",
               "any number of '.'/'..' found free entries on v1 images, tolerated only when no "
               "image is given to predict from (oracles.dosfsck.expected_complaints without "
               "image=) and the repair probe loses no data; the cause is fsck-v1-lfn-cross, "
               "which the campaign and `diff` predict exactly"),
    Exception_("fsck-v1-lfn-cross", "dosfsck", "reader",
               "fsck.fat 4.2 renames each bad short name (a v1 dummy, a 0x7F alias) and then "
               "deletes its LFN slots by writing a deleted entry at every 32 bytes from the "
               "first slot's disk offset up to the short entry's, as if the directory were "
               "contiguous: when the set crosses into a later, non-adjacent cluster it "
               "overwrites every cluster in between (in -n mode in memory, so directories "
               "scanned later read as empty: '.'/'..' free, their entries unseen, their "
               "clusters 'Reclaimed', FAT32 free count 'wrong'; fsck.fat -a writes it: live "
               "directories and file data destroyed). Predicted exactly by simulating the scan "
               "on the image (oracles.dosfsck.FsckSim); reported as one finding with this "
               "kind whenever fsck.fat's output is exactly the prediction"),
    Exception_("v3-dummy-05", "7z, grub", "reader",
               "a v3 dummy whose first byte is 0x05 (the patch draws it from its invalid set, "
               "about one long name in 40; FAT stores a leading 0xE5 as 0x05): 7-Zip 16.02 and "
               "GRUB 2.06 then lose the long name. 7-Zip shows the dummy's bytes as the name; "
               "GRUB shows a directory under them and drops a file (its dummy holds '/'). "
               "Linux, fsck.fat and mtools read the name. A real finding about v3 images, "
               "reported by the campaign as one finding with this kind per reader, whatever "
               "the op and the names"),
    Exception_("fsck-del-alias", "dosfsck", "reader",
               "for a long name with DEL (U+007F) among the characters that make its alias, "
               "Linux (dual) writes the byte 0x7F into the 8.3 alias and fsck.fat 4.2 reports it "
               "as a bad short name: expected once per such entry on dual images"),
    Exception_("grub-raw-oem-bytes", "grub", "reader",
               "GRUB prints a bare 8.3 name's bytes >= 0x80 raw (cp437, not UTF-8), so every "
               "non-ASCII character of a short-only name reads as U+FFFD"),
    Exception_("grub-lowercase-83", "grub", "reader",
               "GRUB lists a bare 8.3 entry (no LFN) in lower case regardless of the NT case byte"),
    Exception_("7z-nonascii-short", "7z", "reader",
               "7-Zip (p7zip 16.02) lists and extracts a bare 8.3 name's bytes >= 0x80 raw "
               "(cp437 bytes, e.g. 'caf\\x90.txt'), not decoded to Unicode: each non-ASCII "
               "character of a short-only name reads as U+FFFD"),
]
EXC_BY_NAME = {e.name: e for e in EXCEPTIONS}
V3_DUMMY_05 = "v3-dummy-05"
# Known failures of the mtools writer itself (not of the model): the
# campaign (vfz.campaign.mtools_known_failure, trailing_dot_explains) files
# each as one finding with this kind, op and name class '-', and cuts the
# script before the failing op for the readers (see EXCEPTIONS).
MTOOLS_LONG_UTF8 = "mtools-long-utf8"
MTOOLS_NO_DIR_SLOTS = "mtools-no-dir-slots"
MTOOLS_TRAILING_DOT = "mtools-trailing-dot-unopenable"
MTOOLS_MMOVE_GROW = "mtools-mmove-grow-abort"
MTOOLS_ASTRAL_TRUNCATED = "mtools-astral-truncated"
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
        for c in comps + [_mtools_store(c) for c in comps[-1:]]:
            if mtools_too_long(c) and c not in out:
                out.append(c)
    return out


def _upper_nonascii(s):
    # one character each: 'ß' stays (its cp437 byte E1 has no upper case)
    return "".join(c.upper() if not c.isascii() and len(c.upper()) == 1 else c for c in s)


def _short_able(name):
    """Could some writer (mtools does) store this name as a bare 8.3 entry:
    every character one cp437 byte, 8.3 shape, one case per part."""
    try:
        name.encode("cp437")
    except UnicodeEncodeError:
        return False
    return short_only("".join(c if c.isascii() else ("X" if c.isupper() or not c.isalpha() else "x")
                              for c in name), "winnt")


def _bare_shown(name):
    """Could name be what Linux shows for a bare 8.3 entry: _short_able,
    where a letter with no one-character upper case ('ß', cp437 E1, stays
    E1 in an upper-case name) fits either case of its part ('ßAO' is what
    mmove makes of 'ßaœ')."""
    return _short_able(name) or _short_able(
        "".join("0" if not c.isascii() and len(c.upper()) != 1 else c for c in name))


def name_exception(oracle, side, exp, act):
    """Name of the exception that explains component act != exp, or None."""
    if exp == act:
        return None
    if oracle == "mtools" and side == "reader":
        if act == _upper_nonascii(exp):
            return "mtools-lcase-nonascii"
        if act in (mtools_shown(exp), mtools_shown(_upper_nonascii(exp))):
            return "mtools-astral-read"
    if oracle == "mtools" and side == "writer":
        if act == exp.upper() and short_only(exp.upper()):
            return "mtools-mmove-upcase"
        if act.endswith(".") and (act.rstrip(" .") == exp.rstrip(" .")
                                  or fold(act.rstrip(" ")) == fold(exp.rstrip(" "))):
            return "mtools-trailing-dots"
        if act == "".join(chr(ord(c) & 0xFFFF) for c in exp):
            return MTOOLS_ASTRAL_TRUNCATED
        if act.lower() == exp.lower() and not exp.isascii() and fold(act) != fold(exp):
            return "mtools-nonascii-case-clash"
    if oracle == "grub" and side == "reader":
        if act == exp.lower() and short_only(exp, "winnt"):
            return "grub-lowercase-83"
        if not exp.isascii() and _bare_shown(exp) and act == _raw_oem(exp, True):
            return "grub-raw-oem-bytes"
    if oracle == "7z" and side == "reader":
        if not exp.isascii() and _bare_shown(exp) and act == _raw_oem(exp, False):
            return "7z-nonascii-short"
    return None


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


def result_exception(oracle, op, exp, act):
    """Name of the exception that explains an op result act != exp."""
    if oracle != "mtools":
        return None
    target = op.args[1] if op.kind == "rename" else op.args[0]
    leaf = ([c for c in target.split("/") if c] or [""])[-1]
    if op.kind in ("create", "mkdir", "rename") and act == "EINVAL" and exp == "ok":
        if _mtools_reserved(leaf):
            return "mtools-reserved-names"
        if op.kind == "rename":
            src = ([c for c in op.args[0].split("/") if c] or [""])[-1]
            # the spelling on disk may differ from both (rename "/ba" "/ba"
            # of "BA"): the writer calls mren only when it does
            if fold(src) == fold(leaf):
                return "mtools-case-rename"
            if strip_dots(src).lower() == strip_dots(leaf).lower():
                return "mtools-nonascii-case-clash"
    if act == "EEXIST" and exp == "ok" and op.kind in ("create", "mkdir") and not leaf.isascii():
        return "mtools-nonascii-case-clash"
    return None


def dumps_expected(ops, profile="kernel"):
    res, ent = expected(ops, profile)
    return json.dumps({"results": res}) + "\n" + listing.dumps(ent)
