"""QEMU's vvfat (Debian qemu 7.2) as a formatter -- the registry's vvfat-* writers make a volume from the model's tree of an op-script -- and, in rw mode, as a reader of the kernel's writes (kernel-vvfat).

vvfat is the block driver behind `-drive file=fat:[rw:]DIR`: it shows a
host directory to a guest as a FAT disk, and firmware and boot-loader
developers hand guests EFI system partitions with it. `qemu-img convert -f
vvfat` freezes that disk into an image.

There is no formatter role in the registry, so each variant is a writer
whose results are the model's and whose image is vvfat's (writer.py):
apply() runs the script through the model (the entry's profile, as the
checker's prediction), writes the model's final tree -- names as stored,
file bytes as vfz.opscript.content makes them, every time 2009-07-01 --
to a host directory (volume.py), runs `qemu-img convert --image-opts
driver=vvfat,dir=DIR,... -O raw`, and writes the FAT partition (the MBR's
first entry; a floppy has none) over the image. The readers then read
vvfat's volume against the model's tree, unchanged: the campaign, `vfatfuzz
diff --writers vvfat-16,...`. `supports` is every op: the model applies them.

The variants (volume.py VARIANTS): vvfat-12 (fat:12:, a 32 MB disk),
vvfat-16 (fat:16:, 504 MB), vvfat-32 (fat:32:), vvfat-floppy (fat:floppy:,
2.88 MB FAT12), vvfat-floppy-16 (fat:floppy:16:). All have 8 KiB clusters
and a 512-slot root holding the label 'QEMU VVFAT' and, for every entry,
long-name slots and a short name of vvfat's own (profile.py: the model's
root; ENOSPC where the tree would not fit, as vvfat refuses it).
exceptions.py names vvfat's bugs, recognised from the image, and its
volume size (vvfat-too-big: a tree over the variant's clusters, which
qemu-img refuses, cut at the op that makes it so: a floppy holds 357
clusters, less than the campaign's FAT16 tours fill; run the floppies on
--fs fat12).

kernel-vvfat is vvfat as a reader of the kernel's writes: Linux in a
guest of its own (guest.py) runs the op-script on a fresh hot-plugged
`fat:rw:16:` disk (kernel_writer.py), the host directory vvfat wrote back
is archived as the image (archive.py) and read against the model
(dirreader.py). Why one registry name with both roles: vvfat sees a
guest's writes only while they happen, so it cannot be a reader of a
finished image (the reader role's contract) -- the ops must run live on its
disk, which is the writer role; and what is compared with the model is
vvfat's reading of them, the host directory, which only its own reader can
list: the image is of its own medium ("dir", Entry.medium), and the
checker never pairs it with a FAT reader. vvfat's rw mode aborts QEMU on
ordinary Linux writes and loses some of them: rw.py names each abort by its
code path (QEMU's stderr and the script's ops), hosttree.py each lost or
changed write from the guest kernel's own listing and the host tree (a
stall and entry failures together); export_rw.py is its reproducer template
(qemu-system-x86_64 with a vvfat disk, an initramfs run.sh builds);
tests/test_vvfat_rw.py.

kernel-vvfat-nodual and kernel-vvfat-nodual-v3 are the same with the seed
patch's fat modules in the guest (v1 and v3 dummies, as kernel-nodual and
kernel-nodual-v3 load them; a VM of their own each): writers only, of the
same medium, so the kernel-vvfat reader reads their archives, against the
patched kernel's model (names nodual; v3 the winnt rule). They answer
whether vvfat, sharing a disk with a patched Linux (an EFI system
partition), follows its dummy short names (vfatfuzz study compat's vvfat
row).
"""
from vfz.oracles import OPS, Entry
from vfz.oracles.vvfat import exceptions as _x, rw as _rw
from vfz.oracles.vvfat.profile import KERNEL_PROFILE, PROFILE
from vfz.oracles.vvfat.volume import VARIANTS, spec

EXCEPTIONS = _x.EXCEPTIONS + _rw.EXCEPTIONS
# their reproducer templates (vfz/oracles/repro.py): the formatter variants' (qemu-img convert) and
# kernel-vvfat's (Linux in qemu-system-x86_64 on a fat:rw: disk; a finding of kernel-vvfat names it;
# the nodual writers' guest loads the seed patch's modules, which their reproducers carry)
EXPORTS = {"vvfat": "vfz.oracles.vvfat.export", "kernel-vvfat": "vfz.oracles.vvfat.export_rw",
           "kernel-vvfat-nodual": "vfz.oracles.vvfat.export_rw",
           "kernel-vvfat-nodual-v3": "vfz.oracles.vvfat.export_rw"}

ENTRIES = [
    Entry(name, "vvfat", writer="vfz.oracles.vvfat.writer:VvfatWriter",
          profile=PROFILE, names="nodual", shortname="lfn", shorts="own",
          label=f"QEMU vvfat ({spec(name)})", supports=OPS | {"write-offset"},
          needs=("qemu-utils",), cost="process")
    for name in VARIANTS
]

# Linux writing on a vvfat rw disk, read back as the host directory vvfat wrote: one name,
# both roles. A writer, because vvfat sees the guest's writes only while they happen (the
# ops run live in the guest; nothing can be replayed from a finished image); a reader,
# because what is compared with the model is vvfat's reading of them: the host directory,
# an image of its own medium ("dir": kernel-vvfat reads only kernel-vvfat's images and no
# FAT reader reads them). Not a default: a VM of its own, booted once per process.
_KW = "vfz.oracles.vvfat.kernel_writer:"
_RW_SUPPORTS = OPS | {"write-offset", "truncate", "chattr", "touch"}
_RW_NEEDS = ("qemu-system-x86", "busybox-static", "linux-image-amd64", "cpio")
ENTRIES.append(Entry(
    "kernel-vvfat", "vvfat", writer=_KW + "KernelVvfatWriter",
    reader="vfz.oracles.vvfat.dirreader:VvfatDirReader", profile=KERNEL_PROFILE, names="dual",
    label="vvfat (QEMU rw), Linux guest's writes", medium="dir", cost="vm", builds=True,
    supports=_RW_SUPPORTS, needs=_RW_NEEDS))
# the same guest with the seed patch's modules (the kernel-nodual entries' traits): the
# kernel-vvfat reader reads their archives (one medium), against the patched model
_NODUAL_NEEDS = _RW_NEEDS + ("linux-headers-amd64", "linux-source-6.1", "make", "gcc")
ENTRIES += [
    Entry("kernel-vvfat-nodual", "vvfat", writer=_KW + "KernelVvfatNodualWriter", profile=KERNEL_PROFILE,
          shorts="v1", seeded=True, label="vvfat (QEMU rw), Linux nodual v1 guest's writes", medium="dir",
          cost="vm", builds=True, supports=_RW_SUPPORTS, needs=_NODUAL_NEEDS),
    Entry("kernel-vvfat-nodual-v3", "vvfat", writer=_KW + "KernelVvfatNodualV3Writer", profile=KERNEL_PROFILE,
          shorts="v3", shortname="winnt", seeded=True, label="vvfat (QEMU rw), Linux nodual v3 guest's writes",
          medium="dir", cost="vm", builds=True, supports=_RW_SUPPORTS, needs=_NODUAL_NEEDS),
]
