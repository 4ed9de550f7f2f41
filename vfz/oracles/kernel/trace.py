"""The kernel VM's I/O-bounds trace: the image on a drive whose accesses QEMU's block layer logs.

Untraced, the image travels over the channel into the guest's tmpfs and a
loop device is bound to that file: QEMU never sees the filesystem's reads.
Traced (cfg iotrace=True), the request uses the pooled VM's extra drive, a
sparse SLOT_BYTES file in its scratch directory on virtio-blk (serial
vfzimg), on which QEMU logs every request (vfz.iobounds: `-d
trace:blk_co_preadv,... -D blk.log`, the log backend of Debian's qemu 7.2).
The host writes the image into the slot's first bytes itself and sends
B {size, "serial=vfzimg"}: the agent binds a fresh loop device to that range
with a size limit (the same capacity as over the tmpfs file) and direct I/O,
so each block the filesystem reads or writes on the loop device is one
request on the drive at the same offset, and nothing is cached under the
loop device across images. A writer's image is copied back from the slot.
Untraced requests never touch the drive: both kinds share the VM.

Ops: the request's frames go as one pipeline, each labelled with its group
(the mount, the walk, each op of a script, the unmount). QEMU also logs the
agent's answers as they leave the guest (virtio_console_flush_buf, with
their byte counts): the accesses before the answer to frame k has passed
whole are frame k's. The agent answers a frame after the syscalls it made,
and under TCG a guest's write to the port is flushed (and logged) before the
guest goes on, so the order in the log is the guest's -- unless an answer
is larger than the channel's socket buffer: its last pieces may pass after
the next frame's first accesses, which then carry its label. The kernel
writes back at sync: an op's writes land in the unmount, its reads in the op.
"""
import errno
import os
import struct
import time

from vfz import iobounds
from vfz.oracles.kernel.vm import VMError, s

SLOT = "slot.img"
SLOT_BYTES = 4 << 30          # sparse; a larger image is a VMError when traced
SERIAL = "vfzimg"
DEV = "serial=" + SERIAL      # the agent finds the disk by its serial (other drives may come first)


class Drive:
    """The image drive of a VM (VM(drive=Drive())): its QEMU options, the
    image in and out, the log's records by frame."""

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
                "-device", f"virtio-blk-pci,drive=vfzimg,serial={SERIAL}",
                *iobounds.qemu_trace_args(self.log, (iobounds.QEMU_SERIAL_EVENT,))]

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

    def records(self, start, labels, sizes):
        """A Trace of the slot's accesses from log byte start on: frame k's
        (labels[k]) are those before the agent's answer to it (sizes[k]
        bytes on the channel, QEMU's virtio_console_flush_buf lines) was
        passed on whole."""
        t = iobounds.Trace()
        t.ops = {0: "; ".join(dict.fromkeys(labels))}
        ends, tot = [], 0
        for n in sizes:
            tot += n
            ends.append(tot)
        k, passed = 0, 0
        for ev in iobounds.qemu_events(self.log, SLOT, start):
            if ev[0] == "serial":
                passed += max(0, ev[1])
                while k < len(ends) - 1 and ends[k] <= passed:
                    k += 1
            elif labels:
                t.accesses.append(iobounds.qemu_access(ev, labels[k]))
        return t


def copy_extents(src, dst, size):
    """Copy src's data extents below size to the same offsets of dst."""
    fd = src.fileno()
    pos = 0
    while pos < size:
        try:
            d = os.lseek(fd, pos, os.SEEK_DATA)
            h = min(os.lseek(fd, d, os.SEEK_HOLE), size)
        except OSError as e:
            if e.errno == errno.ENXIO:   # only a hole is left
                break
            d, h = pos, size             # no SEEK_DATA here: all of it
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
    """Run one traced request: image into the drive, then the groups'
    frames [(label, frames)] as one pipeline (a frame ("B", ...) is replaced
    by the bind of the image). Returns (replies of all frames in order,
    Trace). save: the drive's bytes back over image after. The VM's lock is
    held throughout (a shared VM takes no other image meanwhile)."""
    deadline = time.monotonic() + timeout
    with vm.lock:
        vm.pipeline([], timeout, modules=modules)      # boot, module switch: before the mark
        drive = vm.drive
        size = drive.load(image)
        frames, labels = [], []
        for label, fs in groups:
            frames += [bind_frame(size) if f[0] == "B" else f for f in fs]
            labels += [label] * len(fs)
        start = drive.mark()
        replies = vm.pipeline(frames, max(1.0, deadline - time.monotonic()))
        bound = [p for (c, _), (_, p) in zip(frames, replies) if c == "B"]
        if bound and bound[0].endswith(b"buffered\n"):
            raise VMError("the traced drive's loop device fell back to buffered I/O: "
                          + bound[0].decode("utf-8", "replace").strip())
        if save:
            drive.save(image, size)
        return replies, drive.records(start, labels, [5 + len(p) for _, p in replies])
