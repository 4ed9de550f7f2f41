"""The fusefat writer: ops applied through a rw+ mount, and the writer's hooks.

`fusefat -f -s -o rw+ IMAGE DIR` (rw+: fusefat's own read-write mode;
plain rw is refused); the agent applies each op with ordinary syscalls
and answers "ok" or the errno name; then `fusermount -u DIR`. FAT[1] is
read before and after (fat1: the evidence of FAT1_CLEAN). The hooks name
the writer's exceptions from an op's result (result_exception), the first
known failure of a script (known.py) and checker complaints (check_kind).
"""
import os
import struct
import time

from vfz import opscript
from vfz.oracles import Timer, Writer, WriteResult
from vfz.oracles.fusefat import meta
from vfz.oracles.fusefat.exceptions import (CASE_RENAME, FAT1_CLEAN, INTO_SUBTREE, NAMES, RMDIR_NONEMPTY,
                                            TRAILING, WRITE_EPERM)
from vfz.oracles.fusefat.known import _case_only, _new_leaf, _subtree_paths, first_known_failure
from vfz.oracles.fusefat.mount import FUSEFAT, Mount, available
from vfz.oracles.fusefat.names import fusefat_name_err


def fat1(image):
    """(fat bits, [FAT[1] of each FAT copy]) from the image's bytes."""
    with open(image, "rb") as f:
        b = f.read(1 << 20)
    bps, spc, res, nfats, rootent = struct.unpack_from("<HBHBH", b, 11)
    tot = struct.unpack_from("<H", b, 19)[0] or struct.unpack_from("<I", b, 32)[0]
    spf = struct.unpack_from("<H", b, 22)[0] or struct.unpack_from("<I", b, 36)[0]
    if not bps or not spc:
        return None, []
    data = res + nfats * spf + (rootent * 32 + bps - 1) // bps
    clusters = (tot - data) // spc
    bits = 12 if clusters < 4085 else 16 if clusters < 65525 else 32
    out = []
    for k in range(nfats):
        off = (res + k * spf) * bps
        with open(image, "rb") as f:
            f.seek(off)
            raw = f.read(8)
        if bits == 12:
            out.append((struct.unpack_from("<I", raw + b"\0", 0)[0] >> 12) & 0xFFF)
        elif bits == 16:
            out.append(struct.unpack_from("<H", raw, 2)[0])
        else:
            out.append(struct.unpack_from("<I", raw, 4)[0] & 0x0FFFFFFF)
    return bits, out


