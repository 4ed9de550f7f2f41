"""fusefat 0.1a (Debian 12), an independent user-space FAT driver, through FUSE.

Reader: `fusefat -f -s -o ro IMAGE DIR`, then a child agent (fuse_agent.py,
chrooted into DIR) walks the tree with os.walk and hashes every file.
Writer: `fusefat -f -s -o rw+ IMAGE DIR` (rw+: fusefat's own read-write
mode; plain rw is refused), the agent applies each op with ordinary
syscalls (mkdir; open(O_CREAT|O_EXCL) + pwrite for create; open(O_WRONLY) +
pwrite at the offset for write; rename, unlink, rmdir) and answers "ok" or
the errno name; then `fusermount -u DIR` and fusefat's exit (it writes its
state back on unmount).

Every request has its own timeout: a FUSE daemon that stops answering
blocks the agent, not the harness; the agent and fusefat are then killed
and the mount is detached (`fusermount -u -z`). Each read or apply mounts
afresh, so a hang or crash never carries over to the next image.

What fusefat does (measured on Debian 12, fusefat 0.1a-1.1):
  * names: only printable ASCII; any other character (non-ASCII, DEL,
    controls) and \\ : * ? " < > | -> EPERM (Linux: EINVAL, or accepts
    non-ASCII); more than 255 characters -> EPERM (Linux ENAMETOOLONG);
    trailing dots and a trailing space are kept ('dots...', 'trail '; Linux
    strips dots and refuses the space); "..." is created as a file
  * every new name gets LFN slots and a short entry '~N' (N a counter of the
    mount: '~1', '~12'), even a valid 8.3 name: its own alias scheme
  * a rename to a name it refuses (EPERM) deletes the source first: data loss
  * a case-only rename of a file frees its clusters (data loss); of a
    directory answers EPERM
  * rmdir of a non-empty directory (and rename onto one) answers EPERM
    (Linux ENOTEMPTY); a write at the end of a one-cluster file or past its
    cluster answers EPERM
  * a write that starts at or past the end of the last cluster of a file
    of two or more clusters answers ok but links the file's first cluster
    to the new ones: its other clusters are cut off (lost), the data lands
    that many clusters too early and the size overshoots the chain
  * rename of a non-empty directory answers ok and leaves it empty under its
    new name: the subtree is lost, its clusters allocated and unreachable
  * unmounting a FAT16 volume mounted rw+ writes 0x8000 into FAT[1] of both
    FATs (was 0xFFFF); FAT12 and FAT32 are left alone
  * the volume label entry is listed as an empty file in the root
  * a rename onto an existing file replaces it under the new spelling
    (rename /B /a over 'a' leaves 'B'; Linux keeps 'a'): modelled
  * the reader ignores the NT case byte: a bare 8.3 name shows as stored
    ('LOWER' for 'lower' with the lower-case flag)
See EXCEPTIONS for how each is recognised. Another program under the
name (Debian 13's fusefat is fusefatfs 0.4) is refused: is_fusefat_01a.
"""
import os
import re
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

from vfz import lifeline, listing
from vfz.fatimg import lfn_checksum, lfn_units
from vfz.model.names import walked
from vfz.oracles import Entry, NamedException, Reader, ReadResult, Timer, Writer, WriteResult
from vfz.proc import run, traced_env

AGENT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fuse_agent.py")
FUSEFAT = "fusefat"
MOUNT_WAIT = 10.0
UNMOUNT_WAIT = 15.0

FAT1_CLEAN = "fusefat-fat1-0x8000"
RMDIR_NONEMPTY = "fusefat-rmdir-eperm"
RENAME_DIR_EMPTIES = "fusefat-rename-dir-empties"
INTO_SUBTREE = "fusefat-rename-into-own-subtree"
NT_CASE = "fusefat-ignores-nt-case"
NAMES = "fusefat-ascii-names"
TRAILING = "fusefat-trailing-kept"
LABEL_AS_FILE = "fusefat-label-as-file"
RAW_83 = "fusefat-raw-83"
CASE_TWINS = "fusefat-case-twins"
WRITE_EPERM = "fusefat-write-eperm"
RENAME_REFUSED = "fusefat-rename-refused-loses-source"
CASE_RENAME = "fusefat-case-rename"
WRITE_GAP = "fusefat-write-gap-cuts-chain"
ERASE_OVERRUN = "fusefat-erase-overruns-cluster"
SELF_RENAME_HANG = "fusefat-stale-self-rename-hangs"
RENAME_ONTO = "fusefat-rename-dir-onto-dir-eperm"
SLOT_RUN = "fusefat-slot-run-offset-wraps"
# fusefat's log when it refused a new entry for that reason: the run of
# free slots it found, at a negative offset printed unsigned, then its check
_SLOT_RUN_LOG = re.compile(r"findlfnslots: found \d+ slots at clus:\d+, off:(\d+)\s*\nOffset too big")
LONG_UTF8_CUT = "fusefat-readdir-cuts-long-utf8"


def _mounted(d):
    d = os.path.realpath(d)
    try:
        with open("/proc/self/mounts", encoding="utf-8", errors="replace") as f:
            for line in f:
                parts = line.split(" ")
                if len(parts) > 1 and parts[1].replace("\\040", " ") == d:
                    return True
    except OSError:
        pass
    return False


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


