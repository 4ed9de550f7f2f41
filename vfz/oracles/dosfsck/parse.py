"""fsck.fat's output parsed into structured complaints.

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
"""
import re

_ACTION = re.compile(r"^\s+(Auto-|Renamed to|Truncating|Not auto-correcting|Deleting|Dropping|"
                     r"Setting|Removing|Fixing|Marking|Leaving|Correcting|Reclaiming|Freeing|"
                     r"\(Short name|Not dropping|Creating\.)")


# the line fsck.fat 4.2 ends every finished check with, -n or -a
_SUMMARY = re.compile(r"^.*: \d+ files?, \d+/\d+ clusters$", re.M)


def gave_up(p):
    """fsck.fat's own words when it gave up on the image, else None. Its
    die() ('Failed to read sector N.', 'Logical sector size is zero.')
    exits 1, the code of a check that found (or repaired) errors, so the
    exit code cannot tell them apart: a finished check always ends with its
    summary line ('IMAGE: N files, U/T clusters'). p: the vfz.proc result
    of the run."""
    if p.error or p.rc != 1 or _SUMMARY.search(p.text):
        return None
    lines = [ln.strip() for ln in (p.errtext + "\n" + p.text).split("\n")
             if ln.strip() and not ln.startswith("fsck.fat ")]
    return lines[-1][:200] if lines else "exit 1 without its summary line"


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
    # "\n" only: str.splitlines() would also break a path line at \v \f
    # \x1c-\x1e \x85 U+2028 U+2029, characters a long name may hold
    for line in text.split("\n"):
        if not line.strip():
            continue
        if line.startswith("fsck.fat ") or line.startswith("Leaving filesystem unchanged") \
                or line.startswith("Checking") or line.startswith("Starting check") \
                or _SUMMARY.match(line):
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

