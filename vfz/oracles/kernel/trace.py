"""The kernel VM's I/O-bounds trace: the image on a drive whose accesses QEMU's block layer logs.

Untraced, the image travels over the channel into the guest's tmpfs and a
loop device is bound to that file: QEMU never sees the filesystem's reads.
Traced (cfg iotrace=True, a VM of its own in the pool), the VM has one more
drive, a sparse SLOT_BYTES file in its scratch directory on virtio-blk
(/dev/vda in the guest), and QEMU logs every request on it (vfz.iobounds:
`-d trace:blk_co_preadv,... -D blk.log`, the log backend of Debian's qemu
7.2). The host writes the image into the slot's first bytes itself and
sends B {size, /dev/vda}: the agent binds a fresh loop device to that range
with a size limit (the same capacity as over the tmpfs file) and direct I/O,
so each block the filesystem reads or writes on the loop device is one
request on the drive at the same offset, and nothing is cached under the
loop device across images. A writer's image is copied back from the slot.

Ops: the frames of a request are sent in groups (mount; the walk; each op of
a script; the unmount), one round trip each, and the log's size after each
group's answers splits the log by group: an access is labelled with the group
it happened in. QEMU logs a request before it completes it, and the agent
answers after the syscalls it waited for, so a group's records are in the log
before its answers reach the host. The kernel writes back at sync: a write
lands in the unmount (or in an op that syncs), reads in the op that needed
them.
"""
import os
import struct
import time

from vfz import iobounds
from vfz.oracles.kernel.vm import VMError, s

SLOT = "slot.img"
SLOT_BYTES = 4 << 30          # sparse; larger images are refused (ImageTooLarge)
SERIAL = "vfzimg"
DEV = "serial=" + SERIAL      # the agent finds the disk by its serial (other drives may come first)


class Drive:
    """The image drive of one traced VM (VM(drive=Drive())): its QEMU
    options, the image in and out, the log's records by group."""

    def __init__(self):
        self.tmp = None

    @property
    def slot(self):
        return os.path.join(self.tmp, SLOT)

    @property
    def log(self):
        return os.path.join(self.tmp, "blk.log")

    def qemu_args(self, tmp):
        """Options for a VM whose scratch directory is tmp (called at each boot)."""
        self.tmp = tmp
        with open(self.slot, "wb") as f:
            f.truncate(SLOT_BYTES)
        return ["-drive", f"file={self.slot},format=raw,if=none,id=vfzimg,cache=writeback",
                "-device", f"virtio-blk-pci,drive=vfzimg,serial={SERIAL}", *iobounds.qemu_trace_args(self.log)]

    def load(self, image):
        """The image's bytes into the slot (its data extents; the rest of the
        slot emptied); returns its size."""
        size = os.path.getsize(image)
        if size > SLOT_BYTES:
            raise VMError(f"image of {size} bytes is larger than the traced drive ({SLOT_BYTES})")
        with open(image, "rb") as src, open(self.slot, "r+b") as dst:
            dst.truncate(0)
            dst.truncate(SLOT_BYTES)
            copy_extents(src, dst, size)
        return size

    def save(self, image, size):
        """The slot's first size bytes over image (sparse: holes stay holes)."""
        with open(self.slot, "rb") as src, open(image, "r+b") as dst:
            dst.truncate(0)
            dst.truncate(size)
            copy_extents(src, dst, size)

    def mark(self):
        return iobounds.qemu_log_size(self.log)

    def records(self, spans):
        """A Trace of the slot's accesses, each labelled with the span of
        the log [(label, start, end)] its line lies in."""
        return iobounds.qemu_spans(self.log, SLOT, spans)


def copy_extents(src, dst, size):
    """Copy src's data extents below size to the same offsets of dst."""
    fd = src.fileno()
    pos = 0
    while pos < size:
        try:
            d = os.lseek(fd, pos, os.SEEK_DATA)
            h = min(os.lseek(fd, d, os.SEEK_HOLE), size)
        except OSError:              # ENXIO: only a hole is left
            break
        if d >= size:
            break
        src.seek(d)
        dst.seek(d)
        left = h - d
        while left > 0:
            chunk = src.read(min(left, 1 << 20))
            if not chunk:
                break
            dst.write(chunk)
            left -= len(chunk)
        pos = max(h, d + 1)


def bind_frame(size):
    return ("B", struct.pack("<Q", size) + s(DEV))


def reader_groups(frames, mount_label):
    """A reader's frames ([H,] B, O, L, U, K) in groups: the mount, the
    walk, the unmount."""
    k = next(i for i, f in enumerate(frames) if f[0] == "O") + 1
    return [(mount_label, frames[:k]), ("walk: readdir, statx, open and read every file", frames[k:k + 1]),
            ("umount", frames[k + 1:])]


def writer_groups(frames, mount_label, ops):
    """A writer's frames ([W,] B, O, X per op, [H,] U, K) in groups: the
    mount, each op (its op-script line), the unmount (the write-back)."""
    k = next(i for i, f in enumerate(frames) if f[0] == "O") + 1
    groups = [(mount_label, frames[:k])]
    groups += [(str(op), [f]) for op, f in zip(ops, frames[k:k + len(ops)])]
    return groups + [("umount: sync, the write-back", frames[k + len(ops):])]


def pipeline(vm, image, groups, timeout, modules=None, save=False):
    """Run one traced request: image into the drive, then each group
    [(label, frames)] as one pipeline (a frame ("B", ...) is replaced by
    the bind of the image). Returns (replies of all frames in order, Trace).
    save: the drive's bytes back over image after the last group. The VM's
    lock is held throughout (a shared VM takes no other image between
    groups). A VMError's .partial holds every reply that arrived."""
    deadline = time.monotonic() + timeout
    replies, spans = [], []
    with vm.lock:
        vm.ensure()
        drive = vm.drive
        size = drive.load(image)
        for i, (label, frames) in enumerate(groups):
            frames = [bind_frame(size) if f[0] == "B" else f for f in frames]
            start = drive.mark()
            try:
                got = vm.pipeline(frames, max(1.0, deadline - time.monotonic()),
                                  modules=modules if i == 0 else None)
            except VMError as e:
                e.partial = replies + list(getattr(e, "partial", ()))
                raise
            replies += got
            spans.append((label, start, drive.mark()))
            bound = [p for (c, _), (_, p) in zip(frames, got) if c == "B"]
            if bound and bound[0].endswith(b"buffered\n"):
                raise VMError("the traced drive's loop device fell back to buffered I/O: "
                              + bound[0].decode("utf-8", "replace").strip())
        if save:
            drive.save(image, size)
        return replies, drive.records(spans)
