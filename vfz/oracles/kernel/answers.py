"""What the guest agent answers, read: kernel messages, the complaints among them, the listing."""
import re


TYPES = {"f": "file", "d": "dir", "l": "symlink", "o": "other", "?": "unknown"}
# the loop device's backing file (guest tmpfs) failed: a harness limit, not
# the filesystem's doing (image too large for the guest's memory)
STORAGE_RE = re.compile(r"loop: Write error|I/O error, dev loop|Buffer I/O error on dev loop")
COMPLAINT_RE = re.compile(r"FAT-fs|VFS|BUG|Oops|WARNING|general protection|Call Trace|"
                          r"corrupt|I/O error|blk_update_request|beyond end of device")


_ESC = re.compile(rb"\\x([0-9a-f]{2})")


def unescape(b):
    return _ESC.sub(lambda m: bytes([int(m.group(1), 16)]), b)


def parse_kmsg(raw):
    """/dev/kmsg records -> message strings (continuation lines dropped)."""
    out = []
    for line in raw.decode("utf-8", "replace").splitlines():
        if not line or line.startswith(" "):
            continue
        _, _, msg = line.partition(";")
        out.append(msg)
    return out


def complaints_of(msgs):
    """Messages about the filesystem, "(loopN)" -> "(loop)", duplicates dropped."""
    out = []
    for m in msgs:
        if COMPLAINT_RE.search(m):
            m = re.sub(r"\(loop\d+\)", "(loop)", m)
            m = re.sub(r"\bloop\d+:", "loop:", m.replace("\\x0a", " | "))
            m = re.sub(r"^\S+: (attempt to access beyond end of device)", r"\1", m)
            if m not in out:
                out.append(m)
    return out


def parse_listing(raw):
    """Agent list text -> (entries, walk_errors)."""
    entries, errors = [], []
    for line in raw.split(b"\n"):
        if not line:
            continue
        f = line.split(b"\t")
        if f[0] == b"E" and len(f) >= 4:
            p = unescape(f[1]).decode("utf-8", "surrogateescape") or "/"
            errors.append(f"{f[2].decode()} {p}: {f[3].decode()}")
            continue
        if f[0] != b"T" or len(f) < 9:
            errors.append("bad agent line: " + line.decode("utf-8", "replace")[:100])
            continue
        pb = unescape(f[1])
        dtype, stype, size, sha, serr, oerr, rerr = (x.decode() for x in f[2:9])
        kind = TYPES.get(stype if serr == "-" else dtype, "unknown")
        try:
            path = pb.decode("utf-8")
            extra = {}
        except UnicodeDecodeError:
            path = pb.decode("utf-8", "surrogateescape")
            extra = {"path_bytes": pb.hex()}
        e = {"path": path, "type": kind}
        if kind == "file":
            if serr == "-" and oerr == "ok" and rerr == "-" and sha != "-":
                e["size"] = int(size)
                e["sha256"] = sha
            elif serr == "-" and size != "-":
                e["size"] = int(size)
        if serr != "-":
            e["stat_error"] = serr
        if oerr not in ("ok", "-"):
            e["open_error"] = oerr
        if rerr != "-":
            e["read_error"] = rerr
        if dtype != stype and serr == "-" and dtype != "?":
            e["d_type"] = TYPES.get(dtype, dtype)
        if len(f) >= 13:
            e.update(_meta(*(x.decode() for x in f[9:13])))
        e.update(extra)
        entries.append(e)
    entries.sort(key=lambda e: e["path"])
    return entries, errors


def _stamp(t):
    """statx's "sec.nsec" -> (sec, nsec), None for '-'."""
    if t == "-":
        return None
    sec, _, ns = t.partition(".")
    return int(sec), int(ns or 0)


def _meta(attr, mtime, atime, btime):
    """The listing's attribute and time fields (docs/listing.md, the core's
    names) from the agent's: attr from FAT_IOCTL_GET_ATTRIBUTES, the times
    from statx (btime is FAT's creation time); "attr_error" when the ioctl
    failed. A modify or access time with nanoseconds keeps them
    (mtime_ns, atime_ns): FAT has none, so they would be a finding."""
    out = {}
    if attr != "-":
        try:
            out["attr"] = int(attr, 16)
        except ValueError:
            out["attr_error"] = attr
    for key, t in (("mtime", mtime), ("atime", atime), ("crtime", btime)):
        st = _stamp(t)
        if st is None:
            continue
        out[key] = st[0]
        if key == "crtime" or st[1]:
            out[key + "_ns"] = st[1]
    return out


def _txt(b):
    return b.decode("utf-8", "replace")
