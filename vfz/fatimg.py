"""Minimal FAT12/16/32 byte access for tests and damage injection.

Independent of the C core: reads the BPB, walks directory entries (raw 32
byte records with their image offsets), reads/writes FAT entries. Used to
build images with known damage (cross-linked chains, bad LFN checksums,
orphan LFN slots, dummy short entries) by editing bytes.
"""
import mmap
import struct


class Fat:
    def __init__(self, data, copy=True):
        # copy=False: read-only access to data as given (an mmap of a large
        # image: only the pages read are touched)
        self.b = bytearray(data) if copy else data
        b = self.b
        self.bps, self.spc, self.res, self.nfats, self.rootent = struct.unpack_from("<HBHBH", b, 11)
        tot16 = struct.unpack_from("<H", b, 19)[0]
        spf16 = struct.unpack_from("<H", b, 22)[0]
        tot32 = struct.unpack_from("<I", b, 32)[0]
        self.spf = spf16 or struct.unpack_from("<I", b, 36)[0]
        self.total = tot16 or tot32
        self.root_secs = (self.rootent * 32 + self.bps - 1) // self.bps
        self.fat_off = self.res * self.bps
        self.data_sec = self.res + self.nfats * self.spf + self.root_secs
        self.clusters = (self.total - self.data_sec) // self.spc
        if spf16 == 0:
            self.bits = 32                  # the BPB's word, as Linux reads it (few-cluster FAT32s too)
        elif self.clusters < 4085:
            self.bits = 12
        elif self.clusters < 65525:
            self.bits = 16
        else:
            self.bits = 32
        self.root_cluster = struct.unpack_from("<I", b, 44)[0] if self.bits == 32 else 0
        self.csize = self.bps * self.spc

    # ---------------------------------------------------------------- FAT
    def get(self, n):
        off = self.fat_off
        if self.bits == 12:
            v = struct.unpack_from("<H", self.b, off + n * 3 // 2)[0]
            return (v >> 4) if n & 1 else (v & 0xFFF)
        if self.bits == 16:
            return struct.unpack_from("<H", self.b, off + n * 2)[0]
        return struct.unpack_from("<I", self.b, off + n * 4)[0] & 0x0FFFFFFF

    def set(self, n, val):
        for f in range(self.nfats):
            off = self.fat_off + f * self.spf * self.bps
            if self.bits == 12:
                p = off + n * 3 // 2
                v = struct.unpack_from("<H", self.b, p)[0]
                v = ((v & 0x000F) | (val << 4)) if n & 1 else ((v & 0xF000) | (val & 0xFFF))
                struct.pack_into("<H", self.b, p, v & 0xFFFF)
            elif self.bits == 16:
                struct.pack_into("<H", self.b, off + n * 2, val)
            else:
                struct.pack_into("<I", self.b, off + n * 4, val & 0x0FFFFFFF)

    def eoc(self, v):
        return v >= {12: 0xFF8, 16: 0xFFF8, 32: 0x0FFFFFF8}[self.bits]

    def chain(self, c):
        out = []
        while 2 <= c < self.clusters + 2 and len(out) <= self.clusters:
            out.append(c)
            c = self.get(c)
            if self.eoc(c):
                break
        return out

    def cluster_off(self, c):
        return (self.data_sec + (c - 2) * self.spc) * self.bps

    # ---------------------------------------------------------------- dirs
    def dir_slots(self, cluster=None):
        """Offsets of every 32-byte slot of a directory (root if cluster is None)."""
        if cluster is None and self.bits != 32:
            start = (self.res + self.nfats * self.spf) * self.bps
            return [start + 32 * i for i in range(self.rootent)]
        c = self.root_cluster if cluster is None else cluster
        out = []
        for cl in self.chain(c):
            base = self.cluster_off(cl)
            out += [base + 32 * i for i in range(self.csize // 32)]
        return out

    def entries(self, cluster=None):
        """[(offset, raw 32 bytes)] of used slots up to the end marker."""
        out = []
        for off in self.dir_slots(cluster):
            e = bytes(self.b[off:off + 32])
            if e[0] == 0:
                break
            out.append((off, e))
        return out

    def short_entries(self, cluster=None):
        """[(offset, 11-byte name, attr, first cluster, size, [lfn slot offsets])]."""
        out = []
        pending = []
        for off, e in self.entries(cluster):
            if e[0] == 0xE5:
                pending = []
                continue
            if e[11] == 0x0F:
                pending.append(off)
                continue
            if e[11] & 0x08:          # volume label
                pending = []
                continue
            cl = struct.unpack_from("<H", e, 26)[0] | (struct.unpack_from("<H", e, 20)[0] << 16
                                                        if self.bits == 32 else 0)
            out.append((off, e[:11], e[11], cl, struct.unpack_from("<I", e, 28)[0], pending))
            pending = []
        return out


def open_ro(path):
    """A read-only Fat over a memory map of the image at path: only the
    pages read are touched (a reader's look at the root of a 35 MB FAT32
    volume took 0.25 s when the whole file was read and copied)."""
    with open(path, "rb") as f:
        m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    return Fat(m, copy=False)


def lfn_checksum(name11):
    s = 0
    for c in name11:
        s = (((s & 1) << 7) | (s >> 1)) + c & 0xFF
    return s


def short_text(name11):
    """An 8.3 name field (11 bytes) as lookups and listings spell it: base
    and extension in cp437, trailing blanks dropped, joined by '.' when the
    extension is not empty; a first byte 0x05 is the stand-in for 0xE5."""
    b = bytes(name11)
    if b[:1] == b"\x05":
        b = b"\xe5" + b[1:]
    base, ext = b[:8].decode("cp437").rstrip(" "), b[8:11].decode("cp437").rstrip(" ")
    return base + ("." + ext if ext else "")


def lfn_units(slot):
    """The 13 UTF-16 code units a long-name slot (32 bytes) holds, in order:
    bytes 1-10, 14-25 and 28-31."""
    raw = slot[1:11] + slot[14:26] + slot[28:32]
    return [raw[i] | (raw[i + 1] << 8) for i in range(0, 26, 2)]
