"""U-Boot 2023.01 (Debian's u-boot-qemu, the 32-bit qemu-x86 build) as a
reader and as a writer: `uboot`.

U-Boot is the boot loader of most ARM boards; its FAT code (fs/fat) is
what such a board makes of a volume a host wrote.

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

Reader: `fatls virtio 0:0 "${p}"` from the root down (fs_ls_generic's
lines: " %8lld   NAME" for a file, 12 blanks + "NAME/" for a directory,
"./" and "../" skipped), then each file is loaded (`fatload`, to RAM
packed at 512-byte boundaries) and the loaded region written to the
transfer disk in one `virtio write`; the host hashes the bytes (sha256),
so entries carry the full canonical keys (path, type, size, sha256).
The transfer is raw block I/O, not U-Boot's FAT code: what is hashed is
exactly what fatload put in RAM. Each file entry also carries "read":
the byte count fatload reported. An entry whose name U-Boot's shell
cannot be given (its U-Boot form holds '\\', a separator to U-Boot, or
0xFF, the end of input to hush) is listed with "unread":
"uboot-unaddressable" and no sha256 (a directory: not listed), with no
complaint; UbootReader.explain names such a divergence. A failed fatls
or fatload of any other entry is a complaint. Names: U-Boot builds a long name from
the low byte of each UTF-16 unit (fs/fat/fat.c slot2str), stopping a
slot at a unit whose low byte is 0; the reader decodes those bytes as
Latin-1 (one character per byte, lossless), so names in U+0000..U+00FF
come back right and others as the bytes U-Boot holds (named exception
uboot-lfn-low-byte, recognised by UbootReader.name_exception computing
exactly that transformation). A name that comes out empty (first unit
U+xx00) is listed as "DIR/" with "unread": "uboot-unaddressable" and is
neither walked into nor loaded: "DIR/" names DIR itself, and walking it
was a walk without end (campaign seed 9101). A bare 8.3 name comes back as its raw OEM
bytes (lower-cased by the NT case bits with U-Boot's Latin-1 ctype):
exception uboot-83-oem-bytes.

Writer: see UbootWriter.
"""
import hashlib
import os
import re
import select
import shutil
import signal
import subprocess
import tempfile
import threading
import time

from vfz.oracles import Entry, NamedException, Reader, Writer, ReadResult, WriteResult, Timer
from vfz import iobounds, lifeline, listing, opscript
from vfz.model.names import _cp437_upper, walked

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


class Trap(Exception):
    """U-Boot crashed, reset or stopped answering; the board is gone."""


class Board:
    """One QEMU running U-Boot, booted on first use; see the module doc."""

    def __init__(self, mem_mb=MEM_MB, iotrace=False):
        self.mem_mb = mem_mb
        self.iotrace = iotrace    # QEMU logs the block layer's accesses (vfz.iobounds)
        self.trace_mark = 0
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
        self.buf = b""
        deadline = time.monotonic() + BOOT_TIMEOUT
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
            extra = sorted((b for b in _IDLE if b is not self and b.paused),
                           key=lambda b: b.idle_since)[:max(0, len(_IDLE) - MAX_IDLE)]
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
            raise self._trap(f"no prompt within the time limit ({what})")
        r, _, _ = select.select([self.proc.stdout], [], [], min(left, 1.0))
        if r:
            chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
            if not chunk:
                raise self._trap(f"QEMU exited ({what})")
            self.buf += chunk
            self.log += chunk

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
            self._send(b"; ".join(p for _, p in group) + b"\n")
        else:
            env = dict(env)
            env["s"] = b"; ".join(p for _, p in group)
            text = b"".join(b"%s=%s\n" % (k.encode(), v.replace(b"\\", b"\\\\"))
                            for k, v in env.items()) + b"\0"
            if len(text) > ENV_BLOCKS * 512:
                raise ValueError("script does not fit the transfer area")
            _, xfer = self._paths()
            with open(xfer, "r+b") as f:
                f.write(text)
            self.buf = b""
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

    def trace_log(self):
        return os.path.join(self.tmp, "blk.log")

    def trace_since(self, mark, op):
        """The guest's accesses to virtio 0 since log size mark (vfz.iobounds)."""
        return iobounds.qemu_trace(self.trace_log(), "slot.img", mark, op)

    # ------------------------------------------------------------ disks
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
        _, xfer = self._paths()
        with open(xfer, "r+b") as f:
            f.seek(ENV_BLOCKS * 512)
            f.write(data)
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
    recently used one killed; idle boards are SIGSTOPped (no CPU)."""
    MAX_BOARDS = 3

    def __init__(self, board=None, iotrace=False):
        self.fixed = board            # one given board (tests): always that one
        self.by_size = {}
        self.iotrace = iotrace

    def get(self, image):
        if self.fixed is not None:
            return self.fixed
        size = os.path.getsize(image)
        b = self.by_size.pop(size, None)
        if b is None:
            b = Board(iotrace=self.iotrace)
            if len(self.by_size) >= self.MAX_BOARDS:
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


# ---------------------------------------------------------------- names on the command line
class Unnameable(Exception):
    """A path U-Boot's shell cannot be given (see word())."""


def word(path, var):
    """The shell word that hands path (bytes) to a command, and the env
    values it needs: -> (word, {name: value}).

    Measured on this build's hush: a byte >= 0x80 typed on the line is a
    "syntax error", but one inside "${var}" (imported with env import)
    reaches the command intact, and so do '"', '$', ';' and blanks; a "'"
    inside a variable's value, or a \' next to a "${var}", is a syntax
    error (the line is parsed again after the expansion), while 'literal'
    and \' work on a line without variables. So: a path without "'" goes
    in one variable (printable ASCII under 160 bytes literally, in '...'); a path with "'" must be printable ASCII and goes
    literally; anything else (a "'" with other bytes, CR/LF/NUL, a line
    too long) is Unnameable."""
    if any(b in (0, 10, 13) for b in path):
        raise Unnameable("a CR, LF or NUL byte")
    if 0xFF in path:
        raise Unnameable("a byte 0xFF (hush reads it as the end of input: syntax error)")
    if any(b < 0x20 for b in path):
        # measured: a name with 0x0B and 0x1E (the low bytes of astral
        # characters) did not reach fatload intact
        raise Unnameable("a control byte (does not reach the command intact)")
    if b"\\" in path:
        raise Unnameable("a '\\' (U-Boot splits paths at it, ISDIRDELIM)")
    printable = all(0x20 <= b < 0x7f for b in path)
    if printable and b"'" not in path and len(path) < 160:
        return b"'%s'" % path, {}
    if b"'" not in path:
        return b'"${%s}"' % var.encode(), {var: path}
    if any(b < 0x20 or b >= 0x7f for b in path):
        raise Unnameable("a quote with bytes the shell cannot take")
    if len(path) > 400:
        raise Unnameable("a quote in a path too long for one command line")
    return b"\\'".join(b"'%s'" % run if run else b"" for run in path.split(b"'")), {}


def uboot_norm(leaf):
    """The leaf U-Boot's writer works on (fs/fat/fat_write.c split_filename:
    leading blanks and trailing dots and blanks dropped, "." and ".." kept;
    "FAT spec v1.03 requires leading and trailing spaces as well as trailing
    periods to be ignored"). fatwrite, fatmkdir and fatrm look the leaf up
    and store it in this form; the components before it are matched as
    given (fat_itr_resolve)."""
    s = leaf.lstrip(" ")
    if s in (".", ".."):
        return s
    return s.rstrip(" .")


def norm_path(path):
    par, _, leaf = path.rstrip("/").rpartition("/")
    return par + "/" + uboot_norm(leaf)


def enc(path):
    """A canonical path (str) as the bytes U-Boot compares with its names
    (one byte per character: Latin-1); Unnameable beyond U+00FF."""
    try:
        b = path.encode("latin-1")
    except UnicodeEncodeError:
        raise Unnameable("a character beyond U+00FF (U-Boot holds one byte per UTF-16 unit)")
    if 0xFF in b:
        raise Unnameable("a U+00FF (byte 0xFF: hush reads it as the end of input)")
    return b


def _enc_or_root(path):
    try:
        return enc(path)
    except Unnameable:
        return b"/"


