"""How fusefat is run: one mount and its agent, each step bounded in time.

`fusefat -f -s -o ro|rw+,auto_unmount IMAGE DIR` mounts the image; a child
agent (agent.py, chrooted into DIR) answers one JSON request a line; the
unmount is `fusermount -u DIR` (fusefat writes its state back then). A
mount that hangs is killed and detached (`fusermount -u -z`). Also which
program runs under the name fusefat (is_fusefat_01a): this oracle knows
0.1a only.
"""
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from vfz import lifeline
from vfz.proc import run, traced_env


AGENT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "agent.py")
FUSEFAT = "fusefat"
MOUNT_WAIT = 10.0
UNMOUNT_WAIT = 15.0


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


_FLAVOUR = {}


def available(exe):
    """(ok, why): can the fusefat oracle run here with program exe?"""
    if not (shutil.which(exe) and os.path.exists("/dev/fuse") and shutil.which("fusermount")):
        return False, "needs fusefat, fusermount (package fuse) and /dev/fuse"
    return is_fusefat_01a(exe)


def is_fusefat_01a(exe):
    """(ok, why): is exe fusefat 0.1a, the program this oracle's traits and
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
