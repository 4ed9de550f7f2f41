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


class InodeOps:
    """Mixin of Model: the ops of the second grammar."""

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
            if removed:
                d.atime = None

    def _op_truncate(self, path, size):
        node, err = self._walk(self._split(path))
        if err:
            return err
        if node.is_dir:
            return "EISDIR"
        if trailing_slash(path):
            return "ENOTDIR"
        d = node.data
        if size > len(d) or len(d):
            node.attr |= ATTR_ARCH
        if size > len(d):
            d.extend(b"\0" * (size - len(d)))
        else:
            del d[size:]
        node.mtime = None
        return "ok"

    def _op_chattr(self, path, letters):
        node, err = self._resolve(path)
        if err:
            return err
        bits = sum(LETTER_BITS[c] for c in letters)
        if node is self.root:
            return "EINVAL" if bits else "ok"
        node.attr = bits | (ATTR_DIR if node.is_dir else 0)
        return "ok"

    def _op_touch(self, path, mtime, atime):
        node, err = self._resolve(path)
        if err:
            return err
        if node is not self.root:
            node.mtime = stored_mtime(mtime.sec)
            node.atime = stored_atime(atime.sec)
        return "ok"

    def _op_label(self, text):
        err = label_err(text)
        if err:
            return err
        fixed = self.fixed
        if text == "":
            if fixed is not None and fixed.label_slot is not None:
                fixed.free((fixed.label_slot, 1))
                fixed.label_slot = None
            self.label = None
            return "ok"
        if fixed is not None and fixed.label_slot is None:
            first = fixed.alloc(1)
            if first is None:
                return "ENOSPC"
            fixed.label_slot = first
        self.label = text
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