class Session:
    """Commands on one loaded image, with paths handed over as words."""

    def __init__(self, board, deadline):
        self.board = board
        self.deadline = deadline
        self.env = {}                 # variables the next runs() imports
        self.nvar = 0

    def left(self):
        t = self.deadline - time.monotonic()
        if t <= 0:
            raise self.board._trap("the image's time limit ran out")
        return t

    def words(self, paths):
        """-> one shell word per path (bytes), or the Unnameable for it;
        the variables all of them need are imported in one go."""
        out, env = [], {}
        for p in paths:
            # names unique in the session: a word built for one script may
            # run in the next (a write's fatwrite), whose import adds others
            self.nvar += 1
            try:
                w, e = word(p, f"p{self.nvar}")
                out.append(w)
                env.update(e)
            except Unnameable as x:
                out.append(x)
        self.env.update(env)
        return out

    def run(self, line):
        return self.runs([line])[0]

    def runs(self, lines):
        """Commands in one round trip, with the names words() prepared."""
        if not lines:
            return []
        env, self.env = self.env, {}
        return self.board.cmds(lines, self.left(), env)


FILE_LINE = re.compile(rb"^ (\s*\d+)   (.*)$")
SUMMARY = re.compile(rb"^(\d+) file\(s\), (\d+) dir\(s\)$")


def parse_ls(out):
    """fatls output -> ([(name bytes, 'file'|'dir', size)], summary counts or None, unparsed lines)."""
    items, bad, summary = [], [], None
    for line in out.split(b"\n"):
        if not line:
            continue
        m = SUMMARY.match(line)
        if m:
            summary = (int(m.group(1)), int(m.group(2)))
            continue
        if line.startswith(b" " * 12) and line.endswith(b"/"):
            name = line[12:-1]
            if name not in (b".", b".."):
                items.append((name, "dir", None))
            continue
        m = FILE_LINE.match(line)
        if m:
            items.append((m.group(2), "file", int(m.group(1))))
            continue
        bad.append(line)
    return items, summary, bad


# ---------------------------------------------------------------- reader
DEV = b"virtio 0:0"
READ_LINE = re.compile(rb"^(\d+) bytes read")


class UbootReader(Reader):
    def __init__(self, name="uboot", board=None, iotrace=False, **cfg):
        self.name = name
        self.boards = Boards(board, iotrace)
        self.board = board

    def available(self):
        return available()

    def read(self, image, timeout=60.0):
        r = ReadResult(self.name)
        if os.path.isfile(image):
            self.board = self.boards.get(image)
        elif self.board is None:
            self.board = Board()
        self.board.log = b""
        with Timer() as t:
            try:
                if not os.path.isfile(image):
                    r.error = f"no such image: {image}"
                else:
                    try:
                        self._read(image, timeout, r)
                    finally:
                        if self.board.iotrace and self.board.tmp:
                            r.extra["iotrace"] = self.board.trace_since(self.board.trace_mark,
                                                                        "U-Boot fatls/fatload")
            except Trap as e:
                r.error = f"trap: {e}"
                r.listing = None
            except Exception as e:  # an oracle never crashes the harness
                self.board.kill()
                r.error = f"uboot reader: {type(e).__name__}: {e}"
                r.listing = None
            self.board.pause()
        r.raw = self.board.log.decode("latin-1")[-20000:]
        r.seconds = t.seconds
        return r

    def _read(self, image, timeout, r):
        deadline = time.monotonic() + timeout
        self.board.load(image)
        s = Session(self.board, deadline)
        scan = [b"virtio scan"]           # re-scan with the first level's listing
        entries, files = [], []
        level = [b""]
        ndirs = 0
        while level:
            ndirs += len(level)
            if ndirs > 4096:
                r.complaints.append("more than 4096 directories (a loop?)")
                break
            words = s.words([d or b"/" for d in level])
            todo, cmds = [], []
            for d, w in zip(level, words):
                if isinstance(w, Unnameable):
                    # not U-Boot's FAT code: its shell cannot be given the name
                    # (exception uboot-unaddressable, UbootReader.explain)
                    for e in entries:
                        if e["path"] == d.decode("latin-1"):
                            e["unread"] = UNADDRESSABLE
                else:
                    todo.append(d)
                    cmds.append(b"fatls %s %s" % (DEV, w))
            nxt = []
            res = s.runs(scan + cmds)[len(scan):]
            scan = []
            for d, (out, rc) in zip(todo, res):
                shown = d.decode("latin-1") or "/"
                if rc != 0:
                    msg = out.decode("latin-1").strip()[-200:]
                    if d == b"":
                        r.error = f"fatls /: {msg} (exit {rc})"
                        return
                    r.complaints.append(f"fatls {shown}: {msg}")
                    continue
                items, summary, bad = parse_ls(out)
                for line in bad:
                    r.complaints.append(f"fatls {shown}: unparsed line {line!r}")
                if summary is None:
                    r.complaints.append(f"fatls {shown}: no summary line")
                elif summary != (sum(k == "file" for _, k, _ in items),
                                 sum(k == "dir" for _, k, _ in items) + (2 if d else 0)):
                    r.complaints.append(f"fatls {shown}: summary {summary} for {len(items)} lines")
                for name, kind, size in items:
                    path = d + b"/" + name
                    if name == b"":
                        # a long name whose first unit's low byte is 0 shows
                        # as "" (uboot-lfn-low-byte): "d/" would name d itself
                        # (a walk without end), so it is neither listed nor read
                        entries.append(listing.entry(path.decode("latin-1"), kind, size=size,
                                                     unread=UNADDRESSABLE, why="an empty name"))
                    elif kind == "dir":
                        entries.append(listing.entry(path.decode("latin-1"), "dir"))
                        nxt.append(path)
                    else:
                        files.append((path, size))
            level = nxt
        entries += self._contents(s, files, r)
        r.listing = sorted(entries, key=lambda e: e["path"])

    def _contents(self, s, files, r):
        out_entries = []
        window = DATA_MAX - DATA_ADDR
        i = 0
        while i < len(files):
            # a batch of files that fits the RAM window
            batch, off = [], 0
            while i < len(files):
                path, size = files[i]
                need = (size + 511) // 512 * 512
                if batch and off + need > window:
                    break
                batch.append((path, size, off))
                off += need
                i += 1
            total = off
            words = s.words([p for p, _, _ in batch])
            loaded, cmds, todo = [], [], []
            for (path, size, off), w in zip(batch, words):
                text = path.decode("latin-1")
                if isinstance(w, Unnameable):
                    out_entries.append(listing.entry(text, "file", size=size, unread=UNADDRESSABLE,
                                                     why=str(w)))
                    continue
                if size > window:
                    r.complaints.append(f"{text}: {size} bytes, more than the RAM window")
                    out_entries.append(listing.entry(text, "file", size=size, unread="too large"))
                    continue
                # at most the listed size: a file never spills into the next slot
                cmds.append(b"fatload %s %#x %s" % (DEV, DATA_ADDR + off, w)
                            + (b" %#x" % size if size else b""))
                todo.append((text, size, off))
            if not cmds:
                continue
            # and the whole window to the transfer disk, in the same round trip
            cmds.append(self.board.get_cmd(0, total))
            res = s.runs(cmds)
            (wout, wrc), res = res[-1], res[:-1]
            if wrc != 0:
                raise Trap(f"virtio write failed: {wout[-200:]!r}")
            for (text, size, off), (out, rc) in zip(todo, res):
                got = None
                for line in out.split(b"\n"):
                    m = READ_LINE.match(line)
                    if m:
                        got = int(m.group(1))
                if rc != 0 or got is None:
                    r.complaints.append(f"fatload {text}: {out.decode('latin-1').strip()[-200:]}")
                    out_entries.append(listing.entry(text, "file", size=size, unread="fatload failed"))
                    continue
                if got != size:
                    r.complaints.append(f"{text}: fatls says {size} bytes, fatload read {got}")
                loaded.append((text, size, off, got))
            if loaded:
                end = max(off + got for _, _, off, got in loaded)
                blob = self.board.read_xfer(0, end)
                for text, size, off, got in loaded:
                    e = listing.entry(text, "file", blob[off:off + got])
                    e["read"] = got
                    out_entries.append(e)
        return out_entries

    def close(self):
        self.boards.kill()
        if self.board is not None:
            self.board.kill()


