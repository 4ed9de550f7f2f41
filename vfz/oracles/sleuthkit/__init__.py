"""The Sleuth Kit 4.11 (Debian 12): what a forensic examiner sees.

`fls -r -p IMAGE` lists every name, allocated and deleted ("r/r * 583:\tD/f"
for a deleted file), with its metadata address; one `tsk_recover -a` writes
the contents of every allocated file to a temporary tree (`icat IMAGE ADDR`
for the files it skips: empty ones, and paths fls lists twice). Allocated entries make the canonical
listing; deleted ones are evidence in extra["deleted"] ([{"path", "type",
"addr"}]): unlink and rename must leave exactly the expected deleted slots.
TSK's virtual files ($MBR, $FAT1, $FAT2, $OrphanFiles and what lies under
it) are left out.

Dummy short entries (named exception sleuthkit-invalid-83, see EXCEPTIONS):
TSK accepts a short entry only if its 11 bytes pass is_83_name
(tsk/fs/fatxxfs_meta.c): no byte below 0x20 nor in " * + , . / : ; < = > ? [
\\ ] |, name[0] not 0x20, no space before a non-space. A v1 dummy (0x20
0x00 ...) and a v3 dummy (its base drawn from invalid bytes) both fail, so
the entry is skipped as if it were garbage -- and the LFN slots collected
before it stay pending and are given to the next valid short entry of the
directory (fatxxfs_dent_parse_buf never checks the LFN checksum: "@@@ Check
the checksum"). On a nodual image sleuthkit therefore loses most long-named
entries and shows others under a neighbour's long name. simulate() predicts
that view from the image's bytes; explain() names the exception only when
sleuthkit's listing is exactly the prediction.
"""
import os
import re
import shutil
import tempfile
from collections import Counter

from vfz import listing
from vfz.fatimg import open_ro
from vfz.oracles.evidence import few_clusters_exception
from vfz.oracles import Entry, NamedException, Reader, ReadResult, Timer
from vfz.proc import run

INVALID_83 = "sleuthkit-invalid-83"
SHORT_ASCII = "sleuthkit-short-ascii"
SLOT_CUT = "sleuthkit-long-name-cut"
CONTROL_CARET = "sleuthkit-control-caret"
ENV = {"LC_ALL": "C.UTF-8", "LANG": "C.UTF-8"}
_LINE = re.compile(r"^([-a-zA-Z])/([-a-zA-Z]) (\* )?(\d+)(?:\(realloc\))?:\t(.*)$")
_VIRTUAL = ("$MBR", "$FAT1", "$FAT2", "$OrphanFiles")
_BAD83 = set(range(0x20)) | {0x22, 0x2A, 0x2B, 0x2C, 0x2E, 0x2F, 0x3A, 0x3B, 0x3C, 0x3D, 0x3E, 0x3F,
                              0x5B, 0x5C, 0x5D, 0x7C}


def parse_fls(text):
    """fls -r -p output -> [(path, type, addr, deleted)] without TSK's virtual files."""
    out = []
    for line in text.split("\n"):
        m = _LINE.match(line)
        if not m:
            continue
        t1, t2, star, addr, path = m.groups()
        if path.split("/")[0] in _VIRTUAL:
            continue
        kind = "dir" if "d" in (t1, t2) else "file"
        out.append(("/" + path, kind, int(addr), bool(star)))
    return out


def is_83_name(n, attr):
    """TSK 4.11 is_83_name on the 11 name bytes."""
    if n[0] not in (0x05, 0x2E) and n[0] in _BAD83:
        return False
    if n[0] == 0x20:
        return False
    if n[1] == 0x2E:
        if n[0] != 0x2E:
            return False
    elif n[1] in _BAD83:
        return False
    if any(c in _BAD83 for c in n[2:11]):
        return False
    if not attr & 0x08:
        for i in range(1, 7):
            if n[i] == 0x20 and n[i + 1] != 0x20:
                return False
        if n[9] == 0x20 and n[10] != 0x20:
            return False
    return True


