"""One persistent Node process per oracle instance: a server.js asked JSON lines over stdin/stdout.

The FatFs oracle (js-fatfs, ChaN's FatFs in WebAssembly) and the jsfatfs
oracle (natevw's npm fatfs) each keep a server.js beside their package; this
is the process glue both share. A request that does not answer in time, a
death of the process, or an answer that says the server is ending itself
(a WebAssembly trap, a throw that reached Node's event loop: "trap" or
"fatal") is a ServerError carrying the server's last answer, and the process
is gone: the next request starts a fresh one. request() never raises for the
package's own failures as an exception of the harness.
"""
import json
import os
import selectors
import shutil
import signal
import subprocess
import tempfile
import threading
import time

from vfz import lifeline

START_TIMEOUT = 30.0


def node_binary():
    """The node program on PATH, or None."""
    return shutil.which("node") or shutil.which("nodejs")


def available(installed, what, node_dir):
    """-> (True, node path) or (False, why not): node on PATH and the file
    installed (the package's witness under node_modules) present."""
    node = node_binary()
    if not node:
        return False, "node is not installed (apt-get install nodejs; vfatfuzz setup)"
    if not os.path.exists(installed):
        return False, f"{what} is not installed in {node_dir} (run: vfatfuzz setup)"
    return True, node


class ServerError(Exception):
    """The Node process failed a request: it trapped, threw, died or hung."""

    def __init__(self, msg, answer=None):
        super().__init__(msg)
        self.answer = answer or {}


class NodeServer:
    """The server.js of node_dir, started on first use and after it died.
    label names the implementation in errors; check() -> (ok, node or why)."""

    def __init__(self, node_dir, label, check):
        self.node_dir, self.label, self.check = node_dir, label, check
        self.lock = threading.Lock()    # one request at a time (lanes may share an oracle)
        self.proc = None
        self.buf = b""
        self.next_id = 1
        self.starts = 0                 # processes started (the tests count restarts)
        self.stderr_path = None

    def _start(self):
        ok, node = self.check()
        if not ok:
            raise ServerError(node)
        fd, self.stderr_path = tempfile.mkstemp(prefix=f"vfz-{self.label.lower()}-", suffix=".err")
        lifeline.scratch(self.stderr_path)
        self.proc = lifeline.Popen([node, os.path.join(self.node_dir, "server.js")], stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, stderr=fd, cwd=self.node_dir)
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
        try:
            self.proc.stdin.write(json.dumps(req).encode("utf-8") + b"\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise self._died(f"{self.label} process gone before the request")
        self._read_line(timeout)
        line, _, self.buf = self.buf.partition(b"\n")
        ans = json.loads(line.decode("utf-8", "surrogatepass"))
        if ans.get("id") != req["id"]:
            self._kill()
            raise ServerError(f"answer to request {ans.get('id')} for request {req['id']}")
        if ans.get("trap") or ans.get("fatal"):
            self._died("")              # the server ends itself after a trap or a throw
            raise ServerError(ans.get("error") or ("trap" if ans.get("trap") else "fatal"), ans)
        return ans

    def _read_line(self, timeout):
        """Wait for a whole answer line in self.buf, or raise."""
        deadline = time.monotonic() + timeout
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        try:
            while b"\n" not in self.buf:
                left = deadline - time.monotonic()
                if left <= 0 or not sel.select(left):
                    self._kill()
                    raise ServerError(f"timeout after {timeout:g}s ({self.label} hung; process killed)")
                chunk = os.read(self.proc.stdout.fileno(), 1 << 20)
                if not chunk:
                    raise self._died(f"{self.label} process exited")
                self.buf += chunk
        finally:
            sel.close()

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
            if self.proc is not None and self.proc.poll() is None:
                try:
                    self.proc.stdin.close()
                    self.proc.wait(timeout=5)
                except (OSError, subprocess.TimeoutExpired):
                    pass
            self._kill()