# ---------------------------------------------------------------- writer
# U-Boot's messages -> errno names. fatmkdir / fatwrite print
# "<parent>: doesn't exist (-N)" with the errno of the failed path walk
# (fat_itr_resolve: -ENOENT, -ENOTDIR), mapped by number; the rest by text.
WALK_ERR = re.compile(rb": doesn't exist \((-\d+)\)")
MESSAGES = (
    (rb": already ex", "EEXIST"),                  # fatmkdir onto any existing name
    # (U-Boot's printf cuts a line at its buffer: "...: doesn't exis")
    (rb"illegal filename", "EINVAL"),              # normalize_longname: < 0x20, <>:"/\|?* or >= 256 bytes
    (rb"directory is not empty", "ENOTEMPTY"),     # fatrm
    (rb"cannot remove root", "EBUSY"),             # fatrm /
    (rb": doesn't ex", "ENOENT"),                  # fatrm (no number printed)
    (rb"no space left|[Nn]o space|Disk full|allocat", "ENOSPC"),
)


PBSIZE = 532     # U-Boot's printf buffer (CONFIG_SYS_PBSIZE): a line of 531 characters at most
CUT_PARENT = PBSIZE - 1 - len(b": doesn't exist (-20)\n")


def uboot_parent(path):
    """The directory U-Boot's split_filename gives for path (bytes): trailing
    slashes dropped, everything before the last run of slashes, or "/"."""
    p = path.rstrip(b"/")
    i = p.rfind(b"/")
    while i > 0 and p[i - 1:i] == b"/":
        i -= 1
    return p[:i] if i > 0 else b"/"


def cut_walk(out, parent):
    """Did U-Boot print "PARENT: doesn't exist (N)" cut by its printf buffer
    before the number (a parent of 510 bytes or more)?"""
    line = (parent + b": doesn't exist (")[:PBSIZE - 1]
    return not WALK_ERR.search(out) and any(x.lstrip(b"\r").startswith(line)
                                            for x in out.split(b"\n"))


def errno_of(out):
    """U-Boot's output of a failed fatmkdir/fatwrite/fatrm -> errno name (EIO
    when no message is recognised; the raw text is kept in WriteResult.raw)."""
    import errno as _errno
    m = WALK_ERR.search(out)
    if m:
        return _errno.errorcode.get(-int(m.group(1)), "EIO")
    for pat, name in MESSAGES:
        if re.search(pat, out):
            return name
    return "EIO"