def _short_text(e):
    """A short entry's name as TSK prints it (NT lower-case flags for A-Z, '.'
    only when ext[0] is used, bytes outside printable ASCII as '^')."""
    name = ""
    for i in range(11):
        c = e[i]
        if c in (0, 0xFF, 0x20):
            continue
        if i == 8:
            name += "."
        lower = e[12] & (0x08 if i < 8 else 0x10)
        ch = chr(c + 32) if lower and 0x41 <= c <= 0x5A else chr(c)
        name += ch if 0x20 <= c < 0x7F else "^"
    return name


def simulate(image):
    """-> (allocated [(path, type)] as TSK 4.11 lists them, [rejected short
    entries {"offset", "short"}]), from the image's bytes (basic checks of an
    allocated directory; deleted entries left out)."""
    fat = open_ro(image)
    out, rejected = [], []
    todo = [("", None)]
    seen = set()
    while todo:
        base, cl = todo.pop()
        units, chk = [], None
        for off in fat.dir_slots(cl):
            e = fat.b[off:off + 32]
            attr = e[11]
            if attr & 0x0F == 0x0F:
                seq = e[0]
                if seq > 0x4F and seq != 0xE5:
                    continue
                if (seq & 0x40 and seq != 0xE5) or e[13] != chk:
                    units, chk = [], e[13]
                part = [int.from_bytes(e[i:i + 2], "little")
                        for i in list(range(1, 11, 2)) + list(range(14, 26, 2)) + [28, 30]]
                units = part + units
                continue
            clus = int.from_bytes(e[26:28], "little") | (int.from_bytes(e[20:22], "little") << 16
                                                         if fat.bits == 32 else 0)
            size = int.from_bytes(e[28:32], "little")
            eoc = fat.eoc(clus) if clus else False
            valid = not ((clus > fat.clusters + 1 and not eoc) or size > fat.clusters * fat.csize
                         or (size and not clus) or not is_83_name(e[:11], attr)
                         or (not any(e[14:20]) and not any(e[22:26]) and not clus and not size))
            if not valid:
                if any(e):
                    rejected.append({"offset": off, "short": bytes(e[:11]).hex()})
                continue                     # the pending LFN stays pending
            if attr & 0x08:                  # volume label: not a file, LFN kept
                continue
            if units:
                u = units[:units.index(0)] if 0 in units else units
                name = b"".join(x.to_bytes(2, "little") for x in u).decode("utf-16-le", "replace")
            else:
                name = _short_text(e)
            units, chk = [], None
            if e[0] == 0xE5 or name in (".", ".."):
                continue
            path = f"{base}/{name}"
            if attr & 0x10:
                out.append((path, "dir"))
                if clus >= 2 and clus not in seen:
                    seen.add(clus)
                    todo.append((path, clus))
            else:
                out.append((path, "file"))
    return sorted(out), rejected


