"""fatsort 1.6.4 (Debian 12) as a transformer: it rewrites every directory
of an image in sorted order, in place.

`fatsort IMAGE` (LC_ALL=C.UTF-8; default order: directories first, then
files, each by strxfrm in the locale: case-sensitive, code point order)
moves whole entries -- LFN slots with their short entry -- to new slots of
the same directory. Every reader must see the same
tree afterwards; a v1 dummy's LFN set must stay in front of its short entry
and a v3 entry keep its NT byte 0x20 (tests/test_userspace_oracles.py
checks both with `vfat ls`, which prints the short bytes, the NT byte and
the LFN slot count of every entry).

Exit status: 0 sorted (or nothing to do); anything else, or a timeout, is
the transformer's error (the image may then be half rewritten).

Named exception fatsort-long-set-3-clusters (reports/bugs.md): fatsort's
writeClusterChain (sort.c) lets an entry's slot set (LFN slots + 8.3 entry)
cross one cluster boundary only. On 512-byte clusters (16 slots) a name of
196 or more UTF-16 units takes 17 to 21 slots; when fatsort's order puts it
so that it reaches into a third cluster, the slot count kept for the
second cluster exceeds 16, and the next entry makes `16 - count` wrap
around (uint32_t): the loop over that entry's LFN slots runs off the end
of its list and dereferences NULL (SIGSEGV, inside the critical section
that blocks signals, so the kernel kills it), after the overflowing slots
were written past the directory's second cluster. When no entry follows,
fatsort ends with status 0, but those slots went to the cluster that
physically follows the second one (when the chain is not contiguous:
another file's data, or the set's own), the third cluster keeps its old
slots and no end marker is written: the long-named entry is lost and old
entries come back twice (explain() names the divergence). overflow_lines()
replays fatsort's order and slot placement on the image before it runs.
"""
import os
import re
import shutil
import struct

from vfz import fatimg
from vfz.oracles import Entry, NamedException, Timer, Transformer, WriteResult
from vfz.proc import run

ENV = {"LC_ALL": "C.UTF-8", "LANG": "C.UTF-8"}


class FatsortTransformer(Transformer):
    def __init__(self, name="fatsort", fatsort="fatsort", options=(), **cfg):
        self.name = name
        self.cmd = [fatsort, *options]

    def available(self):
        return shutil.which(self.cmd[0]) is not None, f"{self.cmd[0]} not installed (package fatsort)"

    def transform(self, image, timeout=60.0):
        w = WriteResult(self.name)
        with Timer() as t:
            if not os.path.isfile(image):
                w.error = f"no such image: {image}"
            else:
                # -f: the image is a file, never mounted; fatsort refuses
                # to touch what /proc/mounts names otherwise
                # before it runs: fatsort may leave the image half rewritten
                spans = overflow_lines(image)
                p = run([*self.cmd, "-f", image], timeout=timeout, env=ENV)
                w.raw = p.raw() + "".join(f"# {SPANS} {line}\n" for line in spans)
                if p.error or p.rc != 0:
                    tail = (p.errtext or p.text).strip().split("\n")[-1:]
                    w.error = f"fatsort: {p.error or f'exit {p.rc}'}: {tail}"
        w.seconds = t.seconds
        return w

    @staticmethod
    def failure_exception(wr):
        """LONG_SET when fatsort was killed by SIGSEGV and the image it was
        given has a directory where fatsort's layout overflows before
        another entry (the '# spans-3-clusters ... before NAME' lines
        transform() adds to the raw output)."""
        raw = getattr(wr, "raw", "") or ""
        if _SEGV.search(raw) and any(_span_kind(ln) == "before" for ln in raw.split("\n")):
            return LONG_SET
        return None

    @staticmethod
    def untouched(image):
        """fatsort 1.6.4 writes directory slots only (sort.c writeList for the
        FAT12/16 root, writeClusterChain for cluster chains; FAT_fs.c's
        writeBootSector, writeFSInfo and writeFAT are never called): the boot
        sector, the reserved sectors and the FATs, as the image's own BPB
        places them, stay as they are on any volume it accepts. Its cluster
        offsets lie past them for every cluster >= 2 (getClusterOffset
        asserts cluster > 1)."""
        if len(image) < 40:
            return []
        bps, _, res, nfats = struct.unpack_from("<HBHB", image, 11)
        fatsz = struct.unpack_from("<H", image, 22)[0] or struct.unpack_from("<I", image, 36)[0]
        stop = (res + nfats * fatsz) * bps
        return [(0, stop, "in the boot sector, reserved sectors or FATs")] if stop > 0 else []

    @staticmethod
    def explain(ev):
        """LONG_SET for a divergence on the sorted image when fatsort ended
        well but its layout overflowed with the long set last in its
        directory: the slots past the second cluster went to the cluster
        that physically follows it (another file's data when the chain is
        not contiguous), the third cluster kept its old slots and no end
        marker was written."""
        raw = (ev.get("raw") if isinstance(ev, dict) else getattr(ev, "raw", None)) or ""
        if not _SEGV.search(raw) and any(_span_kind(ln) == "last" for ln in raw.split("\n")):
            return LONG_SET
        return None


SPANS = "spans-3-clusters"
LONG_SET = "fatsort-long-set-3-clusters"
_SEGV = re.compile(r"^\[rc=-11 killed by SIGSEGV\]$", re.M)
LAST = "last in the directory"


def _span_kind(line):
    """'before' (an entry follows the overflowing set: the crash), 'last'
    (nothing follows: no crash, slots written past the chain) or None, of
    one raw output line."""
    if not line.startswith(f"# {SPANS} "):
        return None
    return "last" if line.endswith(", " + LAST) else "before"


