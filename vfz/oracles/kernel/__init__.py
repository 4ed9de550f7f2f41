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
    iotrace       the image on the VM's traced drive instead of the guest's
                  tmpfs (trace.py): QEMU logs every sector the guest reads and
                  writes, ReadResult.extra["iotrace"] / KernelWriter.last_iotrace
                  hold them (vfz.iobounds.Trace, labelled by op); default False,
                  True in the hostile campaign (hostile_cfg)
    hang_ms       test hook: the agent busy-loops this many ms without
                  answering (a hanging request): readers before the image,
                  writers after the last op; default 0

Answers
    ReadResult.listing   canonical entries (vfz.listing) plus, when they
                         happen: "open_error", "stat_error", "read_error"
                         (errno names; "SHORT" = fewer bytes than the size),
                         "path_bytes" (hex, when the name is not UTF-8);
                         a file the kernel lists but cannot open/stat has
                         no size/sha256; "attr" (FAT_IOCTL_GET_ATTRIBUTES,
                         "attr_error" its errno), "mtime", "atime", "crtime",
                         "crtime_ns" (statx), which the checker holds against
                         the core's listing (KernelReader.shows, its mask
                         KernelReader.shown: attr & 0x3F). None when the
                         mount failed.
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
    WriteResult.results  per op "ok" or the errno name the syscall returned
                         (truncate(2), FAT_IOCTL_SET_ATTRIBUTES and utimensat(2)
                         for the second grammar; no label: Linux writes none);
                         the image file is rewritten with the unmounted bytes.

The package: guest.py (the guest build, the VM pool, module sets, the
configuration every oracle class shares), vm.py (one QEMU guest and its
agent's protocol), answers.py (reading the agent's answers), reader.py,
writer.py, trace.py (the I/O-bounds trace); agent.c, build.sh and mkimage.py build the guest. This module
holds the registry entries and the public names.
"""
from vfz.oracles import OPS, Entry
from vfz.oracles.kernel.answers import (COMPLAINT_RE, STORAGE_RE, TYPES, complaints_of, parse_kmsg,  # noqa: F401
                                        parse_listing, unescape)
from vfz.oracles.kernel.guest import (DEFAULT_OPTIONS, DEFAULT_SEED, default_build_dir,  # noqa: F401
                                      default_nodual_dir, ensure_build, get_vm, module_set,
                                      shutdown_all)
from vfz.oracles.kernel.reader import (MS_RDONLY, WALK_SHARE, KernelNo83Reader, KernelNodualReader,  # noqa: F401
                                       KernelNodualV3Reader, KernelReader)
from vfz.oracles.kernel.vm import VM, VMError, encode_image_file, s, write_image  # noqa: F401
from vfz.oracles.kernel.writer import (OP_CODES, KernelNo83Writer, KernelNodualV3Writer,  # noqa: F401
                                       KernelNodualWriter, KernelWriter, encode_op)

# ---------------------------------------------------------------- registry
_NEEDS = ("qemu-system-x86", "busybox-static", "linux-image-amd64", "cpio")
_NODUAL_NEEDS = _NEEDS + ("linux-headers-amd64", "linux-source-6.1", "make", "gcc")
_M = "vfz.oracles.kernel:"
# Linux's vfat writes no volume label: its writers leave `label` out
_SUPPORTS = OPS | {"write-offset", "truncate", "chattr", "touch"}
EXPORTS = {"kernel": "vfz.oracles.kernel.export"}   # its reproducer template (vfz/oracles/repro.py)
ENTRIES = [
    Entry("kernel", "kernel", reader=_M + "KernelReader", writer=_M + "KernelWriter", names="dual",
          needs=_NEEDS, cost="vm", default=("reader", "writer"), builds=True, supports=_SUPPORTS, iotrace="own"),
    Entry("kernel-nodual", "kernel", reader=_M + "KernelNodualReader", writer=_M + "KernelNodualWriter",
          shorts="v1", seeded=True, needs=_NODUAL_NEEDS, cost="vm", default=("writer",), builds=True,
          supports=_SUPPORTS, iotrace="own"),
    Entry("kernel-nodual-v3", "kernel", reader=_M + "KernelNodualV3Reader",
          writer=_M + "KernelNodualV3Writer", shorts="v3", shortname="winnt", seeded=True,
          needs=_NODUAL_NEEDS, cost="vm", default=("writer",), builds=True, supports=_SUPPORTS,
          iotrace="own"),
    Entry("kernel-no83", "kernel", reader=_M + "KernelNo83Reader", writer=_M + "KernelNo83Writer",
          names="dual", needs=_NODUAL_NEEDS, cost="vm", builds=True, supports=_SUPPORTS, iotrace="own"),
]