class SleuthkitReader(Reader):
    @staticmethod
    def io_exception(o, head, declared, size):
        """libtsk's reads past the volume on every clean one (EXCEPTIONS)."""
        if o.kind != "read" or o.region != "past volume":
            return None
        if o.offset == size - 512 and o.length == 8:
            return FOOTER_PROBE
        if declared and o.offset < declared and o.length <= 65536:
            return IMAGE_CACHE
        return None

    def __init__(self, name="sleuthkit", fls="fls", icat="icat", recover="tsk_recover", **cfg):
        self.name = name
        self.fls, self.icat, self.recover = fls, icat, recover

    def available(self):
        return shutil.which(self.fls) is not None, f"{self.fls} not installed (package sleuthkit)"

    def read(self, image, timeout=30.0):
        r = ReadResult(self.name)
        with Timer() as t:
            try:
                self._read(image, timeout, r)
            except Exception as e:
                r.error = f"sleuthkit reader: {type(e).__name__}: {e}"
                r.listing = None
        r.seconds = t.seconds
        return r

    def _read(self, image, timeout, r):
        if not os.path.isfile(image):
            r.error = f"no such image: {image}"
            return
        p = run([self.fls, "-r", "-p", "-f", "fat", image], timeout=timeout, env=ENV)
        r.raw = p.raw()
        if p.error or p.rc != 0:
            r.error = f"fls: {p.error or f'exit {p.rc}'}: {p.errtext.strip()[-200:]}"
            return
        entries, deleted = [], []
        items = parse_fls(p.text)
        counts = Counter(path for path, _, _, dead in items if not dead)
        tmp = tempfile.mkdtemp(prefix="vfz-tsk-")
        try:
            # one tsk_recover for the contents of every allocated file (it
            # skips empty files); icat for what it did not write and for
            # paths fls lists twice (one host file cannot hold both)
            rec = run([self.recover, "-a", "-f", "fat", image, tmp], timeout=timeout, env=ENV)
            r.raw += rec.raw()
            for path, kind, addr, dead in items:
                if path.endswith(" (Volume Label Entry)") and path.count("/") == 1:
                    r.extra["label"] = path[1:-len(" (Volume Label Entry)")]   # TSK's convention
                    continue
                if dead:
                    deleted.append({"path": path, "type": kind, "addr": addr})
                    continue
                if kind == "dir":
                    entries.append(listing.entry(path, "dir"))
                    continue
                host = os.path.join(tmp, path.lstrip("/"))
                if counts[path] == 1 and os.path.isfile(host):
                    with open(host, "rb") as f:
                        entries.append(listing.entry(path, "file", f.read()))
                    continue
                c = run([self.icat, "-f", "fat", image, str(addr)], timeout=timeout)
                if c.error or c.rc != 0:
                    r.raw += c.raw()
                    r.complaints.append(f"icat {addr} ({path}): {c.error or f'exit {c.rc}'}")
                    entries.append(listing.entry(path, "file", size=None))
                    continue
                entries.append(listing.entry(path, "file", c.out))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        r.listing = sorted(entries, key=lambda e: e["path"])
        r.extra["deleted"] = deleted

    @staticmethod
    def explain(ev):
        """ev: the divergence's evidence (vfz.oracles.evidence.Evidence: its
        ReadResult ev.rr and the image ev.image; or a dict with "result"
        and "image"). INVALID_83 when the image holds short entries TSK
        rejects and sleuthkit's (path, type) list is exactly simulate()'s
        prediction (made here, only for a divergence)."""
        if isinstance(ev, dict):
            r, image = ev.get("result"), ev.get("image")
        else:
            r, image = getattr(ev, "rr", None), getattr(ev, "image", None)
        if r is None or r.listing is None or not image:
            return None
        try:
            predicted, rejected = simulate(image)
        except Exception:          # a hostile image: no prediction, no exception
            return None
        r.extra["rejected"] = rejected
        got = sorted((e["path"], e["type"]) for e in r.listing)
        if rejected and got == predicted:
            return INVALID_83
        entries = ev.get("entries") if isinstance(ev, dict) else getattr(ev, "entries", None)
        if not rejected and got == predicted and entries is not None and _same_contents(entries, r.listing) \
                and any("^" in p.rpartition("/")[2] for p, _ in got):
            # bare names whose '^' forms coincide ('ç' 0x80 and '▄' 0xDC are
            # both '^'): the name-by-name mapping cannot pair them; the whole
            # listing is the image's, contents as expected
            return SHORT_ASCII
        if entries is not None and slot_cut_explains(entries, r.listing):
            return SLOT_CUT
        return None

    @staticmethod
    def name_exception(expected_leaf, actual_leaf):
        """A bare 8.3 name's non-ASCII bytes show as '^' (fatfs_cleanup_ascii);
        a long name cut after a whole number of LFN slots (SLOT_CUT)."""
        if actual_leaf != expected_leaf and _cut_of(actual_leaf, expected_leaf):
            return SLOT_CUT
        for exp in (expected_leaf, "".join(chr(ord(c) & 0xFFFF) for c in expected_leaf)):
            if "^" in actual_leaf and actual_leaf == "".join("^" if ord(c) < 0x20 else c for c in exp):
                return CONTROL_CARET
        if "^" in actual_leaf or len(actual_leaf) < len(expected_leaf):
            # TSK drops the bytes 0x00, 0xFF and blanks of a short entry: a
            # NBSP is cp437 0xFF (mtools stores 'σ\u00a0ée' bare: E4 FF 90 45)
            shown = "".join("" if c == "\u00a0" else "^" if ord(c) > 0x7E else c for c in expected_leaf)
            if actual_leaf == shown and actual_leaf != expected_leaf:
                return SHORT_ASCII
        return None