class UbootWriter(Writer):
    """The op-script onto fatmkdir, fatwrite and fatrm.

    What Linux decides in the VFS the glue decides, asking U-Boot's own
    lookups (`size` finds any entry, as fat_itr_resolve does with both the
    long and the short name, ASCII and Latin-1 case-insensitively; `fatls`
    succeeds on a directory only):
      * a last component "." or "..": the parent walked first (ENOENT,
        ENOTDIR), then mkdir/create EEXIST, unlink EISDIR, rmdir "." EINVAL,
        ".." ENOTEMPTY, write EISDIR (Linux's answers);
      * create of an existing name EEXIST (fatwrite would overwrite it);
      * write to a missing file ENOENT, to a directory EISDIR; unlink of a
        directory EISDIR; rmdir of a file ENOTDIR (fatrm removes both);
      * a '\\' in the path: U-Boot takes it for a separator; a new leaf
        with one EINVAL, other paths ENOENT (Linux's answers);
      * rename: ENOSYS (no FAT rename in U-Boot 2023.01; the Entry does not
        support it, so the campaign does not send it);
      * a path U-Boot's shell cannot be given (a character beyond U+00FF:
        U-Boot keeps one byte per UTF-16 unit; a "'" with non-ASCII bytes;
        CR/LF): EILSEQ, before U-Boot sees it (profile name_err predicts it
        for new names).
    Contents (vfz.opscript.content) go to RAM through the transfer disk.
    write: fatwrite with its OFFSET argument; a gap past the end is written
    as zeros from the old end (fatwrite refuses an offset past the end:
    "Unable to write"); fatwrite sets the file's size to OFFSET + BYTES
    (measured: a 100-byte file after `fatwrite ... 5 a` has 15 bytes; at
    offset 0 it rewrites the file), so a write ending before the old end
    also writes the old tail, loaded with fatload first.
    Errors: errno_of(U-Boot's message), see MESSAGES. U-Boot's printf cuts
    a line at 531 characters, so "PARENT: doesn't exist (N)" loses N for a
    parent of 510 bytes or more: the script then asks `size` and `fatls`
    about the parent right after the op (a file: ENOTDIR, else ENOENT, as
    fat_itr_resolve answers; cut_walk).
    The uboot profile predicts the order of these answers: the glue's
    EILSEQ before any lookup (path_err), U-Boot's check of a new leaf
    before the parent walk (name_first)."""

    def __init__(self, name="uboot", board=None, **cfg):
        self.name = name
        self.boards = Boards(board)
        self.board = board

    def available(self):
        return available()

    def apply(self, image, ops, timeout=60.0):
        w = WriteResult(self.name)
        if os.path.isfile(image):
            self.board = self.boards.get(image)
        elif self.board is None:
            self.board = Board()
        self.board.log = b""
        notes = []
        with Timer() as t:
            try:
                if not os.path.isfile(image):
                    w.error = f"no such image: {image}"
                else:
                    self.board.load(image)
                    s = Session(self.board, time.monotonic() + timeout)
                    w.results, notes = self._apply(s, ops)
                    self.board.save(image)
            except Trap as e:
                w.error = f"trap: {e}"
            except Exception as e:
                self.board.kill()
                w.error = f"uboot writer: {type(e).__name__}: {e}"
            self.board.pause()
        w.raw = "".join(f"# line {o.line}: {o} -> {r}" + (f" [{n}]" if n else "") + "\n"
                        for o, r, n in zip(ops, w.results, notes))
        w.raw += self.board.log.decode("latin-1")[-20000:]
        w.seconds = t.seconds
        return w

    # glue verdicts inside the scripts ("@@M CODE"): codes above any exit code
    CODES = {201: "EEXIST", 202: "EISDIR", 203: "ENOTDIR", 204: "EISDIR", 205: "ENOENT",
             206: "EINVAL", 207: "ENOTEMPTY"}

    @staticmethod
    def _static(op):
        """(result, note) decided without U-Boot, or None."""
        if op.kind == "rename":
            return "ENOSYS", "no FAT rename in U-Boot 2023.01"
        comps = [c for c in op.args[0].split("/") if c]
        last = comps[-1] if comps else ""

        def bad(c):
            return "\\" in c or any(ord(x) < 0x20 for x in c)
        if last in (".", ".."):
            # Linux walks the parent first (ENOENT/ENOTDIR): the script asks
            # U-Boot about a parent other than the root (DOT_CODES)
            if len(comps) > 1:
                if any(bad(c) for c in comps[:-1]):
                    return "ENOENT", "a '\\' or a control byte before the leaf (glue)"
                try:
                    enc("/" + "/".join(comps[:-1]))
                except Unnameable:
                    return "ENOENT", "a parent U-Boot cannot be given: no entry holds it (glue)"
                return None
            return {"mkdir": "EEXIST", "create": "EEXIST", "unlink": "EISDIR", "write": "EISDIR",
                    "rmdir": "EINVAL" if last == "." else "ENOTEMPTY"}[op.kind], "VFS (glue)"
        if not comps:
            return {"mkdir": "EEXIST", "create": "EEXIST", "unlink": "EISDIR", "write": "EISDIR",
                    "rmdir": "EBUSY"}[op.kind], "VFS (glue)"
        if any(bad(c) for c in comps):
            # U-Boot splits paths at '\\' too (ISDIRDELIM): "/caca\\" would write
            # "caca"; a control byte does not reach the command intact. Both are
            # refused in new names by Linux and by U-Boot (normalize_longname),
            # so no entry has one: a new leaf with one EINVAL (U-Boot checks the
            # leaf before it walks the parent), any other path ENOENT; a create
            # with a trailing '/' walks the parent first, as Linux does (below)
            from vfz.model.names import trailing_slash
            if op.kind == "create" and trailing_slash(op.args[0]):
                if any(bad(c) for c in comps[:-1]):
                    return "ENOENT", "a '\\' or a control byte before the leaf (glue)"
                try:
                    word(enc("/" + "/".join(comps[:-1])), "p")
                except Unnameable:
                    # the parent only is sent; no entry has a name U-Boot's
                    # shell cannot be given (the uboot writer cannot make one)
                    return "ENOENT", "a parent U-Boot cannot be given: no entry holds it (glue)"
                return None
            if op.kind in ("mkdir", "create"):
                # U-Boot checks the leaf before it walks the parent
                err = _uboot_name_err(comps[-1])
                if err:
                    return err, "the leaf refused before the walk (glue, U-Boot's order)"
            return "ENOENT", "a '\\' or a control byte before the leaf (glue)"
        try:
            enc(op.args[0])
        except Unnameable as x:
            return "EILSEQ", str(x)
        return None

    def _apply(self, s, ops):
        from vfz.model.names import trailing_slash
        """Runs of ops in one script each: mkdir, create, unlink and rmdir
        decide in the script itself (if size/fatls ...; then @@M CODE; else
        ...); a write needs the file's size first, so its probe ends a
        script and its fatwrite opens the next."""
        n = len(ops)
        res, notes = [None] * n, [""] * n
        head = [b"virtio scan"]          # commands of the next script before its ops
        head_owner = [None]
        cut = {}                         # op -> its parent, probed (see CUT_PARENT)
        data = b""                       # contents for the next script's RAM window
        i = 0
        while i < n or head:
            batch = []
            while i < n:
                st = self._static(ops[i])
                if st:
                    res[i], notes[i] = st
                    i += 1
                    continue
                batch.append(i)
                i += 1
                if ops[batch[-1]].kind == "write":
                    break
            # the probes look the leaf up as fatwrite/fatmkdir/fatrm will:
            # normalised (uboot_norm); the command gets the path as given
            # (a path enc refuses reaches here only for the branches below
            # that send its parent alone: a trailing-'/' create, a "."/"..")
            paths = [_enc_or_root(ops[k].args[0]) for k in batch]
            probes = [_enc_or_root(norm_path(ops[k].args[0])) for k in batch]
            words = s.words(paths + probes)
            words, pwords = words[:len(paths)], words[len(paths):]
            lines, owners = list(head), list(head_owner)
            probe = None
            for k, wd, pw in zip(batch, words, pwords):
                op = ops[k]
                dots = [c for c in op.args[0].split("/") if c]
                if dots[-1] in (".", ".."):
                    # a last component "." or "..": the parent walked first (as
                    # Linux), then Linux's answer for the leaf
                    [pp] = s.words([enc("/" + "/".join(dots[:-1]))])
                    if isinstance(pp, Unnameable):
                        res[k], notes[k] = "ENOENT", "a parent U-Boot cannot be given: no entry holds it"
                        continue
                    code = {"mkdir": 201, "create": 201, "unlink": 202, "write": 202,
                            "rmdir": 206 if dots[-1] == "." else 207}[op.kind]
                    lines.append(b"if fatls %s %s; then @@M %d; else if size %s %s; then @@M 203; "
                                 b"else @@M 205; fi; fi" % (DEV, pp, code, DEV, pp))
                    owners.append(k)
                    continue
                if op.kind == "create" and trailing_slash(op.args[0]):
                    # Linux walks the parent first: ENOENT / ENOTDIR, else EISDIR
                    # (the leaf itself is never sent: it may hold a control byte)
                    par = enc(op.args[0].rstrip("/").rpartition("/")[0] or "/")
                    [pp] = s.words([par])
                    if isinstance(pp, Unnameable):
                        res[k], notes[k] = "EILSEQ", str(pp)
                        continue
                    lines.append(b"if fatls %s %s; then @@M 204; else if size %s %s; then @@M 203; "
                                 b"else @@M 205; fi; fi" % (DEV, pp, DEV, pp))
                    owners.append(k)
                    continue
                if isinstance(pw, Unnameable):
                    wd = pw
                elif uboot_norm([c for c in op.args[0].split("/") if c][-1]) in ("", ".", ".."):
                    if op.kind == "write":
                        # write creates nothing, and no entry has such a name
                        # (Linux: ENOENT); fatwrite would write the leaf U-Boot
                        # makes of it
                        res[k], notes[k] = "ENOENT", "a leaf U-Boot normalises away (glue)"
                        continue
                    # nothing to look up: U-Boot refuses the leaf itself
                    lines.append(b"fatwrite %s %#x %s 0x1" % (DEV, DATA_ADDR, wd)
                                 if op.kind in ("create", "write") else
                                 b"fatmkdir %s %s" % (DEV, wd) if op.kind == "mkdir" else
                                 b"fatrm %s %s" % (DEV, wd))
                    owners.append(k)
                    continue
                if isinstance(wd, Unnameable):
                    res[k], notes[k] = "EILSEQ", str(wd)
                    continue
                if op.kind == "mkdir":
                    lines.append(b"fatmkdir %s %s" % (DEV, wd))
                elif op.kind == "create":
                    size, seed = op.args[1], op.args[2]
                    at = len(data)
                    data += opscript.content(seed, size) + bytes(-size % 512)
                    lines.append(b"if size %s %s; then @@M 201; else fatwrite %s %#x %s %#x; @@M $?; fi"
                                 % (DEV, pw, DEV, DATA_ADDR + at, wd, size))
                elif op.kind == "unlink" and trailing_slash(op.args[0]):
                    lines.append(b"if fatls %s %s; then @@M 202; else if size %s %s; then @@M 203; "
                                 b"else fatrm %s %s; @@M $?; fi; fi" % (DEV, pw, DEV, pw, DEV, wd))
                elif op.kind == "unlink":
                    lines.append(b"if fatls %s %s; then @@M 202; else fatrm %s %s; @@M $?; fi"
                                 % (DEV, pw, DEV, wd))
                elif op.kind == "rmdir":
                    lines.append(b"if size %s %s; then if fatls %s %s; then fatrm %s %s; @@M $?; "
                                 b"else @@M 203; fi; else fatrm %s %s; @@M $?; fi"
                                 % (DEV, pw, DEV, pw, DEV, wd, DEV, wd))
                elif op.kind == "write":
                    probe = (k, wd, pw)
                    lines += [b"size %s %s" % (DEV, pw), b"printenv filesize",
                              b"fatls %s %s" % (DEV, pw)]
                    owners += [None, None]
                else:
                    res[k], notes[k] = "ENOSYS", f"unknown op {op.kind}"
                    continue
                owners.append(k)
                par = uboot_parent(enc(op.args[0]))
                if op.kind != "write" and len(par) >= CUT_PARENT:
                    # U-Boot's "PARENT: doesn't exist (N)" will be cut before N
                    # (ENOENT or ENOTDIR from fat_itr_resolve): ask size and
                    # fatls about the parent right after the op, on the same state
                    [pp] = s.words([par])
                    lines += [b"size %s %s" % (DEV, pp), b"fatls %s %s" % (DEV, pp)]
                    owners += [("size", k), ("ls", k)]
                    cut[k] = par
            if data:
                self.board.put_file(data)
                lines.insert(0, self.board.put_cmd(len(data)))
                owners.insert(0, None)
            head, head_owner, data = [], [], b""
            out = s.runs(lines)
            prc = {k: rc for k, (_, rc) in zip(owners, out) if isinstance(k, tuple)}
            for k, (text, rc) in zip(owners, out):
                if isinstance(k, tuple):
                    continue
                if k is None:
                    if rc and text and b"virtio read" in text:
                        raise Trap(f"virtio read failed: {text[-200:]!r}")
                    continue
                if ops[k].kind == "write" and probe and k == probe[0]:
                    continue
                if rc in self.CODES:
                    res[k], notes[k] = self.CODES[rc], "glue: " + {201: "size: exists",
                                                                   202: "fatls: a directory",
                                                                   203: "fatls: not a directory",
                                                                   204: "a trailing '/'",
                                                                   205: "parent missing",
                                                                   206: "rmdir '.'",
                                                                   207: "rmdir '..'"}[rc]
                elif rc == 0:
                    res[k] = "ok"
                elif k in cut and cut_walk(text, cut[k]):
                    # fat_itr_resolve(parent, TYPE_DIR): -ENOTDIR when the
                    # parent is a file, else -ENOENT
                    isfile = prc.get(("size", k)) == 0 and prc.get(("ls", k)) != 0
                    res[k] = "ENOTDIR" if isfile else "ENOENT"
                    notes[k] = "doesn't exist (cut); parent " + ("a file" if isfile else "missing")
                else:
                    res[k], notes[k] = errno_of(text), text.decode("latin-1").strip()[-200:]
            if probe:
                k, wd, pw = probe
                (o1, rc1), (o2, _), (o3, rc3) = out[-3:]
                act = self._write_action(s, ops[k], wd, pw, rc1, o2, rc3)
                if isinstance(act[0], str):
                    res[k], notes[k] = act
                else:
                    payload, line = act
                    data = payload + bytes(-len(payload) % 512)
                    head, head_owner = [line], [k]
        return [r or "EIO" for r in res], notes

    def _write_action(self, s, op, wd, pw, rc_size, printenv, rc_ls):
        """-> (result, note) when decided, or (contents, fatwrite line) to run
        next (contents at DATA_ADDR)."""
        off, size, seed = op.args[1], op.args[2], op.args[3]
        if rc_size != 0:
            return "ENOENT", "glue: size: missing"
        if rc_ls == 0:
            return "EISDIR", "glue: fatls: a directory"
        from vfz.model.names import trailing_slash
        if trailing_slash(op.args[0]):
            return "ENOTDIR", "glue: a file named with a trailing '/'"
        m = re.search(rb"filesize=([0-9a-fA-F]+)", printenv)
        if not m:
            return "EIO", "size printed no filesize"
        cur = int(m.group(1), 16)
        if size == 0:
            return "ok", "nothing to write"
        data = opscript.content(seed, size)
        if off > cur:
            data, off = bytes(off - cur) + data, cur
        if off + len(data) < cur:
            # fatwrite sets the size to OFFSET + BYTES: keep the old tail
            (out, rc), = s.runs([b"fatload %s %#x %s" % (DEV, DATA_ADDR, pw)])
            if rc != 0:
                return errno_of(out), out.decode("latin-1").strip()[-200:]
            old = s.board.get_data(0, cur, s.left())
            data = data + old[off + len(data):]
        if off == 0:
            return data, b"fatwrite %s %#x %s %#x" % (DEV, DATA_ADDR, wd, len(data))
        return data, b"fatwrite %s %#x %s %#x %#x" % (DEV, DATA_ADDR, wd, len(data), off)

    def close(self):
        self.boards.kill()
        if self.board is not None:
            self.board.kill()


