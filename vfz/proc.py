"""Subprocess helper shared by the oracles: every call has a timeout.

run() starts the command in its own process group and kills the whole
group when the timeout expires, so a hanging tool (or a child it forked)
never outlives the call, nor this process if it is killed (vfz.lifeline).
It never raises for tool failures: the caller gets a Proc with rc (None on
timeout), stdout/stderr bytes and a reason.
"""
import contextlib
import os
import shutil
import signal
import subprocess
import threading
import time
from dataclasses import dataclass

from vfz import lifeline

# CPU seconds of the processes that worked for each thread (tools run here,
# reaped with wait4; a VM's share added by its owner): the campaign's own-time
# accounting (vfz.check.checker) reads the delta around each oracle call
_tls = threading.local()


def thread_cpu():
    """CPU seconds (user + sys) of the child processes run by this thread so far."""
    return getattr(_tls, "cpu", 0.0)


def add_cpu(seconds):
    _tls.cpu = thread_cpu() + seconds


class _Popen(lifeline.Popen):
    """Popen that keeps the child's rusage (os.wait4 instead of waitpid)."""
    rusage = None

    def _try_wait(self, wait_flags):
        try:
            pid, sts, ru = os.wait4(self.pid, wait_flags)
        except ChildProcessError:
            return self.pid, 0
        if pid == self.pid:
            self.rusage = ru
        return pid, sts


@dataclass
class Proc:
    argv: list
    rc: int = None
    out: bytes = b""
    err: bytes = b""
    seconds: float = 0.0
    timed_out: bool = False
    error: str = None      # could not run at all / timed out / killed by signal
    backtrace: str = None  # a crash_hook's account of a death by a signal

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
        if self.backtrace:
            s += "[backtrace]\n" + self.backtrace.rstrip("\n") + "\n"
        return s


@contextlib.contextmanager
def env_hook(fn):
    """Within the block, every command this thread starts through run() or
    with traced_env() also gets fn(argv, base_env)'s entries (vfz.iobounds:
    the I/O trace's preload library and the command's label)."""
    old = getattr(_tls, "env_hook", None)
    _tls.env_hook = fn
    try:
        yield
    finally:
        _tls.env_hook = old


@contextlib.contextmanager
def crash_hook(fn):
    """Within the block, a command this thread runs through run() that dies
    by a signal gets p.backtrace = fn(argv, env, cwd, input, timeout) (the
    hostile campaign's gdb run: vfz.hostile.backtrace), shown in raw()."""
    old = getattr(_tls, "crash_hook", None)
    _tls.crash_hook = fn
    try:
        yield
    finally:
        _tls.crash_hook = old


def traced_env(argv, env=None):
    """The environment for a command started with Popen by hand: env (or
    None: inherited) plus the hook's entries when a hook is set."""
    fn = getattr(_tls, "env_hook", None)
    if fn is None:
        return env
    full = dict(os.environ if env is None else env)
    full.update(fn([str(a) for a in argv], full))
    return full


def run(argv, timeout=30.0, env=None, input=None, cwd=None):
    t0 = time.monotonic()
    p = Proc(argv=[str(a) for a in argv])
    full_env = None
    if env is not None:
        full_env = dict(os.environ)
        full_env.update(env)
    full_env = traced_env(p.argv, full_env)
    try:
        child = _Popen(p.argv, stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 env=full_env, cwd=cwd)
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
    if child.rusage is not None:
        add_cpu(child.rusage.ru_utime + child.rusage.ru_stime)
    if p.rc is not None and p.rc < 0:
        try:
            sig = signal.Signals(-p.rc).name
        except ValueError:
            sig = str(-p.rc)
        p.error = f"killed by {sig}"
    p.seconds = time.monotonic() - t0
    hook = getattr(_tls, "crash_hook", None)
    if hook is not None and p.rc is not None and p.rc < 0:
        p.backtrace = hook(p.argv, full_env, cwd, input, timeout)   # not the tool's own time
    return p


def _kill_group(child):
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def npm_ci(sh, apt, node_dir, marker):
    """An oracle's Node packages, pinned by the package-lock.json in
    node_dir: `npm ci` there when marker (a file the install makes) is
    missing; nothing (no network) once installed. npm comes with
    nodesource's nodejs; Debian's nodejs needs Debian's npm package (which
    conflicts with nodesource's: only when there is no npm command).
    -> exit code."""
    if os.path.exists(marker):
        return 0
    if not shutil.which("npm") and apt(["npm"]) != 0:
        return 1
    return sh(["npm", "ci", "--prefix", node_dir, "--no-audit", "--no-fund"])
