"""FsckSim: an independent re-statement of fsck.fat 4.2's scan.

fsck.fat 4.2 and v1 dummies (learned from dosfstools 4.2 src/check.c,
lfn.c, io.c, fat.c; checked on 325 images by tests/test_fsck_v1_expectations.py)
--------------------------------------------------------------------------
Expected output = FsckSim, a re-statement of its scan; expected_complaints
runs it on the written image. What matters for v1 images:

* Order: the root is listed, check_dir'ed (all renames), its files checked,
  then each subdirectory recursively (read from disk only now, depth first).
* check_dir counts every entry it listed, "." and ".." excluded, the volume
  label included (good): many-bad-entries iff parent and good + bad > 4 and
  bad > good // 2. "parent" is missing only for the FAT12/16 root; the
  FAT32 root gets it ("Not dropping root directory."). mkfs.fat -n LABEL
  puts a label entry in the root, which the model's dirs do not hold: that
  was the +many-bad-entries finding (3 dummies + 1 bare name + label = 3/5).
* Each bad name (the v1 dummy " \0..." has bytes < 0x20) is auto-renamed
  FSCKnnnn.nnn (bad-short-name), then its LFN slots are deleted by
  lfn_remove(lfn_offset, offset): a deleted entry (0xE5, 31 zero bytes)
  written at EVERY 32 bytes from the first slot's disk offset up to the
  short entry's. Correct only when the set is contiguous on disk. When the
  set crosses from cluster A into a later cluster B > A + 1 of the same
  directory (a directory that grew after other clusters were allocated:
  its own subdirectories, files, other directories) every cluster between
  A and B is overwritten. With -n the writes stay in fsck.fat's change list
  but every later read sees them: each directory whose clusters lie in
  that gap and is scanned later (any subdirectory of this one, any later
  directory) reads as deleted entries: 2 dots-missing ("Expected a valid
  '.'/'..' entry ... found free entry", then conjured) if the gap holds its
  first cluster, its entries in the gap unseen (no bad-short-name, no
  many-bad-entries for them, "Long filename fragment ... outside a LFN
  sequence" / lfn-other when a gap cuts a set), every cluster below them
  unowned: one "Reclaimed N unused clusters" and, on FAT32 (FSInfo), one
  "Free cluster summary wrong (F vs. really F+N)". A set crossing into a
  lower cluster (B < A) deletes nothing.
* Trigger: any FAT type, any cluster size, files and directories alike
  (the renamed entry may be a file; the victim is whatever lies in the
  gap), but never in the FAT12/16 root (a fixed region, not clusters). The
  "FAT16 does not trigger" measurement had fallen back to larger clusters.
* fsck.fat -a flushes the same writes to disk: directories in the gap lose
  their entries and their subtrees are freed, files in the gap get their
  data overwritten. Named exception fsck-v1-lfn-cross (vfz.model
  EXCEPTIONS): when fsck.fat -n prints exactly the prediction and the image
  holds such a crossing over allocated clusters, the verdict is complains
  with kind fsck-v1-lfn-cross (one finding signature), and the repair
  probe's data loss is attributed to it. The prediction is made from the
  image, so it covers any renamed bad name (dual aliases holding 0x7F,
  fsck-del-alias) and kernel-nodual images too (measured: core-v1 only).
* Not simulated (assumed clean, so fsck.fat saying them stays a divergence):
  boot sector, FAT copies, dirty bits, the label check, bad clusters,
  truncation repairs beyond their first message.
"""
from vfz.fatimg import lfn_units
from vfz.oracles.dosfsck.parse import parse_fsck
from vfz.oracles.dosfsck.volume import (Volume, _ATTR_DIR, _ATTR_LFN, _ATTR_VOLUME, _BAD_CHARS, _DELETED,
                                        _F, _NO_83NAME, _file_name, _lfn_text, _u16, _u32)