# ---------------------------------------------------------------- names U-Boot shows
def lfn_low_byte_form(leaf):
    """The long name as U-Boot 2023.01 builds it (fs/fat/fat.c slot2str):
    per 13-unit LFN slot, the low byte of each UTF-16 unit up to the first
    unit whose low byte is 0 -- as Latin-1 characters (the reader's
    decoding). 'Über' -> 'Über' (U+00DC's low byte is 0xDC), 'emoji 😀 file'
    -> 'emoji =' (D83D -> '=', DE00 ends the slot)."""
    b = leaf.encode("utf-16-le", "surrogatepass")
    units = [b[i] | b[i + 1] << 8 for i in range(0, len(b), 2)]
    out = []
    for k in range(0, len(units), 13):
        for u in units[k:k + 13]:
            if u & 0xFF == 0:
                break
            out.append(chr(u & 0xFF))
    return "".join(out)


def _latin1_lower(bs):
    # U-Boot's tolower (lib/ctype.c: Latin-1 classes) on raw bytes
    return bytes(c + 32 if 0x41 <= c <= 0x5A or (0xC0 <= c <= 0xDE and c != 0xD7) else c for c in bs)


def raw_83_form(leaf):
    """A bare 8.3 entry as U-Boot shows it (get_name): the stored OEM bytes
    (Linux upper-cases through cp437), each part lower-cased with U-Boot's
    Latin-1 tolower when Linux set its NT lower-case bit (the part has no
    upper-case letter), decoded as Latin-1. None if leaf is not 8.3-able."""
    base, dot, ext = leaf.rpartition(".") if "." in leaf[1:] else (leaf, "", "")
    try:
        parts = []
        for part in (base, ext):
            # upper-cased as Linux does, in the code page: 'ß' stays 'ß' (0xE1), not 'SS'
            raw = "".join(_cp437_upper(c) for c in part).encode("cp437")
            if part and part == part.lower():
                raw = _latin1_lower(raw)
            parts.append(raw)
    except UnicodeEncodeError:
        return None
    return (parts[0] + (b"." + parts[1] if dot else b"")).decode("latin-1")


LFN_LOW_BYTE = "uboot-lfn-low-byte"
RAW_83 = "uboot-83-oem-bytes"
SHELL_BYTES = "uboot-shell-bytes"
ALIAS_LATIN1 = "uboot-alias-latin1"
ZERO_DATE = "uboot-zero-date"
NO_RENAME = "uboot-no-rename"


def _name_exception(expected_leaf, actual_leaf):
    # an empty form is not a name to match: which entry it is, is told from
    # the image (_empty_names)
    if actual_leaf and actual_leaf == lfn_low_byte_form(expected_leaf):
        return LFN_LOW_BYTE
    if actual_leaf == raw_83_form(expected_leaf):
        return RAW_83
    return None


UbootReader.name_exception = staticmethod(_name_exception)

LITERAL_WALK = "uboot-literal-walk"
UNADDRESSABLE = "uboot-unaddressable"
WALK_ENOENT = "uboot-walk-enoent"
FSINFO = "uboot-fsinfo-stale"
ALIAS_DEL = "uboot-alias-del"
ALIAS_DUP = "uboot-alias-dup"


def dup_short_ext(listing_):
    """Pairs of entries of one directory with the same 8.3 bytes whose
    extension has 1 or 2 characters (the core's listing: "short" hex)."""
    seen, out = {}, []
    for e in listing_ or ():
        sh = e.get("short")
        if not sh:
            continue
        key = (e["path"].rpartition("/")[0], sh)
        if key in seen:
            ext = bytes.fromhex(sh)[8:].rstrip(b" ")
            if 1 <= len(ext) <= 2:
                out.append((seen[key], e["path"]))
        else:
            seen[key] = e["path"]
    return out
NAME_FIRST = "uboot-name-check-first"
SKIPPED_05 = "uboot-05-skipped"
COLLIDE = "uboot-lfn-collide"
ALIAS_E5 = "uboot-alias-e5"


def _literal_walk(op):
    """A component before the leaf that U-Boot matches as given where Linux
    (and U-Boot's own leaf rule) would not: leading/trailing blanks or
    trailing dots."""
    comps = [c for c in op.args[0].split("/") if c][:-1]
    return any(c not in (".", "..") and uboot_norm(c) != c for c in comps)


def _result_exception(op, expected, actual):
    # uboot-shell-bytes and uboot-name-check-first are no result exceptions:
    # the profile predicts them (path_err, name_first), so any other answer
    # is a finding
    if expected == "ENOTDIR" and actual == "ENOENT":
        return WALK_ENOENT
    return None


def _known_failure(ev):
    """-> (op index, name) of a known U-Boot failure behind the divergence:
      uboot-literal-walk: the first differing op names a component before
        its leaf with blanks or trailing dots, and U-Boot did not find it
        (ENOENT/ENOTDIR) where the model did, or the reverse;
      uboot-alias-e5 (a bug): an op U-Boot answered ok created a leaf whose
        alias U-Boot starts with byte 0xE5 ('å...'), and the core's listing
        of the image lacks that entry (the slot reads as deleted)."""
    ops, wr = ev.ops, ev.wr
    if wr is None or wr.error:
        return None
    bad = ev.bad
    found = []
    # renames are unsupported (the Entry's supports): cut before the first
    first = next((i for i, op in enumerate(ops) if op.kind == "rename"), None)
    if first is not None and (bad is None or first <= bad):
        found.append((first, NO_RENAME))
    if bad is not None and bad < len(wr.results):
        a = wr.results[bad]
        e = ev.results[bad] if ev.results and bad < len(ev.results) else None
        if _literal_walk(ops[bad]) and {a, e} & {"ENOENT", "ENOTDIR"} and a != e:
            found.append((bad, LITERAL_WALK))
    end = bad if bad is not None else len(ops)
    cand = [i for i, op in enumerate(ops[:end])
            if op.kind in ("create", "mkdir") and i < len(wr.results) and wr.results[i] == "ok"
            and uboot_norm([c for c in op.args[0].split("/") if c][-1]).startswith("\u00e5")]
    if cand and ev.image:
        from vfz.evidence import core_listing
        shown = {e["path"] for e in core_listing(ev.image) or ()}
        for i in cand:
            # the entry made, as the core lists it ('//å' is '/å')
            comps = walked(ops[i].args[0])
            path = "/" + "/".join(comps[:-1] + [uboot_norm(comps[-1])])
            if path not in shown:
                found.append((i, ALIAS_E5))
                break
    # the earliest: the readers check the script cut before it, so a later
    # cut would leave an earlier failure in their image (campaign seed
    # 11102: mkdir //å then a rename was cut at the rename, and the readers
    # filed the 0xE5 alias of /å as six findings)
    return min(found) if found else None


