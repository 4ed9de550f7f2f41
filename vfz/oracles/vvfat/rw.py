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
issue 121: `commit_direntries: assertion failed: (mapping)`). The installed
package already carries the 2024 vvfat fixes (its changelog: "Fix wrong
checks for cluster mappings invariant", "Fix bug in writing to middle of
file", ...).
"""
import re

from vfz.oracles import NamedException
from vfz.oracles.evidence import ev_get as _get
from vfz.oracles.vvfat import hosttree
from vfz.oracles.vvfat.hosttree import (EMPTY_LOST, FILE_CUT, GROWN_STALE, RMDIR_KEPT, STALLED,  # noqa: F401
                                        UNLINK_KEPT, UPDATE_LOST)

ASSERT_RE = re.compile(r"vvfat\.c:\d+: (\w+): Assertion `(.+?)' failed")
BUG = "vvfat"

MKDIR_PARENT = "vvfat-abort-mkdir-parent"
RENAME_DIR = "vvfat-abort-rename-dir"
DIRENTRIES = "vvfat-abort-commit-direntries"
DIRENTRIES_NONE = "vvfat-abort-commit-direntries-no-mapping"
CLUSTER_COUNT = "vvfat-abort-cluster-count"
CONSISTENCY = "vvfat-abort-consistency"
DELETE_ABORT = "vvfat-abort-error-deleting"
ARRAY_GET = "vvfat-abort-array-get-chattr"
ARRAY_GET_GROWN = "vvfat-abort-array-get-dir-grown"
DOWNCASE = "vvfat-downcase-short-names"


# do_commit's own aborts: a message on stderr, then abort()
COMMIT_ABORTS = ("Error deleting", "Error handling renames", "Error committing direntries",
                 "Error committing file contents")


def qemu_assertion(error):
    """(function, expression) of the vvfat assertion in a writer error, or
    ("do_commit", message) of do_commit's abort; None."""
    m = ASSERT_RE.search(error or "")
    if m:
        return m.group(1), m.group(2)
    for msg in COMMIT_ABORTS:
        if f"QEMU aborted: {msg}" in (error or ""):
            return "do_commit", msg
    return None


def _steps(ops, writer=None):
    """[(index, op, result, is_dir_target)] of the ops through the model of
    the kernel-vvfat writer (hosttree.writer_model); is_dir_target: the
    op's (first) path names a directory before the op (rename, rmdir) or
    after it (mkdir)."""
    m, _ = hosttree.writer_model(writer)
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


def first_nested_mkdir(ops, writer=None):
    """Index of the first mkdir that succeeds below the root."""
    for i, op, res, _ in _steps(ops, writer):
        if op.kind == "mkdir" and res == "ok" and _depth(op.path) >= 2:
            return i
    return None


def first_data_write(ops, writer=None):
    """Index of the first op that succeeds in giving a file bytes (a create
    of a non-empty file, a write, a growing truncate)."""
    for i, op, res, _ in _steps(ops, writer):
        if res == "ok" and ((op.kind == "create" and op.args[1]) or op.kind == "write"
                            or (op.kind == "truncate" and op.args[1])):
            return i
    return None


def first_mkdir(ops, writer=None):
    for i, op, res, _ in _steps(ops, writer):
        if op.kind == "mkdir" and res == "ok":
            return i
    return None


def first_removal(ops, writer=None):
    """Index of the first op that succeeds in removing an entry (unlink,
    rmdir, or a rename: its source goes)."""
    for i, op, res, _ in _steps(ops, writer):
        if res == "ok" and op.kind in ("unlink", "rmdir", "rename"):
            return i
    return None


def first_chattr(ops, writer=None):
    for i, op, res, _ in _steps(ops, writer):
        if op.kind == "chattr" and res == "ok":
            return i
    return None


def first_dir_rename(ops, writer=None):
    """Index of the first rename of a directory that succeeds."""
    for i, op, res, is_dir in _steps(ops, writer):
        if op.kind == "rename" and res == "ok" and is_dir:
            return i
    return None


def first_data_write_or_dir_rename(ops, writer=None):
    """Index of the first op that gives a file bytes or renames a directory
    (Linux adds the new entry before it clears the old: for a moment two
    entries hold the directory's cluster, and check_directory_consistency
    meets its mapping twice)."""
    found = [i for i in (first_data_write(ops, writer), first_dir_rename(ops, writer)) if i is not None]
    return min(found) if found else None


def first_subdir_growth(ops, writer=None):
    """Index of the first op that succeeds and leaves a directory below the
    root needing a second cluster of slots (vvfat's clusters hold 256: the
    model's slot tables, first fit as Linux allocates them, under a Space
    of vvfat's cluster size and no capacity limit)."""
    from vfz.model.space import Space
    m, _ = hosttree.writer_model(writer)
    m.space = Space(1 << 30, hosttree.CLUSTER)
    for i, op in enumerate(ops):
        if m.apply_one(op) != "ok":
            continue
        for e in m.entries():
            if e["type"] == "dir":
                node, _ = m._walk([c for c in e["path"].split("/") if c])
                if node is not None and node.table is not None and node.table.clusters > 1:
                    return i
    return None


# (function, assertion) -> [(name, the first op of the kind that reaches that code)]: one
# assertion may be reached by several kinds of op; the earliest present names it
CATALOGUE = {
    ("handle_renames_and_mkdirs", "j < s->mapping.next"): [(MKDIR_PARENT, first_nested_mkdir)],
    ("handle_renames_and_mkdirs", "!strncmp(m->path, mapping->path, l2)"): [(RENAME_DIR, first_dir_rename)],
    ("commit_direntries", "mapping->begin == first_cluster"): [(DIRENTRIES, first_nested_mkdir)],
    ("commit_direntries", "mapping"): [(DIRENTRIES_NONE, first_mkdir)],
    ("get_cluster_count_for_direntry", "mapping->mode & MODE_DELETED"): [(CLUSTER_COUNT, first_data_write)],
    ("check_directory_consistency", "mapping->mode & MODE_DELETED"): [(CONSISTENCY, first_data_write_or_dir_rename)],
    ("do_commit", "Error deleting"): [(DELETE_ABORT, first_removal)],
    ("array_get", "index < array->next"): [(ARRAY_GET, first_chattr), (ARRAY_GET_GROWN, first_subdir_growth)],
}


def known_failure(ev):
    """QEMU aborted on a catalogued vvfat assertion and the script has the
    kind of op that reaches it -> (index of the first such op, name); of
    several kinds, the one whose first op comes first."""
    wr, ops = _get(ev, "wr"), _get(ev, "ops") or []
    a = qemu_assertion(getattr(wr, "error", None))
    if a is None or a not in CATALOGUE:
        return None
    found = [(first(ops, _get(ev, "writer")), name) for name, first in CATALOGUE[a]]
    found = [(i, name) for i, name in found if i is not None]
    return min(found) if found else None


def name_exception(expected_leaf, actual_leaf, rule="win95"):
    """vvfat names a host file after a bare 8.3 entry (no long name) in
    lower case: vvfat_open sets s->downcase_short_names = 1 and no option
    clears it, and parse_short_name lower-cases each byte with qemu_tolower
    whatever the entry's NT case bits say. Linux (shortname=mixed) stores
    an all-upper 8.3 name bare, so 'NUL' comes back 'nul'; rule: which
    names the writer stores bare (vfz.model.names.short_only)."""
    from vfz.model.names import short_only
    if actual_leaf != expected_leaf and short_only(expected_leaf, rule) \
            and actual_leaf == expected_leaf.lower():
        return DOWNCASE
    return None


def name_exception_winnt(expected_leaf, actual_leaf):
    """name_exception for a writer of the winnt rule (the v3 patch): it
    stores 'abc.TXT' bare, its case in the NT byte (0x08), which vvfat
    does not read either: the host file is 'abc.txt'."""
    return name_exception(expected_leaf, actual_leaf, "winnt")


def explain(ev):
    """A host directory whose every difference from the model is one vvfat
    made replaying writes the guest kernel made right (the archive's guest
    listing is the model's tree) -> the names, else None: the host tree is
    the model's after the last op vvfat committed (STALLED when that is
    not the last), each remaining difference one of vvfat's entry failures
    (vfz.oracles.vvfat.hosttree: RMDIR_KEPT, UNLINK_KEPT, EMPTY_LOST,
    FILE_CUT, UPDATE_LOST, GROWN_STALE)."""
    from vfz import listing
    from vfz.oracles.vvfat import archive
    d, rr = _get(ev, "diff"), _get(ev, "rr")
    guest = (getattr(rr, "extra", None) or {}).get("guest")
    exp = _get(ev, "entries")
    if d is None or guest is None or exp is None or rr.listing is None:
        return None
    if listing.normalize(guest) != listing.normalize(exp):
        return None                   # the kernel's own tree is not the model's: not vvfat's doing
    image = _get(ev, "image")
    return hosttree.explain(_get(ev, "ops") or [], rr.listing,
                            lambda p: archive.file_bytes(image, p) if image else None, _get(ev, "writer"))


def result_exception(op, expected, actual):
    return None


EXCEPTIONS = [
    NamedException(
        DOWNCASE, "vvfat", "reader",
        "design: vvfat names the host file of a directory entry without a long name after its 8.3 "
        "name lower-cased (vvfat_open: s->downcase_short_names = 1, no option; parse_short_name: "
        "qemu_tolower of each byte, the NT case bits unread); Linux stores an all-upper 8.3 name "
        "bare. Measured: `create /cc; rename /cc /JC(_9S)K.W` gives the host file 'jc(_9s)k.w'; the "
        "v3 patch (shortname forced to winnt) stores 'abc.TXT' bare with NT byte 0x08 and "
        "kernel-vvfat-nodual-v3's `create /abc.TXT 30 4` gives the host file 'abc.txt'",
        "the host name of an entry is the ASCII lower case of the expected name, and the writer "
        "stores the expected name bare (vfz.model.names.short_only: the win95 rule, the winnt rule "
        "for kernel-vvfat-nodual-v3) (name_exception, name_exception_winnt)"),
    NamedException(
        STALLED, "vvfat", "reader",
        "vvfat stops replaying the guest's writes: from some op on, nothing the guest kernel did "
        "reaches the host directory (try_commit commits only when a write leaves the FAT and "
        "directories consistent in vvfat's view, and runs only from a write: once a write leaves "
        "them otherwise, or the last write does, the rest stays in its overlay)",
        "the guest kernel's own listing is the model's final tree and the host directory is the "
        "model's tree after an earlier op, vvfat's lower-cased bare 8.3 names applied, each other "
        "difference from that tree one of vvfat's named entry failures up to that op (hosttree.explain)",
        bug=BUG),
    NamedException(
        EMPTY_LOST, "vvfat", "reader",
        "vvfat never creates on the host a file the guest created empty (a directory entry with no "
        "cluster): `create /e 0 1; mkdir /d` leaves /d alone on the host, `mkdir /d; create /d/e 0 1; "
        "create /d/f 10 1` leaves /d and /d/f (measured twice each, synchronous mount)",
        "every missing entry of its kind is an empty file the guest kernel's own listing shows, that "
        "listing being the model's tree (explain)", bug=BUG),
    NamedException(
        FILE_CUT, "vvfat", "reader",
        "vvfat writes back only the first clusters of a file: in campaign 2930 three files created "
        "with 33000 bytes (5 clusters) reached the host with 16384 (their first two clusters' "
        "bytes), the guest kernel listing 33000",
        "the host file holds the head of the model's final bytes cut at a whole number of 8 KiB "
        "clusters, the guest kernel's own listing being the model's tree (explain)", bug=BUG),
    NamedException(
        UNLINK_KEPT, "vvfat", "reader",
        "vvfat leaves on the host a file the guest unlinked: `create /x 5 1; unlink /x` on a "
        "synchronous mount leaves /x (5 bytes) while the guest kernel lists nothing",
        "every difference of its kind is an extra file the script unlinked successfully, the guest "
        "kernel's own listing (the archive's) being the model's tree (explain)", bug=BUG),
    NamedException(
        UPDATE_LOST, "vvfat", "reader",
        "vvfat does not replay the new size of a file it already wrote back: `create /z 100 1; write /z "
        "80 50 2` on a synchronous mount leaves /z at 100 bytes holding the new bytes 80-99, while the "
        "guest kernel lists 130",
        "the host file has the size and bytes the model gave it after an earlier op, or a size it had "
        "earlier and the head of its final bytes, the guest kernel's own listing being the model's "
        "tree (explain)", bug=BUG),
    NamedException(
        GROWN_STALE, "vvfat", "reader",
        "vvfat writes bytes of its own heap into a host file the guest grew: after a commit do_commit "
        "empties its overlay (bdrv_make_empty), so a later commit of the file's new size reads the "
        "cluster back through read_cluster from the old, shorter host file, whose short read() leaves "
        "the rest of s->cluster_buffer as it was; commit_one_file writes all of it. Measured (synchronous "
        "mount): `create /f 13 142; write /f 6578 13 50` leaves a 6591-byte host file holding the 13 "
        "bytes, then two copies each of a heap and a libc-arena pointer of the QEMU process (0x5634f6ae6870 "
        "at 16, 0x7fd3d904fcc0 at 4128; other addresses each run, the same places), zeros elsewhere, and "
        "none of the 13 bytes written at 6578 (three runs, and campaign 2930's 901b93fecb74, d806bea02b9e, "
        "2c45d171aa9c); the guest kernel lists the right bytes",
        "the host file has the model's size and, as its head, bytes the file had after an earlier op "
        "(not empty), the rest differing, the guest kernel's own listing being the model's tree "
        "(hosttree.file_kind)", bug=BUG),
    NamedException(
        RMDIR_KEPT, "vvfat", "reader",
        "vvfat leaves on the host a directory the guest removed: `mkdir /a; mkdir /a/b; rmdir /a/b` "
        "leaves /a/b in the host directory while the guest kernel lists only /a (measured with a sync "
        "after each op)",
        "every difference of its kind is an extra directory (or what lies under it) that the script "
        "removed with an rmdir that succeeded, the guest kernel's own listing (the archive's) being "
        "the model's tree (explain)", bug=BUG),
    NamedException(
        DIRENTRIES_NONE, "vvfat", "writer",
        "QEMU aborts (commit_direntries: Assertion `mapping' failed: no mapping for a directory's first "
        "cluster). Measured: a bare `mkdir /'` as the second script of a VM, a sync after the op; the "
        "same family EDK2 CI users report (mu_crypto_release issue 121)",
        "QEMU's stderr holds that assertion and the script has a mkdir that succeeds (cut before the "
        "first)", bug=BUG),
    NamedException(
        CLUSTER_COUNT, "vvfat", "writer",
        "QEMU aborts (get_cluster_count_for_direntry: Assertion `mapping->mode & MODE_DELETED' failed) "
        "checking a file's clusters against its mappings. Measured on a synchronous mount: `create /big "
        "20000 9` (3 clusters) in the runs that catalogued it (it passed as a fresh guest's first script "
        "and with the disk at boot, twice each: it depends on what the disk saw before); `create /a 8192 "
        "9; create /b 100 9; rename /b /c` at the rename",
        "QEMU's stderr holds that assertion and the script gives a file bytes (cut before the first op "
        "that does)", bug=BUG),
    NamedException(
        DELETE_ABORT, "vvfat", "writer",
        "QEMU aborts (do_commit: handle_deletes failed, 'Error deleting' on stderr, then abort()): "
        "removing the host file or directory of a mapping vvfat marked deleted failed. Measured on a "
        "synchronous mount, an 11-op script of mkdir, create and unlink under one directory",
        "QEMU's last stderr line is 'Error deleting' and the script removes an entry (unlink, rmdir, "
        "rename) successfully (cut before the first such op)", bug=BUG),
    NamedException(
        ARRAY_GET, "vvfat", "writer",
        "QEMU aborts (array_get: Assertion `index < array->next' failed: an index past vvfat's "
        "directory or mapping array; the assertion names the helper, not its caller). Measured on "
        "the synchronous mount in two minimised scripts, each changing attributes (chattr of a "
        "directory 'rhsa' or 'h', of a file 'ra') among creates and renames",
        "QEMU's stderr holds that assertion and the script changes attributes successfully (cut "
        "before the first chattr); an array_get abort without a chattr stays a finding", bug=BUG),
    NamedException(
        ARRAY_GET_GROWN, "vvfat", "writer",
        "QEMU aborts (array_get: Assertion `index < array->next' failed) once a directory below the "
        "root has grown past its first cluster (256 slots of vvfat's 8 KiB clusters) and a file is "
        "given bytes, in no chattr's presence. Measured on the synchronous mount, the stock and both "
        "patched (v1, v3) guests alike: `mkdir /d`, twelve empty creates of 255-character names in /d (21 slots "
        "each), then a 1-byte create of a 13th (the growth) aborts at it (stock: 3 runs of 3; v1, v3: 1 of 1); twelve empty, a "
        "13th empty (the growth, passes) and `create /x 1 1` in the root aborts at the last; 127 empty "
        "8.3-plus-long names then a 1-byte 128th aborts at it; the same growth by a mkdir alone and "
        "128 empty creates alone pass. Found replaying the collision study's natural v1 collision "
        "(693 creates in one directory) on kernel-vvfat-nodual, seed 16777511: it aborted at the "
        "128th create, and so did kernel-vvfat (stock) on the same script",
        "QEMU's stderr holds that assertion and the script makes a directory below the root need a "
        "second cluster of slots (the model's slot tables: first_subdir_growth; cut before that op, "
        "or before the first chattr when that comes first)", bug=BUG),
    NamedException(
        CONSISTENCY, "vvfat", "writer",
        "QEMU aborts (check_directory_consistency: Assertion `mapping->mode & MODE_DELETED' failed): "
        "walking the directories it meets a directory mapping it already unmarked. Measured with a sync "
        "after each op on a 9-op script of creates and renames, and on the synchronous mount at the "
        "rename of `mkdir /a; rename /a /b` (every run): Linux writes the new entry before it clears "
        "the old, and between the two writes both hold the directory's cluster",
        "QEMU's stderr holds that assertion and the script gives a file bytes or renames a directory "
        "(cut before the first such op)", bug=BUG),
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
