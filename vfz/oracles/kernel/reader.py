"""The kernel reader: an image mounted in the guest, walked and hashed by its agent.

One pipeline per image: the image in, the mount, the walk (with a share
of the timeout as its budget), the unmount, the kernel messages; the
answers become a ReadResult as the package's docstring describes. The
variants differ only in their module set.
"""
import struct

from vfz.oracles import Reader, ReadResult, Timer
from vfz.oracles.kernel.answers import STORAGE_RE, _txt, complaints_of, parse_kmsg, parse_listing
from vfz.oracles.kernel import trace
from vfz.oracles.kernel.guest import _KernelBase
from vfz.oracles.kernel.vm import VMError, encode_image_file, s


MS_RDONLY = 1
WALK_SHARE = 0.6   # of a read's timeout the walk may spend before it stops


class KernelReader(_KernelBase, Reader):
    # the agent lists FAT_IOCTL_GET_ATTRIBUTES and statx's times of every
    # entry it opens: attributes, modify, access and creation time (btime:
    # fat_getattr gives i_crtime, with its 10-ms field)
    shows = ("attr", "mtime", "atime", "crtime", "crtime_ns")
    # The mask: fat_save_attrs keeps ATTR_RO|ATTR_HIDDEN|ATTR_SYS|
    # ATTR_VOLUME|ATTR_ARCH of the entry's byte in the inode and
    # fat_make_attrs adds ATTR_DIR from the mode; bits 0x40 and 0x80 never
    # reach the inode, so the ioctl cannot show them. The times are shown
    # whole (the root has no entry and is not listed).
    ATTR_SHOWN = 0x3F

    @classmethod
    def shown(cls, field, value):
        return value & cls.ATTR_SHOWN if field == "attr" else value

    def __init__(self, name="kernel", **cfg):
        _KernelBase.__init__(self, name, **cfg)

    def read(self, image, timeout=30.0, options=None):
        """options: mount options for this request only (default cfg options)."""
        return self.read_many([image], timeout, options)[0]

    def read_many(self, images, timeout=30.0, options=None):
        out = []
        for img in images:
            out.append(self._read_one(img, timeout, options or self.options))
        return out

    def _read_one(self, image, timeout, options):
        r = ReadResult(self.name)
        with Timer() as t:
            try:
                # its data extents only (traced: the host puts it on the drive)
                data = b"" if self.iotrace else encode_image_file(image)
            except OSError as e:
                r.error = f"cannot read image: {e.strerror}"
                data = None
            if data is not None:
                try:
                    vm, mods = self._vm()
                    flags = MS_RDONLY if self.read_only else 0
                    frames = [("B" if self.iotrace else "I", data),
                              ("O", struct.pack("<I", flags) + s(self.fstype) + s(options)),
                              ("L", struct.pack("<II", 0 if self.hash else 1,
                                                int(timeout * 1000 * WALK_SHARE))),
                              ("U", self._uflags()), ("K", b"")]
                    if self.hang_ms:
                        frames.insert(0, ("H", struct.pack("<I", self.hang_ms)))
                    try:
                        if self.iotrace:    # the image on the traced drive, by op (trace.py)
                            groups = trace.reader_groups(frames, f"mount -t {self.fstype} -o {options}")
                            replies, r.extra["iotrace"] = trace.pipeline(vm, image, groups, timeout, mods)
                        else:
                            replies = vm.pipeline(frames, timeout, modules=mods)
                    finally:
                        if not self.persistent:
                            vm.close()
                    if self.hang_ms:
                        replies.pop(0)
                    (ist, ip), (mst, mp), (lst, lp), (ust, up), (_, kp) = replies
                    self._fill(r, options, ist, ip, mst, mp, lst, lp, ust, up, kp)
                except VMError as e:
                    r.error = f"kernel VM: {e}"
                    r.raw += f"[error] {e}\n"
        r.seconds = t.seconds
        return r

    def _fill(self, r, options, ist, ip, mst, mp, lst, lp, ust, up, kp):
        msgs = parse_kmsg(kp)
        r.extra["kmsg"] = msgs
        r.extra["mount"] = _txt(mp)
        r.raw = (f"[image] {_txt(ip).strip()}\n[mount {self.fstype} {options}"
                 f"{' ro' if self.read_only else ''}] {_txt(mp)}\n")
        if ist != "o":
            r.error = "image transfer failed: " + _txt(ip).strip()
            return
        if mst != "o":
            r.complaints.append(f"mount failed: {_txt(mp)}")
        else:
            entries, errors = parse_listing(lp)
            r.listing = entries
            seen = {}
            for e in entries:
                seen[e["path"]] = seen.get(e["path"], 0) + 1
            errors += [f"listing: {p} listed {n} times" for p, n in seen.items() if n > 1]
            r.extra["walk_errors"] = errors
            r.complaints.extend(errors)
            r.raw += "[list]\n" + _txt(lp)
            if any(e.startswith("limit ") and e.endswith(": time") for e in errors) or \
                    any(e.get("read_error") == "ETIME" for e in entries):
                r.error = ("timeout: the walk spent its budget "
                           f"({WALK_SHARE:.0%} of the timeout); listing is partial")
        if ust != "o":
            r.complaints.append("umount: " + _txt(up).strip())
        r.raw += f"[umount] {_txt(up).strip()}\n[kmsg]\n" + "".join(m + "\n" for m in msgs)
        bad = [m for m in msgs if STORAGE_RE.search(m)]
        if bad and not r.error:
            r.error = f"guest storage failed (image too large for mem={self.mem}?): {bad[0]}"
        for c in complaints_of(msgs):
            if c not in r.complaints:
                r.complaints.append(c)


class KernelNodualReader(KernelReader):
    variant = "v1"
    seeded = True

    def __init__(self, name="kernel-nodual", **cfg):
        KernelReader.__init__(self, name, **cfg)


class KernelNodualV3Reader(KernelReader):
    variant = "v3"
    seeded = True

    def __init__(self, name="kernel-nodual-v3", **cfg):
        KernelReader.__init__(self, name, **cfg)


class KernelNo83Reader(KernelReader):
    """Stock 6.1 with the July 2009 reader side only (FAT_NO_83NAME): what
    the reader patch alone changes."""
    variant = "no83"

    def __init__(self, name="kernel-no83", **cfg):
        KernelReader.__init__(self, name, **cfg)