def long_05(listing_):
    """Paths of the entries that have LFN slots and whose short entry starts
    with 0x05 (the FAT stand-in for a first byte 0xE5), from the core's
    listing of the image (its "short" hex and "lfn" count)."""
    return {e["path"] for e in listing_ or ()
            if e.get("lfn") and str(e.get("short", "")).lower().startswith("05")}


def _fold_shown(text):
    return _latin1_lower(text.encode("latin-1", "replace")).decode("latin-1")


def shown_paths(listing_):
    """{path: the path as U-Boot shows it, case folded} for every entry of
    the core's listing of an image: a long name as lfn_low_byte_form makes
    it, a bare 8.3 entry as its OEM bytes (NT case bits, 0x05 read as 0xE5)."""
    own = {}
    for e in listing_ or ():
        path = e["path"]
        leaf = path.rpartition("/")[2]
        sh = e.get("short")
        if e.get("lfn") or not sh:
            own[path] = lfn_low_byte_form(leaf)
            continue
        raw = bytearray(bytes.fromhex(sh))
        if raw[0] == 0x05:
            raw[0] = 0xE5
        base, ext = bytes(raw[:8]).rstrip(b" "), bytes(raw[8:11]).rstrip(b" ")
        nt = e.get("nt") or 0
        base = _latin1_lower(base) if nt & 0x08 else base
        ext = _latin1_lower(ext) if nt & 0x10 else ext
        own[path] = (base + (b"." + ext if ext else b"")).decode("latin-1")
    out = {}
    for path in own:
        comps = path.split("/")[1:]
        out[path] = _fold_shown("".join("/" + own.get("/".join([""] + comps[:i + 1]), c)
                                        for i, c in enumerate(comps)))
    return out


def colliding(shown):
    """The shown (folded) paths two or more entries of one directory share:
    U-Boot's lookup (fat_itr_resolve, strncasecmp) finds the first of them
    only, so the others cannot be opened, listed or loaded by name."""
    count = {}
    for v in shown.values():
        count[v] = count.get(v, 0) + 1
    return {v for v, n in count.items() if n > 1}


def _empty_names(shown_listing, core, add):
    """The entries U-Boot showed with an empty name (uboot-lfn-low-byte: a
    long name whose first unit's low byte is 0, e.g. U+0100 'Ā' or the
    U+F600 mtools writes for '😀'), checked against the image: per directory
    and type, as many as the core's listing has entries whose U-Boot form
    is empty. -> {(shown parent, type): count} to match missing entries
    against ({} when there are none), or None when the counts differ."""
    seen = {}
    for e in shown_listing:
        if e.get("unread") == UNADDRESSABLE and e["path"].endswith("/"):
            key = (_fold_shown(e["path"][:-1]), e["type"])
            seen[key] = seen.get(key, 0) + 1
    if not seen:
        return {}
    m = core()
    want = {}
    for e in m["core"] or ():
        vis = m["shown"].get(e["path"], "")
        if vis.endswith("/") and "//" not in vis:
            key = (vis[:-1], e["type"])
            want[key] = want.get(key, 0) + 1
    if want != seen:
        return None
    add(LFN_LOW_BYTE)
    return dict(seen)


def _reader_explain(ev):
    """Every difference of the reader's listing and every complaint,
    explained from the evidence, or None:
      uboot-05-skipped (a bug): a missing entry is, or lies under, an entry
        with LFN slots whose short entry starts with 0x05 in the image (the
        core's listing): U-Boot's extract_vfat_name takes such an entry for
        a deleted one and skips it;
      uboot-lfn-collide: an entry shown under a name another entry of its
        directory is shown under too (uboot-lfn-low-byte folds distinct
        long names together: '😀' and '😀😀' are both '='; the core's
        listing gives every entry's U-Boot form): a missing, extra or changed
        entry at or under such a name, a failed fatload/fatls of one, a
        size fatload read that is not the size fatls showed for it;
      uboot-lfn-low-byte: entries shown with an empty name, as many per
        directory as the image holds long names whose U-Boot form is empty
        (_empty_names); each explains one missing entry of that directory
        and type, and a directory everything missing under it;
      uboot-unaddressable: a file listed without sha256 that the listing
        marks unread=uboot-unaddressable (a name whose U-Boot form holds
        '\\' or 0xFF: its shell cannot be given it), an entry missing under
        a directory so marked.
    -> the kinds seen (one finding each)."""
    d, r = getattr(ev, "diff", None), getattr(ev, "rr", None)
    if d is None or r is None or r.listing is None or d.ambiguous:
        return None
    marked = [e for e in r.listing if e.get("unread") == UNADDRESSABLE and not e["path"].endswith("/")]
    files = [e for e in marked if e["type"] == "file"]
    dirs = [e for e in marked if e["type"] == "dir"]
    memo = {}

    def core():
        if "core" not in memo:
            from vfz.evidence import core_listing
            memo["core"] = core_listing(ev.image) if ev.image else None
            memo["shown"] = shown_paths(memo["core"])
            memo["collide"] = colliding(memo["shown"])
        return memo

    def collides(path):
        m = core()
        if not m["collide"]:
            return False
        vis = m["shown"].get(path)
        if vis is None:
            # a shown path (U-Boot's form already) or one the comparison
            # mapped to expected names of a colliding group, mixed: a
            # component beyond Latin-1 can only be a long name
            vis = _fold_shown("".join("/" + (lfn_low_byte_form(c) if any(ord(x) > 0xFF for x in c)
                                             else c) for c in path.split("/")[1:]))
        return listing.under(vis, m["collide"])

    kinds = []

    def add(k):
        if k not in kinds:
            kinds.append(k)
    empty = _empty_names(r.listing, core, add)
    if empty is None:
        return None
    for c in r.complaints:
        # "fatload PATH: ...", "fatls PATH: ...", "PATH: fatls says N bytes, fatload read M"
        m = re.match(r"(?:fatload |fatls )?(/.*?): ", str(c))
        if not m or not collides(m.group(1)):
            return None
        add(COLLIDE)
    sha_only = 0
    for a, b in d.changed:
        if collides(a["path"]):
            add(COLLIDE)
        elif "sha256" in b or {k: v for k, v in a.items() if k != "sha256"} != b:
            return None
        else:
            sha_only += 1
            add(UNADDRESSABLE)
    if sha_only > len(files):
        return None
    # shown with an empty name: accounted for by _empty_names (their parent
    # may appear under its expected name here, mapped by a name exception)
    blanks = {}
    for e in d.extra:
        if e["path"].endswith("/"):
            blanks[e["type"]] = blanks.get(e["type"], 0) + 1
    for t, n in blanks.items():
        if n > sum(c for (_, kind), c in empty.items() if kind == t):
            return None
    for e in d.extra:
        if e["path"].endswith("/"):
            continue
        if not collides(e["path"]):
            return None
        add(COLLIDE)
    if d.missing:
        skipped = long_05(core()["core"])
        gone = []                       # missing directories shown with an empty name
        for e in sorted(d.missing, key=lambda e: e["path"]):
            par = e["path"].rpartition("/")[0]
            key = (_fold_shown(core()["shown"].get(par, par)), e["type"])
            if listing.under(e["path"], gone):
                continue
            vis = core()["shown"].get(e["path"])
            # an entry of the image: its own form must be empty; one the
            # writer stored under another name (mtools-astral): by count
            if empty.get(key) and (vis is None or vis.endswith("/")):
                empty[key] -= 1
                if e["type"] == "dir":
                    gone.append(e["path"])
                continue
            if listing.under(e["path"], skipped):
                add(SKIPPED_05)
            elif collides(e["path"]):
                add(COLLIDE)
            elif dirs:
                add(UNADDRESSABLE)
            else:
                return None
    if any(empty.values()):
        return None                     # an empty name shown for nothing missing
    return kinds or None


