"""The Node process of the jsfatfs oracle: one persistent server.js, JSON lines in and out, restarted after a trap, a crash or a hang.

request() never raises for the package's own failures as an exception of
the harness: a throw that reached Node's event loop (the server answers it
and exits), a crash or a timeout is a ServerError (its `answer`: the
server's last word, with the results of the ops answered before), the
process is gone, and the next request starts a fresh one.
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

NODE_DIR = os.path.dirname(os.path.abspath(__file__))
SERVER = os.path.join(NODE_DIR, "server.js")
PACKAGE = os.path.join(NODE_DIR, "node_modules", "fatfs", "package.json")
START_TIMEOUT = 30.0


def available():
    """-> (True, node path) or (False, why not)."""
    node = shutil.which("node") or shutil.which("nodejs")
    if not node:
        return False, "node is not installed (apt-get install nodejs; vfatfuzz setup)"
    if not os.path.exists(PACKAGE):
        return False, f"the npm package fatfs is not installed in {NODE_DIR} (run: vfatfuzz setup)"
    return True, node


class ServerError(Exception):
    """The Node process failed a request: it threw, died or hung."""

    def __init__(self, msg, answer=None):
        super().__init__(msg)
        self.answer = answer or {}


class Server:
    def __init__(self):
        self.lock = threading.Lock()    # one request at a time (lanes may share an oracle)
        self.proc = None
        self.buf = b""
        self.next_id = 1
        self.starts = 0                 # processes started (the tests count restarts)
        self.stderr_path = None

    def _start(self):
        ok, node = available()
        if not ok:
            raise ServerError(node)
        fd, self.stderr_path = tempfile.mkstemp(prefix="vfz-jsfatfs-", suffix=".err")
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
        try:
            self.proc.stdin.write(json.dumps(req).encode("utf-8") + b"\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise self._died("the jsfatfs process was gone before the request")
        deadline = time.monotonic() + timeout
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        try:
            while b"\n" not in self.buf:
                left = deadline - time.monotonic()
                if left <= 0 or not sel.select(left):
                    self._kill()
                    raise ServerError(f"timeout after {timeout:g}s (the package hung; process killed)")
                chunk = os.read(self.proc.stdout.fileno(), 1 << 20)
                if not chunk:
                    raise self._died("the jsfatfs process exited")
                self.buf += chunk
        finally:
            sel.close()
        line, _, self.buf = self.buf.partition(b"\n")
        ans = json.loads(line.decode("utf-8", "surrogatepass"))
        if ans.get("id") != req["id"]:
            self._kill()
            raise ServerError(f"answer to request {ans.get('id')} for request {req['id']}")
        if ans.get("fatal"):
            e = self._died("")          # the process ends itself after a throw
            raise ServerError(ans.get("error", "fatal") + (f" ({e})" if str(e) else ""), ans)
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
        if tail and what:
            msg += "; stderr: " + tail.splitlines()[-1][:300]
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
