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
  mtools           -- the mtools writer (vfz/oracles/mtools/writer.py)

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
from dataclasses import dataclass, field

from vfz import listing
from vfz.opscript import OPS, content
from vfz.model.names import (HexAlias, PATH_MAX, _alias_has_del, _form, alias_has_del, check_new_name,
                             fold, needs_lfn, short_only, shortname_parts, strip_dots, trailing_slash)
from vfz.model.profiles import profile_knobs
from vfz.model.inode import InodeOps, label_slot
from vfz.model.space import SpaceOps
from vfz.model.readout import ReadoutOps
from vfz.model.root import DirTable, FixedRoot, fixed_root_of, root_for, slots_needed  # noqa: F401


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
    slots: tuple = None    # (first, count) in its directory's slot table, when one is kept
    table: object = None   # a directory's own slots (vfz.model.root: DirTable) under a Space
    attr: int = None       # the FAT attribute byte (vfz.model.inode)
    mtime: int = None      # seconds; None: stamped by the writer's clock
    atime: int = None
    mmu: int = None        # a file's mmu_private under a Space (vfz.model.space); None: its
                           # size, as for an inode read from disk

    def __post_init__(self):
        if self.attr is None:
            self.attr = 0x10 if self.is_dir else 0x20   # vfat_build_slots


class Model(InodeOps, SpaceOps, ReadoutOps):
    """Apply ops one by one; results[i] is "ok" or an errno name."""

    def __init__(self, profile="kernel", names="nodual", root=None, rule="win95", space=None):
        """names: "dual" (stock Linux, core-dual: long names get an 8.3
        alias, and a plain alias is a name lookups match) or "nodual" (the
        patch: dummies, which lookups never match). root: the FixedRoot of
        the image the script runs on (fixed_root_of), None = a root that
        never fills; rule: which names take a single slot there (short_only:
        winnt for the v3 writers)."""
        knobs = profile_knobs(profile)
        if names not in ("dual", "nodual"):
            raise ValueError(f"names must be dual or nodual, not {names!r}")
        self.names = names
        self.profile = profile
        self.p = knobs
        self.root = Node("", True)
        self.fixed = root
        self.rule = rule
        self.space = space      # data clusters (vfz.model.space), None: unbounded
        if space is not None and root is None and space.root is not None:
            clusters, used, label = space.root      # a FAT32 root grows as directories do
            self.root.table = DirTable(max(space.cs // 32, 1), clusters, used, label)
        self.results = []
        self.label = None       # the label a label op set (vfz.model.inode)

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
        if "findable" in self.p and not self.p["findable"](leaf):
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
        paths = [a for k, a in zip(OPS[op.kind], op.args) if k == "s"]
        if any(len(p.encode("utf-8")) >= PATH_MAX for p in paths):
            return "ENAMETOOLONG"
        if "path_err" in self.p:
            err = self.p["path_err"](op)
            if err:
                return err
        return getattr(self, "_op_" + op.kind)(*op.args)

    def _op_mkdir(self, path):
        return self._new(path, True, b"")

    def _op_create(self, path, size, seed):
        if self.space is None or size == 0:
            return self._new(path, False, content(seed, size))
        r = self._new(path, False, b"")        # creat(), then the write (vfz.model.space)
        if r != "ok":
            return r
        node, _ = self._walk(self._split(path))
        return self._fill(node, 0, size, seed)

    def _new(self, path, is_dir, data):
        par, leaf, err = self._parent(path)
        if err:
            if self.p.get("name_first") and leaf not in (None, ".", "..") \
                    and (is_dir or not trailing_slash(path)):
                # the writer checks the new leaf before it walks the parent
                return self._name_err(leaf) or err
            return err
        if leaf in (".", ".."):
            return "EEXIST"
        if not is_dir and trailing_slash(path):
            return "EISDIR"         # open(O_CREAT) checks the slash before it looks
        if self.p.get("leaf_name_first"):
            err = self._name_err(leaf)      # the writer checks the leaf before it looks
            if err:
                return err
        if self._find(par, self._stored(leaf)) is not None:
            return "EEXIST"
        if is_dir and self.space is not None and self.space.free < 1:
            return "ENOSPC"             # fat_alloc_new_dir comes before the name's checks
        err = self._name_err(leaf)
        if err:
            return err
        n = Node(self._stored(leaf), is_dir, bytearray(data), parent=par)
        n.attr = self.p.get("dir_attr", n.attr) if is_dir else n.attr
        if "case_of" in self.p:
            n.case = self.p["case_of"](n.name)
        n.alias, err = self._make_alias(par, n.name)
        if err:
            return err
        if is_dir and self.space is not None:
            self.space.free -= 1        # fat_alloc_new_dir, before vfat_add_entry
            n.table = DirTable.new_dir(self.space.cs)
        ok, n.slots = self._take_slots(par, n.name)
        if not ok:
            if is_dir and self.space is not None:
                self.space.free += 1    # the new directory's cluster is given back
            return "ENOSPC"
        par.kids[fold(n.name)] = n
        self._dir_changed(par)
        return "ok"

    def _table(self, d):
        """Directory d's slot table: the fixed root's, a growing one (under
        a Space), or None (slots not kept: the directory never fills)."""
        return self.fixed if d is self.root and self.fixed is not None else d.table

    def _take_slots(self, d, name):
        """Room for name's entry in directory d (a fixed root full, or no
        cluster left to grow d) -> (False, None) for ENOSPC, nothing taken;
        else (True, the (first, count) slots taken, or None where slots are
        not kept)."""
        t = self._table(d)
        if t is None:
            return True, None
        n = slots_needed(name, self.rule)
        first = t.alloc(n, self.space)
        return (False, None) if first is None else (True, (first, n))

    def _drop_slots(self, node):
        if node.slots is not None:
            self._table(node.parent).free(node.slots)
            node.slots = None

    def _dir_clusters(self, node):
        """The clusters a directory holds (freed by rmdir or a replacing rename)."""
        return node.table.clusters if node.table is not None else 1

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
        if self._ro_refused(node, "write"):
            return "EACCES"
        if self.space is not None:
            return self._fill(node, off, size, seed)
        self._stamp_write(node)    # fat_write_end, file_update_time: the writer's clock
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
        if self.space is not None:
            self.space.release(len(node.data))
        self._dir_changed(node.parent, removed=True)
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
        if self.space is not None:
            self.space.free += self._dir_clusters(node)
        self._dir_changed(node.parent, removed=True)
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
            if self.space is not None:      # the replaced entry's clusters are freed
                self.space.free += self._dir_clusters(dst) if dst.is_dir else self.space.clusters(len(dst.data))
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
        self._dir_changed(spar, removed=True)
        if dst is None:
            self._dir_changed(dpar)
        return "ok"

    def _moved(self, src, new):
        """The spelling a renamed entry ends up with (profile knob "moved")."""
        f = self.p.get("moved")
        return f(src.name, new, src.case) if f else new

    # ------------------------------------------------------------ output


def expected(ops, profile="kernel", names="nodual"):
    """-> (results, entries) of applying ops to an empty volume."""
    m = Model(profile, names)
    m.apply(ops)
    return m.results, m.entries()



def dumps_expected(ops, profile="kernel"):
    res, ent = expected(ops, profile)
    return json.dumps({"results": res}) + "\n" + listing.dumps(ent)
