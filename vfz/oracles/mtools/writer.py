"""The mtools writer: POSIX outcomes decided from mdir's view, ops done by mmd/mcopy/mmove/mdel/mrd.

mtools has no errno, prompts on clashes and moves *into* an existing
directory (mv semantics), so before each op the writer lists the image
and decides the POSIX outcome from what mtools itself sees (ENOENT,
ENOTDIR, EEXIST, EISDIR, ENOTEMPTY, EINVAL for a move into its own
subtree; a name is found by its long name or, as Linux and mtools' own
clash check do, by its 8.3 alias, read from the directory bytes by the
core); an mtools command that then fails is reported as EINVAL (mtools
refused the name) with its stderr kept in raw. The writer's named
exceptions are recognised in exceptions.py.
"""
import os
import shutil
import tempfile

from vfz.fatimg import short_text
from vfz.model import trailing_slash
from vfz.model.profiles import mtools_store
from vfz.opscript import META_KINDS, content
from vfz.oracles import Writer
from vfz.oracles.mtools import exceptions as mx
from vfz.oracles.mtools.exceptions import ALIAS_NOTE
from vfz.oracles.mtools.meta import label_case, meta_op, rewrite, time_wrap
from vfz.oracles.mtools.tool import list_paths, mpath, mtarget, mtools_env
from vfz.proc import run


def _fold(comp):
    """How the writer matches names when deciding the POSIX outcome of a
    lookup: case-insensitive for every letter, as mtools itself does (not
    only ASCII: 'É' clashes with 'é'), trailing dots ignored as Linux
    does; trailing spaces count (mtools and Linux find no 'c ' for 'c')."""
    return comp.rstrip(".").lower()


def _fold_new(leaf):
    """The key of the name mtools stores for a new leaf (mkdir, create,
    rename target), as vfz.model.mtools_store spells it: trailing spaces
    dropped, each character outside the BMP cut to its low 16 bits, a
    transliterated bare 8.3 name ('œ' -> 'o'). mtools' own clash check
    compares the uncut name and would make a second entry of the same
    name ('😀' twice): the writer answers EEXIST, as Linux would for the
    name on disk.

    Why the glue shares this rule with the model's mtools profile: the
    refusal is the harness's own (Linux's precondition, emulated), and it
    needs mtools' stored spelling before mtools writes. The rule is not
    taken on trust from the model: tests/test_mtools_store.py holds it
    against mtools itself (each name written by mcopy/mmd on a fresh image
    and read back from the directory entries), so a wrong rule fails there
    rather than hiding behind the model's agreement."""
    return _fold(mtools_store(leaf))


def _could_be_short(leaf):
    """Could leaf, as a lookup spells it, be the shown form of an 8.3
    entry (at most 8 + 3 cp437 bytes, one dot)? Only such a leaf can find an
    entry through its alias, so only then are the short names read."""
    s = leaf.rstrip(".")
    base, dot, ext = s.partition(".")
    if not base or "." in ext or len(base) > 8 or len(ext) > 3:
        return False
    try:
        s.encode("cp437")
    except UnicodeEncodeError:
        return False
    return True


def short_names(image, timeout):
    """{path: the 8.3 name of its short entry as lookups match it} of the
    entries of image that have a long name, read by the core (its listing:
    the directory bytes, not mtools' view of them); {} when it cannot read."""
    from vfz.oracles.evidence import core_listing
    return {e["path"]: short_text(bytes.fromhex(e["short"])) for e in core_listing(image, timeout) or ()
            if e.get("lfn") and not e.get("dummy") and e.get("short")}


