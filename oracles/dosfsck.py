"""fsck.fat (dosfstools 4.2) as a checker.

`fsck.fat -n IMAGE` never writes. Its exit code is not enough (a wrong LFN
checksum is reported with exit 0, "Not auto-correcting this."), so the
output is parsed into structured complaints {"kind", "path", "message",
"action"}: a line in column 0 that starts with "/" names the entry (two
paths joined by "and" for shared clusters), the indented lines under it
say what is wrong and what -a would do. Kinds:

  bad-short-name   "Bad short file name (...)"     (a v1 dummy is one)
  many-bad-entries "Has a large number of bad entries. (B/N)" (a directory)
  dots-missing     "Expected a valid '.' entry in the first slot, found free entry."
  duplicate        "Duplicate directory entry ..."
  cross-link       "... share clusters."
  size-mismatch    "File size is N bytes, cluster chain length is M bytes."
  lfn-checksum     'Wrong checksum for long file name "NAME".'
  orphan-lfn       'Orphaned long file name part "..."'
  lfn-other        other long-file-name messages
  reclaimed        "Reclaimed N unused clusters"
  free-count / dirty / boot / fat   boot-sector and FAT-level messages
  other            anything not recognised (kept verbatim)

ReadResult.complaints holds "kind path: message" strings; extra["complaints"]
the dicts. listing is None: fsck.fat is a checker, not a reader.

Repair probe (repair=True, the default): copy the image, run `fsck.fat -a`
on the copy, list the copy with mtools before and after, and record in
extra["repair"] what the repair changed (rc, diff lines, lost paths).
"""
import os
import re
import shlex
import shutil
import tempfile

from oracles import Reader, ReadResult, Timer
from vfz import listing
from vfz.proc import run

_ACTION = re.compile(r"^\s+(Auto-|Renamed to|Truncating|Not auto-correcting|Deleting|Dropping|"
                     r"Setting|Removing|Fixing|Marking|Leaving|Correcting|Reclaiming|Freeing|"
                     r"\(Short name|Not dropping|Creating\.)")


def _kind(msg):
    m = msg.strip()
    if m.startswith("Bad short file name"):
        return "bad-short-name"
    if m.startswith("Expected a valid '.' entry") or m.startswith("Expected a valid '..' entry"):
        return "dots-missing"
    if m.startswith("Has a large number of bad entries"):
        return "many-bad-entries"
    if m.startswith("Duplicate directory entry"):
        return "duplicate"
    if m.startswith("share clusters") or m.endswith("share clusters."):
        return "cross-link"
    if m.startswith("File size is"):
        return "size-mismatch"
    if "long file name" in m.lower() or "lfn" in m.lower():
        return "lfn-other"
    if m.startswith("Directory has non-zero size") or "Directory" in m:
        return "dir"
    if "cluster" in m.lower():
        return "chain"
    return "other"


def parse_fsck(text):
    """fsck.fat -n output -> list of complaint dicts (see module doc)."""
    out = []
    cur_paths = []
    pending_and = False
    for line in text.splitlines():
        if not line.strip():
            continue
        if line.startswith("fsck.fat ") or line.startswith("Leaving filesystem unchanged") \
                or line.startswith("Checking") or line.startswith("Starting check") \
                or re.match(r"^.*: \d+ files?, \d+/\d+ clusters$", line):
            cur_paths = []
            continue
        if line.startswith("/"):
            if pending_and:
                cur_paths.append(line.rstrip())
                pending_and = False
            else:
                p = line.rstrip()
                if p.endswith("  and"):
                    p = p[:-5]
                    pending_and = True
                cur_paths = [p]
            continue
        if line.startswith(" "):
            if _ACTION.match(line) and out:
                act = line.strip()
                out[-1]["action"] = (out[-1]["action"] + " " + act).strip()
                continue
            kind = _kind(line)
            out.append({"kind": kind, "path": " and ".join(cur_paths) or None,
                        "message": line.strip(), "action": ""})
            continue
        cur_paths = []
        m = line.strip()
        if m.startswith("Wrong checksum for long file name"):
            kind = "lfn-checksum"
        elif m.startswith("Orphaned long file name part") or m.startswith("Orphan long file name"):
            kind = "orphan-lfn"
        elif m.startswith("Reclaimed"):
            kind = "reclaimed"
        elif "free cluster" in m.lower() and "summary" in m.lower() or m.startswith("Free cluster"):
            kind = "free-count"
        elif "dirty bit" in m.lower() or "not properly unmounted" in m:
            kind = "dirty"
        elif "boot sector" in m.lower() or "backup" in m.lower():
            kind = "boot"
        elif "FAT" in m:
            kind = "fat"
        elif "long file name" in m.lower():
            kind = "lfn-other"
        else:
            kind = "other"
        q = re.search(r'"(.*)"', m)
        out.append({"kind": kind, "path": q.group(1) if q else None, "message": m, "action": ""})
    return out


