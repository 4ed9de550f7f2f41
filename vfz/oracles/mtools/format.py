"""mtools' mformat as a formatter: FAT12/16/32 of any size, sector size, cluster size, FAT
count, reserved sectors and root directory size, on an image file.

How it is asked (mtools 4.0.32, Debian 12; every value below measured by running it):

- the FAT type: mformat has no FAT12/16 switch; a drive definition in a generated MTOOLSRC
  (`drive z: file="IMAGE" fat_bits=12|16`) makes it keep that type (it picks the cluster size
  for it, or refuses: "Too few clusters for 16 bit fat", "Too many clusters for 12 bit FAT");
  FAT32 is -F, which refuses a volume of fewer than 65 525 clusters ("Too few clusters for 32
  bit fat"): mformat makes no FAT32 over few clusters;
- the size: -T, the total sectors in units of the sector size asked. Without it -M (the
  "software sector size") keeps the count of 512-byte sectors of the image, so a 4 MiB image
  with -M 4096 declares 8 192 sectors of 4 KiB, 32 MiB: -T is always given;
- -M sector size, -c sectors per cluster, -d FAT count, -R reserved sectors, -r root directory
  size *in sectors* (a root entry count that is not a whole number of sectors is refused);
- -N 12345678 and -v VFATFUZZ: the same geometry gives the same bytes (the serial is random
  otherwise).

mformat may make other than asked: with -c it raises the cluster size "until the FAT is small
enough" (its manual). The layout it made is read back from the boot sector and a difference is
an "unsupported" refusal, never a volume of another geometry.

What it makes (measured, vfz.check.sizing; reports/formatters.md): FAT12 up to 4 084 clusters,
FAT16 from 4 096 (nothing of 4 085..4 095: "Too few clusters for 16 bit fat") to 65 524, FAT32
from 65 525 -- exactly on the FAT16/32 boundary, never below it. What it writes: OEM name "MTOO4032", media 0xF8 (0xF0 with one head), hidden
sectors 0, a boot loader stub, FAT32 with 32 reserved sectors, the backup boot sector at 6 and
an FSInfo sector; the label in the boot sector and as a root directory entry.
"""
import os
import shutil
import tempfile

from vfz import geometry
from vfz.oracles import Formatter
from vfz.proc import run

SERIAL = "12345678"
LABEL = "VFATFUZZ"


class MformatFormatter(Formatter):
    accepts = frozenset({"cluster", "sector", "fats", "reserved", "root"})

    def __init__(self, name="mformat", mformat="mformat", **_):
        self.name, self.mformat = name, mformat

    def unsupported(self, geo):
        why = super().unsupported(geo)
        if why:
            return why
        bps = geo.bytes_per_sector
        if geo.root and (geo.fat == 32 or geo.root * 32 % bps):
            return "root entries on FAT32" if geo.fat == 32 else \
                f"{geo.root} root entries (-r takes whole {bps}-byte sectors)"
        if geo.size % bps:
            return f"a size not a multiple of the {bps}-byte sector"
        return None

    def argv(self, geo):
        """mformat's arguments for geo (after the drive definition's fat_bits)."""
        bps = geo.bytes_per_sector
        a = [self.mformat, "-N", SERIAL, "-v", LABEL, "-T", str(geo.size // bps)]
        if geo.fat == 32:
            a.append("-F")
        if geo.sector:
            a += ["-M", str(geo.sector)]
        if geo.cluster:
            a += ["-c", str(geo.cluster // bps)]
        if geo.root:
            a += ["-r", str(geo.root * 32 // bps)]
        for flag, val in (("-d", geo.fats), ("-R", geo.reserved)):
            if val:
                a += [flag, str(val)]
        return a + ["z:"]

    def _format(self, image, geo, timeout, r):
        cfg = f'mtools_skip_check=1\ndrive z: file="{os.path.abspath(image)}"'
        cfg += f" fat_bits={geo.fat}\n" if geo.fat != 32 else "\n"
        argv = self.argv(geo)
        # the drive definition is part of the command: MTOOLSRC holds it
        r.argv = [f"MTOOLSRC=<({cfg.strip()!r})"] + argv
        d = tempfile.mkdtemp(prefix="vfz-mformat-")
        try:
            rc = os.path.join(d, "mtoolsrc")
            with open(rc, "w") as f:
                f.write(cfg)
            p = run(argv, timeout=timeout, env={"MTOOLSRC": rc, "LC_ALL": "C", "TZ": "UTC0"})
        finally:
            shutil.rmtree(d, ignore_errors=True)
        r.raw = p.text + p.errtext
        if p.rc != 0:
            last = (p.errtext or p.text or p.error or "").strip().splitlines()[-1:]
            r.error = f"mformat failed: {last[0] if last else p.rc}"
            return
        r.error = self.differs(image, geo)

    @staticmethod
    def differs(image, geo):
        """An "unsupported" refusal when the volume made is not the geometry asked (mformat
        raises a cluster size it finds too small), else None."""
        bad = geometry.unlike(image, geo)
        return f"unsupported: mformat made {', '.join(bad)} asked ({geo.spec()})" if bad else None
