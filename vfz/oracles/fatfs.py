"""ChaN FatFs R0.15 (npm js-fatfs 0.2.1, compiled to WebAssembly) as a
reader and as a writer: `fatfs`.

FatFs is the FAT stack inside cameras, players, data loggers and boot
ROMs; its answers are what such a device makes of a volume.

The build (js-fatfs's fatfs/source/ffconf.h at v0.2.1, read in the
package's repository; confirmed here by measurement where noted):
  FF_USE_LFN 1, FF_MAX_LFN 255, FF_LFN_UNICODE 2 (UTF-8 API), FF_LFN_BUF
  765, FF_SFN_BUF 34; FF_CODE_PAGE 0 (every code page; this glue asks for
  437 through js-fatfs's create({codepage: 437}), which calls f_setcp);
  FF_FS_RPATH 0 (no "." / ".." in paths: FR_INVALID_NAME, and f_readdir
  skips dot entries); FF_FS_EXFAT 0; FF_FS_LOCK 0; FF_FS_READONLY 0;
  FF_FS_MINIMIZE 0; FF_USE_FIND 0, FF_USE_CHMOD 0, FF_USE_LABEL 0;
  FF_FS_NORTC 0 (timestamps from the host clock); FF_MIN_SS 512, FF_MAX_SS
  4096; FF_VOLUMES 10 with FF_STR_VOLUME_ID 0 (a ':' anywhere in a path
  is read as a drive prefix: FR_INVALID_DRIVE).

The Node side (vfz/oracles/fatfs/server.js, package.json and the pinned
package-lock.json beside it; `vfatfuzz setup` runs `npm ci` there) is one
persistent process per oracle instance, JSON lines over stdin/stdout;
js-fatfs's diskio callbacks read the image file sector by sector straight
into the WebAssembly memory, FatFs's writes stay in an overlay in memory
and are committed after an op-script (a copy of the image, the sectors
written, rename: atomic). A WebAssembly trap or a JavaScript exception is
answered as an error and ends the process; a request that does not
answer within the timeout kills it. Either way the
image's answer is an error (a finding: FatFs crashed or hung on it) and
the next image gets a fresh process.

Reader: walks the tree with f_opendir/f_readdir from the root, listing
long names (FILINFO fname; the 8.3 name when there is no valid long name,
as FatFs shows it), type and size, and hashes each file read with
f_open/f_read (sha256 in Node). Entries carry two extra keys kept for
reports: short83 (FILINFO altname) and attr. A file whose long name FatFs
cannot look up again (f_stat fails: e.g. a long name with trailing dots
that another writer kept) is opened by its 8.3 name when that finds the
same entry; a long name that finds another entry (two names FatFs folds
to one) is read as found, with a complaint. Errors:
  * f_mount fails (FR_NO_FILESYSTEM, FR_DISK_ERR, ...): ReadResult.error
    "f_mount: FR_..." (the image is unreadable to FatFs);
  * an FR_ error while walking or reading (f_readdir, f_open, f_read) is
    a complaint "f_readdir /dir: FR_INT_ERR" and the listing keeps what was
    read (the entry of an unreadable file has its size and no sha256), so
    the listing differs from the expected tree and the complaint says why;
  * a sector past the end of the image file reads as a disk error
    (FR_DISK_ERR), never as zeros;
  * loops end with a complaint, not a hang: a directory whose first
    cluster was listed already is not listed again ("already listed (loop
    or cross-link)"), and a file read is stopped once it returned more
    bytes than the volume holds (f_read follows a cluster chain that loops
    for as long as the size field says, up to 4 GiB); a name the path API
    cannot spell (a unit below 0x20, '\\', ':') is opened by its 8.3 name.
    Measured with 2 000 mutated FAT12 images (1-200 random bytes each):
    no trap, no hang after these guards (11 hangs of the walker before).

Writer: every op of the grammar. What Linux decides in the VFS is decided
in the glue, asking FatFs's own f_stat: the path walk with "." and ".."
(FF_FS_RPATH 0), trailing slashes (FatFs ignores them: create "/a/" would
make a file), unlink of a directory and rmdir of a file (FatFs has one
f_unlink for both: EISDIR / ENOTDIR first), the root, rename's EBUSY,
ENOTDIR / EISDIR between types, EINVAL into its own subtree (f_rename does
not check it) and ENOTEMPTY onto an ancestor, paths of PATH_MAX bytes. A
component the API cannot express is refused before FatFs sees it: a unit
below 0x20 ends a FatFs path, '\\' separates, ':' is a drive prefix (new
name: EINVAL, as Linux; lookup: ENOENT). What Linux decides in the file
system, FatFs decides; its FRESULT becomes the errno below. write zero-
fills a gap past the end of the file itself (f_lseek past the end leaves
it undefined, FatFs's documentation says so). Contents are regenerated in
Node by the rule of vfz.opscript.content (byte i = (seed + 31 i) mod 256).

FRESULT -> errno (measured against the model of Linux in the same
situations by tests/test_fatfs.py and vfat-gen scripts; EXCEPTIONS and the
profile say where FatFs differs by design; FR_WRITE_PROTECTED and the
read-only FR_DENIED of f_unlink are unreachable from op-scripts, which make
no read-only file or volume, so their errnos are unmeasured choices):
  f_mkdir, f_open(FA_CREATE_NEW), f_rename's new name:
    FR_OK ok; FR_EXIST EEXIST; FR_INVALID_NAME EINVAL (also a name longer
    than 255 units, where Linux says ENAMETOOLONG: profile name_err);
    FR_INVALID_DRIVE EINVAL; FR_DENIED ENOSPC (no free cluster, or the
    FAT12/16 root is full); FR_NO_FILE / FR_NO_PATH ENOENT;
    FR_WRITE_PROTECTED EROFS; anything else EIO
  f_rename onto an existing entry: FR_EXIST, always (FatFs never replaces;
    Linux does). The glue then removes the target (f_unlink; FR_DENIED for
    a directory that is not empty: ENOTEMPTY) and calls f_rename again, so
    the entry takes the new spelling (profile knob replace "respell",
    exception fatfs-rename-no-replace)
  f_unlink as unlink: FR_DENIED EACCES (read-only); as rmdir: FR_DENIED
    ENOTEMPTY (FatFs's answer for a directory that is not empty)
  f_write short (bw < btw) or FR_DENIED: ENOSPC; other FR_ errors EIO
  f_stat failing during the path walk: ENOENT (a file as a parent:
    ENOTDIR, decided by the walk)
The FR_ name behind each answer is kept in the WriteResult's raw text (a
replacing rename: the three calls, "FR_EXIST,FR_OK,FR_OK").

Where FatFs differs from Linux by design, each measured (the model
profile PROFILE predicts the writer; EXCEPTIONS names the rest):
  * names (create_name): trailing spaces dropped like dots ('b ' is 'b');
    DEL refused; 255 units counted before the dots are dropped and
    FR_INVALID_NAME (EINVAL) for too long; a name of dots only EINVAL
    (knobs name_err, store; exception fatfs-name-rules);
  * lookups fold every letter ff_wtoupper knows, 848 of the 1173 case
    pairs Python knows (casefold.json, re-measured by the test): 'é'
    finds 'É' (knob lookup; fatfs-unicode-case);
  * a rename to a respelling of the same entry applies it (knob
    case_rename; fatfs-case-rename); a rename onto another entry is
    refused by f_rename and done by the glue (knob replace;
    fatfs-rename-no-replace);
  * aliases: ~1..~5, then a CRC tail; a leading dot leaves the base empty
    (~1.BAS) (the writer's known_failure; fatfs-own-aliases);
  * reading: a long name with DEL is listed but cannot be opened
    (fatfs-del-unopenable), and two names Linux keeps apart that FatFs
    folds to one open the same entry (fatfs-case-twins: 'élongname.txt'
    beside 'Élongname.txt' from any Linux; 'é' beside 'É' from nodual
    writers only, where no alias clash stops Linux); the reader's explain
    hook. The reader opens by the long name as an application would, and
    by the 8.3 name only when the long name finds nothing.
"""
import json
import os
import re
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

