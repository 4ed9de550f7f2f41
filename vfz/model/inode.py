"""What Linux 6.1 does to an inode besides its name: truncate, attributes,
times (fs/fat/file.c, misc.c), and the volume label, for the Model.

Read from Debian's 6.1 fs/fat, as the kernel oracle mounts it (no tz= or
time_offset=, in a guest whose sys_tz is 0: local time is UTC; root, so
CAP_DAC_OVERRIDE: see docs/op-script.md "Linux 6.1's results"):
  * truncate: EISDIR on a directory (the root, "." and ".." too), ENOTDIR
    for "file/"; a larger size is zero-filled (fat_cont_expand), ATTR_ARCH
    is set by fat_write_end; a smaller or equal one sets ATTR_ARCH when
    the file had clusters (fat_free: a non-empty file). The modify time
    is the writer's clock.
  * chattr (FAT_IOCTL_SET_ATTRIBUTES): the root takes only the empty set
    (EINVAL); any other entry gets exactly the letters, a directory keeps
    ATTR_DIR. No time changes (ctime has no field on FAT).
  * touch (utimensat): both times are clamped to 1980-01-01 00:00:00 ..
    2107-12-31 23:59:58 (s_time_min/max), the modify time truncated to
    2 s, the access time to the day; the creation time stays; the root's
    times never change (it has no entry).
  * read-only files: the agent runs as root, whose CAP_DAC_OVERRIDE opens
    a file without write bits for writing, so write and truncate succeed,
    as do rename and unlink (the directory is writable).
  * a write stamps ATTR_ARCH and the writer's clock on the modify time;
    a new or removed entry stamps the clock on its directory's times.
  * label (not Linux: dosfstools' fatlabel rules, which the core follows):
    "" removes it; else 1-11 printable ASCII characters, none of
    "*+,./:;<=>?[\\]|, no leading space; a new label entry takes one slot
    of a FAT12/16 root (ENOSPC when none is free).
Times are seconds since the epoch; None = stamped by the writer's clock.
"""
from vfz.model.names import trailing_slash

ATTR_RO, ATTR_HIDDEN, ATTR_SYS, ATTR_DIR, ATTR_ARCH = 0x01, 0x02, 0x04, 0x10, 0x20
LETTER_BITS = {"r": ATTR_RO, "h": ATTR_HIDDEN, "s": ATTR_SYS, "a": ATTR_ARCH}
FAT_MIN_SEC = 315532800        # 1980-01-01 00:00:00 UTC
FAT_MAX_SEC = 4354819198       # 2107-12-31 23:59:58 UTC
LABEL_BAD = set('"*+,./:;<=>?[\\]|')


def stored_mtime(sec):
    """The modify time Linux stores for utimensat's sec."""
    return min(max(sec, FAT_MIN_SEC), FAT_MAX_SEC) & ~1


def stored_atime(sec):
    """The access date Linux stores, as seconds (UTC midnight)."""
    s = min(max(sec, FAT_MIN_SEC), FAT_MAX_SEC)
    return s - s % 86400


