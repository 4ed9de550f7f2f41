"""Where a script leaves fusefat's model: the first op of a writer's known failure.

first_known_failure replays the script on the model with fusefat's profile
and names the first op at which fusefat's image differs by one of its
named exceptions (the campaign files one finding there; the readers check
the script cut before it). The image evidence it needs is in damage.py.
"""
import re

from vfz.model.names import walked
from vfz.oracles.fusefat.damage import _open_fat, erase_overrun_evidence, gap_evidence, write_gap_cut
from vfz.oracles.fusefat.exceptions import (CASE_RENAME, ERASE_OVERRUN, INTO_SUBTREE, RENAME_DIR_EMPTIES,
                                            RENAME_ONTO, RENAME_REFUSED, SELF_RENAME_HANG, SLOT_RUN,
                                            TRAILING, WRITE_EPERM, WRITE_GAP)
from vfz.oracles.fusefat.names import PROFILE, fusefat_fold, fusefat_name_err


# fusefat's log when it refused a new entry for that reason: the run of
# free slots it found, at a negative offset printed unsigned, then its check
_SLOT_RUN_LOG = re.compile(r"findlfnslots: found \d+ slots at clus:\d+, off:(\d+)\s*\nOffset too big")


def _new_leaf(op):
    """The last component of the path an op creates (a rename's target)."""
    target = op.args[1] if op.kind == "rename" else op.args[0]
    return ([c for c in target.split("/") if c] or [""])[-1]


def first_known_failure(ops, results, image=None, error=None, raw=None):
    """(index, name) of the first op at which fusefat's image leaves the
    model's by a named exception (see FusefatWriter.known_failure); image:
    the image fusefat wrote (WRITE_GAP and ERASE_OVERRUN are named only from
    its evidence); error: the writer's error (SELF_RENAME_HANG: a timeout);
    raw: the writer's log, fusefat's own output in it (SLOT_RUN)."""
    from vfz.model import Model
    m = Model(PROFILE)
    fat = None
    for i, op in enumerate(ops):
        got = results[i] if i < len(results) else None
        if got is None:
            if i == len(results) and stale_self_rename(ops, results, i, m, error):
                return i, SELF_RENAME_HANG
            return None
        if op.kind == "write" and got == "EPERM":
            m.apply([op])
            if m.results[-1] == "ok":
                return i, WRITE_EPERM
            continue
        if op.kind == "write" and got == "ok" and image is not None:
            if fat is None:
                fat = _open_fat(image)
            cut = write_gap_cut(m, op, fat.csize) if fat else None
            if cut is not None and gap_evidence(fat, *cut):
                return i, WRITE_GAP
        # the stored spelling does not matter: fusefat looks the target up,
        # finds the source itself and deletes it ('/ABC' -> '/abc' of a file
        # stored 'abc' frees its clusters too; campaign seed 9102)
        if op.kind == "rename" and got == "ok" and _case_only(op) and _names(m, op.args[0]):
            return i, CASE_RENAME
        if op.kind == "rename" and got == "ok" and _into_own_subtree(m, op):
            return i, INTO_SUBTREE
        if op.kind == "rename" and got == "ok" and _nonempty_dir(m, op.args[0]):
            return i, RENAME_DIR_EMPTIES
        if op.kind in ("unlink", "rmdir", "rename") and got == "ok" and image is not None \
                and len([c for c in op.args[0].split("/") if c]) >= 2:
            stored = _names(m, op.args[0])
            if fat is None:
                fat = _open_fat(image)
            if stored and fat and erase_overrun_evidence(fat, stored):
                return i, ERASE_OVERRUN
        if op.kind == "rename" and got == "EPERM" and _dir_onto_dir(m, op):
            m.apply([op])
            if m.results[-1] == "ok":
                # Linux replaced the empty directory; fusefat refused, unchanged
                return i, RENAME_ONTO
            continue            # ENOTEMPTY: fusefat-rmdir-eperm (result_exception), the trees agree
        if op.kind == "rename" and got == "EPERM" and fusefat_name_err(_new_leaf(op)) == "EPERM" \
                and m._walk([c for c in op.args[0].split("/") if c])[1] is None:
            return i, RENAME_REFUSED
        if op.kind in ("create", "mkdir", "rename") and got == "ok":
            leaf = _new_leaf(op)
            if _trailing(leaf):
                return i, TRAILING
        if op.kind in ("create", "mkdir", "rename") and got == "EPERM" and slot_run_wrapped(raw) \
                and fusefat_name_err(_new_leaf(op)) is None:
            m.apply([op])
            if m.results[-1] == "ok":
                return i, SLOT_RUN
            continue
        m.apply([op])
        if got == "ENOENT" and m.results[-1] != "ENOENT" and _trailing_component(op):
            # looked up as given: 'd...' is not 'd' to fusefat (campaign seed
            # 9102: mkdir /1!3; write /1!3... -> ENOENT, Linux EISDIR)
            return i, TRAILING
    return None