def _same_contents(expected, shown):
    """The same multiset of (type, size, sha256), whatever the paths."""
    def key(e):
        return (e.get("type"), e.get("size"), e.get("sha256"))
    return Counter(map(key, expected)) == Counter(map(key, shown))


def _cut_of(shown, expected):
    """Is leaf shown the leaf expected as TSK shows it (SLOT_CUT: the same,
    or a proper prefix ending on a 13-unit LFN slot boundary)?"""
    if shown == expected:
        return True
    units = len(shown.encode("utf-16-le", "surrogatepass")) // 2
    return bool(shown) and expected.startswith(shown) and units % 13 == 0 and len(expected) > len(shown)


def slot_cut_explains(expected, shown):
    """True when SLOT_CUT alone turns the expected listing into the shown
    one: a one-to-one pairing of the entries in which each pair has the
    same type and contents and each path component of the shown one is the
    expected one or its slot cut, at least one cut. The pairing is needed
    when a cut name meets another entry's (campaign seed 10102: a 247- and
    a 252-character name show as 234 and 247 characters, so the second
    takes the first's path with its own contents: a 'changed' the per-name
    hook cannot see)."""
    def key(e):
        return (e.get("type"), e.get("size"), e.get("sha256"))
    exp = [(e["path"].split("/"), key(e)) for e in expected]
    cand = []
    for e in shown:
        comps = e["path"].split("/")
        cand.append([j for j, (ec, k) in enumerate(exp) if k == key(e) and len(ec) == len(comps)
                     and all(_cut_of(a, b) for a, b in zip(comps, ec))])
    if len(shown) != len(exp) or not any(len(c) for c in cand):
        return False
    owner = {}

    def place(i, seen):                 # augmenting path (Kuhn's algorithm)
        for j in cand[i]:
            if j in seen:
                continue
            seen.add(j)
            if j not in owner or place(owner[j], seen):
                owner[j] = i
                return True
        return False
    if not all(place(i, set()) for i in range(len(shown))):
        return False
    return any(shown[i]["path"] != "/".join(exp[j][0]) for j, i in owner.items())


EXPORTS = {"sleuthkit": "vfz.oracles.sleuthkit.export"}   # its reproducer template (vfz/oracles/repro.py)
ENTRIES = [Entry("sleuthkit", "sleuthkit", fat_type="count", iotrace="preload", label="The Sleuth Kit", reader="vfz.oracles.sleuthkit:SleuthkitReader",
                 needs=("sleuthkit",), cost="process")]

