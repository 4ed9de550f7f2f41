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

from vfz.oracles import Entry, Reader, ReadResult, Timer
from vfz import listing
from vfz.proc import run

LINE = re.compile(rb"^(DIR|\d+)\s+(\d{14})? ?(.*)$")
MAX_DIRS = 4096
DEV = "(loop0)"     # grub-fstest's name for the image


class GrubReader(Reader):
    def __init__(self, name="grub", fstest="grub-fstest", **cfg):
        self.name = name
        self.cmd = shlex.split(fstest) if isinstance(fstest, str) else list(fstest)

    def read(self, image, timeout=30.0):
        r = ReadResult(self.name)
        with Timer() as t:
            try:
                self._read(image, timeout, r)
            except Exception as e:
                r.error = f"grub reader: {type(e).__name__}: {e}"
                r.listing = None
        r.seconds = t.seconds
        return r

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
ENTRIES = [Entry("grub", "grub", reader="vfz.oracles.grub:GrubReader", needs=("grub-common",))]
