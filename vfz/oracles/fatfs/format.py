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
"""
import json
import os

from vfz import geometry
from vfz.oracles import Formatter
from vfz.oracles.fatfs.server import Server, ServerError


def request(image, geo):
    """server.js's mkfs request for geo (the recorded command: it is what FatFs was asked)."""
    return {"op": "mkfs", "image": os.path.abspath(image), "size": geo.size,
            "ss": geo.bytes_per_sector, "fmt": "fat32" if geo.fat == 32 else "fat",
            "n_fat": geo.fats, "n_root": geo.root, "au_size": geo.cluster, "align": 0}


class FatfsFormatter(Formatter):
    accepts = frozenset({"cluster", "sector", "fats", "root"})

    def __init__(self, name="fatfs-mkfs", **_):
        self.name = name
        self.server = Server()

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

    def close(self):
        self.server.close()