def _writer_explain(ev):
    """fsck.fat's complaints on an image U-Boot wrote, each kind explained:
      uboot-alias-del: every bad short name holds 0x7F ('Bad short file
        name (\x7f~1)') at a path holding DEL;
      uboot-alias-dup (a bug): fsck.fat finds a duplicate (and maybe other
        lines of that report) and the core's listing shows two equal
        aliases with a 1-2 character extension;
      uboot-fsinfo-stale: the FAT32 FSInfo free count.
    -> the kinds (one finding each), or None when a complaint is left."""
    r = getattr(ev, "rr", None)
    if r is None:
        return None
    cs = [c for c in r.extra.get("complaints", ()) if isinstance(c, dict)]
    kinds = {c.get("kind") for c in cs}
    if not cs or len(cs) != len(r.extra.get("complaints", ())):
        return None
    out = []
    bad = [c for c in cs if c.get("kind") == "bad-short-name"]
    if bad:
        if not all("\x7f" in c.get("message", "") and "\x7f" in str(c.get("path", "")) for c in bad):
            return None
        out.append(ALIAS_DEL)
    if "duplicate" in kinds:
        from vfz.evidence import core_listing
        if not ev.image or not dup_short_ext(core_listing(ev.image)):
            return None
        out.append(ALIAS_DUP)
    if "free-count" in kinds:
        if ev.fat_bits != 32:
            return None
        out.append(FSINFO)
    left = kinds - {"bad-short-name", "duplicate", "free-count"} - \
        ({"other"} if "duplicate" in kinds else set())
    return None if left else (out or None)


UbootReader.explain = staticmethod(_reader_explain)
UbootWriter.explain = staticmethod(_writer_explain)
UbootWriter.result_exception = staticmethod(_result_exception)
UbootWriter.known_failure = staticmethod(_known_failure)


# ---------------------------------------------------------------- model profile
def _uboot_name_err(leaf):
    """A new name (U-Boot's fat_write.c, measured): nothing left after uboot_norm: the
    command fails without an errno ("Unable to write file": EIO, where Linux
    says ENOENT for dots, EINVAL for blanks); normalize_longname refuses "."
    and "..", 256 bytes or more, units below 0x20 and <>:"/\\|?* (EINVAL).
    A trailing blank is not refused (U-Boot drops it; Linux: EINVAL).
    A control character or a '\\' comes first: the glue answers EINVAL for
    it before it encodes the name (UbootWriter._static). The glue's EILSEQ
    for a name it cannot hand over is path_err's, for the whole path and
    before any lookup; under a parent with a control byte or a '\\' the
    glue answers ENOENT instead (no entry holds one), so not here."""
    if any(ord(c) < 0x20 or c == "\\" for c in leaf):
        return "EINVAL"
    n = uboot_norm(leaf)
    if not n:
        return "EIO"
    if n in (".", "..") or len(n) >= 256:
        return "EINVAL"
    if any(ord(c) < 0x20 or c in '<>:"/\\|?*' for c in n):
        return "EINVAL"
    return None


def _fold(leaf):
    return _latin1_lower(uboot_norm(leaf).encode("latin-1", "replace"))


def _uboot_lookup(d, leaf):
    """The entry U-Boot's writer finds for leaf where Linux's rule finds
    none: the normalised leaf (uboot_norm), case folded with U-Boot's
    Latin-1 tolower (strncasecmp): " x" and "x " find "x", "é" finds "É"."""
    key = _fold(leaf)
    for k in d.kids.values():
        if _fold(k.name) == key:
            return k
    return None


def _uboot_path_err(op):
    """EBUSY for unlink/rmdir of a root entry whose name U-Boot normalises
    away ("/...", "/ "). EILSEQ where the glue refuses the path before U-Boot sees it
    (UbootWriter._static, Session.words): a character beyond U+00FF, or a
    path word() cannot build (a "'" with non-ASCII bytes, or in a path over
    400 bytes); whatever the op and whether anything on the path exists.
    Not for the paths the glue answers as Linux first: the root, a last
    component "." or "..", a '\\' or a control character (EINVAL/ENOENT)."""
    comps = [c for c in op.args[0].split("/") if c]
    if op.kind in ("unlink", "rmdir") and len(comps) == 1 and not uboot_norm(comps[0]) \
            and not any(ord(x) < 0x20 or x == "\\" for x in comps[0]):
        # fatrm "/..." or "/ ": split_filename drops the trailing dots and
        # blanks (fatgen103) and leaves the root: "cannot remove root" (EBUSY),
        # where Linux finds no such name (ENOENT)
        return "EBUSY"
    if op.kind == "rename" or not comps or comps[-1] in (".", "..") or \
            any("\\" in c or any(ord(x) < 0x20 for x in c) for c in comps):
        return None
    try:
        word(enc(op.args[0]), "p")
    except Unnameable:
        return "EILSEQ"
    return None


PROFILE = {
    "name_err": _uboot_name_err,
    # the glue's EILSEQ comes before any lookup, and U-Boot checks a new
    # leaf (split_filename, normalize_longname) before it walks the parent
    # (fat_write.c file_fat_write_at, fat_mkdir): exceptions uboot-shell-bytes
    # and uboot-name-check-first, predicted rather than tolerated
    "path_err": _uboot_path_err,
    "name_first": True,
    "lookup": _uboot_lookup,
    "store": uboot_norm,
    # U-Boot gives every name LFN slots and a ~N alias (even "dir" -> DIR~1):
    # the fixed root fills by its own count, not modelled
    "unbounded_root": True,
}


# ---------------------------------------------------------------- registry
ENTRIES = [
    Entry("uboot", "uboot", reader="vfz.oracles.uboot:UbootReader",
          writer="vfz.oracles.uboot:UbootWriter", profile=PROFILE, names="dual", shorts="own",
          supports=frozenset({"mkdir", "create", "write", "unlink", "rmdir", "write-offset"}),
          needs=("u-boot-qemu", "qemu-system-x86"), cost="vm"),
]