def slot_run_wrapped(raw):
    """Did fusefat refuse a new entry because the run of free slots it
    found for it starts before the cluster it computes the offset in? Its
    log says 'findlfnslots: found N slots at clus:C, off:X' with X a
    negative offset printed as an unsigned 32-bit number, then 'Offset too
    big' (the create then fails: EPERM)."""
    return any(int(m.group(1)) >= 1 << 31 for m in _SLOT_RUN_LOG.finditer(raw or ""))


def stale_self_rename(ops, results, i, m, error):
    """Did fusefat hang on ops[i], a rename of a path onto itself whose
    source the model (ops[:i] applied) no longer has, because an earlier op
    answered ok removed it through another ASCII case spelling? libfuse 2's
    high-level layer gives each spelling its own node, so the kernel keeps
    the first spelling's dentry (entry timeout 1 s); the rename's target is
    revalidated (LOOKUP_RENAME_TARGET: ENOENT), the source is not, and the
    kernel sends RENAME of that node onto its own name, which get_path2
    (libfuse lib/fuse.c) locks twice and waits on forever (measured: fusefat
    asleep in pthread_cond_wait, 0 % CPU; tests/test_fusefat_self_rename_hang.py)."""
    op = ops[i]
    if op.kind != "rename" or not error or "(rename): timeout" not in error:
        return False
    a = [c for c in op.args[0].split("/") if c]
    if not a or a != [c for c in op.args[1].split("/") if c] or _names(m, op.args[0]) is not None:
        return False
    key = [c.lower() for c in a]
    for prev, got in zip(ops[:i], results[:i]):
        p = [c for c in prev.args[0].split("/") if c] if prev.args else []
        if got == "ok" and prev.kind in ("unlink", "rmdir", "rename") and p != a \
                and [c.lower() for c in p] == key:
            return True
    return False


def _trailing_component(op):
    """Does a path the op names hold a component ending in '.' or ' '
    (not '.' or '..' themselves)?"""
    from vfz.opscript import OPS
    paths = [a for a, k in zip(op.args, OPS.get(op.kind, "")) if k == "s"]
    return any(_trailing(c) for p in paths for c in p.split("/"))


def _trailing(name):
    """Does name end in '.' or ' ' (not '.' or '..' themselves)?"""
    return name != name.rstrip(" .") and bool(name.strip("."))


def _case_only(op):
    """Is a rename's target a respelling of its source's leaf in the same
    directory (ASCII case, as fusefat and Linux fold names)? The paths as
    the lookup walks them (campaign seed 11102: rename /DBBcBBaac
    /./dbbCbbAAC)."""
    a = walked(op.args[0])
    b = walked(op.args[1])
    return len(a) == len(b) and bool(a) and a[:-1] == b[:-1] and a[-1] != b[-1] \
        and a[-1].lower() == b[-1].lower()


def _dir_onto_dir(m, op):
    """Is op a rename, in model m's tree, of a directory onto another
    existing directory? fat_rename (libfat.c) refuses a directory onto any
    existing target with -1 (EPERM to the caller) before it changes
    anything ("destination file already exist: cant overwrite with a
    directory"); the kernel answers a directory onto a file (ENOTDIR) and a
    file onto a directory (EISDIR) itself, so only this case reaches it
    (measured: both answered as Linux does)."""
    src, e1 = m._walk([c for c in op.args[0].split("/") if c])
    dst, e2 = m._walk([c for c in op.args[1].split("/") if c])
    if e1 or e2 or src is None or dst is None or src is m.root or dst is m.root or src is dst:
        return False
    return src.is_dir and dst.is_dir


def _names(m, path):
    """The stored name of the entry path names in model m, or None."""
    node, err = m._walk([c for c in path.split("/") if c])
    return None if err or node is None or node is m.root else node.name


def _into_own_subtree(m, op):
    """Is op a rename of a directory (in model m's tree) to a path inside
    it, the source spelled in another case than the target's components?
    The kernel's check (EINVAL) compares names as given, so '/D' -> '/d/x'
    reaches fusefat, which folds case and moves /d into itself."""
    node, err = m._walk([c for c in op.args[0].split("/") if c])
    if err or node is None or node is m.root or not node.is_dir:
        return False
    return _subtree_paths(op)


def _subtree_paths(op):
    """Does a rename's target lie inside its source under fusefat_fold?"""
    src = [fusefat_fold(c) for c in walked(op.args[0])]
    dst = [fusefat_fold(c) for c in walked(op.args[1])]
    return len(dst) > len(src) and dst[:len(src)] == src


def _nonempty_dir(m, path):
    """Does path name a directory with entries in model m's tree?"""
    node, err = m._walk([c for c in path.split("/") if c])
    return err is None and node is not None and node.is_dir and bool(node.kids) and node is not m.root


def rename_dir_explains(ops, results, missing, extra):
    """True when nothing is extra and every missing path lies under the new
    name of a directory fusefat renamed with result ok."""
    ops, results = ops or [], results or []
    targets = [op.args[1].rstrip("/").lower() for op, r in zip(ops, results)
               if op.kind == "rename" and r == "ok"]
    if not missing or extra or not targets:
        return False
    return all(any(p.lower().startswith(t + "/") for t in targets) for p in missing)
