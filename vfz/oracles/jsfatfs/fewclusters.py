"""The npm fatfs package writing a FAT32 volume of fewer than 65 525 clusters: it writes 12- or 16-bit FAT entries into the 32-bit FAT (vol.js decides the type by the count), recognised by reading the image as the package does: explain_few_clusters.

vol.js init takes the root from the FAT32 boot sector (BPB_RootClus, since
BPB_FATSz16 is 0) but the width of a FAT entry from the cluster count
(< 4085: FAT12, < 65 525: FAT16), as Microsoft's rule says. On what
mkfs.fat -F 32 makes of a small image (34 MB of 8 KiB clusters: 4 344) the
package keeps a consistent volume of its own -- FAT16 chains in the first
bytes of the FAT32 table -- which every reader that follows the boot sector
(Linux, fsck.fat) reads as a 32-bit FAT: fsck.fat "Cluster 1 out of range
(65535 > 4345)", the new entries' clusters free ("Contains a free cluster").
The evidence is that view: the image read with the package's FAT width and
the boot sector's root holds exactly the model's tree; or, where the package
threw writing past the volume, the chain of the op's directory in that view
links past the volume's end (throw_off_volume).
"""
import functools
import hashlib
import mmap
import struct

from vfz.fatimg import Fat, lfn_units, short_text
from vfz.oracles import NamedException
from vfz.oracles.evidence import ev_get, fat32_few_clusters
from vfz.oracles.jsfatfs.profile import comps_of, js_upper, longname

FEW_WRITE = "jsfatfs-fat32-few-clusters-write"
KEYS = ("path", "type", "size", "sha256")


class PackageView(Fat):
    """The image as vol.js reads it: FAT entries as wide as the count says
    (vfz.fatimg.Fat follows the BPB, as Linux does: a FAT32 boot sector is
    32-bit whatever its count), the root directory the BPB's RootClus chain
    when the 16-bit FAT size is 0."""

    def __init__(self, data):
        super().__init__(data, copy=False)
        self.bits = 12 if self.clusters < 4085 else 16 if self.clusters < 65525 else 32
        self.fat32_bpb = struct.unpack_from("<H", self.b, 22)[0] == 0
        if self.fat32_bpb:
            self.root_cluster = struct.unpack_from("<I", self.b, 44)[0]

    def dir_slots(self, cluster=None):
        if cluster is None and self.fat32_bpb:
            cluster = self.root_cluster
        return super().dir_slots(cluster)

    def data(self, first, size):
        out = bytearray()
        for c in self.chain(first):
            if len(out) >= size:
                break
            off = self.cluster_off(c)
            out += self.b[off:off + self.csize]
        return bytes(out[:size])


def package_view(path):
    """A read-only PackageView over a memory map of the image at path."""
    with open(path, "rb") as f:
        return PackageView(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ))


def _name(slots, short):
    """The long name of slots (in directory order), else the 8.3 name."""
    units = [u for s in reversed(slots) for u in lfn_units(s)]
    if 0 in units:
        units = units[:units.index(0)]
    if not units:
        return short_text(short)
    return struct.pack(f"<{len(units)}H", *units).decode("utf-16-le", "surrogatepass")


def package_listing(view, limit=20000):
    """[{path, type, size, sha256}] of the tree the package sees, or None
    (a loop, a chain out of the volume)."""
    out, todo, seen = [], [("", None)], set()
    while todo:
        path, cl = todo.pop()
        if cl in seen or len(out) > limit:
            return None
        seen.add(cl)
        slots = []
        for _, e in view.entries(cl):
            if e[0] == 0xE5:
                slots = []
            elif e[11] == 0x0F:
                slots.append(e)
            elif e[11] & 0x08 or e[:2] in (b". ", b".."):
                slots = []
            else:
                p = path + "/" + _name(slots, e[:11])
                slots = []
                first = struct.unpack_from("<H", e, 26)[0] | (struct.unpack_from("<H", e, 20)[0] << 16
                                                              if view.bits == 32 else 0)
                if e[11] & 0x10:
                    out.append({"path": p, "type": "dir"})
                    todo.append((p, first))
                else:
                    size = struct.unpack_from("<I", e, 28)[0]
                    body = view.data(first, size) if first else b""
                    if len(body) != size:
                        return None
                    out.append({"path": p, "type": "file", "size": size,
                                "sha256": hashlib.sha256(body).hexdigest()})
    return out


def path_key(comps):
    """A path as the package compares it: each component longname()d, upper case."""
    return tuple(js_upper(longname(c)) for c in comps)


def package_tree(view, limit=20000):
    """{path key: (first cluster, is a directory, size)} of the package's
    view of the image (fewclusters.PackageView), the root under ()."""
    root = view.root_cluster if view.fat32_bpb else None
    out, todo, seen = {(): (root or 0, True, 0)}, [((), root)], set()
    while todo and len(out) < limit:
        key, cl = todo.pop()
        if cl in seen:
            continue
        seen.add(cl)
        slots = []
        for _, e in view.entries(cl):
            if e[0] == 0xE5:
                slots = []
            elif e[11] == 0x0F:
                slots.append(e)
            elif (e[11] & 0x18) == 0x08 or e[:2] in (b". ", b".."):
                slots = []      # a label; a directory chmod made one too stays a directory
            else:
                k = key + path_key([_name(slots, e[:11])])
                slots = []
                first = struct.unpack_from("<H", e, 26)[0] | \
                    (struct.unpack_from("<H", e, 20)[0] << 16 if view.bits == 32 else 0)
                out[k] = (first, bool(e[11] & 0x10), struct.unpack_from("<I", e, 28)[0])
                if e[11] & 0x10 and first >= 2:
                    todo.append((k, first))
    return out


