"""FatFs's f_mkfs as a formatter (`fatfs-mkfs`): ChaN FatFs R0.15 through js-fatfs 0.2.1, the
build the FatFs reader and writer run, asked by server.js's "mkfs" request.

What it is asked: MKFS_PARM fmt FM_FAT (FAT12/16: FatFs picks the type from the cluster count)
or FM_FAT32, always with FM_SFD (super-floppy: without it FatFs writes a partition table and
puts the volume after it); n_fat (FatFs's own default is one FAT), n_root (root entries,
FAT12/16), au_size (cluster bytes), align 0 (the disk says block size 1). The sector size is
what the disk answers to GET_SECTOR_SIZE: this build has FF_MIN_SS 512 and FF_MAX_SS 4096
(F.FF_MAX_SS, checked by the server), so 512..4096 all. The image is a RAM disk of the size
asked, written whole.

What it cannot make: reserved sectors (FatFs writes 1 for FAT12/16, 32 for FAT32; no
parameter), root entries on FAT32 or not a whole number of sectors (FatFs silently takes 512
for a count it does not like), a size not a multiple of the sector. FatFs replaces a cluster
size it cannot use and picks FAT12 or FAT16 itself: the layout is read back and a difference
is an "unsupported" refusal (vfz.geometry.unlike), never a volume of another geometry.

Measured (the formatter sweep, reports/formatters.md): FatFs writes the jump EB FE 90, OEM
name "MSDOS5.0", no boot code, hidden sectors 0 (FM_SFD), media 0xF8, the type string "FAT     "
on FAT12/16 (U-Boot reads none of them: uboot-fs-type-string), one FAT unless asked, 32
reserved sectors, FSInfo and backup boot sector on FAT32. Its FAT12 stops below 4 085
clusters and its FAT16 starts at 4 086 and goes to 65 525 (fatfs-mkfs-fat16-65525: readers that
follow the specification refuse that one); its FAT32 starts at 65 526.
"""
import json
import os
import threading

from vfz import geometry
from vfz.oracles import Formatter
from vfz.oracles.fatfs.exceptions import MKFS_FAT16_MAX
from vfz.oracles.fatfs.server import Server, ServerError


_SHARED = {}
_LOCK = threading.Lock()


def shared_server():
    """One Node process for every fatfs-mkfs formatter of this process: the campaign's
    geometry draw and sizing ask for a formatter per try (vfz.check.sizing), and a process
    each would pile up; it dies with the harness (vfz.lifeline)."""
    with _LOCK:
        if "server" not in _SHARED:
            _SHARED["server"] = Server()
        return _SHARED["server"]


def request(image, geo):
    """server.js's mkfs request for geo (the recorded command: it is what FatFs was asked)."""
    return {"op": "mkfs", "image": os.path.abspath(image), "size": geo.size,
            "ss": geo.bytes_per_sector, "fmt": "fat32" if geo.fat == 32 else "fat",
            "n_fat": geo.fats, "n_root": geo.root, "au_size": geo.cluster, "align": 0}


class FatfsFormatter(Formatter):
    accepts = frozenset({"cluster", "sector", "fats", "root"})

    def __init__(self, name="fatfs-mkfs", **_):
        self.name = name
        self.server = shared_server()

    def unsupported(self, geo):
        why = super().unsupported(geo)
        if why:
            return why
        bps = geo.bytes_per_sector
        if geo.root and (geo.fat == 32 or geo.root * 32 % bps):
            return "root entries on FAT32" if geo.fat == 32 else \
                f"{geo.root} root entries (not whole {bps}-byte sectors)"
        if geo.size % bps:
            return f"a size not a multiple of the {bps}-byte sector"
        return None

    def _format(self, image, geo, timeout, r):
        req = request(image, geo)
        shown = {k: v for k, v in req.items() if k not in ("op", "image")}
        r.argv = ["f_mkfs", json.dumps(shown, sort_keys=True), "(js-fatfs 0.2.1, FM_SFD)", image]
        try:
            ans = self.server.request(req, timeout)
        except ServerError as e:
            r.error = f"fatfs-mkfs: {e}"
            return
        r.raw = json.dumps(ans)
        if ans.get("error"):
            r.error = f"fatfs-mkfs failed: {ans['error']}"
            return
        bad = geometry.unlike(image, geo)
        if bad:
            r.error = f"unsupported: f_mkfs made {', '.join(bad)} asked ({geo.spec()})"

    @staticmethod
    def fresh_exceptions(geo, rr, image=None):
        """fatfs-mkfs-fat16-65525 on FatFs's FAT16 of exactly 65 525 clusters: a reader's
        failure, and its complaints when one of them names the cluster count as the reason
        (Linux: "mount failed: EINVAL", "count of clusters too big (65525)", "Can't find a
        valid FAT filesystem"; fsck.fat: "Too many clusters (65525) for FAT16")."""
        m = geometry.made(image) if image else None
        if not m or m["bpb32"] or m["clusters"] != geometry.FAT16_MAX + 1:
            return []
        cs = list(rr.complaints or ())
        lines = cs if any("clusters" in c.lower() and "65525" in c for c in cs) else []
        lines += [rr.error] if rr.error else []
        return [(MKFS_FAT16_MAX, lines)] if lines else []

    def close(self):
        pass            # the shared server outlives each formatter (shared_server)
