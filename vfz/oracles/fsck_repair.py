"""`fsck.fat -a` (dosfstools 4.2) as a transformer: the repair, in place.

The dosfsck reader runs the same repair on a copy as a probe
(vfz.oracles.dosfsck repair_probe); here it is a transformer like fatsort:
the image is repaired in place and every reader must then see the tree the
writer made. The output is parsed with the dosfsck reader's parser
(parse_fsck) into what fsck.fat did, kept in the raw text.

fsck.fat -a exits 0 (nothing to do) or 1 (repaired); 2 and above, a
timeout, or an exit 1 without fsck.fat's summary line (it gave up: die()
exits 1 too; vfz.oracles.dosfsck.parse.gave_up) is the transformer's
error. What it changes on images of the patch's writers is known (see
EXCEPTIONS and the dosfsck module): every v1 dummy is a "Bad short file
name", renamed FSCKnnnn.nnn with its long name deleted, so the tree changes
by design of the dummy, not by a fsck bug.
"""
import os
import re
import shlex
import struct

from vfz.oracles import Entry, NamedException, Timer, Transformer, WriteResult
from vfz.oracles.dosfsck import CROSS      # the dosfsck family's bug, seen through -a
from vfz.oracles.dosfsck.parse import complaint_str, gave_up, parse_fsck
from vfz.proc import run

RENAMED = "fsck-repair-renames-bad-short"
_FSCK_NAME = re.compile(r"^FSCK\d{4}\.\d{3}$")
_BAD_LINE = re.compile(r"^# bad-short-name (/.*?): Bad short file name")


class FsckRepairTransformer(Transformer):
    def __init__(self, name="fsck-repair", fsck="fsck.fat", **cfg):
        self.name = name
        self.fsck = shlex.split(fsck) if isinstance(fsck, str) else list(fsck)
        self.last = []          # complaint dicts of the last transform

    @classmethod
    def hostile_cfg(cls, asan_bin=None):
        """With the sanitizer peers: their fsck.fat."""
        return {"fsck": os.path.join(asan_bin, "fsck.fat")} if asan_bin else {}

    def transform(self, image, timeout=60.0):
        w = WriteResult(self.name)
        with Timer() as t:
            self.last = []
            if not os.path.isfile(image):
                w.error = f"no such image: {image}"
            else:
                p = run([*self.fsck, "-a", image], timeout=timeout)
                self.last = parse_fsck(p.text + "\n" + p.errtext)
                w.raw = p.raw() + "".join(f"# {complaint_str(c)}\n" for c in self.last)
                why = gave_up(p)
                if p.error or p.rc not in (0, 1):
                    w.error = f"fsck.fat -a: {p.error or f'exit {p.rc}'}"
                elif why:
                    w.error = f"fsck.fat -a gave up: {why}"
        w.seconds = t.seconds
        return w

    @staticmethod
    def untouched(image):
        """The reserved sectors fsck.fat 4.2 -a never writes: of sectors 1 ..
        reserved-1 (BPB's sector size), all but the FSINFO and backup boot
        sectors the BPB names and the ones check_backup_boot may create a
        backup in when it names none (6, else reserved-1 or reserved-2;
        boot.c). Everything else it writes -- the boot sector (dirty bit,
        label, a copy of the backup), both FATs, the FAT12/16 root, directory
        slots -- is a repair; FSINFO is never created in -a mode."""
        if len(image) < 52:
            return []
        bps, _, res = struct.unpack_from("<HBH", image, 11)
        info, backup = struct.unpack_from("<HH", image, 48)
        if not bps or res < 2:
            return []
        allowed = {0, info, backup, 6, res - 1, res - 2}
        out, s = [], 1
        while s < res:
            if s in allowed:
                s += 1
                continue
            e = s
            while e < res and e not in allowed:
                e += 1
            out.append((s * bps, e * bps, "in reserved sectors it never writes"))
            s = e
        return out

    @staticmethod
    def explain(ev):
        """ev: the divergence's evidence; reads the transform's raw output
        (ev.raw, or ev.wr.raw), ev.missing / ev.extra (paths of the tree
        before the repair that are gone after it, and new ones) and
        ev.before (the image before the repair), attributes or dict keys.
        RENAMED per renamed_explains; else CROSS (the dosfsck family's
        fsck-v1-lfn-cross) when fsck.fat 4.2's scan of the image before the
        repair, simulated, removes a long-name set across non-adjacent
        clusters over live ones: the repair's '.REC' files, wiped
        directories and changed contents are that bug's (campaign seed
        10102, finding fb7defcd65a4)."""
        def get(k):
            return ev.get(k) if isinstance(ev, dict) else getattr(ev, k, None)
        raw = get("raw") or getattr(get("wr"), "raw", "") or ""
        if renamed_explains(raw, get("missing"), get("extra")):
            return RENAMED
        return CROSS if live_crossings(get("before")) else None


