"""The vvfat reader's guest: a kernel-oracle VM of its own with a QMP socket, and one fresh `fat:rw:` disk hot-plugged per script.

vvfat's directory is fixed when its block node opens, so every script
needs a fresh node. Measured on this build (TCG, load ~5): a boot to the
agent's hello takes 8 s, a hot-plug of a vvfat node on a virtio-blk-pci
device (QMP blockdev-add + device_add) 0.02 s, the guest's probe of it
until /dev/vda1 exists 0.3-1.3 s, its unplug (device_del, acknowledged by
the guest through ACPI: the DEVICE_DELETED event) 0.2-0.8 s. So the VM is
booted once and kept (its own pool entry, never shared with the kernel
oracles' VMs), and each script gets a drive.

virtio_blk is one of the guest's boot modules (vfz/oracles/kernel/build.sh:
the I/O-bounds trace's drive needs it too), so the hot-plugged disk is
probed as it arrives; the module set of a VM is its writer's fat, vfat
(the stock ones, or the seed patch's from build/kernel-nodual/{v1,v3} as
kernel-nodual and kernel-nodual-v3 load them), loaded by the agent's M
request at the first script after each boot (vfz.oracles.kernel.vm.VM.
pipeline's module switch). The pool keeps one VM per module set.

When the directory is final: vvfat keeps the guest's writes in a
temporary qcow overlay and replays them onto the host directory from its
write path (vvfat_write ends with try_commit: when the FAT and directories
it sees are consistent, do_commit renames, creates, writes and deletes the
host files). Every guest write has completed when the agent's unmount
(which syncs) answers; the drive is then unplugged and its node deleted
(blockdev-del closes vvfat), so nothing of it can still run when the
host directory is read.
"""
import atexit
import json
import os
import shutil
import socket
import tempfile
import threading
import time

from vfz import lifeline
from vfz.oracles.kernel.guest import ensure_build
from vfz.oracles.kernel.vm import VM, VMError

_POOL = {}
_POOL_LOCK = threading.Lock()


class QMP:
    """A QMP client on QEMU's Unix socket: commands answered in order,
    events kept for wait_event."""

    def __init__(self, path, timeout=20.0):
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                self.sock.connect(path)
                break
            except OSError:
                self.sock.close()
                if time.monotonic() > deadline:
                    raise VMError(f"QMP socket {path}: no QEMU")
                time.sleep(0.05)
        self.buf = b""
        self.events = []
        self._line(timeout)                    # the greeting
        self.cmd("qmp_capabilities")

    def _line(self, timeout):
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise VMError("QMP: timeout")
            self.sock.settimeout(left)
            try:
                d = self.sock.recv(65536)
            except OSError as e:
                raise VMError(f"QMP: {e}")
            if not d:
                raise VMError("QMP: QEMU closed the socket")
            self.buf += d
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def cmd(self, name, timeout=20.0, **args):
        msg = {"execute": name}
        if args:
            msg["arguments"] = args
        self.sock.sendall(json.dumps(msg).encode() + b"\n")
        while True:
            r = self._line(timeout)
            if "event" in r:
                self.events.append(r)
                continue
            if "error" in r:
                raise VMError(f"QMP {name}: {r['error'].get('desc', r['error'])}")
            return r.get("return")

    def wait_event(self, event, device, timeout):
        """Until EVENT with data.device == device has come."""
        deadline = time.monotonic() + timeout
        while True:
            for i, e in enumerate(self.events):
                if e.get("event") == event and e.get("data", {}).get("device") == device:
                    del self.events[:i + 1]
                    return
            self.events.append(self._line(max(0.0, deadline - time.monotonic())))

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


class VvfatGuest:
    """One VM (booted once, kept) whose drives are vvfat nodes of fresh host
    directories, plugged for one script each (plugged)."""

    def __init__(self, build_dir, mem="512M", boot_timeout=60.0, auto_build=True, modules=None):
        self.build_dir = build_dir
        st = os.path.join(build_dir, "stock")
        # [(name, path)] of fat, vfat: the stock ones unless a writer variant says
        self.module_files = modules or [("fat", os.path.join(st, "fat.ko")),
                                        ("vfat", os.path.join(st, "vfat.ko"))]
        self.auto_build = auto_build
        self.tmp = lifeline.scratch(tempfile.mkdtemp(prefix="vfz-vvfat-vm-"))
        self.qmp_path = os.path.join(self.tmp, "qmp.sock")
        self.vm = VM(build_dir, mem=mem, boot_timeout=boot_timeout,
                     extra_args=["-qmp", f"unix:{self.qmp_path},server=on,wait=off"])
        self.qmp = None
        self.qmp_boot = None       # the vm.boots count the QMP connection belongs to
        self.seq = 0
        self.plug_s = []           # seconds per plug (add + guest probe) and unplug
        self.unplug_s = []

    def modules(self):
        """The module set key and images: this VM's fat, vfat (virtio_blk is a boot module)."""
        from vfz.oracles.kernel.guest import module_set
        return module_set(self.module_files)

    def ensure(self):
        """Boot when needed (vm.lock held by the caller); QMP connected to this boot."""
        err = ensure_build(self.build_dir, self.auto_build)
        if err:
            raise VMError(err)
        if os.path.exists(self.qmp_path) and not self.vm.alive():
            os.unlink(self.qmp_path)
        self.vm.ensure()
        if self.qmp is None or self.qmp_boot != self.vm.boots:
            if self.qmp is not None:
                self.qmp.close()
            self.qmp = QMP(self.qmp_path)
            self.qmp_boot = self.vm.boots

    def plug(self, top, fat_type=16):
        """A vvfat rw node of host directory top on a new virtio disk -> its id."""
        self.seq += 1
        ident = f"vv{self.seq}"
        t0 = time.monotonic()
        self.qmp.cmd("blockdev-add", driver="vvfat", dir=top, rw=True,
                     **{"node-name": ident, "fat-type": fat_type})
        try:
            self.qmp.cmd("device_add", driver="virtio-blk-pci", drive=ident, id="d" + ident)
        except VMError:
            self.qmp.cmd("blockdev-del", **{"node-name": ident})
            raise
        self.plug_s.append(time.monotonic() - t0)
        return ident

    def unplug(self, ident, timeout=30.0):
        """Unplug the disk (the guest acknowledges), then close vvfat's node."""
        t0 = time.monotonic()
        self.qmp.cmd("device_del", id="d" + ident)
        self.qmp.wait_event("DEVICE_DELETED", "d" + ident, timeout)
        self.qmp.cmd("blockdev-del", **{"node-name": ident})
        self.unplug_s.append(time.monotonic() - t0)

    def close(self):
        if self.qmp is not None:
            self.qmp.close()
            self.qmp = None
        self.vm.close()
        shutil.rmtree(self.tmp, ignore_errors=True)
        lifeline.unscratch(self.tmp)


def get_guest(build_dir, mem="512M", boot_timeout=60.0, auto_build=True, modules=None):
    """The pooled vvfat guest of (build, mem, module files): one VM per module set."""
    key = (os.path.abspath(build_dir), mem, tuple(os.path.abspath(p) for _, p in modules or ()))
    with _POOL_LOCK:
        g = _POOL.get(key)
        if g is None:
            g = _POOL[key] = VvfatGuest(build_dir, mem, boot_timeout, auto_build, modules)
        return g


def shutdown_all():
    with _POOL_LOCK:
        gs = list(_POOL.values())
        _POOL.clear()
    for g in gs:
        g.close()


atexit.register(shutdown_all)
