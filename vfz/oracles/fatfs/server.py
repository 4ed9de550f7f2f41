"""The FatFs glue's Node process: server.js started, asked, and killed when it fails.

One persistent process per oracle instance, JSON lines over stdin/stdout
(server.js beside this module). A WebAssembly trap, a JavaScript
exception, a death or a request that does not answer in time is a
ServerError, and the process is gone: the next request starts a fresh one.
"""
import json
import os
import selectors
import signal
import subprocess
import tempfile
import threading
import time

from vfz import lifeline


# this package's folder: server.js, package.json, its lockfile and node_modules
NODE_DIR = os.path.dirname(os.path.abspath(__file__))
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
