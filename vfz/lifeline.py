"""Tool processes that cannot outlive the harness process that started them.

    p = lifeline.Popen(argv, ...)     # subprocess.Popen, always in a session of its own
    ...                               # reaped as usual (wait/poll/communicate): forgotten
    lifeline.release(pid)             # only for a child reaped by hand (os.wait4)
    d = lifeline.scratch(tempfile.mkdtemp(prefix="vfz-x-"))   # removed when this process ends
    lifeline.unscratch(d)             # after removing it by hand (shutil.rmtree)

Every long-lived tool (QEMU for U-Boot and the kernel, FatFs's node server,
fusefat and its agent, fuzz_ops, every vfz.proc.run tool) is started through
Popen. When this process dies by any means -- kill -9 included -- a watcher
SIGKILLs the process group of every such child not reaped yet; a child's
group dies with it, not with the thread that started it.

Why a pipe and a watcher, not PR_SET_PDEATHSIG: the death signal fires when
the *thread* that forked the child ends, and the campaign starts oracles from
lane threads and shares them across lanes (the kernel VM, U-Boot boards,
FatFs's server), so a lane ending would kill a VM other lanes use; it also
reaches the child alone, not the grandchildren in its group (fuzz_ops's
fork-mode jobs). A pipe end is held by the process, not a thread: the write
end exists only here (close-on-exec, never passed to a tool, closed in an
os.fork() child), so its read end sees EOF exactly when this process is
gone, whoever killed it and however. No signal, no polling, no timer.

Why one watcher per harness process, not one per child: the watcher is
this file run by `python3 -I -S`, spawned (posix_spawn, its own session: a
kill of the harness's process group or a Ctrl-C does not reach it) at the
first child; it blocks in read(), keeps the registrations and, on EOF,
kills. It costs one spawn per harness process (the harness does not wait
for it: the pipe holds the registrations until it reads them), ~10 MB and
~0.1 s of CPU; per child, one read of /proc/PID/stat and two short writes,
~25 us (an atomic pipe write each, so threads need no ordering beyond the
lock; bench/bench_lifeline.py). A watcher that died is replaced on the next
write, with every live registration sent again.

Why each registration carries the child's start time: pids are reused (this
machine's pid_max is 32768). A child is forgotten when it is reaped
(Popen's exit-status hook), but the harness can die between the reap and
the write that says so; the watcher then finds another process under that
pid and leaves its group alone: it kills a registered group only when
/proc/PID/stat still shows the registered start time (the leader, alive or a
zombie) or no process PID exists (the leader died first; its group can
outlive it, and the pid stays held while it does; a pid freed and reused as
a group within the watcher's few milliseconds is one case left). The start
time counts clock ticks (10 ms): a pid reaped and taken again within the
same tick is the other (the pid must come round all of pid_max in 10 ms,
or be forced back through ns_last_pid as tests/test_lifeline.py does).

Scratch paths (temporary directories and files) are registered the same
way: the watcher removes every one still registered once it has killed the
children, whether this process was killed or ended normally without
cleaning up (before, each kill -9 of a campaign left its vfz-campaign-*
directory, ~100 MB, a U-Boot board's 35 MB image, and every process an
mtools configuration directory). Only scratch the harness alone uses goes
here, never output (findings, corpora, exports).

The gap that stays: between fork and the registration write (the parent
writes right after exec succeeded) a kill -9 leaks that one child. Closing
it would take a pre-exec hook in the child, which turns off vfork: ~40 ms
per spawn against ~5 ms here (nice 19, load 3; vfz.proc.run starts
thousands of tools).
"""
import os
import signal
import subprocess
import sys
import threading

_lock = threading.RLock()    # reentrant: a garbage-collected Popen may reap inside a locked call
_live = {}                   # pid -> start time (bytes) of the children not reaped yet
_paths = set()               # scratch paths to remove when this process ends
_w = None                    # the write end (only this process has it)
_watcher = None              # the watcher's pid