def live_crossings(image):
    """The fsck-v1-lfn-cross instances fsck.fat 4.2 meets on image (its
    scan simulated: vfz.oracles.dosfsck.sim), [] when none or when the
    image cannot be simulated."""
    if not image or not os.path.isfile(image):
        return []
    from vfz.oracles.dosfsck.sim import simulate
    try:
        return [c for c in simulate(image).crossings if c["live"]]
    except Exception:          # an image the simulation cannot scan: no evidence
        return []


def renamed_explains(raw, missing, extra):
    """True when fsck.fat -a said 'Bad short file name' (the '# bad-short-name
    PATH: ...' lines the transformer adds to its raw output) for every
    missing path or an ancestor, and every extra path has a FSCKnnnn.nnn
    component. fsck.fat prints characters outside its code page as ':'
    escapes ('𠀋𝄞x' -> ':DX0:DmB...'), so a missing entry whose path cannot
    be matched counts against the reported names holding such escapes: there
    must be at least as many of those as unmatched entries, and as many new
    FSCK names at the top of the changes as entries gone there."""
    bad = []
    for line in (raw or "").split("\n"):
        m = _BAD_LINE.match(line)
        if m:
            bad.append(m.group(1))
    missing, extra = missing or [], extra or []
    if not bad or not (missing or extra):
        return False
    if not all(any(_FSCK_NAME.match(c) for c in p.split("/")) for p in extra):
        return False
    badset = set(bad)

    def matched(p):
        comps = p.split("/")
        return any("/".join(comps[:i]) in badset for i in range(2, len(comps) + 1))
    mset, eset = set(missing), set(extra)
    roots = [p for p in missing if p.rsplit("/", 1)[0] not in mset]
    new_roots = [p for p in extra if p.rsplit("/", 1)[0] not in eset]
    unmatched = [p for p in roots if not matched(p)]
    escaped = [b for b in bad if ":" in b.rsplit("/", 1)[-1]]
    return len(unmatched) <= len(escaped) and len(roots) == len(new_roots)


ENTRIES = [Entry("fsck-repair", "dosfsck", iotrace="preload", transformer="vfz.oracles.fsck_repair:FsckRepairTransformer",
                 needs=("dosfstools",), cost="process")]

EXCEPTIONS = [
    NamedException(RENAMED, "dosfsck", "transformer",
                   "fsck.fat -a renames every short entry it finds invalid -- each v1 dummy "
                   "(' \\0...', bytes below 0x20), a dual alias holding 0x7F -- to FSCKnnnn.nnn "
                   "and deletes its LFN slots: the long name is gone. fsck.fat follows the FAT "
                   "specification (those bytes are invalid in a short name); the v1 dummy is "
                   "what breaks the rule (v3 sets NT 0x20, which fsck.fat 4.2 exempts). Data "
                   "loss beyond the rename is fsck-v1-lfn-cross (dosfsck)",
                   "every path missing after the repair is (under) a path fsck.fat -a reported "
                   "as 'Bad short file name', and every new path has a FSCKnnnn.nnn component "
                   "(FsckRepairTransformer.explain, renamed_explains)"),
    NamedException(CROSS, "dosfsck", "transformer",
                   "the dosfsck reader's fsck-v1-lfn-cross, done for real: fsck.fat 4.2 -a removes "
                   "a renamed bad short entry's long-name slots as if the directory were "
                   "contiguous, so a set that crosses into a later, non-adjacent cluster has every "
                   "cluster in between overwritten with deleted entries; the repair then finds "
                   "wiped directories ('.' missing, orphans saved as FSCKnnnn.REC) and the readers "
                   "see renamed, lost and changed entries beyond the renames. Campaign seed 10102: "
                   "mkdir /a; mkdir /a/A; create /<255 characters> in the FAT32 root",
                   "the tree after the repair is not explained by its renames alone "
                   "(renamed_explains) and fsck.fat's scan of the image before the repair, "
                   "simulated (vfz.oracles.dosfsck.sim), meets such a crossing over live clusters "
                   "(FsckRepairTransformer.explain, live_crossings)", bug="fsck-v1-lfn-cross"),
]