def label_slot(raw):
    """The root's first live volume-label entry (fatlabel's find_volume_de):
    its slot, or None; the scan ends at the end-of-directory mark."""
    for i in range(len(raw) // 32):
        b0, attr = raw[i * 32], raw[i * 32 + 11]
        if b0 == 0:
            return None
        if b0 != 0xE5 and attr != 0x0F and attr & 0x08:
            return i
    return None


def label_err(text):
    """None for a label the core (fatlabel's rules) writes, else the errno."""
    if text == "":
        return None
    if len(text) > 11 or text[0] == " ":
        return "EINVAL"
    if any(not (0x20 <= ord(c) < 0x7F) or c in LABEL_BAD for c in text):
        return "EINVAL"
    return None


def volume_label(image):
    """{"boot": the boot sector's label (None without the 0x29 signature),
    "root": the root's first live label entry (None without one)} of an
    image file, trailing spaces dropped, bytes >= 0x80 as their code point
    (as `vfat label` prints them)."""
    from vfz.fatimg import Fat
    with open(image, "rb") as f:
        fat = Fat(f.read(), copy=False)
    b = fat.b
    sig, at = (66, 71) if fat.bits == 32 else (38, 43)
    text = lambda raw: bytes(raw).rstrip(b" ").decode("latin-1")   # noqa: E731
    out = {"boot": text(b[at:at + 11]) if b[sig] == 0x29 else None, "root": None}
    for _, e in fat.entries(None):
        if e[0] != 0xE5 and e[11] != 0x0F and e[11] & 0x08:
            out["root"] = text(e[:11])
            break
    return out


class InodeOps:
    """Mixin of Model: the ops of the second grammar."""

    label_set = False           # a label op succeeded: self.label is the volume's label
    label_before = None         # the image's label before the script (volume_label)

    def label_from(self, image):
        """Read the label the script starts from (for expected_label); a profile whose writer
        makes its own volume says its label (knob "label": vvfat's)."""
        self.label_before = self.p["label"] if "label" in self.p else volume_label(image)

    def expected_label(self):
        """The volume label after the script ({"boot", "root"}, as
        volume_label), or None when unknown (no label op succeeded and
        label_from was not called). A label the profile stores otherwise
        (knob "label_root": mtools upper-cases the root entry's) follows it."""
        if not self.label_set:
            return self.label_before
        root = self.label
        if root is not None and "label_root" in self.p:
            root = self.p["label_root"](root)
        return {"boot": self.label if self.label is not None else "NO NAME", "root": root}

    def _resolve(self, path):
        """The node open(path) finds -> (node, errno)."""
        node, err = self._walk(self._split(path))
        if err:
            return None, err
        if trailing_slash(path) and not node.is_dir:
            return None, "ENOTDIR"
        return node, None

    def _dir_changed(self, d, removed=False):
        """A directory gained or lost an entry: its modify time (and, for a
        removal, its access time) is the writer's clock (the root has none)."""
        if d is not None and d is not self.root:
            d.mtime = None
            if removed or self.p.get("dir_atime") == "clock":
                d.atime = None

    def _ro_refused(self, node, kind):
        """Knob ro_refuses (a set of op kinds): the writer refuses them on a
        read-only entry with EACCES, as Linux does for a caller without
        CAP_DAC_OVERRIDE (FatFs, the npm fatfs package)."""
        return "EACCES" if node.attr & ATTR_RO and kind in self.p.get("ro_refuses", ()) else None

    def _stamp_write(self, node):
        """A write or truncate changed node's data: the archive bit, the
        writer's clock on the modify time (and, knob write_atime "clock",
        on the access date: a writer that rewrites the entry, mtools)."""
        node.attr |= ATTR_ARCH
        node.mtime = None
        if self.p.get("write_atime") == "clock":
            node.atime = None

    def _op_truncate(self, path, size):
        node, err = self._walk(self._split(path))
        if err:
            return err
        if node.is_dir:
            return "EISDIR"
        if trailing_slash(path):
            return "ENOTDIR"
        err = self._ro_refused(node, "truncate")
        if err:
            return err
        d = node.data
        if size >= len(d) and "truncate_grow" in self.p:
            return self.p["truncate_grow"]      # a writer that only shrinks (fusefat)
        if size == len(d) and self.p.get("truncate_same") == "noop":
            return "ok"         # the writer changes nothing (no archive bit, no time)
        space, s, want = getattr(self, "space", None), len(d), size
        m = space.mmu(node) if space is not None else None
        if space is not None and size > s:
            size = space.kept(s, size, size, False, m)     # fat_cont_expand: whole pages
        # fat_free (ATTR_ARCH) also ends a growth that ran out: on any file with a
        # first cluster, one it had or one it got before the volume ran out
        if size > len(d) or len(d) or (space is not None and want > s and space.free):
            self._stamp_write(node)
        else:
            node.mtime = None
        if space is not None:
            if size > s:
                space.grow(s, size)
            else:
                space.free += space.clusters(s) - space.clusters(size)
            if size == want > s:
                space.mapped_to(node, m, size)
            elif want > s:
                node.mmu = size     # fat_write_failed: truncated to the size kept
            else:
                # fat_truncate_blocks lowers mmu_private to the size, exact (a truncate
                # to the same size too)
                node.mmu = min(m, size)
        if size > len(d):
            d.extend(b"\0" * (size - len(d)))
        else:
            del d[size:]
        return "ok" if size == want else "ENOSPC"

    def _op_chattr(self, path, letters):
        node, err = self._resolve(path)
        if err:
            return err
        bits = sum(LETTER_BITS[c] for c in letters)
        if node is self.root:
            return "EINVAL" if bits else "ok"
        err = self._ro_refused(node, "chattr")
        if err:
            return err
        node.attr = bits | (ATTR_DIR if node.is_dir else 0)
        return "ok"

    def _op_touch(self, path, mtime, atime):
        node, err = self._resolve(path)
        if err:
            return err
        if node is self.root:
            return "ok"
        if node.is_dir and "touch_dir" in self.p:
            return self.p["touch_dir"]          # a writer that cannot date a directory
        err = self._ro_refused(node, "touch")
        if err:
            return err
        node.mtime = stored_mtime(mtime.sec)
        # knob touch_atime "mtime": the writer stores one time, the access
        # date follows the modify time (mtools' mcopy -m)
        node.atime = stored_atime(mtime.sec if self.p.get("touch_atime") == "mtime" else atime.sec)
        return "ok"

    def _op_label(self, text):
        err = self.p.get("label_err", label_err)(text)
        if err:
            return err
        fixed = self.fixed if self.fixed is not None else self.root.table   # the root's slots
        if text == "":
            if fixed is not None and fixed.label_slot is not None:
                fixed.free((fixed.label_slot, 1))
                fixed.label_slot = None
            self.label = None
            self.label_set = True
            return "ok"
        if fixed is not None and fixed.label_slot is None:
            first = fixed.alloc(1, self.space)
            if first is None:
                return "ENOSPC"
            fixed.label_slot = first
        self.label = text
        self.label_set = True
        return "ok"

    def inode(self, path):
        """(is_dir, size, attr) of the entry open(path) finds now; None for
        the root (no entry) and a path that names nothing."""
        node, err = self._resolve(path)
        if err or node is self.root:
            return None
        return node.is_dir, (0 if node.is_dir else len(node.data)), node.attr

    def inodes(self):
        """{path: {"attr": byte, "mtime": s or None, "atime": s or None}}
        of every entry (None: the writer's clock)."""
        out = {}
        stack = [(self.root, "")]
        while stack:
            d, path = stack.pop()
            for k in d.kids.values():
                p = path + "/" + k.name
                out[p] = {"attr": k.attr, "mtime": k.mtime, "atime": k.atime}
                if k.is_dir:
                    stack.append((k, p))
        return out
