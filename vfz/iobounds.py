"""The I/O-bounds oracle: which bytes of a volume image a tool read and
wrote, and which of them lie outside the volume or the image.

A tool runs under the preload library libvfz_iotrace.so (harnesses/iotrace/,
built by the default preset) with env(); it appends one line per access of
the watched image to a trace file (format in iotrace.c); parse() turns the
trace into Access records and judge() into OutOfBounds ones:

    past volume   the access ends past total sectors x bytes per sector of
                  the volume's boot sector (the declared end) but inside
                  the image file
    past image    it ends past the end of the image file as the tool got it
                  (a read there asks for bytes the file does not have; a
                  write or truncate grows the file) and past the volume
    past image inside volume   past the image's end but inside the volume
                  the boot sector declares (a volume declared larger than
                  its device: the tool trusted the boot sector)
    cut volume    an ftruncate below the declared end

A read inside the image's first 4 KiB (the largest sector) is never
judged: it is how a tool reads the boot sector that declares the volume.
Reads are judged by the range asked for, not the bytes returned: a read
of 4 KiB at the last 2 KiB of the file asked past the image. A mapping
counts as an access of its whole range (what is touched through it is not
seen). Each record names the process's op label (the command line,
VFZ_IOTRACE_OP), the call, the offset and the first sector outside.

tracing() runs every tool that vfz.proc starts in the calling thread
(proc.run, and Popen through proc.traced_env) under the library, each with
its own command as the label; vfz.hostile.bounds wires it into the hostile
campaign. docs/iobounds.md has the measurements per tool.
"""
import contextlib
import os
import re
import tempfile
from dataclasses import dataclass, field

from vfz import proc

LIB = "libvfz_iotrace.so"
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SECTOR = 512
KINDS = {"r": "read", "w": "write", "m": "map", "t": "truncate"}
MAX_RECORDS = 200000          # in-bounds records per process (the rest counted)


def library():
    """The preload library's path, or None when it is not built."""
    for d in (os.environ.get("VFAT_BUILD"), os.path.join(REPO, "build")):
        if d and os.path.isfile(os.path.join(d, LIB)):
            return os.path.abspath(os.path.join(d, LIB))
    return None


def env(trace, images, declared=0, op="", lib=None, base=None):
    """The environment entries that run one command under the library:
    trace file, image path(s) watched, declared volume bytes, op label.
    base: the environment the command would get (its LD_PRELOAD and
    ASAN_OPTIONS are kept)."""
    lib = lib or library()
    if lib is None:
        raise FileNotFoundError(f"{LIB} is not built (cmake --build --preset default)")
    base = os.environ if base is None else base
    images = [images] if isinstance(images, (str, bytes, os.PathLike)) else list(images)
    pre = base.get("LD_PRELOAD", "")
    asan = base.get("ASAN_OPTIONS", "")
    return {"LD_PRELOAD": lib + (" " + pre if pre else ""),
            "VFZ_IOTRACE_FILE": os.path.abspath(trace),
            "VFZ_IOTRACE_IMAGE": ":".join(os.path.abspath(os.fsdecode(p)) for p in images),
            "VFZ_IOTRACE_SIZE": str(int(declared or 0)),
            "VFZ_IOTRACE_MAX": str(MAX_RECORDS),
            "VFZ_IOTRACE_OP": " ".join(op.split())[:500],
            # a sanitizer build's runtime then comes second in the list: ASan
            # checks that order unless told not to (it still works)
            "ASAN_OPTIONS": ":".join(x for x in (asan, "verify_asan_link_order=0") if x)}


@dataclass(frozen=True)
class Access:
    kind: str          # read | write | map | truncate
    call: str          # the wrapped function (read, pread64, fread, ...)
    offset: int        # byte offset in the image (truncate: the new length)
    length: int        # bytes asked for (map: the mapping's length; truncate: 0)
    result: int        # bytes moved, or -errno (map: its prot)
    pid: int
    op: str            # the process's op label (its command)

    @property
    def end(self):
        return self.offset + self.length


