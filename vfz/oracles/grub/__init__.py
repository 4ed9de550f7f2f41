"""GRUB 2.06 (grub-fstest, grub-common) as a reader of FAT images.

`grub-fstest IMAGE -- ls -la DIR/` prints "SIZE|DIR  YYYYMMDDhhmmss NAME"
per entry (directories end in "/", "./" and "../" in subdirectories);
directories are walked recursively, one process each, and every file is
copied out with `grub-fstest IMAGE -- cp PATH LOCAL` for its hash.
Every path is given with its device, "(loop0)/a/b": GRUB takes
everything up to the first ')' of a path as a device name, so without
the prefix a directory named ")}" made "/a/)}/" list as empty (found by
the campaign). GRUB prints bare 8.3 names as raw on-disk bytes, lower-cased for ASCII
(vfz.model EXCEPTIONS "grub-lowercase-83"); bytes that are not UTF-8
become U+FFFD in the canonical path.
"""
import os
import re
import shlex
import shutil
import tempfile

from vfz import model
from vfz.oracles.evidence import lost_behind_dummy_05, raw_short_explains
from vfz.oracles import Entry, NamedException, Reader
from vfz import listing
from vfz.proc import run

LINE = re.compile(rb"^(DIR|\d+)\s+(\d{14})? ?(.*)$")
MAX_DIRS = 4096
DEV = "(loop0)"     # grub-fstest's name for the image
RAW_OEM = "grub-raw-oem-bytes"


class GrubReader(Reader):
    @staticmethod
    def io_exception(o, head, declared, size):
        """GRUB's reads past the volume on every clean one (EXCEPTIONS)."""
        if o.kind != "read" or o.region != "past volume":
            return None
        if o.length <= 32768 and o.offset < size - 3072 and o.offset + o.length > size - 4096:
            return DISK_END
        if o.length <= 32768 and o.offset == 2 << 20:
            return PROBE_2MIB
        if o.length <= 32768 and declared and o.offset == (declared - 1) & ~32767:
            return DISK_CACHE
        return None

    @staticmethod
    def name_exception(exp, act):
        if exp == act:
            return None
        if act == exp.lower() and model.short_only(exp, "winnt"):
            return "grub-lowercase-83"
        if not exp.isascii() and model._bare_shown(exp) and act == model._raw_oem(exp, True):
            return RAW_OEM
        return None

    @staticmethod
    def explain(ev):
        if ev.verdict != "differs":
            return None
        if lost_behind_dummy_05(ev):
            return V3_DUMMY_05
        # bare names whose raw bytes show alike ('ç' and '▄': U+FFFD both),
        # which a name-by-name mapping cannot pair: the whole listing
        return RAW_OEM if not ev.rr.complaints and raw_short_explains(ev, True) else None

    def __init__(self, name="grub", fstest="grub-fstest", **cfg):
        self.name = name
        self.cmd = shlex.split(fstest) if isinstance(fstest, str) else list(fstest)


    def _ls(self, image, d, deadline, r):
        import time
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        p = run([*self.cmd, image, "--", "ls", "-la", DEV + d + "/"], timeout=left)
        r.raw += p.raw()
        if p.timed_out:
            raise TimeoutError
        return p

    def _read(self, image, timeout, r):
        import time
        if not os.path.isfile(image):
            r.error = f"no such image: {image}"
            return
        deadline = time.monotonic() + timeout
        # GRUB's ls of an unrecognised volume prints nothing and exits 0:
        # ask which filesystem it detects first
        p = run([*self.cmd, image, "--", "ls", "-l", "(loop0)"], timeout=timeout)
        r.raw += p.raw()
        if p.error or p.rc != 0:
            r.error = p.error or f"grub-fstest exit {p.rc}: {p.errtext.strip()[-200:]}"
            return
        # "Filesystem type fat - Label `X', UUID ..." or, on a volume
        # without a label, "Filesystem type fat, UUID ..."
        m = re.search(r"Filesystem type ([^\s,]+)", p.text)
        r.extra["fs"] = m.group(1) if m else None
        if not m or m.group(1) != "fat":
            r.error = "GRUB does not recognise the volume: " + p.text.strip()[:200]
            return
        entries = []
        tmp = tempfile.mkdtemp(prefix="vfz-grub-")
        try:
            todo = [b""]
            seen = 0
            while todo:
                d = todo.pop()
                seen += 1
                if seen > MAX_DIRS:
                    r.complaints.append("too many directories (loop?)")
                    break
                try:
                    p = self._ls(image, os.fsdecode(d), deadline, r)
                except TimeoutError:
                    r.error = f"timeout after {timeout:g}s"
                    return
                if p.error or p.rc != 0:
                    msg = p.error or f"grub-fstest ls exit {p.rc}: {p.errtext.strip()[-200:]}"
                    if d == b"":
                        r.error = msg
                        return
                    r.complaints.append(f"{d.decode('utf-8', 'replace')}: {msg}")
                    continue
                for line in p.out.split(b"\n"):
                    if not line.strip():
                        continue
                    m = LINE.match(line)
                    if not m:
                        r.complaints.append(f"unparsed: {line.decode('utf-8', 'replace')}")
                        continue
                    kind, name = m.group(1), m.group(3)
                    if kind == b"DIR":
                        name = name[:-1] if name.endswith(b"/") else name
                        if name in (b".", b".."):
                            continue
                        path = d + b"/" + name
                        entries.append(listing.entry(path.decode("utf-8", "replace"), "dir"))
                        todo.append(path)
                    else:
                        path = d + b"/" + name
                        entries.append(self._file(image, path, tmp, deadline, r, int(kind)))
                        if r.error:
                            return
            r.listing = sorted(entries, key=lambda e: e["path"])
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def _file(self, image, path, tmp, deadline, r, size):
        import time
        local = os.path.join(tmp, "f")
        if os.path.exists(local):
            os.unlink(local)
        left = deadline - time.monotonic()
        text = path.decode("utf-8", "replace")
        if left <= 0:
            r.error = "timeout"
            return listing.entry(text, "file", size=size)
        p = run([*self.cmd, image, "--", "cp", DEV + os.fsdecode(path), local], timeout=left)
        if p.timed_out:
            r.raw += p.raw()
            r.error = f"timeout in cp {text}"
            return listing.entry(text, "file", size=size)
        if p.error or p.rc != 0 or not os.path.exists(local):
            r.raw += p.raw()
            r.complaints.append(f"cannot read {text}: {p.error or p.errtext.strip()[-200:]}")
            return listing.entry(text, "file", size=size)
        with open(local, "rb") as f:
            data = f.read()
        if len(data) != size:
            r.complaints.append(f"{text}: ls says {size} bytes, cp gave {len(data)}")
        return listing.entry(text, "file", data)