class Mount:
    """One fusefat mount and its agent; every step bounded in time."""

    def __init__(self, image, rw, fusefat=FUSEFAT):
        self.image = image
        self.rw = rw
        self.cmd = [fusefat]
        self.dir = tempfile.mkdtemp(prefix="vfz-fusefat-")
        self.log = tempfile.TemporaryFile()
        self.proc = None
        self.agent = None
        self.buf = b""
        self.notes = []

    def start(self):
        """-> None, or why it could not mount."""
        # auto_unmount: fusermount detaches the mount when fusefat dies;
        # lifeline: fusefat and the agent die with this process (not with
        # the thread that mounted), so a harness killed mid-read leaves
        # neither a daemon nor a mount
        argv = [*self.cmd, "-f", "-s", "-o", ("rw+" if self.rw else "ro") + ",auto_unmount",
                self.image, self.dir]
        self.notes.append("$ " + " ".join(argv))
        try:
            self.proc = lifeline.Popen(argv, stdin=subprocess.DEVNULL, stdout=self.log,
                                       stderr=subprocess.STDOUT, env=traced_env(argv))
        except OSError as e:
            return f"cannot run {argv[0]}: {e.strerror}"
        t0 = time.monotonic()
        while not _mounted(self.dir):
            if self.proc.poll() is not None:
                return f"fusefat exited {self.proc.returncode} before mounting: {self.output()[-300:]}"
            if time.monotonic() - t0 > MOUNT_WAIT:
                return f"fusefat did not mount within {MOUNT_WAIT:g}s"
            time.sleep(0.01)
        self.agent = lifeline.Popen([sys.executable, AGENT, self.dir], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        return None

    def output(self):
        self.log.seek(0)
        return self.log.read().decode("utf-8", "replace")

    def request(self, req, timeout):
        """-> (answer dict, None) or (None, why)."""
        import json
        if self.agent is None or self.agent.poll() is not None:
            return None, "agent not running"
        try:
            self.agent.stdin.write((json.dumps(req) + "\n").encode())
            self.agent.stdin.flush()
        except OSError as e:
            return None, f"agent: {e}"
        fd = self.agent.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                return None, f"timeout after {timeout:g}s (fusefat hung)"
            r, _, _ = select.select([fd], [], [], left)
            if not r:
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                if self.proc.poll() is not None:
                    return None, f"fusefat died (exit {self.proc.returncode})"
                return None, "agent died"
            self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\n")
        return json.loads(line), None

    def _kill(self, p):
        if p is not None and p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                pass

    def stop(self, hung=False):
        """Unmount; -> None or why the unmount was not clean. A hung mount
        (or one that does not go away) is killed and detached lazily."""
        why = None
        if hung and self.proc is not None:
            # fusefat first: an agent blocked in a request fusefat already
            # read waits uninterruptibly for its answer (SIGKILL waits too),
            # so killing the agent first held each hang 5 s longer (measured)
            self._kill(self.proc)
        if self.agent is not None:
            if hung:
                self._kill(self.agent)
            else:
                try:
                    self.agent.stdin.close()
                    self.agent.wait(5)
                except (OSError, subprocess.TimeoutExpired):
                    self._kill(self.agent)
            for f in (self.agent.stdout,):
                try:
                    f.close()
                except OSError:
                    pass
        if self.proc is not None:
            if hung:
                self._kill(self.proc)
            elif self.proc.poll() is None:
                p = run(["fusermount", "-u", self.dir], timeout=UNMOUNT_WAIT)
                self.notes.append(p.raw().rstrip())
                try:
                    self.proc.wait(UNMOUNT_WAIT)
                except subprocess.TimeoutExpired:
                    why = f"fusefat did not exit within {UNMOUNT_WAIT:g}s of fusermount -u"
                    self._kill(self.proc)
            # a read-only mount always exits 255 on fusermount -u (measured): not a failure
            if self.rw and self.proc.returncode not in (0, None) and why is None and not hung:
                why = f"fusefat exit {self.proc.returncode}"
        if _mounted(self.dir):
            run(["fusermount", "-u", "-z", self.dir], timeout=UNMOUNT_WAIT)
        try:
            os.rmdir(self.dir)
        except OSError:
            pass
        self.out_text = self.output()
        self.log.close()
        return why


def raw_83(name):
    """A bare 8.3 name as fusefat shows it: its stored bytes (upper case,
    cp437) taken as UTF-8 by the host (U+FFFD for what is not UTF-8); None
    when the name has no cp437 form."""
    from vfz.model.names import _cp437_upper
    try:
        b = "".join(c.upper() if c.isascii() else _cp437_upper(c) for c in name).encode("cp437")
    except UnicodeEncodeError:
        return None
    return b.decode("utf-8", "replace")


def fusefat_fold(name):
    """A name as fusefat compares it (libfat.c utf8_stricmp): ASCII letters
    folded, every other character by Unicode simple case folding ('Σ' and
    'σ', 'É' and 'é' are one name; 'ß' stays 'ß')."""
    out = []
    for c in name:
        f = c.casefold()
        out.append(f if len(f) == 1 else (c.lower() if len(c.lower()) == 1 else c))
    return "".join(out)


def _twins_explain(d, entries):
    """Every difference lies at or under one of two or more expected names
    of one directory that fusefat_fold makes one (CASE_TWINS): fusefat opens
    the first of them for each."""
    if not entries or not (d.missing or d.extra or d.changed):
        return False
    twins = listing.fold_twins(entries, fusefat_fold)
    return bool(twins) and all(listing.under(e["path"], twins)
                               for e in d.missing + d.extra + [a for a, _ in d.changed])


def _unopenable_as(exp, shown):
    """The named exception under which fusefat lists file exp (shown: the
    entry paired with it, its name already mapped by name_exception) under
    a name it then cannot open, contents unread: LONG_UTF8_CUT (a name
    whose UTF-8 form is over 255 bytes: readdir_cut), else RAW_83 (a
    non-ASCII name with a cp437 form, stored bare: raw_83); else None."""
    leaf = exp["path"].rsplit("/", 1)[-1]
    if shown.get("size") is not None or exp.get("type") != "file" or leaf.isascii():
        return None
    if readdir_cut(leaf) != leaf:
        return LONG_UTF8_CUT
    return RAW_83 if raw_83(leaf) is not None else None


def _refused(path, refused):
    """path (expected) is a directory with a non-ASCII bare name that
    fusefat's output says it could not open (under its raw_83 form)."""
    leaf = path.rsplit("/", 1)[-1]
    form = None if leaf.isascii() else raw_83(leaf)
    return form is not None and any(r.rstrip().endswith("/" + form) for r in refused)


def root_label(image):
    """The volume label entry of the root directory as text (trailing spaces
    dropped), or None."""
    from vfz.fatimg import open_ro
    fat = open_ro(image)
    for off in fat.dir_slots(None):
        e = fat.b[off:off + 32]
        if e[0] == 0:
            break
        if e[0] != 0xE5 and e[11] & 0x0F != 0x0F and e[11] & 0x08:
            return bytes(e[:11]).decode("cp437").rstrip(" ")
    return None


_FLAVOUR = {}


def is_fusefat_01a(exe):
    """(ok, why): is exe fusefat 0.1a, the program this module's traits and
    named exceptions describe? From Debian 13 on, the package fusefat holds
    another program, fusefatfs 0.4 (on ChaN's FatFs R0.16, libfuse 3): of
    the 15 fusefat cases of corpus/peer-bugs, 10 do not reproduce on it
    (measured with Debian sid's 0.4+dfsg-1, reports/bugs.md), so checking
    it against 0.1a's exceptions would file and hide the wrong things.
    0.1a's help begins "Usage: PROGRAM imagefile mountpoint" (PROGRAM as it
    was called: a full path too); fusefatfs's "usage: fusefatfs image
    mountpoint"."""
    if exe not in _FLAVOUR:
        p = run([exe, "-h"], timeout=10)
        head = (p.text + p.errtext).lstrip().splitlines()[:1]
        if head and re.match(r"Usage: \S+ imagefile mountpoint", head[0]):
            _FLAVOUR[exe] = (True, "")
        else:
            _FLAVOUR[exe] = (False, f"{exe} is not fusefat 0.1a (its -h begins {head[0][:60]!r}); this "
                             "oracle knows 0.1a (Debian 12) only" if head else
                             f"{exe} is not fusefat 0.1a (-h printed nothing); this oracle knows 0.1a only")
    return _FLAVOUR[exe]


def readdir_cut(leaf):
    """The name fusefat's readdir gives for a long name (LONG_UTF8_CUT):
    fat_readdir (libfat.c) converts the UTF-16 name to UTF-8 and copies
    at most 255 bytes into d_name, so a name of 255 units or fewer whose
    UTF-8 form is longer (any non-ASCII character in a long enough name)
    is cut, maybe inside a character (shown here as U+FFFD, as the agent's
    bytes are decoded). A lookup of the cut name finds nothing (ENOENT)."""
    b = leaf.encode("utf-8", "surrogatepass")
    return b[:255].decode("utf-8", "replace") if len(b) > 255 else leaf


def _text(s):
    """A host name from the agent (surrogateescape) -> canonical text."""
    return os.fsencode(s).decode("utf-8", "replace")


class FusefatReader(Reader):
    def __init__(self, name="fusefat", fusefat=FUSEFAT, **cfg):
        self.name = name
        self.fusefat = fusefat

    def available(self):
        if not (shutil.which(self.fusefat) and os.path.exists("/dev/fuse") and shutil.which("fusermount")):
            return False, "needs fusefat, fusermount (package fuse) and /dev/fuse"
        return is_fusefat_01a(self.fusefat)

    def read(self, image, timeout=30.0):
        r = ReadResult(self.name)
        with Timer() as t:
            try:
                self._read(image, timeout, r)
            except Exception as e:
                r.error = f"fusefat reader: {type(e).__name__}: {e}"
                r.listing = None
        r.seconds = t.seconds
        return r

    def _read(self, image, timeout, r):
        if not os.path.isfile(image):
            r.error = f"no such image: {image}"
            return
        m = Mount(image, rw=False, fusefat=self.fusefat)
        why = m.start()
        ans, hung = None, False
        if why is None:
            ans, why = m.request({"op": "walk"}, timeout)
            hung = why is not None
        unclean = m.stop(hung=hung)
        r.raw = "\n".join(m.notes) + "\n" + m.out_text
        if why:
            r.error = why
            return
        if unclean:
            r.complaints.append(unclean)
        out = []
        for path, kind, size, sha, err in ans["entries"]:
            p = _text(path)
            if kind == "dir":
                out.append(listing.entry(p, "dir"))
            elif err:
                r.complaints.append(f"cannot read {p}: {err}")
                out.append(listing.entry(p, "file", size=None))
            else:
                e = listing.entry(p, "file", size=size)
                e["sha256"] = sha
                out.append(e)
        label = root_label(image)
        if label is not None:
            # named exception LABEL_AS_FILE: the volume label entry listed
            # as an empty file; dropped here, the evidence kept
            hit = [e for e in out if e["path"] == "/" + label and e["type"] == "file" and e["size"] == 0]
            if hit:
                out.remove(hit[0])
                r.extra["exceptions"] = [LABEL_AS_FILE]
                r.extra["label_as_file"] = hit[0]["path"]
        r.listing = sorted(out, key=lambda e: e["path"])

    @staticmethod
    def explain(ev):
        """RAW_83 / LONG_UTF8_CUT when every difference is either a file
        listed under its expected path (its name mapped by name_exception)
        whose contents fusefat could not read, the leaf a non-ASCII name
        stored bare (raw_83) or a long name cut to 255 UTF-8 bytes
        (readdir_cut); or an entry missing under such a directory, listed itself,
        that fusefat could not open: its output says "find file error
        fname: .../<raw_83 form>" (so nothing under it is listed).
        CASE_TWINS when every difference lies at or under one of two
        expected names fusefat folds to one (_twins_explain)."""
        d = getattr(ev, "diff", None)
        if d is None or getattr(d, "ambiguous", None):
            return None
        if _twins_explain(d, getattr(ev, "entries", None)):
            return CASE_TWINS
        if d.extra or not (d.changed or d.missing):
            return None
        kinds = set()
        for exp, shown in d.changed:
            kind = _unopenable_as(exp, shown)
            if kind is None:
                return None
            kinds.add(kind)
        if d.missing:
            raw = getattr(getattr(ev, "rr", None), "raw", None) or ""
            refused = [m.group(1) for m in re.finditer(r"find file error fname: (.*)", raw)]
            gone = {e["path"] for e in d.missing}
            for e in d.missing:
                comps = e["path"].split("/")[1:]
                ups = ["/" + "/".join(comps[:i]) for i in range(1, len(comps))]
                if not any(_refused(p, refused) for p in ups if p not in gone):
                    return None
            kinds.add(RAW_83)
        return kinds.pop() if len(kinds) == 1 else sorted(kinds)

    @staticmethod
    def name_exception(expected_leaf, actual_leaf):
        """A bare 8.3 name shows as stored (upper case): the NT case byte is
        ignored; a non-ASCII one as its raw cp437 bytes."""
        from vfz.model import short_only
        if actual_leaf == expected_leaf.upper() and actual_leaf != expected_leaf \
                and short_only(expected_leaf, "winnt") and expected_leaf.isascii():
            return NT_CASE
        if not expected_leaf.isascii() and actual_leaf == raw_83(expected_leaf):
            return RAW_83
        if actual_leaf != expected_leaf and actual_leaf == readdir_cut(expected_leaf):
            return LONG_UTF8_CUT
        return None


class FusefatWriter(Writer):
    def __init__(self, name="fusefat", fusefat=FUSEFAT, op_timeout=20.0, **cfg):
        self.name = name
        self.fusefat = fusefat
        self.op_timeout = op_timeout
        self.last_fat1 = None       # (bits, before, after) of the last apply: evidence for FAT1_CLEAN

    available = FusefatReader.available

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
                ans, why = m.request({"op": op.kind, "args": list(op.args)},
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
        the model's, by one of its named exceptions, else None (vfz.evidence
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
        return first_known_failure(ev.ops, wr.results, getattr(ev, "image", None),
                                   getattr(wr, "error", None), getattr(wr, "raw", None))

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
            from vfz.oracles.mtools_exceptions import trailing_dot_explains
            if trailing_dot_explains(ev):
                return TRAILING
        return None

    @staticmethod
    def name_exception(expected_leaf, actual_leaf):
        if actual_leaf != expected_leaf and actual_leaf.rstrip(". ") == expected_leaf.rstrip(". "):
            return TRAILING
        return None


def _new_leaf(op):
    """The last component of the path an op creates (a rename's target)."""
    target = op.args[1] if op.kind == "rename" else op.args[0]
    return ([c for c in target.split("/") if c] or [""])[-1]


def check_kind(complaint, fat_bits=16):
    """The fusefat exception behind a structural checker's complaint about
    an image fusefat wrote (as `vfat check` and fsck.fat word them), else None."""
    if fat_bits == 16 and "FAT[1] is 0x8000" in complaint:
        return FAT1_CLEAN
    if complaint.startswith("longname-invalid: ") and complaint.endswith(
            "long name ends with '.', which Linux strips before every lookup"):
        return TRAILING
    return None


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


def _dir_clusters(fat):
    """First clusters of every subdirectory reachable from the root."""
    out, todo, seen = [], [None], set()
    while todo:
        d = todo.pop()
        if d in seen:
            continue
        seen.add(d)
        if d is not None:
            out.append(d)
        for _off, name, attr, cl, _size, _lfn in fat.short_entries(d):
            if attr & 0x10 and cl >= 2 and name not in (b".          ", b"..         "):
                todo.append(cl)
    return out


def _live_short(e):
    """Is directory entry e a live short entry (not free, not a long-name
    slot, not the volume label)?"""
    return e[0] not in (0, 0xE5) and e[11] != 0x0F and not e[11] & 0x08


def orphan_tail(fat, c, prev):
    """The UTF-16 code units of the long-name slots a directory cluster c
    begins with when they are the tail of an entry cut off from its head:
    slots of order j, j-1, .., 1 (none marked last, 0x40) followed by a live
    short entry whose checksum they carry, while the last slot of prev (the
    cluster before c in the directory's chain) is not the live slot of order
    j+1 with that checksum (an entry that merely spans the two clusters);
    else None."""
    base = fat.cluster_off(c)
    slots = [bytes(fat.b[base + 32 * k:base + 32 * k + 32]) for k in range(fat.csize // 32)]
    first = slots[0]
    if first[11] != 0x0F or first[0] in (0, 0xE5) or first[0] & 0x40 or not 1 <= first[0] <= 20:
        return None
    j = first[0]
    if len(slots) <= j:
        return None
    run, sfn = slots[:j], slots[j]
    if [e[0] for e in run] != list(range(j, 0, -1)) or any(e[11] != 0x0F for e in run):
        return None
    if not _live_short(sfn):
        return None
    if any(e[13] != lfn_checksum(sfn[:11]) for e in run):
        return None
    end = fat.cluster_off(prev) + fat.csize - 32
    last = bytes(fat.b[end:end + 32])
    if last[11] == 0x0F and last[0] & 0x3F == j + 1 and last[13] == run[0][13]:
        return None
    units = []
    for e in reversed(run):                 # order 1 holds the name's first 13 units
        units += lfn_units(e)
    return units


def erase_overrun_evidence(fat, leaf):
    """Does a FAT12/16 image hold the tail of entry `leaf` cut off by
    fusefat's delete? fat_real_delete (libfat.c) erases an entry's slots
    with one lseek + write from its first slot on FAT12/16 (a path meant for
    the fixed root directory): in a subdirectory whose entry runs into the
    directory's next cluster, the slots there stay live and their erased
    copies (0xE5, or 0x00 for the directory's last entry) land in the
    cluster physically after the first one. The evidence: a
    subdirectory's cluster that does not follow its predecessor on disk
    begins with an orphan_tail spelling the first 13*j units of leaf (case
    folded), or, when the tail is the short entry alone (j = 0), with an
    orphan_short whose erased head in the cluster before spells all of leaf."""
    if fat.bits not in (12, 16):
        return False
    want = leaf.encode("utf-16-le")
    want = [int.from_bytes(want[k:k + 2], "little") for k in range(0, len(want), 2)]
    for d in _dir_clusters(fat):
        chain = fat.chain(d)
        for prev, c in zip(chain, chain[1:]):
            if c == prev + 1:
                continue
            units = orphan_tail(fat, c, prev)
            if units and len(want) > len(units) and \
                    "".join(map(chr, units)).lower() == "".join(map(chr, want[:len(units)])).lower():
                return True
            units = orphan_short(fat, c, prev)
            if units and _spelled(units, want):
                return True
    return False


def orphan_short(fat, c, prev):
    """The tail of an entry cut off from its head when the tail is the short
    entry alone (j = 0 in erase_overrun_evidence): directory cluster c
    begins with a live short entry, and prev (the cluster before c in the
    chain) ends with erased long-name slots (first byte 0xE5, or 0x00 when
    the entry was the directory's last) of orders 1, 2, .. counted back
    from its end that carry that entry's checksum. -> the UTF-16 code units
    those slots still hold, order 1's first; else None. When the slots are
    0xE5, a reader takes that short entry for a file of its own (the deleted
    file stays, under its '~N' alias); when they are 0x00 the directory ends
    before it, and the erased copy over the cluster after prev is what shows
    (tests/test_fusefat_erase_overrun.py: fsck.fat's dots-missing)."""
    base = fat.cluster_off(c)
    sfn = bytes(fat.b[base:base + 32])
    if not _live_short(sfn):
        return None
    csum = lfn_checksum(sfn[:11])
    end = fat.cluster_off(prev) + fat.csize
    units = []
    for k in range(1, fat.csize // 32 + 1):
        e = bytes(fat.b[end - 32 * k:end - 32 * k + 32])
        if e[0] not in (0, 0xE5) or e[11] != 0x0F or e[13] != csum:
            break
        units += lfn_units(e)
    return units or None


def _spelled(units, want):
    """Do a long name's code units (0x0000-terminated, 0xFFFF-padded) spell
    want, case folded?"""
    if 0 in units:
        units = units[:units.index(0)]
    elif len(units) != len(want):
        return False
    return "".join(map(chr, units)).lower() == "".join(map(chr, want)).lower()


def _trailing_component(op):
    """Does a path the op names hold a component ending in '.' or ' '
    (not '.' or '..' themselves)?"""
    from vfz.opscript import OPS
    paths = [a for a, k in zip(op.args, OPS.get(op.kind, "")) if k == "s"]
    return any(_trailing(c) for p in paths for c in p.split("/"))


def _trailing(name):
    """Does name end in '.' or ' ' (not '.' or '..' themselves)?"""
    return name != name.rstrip(" .") and bool(name.strip("."))


def _open_fat(image):
    """A read-only vfz.fatimg.Fat of image, or False when it is no FAT
    volume this code can read (no evidence then)."""
    from vfz.fatimg import open_ro
    try:
        fat = open_ro(image)
        return fat if fat.csize and fat.clusters > 0 else False
    except (OSError, ValueError, struct.error):
        return False


def write_gap_cut(m, op, csize):
    """What fusefat cuts off when it applies write op to model m's tree
    (fusefat_seek_relinks), or None: (n-1, the file's bytes csize..S) for a
    write of at least one byte to a regular file of S bytes spanning
    n = ceil(S/csize) >= 2 clusters that starts at or past the end of its
    last cluster (offset >= n*csize)."""
    path, off, size = op.args[0], op.args[1], op.args[2]
    node, err = m._walk([c for c in path.split("/") if c])
    if err or node is None or node is m.root or node.is_dir or size <= 0:
        return None
    if not fusefat_seek_relinks(len(node.data), off, csize):
        return None
    return -(-len(node.data) // csize) - 1, bytes(node.data[csize:])


def fusefat_seek_relinks(S, off, csize):
    """Does fusefat 0.1a cut a file of S bytes at a write (the first of an
    open) starting at off? fat_seek (libfat.c) walks the chain from the
    first cluster to reach off; when it meets the end of the chain inside
    its `while (newoff >= clustersz)` loop it links the new cluster to
    F->CurClus, the cluster the walk started from (the first), instead of
    to the last cluster it read. That happens when the walk passes at least
    one cluster of the chain before meeting its end: S spans n >= 2
    clusters and off >= n*csize (measured on FAT12/16/32, 512-, 2048- and
    4096-byte clusters: tests/test_fusefat_write_gap.py, reports/bugs.md)."""
    n = -(-S // csize)
    return n >= 2 and off >= n * csize


def lost_chains(fat):
    """The chains of clusters that the FAT marks in use and no directory
    entry reaches (from the root down): [[cluster, ...]], each from a
    cluster no other lost one links to, in FAT order."""
    reach = set()
    todo = [None]
    if fat.bits == 32:
        reach.update(fat.chain(fat.root_cluster))
    seen = set()
    while todo:
        d = todo.pop()
        if d in seen:
            continue
        seen.add(d)
        for _off, name, attr, cl, _size, _lfn in fat.short_entries(d):
            if name in (b".          ", b"..         ") or cl < 2:
                continue
            reach.update(fat.chain(cl))
            if attr & 0x10:
                todo.append(cl)
    bad = {12: 0xFF7, 16: 0xFFF7, 32: 0x0FFFFFF7}[fat.bits]
    used = [c for c in range(2, fat.clusters + 2) if fat.get(c) not in (0, bad)]
    lost = {c for c in used if c not in reach}
    linked = {fat.get(c) for c in lost}
    out = []
    for c in sorted(lost - linked):
        chain, on = [], set()
        while c in lost and c not in on:
            chain.append(c)
            on.add(c)
            nxt = fat.get(c)
            if fat.eoc(nxt):
                break
            c = nxt
        out.append(chain)
    return out


def gap_evidence(fat, cut, tail):
    """Does the image hold, as a lost chain (lost_chains), exactly the cut
    clusters of a write_gap_cut: `cut` clusters whose first len(tail)
    bytes are the file's bytes from its second cluster on (tail)?"""
    for chain in lost_chains(fat):
        if len(chain) != cut:
            continue
        got = b"".join(bytes(fat.b[fat.cluster_off(c):fat.cluster_off(c) + fat.csize]) for c in chain)
        if got[:len(tail)] == tail:
            return True
    return False


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


_FUSEFAT_BAD = set('\\/:*?"<>|')


def fusefat_name_err(leaf):
    """The errno fusefat answers for a new name, as measured: EPERM for any
    character outside printable ASCII or in \\ / : * ? " < > |, and for
    more than 255 characters; else the checks Linux's VFS makes first."""
    if any(not (0x20 <= ord(c) < 0x7F) or c in _FUSEFAT_BAD for c in leaf) or len(leaf) > 255:
        return "EPERM"
    if leaf.strip(".") == "":
        from vfz.model import check_new_name
        return check_new_name(leaf)
    return None


# Model profile of the fusefat writer (knobs: vfz.model, "Profile knobs"):
# its name rule, names stored as given (trailing dots and spaces kept), and
# a rename onto an existing file takes the new spelling: fat_rename
# (libfat.c) deletes the target (fat_delete) and creates the source's entry
# under the name given (fat_create), where Linux reuses the target's entry
# (campaign seed 10102: rename /X26 onto /x12 leaves /XXXXXXXXXXXX).
PROFILE = {
    "name_err": fusefat_name_err,
    "store": lambda leaf: leaf,
    "replace": "respell",
}

ENTRIES = [
    Entry("fusefat", "fusefat", reader="vfz.oracles.fusefat:FusefatReader",
          writer="vfz.oracles.fusefat:FusefatWriter", profile=PROFILE, names="nodual",
          shortname="win95", shorts="own", needs=("fusefat", "fuse"), cost="process"),
]

EXCEPTIONS = [
    NamedException(FAT1_CLEAN, "fusefat", "writer",
                   "unmounting a FAT16 volume mounted rw+ writes 0x8000 into FAT[1] of both FATs "
                   "(mkfs.fat wrote 0xFFFF): bit 15 (clean shutdown) set, bit 14 (no hard error) "
                   "cleared and the end-of-chain bits lost; by the FAT specification FAT[1] holds "
                   "an EOC mark whose top two bits are these flags, so fusefat is wrong: the "
                   "volume now claims a disk error, and mtools refuses it ('Initial bytes of fat "
                   "is not 0xff') unless mtools_skip_check is set. FAT12 and FAT32 are untouched",
                   "FAT16 image written by the fusefat writer; FAT[1] was 0xFFFF before the "
                   "mount and is 0x8000 in every FAT after the unmount (FusefatWriter.last_fat1, "
                   "the writer's raw output); a checker's complaints about its image that all "
                   "say 'FAT[1] is 0x8000' (vfat-check: 'fat-eoc: /: FAT[1] is 0x8000'; "
                   "FusefatWriter.explain; regression case fusefat-fat1-clean-bit)"),
    NamedException(RMDIR_NONEMPTY, "fusefat", "writer",
                   "rmdir of a non-empty directory, and rename of a directory onto a non-empty "
                   "one, answer EPERM; POSIX and Linux answer ENOTEMPTY. fusefat is wrong by "
                   "POSIX rmdir(2)/rename(2); nothing is changed",
                   "an rmdir or rename op the model answers ENOTEMPTY and fusefat answers EPERM"),
    NamedException(LONG_UTF8_CUT, "fusefat", "reader",
                   "a long name whose UTF-8 form is over 255 bytes (255 UTF-16 units or fewer: FAT "
                   "and Linux take it; any non-ASCII character in a name near 255 characters) is "
                   "listed cut to its first 255 UTF-8 bytes, maybe inside a character: fat_readdir "
                   "(libfat.c) copies at most 255 bytes of its 521-byte UTF-8 buffer into d_name. "
                   "A lookup of the cut name finds nothing (ENOENT), so the file cannot be opened "
                   "through fusefat. fusefat is wrong (FUSE takes names up to 1024 bytes). "
                   "Campaign seed 10103: a 255-character name with one non-ASCII character "
                   "written by the core's dual writer",
                   "the shown leaf is the expected one's first 255 UTF-8 bytes, decoded with "
                   "U+FFFD for a cut character (readdir_cut)", bug="fusefat-readdir-cuts-long-utf8"),
    NamedException(RENAME_ONTO, "fusefat", "writer",
                   "a rename of a directory onto an existing empty directory answers EPERM and "
                   "changes nothing: fat_rename (libfat.c) refuses a directory onto any existing "
                   "target (\"destination file already exist: cant overwrite with a directory\"). "
                   "POSIX and Linux replace the empty directory (ok; onto a non-empty one "
                   "ENOTEMPTY: fusefat-rmdir-eperm). fusefat is wrong by POSIX rename(2); no data "
                   "is lost. Campaign seed 10102: mkdir /+; mkdir /a; rename /+ /a",
                   "a rename answered EPERM of a directory onto another directory, both in the "
                   "model's tree before it, which the model answers ok (FusefatWriter.known_failure: "
                   "one finding, the readers check the script cut before it, fusefat's image being "
                   "the model's before the op)"),
    NamedException(SLOT_RUN, "fusefat", "writer",
                   "a new long name (create, mkdir, rename's target) in a directory made of clusters "
                   "(any FAT32 directory, a FAT12/16 subdirectory) answers EPERM and is not made "
                   "when the run of deleted slots fusefat reuses for it starts in one cluster and "
                   "reaches the end of a later one: fusefat computes the run's offset in the later "
                   "cluster, which is negative ('findlfnslots: found 20 slots at clus:7, "
                   "off:4294967200', 'Offset too big', 'write error in fat_create()'). Linux makes "
                   "the entry. Measured (512-byte clusters): 130 characters + 255 characters "
                   "created, the 255 deleted and made again: EPERM (its 21 slots are the 5 left in "
                   "the first cluster + the whole second); with 39 characters first (12 + 9 "
                   "slots) it is made; the FAT16 root (one contiguous region) is not affected. "
                   "Campaign seed 11102, 137188933897",
                   "an op answered EPERM that creates a name fusefat accepts (fusefat_name_err) and "
                   "the model answers ok, with fusefat's log showing the run at an offset of 2^31 "
                   "or more and 'Offset too big' (slot_run_wrapped; FusefatWriter.known_failure: "
                   "one finding, the readers check the script cut before it)"),
    NamedException(RENAME_REFUSED, "fusefat", "writer",
                   "a rename to a name fusefat refuses (EPERM: non-ASCII, \\ : * ? \" < > |, over "
                   "255 characters) deletes the source entry before it tries the new name: the "
                   "answer is EPERM but the file or directory is gone (its slots 0xE5) and its "
                   "clusters stay allocated and unreachable (fsck.fat 'Reclaimed', vfat-check "
                   "'lost-clusters'). Data loss; fusefat is wrong (a failed rename(2) changes "
                   "nothing). Measured: create /f; rename /f /\u00c5 -> EPERM, /f gone; campaign "
                   "seed 1414",
                   "a rename answered EPERM whose new leaf fusefat_name_err refuses and whose "
                   "source exists in the model's tree (FusefatWriter.known_failure: one finding; "
                   "the readers check the script cut before that op)"),
    NamedException(CASE_RENAME, "fusefat", "writer",
                   "a rename to a respelling of the entry's own name ('abc' -> 'ABC'): for a "
                   "file fusefat answers ok, shows the new spelling and frees the file's "
                   "clusters in the FAT while the entry still points at them (vfat-check "
                   "'chain-free'; the next allocation overwrites the data: data loss); for a "
                   "directory it answers EPERM. Linux 6.1 answers ok and keeps the old spelling "
                   "(vfs_rename sees one inode); Windows respells it. Freeing the clusters is "
                   "fusefat's bug (it deletes the 'target', which is the source itself)",
                   "a rename answered ok of an existing entry whose target leaf differs from the "
                   "source's leaf as given only in ASCII case, whatever the stored spelling "
                   "(known_failure: one finding, readers check the cut script); a directory's answered EPERM (result_exception)"),
    NamedException(WRITE_EPERM, "fusefat", "writer",
                   "a pwrite that starts exactly at the end of the file, or past the clusters "
                   "the file has, answers EPERM (measured on 8 MiB FAT12, 2048-byte clusters, "
                   "a 100-byte file: offsets 100 and 2048+ fail, 99, 101-2047 pass); a failed "
                   "write past the clusters still grows the file to the cluster's end and "
                   "allocates one more cluster (vfat-check 'chain-long'). Linux writes them all; "
                   "fusefat is wrong (write(2) extends a regular file)",
                   "a write op the model answers ok and fusefat answers EPERM (result_exception; "
                   "known_failure cuts the readers' script before it: the file lacks the bytes)"),
    NamedException(WRITE_GAP, "fusefat", "writer",
                   "a write that starts at or past the end of the last cluster of a file of n >= 2 "
                   "clusters (a gap of whole clusters, or an append exactly at a cluster-aligned "
                   "end) answers ok, but fat_seek (libfat.c) links the file's first cluster to the "
                   "first new one (it links F->CurClus, where the walk began, not the last cluster "
                   "it read): the file's clusters 2..n are cut off, allocated and unreachable "
                   "(fsck.fat 'Reclaimed', 'Free cluster summary wrong'), the written bytes land "
                   "n-1 clusters early, and the size overshoots the chain by n-1 clusters (fsck.fat "
                   "'File size is S bytes, cluster chain length is C bytes'). Data loss; fusefat "
                   "is wrong. Measured on FAT12/16/32 with 512-, 2048- and 4096-byte clusters; a "
                   "write inside the last cluster (even past the end), or to a one-cluster file, "
                   "is not cut. Campaign seed 9101: create /Rpe@o 1024, write /rpe@o 1632 512",
                   "a write answered ok whose offset is at or past n*cluster for a file of n >= 2 "
                   "clusters in the model's tree (write_gap_cut), and the image fusefat wrote "
                   "holds a lost chain of exactly n-1 clusters holding that file's bytes from its "
                   "second cluster on (gap_evidence; FusefatWriter.known_failure: one finding, the "
                   "readers check the script cut before that op)"),
    NamedException(ERASE_OVERRUN, "fusefat", "writer",
                   "on FAT12/16, deleting an entry (unlink, rmdir, the source of a rename) whose "
                   "slots run from one cluster of a subdirectory into the next writes the erased "
                   "copies of all its slots (0xE5, or 0x00 when it was the directory's last entry) "
                   "in one piece from the first (fat_real_delete, libfat.c: "
                   "lseek + write, the fixed-root path): when the directory's next cluster is not "
                   "the physically next one, the slots there stay live (fsck.fat 'Long filename "
                   "fragment found outside a LFN sequence', a live '~N' short entry: a cross-link "
                   "after a directory rename) and the bytes overwrite the cluster after the first, "
                   "another directory's '.' and '..' or a file's data (fsck.fat 'Expected a valid "
                   "'.' entry'). Data loss; fusefat is wrong. FAT32 erases through the chain. "
                   "Campaign seed 9102: mkdir /d; mkdir /d/x; create /d/<182 chars>; unlink it",
                   "an unlink/rmdir/rename answered ok of an entry in a subdirectory of a FAT12/16 "
                   "volume, and the image fusefat wrote holds a subdirectory cluster, not "
                   "physically after its predecessor, that begins with long-name slots of order "
                   "j..1 and their short entry spelling the first 13*j characters of the removed "
                   "name, or (j = 0) with a live short entry whose erased long-name slots at the "
                   "end of the cluster before spell the whole removed name (erase_overrun_evidence, "
                   "orphan_tail, orphan_short; known_failure: one finding, the readers check the "
                   "script cut before that op)"),
    NamedException(SELF_RENAME_HANG, "fusefat", "writer",
                   "a rename of a path onto itself shortly (within the 1-s entry timeout) after "
                   "that path was removed through another case spelling (mkdir /a; rmdir /A; "
                   "rename /a /a) hangs the mount for good: fusefat (libfuse 2 high-level API) "
                   "gives each spelling its own node, so the kernel keeps /a's dentry; it "
                   "revalidates the rename's target (ENOENT) but not its source and sends RENAME "
                   "of that node onto its own name, which libfuse's get_path2 locks twice and "
                   "then waits for in pthread_cond_wait (0 % CPU; with -s no request is served "
                   "again). Linux answers ENOENT. fusefat's case-insensitive aliasing and "
                   "libfuse's 'FIXME: locking two paths needs deadlock checking' together",
                   "a rename whose source and target are the same path, that timed out (writer "
                   "error 'line N (rename): timeout'), whose source the model no longer has "
                   "because an earlier op answered ok (unlink, rmdir, rename) removed it spelled "
                   "differently in ASCII case (stale_self_rename; known_failure: one finding, the "
                   "readers check the script cut before it)"),
    NamedException(INTO_SUBTREE, "fusefat", "writer",
                   "a rename of a directory into its own subtree, the source spelled in another "
                   "case ('mkdir /d; rename /D /d/x'), answers ok and moves the directory into "
                   "itself: it leaves the tree (its '..' points at itself; fsck.fat: \"Invalid "
                   "'..' entry\", \"Start does point to containing directory\"), with all it "
                   "held. The kernel's EINVAL check compares the names as given and lets it "
                   "through; fusefat folds case and checks nothing. Linux answers EINVAL. "
                   "Data loss; fusefat is wrong (campaign seed 9103)",
                   "a rename answered ok of a directory of the model's tree whose target path "
                   "lies inside the source under fusefat_fold (known_failure: one finding, the "
                   "readers check the script cut before it); where the target exists, the "
                   "target's errno (ENOTDIR, EISDIR, ENOTEMPTY, EEXIST) for such a rename that "
                   "Linux answers EINVAL (result_exception)", bug="fusefat-rename-into-own-subtree"),
    NamedException(RENAME_DIR_EMPTIES, "fusefat", "writer",
                   "rename of a non-empty directory answers ok, but the directory under its new "
                   "name is empty: its entries are gone and their clusters stay allocated and "
                   "unreachable (vfat-check 'lost-clusters', fsck.fat 'Reclaimed'); a later "
                   "rmdir of it succeeds. Data loss; fusefat is wrong (rename(2) keeps the "
                   "subtree). Measured: mkdir /A; create /A/f; rename /A /B -> /B empty",
                   "a rename answered ok whose source was a directory with entries in the "
                   "model's tree (FusefatWriter.known_failure: one finding, the readers check the "
                   "script cut before that op); rename_dir_explains for a listing diff"),
    NamedException(NAMES, "fusefat", "writer",
                   "fusefat accepts only printable ASCII in new names: non-ASCII, DEL and controls, "
                   "the characters \\ : * ? \" < > | and names over 255 characters are refused "
                   "with EPERM (Linux takes non-ASCII names; it refuses the others with EINVAL / "
                   "ENAMETOOLONG). Modelled in PROFILE (fusefat_name_err); a design limit, not "
                   "a wrong answer",
                   "EPERM on create/mkdir/rename whose new leaf fusefat_name_err refuses"),
    NamedException(TRAILING, "fusefat", "writer",
                   "fusefat stores a name as given, trailing dots and a trailing space included "
                   "('dots...', 'trail '), and looks names up exactly: 'a.' and 'a' are two "
                   "entries. Linux strips trailing dots (and refuses a trailing space, EINVAL), "
                   "Windows too; an image holding 'dots...' is not readable by Linux (exception "
                   "mtools-trailing-dot-unopenable is the same effect). Wrong by the Win32 "
                   "namespace rules fusefat claims to follow",
                   "a create/mkdir/rename answered ok whose new leaf ends with '.' or ' ', or an "
                   "op answered ENOENT where the model answers otherwise and one of its paths "
                   "has a component ending in '.' or ' ' (known_failure: the readers check the "
                   "script cut before it); vfat-check's "
                   "'long name ends with '.'' and Linux readers that list such a name unopened "
                   "(explain, with the recogniser of mtools-trailing-dot-unopenable)"),
    NamedException(LABEL_AS_FILE, "fusefat", "reader",
                   "fusefat lists the root's volume label entry (attribute 0x08) as an empty "
                   "file ('/VFATFUZZ' on every image mkfs.fat -n made); by the FAT specification "
                   "an ATTR_VOLUME_ID entry is not a file: fusefat is wrong",
                   "the root holds a volume label entry and fusefat lists a root file of that "
                   "name, size 0: the reader drops it and records extra['exceptions'] = "
                   "['fusefat-label-as-file'] and extra['label_as_file']"),
    NamedException(CASE_TWINS, "fusefat", "reader",
                   "fusefat compares names case-insensitively beyond ASCII (libfat.c utf8_stricmp: "
                   "Unicode simple case folding), as the FAT long-name rules and Windows do; Linux "
                   "(iocharset=ascii/utf8) folds ASCII only, so a nodual writer makes 'σ' beside "
                   "'Σ' and 'é' beside 'É', and fusefat opens the first of the two for both "
                   "names: a design difference, like fatfs-case-twins",
                   "every difference lies at or under one of two expected names of a directory "
                   "equal under fusefat_fold (FusefatReader.explain)"),
    NamedException(RAW_83, "fusefat", "reader",
                   "fusefat hands a bare 8.3 name's bytes to the host as they are stored (cp437, "
                   "upper case): a non-ASCII one is not UTF-8, shows with U+FFFD, and cannot be "
                   "opened by that name (ENOENT: size and contents unknown). fusefat is wrong "
                   "(it has no code page for short names)",
                   "the expected leaf is non-ASCII and the shown one equals raw_83(expected) "
                   "(mtools writes such names bare: mtools-translit); a diff made only of such "
                   "files listed without contents (FusefatReader.explain)"),
    NamedException(NT_CASE, "fusefat", "reader",
                   "fusefat ignores the NT case byte (0x08 / 0x10): a bare 8.3 entry stored as "
                   "'LOWER' with the lower-case flag shows as 'LOWER' (Linux, Windows: 'lower')",
                   "actual leaf == expected leaf upper-cased, expected an ASCII name that fits "
                   "8.3 under the winnt rule (stored bare with case flags)"),
]