@dataclass
class Trace:
    accesses: list = field(default_factory=list)
    opens: list = field(default_factory=list)      # (pid, fd, call, open flags)
    ops: dict = field(default_factory=dict)        # pid -> op label
    dropped: int = 0                               # in-bounds records over the cap
    unfinished: list = field(default_factory=list)  # pids without an exit line (killed)


def parse(text):
    """The trace's text -> Trace (lines it cannot read are skipped: a
    process killed mid-write leaves at most its last line cut)."""
    t = Trace()
    for line in text.splitlines():
        parts = line.split(" ", 3 if line.startswith("h ") else 8)
        try:
            k, pid = parts[0], int(parts[1])
            if k == "h":
                t.ops[pid] = parts[3] if len(parts) > 3 else ""
                t.unfinished.append(pid)
            elif k == "o":
                t.opens.append((pid, int(parts[2]), parts[3], int(parts[4])))
            elif k in ("r", "w") and len(parts) == 7:
                t.accesses.append(Access(KINDS[k], parts[3], int(parts[4]), int(parts[5]), int(parts[6]),
                                         pid, t.ops.get(pid, "")))
            elif k == "m" and len(parts) == 8:
                t.accesses.append(Access("map", parts[3], int(parts[4]), int(parts[5]), int(parts[6]),
                                         pid, t.ops.get(pid, "")))
            elif k == "t" and len(parts) == 6:
                t.accesses.append(Access("truncate", parts[3], int(parts[4]), 0, int(parts[5]),
                                         pid, t.ops.get(pid, "")))
            elif k == "x":
                t.dropped += int(parts[3])
                if pid in t.unfinished:
                    t.unfinished.remove(pid)
        except (ValueError, IndexError):
            continue
    return t


def sector_trace(io, call_read="disk_read", call_write="disk_write"):
    """A Trace of sector records another layer kept (FatFs's disk callbacks,
    vfz/oracles/fatfs/server.js): io = {"ss": sector bytes, "ops": [label],
    "rec": [[kind 'r'|'w', first sector, count, op index, 1 done | 0
    refused]], "dropped": n}. A refused access (past the image: the layer
    answered an error) has result -5 (EIO)."""
    t = Trace(dropped=int(io.get("dropped") or 0))
    ss, ops = int(io.get("ss") or SECTOR), list(io.get("ops") or ())
    t.ops = {0: "; ".join(ops[:3]) + (" ..." if len(ops) > 3 else "")}
    for kind, sector, count, op, ok in io.get("rec") or ():
        n = count * ss
        t.accesses.append(Access("read" if kind == "r" else "write", call_read if kind == "r" else call_write,
                                 sector * ss, n, n if ok else -5, 0, ops[op] if 0 <= op < len(ops) else "?"))
    return t


# QEMU's block layer (the log trace backend of Debian's qemu 7.2: `-d
# trace:EVENT -D FILE`, one line per event, flushed per line): which node is
# which file, and every read and write a guest device asks of it; and, as op
# markers, the bytes a guest writes to a virtio-serial port (the kernel VM's
# agent answering a request, vfz/oracles/kernel/trace.py)
QEMU_EVENTS = ("bdrv_open_common", "blk_co_preadv", "blk_co_pwritev")
QEMU_SERIAL_EVENT = "virtio_console_flush_buf"
_QEMU_OPEN = re.compile(r'^bdrv_open_common bs (0x[0-9a-f]+) filename "(.*)" flags')
_QEMU_IO = re.compile(r"^blk_co_p(read|write)v blk \S+ bs (0x[0-9a-f]+) offset (\d+) bytes (\d+)")
_QEMU_FLUSH = re.compile(r"^virtio_console_flush_buf port \d+, in_len \d+, out_len (-?\d+)")


def qemu_trace_args(log, extra=()):
    """QEMU options that log the block layer's accesses (and the events extra) to log."""
    return ["-d", ",".join("trace:" + e for e in QEMU_EVENTS + tuple(extra)), "-D", log]


