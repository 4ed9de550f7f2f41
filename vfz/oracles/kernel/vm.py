"""One persistent QEMU guest running the vfatfuzz agent (agent.c).

The host talks to the agent over a virtio-serial port backed by a Unix
socket; frames are described at the top of agent.c. A request that does not
answer within its timeout, or a dead QEMU, raises VMError; the VM is then
killed and the next request boots a fresh one (restart is transparent to
callers, who report the failed request as an error).
"""
import errno
import os
import re
import select
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import threading
import time

from vfz import lifeline
from vfz.proc import add_cpu

QEMU = "qemu-system-x86_64"
BLOCK = 4096
ZERO_BLOCK = bytes(BLOCK)


class VMError(Exception):
    """The guest died, hung or broke the protocol; .partial = the replies of
    a pipeline that did arrive before."""
    partial = ()


class ModuleError(VMError):
    """A module set could not be loaded (the VM itself is fine)."""


_CRASH = re.compile(r"Kernel panic|BUG:|Oops|general protection|WARNING:|RIP: 0010|"
                    r"Call Trace|watchdog|hung_task|blocked for more than")


def crash_summary(console):
    """'; guest: <key lines>; console tail: ...' from a console log ('' if empty)."""
    if not console.strip():
        return ""
    lines = [re.sub(r"^\[\s*[\d.]+\]\s*", "", ln.strip()) for ln in console.splitlines()]
    key = []
    for ln in lines:
        if _CRASH.search(ln) and ln not in key:
            key.append(ln)
    out = ""
    if key:
        out += "; guest: " + " | ".join(key[:6])
    return out + "; console tail: " + console[-800:]


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def clean_stale_dirs(min_age=60.0):
    """Remove VM directories (console logs, sockets) whose owning process is
    gone (it was killed before it could clean up)."""
    import glob
    for d in glob.glob(os.path.join(tempfile.gettempdir(), "vfz-vm-*")):
        try:
            with open(os.path.join(d, "owner")) as f:
                pid = int(f.read().strip())
            if not _alive(pid) and time.time() - os.path.getmtime(d) > min_age:
                shutil.rmtree(d, ignore_errors=True)
        except (OSError, ValueError):
            continue


def sparse_chunks(data):
    """[(offset, bytes)] of the non-zero 4 KiB blocks of DATA, merged.

    Zero 64 KiB stretches are skipped with one compare each."""
    data = bytes(data)
    n = len(data)
    big = 16 * BLOCK
    zbig = bytes(big)
    runs = []            # [start, end) of non-zero blocks, merged
    off = 0
    while off < n:
        end = min(off + big, n)
        if data[off:end] == zbig[:end - off]:
            off = end
            continue
        for o in range(off, end, BLOCK):
            e = min(o + BLOCK, end)
            if data[o:e] != ZERO_BLOCK[:e - o]:
                if runs and runs[-1][1] == o:
                    runs[-1][1] = e
                else:
                    runs.append([o, e])
        off = end
    return [(a, data[a:b]) for a, b in runs]


def encode_image(data):
    parts = [struct.pack("<Q", len(data))]
    for off, chunk in sparse_chunks(data):
        parts.append(struct.pack("<QI", off, len(chunk)))
        parts.append(chunk)
    return b"".join(parts)


def encode_image_file(path):
    """encode_image of the file at path, reading only its data extents
    (SEEK_DATA/SEEK_HOLE): the holes of a sparse image (the core writers'
    are) are never read. The guest rebuilds the same bytes."""
    with open(path, "rb") as f:
        fd = f.fileno()
        size = os.fstat(fd).st_size
        parts = [struct.pack("<Q", size)]
        pos = 0
        while pos < size:
            try:
                d = os.lseek(fd, pos, os.SEEK_DATA)
                h = min(os.lseek(fd, d, os.SEEK_HOLE), size)
            except OSError as e:
                if e.errno == errno.ENXIO:       # only a hole is left
                    break
                d, h = pos, size                 # no SEEK_DATA here: all of it
            f.seek(d)
            data = f.read(h - d)
            for off, chunk in sparse_chunks(data):
                parts.append(struct.pack("<QI", d + off, len(chunk)))
                parts.append(chunk)
            pos = max(h, d + len(data), pos + 1)
    return b"".join(parts)


def write_image(path, payload):
    """Write an encoded image (decode_image's input) to path as a sparse
    file: the same bytes as decode_image(payload), holes for the zeros."""
    size, = struct.unpack_from("<Q", payload, 0)
    mv = memoryview(payload)
    with open(path, "r+b") as f:
        f.truncate(0)
        f.truncate(size)
        pos = 8
        while pos < len(payload):
            off, ln = struct.unpack_from("<QI", payload, pos)
            pos += 12
            f.seek(off)
            f.write(mv[pos:pos + ln])
            pos += ln


def decode_image(payload):
    size, = struct.unpack_from("<Q", payload, 0)
    img = bytearray(size)
    pos = 8
    while pos < len(payload):
        off, ln = struct.unpack_from("<QI", payload, pos)
        pos += 12
        img[off:off + ln] = payload[pos:pos + ln]
        pos += ln
    return bytes(img)