class FsckSim(Volume):
    """What fsck.fat 4.2 -n prints for IMAGE (the scan, the renames with their
    in-memory writes, reclaim, free-cluster summary), as text in fsck.fat's
    layout, so parse_fsck() classifies it exactly as it classifies the real
    output.  broken_lfn_remove=False simulates a fsck.fat whose lfn_remove
    deletes the slots it found (the clean expectation).

    After run(): .text, .complaints (parse_fsck of .text), .crossings (one
    dict per rename whose LFN-slot deletion ran linearly over other
    clusters), .wiped_dirs (directories read after being overwritten)."""


    def __init__(self, image, broken_lfn_remove=True):
        super().__init__(image)
        self.broken = broken_lfn_remove
        self.owner = {}
        self.lines = []
        self.crossings = []
        self.backward = []
        self.wiped_dirs = []
        self.root = None
        self._lfn_reset()


    def say(self, *lines):
        self.lines.extend(lines)

    # ------------------------------------------------------------ names
    def path(self, f):
        if f is None:
            return ""
        p = self.path(f.parent)
        if p != "/":
            p += "/"
        return p + (f.lfn if f.lfn is not None else _file_name(f.de[:11]))

    def bad_name(self, f):
        n = f.de[:11]
        if not f.offset:
            return False
        if f.lfn is None and f.lcase & _NO_83NAME:
            return True
        if f.lcase & _NO_83NAME:
            return False
        for i, c in enumerate(n):
            if (c < 0x20 and not (i == 0 and c == 0x05)) or c == 0x7F:
                return True
            if c in _BAD_CHARS:
                return True
        return n[0] == 0x20

    # ------------------------------------------------------------ LFN state
    def _lfn_reset(self):
        self.lfn_slot = -1
        self.lfn_sum = 0
        self.lfn_units = []
        self.lfn_offsets = []
        self.lfn_parts = 0

    def _parts_so_far(self):
        if self.lfn_slot < 0:
            return ""
        return _lfn_text(self.lfn_units[self.lfn_slot * 13:(self.lfn_slot + self.lfn_parts) * 13])

    _units = staticmethod(lfn_units)

    def lfn_check_orphaned(self):
        if self.lfn_slot == -1:
            return
        self.say(f'Orphaned long file name part "{self._parts_so_far()}"', "  Auto-deleting.")
        self._lfn_reset()

    def lfn_add_slot(self, e, off):
        slot = e[0] & 0x1F
        if self.lfn_slot == 0:
            self.lfn_check_orphaned()
        if e[0] & 0x40 and slot != 0:
            if self.lfn_slot != -1:
                self.say("A new long file name starts within an old one.")
                if slot == self.lfn_slot and e[13] == self.lfn_sum:
                    self.say("  It could be that the LFN start bit is wrong here",
                             "  if ... seems to match ....")
                self.say("  Not auto-correcting this.")
            self.lfn_slot = slot
            self.lfn_sum = e[13]
            self.lfn_units = [0] * (slot * 13 + 1)
            self.lfn_offsets = []
            self.lfn_parts = 0
        elif self.lfn_slot == -1 and slot != 0:
            self.say(f'Long filename fragment "{_lfn_text(self._units(e))}" found outside a LFN '
                     "sequence.", "  (Maybe the start bit is missing on the last fragment)",
                     "  Not auto-correcting this.")
            self._lfn_reset()
            return
        elif slot != self.lfn_slot:
            self.say(f"Unexpected long filename sequence number ({slot} vs. expected "
                     f"{self.lfn_slot}).")
            if e[13] == self.lfn_sum and self.lfn_slot > 0:
                self.say("  It could be that just the number is wrong", "  if ... seems to match ....")
            self.say("  Not auto-correcting this.")
            self._lfn_reset()
            return
        if e[13] != self.lfn_sum:
            self.say(f"Checksum in long filename part wrong ({e[13]:02x} vs. expected "
                     f"{self.lfn_sum:02x}).", "  Not auto-correcting this.")
        if self.lfn_slot != -1:
            self.lfn_slot -= 1
            o = self.lfn_slot * 13
            u = self._units(e)
            self.lfn_units[o:o + 13] = u
            if e[0] & 0x40:
                self.lfn_units[o + 13:o + 14] = [0]
            self.lfn_offsets.append(off)
            self.lfn_parts += 1
        if e[12] != 0:
            self.say(f"Reserved field in VFAT long filename slot is not 0 (but 0x{e[12]:02x}).",
                     "Auto-setting to 0.")
            self.write(off + 12, b"\0")
        if _u16(e, 26) != 0:
            self.say(f"Start cluster field in VFAT long filename slot is not 0 (but "
                     f"0x{_u16(e, 26):04x}).", "Auto-setting to 0.")
            self.write(off + 26, b"\0\0")

    def lfn_get(self, de):
        """-> (long name or None, offset of its first slot)"""
        if self.lfn_slot == -1:
            return None, 0
        if self.lfn_slot != 0:
            self.say(f'Unfinished long file name "{self._parts_so_far()}".',
                     f"  (Start may have been overwritten by {_file_name(de[:11])})",
                     "  Not auto-correcting this.")
            self._lfn_reset()
            return None, 0
        s = 0
        for c in de[:11]:
            s = ((((s & 1) << 7) | ((s & 0xFE) >> 1)) + c) & 0xFF
        if s != self.lfn_sum:
            self.say(f'Wrong checksum for long file name "{self._parts_so_far()}".',
                     f"  (Short name {_file_name(de[:11])} may have changed without updating "
                     "the long name)", "  Not auto-correcting this.")
            self._lfn_reset()
            return None, 0
        name = _lfn_text(self.lfn_units)
        off = self.lfn_offsets[0]
        self._lfn_reset()
        return name, off

    # ------------------------------------------------------------ scan
    def add_file(self, chain, parent, offset):
        if offset:
            de = self.read(offset)
        else:
            de = bytearray(32)
            de[:11] = b" " * 11
            de[11] = _ATTR_DIR
            de[26:28] = (self.root_cluster & 0xFFFF).to_bytes(2, "little")
            de[20:22] = (self.root_cluster >> 16).to_bytes(2, "little")
        if de[0] in (0, _DELETED):
            self.lfn_check_orphaned()
            return
        if de[11] == _ATTR_LFN:
            self.lfn_add_slot(de, offset)
            return
        f = _F(de, offset, parent)
        f.lfn, f.lfn_offset = self.lfn_get(de)
        chain.append(f)

    def lfn_remove(self, frm, to, f):
        empty = bytes([_DELETED]) + bytes(31)
        if self.broken:
            a, b = self.cluster_of(frm), self.cluster_of(to)
            if a is not None and b is not None and b < a:
                # the loop below runs zero times: the slots stay (harmless in -n)
                self.backward.append({"path": self.path(f), "from_cluster": a, "to_cluster": b})
            if a is not None and b is not None and b > a + 1:
                gap = list(range(a + 1, b))
                self.crossings.append({"path": self.path(f), "from": frm, "to": to,
                                       "from_cluster": a, "to_cluster": b, "gap": gap,
                                       "live": [c for c in gap if self.fat[c] != 0]})
            while frm < to:
                self.write(frm, empty)
                frm += 32
        else:
            for off in self._slots_between(frm, to):
                self.write(off, empty)

    def _slots_between(self, frm, to):
        """The slots a correct lfn_remove would delete: from `frm` along the
        directory's own cluster chain up to (not including) `to`."""
        out, off = [], frm
        while off != to and len(out) < 64:
            out.append(off)
            off += 32
            c = self.cluster_of(off - 32)
            if c is not None and (off - self.data_start) % self.csize == 0:
                n = self.next_cluster(c)
                if n == -1:
                    break
                off = self.cluster_start(n)
        return out

    def auto_rename(self, f, siblings):
        if not f.offset:
            self.say("Cannot rename FAT32 root dir")
            return
        num = 0
        while True:
            name = b"FSCK" + b"%07d" % num
            if not any(w is not f and bytes(w.de[:11]) == name for w in siblings):
                break
            num += 1
        f.de[:11] = name
        if f.lcase & _NO_83NAME:
            f.de[12] &= ~_NO_83NAME & 0xFF
            f.de[11] &= ~(_ATTR_DIR | _ATTR_VOLUME) & 0xFF
            self.write(f.offset, bytes(f.de[:13]))
        else:
            self.write(f.offset, bytes(f.de[:11]))
        if f.lfn is not None:
            self.lfn_remove(f.lfn_offset, f.offset, f)
            f.lfn = None

    def check_dir(self, files, dots):
        if not files:
            return
        parent = files[0].parent
        bad = sum(1 for f in files if self.bad_name(f))
        good = len(files) - bad
        if parent is not None and good + bad > 4 and bad > good // 2:
            self.say(self.path(parent), f"  Has a large number of bad entries. ({bad}/{good + bad})",
                     "  Not dropping root directory." if not dots else "  Not dropping it in auto-mode.")
        for i, f in enumerate(files):
            if not f.attr & _ATTR_VOLUME and self.bad_name(f):
                self.say(self.path(f), f"  Bad short file name ({_file_name(f.de[:11])}).",
                         "  Auto-renaming it.")
                self.auto_rename(f, files)
                self.say(f"  Renamed to {_file_name(f.de[:11])}")
            if not f.attr & _ATTR_VOLUME:
                for s in files[i + 1:]:
                    if not s.attr & _ATTR_VOLUME and s.de[:11] == f.de[:11]:
                        self.say(self.path(f), "  Duplicate directory entry.", "  First  -",
                                 "  Second -", "  Auto-renaming second.")
                        self.auto_rename(s, files)
                        self.say(f"  Renamed to {_file_name(s.de[:11])}")

    def check_file(self, f):
        if f.free():
            return
        size = _u32(f.de, 28)
        if f.attr & _ATTR_DIR:
            if size:
                self.say(self.path(f), "  Directory has non-zero size. Fixing it.")
            st = self.fstart(f)
            if st == 0:
                self.say(self.path(f), " Start does point to root directory. Deleting dir. ")
                return
            if f.parent is not None:
                par = self.fstart(f.parent)
                gp = self.fstart(f.parent.parent) if f.parent.parent is not None else 0
                if self.root_cluster and gp == self.root_cluster:
                    gp = 0
                if st == par or st == gp:
                    self.say(self.path(f), " Start does point to containing directory. "
                             "Deleting entry.")
                    return
        st = self.fstart(f)
        if st == 1 or st >= self.data_clusters + 2:
            self.say(self.path(f), "  Bad start cluster. Truncating file.")
            return
        clusters = 0
        curr = st if st else -1
        while curr != -1:
            v = self.fat[curr]
            if not v or self.is_bad(v):
                self.say(self.path(f), f"  Contains a {'bad' if v else 'free'} cluster ({curr}). "
                         "Assuming EOF.")
                break
            if not f.attr & _ATTR_DIR and size <= clusters * self.csize:
                self.say(self.path(f), f"  File size is {size} bytes, cluster chain length is > "
                         f"{clusters * self.csize} bytes.", f"  Truncating file to {size} bytes.")
                break
            if curr in self.owner:
                self.say(self.path(self.owner[curr]) + "  and", self.path(f), "  share clusters.",
                         "  Truncating second.")
                break
            self.owner[curr] = f
            clusters += 1
            curr = self.next_cluster(curr)
        if not f.attr & _ATTR_DIR and size > clusters * self.csize:
            self.say(self.path(f), f"  File size is {size} bytes, cluster chain length is "
                     f"{clusters * self.csize} bytes.",
                     f"  Truncating file to {clusters * self.csize} bytes.")

    def handle_dot(self, f, dotdot):
        name, ent = ("..", b"..         ") if dotdot else (".", b".          ")
        this = f.parent
        if dotdot:
            start = 0 if this.parent is None else self.fstart(this.parent)
            if start == self.root_cluster:
                start = 0
        else:
            start = self.fstart(this)
        if not f.attr & _ATTR_DIR or self.fstart(f) != start or bytes(f.de[:11]) != ent:
            if f.free():
                self.say(self.path(this), f"  Expected a valid '{name}' entry in the "
                         f"{'second' if dotdot else 'first'} slot, found free entry.", "  Creating.")
            elif bytes(f.de[:11]) == ent:
                self.say(self.path(this), f"  Invalid '{name}' entry in the "
                         f"{'second' if dotdot else 'first'} slot. Fixing.")
                return
            else:
                self.say(self.path(f), f"  Expected a valid '{name}' entry in this slot.",
                         "  Moving entry down.")
            de = bytearray(32)
            de[:11] = ent
            de[11] = _ATTR_DIR
            de[26:28] = (start & 0xFFFF).to_bytes(2, "little")
            de[20:22] = (start >> 16).to_bytes(2, "little")
            self.write(f.offset, bytes(de))
            return
        if f.lcase & _NO_83NAME:
            self.say(self.path(f), "  Is a dot with no 8.3 name flag set, clearing.")

    def slots(self, d):
        """Offsets fsck.fat reads for directory d, in order (after the dots)."""
        st = self.fstart(d)
        for c in self.chain(st):
            base = self.cluster_start(c)
            for i in range(self.csize // 32):
                yield base + 32 * i

    def scan_dir(self, d):
        self._lfn_reset()
        st = self.fstart(d)
        offs = list(self.slots(d)) if st else []
        if offs and d.offset:
            for k in (0, 1):
                f = _F(self.read(offs[k]), offs[k], d)
                before = len(self.lines)
                self.handle_dot(f, k == 1)
                if len(self.lines) != before and k == 0:
                    c = self.cluster_of(offs[0])
                    if any(c in x["gap"] for x in self.crossings):
                        self.wiped_dirs.append(self.path(d))
            offs = offs[2:]
        for off in offs:
            self.add_file(d.first, d, off)
        self.lfn_check_orphaned()
        self.check_dir(d.first, d.offset)
        for f in d.first:
            self.check_file(f)
        self.subdirs(d)

    def subdirs(self, d):
        for f in (d.first if d is not None else self.root):
            if not f.free() and f.attr & _ATTR_DIR:
                self.scan_dir(f)

    def run(self):
        self.root = []
        self._lfn_reset()
        if self.root_cluster:
            self.add_file(self.root, None, 0)
        else:
            for i in range(self.root_entries):
                self.add_file(self.root, None, self.root_start + 32 * i)
        self.lfn_check_orphaned()
        self.check_dir(self.root, 0)
        for f in self.root:
            self.check_file(f)
        self.subdirs(None)
        self.reclaim_and_count()
        self.d.close()
        self.text = "\n".join(self.lines) + "\n"
        self.complaints = parse_fsck(self.text)
        return self

    def root_entries_list(self):
        """The entries of the root directory as fsck.fat listed them."""
        return self.root[0].first if self.root_cluster and self.root else self.root

    def reclaim_and_count(self):
        reclaimed = 0
        bad = 0xFF7 | self._extd()
        fat, owner = self.fat, self.owner
        for c in range(2, self.data_clusters + 2):
            v = fat[c]
            if v and v != bad and c not in owner:
                fat[c] = 0
                reclaimed += 1
        if reclaimed:
            self.say(f"Reclaimed {reclaimed} unused cluster{'' if reclaimed == 1 else 's'} "
                     f"({reclaimed * self.csize} bytes).")
        self.reclaimed = reclaimed
        free = (self.data_clusters - fat[2:].count(bad)
                - sum(1 for c in owner if 2 <= c < self.data_clusters + 2 and fat[c] != bad))
        if self.fsinfo_free is not None:
            if self.fsinfo_free == 0xFFFFFFFF:
                self.say(f"Free cluster summary uninitialized (should be {free})")
            elif free != self.fsinfo_free:
                self.say(f"Free cluster summary wrong ({self.fsinfo_free} vs. really {free})",
                         "  Auto-correcting.")


def simulate(image, broken_lfn_remove=True):
    """FsckSim(...).run() on an image file (or its bytes)."""
    return FsckSim(image, broken_lfn_remove).run()