def complaint_str(c):
    return f"{c['kind']} {c['path'] or '-'}: {c['message']}" + (f" [{c['action']}]" if c["action"] else "")


BAD_NAME_MODES = ("core-v1", "core-unique", "kernel-nodual")


DUAL_MODES = ("core-dual", "kernel")   # Linux aliases; mtools makes its own (no 0x7F)


def expected_complaints(mode, dirs, fat_bits=16, del_aliases=0):
    """What fsck.fat -n must say about a clean image written in `mode`
    (DESIGN.md): in v1 modes (core-v1, core-unique, kernel-nodual) exactly
    one bad-short-name per entry with LFN slots (its dummy), plus, as
    fsck.fat 4.2's check_dir does, one many-bad-entries for every non-root
    directory where good + bad > 4 and bad > good / 2 (integer division;
    "." and ".." are not counted; on FAT32 the root directory counts too,
    "Not dropping root directory."), plus any number of dots-missing (named
    exception fsck-v1-dots: count None = any, while the repair probe loses
    no data); other modes: nothing.
    dirs: [(path, n_bad, n_good, is_root)]. -> {kind: count or None}"""
    if mode not in BAD_NAME_MODES:
        # dual aliases holding 0x7F (named exception fsck-del-alias)
        return {"bad-short-name": del_aliases} if del_aliases and mode in DUAL_MODES else {}
    out = {}
    nbad = sum(d[1] for d in dirs)
    if nbad:
        out["bad-short-name"] = nbad
    many = 0
    for path, bad, good, is_root in dirs:
        if is_root and fat_bits != 32:
            continue
        if good + bad > 4 and bad > good // 2:
            many += 1
    if many:
        out["many-bad-entries"] = many
    out["dots-missing"] = None
    return out


class DosfsckReader(Reader):
    def __init__(self, name="dosfsck", fsck="fsck.fat", repair=True, **cfg):
        self.name = name
        self.fsck = shlex.split(fsck) if isinstance(fsck, str) else list(fsck)
        self.repair = repair

    def read(self, image, timeout=30.0):
        r = ReadResult(self.name)
        with Timer() as t:
            try:
                self._read(image, timeout, r)
            except Exception as e:
                r.error = f"dosfsck reader: {type(e).__name__}: {e}"
        r.seconds = t.seconds
        return r

    def _read(self, image, timeout, r):
        if not os.path.isfile(image):
            r.error = f"no such image: {image}"
            return
        p = run([*self.fsck, "-n", image], timeout=timeout)
        r.raw += p.raw()
        r.extra["rc"] = p.rc
        if p.error:
            r.error = f"fsck.fat -n: {p.error}"
            return
        if p.rc not in (0, 1):
            # 2+ = usage error or unusable image: still a verdict, not a crash
            r.error = f"fsck.fat -n exit {p.rc}: {(p.errtext or p.text).strip().splitlines()[-1:]}"
        cs = parse_fsck(p.text + "\n" + p.errtext)
        r.extra["complaints"] = cs
        r.complaints = [complaint_str(c) for c in cs]
        if self.repair and r.error is None and cs:
            r.extra["repair"] = self._repair(image, timeout)

    def _repair(self, image, timeout):
        from oracles.mtools import MtoolsReader
        tmp = tempfile.mkdtemp(prefix="vfz-fsck-")
        try:
            copy = os.path.join(tmp, "repair.img")
            shutil.copyfile(image, copy)
            mt = MtoolsReader()
            before = mt.read(copy, timeout)
            p = run([*self.fsck, "-a", copy], timeout=timeout)
            after = mt.read(copy, timeout)
            rep = {"rc": p.rc, "error": p.error, "output": p.text[-4000:]}
            if before.listing is not None and after.listing is not None:
                d = listing.diff(before.listing, after.listing)
                rep["changes"] = d.splitlines()
                bp = {e["path"] for e in before.listing}
                ap = {e["path"] for e in after.listing}
                rep["lost"] = sorted(bp - ap)
                rep["new"] = sorted(ap - bp)
                # contents that exist nowhere after the repair (renames do not count)
                def blobs(ls):
                    c = {}
                    for e in ls:
                        if e.get("type") == "file":
                            k = (e.get("size"), e.get("sha256"))
                            c[k] = c.get(k, 0) + 1
                    return c
                b, a = blobs(before.listing), blobs(after.listing)
                rep["data_lost"] = sum(max(0, n - a.get(k, 0)) for k, n in b.items())
                bm = {e["path"]: e.get("sha256") for e in before.listing}
                rep["content_changed"] = sorted(e["path"] for e in after.listing
                                                if e["path"] in bm and e.get("sha256") != bm[e["path"]])
            else:
                rep["changes"] = None
                rep["mtools_error"] = before.error or after.error
            return rep
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