def _key(entries):
    return sorted(tuple((k, e.get(k)) for k in KEYS if k in e) for e in entries)


def explain_few_clusters(ev):
    """FEW_WRITE when the image (ev.image) is a FAT32 boot sector over fewer
    than 65 525 clusters and the package's own view of it holds exactly the
    expected tree (ev.entries): the reader's divergence is the FAT width.
    The expected tree as the package's fs.write sizes a write past the end
    (jsfatfs-gap-write-size) counts too, and with jsfatfs-dir-spellings the
    tree but for what lies in a directory created in through two spellings."""
    image, exp = ev_get(ev, "image"), ev_get(ev, "entries")
    if not image or exp is None or not fat32_few_clusters(image):
        return None
    try:
        got = package_listing(package_view(image))
    except (OSError, ValueError, struct.error, IndexError, UnicodeDecodeError):
        return None
    if got is None:
        return None
    if _key(got) == _key(exp):
        return FEW_WRITE
    # a write past the end as the package's fs.write sizes it (jsfatfs-gap-write-size): the
    # GapModel of the very ops whose model tree is the expected one
    from vfz.oracles.jsfatfs.exceptions import gap_entries, read_ops
    from vfz.oracles.jsfatfs.profile import PROFILE
    from vfz import model
    ops = read_ops(ev)
    m = model.Model(PROFILE, "nodual", rule="lfn")
    m.apply(ops)
    if _key(m.entries()) != _key(exp):
        return None
    if _key(got) == _key(gap_entries(ops).values()):
        return FEW_WRITE
    # entries of a directory the script created in through two spellings (jsfatfs-dir-spellings,
    # 9b7588a217fb): one overwrote the other's; everything else as expected
    from vfz import listing
    from vfz.oracles.jsfatfs.exceptions import DIR_SPELLINGS, _in_respelled, respelled_dirs
    respelled = respelled_dirs(ops)
    gone = [e["path"] for e in list(exp) + got if _in_respelled(e["path"], respelled)]
    keep = [e for e in gap_entries(ops).values() if not listing.under(e["path"], gone)]
    shown = [e for e in got if not listing.under(e["path"], gone)]
    if respelled and len(keep) < len(exp) and _key(shown) == _key(keep):
        return sorted([FEW_WRITE, DIR_SPELLINGS])
    return None


# vol.js _writeSectors' assertion, thrown past the volume's last sector (outside any callback)
OFF_VOLUME = "Error: Invalid sector number!"
RESERVED = {12: 0xFF0, 16: 0xFFF0}     # prefix + rsvMin: above it, not a link (vol.js)


def runs_off(view, first):
    """Does the chain from first, read as the package reads it, link to a
    cluster past the volume's end? In a 12-bit reading of mkfs's 32-bit
    FAT the root's end mark 0x0FFFFFF8 is 0xF0F, below the package's
    reserved range: a link to cluster 3855."""
    c, seen = first, set()
    while 2 <= c < view.clusters + 2 and c not in seen:
        seen.add(c)
        v = view.get(c)
        if v in (0, 1) or v > RESERVED.get(view.bits, 0x0FFFFFF0):
            return False
        c = v
    return c >= view.clusters + 2


def throw_off_volume(ev):
    """(n, FEW_WRITE) when the package threw OFF_VOLUME at op n (the ops
    before it answered), on a FAT32 boot sector over few clusters where
    the directory op n makes its entry in runs off the volume in the
    package's view (runs_off); else None."""
    get = functools.partial(ev_get, ev)
    ops, wr, image = get("ops") or [], get("wr"), get("image")
    if wr is None or not wr.error or OFF_VOLUME not in wr.error or not image:
        return None
    n = len(wr.results or [])
    if n >= len(ops) or ops[n].kind not in ("create", "mkdir") or not fat32_few_clusters(image):
        return None
    try:
        view = package_view(image)
        parent = package_tree(view).get(path_key(comps_of(ops[n].path)[:-1]))
        off = bool(parent) and parent[1] and runs_off(view, parent[0] or view.root_cluster)
    except (OSError, ValueError, struct.error, IndexError, UnicodeDecodeError, TypeError):
        return None
    return (n, FEW_WRITE) if off else None


EXCEPTIONS = [
    NamedException(
        FEW_WRITE, "jsfatfs", "writer",
        "vol.js init decides the FAT entry width by the cluster count (< 4085: 12 bits, < 65 525: "
        "16) but takes the root from the FAT32 boot sector (BPB_RootClus, as BPB_FATSz16 is 0): on "
        "a FAT32 volume of fewer clusters (mkfs.fat -F 32 on 34 MB of 8 KiB clusters: 4 344) it "
        "writes 16-bit (or 12-bit) chains into the 32-bit FAT. Linux and fsck.fat read the boot "
        "sector's FAT32: mkdir \"/a\" leaves FAT32 entry 1 0x0000FFFF ('Cluster 1 out of range "
        "(65535 > 4345)') and the directory's cluster free ('Contains a free cluster (6)'); every "
        "later allocation lands in a cluster Linux sees free (the reader side is the registry's "
        "jsfatfs-fat32-few-clusters). Read 12 bits wide, the root's end mark 0x0FFFFFF8 is 0xF0F, "
        "a link: once the root needs a second cluster the package writes past the volume and "
        "throws 'Invalid sector number!' (BusyBox's 32 KiB FAT32, 119 clusters)",
        "the image is a FAT32 boot sector over fewer than 65 525 clusters and, read as the package "
        "reads it (entries of the count's width, the root from BPB_RootClus), holds exactly the "
        "expected tree (explain_few_clusters); or it threw 'Invalid sector number!' at a create or "
        "mkdir whose directory's chain, so read, links past the volume (throw_off_volume)",
        bug=FEW_WRITE),
]
