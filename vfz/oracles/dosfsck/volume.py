"""The volume as fsck.fat 4.2 reads it: geometry from the boot sector, the
first FAT decoded, clusters and chains, and the -n change list (every
write kept in memory, every later read sees it). FsckSim (sim.py) scans it.
"""
import array
import os
import sys

_DELETED = 0xE5
_ATTR_VOLUME, _ATTR_DIR, _ATTR_LFN = 0x08, 0x10, 0x0F
_NO_83NAME = 0x20
_BAD_CHARS = b'*?<>|"\\/:.'


def _u16(b, o):
    return b[o] | (b[o + 1] << 8)


def _u32(b, o):
    return b[o] | (b[o + 1] << 8) | (b[o + 2] << 16) | (b[o + 3] << 24)


def _file_name(n):
    """file_name(): the 8.3 bytes as fsck.fat prints them (bytes >= 0x80 as Latin-1)."""
    out, j = "", 0
    i = 0
    if n[0] == 0x05:
        out, i, j = "\u00e5", 1, 1
    for k in range(i, 8):
        if n[k] != 0x20:
            out += " " * max(0, k - j) + chr(n[k])
            j = k + 1
    if n[8:11] != b"   ":
        out += "."
        j = 0
        for k in range(3):
            if n[8 + k] != 0x20:
                out += " " * max(0, k - j) + chr(n[8 + k])
                j = k + 1
    return out.split("\0")[0]      # printed as a C string


def _lfn_text(units):
    s = []
    for u in units:
        if u == 0:
            break
        s.append(u)
    return bytes(b for u in s for b in (u & 0xFF, u >> 8)).decode("utf-16-le", "replace")


class _Disk:
    """The image read on demand, in 64 KiB pages; writes change the pages only
    (fsck.fat -n's change list: every later read sees them)."""
    PAGE = 1 << 16

    def __init__(self, image):
        if isinstance(image, (bytes, bytearray)):
            self.f, self.data = None, bytes(image)
            self.size = len(image)
        else:
            self.f, self.data = open(image, "rb"), None
            self.size = os.fstat(self.f.fileno()).st_size
        self.pages = {}

    def close(self):
        if self.f:
            self.f.close()
            self.f = None

    def _page(self, n):
        p = self.pages.get(n)
        if p is None:
            o = n * self.PAGE
            if self.data is not None:
                raw = self.data[o:o + self.PAGE]
            else:
                raw = os.pread(self.f.fileno(), self.PAGE, o)
            p = self.pages[n] = bytearray(raw.ljust(self.PAGE, b"\0"))
        return p

    def read(self, off, n):
        out = bytearray()
        while n > 0:
            p, o = divmod(off, self.PAGE)
            k = min(n, self.PAGE - o)
            out += self._page(p)[o:o + k]
            off, n = off + k, n - k
        return bytes(out)

    def write(self, off, data):
        i = 0
        while i < len(data):
            p, o = divmod(off + i, self.PAGE)
            k = min(len(data) - i, self.PAGE - o)
            self._page(p)[o:o + k] = data[i:i + k]
            i += k


class _F:
    """DOS_FILE: one directory entry fsck.fat keeps in memory."""
    __slots__ = ("de", "offset", "lfn", "lfn_offset", "parent", "first")

    def __init__(self, de, offset, parent):
        self.de = bytearray(de)
        self.offset = offset
        self.lfn = None
        self.lfn_offset = 0
        self.parent = parent
        self.first = []

    @property
    def attr(self):
        return self.de[11]

    @property
    def lcase(self):
        return self.de[12]

    def free(self):
        return self.de[0] in (0, _DELETED)



class Volume:
    """Geometry, FAT and io of one image, as fsck.fat sees them."""

    def __init__(self, image):
        self.d = _Disk(image)              # the image + the -n change list
        b = self.d.read(0, 512)
        self.lss = _u16(b, 11)
        self.spc = b[13]
        res = _u16(b, 14)
        self.nfats = b[16]
        self.root_entries = _u16(b, 17)
        tot = _u16(b, 19) or _u32(b, 32)
        fat16_len = _u16(b, 22)
        fat32_len = _u32(b, 36)
        self.fat_len = fat16_len or fat32_len
        self.csize = self.lss * self.spc
        self.fat_start = res * self.lss
        self.root_start = (res + self.nfats * self.fat_len) * self.lss
        root_bytes = self.root_entries * 32
        self.data_start = self.root_start + (root_bytes + self.lss - 1) // self.lss * self.lss
        self.data_clusters = (tot * self.lss - self.data_start) // self.csize
        if not fat16_len and fat32_len:
            self.bits = 32
            self.root_cluster = _u32(b, 44)
            info = _u16(b, 48) * self.lss
            self.fsinfo_free = None
            i = self.d.read(info, 512) if info else b""
            if len(i) == 512 and _u32(i, 0) == 0x41615252 and _u32(i, 484) == 0x61417272:
                self.fsinfo_free = _u32(i, 488)
        else:
            self.bits = 12 if self.data_clusters + 2 <= 4084 else 16
            self.root_cluster = 0
            self.fsinfo_free = None
        fat = self.d.read(self.fat_start, self.fat_len * self.lss)
        self.fat = self._decode_fat(fat, self.data_clusters + 2)

    # ------------------------------------------------------------ FAT
    def _decode_fat(self, fat, n):
        """The first FAT as a list of n entries (missing ones read 0)."""
        if self.bits == 12:
            fat = fat.ljust((n * 3 + 1) // 2 + 2, b"\0")
            out = []
            for i in range(n):
                o = i * 3 // 2
                v = fat[o] | (fat[o + 1] << 8)
                out.append((v >> 4) if i & 1 else (v & 0xFFF))
            return out
        w = 2 if self.bits == 16 else 4
        fat = fat[:n * w].ljust(n * w, b"\0")
        a = array.array("H" if w == 2 else "I")
        assert a.itemsize == w
        a.frombytes(fat)
        if sys.byteorder != "little":
            a.byteswap()
        return [v & 0x0FFFFFFF for v in a] if w == 4 else a.tolist()

    def _extd(self):
        return ((1 << (28 if self.bits == 32 else self.bits)) - 1) & ~0xF

    def is_eof(self, v):
        return v >= (0xFF8 | self._extd())

    def is_bad(self, v):
        return v == (0xFF7 | self._extd())

    def next_cluster(self, c):
        v = self.fat[c]
        return -1 if self.is_eof(v) or self.is_bad(v) else v

    def cluster_start(self, c):
        return self.data_start + (c - 2) * self.csize

    def fstart(self, f):
        v = _u16(f.de, 26)
        if self.bits == 32:
            v |= _u16(f.de, 20) << 16
        return v

    def chain(self, c):
        out = []
        while 2 <= c < self.data_clusters + 2 and len(out) <= self.data_clusters:
            out.append(c)
            c = self.next_cluster(c)
        return out

    def cluster_of(self, off):
        if off < self.data_start:
            return None
        return (off - self.data_start) // self.csize + 2

    # ------------------------------------------------------------ io
    def read(self, off, n=32):
        return self.d.read(off, n)

    def write(self, off, data):
        self.d.write(off, data)

