"""fatcat 1.1.0 (Debian 12) as a reader and a checker.

Listing: `fatcat IMAGE -l / -F json` for the root, `-L CLUSTER -F json` for
each subdirectory (by cluster: no path lookup through names fatcat may
spell differently), contents with `-R CLUSTER -s SIZE` (fatcat follows the
FAT chain). fatcat prints names as raw bytes inside its JSON (no escaping),
so the answer is decoded as Latin-1 and parsed field by field.

Checker: `-2` compares the two FATs ("FATs are exactly equals", else a
complaint; a volume of one FAT has nothing to compare: fresh.py), `-o` (at most O_LIMIT seconds) looks for orphaned cluster chains ("There is N orphaned
elements:" and one "* File|Directory clusters A to B" line each: one
complaint per chain). fatcat's "! ..." messages on stderr are counted in
extra["warnings"], and the -o run's "! Trying to read outside the disk"
lines in extra["outside_reads_o"] (the evidence of fatcat-orphan-uninit).

How fatcat 1.1.0 spells names (named exceptions, see EXCEPTIONS):
  * a long name is its UTF-16LE bytes, 0x00 high bytes dropped (0xFF kept), and every
    unit whose low byte is 0x00 or 0xFF dropped whole: right for
    U+0001-U+00FE (Latin-1 but 'ÿ'); '日本語' (E5 65 2C 67 9E 8A) reads as
    'åe,g\\x9e\\x8a', 'ÿaœ' as 'aS\\x01', '😀x' (D83D DE00 0078) as '=Øx';
    a long name that comes out empty ('ÿ', 'ĀÿĀ') is taken for none: the
    8.3 field is shown instead, trimmed of isspace bytes (short_form), a
    v1 dummy's NULs and '/' included, and the names below it under that
  * a bare 8.3 name is shown as stored: upper case (the NT case byte is
    ignored), non-ASCII as its raw cp437 byte
  * every slot of every cluster of a directory is read, past a 0x00 end
    marker too; an entry is kept when a byte 1-10 of its 8.3 name is
    printable (v1 and v3 dummies are: '/' and '~')

How fatcat 1.1.0's -o goes wrong (fatcat-orphan-uninit): on FAT12/16 the
reserved cluster 1 counts as a chain nothing points to, so -o reads it as
a directory at an address past the disk; the read fails and leaves its
32-byte stack buffer as it was (uninitialised); when FAT[1] is no
end-of-chain mark (fusefat writes 0x8000, a dirty Windows volume 0x7FFF)
the walk goes on to cluster FAT[1] and, the stale bytes passing for an
entry (ASLR decides: ~7-10% of runs), on to every next cluster, past the
disk, without end.
"""
import dataclasses
import os
import re
import shlex
import shutil
import time

from vfz import listing
from vfz.oracles import Entry, NamedException, Reader, ReadResult, Timer
from vfz import iobounds
from vfz.proc import run
from vfz.oracles.fatcat import meta as fmeta
from vfz.oracles.fatcat.fresh import ONE_FAT, SECTOR_512, fresh_exceptions

LFN_BYTES = "fatcat-lfn-bytes"
RAW_83 = "fatcat-raw-83"
PAST_END = "fatcat-reads-past-end-marker"
ORPHAN_UNINIT = "fatcat-orphan-uninit"
OUTSIDE = "! Trying to read outside the disk"
# seconds one -o run may take: it ends in 0.1 s on the campaign's volumes,
# a hung one (fatcat-orphan-uninit, 7-10% of runs on a fusefat FAT16) would
# otherwise hold the rest of the read's timeout (60 s in campaign seed 9101)
# and pile up ~3.7 MB of stderr a second in memory
O_LIMIT = 10.0

_ITEM = re.compile(r'\{"EntryType":"(File|Directory)","EditDate":"([^"]*)","Name":"(.*?)","8DOT3Name":"(.*?)",'
                   r'"Cluster":(\d+),(?:"Size":(\d+),"PrettySize":"[^"]*",)?"IsHidden":(?:true|false),'
                   r'"IsDeleted":(true|false)\}', re.S)
_now = time.monotonic
_ORPHAN = re.compile(r"^\* (.*)$")


def parse_list(text):
    """fatcat -F json listing (Latin-1 text) -> [(name, is_dir, cluster, size, deleted,
    modify time or None)]."""
    out = []
    for m in _ITEM.finditer(text):
        kind, date, name, _short, cl, size, deleted = m.groups()
        out.append((name, kind == "Directory", int(cl), int(size or 0), deleted == "true",
                    fmeta.edit_time(date)))
    return out


