"""The named exceptions of vvfat's rw mode (kernel-vvfat): QEMU aborting on an assertion of vvfat's write-back, recognised from QEMU's own last words and the script.

vvfat replays a guest's writes onto the host directory by diffing the FAT
and directories it sees against its own mappings (try_commit after every
write: check_directory_consistency, then do_commit: handle_renames_and_
mkdirs, commit_direntries, handle_commits, handle_deletes). Where its
bookkeeping cannot follow, an assert() stops QEMU (SIGABRT): the guest
dies with its writes, and the host directory holds whatever the commits
before had made. The kernel-vvfat writer reports QEMU's stderr line as its
error ("QEMU aborted: ../../block/vvfat.c:2756: handle_renames_and_mkdirs:
Assertion `j < s->mapping.next' failed."; the line numbers are Debian's
qemu 1:7.2+dfsg-7+deb12u18's).

Each catalogued assertion is the code path of one kind of op, so the
exception holds only when the script has an op of that kind that
succeeded (in the model); the readers then check the script cut before the
first such op (vfz.check.checker: known_failure). An assertion not in the
catalogue, or one whose kind of op the script lacks, is a finding. QEMU
tracks vvfat's rw bugs in gitlab.com/qemu-project/qemu/-/issues/272
("block/vvfat driver issues"); the same commit_direntries assertion
family is reported by EDK2 CI users (github.com/microsoft/mu_crypto_release
issue 121: `commit_direntries: assertion failed: (mapping)`).
"""
import re

from vfz.oracles import NamedException

ASSERT_RE = re.compile(r"vvfat\.c:\d+: (\w+): Assertion `(.+?)' failed")
BUG = "vvfat"

MKDIR_PARENT = "vvfat-abort-mkdir-parent"
RENAME_DIR = "vvfat-abort-rename-dir"
DIRENTRIES = "vvfat-abort-commit-direntries"


def qemu_assertion(error):
    """(function, expression) of the vvfat assertion in a writer error, or None."""
    m = ASSERT_RE.search(error or "")
    return (m.group(1), m.group(2)) if m else None


def _steps(ops):
    """[(index, op, result, is_dir_target)] of the ops through the model of
    kernel-vvfat; is_dir_target: the op's (first) path names a directory
    before the op (rename, rmdir) or after it (mkdir)."""
    from vfz import model, oracles
    e = oracles.entry("kernel-vvfat")
    m = model.Model(e.profile, e.names, root=model.root_for(e.profile, None), rule=e.shortname)
    out = []
    for i, op in enumerate(ops):
        before = {x["path"]: x for x in m.entries()}
        res = m.apply_one(op)
        after = {x["path"]: x for x in m.entries()}
        p = "/" + "/".join(c for c in (op.path or "").split("/") if c and c != ".")
        d = (before.get(p) or after.get(p) or {}).get("type") == "dir"
        out.append((i, op, res, d))
    return out


def _depth(path):
    return len([c for c in path.split("/") if c and c != "."])


def first_nested_mkdir(ops):
    """Index of the first mkdir that succeeds below the root."""
    for i, op, res, _ in _steps(ops):
        if op.kind == "mkdir" and res == "ok" and _depth(op.path) >= 2:
            return i
    return None


def first_dir_rename(ops):
    """Index of the first rename of a directory that succeeds."""
    for i, op, res, is_dir in _steps(ops):
        if op.kind == "rename" and res == "ok" and is_dir:
            return i
    return None


# (function, assertion) -> (name, the first op of the kind that reaches that code)
CATALOGUE = {
    ("handle_renames_and_mkdirs", "j < s->mapping.next"): (MKDIR_PARENT, first_nested_mkdir),
    ("handle_renames_and_mkdirs", "!strncmp(m->path, mapping->path, l2)"): (RENAME_DIR, first_dir_rename),
    ("commit_direntries", "mapping->begin == first_cluster"): (DIRENTRIES, first_nested_mkdir),
}


def known_failure(ev):
    """QEMU aborted on a catalogued vvfat assertion and the script has the
    kind of op that reaches it -> (index of the first such op, name)."""
    wr = ev.get("wr") if isinstance(ev, dict) else getattr(ev, "wr", None)
    ops = (ev.get("ops") if isinstance(ev, dict) else getattr(ev, "ops", None)) or []
    a = qemu_assertion(getattr(wr, "error", None))
    if a is None or a not in CATALOGUE:
        return None
    name, first = CATALOGUE[a]
    i = first(ops)
    return (i, name) if i is not None else None


def explain(ev):
    return None


def result_exception(op, expected, actual):
    return None


EXCEPTIONS = [
    NamedException(
        MKDIR_PARENT, "vvfat", "writer",
        "QEMU aborts (handle_renames_and_mkdirs: Assertion `j < s->mapping.next' failed) when a commit "
        "holds a directory made inside a directory vvfat has no mapping for under that host path yet: "
        "after g_mkdir of the new directory it looks its parent's mapping up by path and finds none. "
        "Measured (Linux 6.1 guest, fat:rw: of an empty directory, -drive at boot and hot-plugged alike): "
        "`mkdir /a; mkdir /a/c` with one sync at the unmount aborts every time; with a sync after each "
        "op it passes or aborts (the guest's writeback splits the writes differently)",
        "QEMU's stderr holds that assertion and the script has a mkdir below the root that succeeds "
        "(the readers check the script cut before the first one)", bug=BUG),
    NamedException(
        RENAME_DIR, "vvfat", "writer",
        "QEMU aborts (handle_renames_and_mkdirs: Assertion `!strncmp(m->path, mapping->path, l2)' failed) "
        "replaying the rename of a directory: it renames the host directory, then walks the directory's "
        "entries to schedule renames of their mappings and asserts each mapping's path starts with the "
        "directory's old path. Measured: `mkdir /a; create /a/f 13 1; rename /a /b; mkdir /b/c`, a sync "
        "after each op",
        "QEMU's stderr holds that assertion and the script renames a directory successfully (cut before "
        "the first such rename)", bug=BUG),
    NamedException(
        DIRENTRIES, "vvfat", "writer",
        "QEMU aborts (commit_direntries: Assertion `mapping->begin == first_cluster' failed): the "
        "mapping vvfat finds for a directory's first cluster begins elsewhere. Measured: `mkdir /a; "
        "mkdir /a/c` with a sync after each op (the other run of that script passed)",
        "QEMU's stderr holds that assertion and the script has a mkdir below the root that succeeds "
        "(cut before the first one)", bug=BUG),
]
