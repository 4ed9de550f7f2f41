"""The mtools writer's second grammar: truncate, chattr, touch and label with mcopy, mattrib and mlabel.

Measured on mtools 4.0.32 (TZ=UTC0, so FAT's local time is UTC):
  * mattrib +r/-r +h/-h +s/-s +a/-a sets a file's or a directory's bits
    (one call takes them all); the root has no entry (Linux: EINVAL for
    any letter, the glue answers it; `-` is ok and does nothing).
  * mtools has no truncate and no utime: the glue rewrites the whole file
    with `mcopy -D o` (as its write does). mcopy makes a new entry for it:
    attributes ARCH alone, access date and creation time now. The glue then
    gives the file back its other bits with mattrib, as Linux keeps them
    (model: the archive bit, the writer's clock on the access date: profile
    knob write_atime). A truncate to 0 of an empty file changes nothing
    (Linux: no archive bit either) and is not rewritten.
  * touch is `mcopy -m -D o` of the file's bytes from a host file dated
    MTIME: mtools stores that one time (modify time; the access date and
    creation time follow it: knob touch_atime). No mtools command dates a
    directory: ENOSYS (knob touch_dir). A time outside FAT's range is not
    clamped: mtools stores the year modulo 128 (1970 -> 2098, 2108 -> 1980),
    the named exception mtools-time-wrap (exceptions.py).
  * label is `mlabel ::TEXT` (`mlabel -c` for ""): the boot sector gets TEXT,
    the root entry TEXT upper-cased (knob label_root). mlabel refuses only a
    label over 11 characters; a character fatlabel refuses it stores mangled
    ('.' '+' ',' '=' '[' become '~'; '*' '?' '/' '\\' '|' '<' '"' give '~' in
    the boot sector and no root entry; ':' is read as a drive letter), so the
    glue refuses what the core (fatlabel 4.2's rules) refuses, as EINVAL, and
    never hands such a label to mlabel.
"""
import os
import re

from vfz.model.inode import label_err
from vfz.oracles import NamedException
from vfz.oracles.evidence import time_wrap_holds
from vfz.oracles.mtools.tool import mpath, mtarget

LETTERS = {"R": "r", "H": "h", "S": "s", "A": "a"}
HOST_MAX_SEC = 253402300799        # 9999-12-31 23:59:59: the latest time a host file takes


def attrs_of(w, image, path, run_m, to):
    """The r h s a letters mattrib shows for path, or None."""
    p = run_m(w, ["mattrib", "-i", image, mpath(path)], to)
    if p.error or p.rc != 0:
        return None
    for line in p.text.split("\n"):
        if "::" in line:
            return {LETTERS[c] for c in line.split("::", 1)[0] if c in LETTERS}
    return None


def set_attrs(w, image, path, letters, run_m, to):
    """mattrib path to exactly letters (a set of r h s a)."""
    flags = [("+" if c in letters else "-") + c for c in "rhsa"]
    return run_m(w, ["mattrib", "-i", image, *flags, mpath(path)], to)


def rewrite(w, image, cur, data, run_m, tmp, to, mtime=None):
    """mcopy -D o the bytes data over file cur (dated mtime with -m), then
    give it back the bits it had besides the archive bit -> Proc of the
    failing call, or None."""
    before = attrs_of(w, image, cur, run_m, to)
    if before is None:
        before = set()
    f = os.path.join(tmp, "data")
    with open(f, "wb") as fh:
        fh.write(data)
    argv = ["mcopy", "-i", image, "-D", "o"]
    if mtime is not None:
        t = min(mtime, HOST_MAX_SEC)
        os.utime(f, (t, t))
        argv.append("-m")
    cpar, _, cleaf = cur.rpartition("/")
    p = run_m(w, [*argv, f, mtarget(cpar or "/", cleaf)], to)
    if p.error or p.rc != 0:
        return p
    if before - {"a"}:
        p = set_attrs(w, image, cur, before | {"a"}, run_m, to)
        if p.error or p.rc != 0:
            return p
    return None


def read_file(w, image, cur, run_m, tmp, to):
    """The bytes of file cur (mcopy to the host), or None."""
    f = os.path.join(tmp, "data")
    if os.path.exists(f):
        os.unlink(f)
    p = run_m(w, ["mcopy", "-i", image, "-n", mpath(cur), f], to)
    if p.error or p.rc != 0 or not os.path.exists(f):
        return None
    with open(f, "rb") as fh:
        return bytearray(fh.read())


