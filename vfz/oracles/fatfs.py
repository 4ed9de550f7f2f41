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
persistent process per oracle instance, JSON lines over stdin/stdout; it
reads each image into a memory disk (js-fatfs's diskio callbacks) and
writes it back atomically after an op-script. A WebAssembly trap or a
JavaScript exception is answered as an error and ends the process; a
request that does not answer within the timeout kills it. Either way the
image's answer is an error (a finding: FatFs crashed or hung on it) and
the next image gets a fresh process.

Reader: walks the tree with f_opendir/f_readdir from the root, listing
long names (FILINFO fname; the 8.3 name when there is no valid long name,
as FatFs shows it), type and size, and hashes each file read with
f_open/f_read (sha256 in Node). Entries carry two extra keys kept for
reports: short83 (FILINFO altname) and attr. A file whose long name FatFs
cannot look up again (f_stat fails: e.g. a long name with trailing dots
that another writer kept) is opened by its 8.3 name when that finds the
same entry. Errors:
  * f_mount fails (FR_NO_FILESYSTEM, FR_DISK_ERR, ...): ReadResult.error
    "f_mount: FR_..." (the image is unreadable to FatFs);
  * an FR_ error while walking or reading (f_readdir, f_open, f_read) is
    a complaint "f_readdir /dir: FR_INT_ERR" and the listing keeps what was
    read (the entry of an unreadable file has its size and no sha256), so
    the listing differs from the expected tree and the complaint says why;
  * a sector past the end of the image file reads as a disk error
    (FR_DISK_ERR), never as zeros.

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

FRESULT -> errno (measured against Linux in the same situations, see
EXCEPTIONS and the profile for where FatFs differs by design):
  f_mkdir, f_open(FA_CREATE_NEW), f_rename's new name:
    FR_OK ok; FR_EXIST EEXIST; FR_INVALID_NAME EINVAL (also a name longer
    than 255 units, where Linux says ENAMETOOLONG: profile name_err);
    FR_INVALID_DRIVE EINVAL; FR_DENIED ENOSPC (no free cluster, or the
    FAT12/16 root is full); FR_NO_FILE / FR_NO_PATH ENOENT;
    FR_WRITE_PROTECTED EROFS; anything else EIO
  f_rename onto an existing entry: FR_EXIST EEXIST (Linux replaces it:
    profile knob replace "refuse", exception fatfs-rename-no-replace)
  f_unlink as unlink: FR_DENIED EACCES (read-only); as rmdir: FR_DENIED
    ENOTEMPTY (FatFs's answer for a directory that is not empty)
  f_write short (bw < btw) or FR_DENIED: ENOSPC; other FR_ errors EIO
  f_stat failing during the path walk: ENOENT (a file as a parent:
    ENOTDIR, decided by the walk)
The FR_ name of each call is kept in the WriteResult's raw text.
"""
import json
import os
import selectors
import signal
import subprocess
import time

from vfz.oracles import Entry, NamedException, Reader, Writer, ReadResult, WriteResult, Timer
from vfz import listing, model

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
        self.proc = None
        self.buf = b""
        self.next_id = 1
        self.starts = 0
        self.stderr_path = None

    def _start(self):
        ok, node = available()
        if not ok:
            raise ServerError(node)
        import tempfile
        fd, self.stderr_path = tempfile.mkstemp(prefix="vfz-fatfs-", suffix=".err")
        self.proc = subprocess.Popen([node, SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=fd, cwd=NODE_DIR, start_new_session=True)
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
        if self.proc is None or self.proc.poll() is not None:
            if self.proc is not None:
                self._kill()
            self._start()
        return self._ask(req, timeout)

    def close(self):
        if self.proc is not None and self.proc.poll() is None:
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self._kill()


class FatfsReader(Reader):
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


class FatfsWriter(Writer):
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
