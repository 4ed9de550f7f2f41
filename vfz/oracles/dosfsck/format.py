"""mkfs.fat (dosfstools) as a formatter: the volume every campaign started from before geometries."""
from vfz.oracles import Formatter
from vfz.proc import run

VOLUME_ID = "12345678"          # fixed: the same geometry gives the same bytes
LABEL = "VFATFUZZ"


class MkfsFatFormatter(Formatter):
    accepts = frozenset({"cluster", "sector", "fats", "reserved", "root"})

    def __init__(self, name="mkfs.fat", mkfs="mkfs.fat", **_):
        self.name, self.mkfs = name, mkfs

    def _format(self, image, geo, timeout, r):
        argv = [self.mkfs, "-F", str(geo.fat), "-i", VOLUME_ID, "-n", LABEL, "--invariant"]
        if geo.sector:
            argv += ["-S", str(geo.sector)]
        if geo.cluster:
            argv += ["-s", str(geo.cluster // geo.bytes_per_sector)]
        for flag, val in (("-f", geo.fats), ("-R", geo.reserved), ("-r", geo.root)):
            if val:
                argv += [flag, str(val)]
        r.argv = argv + [image]
        p = run(r.argv, timeout=timeout)
        r.raw = p.text + p.errtext
        if p.rc != 0:
            last = (p.errtext or p.text or p.error or "").strip().splitlines()[-1:]
            r.error = f"mkfs.fat failed: {last[0] if last else p.rc}"


def pinned_argv(made, volume_id, image, mkfs="mkfs.fat"):
    """mkfs.fat's command for exactly the layout another formatter made (made: the dict of
    vfz.geometry.made) on image (already of the same size): every field a BPB holds that
    mkfs.fat lets one choose is pinned -- no alignment (-a), the same cluster, reserved
    sectors, FATs, root entries, media 0xF8, CHS 64 heads / 32 sectors (what the core
    writes), the same volume ID, no fake MBR, no label ("NO NAME") -- so that what is
    left to differ is what mkfs.fat cannot be told (vfz.check.bootbytes)."""
    argv = [mkfs, "-a", "-F", str(made["fat"]), "-S", str(made["sector"]),
            "-s", str(made["cluster"] // made["sector"]), "-R", str(made["reserved"]),
            "-f", str(made["fats"]), "-M", "0xf8", "-g", "64/32", "-h", "0", "-D", "0x80",
            "-i", f"{volume_id:08x}", "--mbr=n"]
    if made["fat"] != 32:
        argv += ["-r", str(made["root"])]
    return argv + [image]
