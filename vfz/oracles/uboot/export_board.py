"""Replay exported U-Boot reproducers (vfz/oracles/uboot/export.py's run.sh) on one
running U-Boot instead of booting one each (tests/test_peer_bugs.py).

A reproducer boots its own qemu-system-i386 with Debian's qemu-x86 U-Boot;
given UBOOT_BOARD=DIR it uses the board running there instead: it copies
its image over DIR/slot.img (QEMU's virtio disk 0) and its transfer bytes
over DIR/xfer.img (virtio disk 1) in place, truncates DIR/console.log,
types its commands into the FIFO DIR/console.in (its first command, as in
a boot of its own, is `blkcache configure 0 0; virtio scan; virtio dev 1`)
and leaves the board running. That is the uboot oracle's way of changing
images (vfz/oracles/uboot.py: the same inode QEMU has open, U-Boot's block
cache off, nothing kept between commands); the script is the very run.sh a
maintainer gets, only its boot is skipped.

    board = Board()
    status, printed = board.run(dirname, workdir, timeout=300.0, env=None)
    board.boots, board.runs
    board.close()

The board holds the FIFO open for reading and writing itself (QEMU's
stdin), so no reproducer's exit is an end of input to U-Boot, and QEMU's
console log is opened for appending, so a reproducer may truncate it. A
virtio disk's size is fixed when QEMU starts: a reproducer whose image has
another size than the running board's, or a board that died or whose
reproducer timed out, gets a fresh boot. Between reproducers QEMU is
stopped (SIGSTOP; run.sh sends SIGCONT once its image is in place and
SIGSTOP when it has done with U-Boot): U-Boot at its prompt polls the
serial line, which keeps a host CPU busy under TCG. Reproducers that boot a U-Boot of
their own whatever UBOOT_BOARD says (the hostile ones, hostile_body: a hang or a
trap ends the board) are run as they are by the caller, not here.
"""
import lzma
import os
import shutil
import signal
import subprocess
import tempfile
import time

from vfz import lifeline, proc
from vfz.oracles.uboot import export as export_uboot

QEMU = "qemu-system-i386"
XFER_BYTES = 1 << 20          # run.sh's transfer disk
BOOT_S = 120.0


class BoardError(Exception):
    """The shared board did not come up; str() says why."""


def image_size(dirname):
    with open(os.path.join(dirname, "image.img.xz"), "rb") as f:
        return len(lzma.decompress(f.read()))


class Board:
    def __init__(self):
        self.dir = None
        self.proc = None
        self.fd = None
        self.log = None
        self.size = None
        self.boots = 0
        self.runs = 0

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def _wait(self, text, start, deadline):
        path = os.path.join(self.dir, "console.log")
        while time.monotonic() < deadline:
            with open(path, "rb") as f:
                f.seek(start)
                if text in f.read():
                    return True
            if not self.alive():
                return False
            time.sleep(0.05)
        return False

    def boot(self, size):
        self.close()
        rom = os.environ.get("UBOOT_ROM") or export_uboot.ROM      # as run.sh takes it
        if not os.path.exists(rom):
            raise BoardError(f"{rom} is missing (Debian package u-boot-qemu)")
        if not shutil.which(QEMU):
            raise BoardError(f"{QEMU} not found (Debian package qemu-system-x86)")
        self.dir = tempfile.mkdtemp(prefix="vfz-uboot-board-")
        slot, xfer = os.path.join(self.dir, "slot.img"), os.path.join(self.dir, "xfer.img")
        for p, n in ((slot, size), (xfer, XFER_BYTES)):
            with open(p, "wb") as f:
                f.truncate(n)
        fifo = os.path.join(self.dir, "console.in")
        os.mkfifo(fifo)
        self.fd = os.open(fifo, os.O_RDWR)
        self.log = open(os.path.join(self.dir, "console.log"), "ab")
        self.proc = lifeline.Popen(
            [QEMU, "-bios", rom, "-display", "none", "-serial", "stdio", "-monitor", "none",
             "-nic", "none", "-vga", "none", "-m", "512", "-no-reboot",
             "-drive", f"file={slot},format=raw,if=virtio", "-drive", f"file={xfer},format=raw,if=virtio"],
            stdin=self.fd, stdout=self.log, stderr=subprocess.STDOUT)
        with open(os.path.join(self.dir, "qemu.pid"), "w") as f:
            f.write(f"{self.proc.pid}\n")
        self.size = size
        self.boots += 1
        deadline = time.monotonic() + BOOT_S
        if not self._wait(b"Hit any key", 0, deadline):
            why = self.tail()
            self.close()
            raise BoardError(f"U-Boot did not start: {why}")
        mark = os.path.getsize(os.path.join(self.dir, "console.log"))
        os.write(self.fd, b" ")
        if not self._wait(b"=> ", mark, deadline):
            why = self.tail()
            self.close()
            raise BoardError(f"U-Boot gave no prompt: {why}")
        self.pause()

    def tail(self):
        try:
            with open(os.path.join(self.dir, "console.log"), "rb") as f:
                return f.read()[-300:].decode("latin-1").replace("\r", "").strip()
        except (OSError, TypeError):
            return ""

    def run(self, dirname, workdir, timeout=300.0, env=None):
        """-> (status, printed): DIRNAME/run.sh run on this board (booted or
        rebooted as needed) with work directory WORKDIR; status 0
        REPRODUCED, 1 NOT REPRODUCED, 2 CANNOT RUN."""
        size = image_size(dirname)
        if not self.alive() or size != self.size:
            try:
                self.boot(size)
            except (BoardError, OSError) as e:
                return 2, f"CANNOT RUN: the shared U-Boot board: {e}\n"
        env = dict(os.environ if env is None else env, UBOOT_BOARD=self.dir)
        self.runs += 1
        # proc.run: a timeout kills run.sh's whole process group
        r = proc.run(["sh", os.path.join(dirname, "run.sh"), workdir], timeout=timeout, env=env)
        if r.timed_out:
            self.close()            # in whatever state the script left it
            return 2, r.text + f"\nCANNOT RUN: timeout after {timeout}s on the shared board\n"
        if r.rc is None:
            return 2, f"CANNOT RUN: {r.error}\n"
        self.pause()                # run.sh stops it when done; not if it ended early
        return r.rc, (r.out + r.err).decode("utf-8", "replace")

    def pause(self):
        """SIGSTOP QEMU: U-Boot waiting at its prompt keeps a host CPU busy
        (TCG runs its polling loop); run.sh sends SIGCONT once its image is
        in place, and SIGSTOP when U-Boot's part is done."""
        if self.alive():
            os.kill(self.proc.pid, signal.SIGSTOP)

    def close(self):
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()            # SIGKILL ends a stopped process too
            self.proc.wait()
            self.proc = None
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        if self.log is not None:
            self.log.close()
            self.log = None
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None
        self.size = None
