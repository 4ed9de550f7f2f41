"""The guest a kernel oracle runs in: its build, its pooled VM, its module set, its configuration.

ensure_build runs build.sh when the guest build is missing; the pool keeps
one booted VM per module set (or one for all, shared_vm) until
shutdown_all (atexit); _KernelBase turns an oracle's cfg keys (see the
package's docstring) into the VM and modules each request uses.
"""
import atexit
import os
import struct
import subprocess
import threading

from vfz import REPO as _REPO
from vfz.oracles.kernel.trace import Drive
from vfz.oracles.kernel.vm import VM, VMError

_HERE = os.path.dirname(os.path.abspath(__file__))


DEFAULT_OPTIONS = "codepage=437,iocharset=ascii,utf8,shortname=mixed"


def default_build_dir():
    b = os.environ.get("VFAT_BUILD")
    return os.path.join(b, "kernel") if b else os.path.join(_REPO, "build", "kernel")


def default_nodual_dir():
    b = os.environ.get("VFAT_BUILD")
    return os.path.join(b, "kernel-nodual") if b else os.path.join(_REPO, "build", "kernel-nodual")


_build_lock = threading.Lock()


def ensure_build(build_dir, auto_build=True):
    """Run build.sh when the guest build is missing; returns an error string or None."""
    need = [os.path.join(build_dir, f)
            for f in ("vmlinux", "initramfs.cpio", "stock/fat.ko", "stock/vfat.ko")]
    if all(os.path.exists(f) for f in need):
        return None
    if not auto_build:
        return f"{build_dir}: guest build missing (run vfz/oracles/kernel/build.sh {build_dir})"
    with _build_lock:
        if all(os.path.exists(f) for f in need):
            return None
        p = subprocess.run([os.path.join(_HERE, "build.sh"), build_dir],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=900)
        if p.returncode != 0:
            return "build.sh failed: " + p.stdout.decode("utf-8", "replace")[-500:]
    return None


# ----------------------------------------------------------------- VM pool
_POOL = {}
_POOL_LOCK = threading.Lock()


def get_vm(build_dir, pool_key, mem, boot_timeout):
    """The pooled VM for (build, POOL_KEY, mem); POOL_KEY is a module-set key,
    or "*" for the one VM that switches module sets (shared_vm=True). Each has
    the traced image drive (trace.py): a traced oracle's request uses it, an
    untraced one the guest's tmpfs, so both share the VM."""
    key = (os.path.abspath(build_dir), pool_key, mem)
    with _POOL_LOCK:
        vm = _POOL.get(key)
        if vm is None:
            vm = VM(build_dir, mem=mem, boot_timeout=boot_timeout, drive=Drive())
            _POOL[key] = vm
        return vm


_MOD_CACHE = {}


def module_set(files):
    """[(name, path)] -> (key, [(name, bytes, "")]); the key changes when a file does."""
    key = []
    for name, path in files:
        st = os.stat(path)
        key.append((name, os.path.abspath(path), st.st_mtime_ns, st.st_size))
    key = tuple(key)
    if key not in _MOD_CACHE:
        mods = []
        for name, path in files:
            with open(path, "rb") as f:
                mods.append((name, f.read(), ""))
        _MOD_CACHE[key] = mods
    return key, _MOD_CACHE[key]


def shutdown_all():
    with _POOL_LOCK:
        vms = list(_POOL.values())
        _POOL.clear()
    for vm in vms:
        vm.close()


atexit.register(shutdown_all)


# the seed of a nodual writer unless cfg says otherwise: the core writers'
# default (vfz.oracles.core CoreWriter), so both write the same dummies
DEFAULT_SEED = 1


class _KernelBase:
    variant = "stock"      # stock | v1 | v3 | no83 (directory under nodual_dir)
    seeded = False         # vfat.ko has the nodual_seed parameter

    def __init__(self, name, build_dir=None, nodual_dir=None, modules=None,
                 options=DEFAULT_OPTIONS, fstype="vfat", read_only=True, hash=True,
                 mem="512M", seed=DEFAULT_SEED, boot_timeout=60.0, auto_build=True, hang_ms=0,
                 persistent=True, shared_vm=False, drop_caches=True, iotrace=False, **cfg):
        self.name = name
        self.iotrace = bool(iotrace)    # the image on a traced drive (trace.py)
        self.build_dir = build_dir or default_build_dir()
        self.nodual_dir = nodual_dir or default_nodual_dir()
        self.options = options
        self.fstype = fstype
        self.read_only = read_only
        self.hash = hash
        self.mem = mem
        self.seed = seed if self.seeded else None
        self.boot_timeout = boot_timeout
        self.auto_build = auto_build
        self.hang_ms = int(hang_ms)
        self.persistent = persistent
        self.shared_vm = shared_vm
        self.drop_caches = drop_caches
        self.explicit_modules = bool(modules)
        if modules:
            self.modules = [("fat", modules[0]), ("vfat", modules[1])]
        elif self.variant == "stock":
            d = os.path.join(self.build_dir, "stock")
            self.modules = [("fat", os.path.join(d, "fat.ko")), ("vfat", os.path.join(d, "vfat.ko"))]
        else:
            d = os.path.join(self.nodual_dir, self.variant)
            self.modules = [("fat", os.path.join(d, "fat.ko")), ("vfat", os.path.join(d, "vfat.ko"))]

    def available(self):
        """(ok, why) for the driver: QEMU, a kernel, and the module files."""
        import shutil
        if shutil.which("qemu-system-x86_64") is None:
            return False, "qemu-system-x86_64 not installed"
        if ensure_build(self.build_dir, auto_build=False) and not self.auto_build:
            return False, f"guest not built ({self.build_dir})"
        for _, p in self.modules:
            if not os.path.exists(p):
                return False, f"{p} missing (run vfz/oracles/kernel-nodual/build.sh)"
        return True, ""

    @classmethod
    def hostile_cfg(cls, asan_bin=None):
        """In the hostile campaign the image is on the traced drive: QEMU logs
        the sectors the guest reads and writes (trace.py, vfz.iobounds);
        VFZ_IOTRACE=0 (the I/O-bounds oracle off) keeps it in the tmpfs."""
        return {"iotrace": os.environ.get("VFZ_IOTRACE") != "0"}

    def _vm(self):
        """(vm, modules) for a pipeline call; boots the VM when needed."""
        err = ensure_build(self.build_dir, self.auto_build)
        if err:
            raise VMError(err)
        for _, p in self.modules:
            if not os.path.exists(p):
                raise VMError(f"{p} missing (build it with vfz/oracles/kernel-nodual/build.sh)")
        mods = module_set(self.modules)
        if self.variant == "stock" and not self.explicit_modules:
            mods = ("stock", mods[1])      # what every boot loads
        if self.persistent:
            vm = get_vm(self.build_dir, "*" if self.shared_vm else mods[0], self.mem,
                        self.boot_timeout)
        else:
            vm = VM(self.build_dir, mem=self.mem, boot_timeout=self.boot_timeout,
                    drive=Drive() if self.iotrace else None)
        return vm, mods

    def _uflags(self):
        return struct.pack("<I", 0 if self.drop_caches else 1)

    def vm(self):
        """The (booted) VM this oracle uses; for tests and benchmarks."""
        vm = self._vm()[0]
        with vm.lock:
            vm.ensure()
        return vm

    def close(self):
        # the VM stays in the pool for other instances; shutdown_all() at exit
        pass