def qemu_log_size(log):
    try:
        return os.path.getsize(log)
    except OSError:
        return 0


def qemu_events(log, filename, start=0, end=None):
    """QEMU's log from byte start (to end), in order: ("io", kind, offset, length) for each
    access to the drive whose file is filename (as given to -drive), ("serial", bytes) for
    each flush of a virtio-serial port's output (bytes passed on, or -errno)."""
    try:
        with open(log, "rb") as f:
            head = f.read(1 << 16)          # the drives are opened at start
            f.seek(start)
            data = f.read() if end is None else f.read(max(0, end - start))
    except OSError:
        return []
    nodes = {m.group(1) for m in map(_QEMU_OPEN.match, head.decode("utf-8", "replace").splitlines())
             if m and os.path.basename(m.group(2)) == os.path.basename(filename)}
    out = []
    for line in data.decode("utf-8", "replace").splitlines():
        m = _QEMU_IO.match(line)
        if m and m.group(2) in nodes:
            out.append(("io", "read" if m.group(1) == "read" else "write", int(m.group(3)), int(m.group(4))))
            continue
        m = _QEMU_FLUSH.match(line)
        if m:
            out.append(("serial", int(m.group(1))))
    return out


def qemu_access(ev, op):
    """The Access of an ("io", ...) event of qemu_events, labelled op."""
    _, kind, offset, n = ev
    return Access(kind, "blk_co_preadv" if kind == "read" else "blk_co_pwritev", offset, n, n, 0, op)


def qemu_trace(log, filename, start=0, op="guest"):
    """A Trace of the accesses to the drive whose file is filename (as given
    to -drive) in QEMU's log, from byte start of the log on; op labels them
    all (QEMU does not know the guest's commands)."""
    t = Trace()
    t.ops = {0: op}
    t.accesses = [qemu_access(ev, op) for ev in qemu_events(log, filename, start) if ev[0] == "io"]
    return t


def read_trace(path):
    try:
        with open(path, "rb") as f:
            return parse(f.read().decode("utf-8", "replace"))
    except FileNotFoundError:
        return Trace()


@dataclass(frozen=True)
class OutOfBounds:
    kind: str          # read | write | map | truncate
    region: str        # past volume | past image | past image inside volume | cut volume
    sector: int        # the first sector of the access outside the region's limit
    offset: int
    length: int
    call: str
    op: str
    result: int = 0    # bytes done, or -errno (a refused call is recorded too)

    def describe(self):
        what = f"{self.kind} of {self.length} bytes at {self.offset:#x}" if self.kind != "truncate" \
            else f"truncate to {self.offset:#x}"
        got = f"{self.result} done" if self.result >= 0 else f"errno {-self.result}"
        return f"{self.region}: {what} (sector {self.sector}, {got}) by {self.call} in `{self.op}`"


def judge(trace, declared, image_size, sector=SECTOR):
    """[OutOfBounds] of a Trace: every access outside the declared volume
    (declared: bytes, None = unknown: the image's end is the only limit) or
    the image file (image_size bytes, as the tool got it)."""
    out = []
    vol = declared if declared else image_size
    inside = min(vol, image_size)
    for a in trace.accesses:
        # most accesses end inside both limits: settled without the checks below (a FatFs
        # writer's volume has ~100 records, judged per volume)
        if a.offset + a.length <= inside and a.kind != "truncate":
            continue
        if a.kind == "truncate":
            if a.offset > image_size:
                out.append(OutOfBounds(a.kind, "past image", image_size // sector, a.offset, 0, a.call, a.op,
                                       a.result))
            elif a.offset < vol:
                out.append(OutOfBounds(a.kind, "cut volume", a.offset // sector, a.offset, 0, a.call, a.op,
                                       a.result))
            continue
        if a.length <= 0 or _boot_probe(a, image_size):
            continue
        if a.end > image_size:
            region = "past image" if a.end > vol else "past image inside volume"
            limit = image_size
        elif a.end > vol:
            region, limit = "past volume", vol
        else:
            continue
        out.append(OutOfBounds(a.kind, region, max(a.offset, limit) // sector, a.offset, a.length,
                               a.call, a.op, a.result))
    return out