def meta_op(wr, image, op, tree, tmp, to, w):
    """One op of the second grammar on image -> its result. wr: the
    MtoolsWriter (its _m runs a tool, its _rc maps an exit)."""
    k, run_m = op.kind, wr._m
    if k == "label":
        text = op.args[0]
        err = label_err(text)
        if err:
            return err
        argv = ["mlabel", "-i", image] + (["-c", "::"] if text == "" else ["::" + text])
        return wr._rc(run_m(w, argv, to))
    cur, err = tree.resolve(op.path)
    if err:
        return err
    is_dir = tree.isdir.get(cur)
    slash = op.path.endswith("/") and op.path.rstrip("/") != "" \
        and op.path.rstrip("/").rpartition("/")[2] not in (".", "..")
    if k == "truncate":
        if is_dir:
            return "EISDIR"
        if slash:
            return "ENOTDIR"
        data = read_file(w, image, cur, run_m, tmp, to)
        if data is None:
            return "EIO"
        size = op.args[1]
        if size == 0 and not data:
            return "ok"
        data = data[:size] + bytes(max(0, size - len(data)))
        p = rewrite(w, image, cur, bytes(data), run_m, tmp, to)
        return "ok" if p is None else wr._rc(p)
    if slash and not is_dir:
        return "ENOTDIR"
    if k == "chattr":
        letters = set(op.args[1]) - {"-"}
        if cur == "/":
            return "EINVAL" if letters else "ok"
        return wr._rc(set_attrs(w, image, cur, letters, run_m, to))
    if k == "touch":
        if cur == "/":
            return "ok"
        if is_dir:
            return "ENOSYS"
        data = read_file(w, image, cur, run_m, tmp, to)
        if data is None:
            return "EIO"
        p = rewrite(w, image, cur, bytes(data), run_m, tmp, to, mtime=op.args[1].sec)
        return "ok" if p is None else wr._rc(p)
    return "EINVAL"


TIME_WRAP = "mtools-time-wrap"
LABEL_CASE = "mtools-label-case"
# the checkers' words for a boot-sector label other than the root entry's:
# fsck.fat 4.2, then `vfat check` (core/src/check_label.c)
_LABELS = (re.compile(r"Volume label '(.*)' stored in root directory and label '(.*)' stored in boot sector"),
           re.compile(r"volume label '(.*)' in the root, '(.*)' in the boot sector"))


def label_case(ev):
    """LABEL_CASE: every complaint of a checker is that the root entry's
    label is the boot sector's upper-cased (and not the same)."""
    if ev.verdict != "complains" or ev.rr is None or not ev.rr.complaints:
        return None
    for c in ev.rr.complaints:
        m = next((m for rx in _LABELS for m in [rx.search(str(c))] if m), None)
        if m is None or m.group(1) != m.group(2).upper() or m.group(1) == m.group(2):
            return None
    return LABEL_CASE


EXCEPTIONS = [
    NamedException(LABEL_CASE, "mtools", "writer",
                   "mlabel (mtools 4.0.32) writes a label as given into the boot sector but "
                   "upper-cased into the root's volume label entry (mlabel ::lower: boot 'lower', "
                   "root 'LOWER'); fsck.fat then reports the two as different and copies the root's "
                   "over the boot sector's. A design of mtools (DOS labels are upper case; the model "
                   "profile predicts the root's spelling: knob label_root), which the checkers "
                   "rightly flag",
                   "every checker complaint is the two labels differing, the root's the boot "
                   "sector's upper-cased (meta.label_case)"),
    NamedException(TIME_WRAP, "mtools", "writer",
                   "mtools 4.0.32 does not clamp a time to FAT's range (1980-2107) when it stores "
                   "a host file's modify time (mcopy -m): the year goes into the 7-bit field modulo "
                   "128, so a file of 1970-01-01 is stored as 2098-01-01 and one of 2108-01-01 as "
                   "1980-01-01 (measured: mcopy -m of host files dated 0, 4354819200, 6600359489, "
                   "7664162256 gave 2098, 1980, 2051, 2084); Linux clamps to 1980-01-01 and "
                   "2107-12-31 23:59:58",
                   "every difference of the listing is a modify time or access date of an entry, "
                   "shown as the wrapped form (evidence.year_wrapped) of an out-of-range touch of the "
                   "script", bug="mtools-time-wrap"),
]


def time_wrap(ev):
    """TIME_WRAP from a reader's divergence on the mtools writer's image
    (vfz.oracles.evidence.time_wrap_holds)."""
    return TIME_WRAP if time_wrap_holds(ev) else None