def s(b):
    """length-prefixed string field"""
    if isinstance(b, str):
        b = b.encode("utf-8")
    return struct.pack("<I", len(b)) + b


class VM:
    """A QEMU TCG guest booted from BUILD_DIR/{vmlinux,initramfs.cpio}.

    Every boot loads the stock fat/vfat; pipeline(..., modules=(key, mods))
    switches to another set first when KEY is not the loaded one (mods:
    [(name, bytes, params)], loaded in order after vfat/msdos/fat are
    removed). `loaded` is the key in force ("stock" after a boot).
    """

    def __init__(self, build_dir, mem="512M", boot_timeout=60.0,
                 qemu=QEMU, extra_append="", drive=None, extra_args=()):
        self.build_dir = build_dir
        self.drive = drive        # the traced image drive (vfz/oracles/kernel/trace.py) or None
        # more QEMU arguments (the vvfat oracle's QMP socket, vfz/oracles/vvfat/guest.py)
        self.extra_args = list(extra_args)
        self.loaded = None
        self.switches = 0
        self.mem = mem
        self.boot_timeout = boot_timeout
        self.qemu = qemu
        self.extra_append = extra_append
        self.proc = None
        self.sock = None
        self.tmp = None
        self.boots = 0
        self.boot_seconds = []
        self.modules_log = ""
        self.lock = threading.RLock()
        self._rbuf = bytearray()

    # ---------------------------------------------------------- lifecycle
    @property
    def console_log(self):
        return os.path.join(self.tmp, "console.log") if self.tmp else None

    def console_tail(self, n=4000):
        try:
            with open(self.console_log, "rb") as f:
                f.seek(0, 2)
                size = f.tell()
                f.seek(max(0, size - n))
                return f.read().decode("utf-8", "replace")
        except (OSError, TypeError):
            return ""

    def alive(self):
        return self.proc is not None and self.proc.poll() is None and self.sock is not None

    def start(self):
        self.stop()
        for f in ("vmlinux", "initramfs.cpio"):
            if not os.path.exists(os.path.join(self.build_dir, f)):
                raise VMError(f"{self.build_dir}/{f} missing: run vfz/oracles/kernel/build.sh")
        if shutil.which(self.qemu) is None:
            raise VMError(f"{self.qemu} not found (apt-get install qemu-system-x86)")
        t0 = time.monotonic()
        clean_stale_dirs()
        self.tmp = lifeline.scratch(tempfile.mkdtemp(prefix="vfz-vm-"))
        with open(os.path.join(self.tmp, "owner"), "w") as f:
            f.write(f"{os.getpid()}\n")
        sock_path = os.path.join(self.tmp, "chan.sock")
        srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        srv.bind(sock_path)
        srv.listen(1)
        append = ("console=ttyS0 loglevel=3 panic=-1 oops=panic panic_on_warn=0 "
                  "rdinit=/init quiet mitigations=off nokaslr tsc=reliable "
                  "no_timer_check " + self.extra_append)
        cmd = [self.qemu, "-accel", "tcg", "-m", self.mem, "-nographic", "-nic", "none",
               "-no-reboot", "-nodefaults", "-no-user-config",
               "-serial", "file:" + self.console_log, "-monitor", "none",
               "-kernel", os.path.join(self.build_dir, "vmlinux"),
               "-initrd", os.path.join(self.build_dir, "initramfs.cpio"),
               "-append", append,
               "-device", "virtio-serial-pci",
               "-chardev", f"socket,id=vfz,path={sock_path}",
               "-device", "virtserialport,chardev=vfz,name=vfz",
               *(self.drive.qemu_args(self.tmp) if self.drive else ())] + self.extra_args
        with open(os.path.join(self.tmp, "qemu.err"), "wb") as err:
            self.proc = lifeline.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                       stderr=err)
        srv.settimeout(10.0)
        try:
            conn, _ = srv.accept()
        except OSError:
            srv.close()
            err = self._qemu_err()
            self.stop()
            raise VMError(f"QEMU did not connect to the channel: {err}")
        srv.close()
        self.sock = conn
        self.sock.setblocking(False)
        self._rbuf = bytearray()
        try:
            st, payload = self._recv(self.boot_timeout)
        except VMError as e:
            tail = self.console_tail()
            self.stop()
            raise VMError(f"guest did not boot: {e}; console: {tail[-800:]}")
        if st != "r":
            self.stop()
            raise VMError(f"unexpected hello {st!r} {payload[:100]!r}")
        self.boots += 1
        self.boot_seconds.append(time.monotonic() - t0)
        self.loaded = "stock"
        self.modules_log = "stock modules loaded at boot\n"
        try:
            self._exchange([("K", b"")], time.monotonic() + 10.0)  # drop boot messages
        except VMError:
            self.stop()
            raise

    def _qemu_err(self):
        try:
            with open(os.path.join(self.tmp, "qemu.err"), "rb") as f:
                return f.read().decode("utf-8", "replace").strip()[-500:]
        except OSError:
            return ""

    def stop(self):
        if self.sock is not None:
            try:
                self.sock.close()
            except OSError:
                pass
            self.sock = None
        if self.proc is not None:
            if self.proc.poll() is None:
                try:
                    os.kill(self.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
            self.proc = None
        if self.tmp:
            # keep the last console log of a dead VM for reports
            self.last_console = self.console_tail()
            self.last_qemu_err = self._qemu_err()     # QEMU's own last words (an abort)
            shutil.rmtree(self.tmp, ignore_errors=True)
            lifeline.unscratch(self.tmp)
            self.tmp = None

    def ensure(self):
        if not self.alive():
            self.start()

    # ------------------------------------------------------------ framing
    def _send(self, frames, deadline):
        data = b"".join(struct.pack("<IB", len(p) + 1, ord(c)) + p for c, p in frames)
        view = memoryview(data)
        while view:
            left = deadline - time.monotonic()
            if left <= 0:
                raise VMError("timeout sending request")
            _, w, _ = select.select([], [self.sock], [], min(left, 0.5))
            if self.proc.poll() is not None:
                raise VMError(f"QEMU exited ({self.proc.returncode})")
            if w:
                try:
                    n = self.sock.send(view)
                except BlockingIOError:
                    continue
                except OSError as e:
                    raise VMError(f"channel send: {e}")
                view = view[n:]

    def _fill(self, need, deadline):
        while len(self._rbuf) < need:
            left = deadline - time.monotonic()
            if left <= 0:
                raise VMError("timeout")
            r, _, _ = select.select([self.sock], [], [], min(left, 0.5))
            if r:
                try:
                    d = self.sock.recv(1 << 20)
                except BlockingIOError:
                    continue
                except OSError as e:
                    raise VMError(f"channel recv: {e}")
                if not d:
                    raise VMError("channel closed (QEMU died)")
                self._rbuf += d
            elif self.proc.poll() is not None:
                raise VMError(f"QEMU exited ({self.proc.returncode})")

    def _recv(self, timeout):
        deadline = time.monotonic() + timeout
        self._fill(5, deadline)
        ln, st = struct.unpack_from("<IB", self._rbuf, 0)
        self._fill(4 + ln, deadline)
        payload = bytes(self._rbuf[5:4 + ln])
        del self._rbuf[:4 + ln]
        return chr(st), payload

    def _exchange(self, frames, deadline):
        out = []
        try:
            self._send(frames, deadline)
            for _ in frames:
                out.append(self._recv(max(0.0, deadline - time.monotonic())))
        except VMError as e:
            e.partial = out       # the replies that did arrive, in order
            raise
        return out

    def pipeline(self, frames, timeout, modules=None):
        """Send [(cmd, payload)] at once, return [(status, payload)].

        modules=(key, [(name, bytes, params)]): make that module set the
        loaded one first (ModuleError if it does not load). Any failure
        (timeout, death) kills the VM and raises VMError."""
        with self.lock:
            self.ensure()
            cpu0 = self.cpu_seconds()
            try:
                if modules is not None and modules[0] != self.loaded:
                    self._switch(modules, timeout)
                return self._exchange(frames, time.monotonic() + timeout)
            except ModuleError:
                raise
            except VMError as e:
                tail = self.console_tail(200000)
                self.stop()
                err = VMError(f"{e}{crash_summary(tail)}")
                err.partial = getattr(e, "partial", [])
                raise err
            finally:
                # the guest's CPU for this request, to the calling thread
                # (vfz.proc.thread_cpu: the campaign's own-time accounting)
                if cpu0 is not None:
                    cpu1 = self.cpu_seconds()
                    if cpu1 is not None:
                        add_cpu(max(0.0, cpu1 - cpu0))

    def cpu_seconds(self):
        """QEMU's CPU seconds so far (user + sys), None when it is not running."""
        try:
            with open(f"/proc/{self.proc.pid}/stat") as f:
                st = f.read().rsplit(")", 1)[1].split()
            return (int(st[11]) + int(st[12])) / os.sysconf("SC_CLK_TCK")
        except (AttributeError, OSError, ValueError, IndexError):
            return None

    def _switch(self, modules, timeout):
        key, mods = modules
        payload = struct.pack("<I", len(mods)) + b"".join(
            s(name) + s(data) + s(params) for name, data, params in mods)
        (st, log), (_, kmsg) = self._exchange([("M", payload), ("K", b"")],
                                              time.monotonic() + timeout)
        self.modules_log = log.decode("utf-8", "replace")
        self.switches += 1
        if st != "o":
            self.loaded = None
            raise ModuleError(f"module set {key!r} did not load: {self.modules_log.strip()} "
                              f"{kmsg.decode('utf-8', 'replace').strip()[-500:]}")
        self.loaded = key

    def request(self, cmd, payload=b"", timeout=30.0):
        c = cmd.decode() if isinstance(cmd, bytes) else cmd
        return self.pipeline([(c, payload)], timeout)[0]

    def close(self):
        with self.lock:
            if self.alive():
                try:
                    self._send([("Q", b"")], time.monotonic() + 2)
                    self.proc.wait(timeout=3)
                except (VMError, subprocess.TimeoutExpired, OSError):
                    pass
            self.stop()