FOOTER_PROBE = "sleuthkit-footer-probe"
IMAGE_CACHE = "sleuthkit-image-cache-64k"
EXCEPTIONS = [
    few_clusters_exception("sleuthkit"),   # Entry.fat_type: the checker applies it
    NamedException(FOOTER_PROBE, "sleuthkit", "reader",
                   "fls and tsk_recover (libtsk 4.11, image type autodetected) read 8 bytes at 512 "
                   "bytes before the image's end (an image-format footer probe: VHD keeps its "
                   "'conectix' cookie there), past the volume when the image is longer: measured "
                   "under the I/O trace on every clean mkfs.fat volume with a tail (2 MiB + 1.5 KiB, "
                   "16 MiB + 3.5 KiB, 34 MiB + 2.5 KiB, 16 MiB holding 16 384 000 bytes, 40 MiB "
                   "holding 38 912 000), once per command (docs/iobounds.md)",
                   "a read past the volume of 8 bytes at offset image size - 512 "
                   "(SleuthkitReader.io_exception)"),
    NamedException(IMAGE_CACHE, "sleuthkit", "reader",
                   "libtsk's image layer reads through a cache of 64 KiB blocks that start at the "
                   "offset asked for and are cut only at the image's end, so reading the volume's "
                   "last sectors reads on past it: measured on the clean volumes above (fls 2 KiB "
                   "at 0x1ffe00 to the end of the 2 MiB + 1.5 KiB image; tsk_recover 26.5 KiB at "
                   "0x21fa000 and 64 KiB at 0x2516400 on the FAT32 ones)",
                   "a read past the volume of at most 64 KiB that starts inside the volume "
                   "(SleuthkitReader.io_exception); a read that starts past the end stays a verdict"),
    NamedException(INVALID_83, "sleuthkit", "reader",
                   "TSK 4.11 skips a short entry whose 8.3 bytes are invalid (is_83_name: bytes "
                   "below 0x20, name[0] 0x20, \" * + , . / : ; < = > ? [ \\ ] |) -- every v1 and v3 "
                   "dummy -- and gives the LFN slots before it to the next valid short entry of "
                   "the directory without checking the LFN checksum: long-named entries of "
                   "nodual images vanish (with their subtrees) or show under a neighbour's long "
                   "name with its contents. The dummies break the 8.3 rules (the patch's "
                   "design); attaching an LFN set whose checksum does not match is TSK's bug "
                   "(the FAT specification makes such a set an orphan)",
                   "the image holds short entries TSK rejects and sleuthkit's (path, type) list "
                   "equals simulate(image) exactly (SleuthkitReader.explain, which records the "
                   "rejected entries in the ReadResult's extra['rejected'])"),
    NamedException(SLOT_CUT, "sleuthkit", "reader",
                   "TSK 4.11 drops the last LFN slot (the end of the name) of long names: ASCII "
                   "names of 240-247 characters show 234 (18 slots), 248-255 show 247 (19 "
                   "slots), a 200-character Greek name shows 195 (15 slots); measured on dual "
                   "images (fatxxfs_dent_parse_buf's name buffer; the exact threshold depends on "
                   "the UTF-8 length). TSK is wrong: the name is the whole LFN set",
                   "the shown leaf is a proper prefix of the expected one ending on a 13-unit "
                   "LFN slot boundary; or, when a cut name meets another entry's, the whole "
                   "listing pairs one-to-one with the expected one by type, contents and paths "
                   "equal or so cut (slot_cut_explains)"),
    NamedException(CONTROL_CARET, "sleuthkit", "reader",
                   "fls prints every character below 0x20 of a name as '^' (tsk_print_sanitized), "
                   "so a long name holding one -- which Linux refuses to create, but mtools writes "
                   "U+2000B as U+000B (mtools-astral-truncated) -- is shown, and extracted, under "
                   "another name. A presentation choice of TSK",
                   "the shown leaf is the expected one (or its characters cut to 16 bits, as "
                   "mtools writes them) with each character below 0x20 as '^'"),
    NamedException(SHORT_ASCII, "sleuthkit", "reader",
                   "TSK prints a bare 8.3 name through fatfs_cleanup_ascii: every byte outside "
                   "printable ASCII becomes '^' ('CAFÉ.TXT' -> 'CAF^.TXT'), and the bytes 0x00, "
                   "0xFF and blanks are dropped (a NBSP is cp437 0xFF: mtools stores 'σ\u00a0ée' "
                   "bare, shown '^^e')",
                   "actual leaf equals the expected leaf with its non-ASCII characters as '^' and "
                   "its NBSPs dropped; or, where such names coincide ('ç' and '▄' are both '^'), "
                   "the whole (path, type) listing is simulate(image)'s, no short entry rejected, "
                   "and the contents are the expected ones (SleuthkitReader.explain)"),
]