class FusefatWriter(Writer):
    def __init__(self, name="fusefat", fusefat=FUSEFAT, op_timeout=20.0, **cfg):
        self.name = name
        self.fusefat = fusefat
        self.op_timeout = op_timeout
        self.last_fat1 = None       # (bits, before, after) of the last apply: evidence for FAT1_CLEAN

    def available(self):
        return available(self.fusefat)

    def apply(self, image, ops, timeout=60.0):
        w = WriteResult(self.name)
        with Timer() as t:
            try:
                self._apply(image, ops, timeout, w)
            except Exception as e:
                w.error = f"fusefat writer: {type(e).__name__}: {e}"
        w.seconds = t.seconds
        return w

    def _apply(self, image, ops, timeout, w):
        if not os.path.isfile(image):
            w.error = f"no such image: {image}"
            return
        before = fat1(image)
        m = Mount(image, rw=True, fusefat=self.fusefat)
        why = m.start()
        t0 = time.monotonic()
        hung = False
        if why is None:
            for op in ops:
                left = timeout - (time.monotonic() - t0)
                args = [list(a) if isinstance(a, opscript.Time) else a for a in op.args]
                ans, why = m.request({"op": op.kind, "args": args},
                                     max(0.1, min(self.op_timeout, left)))
                if why:
                    hung = True
                    why = f"line {op.line} ({op.kind}): {why}"
                    break
                w.results.append(ans["result"])
        unclean = m.stop(hung=hung)
        after = fat1(image)
        self.last_fat1 = (before[0], before[1], after[1])
        notes = "\n".join(m.notes) + "\n" + m.out_text
        if before[1] != after[1]:
            notes += (f"\nFAT[1] changed by the unmount: "
                      f"{' '.join(f'0x{v:04X}' for v in before[1])} -> "
                      f"{' '.join(f'0x{v:04X}' for v in after[1])} (FAT{before[0]})")
        w.raw = notes + "\n" + "".join(f"{op} -> {res}\n" for op, res in zip(ops, w.results))
        if why:
            w.error = why
        elif unclean:
            w.error = unclean

    @staticmethod
    def result_exception(op, expected, actual):
        if op.kind in ("rmdir", "rename") and expected == "ENOTEMPTY" and actual == "EPERM":
            return RMDIR_NONEMPTY
        if op.kind == "write" and expected == "ok" and actual == "EPERM":
            return WRITE_EPERM
        if op.kind == "rename" and expected == "ok" and actual == "EPERM" and _case_only(op):
            return CASE_RENAME
        if op.kind == "rename" and expected == "EINVAL" and actual in ("ENOTDIR", "EISDIR", "ENOTEMPTY",
                                                                      "EEXIST") \
                and _subtree_paths(op):
            # the same missing check, where the target exists: fusefat answers
            # for the target, Linux EINVAL first (campaign seed 9103: rename
            # /.y /.Y/.c of a directory onto a file in it -> ENOTDIR)
            return INTO_SUBTREE
        if op.kind in ("create", "mkdir", "rename") and actual == "EPERM":
            leaf = _new_leaf(op)
            if fusefat_name_err(leaf) == "EPERM":
                return NAMES
        if op.kind in ("create", "mkdir", "rename") and actual == "ok" and expected in ("EINVAL", "EEXIST"):
            leaf = _new_leaf(op)
            if leaf != leaf.rstrip(" ."):
                return TRAILING
        return None

    @staticmethod
    def known_failure(ev):
        """(index, name) of the first op from which fusefat's image is not
        the model's, by one of its named exceptions, else None (vfz.oracles.evidence
        Evidence: ev.ops, ev.wr, ev.image). The readers then check the script cut
        before it. Candidates: a rename to a name fusefat refuses (EPERM) of
        an existing source (RENAME_REFUSED: the source is deleted first); a
        write answered EPERM (WRITE_EPERM: the file
        lacks those bytes); a write answered ok that starts at or past the
        end of the last cluster of a file of n >= 2 clusters, whose n-1
        cut-off clusters the image fusefat wrote holds as a lost chain
        (WRITE_GAP: write_gap_cut, gap_evidence); a rename answered ok of a
        directory that had entries (RENAME_DIR_EMPTIES: they are gone); a
        new leaf ending in '.' or ' ' answered ok (TRAILING: fusefat keeps
        it, later lookups and Linux readers see another name than the model);
        an unlink/rmdir/rename answered ok on FAT12/16 whose removed entry's
        orphaned tail the image holds (ERASE_OVERRUN: erase_overrun_evidence);
        a rename of a path onto itself that hung (wr.error 'timeout') after an
        earlier op removed that path through another case spelling
        (SELF_RENAME_HANG: stale_self_rename)."""
        wr = getattr(ev, "wr", None)
        if wr is None:
            return None
        found = [k for k in (first_known_failure(ev.ops, wr.results, getattr(ev, "image", None),
                                                 getattr(wr, "error", None), getattr(wr, "raw", None)),
                             meta.root_touch_crash(ev.ops, wr.results, getattr(wr, "error", None))) if k]
        return min(found) if found else None

    @staticmethod
    def explain(ev):
        """A reader divergence on an image fusefat wrote, explained by one of
        its named exceptions: checker complaints that are each one of its
        kinds (FAT1_CLEAN on FAT16: 'FAT[1] is 0x8000'; TRAILING: a long
        name ending in '.'), or a listing diff of unopenable trailing-dot
        names (the recogniser mtools-trailing-dot-unopenable uses)."""
        rr = getattr(ev, "rr", None)
        if ev.verdict == "complains" and rr is not None and rr.complaints:
            kinds = {check_kind(c, getattr(ev, "fat_bits", 16)) for c in rr.complaints}
            if None not in kinds:
                return sorted(kinds)
        if ev.verdict == "differs" and getattr(ev, "diff", None) is not None:
            from vfz.oracles.mtools.exceptions import trailing_dot_explains
            if trailing_dot_explains(ev):
                return TRAILING
            return meta.explain(ev)
        return None

    @staticmethod
    def name_exception(expected_leaf, actual_leaf):
        if actual_leaf != expected_leaf and actual_leaf.rstrip(". ") == expected_leaf.rstrip(". "):
            return TRAILING
        return None


def check_kind(complaint, fat_bits=16):
    """The fusefat exception behind a structural checker's complaint about
    an image fusefat wrote (as `vfat check` and fsck.fat word them), else None."""
    if fat_bits == 16 and "FAT[1] is 0x8000" in complaint:
        return FAT1_CLEAN
    if complaint.startswith("longname-invalid: ") and complaint.endswith(
            "long name ends with '.', which Linux strips before every lookup"):
        return TRAILING
    return None