def lfn_bytes_form(name):
    """A long name as fatcat 1.1.0 prints it (src/core/FatFilename.cpp
    append): per UTF-16 unit its low byte then its high byte, a 0x00 high
    byte dropped, and a unit whose low byte is 0x00 or 0xFF dropped whole
    (it takes them for the terminator and padding); as Latin-1. A 0xFF
    high byte is kept: U+FFFD reads 'ýÿ'."""
    return _units_form(name.encode("utf-16-le", "surrogatepass"))


def _units_form(b):
    out = bytearray()
    for i in range(0, len(b) - 1, 2):
        lo, hi = b[i], b[i + 1]
        if lo in (0, 0xFF):
            continue
        out.append(lo)
        if hi != 0:
            out.append(hi)
    return out.decode("latin-1")


def raw_83_form(name):
    """A bare 8.3 name as stored (upper case, cp437 bytes), as Latin-1; None if not cp437."""
    from vfz.model.names import _cp437_upper
    try:
        return "".join(c.upper() if c.isascii() else _cp437_upper(c) for c in name) \
            .encode("cp437").decode("latin-1")
    except UnicodeEncodeError:
        return None


def past_end_names(image):
    """Leaves fatcat 1.1.0 shows from slots after a 0x00 end marker, in
    every directory reachable the usual way: it skips only all-zero slots,
    so a slot deleted by writing 0x00 into its first byte (legal for the
    last entries of a directory; fusefat does it) is listed again."""
    from vfz.fatimg import Fat
    with open(image, "rb") as f:
        fat = Fat(f.read())
    out, todo, seen = set(), [None], set()
    while todo:
        cl = todo.pop()
        for off, name, attr, clus, size, lfn in fat.short_entries(cl):
            if attr & 0x10 and name[:1] != b"." and clus >= 2 and clus not in seen:
                seen.add(clus)
                todo.append(clus)
        ended, letters = False, []
        for off in fat.dir_slots(cl):
            e = bytes(fat.b[off:off + 32])
            if e[0] == 0:
                ended = True
            if not ended or not any(e):
                continue
            if e[11] == 0x0F:
                if e[0] & 0x40 and e[0] != 0xE5:
                    letters = []
                letters.insert(0, e[1:11] + e[14:26] + e[28:32])
                continue
            if letters:
                raw = b"".join(letters)
                units = [raw[i:i + 2] for i in range(0, len(raw), 2)]
                if b"\0\0" in units:
                    units = units[:units.index(b"\0\0")]
                leaf = _units_form(b"".join(units))
            else:
                base, ext = e[:8].decode("latin-1").strip(), e[8:11].decode("latin-1").strip()
                leaf = base + ("." + ext if ext else "")
            letters = []
            out.add(leaf)
    return out


def short_form(raw11):
    """An 8.3 field as fatcat 1.1.0 shows it when it has no long name:
    base and extension each trimmed of C isspace bytes at both ends (not
    only spaces), joined by '.' when the extension is not empty; NUL and
    other bytes kept as stored; as Latin-1."""
    ws = b" \t\n\v\f\r"
    base, ext = raw11[:8].strip(ws), raw11[8:11].strip(ws)
    return (base + (b"." + ext if ext else b"")).decode("latin-1")


def short_fallback_paths(image):
    """{path as written: path as fatcat 1.1.0 shows it} for every entry whose
    path has a long-named component that fatcat reads as empty (every UTF-16
    unit's low byte 0x00 or 0xFF: 'ÿ', 'ĀÿĀ'): fatcat then shows the 8.3
    field (short_form) -- for a v1 or v3 dummy, its raw bytes, '/' and NULs
    included -- and every name below it as fatcat spells it; or whose form
    holds a '/' byte (a unit whose low or high byte is 0x2F: the combining
    U+032F, U+2F00-U+2FFF), which splits it into two components of the
    listing. From the core's listing of the image (its "short" bytes and
    "lfn" counts)."""
    from vfz.oracles.evidence import core_listing
    shown, fell = {}, set()
    for e in core_listing(image) or ():
        leaf = e["path"].rpartition("/")[2]
        form = lfn_bytes_form(leaf) if e.get("lfn") else ""
        shown[e["path"]] = form or short_form(bytes.fromhex(e["short"]))
        if e.get("lfn") and (not form or "/" in form):
            fell.add(e["path"])
    out = {}
    for path in shown:
        comps = path.split("/")[1:]
        prefixes = ["/" + "/".join(comps[:i + 1]) for i in range(len(comps))]
        first = next((i for i, p in enumerate(prefixes) if p in fell), None)
        if first is not None:
            out[path] = "".join("/" + (shown[p] if i >= first else comps[i])
                                for i, p in enumerate(prefixes))
    return out