class _Tree:
    """The image's tree as mtools lists it (mdir), for deciding each op's
    POSIX outcome. A lookup matches a long name, or else the 8.3 alias of
    an entry that has a long name (Linux's fat_search_long compares both;
    mtools' own clash check sees the alias too: `mcopy -D s` of LONGFI~1.TXT
    beside longfilename2.txt skips). The aliases are read only when a
    lookup needs them (short_names). via: [(leaf, path)] of the lookups of
    this op that found an entry through its alias, the evidence of the
    exception mtools-alias-lookup (the model does not predict mtools'
    aliases)."""

    def __init__(self, paths, image=None, timeout=30.0):
        self.kids = {"/": {}}
        self.isdir = {"/": True}
        self.image, self.timeout = image, timeout
        self.aliases = None      # parent -> {fold(alias): path}, read when first needed
        self.via = []
        for s, d in sorted(paths, key=lambda x: x[0].count("/")):
            if not s:
                continue
            parent, _, leaf = s.rpartition("/")
            parent = parent or "/"
            self.kids.setdefault(parent, {})[_fold(leaf)] = s
            self.isdir[s] = d
            if d:
                self.kids.setdefault(s, {})

    def find(self, parent, leaf, key=None):
        """The path of the entry of parent a lookup of leaf finds, or None.
        key: the long-name key to try first (_fold(leaf) by default)."""
        hit = self.kids.get(parent, {}).get(_fold(leaf) if key is None else key)
        if hit is not None or self.image is None or not _could_be_short(leaf):
            return hit
        if self.aliases is None:
            self.aliases = {}
            for path, short in short_names(self.image, self.timeout).items():
                par = path.rpartition("/")[0] or "/"
                if par in self.kids and path in self.isdir:
                    self.aliases.setdefault(par, {})[_fold(short)] = path
        hit = self.aliases.get(parent, {}).get(_fold(leaf))
        if hit is not None:
            self.via.append((leaf, hit))
        return hit

    def resolve(self, path):
        """-> (actual path or None, errno or None) for an existing path."""
        cur = "/"
        comps = [c for c in path.split("/") if c]
        for i, c in enumerate(comps):
            if not self.isdir.get(cur):
                return None, "ENOTDIR"
            if c == ".":
                continue
            if c == "..":
                cur = cur.rpartition("/")[0] or "/"
                continue
            nxt = self.find(cur, c)
            if nxt is None:
                return None, "ENOENT"
            cur = nxt
        return cur, None

    def parent_of(self, path):
        """-> (actual parent path, leaf as written, errno)."""
        comps = [c for c in path.split("/") if c]
        if not comps:
            return None, "", "EBUSY"
        par, err = self.resolve("/" + "/".join(comps[:-1]))
        if err:
            return None, comps[-1], err
        if not self.isdir.get(par):
            return None, comps[-1], "ENOTDIR"
        return par, comps[-1], None


