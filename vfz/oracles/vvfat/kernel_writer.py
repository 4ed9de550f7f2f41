"""The kernel-vvfat writer: Linux in the vvfat guest runs an op-script on a fresh `fat:rw:` disk; the host directory vvfat wrote back is its image (a tar archive).

Per script: an empty host directory, a vvfat rw node of it plugged into the
guest (guest.py), the agent mounts the disk's partition with the kernel
oracle's options and runs one X request per op (the kernel writer's ops:
vfz.oracles.kernel.encode_op), walks the volume (the guest kernel's own
listing, kept as evidence), unmounts, and the disk is unplugged. The
directory is then archived (archive.py) over the image: the kernel-vvfat
reader (dirreader.py) lists it against the model.

The variants differ in the guest's fat, vfat modules, as the kernel
oracle's do (one pooled VM each): KernelVvfatWriter the stock ones
(kernel-vvfat), KernelVvfatNodualWriter and KernelVvfatNodualV3Writer the
seed patch's v1 and v3 ports (kernel-vvfat-nodual, kernel-vvfat-nodual-v3:
build/kernel-nodual/{v1,v3}, the modules kernel-nodual and kernel-nodual-v3
load), whose nodual_seed is written before each script (cfg seed, default
the kernel oracle's DEFAULT_SEED): the dummies vvfat sees are replayable.
"""
import os
import shutil
import struct
import tempfile

from vfz.oracles import Writer
from vfz.oracles.kernel.answers import _txt, parse_kmsg, parse_listing
from vfz.oracles.kernel.guest import DEFAULT_OPTIONS, DEFAULT_SEED, default_build_dir, default_nodual_dir
from vfz.oracles.kernel.vm import VMError, s
from vfz.oracles.kernel.writer import encode_op
from vfz.oracles.vvfat import archive, exceptions, rw
from vfz.oracles.vvfat.guest import get_guest

# the partition of the newest virtio disk (vvfat's hard-disk geometry has an MBR)
WAIT_DISK = ("for i in $(seq 400); do for p in /dev/vd*1; do [ -b \"$p\" ] && echo \"$p\" && ls /sys/block && cat /proc/partitions && exit 0; "
             "done; sleep 0.05; done; exit 1")
WALK_MS = 20000
MS_SYNCHRONOUS = 16
# When the guest's writes reach vvfat (cfg sync):
#   mount  the volume mounted synchronous (MS_SYNCHRONOUS): each write reaches
#          the disk in the kernel's order before its syscall returns; the same
#          script gives the same host directory (the default)
#   op     a sync(2) after each op: one op's writes flushed together, in the
#          order the flusher and sync issue them, which varies run to run
#   end    one sync, at the unmount
# Measured (TCG, load ~15): in op and end modes vvfat aborted QEMU on
# 'mkdir /a; mkdir /a/c' in some runs, even on a bare 'mkdir /x' as the
# second script of a VM; mounted synchronous, 6 such scripts in a row passed.
SYNC_MODES = ("mount", "op", "end")


def patched_modules(variant, nodual_dir=None):
    """[(name, path)] of the seed patch's fat.ko, vfat.ko of variant (v1, v3),
    as kernel-nodual builds them (also what export_rw puts in a reproducer)."""
    d = os.path.join(nodual_dir or default_nodual_dir(), variant)
    return [(m, os.path.join(d, m + ".ko")) for m in ("fat", "vfat")]


