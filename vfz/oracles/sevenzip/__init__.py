"""7-Zip (p7zip-full, Debian 12) as a reader of FAT images.

`7z l -slt IMAGE` lists every entry ("Path = Dir A/file", "Folder = +|-",
"Size = N", "Short Name = ..."); `7z x -y -oTMP IMAGE` extracts the tree,
which is then walked to build the canonical listing (names that are not
valid UTF-8 on the host -- 7-Zip writes raw OEM bytes for some bare 8.3
names -- become U+FFFD per bad byte). The -slt listing is kept in
extra["slt"] and cross-checked against the extracted tree: an entry that
was listed but not extracted (or the reverse) is a complaint.
Known quirk (vfz.model EXCEPTIONS "7z-nonascii-short"): bare 8.3 names with
non-ASCII characters are not decoded through cp437.
"""
import os
import shlex
import shutil
import tempfile

from vfz import model
from vfz.oracles.evidence import lost_behind_dummy_05, raw_short_explains
from vfz.oracles import Entry, NamedException, Reader
from vfz import listing
from vfz.proc import run

ENV = {"LC_ALL": "C.UTF-8", "LANG": "C.UTF-8"}
NONASCII_SHORT = "7z-nonascii-short"


def _fix(name):
    """Host name (str, surrogateescape) -> canonical text."""
    b = os.fsencode(name)
    return b.decode("utf-8", "replace")


def parse_slt(text):
    items = []
    cur = None
    started = False
    # "\n" only (p7zip ends lines with it): str.splitlines() would also
    # break a "Path = " line at \r \v \f \x1c-\x1e \x85 U+2028 U+2029,
    # characters a long name may hold
    for line in text.split("\n"):
        if line.startswith("----------"):
            started = True
            continue
        if not started:
            continue
        if not line.strip():
            if cur:
                items.append(cur)
            cur = None
            continue
        k, sep, v = line.partition(" = ")
        if not sep:
            k, v = line.rstrip(" ="), ""
        if cur is None:
            cur = {}
        cur[k.strip()] = v
    if cur:
        items.append(cur)
    return [i for i in items if "Path" in i]


class SevenZipReader(Reader):
    @staticmethod
    def name_exception(exp, act):
        if exp != act and not exp.isascii() and model._bare_shown(exp) and act == model._raw_oem(exp, False):
            return NONASCII_SHORT
        return None

    @staticmethod
    def explain(ev):
        if ev.verdict != "differs":
            return None
        if lost_behind_dummy_05(ev):
            return V3_DUMMY_05
        # bare names whose raw bytes show alike ('ç' and '▄': U+FFFD both),
        # which a name-by-name mapping cannot pair: the whole listing
        return NONASCII_SHORT if not ev.rr.complaints and raw_short_explains(ev, False) else None

    def __init__(self, name="7z", sevenzip="7z", **cfg):
        self.name = name
        self.cmd = shlex.split(sevenzip) if isinstance(sevenzip, str) else list(sevenzip)


    def _read(self, image, timeout, r):
        if not os.path.isfile(image):
            r.error = f"no such image: {image}"
            return
        p = run([*self.cmd, "l", "-slt", "-tFAT", image], timeout=timeout, env=ENV)
        r.raw += p.raw()
        if p.error or p.rc != 0:
            r.error = p.error or f"7z l exit {p.rc}: {(p.errtext or p.text).strip()[-200:]}"
            return
        slt = parse_slt(p.text)
        r.extra["slt"] = [{k: i.get(k) for k in ("Path", "Folder", "Size", "Short Name")} for i in slt]
        tmp = tempfile.mkdtemp(prefix="vfz-7z-")
        try:
            x = run([*self.cmd, "x", "-y", "-tFAT", "-o" + tmp, image], timeout=timeout, env=ENV)
            r.raw += x.raw()
            if x.error:
                r.error = f"7z x: {x.error}"
                return
            if x.rc != 0:
                r.complaints.append(f"7z x exit {x.rc}: {(x.errtext or x.text).strip()[-200:]}")
            entries = []
            for root, dirs, files in os.walk(tmp):
                rel = os.path.relpath(root, tmp)
                base = "" if rel == "." else "/" + _fix(rel)
                for d in dirs:
                    entries.append(listing.entry(base + "/" + _fix(d), "dir"))
                for f in files:
                    with open(os.path.join(root, f), "rb") as fh:
                        entries.append(listing.entry(base + "/" + _fix(f), "file", fh.read()))
            r.listing = sorted(entries, key=lambda e: e["path"])
            listed = {"/" + i["Path"] for i in slt}
            got = {e["path"] for e in entries}
            for pth in sorted(listed - got):
                r.complaints.append(f"listed but not extracted: {pth}")
            for pth in sorted(got - listed):
                r.complaints.append(f"extracted but not listed: {pth}")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


# ---------------------------------------------------------------- registry
EXPORTS = {"7z": "vfz.oracles.sevenzip.export"}   # its reproducer template (vfz/oracles/repro.py)
ENTRIES = [Entry("7z", "7z", iotrace="preload", reader="vfz.oracles.sevenzip:SevenZipReader", needs=("p7zip-full",),
                 label="7-Zip")]

FAMILY = "7z"
V3_DUMMY_05 = "v3-dummy-05"
EXCEPTIONS = [
    NamedException(NONASCII_SHORT, FAMILY, "reader",
                   "7-Zip (p7zip 16.02) lists and extracts a bare 8.3 name's bytes >= 0x80 raw "
                   "(cp437 bytes, e.g. 'caf\\x90.txt'), not decoded to Unicode: each non-ASCII "
                   "character of a short-only name reads as U+FFFD",
                   "the shown name is the cp437 bytes of the expected one decoded as UTF-8; or, "
                   "where such names show alike, the whole listing is the image with every bare "
                   "8.3 name as its raw bytes (SevenZipReader.explain, raw_short_explains)"),
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
