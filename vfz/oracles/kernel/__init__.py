"""The Linux kernel (Debian 6.1, stock or with the no-dual-names patch
ported to fat.ko/vfat.ko) as a reader and a writer, inside ONE persistent
QEMU TCG guest per module set.

Classes (contract: vfz/oracles/__init__.py)
    KernelReader, KernelWriter                 stock fat.ko/vfat.ko
    KernelNodualReader, KernelNodualWriter     build/kernel-nodual/v1/*.ko
    KernelNodualV3Reader, KernelNodualV3Writer build/kernel-nodual/v3/*.ko
    KernelNo83Reader, KernelNo83Writer         build/kernel-nodual/no83/*.ko: stock
                                               6.1 plus the July 2009 reader side
                                               (FAT_NO_83NAME) alone

cfg keys (all optional)
    build_dir     guest build (vmlinux, initramfs.cpio); default
                  $VFAT_BUILD/kernel, else <repo>/build/kernel. Built with
                  vfz/oracles/kernel/build.sh when missing (auto_build=True).
    nodual_dir    where the ported modules are; default
                  $VFAT_BUILD/kernel-nodual, else <repo>/build/kernel-nodual
                  (built by vfz/oracles/kernel-nodual/build.sh, never here)
    modules       explicit module set: [fat.ko path, vfat.ko path]
                  (overrides the variant; stock = build_dir/stock/*.ko,
                  copied there from /lib/modules by build.sh)
    options       mount options; default Debian's
                  "codepage=437,iocharset=ascii,utf8,shortname=mixed"
    fstype        default "vfat"
    read_only     readers mount read-only (default True); writers always rw
    hash          readers read and hash every file (default True)
    mem           guest memory (default "512M"; the image sits in guest tmpfs,
                  which may use 90% of it; QEMU allocates lazily)
    seed          writers of nodual variants (v1, v3): value written to
                  /sys/module/vfat/parameters/nodual_seed before each apply
                  (reseeds the patch's two generators, dummies and the
                  jiffies stand-in: replayable images); default
                  DEFAULT_SEED = 1, the core writers' default, so that a core
                  and a kernel nodual writer write the same bytes; 0 = the
                  kernel's own random numbers and jiffies (the patch as is)
    boot_timeout  seconds for a boot (default 60)
    auto_build    run build.sh when the guest build is missing (default True)
    shared_vm     False (default): one pooled VM per module set; True: all
                  oracles with shared_vm share ONE VM that switches module
                  sets (rmmod/insmod) between requests when needed
    drop_caches   True (default): echo 3 > drop_caches after every unmount
                  (belt and braces: the unmount already drops the image's
                  caches); False saves a few ms per image
    persistent    True (default): the pooled VM lives across calls; False: a
                  fresh VM is booted for every image and powered off after it
                  (the naive way, for benchmarks)
    hang_ms       test hook: the agent busy-loops this many ms without
                  answering (a hanging request): readers before the image,
                  writers after the last op; default 0

Answers
    ReadResult.listing   canonical entries (vfz.listing) plus, when they
                         happen: "open_error", "stat_error", "read_error"
                         (errno names; "SHORT" = fewer bytes than the size),
                         "path_bytes" (hex, when the name is not UTF-8);
                         a file the kernel lists but cannot open/stat has
                         no size/sha256. None when the mount failed.
    ReadResult.complaints  kernel messages about the filesystem (FAT-fs,
                         VFS, BUG/Oops/WARNING), "(loopN)" normalised to
                         "(loop)", plus "mount failed: ERRNO", walk errors
                         and "listing: PATH listed N times" (readdir gave
                         one name twice; both entries stay in the listing)
    ReadResult.extra     {"kmsg": [...all messages...], "mount": "ok"|errno,
                         "walk_errors": [...]}
    ReadResult.error / WriteResult.error   the VM died, hung (timeout) or the
                         harness could not run; the VM is restarted for the
                         next request.
    WriteResult.results  per op "ok" or the errno name the syscall returned;
                         the image file is rewritten with the unmounted bytes.
"""
import atexit
import os
import re
import struct
import subprocess
import threading

