"""The U-Boot board: one QEMU running U-Boot, driven over its serial console, with a transfer disk.

Part of the uboot oracle (vfz/oracles/uboot/): the reader and the writer
send their commands through a Board and hand bytes over on its transfer
disk; nothing here knows about FAT.

The board (Board): one qemu-system-i386 per oracle instance (TCG),
`-bios /usr/lib/u-boot/qemu-x86/u-boot.rom`, driven over its serial
console (stdin/stdout pipes, Python stdlib only). Two virtio disks:
  virtio 0  the image under test, a private copy (a "slot" file in the
            board's temporary directory);
  virtio 1  the transfer disk: raw blocks, no file system. The host writes
            the names of the current batch there as `env import -t` text
            (so every byte of a name reaches a command without passing the
            shell's parser) and the contents a write puts down; U-Boot
            writes the files it read there (`virtio write`) for the host to
            hash.
Boot: press a key at "Hit any key to stop autoboot", then
`blkcache configure 0 0` (U-Boot's block cache off: nothing read from a
disk outlives a command) and `virtio scan`. Each command line is sent
with `; echo "@@V""FZ<n>" $?` after it and answered when "@@VFZ<n> RC"
comes back (the echoed input never matches: the quotes split it).

Changing images without rebooting: the image is copied over the slot
file in place (the same inode QEMU has open) and `virtio scan` is run
again. Scripts: the commands of one round trip travel as the variable s
on the transfer disk (with the names), started by `run g` (set at boot:
virtio read + env import -t + run s); typing them through the emulated
UART cost 4x more. Sound because nothing caches the old image: U-Boot's block cache
is off, its FAT code reads the boot sector again for every command
(fat_itr_root -> get_fs_info) and keeps no buffers between commands,
and QEMU's raw driver reads the file with pread through the host page
cache the host's own write went through. The slot's size is the image's:
an image of another size needs another virtio capacity, so the board is
booted fresh for it (test_uboot swaps two images of one size with
different trees and checks each listing). Boards (Boards) are kept per
image size, up to three, SIGSTOPped while idle. Measured (bench/
bench_uboot.py, load 24-35): swapping reads 71-104 images/min, a fresh
boot per image 14-21/min.

Traps: an exception dump ("EIP:" / "### ERROR ###"), a reset (the banner
"U-Boot 20" again) or no answer within the time limit. The image's
answer is then an error starting "trap:", QEMU is killed and the next
image boots a fresh one.
"""
import os
import re
import select
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import weakref

from vfz import iobounds, lifeline

ROM = "/usr/lib/u-boot/qemu-x86/u-boot.rom"
QEMU = "qemu-system-i386"
MEM_MB = 512
BOOT_TIMEOUT = 60.0
SCRIPT_MAX = 200000           # bytes of commands in one `run s`
ENV_ADDR = 0x01000000         # RAM where `env import` text is read to
ENV_BLOCKS = 2048             # transfer disk blocks 0..2047: env text (1 MiB)
DATA_ADDR = 0x02000000        # RAM where files are loaded / contents are put
DATA_MAX = 0x1A000000         # up to here (U-Boot's own reservations start at ~0x1dd00000)
XFER_SIZE = ENV_BLOCKS * 512 + (DATA_MAX - DATA_ADDR)
MARK = re.compile(rb"@@VFZ(\d+) (\d+)\r?\n")
# at the start of a line (fatls lines start with blanks, error lines with "**"
# or a word of the message): an x86 exception dump, panic/hang, a new banner
TRAP = re.compile(rb"(?:^|\n)(EIP: |### ERROR ###|Unexpected exception|U-Boot 20\d\d\.)")


def available():
    if not shutil.which(QEMU):
        return False, f"{QEMU} is not installed (apt-get install qemu-system-x86; vfatfuzz setup)"
    if not os.path.exists(ROM):
        return False, f"{ROM} is missing (apt-get install u-boot-qemu; vfatfuzz setup)"
    return True, ROM


