"""Subprocess helper shared by the oracles: every call has a timeout.

run() starts the command in its own process group and kills the whole
group when the timeout expires, so a hanging tool (or a child it forked)
never outlives the call. It never raises for tool failures: the caller
gets a Proc with rc (None on timeout), stdout/stderr bytes and a reason.
"""
import os
import signal
import subprocess
import time
from dataclasses import dataclass


@dataclass
class Proc:
    argv: list
    rc: int = None
    out: bytes = b""
    err: bytes = b""
    seconds: float = 0.0
    timed_out: bool = False
    error: str = None      # could not run at all / timed out / killed by signal

    @property
    def text(self):
        return self.out.decode("utf-8", "replace")

    @property
    def errtext(self):
        return self.err.decode("utf-8", "replace")

    def raw(self):
        s = "$ " + " ".join(str(a) for a in self.argv) + f"\n[rc={self.rc}"
        if self.error:
            s += f" {self.error}"
        s += "]\n"
        if self.out:
            s += self.text
            if not s.endswith("\n"):
                s += "\n"
        if self.err:
            s += "[stderr]\n" + self.errtext
            if not s.endswith("\n"):
                s += "\n"
        return s


def run(argv, timeout=30.0, env=None, input=None, cwd=None):
    t0 = time.monotonic()
    p = Proc(argv=[str(a) for a in argv])
    full_env = None
    if env is not None:
        full_env = dict(os.environ)
        full_env.update(env)
    try:
        child = subprocess.Popen(p.argv, stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 env=full_env, cwd=cwd, start_new_session=True)
    except OSError as e:
        p.error = f"cannot run {p.argv[0]}: {e.strerror}"
        p.seconds = time.monotonic() - t0
        return p
    try:
        p.out, p.err = child.communicate(input=input, timeout=timeout)
        p.rc = child.returncode
    except subprocess.TimeoutExpired:
        _kill_group(child)
        try:
            p.out, p.err = child.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        p.timed_out = True
        p.rc = None
        p.error = f"timeout after {timeout:g}s"
    except BaseException:
        _kill_group(child)
        child.wait()
        raise
    if p.rc is not None and p.rc < 0:
        try:
            sig = signal.Signals(-p.rc).name
        except ValueError:
            sig = str(-p.rc)
        p.error = f"killed by {sig}"
    p.seconds = time.monotonic() - t0
    return p


def _kill_group(child):
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