_HERE = os.path.dirname(os.path.abspath(__file__))
from vfz import REPO as _REPO

from vfz.oracles import Entry, Reader, Writer, ReadResult, WriteResult, Timer  # noqa: E402
from vfz.oracles.kernel.vm import VM, VMError, encode_image_file, write_image, s  # noqa: E402

DEFAULT_OPTIONS = "codepage=437,iocharset=ascii,utf8,shortname=mixed"
MS_RDONLY = 1
WALK_SHARE = 0.6   # of a read's timeout the walk may spend before it stops
TYPES = {"f": "file", "d": "dir", "l": "symlink", "o": "other", "?": "unknown"}
# the loop device's backing file (guest tmpfs) failed: a harness limit, not
# the filesystem's doing (image too large for the guest's memory)
STORAGE_RE = re.compile(r"loop: Write error|I/O error, dev loop|Buffer I/O error on dev loop")
COMPLAINT_RE = re.compile(r"FAT-fs|VFS|BUG|Oops|WARNING|general protection|Call Trace|"
                          r"corrupt|I/O error|blk_update_request|beyond end of device")
OP_CODES = {"mkdir": "m", "create": "c", "write": "w", "rename": "r", "unlink": "u", "rmdir": "d"}


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
    or "*" for the one VM that switches module sets (shared_vm=True)."""
    key = (os.path.abspath(build_dir), pool_key, mem)
    with _POOL_LOCK:
        vm = _POOL.get(key)
        if vm is None:
            vm = VM(build_dir, mem=mem, boot_timeout=boot_timeout)
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


# ------------------------------------------------------------------ parsing
_ESC = re.compile(rb"\\x([0-9a-f]{2})")


def unescape(b):
    return _ESC.sub(lambda m: bytes([int(m.group(1), 16)]), b)


def parse_kmsg(raw):
    """/dev/kmsg records -> message strings (continuation lines dropped)."""
    out = []
    for line in raw.decode("utf-8", "replace").splitlines():
        if not line or line.startswith(" "):
            continue
        _, _, msg = line.partition(";")
        out.append(msg)
    return out


def complaints_of(msgs):
    """Messages about the filesystem, "(loopN)" -> "(loop)", duplicates dropped."""
    out = []
    for m in msgs:
        if COMPLAINT_RE.search(m):
            m = re.sub(r"\(loop\d+\)", "(loop)", m)
            m = re.sub(r"\bloop\d+:", "loop:", m.replace("\\x0a", " | "))
            m = re.sub(r"^\S+: (attempt to access beyond end of device)", r"\1", m)
            if m not in out:
                out.append(m)
    return out


def parse_listing(raw):
    """Agent list text -> (entries, walk_errors)."""
    entries, errors = [], []
    for line in raw.split(b"\n"):
        if not line:
            continue
        f = line.split(b"\t")
        if f[0] == b"E" and len(f) >= 4:
            p = unescape(f[1]).decode("utf-8", "surrogateescape") or "/"
            errors.append(f"{f[2].decode()} {p}: {f[3].decode()}")
            continue
        if f[0] != b"T" or len(f) < 9:
            errors.append("bad agent line: " + line.decode("utf-8", "replace")[:100])
            continue
        pb = unescape(f[1])
        dtype, stype, size, sha, serr, oerr, rerr = (x.decode() for x in f[2:9])
        kind = TYPES.get(stype if serr == "-" else dtype, "unknown")
        try:
            path = pb.decode("utf-8")
            extra = {}
        except UnicodeDecodeError:
            path = pb.decode("utf-8", "surrogateescape")
            extra = {"path_bytes": pb.hex()}
        e = {"path": path, "type": kind}
        if kind == "file":
            if serr == "-" and oerr == "ok" and rerr == "-" and sha != "-":
                e["size"] = int(size)
                e["sha256"] = sha
            elif serr == "-" and size != "-":
                e["size"] = int(size)
        if serr != "-":
            e["stat_error"] = serr
        if oerr not in ("ok", "-"):
            e["open_error"] = oerr
        if rerr != "-":
            e["read_error"] = rerr
        if dtype != stype and serr == "-" and dtype != "?":
            e["d_type"] = TYPES.get(dtype, dtype)
        e.update(extra)
        entries.append(e)
    entries.sort(key=lambda e: e["path"])
    return entries, errors


def _txt(b):
    return b.decode("utf-8", "replace")


# ------------------------------------------------------------------ oracles
# the seed of a nodual writer unless cfg says otherwise: the core writers'
# default (vfz.oracles.core CoreWriter), so both write the same dummies
DEFAULT_SEED = 1


class _KernelBase:
    variant = "stock"      # stock | v1 | v3 | no83 (directory under nodual_dir)
    seeded = False         # vfat.ko has the nodual_seed parameter

    def __init__(self, name, build_dir=None, nodual_dir=None, modules=None,
                 options=DEFAULT_OPTIONS, fstype="vfat", read_only=True, hash=True,
                 mem="512M", seed=DEFAULT_SEED, boot_timeout=60.0, auto_build=True, hang_ms=0,
                 persistent=True, shared_vm=False, drop_caches=True, **cfg):
        self.name = name
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
            vm = VM(self.build_dir, mem=self.mem, boot_timeout=self.boot_timeout)
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


class KernelReader(_KernelBase, Reader):
    def __init__(self, name="kernel", **cfg):
        _KernelBase.__init__(self, name, **cfg)

    def read(self, image, timeout=30.0, options=None):
        """options: mount options for this request only (default cfg options)."""
        return self.read_many([image], timeout, options)[0]

    def read_many(self, images, timeout=30.0, options=None):
        out = []
        for img in images:
            out.append(self._read_one(img, timeout, options or self.options))
        return out

    def _read_one(self, image, timeout, options):
        r = ReadResult(self.name)
        with Timer() as t:
            try:
                data = encode_image_file(image)     # its data extents only
            except OSError as e:
                r.error = f"cannot read image: {e.strerror}"
                data = None
            if data is not None:
                try:
                    vm, mods = self._vm()
                    flags = MS_RDONLY if self.read_only else 0
                    frames = [("I", data),
                              ("O", struct.pack("<I", flags) + s(self.fstype) + s(options)),
                              ("L", struct.pack("<II", 0 if self.hash else 1,
                                                int(timeout * 1000 * WALK_SHARE))),
                              ("U", self._uflags()), ("K", b"")]
                    if self.hang_ms:
                        frames.insert(0, ("H", struct.pack("<I", self.hang_ms)))
                    try:
                        replies = vm.pipeline(frames, timeout, modules=mods)
                    finally:
                        if not self.persistent:
                            vm.close()
                    if self.hang_ms:
                        replies.pop(0)
                    (ist, ip), (mst, mp), (lst, lp), (ust, up), (_, kp) = replies
                    self._fill(r, options, ist, ip, mst, mp, lst, lp, ust, up, kp)
                except VMError as e:
                    r.error = f"kernel VM: {e}"
                    r.raw += f"[error] {e}\n"
        r.seconds = t.seconds
        return r

    def _fill(self, r, options, ist, ip, mst, mp, lst, lp, ust, up, kp):
        msgs = parse_kmsg(kp)
        r.extra["kmsg"] = msgs
        r.extra["mount"] = _txt(mp)
        r.raw = (f"[image] {_txt(ip).strip()}\n[mount {self.fstype} {options}"
                 f"{' ro' if self.read_only else ''}] {_txt(mp)}\n")
        if ist != "o":
            r.error = "image transfer failed: " + _txt(ip).strip()
            return
        if mst != "o":
            r.complaints.append(f"mount failed: {_txt(mp)}")
        else:
            entries, errors = parse_listing(lp)
            r.listing = entries
            seen = {}
            for e in entries:
                seen[e["path"]] = seen.get(e["path"], 0) + 1
            errors += [f"listing: {p} listed {n} times" for p, n in seen.items() if n > 1]
            r.extra["walk_errors"] = errors
            r.complaints.extend(errors)
            r.raw += "[list]\n" + _txt(lp)
            if any(e.startswith("limit ") and e.endswith(": time") for e in errors) or \
                    any(e.get("read_error") == "ETIME" for e in entries):
                r.error = ("timeout: the walk spent its budget "
                           f"({WALK_SHARE:.0%} of the timeout); listing is partial")
        if ust != "o":
            r.complaints.append("umount: " + _txt(up).strip())
        r.raw += f"[umount] {_txt(up).strip()}\n[kmsg]\n" + "".join(m + "\n" for m in msgs)
        bad = [m for m in msgs if STORAGE_RE.search(m)]
        if bad and not r.error:
            r.error = f"guest storage failed (image too large for mem={self.mem}?): {bad[0]}"
        for c in complaints_of(msgs):
            if c not in r.complaints:
                r.complaints.append(c)


def encode_op(op):
    code = OP_CODES[op.kind]
    a = op.args
    p = struct.pack("<B", ord(code)) + s(a[0])
    if op.kind == "create":
        p += struct.pack("<QQ", a[1], a[2])
    elif op.kind == "write":
        p += struct.pack("<QQQ", a[1], a[2], a[3])
    elif op.kind == "rename":
        p += s(a[1])
    return p


class KernelWriter(_KernelBase, Writer):
    def __init__(self, name="kernel", **cfg):
        _KernelBase.__init__(self, name, **cfg)

    def apply(self, image, ops, timeout=60.0, options=None):
        """options: mount options for this request only (default cfg options)."""
        w = WriteResult(self.name)
        with Timer() as t:
            try:
                data = encode_image_file(image)     # its data extents only
            except OSError as e:
                w.error = f"cannot read image: {e.strerror}"
                data = None
            if data is not None:
                try:
                    self._apply(w, image, data, ops, timeout, options or self.options)
                except VMError as e:
                    w.error = f"kernel VM: {e}"
                    w.raw += f"[error] {e}\n"
                except OSError as e:
                    w.error = f"cannot write the image back: {e.strerror}"
        w.seconds = t.seconds
        return w

    def _apply(self, w, image, data, ops, timeout, options):
        vm, mods = self._vm()
        frames = []
        if self.seed is not None:
            frames.append(("W", s("/sys/module/vfat/parameters/nodual_seed") + s(str(self.seed))))
        frames += [("I", data),
                   ("O", struct.pack("<I", 0) + s(self.fstype) + s(options))]
        first_op = len(frames)
        frames += [("X", encode_op(op)) for op in ops]
        if self.hang_ms:   # test hook: the guest stops answering after the ops
            frames.append(("H", struct.pack("<I", self.hang_ms)))
        frames += [("U", self._uflags()), ("G", b""), ("K", b"")]
        try:
            replies = vm.pipeline(frames, timeout, modules=mods)
        except VMError as e:
            # the ops that answered before the guest hung or died
            got = list(e.partial)[first_op:first_op + len(ops)]
            w.results = [_txt(p) if st == "o" else "EHARNESS" for st, p in got]
            if len(e.partial) < first_op:
                w.raw += "[no answer] to the image/mount request\n"
            elif len(w.results) < len(ops):
                w.raw += f"[no answer] op {len(w.results) + 1}: {ops[len(w.results)]}\n"
            else:
                w.raw += "[no answer] after the last op (unmount/image)\n"
            raise
        finally:
            if not self.persistent:
                vm.close()
        if self.seed is not None:
            wst, wp = replies.pop(0)
            w.raw += f"[nodual_seed={self.seed}] {_txt(wp)}\n"
            if wst != "o":
                w.error = f"cannot set nodual_seed: {_txt(wp)}"
                return
        (ist, ip), (mst, mp) = replies[0], replies[1]
        opr = replies[2:2 + len(ops)]
        if self.hang_ms:
            del replies[2 + len(ops)]
        (ust, up), (gst, gp), (_, kp) = replies[2 + len(ops):]
        msgs = parse_kmsg(kp)
        w.raw += (f"[image] {_txt(ip).strip()}\n[mount {self.fstype} {options}] "
                  f"{_txt(mp)}\n")
        if ist != "o":
            w.error = "image transfer failed: " + _txt(ip).strip()
            return
        if mst != "o":
            w.error = f"mount failed: {_txt(mp)}"
            w.raw += "[kmsg]\n" + "".join(m + "\n" for m in msgs)
            return
        for op, (st, p) in zip(ops, opr):
            res = _txt(p) if st == "o" else "EHARNESS"
            w.results.append(res)
            w.raw += f"{op} -> {res}\n"
        w.raw += f"[umount] {_txt(up).strip()}\n[kmsg]\n" + "".join(m + "\n" for m in msgs)
        bad = [m for m in msgs if STORAGE_RE.search(m)]
        if bad:
            w.error = f"guest storage failed (image too large for mem={self.mem}?): {bad[0]}"
        if ust != "o":
            w.error = "umount failed: " + _txt(up).strip()
        if gst != "o":
            w.error = "cannot fetch image: " + _txt(gp)
            return
        write_image(image, gp)          # sparse: the same bytes, holes for zeros


class KernelNodualReader(KernelReader):
    variant = "v1"
    seeded = True

    def __init__(self, name="kernel-nodual", **cfg):
        KernelReader.__init__(self, name, **cfg)


class KernelNodualWriter(KernelWriter):
    variant = "v1"
    seeded = True

    def __init__(self, name="kernel-nodual", **cfg):
        KernelWriter.__init__(self, name, **cfg)


class KernelNodualV3Reader(KernelReader):
    variant = "v3"
    seeded = True

    def __init__(self, name="kernel-nodual-v3", **cfg):
        KernelReader.__init__(self, name, **cfg)


class KernelNodualV3Writer(KernelWriter):
    variant = "v3"
    seeded = True

    def __init__(self, name="kernel-nodual-v3", **cfg):
        KernelWriter.__init__(self, name, **cfg)


class KernelNo83Reader(KernelReader):
    """Stock 6.1 with the July 2009 reader side only (FAT_NO_83NAME): what
    the reader patch alone changes."""
    variant = "no83"

    def __init__(self, name="kernel-no83", **cfg):
        KernelReader.__init__(self, name, **cfg)


class KernelNo83Writer(KernelWriter):
    variant = "no83"

    def __init__(self, name="kernel-no83", **cfg):
        KernelWriter.__init__(self, name, **cfg)


# ---------------------------------------------------------------- registry
_NEEDS = ("qemu-system-x86", "busybox-static", "linux-image-amd64", "cpio")
_NODUAL_NEEDS = _NEEDS + ("linux-headers-amd64", "linux-source-6.1", "make", "gcc")
_M = "vfz.oracles.kernel:"
EXPORTS = {"kernel": "vfz.oracles.kernel.export"}   # its reproducer template (vfz/oracles/repro.py)
ENTRIES = [
    Entry("kernel", "kernel", reader=_M + "KernelReader", writer=_M + "KernelWriter", names="dual",
          needs=_NEEDS, cost="vm", default=("reader", "writer"), builds=True),
    Entry("kernel-nodual", "kernel", reader=_M + "KernelNodualReader", writer=_M + "KernelNodualWriter",
          shorts="v1", seeded=True, needs=_NODUAL_NEEDS, cost="vm", builds=True),
    Entry("kernel-nodual-v3", "kernel", reader=_M + "KernelNodualV3Reader",
          writer=_M + "KernelNodualV3Writer", shorts="v3", shortname="winnt", seeded=True,
          needs=_NODUAL_NEEDS, cost="vm", builds=True),
    Entry("kernel-no83", "kernel", reader=_M + "KernelNo83Reader", writer=_M + "KernelNo83Writer",
          names="dual", needs=_NODUAL_NEEDS, cost="vm", builds=True),
]