# ---------------------------------------------------------------- registry
EXPORTS = {"grub": "vfz.oracles.grub.export"}   # its reproducer template (vfz/oracles/repro.py)
ENTRIES = [Entry("grub", "grub", iotrace="preload", reader="vfz.oracles.grub:GrubReader", needs=("grub-common",),
                 label="GRUB")]

FAMILY = "grub"
V3_DUMMY_05 = "v3-dummy-05"
DISK_END = "grub-disk-end-probe"
DISK_CACHE = "grub-disk-cache-32k"
PROBE_2MIB = "grub-probe-2mib"
EXCEPTIONS = [
    NamedException(DISK_END, FAMILY, "reader",
                   "grub-fstest 2.06 reads 1 KiB at 4 KiB before the end of the disk in every "
                   "command (a probe of the device's end), past the volume when the image goes on "
                   "past it; directly, or through its 32 KiB disk cache when the cache block fits "
                   "the disk. Measured under the I/O trace with `ls -l (loop0)` on a clean 2 MiB "
                   "FAT12 volume padded to 2 MiB + 4, 64, 128, 196 KiB and 1 MiB (1 KiB at end - "
                   "0x1000 each) and a 16 MiB FAT16 one + 1.5 KiB (32 KiB at 0xff8000, end - "
                   "0x8600; docs/iobounds.md)",
                   "a read past the volume of at most 32 KiB that overlaps [image size - 4096, "
                   "image size - 3072) (GrubReader.io_exception)"),
    NamedException(PROBE_2MIB, FAMILY, "reader",
                   "grub-fstest 2.06 reads at the fixed offset 2 MiB in every command (a probe of "
                   "another file system type), past a volume smaller than that when the image goes "
                   "on: measured on the same padded 2 MiB FAT12 volumes (32 KiB at 0x200000, 512 "
                   "bytes when only 1.5 KiB follow), never on the unpadded one",
                   "a read past the volume of at most 32 KiB starting at 0x200000 "
                   "(GrubReader.io_exception)"),
    NamedException(DISK_CACHE, FAMILY, "reader",
                   "GRUB's disk cache reads whole 32 KiB blocks (64 sectors, aligned), so reading "
                   "the volume's last sectors reads on past its end when the volume does not end "
                   "on 32 KiB: measured on the clean 38 912 000-byte FAT32 volume (cp of its "
                   "last file: 32 KiB at 0x2518000, 16 KiB of it past the end)",
                   "a read past the volume of at most 32 KiB of the 32 KiB-aligned block that holds "
                   "the volume's last byte (GrubReader.io_exception); any other block stays a verdict"),
    NamedException(RAW_OEM, FAMILY, "reader",
                   "GRUB prints a bare 8.3 name's bytes >= 0x80 raw (cp437, not UTF-8), so every "
                   "non-ASCII character of a short-only name reads as U+FFFD",
                   "the shown name is the cp437 bytes of the expected one decoded as UTF-8; or, "
                   "where such names show alike, the whole listing is the image with every bare "
                   "8.3 name as its raw bytes (GrubReader.explain, raw_short_explains)"),
    NamedException("grub-lowercase-83", FAMILY, "reader",
                   "GRUB lists a bare 8.3 entry (no LFN) in lower case regardless of the NT case byte",
                   "the shown name is the expected 8.3 name in lower case"),
    NamedException(V3_DUMMY_05, FAMILY, "reader",
                   "a v3 dummy whose first byte is 0x05 (the patch draws it from its invalid set, "
                   "about one long name in 40; FAT stores a leading 0xE5 as 0x05): 7-Zip 16.02 and "
                   "GRUB 2.06 then lose the long name. 7-Zip shows the dummy's bytes as the name; "
                   "GRUB shows a directory under them and drops a file (its dummy holds '/'). "
                   "Linux, fsck.fat and mtools read the name",
                   "every path the reader lost is, or lies under, an entry whose short entry (core "
                   "listing of the image) is a v3 dummy starting with 0x05; one finding per reader",
                   bug="v3-dummy-05"),
]