class KernelVvfatWriter(Writer):
    explain = staticmethod(exceptions.explain_dir)
    result_exception = staticmethod(exceptions.result_exception)
    known_failure = staticmethod(rw.known_failure)
    variant = "stock"      # stock | v1 | v3: the guest's fat, vfat (a directory under nodual_dir)

    def __init__(self, name="kernel-vvfat", build_dir=None, options=DEFAULT_OPTIONS, mem="512M",
                 boot_timeout=60.0, fat_type=16, auto_build=True, sync="mount", nodual_dir=None,
                 seed=DEFAULT_SEED, **cfg):
        self.name = name
        self.modules = None
        self.seed = None
        if self.variant != "stock":
            self.modules = patched_modules(self.variant, nodual_dir)
            self.seed = seed
        if sync not in SYNC_MODES:
            raise ValueError(f"sync must be one of {', '.join(SYNC_MODES)}, not {sync!r}")
        self.sync = sync
        self.flags = MS_SYNCHRONOUS if sync == "mount" else 0
        self.auto_build = auto_build
        self.build_dir = build_dir or default_build_dir()
        self.options = options
        self.mem = mem
        self.boot_timeout = boot_timeout
        self.fat_type = int(fat_type)

    def available(self):
        if shutil.which("qemu-system-x86_64") is None:
            return False, "qemu-system-x86_64 not installed"
        for _, p in self.modules or ():
            if not os.path.exists(p):
                return False, f"{p} missing (run vfz/oracles/kernel-nodual/build.sh)"
        return True, ""

    def _apply(self, image, ops, timeout, w):
        g = get_guest(self.build_dir, self.mem, self.boot_timeout, self.auto_build, self.modules)
        with g.vm.lock:
            g.ensure()
            top = tempfile.mkdtemp(prefix="d", dir=g.tmp)
            try:
                guest = self._run(g, top, ops, timeout, w)
                w.raw += archive.write(top, image, guest=guest)
            finally:
                shutil.rmtree(top, ignore_errors=True)

    def _run(self, g, top, ops, timeout, w):
        ident = g.plug(top, self.fat_type)
        w.raw += f"[plug] fat:rw:{self.fat_type}: node {ident}\n"
        try:
            return self._ops(g, ops, timeout, w)
        finally:
            if g.vm.alive():
                try:
                    g.unplug(ident)
                except VMError as e:
                    w.raw += f"[unplug] {e}\n"
                    g.vm.stop()         # a drive that would not go: the next script boots afresh
                    if not w.error:
                        w.error = f"vvfat guest: unplug: {e}"

    def _ops(self, g, ops, timeout, w):
        """The ops on the plugged disk -> the guest kernel's listing of it
        after the last op (None when the walk failed)."""
        # no periodic writeback in the guest: the disk sees the writes at the
        # syncs only (after each op, or at the unmount), so vvfat's commits
        # do not depend on when the flusher thread ran (measured: with it on, the same
        # script aborted QEMU in one run and not in the next)
        quiet = [("W", s(f"/proc/sys/vm/{k}") + s(v)) for k, v in
                 (("dirty_writeback_centisecs", "0"), ("dirty_expire_centisecs", "360000"))]
        seed = [] if self.seed is None else \
            [("W", s("/sys/module/vfat/parameters/nodual_seed") + s(str(self.seed)))]
        *pre, (st, p) = g.vm.pipeline(quiet + seed + [("S", s(WAIT_DISK))], timeout, modules=g.modules())
        if seed:
            wst, wp = pre[-1]
            w.raw += f"[nodual_seed={self.seed}] {_txt(wp)}\n"
            if wst != "o":
                w.error = f"cannot set nodual_seed: {_txt(wp)}"
                return None
        lines = _txt(p).split("\n")
        dev = lines[1].strip() if len(lines) > 1 else ""
        w.raw += "[disk] " + " ".join(lines[1:]) + "\n"
        if st != "o" or not dev.startswith("/dev/vd"):
            w.error = f"vvfat disk did not appear in the guest: {_txt(p).strip()[-200:]}"
            return None
        frames = [("O", struct.pack("<I", self.flags) + s("vfat") + s(self.options) + s(dev))]
        for op in ops:
            frames.append(("X", encode_op(op)))
            if self.sync == "op":
                frames.append(("S", s("sync")))
        step = 2 if self.sync == "op" else 1
        frames += [("L", struct.pack("<II", 0, WALK_MS)), ("U", struct.pack("<I", 0)), ("K", b"")]
        try:
            replies = g.vm.pipeline(frames, timeout)
        except VMError as e:
            got = list(e.partial)[1:1 + step * len(ops):step]
            w.results = [_txt(q) if st == "o" else "EHARNESS" for st, q in got]
            # QEMU's own last words first: an assert() in vvfat (rw.py) names the failure
            last = (getattr(g.vm, "last_qemu_err", "") or "").strip().splitlines()
            abort = [ln for ln in last if ln.strip()]
            w.error = (f"QEMU aborted: {abort[-1].split(': ', 1)[-1]}; " if abort else "") + f"vvfat guest: {e}"
            w.raw += "[QEMU stderr] " + " | ".join(last[-5:]) + "\n"
            return None
        (mst, mp), opr = replies[0], replies[1:1 + step * len(ops):step]
        (lst, lp), (ust, up), (_, kp) = replies[1 + step * len(ops):]
        msgs = parse_kmsg(kp)
        w.raw += f"[mount {dev} vfat {self.options}] {_txt(mp)}\n"
        if mst != "o":
            w.error = f"mount failed: {_txt(mp)}"
            if _txt(mp) == "no image":      # an agent older than O's source field
                w.error += " (the guest's agent predates O's mount source: run vfz/oracles/kernel/build.sh)"
            w.raw += "[kmsg]\n" + "".join(m + "\n" for m in msgs)
            return None
        for op, (st, q) in zip(ops, opr):
            w.results.append(_txt(q) if st == "o" else "EHARNESS")
            w.raw += f"{op} -> {w.results[-1]}\n"
        guest = parse_listing(lp)[0] if lst == "o" else None
        w.raw += f"[umount] {_txt(up).strip()}\n[kmsg]\n" + "".join(m + "\n" for m in msgs)
        if ust != "o":
            w.error = "umount failed: " + _txt(up).strip()
        return guest


class KernelVvfatNodualWriter(KernelVvfatWriter):
    variant = "v1"

    def __init__(self, name="kernel-vvfat-nodual", **cfg):
        KernelVvfatWriter.__init__(self, name, **cfg)


class KernelVvfatNodualV3Writer(KernelVvfatWriter):
    variant = "v3"
    # v3 forces shortname=winnt: a name whose base and extension are each all
    # lower or all upper case is stored bare with the NT case bits, which
    # vvfat does not read (rw.name_exception_winnt)
    name_exception = staticmethod(rw.name_exception_winnt)

    def __init__(self, name="kernel-vvfat-nodual-v3", **cfg):
        KernelVvfatWriter.__init__(self, name, **cfg)