MAX_IDLE = 6                  # paused boards kept per process (~55 MB each)
_LOCK = threading.Lock()
_IDLE = set()
_SETS = weakref.WeakSet()    # the live Boards (their max_boards raise the idle cap)


class Trap(Exception):
    """U-Boot crashed, reset or stopped answering; the board is gone."""


class Board:
    """One QEMU running U-Boot, booted on first use; see the module doc."""

    def __init__(self, mem_mb=MEM_MB, iotrace=False):
        self.mem_mb = mem_mb
        self.iotrace = iotrace    # QEMU logs the block layer's accesses (vfz.iobounds)
        self.trace_mark = 0
        # a list while recording: ("script", env text, last marker) and ("data", bytes), every
        # round trip's transfer-disk text and every contents put there, in order (export_replay)
        self.record = None
        self.sent_at = None       # when the current round trip was sent
        self.heard_at = None      # when U-Boot last printed
        self.proc = None
        self.tmp = None
        self.size = None          # the slot's size (the image size QEMU was started with)
        self.seq = 0
        self.boots = 0
        self.swaps = 0
        self.log = b""            # console output of the current request (for raw)
        self.paused = False
        self.idle_since = 0.0

    # ------------------------------------------------------------ process
    def _paths(self):
        return os.path.join(self.tmp, "slot.img"), os.path.join(self.tmp, "xfer.img")

    def boot(self, size):
        self.kill()
        ok, why = available()
        if not ok:
            raise Trap(why)
        self.tmp = lifeline.scratch(tempfile.mkdtemp(prefix="vfz-uboot-"))
        slot, xfer = self._paths()
        with open(slot, "wb") as f:
            f.truncate(size)
        with open(xfer, "wb") as f:
            f.truncate(XFER_SIZE)
        self.proc = lifeline.Popen(
            [QEMU, "-bios", ROM, "-display", "none", "-serial", "stdio", "-monitor", "none",
             "-nic", "none", "-vga", "none", "-m", str(self.mem_mb), "-no-reboot",
             "-drive", f"file={slot},format=raw,if=virtio",
             "-drive", f"file={xfer},format=raw,if=virtio",
             *(iobounds.qemu_trace_args(self.trace_log()) if self.iotrace else ())],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.size = size
        self.boots += 1
        self.env_gens = None          # a fresh environment (shell.Session)
        self.buf = b""
        deadline = time.monotonic() + BOOT_TIMEOUT
        self.sent_at = time.monotonic()
        pressed = False
        while b"\n=> " not in self.buf and not self.buf.startswith(b"=> "):
            if not pressed and b"Hit any key" in self.buf:
                self._send(b" ")
                pressed = True
            self._read_some(deadline, "boot")
        self.buf = b""
        # block cache off; the transfer disk is the current device for virtio
        # read/write from now on (FAT commands name virtio 0 themselves)
        self.seq += 1
        group = [(self.seq, b'echo "@@V""FZ%d" 0' % self.seq)]
        # g: the short line that fetches and runs a script of up to 8 blocks
        for c in (b"blkcache configure 0 0", b"virtio scan", b"virtio dev 1",
                  b"setenv g 'virtio read %#x 0 8 && env import -t %#x && run s'"
                  % (ENV_ADDR, ENV_ADDR)):
            self.seq += 1
            group.append((self.seq, c + b'; echo "@@V""FZ%d" $?' % self.seq))
        for out, rc in self._script(group, None, time.monotonic() + BOOT_TIMEOUT)[1:]:
            if rc:
                raise self._trap(f"setup failed: {out[-200:]!r}")

    def kill(self):
        with _LOCK:
            self._kill_locked()

    def __del__(self):
        try:
            self.kill()
        except Exception:
            pass

    def _kill_locked(self):
        _IDLE.discard(self)
        if self.paused and self.proc is not None:
            try:
                os.kill(self.proc.pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
        self.paused = False
        p, self.proc = self.proc, None
        if p is not None:
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
        if self.tmp:
            shutil.rmtree(self.tmp, ignore_errors=True)
            lifeline.unscratch(self.tmp)
            self.tmp = None
        self.size = None

    close = kill

    def pause(self):
        """SIGSTOP QEMU between requests: U-Boot polls its console, and a
        waiting board would take a host CPU for nothing. Beyond MAX_IDLE
        paused boards in this process (oracle instances a campaign does not
        close), the longest idle other one is killed: its owner boots again."""
        with _LOCK:
            if self.alive() and not self.paused:
                os.kill(self.proc.pid, signal.SIGSTOP)
                self.paused = True
                self.idle_since = time.monotonic()
                _IDLE.add(self)
            cap = max(MAX_IDLE, sum(bs.max_boards for bs in _SETS))    # what the Boards keep
            extra = sorted((b for b in _IDLE if b is not self and b.paused),
                           key=lambda b: b.idle_since)[:max(0, len(_IDLE) - cap)]
            for b in extra:
                b._kill_locked()

    def resume(self):
        with _LOCK:
            _IDLE.discard(self)
            if self.paused and self.proc is not None:
                try:
                    os.kill(self.proc.pid, signal.SIGCONT)
                except ProcessLookupError:
                    pass
            self.paused = False

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def _send(self, data):
        try:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise self._trap("QEMU's console is gone")

    def _read_some(self, deadline, what):
        left = deadline - time.monotonic()
        if left <= 0:
            # how long the round trip had, and how long U-Boot had been silent: one sent with
            # the image's budget nearly spent while U-Boot still prints is cut by the glue's
            # walk, not hung (vfz.hostile.verdict.hang)
            now = time.monotonic()
            given = deadline - (self.sent_at or deadline)
            quiet = now - max(self.sent_at or now, self.heard_at or 0.0)
            raise self._trap(f"no prompt within the time limit ({what}; {given:.1f} s given, "
                             f"{quiet:.1f} s quiet)")
        r, _, _ = select.select([self.proc.stdout], [], [], min(left, 1.0))
        if r:
            chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
            if not chunk:
                raise self._trap(f"QEMU exited ({what})")
            self.buf += chunk
            self.log += chunk
            self.heard_at = time.monotonic()

    def _trap(self, why):
        tail = self.buf[-300:].decode("latin-1")
        self.kill()
        return Trap(f"{why}; console: {tail!r}")

    # ------------------------------------------------------------ commands
    def cmd(self, line, timeout):
        """Run one command (str or bytes); -> (output bytes, exit code).
        Raises Trap when U-Boot crashes, resets or does not answer."""
        return self.cmds([line], timeout)[0]

    def cmds(self, lines, timeout, env=None):
        """Run commands -> [(output bytes, exit code)] in order.

        One round trip for all of them: the commands (each followed by its
        marker echo) become the variable "s", written with env (variables
        the commands use: names) to the transfer disk as `env import -t`
        text, and the typed line is `virtio read ...; env import ... && run
        s`. A line holding "@@M" prints its marker itself ("@@M RC" stands
        for the marker echo with exit code RC: glue verdicts in if/then/else);
        other lines get "; <marker> $?". A command the shell refused ("syntax error" after a variable's
        expansion) or that never ran has exit code -1. A script never holds
        both a "${" and a \' (see word()): such commands go in two scripts."""
        lines = [x.encode("latin-1") if isinstance(x, str) else x for x in lines]
        deadline = time.monotonic() + timeout
        res = []
        i = 0
        while i < len(lines):
            self.seq += 1
            group = [(self.seq, b'echo "@@V""FZ%d" 0' % self.seq)]    # start marker
            size = 0
            while i < len(lines):
                mark = b'echo "@@V""FZ%d"' % (self.seq + 1)
                part = lines[i].replace(b"@@M", mark) if b"@@M" in lines[i] \
                    else lines[i] + b"; " + mark + b" $?"
                mixed = any(b"${" in p for _, p in group) and b"\\'" in part or \
                    any(b"\\'" in p for _, p in group) and b"${" in part
                if len(group) > 1 and (size + len(part) > SCRIPT_MAX or mixed):
                    break
                self.seq += 1
                group.append((self.seq, part))
                size += len(part) + 2
                i += 1
            res += self._script(group, env or {}, deadline)[1:]
            env = None
        return res

    def _script(self, group, env, deadline):
        """env None: the group is typed on the console (boot: no transfer yet)."""
        if env is None:
            self.buf = b""
            self.sent_at = time.monotonic()
            self._send(b"; ".join(p for _, p in group) + b"\n")
        else:
            env = dict(env)
            env["s"] = b"; ".join(p for _, p in group)
            text = b"".join(b"%s=%s\n" % (k.encode(), v.replace(b"\\", b"\\\\"))
                            for k, v in env.items()) + b"\0"
            if len(text) > ENV_BLOCKS * 512:
                raise ValueError("script does not fit the transfer area")
            if self.record is not None:
                self.record.append(("script", text, group[-1][0]))
            _, xfer = self._paths()
            with open(xfer, "r+b") as f:
                f.write(text)
            self.buf = b""
            self.sent_at = time.monotonic()
            if len(text) <= 8 * 512:
                self._send(b"run g\n")      # fewer bytes through the UART
            else:
                self._send(b"virtio read %#x 0 %#x && env import -t %#x %#x && run s\n"
                           % (ENV_ADDR, (len(text) + 511) // 512, ENV_ADDR, len(text)))
        last = group[-1][0]
        what = group[-1][1][:60].decode("latin-1")
        while True:
            marks = [m for m in MARK.finditer(self.buf)]
            if marks and int(marks[-1].group(1)) == last or self.buf.endswith(b"\n=> "):
                break
            t = TRAP.search(self.buf)
            if t:
                # wait a moment for the rest of the dump, then give up on it
                end = time.monotonic() + 0.3
                while time.monotonic() < end and self.proc.poll() is None:
                    r, _, _ = select.select([self.proc.stdout], [], [], 0.1)
                    if r:
                        c = os.read(self.proc.stdout.fileno(), 1 << 16)
                        if not c:
                            break
                        self.buf += c
                raise self._trap(f"U-Boot printed {t.group(1).decode()!r}")
            if self.buf.endswith(b"\n> "):
                raise self._trap("the shell waits for more input (quoting)")
            self._read_some(deadline, what)
        while not self.buf.endswith(b"\n=> "):    # the prompt: the next line is not early
            self._read_some(deadline, "prompt")
        by_n = {int(m.group(1)): m for m in marks}
        if group[0][0] not in by_n:
            raise self._trap(f"the script did not start: {self.buf[-300:]!r}")
        out = []
        pos = 0
        for n, _ in group:
            m = by_n.get(n)
            if m is None:
                out.append((b"", -1))
                continue
            text = self.buf[pos:m.start()].replace(b"\r\n", b"\n")
            rc = int(m.group(2))
            if b"syntax error" in text:
                rc = -1
            out.append((text, rc))
            pos = m.end()
        return out

    # ------------------------------------------------------------ disks
    def trace_log(self):
        return os.path.join(self.tmp, "blk.log")

    def trace_since(self, mark, op):
        """The guest's accesses to virtio 0 since log size mark (vfz.iobounds)."""
        return iobounds.qemu_trace(self.trace_log(), "slot.img", mark, op)

    def load(self, image):
        """Put image's bytes on virtio 0 (swap in place, or boot for a new size)."""
        size = os.path.getsize(image)
        if size < 512 or size % 512:
            raise ValueError(f"image size {size} is not a positive multiple of 512")
        self.resume()
        if not self.alive() or self.size != size:
            self.boot(size)
        else:
            self.swaps += 1
        slot, _ = self._paths()
        with open(image, "rb") as src, open(slot, "r+b") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
        self.trace_mark = iobounds.qemu_log_size(self.trace_log()) if self.iotrace else 0

    def rescan(self, timeout=10.0):
        self.cmd("virtio scan", timeout)

    def save(self, image):
        """Copy virtio 0 back over image."""
        slot, _ = self._paths()
        with open(slot, "rb") as src, open(image, "r+b") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)

    def put_file(self, data):
        """data to the transfer disk's data area (put_cmd loads it to DATA_ADDR)."""
        if len(data) > DATA_MAX - DATA_ADDR:
            raise ValueError("contents larger than the RAM window")
        if self.record is not None:
            self.record.append(("data", bytes(data)))
        _, xfer = self._paths()
        with open(xfer, "r+b") as f:
            f.seek(ENV_BLOCKS * 512)
            f.write(data)

    def put_cmd(self, length):
        return b"virtio read %#x %#x %#x" % (DATA_ADDR, ENV_BLOCKS, max(1, (length + 511) // 512))

    def put_data(self, data, timeout):
        """data at DATA_ADDR, through the transfer disk."""
        if len(data) > DATA_MAX - DATA_ADDR:
            raise ValueError("contents larger than the RAM window")
        if not data:
            return
        self.put_file(data)
        blocks = (len(data) + 511) // 512
        out, rc = self.cmd(b"virtio read %#x %#x %#x" % (DATA_ADDR, ENV_BLOCKS, blocks),
                           timeout)
        if rc:
            raise Trap(f"virtio read failed: {out[-200:]!r}")

    def get_cmd(self, offset, length):
        """The command that copies length bytes of RAM at DATA_ADDR + offset
        (a multiple of 512) to the transfer disk (read_xfer then reads them)."""
        return b"virtio write %#x %#x %#x" % (DATA_ADDR + offset, ENV_BLOCKS + offset // 512,
                                              max(1, (length + 511) // 512))

    def read_xfer(self, offset, length):
        _, xfer = self._paths()
        with open(xfer, "rb") as f:
            f.seek(ENV_BLOCKS * 512 + offset)
            return f.read(length)

    def get_data(self, offset, length, timeout):
        """length bytes of RAM at DATA_ADDR + offset, through the transfer disk."""
        if not length:
            return b""
        out, rc = self.cmd(self.get_cmd(offset, length), timeout)
        if rc:
            raise Trap(f"virtio write failed: {out[-200:]!r}")
        return self.read_xfer(offset, length)


class Boards:
    """Boards by image size (each QEMU's slot has one size): a campaign
    cycles FAT12, FAT16 and FAT32 volumes of three sizes, and a swap costs
    ~0.01 s where a boot costs seconds. At most MAX_BOARDS, the least
    recently used one killed; idle boards are SIGSTOPped (no CPU). The
    hostile campaign's seeds come in a dozen sizes (canary images add two
    clusters): its oracles keep more (hostile_cfg boards=), and a swap
    instead of a boot is most of its U-Boot pace."""
    MAX_BOARDS = 3

    def __init__(self, board=None, iotrace=False, max_boards=None):
        self.fixed = board            # one given board (tests): always that one
        self.by_size = {}
        self.iotrace = iotrace
        self.max_boards = max_boards or self.MAX_BOARDS
        _SETS.add(self)

    def get(self, image):
        if self.fixed is not None:
            return self.fixed
        size = os.path.getsize(image)
        b = self.by_size.pop(size, None)
        if b is None:
            b = Board(iotrace=self.iotrace)
            if len(self.by_size) >= self.max_boards:
                old = next(iter(self.by_size))
                self.by_size.pop(old).kill()
        self.by_size[size] = b        # most recent last
        return b

    def boots(self):
        return sum(b.boots for b in ([self.fixed] if self.fixed else self.by_size.values()))

    def kill(self):
        for b in [self.fixed] if self.fixed else list(self.by_size.values()):
            b.kill()
        self.by_size = {}