def _lname(fat, slots):
    units = b""
    for off in reversed(slots):
        e = fat.b[off:off + 32]
        units += bytes(e[1:11]) + bytes(e[14:26]) + bytes(e[28:32])
    return units.decode("utf-16-le", "surrogatepass").split("\x00", 1)[0]


def _sname(e):
    base, ext = bytes(e[:8]).rstrip(b" "), bytes(e[8:11]).rstrip(b" ")
    return (base + (b"." + ext if ext else b"")).decode("latin-1")


def _items(fat, cluster):
    """fatsort's list of a directory: every 8.3 slot (deleted ones too) with
    the slots before it since the previous 8.3 slot -> [(key, slots, name,
    is_dir)]; key sorts as cmpEntries does with the default options: '.',
    '..', then directories, then files, by the name's UTF-8 bytes (strxfrm
    in C.UTF-8; the long name when there is one), deleted entries last."""
    out, pending = [], []
    for off, e in fat.entries(cluster):
        pending.append(off)
        if e[11] == 0x0F:
            continue
        name = _lname(fat, pending[:-1]) if len(pending) > 1 else ""
        name = name or _sname(e)
        is_dir = bool(e[11] & 0x10)
        if e[0] == 0xE5:
            key = (3,)
        elif name in (".", ".."):
            key = (0 if name == "." else 1,)
        else:
            key = (2, 0 if is_dir else 1, name.encode("utf-8", "surrogatepass"))
        out.append((key, len(pending), name, is_dir, off))
        pending = []
    return out


def overflow_lines(image):
    """Where fatsort 1.6.4's writeClusterChain overruns (see the module's
    docstring): for each cluster-chained directory it would rewrite (its
    sorted order differs from the stored one), place the sorted slot sets
    as fatsort does and report a set that leaves more than a cluster's
    slots counted for its last cluster: 'PATH: NAME (N slots) at slot K
    of a C-slot cluster, before NEXT' when another entry follows (fatsort
    dies), '..., last in the directory' when none does. image: a path
    (read through a memory map: only the directories' pages) or bytes.
    Empty when none (or the image cannot be read)."""
    try:
        fat = fatimg.open_ro(image) if isinstance(image, str) else fatimg.Fat(image)
    except (OSError, struct.error, ValueError, IndexError, ZeroDivisionError):
        return []               # (ZeroDivisionError: a hostile BPB's 0 sectors per cluster)
    per = fat.csize // 32
    out, seen = [], set()
    todo = [("/", None)]
    while todo:
        path, cl = todo.pop()
        try:
            items = _items(fat, cl)
        except (struct.error, IndexError, ZeroDivisionError):
            continue
        for key, n, name, is_dir, off in items:
            if is_dir and key[0] == 2 and name not in (".", ".."):
                first = struct.unpack_from("<H", fat.b, off + 26)[0]
                if fat.bits == 32:
                    first |= struct.unpack_from("<H", fat.b, off + 20)[0] << 16
                if first >= 2 and first not in seen:
                    seen.add(first)
                    todo.append((path.rstrip("/") + "/" + name, first))
        if cl is None and fat.bits != 32:
            continue            # the FAT12/16 root: another writer (sortFat1xRootDirectory)
        order = sorted(items, key=lambda it: it[0])
        if [it[4] for it in order] == [it[4] for it in items]:
            continue            # not reordered: fatsort writes nothing
        count, prev = 0, None
        for key, n, name, is_dir, off in order:
            if prev is not None and count > per:
                out.append(f"{path}: {prev[0]} ({prev[1]} slots) at slot {prev[2]} of a {per}-slot "
                           f"cluster, before {name}")
                break
            start = count
            count = count + n if count + n <= per else n - (per - count)
            prev = (name, n, start)
        else:
            if prev is not None and count > per:
                out.append(f"{path}: {prev[0]} ({prev[1]} slots) at slot {prev[2]} of a {per}-slot "
                           f"cluster, {LAST}")
    return out


EXPORTS = {"fatsort": "vfz.oracles.fatsort.export"}   # its reproducer template (vfz/oracles/repro.py)
ENTRIES = [Entry("fatsort", "fatsort", iotrace="preload", transformer="vfz.oracles.fatsort:FatsortTransformer",
                 needs=("fatsort",), cost="process")]

EXCEPTIONS = [
    NamedException(
        LONG_SET, "fatsort", "transformer",
        "fatsort 1.6.4 dies by SIGSEGV (after writing past the directory's second cluster) "
        "when, in its sorted order, a long name's slot set on 512-byte clusters reaches into a "
        "third cluster and another entry follows it: writeClusterChain handles one cluster "
        "boundary per entry, the slot count it keeps exceeds the cluster's 16 and the next "
        "entry's 'slots left' (16 - count, uint32_t) wraps around; its LFN loop then "
        "dereferences the NULL end of the slot list. When the set is last, fatsort ends well "
        "but has written its last slots into the cluster that physically follows the second "
        "one (another file's data when the chain is not contiguous) and no end marker: the "
        "long-named entry is lost, stale entries of the third cluster show twice.",
        evidence="fatsort's order and slot placement replayed on the image it was given "
                 "(fatsort.overflow_lines) leave more than a cluster's slots counted for a "
                 "set's last cluster, and: fatsort killed by SIGSEGV with an entry after the "
                 "set (failure_exception), or a reader differing on the sorted image with the "
                 "set last in its directory (explain)",
        bug=LONG_SET),
]