EXCEPTIONS = [
    NamedException(LFN_LOW_BYTE, "uboot", "reader",
                   "U-Boot 2023.01 builds a long name from the low byte of each UTF-16 unit "
                   "(fs/fat/fat.c slot2str) and ends a slot at a unit whose low byte is 0: "
                   "names in U+0000-U+00FF come out as their Latin-1 bytes (right), others as "
                   "unrelated bytes ('日本' -> 'åg'), cut at U+xx00 ('emoji 😀 file' -> "
                   "'emoji ='), empty when the first unit is U+xx00 ('Āx': fatls shows a "
                   "blank name, which no command can be given). U-Boot is wrong (LFN slots "
                   "hold UTF-16; it has no code page)",
                   "actual leaf == lfn_low_byte_form(expected leaf), not empty "
                   "(UbootReader.name_exception); an empty name: as many per directory and type "
                   "as the image holds long names whose form is empty, each explaining one "
                   "missing entry whose form is empty and everything under it "
                   "(UbootReader.explain, _empty_names)"),
    NamedException(RAW_83, "uboot", "reader",
                   "U-Boot shows a bare 8.3 entry as its stored OEM bytes, lower-cased by the "
                   "NT case bits with a Latin-1 tolower ('é' stored as cp437 0x90 shows as "
                   "byte 0x90); Linux decodes the code page",
                   "actual leaf == raw_83_form(expected leaf)"),
    NamedException(SHELL_BYTES, "uboot", "writer",
                   "U-Boot's command line holds bytes; its FAT writer turns each byte into one "
                   "UTF-16 unit, so a name with a character beyond U+00FF cannot be written; "
                   "its hush refuses a \"'\" inside an expanded variable. The glue answers "
                   "EILSEQ before U-Boot sees such a name, whatever the op and before any "
                   "lookup, and the uboot profile predicts it",
                   "result EILSEQ, predicted by the profile's path_err (no result exception)"),
    NamedException(NO_RENAME, "uboot", "writer",
                   "U-Boot 2023.01 has no FAT rename: the writer answers ENOSYS and its Entry "
                   "does not support rename, so the campaign sends it no renames",
                   "op kind rename, result ENOSYS"),
    NamedException(ALIAS_LATIN1, "uboot", "writer",
                   "U-Boot's writer builds the 8.3 alias of a Latin-1 name from the raw bytes "
                   "('Über Größe.dat' -> DC 'BERGR~1DAT', 'é' -> E9 '~1'): Latin-1 bytes, lower "
                   "case kept, where the FAT specification wants upper-case OEM (cp437: 9A). "
                   "Long-name readers are unaffected; a DOS reader shows other characters. "
                   "U-Boot is wrong by the specification (not compared: listings hold long names). "
                   "x86 builds only: str2fat compares a plain char, signed on x86 and unsigned on "
                   "ARM; still in a v2026.07 qemu-x86 build (reports/bugs.md)",
                   "short entry bytes >= 0x80 equal to the long name's Latin-1 bytes"),
    NamedException(LITERAL_WALK, "uboot", "writer",
                   "U-Boot matches the directories of a path as given (fat_itr_resolve: "
                   "strncasecmp on the whole component) but drops leading blanks and trailing "
                   "dots and blanks from the leaf it writes (split_filename): '/d./f' finds no "
                   "'d' (Linux ignores trailing dots), '/ d/f' finds no 'd'. By design "
                   "(U-Boot's lookup is literal); the script is cut before the op",
                   "the first differing op has a component before its leaf that uboot_norm "
                   "changes, and one side answered ENOENT/ENOTDIR (UbootWriter.known_failure)"),
    NamedException(NAME_FIRST, "uboot", "writer",
                   "U-Boot checks the new leaf (split_filename, normalize_longname) before it "
                   "walks the parent: a refused name under a missing parent is EINVAL (or EIO "
                   "for a leaf of blanks and dots) where Linux says ENOENT (or ENOTDIR). Both "
                   "refuse; the order differs",
                   "predicted by the profile (name_first: mkdir/create answer name_err(leaf) "
                   "before the parent walk's ENOENT/ENOTDIR; no result exception)"),
    NamedException(ALIAS_E5, "uboot", "writer",
                   "U-Boot 2023.01 builds the 8.3 alias from the raw Latin-1 bytes and does not "
                   "turn a first byte 0xE5 into 0x05: a file named 'åland' gets alias E5 'LAND~1' "
                   "and reads as a deleted entry to every FAT reader (U-Boot's own included); "
                   "fsck.fat -n: 'Orphaned long file name part', its cluster leaks. U-Boot is "
                   "wrong: fatgen103, DIR_Name[0] 0xE5 means free, 0x05 stands for 0xE5",
                   "an op answered ok made a leaf starting with U+00E5 and the core's listing of "
                   "the image lacks it (UbootWriter.known_failure)", bug="uboot-alias-e5"),
    NamedException(SKIPPED_05, "uboot", "reader",
                   "U-Boot skips an entry with a long name whose 8.3 entry starts with 0x05, "
                   "the FAT stand-in for a first byte 0xE5 (fs/fat/fat.c extract_vfat_name: "
                   "'if (dent->nameext.name[0] == DELETED_FLAG || ... == aRING) return NULL'): "
                   "FatFs writes 'σ' (CP437 0xE5) so, as the specification says, and so may a v3 "
                   "dummy. fatls does not list it, fatload cannot find it, nothing under a "
                   "skipped directory is reachable. U-Boot is wrong: fatgen103, DIR_Name[0] "
                   "0x05 means the name starts with 0xE5 (its get_name does turn 0x05 into "
                   "0xE5 for a bare 8.3 entry; commit a2c5a92d486 fixed fat_itr_next alone). "
                   "Present in v2023.01 and in master of 2026-08",
                   "every missing entry is, or lies under, an entry that the core's listing of "
                   "the image shows with LFN slots and a short entry starting 05 "
                   "(UbootReader.explain, long_05)", bug="uboot-05-skipped"),
    NamedException(COLLIDE, "uboot", "reader",
                   "Distinct long names that U-Boot's one byte per UTF-16 unit "
                   "(uboot-lfn-low-byte) shows alike in one directory ('😀' and '😀😀' are both "
                   "'=', 'Ł' and 'a' both 'a' to its case-insensitive lookup): fat_itr_resolve "
                   "finds the first only, so the others cannot be loaded or listed by name. "
                   "U-Boot is wrong (a consequence of uboot-lfn-low-byte)",
                   "every difference and complaint concerns a path that the core's listing of "
                   "the image shows two entries of one directory share in U-Boot's form "
                   "(UbootReader.explain, shown_paths, colliding)"),
    NamedException(UNADDRESSABLE, "uboot", "reader",
                   "A name whose U-Boot form (one byte per UTF-16 unit) holds 0x5C ('한' U+D55C) "
                   "or 0xFF cannot be handed to a command: U-Boot splits paths at '\\' too, and "
                   "its hush reads 0xFF as the end of input. The reader lists such an entry "
                   "(fatls) but cannot load the file or list the directory",
                   "only sha256-less files and entries missing under unlisted directories differ, "
                   "and the listing marks as many entries unread=uboot-unaddressable "
                   "(UbootReader.explain)"),
    NamedException(WALK_ENOENT, "uboot", "writer",
                   "U-Boot's lookup answers ENOENT for a path that goes through a file "
                   "(fat_itr_resolve: 'bad trailing path'), where Linux says ENOTDIR",
                   "expected ENOTDIR, got ENOENT (UbootWriter.result_exception)"),
    NamedException(ALIAS_DEL, "uboot", "writer",
                   "U-Boot copies DEL (0x7F) from a long name into its ~N alias ('\x7f' -> "
                   "7F '~1'), as Linux does into its aliases; fsck.fat 4.2 calls such a short "
                   "name bad and renames it under -a. fatgen103 does not list 0x7F among the "
                   "illegal DIR_Name bytes: fsck.fat is stricter than the specification",
                   "every fsck.fat complaint on the uboot writer's image is a bad short name "
                   "holding 0x7F at a path holding DEL (UbootWriter.explain)"),
    NamedException(ALIAS_DUP, "uboot", "writer",
                   "U-Boot 2023.01 gives two long names the same ~N alias when the extension "
                   "has one or two characters: 'abcdefgh.c' and 'abcdefgx.c' both get "
                   "ABCDEF~1.C, 'ab.tar.gz' and 'ab.x.gz' both AB~1.GZ (with no extension or "
                   "three characters it counts on to ~2). Two equal 8.3 names in one directory: "
                   "fsck.fat 'Duplicate directory entry', renames the second under -a; a "
                   "lookup by the alias finds the first. U-Boot is wrong (fatgen103: short "
                   "names are unique in a directory)",
                   "fsck.fat complains of a duplicate and the core's listing of the image shows "
                   "two entries of one directory with the same 8.3 bytes and a 1-2 character "
                   "extension (UbootWriter.explain, dup_short_ext)", bug="uboot-alias-dup"),
    NamedException(FSINFO, "uboot", "writer",
                   "U-Boot 2023.01 does not update the FAT32 FSInfo free-cluster count when it "
                   "allocates or frees clusters; fsck.fat -n reports 'Free cluster summary "
                   "wrong'. fatgen103 calls the count a hint that may be wrong (0xFFFFFFFF: "
                   "unknown); Linux keeps it right. Harmless by the specification",
                   "fsck.fat's only complaint kind on a FAT32 image of the uboot writer is "
                   "free-count (UbootWriter.explain)"),
    NamedException(ZERO_DATE, "uboot", "writer",
                   "U-Boot 2023.01 (qemu-x86 build) writes creation, access and modification "
                   "dates 0x0000 (1980-00-00: month 0, day 0) on every entry fatwrite/fatmkdir "
                   "make; fatgen103 wants month 1-12 and day 1-31. fsck.fat 4.2 -n does not "
                   "check dates and stays silent; listings do not hold dates. U-Boot is wrong "
                   "by the specification, harmless to every reader here. Fixed upstream in "
                   "v2024.07 (ba23c378c54); a v2026.07 build writes real dates (reports/bugs.md)",
                   "date fields 0x0000 on the entries the uboot writer made"),
]