class MtoolsWriter(Writer):
    name_exception = staticmethod(mx.writer_name_exception)
    result_exception = staticmethod(mx.result_exception)
    known_failure = staticmethod(mx.known_failure)
    explain = staticmethod(lambda ev: time_wrap(ev) or label_case(ev) or mx.writer_explain(ev))

    def __init__(self, name="mtools", **cfg):
        self.name = name


    def _m(self, w, argv, timeout):
        p = run(argv, timeout=timeout, env=mtools_env())
        w.raw += p.raw()
        return p

    def _apply(self, image, ops, timeout, w):
        deadline_each = max(5.0, timeout / 4)
        tmp = tempfile.mkdtemp(prefix="vfz-mtools-w-")
        try:
            for op in ops:
                paths, p = list_paths(image, deadline_each)
                if paths is None:
                    w.raw += p.raw()
                    w.error = f"mdir failed before line {op.line}: {p.error or p.errtext.strip()[:200]}"
                    return
                tree = _Tree(paths, image, deadline_each)
                res = self._op(image, op, tree, tmp, deadline_each, w)
                w.results.append(res)
                w.raw += f"# line {op.line}: {op} -> {res}\n"
                for leaf, path in tree.via:
                    w.raw += f"# line {op.line}: {ALIAS_NOTE} {leaf!r} -> {path!r}\n"
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def _op(self, image, op, tree, tmp, to, w):
        I = ["-i", image]
        k = op.kind
        if k in META_KINDS:
            return meta_op(self, image, op, tree, tmp, to, w)
        if k in ("mkdir", "create"):
            par, leaf, err = tree.parent_of(op.path)
            if err == "EBUSY":     # the root itself ("/", "//"): it exists
                return "EEXIST"
            if err:
                return err
            if leaf in (".", ".."):
                return "EEXIST"
            if k == "create" and trailing_slash(op.path):
                return "EISDIR"
            if tree.find(par, leaf, _fold_new(leaf)) is not None:
                return "EEXIST"
            if k == "mkdir":
                        p = self._m(w, ["mmd", *I, "-D", "s", mtarget(par, leaf)], to)
            else:
                src = os.path.join(tmp, "data")
                with open(src, "wb") as f:
                    f.write(content(op.args[2], op.args[1]))
                p = self._m(w, ["mcopy", *I, "-D", "s", src, mtarget(par, leaf)], to)
            return self._rc(p)
        if k == "write":
            cur, err = tree.resolve(op.path)
            if err:
                return err
            if tree.isdir.get(cur):
                return "EISDIR"
            if trailing_slash(op.path):
                return "ENOTDIR"
            off, size, seed = op.args[1], op.args[2], op.args[3]
            if size == 0:          # pwrite of 0 bytes does not extend the file
                return "ok"
            f = os.path.join(tmp, "data")
            if os.path.exists(f):
                os.unlink(f)
            p = self._m(w, ["mcopy", *I, "-n", mpath(cur), f], to)
            if p.error or p.rc != 0 or not os.path.exists(f):
                return "EIO" if not p.error else "ETIMEDOUT"
            with open(f, "rb") as fh:
                data = bytearray(fh.read())
            if len(data) < off:
                data.extend(b"\0" * (off - len(data)))
            data[off:off + size] = content(seed, size)
            # mcopy -D o makes a new entry: the file's other bits come back
            # (meta.rewrite), as Linux keeps them
            p = rewrite(w, image, cur, bytes(data), self._m, tmp, to)
            return "ok" if p is None else self._rc(p)
        if k == "unlink":
            cur, err = tree.resolve(op.path)
            if err:
                return err
            if tree.isdir.get(cur):
                return "EISDIR"
            if trailing_slash(op.path):
                return "ENOTDIR"
            return self._rc(self._m(w, ["mdel", *I, mpath(cur)], to))
        if k == "rmdir":
            comps = [c for c in op.path.split("/") if c]
            if comps and comps[-1] in (".", ".."):
                # do_rmdir resolves the parent first, then "." is EINVAL
                # and ".." ENOTEMPTY (as vfz.model)
                _, leaf, err = tree.parent_of(op.path)
                return err or ("EINVAL" if leaf == "." else "ENOTEMPTY")
            cur, err = tree.resolve(op.path)
            if err:
                return err
            if cur == "/":
                return "EBUSY"
            if not tree.isdir.get(cur):
                return "ENOTDIR"
            if tree.kids.get(cur):
                return "ENOTEMPTY"
            return self._rc(self._m(w, ["mrd", *I, mpath(cur)], to))
        if k == "rename":
            # the errno order of Linux's do_renameat2: both parents, then
            # EBUSY for "/", "." or "..", then a missing source, then
            # trailing slashes on a file
            spar, sleaf, err = tree.parent_of(op.args[0])
            if err and err != "EBUSY":
                return err
            par, leaf, err2 = tree.parent_of(op.args[1])
            if err2 and err2 != "EBUSY":
                return err2
            if err or err2 or sleaf in (".", "..") or leaf in (".", ".."):
                return "EBUSY"
            src = tree.find(spar, sleaf)
            if src is None:
                return "ENOENT"
            if not tree.isdir.get(src) and (trailing_slash(op.args[0]) or trailing_slash(op.args[1])):
                return "ENOTDIR"
            dst = tree.find(par, leaf, _fold_new(leaf))
            sdir = tree.isdir.get(src)
            if sdir and (par == src or par.startswith(src + "/")):
                return "EINVAL"
            if dst is not None:
                if dst == src:
                    if src.rpartition("/")[2] == leaf or (leaf, dst) in tree.via:
                        return "ok"      # (onto its own alias: Linux sees the same inode)
                    # case-only rename: mtools applies the new spelling
                    # (Linux 6.1 keeps the old one: model exception)
                    return self._rc(self._m(w, ["mren", *I, mpath(src), leaf], to))
                ddir = tree.isdir.get(dst)
                if src.startswith(dst + "/"):
                    return "ENOTEMPTY"
                if sdir and not ddir:
                    return "ENOTDIR"
                if not sdir and ddir:
                    return "EISDIR"
                if ddir and tree.kids.get(dst):
                    return "ENOTEMPTY"
                p = self._m(w, ["mrd" if ddir else "mdel", *I, mpath(dst)], to)
                if p.error or p.rc != 0:
                    return self._rc(p)
            p = self._m(w, ["mmove", *I, "-D", "s", mpath(src), mtarget(par, leaf)], to)
            return self._rc(p)
        return "EINVAL"

    @staticmethod
    def _rc(p):
        if p.error:
            return "ETIMEDOUT" if p.timed_out else "EIO"
        return "ok" if p.rc == 0 else "EINVAL"