def cluster1_walk(image):
    """How fatcat 1.1.0 -o sees the reserved cluster 1 of image, read the
    way its FatSystem does (FAT12/16 by a non-zero 16-bit sectors-per-FAT,
    12 bits when the data area holds at most 0xFF4 clusters; FAT[1] from
    the first FAT): {"bits", "fat1", "slots" (32-byte slots per cluster),
    "walks" (FAT[1] is neither free nor an end-of-chain mark to fatcat, so
    its directory walk of cluster 1 goes on to cluster FAT[1])}; None on
    FAT32 (its chains start at the root cluster: cluster 1 is never walked)
    or a boot sector fatcat would not take."""
    with open(image, "rb") as f:
        b = f.read(512)
    if len(b) < 512:
        return None
    u16 = lambda o: int.from_bytes(b[o:o + 2], "little")    # noqa: E731
    bps, spc, reserved, fats, root = u16(11), b[13], u16(14), b[16], u16(17)
    spf = u16(22)
    if not spf or not bps or not spc:
        return None
    total = u16(19) or int.from_bytes(b[32:36], "little")
    data = total - (reserved + fats * spf + (root * 32 + bps - 1) // bps)
    bits = 16 if data // spc > 0xFF4 else 12
    with open(image, "rb") as f:
        f.seek(reserved * bps + bits // 8)      # cluster 1's entry: byte 2 (FAT16), 1 (FAT12)
        raw = f.read(2)
    if len(raw) < 2:
        return None
    v = int.from_bytes(raw, "little")
    v = v if bits == 16 else (v >> 4) & 0xFFF
    end = 0xFFF0 if bits == 16 else 0xFF0
    return {"bits": bits, "fat1": v, "slots": bps * spc // 32, "walks": 0 < v < end}


class FatcatReader(Reader):
    fresh_exceptions = staticmethod(fresh_exceptions)

    @staticmethod
    def io_exception(o, head, declared, size):
        """fatcat -o's reads at the wrapped address of cluster 0 or 1 (EXCEPTIONS)."""
        geo = iobounds.geometry(head)
        if o.kind != "read" or not geo or " -o" not in f" {o.op}":
            return None
        _, csize, data = geo
        k = (o.offset - data) // csize
        return ORPHAN_WRAP if k in ((1 << 32) - 2, (1 << 32) - 1) else None

    def __init__(self, name="fatcat", fatcat="fatcat", check=True, orphan_timeout=O_LIMIT, **cfg):
        self.name = name
        self.cmd = shlex.split(fatcat) if isinstance(fatcat, str) else list(fatcat)
        self.check = check
        self.orphan_timeout = orphan_timeout

    def available(self):
        return shutil.which(self.cmd[0]) is not None, f"{self.cmd[0]} not installed (package fatcat)"

    def read(self, image, timeout=30.0):
        r = ReadResult(self.name)
        with Timer() as t:
            try:
                self._read(image, timeout, r)
            except Exception as e:
                r.error = f"fatcat reader: {type(e).__name__}: {e}"
                r.listing = None
        r.seconds = t.seconds
        return r

    def _run(self, args, timeout, r, deadline):
        left = max(1.0, deadline - _now())
        p = run([*self.cmd, *args], timeout=min(timeout, left))
        # lines starting with '!', counted on the bytes: a hung -o prints
        # ~100 000 a second (fatcat-orphan-uninit), no copy of them is made
        r.extra["warnings"] = r.extra.get("warnings", 0) + p.err.count(b"\n!") + p.err.startswith(b"!")
        return p

    def _read(self, image, timeout, r):
        if not os.path.isfile(image):
            r.error = f"no such image: {image}"
            return
        deadline = _now() + timeout
        entries, raws, times = [], [], {}
        todo = [("", None)]
        seen = set()
        while todo:
            base, cl = todo.pop()
            p = self._run([image, "-l", "/", "-F", "json"] if cl is None
                          else [image, "-L", str(cl), "-F", "json"], timeout, r, deadline)
            raws.append(p.raw() if len(raws) < 20 else "")
            if p.error or p.rc != 0:
                r.raw = "".join(raws)
                r.error = f"fatcat -l: {p.error or f'exit {p.rc}'}: {p.errtext.strip()[-200:]}"
                return
            for name, is_dir, c, size, deleted, mtime in parse_list(p.out.decode("latin-1")):
                if deleted or name in (".", ".."):
                    continue
                path = f"{base}/{name}"
                if mtime is not None:
                    times[path] = mtime
                if is_dir:
                    entries.append(listing.entry(path, "dir"))
                    if c in seen or c < 2:
                        r.complaints.append(f"directory {path} at cluster {c} seen before or invalid")
                        continue
                    seen.add(c)
                    todo.append((path, c))
                elif size == 0:
                    entries.append(listing.entry(path, "file", b""))
                else:
                    q = self._run([image, "-R", str(c), "-s", str(size)], timeout, r, deadline)
                    if q.error:
                        r.raw = "".join(raws) + q.raw()
                        r.error = f"fatcat -R: {q.error}"
                        return
                    entries.append(listing.entry(path, "file", q.out))
                    if len(q.out) != size:
                        r.complaints.append(f"read {len(q.out)} of {size} bytes of {path}")
        for e in entries:               # the meta key fatcat shows (fatcat/meta.py)
            if e["path"] in times:
                e["mtime"] = times[e["path"]]
        r.listing = sorted(entries, key=lambda e: e["path"])
        if self.check:
            self._check(image, timeout, r, deadline, raws)
        r.raw = "".join(raws)

    def _check(self, image, timeout, r, deadline, raws):
        p = self._run([image, "-2"], timeout, r, deadline)
        raws.append(p.raw())
        if p.error:
            r.complaints.append(f"fatcat -2: {p.error}")
        elif ONE_FAT in p.errtext and not p.text.replace("Comparing the FATs", "").strip():
            pass                # one FAT: nothing to compare (fresh.py)
        elif "FATs are exactly equals" not in p.text:
            diff = [ln.strip() for ln in p.text.split("\n")
                    if ln.strip() and not ln.startswith("Comparing the FATs")]
            r.complaints.append("fat-differ: " + "; ".join(diff)[:300])
        p = self._run([image, "-o"], min(timeout, self.orphan_timeout), r, deadline)
        # the first 4000 characters, made from the first 4000 bytes of each
        # stream: a hung -o leaves tens of MB on stderr (fatcat-orphan-uninit)
        raws.append(dataclasses.replace(p, out=p.out[:4000], err=p.err[:4000]).raw()[:4000])
        self.take_orphans(r, p)

    @staticmethod
    def take_orphans(r, p):
        """The answer of one `fatcat IMAGE -o` run (a vfz.proc.Proc) into r:
        its reads outside the disk counted (extra["outside_reads_o"]); a
        timeout or crash one complaint; else one complaint per orphaned
        chain (extra["orphans"])."""
        r.extra["outside_reads_o"] = p.err.count(OUTSIDE.encode())
        if p.error:
            r.complaints.append(f"fatcat -o: {p.error}")
            return
        orphans = [m.group(1) for ln in p.text.split("\n") for m in [_ORPHAN.match(ln)] if m]
        r.extra["orphans"] = orphans
        for o in orphans:
            r.complaints.append(f"orphan: {o}")

    @staticmethod
    def explain(ev):
        """ORPHAN_UNINIT when the only complaint is a timeout of -o and the
        image and that run say why (orphan_uninit).
        PAST_END when fatcat shows only extra entries (nothing missing or
        changed) and each is a name it decodes from slots after a
        directory's 0x00 end marker (past_end_names on ev.image).
        LFN_BYTES when every missing entry is at or below a long name
        fatcat reads as empty and each is shown, with the same type and
        contents, at the path short_fallback_paths predicts, and nothing
        else is shown.
        SECTOR_512 when fatcat failed on a volume of other than 512-byte sectors."""
        if getattr(ev, "verdict", None) == "failed" and ev.rr is not None and \
                fresh_exceptions(None, ev.rr, getattr(ev, "image", None)):
            return SECTOR_512
        if FatcatReader.orphan_uninit(ev):
            return ORPHAN_UNINIT
        if fmeta.skips_attr(ev):
            return fmeta.SKIPS_ATTR
        d, image = getattr(ev, "diff", None), getattr(ev, "image", None)
        if d is None or not image or d.changed:
            return None
        if d.missing:
            return LFN_BYTES if FatcatReader._short_fallback(d, image) else None
        if not d.extra:
            return None
        try:
            names = past_end_names(image)
        except Exception:
            return None
        leaves = {e["path"].rsplit("/", 1)[-1] for e in d.extra}
        return PAST_END if leaves <= names else None

    @staticmethod
    def orphan_uninit(ev):
        """The evidence of ORPHAN_UNINIT, all from this divergence: a
        'complains' verdict whose complaints are exactly one, a timeout of
        -o (the listing and -2 were right); the image is FAT12/16 with
        FAT[1] neither free nor an end-of-chain mark to fatcat
        (cluster1_walk: its walk of cluster 1 goes on to cluster FAT[1]);
        and that -o run printed "Trying to read outside the disk" more than
        twice a cluster's slots (extra["outside_reads_o"]): cluster 1 and
        cluster FAT[1] read alone make at most that many, so the walk went
        on from cluster to cluster past the disk, which only the stale
        buffer passing for an entry makes it do."""
        r, image = getattr(ev, "rr", None), getattr(ev, "image", None)
        if getattr(ev, "verdict", None) != "complains" or r is None or not image:
            return False
        if len(r.complaints) != 1 or not r.complaints[0].startswith("fatcat -o: timeout"):
            return False
        try:
            walk = cluster1_walk(image)
        except OSError:
            return False
        return bool(walk and walk["walks"]
                    and r.extra.get("outside_reads_o", 0) > 2 * walk["slots"])

    @staticmethod
    def _short_fallback(d, image):
        try:
            fb = short_fallback_paths(image)
        except Exception:
            return False
        missing = {e["path"]: e for e in d.missing}
        extra = {e["path"]: e for e in d.extra}
        # an entry of fb not missing was matched by a name exception (a dual
        # alias as raw cp437 bytes: fatcat-raw-83)
        if not set(missing) <= set(fb) or set(extra) != {fb[p] for p in missing}:
            return False
        # the entries as the canonical comparison pairs them: path apart, and the meta keys
        # (listing.META_KEYS: times, attributes) compared on their own, never here
        strip = lambda e: {k: v for k, v in e.items() if k != "path" and k not in listing.META_KEYS}  # noqa: E731
        return all(strip(missing[p]) == strip(extra[fb[p]]) for p in missing)

    @staticmethod
    def name_exception(expected_leaf, actual_leaf):
        if actual_leaf and actual_leaf == lfn_bytes_form(expected_leaf):
            return LFN_BYTES            # an empty form: fatcat shows the 8.3 field (explain)
        if actual_leaf == raw_83_form(expected_leaf):
            from vfz.model import short_only
            if short_only(expected_leaf, "winnt") or not expected_leaf.isascii():
                return RAW_83
        return None


EXPORTS = {"fatcat": "vfz.oracles.fatcat.export"}   # its reproducer template (vfz/oracles/repro.py)
ENTRIES = [Entry("fatcat", "fatcat", iotrace="preload", reader="vfz.oracles.fatcat:FatcatReader", needs=("fatcat",),
                 cost="process")]

ORPHAN_WRAP = "fatcat-orphan-cluster-wrap"
EXCEPTIONS = fmeta.EXCEPTIONS + [
    NamedException(ORPHAN_WRAP, "fatcat", "reader",
                   "fatcat 1.1.1 -o (orphan search) reads the reserved cluster 0 or 1 as a "
                   "directory at clusterAddress(c) = data start + (c - 2) x cluster size computed "
                   "in 32 bits unsigned, i.e. ~2^32 clusters into the disk: far past the image "
                   "(the read returns nothing) on every clean FAT12/16 mkfs.fat volume measured "
                   "under the I/O trace (64 reads of 32 bytes at 0x80000004600 on the 2 MiB FAT12 "
                   "one, at 0x20000004000 on the 1.44 MB one; docs/iobounds.md); none on FAT32. The "
                   "same path as fatcat-orphan-uninit, which is what the unread buffer then does",
                   "a read by a `fatcat ... -o` command at data start + k x cluster size + r with "
                   "k = 2^32 - 2 or 2^32 - 1, 0 <= r < cluster size (FatcatReader.io_exception)"),
    NamedException(LFN_BYTES, "fatcat", "reader",
                   "fatcat 1.1.0 prints a long name as its UTF-16LE bytes with the 0x00 bytes "
                   "dropped and every unit whose low byte is 0x00 or 0xFF dropped whole (no "
                   "UTF-16 decoding; unfixed in master 7600030, PR #7 open): names in U+0001-U+00FE "
                   "read right, any other character as one or two unrelated bytes ('日' U+65E5 "
                   "-> 'åe') or nothing ('ÿ' U+00FF, the low surrogate U+DE00 of '😀'); a long "
                   "name that comes out empty is taken for none and the 8.3 field is shown "
                   "('ÿ' written nodual v1 lists as the dummy's bytes); a form holding the byte "
                   "'/' ('é̯': U+032F gives 2F 03) splits the name into two path components. "
                   "fatcat is wrong (LFN slots hold UTF-16)",
                   "actual leaf == lfn_bytes_form(expected leaf), not empty; or every missing "
                   "entry is at or below a long name whose form is empty or holds '/' and is "
                   "shown with the "
                   "same fields at the path short_fallback_paths reads from the image "
                   "(FatcatReader.explain)"),
    NamedException(PAST_END, "fatcat", "reader",
                   "fatcat reads every slot of a directory's clusters and skips only all-zero "
                   "ones: entries after a 0x00 end marker -- which by the FAT specification are "
                   "all free -- are listed, e.g. names fusefat deleted by writing 0x00 into "
                   "their first byte (allowed for the last entries of a directory). fatcat is "
                   "wrong (0x00 ends the directory)",
                   "fatcat's listing has only extra entries and each leaf is a name decoded from "
                   "slots after a 0x00 end marker of the image (past_end_names; "
                   "FatcatReader.explain)"),
    NamedException(ORPHAN_UNINIT, "fatcat", "reader",
                   "fatcat 1.1.0 -o (orphan search) hangs in some runs on a valid FAT12/16 "
                   "volume whose FAT[1] is no end-of-chain mark (fusefat writes 0x8000; Windows "
                   "leaves 0x7FFF on a dirty volume): findChains makes the reserved cluster 1 a "
                   "chain, exploreChains reads it as a directory (FatSystem::getEntries), "
                   "clusterAddress(1) lies past the disk, readData fails ('! Trying to read "
                   "outside the disk') and leaves the 32-byte stack buffer uninitialised, and the "
                   "stale bytes (an ASLR-randomised address) are parsed as an entry; the walk "
                   "goes on to cluster FAT[1] and, whenever the stale entry looks valid, to every "
                   "next cluster without end (FAT entries past the FAT's 'valid' range read 0: "
                   "'contiguous'), reading outside the disk and growing memory. ~7-10% of runs on "
                   "one image; fatcat is wrong (an unread cluster is no directory)",
                   "a 'complains' verdict whose only complaint is 'fatcat -o: timeout'; the image "
                   "is FAT12/16 with FAT[1] neither 0 nor >= 0xFFF0/0xFF0 (cluster1_walk); that "
                   "-o run's stderr has more 'Trying to read outside the disk' lines than twice a "
                   "cluster's 32-byte slots, i.e. the walk went past cluster 1 and cluster FAT[1] "
                   "(FatcatReader.orphan_uninit). A re-run is not asked for: the hooks run no "
                   "tool, and the evidence is of this run"),
    NamedException(RAW_83, "fatcat", "reader",
                   "fatcat shows a bare 8.3 entry as stored: upper case, the NT case byte "
                   "(0x08 base, 0x10 extension lower case) ignored, non-ASCII as its raw cp437 "
                   "byte ('lower' stored LOWER + 0x08 reads 'LOWER'); Linux and Windows apply "
                   "the flags and the code page",
                   "actual leaf == the expected leaf upper-cased in cp437 bytes (raw_83_form), "
                   "for a name a writer stores bare (fits 8.3 under winnt) or a non-ASCII one"),
    NamedException(SECTOR_512, "fatcat", "reader",
                   "fatcat 1.1.0 reads only 512-byte sectors: any other bytes-per-sector value makes "
                   "it warn 'Bytes per sector is not 512 (N)' and fail to init the file system, so "
                   "volumes of 1024..4096-byte sectors (mformat -M, f_mkfs on a 4Kn disk, mkfs.fat "
                   "-S) are unreadable to it (a design limit)",
                   "fatcat failed with 'Failed to init the FAT filesystem', said the sector size "
                   "is not 512, and the boot sector's is not (vfz/oracles/fatcat/fresh.py)"),
]
