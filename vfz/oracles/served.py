"""`vfat serve`: the core's `vfat ls` and `vfat check` of many images in one process per thread.

The hostile campaign's writer lanes read every volume with the core's strict
reader before the ops (`vfat ls`, `vfat check`) and after them (`vfat ls`):
three processes a volume, each started from the campaign's one Python
process of 18 lanes. Measured (bench/profile_hostile.py --clock wall, the
FatFs writer lane alone, seed 2801, load ~5): each such run cost its
thread ~11 ms of wall (fork_exec, the lifeline registration, closing the
pipes, the wait for the child's first slice), where `vfat ls` itself
takes ~1 ms; the FatFs writer's own ops took 12 ms a volume.

run(argv, timeout) answers a proc.Proc exactly as proc.run([BINARY, "ls"|"check",
IMAGE]) would -- rc, stdout, stderr, "killed by SIGX", "timeout after Ns" --
from a `vfat serve` process of this thread (core/cli/vfat.c cmd_serve: each
request answered with the command's own stdout, then a NUL line with its exit
status and its stderr). One process per thread and binary (no lock: no
request waits for another thread's). A request that crashes the process (a
VFAT_BOUNDS trap, a signal) is answered as that command's death, and the
next request starts a new process; one that does not answer in time kills it.
An argv it cannot send (another command, a path with a newline) runs as a
process, through proc.run.
"""
import atexit
import json
import os
import selectors
import signal
import subprocess
import threading
import time
import weakref

from vfz import lifeline, proc

SERVED = ("ls", "check")
_tls = threading.local()
_ALL = weakref.WeakSet()        # every live server, ended at exit
END = b"\0end "


class _Server:
    """One `vfat serve` process (started lazily, again after a death); ended with its thread
    (the thread's locals go, and with them this) or at exit."""

    def __init__(self, binary):
        self.binary = binary
        self.p = None
        self.buf = b""
        _ALL.add(self)

    def __del__(self):
        try:
            self.close()
        except Exception:       # at interpreter exit the modules may be gone
            pass

    def _start(self):
        self.p = lifeline.Popen([self.binary, "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL)
        self.buf = b""

    def ask(self, argv, timeout):
        t0 = time.monotonic()
        p = proc.Proc(argv=[str(a) for a in argv])
        if self.p is None or self.p.poll() is not None:
            self._start()
        try:
            self.p.stdin.write(os.fsencode(f"{argv[1]} {argv[2]}\n"))
            self.p.stdin.flush()
        except OSError:
            pass                        # it died: read() says how
        got = self._answer(t0 + timeout)
        if got is None:                 # timed out: killed, the next request starts another
            self._kill()
            p.timed_out, p.error = True, f"timeout after {timeout:g}s"
        elif got[0] is None:            # died during the request
            p.out = got[1]
            p.rc = self.p.wait()
            self._drop()
            try:
                p.error = f"killed by {signal.Signals(-p.rc).name}" if p.rc < 0 else \
                    f"vfat serve exited {p.rc} before it answered"
            except ValueError:
                p.error = f"killed by {-p.rc}"
        else:
            p.rc, p.out, p.err = got
        p.seconds = time.monotonic() - t0
        return p

    def _answer(self, deadline):
        """-> (rc, stdout, stderr) of one request, (None, stdout so far) when the process
        ended, None when the deadline passed."""
        fd = self.p.stdout.fileno()
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while True:
                i = self.buf.find(END)
                j = self.buf.find(b"\n", i) if i >= 0 else -1
                if j >= 0:
                    out, tail, self.buf = self.buf[:i], self.buf[i + len(END):j], self.buf[j + 1:]
                    rc, _, err = tail.partition(b" ")
                    err = json.loads(err.decode("utf-8", "surrogateescape"))
                    return int(rc), out, err.encode("utf-8", "surrogateescape")
                left = deadline - time.monotonic()
                if left <= 0 or not sel.select(left):
                    return None
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    out, self.buf = self.buf, b""
                    return None, out
                self.buf += chunk

    def _kill(self):
        try:
            os.killpg(self.p.pid, signal.SIGKILL)
        except OSError:
            pass
        self.p.wait()
        self._drop()

    def _drop(self):
        for f in (self.p.stdin, self.p.stdout):
            try:
                f.close()
            except OSError:
                pass
        self.p = None

    def close(self):
        if self.p is not None:
            self._kill()


def _server(binary):
    servers = getattr(_tls, "servers", None)
    if servers is None:
        servers = _tls.servers = {}
    s = servers.get(binary)
    if s is None:
        s = servers[binary] = _Server(binary)
    return s


def run(argv, timeout=30.0):
    """proc.run(argv, timeout) for `BINARY ls|check IMAGE`, answered by this thread's server."""
    if len(argv) != 3 or argv[1] not in SERVED or "\n" in str(argv[2]) or len(os.fsencode(argv[2])) > 4000:
        return proc.run(argv, timeout=timeout)
    return _server(str(argv[0])).ask(argv, timeout)


def close():
    """End this thread's servers."""
    for s in getattr(_tls, "servers", {}).values():
        s.close()
    _tls.servers = {}


@atexit.register
def _close_all():
    for s in list(_ALL):
        s.close()