def start_time(pid):
    """Field 22 of /proc/PID/stat (clock ticks after boot) as bytes; None
    when there is no such process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def _spawn():
    """Start a watcher on a fresh pipe (lock held)."""
    global _w, _watcher
    r, w = os.pipe()
    try:
        exe = sys.executable or "/usr/bin/python3"
        _watcher = os.posix_spawn(exe, [exe, "-I", "-S", os.path.abspath(__file__)], os.environ,
                                  file_actions=[(os.POSIX_SPAWN_DUP2, r, 0),
                                                (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
                                                (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0)],
                                  setsid=True)
    except BaseException:
        os.close(w)
        raise
    finally:
        os.close(r)
    _w = w


def _write(data):
    while data:
        data = data[os.write(_w, data):]


def _send(msg):
    """Write one line to the watcher (lock held; _live already says it). A
    watcher that is gone is reaped and replaced, and told every live
    registration again."""
    global _w, _watcher
    if _w is None:
        _spawn()
    try:
        _write(msg)
        return
    except BrokenPipeError:
        pass
    os.close(_w)
    _w = None
    try:
        os.waitpid(_watcher, os.WNOHANG)
    except ChildProcessError:
        pass
    _spawn()
    _write(b"".join(b"+ %d %s\n" % (pid, st) for pid, st in _live.items())
           + b"".join(b"p %s\n" % os.fsencode(p).hex().encode() for p in _paths))


def register(pid):
    """Kill PID's process group when this process dies. PID must be a child
    not reaped yet (so the pid is still its own)."""
    st = start_time(pid)
    if st is None:
        return
    with _lock:
        _live[pid] = st
        _send(b"+ %d %s\n" % (pid, st))


def release(pid):
    """PID was reaped: forget it (a no-op for a pid not registered)."""
    try:
        with _lock:
            if _live.pop(pid, None) is not None:
                _send(b"- %d\n" % pid)
    except Exception:      # at interpreter exit (Popen.__del__), or the watcher cannot be started
        pass


def scratch(path):
    """Remove path (a directory tree or a file) when this process ends, by
    any means, unless unscratch(path) came first. -> path."""
    path = os.path.abspath(path)
    with _lock:
        _paths.add(path)
        _send(b"p %s\n" % os.fsencode(path).hex().encode())
    return path


def unscratch(path):
    """Forget path (it was removed, or is to stay)."""
    path = os.path.abspath(path)
    try:
        with _lock:
            if path in _paths:
                _paths.discard(path)
                _send(b"q %s\n" % os.fsencode(path).hex().encode())
    except Exception:      # at interpreter exit, or the watcher cannot be started
        pass


def scratched():
    """The scratch paths the watcher would remove now."""
    with _lock:
        return set(_paths)


def registered():
    """{pid: start time} of the children the watcher would kill now."""
    with _lock:
        return dict(_live)


def watcher_pid():
    return _watcher


def _after_fork_child():
    """An os.fork() child must not hold the parent's write end (the parent's
    death would not be seen while the child lives) nor its registrations; it
    gets a watcher of its own if it starts tools. No lock here: another
    thread of the parent may have held it at the fork."""
    global _lock, _live, _paths, _w, _watcher
    _lock = threading.RLock()
    _live = {}
    _paths = set()
    if _w is not None:
        try:
            os.close(_w)
        except OSError:
            pass
    _w = None
    _watcher = None


os.register_at_fork(after_in_child=_after_fork_child)


class Popen(subprocess.Popen):
    """subprocess.Popen in a new session (start_new_session=True) whose
    process group is killed when this process dies; forgotten when reaped."""

    def __init__(self, *args, **kwargs):
        kwargs["start_new_session"] = True
        super().__init__(*args, **kwargs)
        try:
            register(self.pid)
        except BaseException:
            # no watcher: do not leave an unguarded child behind
            try:
                os.killpg(self.pid, signal.SIGKILL)
            except OSError:
                pass
            self.wait()
            raise

    def _handle_exitstatus(self, sts, *args, **kwargs):
        super()._handle_exitstatus(sts, *args, **kwargs)
        release(self.pid)


def _watch():
    """The watcher (this file run by python3 -I -S): reads "+ PID START",
    "- PID", "p HEXPATH" and "q HEXPATH" lines on stdin until EOF, then
    SIGKILLs each registered group whose leader is still the registered
    process or gone, then removes each scratch path still registered."""
    os.chdir("/")
    os.closerange(3, os.sysconf("SC_OPEN_MAX"))   # inheritable fds of the harness (a jobserver's)
    live, paths, buf = {}, set(), b""
    while True:
        chunk = os.read(0, 65536)
        if not chunk:
            break
        *lines, buf = (buf + chunk).split(b"\n")
        for ln in lines:
            w = ln.split()
            if len(w) == 3 and w[0] == b"+":
                live[int(w[1])] = w[2]
            elif len(w) == 2 and w[0] == b"-":
                live.pop(int(w[1]), None)
            elif len(w) == 2 and w[0] in (b"p", b"q"):
                path = bytes.fromhex(w[1].decode())
                (paths.add if w[0] == b"p" else paths.discard)(path)
    for pid, st in live.items():
        now = start_time(pid)
        if now is not None and now != st:
            continue          # the pid is another process's now
        for kill in (os.killpg, os.kill):
            try:
                kill(pid, signal.SIGKILL)
            except OSError:
                pass
    if paths:
        import shutil
        for path in paths:
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                try:
                    os.unlink(path)
                except OSError:
                    pass


if __name__ == "__main__":
    _watch()