BOOT_PROBE = 4096   # the largest sector FAT allows


def _boot_probe(a, image_size):
    """A read inside the image's first 4 KiB is how a tool learns what the
    volume declares: it reads the boot sector before it knows the sector
    size, so a boot sector that declares a volume smaller than a sector
    (bytes per sector 1: 192 bytes) does not make that read one past the
    volume (hostile finding fatfs-out-of-bounds-20a7ab89ae of seed 2801, FatFs's
    f_mount reading sector 0, was the harness's own). Writes there are judged."""
    return a.kind == "read" and a.end <= min(BOOT_PROBE, image_size)


def geometry(head):
    """(bytes per sector, cluster bytes, data start bytes) of a boot sector,
    or None when its fields cannot place a cluster."""
    if len(head) < 64:
        return None
    bps = int.from_bytes(head[11:13], "little")
    spc, res, nfats = head[13], int.from_bytes(head[14:16], "little"), head[16]
    rootent = int.from_bytes(head[17:19], "little")
    spf = int.from_bytes(head[22:24], "little") or int.from_bytes(head[36:40], "little")
    if not bps or not spc:
        return None
    data = (res + nfats * spf + (rootent * 32 + bps - 1) // bps) * bps
    return bps, bps * spc, data


def program(op):
    """The program of an op label (its first word's base name)."""
    w = op.split(None, 1)
    return os.path.basename(w[0]) if w else "?"


def summary(oobs, limit=8):
    """{(program, kind, region): [count, first sector, last sector,
    [examples]]} of OutOfBounds records."""
    out = {}
    for o in oobs:
        k = (program(o.op), o.kind, o.region)
        s = out.setdefault(k, [0, o.sector, o.sector, []])
        s[0] += 1
        s[1], s[2] = min(s[1], o.sector), max(s[2], o.sector)
        if len(s[3]) < limit:
            s[3].append(o)
    return out


# ------------------------------------------------------------------ running
def label(argv, images):
    """A command's op label: its argv with the image path(s) shown as IMAGE."""
    names = {os.path.abspath(os.fsdecode(p)) for p in images}
    return " ".join("IMAGE" if os.path.abspath(str(a)) in names else str(a) for a in argv)


class Tracing:
    """One traced stretch of a thread: every command gets the library with
    its own label; trace() parses what they all recorded."""

    def __init__(self, images, declared=0, lib=None, workdir=None):
        self.images = [images] if isinstance(images, (str, os.PathLike)) else list(images)
        self.declared = declared
        self.lib = lib or library()
        fd, self.path = tempfile.mkstemp(prefix="vfz-iotrace-", suffix=".txt", dir=workdir)
        os.close(fd)
        self.commands = 0

    def env_for(self, argv, base=None):
        self.commands += 1
        return env(self.path, self.images, self.declared, label(argv, self.images), self.lib, base)

    def trace(self):
        return read_trace(self.path)

    def close(self):
        try:
            os.unlink(self.path)
        except OSError:
            pass


@contextlib.contextmanager
def tracing(images, declared=0, lib=None, workdir=None):
    """with tracing(image, declared) as t: ... every tool run by this thread
    through vfz.proc is traced; t.trace() -> Trace."""
    t = Tracing(images, declared, lib, workdir)
    try:
        with proc.env_hook(t.env_for):
            yield t
    finally:
        t.close()


def run(argv, image, declared=0, timeout=30.0, lib=None):
    """Run one command under the library -> (vfz.proc.Proc, Trace)."""
    with tracing(image, declared, lib) as t:
        p = proc.run(argv, timeout=timeout)
        return p, t.trace()