from vfz.oracles import Entry, NamedException, Reader, Writer, ReadResult, WriteResult, Timer
from vfz import iobounds, lifeline, listing, model, opscript

NODE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fatfs")
SERVER = os.path.join(NODE_DIR, "server.js")
WASM = os.path.join(NODE_DIR, "node_modules", "js-fatfs", "dist", "fatfs.wasm")
START_TIMEOUT = 30.0


def available():
    node = _node()
    if not node:
        return False, "node is not installed (apt-get install nodejs; vfatfuzz setup)"
    if not os.path.exists(WASM):
        return False, f"js-fatfs is not installed in {NODE_DIR} (run: vfatfuzz setup)"
    return True, node


def _node():
    for d in os.environ.get("PATH", "/usr/bin:/bin").split(os.pathsep):
        for n in ("node", "nodejs"):
            p = os.path.join(d, n)
            if os.access(p, os.X_OK):
                return p
    return None


class ServerError(Exception):
    """The Node process failed a request: it died, trapped or hung."""


class Server:
    """One Node process running server.js; started on first use, restarted
    after it died. request() never raises for FatFs's own failures: a
    trap, a crash or a timeout is a ServerError the caller turns into the
    image's error, and the process is gone (the next request starts one)."""

    def __init__(self):
        self.lock = threading.Lock()    # one request at a time (lanes may share an oracle)
        self.proc = None
        self.buf = b""
        self.next_id = 1
        self.starts = 0
        self.stderr_path = None

    def _start(self):
        ok, node = available()
        if not ok:
            raise ServerError(node)
        fd, self.stderr_path = tempfile.mkstemp(prefix="vfz-fatfs-", suffix=".err")
        lifeline.scratch(self.stderr_path)
        self.proc = lifeline.Popen([node, SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   stderr=fd, cwd=NODE_DIR)
        os.close(fd)
        self.buf = b""
        self.starts += 1
        self._ask({"op": "ping"}, START_TIMEOUT)

    def _stderr(self):
        try:
            with open(self.stderr_path, "rb") as f:
                return f.read()[-2000:].decode("utf-8", "replace").strip()
        except (OSError, TypeError):
            return ""

    def _kill(self):
        p, self.proc = self.proc, None
        if p is None:
            return
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        for f in (p.stdin, p.stdout):
            try:
                f.close()
            except OSError:
                pass
        if self.stderr_path:
            try:
                os.unlink(self.stderr_path)
            except OSError:
                pass
            lifeline.unscratch(self.stderr_path)
            self.stderr_path = None

    def _ask(self, req, timeout):
        req = dict(req, id=self.next_id)
        self.next_id += 1
        line = json.dumps(req).encode("utf-8") + b"\n"
        try:
            self.proc.stdin.write(line)
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise self._died("FatFs process gone before the request")
        deadline = time.monotonic() + timeout
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        try:
            while b"\n" not in self.buf:
                left = deadline - time.monotonic()
                if left <= 0 or not sel.select(left):
                    self._kill()
                    raise ServerError(f"timeout after {timeout:g}s (FatFs hung; process killed)")
                chunk = os.read(self.proc.stdout.fileno(), 1 << 20)
                if not chunk:
                    raise self._died("FatFs process exited")
                self.buf += chunk
        finally:
            sel.close()
        line, _, self.buf = self.buf.partition(b"\n")
        ans = json.loads(line.decode("utf-8", "surrogatepass"))
        if ans.get("id") != req["id"]:
            self._kill()
            raise ServerError(f"answer to request {ans.get('id')} for request {req['id']}")
        if ans.get("trap") or ans.get("fatal"):
            err = ans.get("error", "trap")
            self._died("")          # the process ends itself after a trap
            raise ServerError(err)
        return ans

    def _died(self, what):
        rc = None
        if self.proc is not None:
            try:
                rc = self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        tail = self._stderr()
        self._kill()
        msg = f"{what} (exit {rc})" if what else ""
        if tail:
            msg += ("; " if msg else "") + "stderr: " + tail.splitlines()[-1][:300]
        return ServerError(msg)

    def request(self, req, timeout):
        with self.lock:
            if self.proc is None or self.proc.poll() is not None:
                if self.proc is not None:
                    self._kill()
                self._start()
            return self._ask(req, timeout)

    def close(self):
        with self.lock:
            self._close()

    def _close(self):
        if self.proc is not None and self.proc.poll() is None:
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self._kill()


DEL_UNOPENABLE = "fatfs-del-unopenable"
CASE_TWINS = "fatfs-case-twins"


def _get(ev, k):
    return ev.get(k) if isinstance(ev, dict) else getattr(ev, k, None)


def explain_read(ev):
    """The named exception behind a FatFs reader divergence, from evidence
    (ev.diff: the listing difference; ev.entries: the expected listing):
    every difference must lie at or under an entry FatFs lists but cannot
    open (a name with DEL, whose 8.3 name cannot stand in for it:
    DEL_UNOPENABLE), or be one of two names of a directory that FatFs's
    folding makes one (CASE_TWINS: Linux folds ASCII only, so a nodual
    writer makes 'é' beside 'É' and FatFs opens the first for both). Nothing
    may be shown that is not expected, but a twin."""
    d = _get(ev, "diff")
    rr = _get(ev, "rr")
    names = set()
    twins = listing.fold_twins(_get(ev, "entries") or (), fatfs_fold)

    def under_twin(path):
        return listing.under(path, twins)
    for c in (rr.complaints if rr is not None else ()):
        # server.js: "f_readdir PATH: FR_X", "f_open/f_read PATH: FR_X",
        # "PATH: read N bytes, directory entry says M", "PATH: the name opens
        # another entry (ALIAS)", "PATH: directory at cluster N already listed"
        head, _, fr = c.rpartition(": ")
        if fr == "FR_INVALID_NAME" and "\x7f" in head:
            names.add(DEL_UNOPENABLE)
        elif " bytes, directory entry says " in c and under_twin(c.partition(": read ")[0]):
            names.add(CASE_TWINS)
        elif ": the name opens another entry (" in c and under_twin(c.partition(": the name ")[0]):
            names.add(CASE_TWINS)
        elif ": directory at cluster " in c and under_twin(c.partition(": directory at ")[0]):
            names.add(CASE_TWINS)         # the other twin's directory, listed already
        elif head.startswith(("f_open/f_read ", "f_readdir ")) and fr.startswith("FR_") \
                and under_twin(head.partition(" ")[2]):
            # FatFs opened the other twin: a directory for a file (FR_NO_FILE),
            # a file for a directory (campaign 1313, b10db50c6e0f)
            names.add(CASE_TWINS)
        else:
            return None
    if d is None:                       # the listing matched (contents unknown): complaints only
        return min(names) if names else None
    if d.ambiguous or d.ambiguous_counts:
        return None
    for sign, e in [("-", e) for e in d.missing + [a for a, _ in d.changed]] + [("+", e) for e in d.extra]:
        comps = e["path"].split("/")
        if sign == "-" and any("\x7f" in c for c in comps[1:]):
            names.add(DEL_UNOPENABLE)
        elif under_twin(e["path"]):
            # a twin, or under one: FatFs opened the other twin for it
            names.add(CASE_TWINS)
        else:
            return None
    if not names:
        return None
    return DEL_UNOPENABLE if DEL_UNOPENABLE in names else CASE_TWINS


class FatfsReader(Reader):
    explain = staticmethod(explain_read)

    def __init__(self, name="fatfs", **cfg):
        self.name = name
        self.server = Server()

    def available(self):
        return available()

    def read(self, image, timeout=30.0):
        r = ReadResult(self.name)
        with Timer() as t:
            if not os.path.isfile(image):
                r.error = f"no such image: {image}"
            else:
                try:
                    ans = self.server.request({"op": "list", "image": os.path.abspath(image)}, timeout)
                    # the sectors its disk callbacks read (vfz.iobounds records)
                    r.extra["iotrace"] = iobounds.sector_trace(ans.pop("io", None) or {})
                    r.raw = json.dumps(ans, ensure_ascii=False)[:20000]
                    if ans.get("error"):
                        r.error = ans["error"]
                    else:
                        r.listing = sorted(ans["entries"], key=lambda e: e["path"])
                        r.complaints = list(ans.get("complaints", ()))
                except ServerError as e:
                    r.error = f"fatfs: {e}"
                except Exception as e:  # an oracle never crashes the harness
                    r.error = f"fatfs reader: {type(e).__name__}: {e}"
        r.seconds = t.seconds
        return r

    def close(self):
        self.server.close()


OWN_ALIASES = "fatfs-own-aliases"
_NUMBERED = re.compile(r"[^~.]{0,7}~[0-9A-Fa-f]{1,7}(\.[^.]{1,3})?")


def spells_alias(op):
    """Does op name a path component shaped as a numbered 8.3 alias
    (BASE~N[.EXT])? FatFs's aliases (gen_numname) are not Linux's: ~1 to ~5
    only, then BAS~XXXX with a CRC of the long name; and a name with a
    leading dot has an empty base ('.bashrc' -> ~1.BAS, Linux BASHRC~1)."""
    for kind, a in zip(opscript.OPS[op.kind], op.args):
        if kind == "s" and any(_NUMBERED.fullmatch(c) for c in a.split("/")):
            return True
    return False


def known_failure(ev):
    """The writer's first divergence is an op that spells a numbered alias
    (OWN_ALIASES): the model looked it up among Linux's aliases, FatFs
    among its own, so the name finds another entry, nothing, or is free;
    the readers check the script cut before it."""
    bad, ops = _get(ev, "bad"), _get(ev, "ops") or []
    if bad is not None and bad < len(ops) and spells_alias(ops[bad]):
        return bad, OWN_ALIASES
    return None


class FatfsWriter(Writer):
    known_failure = staticmethod(known_failure)

    def __init__(self, name="fatfs", **cfg):
        self.name = name
        self.server = Server()

    def available(self):
        return available()

    def apply(self, image, ops, timeout=60.0):
        w = WriteResult(self.name)
        with Timer() as t:
            if not os.path.isfile(image):
                w.error = f"no such image: {image}"
            else:
                try:
                    req = {"op": "apply", "image": os.path.abspath(image),
                           "ops": [[o.kind, *o.args] for o in ops]}
                    ans = self.server.request(req, timeout)
                    self.last_iotrace = iobounds.sector_trace(ans.pop("io", None) or {})
                    if ans.get("error"):
                        w.error = ans["error"]
                    else:
                        w.results = list(ans["results"])
                        w.raw = "".join(f"# line {o.line}: {o} -> {res} [{fr or '-'}]\n"
                                        for o, res, fr in zip(ops, w.results, ans["fr"]))
                except ServerError as e:
                    w.error = f"fatfs: {e}"
                except Exception as e:
                    w.error = f"fatfs writer: {type(e).__name__}: {e}"
        w.seconds = t.seconds
        return w

    def close(self):
        self.server.close()


# ---------------------------------------------------------------- case folding
CASEFOLD = os.path.join(NODE_DIR, "casefold.json")


def candidate_pairs():
    """Pairs (c, other case of c) of BMP characters above 0x7F, as Python's
    str.upper / str.lower pair them (single characters only): the
    candidates whose folding FatFs is asked about."""
    out = []
    for cp in range(0x80, 0x10000):
        if 0xD800 <= cp < 0xE000:
            continue
        c = chr(cp)
        u, lo = c.upper(), c.lower()
        if len(u) == 1 and u != c:
            out.append((c, u))
        if len(lo) == 1 and lo != c and lo.upper() != c:
            out.append((c, lo))
    return out


def measure_casefold(server=None, timeout=60.0):
    """-> the sorted pairs FatFs folds together (server.js 'casefold': a
    name made with the first character is found by f_stat with the
    second), measured now."""
    s = server or Server()
    try:
        ans = s.request({"op": "casefold", "pairs": candidate_pairs()}, timeout)
    finally:
        if server is None:
            s.close()
    if ans.get("error"):
        raise ServerError(ans["error"])
    return sorted(tuple(p) for p in ans["same"])


_FOLD = None


def _fold_table():
    """char -> the character FatFs folds it with (from casefold.json, which
    `python3 -m vfz.oracles.fatfs --casefold` measures and test_fatfs
    re-measures): 848 of the 1173 candidate pairs; FatFs R0.15 does not fold
    e.g. U+00B5 with U+039C, U+0131 with 'I', U+017F with 'S', titlecase
    digraphs, Georgian Mtavruli, Cherokee lower case, Cyrillic/Latin
    extensions added after Unicode 5."""
    global _FOLD
    if _FOLD is None:
        with open(CASEFOLD, encoding="utf-8") as f:
            pairs = json.load(f)["same"]
        pairs += [(chr(c), chr(c).upper()) for c in range(ord("a"), ord("z") + 1)]
        parent = {}

        def find(c):
            while parent.get(c, c) != c:
                c = parent[c]
            return c
        for x, y in pairs:
            rx, ry = find(x), find(y)
            if rx != ry:
                parent[max(rx, ry)] = min(rx, ry)
        _FOLD = {c: find(c) for c in parent}
        _FOLD.update({find(c): find(c) for c in parent})
    return _FOLD


def fatfs_fold(name):
    """The key under which FatFs compares a long name: trailing dots and
    spaces dropped (create_name), ASCII folded, other letters folded as
    measured (casefold.json)."""
    t = _fold_table()
    return "".join(t.get(c, c) for c in name.rstrip(" ."))


# ---------------------------------------------------------------- model profile
_FATFS_REFUSED = set('*:<>|"?\x7f\\')


def _fatfs_name_err(leaf):
    """FatFs's verdict on a new long name (create_name, measured): a unit
    below 0x20 or one of * : < > | " ? DEL refused (the glue refuses '\\'
    and ':' before FatFs sees them), more than 255 UTF-16 units *before*
    trailing dots and spaces are dropped refused (FR_INVALID_NAME: EINVAL,
    where Linux says ENAMETOOLONG and counts after dropping the dots), a
    name of only dots and spaces refused (Linux: ENOENT for dots, EINVAL
    for a trailing space); trailing spaces are dropped, not refused."""
    if model.utf16_len(leaf) > 255:
        return "EINVAL"
    if any(ord(c) < 0x20 or c in _FATFS_REFUSED for c in leaf):
        return "EINVAL"
    if not leaf.rstrip(" ."):
        return "EINVAL"
    return None


def _fatfs_store(leaf):
    """The spelling FatFs stores: trailing dots and spaces dropped."""
    return leaf.rstrip(" .")


def _fatfs_lookup(d, leaf):
    """The entry of model directory d that FatFs finds for leaf when the
    kernel's ASCII-folded lookup finds none: FatFs folds every letter its
    ff_wtoupper knows ('é' finds 'É') and drops trailing spaces ('a ' finds
    'a')."""
    key = fatfs_fold(leaf)
    if not key:
        return None
    for k in d.kids.values():
        if fatfs_fold(k.name) == key:
            return k
    return None


# Knobs of vfz.model (see the knob comments in vfz/model/profiles.py).
PROFILE = {
    "name_err": _fatfs_name_err,
    # follow_path: create_name refuses the leaf before dir_find looks it up, so
    # 255 'x' + '.' is EINVAL even when 255 'x' exists (campaign 1313, 61a7b9646f65)
    "leaf_name_first": True,
    # and a lookup of such a component finds nothing: 254 'x' + '..' is ENOENT
    # to rmdir even when 254 'x' exists (campaign 1313, 7929a2670133)
    "findable": lambda leaf: model.utf16_len(leaf) <= 255,
    "store": _fatfs_store,
    "lookup": _fatfs_lookup,
    # f_rename of an entry to a respelling of its own name (same directory
    # entry found) registers the new spelling and removes the old one
    "case_rename": "apply",
    # a rename onto an existing entry: FatFs's f_rename refuses it (FR_EXIST);
    # the glue removes the target and renames, so the entry takes the new
    # spelling (Linux keeps the target's)
    "replace": "respell",
}


# ---------------------------------------------------------------- registry
ENTRIES = [
    Entry("fatfs", "fatfs", reader="vfz.oracles.fatfs:FatfsReader", writer="vfz.oracles.fatfs:FatfsWriter",
          profile=PROFILE, names="dual", shortname="winnt", shorts="own", label="FatFs R0.15",
          needs=("nodejs", "npm:js-fatfs"), cost="process"),
]

EXCEPTIONS = [
    NamedException(
        OWN_ALIASES, "fatfs", "writer",
        "FatFs makes its own aliases: colliding long names are numbered ~1 to ~5 only, then get a "
        "CRC of the long name (longfilename6.txt -> LON~D306.TXT, measured), where Linux (and the "
        "model's dual aliases) go on to ~6 .. ~9; a name with a leading dot keeps an empty base "
        "('.bashrc' -> ~1.BAS, '.git' -> ~1.GIT; Linux BASHRC~1, GIT~1); so an op that spells "
        "LONGFI~6.TXT or BASHRC~1 finds nothing on FatFs",
        "the first differing op spells a component shaped BASE~N[.EXT] (known_failure; the "
        "readers check the script cut before it)"),
    NamedException(
        DEL_UNOPENABLE, "fatfs", "reader",
        "FatFs lists a long name holding DEL (U+007F, which Linux accepts) but cannot open it: "
        "create_name refuses DEL in every path (FR_INVALID_NAME), so a file under such a name has "
        "no contents and a directory no children; the reader opens it by its 8.3 name when that "
        "finds the same entry (dual aliases without DEL), which nodual dummies cannot",
        "every difference lies at or under a path component with DEL; the complaint names "
        "FR_INVALID_NAME (explain_read)", bug="fatfs"),
    NamedException(
        CASE_TWINS, "fatfs", "reader",
        "FatFs compares long names with its Unicode upper-casing (as the FAT long-name rules and "
        "Windows do), Linux (iocharset=ascii) with ASCII only: Linux makes 'élongname.txt' beside "
        "'Élongname.txt' (dual: two aliases, ÉLONGN~1 and ~2) and, in nodual mode, even 'é' beside "
        "'É' (no alias clash any more), and FatFs opens the first of the two for both names",
        "every difference is one of two expected names of a directory equal under fatfs_fold "
        "(explain_read)"),
    NamedException(
        "fatfs-rename-no-replace", "fatfs", "writer",
        "f_rename never replaces an existing entry (FR_EXIST) where POSIX rename does; the glue "
        "removes the target first, so the entry ends up with the spelling the rename gave, not "
        "the target's as on Linux",
        "modelled: profile knob replace 'respell'; the raw record shows FR_EXIST for the first "
        "f_rename"),
    NamedException(
        "fatfs-rename-into-subtree", "fatfs", "writer",
        "f_rename moves a directory into its own subtree without a check and answers FR_OK: the "
        "subtree is cut off the tree (measured: f_rename('/a', '/a/b/c') FR_OK, /a gone, "
        "fsck.fat -n reclaims its 5 clusters). Linux refuses it in the VFS (EINVAL); so does "
        "the glue, before FatFs sees it, so the writer never makes such an image",
        "not seen by the campaign: the glue answers EINVAL as the model does (identity of "
        "directories by their first cluster)"),
    NamedException(
        "fatfs-name-rules", "fatfs", "writer",
        "create_name drops trailing spaces as well as dots ('b ' -> 'b', Linux: EINVAL), refuses "
        "DEL (Linux accepts it), counts the 255-unit limit before dropping them and answers "
        "FR_INVALID_NAME for a long name (Linux: ENAMETOOLONG), and a name of dots only",
        "modelled: profile knobs name_err and store"),
    NamedException(
        "fatfs-unicode-case", "fatfs", "writer",
        "long names are compared with ff_wtoupper, which folds most non-ASCII letters ('é' finds "
        "'É': EEXIST where Linux with iocharset=ascii makes a second entry); 848 of 1173 "
        "candidate pairs, measured (casefold.json)",
        "modelled: profile knob lookup (fatfs_fold)"),
    NamedException(
        "fatfs-case-rename", "fatfs", "writer",
        "f_rename to a respelling of the entry's own name applies it ('a' -> 'A' is 'A'); "
        "Linux 6.1 keeps the old spelling",
        "modelled: profile knob case_rename 'apply'"),
]


def install(sh, apt):
    """Setup's step for this oracle (vfz.setup calls every oracle module's
    install): the Node package js-fatfs, pinned in package-lock.json, with
    `npm ci` when node_modules is missing; nothing (no network) once
    installed. npm comes with nodesource's nodejs; Debian's nodejs needs
    Debian's npm package (which conflicts with nodesource's: only when there
    is no npm command). -> exit code."""
    if os.path.exists(WASM):
        return 0
    if not shutil.which("npm") and apt(["npm"]) != 0:
        return 1
    return sh(["npm", "ci", "--prefix", NODE_DIR, "--no-audit", "--no-fund"])


def main(argv):
    if argv != ["--casefold"]:
        print("usage: python3 -m vfz.oracles.fatfs --casefold   (re-measure casefold.json)", file=sys.stderr)
        return 2
    same = measure_casefold()
    with open(CASEFOLD, "w", encoding="utf-8") as f:
        what = ("pairs of characters FatFs R0.15 (js-fatfs 0.2.1) folds together in "
                "long names, measured by server.js casefold over candidate_pairs()")
        f.write('{"what": %s,\n "candidates": %d,\n "same": [\n' % (json.dumps(what), len(candidate_pairs())))
        f.write(",\n".join("  " + json.dumps(list(x), ensure_ascii=False) for x in same))
        f.write("\n]}\n")
    print(f"{len(same)} of {len(candidate_pairs())} candidate pairs fold together; wrote {CASEFOLD}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

